"""Speed of a policy on live traffic (docs/online.md): decisions per second in batches of 1000 and
single-decision latency (p50 / p99), in-process (jaxbandits.online) and over HTTP on localhost
(jaxbandits serve), for UCB1, DelayedKLUCB and delay-model Thompson sampling.

    python benchmarks/online.py [--reps 7] [--no-http] [--out FILE]

Every number is the median over ``--reps`` repetitions (the machine may be shared: the spread is
written beside it). Batch rate: ``calls`` consecutive ``decide(n=1000)`` per repetition, the arms
brought to the host. Single latency: ``decide(n=1)`` and reading the arm, timed one by one (300
calls per repetition), p50 and p99 of each repetition, and the p99 of the process's CPU time per
call (all threads: what the call costs when no other job takes the cores). "+ feedback": each batch of 1000 decisions
followed by one feedback call reporting conversions of about 3% of the recent decisions. "bare
policy scan": the policy's own ``act`` + ``update`` in a ``lax.scan`` without the learner's
bookkeeping, the ceiling of the in-process batch rate. Writes ``benchmarks/results/online-<platform>.json``.
"""
import argparse
import os
import platform
import time

import jax
import jax.numpy as jnp
import numpy as np

from jaxbandits import channels, delays, online
from jaxbandits.core.fileio import atomic_write, json_writer
from jaxbandits.policies import bayes, classic
from jaxbandits.policies import conversions as conv
from jaxbandits.core.types import Arrivals, Context

K = 10
LAW = delays.geometric(mean=50.0)
M = 200


def setups():
    """(label, policy, channel, max_pending): what is measured, and what the served configs name."""
    return [
        ("UCB1", classic.ucb1(), channels.attributed(), 4096),
        ("DelayedKLUCB", conv.delayed_klucb(LAW, M), channels.conversions(window=M), None),
        ("delay-model TS (refresh 100)", bayes.delay_model_ts(M, model="exponential", refresh=100),
         channels.conversions(window=M), None),
        ("delay-model TS (refresh 10)", bayes.delay_model_ts(M, model="exponential", refresh=10),
         channels.conversions(window=M), None),
        ("delay-model TS (refresh 1)", bayes.delay_model_ts(M, model="exponential", refresh=1),
         channels.conversions(window=M), None),
    ]


def _spread(xs):
    xs = np.asarray(xs, float)
    return {"median": float(np.median(xs)), "min": float(xs.min()), "max": float(xs.max())}


def _events(rng, t_last, fb, size=1000, frac=0.03):
    ids = np.unique(rng.integers(max(t_last - size + 1, 0), t_last + 1, size=int(size * frac)))
    if fb.zeros_observed:
        return ids, (rng.random(ids.size) < 0.5).astype(np.float32)
    return ids, None


def _pad_to(x, n, fill):
    out = np.full(n, fill, x.dtype)
    out[:x.size] = x
    return out


def bare_rate(policy, channel, reps, n=1000):
    """The policy's act + update in a lax.scan, nothing delivered (the ceiling of a batch)."""
    st = online.init(policy, channel, K, 0)
    spec = st.config.spec
    P = st.config.payload_size
    reveal = st.config.reveal

    @jax.jit
    def run(ps, t0):
        def step(c, t):
            a, memo = policy.act(c, Context(t), jax.random.fold_in(jax.random.key(1), t))
            rev = jnp.zeros((reveal,), bool) if reveal else None
            return policy.update(c, Arrivals(t, a, memo, jnp.zeros((P,), jnp.float32), rev)), a
        return jax.lax.scan(step, ps, t0 + jnp.arange(n))

    ps = policy.init(spec, jax.random.key(0))
    ps, a = run(ps, 0)
    np.asarray(a)
    rates = []
    for i in range(reps):
        t0 = time.perf_counter()
        ps, a = run(ps, n * (i + 1))
        np.asarray(a)
        rates.append(n / (time.perf_counter() - t0))
    return _spread(rates)


def inprocess(label, policy, channel, max_pending, reps, calls=3):
    st = online.init(policy, channel, K, 0, max_pending=max_pending)
    fb = channel.feedback
    rng = np.random.default_rng(0)
    # compile: a batch, a single decision, a padded feedback batch (the Learner pads to powers of 2)
    st, ids, arms = online.decide(st, n=1000)
    st, ids, arms = online.decide(st, n=1)
    ev, rw = _events(rng, int(ids[-1]), fb)
    pad = 64
    st, _ = online.feedback(st, _pad_to(ev, pad, -1), None if rw is None else _pad_to(rw, pad, 0),
                            valid=np.arange(pad) < ev.size)
    jax.block_until_ready(st.t)
    batch, batch_fb, p50, p99, fb_lat, cpu_p99 = [], [], [], [], [], []
    for _ in range(reps):
        t0 = time.perf_counter()
        for _ in range(calls):
            st, ids, arms = online.decide(st, n=1000)
            np.asarray(arms)
        batch.append(calls * 1000 / (time.perf_counter() - t0))
        t0 = time.perf_counter()
        for _ in range(calls):
            st, ids, arms = online.decide(st, n=1000)
            np.asarray(arms)
            ev, rw = _events(rng, int(ids[-1]), fb)
            ev = ev[:pad]
            rw = None if rw is None else rw[:pad]
            st, codes = online.feedback(st, _pad_to(ev, pad, -1), None if rw is None else _pad_to(rw, pad, 0),
                                        valid=np.arange(pad) < ev.size)
            np.asarray(codes)
        batch_fb.append(calls * 1000 / (time.perf_counter() - t0))
        lat, cpu = [], []
        for _ in range(300):
            c0 = time.process_time()
            t0 = time.perf_counter()
            st, ids, arms = online.decide(st, n=1)
            int(np.asarray(arms)[0])
            lat.append(time.perf_counter() - t0)
            cpu.append(time.process_time() - c0)
        lat = np.array(lat) * 1e3
        p50.append(np.percentile(lat, 50))
        p99.append(np.percentile(lat, 99))
        cpu_p99.append(np.percentile(np.array(cpu) * 1e3, 99))
        lat = []
        for i in range(100):
            e = np.array([int(st.t) - 1], np.int64)
            t0 = time.perf_counter()
            st, codes = online.feedback(st, e, None if not fb.zeros_observed else np.ones(1, np.float32))
            int(np.asarray(codes)[0])
            lat.append(time.perf_counter() - t0)
        fb_lat.append(np.percentile(np.array(lat) * 1e3, 50))
    return {"policy": label, "batch_1000_decisions_per_s": _spread(batch),
            "batch_1000_with_feedback_decisions_per_s": _spread(batch_fb),
            "single_p50_ms": _spread(p50), "single_p99_ms": _spread(p99),
            "single_process_cpu_p99_ms": _spread(cpu_p99), "feedback_1_event_p50_ms": _spread(fb_lat),
            "bare_policy_scan_decisions_per_s": bare_rate(policy, channel, reps)}


SERVED = {  # the serve configs of the setups above (jaxbandits serve, docs/online.md)
    "UCB1": ({"name": "ucb1"}, {"kind": "attributed"}, 4096),
    "DelayedKLUCB": ({"name": "delayed_klucb", "window": M, "delay": {"law": "geometric", "mean": 50.0}},
                     {"kind": "conversions", "window": M}, None),
    "delay-model TS (refresh 100)": ({"name": "delay_model_ts", "window": M, "model": "exponential", "refresh": 100},
                                     {"kind": "conversions", "window": M}, None),
}


def http(label, reps, calls=3, single=200):
    """The same measurements through ``jaxbandits serve`` on 127.0.0.1 (a subprocess; every
    request committed to its SQLite log before the answer)."""
    import json
    import signal
    import socket
    import subprocess
    import sys
    import tempfile

    import httpx

    pol, ch, mp = SERVED[label]
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    with tempfile.TemporaryDirectory() as tmp:
        cfg = {"arms": [f"arm-{k}" for k in range(K)], "policy": pol, "channel": ch, "max_batch": 1000,
               "max_pending": mp}
        with open(os.path.join(tmp, "serve.json"), "w") as fh:
            json.dump(cfg, fh)
        with socket.socket() as so:
            so.bind(("127.0.0.1", 0))
            port = so.getsockname()[1]
        env = {**os.environ, "PYTHONPATH": root, "JAXBANDITS_CACHE_DIR": os.path.join(tmp, "cache")}
        proc = subprocess.Popen([sys.executable, "-m", "jaxbandits.apps.cli", "serve", os.path.join(tmp, "serve.json"),
                                 "--db", os.path.join(tmp, "serve.db"), "--port", str(port)], env=env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        url = f"http://127.0.0.1:{port}"
        try:
            c = httpx.Client(timeout=60.0)
            for _ in range(600):
                try:
                    c.get(url + "/health")
                    break
                except httpx.TransportError:
                    time.sleep(0.1)
            zeros = ch["kind"] == "attributed"
            rng = np.random.default_rng(0)

            def events(ids):
                ev = [{"id": int(i)} for i in ids if rng.random() < 0.03]
                if zeros:
                    for e in ev:
                        e["reward"] = float(rng.random() < 0.5)
                return ev

            out = c.post(url + "/decide", json={"n": 1000}).json()  # compile
            c.post(url + "/decide", json={"n": 1})
            c.post(url + "/feedback", json={"events": events(out["ids"])[:8]})
            c.get(url + "/stats")
            batch, batch_fb, p50, p99, fb_lat = [], [], [], [], []
            for _ in range(reps):
                t0 = time.perf_counter()
                for _ in range(calls):
                    out = c.post(url + "/decide", json={"n": 1000}).json()
                batch.append(calls * 1000 / (time.perf_counter() - t0))
                t0 = time.perf_counter()
                for _ in range(calls):
                    out = c.post(url + "/decide", json={"n": 1000}).json()
                    c.post(url + "/feedback", json={"events": events(out["ids"])}).raise_for_status()
                batch_fb.append(calls * 1000 / (time.perf_counter() - t0))
                lat = []
                for _ in range(single):
                    t0 = time.perf_counter()
                    out = c.post(url + "/decide", json={"n": 1}).json()
                    lat.append(time.perf_counter() - t0)
                lat = np.array(lat) * 1e3
                p50.append(np.percentile(lat, 50))
                p99.append(np.percentile(lat, 99))
                lat = []
                for _ in range(50):
                    e = {"id": out["ids"][0]}
                    if zeros:
                        e["reward"] = 1.0
                    t0 = time.perf_counter()
                    c.post(url + "/feedback", json={"events": [e]}).raise_for_status()
                    lat.append(time.perf_counter() - t0)
                fb_lat.append(np.percentile(np.array(lat) * 1e3, 50))
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.wait()
    return {"policy": label, "batch_1000_decisions_per_s": _spread(batch),
            "batch_1000_with_feedback_decisions_per_s": _spread(batch_fb),
            "single_p50_ms": _spread(p50), "single_p99_ms": _spread(p99), "feedback_1_event_p50_ms": _spread(fb_lat)}


def _fmt(x, f="{:.3g}"):
    return f.format(x["median"]) + " (" + f.format(x["min"]) + "-" + f.format(x["max"]) + ")"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reps", type=int, default=7, help="repetitions; medians are reported")
    ap.add_argument("--no-http", action="store_true", help="in-process numbers only")
    ap.add_argument("--only", default=None, help="measure only the setups whose label contains this text")
    ap.add_argument("--out", default=None, help="default: benchmarks/results/online-<platform>.json")
    a = ap.parse_args(argv)
    res = {"platform": jax.devices()[0].platform, "jax": jax.__version__, "python": platform.python_version(),
           "cpus": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
           "load_average_at_start": os.getloadavg(), "reps": a.reps, "arms": K, "window": M,
           "in_process": [], "http": []}
    print("in-process (median over reps, min-max in brackets)")
    print(f"{'policy':30s} {'batch 1000 dec/s':>24s} {'+ feedback dec/s':>24s} {'single p50 ms':>20s} "
          f"{'single p99 ms':>20s} {'CPU-time p99 ms':>20s} {'bare scan dec/s':>24s}")
    for label, pol, ch, mp in setups():
        if a.only and a.only not in label:
            continue
        r = inprocess(label, pol, ch, mp, a.reps)
        res["in_process"].append(r)
        print(f"{label:30s} {_fmt(r['batch_1000_decisions_per_s']):>24s} "
              f"{_fmt(r['batch_1000_with_feedback_decisions_per_s']):>24s} {_fmt(r['single_p50_ms']):>20s} "
              f"{_fmt(r['single_p99_ms']):>20s} {_fmt(r['single_process_cpu_p99_ms']):>20s} "
              f"{_fmt(r['bare_policy_scan_decisions_per_s']):>24s}", flush=True)
    if not a.no_http:
        print("over HTTP on 127.0.0.1 (jaxbandits serve, each request committed to SQLite before the answer)")
        print(f"{'policy':30s} {'batch 1000 dec/s':>24s} {'+ feedback dec/s':>24s} {'single p50 ms':>20s} "
              f"{'single p99 ms':>20s} {'feedback(1) p50 ms':>20s}")
        for label in SERVED:
            if a.only and a.only not in label:
                continue
            r = http(label, a.reps)
            res["http"].append(r)
            print(f"{label:30s} {_fmt(r['batch_1000_decisions_per_s']):>24s} "
                  f"{_fmt(r['batch_1000_with_feedback_decisions_per_s']):>24s} {_fmt(r['single_p50_ms']):>20s} "
                  f"{_fmt(r['single_p99_ms']):>20s} {_fmt(r['feedback_1_event_p50_ms']):>20s}", flush=True)
    res["load_average_at_end"] = os.getloadavg()
    out = a.out or os.path.join(os.path.dirname(os.path.abspath(__file__)), "results",
                                f"online-{res['platform']}.json")
    atomic_write(out, json_writer(res))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
