"""Reproduce Vernade, Cappe and Perchet (2017), Figures 1-3, and compare with the reference numbers
of an independent numpy simulation (conventions §11). Writes each figure's results folder and a
markdown table of ours vs reference (with z-scores) used by docs/reproductions/vernade2017.md.

    python experiments/vernade2017.py --out results/vernade2017
"""
import argparse
import os
import shutil
import sys

import numpy as np

from jaxbandits import experiments as X

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "policies"))
from test_vernade2017_reproduction import FIG1, FIG2, FIG2_SE_T, FIG2_T  # noqa: E402  (reference numbers)


def cell(res, lab, t, metric=None):
    m, se = res.mean_se(lab, metric)
    i = int(np.searchsorted(res.t, t))
    return m[i], se[i]


def fmt(m, se):
    return f"{m:.1f} ± {se:.1f}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="results/vernade2017")
    ap.add_argument("--img", default=None, help="also copy the figures here (e.g. docs/reproductions/img)")
    a = ap.parse_args()
    lines = []
    r1 = X.run("vernade2017-fig1", out=os.path.join(a.out, "fig1"))
    lines += ["### Fig. 1 (100 runs): ours vs reference (z = difference / combined s.e.)", "",
              "| panel: policy | R(1000) | R(2000) | R(5000) | R(10000) | L(T) |", "|---|---|---|---|---|---|"]
    for lab, refs in FIG1.items():
        cells = []
        for t, (rm, rse) in zip([1000, 2000, 5000, 10000, None], refs):
            m, se = cell(r1, lab, t or 10000, None if t else "delayed_regret")
            z = (m - rm) / np.hypot(se, rse)
            cells.append(f"{fmt(m, se)} / {rm} (z={z:+.1f})")
        lines.append(f"| {lab} | " + " | ".join(cells) + " |")
    r2 = X.run("vernade2017-fig2", out=os.path.join(a.out, "fig2"))
    lines += ["", "### Fig. 2 (theta_L, censored, 200 runs): ours / reference", "",
              "| policy | " + " | ".join(str(t) for t in FIG2_T) + " | L(T) |", "|---|" + "---|" * (len(FIG2_T) + 1)]
    for lab, refs in FIG2.items():
        cells = []
        for t, rm in zip(FIG2_T, refs):
            m, se = cell(r2, lab, t)
            cells.append(f"{m:.1f} / {rm}")
        lm, lse = cell(r2, lab, 10000, "delayed_regret")
        m, se = cell(r2, lab, 10000)
        z = (m - refs[-1]) / np.hypot(se, FIG2_SE_T[lab])
        cells[-1] += f" (±{se:.1f}, z={z:+.1f})"
        lines.append(f"| {lab} | " + " | ".join(cells) + f" | {fmt(lm, lse)} |")
    r3 = X.run("vernade2017-fig3", out=os.path.join(a.out, "fig3"))
    lines += ["", "### Fig. 3 (theta_L, 100 runs)", "", r3.table()]
    text = "\n".join(lines) + "\n"
    with open(os.path.join(a.out, "comparison.md"), "w") as f:
        f.write(text)
    print(text)
    if a.img:
        os.makedirs(a.img, exist_ok=True)
        for k in ("fig1", "fig2", "fig3"):
            shutil.copy(os.path.join(a.out, k, "regret.png"), os.path.join(a.img, f"vernade2017-{k}.png"))
            shutil.copy(os.path.join(a.out, k, "delayed_regret.png"), os.path.join(a.img, f"vernade2017-{k}-L.png"))


if __name__ == "__main__":
    main()
