"""The live dashboard of ``jaxbandits serve`` (docs/online.md, *The dashboard*).

:func:`install` hooks it into the service's FastAPI application (same process, same port):

* ``GET /dashboard``: a page that polls the JSON endpoints below every second and draws them
  with uPlot (vendored in ``static/``, MIT licence alongside; no network needed at run time);
* ``GET /series``: the time series the page draws (columnar JSON), sampled at most once per
  ``period`` seconds when a request is served, kept in at most ``capacity`` points: when full,
  neighbouring points are merged in pairs and the period doubles (bounded memory, the whole
  history at a coarser step);
* ``GET /estimates``: each arm's estimate with a 95% interval, the pending decisions and the
  conversions still expected from them, the delay law against the delays seen;
* ``GET /config``: the config served (it holds no secret: the tokens are not part of it).

Access tokens (optional, from the environment, see :func:`tokens_from_env`): a read token for
every ``GET`` but ``/health`` and the static files (public library code), a write token for every
``POST``. A request gives it as ``Authorization: Bearer <token>`` (or ``?token=`` on a ``GET``,
which is how a browser opens the page; the page sends it on as a header). The write token also
reads.

Everything here reads the service's own state (its learner and per-arm counters) and nothing else.
"""

import hmac
import json
import logging
import math
import os
import time
from importlib import resources
from typing import List, Optional

import numpy as np

from ...core.delays import delay_law

__all__ = ["Monitor", "install", "tokens_from_env", "STATIC", "READ_TOKEN_ENV", "WRITE_TOKEN_ENV"]

READ_TOKEN_ENV = "JAXBANDITS_READ_TOKEN"
#: Paths every client may read: liveness probes and the page itself (a static file holding no data:
#: it reads the token from its URL's ``#token=`` and sends it with its own data requests).
_PUBLIC = ("/health", "/dashboard")
WRITE_TOKEN_ENV = "JAXBANDITS_WRITE_TOKEN"

#: The files under ``/dashboard/static/`` (nothing else is served from the package).
STATIC = {"uPlot.iife.min.js": "text/javascript", "uPlot.min.css": "text/css", "dashboard.js": "text/javascript",
          "dashboard.css": "text/css", "LICENSE.uPlot": "text/plain"}

_Z95 = 1.959964


def tokens_from_env(environ=None):
    """``(read_token, write_token)`` from ``JAXBANDITS_READ_TOKEN`` / ``JAXBANDITS_WRITE_TOKEN``
    (``None`` where unset; a variable set to an empty string is an error, not an open door).

    Args:
        environ: the environment to read (a mapping; ``None``: ``os.environ``).

    Returns:
        tuple: ``(read_token, write_token)``, each a string with its surrounding blanks removed,
        or ``None``.

    Raises:
        ValueError: a variable set to an empty (or blank) string, named.

    Example:
        >>> tokens_from_env({"JAXBANDITS_READ_TOKEN": " r3ad "})
        ('r3ad', None)
        >>> tokens_from_env({"JAXBANDITS_WRITE_TOKEN": ""})
        Traceback (most recent call last):
        ...
        ValueError: JAXBANDITS_WRITE_TOKEN is set but empty: unset it (no token) or give a token
    """
    env = os.environ if environ is None else environ
    out = []
    for name in (READ_TOKEN_ENV, WRITE_TOKEN_ENV):
        v = env.get(name)
        if v is not None and not v.strip():
            raise ValueError(f"{name} is set but empty: unset it (no token) or give a token")
        out.append(None if v is None else v.strip())
    return tuple(out)


def _wilson(s, n):
    """95% Wilson score interval of a rate ``s / n`` (``n`` may be fractional: effective trials)."""
    if n <= 0:
        return None, None
    p = min(max(s / n, 0.0), 1.0)
    z2 = _Z95 ** 2
    c = (p + z2 / (2 * n)) / (1 + z2 / n)
    h = _Z95 * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / (1 + z2 / n)
    return max(c - h, 0.0), min(c + h, 1.0)


def _num(x):
    x = float(x)
    return x if math.isfinite(x) else None


class Monitor:
    """The dashboard's view of a :class:`jaxbandits.apps.serve.Service`: summaries of its state, and the
    bounded time series of them (``capacity`` points at most, sampled every ``period`` seconds at
    most).

    Args:
        service: the :class:`jaxbandits.apps.serve.Service` to watch.
        capacity: the most points the time series keeps, ``>= 4`` (default 512).
        period: the least seconds between two samples, ``> 0`` (default 1.0).
        clock: the time source, seconds (default ``time.time``).

    Attributes:
        service: the service watched.
        capacity: the most points kept.
        period: the least seconds between two samples.
        samples: the time series, oldest first (a list of dicts).

    Raises:
        ValueError: ``capacity`` or ``period`` out of range.

    Example:
        >>> import os, tempfile
        >>> from jaxbandits.apps.serve import ServeConfig, Service
        >>> cfg = ServeConfig(arms=["a", "b"], policy={"name": "ucb1"}, channel={"kind": "attributed"})
        >>> svc = Service(cfg, os.path.join(tempfile.mkdtemp(), "serve.db"))  # doctest: +SKIP
        >>> mon = Monitor(svc, capacity=64, period=5.0)  # doctest: +SKIP
        >>> mon.capacity, mon.period  # doctest: +SKIP
        (64, 5.0)
    """

    def __init__(self, service, capacity: int = 512, period: float = 1.0, clock=time.time):
        import jax

        if capacity < 4:
            raise ValueError(f"capacity must be >= 4, got {capacity}")
        if not period > 0:
            raise ValueError(f"period must be > 0 seconds, got {period}")
        self.service = service
        self.capacity, self.period, self._clock = int(capacity), float(period), clock
        self.samples: List[dict] = []
        self._lat: List[float] = []
        self._n_req = 0
        self._next = 0.0
        pol = service.policy
        self._posterior = None if pol.posterior is None else jax.jit(pol.posterior)
        cfg = service.config
        self.conversions = cfg.channel["kind"] == "conversions"
        self.window = int(cfg.channel["window"]) if self.conversions else None
        delay = cfg.policy.get("delay")
        self._law_cdf = None  # F(0..m) of a delay law the config gives the policy (a known law)
        if self.conversions and isinstance(delay, dict):
            self._law_cdf = np.asarray(delay_law(delay).cdf_table(self.window + 1), np.float64)

    # ------------------------------------------------------------------ requests
    def record(self, ms: float):
        """The wall time of one write request (``POST``), in milliseconds."""
        self._n_req += 1
        if len(self._lat) < 20000:
            self._lat.append(ms)

    def maybe_sample(self):
        now = self._clock()
        if now >= self._next:
            self.sample(now)

    def defer(self):
        """No sample before one period from now (after a failed one)."""
        self._next = self._clock() + self.period

    # ------------------------------------------------------------------ the state now
    def _pending(self, t):
        """(arm, age, converted) of every decision in the learner's pending ring."""
        p = self.service.learner.state.pending
        rnd = np.asarray(p.round)
        H = rnd.shape[0]
        live = (rnd >= 0) & (rnd >= t - H + 1)
        return np.asarray(p.action)[live], t - rnd[live], np.asarray(p.seen)[live]

    def estimates(self) -> dict:
        """The body of ``GET /estimates``."""
        from ... import online

        svc = self.service
        lr = svc.learner
        t = int(lr.state.t)
        arms = list(lr.arms)
        K = len(arms)
        pstate = online.close_round(lr.state)
        est = online.arm_estimates(lr.policy, pstate)
        dec = np.asarray(svc.host["decisions"], np.float64)
        total = float(dec.sum())
        arm_of, age, seen = self._pending(t)
        out_arms = []
        delay = None
        cdf = None  # F_k(a), a = 0..A-1, per arm: for the conversions still expected
        if self._posterior is not None:
            post = self._posterior(pstate)
            rate, lo, hi = (np.asarray(x, np.float64) for x in post[:3])
            pmf = np.asarray(post.delay_pmf, np.float64)
            W = pmf.shape[1]
            cdf = np.cumsum(pmf, axis=1)
            # the delays seen against the delays the fit expects to have been seen: arm k's decisions
            # old enough to show a delay d (age >= d) times p_k P(D = d)
            young = np.zeros((K, W))
            m = age < W
            np.add.at(young, (arm_of[m], age[m]), 1.0)
            n_ge = dec[:, None] - np.concatenate([np.zeros((K, 1)), np.cumsum(young, axis=1)[:, :-1]], axis=1)
            expected_seen = (rate[:, None] * pmf * np.maximum(n_ge, 0.0)).sum(0)
            delay = {"source": "posterior", "ages": list(range(W)), "pmf": [_num(x) for x in pmf.mean(0)],
                     "pmf_per_arm": {a: [_num(x) for x in pmf[k]] for k, a in enumerate(arms)},
                     "seen": [_num(x) for x in np.asarray(post.seen_delays)],
                     "expected_seen": [_num(x) for x in expected_seen]}
            for k, a in enumerate(arms):
                out_arms.append({"rate": _num(rate[k]), "lo": _num(lo[k]), "hi": _num(hi[k]),
                                 "method": "posterior: Laplace at the tracked mode"})
        else:
            rate = None
            if self._law_cdf is not None:
                cdf = np.broadcast_to(self._law_cdf, (K, self._law_cdf.shape[0]))
                A = cdf.shape[1]
                delay = {"source": "config", "ages": list(range(A)),
                         "pmf": [_num(x) for x in np.diff(self._law_cdf, prepend=0.0)],
                         "seen": None, "expected_seen": None}
                if est is not None:
                    rate = np.array([np.nan if e is None else min(max(e, 0.0), 1.0) for e in est])
            for k, a in enumerate(arms):
                s = float(svc.host["rewards"][k])
                if not self.conversions:
                    n, how = float(svc.host["events"][k]), "wilson: rewards / outcomes reported"
                elif cdf is not None:  # decisions weighted by the chance their conversion could have arrived
                    inring = arm_of == k
                    old = dec[k] - inring.sum()
                    n = old * cdf[k, -1] + cdf[k, np.minimum(age[inring], cdf.shape[1] - 1)].sum()
                    how = "wilson: conversions / decisions weighted by the delay law's F(age)"
                else:
                    n, how = dec[k], "wilson: conversions / decisions (pending ones count as failures)"
                lo, hi = _wilson(s, n)
                r = None if n <= 0 else _num(min(max(s / n, 0.0), 1.0) if self.conversions else s / n)
                out_arms.append({"rate": r, "lo": lo, "hi": hi, "method": how})
        # pending decisions and the conversions still expected from them
        awaiting = ~seen if self.window is None else (~seen & (age <= self.window))
        expected = None
        if cdf is not None and rate is not None and self.conversions:
            A = cdf.shape[1]
            a_ = np.minimum(age[awaiting], A - 1)
            k_ = arm_of[awaiting]
            p = rate[k_]
            F_a, F_m = cdf[k_, a_], cdf[k_, -1]
            with np.errstate(invalid="ignore", divide="ignore"):
                e = p * (F_m - F_a) / np.maximum(1.0 - p * F_a, 1e-12)
            expected = _num(np.nansum(np.where(age[awaiting] < A, e, 0.0)))
        res = []
        for k, a in enumerate(arms):
            d = int(dec[k])
            res.append({"name": a, "decisions": d, "share": d / total if total else None,
                        "events": int(svc.host["events"][k]), "rewards": float(svc.host["rewards"][k]),
                        "estimate": None if est is None else est[k],
                        "pending": int(np.sum(awaiting & (arm_of == k))), **out_arms[k]})
        c = online.stats(lr.state)
        return {"arms": res, "policy": lr.policy.name, "round": t, "decisions": c["decisions"],
                "converted": c["accepted"], "pending": int(awaiting.sum()), "expected_conversions": expected,
                "delay": delay, "log_seq": svc.seq}

    # ------------------------------------------------------------------ the time series
    def sample(self, now: Optional[float] = None) -> dict:
        from ... import online

        now = self._clock() if now is None else now
        e = self.estimates()
        c = online.stats(self.service.learner.state)
        lat = np.asarray(self._lat) if self._lat else None
        s = {"t": now, "round": e["round"], "decisions": [a["decisions"] for a in e["arms"]],
             "estimate": [a["estimate"] if a["estimate"] is not None else a["rate"] for a in e["arms"]],
             "counters": {k: c[k] for k in online.CODES}, "pending": e["pending"],
             "expected": e["expected_conversions"], "requests": self._n_req,
             "p50": None if lat is None else float(np.percentile(lat, 50)),
             "p99": None if lat is None else float(np.percentile(lat, 99)),
             "max": None if lat is None else float(lat.max())}
        self._lat, self._n_req = [], 0
        self.samples.append(s)
        if len(self.samples) >= self.capacity:
            self._downsample()
        self._next = now + self.period
        return s

    def _downsample(self):
        """Merge neighbouring samples in pairs (the later one's cumulative values, both intervals'
        requests: their count summed, p50 weighted by it, p99 and max the larger) and double the
        period: the series keeps its whole history at half the resolution."""
        out = []
        for a, b in zip(self.samples[0::2], self.samples[1::2]):
            m = dict(b)
            n = a["requests"] + b["requests"]
            m["requests"] = n
            if a["p50"] is not None and b["p50"] is not None:
                m["p50"] = (a["p50"] * a["requests"] + b["p50"] * b["requests"]) / max(n, 1)
                m["p99"], m["max"] = max(a["p99"], b["p99"]), max(a["max"], b["max"])
            elif a["p50"] is not None:
                m["p50"], m["p99"], m["max"] = a["p50"], a["p99"], a["max"]
            out.append(m)
        if len(self.samples) % 2:
            out.append(self.samples[-1])
        self.samples = out
        self.period *= 2

    def series(self) -> dict:
        """The body of ``GET /series``: one list per quantity, aligned on ``t``."""
        from ... import online

        S = self.samples
        arms = list(self.service.learner.arms)
        t = [s["t"] for s in S]
        total = [sum(s["decisions"]) for s in S]
        rate = [None] + [(b - a) / (tb - ta) if tb > ta else None
                         for a, b, ta, tb in zip(total[:-1], total[1:], t[:-1], t[1:])]
        share = {a: [None] + [(S[i]["decisions"][k] - S[i - 1]["decisions"][k]) / (total[i] - total[i - 1])
                              if total[i] > total[i - 1] else None for i in range(1, len(S))]
                 for k, a in enumerate(arms)}
        return {"arms": arms, "period_s": self.period, "capacity": self.capacity, "t": t,
                "round": [s["round"] for s in S],
                "decisions": {a: [s["decisions"][k] for s in S] for k, a in enumerate(arms)},
                "share": share,
                "estimate": {a: [s["estimate"][k] for s in S] for k, a in enumerate(arms)},
                "counters": {c: [s["counters"][c] for s in S] for c in online.CODES},
                "pending": [s["pending"] for s in S], "expected_conversions": [s["expected"] for s in S],
                "decisions_per_s": rate, "requests": [s["requests"] for s in S],
                "latency_ms": {q: [s[q] for s in S] for q in ("p50", "p99", "max")}}


# ----------------------------------------------------------------------------- HTTP
def _static(name: str) -> bytes:
    return resources.files(__package__).joinpath("static", name).read_bytes()


class _Gate:
    """Pure ASGI middleware: access tokens, the wall time of write requests, and the monitor's
    sampling after a request has been answered."""

    def __init__(self, app, monitor: Monitor, read_token: Optional[str], write_token: Optional[str]):
        self.app, self.monitor = app, monitor
        self.read = [x.encode() for x in (read_token, write_token) if x]
        # writes need the write token; with only a read token set, the read token (never open writes)
        self.write = [x.encode() for x in ((write_token,) if write_token else (read_token,)) if x]
        self.read_required, self.write_set = bool(read_token), bool(write_token)

    @staticmethod
    def _given(scope):
        for k, v in scope.get("headers", ()):
            if k == b"authorization" and v[:7].lower() == b"bearer ":
                return v[7:].strip()
        from urllib.parse import parse_qs

        q = parse_qs(scope.get("query_string", b"").decode("latin-1")).get("token")
        return q[0].encode() if q and scope["method"] in ("GET", "HEAD") else None

    async def _deny(self, send, msg):
        body = json.dumps({"error": msg}).encode()
        await send({"type": "http.response.start", "status": 401,
                    "headers": [(b"content-type", b"application/json"), (b"www-authenticate", b"Bearer"),
                                (b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        path, method = scope["path"], scope["method"]
        write = method not in ("GET", "HEAD", "OPTIONS")
        need = self.write if write else (self.read if self.read_required and path not in _PUBLIC
                                         and not path.startswith("/dashboard/static/") else [])
        if need:
            got = self._given(scope)
            if got is None or not any(hmac.compare_digest(got, x) for x in need):
                kind = "write" if write and self.write_set else "read"
                return await self._deny(send, f"{method} {path} needs the {kind} token: Authorization: Bearer "
                                              f"<token> ({WRITE_TOKEN_ENV if kind == 'write' else READ_TOKEN_ENV})")
        t0 = time.perf_counter()
        await self.app(scope, receive, send)
        if write:
            self.monitor.record(1e3 * (time.perf_counter() - t0))
        try:
            self.monitor.maybe_sample()
        except Exception:  # the request is answered and logged: a failed sample must not fail the service
            self.monitor.defer()
            logging.getLogger(__name__).exception("dashboard: taking a sample failed (retried in %.0f s)",
                                                  self.monitor.period)


def install(app, service, read_token: Optional[str] = None, write_token: Optional[str] = None,
            capacity: int = 512, period: float = 1.0) -> Monitor:
    """Add the dashboard, its JSON endpoints and the access tokens to ``app`` (the FastAPI
    application of ``service``); returns its :class:`Monitor`, also ``app.state.dashboard`` (one
    first sample taken: its programs are compiled before the first request).

    Args:
        app: the FastAPI application of ``service`` (what :func:`jaxbandits.apps.serve.create_app`
            builds; it calls this).
        service: the :class:`jaxbandits.apps.serve.Service`.
        read_token: the token the reading routes require (``None``: open).
        write_token: the token the writing routes require (``None``: open).
        capacity: the most points of the time series, ``>= 4`` (default 512).
        period: the least seconds between two samples, ``> 0`` (default 1.0).

    Returns:
        Monitor: the dashboard's monitor (also ``app.state.dashboard``).

    Raises:
        ValueError: ``capacity`` or ``period`` out of range.

    Example:
        >>> import os, tempfile
        >>> from fastapi import FastAPI  # doctest: +SKIP
        >>> from jaxbandits.apps.serve import ServeConfig, Service
        >>> cfg = ServeConfig(arms=["a", "b"], policy={"name": "ucb1"}, channel={"kind": "attributed"})
        >>> svc = Service(cfg, os.path.join(tempfile.mkdtemp(), "serve.db"))  # doctest: +SKIP
        >>> app = FastAPI()  # doctest: +SKIP
        >>> mon = install(app, svc, read_token="r3ad")  # doctest: +SKIP
        >>> app.state.dashboard is mon  # doctest: +SKIP
        True
    """
    from fastapi import HTTPException
    from fastapi.responses import JSONResponse, Response

    mon = Monitor(service, capacity=capacity, period=period)
    mon.sample()
    files = {name: _static(name) for name in STATIC}
    page = _static("index.html")
    secure = {"Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; "
                                         "connect-src 'self'; img-src 'self' data:; frame-ancestors 'none'",
              "X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer", "Cache-Control": "no-store"}

    @app.get("/dashboard", include_in_schema=False)
    async def dashboard():
        return Response(page, media_type="text/html; charset=utf-8", headers=secure)

    @app.get("/dashboard/static/{name}", include_in_schema=False)
    async def static(name: str):
        if name not in STATIC:
            raise HTTPException(404)
        return Response(files[name], media_type=STATIC[name],
                        headers={"Cache-Control": "max-age=3600", "X-Content-Type-Options": "nosniff"})

    @app.get("/series")
    async def series():
        mon.maybe_sample()
        return JSONResponse(mon.series())

    @app.get("/estimates")
    async def estimates():
        return JSONResponse(mon.estimates())

    @app.get("/config")
    async def config():
        return {"config": service.config.to_json(), "policy": service.policy.name, "channel": str(service.channel)}

    app.add_middleware(_Gate, monitor=mon, read_token=read_token, write_token=write_token)
    app.state.dashboard = mon
    return mon
