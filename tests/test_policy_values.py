"""Policies are values (docs/architecture.md): fields, repr, equality and hash by value, wrappers
holding their base; a fresh equal policy compiles nothing; the fused spec read from the fields; a
user's Policy NamedTuple runs unchanged; checkpoints written before values are refused clearly."""
import dataclasses
import json
import os
import pickle

import jax
import numpy as np
import pytest

import jaxbandits as jb
from jaxbandits import channels as C
from jaxbandits import delays as D
from jaxbandits import envs as E
from jaxbandits.engine.checkpoint import Interrupted
from jaxbandits.engine.fused import FusedSpec, spec_of
from jaxbandits.policies import adversarial as A
from jaxbandits.policies import anonymous as AN
from jaxbandits.policies import classic as P
from jaxbandits.policies import conversions as CV
from jaxbandits.policies import explore as X
from jaxbandits.core.types import Policy
from jaxbandits.core.values import PolicyValue, policy_digest, user_policy_id

ENV = E.bernoulli([0.2, 0.5, 0.45, 0.3], delay=D.geometric(mean=5.0))


def test_fields_repr_equality_hash():
    u = P.ucb1(alpha=0.5)
    assert isinstance(u, PolicyValue) and isinstance(u, P.ucb1.value_type)
    assert [f.name for f in dataclasses.fields(u)] == ["alpha"] and u.alpha == 0.5
    assert repr(u) == "UCB1(alpha=0.5)" and repr(P.ucb1()) == "UCB1()"
    assert u == P.ucb1(alpha=0.5) and hash(u) == hash(P.ucb1(alpha=0.5))
    assert u != P.ucb1() and u != P.kl_ucb()
    assert P.ucb1(alpha=2) != P.ucb1(alpha=2.0)  # a field's type is part of the value
    with pytest.raises(dataclasses.FrozenInstanceError):
        u.alpha = 1.0
    assert dataclasses.replace(u, alpha=2.0) == P.ucb1()
    # the interface the engine reads: the same display name and needs as before
    assert u.name == "UCB1" and P.kl_ucb().name == "KL-UCB" and callable(u.act) and u.payload is not None
    k = CV.delayed_klucb(D.geometric(mean=20.0), window=200)
    assert repr(k).startswith("DelayedKLUCB(delay=Geometric(log_rho=") and repr(k).endswith(", window=200)")
    assert k == CV.delayed_klucb(D.geometric(mean=20.0), window=200)  # delay laws by their arrays' bytes
    assert k != CV.delayed_klucb(D.geometric(mean=21.0), window=200)
    assert k.name == "d-klucb" and CV.delayed_klucb(D.geometric(mean=20.0), window=200, name="mine").name == "mine"
    # wrappers hold their base as a field
    s = A.skipper(5.0, A.dew(0.1))
    assert s.base == A.dew(0.1) and repr(s) == "Skipper(beta=5.0, base=DEW(eta=0.1))"
    assert s == A.skipper(5.0, A.dew(0.1)) and s != A.skipper(5.0, A.dew(0.2))
    e = X.explore(P.ucb1(), 0.1)
    assert e.base == P.ucb1() and e == X.explore(P.ucb1(), 0.1)
    assert AN.qpmd().base == "ucb1"
    # checks still run when the value is made, naming the parameter
    with pytest.raises(ValueError, match="alpha"):
        P.ucb1(alpha=-1.0)
    with pytest.raises(ValueError, match="alpha"):
        P.ucb1.value_type(alpha=-1.0)
    # picklable, and a digest that depends on the fields only
    assert pickle.loads(pickle.dumps(k)) == k
    assert policy_digest(P.ucb1()) == policy_digest(P.ucb1()) != policy_digest(u)
    assert policy_digest(P.ucb1()).startswith("v:")


def test_fused_spec_read_from_fields():
    assert spec_of(P.ucb1(alpha=0.5)) == FusedSpec("ucb1", (("alpha", 0.5),))
    assert spec_of(P.kl_ucb(iters=4.0)) == FusedSpec("kl_ucb", (("c", 0.0), ("iters", 4)))
    assert spec_of(P.thompson()).get("sampler") == "mt"
    law = D.geometric(mean=20.0)
    sp = spec_of(CV.delayed_klucb(law, window=200))
    assert sp.kind == "delayed_klucb" and sp.get("delay") is law and sp.get("window") == 200 and sp.get("iters") == 8
    assert spec_of(A.dew(0.1)) is None and spec_of(X.explore(P.ucb1(), 0.1)) is None
    assert spec_of(P.ucb1().as_tuple()) is None  # a Policy NamedTuple: a user's, no kernel


def test_fresh_equal_policy_compiles_nothing():
    kw = dict(horizon=200, key=jax.random.key(0), n_runs=4)
    a = jb.simulate(ENV, C.attributed(), P.ucb1(alpha=1.5), **kw)
    b = jb.simulate(ENV, C.attributed(), P.ucb1(alpha=1.5), **kw)
    assert a.timing["compile_s"] > 0 and b.timing["compile_s"] == 0.0
    np.testing.assert_array_equal(a.regret, b.regret)
    c = jb.simulate(ENV, C.attributed(), P.ucb1(alpha=1.25), **kw)  # another value: its own program
    assert c.timing["compile_s"] > 0
    # a user's NamedTuple policy: the same object reuses, as before
    user = P.ucb1(alpha=1.5).as_tuple()
    assert isinstance(user, Policy)
    d = jb.simulate(ENV, C.attributed(), user, **kw)
    e = jb.simulate(ENV, C.attributed(), user, **kw)
    assert e.timing["compile_s"] == 0.0
    np.testing.assert_array_equal(a.regret, d.regret)  # same functions, same bits


def test_grid_builds_values_with_traced_fields_and_reuses_its_program():
    """Inside the grid's program the constructor makes a value whose field is traced (no hash is
    taken of it, no fused spec); the same build twice compiles once."""
    seen = []

    def build(alpha):
        pol = P.ucb1(alpha=alpha)
        seen.append(spec_of(pol))
        return ENV, pol

    kw = dict(channel=C.attributed(), horizon=100, key=jax.random.key(1), n_runs=2)
    a = jb.simulate_grid(build, {"alpha": np.array([0.5, 2.0])}, **kw)
    b = jb.simulate_grid(build, {"alpha": np.array([0.5, 2.0])}, **kw)
    assert b.timing["compile_s"] == 0.0
    np.testing.assert_array_equal(a.regret, b.regret)
    assert None in seen and FusedSpec("ucb1", (("alpha", 0.5),)) in seen  # traced inside, concrete on the host


def test_checkpoint_from_before_values_is_refused_with_the_version(tmp_path):
    law = D.geometric(mean=20.0)
    env, ch, pol = E.conversions([0.5, 0.4], law), C.conversions(window=20), P.ucb1()
    with pytest.raises(Interrupted):
        jb.simulate(env, ch, pol, 200, jax.random.key(3), 2, chunk=50, checkpoint=tmp_path, stop=lambda: True)
    fp = os.path.join(tmp_path, "fingerprint.json")
    with open(fp) as f:
        saved = json.load(f)
    assert saved["policy_ids"] == "values+names"
    # written by the version whose user policies were still named by a digest of their code
    with open(fp, "w") as f:
        json.dump({**saved, "policy_ids": "values"}, f)
    with pytest.raises(ValueError, match=r"written by jaxbandits \S+ naming its policies as 'values'"):
        jb.simulate(env, ch, pol, 200, jax.random.key(3), 2, chunk=50, checkpoint=tmp_path, resume=True)
    # as written before: no policy_ids, and the policy named by a digest of its code
    del saved["policy_ids"]
    saved["problems"] = {k: v.replace(v.split(" | ")[0], "UCB1 0123456789abcdef") for k, v in saved["problems"].items()}
    with open(fp, "w") as f:
        json.dump(saved, f)
    with pytest.raises(ValueError, match=r"written by jaxbandits \S+ before policies were values"):
        jb.simulate(env, ch, pol, 200, jax.random.key(3), 2, chunk=50, checkpoint=tmp_path, resume=True)


def test_show_toml_writes_policies_from_their_fields(tmp_path):
    """A library policy is written as its constructor's arguments read from its fields (no
    profiler needed for it): wrappers with their base as a nested table, the display name as
    ``name``; the file reads back equal values."""
    import tomllib

    from jaxbandits import experiments as XP
    from jaxbandits.experiments import files as F

    def build(cfg):
        law = D.geometric(mean=20.0)  # made in the build: written from its made-by record
        pols = {"skip": A.skipper(5.0, A.dew(0.1)), "dkl": CV.delayed_klucb(law, window=50, name="mine"),
                "ucb": P.ucb1(alpha=cfg["alpha"])}
        if cfg["explore"]:  # explore is not in the file format's table of kinds
            pols["eps"] = X.explore(P.kl_ucb(iters=6), 0.2)
        return E.conversions([0.5, 0.4], law), C.conversions(window=50), pols

    exp = XP.Experiment("values", "policies as values", build, {"alpha": 0.5, "explore": False},
                         horizon=10, runs=1)
    text = F.to_toml(exp)
    doc = tomllib.loads(text)
    pols = doc["policies"]
    assert pols["skip"] == {"kind": "adversarial.skipper", "beta": 5.0, "base": {"kind": "adversarial.dew", "eta": 0.1}}
    assert pols["ucb"] == {"kind": "classic.ucb1", "alpha": 0.5}
    assert pols["dkl"]["kind"] == "conversions.delayed_klucb" and pols["dkl"]["name"] == "mine"
    assert pols["dkl"]["delay"] == {"kind": "delays.geometric", "mean": 20.0}
    path = tmp_path / "values.toml"
    path.write_text(text)
    back = F.experiment(str(path))
    (panel,) = back.build(back.config)
    assert panel.policies == build({"alpha": 0.5, "explore": False})[2]
    with pytest.raises(F.NotExpressible, match=r"policies.eps: Explore\(base=KLUCB\(iters=6\), eps=0.2\) has no constructor"):
        F.to_toml(exp, {"explore": True})


class _Compiles:
    """Counts XLA compilations in this process (``jax_log_compiles`` log records)."""

    def __enter__(self):
        import logging

        self.n = 0
        outer = self

        class H(logging.Handler):
            def emit(self, record):
                if "Compiling " in record.getMessage() or "Finished XLA compilation" in record.getMessage():
                    outer.n += 1

        self.h, self.log = H(), logging.getLogger("jax")
        self.log.addHandler(self.h)
        self.old = jax.config.jax_log_compiles
        jax.config.update("jax_log_compiles", True)
        return self

    def __exit__(self, *a):
        jax.config.update("jax_log_compiles", self.old)
        self.log.removeHandler(self.h)


def _world():
    return E.bernoulli([0.2, 0.5, 0.45, 0.3], delay=D.geometric(mean=5.0))


def test_worlds_and_delay_laws_are_values():
    """A world and a delay law are equal and hashed by value (type and every field, arrays by their
    bytes); another parameter is another value."""
    assert _world() == _world() and hash(_world()) == hash(_world()) and _world() is not _world()
    assert _world() != E.bernoulli([0.2, 0.5, 0.45, 0.31], delay=D.geometric(mean=5.0))
    assert _world() != E.bernoulli([0.2, 0.5, 0.45, 0.3], delay=D.geometric(mean=5.5))
    assert E.gaussian([0.2, 0.5]) != E.bernoulli([0.2, 0.5])  # the noise, a static field
    assert D.geometric(mean=5.0) == D.geometric(mean=5.0) != D.exponential(5.0)
    assert D.shift(D.uniform(0, 3), 2) == D.shift(D.uniform(0, 3), 2) != D.shift(D.uniform(0, 3), 1)
    assert C.conversions(window=50) == C.conversions(window=50)
    from jaxbandits.core import profiles as PR

    assert PR.discounted(0.9) == PR.discounted(0.9) != PR.discounted(0.8)
    assert hash(PR.discounted(0.9)) == hash(PR.discounted(0.9))
    assert E.composite([0.3, 0.6], profile=PR.interval(0, 3)) == E.composite([0.3, 0.6], profile=PR.interval(0, 3))
    w = pickle.loads(pickle.dumps(_world()))
    assert w == _world() and hash(w) == hash(_world())


def test_fresh_equal_world_compiles_nothing():
    """simulate and simulate_grid with a new world (and law, channel, policy) of the same
    parameters: no compilation the second time, the same bits; another world compiles."""
    kw = dict(horizon=150, key=jax.random.key(0), n_runs=3)
    a = jb.simulate(_world(), C.attributed(), P.ucb1(alpha=1.25), **kw)
    with _Compiles() as c:
        b = jb.simulate(_world(), C.attributed(), P.ucb1(alpha=1.25), **kw)
    assert b.timing["compile_s"] == 0.0 and c.n == 0
    np.testing.assert_array_equal(a.regret, b.regret)
    with _Compiles() as c:  # the counter sees compilations
        other = jb.simulate(E.bernoulli([0.2, 0.5, 0.45, 0.35], delay=D.geometric(mean=5.0)), C.attributed(),
                            P.ucb1(alpha=1.25), **kw)
    assert other.timing["compile_s"] > 0 and c.n > 0

    def build(mean):  # a fresh world at every call
        return E.bernoulli([0.2, 0.5, 0.45, 0.3], delay=D.geometric(mean=mean)), P.ucb1(alpha=1.25)

    g = dict(channel=C.attributed(), horizon=100, key=jax.random.key(1), n_runs=2)
    jb.simulate_grid(build, {"mean": np.array([2.0, 8.0])}, **g)
    with _Compiles() as c:
        h = jb.simulate_grid(build, {"mean": np.array([2.0, 8.0])}, **g)
    assert h.timing["compile_s"] == 0.0 and c.n == 0


def test_second_cli_run_in_process_compiles_nothing(tmp_path, monkeypatch):
    """``jaxbandits run quickstart`` twice in one process (the experiment's build makes new worlds,
    channels and policies each time): the second run compiles nothing and gives the same numbers."""
    from jaxbandits.apps.cli import main

    monkeypatch.setenv("JAXBANDITS_CACHE_DIR", str(tmp_path / "jax-cache"))  # run's persistent cache: not the home's

    args = ["run", "quickstart", "--runs", "2", "--horizon", "200", "--no-progress", "--single-device"]
    assert main(args + ["--out", str(tmp_path / "a")]) == 0
    with _Compiles() as c:
        assert main(args + ["--out", str(tmp_path / "b")]) == 0
    s1, s2 = (json.loads((tmp_path / d / "summary.json").read_text()) for d in "ab")
    assert s2["timing"]["compile_s"] == 0.0 and c.n == 0
    assert s1["policies"] == s2["policies"]


def test_online_fresh_equal_policy_and_channel_compile_nothing():
    """An online learner made again with new, equal policy and channel values: its decisions and
    feedback compile nothing the second time."""
    from jaxbandits import online

    def session():
        lr = online.Learner(P.ucb1(alpha=1.25), C.attributed(), ["a", "b", "c"], key=0, max_pending=16)
        ids, arms = lr.decide(3)
        lr.feedback(ids, [1.0, 0.0, 1.0])
        return lr.decide(2)[1]

    first = session()
    with _Compiles() as c:
        again = session()
    assert c.n == 0 and list(first) == list(again)


def _closure_policy(alpha, name):
    """A user's policy as docs/composing.md writes one: a Policy NamedTuple of closures."""
    base = P.ucb1(alpha=alpha).as_tuple()

    def act(state, ctx, key):
        return base.act(state, ctx, key)

    return base._replace(act=act, name=name)


def test_user_policy_named_by_its_name_and_functions_not_its_closures():
    """A user's Policy NamedTuple is named in checkpoints and split sweeps by its name and its
    functions' qualified names (nothing read from code or closures): a fresh one of the same name
    has the same id in every process; another name another id; the closed-over alpha is not seen
    (documented: the name must say it)."""
    a, b = _closure_policy(1.0, "mine(alpha=1)"), _closure_policy(1.0, "mine(alpha=1)")
    assert a is not b and policy_digest(a) == policy_digest(b) == user_policy_id(a)
    assert policy_digest(a).startswith("u:")
    assert policy_digest(_closure_policy(2.0, "mine(alpha=2)")) != policy_digest(a)
    assert policy_digest(_closure_policy(2.0, "mine(alpha=1)")) == policy_digest(a)
    assert policy_digest(a._replace(max_hold=3)) != policy_digest(a)  # declarations count
    # stable across processes: no addresses in it
    import subprocess
    import sys

    code = ("import sys; sys.path.insert(0, %r); import test_policy_values as t; "
            "print(t.policy_digest(t._closure_policy(1.0, 'mine(alpha=1)')))" % os.path.dirname(__file__))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**os.environ, "JAX_PLATFORMS": "cpu"}).stdout.strip().splitlines()[-1]
    assert out == policy_digest(a)


def test_grid_over_a_policys_fields_equals_separate_simulate_calls():
    """simulate_grid((world, policy value), {field: values}) runs each grid point as
    simulate(world, channel, policy with that field) does: the same pulls and regret, bitwise; a
    fresh equal grid compiles nothing; keys that are not fields are refused naming the fields."""
    alphas = [0.5, 1.0, 2.0]
    kw = dict(horizon=300, key=jax.random.key(7), n_runs=3)
    g = jb.simulate_grid((_world(), P.ucb1()), {"alpha": np.array(alphas)}, C.attributed(), **kw)
    assert g.regret.shape[0] == 3
    for i, a in enumerate(alphas):
        s = jb.simulate(_world(), C.attributed(), P.ucb1(alpha=a), **kw)
        np.testing.assert_array_equal(g.pulls[i], s.pulls)
        np.testing.assert_array_equal(g.regret[i], s.regret)
    assert not np.array_equal(g.regret[0], g.regret[2])  # the field reaches the policy
    with _Compiles() as c:
        h = jb.simulate_grid((_world(), P.ucb1()), {"alpha": np.array(alphas)}, C.attributed(), **kw)
    assert c.n == 0 and h.timing["compile_s"] == 0.0
    np.testing.assert_array_equal(g.regret, h.regret)
    with pytest.raises(ValueError, match=r"fields of UCB1 \(alpha\), got 'beta'"):
        jb.simulate_grid((_world(), P.ucb1()), {"beta": np.array(alphas)}, C.attributed(), **kw)
    with pytest.raises(ValueError, match="alpha"):  # the constructor's checks, per grid point
        jb.simulate_grid((_world(), P.ucb1()), {"alpha": np.array([1.0, -1.0])}, C.attributed(), **kw)
