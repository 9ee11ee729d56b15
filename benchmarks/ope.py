"""Speed of off-policy evaluation (docs/ope.md, *Speed*): IPS, SNIPS and DR (and DM) on a log of
``--n`` decisions (default 1e7) with one delay law, delay-aware and delay-ignorant, by
:func:`jaxbandits.ope.evaluate`, beside a plain numpy implementation of the same estimators (the
formulas written out over full arrays, no per-arm sufficient statistics); and replay
(:func:`jaxbandits.ope.replay`, one ``lax.scan``) in decisions per second, beside a plain Python
loop of the same replay of UCB1 over ``--loop-n`` decisions.

    python benchmarks/ope.py [--n 10000000] [--replay-n 1000000] [--loop-n 100000] [--out FILE]

Each timing is the best of ``--reps`` calls (the machine may be shared), compile time apart. Peak
memory is the process's max RSS before and after evaluation (the log itself is part of it). The
two implementations must agree to 1e-9 (relative): the benchmark checks it. Writes
``benchmarks/results/ope-<platform>.json``.
"""
import argparse
import math
import os
import platform
import resource
import time

import numpy as np

from jaxbandits import channels, delays, ope
from jaxbandits.core.fileio import atomic_write, json_writer
from jaxbandits.policies import classic

K = 4
RATES = np.array([0.02, 0.03, 0.04, 0.05])
LOGGING = np.array([0.4, 0.3, 0.2, 0.1])
TARGET = np.array([0.1, 0.2, 0.3, 0.4])
LAW = delays.geometric(mean=50.0)
WINDOW = 200


def rss_mib():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def make_log(n, seed=0, span=None):
    """A log of ``n`` decisions drawn in numpy (one round each; read at the last one)."""
    rng = np.random.default_rng(seed)
    arm = rng.choice(K, n, p=LOGGING)
    t = np.arange(n, dtype=np.float64) if span is None else np.floor(np.arange(n) * (span / n))
    conv = rng.random(n) < RATES[arm]
    d = rng.geometric(1 - float(np.exp(LAW.log_rho)), n) - 1.0  # numpy's geometric starts at 1
    ct = np.where(conv, t + d, np.nan)
    end = float(t[-1])
    ct = np.where(ct <= end, ct, np.nan)
    return ope.decision_log(arm, t, LOGGING[arm], ct, end, n_arms=K)


def plain_numpy(log, pi, window, law):
    """The same estimators written out over full arrays (G from the law's CDF, float64)."""
    import jax.numpy as jnp

    age = np.minimum(log.end - log.time, window)
    c = np.floor(age).astype(np.int64)
    F = np.asarray(LAW.cdf(jnp.arange(window + 1)), np.float64)
    G = F[c] / F[window]
    y = (~np.isnan(log.conversion_time) & (log.conversion_time <= log.end)
         & (log.conversion_time - log.time <= window)).astype(np.float64)
    w = pi[log.arm] / log.propensity
    out = {}
    for aware in (True, False):
        keep = G >= 0.05 if aware else np.ones(len(log), bool)
        yt = y / G if aware else y
        wk, ytk, ak = w[keep], yt[keep], log.arm[keep]
        Gk = G[keep] if aware else np.ones(keep.sum())
        ips = np.mean(wk * ytk)
        snips = np.sum(wk * ytk) / np.sum(wk)
        onehot = ak[:, None] == np.arange(K)[None, :]  # [n, K]
        r = (onehot * y[keep][:, None]).sum(0) / (onehot * Gk[:, None]).sum(0)
        dm = float(pi @ r)
        dr = np.mean(dm + wk * (ytk - r[ak]))
        out[aware] = {"ips": ips, "snips": snips, "dm": dm, "dr": dr}
    return out


def best(f, reps):
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        r = f()
        ts.append(time.perf_counter() - t0)
    return min(ts), r


def loop_replay_ucb1(log, window, n):
    """Replay of UCB1 as a plain Python loop (numpy scalars), with the same delivery rule."""
    t, arm, ct = log.time[:n], log.arm[:n], log.conversion_time[:n]
    y = ~np.isnan(ct) & (ct - t <= window)
    pulls, wins = np.zeros(K), np.zeros(K)
    pending = {}  # delivery row -> [(arm, reward)]
    acc, total, rng = 0, 0.0, np.random.default_rng(0)
    for j in range(n):
        for a, r in pending.pop(j, ()):
            pulls[a] += 1
            wins[a] += r
        idx = np.where(pulls > 0, wins / np.maximum(pulls, 1) + np.sqrt(2 * math.log(max(j, 1)) / np.maximum(pulls, 1)),
                       np.inf)
        a = int(rng.choice(np.flatnonzero(idx == idx.max())))
        if a == arm[j]:
            acc += 1
            total += y[j]
            due = int(ct[j]) if y[j] else int(t[j] + window + 1)
            pending.setdefault(due, []).append((a, float(y[j])))
    return total / max(acc, 1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=10_000_000)
    ap.add_argument("--replay-n", type=int, default=1_000_000)
    ap.add_argument("--loop-n", type=int, default=100_000)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    res = {"platform": platform.machine(), "cpus": os.cpu_count(), "n": a.n, "arms": K, "law": "geometric(mean=50)",
           "window": WINDOW}

    log = make_log(a.n)
    res["rss_log_mib"] = rss_mib()
    # first call: compiles the law's CDF
    ope.evaluate(make_log(1000), TARGET, window=WINDOW, delay=LAW, estimators=(ope.IPS, ope.SNIPS, ope.DR))
    t_lib, rep = best(lambda: ope.evaluate(log, TARGET, window=WINDOW, delay=LAW, estimators=(ope.IPS, ope.SNIPS, ope.DR)),
                      a.reps)
    res["evaluate_ips_snips_dr_s"] = t_lib
    res["rss_after_evaluate_mib"] = rss_mib()
    t_all, rep_all = best(lambda: ope.evaluate(log, TARGET, window=WINDOW, delay=LAW), a.reps)
    res["evaluate_all_four_s"] = t_all
    t_np, plain = best(lambda: plain_numpy(log, TARGET, WINDOW, LAW), a.reps)
    res["plain_numpy_all_four_s"] = t_np
    res["rss_after_plain_numpy_mib"] = rss_mib()
    worst = 0.0
    for e in rep_all.estimates:
        want = plain[e.aware][e.estimator]
        worst = max(worst, abs(e.value - want) / abs(want))
    res["max_relative_difference"] = worst
    assert worst < 1e-9, worst
    res["estimates"] = {e.name: e.value for e in rep_all.estimates}
    del log

    rlog = make_log(a.replay_n, seed=1)
    for label, pol, ch in (("UCB1", classic.ucb1(), channels.attributed()),
                           ("Thompson", classic.thompson(), channels.attributed())):
        ope.replay(rlog, pol, ch, 0, window=WINDOW)  # compiles
        t_r, _ = best(lambda: ope.replay(rlog, pol, ch, 1, window=WINDOW), a.reps)
        res[f"replay_{label}_s"] = t_r
        res[f"replay_{label}_decisions_per_s"] = a.replay_n / t_r
    t_loop, _ = best(lambda: loop_replay_ucb1(rlog, WINDOW, a.loop_n), 1)
    res["loop_replay_UCB1_decisions_per_s"] = a.loop_n / t_loop
    res["rss_end_mib"] = rss_mib()
    for k, v in res.items():
        print(f"{k:40s} {v}")
    out = a.out or os.path.join(os.path.dirname(__file__), "results", f"ope-{'cpu' if True else ''}.json")
    atomic_write(out, json_writer(res))
    print("wrote", out)


if __name__ == "__main__":
    main()
