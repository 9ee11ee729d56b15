"""Composite worlds (Wang, Wang and Huang 2021): the reward ``X ~ Bernoulli(s_a)`` of a pull is
spread over the next rounds by a profile ``w`` (``w[l]`` lands at lag ``l``, ``sum w = 1``).
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from .. import _validate as V
from .. import delays as D
from ..types import NEVER, Outcome
from .base import World, pytree, static
from .stochastic import _check_delay, _means

_F = jnp.float32


@pytree
class CompositeEnv(World):
    means_: jax.Array
    profile: jax.Array  # [L] fixed split, or [0] when the split is a one-point delay law
    delay: D.DelayLaw
    n_arms: int = static()
    noise = "bernoulli"

    @property
    def max_delay(self):
        if self.profile.shape[0] > 0:
            return self.profile.shape[0] - 1
        return self.delay.support_max

    def means(self, state, t, features):
        return self.means_

    def outcome(self, state, t, action, u, v, features, key):
        r = (u < self.means_[action]).astype(_F)
        if self.profile.shape[0] > 0:
            return Outcome(reward=r, delay=jnp.asarray(0, jnp.int32), profile=self.profile), state
        return Outcome(reward=r, delay=self.delay_at(state, t, v), profile=None), state


def composite(means, profile=None, delay=None) -> CompositeEnv:
    """Bernoulli totals ``s_a = means[a]`` spread by ``profile`` (a fixed split over lags
    ``0..L-1``, normalised here) or, with ``delay``, landing whole after a random delay."""
    m = _means("means", means, 0.0, 1.0)
    if (profile is None) == (delay is None):
        raise ValueError("composite: give exactly one of profile (a split over lags) or delay (a law)")
    if profile is not None:
        V.real("profile", profile, lo=0.0)
        p = np.asarray(profile, np.float64)
        if p.ndim != 1 or p.size == 0 or p.sum() <= 0:
            raise ValueError(f"profile must be a non-empty 1-d array with positive mass, got {p!r}")
        prof = jnp.asarray(p / p.sum(), _F)
        delay = D.fixed(0)
    else:
        prof = jnp.zeros((0,), _F)
    return CompositeEnv(m, prof, _check_delay(delay), n_arms=m.shape[0])
