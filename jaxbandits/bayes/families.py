"""Delay families of the Bayesian conversion models (spec `bayes_delay_models.md` §2.3-2.4).

Each family samples its parameters under the priors of §2.4 (scale parameters through a location,
log-normal priors) and gives the continuous log-survival ``log S_c(x)`` and log-density
``log f_c(x)``. Discrete delays ``D = floor(X)`` use ``log S(a) = log S_c(a + 1)`` and
``log f(d) = log S_c(d) + log(-expm1(log S_c(d+1) - log S_c(d)))`` (never a difference of
survivals in linear space, pitfall 2). The histogram family is discrete only.

Parameters of a family are a dict ``{"delay_mean": ..., ...}``; with per-arm laws every entry has a
trailing arm axis and the functions broadcast over it.
"""
from __future__ import annotations

import dataclasses
import math
from typing import Optional

import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
from jax.scipy.special import gammaln, log_ndtr

__all__ = ["Family", "FAMILIES", "family", "DEFAULT_EDGES"]

DEFAULT_EDGES = (0, 4, 8, 16, 24, 32, 48, 64, 96, 128)
_TINY = 1e-30


def _safe_pos(x):
    """``x`` with zeros replaced by 1 (the double-where trick: select after, pitfall 3)."""
    return jnp.where(x > 0, x, 1.0)


@dataclasses.dataclass(frozen=True)
class Family:
    """A delay family: its name, parameter names and prior defaults."""

    name: str
    params: tuple
    discrete_only: bool = False
    edges: Optional[tuple] = None  # histogram bin edges (integers, e_0 = 0)

    # ---------------------------------------------------------------- priors (§2.4)
    def default_priors(self, prior_mean: float) -> dict:
        if self.name in ("exponential", "geometric"):
            return {"delay_mean_loc": prior_mean, "delay_mean_scale": 1.5}
        if self.name == "weibull":
            return {"delay_mean_loc": prior_mean, "delay_mean_scale": 1.5, "delay_shape_scale": 0.5}
        if self.name == "lognormal":
            return {"delay_median_loc": prior_mean, "delay_median_scale": 1.5, "delay_sigma_scale": 0.5}
        return {"delay_w_alpha": 1.0}

    def sample(self, priors: dict, n_laws: Optional[int] = None) -> dict:
        """Sample the delay parameters inside a NumPyro model (one law, or ``n_laws`` per arm)."""
        shape = () if n_laws is None else (n_laws,)

        def ln(loc, scale):
            d = dist.LogNormal(math.log(loc), scale)
            return d if not shape else d.expand(shape).to_event(1)

        if self.name in ("exponential", "geometric"):
            return {"delay_mean": numpyro.sample("delay_mean", ln(priors["delay_mean_loc"], priors["delay_mean_scale"]))}
        if self.name == "weibull":
            return {"delay_mean": numpyro.sample("delay_mean", ln(priors["delay_mean_loc"], priors["delay_mean_scale"])),
                    "delay_shape": numpyro.sample("delay_shape", ln(1.0, priors["delay_shape_scale"]))}
        if self.name == "lognormal":
            return {"delay_median": numpyro.sample("delay_median", ln(priors["delay_median_loc"],
                                                                      priors["delay_median_scale"])),
                    "delay_sigma": numpyro.sample("delay_sigma", ln(1.0, priors["delay_sigma_scale"]))}
        B = len(self.edges) - 1
        d = dist.Dirichlet(jnp.full((B,), float(priors["delay_w_alpha"])))
        if shape:
            d = d.expand(shape).to_event(1)
        return {"delay_w": numpyro.sample("delay_w", d)}

    # ---------------------------------------------------------------- continuous time
    def log_surv_c(self, x, th):
        x = jnp.asarray(x, jnp.float32)
        if self.name in ("exponential", "geometric"):
            return -x / th["delay_mean"]
        if self.name == "weibull":
            k = th["delay_shape"]
            scale = th["delay_mean"] / jnp.exp(gammaln(1.0 + 1.0 / k))
            xs = _safe_pos(x)
            return jnp.where(x > 0, -((xs / scale) ** k), 0.0)
        if self.name == "lognormal":
            xs = _safe_pos(x)
            u = (jnp.log(xs) - jnp.log(th["delay_median"])) / th["delay_sigma"]
            return jnp.where(x > 0, log_ndtr(-u), 0.0)
        raise ValueError("the histogram family is discrete only (discrete=True)")

    def log_pdf_c(self, x, th):
        x = jnp.asarray(x, jnp.float32)
        if self.name in ("exponential", "geometric"):
            return -jnp.log(th["delay_mean"]) - x / th["delay_mean"]
        if self.name == "weibull":
            k = th["delay_shape"]
            scale = th["delay_mean"] / jnp.exp(gammaln(1.0 + 1.0 / k))
            xs = _safe_pos(x)
            z = xs / scale
            v = jnp.log(k) - jnp.log(scale) + (k - 1.0) * jnp.log(z) - z**k
            return jnp.where(x > 0, v, jnp.where(k < 1, jnp.inf, jnp.where(k == 1, -jnp.log(scale), -jnp.inf)))
        if self.name == "lognormal":
            xs = _safe_pos(x)
            s = th["delay_sigma"]
            v = (-0.5 * ((jnp.log(xs) - jnp.log(th["delay_median"])) / s) ** 2 - jnp.log(s)
                 - 0.5 * math.log(2 * math.pi) - jnp.log(xs))
            return jnp.where(x > 0, v, -jnp.inf)
        raise ValueError("the histogram family is discrete only (discrete=True)")

    # ---------------------------------------------------------------- discrete time (D = floor X)
    def log_surv(self, a, th):
        """``log P(D > a)`` for integer ages ``a >= 0``."""
        a = jnp.asarray(a, jnp.float32)
        if self.name == "histogram":
            e = jnp.asarray(self.edges, jnp.float32)
            lo, hi = e[:-1], e[1:]
            frac = jnp.clip((hi - (a[..., None] + 1.0)) / (hi - lo), 0.0, 1.0)
            w = th["delay_w"]
            return jnp.log(jnp.maximum(jnp.sum(w * frac, -1), _TINY))
        return self.log_surv_c(a + 1.0, th)

    def log_pmf(self, d, th):
        """``log P(D = d)`` for integers ``d >= 0``."""
        d = jnp.asarray(d, jnp.float32)
        if self.name == "histogram":
            e = jnp.asarray(self.edges, jnp.float32)
            lo, hi = e[:-1], e[1:]
            inside = (d[..., None] >= lo) & (d[..., None] < hi)
            w = th["delay_w"]
            dens = jnp.sum(jnp.where(inside, w / (hi - lo), 0.0), -1)
            return jnp.log(jnp.maximum(dens, _TINY))
        s0 = self.log_surv_c(d, th)
        s1 = self.log_surv_c(d + 1.0, th)
        return s0 + jnp.log(jnp.maximum(-jnp.expm1(s1 - s0), _TINY))

    def mean(self, th):
        """The delay mean (continuous law; the histogram's discrete mean)."""
        if self.name in ("exponential", "geometric", "weibull"):
            return th["delay_mean"]
        if self.name == "lognormal":
            return th["delay_median"] * jnp.exp(0.5 * th["delay_sigma"] ** 2)
        e = np.asarray(self.edges, np.float64)
        mids = jnp.asarray((e[:-1] + e[1:] - 1) / 2, jnp.float32)
        return jnp.sum(th["delay_w"] * mids, -1)


FAMILIES = {
    "exponential": Family("exponential", ("delay_mean",)),
    "geometric": Family("geometric", ("delay_mean",)),
    "weibull": Family("weibull", ("delay_mean", "delay_shape")),
    "lognormal": Family("lognormal", ("delay_median", "delay_sigma")),
    "histogram": Family("histogram", ("delay_w",), discrete_only=True, edges=DEFAULT_EDGES),
}


def family(name, edges=None) -> Family:
    """The family called ``name`` (``exponential``, ``geometric``, ``weibull``, ``lognormal``,
    ``histogram``; ``edges``: the histogram's integer bin edges, increasing from 0)."""
    if isinstance(name, Family):
        return name
    if name not in FAMILIES:
        raise ValueError(f"model must be one of {sorted(FAMILIES)}, got {name!r}")
    fam = FAMILIES[name]
    if edges is not None:
        if name != "histogram":
            raise ValueError("edges apply to the histogram model only")
        e = np.asarray(edges)
        if e.ndim != 1 or e.size < 2 or e[0] != 0 or np.any(np.diff(e) <= 0) or np.any(e != np.round(e)):
            raise ValueError(f"edges must be increasing integers starting at 0, got {edges!r}")
        fam = dataclasses.replace(fam, edges=tuple(int(x) for x in e))
    return fam
