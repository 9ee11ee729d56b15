"""Reproduce Wang, Wang and Huang (2021), Figures 2-5, and check the paper's claims (its Sec. 4)
claim by claim. Runs the four registered experiments (or reuses their results folders with
``--reuse``) and writes ``claims.md`` next to them (the tables of docs/reproductions/wang2021.md).

    python experiments/wang2021.py --out results/wang2021 [--reuse] [--img docs/reproductions/img]
"""
import argparse
import math
import os
import shutil

import numpy as np

from jaxbandits import experiments as X
from jaxbandits.experiments.results import Results


def at(res, lab, t, metric=None):
    m, se = res.mean_se(lab, metric)
    i = int(np.searchsorted(res.t, t))
    return float(m[i]), float(se[i])


def load_or_run(name, out, reuse):
    path = os.path.join(out, name.split("-")[-1])
    if reuse and os.path.exists(os.path.join(path, "results.nc")):
        return Results.load(path)
    return X.run(name, out=path)


def panels_of(res):
    out = {}
    for lab, p in res.panels.items():
        out.setdefault(p, []).append(lab)
    return out


def reference_label(labs):
    """ARS-UCB with alpha = 4 and f = k^2 (present in every panel under one of two names)."""
    for lab in labs:
        if lab.endswith("ARS-UCB a=4") or lab.endswith("ARS-UCB f=k^2"):
            return lab
    raise KeyError(labs)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="results/wang2021")
    ap.add_argument("--reuse", action="store_true", help="load existing results folders instead of running")
    ap.add_argument("--img", default=None, help="also copy the figures here (e.g. docs/reproductions/img)")
    a = ap.parse_args()
    res = {f: load_or_run(f"wang2021-{f}", a.out, a.reuse) for f in ("fig2", "fig3", "fig4", "fig5")}
    L = []
    T = res["fig2"].horizon
    cps = [T // 16, T // 8, T // 4, T // 2, T]

    # claim 1: logarithmic regret (Reg(2T) - Reg(T) across doublings; Reg(T)/log T)
    L += ["### Claim 1: ARS-UCB (alpha = 4, f = k^2) has logarithmic regret", "",
          "| panel | " + " | ".join(f"R({c})" for c in cps) + " | R(2T)-R(T) at each doubling | last/first increment | "
          "R(T)/log T at T/4, T/2, T |", "|---|" + "---|" * (len(cps) + 3)]
    for f in ("fig2", "fig3", "fig4"):
        r = res[f]
        for p, labs in panels_of(r).items():
            lab = reference_label(labs)
            R = [at(r, lab, c)[0] for c in cps]
            inc = np.diff(R)
            ratio = inc[-1] / inc[0] if inc[0] > 0 else float("nan")
            lg = [R[i] / math.log(cps[i]) for i in (2, 3, 4)]
            L.append(f"| {p} | " + " | ".join(f"{x:.0f}" for x in R) + " | " + ", ".join(f"{x:.0f}" for x in inc)
                     + f" | {ratio:.2f} | " + ", ".join(f"{x:.1f}" for x in lg) + " |")

    # claim 2: ARS-UCB below ODAAF in every panel of Figs. 2-3
    L += ["", "### Claim 2: ARS-UCB (alpha = 4, k^2) below the ODAAF benchmark (mean final regret ± s.e.)", "",
          "| panel | ARS-UCB | best ARS-UCB of the panel | benchmark | ratio benchmark / ARS-UCB |", "|---|---|---|---|---|"]
    for f in ("fig2", "fig3"):
        r = res[f]
        for p, labs in panels_of(r).items():
            lab = reference_label(labs)
            m, se = at(r, lab, T)
            ars = [x for x in labs if "ARS-UCB" in x]
            best = min(ars, key=lambda x: at(r, x, T)[0])
            for b in [x for x in labs if "ODAAF" in x]:
                bm, bse = at(r, b, T)
                L.append(f"| {p} | {m:.0f} ± {se:.0f} | {best.split(': ')[1]} {at(r, best, T)[0]:.0f} | "
                         f"{b.split(': ')[1]} {bm:.0f} ± {bse:.0f} | {bm / m:.1f} |")

    # claim 3: alpha = 4, f = k^2 best "in most instances"
    L += ["", "### Claim 3: which setting does best in each panel (mean final regret; s.d. across runs)", "",
          "| panel | ranking (best first) | alpha=4, k^2: rank | s.d. of alpha=4, k^2 vs median s.d. |", "|---|---|---|---|"]
    for f in ("fig2", "fig3", "fig4"):
        r = res[f]
        for p, labs in panels_of(r).items():
            ars = [x for x in labs if "ARS-UCB" in x]
            order = sorted(ars, key=lambda x: at(r, x, T)[0])
            ref = reference_label(labs)
            sd = {x: float(np.std(r.final_runs(x, "regret"), ddof=1)) for x in ars}
            L.append(f"| {p} | " + ", ".join(f"{x.split('ARS-UCB ')[1]} ({at(r, x, T)[0]:.0f})" for x in order)
                     + f" | {order.index(ref) + 1} of {len(order)} | {sd[ref]:.0f} vs {np.median(list(sd.values())):.0f} |")

    # claims 4-5: Fig. 5
    r = res["fig5"]
    L += ["", "### Claims 4-5: Fig. 5 (regret against the best arm on each prefix; against the fixed i* in brackets)", "",
          "| panel | policy | R(T/4) | R(T/2) | R(T) | slope on [T/4, T/2] | slope on [T/2, T] | R_fixed(T) |",
          "|---|---|---|---|---|---|---|---|"]
    for p, labs in panels_of(r).items():
        for lab in labs:
            r4, r2, r1 = (at(r, lab, c)[0] for c in (T // 4, T // 2, T))
            fm, fse = at(r, lab, T, "fixed_regret")
            L.append(f"| {p} | {lab.split(': ')[1]} | {r4:.0f} | {r2:.0f} | {r1:.0f} ± {at(r, lab, T)[1]:.0f} | "
                     f"{(r2 - r4) / (T / 4):.4f} | {(r1 - r2) / (T / 2):.4f} | {fm:.0f} ± {fse:.0f} |")
    L += ["", "Timing (compile s, run s, run-steps/s, 2 host devices where the CLI made them):", ""]
    for f, x in res.items():
        tm = x.timing
        L.append(f"* {f}: compile {tm.get('compile_s', 0):.1f} s, run {tm.get('run_s', 0):.1f} s, "
                 f"{tm.get('run_steps_per_s', 0):.2e} run-steps/s, W = {x.width}, lost_to_W = {sum(x.lost_to_W.values())}")
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "claims.md"), "w") as fh:
        fh.write("\n".join(L) + "\n")
    print("\n".join(L))
    if a.img:
        for f in res:
            src = os.path.join(a.out, f, "regret.png")
            if os.path.exists(src):
                shutil.copy(src, os.path.join(a.img, f"wang2021-{f}.png"))


if __name__ == "__main__":
    main()
