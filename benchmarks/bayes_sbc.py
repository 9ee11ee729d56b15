"""Simulation-based calibration of every delay family: rank histograms for docs/sbc.md.

    python benchmarks/bayes_sbc.py                      # all five families, 200 prior draws each
    python benchmarks/bayes_sbc.py --models weibull --reps 200

Writes ``docs/img/sbc-MODEL.png`` (rank histograms) and ``benchmarks/results/bayes-sbc.json``
(p-values, divergences, timings; merged with the file's other families).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from jaxbandits.bayes.calibration import sbc  # noqa: E402
from jaxbandits.core.fileio import write_text  # noqa: E402

FAMILIES = ["exponential", "geometric", "weibull", "lognormal", "histogram"]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", nargs="*", default=FAMILIES)
    ap.add_argument("--reps", type=int, default=200)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--misspecified", type=float, default=1.5,
                    help="also run the Weibull family with delays scaled by this (a control that must fail); 0: skip")
    a = ap.parse_args(argv)
    out_json = os.path.join(ROOT, "benchmarks", "results", "bayes-sbc.json")
    table = json.load(open(out_json)) if os.path.exists(out_json) else {}
    runs = [(m, 1.0) for m in a.models] + ([("weibull", a.misspecified)] if a.misspecified else [])
    for model, scale in runs:
        t0 = time.perf_counter()
        res = sbc(model, a.reps, seed=a.seed, delay_scale=scale)
        wall = time.perf_counter() - t0
        s = res.summary(level=0.01, n_bins=10)
        s["wall_s"] = round(wall, 1)
        tag = model if scale == 1.0 else f"{model}-delays-x{scale:g}"
        res.plot(os.path.join(ROOT, "docs", "img", f"sbc-{tag}.png"))
        table[tag] = s
        print(f"{tag}: passes={s['passes']} min p={min(s['pvalues'].values()):.3g} "
              f"divergences={s['divergences_total']} wall={wall:.0f}s", flush=True)
        write_text(out_json, json.dumps(table, indent=1, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
