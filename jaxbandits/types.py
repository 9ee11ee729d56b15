"""Protocols and shared records of jaxbandits (see docs/architecture.md and docs/conventions.md).

A *policy* is a NamedTuple of pure functions (optax style)::

    init(spec, key)            -> state
    act(state, context, key)   -> (action, memo)
    payload(memo, reward, delay) -> f32[P]      # attributed / conversions channels only
    update(state, arrivals)    -> state         # deterministic, takes no key

``act`` returns no state: what it decides travels in the memo and ``update`` commits it from
``arrivals.memo`` (rule R1). The channel stores only ``payload(...)`` in its calendar (R4).
"""
from __future__ import annotations

from typing import Any, Callable, FrozenSet, NamedTuple, Optional

import jax.numpy as jnp

#: "Never arrives": a delay so large that ``s + NEVER`` still fits in int32.
NEVER = 2**30

CHANNEL_KINDS = ("attributed", "action_time", "anonymous", "conversions", "composite")


class ProblemSpec(NamedTuple):
    """What a policy may know about the problem before the first round."""

    n_arms: int
    horizon: int
    dim: Optional[int] = None  # feature dimension of linear worlds
    channel: str = "attributed"  # the feedback channel's kind
    window: Optional[int] = None  # censoring window m of the conversions channel (None = inf)


class Context(NamedTuple):
    """What the world shows before the action of round ``t``."""

    t: Any  # i32 round index, 0-based
    features: Any = None  # f32[K, d] for linear worlds
    mask: Any = None  # bool[K]: which actions exist this round
    delay_now: Any = -1  # i32 d_t under the action-time channel, else -1


class Arrivals(NamedTuple):
    """What ``update`` receives at the end of round ``t``."""

    t: Any  # i32
    action: Any  # i32, this round's own action (echo)
    memo: Any  # this round's memo (echo)
    payload: Any  # f32[P]: sum of the payloads delivered at t (or [y_t] on anonymous channels)
    rev_age: Any = None  # bool[H]: the play of round t-a is revealed at t (conventions R3c), else None


class Policy(NamedTuple):
    """A bandit policy: pure functions over a fixed-shape pytree state."""

    init: Callable
    act: Callable
    update: Callable
    payload: Optional[Callable]
    channels: FrozenSet[str]
    name: str = "policy"
    max_hold: int = 0  # the largest memo.hold the policy uses (sizes the calendar: W > max_hold)
    reveal_window: int = 0  # H > 0: arrivals.rev_age[a] flags the play of round t-a revealed at t (R3c)
    shard: bool = True  # False: simulate's default runs this policy's program on one device


class Outcome(NamedTuple):
    """What the world produces for the action of one round."""

    reward: Any  # f32 realised (total) reward of the chosen action
    delay: Any  # i32 delay of that reward (NEVER = never)
    profile: Any = None  # f32[L] composite worlds: the split of the reward over lags 0..L-1
    all_rewards: Any = None  # f32[K] adversarial worlds: every arm's reward this round


def one_hot(a, k):
    return jnp.zeros((k,), jnp.float32).at[a].set(1.0)
