"""The dashboard of ``jaxbandits serve``: its JSON endpoints (bounded series, estimates with
intervals, the conversions still expected), the access tokens, and the page itself in headless
Chromium over the DevTools protocol, on a real ``jaxbandits serve`` driven by a simulated world."""
import base64
import json
import math
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("fastapi")
httpx = pytest.importorskip("httpx")
with __import__("warnings").catch_warnings():  # Starlette's note that it prefers httpx2 to httpx
    __import__("warnings").simplefilter("ignore")
    from fastapi.testclient import TestClient  # noqa: E402

from jaxbandits.apps import dashboard, serve  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
XSS = ["banner-a", "<script>alert(1)</script>", "<img src=x onerror=alert(2)>"]


def _cfg(**kw):
    base = {"arms": ["a", "b", "c"], "seed": 1, "policy": {"name": "ucb1"}, "channel": {"kind": "attributed"},
            "max_pending": 64, "max_batch": 100}
    return serve.load_config(None, **{**base, **kw})


# ----------------------------------------------------------------------------- tokens
def test_tokens_guard_reads_and_writes_and_the_page_holds_no_secret(tmp_path):
    svc = serve.Service(_cfg(), tmp_path / "t.db")
    R, W = "read-secret-1", "write-secret-2"
    try:
        with TestClient(serve.create_app(svc, read_token=R, write_token=W)) as c:
            rh, wh = {"Authorization": f"Bearer {R}"}, {"Authorization": f"Bearer {W}"}
            for path in ("/stats", "/series", "/estimates", "/config", "/docs"):
                r = c.get(path)
                assert r.status_code == 401 and "read token" in r.json()["error"], path
                assert c.get(path, headers={"Authorization": "Bearer wrong"}).status_code == 401
                assert c.get(path, headers=rh).status_code == 200, path
                assert c.get(path, headers=wh).status_code == 200, path  # the write token also reads
            assert c.get(f"/stats?token={R}").status_code == 200  # how a browser opens the page
            assert c.get("/health").status_code == 200  # liveness probes need no token
            # the page itself is a static file with no data: open without a token, so that
            # /dashboard#token=... (the fragment never reaches the server) works; it was 401
            r = c.get("/dashboard")
            assert r.status_code == 200 and r.text == c.get("/dashboard", headers=rh).text
            assert c.get("/dashboard/static/uPlot.iife.min.js").status_code == 200  # public library code
            assert c.get("/dashboard/static/..%2F__init__.py").status_code == 404
            assert c.get("/dashboard/static/serve.py").status_code == 404
            r = c.post("/decide", json={"n": 2}, headers=rh)
            assert r.status_code == 401 and "write token" in r.json()["error"]
            assert c.post(f"/decide?token={W}", json={"n": 2}).status_code == 401  # a write takes the header only
            assert c.post("/decide", json={"n": 2}, headers=wh).json()["ids"] == [0, 1]
            assert c.get("/stats", headers=rh).json()["decisions"] == 2  # the refused writes changed nothing
            page = c.get("/dashboard", headers=rh)
            for text in (page.text, json.dumps(c.get("/config", headers=rh).json())):
                assert R not in text and W not in text
            assert "script-src 'self'" in page.headers["content-security-policy"]
        with TestClient(serve.create_app(svc, read_token=R)) as c:  # only a read token: writes need it too
            r = c.post("/decide", json={"n": 1})
            assert r.status_code == 401 and "needs the read token" in r.json()["error"]
            assert c.post("/decide", json={"n": 1}, headers={"Authorization": "Bearer wrong"}).status_code == 401
            assert c.post(f"/decide?token={R}", json={"n": 1}).status_code == 401  # the header only
            assert c.post("/decide", json={"n": 1}, headers=rh).status_code == 200
            assert c.get("/stats", headers=rh).json()["decisions"] == 3
        with TestClient(serve.create_app(svc)) as c:  # no token configured: open, as before
            assert c.get("/stats").status_code == 200 and c.post("/decide", json={}).status_code == 200
    finally:
        svc.close()
    assert dashboard.tokens_from_env({}) == (None, None)
    assert dashboard.tokens_from_env({"JAXBANDITS_WRITE_TOKEN": " w "}) == (None, "w")
    with pytest.raises(ValueError, match="JAXBANDITS_READ_TOKEN is set but empty"):
        dashboard.tokens_from_env({"JAXBANDITS_READ_TOKEN": " "})


# ----------------------------------------------------------------------------- the time series
def test_series_are_bounded_keep_their_history_and_merge_latencies(tmp_path):
    svc = serve.Service(_cfg(), tmp_path / "s.db")
    now = [1000.0]
    try:
        mon = dashboard.Monitor(svc, capacity=8, period=1.0, clock=lambda: now[0])
        for k in range(40):
            svc.decide(1 + k % 3)
            mon.record(float(k))  # one "request" of k ms per step
            now[0] += 1.0
            mon.maybe_sample()
            assert len(mon.samples) < 8
        s = mon.series()
    finally:
        svc.close()
    # 40 samples at most, 8 kept at most: halved three times, period 8 s
    assert mon.period == 8.0 and len(s["t"]) == len(mon.samples) <= 7
    assert s["t"] == sorted(s["t"]) and s["t"][-1] <= 1040.0
    # cumulative values survive the merges exactly: the last point is the state now
    assert sum(s["decisions"][a][-1] for a in s["arms"]) == sum(1 + k % 3 for k in range(40))
    assert [s["decisions"][a][-1] for a in s["arms"]] == svc.host["decisions"]
    # requests: every one counted once, whatever the merges; p99 and max the largest of the merged intervals
    assert sum(s["requests"]) == 40
    assert s["latency_ms"]["max"][-1] == 39.0 and max(x for x in s["latency_ms"]["max"] if x is not None) == 39.0
    # decisions/s from the cumulative counts and the times
    i = len(s["t"]) - 1
    tot = [sum(s["decisions"][a][j] for a in s["arms"]) for j in (i - 1, i)]
    assert s["decisions_per_s"][i] == pytest.approx((tot[1] - tot[0]) / (s["t"][i] - s["t"][i - 1]))


# ----------------------------------------------------------------------------- estimates
def test_expected_conversions_and_intervals_with_a_configured_delay_law(tmp_path):
    """DelayedKLUCB with a geometric law of mean 10 in the config: the conversions still expected are
    sum over pending unconverted decisions of p (F(m) - F(a)) / (1 - p F(a)) (F: the law's CDF, a: the
    decision's age, p: the policy's estimate), and the interval is Wilson's on conversions over
    decisions weighted by F(age), both recomputed here from the service's own numbers."""
    from jaxbandits import delays

    m = 40
    law = {"law": "geometric", "mean": 10.0}
    cfg = _cfg(arms=["x", "y"], policy={"name": "delayed_klucb", "window": m, "delay": law},
               channel={"kind": "conversions", "window": m}, max_pending=None)
    svc = serve.Service(cfg, tmp_path / "e.db")
    rng = np.random.default_rng(2)
    made = []
    try:
        for _ in range(12):
            out = svc.decide(10)
            made += list(zip(out["ids"], out["arms"]))
            conv = [i for i, a in made[-30:] if rng.random() < (0.25 if a == "x" else 0.1)]
            svc.feedback([{"id": i} for i in conv])  # some repeat: duplicates
        e = dashboard.Monitor(svc).estimates()
        F = np.asarray(delays.geometric(mean=10.0).cdf_table(m + 1), np.float64)
        t = int(svc.learner.state.t)
        arm = {i: a for i, a in made}
        seen = set()
        for i, _ in made:
            st = svc.learner.state.pending
            H = np.asarray(st.round).shape[0]
            if int(np.asarray(st.round)[i % H]) == i and bool(np.asarray(st.seen)[i % H]):
                seen.add(i)
        est = {a["name"]: a for a in e["arms"]}
        want = 0.0
        for i, a in made:
            age = t - i
            if i in seen or age > m:
                continue
            p = min(max(est[a]["estimate"], 0.0), 1.0)
            want += p * (F[m] - F[age]) / (1 - p * F[age])
        assert e["expected_conversions"] == pytest.approx(want, rel=1e-9)
        assert e["pending"] == sum(1 for i, _ in made if i not in seen and t - i <= m)
        for name in cfg.arms:
            n = sum(F[min(t - i, m)] for i, a in made if a == name)
            s = svc.host["rewards"][cfg.arms.index(name)]
            z = 1.959964
            c = (s / n + z * z / (2 * n)) / (1 + z * z / n)
            h = z * math.sqrt((s / n) * (1 - s / n) / n + z * z / (4 * n * n)) / (1 + z * z / n)
            assert (est[name]["lo"], est[name]["hi"]) == (pytest.approx(c - h), pytest.approx(c + h))
            assert est[name]["rate"] == pytest.approx(s / n) and est[name]["decisions"] == sum(
                1 for _, a in made if a == name)
        assert e["delay"]["source"] == "config" and e["delay"]["pmf"][3] == pytest.approx(F[3] - F[2], rel=1e-6)
    finally:
        svc.close()


def test_delay_model_ts_interval_is_its_laplace_posterior(tmp_path):
    """Conversions reported within their batch of 10 decisions (delays 0 to 9, none censored for
    long): the posterior of each arm's rate is close to the binomial one, so the 95% interval's
    half-width in logit is 1.96 / sqrt(n p (1 - p)) within 15%; the interval holds the mode, the
    fitted law's pmf sums to at most 1, the delays seen are the conversions reported, and the seen
    delays the fit expects total them within 5%."""
    cfg = _cfg(arms=["lo", "hi"], policy={"name": "delay_model_ts", "window": 30, "refresh": 10},
               channel={"kind": "conversions", "window": 30}, max_pending=None)
    svc = serve.Service(cfg, tmp_path / "d.db")
    rng = np.random.default_rng(0)
    try:
        for _ in range(40):
            out = svc.decide(10)
            conv = [i for i, a in zip(out["ids"], out["arms"]) if rng.random() < (0.4 if a == "hi" else 0.1)]
            svc.feedback([{"id": i} for i in conv])
        svc.decide(10)  # a refresh after the last conversions (refresh every 10 rounds)
        e = dashboard.Monitor(svc).estimates()
    finally:
        svc.close()
    for a in e["arms"]:
        assert a["lo"] < a["rate"] < a["hi"] and a["method"].startswith("posterior")
        n, p = a["decisions"], a["rate"]
        if n >= 100:
            half = (math.log(a["hi"] / (1 - a["hi"])) - math.log(a["lo"] / (1 - a["lo"]))) / 2
            assert half == pytest.approx(1.959964 / math.sqrt(n * p * (1 - p)), rel=0.15), (a, half)
    d = e["delay"]
    assert d["source"] == "posterior" and sum(d["pmf"]) <= 1.0 + 1e-6
    assert sum(d["seen"]) == e["converted"] and sum(d["seen"][10:]) == 0  # reported within the batch of 10
    assert sum(d["expected_seen"]) == pytest.approx(e["converted"], rel=0.05)


# ----------------------------------------------------------------------------- the page, in a browser
def _browser():
    """Chromium's path; without it (or the websockets package) the test is skipped, or fails where
    JAXBANDITS_REQUIRE_BROWSER is set (CI)."""
    try:
        import websockets  # noqa: F401
    except ImportError:
        missing = "the websockets package (pip install -e '.[test]')"
    else:
        for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
            path = shutil.which(name)
            if path:
                return path
        missing = "chromium (Debian: apt-get install chromium; .ci/run installs it)"
    if os.environ.get("JAXBANDITS_REQUIRE_BROWSER"):
        pytest.fail(f"JAXBANDITS_REQUIRE_BROWSER is set but {missing} is missing")
    pytest.skip(f"no {missing}")


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class _CDP:
    """A minimal Chrome DevTools protocol client over one page target: commands, and the events
    (console messages, exceptions, dialogs) collected while waiting for their answers."""

    def __init__(self, ws_url):
        from contextlib import ExitStack

        from websockets.sync.client import connect

        self._stack = ExitStack()
        self.ws = self._stack.enter_context(connect(ws_url, max_size=None, open_timeout=30))
        self.next_id = 0
        self.events = []

    def call(self, method, timeout=30.0, **params):
        self.next_id += 1
        my = self.next_id
        self.ws.send(json.dumps({"id": my, "method": method, "params": params}))
        deadline = time.monotonic() + timeout
        while True:
            msg = json.loads(self.ws.recv(timeout=max(deadline - time.monotonic(), 0.01)))
            if msg.get("id") == my:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg.get("result", {})
            if "method" in msg:
                self.events.append(msg)

    def eval(self, expr):
        r = self.call("Runtime.evaluate", expression=expr, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in r:
            raise AssertionError(f"{expr[:60]}: {r['exceptionDetails']}")
        return r["result"].get("value")

    def errors(self):
        """Console errors, uncaught exceptions, failed loads and CSP violations, dialogs (alert)."""
        out = []
        for e in self.events:
            m, p = e["method"], e["params"]
            if m == "Runtime.exceptionThrown":
                out.append("exception: " + json.dumps(p["exceptionDetails"])[:400])
            elif m == "Runtime.consoleAPICalled" and p["type"] in ("error", "assert"):
                out.append("console.error: " + json.dumps(p["args"])[:400])
            elif m == "Log.entryAdded" and p["entry"]["level"] == "error":
                out.append("log: " + p["entry"].get("text", "")[:400])
            elif m == "Page.javascriptDialogOpening":
                out.append("dialog: " + p.get("message", ""))
        return out

    def open(self, url):
        self.events.clear()
        self.call("Page.navigate", url=url)

    def wait(self, expr, timeout=60.0):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.eval(expr):
                return True
            time.sleep(0.2)
        return False

    def close(self):
        self._stack.close()


def _launch(browser, tmp):
    prof = tmp / "chromium-profile"
    proc = subprocess.Popen([browser, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
                             "--no-default-browser-check", "--disable-extensions", "--remote-debugging-port=0",
                             f"--user-data-dir={prof}", "--window-size=1400,2000", "about:blank"],
                            stdout=subprocess.DEVNULL, stderr=open(tmp / "chromium.log", "wb"))
    deadline = time.monotonic() + 60
    port_file = prof / "DevToolsActivePort"
    while time.monotonic() < deadline:
        assert proc.poll() is None, (tmp / "chromium.log").read_text()[-2000:]
        if port_file.exists() and len(port_file.read_text().splitlines()) >= 2:
            port = int(port_file.read_text().splitlines()[0])
            targets = httpx.get(f"http://127.0.0.1:{port}/json/list", timeout=5).json()
            pages = [t for t in targets if t["type"] == "page"]
            if pages:
                return proc, pages[0]["webSocketDebuggerUrl"]
        time.sleep(0.1)
    proc.kill()
    raise AssertionError("chromium did not open its DevTools port: " + (tmp / "chromium.log").read_text()[-2000:])


# The facts a test reads off the page once its scripts ran.
_FACTS = """(() => {
  const rows = Array.from(document.querySelectorAll('#arms tbody tr')).map(
      tr => Array.from(tr.children).map(td => td.textContent));
  const panels = Array.from(document.querySelectorAll('section.panel[data-chart]')).map(p => {
      const c = Array.from(p.querySelectorAll('canvas'));
      return {id: p.id, hidden: p.classList.contains('hidden'), canvases: c.length,
              drawn: c.filter(x => x.width > 0 && x.height > 0).length};
  });
  return {rows, panels, updates: Number(document.body.dataset.updates || 0),
          status: document.getElementById('status').textContent,
          config: document.getElementById('config').textContent,
          scripts: document.scripts.length, imgs: document.images.length};
})()"""


def _world(url, headers, n_batches=40, batch=10):
    """A simulated world over HTTP: conversion rates 0.3 / 0.15 / 0.05 for the three arms, geometric
    delays of mean 8 decisions, the tracker repeating some postbacks and posting an unknown id."""
    rng = np.random.default_rng(0)
    rate = dict(zip(XSS, (0.3, 0.15, 0.05)))
    due = {}
    http = httpx.Client(timeout=60.0, headers=headers)
    for k in range(n_batches):
        out = http.post(url + "/decide", json={"n": batch}).json()
        for i, a in zip(out["ids"], out["arms"]):
            if rng.random() < rate[a]:
                due.setdefault(i + int(rng.geometric(1 / 8)) - 1, []).append(i)
        made = out["ids"][-1]
        back = sorted(i for d in [d for d in due if d <= made] for i in due.pop(d))
        if k % 8 == 1 and back:
            back += back[:2] + [10**6]  # duplicates and an unknown decision
        if back:
            r = http.post(url + "/feedback", json={"events": [{"id": i} for i in back]})
            assert r.status_code == 200, r.text


def test_dashboard_in_headless_chromium(tmp_path):
    """A real ``jaxbandits serve`` (delay-model TS, tokens on) driven by a simulated world; headless
    Chromium opens ``/dashboard?token=...``: after its scripts ran, the arms table names every arm
    (``<script>`` and ``<img onerror>`` names shown as text, nothing injected, no dialog), its counts
    equal ``/stats``, each chart panel holds a drawn canvas, no console error, exception, failed
    load or CSP violation; a screenshot is saved. The same checks on a page that throws fail."""
    browser = _browser()
    cfg_path = tmp_path / "serve.json"
    cfg_path.write_text(json.dumps({"arms": XSS, "seed": 0, "max_batch": 200,
                                    "policy": {"name": "delay_model_ts", "window": 40, "refresh": 10},
                                    "channel": {"kind": "conversions", "window": 40}}))
    R, W = "r-" + os.urandom(6).hex(), "w-" + os.urandom(6).hex()
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "JAXBANDITS_CACHE_DIR": str(tmp_path / "jax-cache"),
           "JAX_PLATFORMS": "cpu", "JAXBANDITS_READ_TOKEN": R, "JAXBANDITS_WRITE_TOKEN": W}
    log = tmp_path / "server.log"
    srv = subprocess.Popen([sys.executable, "-m", "jaxbandits.apps.cli", "serve", str(cfg_path), "--db",
                            str(tmp_path / "serve.db"), "--port", str(port)], env=env, cwd=str(ROOT),
                           stdout=open(log, "wb"), stderr=subprocess.STDOUT)
    proc = cdp = None
    try:
        proc, ws = _launch(browser, tmp_path)  # chromium starts while the server compiles
        deadline = time.monotonic() + 120
        while True:
            assert srv.poll() is None, log.read_text()[-2000:]
            try:
                if httpx.get(url + "/health", timeout=1.0).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, "the server did not start: " + log.read_text()[-2000:]
            time.sleep(0.1)
        _world(url, {"Authorization": f"Bearer {W}"})
        cdp = _CDP(ws)
        for domain in ("Runtime", "Log", "Page"):
            cdp.call(f"{domain}.enable")
        cdp.open(f"{url}/dashboard?token={R}&poll=300")
        assert cdp.wait("!!document.body && Number(document.body.dataset.updates || 0) >= 3", timeout=60), (
            cdp.errors(), cdp.eval(_FACTS))
        facts = cdp.eval(_FACTS)
        shot = base64.b64decode(cdp.call("Page.captureScreenshot", format="png", captureBeyondViewport=True)["data"])
        out = Path(os.environ.get("JAXBANDITS_ARTEFACTS", tmp_path))
        out.mkdir(parents=True, exist_ok=True)
        (out / "dashboard.png").write_bytes(shot)
        stats = httpx.get(url + "/stats", headers={"Authorization": f"Bearer {R}"}).json()
        assert cdp.errors() == []
        rows = {r[0]: r for r in facts["rows"]}
        assert list(rows) == XSS  # the names, as text, in order
        assert {a: int(rows[a][1]) for a in XSS} == {a: v["decisions"] for a, v in stats["arms"].items()}
        assert {a: int(rows[a][3]) for a in XSS} == {a: v["events"] for a, v in stats["arms"].items()}
        assert sum(int(r[1]) for r in rows.values()) == stats["decisions"] == 400
        assert facts["scripts"] == 2 and facts["imgs"] == 0  # nothing injected by the arm names
        assert [p["id"] for p in facts["panels"]] == ["p-decisions", "p-estimates", "p-delay", "p-conversions",
                                                      "p-events", "p-throughput"]
        for p in facts["panels"]:
            assert not p["hidden"] and p["drawn"] >= 1, p
        assert f"{stats['decisions']} decisions" in facts["status"] and R not in facts["config"]
        assert json.loads(facts["config"])["arms"] == XSS
        assert shot[:8] == b"\x89PNG\r\n\x1a\n" and len(shot) > 20000  # a drawn page, not a blank one
        # the harness fails a page that throws and renders nothing
        cdp.open("data:text/html,<body><script>throw new Error('boom')</script></body>")
        time.sleep(0.5)
        cdp.eval("1")
        assert any("boom" in e for e in cdp.errors())
        assert cdp.eval(_FACTS.replace("document.getElementById('status').textContent", "''").replace(
            "document.getElementById('config').textContent", "''"))["rows"] == []
    finally:
        if cdp is not None:
            cdp.close()
        if proc is not None:
            proc.kill()
            proc.wait()
        srv.kill()
        srv.wait()


def test_the_page_and_uplot_ship_inside_the_package():
    """The page needs no network: its files are package data (pyproject), uPlot is the pinned
    release with its MIT licence, and the page loads scripts and styles from the package only."""
    import fnmatch
    import re
    import tomllib
    from importlib import resources

    static = resources.files("jaxbandits.apps.dashboard").joinpath("static")
    globs = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"][
        "jaxbandits.apps.dashboard"]
    for name in list(dashboard.STATIC) + ["index.html"]:
        assert static.joinpath(name).is_file(), name
        assert any(fnmatch.fnmatch(f"static/{name}", g) for g in globs), name
    banner = "/*! https://github.com/leeoniya/uPlot (v1.6.32) */"
    assert static.joinpath("uPlot.iife.min.js").read_text().startswith(banner)
    assert static.joinpath("LICENSE.uPlot").read_text().startswith("The MIT License (MIT)")
    page = static.joinpath("index.html").read_text()
    srcs = re.findall(r'(?:src|href)="([^"]*)"', page)
    assert srcs and all(s.startswith("dashboard/static/") or s == "data:," for s in srcs), srcs
    assert "<script>" not in page and "http" not in page.replace("http-equiv", "")  # no inline script, no CDN


def test_posterior_of_each_delay_model_variant_before_any_data():
    """``Policy.posterior`` of delay-model TS for each family, shared or per-arm laws, the oracle and
    the Laplace engine: shapes [K], [K, W], [W]; before any refresh the mass matrix is the identity,
    so the interval is sigmoid(+-1.96) around p = 1/2 exactly; the oracle's law is its fixed law
    (exponential of mean 5 discretised: P(D = d) = exp(-d/5) - exp(-(d+1)/5))."""
    import jax

    from jaxbandits.policies import bayes
    from jaxbandits.core.types import ProblemSpec

    K, M = 3, 20
    for kw in ({"model": "weibull"}, {"model": "lognormal", "per_arm_delay": True}, {"per_arm_delay": True},
               {"fixed_delay": {"delay_mean": 5.0}}, {"model": "geometric", "engine": "laplace"}):
        pol = bayes.delay_model_ts(window=M, **kw)
        post = jax.jit(pol.posterior)(pol.init(ProblemSpec(n_arms=K, horizon=100), jax.random.key(0)))
        assert [np.shape(x) for x in post] == [(K,), (K,), (K,), (K, M + 1), (M + 1,)], kw
        np.testing.assert_allclose(post.rate, 0.5)
        np.testing.assert_allclose(post.lo, 1 / (1 + math.exp(1.96)), rtol=1e-5)
        np.testing.assert_allclose(post.hi, 1 / (1 + math.exp(-1.96)), rtol=1e-5)
        pmf = np.asarray(post.delay_pmf)
        assert np.all(pmf >= 0) and np.all(pmf.sum(1) <= 1 + 1e-6) and not np.any(post.seen_delays)
        if "fixed_delay" in kw:
            d = np.arange(M + 1)
            np.testing.assert_allclose(pmf[0], np.exp(-d / 5) - np.exp(-(d + 1) / 5), rtol=1e-4, atol=1e-7)


def test_a_failing_sample_does_not_fail_a_decision(tmp_path, caplog):
    svc = serve.Service(_cfg(), tmp_path / "f.db")
    try:
        with TestClient(serve.create_app(svc)) as c:
            mon = c.app.state.dashboard

            def boom(now=None):
                raise RuntimeError("planted")

            mon.sample, mon._next = boom, 0.0
            r = c.post("/decide", json={"n": 3})
            assert r.status_code == 200 and r.json()["ids"] == [0, 1, 2]
            assert svc.seq == 1 and "planted" in caplog.text and mon._next > time.time()
    finally:
        svc.close()


def test_endpoints_over_http_on_the_attributed_channel(tmp_path):
    """``/estimates`` on the attributed channel: the rate is rewards over outcomes reported, with
    Wilson's 95% interval, no delay law and no conversions expected; ``/series`` is the monitor's
    series (one list per quantity, aligned on ``t``); ``/config`` is the config served."""
    svc = serve.Service(_cfg(), tmp_path / "a.db")
    try:
        with TestClient(serve.create_app(svc)) as c:
            out = c.post("/decide", json={"n": 30}).json()
            rewards = [float(i % 3 == 0) for i in range(20)]
            c.post("/feedback", json={"events": [{"id": i, "reward": r} for i, r in zip(out["ids"], rewards)]})
            e = c.get("/estimates").json()
            s = c.get("/series").json()
            cfg = c.get("/config").json()
    finally:
        svc.close()
    assert e["delay"] is None and e["expected_conversions"] is None and e["pending"] == 10
    z = 1.959964
    for a in e["arms"]:
        got = [r for i, r in enumerate(rewards) if out["arms"][i] == a["name"]]
        assert a["events"] == len(got) and a["decisions"] == out["arms"].count(a["name"])
        if got:
            n, p = len(got), sum(got) / len(got)
            c_ = (p + z * z / (2 * n)) / (1 + z * z / n)
            h = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
            assert a["rate"] == pytest.approx(p)
            assert (a["lo"], a["hi"]) == (pytest.approx(c_ - h), pytest.approx(c_ + h))
            assert a["method"].startswith("wilson: rewards / outcomes")
    n = len(s["t"])
    assert n >= 1 and s["arms"] == ["a", "b", "c"] and all(len(v) == n for v in s["decisions"].values())
    assert all(len(v) == n for v in s["counters"].values()) and len(s["latency_ms"]["p99"]) == n
    assert cfg["config"] == svc.config.to_json() and cfg["policy"] == svc.policy.name
