"""Regret of the classic policies as the feedback delay grows (attributed channel), with the
delay as a vmapped grid axis: one compiled program per policy for the whole sweep.

    python experiments/delay_sweep.py --out results/delay_sweep
"""
import argparse
import json
import os

import jax
import numpy as np

from jaxbandits import channels as C
from jaxbandits import delays as D
from jaxbandits import envs as E
from jaxbandits.policies import classic as P
from jaxbandits.engine import simulate_grid

MEANS = np.linspace(0.1, 0.9, 10)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--horizon", type=int, default=10_000)
    ap.add_argument("--delays", type=int, nargs="+", default=[0, 10, 100, 500, 1000])
    ap.add_argument("--out", default="results/delay_sweep")
    a = ap.parse_args()
    dmax = max(a.delays)
    table = {}
    for name, make in [("UCB1", P.ucb1), ("KL-UCB", P.kl_ucb), ("Thompson", P.thompson)]:
        def build(delay, make=make):
            env = E.bernoulli(MEANS, delay=D.Fixed(jax.numpy.asarray(delay, jax.numpy.int32), support_max=dmax))
            return env, make()

        o = simulate_grid(build, {"delay": np.array(a.delays)}, C.attributed(), a.horizon, jax.random.key(0), a.runs)
        fin = o.regret[:, :, -1]
        table[name] = {"mean": fin.mean(1).tolist(), "se": (fin.std(1, ddof=1) / np.sqrt(a.runs)).tolist(),
                       "compile_s": o.timing["compile_s"], "run_s": o.timing["run_s"]}
        print(name, " ".join(f"d={d}: {m:.1f}" for d, m in zip(a.delays, fin.mean(1))))
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "delay_sweep.json"), "w") as f:
        json.dump({"delays": a.delays, "horizon": a.horizon, "runs": a.runs, "policies": table}, f, indent=1)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5.5, 3.8), dpi=120)
    for name, v in table.items():
        ax.errorbar(a.delays, v["mean"], yerr=v["se"], marker="o", label=name, capsize=3)
    ax.set_xlabel("feedback delay (rounds)")
    ax.set_ylabel(f"regret at T = {a.horizon}")
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(os.path.join(a.out, "delay_sweep.png"))
    print("wrote", a.out)


if __name__ == "__main__":
    main()
