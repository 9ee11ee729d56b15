"""Linear worlds: a finite action set in R^d (fixed, or fresh each round), reward mean
``<theta, x>`` (Bernoulli with that probability, or Gaussian noise)."""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from ..core import validate as V
from ..core import delays as D
from .base import World, pytree, static
from .stochastic import check_delay
from ..core.values import constructor

_F = jnp.float32
ACTION_SETS = ("fixed", "binary", "uniform", "gaussian", "sphere")


@pytree
class LinearEnv(World):
    """A linear world (made by :func:`linear`).

    Attributes:
        theta: f32[d], the parameter.
        features: f32[K, d], the fixed action set (unused with fresh actions).
        delay: the delay law.
        sigma: the Gaussian noise's scale.
        n_arms: ``K``, the actions per round.
        dim: ``d``.
        action_set: ``"fixed"``, ``"binary"``, ``"uniform"``, ``"gaussian"`` or ``"sphere"``.
        noise: ``"bernoulli"`` or ``"gaussian"``.
        normalize: every action scaled to unit L2 norm.
        n_valid: ``> 0``: only the first ``n_valid`` rows exist (the rest is padding, masked).
        min_valid: ``> 0``: ``K_t`` is drawn uniformly from ``{min_valid..n_valid}`` each round.
    """
    theta: jax.Array
    features: jax.Array  # [K, d] for a fixed set (unused otherwise)
    delay: D.DelayLaw
    sigma: jax.Array
    n_arms: int = static()
    dim: int = static()
    action_set: str = static("fixed")
    noise: str = static("bernoulli")
    normalize: bool = static(False)
    n_valid: int = static(0)  # > 0: only the first n_valid rows exist (the rest is padding, masked)
    min_valid: int = static(0)  # > 0: K_t ~ uniform{min_valid..n_valid or K} each round (varying sets)

    def context(self, state, t, key):
        del state, t
        x = self._draw(key)
        if self.normalize:  # L2-normalise each action (Vernade et al. 2020); zero draws were redrawn
            x = x / jnp.maximum(jnp.linalg.norm(x, axis=-1, keepdims=True), 1e-12)
        if not self.masked:  # every action exists: no mask (a policy that ignores masks may play it)
            return x, None
        valid = self.n_valid or self.n_arms
        if self.min_valid:  # K_t drawn each round (from the CONTEXT stream, before the action)
            u = jax.random.uniform(jax.random.fold_in(key, 7))
            valid = self.min_valid + jnp.floor(u * (valid - self.min_valid + 1)).astype(jnp.int32)
        return x, jnp.arange(self.n_arms) < valid

    @property
    def masked(self) -> bool:
        """Whether the context masks actions (``n_valid`` or ``min_valid`` given): then only a
        policy that honours masks (``Policy.honours_mask``) runs on it."""
        return bool(self.n_valid or self.min_valid)

    def _draw(self, key):
        K, d = self.n_arms, self.dim
        if self.action_set == "fixed":
            x = self.features
        elif self.action_set == "binary":
            # redraw all-zero vectors (they cannot be normalised): 4 fresh draws per row, then e_0
            # (probability 2^-(5d) per row: never in practice)
            keys = jax.random.split(key, 5)
            x = jax.random.bernoulli(keys[0], 0.5, (K, d)).astype(_F)
            for k in keys[1:]:
                zero = jnp.all(x == 0, axis=-1, keepdims=True)
                x = jnp.where(zero, jax.random.bernoulli(k, 0.5, (K, d)).astype(_F), x)
            x = jnp.where(jnp.all(x == 0, axis=-1, keepdims=True), jnp.eye(d, dtype=_F)[0], x)
        elif self.action_set == "uniform":
            x = jax.random.uniform(key, (K, d), _F)
        elif self.action_set == "gaussian":
            x = jax.random.normal(key, (K, d), _F)
        else:  # sphere
            g = jax.random.normal(key, (K, d), _F)
            x = g / jnp.linalg.norm(g, axis=-1, keepdims=True)
        return x

    def means(self, state, t, features):
        m = features @ self.theta
        return jnp.clip(m, 0.0, 1.0) if self.noise == "bernoulli" else m

    def outcome(self, state, t, action, u, v, features, key):
        return self._outcome(self.means(state, t, features)[action], u, v, t, state)


@constructor
def linear(theta, n_actions=None, features=None, action_set=None, noise="bernoulli", sigma=1.0, delay=None,
           normalize: bool = False, n_valid: int = 0, min_valid: int = 0):
    """A linear bandit with parameter ``theta``: the mean reward of action ``x`` is ``<theta, x>``.

    Either a fixed action set ``features`` or ``n_actions`` fresh actions each round drawn from
    ``action_set``. Bernoulli rewards use the probability ``clip(<theta, x>, 0, 1)``.

    Args:
        theta: f[d], the parameter.
        n_actions: the number of fresh actions per round (with ``action_set``).
        features: f[K, d], a fixed action set.
        action_set: ``"binary"`` (``{0,1}^d``), ``"uniform"`` (``[0,1]^d``), ``"gaussian"`` or
            ``"sphere"``.
        noise: ``"bernoulli"`` or ``"gaussian"``.
        sigma: the Gaussian noise's scale.
        delay: a :mod:`jaxbandits.core.delays` law, or None.
        normalize: scale every action to unit L2 norm (Vernade et al. 2020's "from {0,1}^d,
            normalised"; all-zero binary draws are redrawn).
        n_valid: only the first ``n_valid`` actions exist each round; the rest are padding, masked
            out of the policy's choice and of the regret's comparator (only policies that honour
            masks, ``Policy.honours_mask``, run on a world with ``n_valid`` or ``min_valid``).
        min_valid: with ``n_valid``, the number of actions ``K_t`` is drawn uniformly from
            ``{min_valid..n_valid}`` every round.

    Returns:
        The world (:class:`LinearEnv`).

    Raises:
        ValueError: neither ``features`` nor ``n_actions`` with an ``action_set``, an unknown
            ``action_set`` or ``noise``, or values out of range.

    Examples:
        >>> import numpy as np
        >>> from jaxbandits import envs
        >>> world = envs.linear(np.ones(5) / 5, n_actions=10, action_set="binary", normalize=True)
        >>> world.n_arms, world.dim
        (10, 5)
    """
    V.real("theta", theta)
    if np.ndim(theta) != 1:
        raise ValueError(f"theta must be 1-d, got shape {np.shape(theta)}")
    d = np.shape(theta)[0]
    V.choice("noise", noise, ("bernoulli", "gaussian"))
    V.positive("sigma", sigma, hi=V.MAX_GAUSSIAN)
    if features is not None:
        V.real("features", features)
        if np.ndim(features) != 2 or np.shape(features)[1] != d:
            raise ValueError(f"features must have shape [K, {d}] to match theta, got {tuple(np.shape(features))}")
        if action_set not in (None, "fixed"):
            raise ValueError("give either features (a fixed set) or action_set, not both")
        K, kind = np.shape(features)[0], "fixed"
        if V.is_concrete(theta) and V.is_concrete(features):
            m = np.abs(np.asarray(features, np.float64) @ np.asarray(theta, np.float64))
            if not (m <= V.MAX_GAUSSIAN).all():
                raise ValueError(f"the means <theta, x> of features and theta must satisfy |mean| <= 1e30 (float32 "
                                 f"sums stay finite), got {m.max():.3g}")
    else:
        if n_actions is None:
            raise ValueError("linear: give features ([K, d]) or n_actions with an action_set")
        K = V.integer("n_actions", n_actions, lo=2, hi=V.MAX_ARMS)
        kind = action_set or "binary"
        V.choice("action_set", kind, ACTION_SETS[1:])
        if V.is_concrete(theta):  # |<theta, x>| <= ||theta||_1 max|x_i| (gaussian: |x_i| < 6 in float32)
            b = np.abs(np.asarray(theta, np.float64)).sum() * (6.0 if kind == "gaussian" else 1.0)
            if b > V.MAX_GAUSSIAN:
                raise ValueError(f"theta must keep the means <theta, x> within 1e30 (float32 sums stay finite): "
                                 f"||theta||_1 = {b:.3g} is too large")
    if n_valid:
        n_valid = V.integer("n_valid", n_valid, lo=1, hi=K)
    if min_valid:
        min_valid = V.integer("min_valid", min_valid, lo=1, hi=n_valid or K)
    delay = check_delay(delay)
    th = jnp.asarray(theta, _F)
    f = jnp.asarray(features, _F) if features is not None else jnp.zeros((K, d), _F)
    return LinearEnv(th, f, delay, jnp.asarray(sigma, _F), n_arms=K, dim=d,
                     action_set=kind, noise=noise, normalize=bool(normalize), n_valid=int(n_valid),
                     min_valid=int(min_valid))
