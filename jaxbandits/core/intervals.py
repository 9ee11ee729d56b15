"""Confidence intervals of a mean over runs: the paired Student t interval (from the runs or from
the moments reduced on the device) and the percentile bootstrap (docs/compare.md).

Plain NumPy/SciPy statistics with no knowledge of results or figures, so that results, comparisons
and reports all take their intervals from here (:mod:`jaxbandits.report.compare` re-exports them).
"""
from __future__ import annotations

import numpy as np

#: The interval methods of :func:`interval` (and :func:`jaxbandits.report.compare.compare`).
METHODS = ("t", "bootstrap")


def check_level(level):
    """``level`` as a float if it is a number in (0, 1), else a ``ValueError`` naming it.

    Args:
        level: the confidence level, a number in (0, 1) (not a bool).

    Returns:
        ``level`` as a float.

    Raises:
        ValueError: ``level`` is not a number in (0, 1).

    Examples:
        >>> from jaxbandits.core.intervals import check_level
        >>> check_level(0.9)
        0.9
        >>> check_level(1.5)
        Traceback (most recent call last):
        ...
        ValueError: level must be a number in (0, 1) (e.g. 0.95), got 1.5
    """
    if isinstance(level, bool) or not isinstance(level, (int, float, np.floating)) or not 0 < float(level) < 1:
        raise ValueError(f"level must be a number in (0, 1) (e.g. 0.95), got {level!r}")
    return float(level)


def t_interval(x, axis: int = 0, level: float = 0.95):
    """Mean and Student t interval of the mean of ``x`` over ``axis`` (the runs).

    Returns ``(mean, lo, hi)``, arrays of ``x``'s shape without ``axis``:
    ``mean +- t_{n-1, (1+level)/2} * sd / sqrt(n)`` with the unbiased ``sd`` (``ddof=1``). With one
    sample (``n = 1``) the interval is undefined: ``lo`` and ``hi`` are NaN. Any leading or trailing
    axes are vectorised over (replications, record points, policies).

    Args:
        x: the samples, an array with the runs along ``axis``.
        axis: the axis of the runs.
        level: the confidence level, in (0, 1).

    Returns:
        ``(mean, lo, hi)``, float64 arrays of ``x``'s shape without ``axis``.

    Raises:
        ValueError: ``level`` is not in (0, 1).

    Examples:
        >>> import numpy as np
        >>> from jaxbandits.core.intervals import t_interval
        >>> m, lo, hi = t_interval(np.array([1.0, 2.0, 3.0, 4.0]))
        >>> [round(float(v), 3) for v in (m, lo, hi)]
        [2.5, 0.446, 4.554]
        >>> t_interval(np.ones((4, 3)))[0].shape
        (3,)
    """
    from scipy.special import stdtrit

    level = check_level(level)
    x = np.asarray(x, np.float64)
    n = x.shape[axis]
    m = x.mean(axis)
    if n < 2:
        nan = np.full(m.shape, np.nan)
        return m, nan, nan.copy()
    half = stdtrit(n - 1, 0.5 + level / 2) * x.std(axis, ddof=1) / np.sqrt(n)
    return m, m - half, m + half


def t_interval_moments(n, mean, m2, level: float = 0.95):
    """:func:`t_interval` from the moments over ``n`` runs: the mean and the second central moment
    ``m2 = sum (x - mean)^2`` (so ``sd = sqrt(m2 / (n - 1))``), as the statistics reduced on the
    device give them (docs/results.md). The same interval as :func:`t_interval` of the runs.

    Args:
        n: the number of runs (below 2: ``lo`` and ``hi`` are NaN).
        mean: the mean over the runs (an array).
        m2: the second central moment ``sum (x - mean)^2`` (shaped as ``mean``).
        level: the confidence level, in (0, 1).

    Returns:
        ``(mean, lo, hi)``, float64 arrays shaped as ``mean``.

    Raises:
        ValueError: ``level`` is not in (0, 1).

    Examples:
        >>> from jaxbandits.core.intervals import t_interval_moments
        >>> m, lo, hi = t_interval_moments(4, 2.5, 5.0)  # the runs 1, 2, 3, 4
        >>> [round(float(v), 3) for v in (m, lo, hi)]
        [2.5, 0.446, 4.554]
    """
    from scipy.special import stdtrit

    level = check_level(level)
    mean = np.asarray(mean, np.float64)
    if n < 2:
        nan = np.full(mean.shape, np.nan)
        return mean, nan, nan.copy()
    half = stdtrit(n - 1, 0.5 + level / 2) * np.sqrt(np.asarray(m2, np.float64) / (n - 1)) / np.sqrt(n)
    return mean, mean - half, mean + half


def bootstrap_interval(x, axis: int = 0, level: float = 0.95, n_boot: int = 2000, seed: int = 0):
    """Mean and percentile-bootstrap interval of the mean of ``x`` over ``axis`` (the runs):
    ``n_boot`` resamples of the runs with replacement (each a multinomial count vector, so a
    resampled mean is one matrix product), the ``(1-level)/2`` and ``(1+level)/2`` quantiles of the
    resampled means. Returns ``(mean, lo, hi)`` like :func:`t_interval`; ``seed`` fixes the
    resamples (same seed, same interval).

    Args:
        x: the samples, an array with the runs along ``axis``.
        axis: the axis of the runs.
        level: the confidence level, in (0, 1).
        n_boot: the number of resamples, an integer >= 10.
        seed: the seed of the resamples.

    Returns:
        ``(mean, lo, hi)``, float64 arrays of ``x``'s shape without ``axis`` (``lo`` and ``hi``
        NaN with fewer than two runs).

    Raises:
        ValueError: ``level`` is not in (0, 1) or ``n_boot`` is not an integer >= 10.

    Examples:
        >>> import numpy as np
        >>> from jaxbandits.core.intervals import bootstrap_interval
        >>> m, lo, hi = bootstrap_interval(np.array([1.0, 2.0, 3.0, 4.0]))
        >>> [round(float(v), 3) for v in (m, lo, hi)]
        [2.5, 1.5, 3.5]
    """
    level = check_level(level)
    if isinstance(n_boot, bool) or not isinstance(n_boot, (int, np.integer)) or n_boot < 10:
        raise ValueError(f"n_boot must be an integer >= 10, got {n_boot!r}")
    x = np.moveaxis(np.asarray(x, np.float64), axis, -1)  # [..., n]
    n = x.shape[-1]
    m = x.mean(-1)
    if n < 2:
        nan = np.full(m.shape, np.nan)
        return m, nan, nan.copy()
    w = np.random.default_rng(seed).multinomial(n, np.full(n, 1.0 / n), size=int(n_boot)) / n  # [B, n]
    means = x @ w.T  # [..., B]
    lo, hi = np.quantile(means, [0.5 - level / 2, 0.5 + level / 2], axis=-1)
    return m, lo, hi


def interval(x, axis: int = 0, level: float = 0.95, method: str = "t", n_boot: int = 2000, seed: int = 0):
    """:func:`t_interval` or :func:`bootstrap_interval` by ``method`` (one of :data:`METHODS`).

    Args:
        x: the samples, an array with the runs along ``axis``.
        axis: the axis of the runs.
        level: the confidence level, in (0, 1).
        method: ``"t"`` or ``"bootstrap"``.
        n_boot: the bootstrap's number of resamples (``"bootstrap"`` only).
        seed: the bootstrap's seed (``"bootstrap"`` only).

    Returns:
        ``(mean, lo, hi)`` of the chosen method.

    Raises:
        ValueError: ``method`` is not one of :data:`METHODS`, or ``level`` / ``n_boot`` is out
            of range.

    Examples:
        >>> import numpy as np
        >>> from jaxbandits.core.intervals import interval
        >>> m, lo, hi = interval(np.array([1.0, 2.0, 3.0, 4.0]), method="bootstrap", n_boot=500, seed=1)
        >>> [round(float(v), 3) for v in (m, lo, hi)]
        [2.5, 1.5, 3.631]
        >>> interval(np.ones(4), method="z")
        Traceback (most recent call last):
        ...
        ValueError: method must be one of 't', 'bootstrap', got 'z'
    """
    if method == "t":
        return t_interval(x, axis, level)
    if method == "bootstrap":
        return bootstrap_interval(x, axis, level, n_boot, seed)
    raise ValueError(f"method must be one of {', '.join(map(repr, METHODS))}, got {method!r}")
