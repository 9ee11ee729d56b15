"""Components "of one's own", referenced by import path from experiment files in the tests
(``kind = "user_components:fixed_arm"``): a policy, a world and a channel written outside the
library."""
import dataclasses
from typing import Any, NamedTuple, Optional

import jax
import jax.numpy as jnp

from jaxbandits import channels, envs
from jaxbandits.core.types import NEVER, Feedback, Needs, Policy
from jaxbandits.core.values import constructor


class ArmMemo(NamedTuple):
    t: Any


def fixed_arm(arm: int) -> Policy:
    """Plays ``arm`` every round and ignores all feedback: its pulls and its expected regret are
    known exactly (``T`` plays of ``arm``, ``T * (max mean - mean[arm])``)."""
    if not isinstance(arm, int) or arm < 0:
        raise ValueError(f"arm must be an integer >= 0, got {arm!r}")

    def init(spec, key):
        if arm >= spec.n_arms:
            raise ValueError(f"arm must be < n_arms = {spec.n_arms}, got {arm}")
        return jnp.zeros((), jnp.int32)

    def act(state, ctx, key):
        return jnp.asarray(arm, jnp.int32), ArmMemo(ctx.t)

    return Policy(init, act, lambda s, arr: s, lambda memo, r, d: jnp.zeros((1,), jnp.float32), Needs(),
                  f"fixed-{arm}")


def two_arms(low: float, high: float = 0.8):
    """A world of one's own: two Bernoulli arms."""
    return envs.bernoulli([low, high])


@constructor
def two_arms_world(low: float, high: float = 0.8):
    """A world of one's own declared a constructor: experiment files name it
    ``user_components:two_arms_world`` with its arguments."""
    return envs.bernoulli([low, high])


def plain_channel():
    """A channel of one's own (here the library's attributed channel, built by user code)."""
    return channels.attributed()


def not_a_world(x: float = 1.0):
    """Returns a number: an experiment file using it as a world is refused."""
    return x


def build(cfg):
    """A build of one's own: ``build = "user_components:build"`` with a [config] table."""
    return two_arms(cfg["low"]), plain_channel(), {"fixed-1": fixed_arm(1), "fixed-0": fixed_arm(0)}


@dataclasses.dataclass(frozen=True)
class SampledConversions(channels.CalendarChannel):
    """A random channel of one's own: conversions reported for a random ``rate`` of users. Each
    conversion (a positive outcome) is reported, after its delay, with probability ``rate``,
    independently of everything else: the play of round ``t`` is reported when
    ``uniform(play.key) < rate``, ``play.key`` the channel's key of round ``t`` (conventions §8).
    The other conversions, and every zero outcome, are never delivered."""

    rate: float = 0.7
    width: Optional[int] = None
    feedback = Feedback(attributed=True, zeros_observed=False)

    def record(self, spec, play):
        d = jnp.asarray(play.outcome.delay, jnp.int32)
        reported = jax.random.uniform(play.key) < self.rate
        ok = (d < NEVER) & (play.outcome.reward > 0) & reported
        return play.payload(jnp.float32(1.0), d), jnp.maximum(d, play.hold), ok
