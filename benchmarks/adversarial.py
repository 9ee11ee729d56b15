"""Thune et al. (2019) policies: DEW and Doubling(Skipper(DEW)) at K = 10, T = 1e5, 1000 runs, i.i.d.
Bernoulli losses (gap 0.1) and uniform delays on {0..99} (DEW: d_max = 99, W = 100; Doubling on the
action-time channel, exact W = 100, 48 epoch lanes): run-steps/s and compile time.

    python benchmarks/adversarial.py [--runs 1000] [--horizon 100000]
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
import jax, math
from jaxbandits import channels as C, delays as D, envs as E
from jaxbandits.policies import adversarial as A
from jaxbandits.engine import simulate
K, T, N = 10, cfg["T"], cfg["runs"]
env = E.bernoulli_losses(K, 0.1, delays=D.uniform(0, 99))
if cfg["what"] == "DEW":
    pol, ch = A.dew(A.thm1_eta(K, T, 49.5 * T), d_max=99), C.attributed(width=100)
else:
    pol, ch = A.doubling(), C.action_time()  # exact default: max delay + 1 = 100
outs = [simulate(env, ch, pol, T, jax.random.key(s), N) for s in (0, 1)]
print(json.dumps({**cfg, "compile_s": outs[0].timing["compile_s"], "run_s": min(o.timing["run_s"] for o in outs),
                  "width": outs[0].width, "regret": float(outs[0].final("expected_regret").mean())}))
"""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=1000)
    ap.add_argument("--horizon", type=int, default=100_000)
    ap.add_argument("--devices", type=int, nargs="+", default=[len(os.sched_getaffinity(0))])
    ap.add_argument("--out", default="benchmarks/results/adversarial.json")
    a = ap.parse_args()
    rows = []
    print(f"{'policy':10s} {'dev':>4s} {'W':>5s} {'run-steps/s':>12s} {'compile s':>10s} {'regret':>8s}")
    for dev in a.devices:
        for what in ("DEW", "Doubling"):
            cfg = {"what": what, "devices": dev, "runs": a.runs, "T": a.horizon}
            row = run_child(CHILD, cfg)
            rows.append(row)
            print(f"{what:10s} {dev:4d} {row['width']:5d} {row['run_steps_per_s']:12.3e} {row['compile_s']:10.2f} "
                  f"{row['regret']:8.1f}", flush=True)
    os.makedirs(os.path.dirname(a.out), exist_ok=True)
    with open(a.out, "w") as f:
        json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
