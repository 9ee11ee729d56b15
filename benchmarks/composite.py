"""Wang et al. (2021) policies on the composite channel: ARS-UCB (alpha = 4, f = k^2) and
ARS-EXP3 (beta = 1/2) at N = 9 (s = 0.9 ... 0.1), T = 1e5, 200 runs, with the longest profile of the
experiments (polynomial gamma = 2 truncated at L = 4096: every round inserts 4096 partial rewards),
and with a short one (random delay U{10..30}, W = 31) for contrast: run-steps/s, compile time and
peak RSS.

    python benchmarks/composite.py [--runs 200] [--horizon 100000]
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
from jaxbandits import channels as C, envs as E
from jaxbandits.core import profiles as Pr
from jaxbandits.policies import composite as W
from jaxbandits.engine import simulate
T, N = cfg["T"], cfg["runs"]
s = np.linspace(0.9, 0.1, 9)
if cfg["profile"] == "poly2":
    env = E.composite(s, profile=Pr.polynomial(2.0, tol=1e-6, max_len=4096))
else:
    env = E.composite(s, delay=Pr.random_delay(10, 30))
pol = W.ars_ucb(4.0, "k^2") if cfg["what"] == "ARS-UCB" else W.ars_exp3(0.5)
outs = [simulate(env, C.composite(), pol, T, jax.random.key(k), N) for k in (0, 1)]
print(json.dumps({**cfg, "compile_s": outs[0].timing["compile_s"], "run_s": min(o.timing["run_s"] for o in outs),
                  "W": outs[0].width, "regret": float(outs[0].final("regret").mean()),
                  "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--horizon", type=int, default=100_000)
    ap.add_argument("--devices", type=int, default=len(os.sched_getaffinity(0)))
    ap.add_argument("--out", default="benchmarks/results/composite.json")
    a = ap.parse_args()
    rows = []
    print(f"{'policy':9s} {'profile':8s} {'W':>5s} {'run-steps/s':>12s} {'compile s':>10s} {'RSS MiB':>8s} {'regret':>8s}")
    for prof in ("poly2", "unif"):
        for what in ("ARS-UCB", "ARS-EXP3"):
            row = run_child(CHILD, {"what": what, "profile": prof, "devices": a.devices, "runs": a.runs, "T": a.horizon})
            rows.append(row)
            print(f"{what:9s} {prof:8s} {row['W']:5d} {row['run_steps_per_s']:12.3e} {row['compile_s']:10.2f} "
                  f"{row['peak_rss_mib']:8.0f} {row['regret']:8.1f}", flush=True)
    os.makedirs(os.path.dirname(a.out), exist_ok=True)
    with open(a.out, "w") as f:
        json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
