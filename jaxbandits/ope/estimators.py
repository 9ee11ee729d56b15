"""Off-policy estimators of a target policy's conversion rate per decision within a window
(docs/ope.md): inverse propensity scoring (IPS), self-normalised IPS (SNIPS), the direct method
(DM) and doubly robust (DR), each **delay-aware** (a conversion not yet observable at the log's end
is corrected for) and **delay-ignorant** (the textbook estimator on what was seen by the end).

The value. A decision of arm ``a`` converts within the window ``m`` with probability ``r_a``; the
target's value is ``V = E_x sum_a pi(a|x) r_a``. A decision made at ``t`` whose log was read at
``end`` shows its conversion only if the delay ``D <= c = min(m, end - t)``: the observed
indicator ``y`` has mean ``r_a G_a(c)`` with ``G_a(c) = P(D <= c | D <= m) = F_a(c) / F_a(m)``
(``F_a`` the delay law's CDF of arm ``a``). The delay-aware estimators replace ``y`` by
``y / G_a(c)``, which has mean ``r_a`` exactly; the delay-ignorant ones use ``y`` and are biased low
by ``sum pi r (1 - G)``. Decisions with ``min_a G_a(c) < min_seen`` (too recent to carry information;
their weight would explode) are left out of the delay-aware forms, which is unbiased as long as the
arms' rates do not change over time, because which rows are left out depends on time alone.

Intervals are normal (``value +- z sd/sqrt(n)`` over the rows' terms; SNIPS and DM by the delta
method). Given posterior draws of the delay law, each draw gives an estimate and the interval's
variance is the mean of the draws' sampling variances plus the variance of their estimates (the
law of total variance), so it carries the delay model's uncertainty.
"""
from __future__ import annotations

import dataclasses
import math
import statistics
import warnings
from typing import Callable, Optional, Sequence

import numpy as np

from .log import DecisionLog

__all__ = ["Estimate", "Report", "Estimator", "target_probs", "seen_probability", "old_enough", "evaluate", "ips",
           "snips", "dm", "dr", "IPS", "SNIPS", "DM", "DR", "ESTIMATORS"]


@dataclasses.dataclass(frozen=True)
class Estimate:
    """One estimator's estimate of the target's value, with its ``level`` interval ``[lo, hi]``.

    Attributes:
        estimator: the estimator's name: "ips", "snips", "dm", "dr" (Estimator.name), "replay".
        aware: delay-aware (True) or delay-ignorant (False).
        value: the estimate.
        lo: the interval's lower end.
        hi: the interval's upper end.
        se: the interval's standard error (sampling and, with draws, the delay model's).
        ess: effective sample size (sum w)^2 / sum w^2 of the importance weights (DM: rows used).
        n: rows used.
        se_delay: the part of se from the delay model's posterior (0 without draws).
    """

    estimator: str  # the estimator's name: "ips", "snips", "dm", "dr" (Estimator.name), "replay"
    aware: bool  # delay-aware (True) or delay-ignorant (False)
    value: float
    lo: float
    hi: float
    se: float  # the interval's standard error (sampling and, with draws, the delay model's)
    ess: float  # effective sample size (sum w)^2 / sum w^2 of the importance weights (DM: rows used)
    n: int  # rows used
    se_delay: float = 0.0  # the part of se from the delay model's posterior (0 without draws)

    @property
    def name(self) -> str:
        return f"{self.estimator} ({'delay-aware' if self.aware else 'delay-ignorant'})"

    def to_json(self) -> dict:
        return {**dataclasses.asdict(self), "name": self.name}


@dataclasses.dataclass(frozen=True)
class Report:
    """The estimates of one evaluation, and what it was evaluated with.

    Attributes:
        estimates: the :class:`Estimate` of each estimator and form (delay-aware first).
        window: the conversion window of the value (None: every conversion).
        level: the intervals' confidence level.
        n: the log's rows.
        dropped: rows left out of the delay-aware estimators (min over arms of G < min_seen).
        draws: delay-law draws (0: one law or none).
    """

    estimates: tuple
    window: Optional[float]
    level: float
    n: int
    dropped: int  # rows left out of the delay-aware estimators (min over arms of G < min_seen)
    draws: int  # delay-law draws (0: one law or none)

    def get(self, estimator, aware: bool) -> Estimate:
        """The estimate of ``estimator`` (an :class:`Estimator`, e.g. ``ope.IPS``, or its name as
        reported, ``"ips"``), delay-aware or not."""
        name = estimator.name if isinstance(estimator, Estimator) else estimator
        for e in self.estimates:
            if e.estimator == name and e.aware == aware:
                return e
        raise KeyError(f"no {name} ({'aware' if aware else 'ignorant'}) estimate in this report")

    def table(self) -> str:
        head = f"| estimator | estimate | {self.level:.0%} interval | ESS | rows |\n|---|---|---|---|---|\n"
        body = "".join(f"| {e.name} | {e.value:.6g} | [{e.lo:.6g}, {e.hi:.6g}] | {e.ess:.1f} | {e.n} |\n"
                       for e in self.estimates)
        return head + body

    def to_json(self) -> dict:
        return {"estimates": [e.to_json() for e in self.estimates], "window": self.window, "level": self.level,
                "n": self.n, "dropped_recent": self.dropped, "delay_draws": self.draws}


# ----------------------------------------------------------------------------- inputs
def target_probs(target, log: DecisionLog) -> np.ndarray:
    """The target policy's law, checked: finite, ``>= 0``, rows summing to 1.

    Args:
        target: ``f64[K]`` (the same law for every decision), ``f64[N, K]`` (one row per
            decision), or a function of the log's contexts returning ``[N, K]``
            (``target(log.context)``).
        log: the :class:`~jaxbandits.ope.log.DecisionLog`.

    Returns:
        ``f64[K]`` or ``f64[N, K]``.

    Raises:
        ValueError: a law of the wrong shape, negative, non-finite or not summing to 1.

    Examples:
        >>> from jaxbandits import ope
        >>> nan = float("nan")
        >>> log = ope.decision_log(arm=[0, 1, 1, 0], time=[0, 1, 2, 3], propensity=[0.5] * 4,
        ...                        conversion_time=[nan, 3, nan, nan], end=10)
        >>> ope.target_probs([0.25, 0.75], log).tolist()
        [0.25, 0.75]
    """
    K, N = log.n_arms, len(log)
    if callable(target):
        if log.context is None:
            raise ValueError("target is a function of the contexts, but the log has none (give context= to "
                             "decision_log)")
        target = target(log.context)
    pi = np.asarray(target, np.float64)
    if pi.shape not in ((K,), (N, K)):
        raise ValueError(f"target must be the target policy's probabilities of the {K} arms, shape ({K},) or "
                         f"({N}, {K}) (one row per decision), got shape {pi.shape}")
    if not np.isfinite(pi).all() or (pi < 0).any():
        raise ValueError("target: probabilities must be finite and >= 0")
    s = pi.sum(-1)
    if np.abs(s - 1).max() > 1e-6:
        raise ValueError(f"target: probabilities must sum to 1 (per decision), got sums as far as {float(np.abs(s - 1).max()) + 1:.6g}")
    return pi


def _check_support(log: DecisionLog, pi: np.ndarray, played: np.ndarray, what: str):
    """A target arm the logging policy never played (or gave probability 0) has no estimate: raise,
    naming it."""
    mass = pi if pi.ndim == 1 else pi.max(0)
    for a in np.flatnonzero((mass > 0) & ~played):
        raise ValueError(f"the target plays arm {log.label(a)} (probability up to {mass[a]:.3g}), which {what}: "
                         "no off-policy estimator can see its outcomes (log it with an exploration floor, "
                         "explore = eps, or evaluate a target that does not play it)")
    if log.probs is not None and pi.ndim == 2:
        hole = (pi > 0) & (log.probs <= 0)
        if hole.any():
            i, a = np.argwhere(hole)[0]
            raise ValueError(f"the target gives arm {log.label(a)} probability {pi[i, a]:.3g} at row {i}, where the "
                             "logging policy gave it probability 0: the importance weights are undefined")


def _law_table(law, arms: int, c: np.ndarray, window) -> np.ndarray:
    """``G_a(c)`` for the rows (``c`` integer ages ``<= window``): a :class:`~jaxbandits.core.delays.DelayLaw`
    (every arm) or a sequence of one law per arm."""
    import jax.numpy as jnp

    from ..core.delays import DelayLaw

    laws = [law] * arms if isinstance(law, DelayLaw) else list(law)
    if len(laws) != arms or not all(isinstance(x, DelayLaw) for x in laws):
        raise TypeError(f"delay must be a jaxbandits.core.delays law, or a sequence of {arms} laws (one per arm), "
                        f"got {law!r}")
    L = int(c.max()) + 1 if c.size else 1
    table = np.empty((arms, L))
    for a, lw in enumerate(laws):
        F = np.asarray(lw.cdf(jnp.arange(L)), np.float64)
        Fm = 1.0 if window is None else float(lw.cdf(jnp.asarray(int(math.floor(window)))))
        if Fm <= 0:
            raise ValueError(f"arm {a}: the delay law gives P(D <= window) = 0: no conversion is possible within "
                             f"the window {window}")
        table[a] = np.minimum(F / Fm, 1.0)
    return table


def _seen_table(log: DecisionLog, delay, window):
    """``(table f64[K, L], c i64[N])``: ``G_a(c)`` for every arm and the rows' integer ages ``c``."""
    age = log.age()
    if window is not None:
        age = np.minimum(age, window)
    c = np.floor(age).astype(np.int64)
    return _law_table(delay, log.n_arms, c, window), c


def seen_probability(log: DecisionLog, delay, window=None) -> np.ndarray:
    """The probability that each decision's conversion is seen by the log's end.

    ``G[i] = P(seen by the end | it converts within the window)`` under the delay law (delays are
    integers, conventions §3): ``F(floor(min(window, end - t))) / F(window)``.

    Args:
        log: the :class:`~jaxbandits.ope.log.DecisionLog`.
        delay: a :mod:`jaxbandits.core.delays` law, or one per arm.
        window: the conversion window, or ``None``.

    Returns:
        ``f64[N]``.

    Examples:
        >>> from jaxbandits import ope
        >>> nan = float("nan")
        >>> log = ope.decision_log(arm=[0, 1, 1, 0], time=[0, 1, 2, 3], propensity=[0.5] * 4,
        ...                        conversion_time=[nan, 3, nan, nan], end=10)
        >>> from jaxbandits import delays
        >>> ope.seen_probability(log, delays.fixed(8)).tolist()
        [1.0, 1.0, 1.0, 0.0]
    """
    table, c = _seen_table(log, delay, window)
    return table[log.arm, c]


def old_enough(log: DecisionLog, delay, window=None, min_seen: float = 0.05) -> np.ndarray:
    """The rows the delay-aware estimators keep: ``min_a G_a(c_i) >= min_seen``.

    Decided by the row's age alone, never by its arm (with one law per arm, dropping by the row's
    own arm's ``G`` would leave out more of the slow arms' recent rows than of the fast ones', a
    bias).

    Args:
        log: the :class:`~jaxbandits.ope.log.DecisionLog`.
        delay: a :mod:`jaxbandits.core.delays` law, or one per arm.
        window: the conversion window, or ``None``.
        min_seen: the smallest probability of being seen kept.

    Returns:
        ``bool[N]``.

    Examples:
        >>> from jaxbandits import ope
        >>> nan = float("nan")
        >>> log = ope.decision_log(arm=[0, 1, 1, 0], time=[0, 1, 2, 3], propensity=[0.5] * 4,
        ...                        conversion_time=[nan, 3, nan, nan], end=10)
        >>> from jaxbandits import delays
        >>> ope.old_enough(log, delays.fixed(8)).tolist()
        [True, True, True, False]
    """
    table, c = _seen_table(log, delay, window)
    return table[:, c].min(0) >= min_seen


# ----------------------------------------------------------------------------- the estimators
def _z(level):
    if not 0 < level < 1:
        raise ValueError(f"level must lie in (0, 1), got {level}")
    return statistics.NormalDist().inv_cdf(0.5 + level / 2)


def _ess(w):
    s2 = float(np.dot(w, w))
    return float(w.sum()) ** 2 / s2 if s2 > 0 else 0.0


class _Rows:
    """The per-row quantities every estimator uses: weights ``w``, target probabilities of the
    logged arm, observations ``y`` (divided by ``G`` when delay-aware) and ``G``."""

    def __init__(self, log, pi, y, G, keep):
        self.arm = log.arm[keep]
        pia = pi[log.arm] if pi.ndim == 1 else pi[np.arange(len(log)), log.arm]
        self.w = (pia / log.propensity)[keep]
        self.y = y[keep].astype(np.float64)
        self.G = None if G is None else G[keep]
        self.yt = self.y if G is None else self.y / self.G
        self.pi = pi if pi.ndim == 1 else pi[keep]
        self.K = log.n_arms
        self.n = int(self.w.shape[0])


def _ips(R: _Rows):
    z = R.w * R.yt
    return float(z.mean()), float(z.std(ddof=1) / math.sqrt(R.n)) if R.n > 1 else math.inf, _ess(R.w)


def _snips(R: _Rows):
    sw = float(R.w.sum())
    if sw <= 0:
        raise ValueError("snips: the target gives probability 0 to every logged decision (sum of weights 0)")
    v = float(np.dot(R.w, R.yt)) / sw
    se = float(np.sqrt(np.sum((R.w * (R.yt - v)) ** 2))) / sw
    return v, se, _ess(R.w)


def _arm_rates(R: _Rows):
    """Per-arm rate ``sum y / sum G`` (``G = 1``: the mean) and its delta-method variance."""
    n = np.bincount(R.arm, minlength=R.K).astype(np.float64)
    G = np.ones(R.n) if R.G is None else R.G
    sy = np.bincount(R.arm, weights=R.y, minlength=R.K)
    sg = np.bincount(R.arm, weights=G, minlength=R.K)
    r = np.divide(sy, sg, out=np.zeros(R.K), where=sg > 0)
    res = R.y - r[R.arm] * G
    var = np.divide(np.bincount(R.arm, weights=res * res, minlength=R.K), sg * sg, out=np.full(R.K, np.inf),
                    where=sg > 0)
    return r, var, n


def _dm(R: _Rows, pibar):
    r, var, n = _arm_rates(R)
    need = pibar > 0
    v = float(np.dot(pibar, r))
    se = float(math.sqrt(np.dot(pibar[need] ** 2, var[need])))
    return v, se, float(R.n), r


def _dr(R: _Rows, r):
    q = (R.pi @ r) if R.pi.ndim == 2 else np.full(R.n, float(R.pi @ r))
    z = q + R.w * (R.yt - r[R.arm])
    return float(z.mean()), float(z.std(ddof=1) / math.sqrt(R.n)) if R.n > 1 else math.inf, _ess(R.w)


@dataclasses.dataclass(frozen=True)
class Estimator:
    """An estimator of the target's value: ``name`` (its label in reports and on the command line),
    ``compute(rows, fit)`` -> ``(value, se, ess)`` from the per-row quantities; ``fit`` is the per-arm
    rate fit ``(value, se, rows, rates)`` of the direct method when ``needs_rates``, else ``None``
    (computed once for every estimator that needs it).

    Attributes:
        name: its label in reports and on the command line.
        compute: ``compute(rows, fit) -> (value, se, ess)`` from the per-row quantities.
        needs_rates: it needs the per-arm conversion-rate fit (DM, DR).
    """

    name: str
    compute: Callable = dataclasses.field(repr=False, compare=False)
    needs_rates: bool = False


IPS = Estimator("ips", lambda R, fit: _ips(R))
SNIPS = Estimator("snips", lambda R, fit: _snips(R))
DM = Estimator("dm", lambda R, fit: fit[:3], needs_rates=True)
DR = Estimator("dr", lambda R, fit: _dr(R, fit[3]), needs_rates=True)
#: Every estimator, in report order.
ESTIMATORS = (IPS, SNIPS, DM, DR)


def _one(log, pi, y, G, keep, which):
    R = _Rows(log, pi, y, G, keep)
    played = np.bincount(R.arm, minlength=log.n_arms) > 0
    pibar = pi if pi.ndim == 1 else pi.mean(0)
    if G is not None:  # the support check again, on the rows kept (every estimator needs it)
        mass = R.pi if R.pi.ndim == 1 else R.pi.max(0)
        for a in np.flatnonzero((mass > 0) & ~played):
            raise ValueError(f"the target plays arm {log.label(a)} (probability up to {mass[a]:.3g}), but no decision "
                             f"of it is old enough to show conversions (every one has P(seen) < min_seen and was "
                             "left out of the delay-aware estimators): lower min_seen, evaluate a later log, or "
                             "evaluate a target that does not play it")
    fit = _dm(R, pibar) if any(e.needs_rates for e in which) else None
    out = {e: e.compute(R, fit) for e in which}
    return out, R.n


def evaluate(log: DecisionLog, target, *, window=None, delay=None, delay_draws=None, level: float = 0.95,
             min_seen: float = 0.05, estimators: Sequence[Estimator] = ESTIMATORS, ignorant: bool = True) -> Report:
    """Every estimator of ``estimators`` on ``log`` for the target ``target``.

    Delay-aware with ``delay`` (a :mod:`jaxbandits.core.delays` law, or a sequence of one law per arm)
    or ``delay_draws`` (a list of such: posterior draws of a fitted delay model, e.g.
    ``jaxbandits.bayes.delay_laws(idata, draws=200)``; the interval then carries their spread) and
    (``ignorant=True``) delay-ignorant.

    Args:
        log: the :class:`~jaxbandits.ope.log.DecisionLog`.
        target: the target's law (see :func:`target_probs`).
        window: the conversion window ``m`` the value is defined by (``None``: every conversion
            counts).
        delay: a :mod:`jaxbandits.core.delays` law, or one per arm: the delay-aware form; ``None``:
            the delay-ignorant one.
        delay_draws: a list of such laws (posterior draws): the interval carries their spread.
        level: the interval's confidence level.
        min_seen: rows whose conversion would be seen with probability below it are left out of
            the delay-aware form (:func:`old_enough`).
        estimators: the :class:`Estimator` objects to run (default :data:`ESTIMATORS`).
        ignorant: also give the delay-ignorant forms.

    Returns:
        The :class:`Report`: one :class:`Estimate` per estimator and form (delay-aware first).

    Raises:
        ValueError: a bad target, delay law or level.

    Examples:
        >>> from jaxbandits import ope
        >>> nan = float("nan")
        >>> log = ope.decision_log(arm=[0, 1, 1, 0], time=[0, 1, 2, 3], propensity=[0.5] * 4,
        ...                        conversion_time=[nan, 3, nan, nan], end=10)
        >>> from jaxbandits import delays
        >>> r = ope.evaluate(log, [0.0, 1.0], delay=delays.geometric(mean=5.0))
        >>> [(e.estimator, e.aware) for e in r.estimates][:2]
        [('ips', True), ('snips', True)]
    """
    which = tuple(estimators)
    if not which or not all(isinstance(e, Estimator) for e in which):
        raise ValueError(f"estimators must be a non-empty sequence of jaxbandits.ope estimators "
                         f"({', '.join('ope.' + e.name.upper() for e in ESTIMATORS)}), got {list(which)}")
    if window is not None and (isinstance(window, bool) or not np.isfinite(window) or window < 0):
        raise ValueError(f"window must be a number >= 0 (the conversion window m, in the log's time unit) or None, "
                         f"got {window!r}")
    if not 0 < min_seen <= 1:
        raise ValueError(f"min_seen must lie in (0, 1], got {min_seen}")
    z = _z(level)
    pi = target_probs(target, log)
    N = len(log)
    played = np.bincount(log.arm, minlength=log.n_arms) > 0
    _check_support(log, pi, played, "the logging policy never played in this log")
    y = log.observed(window)
    results = []

    def add(name, aware, v, se, ess, n, se_delay=0.0):
        results.append(Estimate(name, aware, v, v - z * se, v + z * se, se, ess, n, se_delay))

    dropped, n_draws = 0, 0
    if delay is not None and delay_draws is not None:
        raise ValueError("give delay (one law) or delay_draws (posterior draws of the law), not both")
    if delay_draws is not None:
        draws = list(delay_draws)
        if len(draws) < 2:
            raise ValueError(f"delay_draws must hold at least 2 draws of the delay law, got {len(draws)}")
        n_draws = len(draws)
    elif delay is not None:
        draws = [delay]
    if delay is not None or delay_draws is not None:
        per = {e: [] for e in which}
        for law in draws:
            G = seen_probability(log, law, window)
            keep = old_enough(log, law, window, min_seen)
            dropped = int(N - keep.sum())
            if not keep.any():
                raise ValueError(f"every decision is too recent for the delay law: P(seen by the end) < min_seen = "
                                 f"{min_seen} for all {N} decisions")
            out, n = _one(log, pi, y, G, keep, which)
            for e in which:
                per[e].append(out[e] + (n,))
        for e in which:
            v = np.array([x[0] for x in per[e]])
            se = np.array([x[1] for x in per[e]])
            var_d = float(v.var(ddof=1)) if v.size > 1 else 0.0
            tot = math.sqrt(float(np.mean(se ** 2)) + var_d)
            add(e.name, True, float(v.mean()), tot, float(np.mean([x[2] for x in per[e]])), int(per[e][-1][3]),
                math.sqrt(var_d))
    if ignorant or not _aware_given(delay, delay_draws):
        out, n = _one(log, pi, y, None, np.ones(N, bool), which)
        for e in which:
            v, se, ess = out[e]
            add(e.name, False, v, se, ess, n)
    if log.propensity_samples:
        warnings.warn(f"the propensities are Monte Carlo estimates ({log.propensity_samples} samples each): "
                      "importance weights 1/p-hat are then slightly biased (docs/ope.md)", stacklevel=2)
    return Report(tuple(results), window, level, N, dropped, n_draws)


def _aware_given(delay, delay_draws) -> bool:
    return delay is not None or delay_draws is not None


#: the docstring of :func:`ips`, :func:`snips`, :func:`dm` and :func:`dr` (made by ``_single``)
_SINGLE_DOC = """The {up} estimate of the target's value (delay-aware with ``delay``, else delay-ignorant).

One estimator of :func:`evaluate`.

Args:
    log: the :class:`~jaxbandits.ope.log.DecisionLog`.
    target: the target's law (see :func:`target_probs`).
    window: the conversion window ``m`` the value is defined by (``None``: every conversion
        counts).
    delay: a :mod:`jaxbandits.core.delays` law, or one per arm: the delay-aware form; ``None``:
        the delay-ignorant one.
    delay_draws: a list of such laws (posterior draws): the interval carries their spread.
    level: the interval's confidence level.
    min_seen: rows whose conversion would be seen with probability below it are left out of
        the delay-aware form (:func:`old_enough`).

Returns:
    The :class:`Estimate` (value, interval, standard error, effective sample size).

Raises:
    ValueError: a bad target or delay law (see :func:`evaluate`).

Examples:
    >>> from jaxbandits import ope
    >>> nan = float("nan")
    >>> log = ope.decision_log(arm=[0, 1, 1, 0], time=[0, 1, 2, 3], propensity=[0.5] * 4,
    ...                        conversion_time=[nan, 3, nan, nan], end=10)
    >>> e = ope.{name}(log, [0.0, 1.0])  # always play arm 1
    >>> e.estimator, e.aware, e.value
    ('{name}', False, 0.5)
"""


def _single(est: Estimator):
    def f(log, target, *, window=None, delay=None, delay_draws=None, level=0.95, min_seen=0.05) -> Estimate:
        rep = evaluate(log, target, window=window, delay=delay, delay_draws=delay_draws, level=level,
                       min_seen=min_seen, estimators=(est,), ignorant=not _aware_given(delay, delay_draws))
        return rep.estimates[0]

    f.__name__ = est.name
    f.__doc__ = _SINGLE_DOC.format(name=est.name, up=est.name.upper())
    return f


ips, snips, dm, dr = (_single(e) for e in ESTIMATORS)
