"""The online learner (jaxbandits.online): replaying a simulated world's stream through it gives
simulate's actions bit for bit; bookkeeping of bad events; save/load; the docs page's example."""
from collections import defaultdict

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from typing import Any, NamedTuple

from conftest import actions_of, final_state

import jaxbandits as jb
from jaxbandits import channels as C
from jaxbandits import delays as D
from jaxbandits import envs as E
from jaxbandits import online
from jaxbandits.engine import run_keys
from jaxbandits.core.mathlib import uniform
from jaxbandits.policies import anonymous as AN
from jaxbandits.policies import bayes as PB
from jaxbandits.policies import classic as P
from jaxbandits.policies import conversions as V
from jaxbandits.policies import linear as L
from jaxbandits.core.types import NEVER, Needs, Policy


def _world_fns(world):
    """The world's context and outcome of round t, jitted as inside the simulator's round."""
    ctx = jax.jit(lambda ws, t, k: world.context(ws, t, k))

    @jax.jit
    def outcome(ws, t, a, keys, feats):
        u = uniform(jax.random.fold_in(keys.reward, t))
        v = uniform(jax.random.fold_in(keys.delay, t))
        out, ws = world.outcome(ws, t, a, u, v, feats, jax.random.fold_in(keys.world, t))
        return jnp.asarray(out.reward, jnp.float32), jnp.asarray(out.delay, jnp.int32), ws

    return ctx, outcome


def replay(world, channel, policy, T, key=0, max_pending=None):
    """Drive the online learner with the world of run 0 of ``simulate(world, channel, policy, T,
    key)``: decide, draw the outcome as the simulator does, report each event at the round the
    channel would deliver it (the learner applies memo holds itself). Returns (actions, state)."""
    keys, k_setup, _ = run_keys(jax.random.key(key), 0)
    wstate = world.setup(k_setup)
    ctx, outcome = _world_fns(world)
    st = online.init(policy, channel, world.n_arms, jax.random.key(key), horizon=T, dim=world.dim,
                     max_pending=max_pending)
    fb = channel.feedback
    due = defaultdict(list)  # round -> [(decision, reward)]
    rng = np.random.default_rng(key)
    actions = []
    for t in range(T):
        feats, mask = ctx(wstate, t, jax.random.fold_in(keys.context, t))
        if feats is not None:
            st, ids, arms = online.decide(st, contexts=feats[None], masks=None if mask is None else mask[None])
        else:
            st, ids, arms = online.decide(st)
        assert int(ids[0]) == t
        a = int(arms[0])
        actions.append(a)
        r, d, wstate = outcome(wstate, t, a, keys, feats)
        r, d = np.float32(r), int(d)
        ok = d < NEVER and t + d <= T - 1
        if not fb.zeros_observed:  # conversions: positive outcomes within the window only
            ok = ok and r > 0 and (fb.window is None or d <= fb.window)
        if ok:
            due[t + d].append((t, r))
        ev = sorted(due.pop(t, []))
        if ev and fb.attributed:  # report in any order: the learner sums in decision order itself
            ev = [ev[i] for i in rng.permutation(len(ev))]
        if ev:
            if not fb.attributed:
                st, codes = online.feedback(st, y=np.array([r_ for _, r_ in ev], np.float32))
            elif fb.zeros_observed:
                st, codes = online.feedback(st, [s for s, _ in ev], np.array([r_ for _, r_ in ev], np.float32))
            else:
                st, codes = online.feedback(st, [s for s, _ in ev])
            assert (np.asarray(codes) == online.ACCEPTED).all(), codes
    return np.array(actions), st


def _check_equal(world, channel, policy, T, key=0, max_pending=None):
    ref = actions_of(jb.simulate(world, channel, policy, T, jax.random.key(key), 1, record=1))[0]
    got, st = replay(world, channel, policy, T, key, max_pending)
    mism = np.nonzero(got != ref)[0]
    assert mism.size == 0, f"{policy.name}: first mismatch at round {mism[:1]}, got {got[mism[:5]]} want {ref[mism[:5]]}"
    assert len(set(ref.tolist())) > 1  # the policy did explore: the comparison is not trivial
    return st


LAW = D.geometric(mean=5.0)
BERN = E.bernoulli([0.7, 0.5, 0.3], LAW)
CONV = E.conversions([0.6, 0.4, 0.25], LAW)


@pytest.mark.parametrize("make", [P.ucb1, pytest.param(P.kl_ucb, marks=pytest.mark.slow),
                                  pytest.param(P.thompson, marks=pytest.mark.slow)], ids=["UCB1", "KL-UCB", "Thompson"])
def test_attributed_replay_equals_simulate(make):
    st = _check_equal(BERN, C.attributed(), make(), 160, key=3, max_pending=160)
    c = online.stats(st)
    assert c["decisions"] == 160 and c["accepted"] > 100
    assert c["unknown"] == c["expired"] == c["duplicate"] == c["invalid"] == 0


@pytest.mark.parametrize("make", [
    lambda: V.delayed_klucb(LAW, 12), pytest.param(lambda: V.delayed_ucb(LAW, 12), marks=pytest.mark.slow),
    pytest.param(lambda: V.delayed_klucb(LAW, None), marks=pytest.mark.slow),
    pytest.param(lambda: V.discarding_ucb(LAW, 12), marks=pytest.mark.slow)], ids=["DelayedKLUCB", "DelayedUCB", "DelayedKLUCB-uncensored", "Discarding"])
def test_conversions_replay_equals_simulate(make):
    pol = make()
    m = pol.needs.window
    st = _check_equal(CONV, C.conversions(window=m), pol, 200, key=1, max_pending=None if m is not None else 200)
    assert online.stats(st)["accepted"] > 30


@pytest.mark.slow  # CI time
def test_otflin_replay_equals_simulate_bitwise_float_payloads():
    theta = np.array([0.3, 0.2, 0.1, 0.25], np.float32)
    world = E.linear(theta, n_actions=5, action_set="uniform", delay=D.geometric(mean=4.0))
    pol = L.otf_linucb(10)
    st = _check_equal(world, C.conversions(window=10), pol, 150, key=2)
    assert online.stats(st)["accepted"] > 10


@pytest.mark.parametrize("make", [pytest.param(lambda: PB.delay_model_ts(10, model="exponential", refresh=5),
                                               marks=pytest.mark.slow), lambda: PB.beta_ts(window=10)],
                         ids=["delay-model TS", "Beta TS"])
def test_reveal_age_policies_replay_equals_simulate(make):
    world = E.conversions([0.5, 0.3, 0.15], D.geometric(mean=3.0))
    _check_equal(world, C.conversions(window=10), make(), 90, key=0)


@pytest.mark.slow  # CI time
def test_odaaf_anonymous_replay_equals_simulate():
    world = E.bernoulli([0.8, 0.5, 0.2], D.geometric(mean=3.0))
    _check_equal(world, C.anonymous(), AN.odaaf(3.0), 400, key=0)


class _LogMemo(NamedTuple):
    a: Any


def _logger(T, K):
    """A policy that plays at random and logs every payload it receives: float payloads whose
    sums depend on the order of summation (Gaussian rewards)."""
    def init(spec, key):
        return jnp.zeros((T, 2), jnp.float32)

    def act(st, ctx, key):
        a = jnp.minimum((uniform(key) * K).astype(jnp.int32), K - 1)
        return a, _LogMemo(a)

    def payload(memo, r, d):
        return jnp.stack([r, r * (1.0 + memo.a.astype(jnp.float32) / 7.0)])  # r * x, as linear policies' payloads

    def update(st, arr):
        return st.at[arr.t].set(arr.payload)

    return Policy(init, act, update, payload, Needs(), "logger")


def test_payloads_delivered_in_one_round_are_summed_in_decision_order_bitwise():
    T = 300
    world = E.gaussian([0.3, 0.1, -0.2], 1.0, D.uniform(0, 12))
    pol = _logger(T, 3)
    ref = final_state(world, C.attributed(), pol, T)[0]
    _, st = replay(world, C.attributed(), pol, T, key=0, max_pending=64)
    got = np.asarray(online.close_round(st))
    many = ref[:, 0] != 0
    assert many.sum() > 150
    assert np.array_equal(got.view(np.uint32), np.asarray(ref).view(np.uint32))


# ----------------------------------------------------------------------------- bookkeeping
def test_bad_events_are_counted_never_raised_nor_double_counted():
    pol = V.delayed_klucb(LAW, 5)
    st = online.init(pol, C.conversions(window=5), 3, 0, horizon=100)
    st, codes = online.feedback(st, [0])  # nothing decided yet
    assert list(np.asarray(codes)) == [online.UNKNOWN]
    st, ids, arms = online.decide(st, n=10)
    assert list(np.asarray(ids)) == list(range(10))
    st, codes = online.feedback(st, [9, 9, 12, -3, 3, 4, 2**40])
    assert list(np.asarray(codes)) == [0, online.DUPLICATE, online.UNKNOWN, online.UNKNOWN,
                                       online.OUTSIDE_WINDOW, 0, online.UNKNOWN]
    c = online.stats(st)
    assert (c["accepted"], c["duplicate"], c["unknown"], c["outside_window"]) == (2, 1, 4, 1)
    # the two accepted conversions reach the policy once, at the end of round 9
    s_before = np.asarray(online.close_round(st).s).sum()
    assert s_before == 2.0
    st, _, _ = online.decide(st)
    assert np.asarray(st.policy.s).sum() == 2.0


def test_attributed_expired_and_invalid():
    st = online.init(P.ucb1(), C.attributed(), 2, 0, max_pending=4)
    st, _, _ = online.decide(st, n=8)
    st, codes = online.feedback(st, [1, 5, 6], [1.0, np.nan, 0.0])
    assert list(np.asarray(codes)) == [online.EXPIRED, online.INVALID, online.ACCEPTED]


def test_input_errors_name_the_parameter():
    with pytest.raises(ValueError, match="needs"):
        online.init(V.delayed_klucb(LAW, 5), C.attributed(), 3, 0)
    st = online.init(P.ucb1(), C.attributed(), 3, 0)
    with pytest.raises(ValueError, match="rewards"):
        online.feedback(st, [0])
    with pytest.raises(ValueError, match="ids must be integers"):
        online.feedback(st, [0.5], [1.0])
    with pytest.raises(ValueError, match="contexts"):
        online.decide(st, contexts=np.zeros((1, 3, 2)))
    with pytest.raises(ValueError, match="max_pending"):
        online.init(P.ucb1(), C.attributed(), 3, 0, max_pending=0)


def test_learner_wrapper_names_arms():
    lr = online.Learner(P.ucb1(), C.attributed(), ["red", "green", "blue"], key=0, max_pending=64)
    seen = []
    for t in range(3):  # UCB1 tries each arm once (its counts are of arrived rewards)
        ids, arms = lr.decide()
        assert ids == [t] and arms[0] in lr.arms
        seen += arms
        assert lr.feedback(ids, [1.0]) == ["accepted"]
    assert sorted(seen) == ["blue", "green", "red"]
    assert lr.feedback([1, 7], [1.0, 0.0]) == ["duplicate", "unknown"]
    assert lr.stats()["duplicate"] == 1
    assert lr.arm_index("blue") == 2


@pytest.mark.parametrize("make", [lambda: V.delayed_klucb(LAW, 6),
                                  pytest.param(lambda: V.discarding_ucb(LAW, 6), marks=pytest.mark.slow)],
                         ids=["DelayedKLUCB", "Discarding"])
def test_learner_batches_of_any_size_are_the_pure_rounds_bitwise(make):
    """The Learner's one-program-per-capacity batches (a traced count) and padded feedback give the
    rounds of the pure API's scan, bit for bit, for a policy without holds (the quiet path after
    the first decision of a batch) and one with holds (the ring searched in every round)."""
    pol, ch = make(), C.conversions(window=6)
    lr = online.Learner(pol, ch, 3, key=5)
    st = online.init(pol, ch, 3, 5)
    rng = np.random.default_rng(0)
    for n in (1, 37, 2, 37):
        ids, arms = lr.decide(n)
        st, i2, a2 = online.decide(st, n=n)
        assert ids == np.asarray(i2).tolist() and arms == np.asarray(a2).tolist()
        back = [int(i) for i in ids if rng.random() < 0.4][:5]
        pad = np.full(8, -1)
        pad[:len(back)] = back
        st, codes = online.feedback(st, pad, valid=np.arange(8) < len(back))
        assert lr.feedback(back) == [online.CODES[c] for c in np.asarray(codes)[:len(back)]]
    for a, b in zip(jax.tree.leaves(lr.state), jax.tree.leaves(st)):
        if jnp.issubdtype(a.dtype, jax.dtypes.prng_key):
            a, b = jax.random.key_data(a), jax.random.key_data(b)
        assert np.array_equal(np.asarray(a), np.asarray(b))


# ----------------------------------------------------------------------------- save / load
def _drive(st, rounds, t0, seed=0):
    """A deterministic stream of decisions and conversions (ids of recent decisions)."""
    rng = np.random.default_rng(seed)
    acts = []
    for t in range(t0, t0 + rounds):
        st, ids, arms = online.decide(st)
        acts.append(int(arms[0]))
        back = [s for s in range(max(t - 6, 0), t + 1) if rng.random() < 0.15]
        if back:
            st, _ = online.feedback(st, back)
    return st, acts


def test_save_load_continues_with_the_same_actions(tmp_path):
    pol = V.delayed_klucb(LAW, 8)
    ch = C.conversions(window=8)
    st = online.init(pol, ch, 3, 7, horizon=1000)
    st, _ = _drive(st, 40, 0)
    path = tmp_path / "learner.npz"
    online.save(st, path)
    st_cont, acts_cont = _drive(st, 60, 40, seed=1)
    loaded = online.load(path, pol, ch)
    for a, b in zip(jax.tree.leaves(st), jax.tree.leaves(loaded)):
        if jnp.issubdtype(a.dtype, jax.dtypes.prng_key):
            a, b = jax.random.key_data(a), jax.random.key_data(b)
        assert np.array_equal(np.asarray(a), np.asarray(b))
    st_re, acts_re = _drive(loaded, 60, 40, seed=1)
    assert acts_re == acts_cont
    assert online.stats(st_re) == online.stats(st_cont)
    h = online.read_header(path)
    assert h["format_version"] == online.FORMAT_VERSION and h["policy"] == pol.name


def test_load_refuses_another_policy_channel_or_version(tmp_path):
    import json

    pol, ch = V.delayed_klucb(LAW, 8), C.conversions(window=8)
    st = online.init(pol, ch, 3, 0, horizon=1000)
    path = tmp_path / "s.npz"
    online.save(st, path)
    with pytest.raises(ValueError, match="saved for policy"):
        online.load(path, V.delayed_ucb(LAW, 8), ch)
    with pytest.raises(ValueError, match="saved for channel"):
        online.load(path, pol, C.conversions(window=9))
    with pytest.raises(ValueError, match="layout"):
        online.load(path, V.delayed_klucb(D.fixed(2), 8), ch)  # the same name "d-klucb", another state layout
    with np.load(path) as z:
        arrays = {k: z[k] for k in z.files}
    for field, value, msg in (("format_version", 99, "format version"), ("library_version", "9.0.0", "incompatible")):
        h = json.loads(bytes(arrays["header"]).decode())
        h[field] = value
        bad = dict(arrays, header=np.frombuffer(json.dumps(h).encode(), np.uint8))
        p2 = tmp_path / f"bad_{field}.npz"
        np.savez(p2, **bad)
        with pytest.raises(ValueError, match=msg):
            online.load(p2, pol, ch)


@pytest.mark.slow  # CI time
def test_learner_save_load_keeps_arm_names(tmp_path):
    lr = online.Learner(P.thompson(), C.attributed(), ["a", "b"], key=1, max_pending=16)
    lr.decide(n=4)
    lr.save(tmp_path / "l.npz")
    lr2 = online.Learner.load(tmp_path / "l.npz", P.thompson(), C.attributed())
    assert lr2.arms == ["a", "b"]
    assert lr2.decide(n=5) == lr.decide(n=5)


@pytest.mark.slow  # CI time
def test_docs_page_example_runs(tmp_path, monkeypatch):
    import re
    from pathlib import Path

    page = (Path(__file__).resolve().parents[1] / "docs" / "online.md").read_text()
    block = re.findall(r"```python\n(.*?)```", page, re.S)[0]
    monkeypatch.chdir(tmp_path)
    ns = {}
    exec(block, ns)
    st = ns["learner"].stats()
    assert st["accepted"] > 50 and (tmp_path / "learner.npz").exists()
    # the learner played the best banner most
    counts = np.asarray(online.close_round(ns["learner"].state).n)
    assert counts.argmax() == 0
    # the clock's example: timestamps of one-minute rounds, a conversion 17 rounds later
    clock_block = next(b for b in re.findall(r"```python\n(.*?)```", page, re.S) if "online.Clock(" in b)
    exec(clock_block, ns)
    st = ns["learner"].stats()
    assert (st["round"], st["accepted"], st["decisions"]) == (587, 1, 1)


# ----------------------------------------------------------------------------- the clock
def _stream(lr, times, seed, window):
    """Decide at each time of ``times`` (advancing the learner's clock) and report conversions of
    recent decisions at the next time; returns the arms and the (decision id, report time) pairs."""
    rng = np.random.default_rng(seed)
    arms, live, reported = [], [], []
    for now in times:
        back = [i for i in live if rng.random() < 0.3]
        if back:
            codes = lr.feedback(back, now=now)
            reported += [(i, now, c) for i, c in zip(back, codes)]
            live = [i for i in live if i not in back]
        ids, a = lr.decide(now=now)
        arms += a
        live = [i for i in live[-window:] + ids]
    return arms, reported


def test_clock_timestamps_give_the_actions_of_integer_rounds_and_delays_in_clock_rounds():
    import datetime as dt

    m = 12
    pol = V.delayed_klucb(None, m, online=True)  # its payload carries the revealed delay (a histogram)
    ch = C.conversions(window=m)
    rng = np.random.default_rng(0)
    rounds = np.cumsum(rng.choice([1, 1, 2, 5], size=120))  # idle rounds between decisions
    origin = dt.datetime(2026, 11, 24, 9, 30)
    length = dt.timedelta(minutes=5)
    stamps = [origin + int(r) * length + dt.timedelta(seconds=int(j)) for r, j in
              zip(rounds, rng.integers(0, 300, size=rounds.size))]  # anywhere inside the round
    lr_int = online.Learner(pol, ch, ["a", "b", "c"], key=4)
    lr_ts = online.Learner(pol, ch, ["a", "b", "c"], key=4, clock=online.Clock(origin, length))
    arms_int, rep_int = _stream(lr_int, [int(r) for r in rounds], 1, m + 4)
    arms_ts, rep_ts = _stream(lr_ts, stamps, 1, m + 4)
    assert arms_ts == arms_int and len(set(arms_int)) == 3
    assert lr_ts.stats() == lr_int.stats()
    # the decision ids are the rounds of the decisions, and every delay is counted in clock rounds
    hist = np.zeros(m + 1)
    codes = []
    for (i, ts, c), (j, r, c2) in zip(rep_ts, rep_int):
        assert (i, c) == (j, c2) and (ts - origin) // length == r
        codes.append(c)
        if c == "accepted":
            hist[r - i] += 1
    assert {"accepted", "outside_window"} <= set(codes)
    pstate = online.close_round(lr_ts.state)
    assert np.array_equal(np.asarray(pstate.hist), hist)  # a decision-count delay would differ
    assert float(np.asarray(pstate.n).sum()) == 120  # pulls are decisions, not rounds
    assert lr_ts.stats()["round"] == rounds[-1] and lr_ts.stats()["decisions"] == 120


@pytest.mark.slow  # CI time; the float64 mapping itself is checked in the default suite below
def test_clock_one_decision_per_round_is_the_decision_count_bitwise():
    """Epoch seconds mapped to one-minute rounds (float64 on the host: a float32 cannot tell the
    seconds of 1.7e9 apart): one decision per round gives the decision clock's actions."""
    pol = P.ucb1()
    base = online.Learner(pol, C.attributed(), 3, key=2, max_pending=32)
    clk = online.Learner(pol, C.attributed(), 3, key=2, max_pending=32,
                         clock=online.Clock(1_795_000_000.0, 60.0))
    rng = np.random.default_rng(3)
    for t in range(60):
        ids, a = base.decide()
        ids2, a2 = clk.decide(now=1_795_000_000.0 + 60.0 * t + float(rng.uniform(0, 59.9)))
        assert (ids, a) == (ids2, a2) == ([t], a)
        r = [float(rng.random() < 0.5)]
        assert base.feedback(ids, r) == clk.feedback(ids2, r)
    assert base.stats() == clk.stats()


def test_clock_bursts_run_ahead_late_events_counted_and_bad_times_refused(tmp_path):
    m = 3
    lr = online.Learner(V.delayed_klucb(LAW, m), C.conversions(window=m), 2, key=0, clock=online.Clock(100, 10))
    assert lr.advance(100) == 0
    ids, _ = lr.decide(n=3)
    assert ids == [0, 1, 2]
    assert lr.advance(105) == 2  # a burst ran ahead (rounds 0, 1, 2): the clock never goes back
    assert lr.feedback([5]) == ["unknown"]
    assert lr.advance(170) == 7  # rounds 2..6 closed (3..6 idle)
    assert lr.feedback([7]) == ["unknown"]  # round 7 is open, without a decision yet
    # beyond the window (7 - 3 > m, whether or not round 3 had a decision); round 4 was idle
    assert lr.feedback([3, 2, 4]) == ["outside_window", "outside_window", "unknown"]
    assert lr.stats()["outside_window"] == 2
    ids, _ = lr.decide()
    assert ids == [7] and lr.feedback([7]) == ["accepted"]
    lr.save(tmp_path / "c.npz")
    again = online.Learner.load(tmp_path / "c.npz", lr.policy, lr.channel)
    assert again.clock == lr.clock and again.stats() == lr.stats()
    # epoch seconds into one-minute rounds in float64 (a float32 cannot tell these seconds apart)
    clk = online.Clock(1_795_000_000.0, 60.0)
    assert [clk.round(1_795_000_000.0 + 60.0 * t + x) for t, x in ((0, 59.9), (1, 0.0), (7, 59.0), (10**6, 1.5))] \
        == [0, 1, 7, 10**6]
    assert online.Clock(np.datetime64("2026-11-24T00:00"), np.timedelta64(90, "s")).round(
        np.datetime64("2026-11-24T01:00:29")) == 40
    with pytest.raises(ValueError, match="before the clock's origin"):
        lr.advance(99)
    with pytest.raises(TypeError, match="now must be a finite number"):
        lr.advance("soon")
    with pytest.raises(ValueError, match="round_length must be"):
        online.Learner(P.ucb1(), C.attributed(), 2, clock=online.Clock(0, 0))
    st = online.init(AN.odaaf(3.0), C.anonymous(), 3, 0, horizon=100)
    with pytest.raises(ValueError, match="anonymous"):
        online.advance(st, 5)
    with pytest.raises(ValueError, match="now"):
        online.advance(online.init(P.ucb1(), C.attributed(), 2, 0), -1)


def test_a_learner_saved_before_the_online_package_split_loads_and_goes_on_bitwise():
    """``tests/reference/online_learner_v2.npz`` was saved by the single-module ``jaxbandits/online.py``
    (format version 2): DelayedKLUCB on a conversions channel with a clock, 5 decisions and 2
    conversions. It loads into the split package, and its next decisions, codes and estimates are
    the ones that module computed from it (recorded then, float32 estimates compared exactly)."""
    import os

    path = os.path.join(os.path.dirname(__file__), "reference", "online_learner_v2.npz")
    assert online.read_header(path)["format_version"] == 2
    lr = online.Learner.load(path, V.delayed_klucb(D.geometric(mean=5.0), 8), C.conversions(window=8))
    assert lr.arms == ["a", "b", "c"] and lr.clock == online.Clock(0, 2)
    assert lr.stats()["decisions"] == 5 and lr.stats()["accepted"] == 2
    assert lr.decide(4, now=9) == ([6, 7, 8, 9], ["c", "c", "b", "c"])
    assert lr.feedback([7, 8], now=10) == ["accepted", "accepted"]
    assert lr.estimates() == {"a": 0.0, "b": 1.1696785688400269, "c": 1.0677247047424316}
