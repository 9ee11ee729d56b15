"""Joint conversion-rate and delay models (spec `bayes_delay_models.md` §2): each play of arm
``k`` converts with probability ``p_k``; a conversion arrives after a delay from a family whose
parameters are inferred (shared by all arms, or one law per arm). The likelihood is the exact
right-censored one, in log space:

* conversion seen with delay ``d``: ``log p + log f(d)``;
* nothing seen by age ``a`` (``a = min(cutoff - play_time, window)``):
  ``log(1 - p F(a)) = logaddexp(log1p(-p), log p + log S(a))``.

Two data layouts give the same log density for discrete data: per-row :class:`Rows` (offline
fits, pointwise log-likelihood for LOO) and fixed-size :class:`SuffStats` (§2.5: conversions per
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

__all__ = ["Rows", "SuffStats", "RingStats", "loglik_ring", "CensoredConversion", "conversion_model", "loglik_rows", "loglik_suffstats",
           "compress", "unseen_log_term"]

_F = jnp.float32


class Rows(NamedTuple):
    """One row per play (arrays of length N)."""

    arm: jax.Array  # i32
    converted: jax.Array  # f32 1 if the conversion was seen (by the cutoff, within the window)
    delay: jax.Array  # f32 its delay (0 when not seen)
    age: jax.Array  # f32 min(cutoff - play_time, window): how long it has been watched


class SuffStats(NamedTuple):
    """Exact compression of a discrete log with window ``M`` (§2.5)."""

    n_conv: jax.Array  # f32[K] conversions seen per arm
    hist: jax.Array  # f32[M+1] (shared law) or f32[K, M+1] (per-arm laws): seen delays
    pend: jax.Array  # f32[K, M+1] unseen plays by arm and age min(a, M) (age M: closed plays)


class RingStats(NamedTuple):
    """The in-scan policy's statistics after round ``t`` (§4.2): exact for window ``M = W - 1``."""

    n_conv: jax.Array  # f32[K] conversions seen (delay <= M)
    hist: jax.Array  # f32[M+1] seen delays (shared law) or f32[K, M+1] (per-arm laws)
    n_closed: jax.Array  # f32[K] plays older than M never seen converting
    ring_arm: jax.Array  # i32[W] arm of the play of round s in slot s mod W
    ring_pend: jax.Array  # f32[W] 1 while that play has not converted (0: empty slot)
    t: jax.Array  # i32 the round just completed


def loglik_ring(rs: RingStats, p, th, fam="exponential", per_arm_delay=False):
    """§2.5 with the ring: ``sum n_conv log p + sum hist log f + sum n_closed log(1 - p F(M))
    + sum_ring pend log(1 - p_arm F(age))``, ``age = (t - slot) mod W``. O(K + M + W)."""
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
    """``log(1 - p F(a)) = logaddexp(log(1-p), log p + log S(a))`` (pitfall 1)."""
    return jnp.logaddexp(log1m_p, log_p + log_s)


def _take(th, arm, per_arm):
    return {k: (v[arm] if per_arm else v) for k, v in th.items()}


class CensoredConversion(dist.Distribution):
    """Per-row likelihood of §2.2. The value of a row is ``[converted, delay]`` (event shape 2)."""

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


def _priors(fam: Family, priors: Optional[dict], prior_mean: float) -> dict:
    out = {"p_a": 1.0, "p_b": 1.0, **fam.default_priors(prior_mean)}
    for k, v in (priors or {}).items():
        if k not in out:
            raise ValueError(f"unknown prior {k!r} for the {fam.name} model; known: {sorted(out)}")
        if not (isinstance(v, (int, float)) and v > 0):
            raise ValueError(f"prior {k!r} must be a positive number, got {v!r}")
        out[k] = float(v)
    return out


def conversion_model(data, n_arms: int, fam="exponential", discrete: bool = False, per_arm_delay: bool = False,
                     priors: Optional[dict] = None, prior_mean: float = 30.0, fixed_delay: Optional[dict] = None):
    """The NumPyro model: ``p ~ Beta(p_a, p_b)`` per arm, delay parameters under §2.4's priors (or
    ``fixed_delay``: the oracle that knows the law), and the censored likelihood of ``data``
    (:class:`Rows`, :class:`SuffStats` or :class:`RingStats`)."""
    fam = family(fam)
    pr = _priors(fam, priors, prior_mean)
    p = numpyro.sample("p", dist.Beta(pr["p_a"], pr["p_b"]).expand([n_arms]).to_event(1))
    if fixed_delay is not None:
        th = {k: jnp.asarray(v, _F) for k, v in fixed_delay.items()}
    else:
        th = fam.sample(pr, n_arms if per_arm_delay else None)
        numpyro.deterministic("delay_mean_implied", fam.mean(th))
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
    """Sum of the per-row log-likelihoods (the hand-checkable reference)."""
    fam = family(fam)
    d = CensoredConversion(p[rows.arm], _take(th, rows.arm, per_arm_delay), rows.age, fam, discrete)
    return jnp.sum(d.log_prob(jnp.stack([rows.converted, rows.delay], -1)))


def loglik_suffstats(ss: SuffStats, p, th, fam="exponential", per_arm_delay=False):
    """§2.5: ``sum_k n_conv log p_k + sum_d hist[d] log f(d) + sum_{k,a} pend[k,a] log(1 - p_k F(a))``."""
    fam = family(fam)
    M1 = ss.pend.shape[1]
    ages = jnp.arange(M1, dtype=_F)
    p = jnp.clip(p, 1e-7, 1 - 1e-7)
    log_p, log1m_p = jnp.log(p), jnp.log1p(-p)
    if per_arm_delay:  # parameters [K]: evaluate each arm's law on the age grid
        thk = {k: v[:, None] for k, v in th.items()}
        if fam.name == "histogram":
            thk = {"delay_w": th["delay_w"][:, None, :]}
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
    """Compress a discrete log (integer delays and ages, ages already capped at ``window``)."""
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
