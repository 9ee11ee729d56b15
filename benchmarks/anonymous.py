"""Pike-Burke et al. (2018) policies: ODAAF-V (anonymous channel) and QPM-D (attributed) at K = 2
(means 0.5, 0.6) and K = 10 (means linspace(0.4, 0.6)), Poisson(10) delays, T = 250 000, 200 runs:
run-steps/s and compile time.

    python benchmarks/anonymous.py [--runs 200] [--horizon 250000]
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
from jaxbandits.policies import anonymous as A
from jaxbandits.engine import simulate
K, T, N = cfg["K"], cfg["T"], cfg["runs"]
means = [0.5, 0.6] if K == 2 else np.linspace(0.4, 0.6, K)
env = E.bernoulli(means, delay=D.poisson(10.0))
pol, ch = (A.odaaf_v(10.0, 10.0), C.anonymous()) if cfg["what"] == "ODAAF-V" else (A.qpmd(), C.attributed())
outs = [simulate(env, ch, pol, T, jax.random.key(s), N) for s in (0, 1)]
print(json.dumps({**cfg, "compile_s": outs[0].timing["compile_s"], "run_s": min(o.timing["run_s"] for o in outs),
                  "regret": float(outs[0].final("regret").mean())}))
"""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--horizon", type=int, default=250_000)
    ap.add_argument("--devices", type=int, default=len(os.sched_getaffinity(0)))
    ap.add_argument("--out", default="benchmarks/results/anonymous.json")
    a = ap.parse_args()
    rows = []
    print(f"{'policy':9s} {'K':>3s} {'run-steps/s':>12s} {'compile s':>10s} {'regret':>8s}")
    for K in (2, 10):
        for what in ("ODAAF-V", "QPM-D"):
            row = run_child(CHILD, {"what": what, "K": K, "devices": a.devices, "runs": a.runs, "T": a.horizon})
            rows.append(row)
            print(f"{what:9s} {K:3d} {row['run_steps_per_s']:12.3e} {row['compile_s']:10.2f} {row['regret']:8.1f}",
                  flush=True)
    os.makedirs(os.path.dirname(a.out), exist_ok=True)
    with open(a.out, "w") as f:
        json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
