"""From a fit to a prior for the in-scan Thompson policy (docs/bayes.md, *Warm start*): a new
campaign starts from what past campaigns taught.

:func:`policy_prior` summarises a :func:`~jaxbandits.bayes.fit` posterior in the policy's own
prior families (moment matching), discounted by ``strength`` (a power prior: the past campaign's
information times ``strength``):

* each arm's ``p_k ~ Beta(a_k, b_k)`` with the posterior mean ``m_k`` of ``p_k`` and
  ``a_k + b_k = strength (m_k (1 - m_k) / v_k - 1)`` (``v_k``: its posterior variance);
* each delay parameter ``q ~ LogNormal(mu_q, sigma_q / sqrt(strength))`` with ``mu_q``, ``sigma_q``
  the posterior mean and s.d. of ``log q`` (per arm for per-arm or hierarchical fits);
* a hierarchical fit with ``new_arms=K``: every one of ``K`` new arms gets the population's
  predictive law (``p = sigmoid(p_mu + p_sd z)``, ``log q = q_mu + q_sd z``, ``z ~ N(0, 1)``, over
  the posterior draws), the same for each arm.

The policy (``delay_model_ts(..., warm_start=policy_prior(idata))``) then uses these priors, and
its chain and Newton-tracked mode start at ``z0`` (``logit m_k`` and ``mu_q``: the fitted posterior
mean in the unconstrained space) with the mass matrix of the prior's Hessian there, instead of the
cold start's prior median ``logit p = 0`` and identity mass matrix.
"""
from __future__ import annotations

import math
from typing import NamedTuple, Optional

import numpy as np

from .families import family_of

__all__ = ["WarmStart", "policy_prior"]


class WarmStart(NamedTuple):
    """A prior for :func:`jaxbandits.policies.bayes.delay_model_ts` (``warm_start=``).

    Attributes:
        model: the delay family's name.
        priors: the conversion model's priors: p_a, p_b ([K] arrays), {q}_loc, {q}_scale per delay
            parameter.
        z0: the starting point in the unconstrained space: {"p": logit [K], q: log value [(K,)]}.
        per_arm_delay: one delay law per arm (as fitted).
        n_arms: the number of arms.
        strength: the weight of the past campaign's information, in (0, 1].
    """

    model: str  # the delay family's name
    priors: dict  # the conversion model's priors: p_a, p_b ([K] arrays), {q}_loc, {q}_scale per delay parameter
    z0: dict  # the starting point in the unconstrained space: {"p": logit [K], q: log value [(K,)]}
    per_arm_delay: bool
    n_arms: int
    strength: float


def _beta_match(draws, strength):
    """Beta parameters with the draws' mean and variance, the information times ``strength``."""
    m = np.clip(draws.mean(0), 1e-6, 1 - 1e-6)
    v = np.maximum(draws.var(0), 1e-12)
    n = np.maximum(m * (1 - m) / v - 1.0, 1e-3) * strength
    return m, m * n, (1 - m) * n


def policy_prior(idata, strength: float = 1.0, new_arms: Optional[int] = None, seed: int = 0) -> WarmStart:
    """The in-scan policy's prior from a fit (see the module's docstring).

    Args:
        idata: the ``arviz.InferenceData`` of :func:`jaxbandits.bayes.fit`.
        strength: the weight of the past campaign's information, in ``(0, 1]``.
        new_arms: (hierarchical fits only) that many new arms, each with the population's law.
        seed: the seed of the population draws.

    Returns:
        The :class:`WarmStart`, for ``delay_model_ts(..., warm_start=...)``.

    Raises:
        ValueError: ``strength`` out of range, a family the policy cannot run in-scan, or
            ``new_arms`` without a hierarchical fit.

    Examples:
        >>> from jaxbandits import bayes
        >>> from jaxbandits.policies import bayes as pb
        >>> idata = bayes.fit(bayes.synthetic_log([0.2, 0.4], 2000, 500.0, 600.0), num_samples=200)  # doctest: +SKIP
        >>> pol = pb.delay_model_ts(warm_start=bayes.policy_prior(idata, strength=0.5))  # doctest: +SKIP
    """
    if not (isinstance(strength, (int, float)) and not isinstance(strength, bool) and 0 < strength <= 1):
        raise ValueError(f"strength must be a number in (0, 1], got {strength!r}")
    fam = family_of(idata)
    if not fam.in_scan:
        raise ValueError(f"the {fam.name} family has no in-scan policy to warm-start")
    post = idata.posterior
    hier = int(post.attrs.get("hierarchical", 0)) == 1
    per_arm = "arm" in post[fam.params[0]].dims
    flat = lambda name: post[name].values.reshape((-1,) + post[name].shape[2:]).astype(np.float64)
    if new_arms is not None:
        if not hier:
            raise ValueError("new_arms needs a hierarchical fit (fit(..., hierarchical=True)): only it has a population law")
        if not isinstance(new_arms, (int, np.integer)) or isinstance(new_arms, bool) or new_arms < 1:
            raise ValueError(f"new_arms must be an integer >= 1, got {new_arms!r}")
        rng = np.random.default_rng(seed)
        mu, sd = flat("p_mu"), flat("p_sd")
        p_draws = 1 / (1 + np.exp(-(mu + sd * rng.standard_normal(mu.shape))))
        m, a, b = _beta_match(p_draws, strength)
        K = int(new_arms)
        priors = {"p_a": np.full(K, a), "p_b": np.full(K, b)}
        z0 = {"p": np.full(K, math.log(m / (1 - m)))}
        for q in fam.params:
            lq = flat(f"{q}_mu") + flat(f"{q}_sd") * rng.standard_normal(mu.shape)
            priors[f"{q}_loc"] = float(np.exp(lq.mean()))
            priors[f"{q}_scale"] = float(max(lq.std(), 1e-3) / math.sqrt(strength))
            z0[q] = np.full(K, lq.mean()) if per_arm else np.asarray(lq.mean())
        return WarmStart(fam.name, priors, z0, per_arm, K, float(strength))
    p = flat("p")
    K = p.shape[1]
    m, a, b = _beta_match(p, strength)
    priors = {"p_a": a, "p_b": b}
    z0 = {"p": np.log(m / (1 - m))}
    for q in fam.params:
        lq = np.log(flat(q))
        mu_q, sd_q = lq.mean(0), np.maximum(lq.std(0), 1e-3) / math.sqrt(strength)
        priors[f"{q}_loc"] = np.exp(mu_q) if per_arm else float(np.exp(mu_q))
        priors[f"{q}_scale"] = sd_q if per_arm else float(sd_q)
        z0[q] = mu_q
    return WarmStart(fam.name, priors, z0, per_arm, K, float(strength))
