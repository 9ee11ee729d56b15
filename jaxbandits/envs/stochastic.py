"""Stochastic K-armed worlds: Bernoulli, Gaussian, and conversions (Bernoulli x delay law)."""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from ..core import validate as V
from ..core import delays as D
from ..core.types import Outcome
from .base import World, pytree, static
from ..core.values import constructor

_F = jnp.float32


@pytree
class BanditEnv(World):
    """``K`` arms with means ``means``; each reward arrives after a delay drawn from ``delay``.

    Attributes:
        means_: f32[K], the arms' means.
        delay: the delay law.
        sigma: the Gaussian noise's scale.
        n_arms: ``K``.
        noise: ``"bernoulli"`` or ``"gaussian"``.
    """

    means_: jax.Array
    delay: D.DelayLaw
    sigma: jax.Array
    n_arms: int = static()
    noise: str = static("bernoulli")

    def means(self, state, t, features):
        del state, t, features
        return self.means_

    def outcome(self, state, t, action, u, v, features, key):
        return self._outcome(self.means_[action], u, v, t, state)


def check_delay(delay):
    """Check a world's ``delay`` argument.

    Args:
        delay: a :mod:`jaxbandits.core.delays` law, or None (no delay).

    Returns:
        The law (``delays.fixed(0)`` for None).

    Raises:
        TypeError: ``delay`` is not a delay law.

    Examples:
        >>> from jaxbandits import delays
        >>> from jaxbandits.envs import stochastic
        >>> stochastic.check_delay(None).support_max
        0
    """
    if delay is None:
        return D.fixed(0)
    if not isinstance(delay, D.DelayLaw):
        raise TypeError(f"delay must be a jaxbandits.core.delays law, got {type(delay).__name__}")
    return delay


def as_means(name, means, lo=None, hi=None):
    """Check ``means`` (a 1-d array of at least 2 arms in ``[lo, hi]``) and return it as float32.

    Args:
        name: the parameter's name, for errors.
        means: the arms' means.
        lo: the smallest allowed value, or None.
        hi: the largest allowed value, or None.

    Returns:
        f32[K].

    Raises:
        ValueError: naming ``name`` and the range.

    Examples:
        >>> from jaxbandits.envs import stochastic
        >>> stochastic.as_means("means", [0.2, 0.5], 0, 1).dtype
        dtype('float32')
        >>> stochastic.as_means("means", [0.2, 1.5], 0, 1)
        Traceback (most recent call last):
        ...
        ValueError: means must lie in [0, 1], got [0.2, 1.5]
    """
    check_means(name, means, lo, hi)
    return jnp.asarray(means, _F)


def check_means(name, means, lo=None, hi=None):
    """Check ``means`` as :func:`as_means` does, without converting it.

    Args:
        name: the parameter's name, for errors.
        means: the arms' means.
        lo: the smallest allowed value, or None.
        hi: the largest allowed value, or None.

    Returns:
        None.

    Raises:
        ValueError: naming ``name`` and the range.

    Examples:
        >>> from jaxbandits.envs import stochastic
        >>> stochastic.check_means("means", [0.2, 0.5], 0, 1)
    """
    if V.is_concrete(means):
        V.real(name, means, lo=lo, hi=hi)
        if np.ndim(means) != 1 or np.size(means) < 2:
            raise ValueError(f"{name} must be a 1-d array of at least 2 arms, got shape {np.shape(means)}")
        if np.size(means) > V.MAX_ARMS:
            raise ValueError(f"{name} must have at most 2**20 = {V.MAX_ARMS} arms, got {np.size(means)}")


@constructor
def bernoulli(means, delay=None) -> BanditEnv:
    """Bernoulli arms with success probabilities ``means``; each reward arrives after a delay.

    Args:
        means: each arm's success probability, in ``[0, 1]`` (at least 2 arms, at most ``2**20``).
        delay: a :mod:`jaxbandits.core.delays` law, or None (no delay).

    Returns:
        The world (:class:`BanditEnv`).

    Raises:
        ValueError: ``means`` out of range.
        TypeError: ``delay`` is not a delay law.

    Examples:
        >>> from jaxbandits import delays, envs
        >>> world = envs.bernoulli([0.2, 0.5], delay=delays.geometric(mean=5.0))
        >>> world.n_arms, world.means(None, 0, None).tolist()
        (2, [0.20000000298023224, 0.5])
    """
    check_means("means", means, 0.0, 1.0)
    delay = check_delay(delay)
    m = as_means("means", means, 0.0, 1.0)
    return BanditEnv(m, delay, jnp.asarray(0.0, _F), n_arms=m.shape[0], noise="bernoulli")


@constructor
def gaussian(means, sigma=1.0, delay=None) -> BanditEnv:
    """Gaussian arms ``N(means[a], sigma^2)``.

    ``|means| <= 1e30`` and ``sigma <= 1e30``: rewards and their sums over any accepted horizon stay
    finite in float32.

    Args:
        means: each arm's mean.
        sigma: the noise's standard deviation.
        delay: a :mod:`jaxbandits.core.delays` law, or None.

    Returns:
        The world (:class:`BanditEnv`).

    Raises:
        ValueError: ``means`` or ``sigma`` out of range.
        TypeError: ``delay`` is not a delay law.

    Examples:
        >>> from jaxbandits import envs
        >>> envs.gaussian([0.0, 1.0], sigma=0.5).noise
        'gaussian'
    """
    check_means("means", means, -V.MAX_GAUSSIAN, V.MAX_GAUSSIAN)
    V.positive("sigma", sigma, hi=V.MAX_GAUSSIAN)
    delay = check_delay(delay)
    m = as_means("means", means, -V.MAX_GAUSSIAN, V.MAX_GAUSSIAN)
    return BanditEnv(m, delay, jnp.asarray(sigma, _F), n_arms=m.shape[0], noise="gaussian")


@constructor
def conversions(theta, delay) -> BanditEnv:
    """Delayed conversions (Vernade et al. 2017).

    A play of arm ``a`` converts with probability ``theta[a]``; a conversion is observed
    ``D ~ delay`` rounds later. The expected reward of an arm is ``theta[a]`` (conversions that
    arrive late or never still count: conventions §7).

    Args:
        theta: each arm's conversion probability, in ``[0, 1]``.
        delay: the delay law (:mod:`jaxbandits.core.delays`).

    Returns:
        The world (:class:`BanditEnv`).

    Raises:
        ValueError: ``theta`` out of range.
        TypeError: ``delay`` is not a delay law.

    Examples:
        >>> from jaxbandits import delays, envs
        >>> envs.conversions([0.1, 0.3], delays.fixed(4)).max_delay
        4
    """
    if delay is None:
        raise ValueError("delay must be given for a conversions world (a jaxbandits.core.delays law)")
    check_means("theta", theta, 0.0, 1.0)  # errors name theta, the parameter given here
    return bernoulli(theta, delay)


@pytree
class ArmDelayEnv(World):
    """Conversions whose delay law depends on the arm: ``laws[a]`` for arm ``a`` (all arms read the
    round's one DELAY uniform ``v``, conventions §8).

    Attributes:
        means_: f32[K], the conversion probabilities.
        laws: one delay law per arm.
        n_arms: ``K``.
    """

    means_: jax.Array
    laws: tuple
    n_arms: int = static()
    noise = "bernoulli"

    @property
    def max_delay(self):
        return max(int(l.support_max) for l in self.laws)

    def means(self, state, t, features):
        return self.means_

    def outcome(self, state, t, action, u, v, features, key):
        d = jax.lax.switch(action, [lambda l=l: jnp.asarray(l.draw(v, t), jnp.int32) for l in self.laws])
        return Outcome(reward=(u < self.means_[action]).astype(_F), delay=d), state


@constructor
def conversions_arm_delays(theta, delays) -> ArmDelayEnv:
    """Delayed conversions with one delay law per arm.

    Arms that convert equally often may convert at different speeds (the Bayesian per-arm delay
    models' world); all arms read the round's one DELAY uniform (conventions §8).

    Args:
        theta: each arm's conversion probability, in ``[0, 1]``.
        delays: one delay law per arm.

    Returns:
        The world (:class:`ArmDelayEnv`).

    Raises:
        ValueError: ``theta`` out of range or ``delays`` of the wrong length.
        TypeError: an entry of ``delays`` is not a delay law.

    Examples:
        >>> from jaxbandits import delays
        >>> from jaxbandits.envs import stochastic
        >>> stochastic.conversions_arm_delays([0.1, 0.1], [delays.fixed(2), delays.fixed(8)]).max_delay
        8
    """
    check_means("theta", theta, 0.0, 1.0)
    laws = tuple(check_delay(l) for l in delays)
    if len(laws) != np.shape(theta)[0]:
        raise ValueError(f"delays must give one law per arm ({np.shape(theta)[0]}), got {len(laws)}")
    m = as_means("theta", theta, 0.0, 1.0)
    return ArmDelayEnv(m, laws, n_arms=m.shape[0])
