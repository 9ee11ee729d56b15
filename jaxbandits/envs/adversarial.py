"""Oblivious adversarial worlds: a reward (1 - loss) table and a delay sequence fixed in advance.

The world reports every arm's reward of the round (``Outcome.all_rewards``), so the simulator can
track the cumulative reward ``G(t)`` of every arm and regret against the best arm in hindsight.
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from .. import _validate as V
from .. import delays as D
from ..mathlib import uniforms
from ..types import Outcome
from .base import World, pytree, static
from .stochastic import _check_delay

_F = jnp.float32


@pytree
class ObliviousEnv(World):
    rewards: jax.Array  # [T, K] table, or [P, K] per-phase means when generated
    delay: D.DelayLaw
    salt: jax.Array  # i32 folded into the world key of independent draws (a seed axis on a grid)
    n_arms: int = static()
    period: int = static(0)  # 0: rewards is a table; else phases of this length, Bernoulli draws
    independent: bool = static(False)  # Bernoulli draws independent across arms (else one coupled uniform)
    adversarial = True
    noise = "bernoulli"

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


def oblivious(losses, delays=None) -> ObliviousEnv:
    """An oblivious adversary given as arrays: ``losses[t, a]`` in [0, 1] (shape [T, K]) and an
    optional delay sequence ``delays[t]`` (or any delay law)."""
    V.real("losses", losses, lo=0.0, hi=1.0)
    l = np.asarray(losses, np.float64)
    if l.ndim != 2 or l.shape[1] < 2:
        raise ValueError(f"losses must have shape [T, K] with K >= 2, got {l.shape}")
    if delays is not None and not isinstance(delays, D.DelayLaw):
        delays = D.sequence(delays)
        if delays.delays.shape[0] != l.shape[0]:
            raise ValueError(f"delays must have length T = {l.shape[0]}, got {delays.delays.shape[0]}")
    return ObliviousEnv(jnp.asarray(1.0 - l, _F), _check_delay(delays), jnp.zeros((), jnp.int32),
                        n_arms=l.shape[1], period=0)


def switching(loss_means, period: int, delays=None, independent: bool = False, salt=0) -> ObliviousEnv:
    """An oblivious adversary generated from the key: Bernoulli losses whose means follow the rows
    of ``loss_means`` ([P, K]), each row held for ``period`` rounds, cycling. Draws come from the
    run's world streams, so they are fixed in advance whatever the learner does. ``independent``:
    each arm's loss has its own uniform (Thune et al.'s i.i.d. ``Bern(K, Delta)`` losses); else
    one uniform per round is shared by all arms (conventions §8's coupling)."""
    V.real("loss_means", loss_means, lo=0.0, hi=1.0)
    lm = np.atleast_2d(np.asarray(loss_means, np.float64))
    if lm.shape[1] < 2:
        raise ValueError(f"loss_means must have shape [P, K] with K >= 2, got {lm.shape}")
    period = V.integer("period", period, lo=1)
    if delays is not None and not isinstance(delays, D.DelayLaw):
        delays = D.sequence(delays) if V.is_concrete(delays) else D.Sequence(jnp.asarray(delays, jnp.int32))
    return ObliviousEnv(jnp.asarray(1.0 - lm, _F), _check_delay(delays), jnp.asarray(salt, jnp.int32),
                        n_arms=lm.shape[1], period=period, independent=bool(independent))


def bernoulli_losses(n_arms: int, gap: float, delays=None, horizon: int | None = None, salt=0) -> ObliviousEnv:
    """Thune et al.'s ``Bern(K, Delta)``: i.i.d. Bernoulli losses, mean ``0.5 - gap`` for arm 0 and
    0.5 for the others, drawn independently per arm and round before the game (oblivious). ``salt``
    gives another loss matrix from the same key (seeds as a grid axis)."""
    K = V.integer("n_arms", n_arms, lo=2)
    V.real("gap", gap, lo=0.0, hi=0.5)
    mu = np.full((1, K), 0.5)
    mu[0, 0] = 0.5 - gap
    return switching(mu, period=1 if horizon is None else int(horizon), delays=delays, independent=True, salt=salt)
