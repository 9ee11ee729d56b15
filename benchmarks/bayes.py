"""In-scan delay-model Thompson sampling (HMC engine) at K = 3 and K = 10 (theta from 0.10 down to
0.03, the best arm last), geometric delays of mean 50, model window M = 255, T = 1e4, 100 runs, for
refresh periods k in {1, 10}, plus the naive Beta TS baseline: run-steps/s, compile time, peak RSS.

    python benchmarks/bayes.py [--runs 100] [--horizon 10000]
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from _child import run_child  # noqa: E402

CHILD = r"""
import json, os, resource, sys
cfg = json.loads(sys.argv[1])
os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + f" --xla_force_host_platform_device_count={cfg['devices']}").strip()
import jax, numpy as np
from jaxbandits import channels as C, delays as D, envs as E
from jaxbandits.policies import bayes as PB
T, N, K = cfg["T"], cfg["runs"], cfg["K"]
env = E.conversions(np.linspace(0.03, 0.10, K), D.geometric(mean=50.0))
if cfg["what"] == "naive":
    pol = PB.beta_ts("naive", 255)
else:
    pol = PB.delay_model_ts(255, engine=cfg["what"], refresh=cfg["k"], prior_mean=30.0)
from jaxbandits.engine import simulate
outs = [simulate(env, C.conversions(), pol, T, jax.random.key(s), N) for s in (0, 1)]
print(json.dumps({**cfg, "compile_s": outs[0].timing["compile_s"], "run_s": min(o.timing["run_s"] for o in outs),
                  "regret": float(outs[0].final("regret").mean()),
                  "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=100)
    ap.add_argument("--horizon", type=int, default=10_000)
    ap.add_argument("--devices", type=int, default=len(os.sched_getaffinity(0)))
    ap.add_argument("--out", default="benchmarks/results/bayes.json")
    a = ap.parse_args()
    rows = []
    print(f"{'policy':14s} {'K':>3s} {'k':>3s} {'run-steps/s':>12s} {'compile s':>10s} {'RSS MiB':>8s} {'regret':>8s}")
    for K in (3, 10):
        for what, k in (("hmc", 1), ("hmc", 10), ("laplace", 1), ("naive", 1)):
            row = run_child(CHILD, {"what": what, "k": k, "K": K, "devices": a.devices, "runs": a.runs, "T": a.horizon})
            rows.append(row)
            print(f"{what:14s} {K:3d} {k:3d} {row['run_steps_per_s']:12.3e} {row['compile_s']:10.2f} "
                  f"{row['peak_rss_mib']:8.0f} {row['regret']:8.1f}", flush=True)
    os.makedirs(os.path.dirname(a.out), exist_ok=True)
    with open(a.out, "w") as f:
        json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
