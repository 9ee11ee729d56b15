"""The in-scan delay-model TS: NumPyro's functional HMC kernel against the built-in transition,
side by side in one process (docs/bayes.md, *Which HMC transition*).

    python benchmarks/bayes_sampler.py [--runs 100] [--horizon 2000] [--repeats 3]

K = 3 and 10 arms (theta from 0.03 to 0.10, best last), geometric delays of mean 50, M = 255,
refresh every round (k = 1) and every 10 rounds. Each (K, k, sampler) is its own program; the
samplers alternate within each repeat and the best run time of the repeats is kept, so a load that
comes and goes hurts both alike. Prints a table and writes benchmarks/results/bayes-sampler.json.
"""
from __future__ import annotations

import argparse
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import jax  # noqa: E402
import numpy as np  # noqa: E402

from jaxbandits import channels as C  # noqa: E402
from jaxbandits import delays as D  # noqa: E402
from jaxbandits import envs as E  # noqa: E402
from jaxbandits.core.fileio import write_text  # noqa: E402
from jaxbandits.policies import bayes as PB  # noqa: E402
from jaxbandits.engine import simulate  # noqa: E402


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=100)
    ap.add_argument("--horizon", type=int, default=2000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--arms", type=int, nargs="*", default=[3, 10])
    ap.add_argument("--refresh", type=int, nargs="*", default=[1, 10])
    a = ap.parse_args(argv)
    rows = []
    for K in a.arms:
        env = E.conversions(np.linspace(0.03, 0.10, K).tolist(), D.geometric(mean=50.0))
        for k in a.refresh:
            pols = {s: PB.delay_model_ts(255, refresh=k, prior_mean=30.0, sampler=s) for s in ("builtin", "numpyro")}
            best = {s: np.inf for s in pols}
            compile_s, regret = {}, {}
            for rep in range(a.repeats):
                for s, pol in (pols.items() if rep % 2 == 0 else reversed(list(pols.items()))):
                    o = simulate(env, C.conversions(), {s: pol}, a.horizon, jax.random.key(rep), a.runs)[s]
                    best[s] = min(best[s], o.timing["run_s"])
                    compile_s.setdefault(s, o.timing["compile_s"])
                    regret[s] = (float(o.final("regret").mean()), float(o.final("regret").std(ddof=1) / np.sqrt(a.runs)))
            steps = a.runs * a.horizon
            row = {"K": K, "refresh": k, "runs": a.runs, "horizon": a.horizon}
            for s in pols:
                row[s] = {"run_s": best[s], "run_steps_per_s": steps / best[s], "compile_s": compile_s[s],
                          "final_regret": regret[s]}
            row["builtin_speedup"] = best["numpyro"] / best["builtin"]
            rows.append(row)
            print(f"K={K} k={k}: builtin {steps / best['builtin']:.3g} run-steps/s, numpyro "
                  f"{steps / best['numpyro']:.3g} run-steps/s (built-in {row['builtin_speedup']:.2f}x as fast); "
                  f"compile {compile_s['builtin']:.1f} / {compile_s['numpyro']:.1f} s", flush=True)
    write_text(os.path.join(ROOT, "benchmarks", "results", "bayes-sampler.json"),
               json.dumps({"rows": rows, "devices": jax.device_count(), "jax": jax.__version__}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
