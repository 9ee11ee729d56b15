"""Plots: regret curves with standard-error bands."""
from __future__ import annotations

import numpy as np


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
        fig.savefig(path)
        plt.close(fig)
        return path
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
    fig.savefig(path)
    plt.close(fig)
    return path
