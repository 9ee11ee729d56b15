"""Plots: regret curves with standard-error bands. Every figure is written atomically (a
temporary file in the same folder, flushed, then renamed into place)."""
from __future__ import annotations

import os

import numpy as np

from ._io import atomic_write


def save_figure(fig, path):
    """Save ``fig`` at ``path`` atomically and close it; a path without an extension gets
    matplotlib's default format's (as ``savefig`` does). Returns the path written."""
    import matplotlib
    import matplotlib.pyplot as plt

    path = os.fspath(path)
    if not os.path.splitext(path)[1]:
        path = f"{path}.{matplotlib.rcParams['savefig.format']}"
    try:
        atomic_write(path, fig.savefig)
    finally:
        plt.close(fig)
    return path


def _ylabel(metric):
    return {"regret": "cumulative pseudo-regret R(t)", "expected_regret": "cumulative expected regret",
            "delayed_regret": "delayed regret L(t)"}.get(metric, metric)


def plot_regret(results, path, metric=None, logx=False, title=None, bands=1.0):
    """Mean regret curves with +-``bands`` standard-error bands; one subplot per panel for
    multi-panel experiments (with their ``c log t`` reference lines, dashed)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = list(dict.fromkeys(results.panels.values())) if results.panels else [""]
    if len(panels) > 1:
        rows, cols = results.layout or (1, len(panels))
        fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 3.6 * rows), dpi=110, squeeze=False)
        t = np.asarray(results.t)
        for ax, pn in zip(axes.ravel(), panels):
            for lab in [l for l in results.curves if results.panels.get(l) == pn]:
                m, se = results.mean_se(lab, metric)
                short = lab.split(": ", 1)[-1]
                ax.plot(t, m, label=f"{short} ({m[-1]:.1f})")
                ax.fill_between(t, m - bands * se, m + bands * se, alpha=0.25)
            for name, c in results.log_lines.get(pn, {}).items():
                ax.plot(t, c * np.log(np.maximum(t, 1)), "k--", lw=0.9, label=f"{name}")
            ax.set_title(pn, fontsize=9)
            ax.set_xlabel("round t")
            ax.grid(alpha=0.3)
            ax.legend(fontsize=7)
        axes[0, 0].set_ylabel(_ylabel(metric or results.metric))
        fig.suptitle(title or f"{results.experiment}: {results.runs} runs, mean ± {bands:g} s.e.", fontsize=10)
        fig.tight_layout()
        return save_figure(fig, path)
    fig, ax = plt.subplots(figsize=(6.4, 4.2), dpi=120)
    t = np.asarray(results.t)
    for lab in results.curves:
        m, se = results.mean_se(lab, metric)
        ax.plot(t, m, label=f"{lab} ({m[-1]:.1f} ± {se[-1]:.1f})")
        ax.fill_between(t, m - bands * se, m + bands * se, alpha=0.25)
    ax.set_xlabel("round t")
    ax.set_ylabel(_ylabel(metric or results.metric))
    if logx:
        ax.set_xscale("log")
    ax.set_title(title or f"{results.experiment}: {results.runs} runs, mean ± {bands:g} s.e.")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return save_figure(fig, path)


def plot_ratio(results, path, reference: str, t0: int = 100):
    """Per panel, ``mean R_t(policy) / mean R_t(reference)`` for ``t >= t0`` (Pike-Burke et al.
    Fig. 3: ratios of averaged regrets)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = list(dict.fromkeys(results.panels.values())) if results.panels else [""]
    rows, cols = results.layout or (1, len(panels))
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 3.4 * rows), dpi=110, squeeze=False)
    t = np.asarray(results.t)
    keep = t >= t0
    for ax, pn in zip(axes.ravel(), panels):
        labs = [l for l in results.curves if results.panels.get(l, "") == pn]
        ref = [l for l in labs if l.split(": ", 1)[-1] == reference]
        if not ref:
            continue
        r_ref = results.mean_se(ref[0])[0]
        for lab in labs:
            if lab == ref[0]:
                continue
            m = results.mean_se(lab)[0]
            ax.plot(t[keep], m[keep] / np.maximum(r_ref[keep], 1e-9), label=f"{lab.split(': ', 1)[-1]} / {reference}")
        ax.set_title(pn, fontsize=9)
        ax.set_xlabel("round t")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    axes[0, 0].set_ylabel("ratio of mean regrets")
    fig.suptitle(f"{results.experiment}: {results.runs} runs", fontsize=10)
    fig.tight_layout()
    return save_figure(fig, path)
