"""Logs with a known truth (docs/ope.md, *Checked against the truth*): decisions drawn from a
logging law, conversions from per-arm rates and delay laws, the log read at ``end`` while many
conversions are still pending; and the exact value of a target law on that world."""
from __future__ import annotations

import math
from typing import Optional

import numpy as np

from .log import DecisionLog, decision_log

__all__ = ["simulate_log", "true_value"]


def _laws(delay, K):
    from ..core.delays import DelayLaw

    laws = [delay] * K if isinstance(delay, DelayLaw) else list(delay)
    if len(laws) != K or not all(isinstance(x, DelayLaw) for x in laws):
        raise TypeError(f"delay must be a jaxbandits.core.delays law or a sequence of {K} laws, got {delay!r}")
    return laws


def simulate_log(key, n: int, rates, delay, logging, *, span: Optional[float] = None,
                 end: Optional[float] = None) -> DecisionLog:
    """A decision log with a known truth.

    ``n`` decisions at times ``floor(i * span / n)``, arm ``a`` drawn from ``logging`` (logged as
    the propensity), converting with probability ``rates[a]`` after a delay drawn from ``delay``;
    the log is read at ``end`` (default: the last decision's time, so the latest conversions are
    all pending).

    Args:
        key: a JAX key or an int seed.
        n: the number of decisions.
        rates: f[K], each arm's conversion probability.
        delay: a :mod:`jaxbandits.core.delays` law, or one per arm.
        logging: f[K], the logging law.
        span: the time the decisions span (default ``n``: one a round).
        end: when the log is read.

    Returns:
        The :class:`~jaxbandits.ope.log.DecisionLog`.

    Raises:
        ValueError: ``logging`` is not a probability vector over the arms.

    Examples:
        >>> from jaxbandits import delays, ope
        >>> log = ope.simulate_log(0, 2000, [0.1, 0.3], delays.geometric(mean=5.0), [0.5, 0.5])  # doctest: +SKIP
        >>> len(log)  # doctest: +SKIP
        2000
    """
    import jax
    import jax.numpy as jnp

    if isinstance(key, (int, np.integer)):
        key = jax.random.key(int(key))
    rates = np.asarray(rates, np.float64)
    mu = np.asarray(logging, np.float64)
    K = rates.shape[0]
    if mu.shape != (K,) or np.abs(mu.sum() - 1) > 1e-9 or (mu < 0).any():
        raise ValueError(f"logging must be a probability vector over the {K} arms, got {logging!r}")
    laws = _laws(delay, K)
    span = float(n if span is None else span)
    t = np.floor(np.arange(n) * (span / n))
    end = float(t[-1] if end is None else end)
    k_arm, k_conv, k_delay = jax.random.split(key, 3)
    arm = np.asarray(jax.random.choice(k_arm, K, (n,), p=jnp.asarray(mu, jnp.float32)))
    conv = np.asarray(jax.random.uniform(k_conv, (n,))) < rates[arm]
    d = np.zeros(n)
    for a, (law, k) in enumerate(zip(laws, jax.random.split(k_delay, K))):
        sel = arm == a
        d[sel] = np.asarray(law.sample(k, (n,)), np.float64)[sel]
    ct = np.where(conv, t + d, np.nan)
    ct = np.where(ct <= end, ct, np.nan)  # a conversion after the end is not in the log
    return decision_log(arm, t, mu[arm], ct, end, n_arms=K, probs=np.broadcast_to(mu, (n, K)))


def true_value(target, rates, delay, window=None) -> float:
    """The target law's conversion rate within ``window``: ``sum_a target[a] rates[a] F_a(window)``.

    Args:
        target: f[K], the target law.
        rates: f[K], each arm's conversion probability.
        delay: a :mod:`jaxbandits.core.delays` law, or one per arm.
        window: the conversion window, or ``None`` (every conversion counts).

    Returns:
        The value, a float.

    Examples:
        >>> from jaxbandits import delays, ope
        >>> ope.true_value([0.0, 1.0], [0.1, 0.3], delays.fixed(3), window=5)
        0.3
    """
    import jax.numpy as jnp

    rates = np.asarray(rates, np.float64)
    pi = np.asarray(target, np.float64)
    laws = _laws(delay, rates.shape[0])
    F = np.array([1.0 if window is None else float(lw.cdf(jnp.asarray(int(math.floor(window))))) for lw in laws])
    return float(np.dot(pi, rates * F))
