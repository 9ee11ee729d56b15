"""Synthetic conversion logs (numpy, host side) for examples, tests and recovery experiments."""
from __future__ import annotations

import math

import numpy as np

from ..core import validate as V
from .fit import ConversionLog, conversion_log

__all__ = ["synthetic_log"]


def synthetic_log(p, n_plays: int, span: float, cutoff: float, delay: str = "exponential", mean: float = 50.0,
                  shape: float = 1.5, sigma: float = 1.0, arm_means=None, discrete: bool = False,
                  seed: int = 0) -> ConversionLog:
    """A synthetic conversion log (numpy, host side), for examples, tests and recovery experiments.

    ``n_plays`` plays spread uniformly over ``[0, span)`` (arms uniformly at random), each
    converting with probability ``p[arm]`` after a delay from ``delay``; conversions after
    ``cutoff`` are not seen.

    Args:
        p: f[K], each arm's conversion probability.
        n_plays: the number of plays.
        span: the plays' time span.
        cutoff: when the log is read.
        delay: ``"exponential"`` (with ``mean``), ``"weibull"`` (``mean`` and ``shape``) or
            ``"lognormal"`` (median ``mean`` and ``sigma``).
        mean: the delay law's mean (median for ``"lognormal"``).
        shape: the Weibull shape.
        sigma: the log-normal ``sigma``.
        arm_means: one delay mean per arm, instead of ``mean``.
        discrete: integer play rounds and floored delays.
        seed: the seed.

    Returns:
        The :class:`~jaxbandits.delaymodels.logs.ConversionLog`.

    Examples:
        >>> from jaxbandits import bayes
        >>> log = bayes.synthetic_log([0.2, 0.4], 1000, span=500.0, cutoff=600.0, seed=0)
        >>> len(log.arm), log.n_arms
        (1000, 2)
    """
    p = np.asarray(p, np.float64)
    V.real("p", p, lo=0.0, hi=1.0)
    n = V.integer("n_plays", n_plays, lo=1)
    V.positive("span", span)
    V.choice("delay", delay, ("exponential", "weibull", "lognormal"))
    rng = np.random.default_rng(V.seed("seed", seed))
    K = p.size
    arm = rng.integers(0, K, n)
    play = rng.random(n) * span
    if discrete:
        play = np.floor(play)
    means = np.full(K, float(mean)) if arm_means is None else np.asarray(arm_means, np.float64)
    mu = means[arm]
    if delay == "exponential":
        d = rng.exponential(mu)
    elif delay == "weibull":
        d = mu / math.gamma(1 + 1 / shape) * rng.weibull(shape, n)
    else:
        d = mu * np.exp(sigma * rng.standard_normal(n))
    if discrete:
        d = np.floor(d)
    conv = rng.random(n) < p[arm]
    ct = np.where(conv & (play + d <= cutoff), play + d, np.nan)
    return conversion_log(arm, play, ct, cutoff, K)
