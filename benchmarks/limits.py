"""The library against what a user could write: UCB1, KL-UCB, Beta-Bernoulli Thompson and
DelayedKLUCB run side by side in one process, on the same world, three ways.

* **library**: ``jaxbandits.simulate`` (public API), timed on a second identical call (the first
  one compiles); any compile time the engine reports for the second call is subtracted.
* **naive**: a plain hand-written ``jax.vmap(lax.scan)`` of the same algorithm, about 30 lines
  each: counts and sums as the state, per round draw the reward, pick the arm, update, add the
  pseudo-regret; the regret is recorded at the same record points (an outer scan over record
  points, an inner scan over the rounds between them: the records are scan outputs). It uses the
  library's math primitives (``jaxbandits.core.mathlib``: uniforms, tie rule, KL-UCB Newton solver,
  Beta sampler, Poisson KL-UCB), so it measures the engine around the algorithm, not the math.
  Its DelayedKLUCB is transcribed in the natural order: insert the conversion into the calendar,
  read this round's slot, clear it; read the pull that leaves the window, then overwrite its slot.
* **hand-fused** (DelayedKLUCB only): one scan, no channel machinery, only the state the next
  round needs, every carried buffer written first and read last (docs/architecture.md, "The
  calendar": on XLA:CPU a read-then-write of a carried buffer copies it every round).

All three draw the world from the same random streams (conventions §8: run ``r``
keyed by ``fold_in(key, r)``, the REWARD and DELAY streams, the act key of round ``t``) and use the
same float operations as the library's policies, so they take the same actions: the script
checks that the final pull counts of every run are equal, and the recorded regret equal up to
float32 summation (the library sums the pseudo-regret with Kahan compensation, the naive scans
with a plain ``+``). A failed check stops the script: the speeds are only comparable when it is
the same algorithm on the same world.

Worlds: K Bernoulli arms with means ``linspace(0.1, 0.9, K)``; UCB1, KL-UCB and Thompson without
delay on the attributed channel; DelayedKLUCB on conversions with the same rates, geometric
delays of mean ``--delay-mean`` (100) on {0, 1, ...}, censored by the window ``--window`` (m =
1000), on the conversions channel.

    python benchmarks/limits.py                          # CPU: 1000 runs, K=10, T=1e4
    python benchmarks/limits.py --runs 200 --horizon 2000
    python benchmarks/limits.py --devices 1              # one XLA host device (default: one per core)
    python benchmarks/limits.py                          # GPU: 1e6 runs (DelayedKLUCB 1e5)

On a GPU each row also runs the library's **fused path** (``simulate(..., path="fused")``: one
Pallas kernel per policy with the whole time loop inside, docs/fused.md), timed the same way, its
final regret checked against the scan row's statistically (other random bits, same law), with
its ratio to the scan, to the naive scan and (UCB1) to the 1.08e11 run-steps/s CUDA anchor. On a
CPU the fused path is reported as GPU-only (its interpreter's timing means nothing).

Writes ``benchmarks/results/limits-<platform>.json``.

    python benchmarks/limits.py --gpu-check              # the device check: benchmarks/gpu_check.py
"""
from __future__ import annotations

import argparse
import inspect
import json
import os
import platform
import sys
import time

import numpy as np

ALGOS = ("UCB1", "KL-UCB", "Thompson", "DelayedKLUCB")


# ----------------------------------------------------------------------------- the worlds
def arm_means(K):
    return np.linspace(0.1, 0.9, K).astype(np.float32)


def classic_setup(name, K):
    """The library's ``(env, channel, policy)`` of a classic row."""
    import jaxbandits as jb
    from jaxbandits.policies import classic

    pol = {"UCB1": classic.ucb1, "KL-UCB": classic.kl_ucb, "Thompson": classic.thompson}[name]()
    return jb.envs.bernoulli(arm_means(K)), jb.channels.attributed(), pol


def delayed_setup(K, delay_mean, window):
    """The library's ``(env, channel, policy)`` of the DelayedKLUCB row."""
    import jaxbandits as jb
    from jaxbandits.policies import conversions

    law = jb.delays.geometric(mean=delay_mean)
    # the exact calendar width, whatever the number of runs (the default narrows it past 2 GiB)
    return (jb.envs.conversions(arm_means(K), law), jb.channels.conversions(window=window, width=window + 1),
            conversions.delayed_klucb(law, window))


def record_stride(T, records):
    return max(1, T // records)


# ----------------------------------------------------------------------------- shared pieces
def streams(key, r):
    """REWARD and DELAY stream keys and the act key stream of run ``r`` (conventions §8)."""
    import jax

    f = jax.random.fold_in
    k_run = f(key, r)
    k_env = f(k_run, 0)
    return f(k_env, 1), f(k_env, 2), f(f(k_run, 1), 1)


def recorded_scan(step, c0, T, stride, metric):
    """``lax.scan`` of ``step`` over rounds ``0..T-1``, recording ``metric(carry)`` after rounds
    ``stride-1, 2 stride-1, ...`` and ``T-1`` (the library's ``record=stride``) as scan outputs."""
    import jax.numpy as jnp
    from jax import lax

    nb, tail = divmod(T, stride)

    def block(c, b):
        c = lax.scan(step, c, b * stride + jnp.arange(stride, dtype=jnp.int32))[0]
        return c, metric(c)

    c, recs = lax.scan(block, c0, jnp.arange(nb, dtype=jnp.int32))
    if tail:
        c = lax.scan(step, c, nb * stride + jnp.arange(tail, dtype=jnp.int32))[0]
        recs = jnp.concatenate([recs, metric(c)[None]])
    return c, recs


# ----------------------------------------------------------------------------- naive scans
def naive_classic(name, K, T, stride, key, fold=None):
    """One run of the naive UCB1 / KL-UCB / Thompson: ``run_id -> (regret[R], pulls[K])``."""
    import jax
    import jax.numpy as jnp

    from jaxbandits import mathlib as M

    fold = fold or jax.random.fold_in
    mu = jnp.asarray(arm_means(K))
    best = jnp.max(mu)

    def index(n, s, t, k):
        if name == "UCB1":  # mean + sqrt(2 log(t+1) / n)
            m = jnp.maximum(n, 1.0)
            return jnp.where(n > 0, s / m + jnp.sqrt(2.0 * jnp.log(t + 1.0) / m), jnp.inf)
        if name == "KL-UCB":  # max{q : n kl(mean, q) <= log(t+1)}
            m = jnp.maximum(n, 1.0)
            bound = jnp.where(n > 0, jnp.log(t + 1.0) / m, jnp.inf)
            return jnp.where(n > 0, M.kl_ucb_bernoulli(jnp.clip(s / m, 0.0, 1.0), bound, 4), jnp.inf)
        return M.beta_sample(k, 1.0 + s, 1.0 + jnp.maximum(n - s, 0.0))  # Beta(1 + S, 1 + N - S)

    def run(r):
        k_rew, _, k_act = streams(key, r)

        def step(c, t):
            n, s, reg = c
            k = fold(k_act, t)
            a = M.argmax_random_tie(index(n, s, t, k), M.uniform(k))
            x = (M.uniform(fold(k_rew, t)) < mu[a]).astype(jnp.float32)
            e = (jnp.arange(K) == a).astype(jnp.float32)
            return (n + e, s + e * x, reg + (best - mu[a])), None

        z = jnp.zeros((K,), jnp.float32)
        c, regret = recorded_scan(step, (z, z, jnp.float32(0)), T, stride, lambda c: c[2])
        return regret, c[0]

    return run


def geometric_constants(delay_mean, window):
    import jax.numpy as jnp

    from jaxbandits import delays as D

    law = D.geometric(mean=delay_mean)
    lr = D.geometric_log_rho(law)
    # the library's constants, computed the same way (float32, in the trace)
    return law, jnp.exp(lr), jnp.exp((window + 1) * lr), -jnp.expm1((window + 1) * lr)


def naive_delayed_klucb(K, T, stride, key, delay_mean, window, fold=None, index="klucb"):
    """One run of the naive DelayedKLUCB (Vernade et al. 2017, censored, geometric delays):
    ``Ñ = tau_m N_closed + N_window - O`` by its O(K) recursion, a calendar of conversions, the
    ring of the last m arms; natural order (reads before writes). ``index="ucb"``: DelayedUCB's
    index ``S/Ñ + sqrt(beta N / 2) / Ñ`` instead."""
    import jax
    import jax.numpy as jnp

    from jaxbandits import mathlib as M

    fold = fold or jax.random.fold_in
    mu = jnp.asarray(arm_means(K))
    best = jnp.max(mu)
    m, W = window, window + 1

    def run(r):
        law, rho, rho_m1, tau_m = geometric_constants(delay_mean, window)
        k_rew, k_del, k_act = streams(key, r)

        def step(c, t):
            cal, n, s, o, w, nc, ring, reg = c
            k = fold(k_act, t)
            nt = tau_m * nc + w - o
            safe = jnp.where(nt > 0, nt, 1.0)
            if index == "ucb":
                idx = jnp.where(nt > 0, s / safe + jnp.sqrt(jnp.log(t + 1.0) * n / 2.0) / safe, jnp.inf)
            else:
                idx = M.poisson_kl_ucb(s / safe, nt, jnp.log(t + 1.0), 1.0, 8)
            a = jnp.where(t < K, t % K, M.argmax_random_tie(idx, M.uniform(k)))
            x = M.uniform(fold(k_rew, t)) < mu[a]
            d = law.ppf(M.uniform(fold(k_del, t)))
            e = (jnp.arange(K) == a).astype(jnp.float32)
            cal = cal.at[(t + d) % W].add(e * (x & (d <= m)))  # the conversion, if seen, at t + d
            conv = cal[t % W]  # what arrives now
            cal = cal.at[t % W].set(0.0)
            old = ring[t % m]  # the pull of round t - m leaves the window (-1: none yet)
            ring = ring.at[t % m].set(a)
            e_old = (jnp.arange(K) == old).astype(jnp.float32)
            o = rho * o - rho_m1 * e_old + rho * e
            return (cal, n + e, s + conv, o, w - e_old + e, nc + e_old, ring, reg + (best - mu[a])), None

        z = jnp.zeros((K,), jnp.float32)
        c0 = (jnp.zeros((W, K), jnp.float32), z, z, z, z, z, jnp.full((m,), -1, jnp.int32), jnp.float32(0))
        c, regret = recorded_scan(step, c0, T, stride, lambda c: c[-1])
        return regret, c[1]

    return run


def fused_delayed_klucb(K, T, stride, key, delay_mean, window, fold=None):
    """One run of the hand-fused DelayedKLUCB: the same algorithm and float operations as
    :func:`naive_delayed_klucb`, only the state the next round needs (no pull counts), every
    carried buffer written first and read last (the calendar slot read last round is cleared,
    the conversion inserted, then this round's slot read; the ring slot written, then the arm
    leaving the window next round read and carried as a scalar)."""
    import jax
    import jax.numpy as jnp

    from jaxbandits import mathlib as M

    fold = fold or jax.random.fold_in
    mu = jnp.asarray(arm_means(K))
    best = jnp.max(mu)
    m, W = window, window + 1

    def run(r):
        law, rho, rho_m1, tau_m = geometric_constants(delay_mean, window)
        k_rew, k_del, k_act = streams(key, r)

        def step(c, t):
            cal, s, o, w, nc, ring, leave, reg = c
            k = fold(k_act, t)
            nt = tau_m * nc + w - o
            idx = M.poisson_kl_ucb(s / jnp.where(nt > 0, nt, 1.0), nt, jnp.log(t + 1.0), 1.0, 8)
            a = jnp.where(t < K, t % K, M.argmax_random_tie(idx, M.uniform(k)))
            x = M.uniform(fold(k_rew, t)) < mu[a]
            d = law.ppf(M.uniform(fold(k_del, t)))
            e = (jnp.arange(K) == a).astype(jnp.float32)
            cal = cal.at[(t - 1) % W].set(0.0)  # writes ...
            cal = cal.at[jnp.where(x & (d <= m), (t + d) % W, W)].add(e, mode="drop")
            ring = ring.at[t % m].set(a)
            e_old = (jnp.arange(K) == leave).astype(jnp.float32)
            o = rho * o - rho_m1 * e_old + rho * e
            # ... then reads
            return (cal, s + cal[t % W], o, w - e_old + e, nc + e_old, ring, ring[(t + 1) % m],
                    reg + (best - mu[a])), None

        z = jnp.zeros((K,), jnp.float32)
        c0 = (jnp.zeros((W, K), jnp.float32), z, z, z, z, jnp.full((m,), -1, jnp.int32), jnp.int32(-1),
              jnp.float32(0))
        c, regret = recorded_scan(step, c0, T, stride, lambda c: c[-1])
        return regret, c[3] + c[4]  # pulls per arm: in the window + closed

    return run


# ----------------------------------------------------------------------------- running
def program(run_one, n_dev):
    """``jit(vmap(run_one))`` over run ids, split over ``n_dev`` devices as the library does."""
    import jax

    f = jax.vmap(run_one)
    if n_dev > 1:
        P = jax.sharding.PartitionSpec
        mesh = jax.sharding.Mesh(np.array(jax.devices()[:n_dev]), ("runs",))
        f = jax.shard_map(f, mesh=mesh, in_specs=P("runs"), out_specs=P("runs"), check_vma=False)
    return jax.jit(f)


def run_ids(n_runs, n_dev):
    import jax.numpy as jnp

    return jnp.arange(-(-n_runs // n_dev) * n_dev, dtype=jnp.int32)


def run_hand(run_one, n_runs, n_dev, repeat=1):
    """Compile, warm up and time a hand-written program; returns regret, pulls and timings."""
    import jax

    ids = run_ids(n_runs, n_dev)
    t0 = time.perf_counter()
    compiled = program(run_one, n_dev).lower(ids).compile()
    compile_s = time.perf_counter() - t0
    mem = None
    try:
        ma = compiled.memory_analysis()
        mem = int(ma.temp_size_in_bytes + ma.argument_size_in_bytes + ma.output_size_in_bytes)
    except Exception:  # not every backend reports it
        pass
    jax.block_until_ready(compiled(ids))
    best = np.inf
    for _ in range(repeat):
        t0 = time.perf_counter()
        regret, pulls = compiled(ids)
        regret, pulls = np.asarray(regret), np.asarray(pulls)  # to the host, as simulate's records
        best = min(best, time.perf_counter() - t0)
    return {"regret": regret[:n_runs], "pulls": pulls[:n_runs], "compile_s": compile_s, "run_s": best,
            "program_bytes": mem}


def run_library(env, channel, pol, T, key, n_runs, stride, repeat=1):
    """``jaxbandits.simulate`` twice or more; the later calls are timed (wall clock, minus any
    compile time the engine reports for them)."""
    import jaxbandits as jb

    kw = {"record": stride}
    if "delayed_regret" in inspect.signature(jb.simulate).parameters:
        kw["delayed_regret"] = False  # the hand-written scans do not track L(t) either
    if "path" in inspect.signature(jb.simulate).parameters:
        kw["path"] = "scan"  # this row is the scan engine (on a GPU "auto" would pick the fused kernels)
    reduced = None
    if "keep" in inspect.signature(jb.simulate).parameters:
        # the statistics alone (the reduced form, docs/simulate.md): its time, bytes to host, result
        jb.simulate(env, channel, pol, T, key, n_runs, **kw, keep="none")
        t0 = time.perf_counter()
        r = jb.simulate(env, channel, pol, T, key, n_runs, **kw, keep="none")
        wall = time.perf_counter() - t0 - (r.timing.get("compile_s") or 0.0)
        reduced = {"run_s": wall, "run_steps_per_s": n_runs * T / wall, **host_bytes(r)}
        del r
        kw["keep"] = "all"  # the rows below compare every run's curves with the hand-written scans
    out = jb.simulate(env, channel, pol, T, key, n_runs, **kw)
    first = dict(out.timing)
    best, engine, again = np.inf, np.inf, {}
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = jb.simulate(env, channel, pol, T, key, n_runs, **kw)
        wall = time.perf_counter() - t0
        again = dict(out.timing)
        best = min(best, wall - (again.get("compile_s") or 0.0))
        engine = min(engine, again.get("run_s") or np.inf)
    return out, {"compile_s": first.get("compile_s"), "second_call_compile_s": again.get("compile_s"),
                 "run_s": best, "engine_run_s": engine if np.isfinite(engine) else None,
                 "devices": again.get("devices", 1), **host_bytes(out),
                 **({"reduced": reduced} if reduced else {})}


def host_bytes(out) -> dict:
    """Bytes the simulation copied to the host (as the engine counts them) and the host memory of
    the result it returned (every numpy array of the output)."""
    def walk(v):
        if isinstance(v, np.ndarray):
            return v.nbytes
        if isinstance(v, dict):
            return sum(walk(x) for x in v.values())
        if isinstance(v, (tuple, list)):
            return sum(walk(x) for x in v)
        return 0

    return {"bytes_to_host": (out.timing or {}).get("bytes_to_host"), "result_host_bytes": walk(out)}


#: One H100, K=10 Bernoulli, 1e6 runs, T=1e4: a hand-written CUDA UCB1, one thread per run, the whole
#: time loop in the kernel (the issue's anchor; measured outside this project).
CUDA_UCB1_ANCHOR = 1.08e11
GPU_ONLY = ("the fused path is GPU-only (Pallas -> Triton); on a CPU it runs through Pallas' interpreter, whose "
            "timing means nothing: measure it on a GPU with  python benchmarks/limits.py  (docs/fused.md)")


def run_pallas(env, channel, pol, T, key, n_runs, stride, scan_out, repeat=1):
    """The library's fused path (``simulate(..., path="fused")``, GPU only): compile + warm-up call,
    then ``repeat`` timed calls (the kernel's own time, as the path reports it); its final regret
    is checked against the scan row's within 4 standard errors (other bits, same statistics)."""
    import jaxbandits as jb

    out = jb.simulate(env, channel, pol, T, key, n_runs, record=stride, path="fused")
    compile_s = out.timing["compile_s"]
    best, wall = np.inf, np.inf
    for _ in range(repeat):  # the default form (statistics alone at this scale), end to end
        t0 = time.perf_counter()
        out = jb.simulate(env, channel, pol, T, key, n_runs, record=stride, path="fused")
        wall = min(wall, time.perf_counter() - t0 - out.timing["compile_s"])
        best = min(best, out.timing["run_s"])
    t0 = time.perf_counter()
    full = jb.simulate(env, channel, pol, T, key, n_runs, record=stride, path="fused", keep="all")
    full_wall = time.perf_counter() - t0 - full.timing["compile_s"]
    per_run = {"end_to_end_s": full_wall, "run_steps_per_s_end_to_end": n_runs * T / full_wall, **host_bytes(full)}
    del full
    a, b = np.asarray(out.final("regret"), np.float64), np.asarray(scan_out.regret[:, -1], np.float64)
    z = (a.mean() - b.mean()) / max(np.sqrt(a.var() / a.size + b.var() / b.size), 1e-12)
    if abs(z) > 4:
        raise AssertionError(f"fused path: final regret {a.mean():.3f} vs the scan's {b.mean():.3f} ({z:.1f} SE)")
    return {"compile_s": compile_s, "run_s": best, "run_steps_per_s": n_runs * T / best, "regret_z_vs_scan": float(z),
            "final_regret_mean": float(a.mean()), "peak_device_bytes_so_far": peak_device_bytes(),
            "end_to_end_s": wall, "run_steps_per_s_end_to_end": n_runs * T / wall, **host_bytes(out),
            "keep_all": per_run}


def check_same(label, lib, hand):
    """Same algorithm on the same world: equal final pull counts in every run, and regret equal up
    to float32 summation at every record point. Returns the largest relative regret difference."""
    pulls = np.asarray(lib.pulls)[:, -1, :]
    bad = np.flatnonzero((pulls != np.rint(hand["pulls"]).astype(pulls.dtype)).any(axis=1))
    if bad.size:
        raise AssertionError(f"{label}: final pull counts differ from the library in {bad.size} of "
                             f"{pulls.shape[0]} runs (first: run {bad[0]})")
    lr, hr = np.asarray(lib.regret, np.float64), np.asarray(hand["regret"], np.float64)
    if lr.shape != hr.shape:
        raise AssertionError(f"{label}: regret records of shape {hr.shape}, library {lr.shape}")
    # a plain float32 running sum of t + 1 terms errs by at most about (t + 1) 2^-24 of the sum
    t = np.asarray(lib.t, np.float64)
    tol = np.maximum(1e-6, t * 2.0**-24) * np.maximum(np.abs(lr), 1.0)
    if (np.abs(lr - hr) > tol).any():
        r, j = np.argwhere(np.abs(lr - hr) > tol)[0]
        raise AssertionError(f"{label}: regret differs from the library's at run {r}, t = {int(t[j])}: "
                             f"{hr[r, j]} vs {lr[r, j]}")
    return float(np.max(np.abs(lr - hr) / np.maximum(np.abs(lr), 1e-30)))


def library_memory(env, ch, pol, T, n_runs, stride):
    """The library program's memory from XLA's analysis (no run): device bytes, records, state."""
    from jaxbandits.engine import memory, problem, record_points

    prob = problem(env, ch, pol, T, n_runs=n_runs, delayed_regret=False)
    m = memory.program_memory({"p": prob}, n_runs, record_points(T, stride))
    return {"program_bytes": m["device"], "records_bytes": m["records"], "state_bytes": m["state"]}


def peak_device_bytes():
    import jax

    try:
        return (jax.devices()[0].memory_stats() or {}).get("peak_bytes_in_use")
    except Exception:
        return None


def measure(algo, a, key, n_runs, repeat=1, pallas=False):
    """One row: the library, the naive scan and (DelayedKLUCB) the hand-fused scan, checked equal;
    on a GPU also the library's fused Pallas path (``pallas``)."""
    stride = record_stride(a.horizon, a.records)
    T, K = a.horizon, a.arms
    if algo == "DelayedKLUCB":
        env, ch, pol = delayed_setup(K, a.delay_mean, a.window)
    else:
        env, ch, pol = classic_setup(algo, K)
    lib, lt = run_library(env, ch, pol, T, key, n_runs, stride, repeat)
    row = {"algo": algo, "runs": n_runs, "T": T, "K": K, "record_stride": stride,
           "library": {**lt, "run_steps_per_s": n_runs * T / lt["run_s"],
                       "peak_device_bytes_so_far": peak_device_bytes(),
                       **library_memory(env, ch, pol, T, n_runs, stride)}}
    lost = int(np.sum(lib.lost_to_W))
    hands = {}
    from jaxbandits.core.mathlib import fold_in as written_out_fold_in

    if algo == "DelayedKLUCB":
        args = (K, T, stride, key, a.delay_mean, a.window)
        hands["naive"] = naive_delayed_klucb(*args)
        hands["fused"] = fused_delayed_klucb(*args)
        hands["fused_wfold"] = fused_delayed_klucb(*args, fold=written_out_fold_in)
        row["world"] = {"delay": f"geometric(mean={a.delay_mean})", "window": a.window,
                        "library_calendar_width": int(lib.width), "library_lost_to_W": lost}
    else:
        hands["naive"] = naive_classic(algo, K, T, stride, key)
    hands["naive_wfold"] = (naive_delayed_klucb(*args, fold=written_out_fold_in) if algo == "DelayedKLUCB"
                            else naive_classic(algo, K, T, stride, key, fold=written_out_fold_in))
    for what, fn in hands.items():
        h = run_hand(fn, n_runs, lt["devices"], repeat)
        if lost == 0:
            h_diff = check_same(f"{algo} {what}", lib, h)
        else:  # the library's calendar dropped conversions: not the same world
            h_diff = None
            print(f"warning: {algo}: the library lost {lost} conversions to its calendar width; "
                  f"{what} not checked", file=sys.stderr)
        row[what] = {"compile_s": h["compile_s"], "run_s": h["run_s"], "run_steps_per_s": n_runs * T / h["run_s"],
                     "program_bytes": h["program_bytes"], "max_rel_regret_diff": h_diff,
                     "checked_equal": lost == 0, "peak_device_bytes_so_far": peak_device_bytes()}
    row["library_over_naive"] = row["library"]["run_steps_per_s"] / row["naive"]["run_steps_per_s"]
    row["library_over_naive_wfold"] = row["library"]["run_steps_per_s"] / row["naive_wfold"]["run_steps_per_s"]
    if lt["engine_run_s"]:  # the engine's own run time: the library's call less its host-side work
        row["library_engine_over_naive"] = row["naive"]["run_s"] / lt["engine_run_s"]
    if "fused" in row:
        row["library_over_fused"] = row["library"]["run_steps_per_s"] / row["fused"]["run_steps_per_s"]
        row["library_over_fused_wfold"] = row["library"]["run_steps_per_s"] / row["fused_wfold"]["run_steps_per_s"]
    row["final_regret_mean"] = float(np.mean(np.asarray(lib.regret)[:, -1]))
    if pallas:
        import jaxbandits as jb

        if algo == "DelayedKLUCB":  # the default width is exact here (the fused path sizes its own calendar)
            ch = jb.channels.conversions(window=a.window)
        p = run_pallas(env, ch, pol, T, key, n_runs, stride, lib, repeat)
        row["pallas"] = p
        row["pallas_over_library"] = p["run_steps_per_s"] / row["library"]["run_steps_per_s"]
        row["pallas_over_naive"] = p["run_steps_per_s"] / row["naive"]["run_steps_per_s"]
        if algo == "UCB1":
            row["pallas_over_cuda_anchor"] = p["run_steps_per_s"] / CUDA_UCB1_ANCHOR
    else:
        row["pallas"] = {"skipped": GPU_ONLY}
    return row


def _fmt_bytes(b):
    return "n/a" if b is None else f"{b / 2**20:.1f}"


def print_table(rows, platform_name):
    """Speeds in run-steps/s; ``*w``: the hand-written program with the written-out ``fold_in``
    (:func:`jaxbandits.core.mathlib.fold_in`, the engine's), so ``lib/naive-w`` and ``lib/fused-w`` show
    the engine's structure alone, without its faster PRNG lowering."""
    mem_col = "peak MiB" if platform_name == "gpu" else "prog MiB lib/naive"
    head = (f"{'algorithm':13s} {'runs':>8s} {'library':>10s} {'naive':>10s} {'naive-w':>10s} {'fused':>10s} "
            f"{'fused-w':>10s} {'lib/naive':>9s} {'lib/nai-w':>9s} {'lib/fused':>9s} {'lib/fus-w':>9s} "
            f"{'compile s lib/naive':>20s} {'2nd compile':>11s} {mem_col:>14s}")
    print(head)
    dash = lambda w: f"{'-':>{w}s} "
    pallas_rows = [r for r in rows if "run_steps_per_s" in r.get("pallas", {})]
    for r in rows:
        fused, fw = r.get("fused"), r.get("fused_wfold")
        comp = f"{r['library']['compile_s']:.2f}/{r['naive']['compile_s']:.2f}"
        if platform_name == "gpu":
            mem = _fmt_bytes(r["library"]["peak_device_bytes_so_far"])
        else:
            mem = _fmt_bytes(r["library"]["program_bytes"]) + "/" + _fmt_bytes(r["naive"]["program_bytes"])
        print(f"{r['algo']:13s} {r['runs']:8d} {r['library']['run_steps_per_s']:10.3e} "
              f"{r['naive']['run_steps_per_s']:10.3e} {r['naive_wfold']['run_steps_per_s']:10.3e} "
              + (f"{fused['run_steps_per_s']:10.3e} {fw['run_steps_per_s']:10.3e} " if fused else dash(10) + dash(10))
              + f"{r['library_over_naive']:9.2f} {r['library_over_naive_wfold']:9.2f} "
              + (f"{r['library_over_fused']:9.2f} {r['library_over_fused_wfold']:9.2f} " if fused else dash(9) + dash(9))
              + f"{comp:>20s} {r['library']['second_call_compile_s'] or 0.0:11.2f} {mem:>14s}", flush=True)
    if pallas_rows:
        print(f"\nfused path (Pallas; 'fused' above is the hand-fused scan):\n{'algorithm':13s} {'runs':>8s} "
              f"{'pallas':>10s} {'/library':>9s} {'/naive':>9s} {'compile s':>9s} {'peak MiB':>9s} {'z vs scan':>9s}")
        for r in pallas_rows:
            p = r["pallas"]
            print(f"{r['algo']:13s} {r['runs']:8d} {p['run_steps_per_s']:10.3e} {r['pallas_over_library']:9.2f} "
                  f"{r['pallas_over_naive']:9.2f} {p['compile_s']:9.2f} {_fmt_bytes(p['peak_device_bytes_so_far']):>9s} "
                  f"{p['regret_z_vs_scan']:9.2f}" + (f"   {r['pallas_over_cuda_anchor']:.2f} of the 1.08e11 CUDA anchor"
                                                      if "pallas_over_cuda_anchor" in r else ""))
    else:
        print("\n" + GPU_ONLY)
    print(f"\nbytes to the host and host memory of the result, per form (docs/simulate.md):\n{'algorithm':13s} "
          f"{'runs':>8s} {'path':>6s} {'form':>8s} {'run-steps/s':>11s} {'to host MiB':>11s} {'result MiB':>10s}")
    for r in rows:
        forms = [("scan", "per-run", {**r["library"], "run_steps_per_s": r["library"]["run_steps_per_s"]})]
        if "reduced" in r["library"]:
            forms.append(("scan", "reduced", r["library"]["reduced"]))
        p = r.get("pallas", {})
        if "run_steps_per_s" in p:
            forms.append(("fused", "default", {**p, "run_steps_per_s": p["run_steps_per_s_end_to_end"]}))
            forms.append(("fused", "per-run", {**p["keep_all"], "run_steps_per_s": p["keep_all"]["run_steps_per_s_end_to_end"]}))
        for path, form, d in forms:
            print(f"{r['algo']:13s} {r['runs']:8d} {path:>6s} {form:>8s} {d['run_steps_per_s']:11.3e} "
                  f"{_fmt_bytes(d.get('bytes_to_host')):>11s} {_fmt_bytes(d.get('result_host_bytes')):>10s}")


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    if "--gpu-check" in argv:  # the whole GPU table in one process (benchmarks/gpu_check.py)
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import gpu_check

        return gpu_check.main([x for x in argv if x != "--gpu-check"]) == 0
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=None, help="runs (default: 1000 on CPU, 1e6 on GPU)")
    ap.add_argument("--delayed-runs", type=int, default=None,
                    help="runs of the DelayedKLUCB row (default: --runs on CPU, 1e5 on GPU: its calendars are "
                         "[m+1, K] floats a run)")
    ap.add_argument("--horizon", type=int, default=10_000)
    ap.add_argument("--arms", type=int, default=10)
    ap.add_argument("--records", type=int, default=200, help="record points (stride T // records)")
    ap.add_argument("--delay-mean", type=float, default=100.0, help="DelayedKLUCB: mean of the geometric delays")
    ap.add_argument("--window", type=int, default=1000, help="DelayedKLUCB: censoring window m")
    ap.add_argument("--algos", nargs="+", default=list(ALGOS), choices=ALGOS)
    ap.add_argument("--repeat", type=int, default=2, help="timed calls after the warm-up (the best is kept)")
    ap.add_argument("--devices", type=int, default=None, help="XLA host devices on CPU (default: one per core)")
    ap.add_argument("--no-pallas", action="store_true", help="on a GPU, leave out the fused (Pallas) path")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=None, help="default: benchmarks/results/limits-<platform>.json")
    a = ap.parse_args(argv)
    for name in ("horizon", "arms", "records", "window", "repeat"):
        if getattr(a, name) < 1:
            ap.error(f"--{name.replace('_', '-')} must be >= 1, got {getattr(a, name)}")
    if a.arms < 2:
        ap.error(f"--arms must be >= 2, got {a.arms}")
    if a.delay_mean <= 0:
        ap.error(f"--delay-mean must be > 0, got {a.delay_mean}")
    ndev = a.devices if a.devices is not None else len(os.sched_getaffinity(0))
    if "xla_force_host_platform_device_count" not in os.environ.get("XLA_FLAGS", ""):
        os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "")
                                   + f" --xla_force_host_platform_device_count={ndev}").strip()
    import jax

    dev = jax.devices()[0]
    gpu = dev.platform == "gpu"
    runs = a.runs or (1_000_000 if gpu else 1000)
    delayed_runs = a.delayed_runs or (min(runs, 100_000) if gpu else runs)
    key = jax.random.key(a.seed)
    print(f"{dev.platform} ({dev.device_kind}) x{jax.local_device_count()}, jax {jax.__version__}; K={a.arms}, "
          f"T={a.horizon}, record stride {record_stride(a.horizon, a.records)}; DelayedKLUCB: geometric delays of "
          f"mean {a.delay_mean:g}, window m={a.window}", flush=True)
    rows = []
    for algo in a.algos:
        rows.append(measure(algo, a, key, delayed_runs if algo == "DelayedKLUCB" else runs, a.repeat,
                            pallas=gpu and not a.no_pallas))
    print_table(rows, "gpu" if gpu else dev.platform)
    res = {"platform": dev.platform, "device_kind": dev.device_kind, "devices": jax.local_device_count(),
           "jax": jax.__version__, "python": platform.python_version(), "horizon": a.horizon, "arms": a.arms,
           "records": a.records, "delay_mean": a.delay_mean, "window": a.window, "rows": rows}
    out = a.out or os.path.join(os.path.dirname(os.path.abspath(__file__)), "results", f"limits-{dev.platform}.json")
    os.makedirs(os.path.dirname(out), exist_ok=True)
    with open(out, "w") as f:
        json.dump(res, f, indent=1)
    print(f"wrote {out}")
    return res


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
