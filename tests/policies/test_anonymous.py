"""Pike-Burke et al. (2018): schedules against reference tables computed independently in float64,
known pitfalls (bridge off-by-one, rewards of the previous block leaking into an estimate, horizon
truncation, phase index base), jump times identical across replications, information hiding,
elimination is final, and QPM-D's queue mechanics. Reference numbers: conventions §11 and
docs/reproductions/pikeburke2018.md."""
import math

import jax
import numpy as np
import pytest

from jaxbandits import channels as C
from jaxbandits import delays as D
from jaxbandits import envs as E
from jaxbandits.policies import anonymous as A
from jaxbandits.engine import simulate

from conftest import actions_of, final_state

T_REF = 250_000

# n_1..n_5 and the round at which Step 1 of phase 4 ends (K = 2), computed independently in float64
REF = [
    (("odaaf", 10, None, None), [663, 2252, 7100, 21574, 63582], 43148, False),
    (("odaaf_b", 10, 20, None), [599, 1722, 5180, 15912, 48473], 37004, True),
    (("odaaf_v", 10, None, 10), [846, 2252, 6303, 18258, 53308], 42819, True),
    (("odaaf_v", 10, None, 100), [2720, 6241, 14818, 36382, 91568], 87582, True),
    (("odaaf_v", 10, None, (10 * math.sqrt(math.pi / 2)) ** 2 * (1 - 2 / math.pi)), [1864, 4430, 10963, 28168, 74151], 67299, True),
    (("odaaf", 20, None, None), [846, 2984, 9348, 27756, 79511], 55512, False),
    (("odaaf_b", 20, 40, None), [726, 1993, 5752, 17102, 50916], 39956, True),
    (("odaaf_v", 20, None, 20), [1187, 2984, 7869, 21574, 60234], 51017, True),
    (("odaaf_v", 20, None, 400), [8336, 17931, 39320, 87997, 200442], 215314, True),
]


@pytest.mark.parametrize("args,n,end4,bridge", REF, ids=lambda x: str(x) if not isinstance(x, tuple) else x[0])
def test_schedules_match_reference_tables(args, n, end4, bridge):
    kind, e, d, v = args
    tab = A.schedule(kind, T_REF, e, bound=d, variance=v)
    assert tab[0] == 0  # phase index base: n_0 = 0, phases start at m = 1 (D_1 = 1/2)
    np.testing.assert_array_equal(tab[1:6], n)
    assert A.phase_timeline(tab, 2, bridge, 4)[-1] == end4
    assert np.all(np.diff(tab[tab <= T_REF]) > 0)


def test_schedule_properties():
    """ODAAF-B reverts to eq. (2) for a large bound, and gains for a small one; the L_m <= 0 guard."""
    big = A.schedule("odaaf_b", T_REF, 10, bound=1e9)
    np.testing.assert_array_equal(big[1:6], A.schedule("odaaf", T_REF, 10)[1:6])
    assert np.all(A.schedule("odaaf_b", T_REF, 10, bound=20)[1:6] < A.schedule("odaaf", T_REF, 10)[1:6])
    tiny = A.schedule("odaaf", 50, 0.0)
    assert tiny[-1] == 51  # T D_m^2 <= 1: sentinel T + 1


def test_deterministic_regret_and_kinks_identical_across_runs():
    """mu = (0.5, 0.6), unif(0, 20), T = 250k: arm 0 is eliminated at phase 4 in every run, so
    R_T = 0.1 n_4 exactly (2157.4 for ODAAF, 1591.2 for ODAAF-B with the best-arm bridge) and the
    regret curve's kinks are the same in every replication."""
    env = E.bernoulli([0.5, 0.6], delay=D.uniform(0, 20))
    o = simulate(env, C.anonymous(), {"ODAAF": A.odaaf(10.0), "ODAAF-B": A.odaaf_b(10.0, 20)}, T_REF,
                 jax.random.key(0), 8, record=250)
    np.testing.assert_allclose(o["ODAAF"].regret[:, -1], 2157.4, atol=0.05)
    np.testing.assert_allclose(o["ODAAF-B"].regret[:, -1], 1591.2, atol=0.05)
    for x in o.values():  # every run has the same curve: kinks at the same rounds
        np.testing.assert_allclose(x.regret, np.broadcast_to(x.regret[0], x.regret.shape), atol=0.05)
    r = o["ODAAF"].regret[0]
    t = o["ODAAF"].t
    # piecewise linear: slope 0.1 during arm-0 blocks. Arm 0 plays rounds 1..663 first: R(500) = 50, R(1000) = 66.3
    assert abs(r[np.searchsorted(t, 500)] - 50.0) < 1e-3 and abs(r[np.searchsorted(t, 1000)] - 66.3) < 1e-3


def test_eliminated_arm_never_played_again_and_horizon_truncation():
    rng_means = [0.2, 0.5, 0.45, 0.3]
    env = E.bernoulli(rng_means, delay=D.poisson(5.0))
    T = 30_000
    o = simulate(env, C.anonymous(), A.odaaf_v(5.0, 5.0), T, jax.random.key(1), 4, record=1)
    st = final_state(env, C.anonymous(), A.odaaf_v(5.0, 5.0), T, 4, key=1)
    acts = actions_of(o)
    for r in range(4):
        tab = st.n_table[r]
        for k in range(4):
            m_e = st.elim_phase[r, k]
            if m_e > 0:  # after the end of Step 1 of its elimination phase, k is never played again
                plays = np.nonzero(acts[r] == k)[0]
                assert plays.size == st.obs_cnt[r, k]  # never as a bridge arm either (it was not the leader)
                assert st.obs_cnt[r, k] == tab[m_e]
    # horizon truncation: T stops the machine mid-block of phase 2; no elimination after phase 1,
    # every round is a Step-1 round (no bridge), each arm has n_1 samples plus its part of phase 2
    tab = A.schedule("odaaf", 2000, 5.0)
    T2 = 4 * int(tab[1]) + 10
    st2 = final_state(env, C.anonymous(), A.odaaf(5.0), T2, 2, key=1)
    assert st2.obs_cnt.sum(1).tolist() == [T2, T2]
    assert np.all(st2.elim_phase <= 1) and np.all(st2.m == 2)


def test_constant_delay_exact_attribution():
    """Deterministic rewards (mu = (0, 1)) and constant delay c: X_t = R_{A_{t-c}} (0 for
    t < c). The per-arm sums of ODAAF must equal those of the closed form: a block's first min(c, nu)
    rounds carry the previous arm's rewards (the previous block's or the bridge's), and the bridge's
    own observations are discarded."""
    c = 7
    T = 6000
    for pol, use_bridge, blen in [(A.odaaf(3.0), False, None), (A.odaaf_b(3.0, 50), True, None),
                                  (A.odaaf(3.0, use_bridge=True, bridge_rule="first_next"), True, None),
                                  (A.odaaf_v(3.0, 3.0, bridge_len=c), True, c)]:
        env = E.bernoulli([0.0, 1.0], delay=D.fixed(c))
        o = simulate(env, C.anonymous(), pol, T, jax.random.key(0), 1, record=1)
        acts = actions_of(o)[0]
        st = final_state(env, C.anonymous(), pol, T)
        x = np.zeros(T)
        x[c:] = acts[: T - c]  # reward of arm a is a (0 or 1), arriving c rounds later
        # replay the machine's bookkeeping on the host from the actions: which rounds are Step-1 rounds
        tab = st.n_table[0]
        sums, cnts = np.zeros(2), np.zeros(2)
        t = 0
        m = 1
        active = [0, 1]
        while t < T:
            nu = tab[m] - tab[m - 1]
            for j in list(active):
                for _ in range(int(nu)):
                    if t >= T:
                        break
                    assert acts[t] == j
                    sums[j] += x[t]
                    cnts[j] += 1
                    t += 1
            if t >= T:
                break
            xb = sums / np.maximum(cnts, 1)
            best = max(xb[j] for j in active)
            active = [j for j in active if not (xb[j] + 2.0**-m < best)]
            if use_bridge:
                t += int(nu if blen is None else blen)
            m += 1
        np.testing.assert_allclose(st.obs_sum[0], sums)
        np.testing.assert_allclose(st.obs_cnt[0], cnts)


def test_anonymous_hides_arm_identity():
    """Swapping the rewards of paired rounds that land together (delays 1, 0) leaves every sum
    and hence every ODAAF action unchanged."""
    rng = np.random.default_rng(3)
    T = 4000
    xr = (rng.random(T) < 0.5).astype(float)
    R = np.stack([xr, xr], 1)
    xs = xr.reshape(-1, 2)[:, ::-1].ravel()
    d = np.tile([1, 0], T // 2)
    a1 = actions_of(simulate(E.oblivious(1 - R, d), C.anonymous(), A.odaaf(1.0), T, jax.random.key(0), record=1))
    a2 = actions_of(simulate(E.oblivious(1 - np.stack([xs, xs], 1), d), C.anonymous(), A.odaaf(1.0), T,
                             jax.random.key(0), record=1))
    np.testing.assert_array_equal(a1, a2)


def test_qpmd_waits_for_first_arrivals():
    """QPM-D with UCB1 wants each arm once; with a constant delay c it plays arm 0 for c + 1 rounds
    (until the first arm-0 reward arrives), then arm 1 for c + 1 rounds (Joulani et al. 2013, Alg. 2)."""
    c = 5
    env = E.bernoulli([0.3, 0.6, 0.5], delay=D.fixed(c))
    acts = actions_of(simulate(env, C.attributed(), A.qpmd(), 60, jax.random.key(0), record=1))[0]
    np.testing.assert_array_equal(acts[: 3 * (c + 1)], np.repeat([0, 1, 2], c + 1))


def test_qpmd_regret_and_queue_law():
    """QPM-D's regret at T = 250k is about 200 (mu = (0.5, 0.6), E = 10; the reference of
    docs/reproductions/pikeburke2018.md). The draw without replacement preserves each arm's law: fed
    means estimate the true means."""
    env = E.bernoulli([0.5, 0.6], delay=D.uniform(0, 20))
    o = simulate(env, C.attributed(), A.qpmd(), T_REF, jax.random.key(0), 20)
    m, se = o.regret[:, -1].mean(), o.regret[:, -1].std(ddof=1) / np.sqrt(20)
    assert abs(m - 204) < 4 * se + 0.03 * 204, (m, se)
    st = final_state(env, C.attributed(), A.qpmd(), 20_000, 8)
    means = st.fed_sum.sum(0) / st.fed_cnt.sum(0)
    assert abs(means[1] - 0.6) < 0.01 and abs(means[0] - 0.5) < 0.05
    assert np.all(st.q_cnt >= 0) and np.all(st.q_sum <= st.q_cnt + 1e-6) and np.all(st.q_sum >= -1e-6)


def test_channel_checks_and_bad_input():
    env = E.bernoulli([0.5, 0.6])
    with pytest.raises(ValueError, match="cannot run on the channel"):
        simulate(env, C.attributed(), A.odaaf(1.0), 10, jax.random.key(0))
    with pytest.raises(ValueError, match="cannot run on the channel"):
        simulate(env, C.anonymous(), A.qpmd(), 10, jax.random.key(0))
    for bad, match in [(lambda: A.odaaf(-1.0), "mean_delay"), (lambda: A.odaaf_b(1.0, -2), "bound"),
                       (lambda: A.odaaf_v(1.0, float("nan")), "variance"), (lambda: A.odaaf(1.0, bridge_rule="x"), "bridge_rule"),
                       (lambda: A.qpmd("exp3"), "base"), (lambda: A.schedule("odaaf", 0), "horizon"),
                       (lambda: A.odaaf_v(1.0, 1.0, bridge_len=0), "bridge_len")]:
        with pytest.raises((ValueError, TypeError), match=match):
            bad()


def test_elimination_threshold_is_exactly_strict():
    """Step 2 eliminates j iff X_j + D_m < max X (strict: the comparison is '<'). No delay,
    arm 1 always pays 1, arm 0 pays 1 on alternate rounds: after phase 1 (n_1 = 232 at T = 1000,
    E = 0) X_0 = 0.5 exactly and X_0 + 1/2 = X_1, so arm 0 survives and opens phase 2 at round
    2 n_1; with one reward fewer (115/232) it is eliminated and arm 1 plays on. A '<=' comparison,
    or any other threshold, fails one of the two."""
    T = 1000
    n1 = int(A.schedule("odaaf", T, 0.0)[1])
    assert n1 == 232
    for ones, arm_next in [(n1 // 2, 0), (n1 // 2 - 1, 1)]:
        R = np.ones((T, 2))
        R[:, 0] = 0.0
        R[np.arange(0, 2 * ones, 2), 0] = 1.0  # `ones` rewards for arm 0 within its first block
        acts = actions_of(simulate(E.oblivious(1 - R, np.zeros(T, int)), C.anonymous(), A.odaaf(0.0), T,
                                   jax.random.key(0), record=1))[0]
        np.testing.assert_array_equal(acts[: 2 * n1], np.repeat([0, 1], n1))
        assert acts[2 * n1] == arm_next, (ones, acts[2 * n1 - 2: 2 * n1 + 2])
