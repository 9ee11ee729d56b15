"""The contextual conversion model (docs/bayes.md, *Contextual model*): the conversion probability
of a play is a logistic function of its covariates, and the delay law depends on the play's
segment.

* ``logit p_i = alpha_{arm_i} + x_i . beta`` with ``alpha_k ~ N(alpha_loc, alpha_scale)`` (one
  intercept per arm) and ``beta_j ~ N(0, coef_scale)``;
* the delay of a conversion of a play in segment ``s`` follows the family's law with parameters
  ``theta_s`` (one law per segment, under the flat model's priors);
* the likelihood is the flat model's exact censored one, per play: ``log p_i + log f(d_i;
  theta_s)`` for a seen conversion, ``log(1 - p_i F(a_i; theta_s))`` otherwise, with ``log p_i =
  log_sigmoid(logit p_i)`` and ``log(1 - p_i) = log_sigmoid(-logit p_i)`` (no ``log(1 - p)`` of a
  rounded ``p``: conventions §9).

Covariates make every play its own row, so the likelihood costs O(plays) per evaluation (no
compression). Fitted with NUTS; the result is ArviZ ``InferenceData`` with dims ``alpha[arm]``,
``beta[feature]`` and the delay parameters ``[segment]``.
"""
from __future__ import annotations

import functools
import json
import math
import warnings
from typing import NamedTuple, Optional

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist

from ..core import validate as V
from ..delaymodels.families import family
from ..delaymodels.hierarchical import merged_priors
from ..delaymodels.logs import ConversionLog, conversion_log
from ..delaymodels.model import unseen_log_term

__all__ = ["ContextRows", "contextual_model", "contextual_priors", "fit_contextual", "synthetic_contextual_log",
           "CONTEXT_DEFAULTS"]

#: defaults of the logistic part's priors (the delay parameters' are the flat model's)
CONTEXT_DEFAULTS = {"alpha_loc": -2.0, "alpha_scale": 2.0, "coef_scale": 1.0}


class ContextRows(NamedTuple):
    """One row per play (arrays of length N; covariates ``[N, J]``).

    Attributes:
        arm: i32.
        x: f32[N, J].
        segment: i32.
        seen: f32, 1 if the conversion was seen.
        delay: f32, its delay (1 when not seen: a finite placeholder).
        age: f32, how long the play has been watched.
    """

    arm: jax.Array  # i32
    x: jax.Array  # f32[N, J]
    segment: jax.Array  # i32
    seen: jax.Array  # f32 1 if the conversion was seen
    delay: jax.Array  # f32 its delay (1 when not seen: a finite placeholder)
    age: jax.Array  # f32 how long the play has been watched


def contextual_priors(fam, priors: Optional[dict], prior_mean: float) -> dict:
    """The priors of the contextual model: :data:`CONTEXT_DEFAULTS` and the family's own defaults,
    overridden by ``priors``.

    Args:
        fam: the delay family or its name.
        priors: overrides (unknown keys, non-positive scales: ``ValueError``).
        prior_mean: the delay prior's mean.

    Returns:
        A dict of the priors' entries.

    Raises:
        ValueError: an unknown key or a non-positive scale.

    Examples:
        >>> from jaxbandits.bayes import contextual
        >>> sorted(contextual.contextual_priors("exponential", None, 30.0))[:3]
        ['alpha_loc', 'alpha_scale', 'coef_scale']
    """
    return merged_priors(CONTEXT_DEFAULTS, fam, priors, prior_mean, "contextual", signed="alpha_loc")


def contextual_model(data: ContextRows, n_arms: int, n_features: int, n_segments: int, fam="exponential",
                     discrete: bool = False, priors: Optional[dict] = None, prior_mean: float = 30.0):
    """The NumPyro model of the contextual conversion model.

    Sites ``alpha[arm]``, ``beta[feature]`` (the conversion probability
    ``sigmoid(alpha[arm] + x . beta)``) and the delay parameters ``[segment]``.

    Args:
        data: the :class:`ContextRows`.
        n_arms: the number of arms.
        n_features: the covariates' dimension ``J``.
        n_segments: the number of delay segments.
        fam: the delay family or its name.
        discrete: integer delays.
        priors: overrides of the priors' entries (:func:`contextual_priors`).
        prior_mean: the delay prior's mean.

    Returns:
        None (a NumPyro model).

    Examples:
        >>> import jax, jax.numpy as jnp
        >>> from numpyro import handlers
        >>> from jaxbandits.bayes import contextual
        >>> rows = contextual.ContextRows(arm=jnp.array([0, 1]), x=jnp.zeros((2, 1)), segment=jnp.array([0, 0]),
        ...                               seen=jnp.array([1.0, 0.0]), delay=jnp.array([3.0, 1.0]),
        ...                               age=jnp.array([10.0, 9.0]))
        >>> model = handlers.seed(contextual.contextual_model, jax.random.key(0))
        >>> tr = handlers.trace(model).get_trace(rows, 2, 1, 1)
        >>> [name for name, site in tr.items() if site["type"] == "sample" and not site["is_observed"]]
        ['alpha', 'beta', 'delay_mean']
    """
    fam = family(fam)
    pr = contextual_priors(fam, priors, prior_mean)
    alpha = numpyro.sample("alpha", dist.Normal(pr["alpha_loc"], pr["alpha_scale"]).expand([n_arms]).to_event(1))
    beta = numpyro.sample("beta", dist.Normal(0.0, pr["coef_scale"]).expand([n_features]).to_event(1))
    th = fam.sample(pr, n_segments)
    numpyro.deterministic("delay_mean_implied", fam.mean(th))
    numpyro.factor("obs", loglik_context(data, alpha, beta, th, fam, discrete))


def loglik_context(data: ContextRows, alpha, beta, th, fam, discrete=False):
    """The summed per-play log-likelihood of the contextual model."""
    logit = alpha[data.arm] + data.x @ beta
    log_p, log1m_p = jax.nn.log_sigmoid(logit), jax.nn.log_sigmoid(-logit)
    ths = {k: v[data.segment] for k, v in th.items()}
    if discrete:
        log_f, log_s = fam.log_pmf(data.delay, ths), fam.log_surv(data.age, ths)
    else:
        log_f, log_s = fam.log_pdf_c(data.delay, ths), fam.log_surv_c(data.age, ths)
    seen = data.seen > 0
    return jnp.sum(jnp.where(seen, log_p + jnp.where(seen, log_f, 0.0), unseen_log_term(log_p, log1m_p, log_s)))


def _labels(values, name, n):
    """``values`` (length n) -> (indices, labels in sorted order)."""
    v = np.asarray(values)
    if v.shape != (n,):
        raise ValueError(f"{name} must have one entry per play ({n}), got shape {v.shape}")
    labels, idx = np.unique(v, return_inverse=True)
    return idx.astype(np.int32), [x.item() if hasattr(x, "item") else x for x in labels]


def fit_contextual(log: ConversionLog, covariates, segment=None, model: str = "exponential", *, feature_names=None,
                   window=None, discrete: bool = False, priors: Optional[dict] = None, prior_mean=None,
                   num_warmup: int = 500, num_samples: int = 1000, num_chains: int = 4, seed: int = 0,
                   progress_bar: bool = False):
    """Fit the contextual model to a log with per-play covariates (NUTS, vectorised chains).

    Args:
        log: the :class:`~jaxbandits.delaymodels.logs.ConversionLog`.
        covariates: ``[N, J]`` array, or a pandas DataFrame whose columns name the features.
        segment: one label per play (any hashable labels), or None: one segment.
        model: the delay family's name.
        feature_names: the features' names (default the DataFrame's columns, else ``x0, x1, ...``).
        window: the conversion window, or None.
        discrete: integer delays.
        priors: overrides of the priors' entries.
        prior_mean: the delay prior's mean.
        num_warmup: NUTS adaptation steps.
        num_samples: draws per chain.
        num_chains: chains.
        seed: the seed.
        progress_bar: NumPyro's progress bar.

    Returns:
        ``arviz.InferenceData`` with dims ``alpha[arm]``, ``beta[feature]``, delay parameters
        ``[segment]``.

    Raises:
        ValueError: covariates or segments that do not match the log.

    Examples:
        >>> from jaxbandits import bayes
        >>> log, X, seg = bayes.synthetic_contextual_log(2000, [0.0, -1.0], [0.5], [10.0, 30.0], 500.0, 600.0)
        >>> idata = bayes.fit_contextual(log, X, seg, num_samples=200)  # doctest: +SKIP
    """
    from numpyro.infer import MCMC, NUTS

    from .fit import init_near, to_idata

    if not isinstance(log, ConversionLog):
        raise TypeError(f"log must be a ConversionLog (see conversion_log / load_log), got {type(log).__name__}")
    fam = family(model)
    if fam.discrete_only and not discrete:
        raise ValueError("the histogram model needs discrete=True (integer times)")
    N = len(log)
    if hasattr(covariates, "columns") and feature_names is None:
        feature_names = [str(c) for c in covariates.columns]
    X = np.asarray(covariates, np.float64)
    if X.ndim == 1:
        X = X[:, None]
    if X.ndim != 2 or X.shape[0] != N:
        raise ValueError(f"covariates must be an array [plays={N}, features], got shape {np.shape(covariates)}")
    bad = np.argwhere(~np.isfinite(X))
    if bad.size:
        raise ValueError(f"covariates: row {bad[0][0]}, feature {bad[0][1]} is {X[tuple(bad[0])]!r} (must be finite)")
    J = X.shape[1]
    feature_names = [f"x{j}" for j in range(J)] if feature_names is None else [str(f) for f in feature_names]
    if len(feature_names) != J:
        raise ValueError(f"feature_names must name the {J} covariates, got {len(feature_names)}")
    seg_idx, seg_labels = _labels(np.zeros(N, np.int64) if segment is None else segment, "segment", N)
    S = len(seg_labels)
    for name, v, lo in (("num_warmup", num_warmup, 0), ("num_samples", num_samples, 1), ("num_chains", num_chains, 1)):
        if not isinstance(v, (int, np.integer)) or isinstance(v, bool) or v < lo:
            raise ValueError(f"{name} must be an integer >= {lo}, got {v!r}")
    V.seed("seed", seed)
    arm, seen, delay, age = log.arrays(window, discrete)
    if prior_mean is None:
        prior_mean = float(window) / 4 if window is not None else max(float(np.median(log.cutoff - log.play_time)) / 4, 1.0)
    contextual_priors(fam, priors, prior_mean)  # checked before compiling
    K = log.n_arms
    f32 = lambda x: jnp.asarray(x, jnp.float32)
    data = ContextRows(jnp.asarray(arm, jnp.int32), f32(X), jnp.asarray(seg_idx), f32(seen),
                       f32(np.where(seen, delay, 1.0)), f32(age))
    model_fn = functools.partial(contextual_model, n_arms=K, n_features=J, n_segments=S, fam=fam, discrete=discrete,
                                 priors=priors, prior_mean=prior_mean)
    rate = np.clip((np.bincount(arm[seen], minlength=K) + 1) / (np.bincount(arm, minlength=K) + 2), 1e-3, 0.9)
    md = float(np.mean(delay[seen])) if seen.any() else float(prior_mean)
    init = {"alpha": np.log(rate / (1 - rate)).astype(np.float32), "beta": np.zeros(J, np.float32),
            **fam.init_values(max(md, 1.0), (S,))}
    mcmc = MCMC(NUTS(model_fn, init_strategy=init_near(init, real=("alpha", "beta"))), num_warmup=num_warmup,
                num_samples=num_samples, num_chains=num_chains, chain_method="vectorized", progress_bar=progress_bar)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*There are not enough devices.*")
        mcmc.run(V.seed_key(seed), data, extra_fields=("potential_energy", "energy", "num_steps", "accept_prob",
                                                       "diverging", "adapt_state.step_size"))
    dims = {"alpha": ["arm"], "beta": ["feature"], "delay_mean_implied": ["segment"]}
    dims.update({k: ["segment"] + list(fam.event_dims.get(k, ())) for k in fam.params})
    coords = {"arm": list(log.arm_labels), "feature": feature_names, "segment": seg_labels, **fam.coords()}
    idata = to_idata(mcmc, coords, dims)
    idata.posterior.attrs.update({"model": fam.name, "method": "nuts", "contextual": 1, "n_rows": N, "n_arms": K,
                                  "n_features": J, "n_segments": S, "discrete": int(discrete), "prior_mean": prior_mean,
                                  "window": "none" if window is None else float(window),
                                  "features": json.dumps(feature_names),
                                  "segments": json.dumps([str(s) for s in seg_labels])})
    return idata


def synthetic_contextual_log(n_plays: int, alpha, beta, segment_means, span: float, cutoff: float,
                             delay: str = "exponential", shape: float = 1.5, seed: int = 0):
    """A synthetic log for the contextual model.

    Arms uniform, covariates standard normal, segments uniform; play ``i`` converts with
    probability ``sigmoid(alpha[arm] + x_i . beta)`` after a delay of mean
    ``segment_means[segment]`` (exponential, or Weibull of ``shape``).

    Args:
        n_plays: the number of plays.
        alpha: f[K], the arms' intercepts.
        beta: f[J], the covariates' coefficients.
        segment_means: the delay mean of each segment.
        span: the plays' time span.
        cutoff: when the log is read.
        delay: ``"exponential"`` or ``"weibull"``.
        shape: the Weibull shape.
        seed: the seed.

    Returns:
        ``(log, X, segment)``: the :class:`~jaxbandits.delaymodels.logs.ConversionLog`, the covariates
        ``[N, J]`` and each play's segment.

    Examples:
        >>> from jaxbandits import bayes
        >>> log, X, seg = bayes.synthetic_contextual_log(200, [0.0, -1.0], [0.5], [10.0, 30.0], 100.0, 120.0)
        >>> X.shape, seg.shape
        ((200, 1), (200,))
    """
    rng = np.random.default_rng(V.seed("seed", seed))
    alpha, beta = np.atleast_1d(np.asarray(alpha, np.float64)), np.atleast_1d(np.asarray(beta, np.float64))
    means = np.atleast_1d(np.asarray(segment_means, np.float64))
    n = V.integer("n_plays", n_plays, lo=1)
    arm = rng.integers(0, alpha.size, n)
    X = rng.standard_normal((n, beta.size))
    seg = rng.integers(0, means.size, n)
    play = rng.random(n) * span
    p = 1.0 / (1.0 + np.exp(-(alpha[arm] + X @ beta)))
    if delay == "exponential":
        d = rng.exponential(means[seg])
    elif delay == "weibull":
        d = means[seg] / math.gamma(1 + 1 / shape) * rng.weibull(shape, n)
    else:
        raise ValueError(f"delay must be 'exponential' or 'weibull', got {delay!r}")
    conv = rng.random(n) < p
    ct = np.where(conv & (play + d <= cutoff), play + d, np.nan)
    return conversion_log(arm, play, ct, cutoff, alpha.size), X, seg
