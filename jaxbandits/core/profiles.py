"""Lag profiles of composite rewards (Wang, Wang and Huang 2021, Sec. 4.1).

A pull's total ``X`` is split over later rounds: ``w[l]`` of it lands ``l`` rounds later
(``sum w = 1``). The six families of the paper's stochastic simulations are here, as host-side
(float64) objects that carry their weights, their mean lag and, for the two infinite ones, the
truncation: the length ``L``, the tolerance asked for, the tail mass cut off and whether it was
dropped or spread back over the kept lags (``tail="renormalise"``, the default, keeps
``||r||_1 = X``). Feed ``profile.weights`` (or the profile itself) to ``envs.composite``.

The *random delay* case (all mass at a lag drawn per pull) is not a fixed split: it is a delay law
(``delays.uniform(10, 30)``) given to ``envs.composite(delay=...)``; :func:`random_delay` returns
that law with its moments.
"""
from __future__ import annotations

import dataclasses
import math
from typing import Optional

import numpy as np

from . import validate as V
from . import delays as D
from .values import constructor

__all__ = ["Profile", "interval", "linear_decreasing", "linear_increasing", "discounted", "polynomial",
           "random_delay", "d1_constant", "MAX_LEN"]

#: Longest profile: the truncation of an infinite one, and the lags of a finite one (the calendar
#: costs O(L) per round).
MAX_LEN = 1 << 14


@dataclasses.dataclass(frozen=True, eq=False)
class Profile:
    """A fixed split ``weights[l]`` over lags ``0..L-1`` (float64, sums to 1).

    Attributes:
        name: the profile's name (``discounted(gamma=0.9)``).
        weights: f64[L], the split over lags ``0..L-1``.
        tail_mass: mass of the untruncated law at lags >= L.
        tail: "none" (finite support), "renormalise" or "drop".
        tol: the tolerance the truncation was asked to meet.
        infinite_mean: the untruncated law has no mean lag (polynomial gamma <= 2).

    A value: equal and hashed by its fields (the weights by their bytes).
    """

    def __eq__(self, other):
        from .values import value_key

        if type(other) is not type(self):
            return NotImplemented
        return other is self or value_key(self) == value_key(other)

    def __hash__(self):
        from .values import value_key

        return hash(value_key(self))

    name: str
    weights: np.ndarray
    tail_mass: float = 0.0  # mass of the untruncated law at lags >= L
    tail: str = "none"  # "none" (finite support), "renormalise" or "drop"
    tol: Optional[float] = None  # the tolerance the truncation was asked to meet
    infinite_mean: bool = False  # the untruncated law has no mean lag (polynomial gamma <= 2)

    @property
    def length(self) -> int:
        """The number of lags ``L``."""
        return int(self.weights.shape[0])

    @property
    def support_max(self) -> int:
        """The largest lag with positive weight."""
        return int(np.flatnonzero(self.weights > 0)[-1])

    @property
    def mean_lag(self) -> float:
        """The mean lag ``sum_l l w_l`` of the (truncated) split."""
        return float(np.dot(np.arange(self.length), self.weights))

    def d1(self, s_max: float) -> float:
        """Theorem 1's ``d_1`` when every arm shares this split scaled by ``s_i`` (Sec. 2.1)."""
        return d1_constant(self, s_max)

    def info(self) -> dict:
        """What a result file records about the profile (the truncation included)."""
        out = {"name": self.name, "length": self.length, "mean_lag": self.mean_lag, "tail": self.tail,
               "tail_mass": self.tail_mass}
        if self.tol is not None:
            out["tol"] = self.tol
        return out

    def __array__(self, dtype=None, copy=None):
        return np.asarray(self.weights, dtype=dtype)


def d1_constant(profile, s_max: float) -> float:
    """Wang et al. (2021)'s ``d_1 = s_max * E[lag]`` for a shared split.

    Infinite for a polynomial profile with ``gamma <= 2``, whose mean lag diverges (the truncated
    mean is then not reported as ``d_1``).

    Args:
        profile: the :class:`Profile`.
        s_max: the largest mean reward.

    Returns:
        ``d_1``, a float.

    Examples:
        >>> from jaxbandits.core import profiles
        >>> profiles.d1_constant(profiles.interval(2, 5), 0.5), profiles.d1_constant(profiles.polynomial(2.0), 1.0)
        (1.5, inf)
    """
    if isinstance(profile, Profile) and profile.infinite_mean:
        return math.inf
    mean = profile.mean_lag if isinstance(profile, Profile) else float(profile.mean)
    return float(s_max) * mean


def _finite(name, w):
    w = np.asarray(w, np.float64)
    return Profile(name, w / w.sum())


@constructor
def interval(d_min: int, d_max: int) -> Profile:
    """The bounded-interval profile: an equal share at each lag of ``{d_min, ..., d_max - 1}``.

    Args:
        d_min: the first lag, an integer in ``[0, MAX_LEN - 2]``.
        d_max: one past the last lag, an integer in ``[d_min + 1, MAX_LEN - 1]``.

    Returns:
        The :class:`Profile`.

    Raises:
        ValueError: a lag out of range.

    Examples:
        >>> import numpy as np
        >>> from jaxbandits.core import profiles
        >>> p = profiles.interval(2, 5)
        >>> np.round(p.weights, 4).tolist(), p.mean_lag
        ([0.0, 0.0, 0.3333, 0.3333, 0.3333], 3.0)
    """
    d_min = V.integer("d_min", d_min, lo=0, hi=MAX_LEN - 2)
    d_max = V.integer("d_max", d_max, lo=d_min + 1, hi=MAX_LEN - 1)
    w = np.zeros(d_max)
    w[d_min:d_max] = 1.0
    return _finite(f"interval({d_min},{d_max})", w)


@constructor
def linear_decreasing(d: int) -> Profile:
    """The linearly decreasing profile ``w_l = (d + 1 - l) 2 / (d (d + 1))`` for ``l = 1..d``.

    Args:
        d: the last lag, an integer in ``[1, MAX_LEN - 1]``.

    Returns:
        The :class:`Profile`.

    Raises:
        ValueError: ``d`` out of range.

    Examples:
        >>> import numpy as np
        >>> from jaxbandits.core import profiles
        >>> np.round(profiles.linear_decreasing(3).weights, 4).tolist()
        [0.0, 0.5, 0.3333, 0.1667]
    """
    d = V.integer("d", d, lo=1, hi=MAX_LEN - 1)
    l = np.arange(d + 1, dtype=np.float64)
    return _finite(f"lin-dec(d={d})", np.where(l >= 1, (d + 1 - l) * 2.0 / (d * (d + 1)), 0.0))


@constructor
def linear_increasing(d: int) -> Profile:
    """The linearly increasing profile ``w_l = l 2 / (d (d + 1))`` for ``l = 1..d``.

    Args:
        d: the last lag, an integer in ``[1, MAX_LEN - 1]``.

    Returns:
        The :class:`Profile`.

    Raises:
        ValueError: ``d`` out of range.

    Examples:
        >>> import numpy as np
        >>> from jaxbandits.core import profiles
        >>> np.round(profiles.linear_increasing(3).weights, 4).tolist()
        [0.0, 0.1667, 0.3333, 0.5]
    """
    d = V.integer("d", d, lo=1, hi=MAX_LEN - 1)
    l = np.arange(d + 1, dtype=np.float64)
    return _finite(f"lin-inc(d={d})", l * 2.0 / (d * (d + 1)))


def _truncate(name, head, tail_mass, tol, tail, infinite_mean=False):
    V.choice("tail", tail, ("renormalise", "drop"))
    w = np.asarray(head, np.float64)
    if tail == "renormalise":
        w = w / w.sum()
    return Profile(name, w, float(tail_mass), tail, tol, infinite_mean)


@constructor
def discounted(gamma: float, tol: float = 1e-9, tail: str = "renormalise") -> Profile:
    """The discounted profile ``w_l = (1 - gamma) gamma^(l - 1)`` for ``l >= 1``, truncated.

    Cut at the first ``L`` with tail mass ``gamma^(L-1) <= tol``; the profile records the tail mass
    cut off.

    Args:
        gamma: the discount, in ``(0, 1)``.
        tol: the tail mass allowed, in ``(0, 1)``.
        tail: ``"renormalise"`` (the kept lags are rescaled to sum to 1) or ``"drop"``.

    Returns:
        The :class:`Profile`.

    Raises:
        ValueError: a parameter out of range, or a ``tol`` that needs more than ``MAX_LEN`` lags.

    Examples:
        >>> from jaxbandits.core import profiles
        >>> p = profiles.discounted(0.5, tol=1e-3)
        >>> p.length, p.tail_mass
        (11, 0.0009765625)
    """
    V.real("gamma", gamma, lo=0.0, hi=1.0, lo_open=True, hi_open=True)
    V.real("tol", tol, lo=0.0, hi=1.0, lo_open=True, hi_open=True)
    n = int(math.ceil(math.log(tol) / math.log(gamma)))  # lags 1..n kept: tail gamma^n <= tol
    if n + 1 > MAX_LEN:
        raise ValueError(f"discounted: tol={tol} needs L={n + 1} > {MAX_LEN}; raise tol")
    l = np.arange(n + 1, dtype=np.float64)
    head = np.where(l >= 1, (1 - gamma) * gamma ** np.maximum(l - 1, 0), 0.0)
    return _truncate(f"discounted(gamma={gamma:g})", head, gamma**n, tol, tail)


def _zeta(g):
    # Euler-Maclaurin: sum_{1..N-1} + N^(1-g)/(g-1) + N^-g/2 + g N^(-g-1)/12, N = 1e4
    N = 10_000
    k = np.arange(1, N, dtype=np.float64)
    return float(np.sum(k**-g) + N ** (1 - g) / (g - 1) + 0.5 * N**-g + g * N ** (-g - 1) / 12)


@constructor
def polynomial(gamma: float, tol: float = 1e-6, tail: str = "renormalise", max_len: int = 4096) -> Profile:
    """The polynomial profile ``w_l = l^-gamma / zeta(gamma)`` for ``l >= 1`` (``gamma > 1``), truncated.

    Cut at the first ``L`` with tail mass ``<= tol``, but at most ``max_len`` lags: the tail of
    ``gamma = 2`` decays like ``0.61 / L`` (1.5e-4 at L = 4096), so there the tolerance is not met
    and ``tail_mass`` says what was cut.

    Args:
        gamma: the power, ``> 1``.
        tol: the tail mass allowed, in ``(0, 1)``.
        tail: ``"renormalise"`` or ``"drop"``.
        max_len: the most lags, an integer in ``[2, MAX_LEN]``.

    Returns:
        The :class:`Profile`.

    Raises:
        ValueError: a parameter out of range.

    Examples:
        >>> from jaxbandits.core import profiles
        >>> p = profiles.polynomial(2.0)
        >>> p.length, round(p.tail_mass, 6)
        (4096, 0.000148)
    """
    V.real("gamma", gamma, lo=1.0, lo_open=True)
    V.real("tol", tol, lo=0.0, hi=1.0, lo_open=True, hi_open=True)
    max_len = V.integer("max_len", max_len, lo=2, hi=MAX_LEN)
    z = _zeta(gamma)
    l = np.arange(max_len, dtype=np.float64)
    head = np.where(l >= 1, np.maximum(l, 1.0) ** -gamma / z, 0.0)
    tails = 1.0 - np.cumsum(head)  # tails[n] = mass at lags > n
    ok = np.flatnonzero(tails <= tol)
    n = int(ok[0]) if ok.size else max_len - 1
    return _truncate(f"polynomial(gamma={gamma:g})", head[: n + 1], max(float(tails[n]), 0.0), tol, tail,
                     infinite_mean=gamma <= 2)


@constructor
def random_delay(lo: int, hi: int) -> D.Uniform:
    """All of a pull's reward at one lag ``z ~ U{lo..hi}`` (inclusive), drawn per pull.

    This is a delay law, not a split: mean ``(lo+hi)/2``, variance ``((hi-lo+1)^2 - 1)/12``.

    Args:
        lo: the smallest lag.
        hi: the largest lag, ``>= lo``.

    Returns:
        The delay law (:func:`jaxbandits.core.delays.uniform`).

    Raises:
        ValueError: ``lo`` or ``hi`` out of range.

    Examples:
        >>> from jaxbandits.core import profiles
        >>> law = profiles.random_delay(2, 6)
        >>> float(law.mean), law.support_max
        (4.0, 6)
    """
    return D.uniform(lo, hi)
