"""From a fitted delay model to the delay laws a simulation takes.

The discrete-time models and the simulator's laws use the same discretisation (``D = floor(X)``), so
each family maps onto one law of :mod:`jaxbandits.delays` with the same CDF (its
:meth:`~jaxbandits.bayes.families.Family.law`):

* exponential / geometric (mean ``m``): ``delays.exponential(scale=m)``;
* Weibull (mean ``m``, shape ``k``): ``delays.weibull(k, m / Gamma(1 + 1/k))``;
* log-normal (median ``q``, sigma ``s``): ``delays.log_normal(log q, s)``;
* histogram (bin weights ``w`` on the integer edges ``e``, uniform within a bin):
  ``delays.histogram`` with ``P(D = d) = w_b / (e_{b+1} - e_b)`` for ``e_b <= d < e_{b+1}``.
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from .. import delays as D
from .families import Family, family

__all__ = ["delay_law", "delay_laws"]


def delay_law(fam, params: dict) -> D.DelayLaw:
    """The :mod:`jaxbandits.delays` law of one parameter set ``params`` (scalars, or the bin
    weights of the histogram) of the family ``fam`` (a name or a :class:`Family`)."""
    fam = fam if isinstance(fam, Family) else family(fam)
    return fam.law({k: np.asarray(v, np.float64) for k, v in params.items()})


def family_of(idata) -> Family:
    name = idata.posterior.attrs.get("model")  # where fit() writes its attributes
    if name is None and hasattr(idata, "attrs"):
        name = idata.attrs.get("model")
    if name is None:
        raise ValueError("idata has no attrs['model']: pass a fit() result")
    return family(name).from_posterior(idata.posterior)  # the histogram reads its bin edges back


def delay_laws(idata, draws: Optional[int] = None, seed: int = 0):
    """The fitted delay law(s) of a :func:`jaxbandits.bayes.fit` result, for a simulation.

    ``draws=None``: the law at the posterior mean of each delay parameter; an int ``n``: a list of
    ``n`` laws at posterior draws picked at random (``seed``), for a simulation that averages over the
    posterior. A model with one law per arm gives a tuple of laws (one per arm, for
    :func:`jaxbandits.envs.conversions_arm_delays`) in place of each law.
    """
    fam = family_of(idata)
    post = idata.posterior
    vals = {k: post[k].values.reshape((-1,) + post[k].shape[2:]) for k in fam.params}
    n_all = next(iter(vals.values())).shape[0]
    per_arm = "arm" in post[fam.params[0]].dims

    def law_at(th):
        if per_arm:
            K = next(iter(th.values())).shape[0]
            return tuple(delay_law(fam, {k: v[a] for k, v in th.items()}) for a in range(K))
        return delay_law(fam, th)

    if draws is None:
        return law_at({k: v.mean(0) for k, v in vals.items()})
    if not isinstance(draws, (int, np.integer)) or isinstance(draws, bool) or not 1 <= draws <= n_all:
        raise ValueError(f"draws must be None or an integer in [1, {n_all}] (the posterior's draws), got {draws!r}")
    idx = np.random.default_rng(seed).choice(n_all, size=int(draws), replace=False)
    return [law_at({k: v[i] for k, v in vals.items()}) for i in idx]
