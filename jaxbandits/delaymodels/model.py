"""Joint conversion-rate and delay models (docs/bayes.md, *The model*): each play of arm
``k`` converts with probability ``p_k``; a conversion arrives after a delay from a family whose
parameters are inferred (shared by all arms, or one law per arm). The likelihood is the exact
right-censored one, in log space:

* conversion seen with delay ``d``: ``log p + log f(d)``;
* nothing seen by age ``a`` (``a = min(cutoff - play_time, window)``):
  ``log(1 - p F(a)) = logaddexp(log1p(-p), log p + log S(a))``.

Two data layouts give the same log density for discrete data: per-row :class:`Rows` (offline
fits, pointwise log-likelihood for LOO) and fixed-size :class:`SuffStats` (conversions per
arm, a delay histogram, and pending plays by arm and age).
"""
from __future__ import annotations

from typing import NamedTuple, Optional

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
from numpyro.distributions import constraints

from .families import Family, family

__all__ = ["Rows", "WeightedRows", "compress_rows", "loglik_weighted", "pointwise_weighted", "SuffStats", "RingStats", "loglik_ring", "CensoredConversion", "conversion_model", "loglik_rows", "loglik_suffstats",
           "compress", "unseen_log_term"]

_F = jnp.float32


class Rows(NamedTuple):
    """One row per play (arrays of length N).

    Attributes:
        arm: i32.
        converted: f32, 1 if the conversion was seen (by the cutoff, within the window).
        delay: f32, its delay (0 when not seen).
        age: f32, min(cutoff - play_time, window): how long it has been watched.
    """

    arm: jax.Array  # i32
    converted: jax.Array  # f32 1 if the conversion was seen (by the cutoff, within the window)
    delay: jax.Array  # f32 its delay (0 when not seen)
    age: jax.Array  # f32 min(cutoff - play_time, window): how long it has been watched


class WeightedRows(NamedTuple):
    """A log compressed to its distinct rows, each with the number of plays it stands for (exact
    for every family: a seen conversion's term ``log p + log f(d)`` does not depend on its age, so
    seen rows merge by (arm, delay), or by delay alone with a shared law; unseen rows by (arm, age)).

    Attributes:
        n_conv: f32[K], conversions seen per arm.
        delay: f32[D], distinct seen delays.
        delay_arm: i32[D], their arm (per-arm laws; 0 with a shared law).
        delay_count: f32[D], how many seen conversions had that (arm,) delay.
        age: f32[U], distinct ages of plays with nothing seen.
        age_arm: i32[U], their arm.
        age_count: f32[U], how many plays.
    """

    n_conv: jax.Array  # f32[K] conversions seen per arm
    delay: jax.Array  # f32[D] distinct seen delays
    delay_arm: jax.Array  # i32[D] their arm (per-arm laws; 0 with a shared law)
    delay_count: jax.Array  # f32[D] how many seen conversions had that (arm,) delay
    age: jax.Array  # f32[U] distinct ages of plays with nothing seen
    age_arm: jax.Array  # i32[U] their arm
    age_count: jax.Array  # f32[U] how many plays


class SuffStats(NamedTuple):
    """Exact compression of a discrete log with window ``M``.

    Attributes:
        n_conv: f32[K], conversions seen per arm.
        hist: f32[M+1], (shared law) or f32[K, M+1] (per-arm laws): seen delays.
        pend: f32[K, M+1], unseen plays by arm and age min(a, M) (age M: closed plays).
    """

    n_conv: jax.Array  # f32[K] conversions seen per arm
    hist: jax.Array  # f32[M+1] (shared law) or f32[K, M+1] (per-arm laws): seen delays
    pend: jax.Array  # f32[K, M+1] unseen plays by arm and age min(a, M) (age M: closed plays)


class RingStats(NamedTuple):
    """The in-scan policy's statistics after round ``t`` (conventions §2): exact for window ``M = W - 1``.

    Attributes:
        n_conv: f32[K], conversions seen (delay <= M).
        hist: f32[M+1], seen delays (shared law) or f32[K, M+1] (per-arm laws).
        n_closed: f32[K], plays older than M never seen converting.
        ring_arm: i32[W], arm of the play of round s in slot s mod W.
        ring_pend: f32[W], 1 while that play has not converted (0: empty slot).
        t: i32, the round just completed.
    """

    n_conv: jax.Array  # f32[K] conversions seen (delay <= M)
    hist: jax.Array  # f32[M+1] seen delays (shared law) or f32[K, M+1] (per-arm laws)
    n_closed: jax.Array  # f32[K] plays older than M never seen converting
    ring_arm: jax.Array  # i32[W] arm of the play of round s in slot s mod W
    ring_pend: jax.Array  # f32[W] 1 while that play has not converted (0: empty slot)
    t: jax.Array  # i32 the round just completed


def loglik_ring(rs: RingStats, p, th, fam="exponential", per_arm_delay=False):
    """The log-likelihood of the in-scan policy's statistics with the ring, in O(K + M + W).

    ``sum n_conv log p + sum hist log f + sum n_closed log(1 - p F(M)) + sum_ring pend log(1 - p_arm
    F(age))``, ``age = (t - slot) mod W``.

    Args:
        rs: the :class:`RingStats`.
        p: f32[K], the conversion probabilities.
        th: the delay parameters, a dict by name.
        fam: the delay family or its name (discrete).
        per_arm_delay: one delay law per arm.

    Returns:
        f32, the log-likelihood.

    Examples:
        >>> import jax.numpy as jnp
        >>> from jaxbandits.delaymodels import model
        >>> rs = model.RingStats(n_conv=jnp.zeros(2), hist=jnp.zeros(3), n_closed=jnp.zeros(2),
        ...                      ring_arm=jnp.zeros(3, jnp.int32), ring_pend=jnp.zeros(3), t=jnp.asarray(-1))
        >>> float(model.loglik_ring(rs, jnp.array([0.5, 0.5]), {"delay_mean": 5.0}, fam="geometric"))
        0.0
    """
    fam = family(fam)
    W = rs.ring_arm.shape[0]
    M = W - 1
    p = jnp.clip(p, 1e-7, 1 - 1e-7)
    log_p, log1m_p = jnp.log(p), jnp.log1p(-p)
    ages = jnp.arange(W, dtype=_F)
    age_j = ((rs.t - jnp.arange(W)) % W).astype(_F)
    if per_arm_delay:
        thk = {k: v[:, None] for k, v in th.items()}
        log_f = fam.log_pmf(ages[None, :], thk)  # [K, W]
        log_sM = fam.log_surv(jnp.full((1, 1), float(M)), thk)[:, 0]  # [K]
        thj = {k: v[rs.ring_arm] for k, v in th.items()}
        log_sj = fam.log_surv(age_j, thj)
    else:
        log_f = fam.log_pmf(ages, th)
        log_sM = fam.log_surv(jnp.asarray(float(M)), th)
        log_sj = fam.log_surv(age_j, th)
    closed = unseen_log_term(log_p, log1m_p, log_sM)
    ring = unseen_log_term(log_p[rs.ring_arm], log1m_p[rs.ring_arm], log_sj)
    return (jnp.sum(rs.n_conv * log_p) + jnp.sum(rs.hist * log_f) + jnp.sum(rs.n_closed * closed)
            + jnp.sum(rs.ring_pend * ring))


def unseen_log_term(log_p, log1m_p, log_s):
    """``log(1 - p F(a)) = logaddexp(log(1-p), log p + log S(a))``, in log space (conventions §9).

    Args:
        log_p: ``log p``.
        log1m_p: ``log(1 - p)``.
        log_s: ``log S(a)``, the delay law's log-survival at the age.

    Returns:
        The term.

    Examples:
        >>> import math
        >>> from jaxbandits.delaymodels import model
        >>> round(float(model.unseen_log_term(math.log(0.5), math.log(0.5), math.log(0.25))), 4)  # log(1 - 0.5 * 0.75)
        -0.47
    """
    return jnp.logaddexp(log1m_p, log_p + log_s)


def _take(th, arm, per_arm):
    return {k: (v[arm] if per_arm else v) for k, v in th.items()}


class CensoredConversion(dist.Distribution):
    """Per-row censored likelihood (docs/bayes.md, *The model*). The value of a row is
    ``[converted, delay]`` (event shape 2)."""

    arg_constraints = {}
    support = constraints.real_vector

    def __init__(self, p, theta, age, fam: Family, discrete: bool, validate_args=None):
        self.p, self.theta, self.age, self.fam, self.discrete = p, theta, age, fam, discrete
        super().__init__(batch_shape=jnp.shape(age), event_shape=(2,), validate_args=validate_args)

    def sample(self, key, sample_shape=()):  # pragma: no cover - the model is fitted, not simulated
        raise NotImplementedError("CensoredConversion is a likelihood; simulate logs with jaxbandits worlds")

    def log_prob(self, value):
        c, d = value[..., 0], value[..., 1]
        p = jnp.clip(self.p, 1e-7, 1 - 1e-7)
        log_p, log1m_p = jnp.log(p), jnp.log1p(-p)
        if self.discrete:
            log_f, log_s = self.fam.log_pmf(d, self.theta), self.fam.log_surv(self.age, self.theta)
        else:
            log_f, log_s = self.fam.log_pdf_c(d, self.theta), self.fam.log_surv_c(self.age, self.theta)
        seen = log_p + jnp.where(c > 0, log_f, 0.0)
        return jnp.where(c > 0, seen, unseen_log_term(log_p, log1m_p, log_s))


def resolve_priors(fam: Family, priors: Optional[dict], prior_mean: float) -> dict:
    out = {"p_a": 1.0, "p_b": 1.0, **fam.default_priors(prior_mean)}
    for k, v in (priors or {}).items():
        if k not in out:
            raise ValueError(f"unknown prior {k!r} for the {fam.name} model; known: {sorted(out)}")
        if isinstance(v, (np.ndarray, jax.Array, list, tuple)):  # one value per arm (a warm start's priors)
            a = np.asarray(v, np.float64)
            if a.ndim != 1 or a.size == 0 or not np.all(np.isfinite(a) & (a > 0)):
                raise ValueError(f"prior {k!r} must be a positive number or a 1-d array of them (one per arm), got {v!r}")
            out[k] = a
            continue
        if not (isinstance(v, (int, float)) and v > 0):
            raise ValueError(f"prior {k!r} must be a positive number, got {v!r}")
        out[k] = float(v)
    return out


def conversion_model(data, n_arms: int, fam="exponential", discrete: bool = False, per_arm_delay: bool = False,
                     priors: Optional[dict] = None, prior_mean: float = 30.0, fixed_delay: Optional[dict] = None):
    """The NumPyro model of the conversion log.

    ``p ~ Beta(p_a, p_b)`` per arm, delay parameters under the priors of docs/bayes.md (or
    ``fixed_delay``: the oracle that knows the law), and the censored likelihood of ``data``.

    Args:
        data: :class:`Rows`, :class:`WeightedRows`, :class:`SuffStats` or :class:`RingStats`.
        n_arms: the number of arms.
        fam: the delay family or its name.
        discrete: integer delays.
        per_arm_delay: one delay law per arm.
        priors: overrides of the priors' entries.
        prior_mean: the delay prior's mean.
        fixed_delay: the delay parameters, known, or None.

    Returns:
        None (a NumPyro model: its sites are ``p`` and the family's parameters).

    Examples:
        >>> import jax, jax.numpy as jnp
        >>> from numpyro import handlers
        >>> from jaxbandits.delaymodels import model
        >>> rows = model.Rows(jnp.array([0, 1]), jnp.array([1.0, 0.0]), jnp.array([3.0, 0.0]), jnp.array([10.0, 9.0]))
        >>> tr = handlers.trace(handlers.seed(model.conversion_model, jax.random.key(0))).get_trace(rows, 2)
        >>> [name for name, site in tr.items() if site["type"] == "sample" and not site["is_observed"]]
        ['p', 'delay_mean']
    """
    fam = family(fam)
    pr = resolve_priors(fam, priors, prior_mean)
    p = numpyro.sample("p", dist.Beta(pr["p_a"], pr["p_b"]).expand([n_arms]).to_event(1))
    if fixed_delay is not None:
        th = {k: jnp.asarray(v, _F) for k, v in fixed_delay.items()}
    else:
        th = fam.sample(pr, n_arms if per_arm_delay else None)
        numpyro.deterministic("delay_mean_implied", fam.mean(th))
    if isinstance(data, WeightedRows):  # one compiled call even when the model runs eagerly (initialisation)
        numpyro.factor("obs", loglik_weighted_jit(data, p, th, fam, bool(discrete), bool(per_arm_delay)))
        return
    if isinstance(data, RingStats):
        numpyro.factor("obs", loglik_ring(data, p, th, fam, per_arm_delay))
        return
    if isinstance(data, SuffStats):
        numpyro.factor("obs", loglik_suffstats(data, p, th, fam, per_arm_delay))
        return
    with numpyro.plate("rows", data.arm.shape[0]):
        numpyro.sample("obs", CensoredConversion(p[data.arm], _take(th, data.arm, per_arm_delay), data.age, fam,
                                                 discrete), obs=jnp.stack([data.converted, data.delay], -1))


def loglik_rows(rows: Rows, p, th, fam="exponential", discrete=False, per_arm_delay=False):
    """The sum of the per-row log-likelihoods (the hand-checkable reference).

    Args:
        rows: the :class:`Rows`.
        p: f32[K], the conversion probabilities.
        th: the delay parameters, a dict by name.
        fam: the delay family or its name.
        discrete: integer delays.
        per_arm_delay: one delay law per arm.

    Returns:
        f32, the log-likelihood.

    Examples:
        >>> import jax.numpy as jnp
        >>> from jaxbandits.delaymodels import model
        >>> rows = model.Rows(arm=jnp.array([0, 1, 0]), converted=jnp.array([1.0, 0.0, 0.0]),
        ...                   delay=jnp.array([3.0, 0.0, 0.0]), age=jnp.array([10.0, 9.0, 8.0]))
        >>> round(float(model.loglik_rows(rows, jnp.array([0.5, 0.2]), {"delay_mean": 5.0})), 4)
        -3.5945
    """
    fam = family(fam)
    d = CensoredConversion(p[rows.arm], _take(th, rows.arm, per_arm_delay), rows.age, fam, discrete)
    return jnp.sum(d.log_prob(jnp.stack([rows.converted, rows.delay], -1)))


def loglik_suffstats(ss: SuffStats, p, th, fam="exponential", per_arm_delay=False):
    """The log-likelihood of the sufficient statistics of a discrete log.

    ``sum_k n_conv log p_k + sum_d hist[d] log f(d) + sum_{k,a} pend[k,a] log(1 - p_k F(a))``.

    Args:
        ss: the :class:`SuffStats`.
        p: f32[K], the conversion probabilities.
        th: the delay parameters, a dict by name.
        fam: the delay family or its name (discrete).
        per_arm_delay: one delay law per arm.

    Returns:
        f32, the log-likelihood (equal to :func:`loglik_rows` on the same log, discrete).

    Examples:
        >>> import jax.numpy as jnp
        >>> from jaxbandits.delaymodels import model
        >>> rows = model.Rows(jnp.array([0, 1, 0]), jnp.array([1.0, 0.0, 0.0]),
        ...                   jnp.array([3.0, 0.0, 0.0]), jnp.array([10.0, 9.0, 8.0]))
        >>> p, th = jnp.array([0.5, 0.2]), {"delay_mean": 5.0}
        >>> a = model.loglik_suffstats(model.compress(rows, 2, 10), p, th, fam="geometric")
        >>> b = model.loglik_rows(rows, p, th, fam="geometric", discrete=True)
        >>> round(float(a), 4) == round(float(b), 4)
        True
    """
    fam = family(fam)
    M1 = ss.pend.shape[1]
    ages = jnp.arange(M1, dtype=_F)
    p = jnp.clip(p, 1e-7, 1 - 1e-7)
    log_p, log1m_p = jnp.log(p), jnp.log1p(-p)
    if per_arm_delay:  # parameters [K]: evaluate each arm's law on the age grid
        thk = {k: v[:, None] for k, v in th.items()}  # the histogram's weights: [K, 1, bins]
        log_f = fam.log_pmf(ages[None, :], thk)  # [K, M+1]
        log_s = fam.log_surv(ages[None, :], thk)
        conv = jnp.sum(ss.hist * log_f)
    else:
        log_f, log_s = fam.log_pmf(ages, th), fam.log_surv(ages, th)
        conv = jnp.sum(ss.hist * log_f)
        log_s = log_s[None, :]
    unseen = unseen_log_term(log_p[:, None], log1m_p[:, None], log_s)
    return jnp.sum(ss.n_conv * log_p) + conv + jnp.sum(jnp.where(ss.pend > 0, ss.pend * unseen, 0.0))


def compress(rows: Rows, n_arms: int, window: int, per_arm_delay: bool = False) -> SuffStats:
    """Compress a discrete log (integer delays and ages, ages already capped at ``window``).

    Args:
        rows: the :class:`Rows`.
        n_arms: the number of arms.
        window: the window ``M``.
        per_arm_delay: a delay histogram per arm.

    Returns:
        The :class:`SuffStats`.

    Examples:
        >>> import jax.numpy as jnp
        >>> from jaxbandits.delaymodels import model
        >>> rows = model.Rows(jnp.array([0, 1, 0]), jnp.array([1.0, 0.0, 0.0]),
        ...                   jnp.array([3.0, 0.0, 0.0]), jnp.array([10.0, 9.0, 8.0]))
        >>> ss = model.compress(rows, 2, 10)
        >>> ss.n_conv.tolist(), ss.hist.shape, ss.pend.shape
        ([1.0, 0.0], (11,), (2, 11))
    """
    arm = np.asarray(rows.arm, np.int64)
    c = np.asarray(rows.converted) > 0
    d = np.asarray(rows.delay).astype(np.int64)
    a = np.minimum(np.asarray(rows.age).astype(np.int64), window)
    if (d[c] > window).any():
        raise ValueError("compress: a seen delay exceeds the window")
    n_conv = np.bincount(arm[c], minlength=n_arms).astype(np.float32)
    if per_arm_delay:
        hist = np.zeros((n_arms, window + 1), np.float32)
        np.add.at(hist, (arm[c], d[c]), 1)
    else:
        hist = np.bincount(d[c], minlength=window + 1).astype(np.float32)
    pend = np.zeros((n_arms, window + 1), np.float32)
    np.add.at(pend, (arm[~c], a[~c]), 1)
    return SuffStats(jnp.asarray(n_conv), jnp.asarray(hist), jnp.asarray(pend))


def _round_log_grid(x, resolution):
    """``x > 0`` moved onto the geometric grid ``exp(resolution * j)`` (a relative change of at most
    ``exp(resolution / 2) - 1``); zeros stay zero."""
    pos = x > 0
    out = x.copy()
    out[pos] = np.exp(np.round(np.log(x[pos]) / resolution) * resolution)
    return out


def compress_rows(arm, seen, delay, age, n_arms: int, per_arm_delay: bool = False, resolution=None):
    """Compress a log to its distinct rows with counts (:class:`WeightedRows`).

    Exact when ``resolution`` is None. With a ``resolution`` (> 0), seen delays and unseen ages are
    first rounded onto a geometric grid of ratio ``exp(resolution)``: each moves by a factor within
    ``exp(+-resolution/2)``.

    Args:
        arm: i[N], each play's arm index.
        seen: bool[N], its conversion was seen.
        delay: f[N], the seen delay (ignored where not seen).
        age: f[N], how long the play was watched.
        n_arms: the number of arms.
        per_arm_delay: keep seen delays apart by arm (one delay law per arm).
        resolution: None (exact) or the relative grid step.

    Returns:
        ``(WeightedRows, (seen_index, unseen_index))``: for each seen (unseen) play, the position of
        its distinct row, to expand per-unique quantities back to the plays.

    Examples:
        >>> import numpy as np
        >>> from jaxbandits.delaymodels import model
        >>> wr, (seen, unseen) = model.compress_rows(np.array([0, 1, 0]), np.array([True, False, False]),
        ...                                          np.array([3.0, 0.0, 0.0]), np.array([10.0, 9.0, 8.0]), 2)
        >>> wr.n_conv.tolist(), wr.delay.tolist(), wr.age.tolist()
        ([1.0, 0.0], [3.0], [8.0, 9.0])
    """
    arm = np.asarray(arm, np.int64)
    seen = np.asarray(seen, bool)
    delay = np.asarray(delay, np.float64)
    age = np.asarray(age, np.float64)
    if resolution is not None:
        delay = _round_log_grid(delay, float(resolution))
        age = _round_log_grid(age, float(resolution))
    n_conv = np.bincount(arm[seen], minlength=n_arms)
    d, da = delay[seen], (arm[seen] if per_arm_delay else np.zeros(int(seen.sum()), np.int64))
    ud, uda, cnt_d, inv_d = _unique_pairs(da, d)
    ua, uaa, cnt_a, inv_a = _unique_pairs(arm[~seen], age[~seen])
    f32 = lambda x: jnp.asarray(x, jnp.float32)
    i32 = lambda x: jnp.asarray(x, jnp.int32)
    wr = WeightedRows(f32(n_conv), f32(ud), i32(uda), f32(cnt_d), f32(ua), i32(uaa), f32(cnt_a))
    return wr, (inv_d, inv_a)


def _unique_pairs(k, x):
    """Distinct ``(k, x)`` pairs (sorted by k, then x), their counts and each entry's position
    among them; one lexsort, no (N, 2) copies."""
    if x.size == 0:
        return np.zeros(0), np.zeros(0, np.int64), np.zeros(0), np.zeros(0, np.int64)
    order = np.lexsort((x, k))
    ks, xs = k[order], x[order]
    new = np.empty(x.size, bool)
    new[0] = True
    np.not_equal(ks[1:], ks[:-1], out=new[1:])
    new[1:] |= xs[1:] != xs[:-1]
    start = np.flatnonzero(new)
    cnt = np.diff(np.append(start, x.size))
    inv = np.empty(x.size, np.int64)
    inv[order] = np.cumsum(new) - 1
    return xs[start], ks[start], cnt, inv


def pointwise_weighted(wr: WeightedRows, p, th, fam="exponential", discrete=False, per_arm_delay=False):
    """The log-likelihood per distinct row.

    ``log p + log f(d)`` of each distinct seen delay (with a shared law the ``log p`` of its arm is
    added by the caller per play) and ``log(1 - p F(a))`` of each distinct unseen (arm, age).

    Args:
        wr: the :class:`WeightedRows`.
        p: f32[K], the conversion probabilities.
        th: the delay parameters, a dict by name.
        fam: the delay family or its name.
        discrete: integer delays.
        per_arm_delay: one delay law per arm.

    Returns:
        ``(log_f [D], unseen [U])``.

    Examples:
        >>> import numpy as np, jax.numpy as jnp
        >>> from jaxbandits.delaymodels import model
        >>> wr, _ = model.compress_rows(np.array([0, 1, 0]), np.array([True, False, False]),
        ...                             np.array([3.0, 0.0, 0.0]), np.array([10.0, 9.0, 8.0]), 2)
        >>> log_f, unseen = model.pointwise_weighted(wr, jnp.array([0.5, 0.2]), {"delay_mean": 5.0})
        >>> log_f.shape, unseen.shape
        ((1,), (2,))
    """
    fam = family(fam)
    p = jnp.clip(p, 1e-7, 1 - 1e-7)
    log_p, log1m_p = jnp.log(p), jnp.log1p(-p)
    thd = _take(th, wr.delay_arm, per_arm_delay)
    tha = _take(th, wr.age_arm, per_arm_delay)
    if discrete:
        log_f, log_s = fam.log_pmf(wr.delay, thd), fam.log_surv(wr.age, tha)
    else:
        log_f, log_s = fam.log_pdf_c(wr.delay, thd), fam.log_surv_c(wr.age, tha)
    return log_f, unseen_log_term(log_p[wr.age_arm], log1m_p[wr.age_arm], log_s)


def loglik_weighted(wr: WeightedRows, p, th, fam="exponential", discrete=False, per_arm_delay=False):
    """The log-likelihood of a compressed log, in O(distinct rows).

    ``sum_k n_conv[k] log p_k + sum_d count_d log f(d) + sum_(k,a) count log(1 - p_k F(a))``.

    Args:
        wr: the :class:`WeightedRows`.
        p: f32[K], the conversion probabilities.
        th: the delay parameters, a dict by name (``[K]`` arrays with ``per_arm_delay``).
        fam: the delay family or its name.
        discrete: integer delays (pmf and CDF of the discrete family).
        per_arm_delay: one delay law per arm.

    Returns:
        f32, the log-likelihood.

    Examples:
        >>> import numpy as np, jax.numpy as jnp
        >>> from jaxbandits.delaymodels import model
        >>> wr, _ = model.compress_rows(np.array([0, 1, 0]), np.array([True, False, False]),
        ...                             np.array([3.0, 0.0, 0.0]), np.array([10.0, 9.0, 8.0]), 2)
        >>> round(float(model.loglik_weighted(wr, jnp.array([0.5, 0.2]), {"delay_mean": 5.0})), 4)
        -3.5945
    """
    log_f, unseen = pointwise_weighted(wr, p, th, fam, discrete, per_arm_delay)
    log_p = jnp.log(jnp.clip(p, 1e-7, 1 - 1e-7))
    return jnp.sum(wr.n_conv * log_p) + jnp.sum(wr.delay_count * log_f) + jnp.sum(wr.age_count * unseen)


loglik_weighted_jit = jax.jit(loglik_weighted, static_argnums=(3, 4, 5))
