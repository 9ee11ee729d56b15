"""Wang, Wang and Huang (2021): ARS-UCB, ARS-EXP3, ARS-CLW, CLW, generalized ODAAF, the composite
worlds and profiles (docs/policies/ars.md lists what is tested)."""
import math
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxbandits import channels as C
from jaxbandits import delays as D
from jaxbandits import envs as E
from jaxbandits.core import profiles as Pr
from jaxbandits.policies import anonymous as A
from jaxbandits.policies import composite as W
from jaxbandits.engine import simulate
from jaxbandits.core.types import Arrivals, Needs, Policy, ProblemSpec
from tests.conftest import actions_of, final_state, reward_uniforms

S9 = np.linspace(0.9, 0.1, 9)


def _runs(actions):
    """(arm, start, length) of the maximal runs of one action sequence."""
    cut = np.flatnonzero(np.diff(actions)) + 1
    starts = np.concatenate([[0], cut])
    ends = np.concatenate([cut, [len(actions)]])
    return [(int(actions[s]), int(s), int(e - s)) for s, e in zip(starts, ends)]


def _observations(X, actions, w):
    """y_t = sum_s X_s w[t - s] (composite channel, float64 reference) and the spill past T."""
    T = len(actions)
    y = np.zeros(T + len(w))
    for s in range(T):
        y[s:s + len(w)] += X[s] * w
    return y[:T], y[T:].sum()


# ----------------------------------------------------------------------------- profiles (Wang et al. 2021, Sec. 4.1)
# d_1 = s_1 E[lag] with s_1 = 0.9 (Sec. 2.1's d_1 for one split scaled by s_i), computed by hand
D1_REF = {"interval(30,40)": 31.05, "interval(10,20)": 13.05, "lin-dec(d=100)": 30.6, "lin-dec(d=50)": 15.6,
          "lin-inc(d=100)": 60.3, "lin-inc(d=50)": 30.3, "discounted(gamma=0.8)": 4.5, "discounted(gamma=0.9)": 9.0,
          "polynomial(gamma=3)": 1.232}


@pytest.mark.parametrize("prof", [Pr.interval(30, 40), Pr.interval(10, 20), Pr.linear_decreasing(100),
                                  Pr.linear_decreasing(50), Pr.linear_increasing(100), Pr.linear_increasing(50),
                                  Pr.discounted(0.8), Pr.discounted(0.9), Pr.polynomial(3)])
def test_profiles_sum_to_one_and_match_the_d1_table(prof):
    assert abs(prof.weights.sum() - 1) < 1e-12 and (prof.weights >= 0).all()
    assert prof.d1(0.9) == pytest.approx(D1_REF[prof.name], abs=0.01)


def test_profile_truncation_reported():
    p2 = Pr.polynomial(2)  # tail beyond 4096 is 1.5e-4; d_1 infinite (the mean lag sum 1/l diverges)
    assert p2.length == 4096 and p2.tail_mass == pytest.approx(1.5e-4, rel=0.05) and math.isinf(p2.d1(0.9))
    assert Pr.polynomial(3).tail_mass <= 1e-6 and Pr.discounted(0.9, tol=1e-6).tail_mass <= 1e-6
    dropped = Pr.polynomial(2, tail="drop")
    assert dropped.weights.sum() == pytest.approx(1 - dropped.tail_mass, abs=1e-9)
    assert Pr.interval(30, 40).weights[30:40].tolist() == [0.1] * 10 and Pr.interval(30, 40).weights[:30].sum() == 0
    lin = Pr.linear_decreasing(4).weights  # (d+1-l) 2/(d(d+1)) for l = 1..4
    np.testing.assert_allclose(lin, [0, 0.4, 0.3, 0.2, 0.1])
    # the random-delay case is a law: U{0..60} has mean 30 and variance 310
    law = Pr.random_delay(0, 60)
    assert float(law.mean) == pytest.approx(30) and float(law.variance) == pytest.approx(310, rel=1e-3)


# ----------------------------------------------------------------------------- ARS-UCB
def test_ars_ucb_block_structure():
    """First N f(1) slots: arms 0..N-1 in order, f(1) each; arm i's blocks last f(1), f(2), ...;
    N_i = F(K_i - 1) at every decision (every arm not in the middle of a block at the end)."""
    f = W.f_poly(1, 2)
    T = 6000
    env = E.composite(S9, delay=D.uniform(10, 30))
    pol = W.ars_ucb(4.0, f)
    a = actions_of(simulate(env, C.composite(), pol, T, jax.random.key(1), record=1))[0]
    blocks = _runs(a)
    assert [b[0] for b in blocks[:9]] == list(range(9)) and all(b[2] == 1 for b in blocks[:9])
    # consecutive blocks of the same arm merge into one run: split runs by the arm's f sequence
    seen = {i: 0 for i in range(9)}
    for arm, start, length in blocks:
        k, rem = seen[arm], length
        while rem > 0:
            k += 1
            blen = f.host(k)
            if rem < blen:  # only the block cut by the horizon may be short
                assert start + length == T, (arm, start, length, k)
                break
            rem -= blen
        seen[arm] = k
    st = final_state(env, C.composite(), pol, T, key=1)
    F = lambda k: sum(f.host(j) for j in range(1, k + 1))
    for i in range(9):
        if i != int(st.arm[0]):
            assert st.n[0, i] == F(int(st.k[0, i]) - 1)
    assert st.n[0].sum() == T


def test_ars_ucb_eq3_and_m_sums():
    """Eq. (3): within a block [t1, t2] of one arm, sum y - sum ||r||_1 = spill-in from before t1 -
    spill-out after t2 (exact, deterministic profile); M_i is the sum of y over i's slots."""
    T, w = 3000, Pr.linear_increasing(12).weights
    env = E.composite(S9, profile=w)
    pol = W.ars_ucb(4.0, "k^2")
    a = actions_of(simulate(env, C.composite(), pol, T, jax.random.key(5), record=1))[0]
    u = reward_uniforms(T, key=5)
    X = (u < S9[a].astype(np.float32)).astype(np.float64)
    y, spill_T = _observations(X, a, w)
    assert y[0] == 0 and y.sum() + spill_T == pytest.approx(X.sum())  # lags >= 1; conservation
    L = len(w)
    for arm, t1, n in _runs(a):
        t2 = t1 + n - 1
        spill_in = sum(X[s] * w[t1 - s:t2 - s + 1].sum() for s in range(max(0, t1 - L), t1))
        spill_out = sum(X[s] * w[t2 - s + 1:].sum() for s in range(t1, t2 + 1))
        assert y[t1:t2 + 1].sum() - X[t1:t2 + 1].sum() == pytest.approx(spill_in - spill_out, abs=1e-9)
    st = final_state(env, C.composite(), pol, T, key=5)
    ref = np.bincount(a, weights=y, minlength=9)
    np.testing.assert_allclose(st.m[0], ref, rtol=1e-5, atol=1e-3)


def _clipped_ucb_reference(u, means, alpha, T):
    """Clipped UCB, smallest-N tie-break (the no-delay, f = 1 case of Algorithm 1), float64."""
    K = len(means)
    n, m, acts = np.zeros(K), np.zeros(K), []
    for t in range(T):
        if t == 0:
            a = 0
        else:
            nn = np.maximum(n, 1)
            ucb = np.where(n > 0, np.minimum(m / nn + np.sqrt(alpha * np.log(t) / nn), 1.0), 1.0)
            cand = ucb == ucb.max()
            a = int(np.argmin(np.where(cand, n, np.inf)))
        r = float(u[t] < np.float32(means[a]))
        n[a] += 1
        m[a] += r
        acts.append(a)
    return np.array(acts)


def test_ars_ucb_reduces_to_clipped_ucb_without_delay():
    means = [0.7, 0.5, 0.45]
    T = 1500
    env = E.composite(means, profile=[1.0])
    a = actions_of(simulate(env, C.composite(), W.ars_ucb(4.0, W.f_const(1)), T, jax.random.key(2), record=1))[0]
    ref = _clipped_ucb_reference(reward_uniforms(T, key=2), means, 4.0, T)
    np.testing.assert_array_equal(a, ref)


def test_ars_ucb_beats_odaaf_and_has_log_regret():
    """Claims 1-2 at a small scale (U{10..30}, T = 3e4, 16 runs): ARS-UCB below half of ODAAF-V; the
    last doubling adds less than the two before it (logarithmic growth); and the regret is below
    Theorem 1's log T term, sum_i 8 alpha / Delta_i log T (= 869.8 log T = 8967 here). That term is
    not the whole bound (Thm 1 adds c*_f, infinite at alpha = 4 where t_1 = exp((4 d_1/(sqrt(alpha) -
    2))^2) diverges), and it only means something where a bad policy exceeds it: uniform play scores
    T (s_1 - mean s) = 0.4 T = 12000 and always playing the worst arm 0.8 T = 24000 (asserted
    below); at T = 2e4 the term (8613) was above uniform play's 8000, hence T = 3e4."""
    env = E.composite(S9, delay=D.uniform(10, 30))
    T = 30000
    o = simulate(env, C.composite(), {"ars": W.ars_ucb(4.0, "k^2"), "odaaf": A.odaaf_v(20.0, 36.67)}, T,
                 jax.random.key(0), 16, record=("log", 60))
    r = o["ars"].regret.mean(0)
    assert r[-1] < 0.5 * o["odaaf"].regret.mean(0)[-1]
    at = lambda t: r[np.searchsorted(o["ars"].t, t)]
    assert at(T) - at(T // 2) < at(T // 2) - at(T // 8)  # one doubling < the two before it
    log_term = W.thm1_log_coefficient(S9, 4.0) * math.log(T)
    uniform, worst = T * (S9.max() - S9.mean()), T * (S9.max() - S9.min())
    assert log_term < uniform < worst
    assert at(T) < log_term


# ----------------------------------------------------------------------------- ARS-EXP3
def test_exp3_block_table_and_gamma():
    tab, K = W.exp3_block_table(100_000, 0.5)
    assert tab[:K].sum() + tab[K] == 100_000 and 0 <= tab[K] < math.ceil((K + 1) ** 0.5)
    assert list(tab[:10]) == [1, 2, 2, 2, 3, 3, 3, 3, 3, 4]  # ceil(sqrt(k))
    g = W.ars_exp3_gamma(9, 100_000, 0.5)
    assert g == pytest.approx(math.sqrt(9 * math.log(9) / ((math.e - 1) * (1.5e5) ** (2 / 3))))
    assert W.ars_exp3_gamma(1, 10) == 0.0 and W.ars_exp3_gamma(9, 3) == 1.0


def test_ars_exp3_blocks_and_update_count():
    T = 5000
    env = E.composite(S9, delay=D.uniform(0, 6))
    pol = W.ars_exp3(0.5)
    a = actions_of(simulate(env, C.composite(), pol, T, jax.random.key(3), 4, record=1))
    tab, K = W.exp3_block_table(T, 0.5)
    starts = np.concatenate([[0], np.cumsum(tab)[:-1]])
    for run in a:  # the arm changes only at block starts
        changes = np.flatnonzero(np.diff(run)) + 1
        assert np.isin(changes, starts).all()
    st = final_state(env, C.composite(), pol, T, n_runs=2, key=3)
    assert (st.n_updates == K).all()
    assert (st.k == K + 1 + int(tab[K] > 0)).all()  # past the last full block, and the leftover if any


def test_ars_exp3_probabilities_and_unbiased_update():
    """p >= gamma/N whatever the weights; E[w_i increment] = gamma c_i / N for rewards c (Monte
    Carlo over the draw of the first block, g(1) = 1)."""
    w = jnp.asarray([30.0, -40.0, 0.0, 5.0])
    p = W._exp3_probs(w, 0.2, 1.0)
    assert float(p.min()) >= 0.2 / 4 - 1e-7 and float(p.sum()) == pytest.approx(1.0, abs=1e-6)
    pol = W.ars_exp3(0.5, gamma=0.3)
    spec = ProblemSpec(4, 100, feedback=C.anonymous().feedback)
    c = jnp.asarray([0.9, 0.2, 0.5, 0.0])
    st0 = pol.init(spec, jax.random.key(0))
    st0 = st0._replace(w=jnp.asarray([0.5, -0.3, 0.0, 0.2]))

    def one(key):
        a, memo = pol.act(st0, None, key)
        arr = Arrivals(jnp.int32(0), a, memo, c[a][None])
        w = pol.update(st0, arr).w
        return w - w[3] - (st0.w - st0.w[3])  # shift-free; c_3 = 0, so arm 3 never moves

    n = 40000
    inc = np.asarray(jax.vmap(one)(jax.random.split(jax.random.key(1), n)))
    mean, se = inc.mean(0), inc.std(0) / math.sqrt(n)
    ref = 0.3 * np.asarray(c) / 4  # E[gamma Z 1{a=i} / (N p_i)] = gamma c_i / N
    assert np.all(np.abs(mean - ref) < 4 * se + 1e-6), (mean, ref, se)


# ----------------------------------------------------------------------------- CLW coin rule
def _literal_forward_U(B, d):
    """t in U iff B_t = 1 and B_{t+1} = ... = B_{t+2d-1} = 0 (Alg. 3 line 10, literally)."""
    T = len(B) - 2 * d
    return np.array([t for t in range(T) if B[t] == 1 and not B[t + 1:t + 2 * d].any()])


@pytest.mark.parametrize("d", [1, 3, 10])
def test_coin_forward_renewal_matches_literal_rule(d):
    rng = np.random.default_rng(d)
    q = 1 / (2 * d)
    B = (rng.random(20000 + 2 * d) < q).astype(int)
    ones = np.flatnonzero(B)
    lit = _literal_forward_U(B, d)
    # the O(1) process fed with the gaps of the same coins
    n1, n2, j, got = ones[0], ones[1], 2, []
    for t in range(len(B) - 2 * d):
        gap = ones[j] - n2 if j < len(ones) else 10**9
        in_u, nn1, nn2 = W.coin_forward_step(t, n1, n2, d, gap)
        if bool(in_u):
            got.append(t)
        if t == n1:
            j += 1
        n1, n2 = int(nn1), int(nn2)
    np.testing.assert_array_equal(np.array(got), lit)
    assert (np.diff(lit) >= 2 * d).all()


@pytest.mark.parametrize("rule", ["wang_forward", "original"])
def test_clw_update_rate_and_block_lengths(rule):
    """Forward rule: P(t in U) = q (1-q)^(2d-1) (d = 10: 0.018868); COLT's backward rule: gaps
    2d + Geometric(q) on {0,1,..}, rate 1/(2d - 1 + 1/q). Blocks after the first last >= 2d."""
    d, T, R = 10, 20000, 16
    env = E.composite([0.5, 0.5, 0.5], delay=D.uniform(0, 5))
    pol = W.clw(d, round_rule=rule)
    st = final_state(env, C.composite(), pol, T, n_runs=R, key=4)
    rate = st.n_updates.sum() / (R * T)
    q = 1 / (2 * d)
    ref = W.update_round_probability(q, d) if rule == "wang_forward" else 1 / (2 * d - 1 + 1 / q)
    if rule == "wang_forward":
        assert W.update_round_probability(q, d) == pytest.approx(0.018868, abs=1e-6)
    n = st.n_updates.sum()
    assert abs(rate - ref) < 4 * math.sqrt(ref / (R * T)) * 1.5, (rate, ref, n)
    a = actions_of(simulate(env, C.composite(), pol, 4000, jax.random.key(4), 4, record=1))
    for run in a:
        lengths = [n for _, _, n in _runs(run)][1:-1]
        assert min(lengths) >= 2 * d


def test_ars_clw_phases_restart_exp3():
    """Phase ends at T1 2^(k-1) with d^(k) = h(T^(k)); Exp3 is uniform right after a phase start."""
    ends, ds, qs, rates = W.clw_phase_table(5, 5000, None, 1024)
    assert list(ends) == [1024, 2048, 4096, 8192] and list(ds) == [11, 13, 16, 21]
    assert list(qs) == [1 / (2 * x) for x in ds]
    assert rates[0] == pytest.approx(math.sqrt(2 * 11 * 5 * math.log(5) / (1024 + 11)))
    env = E.composite([0.9, 0.1, 0.1, 0.1, 0.1], delay=D.uniform(0, 5))
    pol = W.ars_clw(1024)
    before = final_state(env, C.composite(), pol, 2048, n_runs=4, key=6)
    after = final_state(env, C.composite(), pol, 2049, n_runs=4, key=6)
    assert (before.phase == 1).all() and (after.phase == 2).all()
    assert (np.abs(before.logw).max(1) > 0).all()  # learned something in phase 2
    same = after.n_updates == before.n_updates  # no update at round 2048: weights are the reset ones
    assert same.any() and (after.logw[same] == 0).all()


# ----------------------------------------------------------------------------- hiding, ODAAF reuse
class _Rec(NamedTuple):
    log: Any


@pytest.mark.parametrize("make", [lambda: W.ars_ucb(4.0, "k"), lambda: W.ars_exp3(), lambda: W.clw(3),
                                  lambda: W.ars_clw(64), lambda: W.generalized_odaaf(3)])
def test_information_hiding_composite(make):
    """Change what the composite channel hides (which round a reward came from, with the same
    sums landing): actions must not change; change what it shows: they must."""
    rng = np.random.default_rng(2)
    Tn, Kn = 1200, 4
    x = (rng.random(Tn) < 0.5).astype(float)
    R = np.repeat(x[:, None], Kn, 1)
    R_swapped = np.repeat(x.reshape(-1, 2)[:, ::-1].ravel()[:, None], Kn, 1)  # swap rounds 2k, 2k+1
    d = np.tile([1, 0], Tn // 2)  # ... both land at 2k+1: same sums
    mk = lambda R: E.composite(table=R, delay=D.sequence(d))
    pol = make()
    run = lambda R: actions_of(simulate(mk(R), C.composite(width=4), pol, Tn, jax.random.key(3), record=1))[0]
    a1 = run(R)
    np.testing.assert_array_equal(a1, run(R_swapped))
    R_visible = R.copy()
    R_visible[:, -1] = 1.0  # the last arm pays always, the others never: visible
    R_visible[:, :-1] = 0.0
    assert (a1 != run(R_visible)).any()


def test_generalized_odaaf_is_odaaf_b():
    env = E.composite(S9, profile=Pr.interval(10, 20))
    T = 30000
    o = simulate(env, C.composite(), {"g": W.generalized_odaaf(20), "b": A.odaaf_b(20.0, 20.0)}, T,
                 jax.random.key(0), 2, record=1)
    np.testing.assert_array_equal(actions_of(o["g"]), actions_of(o["b"]))
    g2 = W.generalized_odaaf(20, mean_lag=14.5)
    s1, s2 = A.schedule("odaaf_b", T, 20.0, 20.0), A.schedule("odaaf_b", T, 14.5, 20.0)
    st = final_state(env, C.composite(), g2, T, key=0)
    np.testing.assert_array_equal(st.n_table[0], np.minimum(s2, 2**30))
    assert (s2 <= s1).all()


# ----------------------------------------------------------------------------- click-stream worlds
def _constant(arm, T):
    def init(spec, key):
        return _Rec(jnp.zeros((T,), jnp.float32))

    def act(st, ctx, key):
        return jnp.asarray(arm, jnp.int32), ()

    def update(st, arr):
        return _Rec(st.log.at[arr.t].set(arr.payload[0]))

    return Policy(init, act, update, None, Needs(attributed=False), "constant")


@pytest.mark.parametrize("count_current", [True, False])
def test_nonoblivious_delay_rule(count_current):
    """Fig. 5(a,b): the delay is d once the best arm has been held 3d rounds in a row, else 1."""
    d, T = 4, 60
    labels = np.zeros(T, np.int32)
    labels[::7] = 1  # arm 0 is i*; it pays except every 7th round
    env = E.label_stream(labels, n_arms=3, adaptive_d=d, count_current=count_current)
    log = final_state(env, C.anonymous(), _constant(0, T), T).log[0]
    X = (labels == 0).astype(float)
    streak = np.arange(1, T + 1) - (0 if count_current else 1)
    delay = np.where(streak >= 3 * d, d, 1)
    y = np.zeros(T + d + 1)
    for s in range(T):
        y[s + delay[s]] += X[s]
    np.testing.assert_array_equal(log, y[:T])
    env1 = E.label_stream(labels, n_arms=3, adaptive_d=d)
    log1 = final_state(env1, C.anonymous(), _constant(1, T), T).log[0]  # not the best arm: always 1
    np.testing.assert_array_equal(log1[1:], (labels == 1)[:-1].astype(float))


def test_fixed_arm_regret_recorded():
    lab = E.synthetic_labels(E.zipf_probs(5), 3000, seed=1, drift=1.5)
    env = E.label_stream(lab, delay=D.uniform(5, 10))
    o = simulate(env, C.anonymous(), W.ars_exp3(), 3000, jax.random.key(0), 4)
    G = np.stack([np.cumsum(lab == a) for a in range(5)], -1)
    np.testing.assert_allclose(o.arm_totals[0, -1], G[-1])
    istar = int(np.argmax(G[-1]))
    np.testing.assert_allclose(o.fixed_regret[:, -1], G[-1, istar] - o.reward[:, -1])
    assert (o.regret >= o.fixed_regret - 1e-3).all()  # prefix-best comparator dominates
    assert (o.regret[:, -1] == pytest.approx(o.fixed_regret[:, -1]))


# ----------------------------------------------------------------------------- bad input
@pytest.mark.parametrize("bad, word", [
    (lambda: W.ars_ucb(alpha=-1), "alpha"), (lambda: W.ars_ucb(f="k^5"), "f must"),
    (lambda: W.f_poly(0, 2), "c"), (lambda: W.ars_exp3(beta=0.0), "beta"), (lambda: W.ars_exp3(gamma=2.0), "gamma"),
    (lambda: W.clw(0), "d"), (lambda: W.clw(3, round_rule="back"), "round_rule"),
    (lambda: W.clw(3, clw_params="x"), "clw_params"), (lambda: W.ars_clw(h=3), "h must"),
    (lambda: Pr.discounted(1.0), "gamma"), (lambda: Pr.polynomial(1.0), "gamma"), (lambda: Pr.interval(5, 5), "d_max"),
    (lambda: Pr.polynomial(2, tail="keep"), "tail"), (lambda: E.label_stream([0, 1, 2], adaptive_d=0), "adaptive_d"),
    (lambda: E.label_stream([0.5, 1.0], adaptive_d=2), "labels"), (lambda: E.label_stream([0, 1]), "exactly one"),
    (lambda: E.composite(S9, delay=D.fixed(1), total="gauss"), "total"),
])
def test_bad_input_raises(bad, word):
    with pytest.raises((ValueError, TypeError), match=word):
        bad()


def test_wrong_channel_rejected():
    with pytest.raises(ValueError, match="ARS-UCB"):
        simulate(E.bernoulli([0.5, 0.6]), C.attributed(), W.ars_ucb(), 10, jax.random.key(0))
