"""Every public constructor rejects bad input with an error naming the parameter, before any
compilation."""
import jax
import numpy as np
import pytest

from jaxbandits import channels as C
from jaxbandits import envs as E
from jaxbandits import experiments as X
from jaxbandits.policies import classic as P
from jaxbandits.engine import simulate


@pytest.mark.parametrize("fn,name", [
    (lambda: E.bernoulli([0.2, 1.2]), "means"),
    (lambda: E.bernoulli([0.2, float("nan")]), "means"),
    (lambda: E.bernoulli([0.5]), "means"),
    (lambda: E.gaussian([0.0, 1.0], sigma=-1.0), "sigma"),
    (lambda: E.conversions([0.1, 0.2], None), "delay"),
    (lambda: E.bernoulli([0.1, 0.2], delay=3), "delay"),
    (lambda: E.linear([0.1, 0.2], features=np.ones((3, 3))), "features"),
    (lambda: E.linear([0.1, 0.2]), "n_actions"),
    (lambda: E.linear([0.1, 0.2], n_actions=4, action_set="cube"), "action_set"),
    (lambda: E.oblivious(np.full((5, 2), 1.5)), "losses"),
    (lambda: E.oblivious(np.zeros((5, 2)), delays=[1, 2]), "delays"),
    (lambda: E.switching([[0.1, 0.2]], period=0), "period"),
    (lambda: E.composite([0.1, 0.2]), "profile"),
    (lambda: E.composite([0.1, 0.2], profile=[-1.0, 2.0]), "profile"),
    (lambda: C.conversions(window=-1), "window"),
    (lambda: C.attributed(width=0), "width"),
    (lambda: C.anonymous(width=2.5), "width"),
])
def test_constructor_errors_name_parameter(fn, name):
    with pytest.raises((ValueError, TypeError), match=name):
        fn()


def test_simulate_rejects_before_compiling():
    env = E.bernoulli([0.2, 0.4])
    with pytest.raises(ValueError, match="horizon"):
        simulate(env, C.attributed(), P.ucb1(), 0, jax.random.key(0))
    with pytest.raises(ValueError, match="n_runs"):
        simulate(env, C.attributed(), P.ucb1(), 10, jax.random.key(0), 0)
    with pytest.raises(ValueError, match="cannot run on the channel"):
        simulate(env, C.anonymous(), P.ucb1(), 10, jax.random.key(0))
    with pytest.raises(TypeError, match="channel"):
        simulate(env, "attributed", P.ucb1(), 10, jax.random.key(0))
    with pytest.raises(TypeError, match="policy"):
        simulate(env, C.attributed(), {"x": "ucb"}, 10, jax.random.key(0))
    with pytest.raises(ValueError, match="record"):
        simulate(env, C.attributed(), P.ucb1(), 10, jax.random.key(0), record=np.array([3, 20]))


def test_experiment_registry_errors():
    with pytest.raises(ValueError, match="unknown experiment"):
        X.get("no-such-experiment")
    with pytest.raises(ValueError, match="key=value"):
        X.parse_set(["theta"])
    with pytest.raises(ValueError, match="unknown config key 'bogus'"):
        X.resolve_config(X.get("quickstart"), {"bogus": 1})
    assert X.parse_set(["window=50", "theta=[0.1, 0.2]", "name=abc"]) == {"window": 50, "theta": [0.1, 0.2],
                                                                          "name": "abc"}
    with pytest.raises(ValueError, match="means"):
        X.run("classic-bernoulli", runs=2, horizon=10, overrides={"high": 2.0})
