"""The device check: the whole GPU table in one process, in a few minutes (docs/benchmarks.md,
"On a GPU"; docs/fused.md).

    python benchmarks/gpu_check.py                  # on one H100/H200: 1e6 runs x 1e4 rounds, K = 10
    python benchmarks/limits.py --gpu-check         # the same
    python benchmarks/gpu_check.py --quick          # CPU smoke run of the script itself (tiny sizes, interpreted)

Rows, each measured side by side in this one process:

* the anchors (:mod:`anchors`): UCB1 as a CUDA kernel through CuPy (one thread per run, state in
  registers) and as a minimal Pallas kernel in the lanes layout, written outside the library;
* the library's fused path end to end: ``jaxbandits.simulate(path="fused")`` returning its default
  results (statistics reduced on the device), timed on the second call, with the kernel's own
  share (``timing["kernel_s"]``), for UCB1, KL-UCB, Beta-Bernoulli and Gaussian Thompson, and
  DelayedUCB / DelayedKLUCB (m = 1000) at 1e5 runs, plus whether 1e6 runs of them fit;
* a plain ``jax.vmap(lax.scan)`` of each of those algorithms (``benchmarks/limits.py``'s naive
  scans, and a Gaussian Thompson one here), at the same runs and a fifth of the rounds (its rate
  per run-step does not depend on the horizon);
* the lanes kernels' block size and warps, kernel alone;
* the scan path (``path="scan"``) of UCB1 at 1e5 x 1e3: compile and rate beside the plain scan;
* when present, ``benchmarks/compile_time.py`` and ``benchmarks/plain_scans.py`` (every other
  algorithm of the papers beside a plain scan of it) at the sizes given by ``--other-runs`` /
  ``--other-horizon``.

Every row is guarded: a failing row prints its error and the script goes on. The table is printed
last; the JSON goes to ``--out`` (default ``benchmarks/results/gpu-check.json``) and, when the
environment names a folder ``OUT``, there too.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
import traceback

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

ROWS: list = []
T0 = time.perf_counter()


def log(*a):
    print(f"[{time.perf_counter() - T0:7.1f}s]", *a, flush=True)


def row(name, fn, *args, **kw):
    """Run one measurement; record its dict (or its error) under ``name``."""
    log("start", name)
    try:
        rec = fn(*args, **kw)
    except Exception as e:  # one failing row never stops the check
        rec = {"error": f"{type(e).__name__}: {str(e)[:1500]}", "trace": traceback.format_exc()[-3000:]}
        log("FAILED", name, rec["error"][:400])
    rec = {"name": name, **rec}
    ROWS.append(rec)
    log("done", name, {k: v for k, v in rec.items() if k != "trace"})
    return rec


def _timed(f, repeat=3):
    """Median wall time of ``f()`` (synchronised by ``f``) over ``repeat`` calls after one warm-up."""
    f()
    ts = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        f()
        ts.append(time.perf_counter() - t0)
    return float(np.median(ts))


def _setup(K, n, T, R, seed=0):
    import jax
    import jax.numpy as jnp

    from jaxbandits.engine.fused.path import run_keys_words
    from jaxbandits.engine.recording import record_points

    key = jax.random.key(seed)
    ids = jnp.arange(n, dtype=jnp.int32)
    ke0, ke1, _, _ = run_keys_words(key, ids)
    rec = record_points(T, max(1, T // R)).astype(np.int32)
    mu = np.linspace(0.1, 0.9, K).astype(np.float32)
    return key, jax.block_until_ready(ke0), jax.block_until_ready(ke1), rec, mu


# ----------------------------------------------------------------------------- anchors
def cuda_anchor(K, n, T, R, fast_math=False, block=128):
    from anchors import cuda_ucb1

    _, ke0, ke1, rec, mu = _setup(K, n, T, R)
    run, compile_s = cuda_ucb1(np.asarray(ke0), np.asarray(ke1), mu, rec, T, block=block, fast_math=fast_math)
    s = _timed(run)
    out = run().get()
    return {"compile_s": compile_s, "run_s": s, "run_steps_per_s": n * T / s, "mean_final_regret": float(out[-1].mean()),
            **_same_as_library(out[-1], K, n, T, R)}


def pallas_anchor(K, n, T, R, block=128, warps=4, interpret=False):
    import jax
    import jax.numpy as jnp

    from anchors import pallas_ucb1

    n_pad = -(-n // block) * block  # whole blocks; the padded runs' records are cut below
    _, ke0, ke1, rec, mu = _setup(K, n_pad, T, R)
    f = pallas_ucb1(n_pad, K, len(rec), block=block, num_warps=warps, interpret=interpret)
    args = (jnp.asarray(mu), jnp.asarray(rec), ke0, ke1)
    t0 = time.perf_counter()
    exe = f.lower(*args).compile()
    compile_s = time.perf_counter() - t0
    s = _timed(lambda: jax.block_until_ready(exe(*args)))
    out = np.asarray(exe(*args))[:, :n]
    return {"compile_s": compile_s, "run_s": s, "run_steps_per_s": n * T / s, "mean_final_regret": float(out[-1].mean()),
            **_same_as_library(out[-1], K, n, T, R)}


def _same_as_library(final, K, n, T, R):
    """The share of runs whose final regret is bitwise the library's fused UCB1's (same words)."""
    lib = _LIBRARY_FINAL.get((K, n, T, R))
    if lib is None:
        return {}
    return {"runs_equal_to_library": float(np.mean(np.asarray(final, np.float32) == lib))}


_LIBRARY_FINAL: dict = {}


# ----------------------------------------------------------------------------- the library
def library(name, n, T, R, K=10, path="fused", delay_mean=100.0, window=1000, **kw):
    import jax

    import jaxbandits as jb
    from jaxbandits.policies import classic
    from jaxbandits.policies import conversions as CV

    mu = np.linspace(0.1, 0.9, K).astype(np.float32)
    if name in ("DelayedUCB", "DelayedKLUCB"):
        law = jb.delays.geometric(mean=delay_mean)
        env = jb.envs.conversions(mu, law)
        ch = jb.channels.conversions(window=window)
        pol = (CV.delayed_ucb if name == "DelayedUCB" else CV.delayed_klucb)(law, window)
    else:
        env, ch = jb.envs.bernoulli(mu), jb.channels.attributed()
        pol = {"UCB1": classic.ucb1, "KL-UCB": classic.kl_ucb, "Thompson": classic.thompson,
               "Gaussian-TS": classic.gaussian_thompson}[name]()
    key = jax.random.key(0)
    rec = max(1, T // R)
    sim = lambda: jb.simulate(env, ch, pol, T, key, n, record=rec, path=path, **kw)
    t0 = time.perf_counter()
    first = sim()
    first_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    out = sim()
    wall = time.perf_counter() - t0
    tm = out.timing
    fin = out.stats.final["regret"] if out.stats is not None else out.regret[:, -1]
    if name == "UCB1" and path == "fused":
        _LIBRARY_FINAL[(K, n, T, R)] = np.asarray(fin, np.float32)
    fin = np.asarray(fin, np.float64)
    res = {"runs": n, "horizon": T, "first_call_s": first_s, "compile_s": first.timing.get("compile_s"),
           "second_call_compile_s": tm.get("compile_s"), "end_to_end_s": wall,
           "end_to_end_run_steps_per_s": n * T / wall, "kernel_s": tm.get("kernel_s"),
           "bytes_to_host": tm.get("bytes_to_host"), "path": tm.get("path"),
           "mean_final_regret": float(fin.mean()), "se_final_regret": float(fin.std(ddof=1) / np.sqrt(fin.size))}
    if tm.get("kernel_s"):
        res["kernel_run_steps_per_s"] = n * T / tm["kernel_s"]
    try:
        ms = jax.devices()[0].memory_stats() or {}
        res["peak_device_bytes"] = ms.get("peak_bytes_in_use")
    except Exception:
        pass
    return res


def lanes_variant(name, n, T, R, block, warps, K=10):
    """The lanes kernel alone (no reduction) at another block size / warp count."""
    import jax
    import jax.numpy as jnp

    import jaxbandits as jb
    from jaxbandits.engine.fused import lanes
    from jaxbandits.engine.fused.path import kernel_spec, run_keys_words
    from jaxbandits.policies import classic

    env = jb.envs.bernoulli(np.linspace(0.1, 0.9, K))
    pol = {"UCB1": classic.ucb1, "KL-UCB": classic.kl_ucb, "Thompson": classic.thompson,
           "Gaussian-TS": classic.gaussian_thompson}[name]()
    key, ke0, ke1, rec, mu = _setup(K, n, T, R)
    ks, _ = kernel_spec(env, jb.channels.attributed(), pol, T, len(rec), block=block, interpret=False,
                        num_warps=warps)
    n_pad = -(-n // block) * block
    ks_w = run_keys_words(key, jnp.arange(n_pad, dtype=jnp.int32))
    muk = np.zeros((ks.k_pad,), np.float32)
    muk[:K] = mu
    f = jax.jit(lanes.build(ks, n_pad))
    args = (jnp.asarray(muk), jnp.asarray(rec)) + tuple(ks_w)
    t0 = time.perf_counter()
    exe = f.lower(*args).compile()
    compile_s = time.perf_counter() - t0
    s = _timed(lambda: jax.block_until_ready(exe(*args)), repeat=2)
    return {"runs": n, "horizon": T, "block": block, "warps": warps, "compile_s": compile_s, "kernel_s": s,
            "run_steps_per_s": n * T / s}


def reduction(n, R, K, points=None):
    """The on-device statistics of one policy's records at this size (``engine.stats``), ``points``
    record points at a time (default: all): compile and run seconds."""
    import jax
    import jax.numpy as jnp

    from jaxbandits.engine import programs as DR
    from jaxbandits.engine import reduce as RD
    from jaxbandits.engine import stats as ST

    DR.clear_cache()
    points = points or R
    try:
        B = ST.block_size(n)
        n_pad = -(-n // B) * B
        k = jax.random.key(1)
        f = jax.random.uniform(k, (R, n_pad), jnp.float32) * 100
        recs = {"UCB1": {"regret": f[:points], "expected_regret": f[:points] + 1, "reward": f[:points] + 2,
                         "pulls": jax.random.randint(k, (points, n_pad, K), 0, 1000, jnp.int32)}}
        valid = jnp.arange(n_pad) < n
        jax.block_until_ready(recs)
        red, dt = RD.reduce_on_device(recs, valid, B, ("UCB1",), ())
        jax.block_until_ready(red)
        s = _timed(lambda: jax.block_until_ready(RD.reduce_on_device(recs, valid, B, ("UCB1",), ())[0]))
        t0 = time.perf_counter()
        jax.device_get(red)
        host = time.perf_counter() - t0
    finally:
        DR.clear_cache()
    return {"runs": n, "block": B, "points": points, "compile_s": dt, "reduce_s": s, "to_host_s": host,
            "reduce_s_all_points": s * R / points}


# ----------------------------------------------------------------------------- plain scans
def naive_gaussian_ts(K, T, stride, key):
    import jax
    import jax.numpy as jnp

    from jaxbandits import mathlib as M
    from limits import recorded_scan, streams, arm_means

    mu = jnp.asarray(arm_means(K))
    best = jnp.max(mu)

    def run(r):
        k_rew, _, k_act = streams(key, r)

        def step(c, t):
            n, s, reg = c
            k = jax.random.fold_in(k_act, t)
            prec = 1e-4 + n
            idx = (s / prec) + M.normals(k, K) / jnp.sqrt(prec)
            a = M.argmax_random_tie(idx, M.uniform(k))
            x = (M.uniform(jax.random.fold_in(k_rew, t)) < mu[a]).astype(jnp.float32)
            e = (jnp.arange(K) == a).astype(jnp.float32)
            return (n + e, s + e * x, reg + (best - mu[a])), None

        z = jnp.zeros((K,), jnp.float32)
        c, regret = recorded_scan(step, (z, z, jnp.float32(0)), T, stride, lambda c: c[2])
        return regret, c[0]

    return run


def plain(name, n, T, R, K=10, delay_mean=100.0, window=1000):
    import jax

    import limits as L

    key = jax.random.key(0)
    stride = max(1, T // R)
    if name == "Gaussian-TS":
        run_one = naive_gaussian_ts(K, T, stride, key)
    elif name == "DelayedKLUCB":
        run_one = L.naive_delayed_klucb(K, T, stride, key, delay_mean, window)
    elif name == "DelayedUCB":
        run_one = L.naive_delayed_klucb(K, T, stride, key, delay_mean, window, index="ucb")
    else:
        run_one = L.naive_classic(name, K, T, stride, key)
    ids = L.run_ids(n, 1)
    f = L.program(run_one, 1)
    t0 = time.perf_counter()
    exe = f.lower(ids).compile()
    compile_s = time.perf_counter() - t0
    s = _timed(lambda: jax.block_until_ready(exe(ids)), repeat=2)
    reg = np.asarray(exe(ids)[0])[:, -1].astype(np.float64)
    return {"runs": n, "horizon": T, "compile_s": compile_s, "run_s": s, "run_steps_per_s": n * T / s,
            "mean_final_regret": float(reg.mean())}


def other_scripts(runs, horizon, out_dir):
    """benchmarks/compile_time.py and benchmarks/plain_scans.py, when present, in this process."""
    import importlib

    got = {}
    for mod, args in (("compile_time", ["--runs", str(runs), "--horizon", str(horizon)]),
                      ("plain_scans", ["--runs", str(runs), "--horizon", str(horizon)])):
        path = os.path.join(os.path.dirname(os.path.abspath(__file__)), mod + ".py")
        if not os.path.exists(path):
            got[mod] = "absent"
            continue
        out = os.path.join(out_dir, f"{mod}.json")
        try:
            m = importlib.import_module(mod)
            m.main(args + ["--out", out])
            got[mod] = json.load(open(out)) if os.path.exists(out) else "ran (no JSON)"
        except SystemExit:
            got[mod] = json.load(open(out)) if os.path.exists(out) else "exited"
        except Exception as e:
            got[mod] = f"{type(e).__name__}: {str(e)[:800]}"
            log("FAILED", mod, got[mod])
    return got


# ----------------------------------------------------------------------------- the table
def print_table():
    print("\n| row | run-steps/s | details |\n|---|---:|---|")
    for r in ROWS:
        if "error" in r:
            print(f"| {r['name']} | - | ERROR {r['error'][:150]} |")
            continue
        rate = r.get("end_to_end_run_steps_per_s") or r.get("run_steps_per_s")
        det = {k: (round(v, 4) if isinstance(v, float) else v) for k, v in r.items()
               if k in ("compile_s", "reduce_s", "to_host_s", "kernel_run_steps_per_s", "runs_equal_to_library", "mean_final_regret", "se_final_regret", "runs",
                        "horizon", "block", "warps", "peak_device_bytes", "bytes_to_host")}
        print(f"| {r['name']} | {rate:.3g} | {det} |" if rate else f"| {r['name']} | - | {det} |")
    sys.stdout.flush()


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=float, default=1e6)
    ap.add_argument("--horizon", type=int, default=10_000)
    ap.add_argument("--arms", type=int, default=10)
    ap.add_argument("--records", type=int, default=200)
    ap.add_argument("--delayed-runs", type=float, default=1e5)
    ap.add_argument("--other-runs", type=float, default=1e5)
    ap.add_argument("--other-horizon", type=int, default=1000)
    ap.add_argument("--skip", nargs="*", default=[], help="row groups to leave out: anchors reduction fused plain "
                    "variants delayed fit scan other")
    ap.add_argument("--quick", action="store_true", help="tiny sizes (a smoke run of the script, e.g. on a CPU)")
    ap.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "results",
                                                  "gpu-check.json"))
    a = ap.parse_args(argv)
    import jax

    n, T, K, R = int(a.runs), a.horizon, a.arms, a.records
    nd, no, To = int(a.delayed_runs), int(a.other_runs), a.other_horizon
    if a.quick:
        n, T, R, nd, no, To = 256, 200, 10, 256, 64, 100
    gpu = jax.default_backend() == "gpu"
    import subprocess

    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                                cwd=os.path.dirname(os.path.abspath(__file__))).stdout.strip() or None
    except OSError:
        commit = None
    info = {"commit": commit, "jax": jax.__version__, "backend": jax.default_backend(), "device": str(jax.devices()[0]),
            "python": platform.python_version(), "runs": n, "horizon": T, "arms": K, "records": R}
    log(info)
    skip = set(a.skip)
    names = ("UCB1", "KL-UCB", "Thompson", "Gaussian-TS")
    if "fused" not in skip:  # UCB1 first: the anchors compare their runs with it
        row("fused end to end: UCB1", library, "UCB1", n, T, R, K)
    if "anchors" not in skip:
        if gpu:
            row("anchor: CUDA UCB1 (CuPy, thread per run)", cuda_anchor, K, n, T, R)
            row("anchor: CUDA UCB1, --use_fast_math", cuda_anchor, K, n, T, R, fast_math=True)
            row("anchor: CUDA UCB1, 256 threads a block", cuda_anchor, K, n, T, R, block=256)
        row("anchor: Pallas lanes UCB1 (minimal)", pallas_anchor, K, n, T, R, interpret=not gpu,
            block=128 if gpu else 32)
    if "reduction" not in skip:
        for pts in (None, 6):
            row(f"statistics on the device, {pts or R} record points a program", reduction, n, R, K, pts)
    if "fused" not in skip:
        for nm in names[1:]:
            row(f"fused end to end: {nm}", library, nm, n, T, R, K)
    if "plain" not in skip:
        for nm in names:
            row(f"plain vmap(lax.scan): {nm}", plain, nm, n, max(T // 5, 10), R // 5 or 1, K)
    if "variants" not in skip and gpu:
        for nm, vs in (("UCB1", ((64, 2), (128, 4), (256, 4), (256, 8))),
                       ("Thompson", ((32, 1), (64, 2), (128, 4))), ("KL-UCB", ((128, 4), (256, 8)))):
            for b, w in vs:
                row(f"lanes kernel alone: {nm} block={b} warps={w}", lanes_variant, nm, n, T // 5, R // 5, b, w, K)
    if "delayed" not in skip:
        for nm in ("DelayedUCB", "DelayedKLUCB"):
            row(f"fused end to end: {nm} m=1000", library, nm, nd, T, R, K)
        for nm in ("DelayedUCB", "DelayedKLUCB"):
            row(f"plain vmap(lax.scan): {nm} m=1000", plain, nm, nd, T // 5, R // 5 or 1, K)
    if "fit" not in skip and gpu:
        row("fused end to end: DelayedKLUCB m=1000 at 1e6 runs (fits?)", library, "DelayedKLUCB", 1_000_000, 2000,
            R, K)
    if "scan" not in skip:
        row("scan path end to end: UCB1", library, "UCB1", no, To, R, K, path="scan")
        row("plain vmap(lax.scan): UCB1 (scan row's size)", plain, "UCB1", no, To, R, K)
    out_dir = os.environ.get("OUT") or os.path.dirname(a.out)
    others = None
    if "other" not in skip:
        others = other_scripts(no, To, out_dir)
    res = {"info": info, "rows": ROWS, "other": others, "total_s": time.perf_counter() - T0}
    for p in {a.out, os.path.join(os.environ["OUT"], "gpu-check.json") if os.environ.get("OUT") else a.out}:
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "w") as f:
            json.dump(res, f, indent=1, default=str)
    print_table()
    log("total", time.perf_counter() - T0)
    return 0


if __name__ == "__main__":
    sys.exit(main())
