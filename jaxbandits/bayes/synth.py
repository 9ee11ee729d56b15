"""Synthetic conversion logs (numpy, host side) for examples, tests and recovery experiments."""
from __future__ import annotations

import math

import numpy as np

from .. import _validate as V
from .fit import ConversionLog, conversion_log

__all__ = ["synthetic_log"]


def synthetic_log(p, n_plays: int, span: float, cutoff: float, delay: str = "exponential", mean: float = 50.0,
                  shape: float = 1.5, sigma: float = 1.0, arm_means=None, discrete: bool = False,
                  seed: int = 0) -> ConversionLog:
    """``n_plays`` plays spread uniformly over ``[0, span)`` (arms uniformly at random), each
    converting with probability ``p[arm]`` after a delay from ``delay`` (``"exponential"`` with
    ``mean``, ``"weibull"`` with ``mean`` and ``shape``, ``"lognormal"`` with median ``mean`` and
    ``sigma``; ``arm_means`` gives each arm its own mean); conversions after ``cutoff`` are not
    seen. ``discrete``: integer play rounds and floored delays."""
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
