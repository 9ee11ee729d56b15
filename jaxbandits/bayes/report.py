"""Files of an offline fit: the InferenceData (netCDF), a summary table, and plots (posterior of
``p`` per arm, fitted vs empirical delay curve with Kaplan-Meier, trace plot, and the posterior
predictive check ``ppc.png``: Kaplan-Meier of the data against replicated logs)."""
from __future__ import annotations

import json

import numpy as np

from ..report.plotting import load_pyplot
from .fit import ConversionLog, diagnostics

__all__ = ["kaplan_meier_conversion", "save_fit", "fit_identity"]


def kaplan_meier_conversion(log: ConversionLog, arm: int, ages, window=None):
    """The Kaplan-Meier estimate of ``P(converted by age a) = p F(a)`` for the plays of one arm.

    The event is a seen conversion at its delay; censoring is the play's age at the cutoff.

    Args:
        log: the :class:`~jaxbandits.delaymodels.logs.ConversionLog`.
        arm: the arm index.
        ages: the ages to evaluate at.
        window: the conversion window, or None.

    Returns:
        f64[G] (NaN at every age for an arm with no rows).

    Examples:
        >>> import numpy as np
        >>> from jaxbandits import bayes
        >>> log = bayes.conversion_log(arm=["a", "b", "a"], play_time=[0.0, 1.0, 2.0],
        ...                            conversion_time=[3.0, np.nan, np.nan], cutoff=10.0)
        >>> from jaxbandits.bayes import report
        >>> report.kaplan_meier_conversion(log, 0, np.array([0.0, 5.0, 10.0])).tolist()
        [0.0, 0.5, 0.5]
    """
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


def fit_identity(model, method, window=None, discrete=False, per_arm_delay=False, hierarchical=False) -> dict:
    """What a fit's output folder holds (the model and its options).

    An output folder holding another fit (or an experiment's results) is not overwritten without
    ``force``: this is what is compared.

    Args:
        model: the delay family's name.
        method: ``"nuts"`` or ``"svi"``.
        window: the conversion window, or None.
        discrete: integer delays.
        per_arm_delay: one delay law per arm.
        hierarchical: the hierarchical model.

    Returns:
        A dict (``experiment``, ``config``).

    Examples:
        >>> from jaxbandits.bayes import report
        >>> report.fit_identity("exponential", "nuts")["config"]["model"]
        'exponential'
    """
    window = "none" if window in (None, "none") else float(window)
    cfg = {"model": str(model), "method": str(method), "window": window, "discrete": int(discrete),
           "per_arm_delay": int(per_arm_delay)}
    if int(hierarchical):  # only then: the identity of every other fit is unchanged
        cfg["hierarchical"] = 1
    return {"experiment": "fit", "config": cfg}


def save_fit(idata, log: ConversionLog, out_dir: str, plot: bool = True, force: bool = False) -> dict:
    """Write a fit's files into ``out_dir``, as one unit and atomically.

    ``posterior.nc``, ``summary.md``/``summary.json`` and the plots; each file under a temporary
    name, flushed, renamed into place; the files of the folder's previous results that this set
    lacks are removed. A folder holding another fit or an experiment's results is refused unless
    ``force=True`` (see :meth:`jaxbandits.experiments.results.Results.save`).

    Args:
        idata: the ``arviz.InferenceData`` of :func:`jaxbandits.bayes.fit`.
        log: the :class:`~jaxbandits.delaymodels.logs.ConversionLog` fitted.
        out_dir: the output folder.
        plot: also write the plots.
        force: overwrite a folder holding other results.

    Returns:
        The files written: a dict from ``idata``, ``summary``, ``plot_p``, ``plot_delay``,
        ``plot_trace``, ``plot_ppc`` (those written) to their paths.

    Raises:
        FileExistsError: the folder holds other results and ``force`` is False.

    Examples:
        >>> from jaxbandits import bayes
        >>> from jaxbandits.bayes import report
        >>> log = bayes.synthetic_log([0.2, 0.4], 2000, 500.0, 600.0)
        >>> files = report.save_fit(bayes.fit(log, num_samples=200), log, "fit_out")  # doctest: +SKIP
        >>> sorted(files)  # doctest: +SKIP
        ['idata', 'plot_delay', 'plot_p', 'plot_ppc', 'plot_trace', 'summary']
    """
    import arviz as az

    from ..core.fileio import json_writer, save_files, text_writer

    names = [v for v in idata.posterior.data_vars if v not in ("delay_cdf", "pending_conversions")]
    s = az.summary(idata, var_names=names)
    diag = diagnostics(idata)
    n_chains = int(idata.posterior.sizes.get("chain", 1))
    undefined = {k: ("r_hat compares chains: not defined with one chain (fit with --chains 2 or more)"
                     if k == "r_hat_max" and n_chains < 2 else "not defined for these draws (constant or too few)")
                 for k, v in diag.items() if isinstance(v, float) and not np.isfinite(v)}
    labels = [str(x) for x in log.arm_labels]
    empty = [str(x) for x in log.empty_arms]
    pend = idata.posterior["pending_conversions"].mean(("chain", "draw")).values
    attrs = dict(idata.posterior.attrs)
    md = [f"# {attrs.get('model')} model, {attrs.get('method')}, {len(log)} plays, {log.n_arms} arms\n\n"]
    cols = list(s.columns)
    md.append("| | " + " | ".join(cols) + " |\n|---|" + "---|" * len(cols) + "\n")
    for name, row in s.iterrows():
        md.append(f"| {name} | " + " | ".join(f"{row[c]:g}" for c in cols) + " |\n")
    md.append("\n\nDiagnostics: " + json.dumps({k: (None if k in undefined else v) for k, v in diag.items()}) + "\n")
    for k, why in undefined.items():
        md.append(f"{k}: {why}\n")
    md.append("Expected conversions still to come, per arm: "
              + ", ".join(f"{lab}: {x:.1f}" for lab, x in zip(labels, pend)) + "\n")
    if empty:
        md.append(f"Arms with no rows (posterior = prior): {', '.join(empty)}\n")
    files = {"posterior.nc": idata.to_netcdf, "summary.md": text_writer("".join(md)),
             "summary.json": json_writer({"attrs": {k: (v if isinstance(v, (int, float, str)) else str(v))
                                                    for k, v in attrs.items()},
                                          "summary": json.loads(s.to_json()),  # NaN -> null
                                          "diagnostics": {k: (None if k in undefined else v) for k, v in diag.items()},
                                          **({"undefined": undefined} if undefined else {}),
                                          "pending_conversions": [float(x) for x in pend], "arms": labels,
                                          "empty_arms": empty})}
    keys = {"posterior.nc": "idata", "summary.md": "summary", "posterior_p.png": "plot_p",
            "delay_cdf.png": "plot_delay", "trace.png": "plot_trace", "ppc.png": "plot_ppc"}
    if plot:
        files.update({"posterior_p.png": lambda p: _plot_p(idata, log, labels, empty, p),
                      "delay_cdf.png": lambda p: plot_delay(idata, log, labels, empty, attrs, p),
                      "trace.png": lambda p: _plot_trace(idata, names, p),
                      "ppc.png": lambda p: _plot_ppc(idata, log, p)})
    ident = fit_identity(attrs.get("model"), attrs.get("method"), attrs.get("window"), attrs.get("discrete", 0),
                         attrs.get("per_arm_delay", 0), attrs.get("hierarchical", 0))
    written = save_files(out_dir, files, ident, force=force)
    order = ["posterior.nc", "summary.md", "posterior_p.png", "delay_cdf.png", "trace.png", "ppc.png"]
    return {keys[name]: written[name] for name in order if name in written}


def _plot_p(idata, log, labels, empty, path):
    plt = load_pyplot()
    K = log.n_arms
    p = idata.posterior["p"].values.reshape(-1, K)
    fig, ax = plt.subplots(figsize=(5.5, 3.6), dpi=110)
    for k in range(K):
        ax.hist(p[:, k], bins=40, alpha=0.6, density=True, label=f"arm {labels[k]}" + (" (no rows)" if labels[k] in empty else ""))
    ax.set_xlabel("conversion probability p"), ax.set_ylabel("posterior density"), ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def plot_delay(idata, log, labels, empty, attrs, path):
    """Fitted p F(a) (posterior mean and 90% band) against Kaplan-Meier, per arm."""
    plt = load_pyplot()
    post = idata.posterior
    K = log.n_arms
    p = post["p"].values.reshape(-1, K)
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
    ax.set_xlabel(f"age a (time since the play, in {log.unit_words})"), ax.set_ylabel("P(conversion seen by age a)")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def _plot_ppc(idata, log, path):
    from .ppc import plot_ppc

    plot_ppc(idata, log, path)


def _plot_trace(idata, names, path):
    import arviz as az

    plt = load_pyplot()
    axes = az.plot_trace(idata, var_names=[n for n in names if n != "delay_mean_implied"], compact=True)
    fig = np.asarray(axes).ravel()[0].figure
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
