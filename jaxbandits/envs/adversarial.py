"""Oblivious adversarial worlds: a reward (1 - loss) table and a delay sequence fixed in advance.

The world reports every arm's reward of the round (``Outcome.all_rewards``), so the simulator can
track the cumulative reward ``G(t)`` of every arm and regret against the best arm in hindsight.
"""
from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ..core import validate as V
from ..core import delays as D
from ..core.mathlib import uniforms
from ..core.types import Outcome
from .base import World, pytree, static
from .stochastic import check_delay
from ..core.values import constructor

_F = jnp.float32


@pytree
class ObliviousEnv(World):
    """An oblivious adversarial world (made by :func:`oblivious`, :func:`switching` or
    :func:`bernoulli_losses`).

    Attributes:
        rewards: ``[T, K]`` reward table, or ``[P, K]`` per-phase means when generated.
        delay: the delay law (a sequence law for a delay sequence).
        salt: i32, folded into the world key of independent draws (a seed axis on a grid).
        n_arms: ``K``.
        period: 0: ``rewards`` is a table; else phases of this length, Bernoulli draws.
        independent: Bernoulli draws independent across arms (else one coupled uniform).
    """
    rewards: jax.Array  # [T, K] table, or [P, K] per-phase means when generated
    delay: D.DelayLaw
    salt: jax.Array  # i32 folded into the world key of independent draws (a seed axis on a grid)
    n_arms: int = static()
    period: int = static(0)  # 0: rewards is a table; else phases of this length, Bernoulli draws
    independent: bool = static(False)  # Bernoulli draws independent across arms (else one coupled uniform)
    adversarial = True
    noise = "bernoulli"

    @property
    def max_horizon(self):
        own = int(self.rewards.shape[0]) if self.period == 0 else None  # a table: one row per round
        return min((n for n in (own, super().max_horizon) if n is not None), default=None)

    def _row(self, t, u, key=None):
        if self.period == 0:
            return self.rewards[jnp.clip(t, 0, self.rewards.shape[0] - 1)]
        mu = self.rewards[(t // self.period) % self.rewards.shape[0]]
        if self.independent:  # one uniform per arm from the WORLD stream: fixed before the game
            return (uniforms(jax.random.fold_in(key, self.salt), self.n_arms) < mu).astype(_F)
        return (u < mu).astype(_F)  # one uniform per round, coupled across arms (conventions §8)

    def means(self, state, t, features):
        # expected reward per arm (for a table: the table itself)
        if self.period == 0:
            return self._row(t, 0.0)
        return self.rewards[(t // self.period) % self.rewards.shape[0]]

    def outcome(self, state, t, action, u, v, features, key):
        row = self._row(t, u, key)
        return Outcome(reward=row[action], delay=self.delay_at(state, t, v), all_rewards=row), state


@constructor
def oblivious(losses, delays=None) -> ObliviousEnv:
    """An oblivious adversary given as arrays.

    Args:
        losses: ``[T, K]`` losses in ``[0, 1]`` (the reward is ``1 - loss``).
        delays: an optional delay sequence ``delays[t]`` (or any delay law).

    Returns:
        The world (:class:`ObliviousEnv`); its horizon is at most ``T``.

    Raises:
        ValueError: losses outside ``[0, 1]`` or of the wrong shape, or a bad delay sequence.

    Examples:
        >>> import numpy as np
        >>> from jaxbandits import envs
        >>> world = envs.oblivious(np.array([[0.0, 1.0], [1.0, 0.0], [0.5, 0.5]]), delays=[0, 1, 0])
        >>> world.n_arms, world.max_horizon
        (2, 3)
    """
    V.real("losses", losses, lo=0.0, hi=1.0)
    l = np.asarray(losses, np.float64)
    if l.ndim != 2 or l.shape[1] < 2:
        raise ValueError(f"losses must have shape [T, K] with K >= 2, got {l.shape}")
    if delays is not None and not isinstance(delays, D.DelayLaw):
        if np.ndim(delays) == 1 and np.shape(delays)[0] != l.shape[0]:
            raise ValueError(f"delays must have length T = {l.shape[0]}, got {np.shape(delays)[0]}")
        delays = D.sequence(delays)
    return ObliviousEnv(jnp.asarray(1.0 - l, _F), check_delay(delays), jnp.zeros((), jnp.int32),
                        n_arms=l.shape[1], period=0)


@constructor
def switching(loss_means, period: int, delays=None, independent: bool = False, salt=0) -> ObliviousEnv:
    """An oblivious adversary generated from the key: Bernoulli losses whose means switch.

    The means follow the rows of ``loss_means``, each row held for ``period`` rounds, cycling. Draws
    come from the run's world streams, so they are fixed in advance whatever the learner does.

    Args:
        loss_means: ``[P, K]`` loss means in ``[0, 1]``.
        period: the rounds each row is held, ``>= 1``.
        delays: an optional delay sequence (or any delay law).
        independent: each arm's loss has its own uniform (Thune et al.'s i.i.d. ``Bern(K, Delta)``
            losses); else one uniform per round is shared by all arms (conventions §8's coupling).
        salt: another loss matrix from the same key (seeds as a grid axis).

    Returns:
        The world (:class:`ObliviousEnv`).

    Raises:
        ValueError: a parameter out of range.

    Examples:
        >>> from jaxbandits import envs
        >>> world = envs.switching([[0.1, 0.9], [0.9, 0.1]], period=100)
        >>> world.n_arms, world.period
        (2, 100)
    """
    V.real("loss_means", loss_means, lo=0.0, hi=1.0)
    lm = np.atleast_2d(np.asarray(loss_means, np.float64))
    if lm.shape[1] < 2:
        raise ValueError(f"loss_means must have shape [P, K] with K >= 2, got {lm.shape}")
    period = V.integer("period", period, lo=1)
    if lm.shape[1] > V.MAX_ARMS:
        raise ValueError(f"loss_means must have at most 2**20 = {V.MAX_ARMS} arms, got {lm.shape[1]}")
    if delays is not None and not isinstance(delays, D.DelayLaw):
        delays = D.sequence(delays) if V.is_concrete(delays) else D.Sequence(jnp.asarray(delays, jnp.int32))
    return ObliviousEnv(jnp.asarray(1.0 - lm, _F), check_delay(delays), jnp.asarray(salt, jnp.int32),
                        n_arms=lm.shape[1], period=period, independent=bool(independent))


@constructor
def bernoulli_losses(n_arms: int, gap: float, delays=None, horizon: int | None = None, salt=0) -> ObliviousEnv:
    """Thune et al.'s ``Bern(K, Delta)``: i.i.d. Bernoulli losses drawn before the game (oblivious).

    Mean ``0.5 - gap`` for arm 0 and 0.5 for the others, drawn independently per arm and round.

    Args:
        n_arms: ``K``.
        gap: ``Delta``, in ``[0, 0.5]``.
        delays: an optional delay sequence (or any delay law).
        horizon: the horizon, when ``delays`` does not give it.
        salt: another loss matrix from the same key (seeds as a grid axis).

    Returns:
        The world (:class:`ObliviousEnv`).

    Raises:
        ValueError: a parameter out of range.

    Examples:
        >>> from jaxbandits.envs import adversarial
        >>> adversarial.bernoulli_losses(3, 0.1, horizon=1000).n_arms
        3
    """
    K = V.integer("n_arms", n_arms, lo=2, hi=V.MAX_ARMS)
    V.real("gap", gap, lo=0.0, hi=0.5)
    if horizon is not None:
        horizon = V.horizon("horizon", horizon)
    mu = np.full((1, K), 0.5)
    mu[0, 0] = 0.5 - gap
    return switching(mu, period=1 if horizon is None else int(horizon), delays=delays, independent=True, salt=salt)


# ----------------------------------------------------------------------------- click streams (Wang et al. 2021, Sec. 4.2)
class StreamState(NamedTuple):
    """The state of a label stream with the adaptive delay rule.

    Attributes:
        streak: i32, the rounds the current arm has been played in a row (this round included).
        prev_arm: i32, last round's arm (-1 before the first).
    """
    streak: jax.Array  # i32 rounds the current arm has been played in a row (this round included)
    prev_arm: jax.Array  # i32 last round's arm (-1 before the first)


@pytree
class LabelStreamEnv(World):
    """A logged click stream: round ``t`` has one correct option ``labels[t]``; arm ``a`` earns
    ``1{a = labels[t]}`` (``||r_a(t)||_1``), all of it at one lag. The lag is the oblivious law
    ``delay`` or, when ``adaptive_d > 0``, the non-oblivious rule of Fig. 5(a,b): ``adaptive_d`` if
    the chosen arm is ``best`` and has been played ``streak_factor * adaptive_d`` rounds in a row,
    else 1 (Wang et al. 2021, Sec. 4.2; the streak rule is our reading, ``count_current``: the streak
    counts the current play).

    Attributes:
        labels: i32[T].
        delay: the oblivious delay law.
        best: i32, i* = argmax_a G_a(T).
        adaptive_d: i32, the adaptive rule's lag ``d`` (0: oblivious delays).
        n_arms: ``K``.
        d_bound: static bound of the adaptive delay (sizes the calendar).
        streak_factor: the adaptive rule's streak length, in units of ``d``.
        count_current: the streak counts this round's play.
    """

    labels: jax.Array  # i32[T]
    delay: D.DelayLaw
    best: jax.Array  # i32 i* = argmax_a G_a(T)
    adaptive_d: jax.Array  # i32 (0: oblivious delays)
    n_arms: int = static()
    d_bound: int = static(0)  # static bound of the adaptive delay (sizes the calendar)
    streak_factor: int = static(3)
    count_current: bool = static(True)
    adversarial = True
    noise = "bernoulli"

    @property
    def max_delay(self):
        return max(self.d_bound, 1) if self.d_bound > 0 else self.delay.support_max

    @property
    def max_horizon(self):
        return min((n for n in (int(self.labels.shape[0]), super().max_horizon) if n is not None), default=None)

    def setup(self, key):
        del key
        return StreamState(jnp.zeros((), jnp.int32), jnp.asarray(-1, jnp.int32))

    def means(self, state, t, features):
        c = self.labels[jnp.clip(t, 0, self.labels.shape[0] - 1)]
        return (jnp.arange(self.n_arms) == c).astype(_F)

    def outcome(self, state, t, action, u, v, features, key):
        row = self.means(state, t, features)
        streak = jnp.where(action == state.prev_arm, state.streak + 1, 1)
        held = streak if self.count_current else streak - 1
        if self.d_bound > 0:
            long_hold = (action == self.best) & (held >= self.streak_factor * self.adaptive_d)
            d = jnp.where(long_hold, self.adaptive_d, 1).astype(jnp.int32)
        else:
            d = self.delay_at(state, t, v)
        return (Outcome(reward=row[action], delay=d, all_rewards=row),
                StreamState(streak.astype(jnp.int32), jnp.asarray(action, jnp.int32)))


@constructor
def label_stream(labels, n_arms: int | None = None, delay=None, adaptive_d: int | None = None,
                 streak_factor: int = 3, count_current: bool = True) -> LabelStreamEnv:
    """A click stream ``labels[t]`` in ``{0..K-1}`` as an adversarial world (Wang et al. 2021, Sec. 4.2).

    Arm ``a`` earns ``1{a = labels[t]}``, all of it at one lag: an oblivious ``delay`` law (Coupon:
    ``uniform(5, 10)``) or, with ``adaptive_d``, the non-oblivious rule (Outbrain: ``z = d`` once the
    best arm has been held ``streak_factor * d`` rounds, else 1). ``best`` is the stream's best fixed
    arm, ``argmax_a G_a(T)``.

    Args:
        labels: int[T], the correct option of each round.
        n_arms: ``K`` (default: the largest label plus one).
        delay: the oblivious delay law.
        adaptive_d: the non-oblivious rule's lag ``d`` (at most ``NEVER``).
        streak_factor: the rule's streak length in units of ``d``.
        count_current: the streak counts this round's play.

    Returns:
        The world (:class:`LabelStreamEnv`).

    Raises:
        ValueError: labels out of range, both or neither of ``delay`` and ``adaptive_d``, or
            ``streak_factor * adaptive_d >= 2**31``.

    Examples:
        >>> from jaxbandits import delays, envs
        >>> world = envs.label_stream([0, 1, 1, 2], n_arms=3, delay=delays.fixed(1))
        >>> world.n_arms, int(world.best)
        (3, 1)
    """
    lab = np.asarray(labels)
    if lab.ndim != 1 or lab.size == 0 or not np.issubdtype(lab.dtype, np.integer):
        raise ValueError(f"labels must be a non-empty 1-d integer array, got dtype {lab.dtype} shape {lab.shape}")
    if lab.max() >= V.MAX_ARMS or lab.min() < 0:
        raise ValueError(f"labels must lie in [0, 2**20 - 1] (at most {V.MAX_ARMS} arms), got range [{lab.min()}, {lab.max()}]")
    K = int(lab.max()) + 1 if n_arms is None else V.integer("n_arms", n_arms, lo=2, hi=V.MAX_ARMS)
    if lab.min() < 0 or lab.max() >= K or K < 2:
        raise ValueError(f"labels must lie in [0, {K - 1}] with n_arms >= 2, got range [{lab.min()}, {lab.max()}]")
    if (delay is None) == (adaptive_d is None):
        raise ValueError("label_stream: give exactly one of delay (oblivious law) or adaptive_d (non-oblivious rule)")
    best = int(np.argmax(np.bincount(lab, minlength=K)))
    streak_factor = V.integer("streak_factor", streak_factor, lo=1)
    if adaptive_d is not None:
        d = V.integer("adaptive_d", adaptive_d, lo=1, hi=D.NEVER)
        if streak_factor * d > V.INT32_MAX:  # the streak test compares int32 counts with their product
            raise ValueError(f"streak_factor * adaptive_d must be <= 2**31 - 1, got {streak_factor} * {d}")
        law = D.fixed(1)
    else:
        d, law = 0, check_delay(delay)
    return LabelStreamEnv(jnp.asarray(lab, jnp.int32), law, jnp.asarray(best, jnp.int32), jnp.asarray(d, jnp.int32),
                          n_arms=K, d_bound=d, streak_factor=streak_factor, count_current=bool(count_current))


@constructor
def synthetic_labels(probs, horizon: int, seed: int = 0, drift: float = 0.0) -> np.ndarray:
    """A synthetic click stream (a stand-in for logged data), drawn with numpy on the host.

    ``labels[t] ~ Categorical(p_t)`` i.i.d. with ``p_t = probs``, or, with ``drift > 0``, popularity
    that moves slowly: ``log p_t = log probs + drift * sin(2 pi (t / T + a / K))`` (the best arm may
    change on prefixes; the stream stays oblivious). One fixed "dataset" shared by every run and
    policy.

    Args:
        probs: the arms' popularity, a probability vector.
        horizon: ``T``, at most ``2**24``.
        seed: the seed, in ``0 .. 2**64 - 1``.
        drift: the amplitude of the popularity's drift, ``>= 0``.

    Returns:
        int[T], the labels.

    Raises:
        ValueError: a parameter out of range.

    Examples:
        >>> from jaxbandits.envs import adversarial
        >>> adversarial.synthetic_labels([0.5, 0.3, 0.2], 10, seed=0).tolist()
        [1, 0, 0, 0, 2, 2, 1, 1, 1, 2]
    """
    V.real("probs", probs, lo=0.0)
    p = np.asarray(probs, np.float64)
    if p.ndim != 1 or p.size < 2 or np.any(p < 0) or p.sum() <= 0:
        raise ValueError(f"probs must be a 1-d array of >= 2 non-negative weights, got {probs!r}")
    T = V.horizon("horizon", horizon)
    V.nonneg("drift", drift)
    rng = np.random.default_rng(V.seed("seed", seed))
    K = p.size
    if drift == 0:
        return rng.choice(K, size=T, p=p / p.sum()).astype(np.int32)
    t = np.arange(T)[:, None] / T
    logits = np.log(np.maximum(p, 1e-300))[None, :] + drift * np.sin(2 * np.pi * (t + np.arange(K)[None, :] / K))
    pt = np.exp(logits - logits.max(1, keepdims=True))
    cdf = np.cumsum(pt / pt.sum(1, keepdims=True), axis=1)
    return np.minimum((rng.random(T)[:, None] > cdf).sum(1), K - 1).astype(np.int32)


@constructor
def zipf_probs(n: int, s: float = 1.0) -> np.ndarray:
    """``p_k ~ k^-s``, ``k = 1..n`` (our Zipf(1.0) stand-in for the Outbrain categories).

    Args:
        n: the number of categories, at most ``2**20``.
        s: the exponent.

    Returns:
        f64[n], a probability vector.

    Examples:
        >>> import numpy as np
        >>> from jaxbandits.envs import adversarial
        >>> np.round(adversarial.zipf_probs(3), 4).tolist()
        [0.5455, 0.2727, 0.1818]
    """
    k = np.arange(1, V.integer("n", n, lo=2, hi=V.MAX_ARMS) + 1, dtype=np.float64)
    V.real("s", s)
    w = k ** -float(s)
    return w / w.sum()
