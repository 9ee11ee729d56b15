"""Files of an offline fit: the InferenceData (netCDF), a summary table, and plots (posterior of
``p`` per arm, fitted vs empirical delay curve with Kaplan-Meier, trace plot)."""
from __future__ import annotations

import json
import os

import numpy as np

from .fit import ConversionLog, diagnostics

__all__ = ["kaplan_meier_conversion", "save_fit"]


def kaplan_meier_conversion(log: ConversionLog, arm: int, ages, window=None):
    """Kaplan-Meier estimate of ``P(converted by age a) = p F(a)`` for the plays of ``arm``:
    the event is a seen conversion at its delay, censoring is the play's age at the cutoff.
    ``arm`` is an arm index. An arm with no rows has no estimate: NaN at every age."""
    sel = log.arm == arm
    if not sel.any():
        return np.full(np.shape(ages), np.nan)
    delay = log.conversion_time[sel] - log.play_time[sel]
    seen = ~np.isnan(delay) & (log.conversion_time[sel] <= log.cutoff[sel])
    age = log.cutoff[sel] - log.play_time[sel]
    if window is not None:
        seen &= delay <= window
        age = np.minimum(age, window)
    time = np.where(seen, delay, age)
    order = np.argsort(time, kind="stable")
    time, ev = time[order], seen[order]
    at_risk = len(time) - np.arange(len(time))
    surv = np.cumprod(np.where(ev, 1.0 - 1.0 / np.maximum(at_risk, 1), 1.0))
    idx = np.searchsorted(time, np.asarray(ages), side="right") - 1
    return np.where(idx >= 0, 1.0 - surv[np.maximum(idx, 0)], 0.0)


def save_fit(idata, log: ConversionLog, out_dir: str, plot: bool = True) -> dict:
    """Write ``posterior.nc``, ``summary.md``/``summary.json`` and the plots into ``out_dir``."""
    import arviz as az

    os.makedirs(out_dir, exist_ok=True)
    paths = {"idata": os.path.join(out_dir, "posterior.nc")}
    idata.to_netcdf(paths["idata"])
    names = [v for v in idata.posterior.data_vars if v not in ("delay_cdf", "pending_conversions")]
    s = az.summary(idata, var_names=names)
    diag = diagnostics(idata)
    labels = [str(x) for x in log.arm_labels]
    empty = [str(x) for x in log.empty_arms]
    pend = idata.posterior["pending_conversions"].mean(("chain", "draw")).values
    attrs = dict(idata.posterior.attrs)
    with open(os.path.join(out_dir, "summary.md"), "w") as fh:
        fh.write(f"# {attrs.get('model')} model, {attrs.get('method')}, {len(log)} plays, {log.n_arms} arms\n\n")
        cols = list(s.columns)
        fh.write("| | " + " | ".join(cols) + " |\n|---|" + "---|" * len(cols) + "\n")
        for name, row in s.iterrows():
            fh.write(f"| {name} | " + " | ".join(f"{row[c]:g}" for c in cols) + " |\n")
        fh.write("\n\nDiagnostics: " + json.dumps(diag) + "\n")
        fh.write("Expected conversions still to come, per arm: "
                 + ", ".join(f"{lab}: {x:.1f}" for lab, x in zip(labels, pend)) + "\n")
        if empty:
            fh.write(f"Arms with no rows (posterior = prior): {', '.join(empty)}\n")
    with open(os.path.join(out_dir, "summary.json"), "w") as fh:
        json.dump({"attrs": {k: (v if isinstance(v, (int, float, str)) else str(v)) for k, v in attrs.items()},
                   "summary": json.loads(s.to_json()), "diagnostics": diag,
                   "pending_conversions": [float(x) for x in pend], "arms": labels, "empty_arms": empty}, fh, indent=1)
    paths["summary"] = os.path.join(out_dir, "summary.md")
    if not plot:
        return paths
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    post = idata.posterior
    K = log.n_arms
    p = post["p"].values.reshape(-1, K)
    fig, ax = plt.subplots(figsize=(5.5, 3.6), dpi=110)
    for k in range(K):
        ax.hist(p[:, k], bins=40, alpha=0.6, density=True, label=f"arm {labels[k]}" + (" (no rows)" if labels[k] in empty else ""))
    ax.set_xlabel("conversion probability p"), ax.set_ylabel("posterior density"), ax.legend(fontsize=8)
    fig.tight_layout()
    paths["plot_p"] = os.path.join(out_dir, "posterior_p.png")
    fig.savefig(paths["plot_p"])
    plt.close(fig)
    # fitted p F(a) (posterior mean and 90% band) against Kaplan-Meier, per arm
    ages = post["age"].values
    cdf = post["delay_cdf"].values
    cdf = cdf.reshape((-1,) + cdf.shape[2:])  # [S, (K,) G]
    window = attrs.get("window")
    window = None if window in (None, "none") else float(window)
    fig, ax = plt.subplots(figsize=(6, 3.8), dpi=110)
    for k in range(K):
        ck = cdf[:, k] if cdf.ndim == 3 else cdf
        curve = p[:, k, None] * ck
        lo, mid, hi = np.percentile(curve, [5, 50, 95], axis=0)
        line, = ax.plot(ages, mid, label=f"arm {labels[k]}: model p F(a)")
        ax.fill_between(ages, lo, hi, color=line.get_color(), alpha=0.2)
        if labels[k] not in empty:  # no data, no Kaplan-Meier curve
            ax.step(ages, kaplan_meier_conversion(log, k, ages, window), where="post", color=line.get_color(),
                    ls="--", lw=1, label=f"arm {labels[k]}: Kaplan-Meier")
    ax.set_xlabel("age a (time since the play)"), ax.set_ylabel("P(conversion seen by age a)")
    ax.legend(fontsize=7)
    fig.tight_layout()
    paths["plot_delay"] = os.path.join(out_dir, "delay_cdf.png")
    fig.savefig(paths["plot_delay"])
    plt.close(fig)
    axes = az.plot_trace(idata, var_names=[n for n in names if n != "delay_mean_implied"], compact=True)
    fig = np.asarray(axes).ravel()[0].figure
    fig.tight_layout()
    paths["plot_trace"] = os.path.join(out_dir, "trace.png")
    fig.savefig(paths["plot_trace"])
    plt.close(fig)
    return paths
