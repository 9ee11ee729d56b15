"""Composite worlds (Wang, Wang and Huang 2021): the reward ``X ~ Bernoulli(s_a)`` of a pull is
spread over the next rounds by a profile ``w`` (``w[l]`` lands at lag ``l``, ``sum w = 1``).
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from ..core import validate as V
from ..core import delays as D
from ..core.types import Outcome
from .base import World, pytree, static
from .stochastic import check_delay, check_means, as_means
from ..core.values import constructor

_F = jnp.float32


@pytree
class CompositeEnv(World):
    """A composite world (made by :func:`composite`).

    Attributes:
        means_: f32[K], the totals' means.
        table: ``[T, K]`` oblivious totals (or ``[0, K]``: Bernoulli ``means_``).
        profile: f32[L], the fixed split over lags, or ``[0]`` when the split is a one-point delay.
        delay: the delay law.
        concentration: f32, ``kappa`` of Beta totals (``total="beta"``).
        n_arms: ``K``.
        total: the distribution of a pull's total: ``"bernoulli"`` or ``"beta"``.
    """
    means_: jax.Array
    table: jax.Array  # [T, K] oblivious totals X_t[a] (or [0, K]: Bernoulli(means_))
    profile: jax.Array  # [L] fixed split, or [0] when the split is a one-point delay law
    delay: D.DelayLaw
    concentration: jax.Array  # f32 kappa of Beta totals (total="beta")
    n_arms: int = static()
    total: str = static("bernoulli")  # distribution of a pull's total X: "bernoulli" or "beta"
    noise = "bernoulli"

    @property
    def max_delay(self):
        if self.profile.shape[0] > 0:
            return self.profile.shape[0] - 1
        return self.delay.support_max

    def means(self, state, t, features):
        if self.table.shape[0] > 0:
            return self.table[jnp.clip(t, 0, self.table.shape[0] - 1)]
        return self.means_

    def outcome(self, state, t, action, u, v, features, key):
        if self.table.shape[0] > 0:
            r = self.table[jnp.clip(t, 0, self.table.shape[0] - 1), action]
        elif self.total == "beta":  # Beta(s k, (1-s) k): same mean, from the WORLD stream
            s = jnp.clip(self.means_[action], 1e-6, 1 - 1e-6)
            # jax.random.beta: exact for every shape (s k or (1 - s) k is below 1 for most means) and
            # scalar ones (mathlib.beta_sample takes arrays of shapes >= 1)
            r = jax.random.beta(key, s * self.concentration, (1 - s) * self.concentration).astype(_F)
        else:
            r = (u < self.means_[action]).astype(_F)
        if self.profile.shape[0] > 0:
            return Outcome(reward=r, delay=jnp.asarray(0, jnp.int32), profile=self.profile), state
        return Outcome(reward=r, delay=self.delay_at(state, t, v), profile=None), state


@constructor
def composite(means=None, profile=None, delay=None, table=None, total: str = "bernoulli",
              concentration: float = 2.0) -> CompositeEnv:
    """A composite world (Wang et al. 2021): a pull's total reward is spread over the following rounds.

    Bernoulli totals ``s_a = means[a]`` (or an oblivious ``table``) spread by ``profile`` or, with
    ``delay``, landing whole after a delay drawn from that law. ``total="beta"`` draws the total from
    ``Beta(s_a k, (1 - s_a) k)`` (``k = concentration``) instead: same mean (Wang et al. 2021 give
    only the means).

    Args:
        means: f[K], the totals' means in ``[0, 1]``.
        profile: a fixed split over lags ``0..L-1`` (normalised here), or a
            :class:`jaxbandits.core.profiles.Profile`.
        delay: a delay law (a sequence law: given per round), instead of ``profile``.
        table: ``[T, K]`` oblivious totals in ``[0, 1]``, instead of ``means``.
        total: ``"bernoulli"`` or ``"beta"``.
        concentration: the Beta totals' ``k``, ``> 0``.

    Returns:
        The world (:class:`CompositeEnv`).

    Raises:
        ValueError: both or neither of ``means`` and ``table``, or of ``profile`` and ``delay``;
            values out of range.

    Examples:
        >>> from jaxbandits import envs
        >>> world = envs.composite(means=[0.3, 0.6], profile=[1, 1, 2])
        >>> world.profile.tolist(), world.max_delay
        ([0.25, 0.25, 0.5], 2)
    """
    V.choice("total", total, ("bernoulli", "beta"))
    V.positive("concentration", concentration)
    if (means is None) == (table is None):
        raise ValueError("composite: give exactly one of means ([K]) or table ([T, K])")
    if table is not None:
        V.real("table", table, lo=0.0, hi=1.0)
        if np.ndim(table) != 2 or np.shape(table)[1] < 2:
            raise ValueError(f"table must have shape [T, K] with K >= 2, got {tuple(np.shape(table))}")
    else:
        check_means("means", means, 0.0, 1.0)
    if (profile is None) == (delay is None):
        raise ValueError("composite: give exactly one of profile (a split over lags) or delay (a law)")
    if profile is not None:
        V.real("profile", profile, lo=0.0)
        p = np.asarray(profile, np.float64)
        if p.ndim != 1 or p.size == 0 or p.sum() <= 0:
            raise ValueError(f"profile must be a non-empty 1-d array with positive mass, got {p!r}")
    delay = check_delay(delay) if profile is None else delay
    # every check passed: build the arrays
    if table is not None:
        tab = jnp.asarray(table, _F)
        m = jnp.zeros((tab.shape[1],), _F)
    else:
        m = as_means("means", means, 0.0, 1.0)
        tab = jnp.zeros((0, m.shape[0]), _F)
    if profile is not None:
        prof = jnp.asarray(p / p.sum(), _F)
        delay = D.fixed(0)
    else:
        prof = jnp.zeros((0,), _F)
    return CompositeEnv(m, tab, prof, check_delay(delay), jnp.asarray(concentration, _F), n_arms=m.shape[0],
                        total=total)
