"""The calendar agrees exactly with a plain reference (a list of pending (round, arm, reward,
delay) records delivered when due), for every channel, including delay 0 and delays >= W; and
each channel hides what it must (perturb the hidden information: actions do not change)."""
import jax
import numpy as np
import pytest

from jaxbandits import channels as C
from jaxbandits import delays as D
from jaxbandits import envs as E
from jaxbandits.policies import classic as P
from jaxbandits.engine import simulate

from conftest import actions_of, final_carry, final_state
from helpers import recorder, reactive

T, K, W = 40, 3, 6


def _world(seed):
    rng = np.random.default_rng(seed)
    R = (rng.random((T, K)) < 0.5).astype(float)
    kinds = rng.integers(0, 5, T)
    d = np.where(kinds == 0, 0, np.where(kinds == 1, rng.integers(1, W, T),
                 np.where(kinds == 2, rng.integers(W, 3 * W, T), np.where(kinds == 3, D.NEVER, T - np.arange(T) - 1))))
    return R, d.astype(np.int64)


def _reference(R, d, kind, window=None, W=W, profile=None):
    """Plain reference: pending records, each delivered at s + d if due within the horizon. What the
    channel reveals comes from its declared feedback (conventions §4), not from its name."""
    fb = _channel(kind, window).feedback
    P = T if fb.attributed else 1
    log = np.zeros((T, P))
    lost = 0
    pending = []  # (s, a, r, d)
    for s in range(T):
        a = s % K
        pending.append((s, a, R[s, a], d[s]))
    for (s, a, r, dd) in pending:
        if fb.spread and profile is not None:
            for l, w in enumerate(profile):
                if s + l <= T - 1:
                    if l < W:
                        log[s + l, 0] += r * w
            if r > 0 and len(profile) > W:
                lost += 1
            continue
        if dd >= D.NEVER or s + dd > T - 1:
            continue
        if not fb.zeros_observed and (r == 0 or (fb.window is not None and dd > fb.window)):
            continue
        if dd >= W:
            if not fb.attributed:
                lost += int(r != 0)
            else:
                lost += 1
            continue
        if not fb.attributed:
            log[s + dd, 0] += r
        else:
            log[s + dd, s] += (r if fb.zeros_observed else 1.0) + 1.0
    return log, lost


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("kind,window", [("attributed", None), ("action_time", None), ("conversions", None),
                                         ("conversions", 3), ("conversions", 0), ("anonymous", None),
                                         ("composite", None)])
def test_calendar_matches_reference(kind, window, seed):
    R, d = _world(seed)
    if kind == "composite":
        env = E.composite(table=R, delay=D.sequence(d))
    else:
        env = E.oblivious(1.0 - R, d)
    ch = _channel(kind, window, W)
    out = _run_and_get_state(env, ch, recorder(T, K))
    ref, lost = _reference(R, d, kind, window)
    np.testing.assert_allclose(out["log"], ref, atol=1e-6)
    assert out["lost"] == lost


def test_composite_profile_matches_reference():
    R, d = _world(11)
    prof = np.array([0.1, 0.2, 0.3, 0.15, 0.1, 0.1, 0.05, 0.0])[:5]
    env = E.composite(table=R, profile=prof)
    out = _run_and_get_state(env, C.composite(width=W), recorder(T, K))
    ref, lost = _reference(R, d, "composite", profile=prof / prof.sum())
    np.testing.assert_allclose(out["log"], ref, atol=1e-6)
    # a profile longer than W loses its tail, and the loss is counted
    prof2 = np.ones(W + 2)
    out2 = _run_and_get_state(E.composite(table=R, profile=prof2), C.composite(width=W), recorder(T, K))
    ref2, lost2 = _reference(R, d, "composite", W=W, profile=prof2 / prof2.sum())
    np.testing.assert_allclose(out2["log"], ref2, atol=1e-6)
    assert out2["lost"] == lost2 > 0


def _channel(kind, window=None, width=None):
    return C.conversions(window, width) if kind == "conversions" else getattr(C, kind)(width)


def _run_and_get_state(env, ch, pol):
    """Run one simulation and return the recorder's final log and lost_to_W."""
    c = final_carry(env, ch, pol, T)
    return {"log": c.policy.log[0], "lost": int(c.channel.cal.lost[0])}


def test_action_time_reveals_delay():
    """Under the action-time channel context.delay_now is the delay of this round's own play,
    known before acting; under the others it is -1."""
    from typing import NamedTuple


    class M(NamedTuple):
        t: object
        dnow: object

    base = recorder(T, K)

    def act(state, ctx, key):
        a, m = base.act(state, ctx, key)
        return a, M(m.t, ctx.delay_now)

    def update(state, arr):
        st = base.update(state, arr)
        return st._replace(dnow=st.dnow.at[arr.t].set(arr.memo.dnow))

    pol = base._replace(act=act, update=update)
    R, d = _world(5)

    for ch, expect in [(C.action_time(width=W), np.minimum(d, D.NEVER)), (C.attributed(width=W), -np.ones(T))]:
        st = final_state(E.oblivious(1.0 - R, d), ch, pol, T)
        np.testing.assert_array_equal(st.dnow[0], expect)


def test_information_hiding_conversions():
    """Zero outcomes and conversions after the window are invisible: change their delays, the
    actions of UCB1, KL-UCB and Thompson do not change; the same change is visible (actions
    change) through the attributed channel."""
    rng = np.random.default_rng(0)
    Tn, m = 400, 20
    means = np.array([0.3, 0.5, 0.45])
    R = (rng.random((Tn, 3)) < means).astype(float)
    d = rng.integers(0, 3 * m, Tn)
    env = E.oblivious(1.0 - R, d)
    pols = {"ucb": P.ucb1(), "kl": P.kl_ucb(), "ts": P.thompson()}
    ch = C.conversions(window=m)
    a_A = {k: actions_of(o)[0] for k, o in simulate(env, ch, pols, Tn, jax.random.key(1), record=1).items()}
    for lab, acts in a_A.items():
        r = R[np.arange(Tn), acts]
        d2 = d.copy()
        d2[(r == 0)] = rng.integers(0, 3 * m, (r == 0).sum())
        late = (r == 1) & (d > m)
        d2[late] = rng.choice([m + 1, 5 * m, D.NEVER], late.sum())
        env_B = E.oblivious(1.0 - R, d2)
        a_B = actions_of(simulate(env_B, ch, pols[lab], Tn, jax.random.key(1), record=1))[0]
        np.testing.assert_array_equal(a_B, acts, err_msg=lab)
        # control: the attributed channel sees these delays and zeros
        a_att = actions_of(simulate(env, C.attributed(), pols[lab], Tn, jax.random.key(1), record=1))[0]
        a_att_B = actions_of(simulate(env_B, C.attributed(), pols[lab], Tn, jax.random.key(1), record=1))[0]
        assert (a_att != a_att_B).any(), lab


def test_information_hiding_pending_delays():
    """Attributed feedback hides pending records, their delays included: changing the delays of
    records that arrive after round t0 (before and after the change) leaves every action up to
    t0 unchanged; for records that never arrive within the horizon, all actions are unchanged."""
    rng = np.random.default_rng(1)
    Tn, t0 = 300, 150
    R = (rng.random((Tn, 4)) < [0.2, 0.4, 0.6, 0.5]).astype(float)
    d = rng.integers(0, 60, Tn)
    s = np.arange(Tn)
    late = s + d > t0
    d2 = d.copy()
    d2[late] = np.maximum(t0 + 1 - s[late], 0) + rng.integers(0, 200, late.sum())
    assert (d2 != d).any()
    for pol in [P.ucb1(), P.kl_ucb(), P.thompson(), P.exp3(gamma=0.1)]:
        a1 = actions_of(simulate(E.oblivious(1 - R, d), C.attributed(), pol, Tn, jax.random.key(2), record=1))[0]
        a2 = actions_of(simulate(E.oblivious(1 - R, d2), C.attributed(), pol, Tn, jax.random.key(2), record=1))[0]
        np.testing.assert_array_equal(a1[: t0 + 1], a2[: t0 + 1], err_msg=pol.name)
        assert (a1[t0 + 1:] != a2[t0 + 1:]).any() or pol.name == "Exp3", pol.name
    never = s + d > Tn - 1
    d3 = d.copy()
    d3[never] = D.NEVER
    for pol in [P.ucb1(), P.thompson()]:
        a1 = actions_of(simulate(E.oblivious(1 - R, d), C.attributed(), pol, Tn, jax.random.key(2), record=1))[0]
        a3 = actions_of(simulate(E.oblivious(1 - R, d3), C.attributed(), pol, Tn, jax.random.key(2), record=1))[0]
        np.testing.assert_array_equal(a1, a3)


@pytest.mark.parametrize("kind", ["anonymous", "composite"])
def test_information_hiding_anonymous(kind):
    """Anonymous and composite channels hide the origin of each reward: swap the rewards of the
    two rounds of each pair (2k, 2k+1), with delays (1, 0) so both land at round 2k+1: the sums are
    unchanged, so the actions are; the attributed channel sees the swap."""
    rng = np.random.default_rng(2)
    Tn, Kn = 200, 4
    x = (rng.random(Tn) < 0.5).astype(float)
    R = np.repeat(x[:, None], Kn, 1)  # every arm gives the round's reward: the swap is action-free
    xs = x.reshape(-1, 2)[:, ::-1].ravel()
    R_swapped = np.repeat(xs[:, None], Kn, 1)
    d = np.tile([1, 0], Tn // 2)
    if kind == "composite":
        mk = lambda R: E.composite(table=R, delay=D.sequence(d))
        ch = C.composite(width=4)
    else:
        mk = lambda R: E.oblivious(1 - R, d)
        ch = C.anonymous(width=4)
    pol = reactive(Kn)
    a1 = actions_of(simulate(mk(R), ch, pol, Tn, jax.random.key(3), record=1))[0]
    a2 = actions_of(simulate(mk(R_swapped), ch, pol, Tn, jax.random.key(3), record=1))[0]
    np.testing.assert_array_equal(a1, a2)
    # control: through the attributed channel the same swap is visible, so the actions change
    b1 = actions_of(simulate(E.oblivious(1 - R, d), C.attributed(), pol, Tn, jax.random.key(3), record=1))[0]
    b2 = actions_of(simulate(E.oblivious(1 - R_swapped, d), C.attributed(), pol, Tn, jax.random.key(3), record=1))[0]
    assert (b1 != b2).any()


def test_lost_to_W_counted_and_never_aliased():
    R = np.ones((T, K))
    d = np.full(T, W)  # every delay is exactly W: all lost, none aliased into slot s
    out = _run_and_get_state(E.oblivious(1 - R, d), C.attributed(width=W), recorder(T, K))
    assert np.all(out["log"] == 0)
    assert out["lost"] == T - W  # records with s + W <= T-1
    out = _run_and_get_state(E.oblivious(1 - R, d), C.attributed(width=W + 1), recorder(T, K))
    assert out["lost"] == 0 and out["log"].sum() == 2 * (T - W)


def test_default_width_is_exact():
    env = E.bernoulli([0.2, 0.8], delay=D.uniform(3, 17))
    o = simulate(env, C.attributed(), P.ucb1(), 500, jax.random.key(0), 4)
    assert o.width == 18 and o.lost_to_W.sum() == 0
    o = simulate(E.bernoulli([0.2, 0.8], delay=D.geometric(0.99)), C.conversions(window=40), P.ucb1(), 500,
                 jax.random.key(0), 4)
    assert o.width == 41 and o.lost_to_W.sum() == 0


try:
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st
except ImportError:  # the property test must not vanish silently: it is reported as skipped below
    given = None

if given is not None:
    _delay = st.one_of(st.just(0), st.integers(0, W - 1), st.integers(W, 4 * W), st.just(D.NEVER),
                       st.integers(T - 5, T + 5))

    @settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(d=st.lists(_delay, min_size=T, max_size=T), bits=st.lists(st.booleans(), min_size=T * K, max_size=T * K),
           kind=st.sampled_from(["attributed", "conversions", "anonymous"]), window=st.one_of(st.none(), st.integers(0, W)))
    def test_calendar_property(d, bits, kind, window):
        """Property form of the reference test: any delay sequence, any rewards."""
        R = np.asarray(bits, float).reshape(T, K)
        d = np.asarray(d, np.int64)
        win = window if kind == "conversions" else None
        out = _run_and_get_state(E.oblivious(1.0 - R, d), _channel(kind, win, W), recorder(T, K))
        ref, lost = _reference(R, d, kind, win)
        np.testing.assert_allclose(out["log"], ref, atol=1e-6)
        assert out["lost"] == lost
else:
    def test_calendar_property():
        pytest.skip("hypothesis is not installed: the property test of the calendar did not run "
                    "(pip install -e '.[test]')")


# ============================================================================ the calendar itself
# calendar_round / calendar_round_profile called directly (no simulate), against a list of records.
import jax.numpy as jnp


def _scan_calendar(W_, P_, values, lags, deliverable):
    """Run calendar_round for rounds 0..T-1; returns arrivals [T, P] and the final lost count."""
    def step(cal, x):
        t, v, l, ok = x
        cal, arr = C.calendar_round(cal, t, v, l, ok)
        return cal, arr

    Tn = values.shape[0]
    cal, arr = jax.lax.scan(step, C.calendar_init(W_, P_),
                            (jnp.arange(Tn), jnp.asarray(values, jnp.float32), jnp.asarray(lags, jnp.int32),
                             jnp.asarray(deliverable)))
    return np.asarray(arr, np.float64), int(cal.lost)


def _records_reference(values, lags, deliverable, W_):
    """Pending records (s, value, lag): delivered at round s + lag when deliverable and lag < W; a
    deliverable record with lag >= W is dropped (never aliased) and counted if its value is not all 0."""
    Tn, P_ = values.shape
    out = np.zeros((Tn, P_))
    lost = 0
    pending = []
    for s in range(Tn):
        pending.append((s, values[s], int(lags[s]), bool(deliverable[s])))
        for (s0, v, l, ok) in pending:
            if ok and l < W_ and s0 + l == s:
                out[s] += v
    for (s0, v, l, ok) in pending:
        if ok and l >= W_ and np.any(v != 0):
            lost += 1
    return out, lost


@pytest.mark.parametrize("W_", [1, 5])
def test_calendar_round_matches_records(W_):
    """Every lag class: 0, 1..W-1, exactly W, beyond W, NEVER; undeliverable records; all-zero
    values (dropped uncounted); several records landing on one round (summed)."""
    rng = np.random.default_rng(W_)
    Tn, P_ = 80, 3
    values = rng.integers(0, 3, (Tn, P_)).astype(np.float64)
    values[rng.random(Tn) < 0.2] = 0.0
    lags = np.where(rng.random(Tn) < 0.15, W_, rng.integers(0, 2 * W_ + 1, Tn))
    lags[rng.random(Tn) < 0.1] = D.NEVER
    lags[:4] = 0
    deliverable = rng.random(Tn) < 0.8
    arr, lost = _scan_calendar(W_, P_, values, lags, deliverable)
    ref, ref_lost = _records_reference(values, lags, deliverable, W_)
    np.testing.assert_array_equal(arr, ref)
    assert lost == ref_lost and ref_lost > 0
    assert (ref.sum(1) > 0).sum() > 10


def test_calendar_round_profile_matches_records():
    """Composite insertion: the spread of round s lands at s + l for l < W (summed over all past
    rounds), the read is slot t; nothing is carried over from rounds older than W."""
    rng = np.random.default_rng(7)
    Tn, W_ = 50, 6
    spreads = rng.uniform(0, 1, (Tn, W_)) * (rng.random((Tn, 1)) < 0.8)

    def step(cal, x):
        t, sp = x
        return C.calendar_round_profile(cal, t, sp)

    cal, arr = jax.lax.scan(step, C.calendar_init(W_, 1), (jnp.arange(Tn), jnp.asarray(spreads, jnp.float32)))
    ref = np.zeros(Tn)
    for s in range(Tn):
        for l in range(W_):
            if s + l < Tn:
                ref[s + l] += spreads[s, l]
    np.testing.assert_allclose(np.asarray(arr)[:, 0], ref, atol=1e-5)
    assert int(cal.lost) == 0


def _exact_width_brute(kind, window, max_delay, T_, max_hold):
    """1 + the largest lag that can be delivered: a delay (<= max_delay; <= window for censored
    conversions) or a policy hold (<= max_hold), arriving within the horizon (<= T - 1)."""
    ok = [l for l in range(T_) if (l <= max_delay and (kind != "conversions" or window is None or l <= window))
          or l <= max_hold]
    return max(ok) + 1 if ok else 1


def test_exact_width_brute_force():
    for kind in ["attributed", "anonymous", "conversions"]:
        for window in ([None, 0, 7, 500] if kind == "conversions" else [None]):
            for max_delay in [0, 3, 25, D.NEVER]:
                for T_ in [1, 10, 200]:
                    for max_hold in [0, 4, 30]:
                        ch = C.conversions(window) if kind == "conversions" else getattr(C, kind)()
                        assert ch.exact_width(max_delay, T_, max_hold) == _exact_width_brute(kind, window, max_delay, T_,
                                                                                             max_hold), \
                            (kind, window, max_delay, T_, max_hold)


def test_resolve_width_budget():
    """The exact width when all calendars fit the budget (W * P * 4 bytes * runs); else the budget's
    width, but never below the 1 - 2^-23 quantile of the delay law plus one, never above exact."""
    import math as _m
    env = E.bernoulli([0.2, 0.8], delay=D.geometric(0.99))
    T_, P_, runs = 5000, 3, 10
    q = _m.ceil(23 * _m.log(2) / -_m.log(0.99)) - 1  # smallest n with 1 - 0.99^(n+1) >= 1 - 2^-23
    ch = C.attributed()
    assert ch.resolve_width(env, T_, P_, runs) == T_  # fits: exact (= horizon: the law is unbounded)
    assert ch.resolve_width(env, T_, P_, runs, budget_bytes=300_000) == 300_000 // (P_ * 4 * runs)  # 2500 > q + 1
    assert ch.resolve_width(env, T_, P_, runs, budget_bytes=100_000) == q + 1  # the quantile wins over 833
    assert ch.resolve_width(env, 900, P_, runs, budget_bytes=100_000) == 900  # never above exact
    assert C.attributed(width=17).resolve_width(env, T_, P_, runs, budget_bytes=1) == 17
    small = E.bernoulli([0.2, 0.8], delay=D.uniform(0, 9))
    assert ch.resolve_width(small, T_, P_, runs, budget_bytes=10) == 10  # q + 1 = exact = 10


# ----------------------------------------------------------------------------- a random channel
# conventions §8: a channel's stream k_ch = fold_in(k_run, 2); init key fold_in(k_ch, 0); the key of
# round t (Play.key) fold_in(fold_in(k_ch, 1), t). The user's channel (tests/user_components.py)
# reports each conversion with probability 0.7, drawing uniform(play.key).
def _reported(T, n_runs, key, rate=0.7):
    """Which plays the user's channel reports, from the documented stream alone: bool[runs, T]."""
    import jax.numpy as jnp

    fold = jax.random.fold_in

    def one(r):
        stream = fold(fold(fold(jax.random.key(key), r), 2), 1)  # written out, not the engine's channel_keys
        return jax.vmap(lambda t: jax.random.uniform(jax.random.fold_in(stream, t)) < rate)(jnp.arange(T))

    return np.asarray(jax.vmap(one)(jnp.arange(n_runs)))


def _arrived(log):
    """From the recorder's log [runs, T (arrival), T (origin)]: which plays arrived, and when."""
    got = log > 0
    return got.any(1), np.where(got.any(1), got.argmax(1), -1)


def test_random_channel_reports_its_documented_draws_at_their_delays():
    """Exact: with every outcome a conversion, the play of round s arrives at s + d_s exactly when
    uniform(fold_in(channel stream, s)) < 0.7 (and s + d_s <= T - 1); nothing else arrives."""
    from helpers import recorder
    from user_components import SampledConversions

    T, K, runs = 60, 2, 3
    rng = np.random.default_rng(5)
    d = rng.integers(0, 6, T)
    log = final_state(E.oblivious(np.zeros((T, K)), d), SampledConversions(0.7), recorder(T, K), T, runs, key=4).log
    arrived, when = _arrived(np.asarray(log))
    want = _reported(T, runs, 4) & (np.arange(T) + d <= T - 1)
    np.testing.assert_array_equal(arrived, want)
    np.testing.assert_array_equal(when[want], np.broadcast_to(np.arange(T) + d, want.shape)[want])
    assert 0 < want.sum() < want.size


def test_random_channel_reports_seventy_percent_independently():
    """Monte Carlo: the fraction of conversions reported is 0.7 within 4 standard errors, and
    successive plays' reports are uncorrelated (within 4 / sqrt(n))."""
    from helpers import recorder
    from user_components import SampledConversions

    T, K, runs = 100, 2, 40
    log = final_state(E.oblivious(np.zeros((T, K)), np.zeros(T, int)), SampledConversions(0.7), recorder(T, K), T,
                      runs, key=11).log
    rep = _arrived(np.asarray(log))[0].astype(float)  # delay 0: every report arrives
    n = rep.size
    assert abs(rep.mean() - 0.7) < 4 * np.sqrt(0.7 * 0.3 / n), rep.mean()
    x = rep - rep.mean()
    corr = (x[:, 1:] * x[:, :-1]).mean() / x.var()
    assert abs(corr) < 4 / np.sqrt(x[:, 1:].size), corr


def test_random_channel_is_reproducible():
    """Same key, same bits; another key, other reports."""
    from user_components import SampledConversions

    env = E.bernoulli([0.3, 0.5, 0.6], delay=D.geometric(mean=5.0))
    run = lambda k: simulate(env, SampledConversions(0.7), P.thompson(), 300, jax.random.key(k), 6, record=1,
                             path="scan")
    a, b, c = run(2), run(2), run(3)
    for f in ("regret", "pulls", "reward"):
        np.testing.assert_array_equal(getattr(a, f), getattr(b, f))
    assert not np.array_equal(a.pulls, c.pulls)


def test_random_channel_keeps_common_random_numbers():
    """The channel's stream changes no other stream: reporting every conversion (rate 1, drawing
    all the same) is the library's conversions channel bit for bit, for adaptive policies; and at
    rate 0.7 a policy that ignores its feedback sees the same world draws (rewards, regret)."""
    from helpers import recorder
    from user_components import SampledConversions

    env = E.bernoulli([0.3, 0.5, 0.6], delay=D.geometric(mean=5.0))
    pols = {"ucb": P.ucb1(), "kl": P.kl_ucb(), "ts": P.thompson()}
    key = jax.random.key(7)
    lib = simulate(env, C.conversions(), pols, 200, key, 4, path="scan")
    own = simulate(env, SampledConversions(1.0), pols, 200, key, 4, path="scan")
    for lab in pols:
        for f in ("regret", "expected_regret", "pulls", "reward"):
            np.testing.assert_array_equal(getattr(lib[lab], f), getattr(own[lab], f), err_msg=f"{lab} {f}")
    rec = recorder(60, 3)
    a = simulate(env, C.conversions(), rec, 60, key, 4, path="scan")
    b = simulate(env, SampledConversions(0.7), rec, 60, key, 4, path="scan")
    np.testing.assert_array_equal(a.reward, b.reward)
    np.testing.assert_array_equal(a.regret, b.regret)


def test_information_hiding_random_channel():
    """Unreported conversions are hidden: make them non-conversions in the world (a loss table
    thinned by the channel's own reports) and the actions of UCB1, KL-UCB and Thompson do not
    change; through the library's conversions channel (which reports them all) they do."""
    from user_components import SampledConversions

    rng = np.random.default_rng(1)
    Tn = 400
    R = (rng.random((Tn, 3)) < np.array([0.3, 0.5, 0.45])).astype(float)
    d = rng.integers(0, 30, Tn)
    R_B = R * _reported(Tn, 1, 1)[0][:, None]  # the unreported plays' conversions removed
    assert (R_B != R).any()
    env_A, env_B = E.oblivious(1.0 - R, d), E.oblivious(1.0 - R_B, d)
    pols = {"ucb": P.ucb1(), "kl": P.kl_ucb(), "ts": P.thompson()}
    ch = SampledConversions(0.7)
    k = jax.random.key(1)
    for lab, pol in pols.items():
        a_A = actions_of(simulate(env_A, ch, pol, Tn, k, record=1, path="scan"))[0]
        a_B = actions_of(simulate(env_B, ch, pol, Tn, k, record=1, path="scan"))[0]
        np.testing.assert_array_equal(a_A, a_B, err_msg=lab)
        c_A = actions_of(simulate(env_A, C.conversions(), pol, Tn, k, record=1, path="scan"))[0]
        c_B = actions_of(simulate(env_B, C.conversions(), pol, Tn, k, record=1, path="scan"))[0]
        assert (c_A != c_B).any(), lab


def test_channel_init_receives_its_documented_key():
    """``init_keyed`` gets fold_in(fold_in(k_run, 2), 0), run by run; a channel that does not
    override it is initialised by ``init(spec)`` as before."""
    import dataclasses

    @dataclasses.dataclass(frozen=True)
    class KeyedInit(C.Attributed):
        def init_keyed(self, spec, key):
            return (self.init(spec), jax.random.key_data(key))

        def round(self, spec, state, play):
            cal, got = super().round(spec, state[0], play)
            return (cal, state[1]), got

        def lost(self, state):
            return super().lost(state[0])

    carry = final_carry(E.bernoulli([0.2, 0.7]), KeyedInit(), P.ucb1(), 5, n_runs=3, key=9)
    fold = jax.random.fold_in
    want = np.stack([np.asarray(jax.random.key_data(fold(fold(fold(jax.random.key(9), r), 2), 0))) for r in range(3)])
    np.testing.assert_array_equal(np.asarray(carry.channel[1]), want)


def test_random_channel_resumes_bitwise(tmp_path):
    """A checkpoint saves no channel stream (it is the key's and the run's alone, so checkpoints
    written before channels had one still load); a resumed run rebuilds it: the same bits as a
    run never stopped."""
    from jaxbandits.engine.checkpoint import Interrupted
    from user_components import SampledConversions

    env = E.bernoulli([0.3, 0.5, 0.6], delay=D.geometric(mean=5.0))
    args = (env, SampledConversions(0.7), P.thompson(), 90, jax.random.key(5), 3)
    with pytest.raises(Interrupted):
        simulate(*args, chunk=30, checkpoint=str(tmp_path / "c"), stop=lambda: True, path="scan")
    a = simulate(*args, chunk=30, checkpoint=str(tmp_path / "c"), resume=True, path="scan")
    b = simulate(*args, chunk=30, path="scan")
    np.testing.assert_array_equal(a.pulls, b.pulls)
    np.testing.assert_array_equal(a.regret, b.regret)
