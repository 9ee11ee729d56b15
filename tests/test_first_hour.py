"""A catalogue of bad inputs met in a new user's first hour (issue 32): each raises a clear error
naming the component, the file or the field (never a traceback, a silent cast or a NaN)."""
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxbandits as jb
from jaxbandits import channels, delays, envs, online
from jaxbandits.policies import classic


# ----------------------------------------------------------------------------- own components
class _M(NamedTuple):
    t: Any


def _policy(action_dtype):
    def act(state, ctx, key):
        return jnp.asarray(0, action_dtype), _M(ctx.t)

    return jb.Policy(lambda spec, key: jnp.zeros(()), act, lambda s, a: s, lambda m, r, d: jnp.ones(1),
                     name="mine")


class _World(jb.World):
    def __init__(self, delay_dtype):
        self.n_arms, self.dt = 2, delay_dtype

    def means(self, state, t, features):
        return jnp.array([0.5, 0.4], jnp.float32)

    def outcome(self, state, t, action, u, v, features, key):
        return jb.Outcome(reward=(u < 0.5).astype(jnp.float32), delay=jnp.asarray(1, self.dt)), state


@pytest.mark.parametrize("dtype", [jnp.float32, jnp.bool_])
def test_act_returning_a_non_integer_action_is_refused(dtype):
    with pytest.raises(TypeError, match=r"policy 'mine' \(mine\).*action an integer scalar"):
        jb.simulate(envs.bernoulli([0.5, 0.4]), channels.attributed(), _policy(dtype), 10, jax.random.key(0))
    with pytest.raises(TypeError, match=r"mine.*action an integer scalar"):
        online.Learner(_policy(dtype), channels.attributed(), ["a", "b"])


def test_world_returning_a_float_delay_is_refused():
    with pytest.raises(TypeError, match=r"world _World: Outcome.delay must be an integer scalar.*float32"):
        jb.simulate(_World(jnp.float32), channels.attributed(), classic.ucb1(), 10, jax.random.key(0))
    out = jb.simulate(_World(jnp.int32), channels.attributed(), classic.ucb1(), 10, jax.random.key(0))
    assert np.isfinite(out.regret).all()
