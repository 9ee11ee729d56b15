"""Delay families of the Bayesian conversion models (docs/bayes.md, "Models").

Each family is an object (a subclass of :class:`Family`) that owns everything that depends on the
law: its parameter names, the priors it samples them under (scale parameters through a location,
log-normal priors), the implied mean, the starting values of a fit and the :mod:`jaxbandits.core.delays`
law of a parameter set. The likelihood's math is the delay law's: :meth:`Family.at` builds the
:mod:`jaxbandits.core.delays` law of (traced) parameters, whose ``log_sf_x``/``log_pdf_x`` are the
continuous log-survival ``log S_c(x)`` and log-density ``log f_c(x)``. Nothing outside this module
asks a family for its name to decide what to compute; a family of one's own (a subclass, giving
``at`` or ``log_surv_c``/``log_pdf_c``) works wherever a name does.

Discrete delays ``D = floor(X)`` use ``log S(a) = log S_c(a + 1)`` and
``log f(d) = log S_c(d) + log(-expm1(log S_c(d+1) - log S_c(d)))`` (never a difference of
survivals in linear space: conventions §9; :func:`jaxbandits.core.delays.floor_log_pmf`). The histogram
family is discrete only.

Parameters of a family are a dict ``{"delay_mean": ..., ...}``; with per-arm laws every entry has a
trailing arm axis (before the bin axis of the histogram's weights) and the functions broadcast
over it.
"""
from __future__ import annotations

import dataclasses
import math
from typing import Optional

import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
from jax.scipy.special import gammaln

from ..core import delays as D

__all__ = ["Family", "Exponential", "Geometric", "Weibull", "LogNormal", "Histogram", "FAMILIES", "family",
           "DEFAULT_EDGES", "delay_law", "family_of"]

DEFAULT_EDGES = (0, 4, 8, 16, 24, 32, 48, 64, 96, 128)
_TINY = 1e-30


def _log_normal_prior(loc, scale, shape):
    """``LogNormal(log loc, scale)`` (scalars), or one per arm (``loc``/``scale`` arrays ``[K]``, a
    warm start's priors: see :func:`jaxbandits.bayes.policy_prior`)."""
    if np.ndim(loc) or np.ndim(scale):
        d = dist.LogNormal(jnp.log(jnp.asarray(loc, jnp.float32)), jnp.asarray(scale, jnp.float32))
        return d.expand(shape).to_event(1) if shape else d
    d = dist.LogNormal(math.log(loc), scale)
    return d if not shape else d.expand(shape).to_event(1)


@dataclasses.dataclass(frozen=True)
class Family:
    """A delay family: its name, parameter names and the methods of its law.

    Subclasses give ``default_priors``, ``sample``, ``at`` (or ``log_surv_c`` and ``log_pdf_c``),
    ``mean``, ``law`` and ``init_values``; the discrete law (``log_surv``, ``log_pmf``) follows from
    the continuous survival unless a family overrides it (the histogram). A family of one's own
    is a frozen dataclass subclass; it works wherever a family's name does.

    Attributes:
        name: the family's name, as :func:`family` and ``fit(model=...)`` take it.
        params: the names of its parameters, the keys of a parameter dict.
        discrete_only: ``True`` when only the discrete law ``D`` is defined (no continuous ``X``:
            the histogram), ``False`` otherwise.
        edges: the histogram's integer bin edges (increasing from 0), ``None`` for the other
            families.
    """

    name: str
    params: tuple
    discrete_only: bool = False
    edges: Optional[tuple] = None  # histogram bin edges (integers, e_0 = 0)

    in_scan = True  # the in-scan Thompson policy can run it (class attribute, not a field)
    integer_times = False  # the family's natural data are integer rounds (simulation-based calibration's default)
    event_dims = {}  # per parameter: the names of its own axes after the arm axis (histogram: bins)

    # ---------------------------------------------------------------- construction
    def with_edges(self, edges) -> "Family":
        """The family with histogram bin ``edges`` (only the histogram has edges)."""
        raise ValueError("edges apply to the histogram model only")

    def coords(self) -> dict:
        """Coordinates of the parameters' own axes (for ArviZ)."""
        return {}

    def from_posterior(self, posterior) -> "Family":
        """The family as it was fitted, read back from a posterior's coordinates."""
        return self

    # ---------------------------------------------------------------- priors
    def default_priors(self, prior_mean: float) -> dict:
        raise NotImplementedError

    def sample(self, priors: dict, n_laws: Optional[int] = None) -> dict:
        """Sample the delay parameters inside a NumPyro model (one law, or ``n_laws`` per arm)."""
        raise NotImplementedError

    def unconstrained_locs(self, prior_mean: float) -> dict:
        """Per parameter, the prior median in NumPyro's unconstrained space (log of the scale)."""
        raise NotImplementedError

    # ---------------------------------------------------------------- continuous time
    def at(self, th):
        """The :mod:`jaxbandits.core.delays` law (``D = floor(X)``) of the parameters ``th`` (arrays,
        traced inside a model; no host checks), whose ``log_sf_x``/``log_pdf_x`` the likelihood uses."""
        raise NotImplementedError(f"the {self.name} family gives no delay law of traced parameters")

    def log_surv_c(self, x, th):
        """``log P(X > x)``: the law's ``log_sf_x`` (:meth:`jaxbandits.core.delays.Exponential.log_sf_x` and the others)."""
        return self.at(th).log_sf_x(x)

    def log_pdf_c(self, x, th):
        """``log f(x)`` of ``X``: the law's ``log_pdf_x``."""
        return self.at(th).log_pdf_x(x)

    # ---------------------------------------------------------------- discrete time (D = floor X)
    def log_surv(self, a, th):
        """``log P(D > a)`` for integer ages ``a >= 0``."""
        a = jnp.asarray(a, jnp.float32)
        return self.log_surv_c(a + 1.0, th)

    def log_pmf(self, d, th):
        """``log P(D = d)`` for integers ``d >= 0`` (:func:`jaxbandits.core.delays.floor_log_pmf`)."""
        return D.floor_log_pmf(lambda x: self.log_surv_c(x, th), d)

    def mean(self, th):
        """The delay mean (continuous law; the histogram's discrete mean)."""
        raise NotImplementedError

    # ---------------------------------------------------------------- helpers of fits and simulations
    def with_grid_axis(self, th) -> dict:
        """The parameters with an axis inserted before each one's own axes, so they broadcast
        against a grid of ages (``[..., G]``)."""
        return {k: jnp.expand_dims(jnp.asarray(v), jnp.ndim(v) - len(self.event_dims.get(k, ()))) for k, v in th.items()}

    def init_values(self, mean_delay: float, shape: tuple) -> dict:
        """Starting values of a fit from the seen delays' mean (numpy float32, ``shape``: ``()`` or
        ``(K,)``)."""
        raise NotImplementedError

    def law(self, params: dict):
        """The :mod:`jaxbandits.core.delays` law of one parameter set for a simulation (numpy float64
        scalars, or the histogram's bin weights; its public constructor, with its checks): the law
        of :meth:`at` (``D = floor(X)``), with the scale converted in float64."""
        raise NotImplementedError

    def draw(self, rng, th: dict, size):
        """Delays drawn with numpy (``rng``: a ``numpy.random.Generator``): the continuous ``X``
        (floor it for ``D``; the histogram draws ``D`` itself). ``th`` entries broadcast against
        ``size`` (one parameter set, or one per draw). Simulation-based calibration and posterior
        predictive checks simulate with it, independently of the model's log densities."""
        raise NotImplementedError(f"the {self.name} family has no draw(); simulation needs one")

    def log_normal_hyper(self, priors: dict) -> dict:
        """Per parameter, ``(log-location, scale)`` of its log-normal prior: the population law that
        the hierarchical model pools the per-arm parameters around (families with positive
        parameters under log-normal priors only)."""
        raise ValueError(f"the {self.name} family has no log-normal parameters to pool (hierarchical model)")


@dataclasses.dataclass(frozen=True)
class Exponential(Family):
    """Exponential delays of mean ``delay_mean``.

    Attributes:
        name: the family's name, as :func:`family` and ``fit(model=...)`` take it (``"exponential"``).
        params: the names of its parameters, the keys of a parameter dict (``("delay_mean",)``).
        discrete_only: ``False``: the continuous law is defined.
        edges: ``None`` (no bins).
    """

    name: str = "exponential"
    params: tuple = ("delay_mean",)

    def default_priors(self, prior_mean):
        return {"delay_mean_loc": prior_mean, "delay_mean_scale": 1.5}

    def sample(self, priors, n_laws=None):
        shape = () if n_laws is None else (n_laws,)
        return {"delay_mean": numpyro.sample("delay_mean", _log_normal_prior(priors["delay_mean_loc"],
                                                                             priors["delay_mean_scale"], shape))}

    def unconstrained_locs(self, prior_mean):
        return {"delay_mean": math.log(prior_mean)}

    def at(self, th):
        return D.Exponential(th["delay_mean"])

    def mean(self, th):
        return th["delay_mean"]

    def init_values(self, mean_delay, shape):
        return {"delay_mean": np.full(shape, mean_delay, np.float32)}

    def law(self, params):
        return D.exponential(float(params["delay_mean"]))

    def draw(self, rng, th, size):
        return rng.exponential(1.0, size) * np.asarray(th["delay_mean"], np.float64)

    def log_normal_hyper(self, priors):
        return {"delay_mean": (math.log(priors["delay_mean_loc"]), priors["delay_mean_scale"])}


@dataclasses.dataclass(frozen=True)
class Geometric(Exponential):
    """The discretised exponential: ``D = floor(X)``, ``X`` exponential of mean ``delay_mean``, is
    geometric on ``{0, 1, ...}``. The same law and code as :class:`Exponential` under its own name
    (the model of integer delays).

    Attributes:
        name: the family's name, as :func:`family` and ``fit(model=...)`` take it (``"geometric"``).
        params: the names of its parameters, the keys of a parameter dict (``("delay_mean",)``).
        discrete_only: ``False``: the continuous law is defined.
        edges: ``None`` (no bins).
    """

    name: str = "geometric"
    integer_times = True


@dataclasses.dataclass(frozen=True)
class Weibull(Family):
    """Weibull delays of mean ``delay_mean`` and shape ``delay_shape`` (scale ``mean / Gamma(1 + 1/k)``).

    Attributes:
        name: the family's name, as :func:`family` and ``fit(model=...)`` take it (``"weibull"``).
        params: the names of its parameters, the keys of a parameter dict (``("delay_mean", "delay_shape")``).
        discrete_only: ``False``: the continuous law is defined.
        edges: ``None`` (no bins).
    """

    name: str = "weibull"
    params: tuple = ("delay_mean", "delay_shape")

    def default_priors(self, prior_mean):
        return {"delay_mean_loc": prior_mean, "delay_mean_scale": 1.5, "delay_shape_loc": 1.0, "delay_shape_scale": 0.5}

    def sample(self, priors, n_laws=None):
        shape = () if n_laws is None else (n_laws,)
        return {"delay_mean": numpyro.sample("delay_mean", _log_normal_prior(priors["delay_mean_loc"],
                                                                             priors["delay_mean_scale"], shape)),
                "delay_shape": numpyro.sample("delay_shape", _log_normal_prior(priors["delay_shape_loc"],
                                                                               priors["delay_shape_scale"], shape))}

    def unconstrained_locs(self, prior_mean):
        return {"delay_mean": math.log(prior_mean), "delay_shape": 0.0}

    def at(self, th):
        k = th["delay_shape"]
        return D.Weibull(k, th["delay_mean"] / jnp.exp(gammaln(1.0 + 1.0 / k)))  # scale = mean / Gamma(1 + 1/k)

    def mean(self, th):
        return th["delay_mean"]

    def init_values(self, mean_delay, shape):
        return {"delay_mean": np.full(shape, mean_delay, np.float32), "delay_shape": np.full(shape, 1.0, np.float32)}

    def law(self, params):
        k = float(params["delay_shape"])
        return D.weibull(k, float(params["delay_mean"]) / math.gamma(1.0 + 1.0 / k))

    def draw(self, rng, th, size):
        from scipy.special import gammaln as _gammaln

        k = np.asarray(th["delay_shape"], np.float64)
        scale = np.asarray(th["delay_mean"], np.float64) / np.exp(_gammaln(1.0 + 1.0 / k))
        return scale * rng.exponential(1.0, size) ** (1.0 / k)  # X = scale E^(1/k), E ~ Exp(1)

    def log_normal_hyper(self, priors):
        return {"delay_mean": (math.log(priors["delay_mean_loc"]), priors["delay_mean_scale"]),
                "delay_shape": (math.log(priors["delay_shape_loc"]), priors["delay_shape_scale"])}


@dataclasses.dataclass(frozen=True)
class LogNormal(Family):
    """Log-normal delays of median ``delay_median`` and log-scale sd ``delay_sigma``.

    Attributes:
        name: the family's name, as :func:`family` and ``fit(model=...)`` take it (``"lognormal"``).
        params: the names of its parameters, the keys of a parameter dict (``("delay_median", "delay_sigma")``).
        discrete_only: ``False``: the continuous law is defined.
        edges: ``None`` (no bins).
    """

    name: str = "lognormal"
    params: tuple = ("delay_median", "delay_sigma")

    def default_priors(self, prior_mean):
        return {"delay_median_loc": prior_mean, "delay_median_scale": 1.5, "delay_sigma_loc": 1.0, "delay_sigma_scale": 0.5}

    def sample(self, priors, n_laws=None):
        shape = () if n_laws is None else (n_laws,)
        return {"delay_median": numpyro.sample("delay_median", _log_normal_prior(priors["delay_median_loc"],
                                                                                 priors["delay_median_scale"], shape)),
                "delay_sigma": numpyro.sample("delay_sigma", _log_normal_prior(priors["delay_sigma_loc"],
                                                                               priors["delay_sigma_scale"], shape))}

    def unconstrained_locs(self, prior_mean):
        return {"delay_median": math.log(prior_mean), "delay_sigma": 0.0}

    def at(self, th):
        return D.LogNormal(jnp.log(th["delay_median"]), th["delay_sigma"])  # mu = log median

    def mean(self, th):
        return th["delay_median"] * jnp.exp(0.5 * th["delay_sigma"] ** 2)

    def init_values(self, mean_delay, shape):
        return {"delay_median": np.full(shape, mean_delay / 2, np.float32), "delay_sigma": np.full(shape, 1.0, np.float32)}

    def law(self, params):
        return D.log_normal(math.log(float(params["delay_median"])), float(params["delay_sigma"]))

    def draw(self, rng, th, size):
        return (np.asarray(th["delay_median"], np.float64)
                * np.exp(np.asarray(th["delay_sigma"], np.float64) * rng.standard_normal(size)))

    def log_normal_hyper(self, priors):
        return {"delay_median": (math.log(priors["delay_median_loc"]), priors["delay_median_scale"]),
                "delay_sigma": (math.log(priors["delay_sigma_loc"]), priors["delay_sigma_scale"])}


@dataclasses.dataclass(frozen=True)
class Histogram(Family):
    """Integer delays with bin weights ``delay_w`` on the integer ``edges`` (uniform within a bin):
    ``P(D = d) = w_b / (e_{b+1} - e_b)`` for ``e_b <= d < e_{b+1}``. Discrete only; offline fits
    only (not the in-scan policy).

    Attributes:
        name: the family's name, as :func:`family` and ``fit(model=...)`` take it (``"histogram"``).
        params: the names of its parameters, the keys of a parameter dict (``("delay_w",)``: the
            bin weights, summing to 1).
        discrete_only: ``True``: only the discrete law ``D`` is defined.
        edges: the integer bin edges, increasing from 0 (``DEFAULT_EDGES`` unless set with
            :func:`family`'s ``edges``).
    """

    name: str = "histogram"
    params: tuple = ("delay_w",)
    discrete_only: bool = True
    edges: Optional[tuple] = DEFAULT_EDGES

    in_scan = False
    integer_times = True
    event_dims = {"delay_w": ("delay_bin",)}

    def with_edges(self, edges):
        e = np.asarray(edges)
        if e.ndim != 1 or e.size < 2 or e[0] != 0 or np.any(np.diff(e) <= 0) or np.any(e != np.round(e)):
            raise ValueError(f"edges must be increasing integers starting at 0, got {edges!r}")
        return dataclasses.replace(self, edges=tuple(int(x) for x in e))

    def coords(self):
        return {"delay_bin": [f"[{a},{b})" for a, b in zip(self.edges[:-1], self.edges[1:])]}

    def from_posterior(self, posterior):
        bins = [str(b) for b in posterior["delay_w"].coords["delay_bin"].values]  # "[a,b)"
        edges = [int(b[1:-1].split(",")[0]) for b in bins] + [int(bins[-1][1:-1].split(",")[1])]
        return self.with_edges(edges)

    def default_priors(self, prior_mean):
        return {"delay_w_alpha": 1.0}

    def sample(self, priors, n_laws=None):
        shape = () if n_laws is None else (n_laws,)
        B = len(self.edges) - 1
        d = dist.Dirichlet(jnp.full((B,), float(priors["delay_w_alpha"])))
        if shape:
            d = d.expand(shape).to_event(1)
        return {"delay_w": numpyro.sample("delay_w", d)}

    def unconstrained_locs(self, prior_mean):
        return {"delay_w": 0.0}

    def at(self, th):
        raise ValueError("the histogram family is discrete only (discrete=True)")

    def log_surv(self, a, th):
        a = jnp.asarray(a, jnp.float32)
        e = jnp.asarray(self.edges, jnp.float32)
        lo, hi = e[:-1], e[1:]
        frac = jnp.clip((hi - (a[..., None] + 1.0)) / (hi - lo), 0.0, 1.0)
        w = th["delay_w"]
        return jnp.log(jnp.maximum(jnp.sum(w * frac, -1), _TINY))

    def log_pmf(self, d, th):
        d = jnp.asarray(d, jnp.float32)
        e = jnp.asarray(self.edges, jnp.float32)
        lo, hi = e[:-1], e[1:]
        inside = (d[..., None] >= lo) & (d[..., None] < hi)
        w = th["delay_w"]
        dens = jnp.sum(jnp.where(inside, w / (hi - lo), 0.0), -1)
        return jnp.log(jnp.maximum(dens, _TINY))

    def mean(self, th):
        e = np.asarray(self.edges, np.float64)
        mids = jnp.asarray((e[:-1] + e[1:] - 1) / 2, jnp.float32)
        return jnp.sum(th["delay_w"] * mids, -1)

    def init_values(self, mean_delay, shape):
        B = len(self.edges) - 1
        return {"delay_w": np.full(shape + (B,), 1.0 / B, np.float32)}

    def law(self, params):
        e = np.asarray(self.edges, np.int64)
        w = params["delay_w"]
        pmf = np.repeat(w / np.diff(e), np.diff(e))
        return D.histogram(pmf)

    def draw(self, rng, th, size):
        """Integer delays: a bin from the weights, then uniform on its integers."""
        e = np.asarray(self.edges, np.int64)
        w = np.broadcast_to(np.asarray(th["delay_w"], np.float64), tuple(np.atleast_1d(size)) + (e.size - 1,))
        cw = np.cumsum(w, -1)
        u = rng.random(size) * cw[..., -1]
        b = np.minimum(np.sum(u[..., None] >= cw, -1), e.size - 2)
        width = np.diff(e)[b]
        return (e[b] + np.floor(rng.random(size) * width)).astype(np.float64)


FAMILIES = {f.name: f for f in (Exponential(), Geometric(), Weibull(), LogNormal(), Histogram())}


def family(name, edges=None) -> Family:
    """The family called ``name`` (``exponential``, ``geometric``, ``weibull``, ``lognormal``,
    ``histogram``; ``edges``: the histogram's integer bin edges, increasing from 0), or ``name``
    itself when it is already a :class:`Family`.

    Args:
        name: a family's name (a key of ``FAMILIES``) or a :class:`Family`.
        edges: the histogram's bin edges, increasing integers starting at 0; ``None`` (the
            default) keeps the family's own (``DEFAULT_EDGES`` for the histogram).

    Returns:
        Family: the family (a frozen value).

    Raises:
        ValueError: ``name`` is not a family's name, or ``edges`` are given for a family other
            than the histogram or are not increasing integers from 0.

    Example:
        >>> family("weibull").params
        ('delay_mean', 'delay_shape')
        >>> family("histogram", edges=(0, 5, 10)).edges
        (0, 5, 10)
    """
    if isinstance(name, Family):
        return name
    if name not in FAMILIES:
        raise ValueError(f"model must be one of {sorted(FAMILIES)}, got {name!r}")
    fam = FAMILIES[name]
    if edges is not None:
        fam = fam.with_edges(edges)
    return fam


def delay_law(fam, params: dict) -> D.DelayLaw:
    """The :mod:`jaxbandits.core.delays` law of one parameter set ``params`` (scalars, or the bin
    weights of the histogram) of the family ``fam`` (a name or a :class:`Family`):
    :meth:`Family.law` of the parameters as float64.

    * exponential / geometric (mean ``m``): ``delays.exponential(scale=m)``;
    * Weibull (mean ``m``, shape ``k``): ``delays.weibull(k, m / Gamma(1 + 1/k))``;
    * log-normal (median ``q``, sigma ``s``): ``delays.log_normal(log q, s)``;
    * histogram (bin weights ``w`` on the integer edges ``e``, uniform within a bin):
      ``delays.histogram`` with ``P(D = d) = w_b / (e_{b+1} - e_b)`` for ``e_b <= d < e_{b+1}``.

    Args:
        fam: the family, a name (``"exponential"``, ...) or a :class:`Family`.
        params: one parameter set, by the family's parameter names (``fam.params``): scalars, or
            the histogram's bin weights (``delay_w``, one per bin, summing to 1).

    Returns:
        DelayLaw: the law, made by its public constructor (whose checks apply).

    Example:
        >>> delay_law("exponential", {"delay_mean": 10.0})
        Exponential(scale=Array(10., dtype=float32))
        >>> law = delay_law("weibull", {"delay_mean": 10.0, "delay_shape": 1.5})
        >>> round(float(law.scale), 3)  # 10 / Gamma(1 + 1/1.5)
        11.077
    """
    return family(fam).law({k: np.asarray(v, np.float64) for k, v in params.items()})


def family_of(idata) -> Family:
    """The family of a :func:`~jaxbandits.bayes.fit.fit` result, as it was fitted (the histogram
    reads its bin edges back from the posterior's ``delay_bin`` coordinates).

    Args:
        idata: an ``arviz.InferenceData`` with the ``model`` attribute that ``fit`` writes (on
            its posterior group, or on the whole).

    Returns:
        Family: the fitted family.

    Raises:
        ValueError: ``idata`` has no ``model`` attribute (it is not a ``fit`` result).

    Example:
        >>> from types import SimpleNamespace
        >>> idata = SimpleNamespace(posterior=SimpleNamespace(attrs={"model": "geometric"}))  # as fit() writes it
        >>> family_of(idata).name
        'geometric'
        >>> from jaxbandits import bayes
        >>> family_of(bayes.fit(log, model="histogram", edges=(0, 8, 32)))  # doctest: +SKIP
        Histogram(name='histogram', params=('delay_w',), discrete_only=True, edges=(0, 8, 32))
    """
    name = idata.posterior.attrs.get("model")  # where fit() writes its attributes
    if name is None and hasattr(idata, "attrs"):
        name = idata.attrs.get("model")
    if name is None:
        raise ValueError("idata has no attrs['model']: pass a fit() result")
    return family(name).from_posterior(idata.posterior)
