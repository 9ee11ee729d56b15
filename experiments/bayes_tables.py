"""Tables of docs/bayes.md from the results folders of the bayes experiments: mean regret ± s.e.
at the checkpoints and paired differences against the oracle and against naive Beta TS.

    python experiments/bayes_tables.py results/bayes/bayes-ts-shared-delay [more folders]
"""
import sys

import numpy as np

from jaxbandits.experiments.results import Results


def table(path):
    r = Results.load(path)
    labs = list(r.curves)
    oracle = next(l for l in labs if l.startswith("Oracle"))
    naive = next(l for l in labs if "naive" in l)
    cps = [c for c in (r.horizon // 5, r.horizon) if c <= r.horizon]
    out = [f"**{r.experiment}** ({r.runs} runs, T = {r.horizon}, config {r.config})", "",
           "| policy | " + " | ".join(f"R({c})" for c in cps) + " | R − R(oracle), paired | R − R(naive), paired |",
           "|---|" + "---|" * (len(cps) + 2)]
    fin = {l: r.final_runs(l, "regret").astype(np.float64) for l in labs}
    n = r.runs
    for l in labs:
        m, se = r.mean_se(l)
        cells = [f"{m[int(np.searchsorted(r.t, c))]:.1f} ± {se[int(np.searchsorted(r.t, c))]:.1f}" for c in cps]
        pair = []
        for ref in (oracle, naive):
            d = fin[l] - fin[ref]
            pair.append("—" if l == ref else f"{d.mean():+.1f} ± {d.std(ddof=1) / np.sqrt(n):.1f}")
        out.append(f"| {l} | " + " | ".join(cells + pair) + " |")
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    for p in sys.argv[1:]:
        print(table(p))
