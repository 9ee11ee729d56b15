"""The simulator's records against a plain numpy re-implementation of the round loop: the random
streams rebuilt from the PRNG rule of docs/conventions.md, the record points from their formula,
regret / expected regret / reward / pulls / t / adversarial totals from their definitions, and
what the channels deliver at the last round. Each test fails if one of those rules changes."""
import jax
import numpy as np
import pytest

from jaxbandits import channels as C
from jaxbandits import delays as D
from jaxbandits import envs as E
from jaxbandits.policies import classic as P
from jaxbandits.engine import record_points, simulate
from reference_tools import Streams, inverse_cdf_np

MU = np.array([0.2, 0.5, 0.45, 0.3])
T = 300
RUNS = 3


def _random_policy_reference(s, mu, T, K):
    """Uniform random play (inverse CDF of the act uniform) in a Bernoulli world."""
    a = np.array([inverse_cdf_np(np.ones(K) / K, s.act_u[t]) for t in range(T)])
    r = (s.u[:T] < mu[a]).astype(np.float64)
    return a, r


@pytest.fixture(scope="module")
def random_runs():
    env = E.bernoulli(MU, delay=D.uniform(0, 6))
    rec = ("log", 25)
    o = simulate(env, C.attributed(), {"rnd": P.uniform_random(), "ucb": P.ucb1()}, T, jax.random.key(11), RUNS,
                 record=rec)
    return o, rec


def test_record_points_formula():
    """``("log", n)``: ``unique(ceil(geomspace(1, T, n))) - 1``; a stride k: ``k-1, 2k-1, ...``;
    ``T-1`` always included (docs/simulate.md)."""
    g = np.geomspace(1, 1000, 30)
    want = np.union1d(np.unique(np.ceil(g).astype(int)) - 1, [999])
    np.testing.assert_array_equal(record_points(1000, ("log", 30)), want)
    # ceil, not floor or round: the point after geomspace's 2nd value (1.269) is round 2 -> index 1
    assert 1 in record_points(1000, ("log", 30)) and 0 in record_points(1000, ("log", 30))
    np.testing.assert_array_equal(record_points(10, 3), [2, 5, 8, 9])
    np.testing.assert_array_equal(record_points(400, None), np.arange(1, 400, 2))


def test_records_equal_numpy_loop(random_runs):
    """Uniform random play: actions, rewards, pulls, regret and expected regret at every record
    point equal the definitions computed from the rebuilt streams."""
    o, rec = random_runs
    o = o["rnd"]
    pts = record_points(T, rec)
    np.testing.assert_array_equal(o.t, pts + 1)  # the value at round t is reported as t+1 rounds done
    K = len(MU)
    for run in range(RUNS):
        s = Streams(T, 11, run)
        a, r = _random_policy_reference(s, MU, T, K)
        pulls = np.cumsum(np.eye(K, dtype=int)[a], axis=0)
        np.testing.assert_array_equal(o.pulls[run], pulls[pts])
        np.testing.assert_allclose(o.reward[run], np.cumsum(r)[pts], atol=1e-4)
        np.testing.assert_allclose(o.regret[run], np.cumsum(MU.max() - MU[a])[pts], atol=1e-4)
        exp = (MU.max() - MU.mean()) * (pts + 1)  # expected regret over the policy's own draw
        np.testing.assert_allclose(o.expected_regret[run], exp, rtol=1e-5, atol=1e-4)


def test_deterministic_policy_expected_regret_is_pseudo_regret(random_runs):
    o, _ = random_runs
    np.testing.assert_array_equal(o["ucb"].expected_regret, o["ucb"].regret)


def test_last_round_arrivals_are_delivered():
    """A record with ``s + d_s = T - 1`` arrives at the last round (docs/conventions.md: delivered
    when ``s + d_s <= t``): the final state of UCB1 counts exactly the records due by ``T-1``,
    recomputed from the rebuilt delay stream."""
    from conftest import final_state

    law = D.uniform(0, 9)
    env = E.bernoulli(MU, delay=law)
    T2 = 60
    st = final_state(env, C.attributed(), P.ucb1(), T2, n_runs=2, key=5)
    acts = simulate(env, C.attributed(), P.ucb1(), T2, jax.random.key(5), 2, record=1).pulls
    acts = np.diff(np.concatenate([np.zeros_like(acts[:, :1]), acts], axis=1), axis=1).argmax(-1)
    for run in range(2):
        s = Streams(T2, 5, run)
        d = np.minimum(np.floor(s.v.astype(np.float32) * 10).astype(int), 9)
        due = np.arange(T2) + d
        arrived = np.bincount(acts[run][due <= T2 - 1], minlength=len(MU))
        np.testing.assert_array_equal(st.n_arrived[run], arrived)
        assert ((due == T2 - 1)).any()  # the case under test occurs
        rew = (s.u < MU[acts[run]]) & (due <= T2 - 1)
        np.testing.assert_allclose(st.sums[run], np.bincount(acts[run], weights=rew, minlength=len(MU)))


def test_adversarial_records_against_the_table():
    """Oblivious table: ``arm_totals`` is the cumulative reward of every arm, ``regret`` the best
    arm of each prefix minus the realised reward, ``fixed_regret`` the best arm at ``T``."""
    rng = np.random.default_rng(0)
    T3, K = 120, 3
    losses = rng.uniform(size=(T3, K))
    losses[:60, 0] *= 0.2  # arm 0 best early, arm 2 best late: the prefix best changes
    losses[60:, 2] *= 0.05
    losses[0] = [0.9, 0.0, 0.9]  # arm 1 best after round 0: the first record's best is not i*
    env = E.oblivious(losses)
    o = simulate(env, C.attributed(), P.uniform_random(), T3, jax.random.key(3), 2, record=1)
    G = np.cumsum(1.0 - losses, axis=0)
    np.testing.assert_allclose(o.arm_totals[0], G, atol=2e-4)
    for run in range(2):
        s = Streams(T3, 3, run)
        a = np.array([inverse_cdf_np(np.ones(K) / K, s.act_u[t]) for t in range(T3)])
        got = np.cumsum((1.0 - losses)[np.arange(T3), a])
        np.testing.assert_allclose(o.reward[run], got, atol=2e-4)
        np.testing.assert_allclose(o.regret[run], G.max(1) - got, atol=3e-4)
        np.testing.assert_allclose(o.expected_regret[run], G.max(1) - np.cumsum((1 - losses).mean(1)), atol=3e-4)
        np.testing.assert_allclose(o.fixed_regret[run], G[:, G[-1].argmax()] - got, atol=3e-4)
    assert G[59].argmax() != G[-1].argmax() != G[0].argmax()  # the comparators differ over time


@pytest.mark.parametrize("kind", ["attributed", "composite"])
def test_lost_to_W_counts_exactly_the_records_beyond_the_calendar(kind):
    """A calendar narrower than the delays (width 5, delays 0..8): ``lost_to_W`` counts every
    deliverable record with ``d >= W`` (``d = W`` included: slot ``(s + W) mod W`` is round s's
    own, already read), recomputed from the rebuilt streams. Attributed (UCB1, whose payload is
    never zero): every such record; composite (uniform play): only positive rewards."""
    W, T4 = 5, 80
    env = E.bernoulli(MU, delay=D.uniform(0, 8))
    ch = C.attributed(width=W) if kind == "attributed" else C.composite(width=W)
    pol = P.ucb1() if kind == "attributed" else P.uniform_random()
    o = simulate(env, ch, pol, T4, jax.random.key(2), 2)
    for run in range(2):
        s = Streams(T4, 2, run)
        d = np.minimum(np.floor(s.v.astype(np.float32) * 9).astype(int), 8)
        lost = (d >= W) & (np.arange(T4) + d <= T4 - 1)
        if kind == "composite":
            a, r = _random_policy_reference(s, MU, T4, len(MU))
            lost &= r > 0
        assert (d == W).any() and lost.sum() > 0
        assert o.lost_to_W[run] == lost.sum(), (run, o.lost_to_W[run], lost.sum())


def test_comparator_is_the_best_available_action():
    """Linear world whose padding rows (masked out, ``n_valid = 2``) hold the largest means: the
    regret's comparator is the best *available* action, and the random policy plays only those."""
    feats = np.array([[0.2, 0.0], [0.5, 0.0], [0.1, 0.0], [0.9, 0.0]])
    env = E.linear([1.0, 0.0], features=feats, n_valid=2)
    o = simulate(env, C.attributed(), P.uniform_random(), 50, jax.random.key(4), 2, record=1)
    mu = feats[:, 0]
    for run in range(2):
        s = Streams(50, 4, run)
        a = np.array([inverse_cdf_np([0.5, 0.5, 0.0, 0.0], s.act_u[t]) for t in range(50)])
        np.testing.assert_allclose(o.regret[run], np.cumsum(0.5 - mu[a]), atol=1e-5)
        np.testing.assert_allclose(o.expected_regret[run], 0.15 * np.arange(1, 51), atol=1e-4)
