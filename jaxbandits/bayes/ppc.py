"""Posterior predictive checks of a fit (docs/bayes.md, *Posterior predictive checks*).

The check replays the log's own design (each play's arm and observation age, the window) under
parameters drawn from the posterior: every play converts with its arm's ``p``, after a delay drawn
from the fitted law (the family's numpy sampler, :meth:`~jaxbandits.delaymodels.families.Family.draw`), and the
conversion is seen when its delay is at most the play's age. The Kaplan-Meier estimate of
``P(conversion seen by age a)`` is computed per arm on the data and on each replicated log; a model
that fits puts the data's curve inside the band of the replicated curves. Unlike the model curve
``p F(a)`` of ``delay_cdf.png``, the replicated curves carry the sampling noise of a log of this
size and this censoring.

Big logs: the check runs on a random subsample of at most ``max_plays`` plays (the data's curve on
the same subsample), so its cost does not grow with the log.
"""
from __future__ import annotations

import numpy as np

from ..report.plotting import load_pyplot
from ..delaymodels.families import family_of
from ..delaymodels.logs import ConversionLog

__all__ = ["km_seen_curve", "ppc_curves", "plot_ppc"]


def km_seen_curve(seen, time, ages):
    """The Kaplan-Meier estimate of ``P(event by age a)`` on ``ages``.

    Args:
        seen: bool[N], row ``i`` is an event at ``time[i]``, else censored at ``time[i]``.
        time: f[N], the event or censoring times.
        ages: f[G], the ages to evaluate at.

    Returns:
        f64[G] (NaN at every age with no rows).

    Examples:
        >>> import numpy as np
        >>> from jaxbandits.bayes.ppc import km_seen_curve
        >>> km = km_seen_curve(np.array([True, False, True]), np.array([1.0, 2.0, 3.0]),
        ...                    np.array([0.0, 1.0, 3.0]))
        >>> np.round(km, 4).tolist()
        [0.0, 0.3333, 1.0]
    """
    seen, time = np.asarray(seen, bool), np.asarray(time, np.float64)
    ages = np.asarray(ages, np.float64)
    if time.size == 0:
        return np.full(ages.shape, np.nan)
    order = np.lexsort((~seen, time))  # at a tie, events before censorings (the usual convention)
    time, ev = time[order], seen[order]
    at_risk = time.size - np.arange(time.size)
    surv = np.cumprod(np.where(ev, 1.0 - 1.0 / at_risk, 1.0))
    idx = np.searchsorted(time, ages, side="right") - 1
    return np.where(idx >= 0, 1.0 - surv[np.maximum(idx, 0)], 0.0)


def ppc_curves(idata, log: ConversionLog, ages=None, n_draws: int = 100, max_plays: int = 200_000, seed: int = 0):
    """Posterior predictive Kaplan-Meier curves of a fit.

    Args:
        idata: the ``arviz.InferenceData`` of :func:`jaxbandits.bayes.fit`.
        log: the :class:`~jaxbandits.delaymodels.logs.ConversionLog` fitted.
        ages: the ages ``[G]`` (default: a grid over the log's ages).
        n_draws: the posterior draws replicated.
        max_plays: at most this many plays are replicated (a random subset).
        seed: the seed.

    Returns:
        A dict: ``ages`` ``[G]``, ``observed`` ``[K, G]`` (the data; NaN for an arm with no rows),
        ``replicated`` ``[n_draws, K, G]``, the ``plays`` used and the ``draws`` (indices into the
        flattened chains x draws).

    Examples:
        >>> from jaxbandits import bayes
        >>> from jaxbandits.bayes.ppc import ppc_curves
        >>> log = bayes.synthetic_log([0.2, 0.4], 2000, 500.0, 600.0)
        >>> curves = ppc_curves(bayes.fit(log, num_samples=200), log)  # doctest: +SKIP
    """
    if not isinstance(log, ConversionLog):
        raise TypeError(f"log must be a ConversionLog, got {type(log).__name__}")
    post = idata.posterior
    attrs = dict(post.attrs)
    fam = family_of(idata)
    window = attrs.get("window")
    window = None if window in (None, "none") else float(window)
    discrete = bool(int(attrs.get("discrete", 0)))
    rng = np.random.default_rng(seed)
    arm, seen, delay, age = log.arrays(window, discrete)
    if len(log) > max_plays:
        keep = np.sort(rng.choice(len(log), max_plays, replace=False))
        arm, seen, delay, age = arm[keep], seen[keep], delay[keep], age[keep]
    K = log.n_arms
    if ages is None:
        top = float(np.max(age)) if age.size else 1.0
        ages = np.unique(np.round(np.geomspace(1, max(top, 2), 60)))
    ages = np.asarray(ages, np.float64)
    observed = np.stack([km_seen_curve(seen[arm == k], np.where(seen, delay, age)[arm == k], ages) for k in range(K)])
    p = post["p"].values.reshape(-1, K)
    th = {q: post[q].values.reshape((-1,) + post[q].shape[2:]) for q in fam.params}
    per_arm = "arm" in post[fam.params[0]].dims
    n_all = p.shape[0]
    idx = rng.choice(n_all, size=min(int(n_draws), n_all), replace=False)
    rep = np.empty((idx.size, K, ages.size))
    for j, s in enumerate(idx):
        ths = {q: (v[s][arm] if per_arm else v[s]) for q, v in th.items()}
        d = fam.draw(rng, ths, arm.size)
        if discrete:
            d = np.floor(d)
        conv = rng.random(arm.size) < p[s][arm]
        s_seen = conv & (d <= age)
        t = np.where(s_seen, d, age)
        for k in range(K):
            rep[j, k] = km_seen_curve(s_seen[arm == k], t[arm == k], ages)
    return {"ages": ages, "observed": observed, "replicated": rep, "plays": int(arm.size), "draws": idx}


def plot_ppc(idata, log: ConversionLog, path, n_draws: int = 100, max_plays: int = 200_000, seed: int = 0, curves=None):
    """Plot the posterior predictive check (``ppc.png``).

    Per arm, the data's Kaplan-Meier curve against the posterior predictive ones (every replicated
    curve thin and light, their 5-95% band shaded).

    Args:
        idata: the ``arviz.InferenceData`` of :func:`jaxbandits.bayes.fit`.
        log: the :class:`~jaxbandits.delaymodels.logs.ConversionLog` fitted.
        path: the PNG file.
        n_draws: the posterior draws replicated.
        max_plays: at most this many plays are replicated.
        seed: the seed.
        curves: the result of :func:`ppc_curves`, if already computed.

    Returns:
        None (the figure is written to ``path``).

    Examples:
        >>> from jaxbandits import bayes
        >>> from jaxbandits.bayes.ppc import plot_ppc
        >>> log = bayes.synthetic_log([0.2, 0.4], 2000, 500.0, 600.0)
        >>> plot_ppc(bayes.fit(log, num_samples=200), log, "ppc.png")  # doctest: +SKIP
    """
    c = curves if curves is not None else ppc_curves(idata, log, n_draws=n_draws, max_plays=max_plays, seed=seed)
    plt = load_pyplot()
    K = log.n_arms
    labels = [str(x) for x in log.arm_labels]
    ncol = min(K, 4)
    nrow = -(-K // ncol)
    fig, axes = plt.subplots(nrow, ncol, figsize=(3.3 * ncol, 2.7 * nrow + 0.5), dpi=110, squeeze=False, sharey=True)
    a = c["ages"]
    for k, ax in zip(range(K), axes.ravel()):
        ax.set_title(f"arm {labels[k]}", fontsize=9)
        if np.all(np.isnan(c["observed"][k])):  # an arm with no rows: nothing to check
            ax.text(0.5, 0.5, "no rows", transform=ax.transAxes, ha="center")
            continue
        rep = c["replicated"][:, k]
        for r in rep[: min(len(rep), 40)]:
            ax.step(a, r, where="post", color="C0", lw=0.4, alpha=0.25)
        lo, hi = np.percentile(rep, [5, 95], axis=0)
        ax.fill_between(a, lo, hi, step="post", color="C0", alpha=0.25, label="posterior predictive 5-95%")
        ax.step(a, c["observed"][k], where="post", color="k", lw=1.3, label="data (Kaplan-Meier)")
        ax.set_xscale("log")
        ax.set_xlabel(f"age a ({log.unit_words})", fontsize=8)
        ax.tick_params(labelsize=7)
    for ax in axes.ravel()[K:]:
        ax.axis("off")
    axes[0, 0].set_ylabel("P(conversion seen by age a)", fontsize=8)
    handles = [ax.get_legend_handles_labels() for ax in axes.ravel()]
    h = next((x for x in handles if x[0]), None)
    if h:
        axes[0, 0].legend(*h, fontsize=7, loc="upper left")
    fig.suptitle(f"Posterior predictive check: {c['replicated'].shape[0]} replicated logs, {c['plays']} plays", fontsize=9)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
