"""The world protocol (gymnax style: a world's parameters are a pytree one can vmap over; what
changes lives in a separate state).

A world provides::

    n_arms (static), dim (static or None), adversarial (static bool)
    setup(key) -> state                                   # SETUP stream
    context(state, t, key) -> (features | None, mask | None)   # CONTEXT stream
    means(state, t, features) -> f32[K]                   # expected total reward of each action
    delay_at(state, t, v) -> i32                          # the delay of round t from uniform v
    outcome(state, t, action, u, v, features, key) -> (Outcome, state)

``u`` (REWARD stream) and ``v`` (DELAY stream) are the round's two uniforms (conventions §8):
one ``u`` per round coupled across arms, ``r = 1{u < mu[A]}``; ``d = F^-1(v)``.
"""
from __future__ import annotations

import jax.numpy as jnp
from jax.scipy.special import ndtri

from .._pytree import pytree, static  # noqa: F401  (re-exported for the worlds)
from ..types import Outcome

_F = jnp.float32


def draw_reward(mean, u, noise: str, sigma):
    """Realised reward from the round's uniform: Bernoulli ``1{u < mean}`` or Gaussian
    ``mean + sigma Phi^-1(u)``."""
    if noise == "bernoulli":
        return (u < mean).astype(_F)
    return (mean + sigma * ndtri(u)).astype(_F)


class World:
    """Defaults shared by the worlds."""

    adversarial = False
    dim = None

    def setup(self, key):
        del key
        return jnp.zeros((), jnp.int32)

    def context(self, state, t, key):
        del state, t, key
        return None, None

    def delay_at(self, state, t, v):
        del state
        return self.delay.draw(v, t)

    @property
    def max_delay(self) -> int:
        """Largest delay the world can produce (``NEVER`` if unbounded): sizes the calendar."""
        return self.delay.support_max

    def _outcome(self, mean, u, v, t, state, **kw):
        r = draw_reward(mean, u, self.noise, getattr(self, "sigma", 0.0))
        return Outcome(reward=r, delay=self.delay_at(state, t, v), **kw), state
