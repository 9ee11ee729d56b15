"""The reproductions of the in-scan delay-model TS with NumPyro's HMC kernel against the built-in
transition: each HMC policy of ``bayes-ts-shared-delay`` and ``bayes-ts-arm-delays`` run with both
samplers on the same runs (same key, same worlds: common random numbers), paired differences of
R(t) with their standard errors (docs/bayes.md, *Which HMC transition*).

    python benchmarks/bayes_sampler_agreement.py [--experiments bayes-ts-shared-delay bayes-ts-arm-delays]

Writes benchmarks/results/bayes-sampler-agreement.json.
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

from jaxbandits import experiments as X  # noqa: E402
from jaxbandits.core.fileio import write_text  # noqa: E402
from jaxbandits.engine import record_points, simulate  # noqa: E402


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--experiments", nargs="*", default=["bayes-ts-shared-delay", "bayes-ts-arm-delays"])
    a = ap.parse_args(argv)
    out_path = os.path.join(ROOT, "benchmarks", "results", "bayes-sampler-agreement.json")
    table = json.load(open(out_path)) if os.path.exists(out_path) else {}
    for name in a.experiments:
        exp = X.get(name)
        env, ch, pols = exp.build(dict(exp.config))
        hmc = {k: p for k, p in pols.items() if "HMC" in k}
        both = {}
        for k in hmc:  # the same policy with each sampler (rebuilt: the builders bind the sampler)
            both[(k, "numpyro")] = hmc[k]
        import jaxbandits.policies.bayes as PB

        orig = PB.delay_model_ts
        PB.delay_model_ts = lambda *args, **kw: orig(*args, **{**kw, "sampler": "builtin"})
        try:
            _, _, pols_b = exp.build(dict(exp.config))
        finally:
            PB.delay_model_ts = orig
        for k in hmc:
            both[(k, "builtin")] = pols_b[k]
        run = {f"{k} [{s}]": p for (k, s), p in both.items()}
        record = np.union1d(record_points(exp.horizon, exp.record), np.asarray(exp.checkpoints) - 1)  # as `run` does
        o = simulate(env, ch, run, exp.horizon, jax.random.key(0), exp.runs, record=record)
        rows = {}
        for k in hmc:
            n, b = o[f"{k} [numpyro]"], o[f"{k} [builtin]"]
            row = {}
            for c in exp.checkpoints:
                i = int(np.searchsorted(np.asarray(n.t), c))  # t: rounds completed
                rn, rb = n.regret[:, i], b.regret[:, i]
                d = rn - rb
                se = float(d.std(ddof=1) / np.sqrt(d.size))
                row[str(c)] = {"numpyro": [float(rn.mean()), float(rn.std(ddof=1) / np.sqrt(rn.size))],
                               "builtin": [float(rb.mean()), float(rb.std(ddof=1) / np.sqrt(rb.size))],
                               "diff": float(d.mean()), "diff_se": se, "z": float(d.mean() / se) if se > 0 else 0.0}
            rows[k] = row
            print(name, k, {c: f"{r['numpyro'][0]:.2f} vs {r['builtin'][0]:.2f}: diff {r['diff']:+.2f} +- "
                               f"{r['diff_se']:.2f} (z {r['z']:+.2f})" for c, r in row.items()}, flush=True)
        table[name] = {"runs": exp.runs, "horizon": exp.horizon, "policies": rows}
        write_text(out_path, json.dumps(table, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
