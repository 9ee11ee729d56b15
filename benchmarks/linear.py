"""Vernade et al. (2020): OTFLinUCB and OTFLinTS (reference-code variants, and the paper's exact-bias
UCB) at d = 5, K = 10 normalised binary actions, m = 500, geometric delays (mu = 100), T = 1e4,
1000 runs: run-steps/s and compile time.

    python benchmarks/linear.py [--runs 1000] [--horizon 10000]
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from _child import run_child  # noqa: E402

CHILD = r"""
import json, os, sys
cfg = json.loads(sys.argv[1])
os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + f" --xla_force_host_platform_device_count={cfg['devices']}").strip()
import jax, numpy as np
from jaxbandits import channels as C, delays as D, envs as E
from jaxbandits.policies import linear as L
from jaxbandits.engine import simulate
T, N, m = cfg["T"], cfg["runs"], 500
env = E.linear(np.full(5, 5 ** -0.5), n_actions=10, action_set="binary", normalize=True,
               delay=D.shift(D.geometric(0.99), 1))
pol = {"OTFLinUCB": L.otf_linucb(m), "OTFLinTS": L.otf_lints(m),
       "OTFLinUCB-paper-exact": L.otf_linucb(m, variant="paper")}[cfg["what"]]
outs = [simulate(env, C.conversions(window=m), pol, T, jax.random.key(s), N, delayed_regret=False) for s in (0, 1)]
print(json.dumps({**cfg, "compile_s": outs[0].timing["compile_s"], "run_s": min(o.timing["run_s"] for o in outs),
                  "regret": float(outs[0].final("regret").mean())}))
"""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=1000)
    ap.add_argument("--horizon", type=int, default=10_000)
    ap.add_argument("--devices", type=int, default=len(os.sched_getaffinity(0)))
    ap.add_argument("--out", default="benchmarks/results/linear.json")
    a = ap.parse_args()
    rows = []
    print(f"{'policy':22s} {'run-steps/s':>12s} {'compile s':>10s} {'regret':>8s}")
    for what in ("OTFLinUCB", "OTFLinTS", "OTFLinUCB-paper-exact"):
        row = run_child(CHILD, {"what": what, "devices": a.devices, "runs": a.runs, "T": a.horizon})
        rows.append(row)
        print(f"{what:22s} {row['run_steps_per_s']:12.3e} {row['compile_s']:10.2f} {row['regret']:8.1f}", flush=True)
    os.makedirs(os.path.dirname(a.out), exist_ok=True)
    with open(a.out, "w") as f:
        json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
