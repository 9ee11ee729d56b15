"""Every field of a fingerprint: a checkpoint or a sweep's unit is named by its world through
``engine.fingerprint.world_digest``, which must tell apart any two worlds that are not equal as
values (docs/simulate.md, "Checkpoints"). Before, a world was named by its arrays' bytes alone, so
``exponential(0.2)`` and ``poisson(0.2)`` delays, or ``weibull``, ``log_normal`` and ``pareto``
with the same two parameters, shared a name: a checkpoint of one resumed as the other."""
import itertools
import json
import os

import jax
import numpy as np
import pytest

import jaxbandits as jb
from jaxbandits import channels as C
from jaxbandits import delays as D
from jaxbandits import envs as E
from jaxbandits.engine.checkpoint import Interrupted
from jaxbandits.engine.fingerprint import WORLD_IDS, world_digest
from jaxbandits.policies import classic as P


def _laws():
    """Laws whose parameters have equal bytes across families (the collisions of the old digest)."""
    return {"exponential(0.2)": lambda: D.exponential(0.2), "poisson(0.2)": lambda: D.poisson(0.2),
            "geometric(0.2)": lambda: D.geometric(0.2), "weibull(1.5, 2)": lambda: D.weibull(1.5, 2.0),
            "log_normal(1.5, 2)": lambda: D.log_normal(1.5, 2.0), "pareto(1.5, 2)": lambda: D.pareto(1.5, 2.0),
            "uniform(0, 5)": lambda: D.uniform(0, 5), "uniform(0, 6)": lambda: D.uniform(0, 6),
            "fixed(3)": lambda: D.fixed(3), "fixed(0)": lambda: D.fixed(0)}


def _worlds():
    out = {}
    for name, law in _laws().items():
        out[f"bernoulli {name}"] = lambda law=law: E.bernoulli([0.3, 0.6], delay=law())
        out[f"conversions {name}"] = lambda law=law: E.conversions([0.3, 0.6], law())
    out["bernoulli"] = lambda: E.bernoulli([0.3, 0.6])
    out["gaussian"] = lambda: E.gaussian([0.3, 0.6])
    out["linear"] = lambda: E.linear(np.array([0.5, -0.5], np.float32), n_actions=4)
    out["linear n_valid=2"] = lambda: E.linear(np.array([0.5, -0.5], np.float32), n_actions=4, n_valid=2)
    return out


def _equal(a, b):
    try:
        return bool(a == b)
    except Exception:  # arrays of other shapes: not equal
        return False


def test_two_worlds_share_a_digest_exactly_when_they_are_equal_values():
    worlds = {name: make() for name, make in _worlds().items()}
    digests = {name: world_digest(w) for name, w in worlds.items()}
    for name, make in _worlds().items():  # the same value built again: the same name
        assert world_digest(make()) == digests[name], name
    wrong = [(a, b) for a, b in itertools.combinations(worlds, 2)
             if (digests[a] == digests[b]) != _equal(worlds[a], worlds[b])]
    assert not wrong, f"named alike but unequal, or equal but named apart: {wrong}"
    # the collisions of the digest of arrays alone are among the pairs told apart
    assert digests["bernoulli exponential(0.2)"] != digests["bernoulli poisson(0.2)"]
    assert len({digests[f"bernoulli {k}(1.5, 2)"] for k in ("weibull", "log_normal", "pareto")}) == 3
    assert digests["linear"] != digests["linear n_valid=2"]
    # and equal values built two ways are named alike (conversions(theta, law) is bernoulli(theta, delay=law))
    assert digests["bernoulli fixed(0)"] == digests["bernoulli"] == digests["conversions fixed(0)"]


def test_a_checkpoint_is_not_resumed_by_a_world_with_another_law_of_equal_parameters(tmp_path):
    ch, pol = C.attributed(), P.ucb1()
    exp_world = E.bernoulli([0.3, 0.6], delay=D.exponential(0.2))
    with pytest.raises(Interrupted):
        jb.simulate(exp_world, ch, pol, 60, 3, 2, chunk=20, checkpoint=tmp_path, stop=lambda: True)
    with pytest.raises(ValueError, match="is of another run: problems was"):
        jb.simulate(E.bernoulli([0.3, 0.6], delay=D.poisson(0.2)), ch, pol, 60, 3, 2, chunk=20,
                    checkpoint=tmp_path, resume=True)
    fp = os.path.join(tmp_path, "fingerprint.json")
    with open(fp) as f:
        saved = json.load(f)
    assert saved["world_ids"] == WORLD_IDS
    del saved["world_ids"]  # as written by the versions that named a world by its arrays alone
    with open(fp, "w") as f:
        json.dump(saved, f)
    with pytest.raises(ValueError, match=r"written by jaxbandits \S+, which named a world by its arrays alone"):
        jb.simulate(exp_world, ch, pol, 60, 3, 2, chunk=20, checkpoint=tmp_path, resume=True)
