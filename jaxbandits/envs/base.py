"""The world protocol (gymnax style: a world's parameters are a pytree one can vmap over; what
changes lives in a separate state). :class:`World` holds everything the engine reads; a world of
one's own subclasses it (docs/envs.md, "A world of your own")::

    n_arms: int                      # number of actions K (static)
    dim: int | None                  # feature dimension of linear worlds (static), else None
    adversarial: bool                # True: outcome() reports all_rewards; regret is against the
                                     #   best arm in hindsight (conventions §7)
    delay: DelayLaw | None           # the delay law, if the world has one (sizes the calendar,
                                     #   delayed regret L(t)); None: no law (see max_delay)
    max_delay: int                   # largest delay the world can produce (NEVER if unbounded)
    setup(key) -> state                                   # SETUP stream
    context(state, t, key) -> (features | None, mask | None)   # CONTEXT stream
    means(state, t, features) -> f32[K]                   # expected total reward of each action
    delay_at(state, t, v) -> i32                          # the delay of round t from uniform v
    outcome(state, t, action, u, v, features, key) -> (Outcome, state)

``u`` (REWARD stream) and ``v`` (DELAY stream) are the round's two uniforms (conventions §8):
one ``u`` per round coupled across arms, ``r = 1{u < mu[A]}``; ``d = F^-1(v)``. ``key`` is the
round's WORLD-stream key, for any other draw.
"""
from __future__ import annotations

import jax.numpy as jnp
from jax.scipy.special import ndtri

from ..core.pytree import pytree, static  # noqa: F401  (re-exported for the worlds)
from ..core.types import Outcome

_F = jnp.float32


def draw_reward(mean, u, noise: str, sigma):
    """The realised reward from the round's uniform: Bernoulli ``1{u < mean}`` or Gaussian ``mean + sigma Phi^-1(u)``.

    Args:
        mean: the expected reward (an array).
        u: the round's REWARD uniform (conventions §8).
        noise: ``"bernoulli"`` or ``"gaussian"``.
        sigma: the Gaussian noise's scale.

    Returns:
        f32, the reward.

    Examples:
        >>> import jax.numpy as jnp
        >>> from jaxbandits.envs import base
        >>> float(base.draw_reward(jnp.float32(0.3), 0.2, "bernoulli", 0.0))
        1.0
    """
    if noise == "bernoulli":
        return (u < mean).astype(_F)
    return (mean + sigma * ndtri(u)).astype(_F)


class _Default:
    """A default of the World protocol that a subclass may redeclare as a dataclass field without a
    default (reading it on the class raises AttributeError, so dataclasses do not take it as the
    field's default; instances without the field read ``value``)."""

    def __init__(self, value):
        self.value = value

    def __set_name__(self, owner, name):
        self.name = name

    def __get__(self, obj, owner=None):
        if obj is None:
            raise AttributeError(self.name)
        return self.value


class World:
    """The world protocol, with defaults: no context, no state, delays from ``self.delay``.

    A subclass must set ``n_arms`` and define ``means`` and ``outcome``; everything else has a
    default. Make it a pytree (``@pytree``, from ``jaxbandits.envs.base``) to ``vmap`` over its parameters."""

    n_arms: int
    adversarial = False
    dim = None
    delay = _Default(None)
    noise = _Default("bernoulli")  # how _outcome draws a reward from its mean: "bernoulli" or "gaussian"
    sigma = _Default(0.0)  # the Gaussian noise's scale

    @property
    def max_horizon(self):
        """The most rounds the world has data for (a table's or a delay sequence's length), or None:
        unbounded. ``simulate`` refuses a longer horizon (the data would be repeated silently)."""
        from ..core.delays import Sequence

        return int(self.delay.delays.shape[0]) if isinstance(self.delay, Sequence) else None

    def means(self, state, t, features):
        raise NotImplementedError(f"{type(self).__name__} must define means(state, t, features)")

    def outcome(self, state, t, action, u, v, features, key):
        raise NotImplementedError(f"{type(self).__name__} must define outcome(state, t, action, u, v, features, key)")

    def setup(self, key):
        del key
        return jnp.zeros((), jnp.int32)

    def context(self, state, t, key):
        del state, t, key
        return None, None

    def delay_at(self, state, t, v):
        del state
        if self.delay is None:
            return jnp.zeros((), jnp.int32)
        return self.delay.draw(v, t)

    @property
    def max_delay(self) -> int:
        """Largest delay the world can produce (``NEVER`` if unbounded): sizes the calendar."""
        return 0 if self.delay is None else self.delay.support_max

    def _outcome(self, mean, u, v, t, state, **kw):
        r = draw_reward(mean, u, self.noise, self.sigma)
        return Outcome(reward=r, delay=self.delay_at(state, t, v), **kw), state
