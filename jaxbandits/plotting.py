"""Plots: regret curves with standard-error bands."""
from __future__ import annotations

import numpy as np


def plot_regret(results, path, metric=None, logx=False, title=None):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4.2), dpi=120)
    t = np.asarray(results.t)
    for lab in results.curves:
        m, se = results.mean_se(lab, metric)
        ax.plot(t, m, label=f"{lab} ({m[-1]:.1f} ± {se[-1]:.1f})")
        ax.fill_between(t, m - se, m + se, alpha=0.25)
    ax.set_xlabel("round t")
    ax.set_ylabel(f"cumulative {'pseudo-' if (metric or results.metric) == 'regret' else 'expected '}regret")
    if logx:
        ax.set_xscale("log")
    ax.set_title(title or f"{results.experiment}: {results.runs} runs, mean ± 1 s.e.")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path
