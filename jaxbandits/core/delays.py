"""Delay laws on {0, 1, 2, ...} (conventions §3).

Every law is a pytree (its parameters are arrays one can ``vmap`` over; sizes are static) with

* ``ppf(u)``: the inverse CDF of a uniform ``u`` in (0, 1): the simulator draws ``d_t = F^-1(v_t)``
  from one uniform per round, so changing the delay law never changes the rewards;
* ``draw(u, t)``: ``ppf(u)`` for i.i.d. laws, the ``t``-th entry for an explicit sequence;
* ``sample(key, shape)``, ``cdf(n) = P(D <= n)``, ``pmf(n)``, ``mean``, ``variance``
  (``inf`` where infinite) and ``support_max`` (a Python int, ``NEVER`` when unbounded).

Continuous laws are discretised by ``floor``: ``D = floor(X)``, so ``P(D <= n) = F_X(n + 1)``.
The floored exponential, Weibull and log-normal laws also give the log-survival ``log_sf_x(x) =
log P(X > x)`` and log-density ``log_pdf_x(x)`` of ``X``, and from them the discrete ``log_sf(n) =
log P(D > n)`` and ``log_pmf(n)`` (:func:`floor_log_pmf`): the Bayesian delay families
(:mod:`jaxbandits.delaymodels.families`) compute their likelihoods with these, built from traced
parameters inside a model.
A law on {1, 2, ...} is a zero-based law wrapped in :func:`shift`.

Parameters are checked on the host before anything compiles (docs/delays.md, "Parameter ranges"):
integer delays and bounds are at most ``NEVER = 2**30`` (int32 with room for ``t + d``), scales at
most ``MAX_SCALE = 2**30`` (a larger scale only draws "never"), a Poisson mean at most
``MAX_POISSON_MEAN``, a histogram at most ``MAX_HISTOGRAM`` entries, and parameters that enter
``exp`` (log-normal ``mu``, ``sigma``; Weibull ``shape``) stay where the float64 moment sums and
the float32 draws are finite.
"""
from __future__ import annotations

import math
from typing import Optional

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import erf, erfinv, gammaincc, log_ndtr, ndtr
from scipy.special import erfc as _erfc_np  # float64 host sums (scipy ships with jax)

from . import validate as V
from .pytree import pytree as _pytree
from .pytree import static as _static
from .mathlib import ndtri, open_uniform
from .types import NEVER
from .values import constructor

__all__ = [
    "DelayLaw", "fixed", "uniform", "geometric", "poisson", "exponential", "half_normal",
    "weibull", "log_normal", "pareto", "histogram", "sequence", "shift", "two_point", "log_normal_mixture",
    "criteo_like", "from_samples", "CRITEO_STATS", "NEVER", "MAX_SCALE", "MAX_POISSON_MEAN", "MAX_HISTOGRAM",
    "DELAY_LAWS", "delay_law", "floor_log_pmf",
]

_F = jnp.float32

#: The largest scale of a continuous law (exponential, half-normal, Weibull, Pareto): draws beyond
#: NEVER mean "never", so a larger scale adds nothing but "never".
MAX_SCALE = float(NEVER)
#: The largest Poisson mean: the float32 CDF table (regularised incomplete gamma) is accurate to
#: 3e-4 up to it, and its length (``lam + 12 sqrt(lam) + 16``) stays small.
MAX_POISSON_MEAN = 1000.0
_POISSON_TABLE_MAX = int(math.ceil(MAX_POISSON_MEAN + 12 * math.sqrt(MAX_POISSON_MEAN) + 16))
#: The most entries of a histogram law (a pmf table on {0..L-1}): 2**24, the longest horizon.
MAX_HISTOGRAM = 2**24
#: log-normal parameters: ``|mu| <= 100`` and ``sigma <= 15`` keep ``exp(2 mu + 2 sigma^2)`` (the
#: variance's tail term) finite in float64; ``e^100`` is far beyond NEVER already.
MAX_LOG_NORMAL_MU = 100.0
MAX_LOG_NORMAL_SIGMA = 15.0
#: The smallest Weibull shape: ``40^(1/shape)`` (the moment sums' range) stays finite in float64.
MIN_WEIBULL_SHAPE = 0.01


def _floor_int(x):
    """floor(x) as int32, saturating at NEVER (so huge heavy-tail draws mean 'never')."""
    x = jnp.floor(jnp.asarray(x, _F))
    return jnp.where(jnp.isfinite(x) & (x < NEVER), x, NEVER).astype(jnp.int32).clip(0, NEVER)


def _moments_by_sum(sf_next, n_terms, tail_mean=0.0, tail_m2=0.0):
    """Mean and variance of an integer law from its survival: ``P(D > n) = sf_next(n)``.

    ``E[D] = sum_{n>=0} P(D > n)`` and ``E[D^2] = sum_{n>=0} (2n + 1) P(D > n)``, summed over
    ``n < n_terms`` (in float64 on the host when the parameters are concrete) plus a tail term.
    """
    n = np.arange(n_terms, dtype=np.float64)
    s = np.asarray(sf_next(n), dtype=np.float64)
    mean = s.sum() + tail_mean
    m2 = ((2 * n + 1) * s).sum() + tail_m2
    return float(mean), float(max(m2 - mean**2, 0.0))


#: The floor of a probability whose log is taken (``log(max(p, _TINY))``).
_TINY = 1e-30


def _safe_pos(x):
    """``x`` with zeros replaced by 1 (the double-where rule of conventions §9: select after)."""
    return jnp.where(x > 0, x, 1.0)


def floor_log_pmf(log_sf_x, d):
    """``log P(floor X = d)`` for integers ``d >= 0`` from the log-survival ``log_sf_x(x) = log P(X > x)``
    of ``X``: ``log S(d) + log(-expm1(log S(d+1) - log S(d)))`` (never a difference of survivals in
    linear space: conventions §9).

    Args:
        log_sf_x: ``x -> log P(X > x)``, elementwise (a law's ``log_sf_x``).
        d: integers ``>= 0`` (any shape).

    Returns:
        ``log P(floor X = d)``, float32 of ``d``'s shape.

    Examples:
        >>> import jax.numpy as jnp
        >>> from jaxbandits import delays
        >>> lp = delays.floor_log_pmf(lambda x: -x / 2.0, jnp.arange(3))  # X exponential, mean 2
        >>> [round(float(v), 4) for v in jnp.exp(lp)]
        [0.3935, 0.2387, 0.1448]
    """
    d = jnp.asarray(d, _F)
    s0 = log_sf_x(d)
    s1 = log_sf_x(d + 1.0)
    return s0 + jnp.log(jnp.maximum(-jnp.expm1(s1 - s0), _TINY))


class _Floored:
    """``D = floor(X)`` of a continuous ``X`` whose law defines ``log_sf_x`` and ``log_pdf_x``."""

    def log_sf(self, n):
        """``log P(D > n) = log P(X > n + 1)`` for integer ages ``n >= 0``."""
        return self.log_sf_x(jnp.asarray(n, _F) + 1.0)

    def log_pmf(self, n):
        """``log P(D = n)`` for integers ``n >= 0`` (:func:`floor_log_pmf`)."""
        return floor_log_pmf(self.log_sf_x, n)


class DelayLaw:
    """Common methods; subclasses define ``ppf``, ``cdf``, ``mean``, ``variance``.

    A closed-form law (``closed_form = True``) also defines ``ppf_float(u)``, ``floor(F^-1(u))`` as
    float32 before it is made an integer (``inf`` or beyond ``NEVER`` for a huge draw), from which
    ``ppf`` is derived: the fused kernels draw its delays with that same function, so a delay law's
    inverse CDF is written once (docs/fused.md)."""

    support_max: int = NEVER
    #: whether ``ppf_float`` is a formula of the law's scalars and ``u`` alone (no tables): what the
    #: fused kernels can draw in-kernel (:func:`jaxbandits.engine.fused.path.kernel_law`)
    closed_form = False

    def ppf_float(self, u):
        """``floor(F^-1(u))`` as float32; by default ``ppf`` made a float."""
        return self.ppf(u).astype(_F)

    def draw(self, u, t):
        del t
        return self.ppf(u)

    def sample(self, key, shape=()):
        return self.ppf(open_uniform(key, shape))

    def pmf(self, n):
        n = jnp.asarray(n)
        return jnp.where(n >= 0, self.cdf(n) - self.cdf(n - 1), 0.0)

    def cdf_table(self, length):
        """``[P(D <= 0), ..., P(D <= length-1)]``: the table tau_d of the papers."""
        return self.cdf(jnp.arange(length))


@_pytree
class Fixed(DelayLaw):
    d: jax.Array
    support_max: int = _static(NEVER)
    closed_form = True

    def ppf(self, u):
        return jnp.broadcast_to(jnp.asarray(self.d, jnp.int32), jnp.shape(u))

    def cdf(self, n):
        return (jnp.asarray(n) >= self.d).astype(_F)

    @property
    def mean(self):
        return float(self.d)

    @property
    def variance(self):
        return 0.0


@constructor
def fixed(d: int) -> Fixed:
    """Every delay equals ``d`` (``d = 0``: no delay).

    Args:
        d: the delay, an integer in ``[0, NEVER]`` (``NEVER``: the feedback never arrives).

    Returns:
        The law (``support_max = d``).

    Raises:
        ValueError: ``d`` out of range.

    Examples:
        >>> from jaxbandits import delays
        >>> law = delays.fixed(3)
        >>> float(law.mean), float(law.cdf(2)), float(law.cdf(3))
        (3.0, 0.0, 1.0)
    """
    d = V.integer("d", d, lo=0, hi=NEVER)
    return Fixed(jnp.asarray(d, jnp.int32), support_max=d)


@_pytree
class Uniform(DelayLaw):
    lo: jax.Array
    hi: jax.Array
    support_max: int = _static(NEVER)
    closed_form = True

    def ppf(self, u):
        n = self.hi - self.lo + 1
        return jnp.minimum(self.lo + jnp.floor(u * n).astype(jnp.int32), self.hi)

    def cdf(self, n):
        n = jnp.asarray(n)
        return jnp.clip((n - self.lo + 1) / (self.hi - self.lo + 1), 0.0, 1.0).astype(_F)

    @property
    def mean(self):
        return (float(self.lo) + float(self.hi)) / 2

    @property
    def variance(self):
        w = float(self.hi) - float(self.lo) + 1
        return (w * w - 1) / 12


@constructor
def uniform(lo: int, hi: int) -> Uniform:
    """Uniform on the integers ``{lo, ..., hi}`` (inclusive).

    Args:
        lo: the smallest delay, an integer in ``[0, NEVER]``.
        hi: the largest delay, an integer in ``[lo, NEVER]``.

    Returns:
        The law.

    Raises:
        ValueError: ``lo`` or ``hi`` out of range.

    Examples:
        >>> from jaxbandits import delays
        >>> law = delays.uniform(2, 6)
        >>> float(law.mean), round(float(law.cdf(3)), 4)
        (4.0, 0.4)
    """
    lo = V.integer("lo", lo, lo=0, hi=NEVER)
    hi = V.integer("hi", hi, lo=lo, hi=NEVER)
    return Uniform(jnp.asarray(lo, jnp.int32), jnp.asarray(hi, jnp.int32), support_max=hi)


@_pytree
class Geometric(DelayLaw):
    """Zero-based geometric: ``P(D > n) = rho^(n+1)``, ``tau_d = 1 - rho^(d+1)``.

    Stored as ``log(rho)`` computed in float64: for ``rho`` near 1 (``0.998`` in Vernade et al.)
    a float32 ``rho`` would carry a 1e-5 relative error into ``log(rho)``."""

    log_rho: jax.Array

    @property
    def rho(self):
        return jnp.exp(self.log_rho)

    closed_form = True

    def ppf_float(self, u):
        # smallest n >= 0 with 1 - rho^(n+1) >= u (rho = 0: log_rho = -inf, every delay 0)
        x = jnp.log1p(-u) / self.log_rho
        return jnp.maximum(jnp.ceil(x) - 1.0, 0.0)

    def ppf(self, u):
        return _floor_int(self.ppf_float(u))

    def cdf(self, n):
        n = jnp.asarray(n)
        return jnp.where(n >= 0, -jnp.expm1((n + 1) * self.log_rho), 0.0).astype(_F)

    @property
    def mean(self):
        r = math.exp(float(self.log_rho))
        return r / (1 - r)

    @property
    def variance(self):
        r = math.exp(float(self.log_rho))
        return r / (1 - r) ** 2


@constructor
def geometric(rho=None, *, mean=None) -> Geometric:
    """Geometric on ``{0, 1, ...}`` with survival ratio ``rho`` (success probability ``1 - rho``).

    ``geometric(mean=mu)`` sets ``rho = mu / (1 + mu)`` so the mean is exactly ``mu``. Vernade
    2017's "parameter 1/mu" is ``geometric(1 - 1/mu)`` (mean ``mu - 1``).

    Args:
        rho: the survival ratio ``P(D > d + 1 | D > d)``, in ``[0, 1)``.
        mean: the mean, in ``[0, MAX_SCALE]`` (give ``rho`` or ``mean``, not both).

    Returns:
        The law; ``P(D <= d) = 1 - rho^(d + 1)``.

    Raises:
        ValueError: neither or both of ``rho`` and ``mean``, or one out of range.

    Examples:
        >>> from jaxbandits import delays
        >>> law = delays.geometric(0.5)
        >>> round(float(law.mean), 4), float(law.cdf(3))
        (1.0, 0.9375)
        >>> round(float(delays.geometric(mean=5.0).mean), 4)
        5.0
    """
    if (rho is None) == (mean is None):
        raise ValueError("geometric: give exactly one of rho (in [0, 1)) or mean (>= 0)")
    if mean is not None:
        V.real("mean", mean, lo=0.0, hi=MAX_SCALE)
        rho = mean / (1.0 + mean)
    V.real("rho", rho, lo=0.0, hi=1.0, hi_open=True)
    if V.is_concrete(rho):
        return Geometric(jnp.asarray(np.log(np.float64(rho)) if rho > 0 else -np.inf, _F))
    return Geometric(jnp.log(rho))


@_pytree
class Poisson(DelayLaw):
    lam: jax.Array
    table_len: int = _static(64)

    def _table(self):
        return self.cdf(jnp.arange(self.table_len))

    def ppf(self, u):
        tab = self._table()
        return jnp.sum(tab[None, :] < jnp.reshape(u, (-1, 1)), axis=-1).reshape(jnp.shape(u)).astype(jnp.int32)

    def cdf(self, n):
        n = jnp.asarray(n)
        return jnp.where(n >= 0, gammaincc(jnp.maximum(n, 0) + 1.0, self.lam), 0.0).astype(_F)

    @property
    def mean(self):
        return float(self.lam)

    @property
    def variance(self):
        return float(self.lam)


@constructor
def poisson(lam: float) -> Poisson:
    """Poisson(``lam``) delays.

    Sampled by inverse CDF over a table up to ``lam + 12 sqrt(lam) + 16`` (the mass beyond it is
    below 1e-12 and is mapped to the table's end); the float32 CDF loses accuracy for larger means
    (use another law there).

    Args:
        lam: the mean, in ``(0, MAX_POISSON_MEAN]`` (1000).

    Returns:
        The law.

    Raises:
        ValueError: ``lam`` out of range.

    Examples:
        >>> from jaxbandits import delays
        >>> law = delays.poisson(4.0)
        >>> round(float(law.mean), 4), round(float(law.cdf(3)), 4)
        (4.0, 0.4335)
    """
    V.real("lam", lam, lo=0.0, lo_open=True, hi=MAX_POISSON_MEAN)
    # a traced mean (a grid) gets the table of the largest accepted mean (its points were checked)
    n = int(math.ceil(float(lam) + 12 * math.sqrt(float(lam)) + 16)) if V.is_concrete(lam) else _POISSON_TABLE_MAX
    return Poisson(jnp.asarray(lam, _F), table_len=n)


@_pytree
class Exponential(_Floored, DelayLaw):
    """``floor(X)``, ``X ~ Exp(mean = scale)``: geometric with ``rho = exp(-1/scale)``."""

    scale: jax.Array

    def log_sf_x(self, x):
        """``log P(X > x) = -x / scale``."""
        x = jnp.asarray(x, _F)
        return -x / self.scale

    def log_pdf_x(self, x):
        """``log f(x) = -log scale - x / scale``."""
        x = jnp.asarray(x, _F)
        return -jnp.log(self.scale) - x / self.scale

    closed_form = True

    def ppf_float(self, u):
        return jnp.floor(-self.scale * jnp.log1p(-u))

    def ppf(self, u):
        return _floor_int(self.ppf_float(u))

    def cdf(self, n):
        n = jnp.asarray(n)
        return jnp.where(n >= 0, -jnp.expm1(-(n + 1.0) / self.scale), 0.0).astype(_F)

    @property
    def mean(self):
        q = math.exp(-1.0 / float(self.scale))
        return q / (1 - q)

    @property
    def variance(self):
        q = math.exp(-1.0 / float(self.scale))
        return q / (1 - q) ** 2


@constructor
def exponential(scale: float) -> Exponential:
    """An exponential delay with mean ``scale``, discretised by floor (mean ``~ scale - 1/2``).

    Args:
        scale: the continuous law's mean, in ``(0, MAX_SCALE]`` (``2**30``).

    Returns:
        The law.

    Raises:
        ValueError: ``scale`` out of range.

    Examples:
        >>> from jaxbandits import delays
        >>> law = delays.exponential(10.0)
        >>> round(float(law.mean), 2)
        9.51
    """
    V.positive("scale", scale, hi=MAX_SCALE)
    return Exponential(jnp.asarray(scale, _F))


class _SummedMoments:
    """Mean and variance of a floored continuous law, summed numerically by ``_m()``."""

    @property
    def mean(self):
        return self._m()[0]

    @property
    def variance(self):
        return self._m()[1]


def _floor_moments(sf_x, q_hi, tail=None):
    """Moments of floor(X) from the survival of X: P(floor X > n) = P(X >= n+1) = sf_x(n+1)."""
    n_terms = int(min(max(q_hi, 16), 5_000_000))
    tm, t2 = tail(n_terms) if tail is not None else (0.0, 0.0)
    return _moments_by_sum(lambda n: sf_x(n + 1.0), n_terms, tm, t2)


@_pytree
class HalfNormal(_SummedMoments, DelayLaw):
    sigma: jax.Array

    def ppf(self, u):
        return _floor_int(self.sigma * math.sqrt(2.0) * erfinv(u))

    def cdf(self, n):
        n = jnp.asarray(n)
        return jnp.where(n >= 0, erf((n + 1.0) / (self.sigma * math.sqrt(2.0))), 0.0).astype(_F)

    def _m(self):
        s = float(self.sigma)
        return _floor_moments(lambda x: _erfc_np(x / (s * math.sqrt(2))), 10 * s + 10)


@constructor
def half_normal(sigma: float) -> HalfNormal:
    """``floor(|N(0, sigma^2)|)``.

    Args:
        sigma: the normal's scale, in ``(0, MAX_SCALE]``.

    Returns:
        The law.

    Raises:
        ValueError: ``sigma`` out of range.

    Examples:
        >>> from jaxbandits import delays
        >>> round(float(delays.half_normal(3.0).mean), 4)
        1.9159
    """
    V.positive("sigma", sigma, hi=MAX_SCALE)
    return HalfNormal(jnp.asarray(sigma, _F))


@_pytree
class Weibull(_Floored, _SummedMoments, DelayLaw):
    shape: jax.Array
    scale: jax.Array

    def log_sf_x(self, x):
        """``log P(X > x) = -(x / scale)^shape`` (0 for ``x <= 0``)."""
        x = jnp.asarray(x, _F)
        xs = _safe_pos(x)
        return jnp.where(x > 0, -((xs / self.scale) ** self.shape), 0.0)

    def log_pdf_x(self, x):
        """``log f(x) = log k - log scale + (k - 1) log(x / scale) - (x / scale)^k`` (at ``x <= 0``:
        ``inf``, ``-log scale`` or ``-inf`` as ``k <`` , ``=`` or ``> 1``)."""
        x = jnp.asarray(x, _F)
        k, scale = self.shape, self.scale
        xs = _safe_pos(x)
        z = xs / scale
        v = jnp.log(k) - jnp.log(scale) + (k - 1.0) * jnp.log(z) - z**k
        return jnp.where(x > 0, v, jnp.where(k < 1, jnp.inf, jnp.where(k == 1, -jnp.log(scale), -jnp.inf)))

    closed_form = True

    def ppf_float(self, u):
        return jnp.floor(self.scale * (-jnp.log1p(-u)) ** (1.0 / self.shape))

    def ppf(self, u):
        return _floor_int(self.ppf_float(u))

    def cdf(self, n):
        n = jnp.asarray(n)
        return jnp.where(n >= 0, -jnp.expm1(-(((n + 1.0) / self.scale) ** self.shape)), 0.0).astype(_F)

    def _m(self):
        k, lam = float(self.shape), float(self.scale)
        hi = lam * (40.0 ** (1.0 / k)) + 10  # S(hi) = e^-40
        with np.errstate(over="ignore"):  # a large shape: (x / lam)^k = inf, exp(-inf) = 0, as it should
            return _floor_moments(lambda x: np.exp(-((x / lam) ** k)), hi)


@constructor
def weibull(shape: float, scale: float) -> Weibull:
    """``floor(X)``, ``X ~ Weibull(shape k, scale lambda)``: ``P(X > x) = exp(-(x/lambda)^k)``.

    Args:
        shape: ``k >= MIN_WEIBULL_SHAPE`` (0.01).
        scale: ``lambda``, in ``(0, MAX_SCALE]``.

    Returns:
        The law.

    Raises:
        ValueError: ``shape`` or ``scale`` out of range.

    Examples:
        >>> from jaxbandits import delays
        >>> round(float(delays.weibull(1.5, 10.0).mean), 4)
        8.5283
    """
    V.real("shape", shape, lo=MIN_WEIBULL_SHAPE)
    V.positive("scale", scale, hi=MAX_SCALE)
    return Weibull(jnp.asarray(shape, _F), jnp.asarray(scale, _F))


def _log_normal_tail(c, mu, s):
    """The moment sums' tail beyond ``c`` for ``X = exp(mu + s Z)``, as integrals (midpoint rule):
    ``int_c^inf P(X > x) dx`` and ``int_c^inf (2x - 1) P(X > x) dx``, in closed form from the partial
    moments ``E[X^j 1{X > c}] = exp(j mu + j^2 s^2 / 2) Phi((mu + j s^2 - log c) / s)``. Without it
    the sums, capped at 5e6 terms, dropped 0.16% of :func:`criteo_like`'s variance."""
    z = (math.log(c) - mu) / s
    sf = lambda x: 0.5 * math.erfc(x / math.sqrt(2))
    i1 = math.exp(mu + s * s / 2) * sf(z - s) - c * sf(z)
    i2 = math.exp(2 * mu + 2 * s * s) * sf(z - 2 * s) - c * c * sf(z)
    return i1, i2 - i1


@_pytree
class LogNormal(_Floored, _SummedMoments, DelayLaw):
    mu: jax.Array
    sigma: jax.Array

    def log_sf_x(self, x):
        """``log P(X > x) = log Phi(-(log x - mu) / sigma)`` (0 for ``x <= 0``)."""
        x = jnp.asarray(x, _F)
        xs = _safe_pos(x)
        u = (jnp.log(xs) - self.mu) / self.sigma
        return jnp.where(x > 0, log_ndtr(-u), 0.0)

    def log_pdf_x(self, x):
        """``log f(x) = -((log x - mu) / sigma)^2 / 2 - log sigma - log(2 pi) / 2 - log x`` (``-inf``
        for ``x <= 0``)."""
        x = jnp.asarray(x, _F)
        xs = _safe_pos(x)
        s = self.sigma
        v = (-0.5 * ((jnp.log(xs) - self.mu) / s) ** 2 - jnp.log(s)
             - 0.5 * math.log(2 * math.pi) - jnp.log(xs))
        return jnp.where(x > 0, v, -jnp.inf)

    closed_form = True

    def ppf_float(self, u):
        return jnp.floor(jnp.exp(self.mu + self.sigma * ndtri(u)))

    def ppf(self, u):
        return _floor_int(self.ppf_float(u))

    def cdf(self, n):
        n = jnp.asarray(n)
        z = (jnp.log(jnp.maximum(n + 1.0, 1e-30)) - self.mu) / self.sigma
        return jnp.where(n >= 0, ndtr(z), 0.0).astype(_F)

    def _m(self):
        mu, s = float(self.mu), float(self.sigma)
        hi = math.exp(mu + 9.0 * s) + 10  # P(Z > 9) ~ 1e-19
        sf = lambda x: 0.5 * _erfc_np((np.log(x) - mu) / (s * math.sqrt(2)))
        return _floor_moments(sf, hi, lambda n: _log_normal_tail(n + 0.5, mu, s))


@constructor
def log_normal(mu: float, sigma: float) -> LogNormal:
    """``floor(exp(mu + sigma Z))``, ``Z ~ N(0, 1)``.

    Args:
        mu: the log-scale location, ``|mu| <= 100``.
        sigma: the log-scale spread, in ``(0, 15]``.

    Returns:
        The law.

    Raises:
        ValueError: ``mu`` or ``sigma`` out of range.

    Examples:
        >>> from jaxbandits import delays
        >>> round(float(delays.log_normal(2.0, 0.5).mean), 4)
        7.8729
    """
    V.real("mu", mu, lo=-MAX_LOG_NORMAL_MU, hi=MAX_LOG_NORMAL_MU)
    V.positive("sigma", sigma, hi=MAX_LOG_NORMAL_SIGMA)
    return LogNormal(jnp.asarray(mu, _F), jnp.asarray(sigma, _F))


@_pytree
class Pareto(_SummedMoments, DelayLaw):
    """Heavy tail: ``P(D >= k) = (1 + k/scale)^-alpha`` (Lomax, floored); with ``scale = 1`` this is
    Thune et al.'s ``d = floor(U^(-1/alpha)) - 1``."""

    alpha: jax.Array
    scale: jax.Array

    closed_form = True

    def ppf_float(self, u):
        return jnp.floor(self.scale * jnp.expm1(-jnp.log1p(-u) / self.alpha))

    def ppf(self, u):
        return _floor_int(self.ppf_float(u))

    def cdf(self, n):
        n = jnp.asarray(n)
        return jnp.where(n >= 0, 1.0 - (1.0 + (n + 1.0) / self.scale) ** (-self.alpha), 0.0).astype(_F)

    def _m(self):
        a, s = float(self.alpha), float(self.scale)
        if a <= 1:
            return math.inf, math.inf
        N = 200_000

        def tail(n):  # integral from n - 1/2 of the summands, y = 1 + (x + 1)/s
            y0 = 1.0 + (n + 0.5) / s
            tm = s / (a - 1) * y0 ** (1 - a)
            t2 = math.inf if a <= 2 else s * (2 * s * y0 ** (2 - a) / (a - 2) - (2 * s + 1) * y0 ** (1 - a) / (a - 1))
            return tm, t2

        return _floor_moments(lambda x: (1.0 + x / s) ** (-a), N, tail)


@constructor
def pareto(alpha: float, scale: float = 1.0) -> Pareto:
    """Pareto (Lomax) heavy-tailed delays, floored.

    The mean is finite iff ``alpha > 1``, the variance iff ``alpha > 2``.

    Args:
        alpha: the tail index, ``> 0``.
        scale: the scale, in ``(0, MAX_SCALE]``.

    Returns:
        The law.

    Raises:
        ValueError: ``alpha`` or ``scale`` out of range.

    Examples:
        >>> from jaxbandits import delays
        >>> law = delays.pareto(3.0, 2.0)
        >>> round(float(law.mean), 4), round(float(law.cdf(3)), 3)
        (0.6165, 0.963)
    """
    V.positive("alpha", alpha)
    V.positive("scale", scale, hi=MAX_SCALE)
    return Pareto(jnp.asarray(alpha, _F), jnp.asarray(scale, _F))


@_pytree
class Histogram(DelayLaw):
    """A finite pmf table ``pmf[0..L-1]``."""

    probs: jax.Array
    support_max: int = _static(NEVER)

    def ppf(self, u):
        c = jnp.cumsum(self.probs)
        # binary search (unrolled, log2 L steps): a long empirical law stays cheap per draw
        k = jnp.searchsorted(c, u, side="left", method="scan_unrolled")
        return jnp.minimum(k, self.probs.shape[0] - 1).astype(jnp.int32)

    def cdf(self, n):
        c = jnp.concatenate([jnp.zeros(1, _F), jnp.cumsum(self.probs)])
        n = jnp.asarray(n)
        return jnp.where(n < 0, 0.0, c[jnp.clip(n + 1, 0, self.probs.shape[0])]).astype(_F)

    @property
    def mean(self):
        p = np.asarray(self.probs, np.float64)
        return float((np.arange(p.size) * p).sum())

    @property
    def variance(self):
        p = np.asarray(self.probs, np.float64)
        k = np.arange(p.size)
        return float((k * k * p).sum() - ((k * p).sum()) ** 2)


@constructor
def histogram(pmf) -> Histogram:
    """A delay law given by its pmf on ``{0, ..., len(pmf)-1}`` (normalised here).

    Args:
        pmf: non-negative weights, a 1-d array of at most ``MAX_HISTOGRAM = 2**24`` entries with
            positive total mass.

    Returns:
        The law (``support_max``: the last positive entry).

    Raises:
        ValueError: a negative, empty, zero-mass or too long ``pmf``.

    Examples:
        >>> from jaxbandits import delays
        >>> import jax.numpy as jnp
        >>> law = delays.histogram([1, 1, 2])
        >>> law.pmf(jnp.arange(3)).tolist(), float(law.mean)
        ([0.25, 0.25, 0.5], 1.25)
    """
    if np.ndim(pmf) == 1 and np.shape(pmf)[0] > MAX_HISTOGRAM:
        raise ValueError(f"pmf must have at most MAX_HISTOGRAM = 2**24 = {MAX_HISTOGRAM} entries, got {np.shape(pmf)[0]}")
    V.real("pmf", pmf, lo=0.0)
    p = np.asarray(pmf, np.float64)
    if p.ndim != 1 or p.size == 0:
        raise ValueError(f"pmf must be a non-empty 1-d array, got shape {p.shape}")
    if p.sum() <= 0:
        raise ValueError("pmf must have positive total mass")
    p = p / p.sum()
    return Histogram(jnp.asarray(p, _F), support_max=int(np.nonzero(p)[0].max()))


@_pytree
class LogNormalMixture(_SummedMoments, DelayLaw):
    """``0`` with probability ``p0``, else ``floor(exp(mu_k + sigma_k Z))`` with component ``k`` of
    weight ``w_k``. Sampled from one uniform: ``v < p0`` gives 0, else the rest of ``v`` picks the
    component and, rescaled, is the component's quantile."""

    p0: jax.Array
    weights: jax.Array  # [C]
    mus: jax.Array  # [C]
    sigmas: jax.Array  # [C]

    def ppf(self, u):
        u = jnp.asarray(u, _F)
        v = jnp.clip((u - self.p0) / (1.0 - self.p0), 1e-7, 1 - 1e-7)
        cw = jnp.cumsum(self.weights)
        k = jnp.minimum(jnp.sum(cw[None, :] < jnp.reshape(v, (-1, 1)), axis=-1), cw.shape[0] - 1).reshape(jnp.shape(v))
        lo = jnp.where(k > 0, cw[jnp.maximum(k - 1, 0)], 0.0)
        w = jnp.clip((v - lo) / self.weights[k], 1e-7, 1 - 1e-7)
        d = _floor_int(jnp.exp(self.mus[k] + self.sigmas[k] * ndtri(w)))
        return jnp.where(u < self.p0, 0, d)

    def cdf(self, n):
        n = jnp.asarray(n)
        z = (jnp.log(jnp.maximum(n + 1.0, 1e-30))[..., None] - self.mus) / self.sigmas
        c = self.p0 + (1 - self.p0) * jnp.sum(self.weights * ndtr(z), axis=-1)
        return jnp.where(n >= 0, c, 0.0).astype(_F)

    def _m(self):
        w, mu, s = (np.asarray(a, np.float64) for a in (self.weights, self.mus, self.sigmas))
        hi = float(np.exp((mu + 9 * s).max())) + 10
        sf1 = lambda x: np.sum(w[:, None] * 0.5 * _erfc_np((np.log(x)[None, :] - mu[:, None])
                                                           / (s[:, None] * math.sqrt(2))), axis=0)
        q = 1 - float(self.p0)

        def tail(n):
            parts = [_log_normal_tail(n + 0.5, m_, s_) for m_, s_ in zip(mu, s)]
            return tuple(q * sum(wk * p[i] for wk, p in zip(w, parts)) for i in (0, 1))

        mean, var = _floor_moments(lambda x: q * sf1(np.atleast_1d(x)), hi, tail)
        return mean, var


@constructor
def log_normal_mixture(p0: float, weights, mus, sigmas) -> LogNormalMixture:
    """A point mass ``p0`` at 0 plus a mixture of floored log-normals.

    A heavy-tailed conversion-delay law; :func:`criteo_like` is one fitted to published statistics.

    Args:
        p0: the mass at 0, in ``[0, 1]``.
        weights: the components' weights, ``>= 0`` with positive total.
        mus: the components' log-scale locations, ``|mu| <= 100``.
        sigmas: their log-scale spreads, in ``(0, 15]``.

    Returns:
        The law.

    Raises:
        ValueError: a parameter out of range, or arrays of different lengths.

    Examples:
        >>> from jaxbandits import delays
        >>> law = delays.log_normal_mixture(0.2, [1.0], [2.0], [0.5])
        >>> round(float(law.cdf(0)), 4) >= 0.2
        True
    """
    V.prob("p0", p0)
    V.real("weights", weights, lo=0.0)
    V.real("mus", mus, lo=-MAX_LOG_NORMAL_MU, hi=MAX_LOG_NORMAL_MU)
    V.positive("sigmas", sigmas, hi=MAX_LOG_NORMAL_SIGMA)
    w = np.asarray(weights, np.float64)
    if w.ndim != 1 or w.sum() <= 0 or np.shape(mus) != w.shape or np.shape(sigmas) != w.shape:
        raise ValueError("weights, mus and sigmas must be 1-d arrays of one length, weights with positive mass")
    return LogNormalMixture(jnp.asarray(p0, _F), jnp.asarray(w / w.sum(), _F), jnp.asarray(mus, _F),
                            jnp.asarray(sigmas, _F))


# Statistics of the rescaled Criteo attribution delays of Vernade et al. 2020 (their Fig. 2, delays
# times 0.01), measured on the delay distribution that accompanies the authors' code:
CRITEO_STATS = {"mean": 5720.0, "median": 2913.0, "p0": 0.073, "tau_500": 0.31, "tau_2000": 0.445,
                "tau_5000": 0.60, "tau_10000": 0.76}
# Parameters fitted by experiments/fit_criteo_like.py (least squares on the statistics above).
CRITEO_FIT = {"p0": 0.073, "weights": [0.4521, 0.5479], "mus": [5.7037, 8.9672], "sigmas": [1.725, 0.7421]}


@constructor
def criteo_like() -> LogNormalMixture:
    """A heavy-tailed stand-in for the rescaled Criteo conversion delays of Vernade et al. (2020).

    The Criteo file is gated and under a non-commercial licence, so the project ships none of it;
    this mixture is fitted to its published statistics (docs/reproductions/vernade2020.md shows how
    closely). Users who own the data build the empirical law with :func:`from_samples`.

    Returns:
        The :class:`LogNormalMixture` law.

    Examples:
        >>> from jaxbandits import delays
        >>> round(float(delays.criteo_like().mean))
        5801
    """
    return log_normal_mixture(**CRITEO_FIT)


@constructor
def from_samples(samples, max_delay: Optional[int] = None) -> Histogram:
    """The empirical delay law of integer ``samples`` (e.g. logged conversion delays in rounds).

    A histogram on ``{0..max(samples)}`` (or ``max_delay``, larger samples clipped to it) of at most
    ``MAX_HISTOGRAM = 2**24`` entries (larger samples need ``max_delay``).

    Args:
        samples: int[N], the delays, ``>= 0``.
        max_delay: the histogram's last delay, or None for the largest sample.

    Returns:
        The :class:`Histogram` law.

    Raises:
        ValueError: empty, negative or too large samples.

    Examples:
        >>> from jaxbandits import delays
        >>> import jax.numpy as jnp
        >>> law = delays.from_samples([0, 2, 2, 5])
        >>> law.pmf(jnp.arange(6)).tolist(), law.support_max
        ([0.25, 0.0, 0.5, 0.0, 0.0, 0.25], 5)
    """
    V.int_array("samples", samples, lo=0, ndim=1)
    s = np.asarray(samples, np.float64)
    if s.size == 0:
        raise ValueError("samples must be non-empty")
    if max_delay is None:
        if s.max() >= MAX_HISTOGRAM:
            raise ValueError(f"samples must be < MAX_HISTOGRAM = 2**24 = {MAX_HISTOGRAM} (the histogram's length), "
                             f"got max {s.max():.0f}: pass max_delay (<= {MAX_HISTOGRAM - 1}) to clip larger delays")
        top = int(s.max())
    else:
        top = V.integer("max_delay", max_delay, lo=0, hi=MAX_HISTOGRAM - 1)
    s = np.minimum(s, top).astype(np.int64)
    return histogram(np.bincount(s, minlength=top + 1).astype(np.float64))


@_pytree
class TwoPoint(DelayLaw):
    """``d`` with probability ``p``, else 0 (``d = NEVER``: the feedback never arrives)."""

    p: jax.Array
    d: jax.Array
    support_max: int = _static(NEVER)

    def ppf(self, u):
        return jnp.where(u > 1.0 - self.p, self.d, 0).astype(jnp.int32)

    def cdf(self, n):
        n = jnp.asarray(n)
        return jnp.where(n < 0, 0.0, jnp.where(n >= self.d, 1.0, 1.0 - self.p)).astype(_F)

    @property
    def mean(self):
        return float(self.p) * float(self.d)

    @property
    def variance(self):
        p, d = float(self.p), float(self.d)
        return d * d * p * (1 - p)


@constructor
def two_point(p: float, d: int) -> TwoPoint:
    """Delay ``d`` with probability ``p``, else 0.

    Pike-Burke et al.'s ``twopoint`` and Thune et al.'s "contaminated" model (``d = NEVER``: a few
    rounds whose feedback never arrives).

    Args:
        p: the probability of the delay ``d``, in ``[0, 1]``.
        d: the delay, an integer in ``[0, NEVER]``.

    Returns:
        The law.

    Raises:
        ValueError: ``p`` or ``d`` out of range.

    Examples:
        >>> from jaxbandits import delays
        >>> law = delays.two_point(0.25, 8)
        >>> float(law.mean), float(law.cdf(3))
        (2.0, 0.75)
    """
    V.prob("p", p)
    d = V.integer("d", d, lo=0, hi=NEVER)
    return TwoPoint(jnp.asarray(p, _F), jnp.asarray(d, jnp.int32), support_max=d if float(p) > 0 else 0)


@_pytree
class Sequence(DelayLaw):
    """An explicit per-round delay sequence (oblivious adversary): ``d_t = delays[t]``."""

    delays: jax.Array
    support_max: int = _static(NEVER)

    def draw(self, u, t):
        del u
        return self.delays[jnp.clip(t, 0, self.delays.shape[0] - 1)]

    def ppf(self, u):
        s = jnp.sort(self.delays)
        i = jnp.clip(jnp.ceil(u * s.shape[0]).astype(jnp.int32) - 1, 0, s.shape[0] - 1)
        return s[i]

    def cdf(self, n):
        n = jnp.asarray(n)
        return jnp.mean(self.delays[None, :] <= jnp.reshape(n, (-1, 1)), axis=-1).reshape(n.shape).astype(_F)

    @property
    def mean(self):
        return float(np.mean(np.asarray(self.delays, np.float64)))

    @property
    def variance(self):
        return float(np.var(np.asarray(self.delays, np.float64)))


@constructor
def sequence(delays) -> Sequence:
    """Delays given round by round (an oblivious adversary's delay sequence).

    Args:
        delays: int[T], the delay of each round, ``>= 0`` (``NEVER``, or anything ``>= T - t``,
            means never).

    Returns:
        The law (``draw(u, t)`` returns ``delays[t]``); a simulation's horizon is at most ``T``.

    Raises:
        ValueError: an empty or negative sequence.

    Examples:
        >>> from jaxbandits import delays
        >>> int(delays.sequence([0, 3, 1]).draw(0.5, 1))
        3
    """
    V.int_array("delays", delays, lo=0, ndim=1)
    a = np.asarray(delays)
    # saturate at NEVER before any cast: a huge value (1e30, 2**70) must not wrap around in int64
    d = np.minimum(a if a.dtype.kind in "iu" else np.asarray(a, np.float64), NEVER).astype(np.int64)
    if d.size == 0:
        raise ValueError("delays must be non-empty")
    return Sequence(jnp.asarray(d, jnp.int32), support_max=int(d.max()))


@_pytree
class Shifted(DelayLaw):
    base: DelayLaw
    k: int = _static(1)

    def draw(self, u, t):
        return jnp.minimum(self.base.draw(u, t) + self.k, NEVER)

    def ppf(self, u):
        return jnp.minimum(self.base.ppf(u) + self.k, NEVER)

    def cdf(self, n):
        return self.base.cdf(jnp.asarray(n) - self.k)

    @property
    def support_max(self):
        return min(self.base.support_max + self.k, NEVER)

    @property
    def mean(self):
        return self.base.mean + self.k

    @property
    def variance(self):
        return self.base.variance


@constructor
def shift(law: DelayLaw, k: int = 1) -> Shifted:
    """``D + k``: a law on ``{k, k+1, ...}`` (``shift(geometric(...), 1)`` lives on ``{1, 2, ...}``).

    Saturated at ``NEVER``, so ``D + k`` never overflows int32.

    Args:
        law: the law shifted.
        k: the shift, an integer in ``[0, NEVER - 1]``.

    Returns:
        The law.

    Raises:
        TypeError: ``law`` is not a delay law.
        ValueError: ``k`` out of range.

    Examples:
        >>> from jaxbandits import delays
        >>> law = delays.shift(delays.geometric(0.5), 1)
        >>> round(float(law.mean), 4), float(law.cdf(0))
        (2.0, 0.0)
    """
    if not isinstance(law, DelayLaw):
        raise TypeError(f"law must be a DelayLaw, got {type(law).__name__}")
    k = V.integer("k", k, lo=0, hi=NEVER - 1)
    return Shifted(law, k)


def geometric_log_rho(law):
    """``log rho`` if ``law`` is geometric on {0, 1, ...} (``Geometric`` or floored ``Exponential``),
    else ``None``: such laws have O(1) recursions for delay-discounted sums."""
    if isinstance(law, Geometric):
        return law.log_rho
    if isinstance(law, Exponential):
        return -1.0 / law.scale
    return None


def truncation_length(law, horizon: int, tol: float = 1e-6) -> int:
    """``L = min(horizon, 1 + the smallest n with 1 - tau_n <= tol)`` (``horizon`` if none): the
    ring length that makes an uncensored delay-discounted sum exact to ``tol`` (the ring holds ages
    ``0..L-1`` and older pulls weigh ``tau_L``, so ``tau_{L-1} >= 1 - tol``). ``tau`` is float32,
    resolved to about 6e-8 near 1. Bounded laws: ``min(support_max + 1, horizon)``."""
    if law.support_max < NEVER:
        return int(min(law.support_max + 1, horizon))
    n = np.arange(horizon)
    with jax.ensure_compile_time_eval():  # sizes are static: evaluate eagerly even inside a trace
        c = np.asarray(law.cdf(jnp.asarray(n)), np.float64)
    idx = np.nonzero(1.0 - c <= tol)[0]
    return int(min(idx[0] + 1, horizon)) if idx.size else int(horizon)


# ----------------------------------------------------------------------------- laws by name
#: The laws a config's ``delay`` table (``jaxbandits serve``) or ``--delay LAW:...`` may name.
DELAY_LAWS = ("fixed", "uniform", "geometric", "poisson", "exponential", "half_normal", "weibull", "log_normal",
              "pareto")
_BY_NAME = {"fixed": fixed, "uniform": uniform, "geometric": geometric, "poisson": poisson,
            "exponential": exponential, "half_normal": half_normal, "weibull": weibull, "log_normal": log_normal,
            "pareto": pareto}


def delay_law(table: dict, where: str = "config table 'policy.delay'") -> DelayLaw:
    """The law of a config's ``delay`` table (experiment files, ``jaxbandits serve``).

    Args:
        table: ``{"law": NAME, ...}``: ``law`` one of :data:`DELAY_LAWS`, the other keys its
            parameters (e.g. ``{"law": "geometric", "mean": 20.0}``).
        where: names the table in errors.

    Returns:
        The law.

    Raises:
        ValueError: an unknown law or bad parameters, naming ``where``.

    Examples:
        >>> from jaxbandits import delays
        >>> law = delays.delay_law({"law": "geometric", "mean": 20.0})
        >>> type(law).__name__, round(float(law.mean), 4)
        ('Geometric', 20.0)
    """
    d = dict(table)
    law = d.pop("law", None)
    if law not in DELAY_LAWS:
        raise ValueError(f"config key 'policy.delay.law' must be one of {list(DELAY_LAWS)}, got {law!r}")
    try:
        return _BY_NAME[law](**d)
    except TypeError as e:
        raise ValueError(f"{where} ({law}): {e}") from None
