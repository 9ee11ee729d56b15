"""The hierarchical conversion model (docs/bayes.md, *Hierarchical model*): many arms (or
campaigns) with little data each borrow strength from one another.

Each arm ``k`` has its own conversion rate and its own delay law, drawn from a population law
whose parameters are inferred too (non-centred, so NUTS samples funnels well):

* ``logit p_k = p_mu + p_sd z_k``, ``z_k ~ N(0, 1)``, ``p_mu ~ N(p_mu_loc, p_mu_scale)``,
  ``p_sd ~ HalfNormal(p_pool_scale)``;
* for each delay parameter ``q`` of the family (all positive, under log-normal priors in the flat
  model: exponential/geometric ``delay_mean``, Weibull ``delay_mean``, ``delay_shape``, log-normal
  ``delay_median``, ``delay_sigma``): ``log q_k = q_mu + q_sd z'_k``, ``q_mu`` under the flat
  model's log-normal prior of ``q`` (the same location and scale), ``q_sd ~
  HalfNormal(delay_pool_scale)``.

With ``p_sd, q_sd -> 0`` the arms share one rate and one law (complete pooling); with large ones
they are independent (no pooling); the data decide in between. The likelihood is the flat model's
(per-arm laws), on the same compressed rows.
"""
from __future__ import annotations

from typing import Optional

import jax
import jax.numpy as jnp
import numpyro
import numpyro.distributions as dist

from .families import family
from .model import WeightedRows, loglik_weighted_jit

__all__ = ["hierarchical_model", "hierarchical_priors", "HIER_DEFAULTS", "merged_priors"]

#: defaults of the hierarchy's own priors (the delay parameters' locations and scales are the flat model's)
HIER_DEFAULTS = {"p_mu_loc": -2.0, "p_mu_scale": 1.5, "p_pool_scale": 1.0, "delay_pool_scale": 0.5}


def hierarchical_priors(fam, priors: Optional[dict], prior_mean: float) -> dict:
    """The priors of the hierarchical model: :data:`HIER_DEFAULTS` and the family's own defaults,
    overridden by ``priors``.

    Args:
        fam: the delay family or its name.
        priors: overrides (unknown keys, non-positive scales: ``ValueError``).
        prior_mean: the delay prior's mean.

    Returns:
        A dict of the priors' entries.

    Raises:
        ValueError: an unknown key or a non-positive scale.

    Examples:
        >>> from jaxbandits.delaymodels import hierarchical
        >>> sorted(hierarchical.hierarchical_priors("exponential", None, 30.0))[:3]
        ['delay_mean_loc', 'delay_mean_scale', 'delay_pool_scale']
    """
    return merged_priors(HIER_DEFAULTS, fam, priors, prior_mean, "hierarchical", signed="p_mu_loc")


def merged_priors(defaults: dict, fam, priors: Optional[dict], prior_mean: float, model: str, signed: str) -> dict:
    """A model's priors: its own ``defaults`` and the family's, overridden by ``priors`` (the rule of
    the hierarchical and the contextual models): every key known, every value a positive number
    except ``signed`` (a location), which may be any number.

    Args:
        defaults: the model's own priors.
        fam: the delay family or its name.
        priors: overrides, or None.
        prior_mean: the delay prior's mean (the family's defaults).
        model: the model's name, for the messages (``"hierarchical"``).
        signed: the one key whose value may be zero or negative.

    Returns:
        A dict of the priors' entries (floats).

    Raises:
        ValueError: an unknown key, or a value of the wrong sign or type.

    Examples:
        >>> merged_priors({"loc": 0.0, "scale": 1.0}, "exponential", {"loc": -2}, 30.0, "demo", "loc")["loc"]
        -2.0
    """
    fam = family(fam)
    out = {**defaults, **fam.default_priors(prior_mean)}
    for k, v in (priors or {}).items():
        if k not in out:
            raise ValueError(f"unknown prior {k!r} for the {model} {fam.name} model; known: {sorted(out)}")
        if not isinstance(v, (int, float)) or isinstance(v, bool) or not (v > 0 or k == signed):
            raise ValueError(f"prior {k!r} must be a {'number' if k == signed else 'positive number'}, got {v!r}")
        out[k] = float(v)
    return out


def hierarchical_model(data: WeightedRows, n_arms: int, fam="exponential", discrete: bool = False,
                       priors: Optional[dict] = None, prior_mean: float = 30.0):
    """The NumPyro model of the hierarchical conversion model (partial pooling across arms).

    Sites ``p_mu, p_sd, p_z`` and ``q_mu, q_sd, q_z`` per delay parameter ``q``; deterministic
    ``p`` and ``q`` per arm.

    Args:
        data: :class:`~jaxbandits.delaymodels.model.WeightedRows` compressed with ``per_arm_delay=True``.
        n_arms: the number of arms.
        fam: the delay family or its name (one with log-normal parameters).
        discrete: integer delays.
        priors: overrides of the priors' entries (:func:`hierarchical_priors`).
        prior_mean: the delay prior's mean.

    Returns:
        None (a NumPyro model).

    Examples:
        >>> import jax, numpy as np
        >>> from numpyro import handlers
        >>> from jaxbandits.delaymodels import hierarchical, model
        >>> wr, _ = model.compress_rows(np.array([0, 1, 0]), np.array([True, False, False]),
        ...                             np.array([3.0, 0.0, 0.0]), np.array([10.0, 9.0, 8.0]), 2, per_arm_delay=True)
        >>> tr = handlers.trace(handlers.seed(hierarchical.hierarchical_model, jax.random.key(0))).get_trace(wr, 2)
        >>> [name for name, site in tr.items() if site["type"] == "sample" and not site["is_observed"]]
        ['p_mu', 'p_sd', 'p_z', 'delay_mean_mu', 'delay_mean_sd', 'delay_mean_z']
    """
    fam = family(fam)
    pr = hierarchical_priors(fam, priors, prior_mean)
    hyper = fam.log_normal_hyper(pr)
    p_mu = numpyro.sample("p_mu", dist.Normal(pr["p_mu_loc"], pr["p_mu_scale"]))
    p_sd = numpyro.sample("p_sd", dist.HalfNormal(pr["p_pool_scale"]))
    p_z = numpyro.sample("p_z", dist.Normal(0.0, 1.0).expand([n_arms]).to_event(1))
    p = numpyro.deterministic("p", jax.nn.sigmoid(p_mu + p_sd * p_z))
    th = {}
    for q, (loc, scale) in hyper.items():
        mu = numpyro.sample(f"{q}_mu", dist.Normal(loc, scale))
        sd = numpyro.sample(f"{q}_sd", dist.HalfNormal(pr["delay_pool_scale"]))
        z = numpyro.sample(f"{q}_z", dist.Normal(0.0, 1.0).expand([n_arms]).to_event(1))
        th[q] = numpyro.deterministic(q, jnp.exp(mu + sd * z))
    numpyro.deterministic("delay_mean_implied", fam.mean(th))
    numpyro.factor("obs", loglik_weighted_jit(data, p, th, fam, bool(discrete), True))
