"""Throughput of the simulator: run-steps per second, compile time and peak memory for UCB1,
KL-UCB and Thompson at K=10, T=1e4 (Bernoulli arms, means linspace(0.1, 0.9), no delay).

Each configuration runs in a fresh subprocess so its peak memory (max RSS on CPU; the device's
peak bytes in use on GPU) is its own. ``--devices N`` exposes N XLA host devices on CPU (the runs
axis shards over them; default: one per core); ``--devices 1`` is the single-device baseline.

    python benchmarks/throughput.py                       # runs in {1, 100, 1000}
    python benchmarks/throughput.py --runs 10000 100000   # e.g. on a GPU
"""
from __future__ import annotations

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from _child import run_child  # noqa: E402

CHILD = r"""
import json, os, resource, sys, time
cfg = json.loads(sys.argv[1])
if cfg["devices"] and "xla_force_host_platform_device_count" not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + f" --xla_force_host_platform_device_count={cfg['devices']}").strip()
import jax, numpy as np
from jaxbandits import channels as C, envs as E
from jaxbandits.policies import classic as P
from jaxbandits.engine import simulate
pol = {"UCB1": P.ucb1(), "KL-UCB": P.kl_ucb(), "Thompson": P.thompson(),
       "Thompson-jaxbeta": P.thompson(sampler="jax")}[cfg["policy"]]
env = E.bernoulli(np.linspace(0.1, 0.9, cfg["K"]))
# warm-up of nothing: compile time is measured by simulate (lower + compile), run time separately
o = simulate(env, C.attributed(), pol, cfg["T"], jax.random.key(0), cfg["runs"], shard=None if cfg["devices"] != 1 else False)
o2 = simulate(env, C.attributed(), pol, cfg["T"], jax.random.key(1), cfg["runs"], shard=None if cfg["devices"] != 1 else False)
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
dev = jax.devices()[0]
try:
    ms = dev.memory_stats() or {}
    peak_dev = ms.get("peak_bytes_in_use")
except Exception:
    peak_dev = None
run_s = min(o.timing["run_s"], o2.timing["run_s"])
print(json.dumps({**cfg, "compile_s": o.timing["compile_s"], "run_s": run_s,
                  "run_steps_per_s": cfg["runs"] * cfg["T"] / run_s, "devices_used": o.timing["devices"],
                  "platform": dev.platform, "device_kind": dev.device_kind, "peak_rss_bytes": peak,
                  "peak_device_bytes": peak_dev, "final_regret_mean": float(o.final("regret").mean())}))
"""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, nargs="+", default=[1, 100, 1000])
    ap.add_argument("--policies", nargs="+", default=["UCB1", "KL-UCB", "Thompson"])
    ap.add_argument("--horizon", type=int, default=10_000)
    ap.add_argument("--arms", type=int, default=10)
    ap.add_argument("--devices", type=int, default=None, help="XLA host devices on CPU (default: one per core)")
    ap.add_argument("--out", default="benchmarks/results/throughput.json")
    a = ap.parse_args()
    ndev = a.devices if a.devices is not None else len(os.sched_getaffinity(0))
    rows = []
    print(f"{'policy':18s} {'runs':>7s} {'dev':>4s} {'run-steps/s':>12s} {'compile s':>10s} {'run s':>8s} {'peak MiB':>9s}")
    for pol in a.policies:
        for runs in a.runs:
            cfg = {"policy": pol, "runs": runs, "T": a.horizon, "K": a.arms, "devices": ndev}
            row = run_child(CHILD, cfg)
            rows.append(row)
            peak = row["peak_device_bytes"] or row["peak_rss_bytes"]
            print(f"{pol:18s} {runs:7d} {row['devices_used']:4d} {row['run_steps_per_s']:12.3e} {row['compile_s']:10.2f} "
                  f"{row['run_s']:8.2f} {peak / 2**20:9.0f}", flush=True)
    os.makedirs(os.path.dirname(a.out) or ".", exist_ok=True)
    with open(a.out, "w") as f:
        json.dump(rows, f, indent=1)
    print(f"wrote {a.out}")


if __name__ == "__main__":
    main()
