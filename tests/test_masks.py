"""Action masks (``Context.mask``) and the policies' declaration ``Policy.honours_mask``.

For every library policy, in the world and channel it is built for (the table of
``jaxbandits.engine.fused.lowering.library_policies``, plus the constructors it leaves out):

* a policy that declares ``honours_mask`` never plays an arm the mask leaves out: its own world is
  wrapped in one whose context masks a random subset of the arms every round (at least one arm
  left), and every action of a run through the public round (``engine.round``, what ``simulate``
  and the online learner run) is checked against that round's mask;
* a policy that does not declare it really ignores the mask (its ``act`` at its initial state,
  under a mask that leaves one arm, chooses another arm for some keys), and is refused, before
  anything compiles, by ``engine.problem`` (every ``simulate`` path) given a masking world and by
  ``online.decide`` given ``masks``.

Also: ``simulate`` with a padded linear world (``n_valid``) refuses a policy that ignores masks and
runs one that honours them; a linear world without padding emits no mask; the digests that name
policies in checkpoints are unchanged by the new field.

Cost: one compiled scan of 64 rounds per honouring policy (seven by default; the rest with
``-m slow``), a vmapped ``act`` per other one.
"""
from __future__ import annotations

import dataclasses
import inspect

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxbandits as jb
from jaxbandits import channels, engine, envs, online
from jaxbandits import policies as pol_pkg
from jaxbandits.core.types import Context, ProblemSpec
from jaxbandits.core.values import PolicyValue, policy_digest, user_policy_id
from jaxbandits.engine.fused.lowering import library_policies
from jaxbandits.envs.base import World
from jaxbandits.policies import adversarial as A
from jaxbandits.policies import anonymous as AN
from jaxbandits.policies import classic as C
from jaxbandits.policies import composite as CO
from jaxbandits.policies import linear as L

T = 64
MASK_SEED = 123


def _mask_of(t, K):
    """The wrapper world's mask of round ``t``: each arm kept with probability 1/2, one arm always."""
    k = jax.random.fold_in(jax.random.key(MASK_SEED), t)
    m = jax.random.bernoulli(k, 0.5, (K,))
    j = jax.random.randint(jax.random.fold_in(k, 1), (), 0, K)
    return m | (jnp.arange(K) == j)


class Masked(World):
    """``inner`` with a random mask of the arms each round (a function of the round alone)."""

    def __init__(self, inner):
        self.inner = inner
        self.n_arms, self.dim, self.adversarial = inner.n_arms, inner.dim, inner.adversarial
        self.delay = inner.delay

    @property
    def max_delay(self):
        return self.inner.max_delay

    @property
    def max_horizon(self):
        return self.inner.max_horizon

    def setup(self, key):
        return self.inner.setup(key)

    def context(self, state, t, key):
        feats, mask = self.inner.context(state, t, key)
        m = _mask_of(t, self.n_arms)
        return feats, m if mask is None else m & mask

    def means(self, state, t, features):
        return self.inner.means(state, t, features)

    def delay_at(self, state, t, v):
        return self.inner.delay_at(state, t, v)

    def outcome(self, state, t, action, u, v, features, key):
        return self.inner.outcome(state, t, action, u, v, features, key)


def _rows():
    rows = {name: (env, ch, pol) for _, name, env, ch, pol in library_policies()}
    lin = envs.linear(np.array([0.3, 0.1, 0.2]), n_actions=5)
    rows["LinUCB-ignore-delays"] = (lin, channels.conversions(window=50), L.linucb_ignore_delays())
    rows["QPM-D(kl-ucb)"] = rows["QPM-D"][:2] + (AN.qpmd("kl-ucb"),)
    return rows


ROWS = _rows()
HONOUR = sorted(n for n, (_, _, p) in ROWS.items() if p.honours_mask)
IGNORE = sorted(n for n, (_, _, p) in ROWS.items() if not p.honours_mask)


def test_the_declarations_are_the_ones_written():
    # what each act does with ctx.mask, read from the code: written here so a change is a decision
    assert set(IGNORE) == {"DEW", "Skipper(DEW)", "Doubling", "ARS-EXP3", "ODAAF", "ODAAF-B", "ODAAF-V",
                           "ODAAF-naive", "QPM-D", "QPM-D(kl-ucb)", "ARS-UCB", "CLW", "ARS-CLW",
                           "generalized ODAAF"}
    assert len(HONOUR) == 21 and "Exp3" in HONOUR and "Skipper(UCB1)" in HONOUR and "explore(UCB1)" in HONOUR


def test_every_library_policy_constructor_is_checked():
    """A policy constructor added to jaxbandits.policies without a row here fails this test."""
    made = set()
    for mod in (pol_pkg.classic, pol_pkg.conversions, pol_pkg.adversarial, pol_pkg.anonymous, pol_pkg.linear,
                pol_pkg.bayes, pol_pkg.composite, pol_pkg.explore):
        for _, fn in inspect.getmembers(mod, inspect.isfunction):
            vt = fn.__dict__.get("value_type")
            if isinstance(vt, type) and issubclass(vt, PolicyValue):
                made.add(vt.__name__)
    checked = {type(p).__name__ for _, _, p in ROWS.values()}
    assert made <= checked, sorted(made - checked)


def test_wrappers_declare_what_their_base_does():
    assert A.skipper(5.0, C.ucb1()).honours_mask and not A.skipper(5.0, A.dew(0.1)).honours_mask
    assert pol_pkg.explore.explore(C.ucb1(), 0.1).honours_mask
    assert not pol_pkg.explore.explore(AN.odaaf(3.0), 0.1).honours_mask
    assert not C.ucb1().as_tuple()._replace(honours_mask=False).honours_mask  # a user's copy declares its own


#: run by default, one per way of honouring a mask: an index argmax (UCB1), a law restricted to the
#: allowed arms (Exp3, uniform random), a round robin that skips masked arms (DelayedUCB), features
#: (LinUCB), the two wrappers; the others (a compile each, 1 to 6 s on 2 idle cores, the whole file
#: 36 s) run with -m slow
DEFAULT_HONOUR = ("UCB1", "Exp3", "uniform random", "DelayedUCB", "LinUCB", "explore(UCB1)", "Skipper(UCB1)")


@pytest.mark.parametrize("name", [n if n in DEFAULT_HONOUR else pytest.param(n, marks=pytest.mark.slow)
                                  for n in HONOUR])
def test_a_policy_that_honours_masks_never_plays_a_masked_arm(name):
    env, ch, pol = ROWS[name]
    world = Masked(env)
    prob = engine.problem(world, ch, pol, T)

    @jax.jit
    def run(key):
        def body(st, t):
            st, step = engine.round(prob, st, t)
            return st, step.action

        return jax.lax.scan(body, engine.init(prob, key), jnp.arange(T))[1]

    acts = np.asarray(run(jax.random.key(7)))
    masks = np.asarray(jax.vmap(lambda t: _mask_of(t, env.n_arms))(jnp.arange(T)))
    assert acts.shape == (T,) and ((acts >= 0) & (acts < env.n_arms)).all()
    bad = ~masks[np.arange(T), acts]
    assert not bad.any(), f"{name} played masked arms at rounds {np.flatnonzero(bad).tolist()}"
    assert (~masks).sum() > T // 2  # the masks did leave arms out


@pytest.mark.parametrize("name", IGNORE)
def test_a_policy_that_ignores_masks_is_refused(name):
    env, ch, pol = ROWS[name]
    K = env.n_arms
    # it does ignore them: under a mask that leaves only arm K-1, its first act chooses another arm
    spec = ProblemSpec(K, T, env.dim, ch.feedback)
    st = pol.init(spec, jax.random.key(0))
    ctx = Context(jnp.int32(0), None, jnp.arange(K) == K - 1, jnp.int32(0))
    acts = jax.jit(jax.vmap(lambda k: pol.act(st, ctx, k)[0]))(jax.random.split(jax.random.key(1), 32))
    assert (np.asarray(acts) != K - 1).any(), f"{name} honoured the mask: declare honours_mask=True"
    # refused by the engine's checks (every simulate path) before anything compiles ...
    with pytest.raises(ValueError, match=r"does not honour masks.*world Masked masks actions") as e:
        engine.problem(Masked(env), ch, pol, T)
    assert pol.name in str(e.value)
    # ... and by online.decide given masks
    if ch.feedback.attributed or not ch.feedback.zeros_observed:
        learner = online.init(pol, ch, K, 0, dim=env.dim)
        masks = np.ones((3, K), bool)
        with pytest.raises(ValueError, match=r"masks given, but the policy .* does not honour masks") as e:
            online.decide(learner, masks=masks, delays=np.zeros(3, np.int32) if ch.feedback.delay_at_action else None)
        assert pol.name in str(e.value) and "masks" in str(e.value)


def test_online_decide_with_masks_serves_only_allowed_arms():
    learner = online.init(C.ucb1(), channels.attributed(), 4, 0)
    rng = np.random.default_rng(3)
    masks = rng.random((200, 4)) < 0.5
    masks[np.arange(200), rng.integers(0, 4, 200)] = True
    learner, ids, arms = online.decide(learner, masks=masks)
    arms = np.asarray(arms)
    assert masks[np.arange(200), arms].all()
    assert len(set(arms.tolist())) == 4  # all arms were served somewhere
    with pytest.raises(ValueError, match="masks must leave at least one arm in every row, row 1 has none"):
        online.decide(learner, masks=np.array([[True] * 4, [False] * 4]))


def test_simulate_refuses_a_padded_world_for_a_policy_that_ignores_masks():
    padded = envs.linear(np.array([0.3, 0.1, 0.2]), n_actions=5, n_valid=3)
    with pytest.raises(ValueError, match=r"policy 'DEW' \(DEW\) does not honour masks .*world LinearEnv masks "
                                         r"actions"):
        jb.simulate(padded, channels.attributed(), A.dew(0.1), 50, 0, 2)
    with pytest.raises(ValueError, match=r"policy 'odaaf' \(ODAAF\) does not honour masks"):
        jb.simulate(padded, channels.anonymous(), {"odaaf": AN.odaaf(3.0), "ucb": C.linucb()}, 50, 0, 2)


def test_simulate_runs_a_padded_world_for_a_policy_that_honours_masks():
    # the padded rows hold the largest means: a play of one would show as a negative gap
    feats = np.array([[0.1, 0.0], [0.2, 0.0], [1.0, 0.0], [1.0, 0.0]], np.float32)
    padded = envs.linear(np.array([1.0, 0.0]), features=feats, n_valid=2)
    out = jb.simulate(padded, channels.attributed(), C.linucb(), 60, 0, 2, record=1)
    pulls = np.asarray(out.pulls)[:, -1]
    assert (pulls[:, 2:] == 0).all() and (pulls.sum(axis=1) == 60).all()
    assert (np.diff(np.asarray(out.regret), axis=1) >= 0).all()


def test_a_linear_world_without_padding_emits_no_mask():
    plain = envs.linear(np.array([0.3, 0.1, 0.2]), n_actions=5)
    assert not plain.masked and envs.linear(np.array([0.3, 0.1]), n_actions=4, min_valid=2).masked
    assert plain.context(None, 0, jax.random.key(0))[1] is None
    engine.problem(plain, channels.attributed(), A.dew(0.1), 50)  # accepted: every action exists


def test_digests_are_unchanged():
    # written before Policy had honours_mask: checkpoints and databases name policies by these
    assert policy_digest(C.ucb1()) == "v:7ea58aba1f1df31d"
    assert policy_digest(A.skipper(5.0, C.ucb1())) == "v:6d1921a30b495a4e"
    mine = C.ucb1().as_tuple()._replace(name="mine(alpha=2)")  # a user's policy (it declares honours_mask)
    assert mine.honours_mask and user_policy_id(mine) == "u:959737d1b12ced9c"
    assert policy_digest(A.skipper(5.0, mine)) == "v:4cdde9ed8ec324c1"
    assert user_policy_id(mine._replace(honours_mask=False)) == user_policy_id(mine)


def test_policy_values_still_compare_hash_and_print_by_value():
    assert C.ucb1() == C.ucb1(alpha=2.0) and hash(C.ucb1()) == hash(C.ucb1(alpha=2.0))
    assert C.ucb1() != C.ucb1(alpha=1.0) and repr(C.ucb1(alpha=1.0)) == "UCB1(alpha=1.0)"
    assert "honours_mask" not in [f.name for f in dataclasses.fields(C.ucb1())]  # an interface field, not a value's
    assert C.ucb1().honours_mask is True and CO.clw(5).honours_mask is False


def test_exp3_keeps_to_the_mask_when_the_allowed_arms_weights_underflow():
    # exp(-eta L) of the allowed arms underflows to 0: the restricted law was 0/0 (NaN), arm 0 played
    pol = C.exp3(eta=1.0)
    st = pol.init(ProblemSpec(3, 100), jax.random.key(0))._replace(cum_loss=jnp.array([0.0, 1e6, 1e6]))
    ctx = Context(jnp.int32(0), None, jnp.array([False, True, True]), jnp.int32(-1))
    acts, memos = jax.jit(jax.vmap(lambda k: pol.act(st, ctx, k)))(jax.random.split(jax.random.key(2), 64))
    np.testing.assert_array_equal(np.asarray(memos.probs[0]), [0.0, 0.5, 0.5])
    assert set(np.asarray(acts).tolist()) == {1, 2}
