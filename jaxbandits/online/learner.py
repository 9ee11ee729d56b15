"""The stateful :class:`Learner`: the pure learner with arm names, batches padded to a few sizes
(few compilations), a :class:`~jaxbandits.online.clock.Clock`, and save / load."""
from __future__ import annotations

from typing import Optional

import jax.numpy as jnp
import numpy as np

from ..core import validate as V
from ..core.types import Policy
from .clock import Clock
from .persistence import load, save
from .pure import REWARD_LIMIT, advance, arm_estimates, close_round, decide, decide_upto, decision_ids, feedback, stats
from .state import CODES, init

_I = jnp.int32


def _pad(n, least=1):
    return max(1 << max(int(n) - 1, 0).bit_length(), least)


class Learner:
    """A stateful wrapper with arm names (strings or any hashable), for people who want
    ``learner.decide()``. ``arms``: a list of names, or the number of arms (names ``0..K-1``).
    Decision and feedback batches are padded to powers of two (few compilations).

    Args:
        policy: the policy (a :class:`~jaxbandits.core.types.Policy`).
        channel: a :class:`~jaxbandits.channels.Channel` with attributed, conversion or
            anonymous feedback.
        arms: a list of distinct arm names (at least one), or the number of arms ``K >= 1``
            (names ``0..K-1``).
        key: a JAX PRNG key, or an int seed (default 0).
        horizon: what the policy may plan for (see :func:`~jaxbandits.online.state.init`).
        dim: the feature dimension of a contextual policy.
        max_pending: slots of the pending ring (see :func:`~jaxbandits.online.state.init`).
        clock: a :class:`Clock` mapping your timestamps to rounds (``None``: rounds are
            decisions, or round numbers given to :meth:`~jaxbandits.online.learner.Learner.advance`).

    Attributes:
        arms: the arm names, in order.
        index: ``{arm name: its index}``.
        policy: the policy.
        channel: the channel.
        clock: the clock, or ``None``.
        state: the pure learner's :class:`~jaxbandits.online.state.LearnerState`.

    Raises:
        ValueError: no arms, arm names that repeat, or an argument out of range (see
            :func:`~jaxbandits.online.state.init`).

    Example:
        >>> from jaxbandits import channels
        >>> from jaxbandits.policies import classic
        >>> learner = Learner(classic.ucb1(), channels.attributed(), ["a", "b", "c"])
        >>> learner.stats()["decisions"]
        0
        >>> learner.decide(3)  # doctest: +SKIP
        ([0, 1, 2], ['a', 'a', 'a'])
        >>> learner.feedback([0, 1], [1.0, 0.0])  # doctest: +SKIP
        ['accepted', 'accepted']
    """

    def __init__(self, policy: Policy, channel, arms, key=0, *, horizon=None, dim=None, max_pending=None,
                 clock: Optional[Clock] = None, _state=None):
        if isinstance(arms, (int, np.integer)) and not isinstance(arms, bool):
            arms = list(range(V.integer("arms", arms, lo=1)))
        arms = list(arms)
        if not arms:
            raise ValueError("arms must name at least one arm")
        if len(set(arms)) != len(arms):
            raise ValueError(f"arm names must be distinct, got {arms}")
        self.arms = arms
        self.index = {a: i for i, a in enumerate(arms)}
        self.policy, self.channel = policy, channel
        self.clock = clock.check() if clock is not None else None
        self.state = _state if _state is not None else init(policy, channel, len(arms), key, horizon=horizon,
                                                            dim=dim, max_pending=max_pending)

    def advance(self, now) -> int:
        """Move the clock to ``now`` (a timestamp of the learner's :class:`Clock`, or a round
        number without one; see :func:`advance`). Returns the open round."""
        self.state = advance(self.state, now, self.clock)
        return int(self.state.t)

    def decide(self, n: Optional[int] = None, contexts=None, masks=None, delays=None, *, now=None,
               propensity: int = 0):
        """``(ids, arm names)`` of ``n`` decisions (one if ``n`` and contexts are not given);
        ``now``: advance the clock to it first. Without contexts, masks or delays, one compiled
        program serves every ``n`` up to the next power of two (at least 64). ``propensity=S``:
        ``(ids, arm names, probabilities)``, each chosen arm's probability (see :func:`decide`)."""
        if now is not None:
            self.advance(now)
        if contexts is None and masks is None and delays is None and not self.state.config.spec.feedback.delay_at_action \
                and self.state.config.spec.dim is None:
            n = 1 if n is None else V.integer("n", n, lo=1, hi=2**24)
            samples = V.integer("propensity", propensity, lo=0, hi=2**16)
            self.state, ids, arms, props = decide_upto(self.state, jnp.asarray(n, _I), max(_pad(n), 64), samples)
            ids, arms, props = np.asarray(ids)[:n], np.asarray(arms)[:n], np.asarray(props)[:n]
        else:
            out = decide(self.state, n, contexts, masks, delays, propensity=propensity)
            self.state, ids, arms = out[:3]
            props = out[3] if propensity else None
        names = [self.arms[i] for i in np.asarray(arms)]
        if propensity:
            return np.asarray(ids).tolist(), names, np.asarray(props, np.float64).tolist()
        return np.asarray(ids).tolist(), names

    def feedback(self, ids=None, rewards=None, *, y=None, now=None) -> list:
        """Events arriving now (see :func:`feedback`); returns the code name of each event.
        ``now``: advance the clock to it first (the events arrive in that round)."""
        if now is not None:
            self.advance(now)
        if y is not None:
            y = np.atleast_1d(np.asarray(y, np.float32))
            n = y.shape[0]
            if n == 0:
                return []
            m = _pad(n, 8)
            yy = np.zeros(m, np.float32)
            yy[:n] = y
            self.state, codes = feedback(self.state, y=yy, valid=np.arange(m) < n)
            return [CODES[c] for c in np.asarray(codes)[:n]]
        ids = decision_ids(ids)
        n = ids.shape[0]
        if rewards is not None:
            rewards = np.atleast_1d(np.asarray(rewards, np.float32))
            if rewards.shape != (n,):
                raise ValueError(f"rewards must give one reward per id: {n} id(s), got rewards of shape "
                                 f"{rewards.shape}")
            bad = ~(np.abs(rewards) <= REWARD_LIMIT)
            if bad.any():
                i = int(np.argmax(bad))
                raise ValueError(f"rewards[{i}] must be finite with |reward| <= 2**96 (so that the float32 sums of "
                                 f"2**31 of them stay finite), got {rewards[i]!r}")
        if n == 0:
            return []
        m = _pad(n, 8)
        ii = np.full(m, -1, np.int64)
        ii[:n] = ids
        rr = None
        if rewards is not None:
            rr = np.zeros(m, np.float32)
            rr[:n] = rewards
            if self.state.config.spec.feedback.zeros_observed is False:
                rr[n:] = 1.0
        self.state, codes = feedback(self.state, ii, rr, valid=np.arange(m) < n)
        return [CODES[c] for c in np.asarray(codes)[:n]]

    def arm_index(self, name) -> int:
        if name not in self.index:
            raise KeyError(f"unknown arm {name!r}; the arms are {self.arms}")
        return self.index[name]

    def stats(self) -> dict:
        return stats(self.state)

    def estimates(self) -> dict:
        """``{arm: the policy's estimate of its mean}`` (``Policy.estimate`` of the state with the
        open round closed: what the next decision sees; ``None`` where it has none yet), or
        ``None`` when the policy declares no estimate."""
        est = arm_estimates(self.policy, close_round(self.state))
        return None if est is None else dict(zip(self.arms, est))

    def save(self, path) -> None:
        extra = {"arms": [str(a) if not isinstance(a, (int, float)) else a for a in self.arms]}
        if self.clock is not None:
            extra["clock"] = self.clock.to_json()
        save(self.state, path, extra=extra)

    @classmethod
    def load(cls, path, policy: Policy, channel) -> "Learner":
        state, extra = load(path, policy, channel, return_extra=True)
        extra = extra or {}
        arms = extra.get("arms") or list(range(state.config.spec.n_arms))
        clock = Clock.from_json(extra["clock"]) if extra.get("clock") else None
        return cls(policy, channel, arms, clock=clock, _state=state)
