"""Thune, Cesa-Bianchi and Seldin (2019): DEW, Skipper, Doubling. Timing, play-time importance
weights, simultaneous arrivals, the skip boundary, truncation and Doubling's epochs as test cases,
invariants derived from Lemma 11's argument, the
doubling epochs on a hand-computed sequence, and bound compliance for every run."""
import math
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxbandits import channels as C
from jaxbandits import delays as D
from jaxbandits import envs as E
from jaxbandits.policies import adversarial as A
from jaxbandits.engine import simulate, simulate_grid
from jaxbandits.core.types import ProblemSpec

from conftest import actions_of, final_state



class Hist(NamedTuple):
    base: Any
    probs: Any  # f32[T, K] the law each round's action was drawn from
    epoch: Any  # i32[T]


def with_history(pol, T, seq=None):
    """Record each round's probabilities (and epoch); with ``seq``, play a fixed action sequence
    while the policy's own statistics (play-time probability included) are kept."""

    def init(spec, key):
        return Hist(pol.init(spec, key), jnp.zeros((T, spec.n_arms)), jnp.zeros((T,), jnp.int32))

    def act(st, ctx, key):
        a, memo = pol.act(st.base, ctx, key)
        if seq is not None:
            a = jnp.asarray(seq, jnp.int32)[ctx.t]
            memo = memo._replace(onehot=jnp.zeros_like(memo.onehot).at[a].set(1.0), log_p_a=jnp.log(memo.probs[a]))
        return a, memo

    def update(st, arr):
        return Hist(pol.update(st.base, arr), st.probs.at[arr.t].set(arr.memo.probs),
                    st.epoch.at[arr.t].set(getattr(arr.memo, "m", 0)))

    return pol._replace(init=init, act=act, update=update)


def dew_reference(losses, d, seq, eta, beta=np.inf, weight_at="play"):
    """float64 DEW: p_t = softmax(-eta L_hat_{t-1}); at the end of round t every (s, l_s) with
    s + d_s = t and d_s < beta adds l_s / p_s[A_s] (play-time probability) to L_hat[A_s].
    ``weight_at="arrival"``: the wrong weight p_t[A_s] (arrival time), for the negative control."""
    T, K = losses.shape
    L = np.zeros(K)
    P = np.zeros((T, K))
    for t in range(T):
        w = -eta * L
        P[t] = np.exp(w - w.max()) / np.exp(w - w.max()).sum()
        for s in range(t + 1):
            if s + d[s] == t and d[s] < beta:
                L[seq[s]] += losses[s, seq[s]] / P[s if weight_at == "play" else t, seq[s]]
    return P


def _world(T=120, K=3, seed=0):
    rng = np.random.default_rng(seed)
    losses = (rng.random((T, K)) < [0.3, 0.5, 0.6][:K]).astype(float)
    d = rng.integers(0, 12, T)
    d[10:20] = 30 - np.arange(10, 20)  # staircase: rounds 10..19 all arrive at the end of round 30 (simultaneous arrivals)
    d[5] = D.NEVER  # never arrives
    d[T - 3] = 50  # lands after the horizon
    seq = rng.integers(0, K, T)
    return losses, d, seq


def test_dew_matches_float64_reference_with_delays():
    """P1 timing, P2 play-time probability, P3 many arrivals per round, P7 never."""
    losses, d, seq = _world()
    T, K = losses.shape
    eta = 0.05
    st = final_state(E.oblivious(losses, d), C.attributed(), with_history(A.dew(eta), T, seq), T)
    ref = dew_reference(losses, d, seq, eta)
    assert np.isfinite(ref).all()
    np.testing.assert_allclose(st.probs[0], ref, atol=2e-5, equal_nan=False)
    # the wrong weight (probability at arrival instead of at play) gives a different trajectory
    wrong = dew_reference(losses, d, seq, eta, weight_at="arrival")
    assert np.abs(st.probs[0] - wrong).max() > 1e-3


def test_dew_without_delay_is_exp3():
    """Timing: all d = 0: DEW is loss-based Exp3 without mixing, step by step."""
    losses, _, seq = _world(seed=2)
    T = losses.shape[0]
    d = np.zeros(T, int)
    st = final_state(E.oblivious(losses, d), C.attributed(), with_history(A.dew(0.03), T, seq), T)
    ref = dew_reference(losses, d, seq, 0.03)
    assert np.isfinite(ref).all() and ref.min() > 1e-6
    np.testing.assert_allclose(st.probs[0], ref, atol=2e-5, equal_nan=False)
    assert np.allclose(st.probs[0][0], 1 / 3)  # round 0 never sees its own feedback


def test_skip_boundary():
    """Skip boundary: skip iff d >= beta (not strict); beta <= 0 skips everything (uniform forever);
    beta = inf is bare DEW."""
    pol = A.skipper(5.0, A.dew(0.1))
    memo = A.DEWMemo(jnp.array([0.0, 1.0]), jnp.log(0.5), jnp.array([0.5, 0.5]))
    assert float(pol.payload(memo, 0.0, 4)[1]) > 0 and float(pol.payload(memo, 0.0, 4)[-1]) == 0
    assert float(pol.payload(memo, 0.0, 5)[1]) == 0 and float(pol.payload(memo, 0.0, 5)[-1]) == 1
    losses, d, seq = _world(seed=3)
    T, K = losses.shape
    env = E.oblivious(losses, d)
    st0 = final_state(env, C.attributed(), with_history(A.skipper(0.0, A.dew(0.1)), T, seq), T)
    np.testing.assert_allclose(st0.probs[0], 1 / K, atol=1e-6)
    sti = final_state(env, C.attributed(), with_history(A.skipper(np.inf, A.dew(0.1)), T, seq), T)
    std = final_state(env, C.attributed(), with_history(A.dew(0.1), T, seq), T)
    np.testing.assert_array_equal(sti.probs, std.probs)
    st5 = final_state(env, C.attributed(), with_history(A.skipper(5.0, A.dew(0.1)), T, seq), T)
    np.testing.assert_allclose(st5.probs[0], dew_reference(losses, d, seq, 0.1, beta=5.0), atol=2e-5, equal_nan=False)
    # skipped arrivals are counted (those that arrive within the horizon)
    assert st5.base.skipped[0] == sum(1 for s in range(T) if 5 <= d[s] and s + d[s] <= T - 1)


def test_truncation():
    """Truncation: eta' = min(eta, 1/(4e d_max)); d_max = 0: no truncation; Skipper-DEW at Cor 4's eta: none."""
    spec = ProblemSpec(2, 100)
    assert np.isclose(float(A.dew(1.0, d_max=10).init(spec, None).eta), 1 / (40 * math.e))
    assert float(A.dew(0.3, d_max=0).init(spec, None).eta) == pytest.approx(0.3)
    b = 17.0
    assert float(A.skipper_dew(b).init(spec, None).base.eta) == pytest.approx(1 / (4 * math.e * b))


def test_lemma11_invariants_and_negative_control():
    """I1: one processed arrival multiplies any probability by at most 1 + 1/(4 d_max - 1);
    I2: p_r[A_s] <= e p_s[A_s] when round s's feedback lands at r = s + d_s;
    I3: an update lowers the played arm only (the other arms' ratios are unchanged).
    Without truncation and with large delays, I2 fails (the test can fail)."""
    rng = np.random.default_rng(5)
    T, K, dmax = 400, 3, 20
    losses = (rng.random((T, K)) < [0.1, 0.5, 0.9]).astype(float)
    d = rng.integers(0, dmax + 1, T)
    d[200:240] = 240 - np.arange(200, 240)  # a pile-up of arrivals in one round
    d = np.minimum(d, dmax)
    env = E.oblivious(losses, d)
    st = final_state(env, C.attributed(), with_history(A.dew(10.0, d_max=dmax), T), T)
    P = st.probs[0].astype(np.float64)
    # the actions: recover from a rerun with record=1 (same key)
    acts = actions_of(simulate(env, C.attributed(), A.dew(10.0, d_max=dmax), T, jax.random.key(0), record=1))[0]
    n_arr = np.zeros(T, int)
    for s in range(T):
        if s + d[s] < T:
            n_arr[s + d[s]] += 1
    f = 1 + 1 / (4 * dmax - 1)
    ratio = (P[1:] / P[:-1]).max(1)
    assert np.all(ratio <= f ** n_arr[:-1] * (1 + 1e-4))
    for s in range(T):
        r = s + d[s]
        if r < T:
            assert P[r, acts[s]] <= math.e * P[s, acts[s]] * (1 + 1e-4)
    # I3 on the rounds with exactly one arrival: the other arms keep their ratios
    for t in np.nonzero(n_arr[:-1] == 1)[0]:
        s = [u for u in range(t + 1) if u + d[u] == t][0]
        others = [a for a in range(K) if a != acts[s]]
        if losses[s, acts[s]] > 0:
            assert P[t + 1, acts[s]] <= P[t, acts[s]] * (1 + 1e-5)
            np.testing.assert_allclose(P[t + 1, others[0]] / P[t + 1, others[1]], P[t, others[0]] / P[t, others[1]],
                                       rtol=1e-4)
    # negative control: no truncation (d_max=None) and eta = 10: I2 is violated somewhere
    stn = final_state(env, C.attributed(), with_history(A.dew(10.0), T), T)
    Pn = stn.probs[0].astype(np.float64)
    actn = actions_of(simulate(env, C.attributed(), A.dew(10.0), T, jax.random.key(0), record=1))[0]
    viol = [Pn[s + d[s], actn[s]] > math.e * Pn[s, actn[s]] for s in range(T) if s + d[s] < T]
    assert any(viol)


def test_doubling_epochs_hand_computed():
    """K = 2 (ln 2 = 0.693), all d = 0: (e K sigma / 2) ln K = 1.884 sigma. omega_0 = 1 fails at round 1,
    so round 1 opens epoch 1 (1.884 <= 2); round 2 opens epoch 2 (3.77 > 2); rounds 2-3 fit omega = 4;
    round 4 opens epoch 3 (rounds 4-7: 4 x 1.884 = 7.5 <= 8); round 8 opens epoch 4 (8 rounds).
    A first delay of 100 >= beta_0 = 0.133 is skipped: max(1, 1.884) > 1, so it jumps to epoch 1
    (max(1, 1.884) <= 2), one increment."""
    expect = [1, 2, 2, 3, 3, 3, 3] + [4] * 8 + [5] * 16
    ep, jumps = A.doubling_epochs(np.zeros(31), 2)
    np.testing.assert_array_equal(ep, expect)
    ep2, j2 = A.doubling_epochs([100] + [0] * 5, 2)
    assert ep2[0] == 1 and j2[0] == 1
    # several empty epochs in one round: a big K makes omega_0..omega_4 too small at round 1
    ep3, j3 = A.doubling_epochs([0], 10)
    assert j3[0] == int(math.ceil(math.log2(math.e * 10 / 2 * math.log(10))))
    # the in-scan loop agrees with the host reference on a random sequence with many restarts
    rng = np.random.default_rng(7)
    T = 600
    d = np.where(rng.random(T) < 0.05, rng.integers(50, 2000, T), rng.integers(0, 4, T))
    losses = (rng.random((T, 2)) < [0.4, 0.5]).astype(float)
    st = final_state(E.oblivious(losses, d), C.action_time(width=A.doubling_width(2, T)),
                   with_history(A.doubling(), T), T)
    ref_ep, ref_j = A.doubling_epochs(d, 2)
    np.testing.assert_array_equal(st.epoch[0], ref_ep)
    assert st.base.restarts[0] == ref_j.sum()


def test_doubling_restart_discards_old_feedback():
    """After a restart, feedback of rounds from earlier epochs changes nothing: compare with a
    float64 reference that tags each pending record with its epoch."""
    rng = np.random.default_rng(8)
    T, K = 300, 2
    d = rng.integers(0, 6, T)
    losses = (rng.random((T, K)) < [0.3, 0.6]).astype(float)
    seq = rng.integers(0, K, T)
    st = final_state(E.oblivious(losses, d), C.action_time(width=A.doubling_width(K, T)),
                   with_history(A.doubling(), T, seq), T)
    ep, jumps = A.doubling_epochs(d, K)
    lnk = math.log(K)
    L = np.zeros(K)
    P = np.zeros((T, K))
    pend = []
    for t in range(T):
        if jumps[t] > 0:
            L[:] = 0
        eta = lnk / 2 ** (ep[t] / 2)
        w = -eta * L
        P[t] = np.exp(w - w.max()) / np.exp(w - w.max()).sum()
        beta = 2 ** (ep[t] / 2) / (4 * math.e * lnk)
        if d[t] < beta:
            pend.append((t, seq[t], losses[t, seq[t]] / P[t, seq[t]], ep[t]))
        for (s, a, lh, e) in pend:
            if s + d[s] == t and e == ep[t]:
                L[a] += lh
    assert np.isfinite(P).all()
    np.testing.assert_allclose(st.probs[0], P, atol=5e-5, equal_nan=False)


def test_doubling_needs_action_time_and_no_horizon():
    """Doubling refuses observation-time feedback; its constructor takes neither T nor D."""
    import inspect

    assert set(inspect.signature(A.doubling).parameters) == {"m0", "lanes", "name"}
    with pytest.raises(ValueError, match="cannot run on the channel"):
        simulate(E.bernoulli_losses(2, 0.2), C.attributed(), A.doubling(), 10, jax.random.key(0))


def _act_uniforms(key, runs, T):
    """The act uniforms of every run (conventions §8: act key
    fold_in(fold_in(fold_in(fold_in(key, r), 1), 1), t), first uniform of the key)."""
    from jaxbandits.core.mathlib import uniform

    def run(r):
        k = jax.random.fold_in(jax.random.fold_in(jax.random.fold_in(key, r), 1), 1)
        return jax.vmap(lambda t: uniform(jax.random.fold_in(k, t)))(jnp.arange(T))

    return np.asarray(jax.vmap(run)(jnp.arange(runs)), np.float64)


def _doubling_regret_ref(d, act_u):
    """Expected regret of Doubling (Thune et al. sec. 4) on the table l[:, 0] = 0, l[:, 1] = 1, in
    float64 numpy, all runs at once, fed the simulator's act uniforms: epochs by eq. (6) with the
    violating round opening the next epoch, eta_m = ln K / sqrt(2^m), beta_m = sqrt(2^m)/(4 e ln K),
    restarts reset the weights and drop earlier epochs' feedback; the regret is sum_t p_t[1]."""
    R, T = act_u.shape
    K, lnk = 2, math.log(2)
    m, sig, nS, Dm = 0, 0, 0, 0.0
    L = np.zeros((R, K))
    pend = {}
    reg = np.zeros(R)
    for t in range(T):
        jumped = False
        while True:
            beta = 2 ** (m / 2) / (4 * math.e * lnk)
            skip = d[t] >= beta
            s2, n2, D2 = sig + 1, nS + skip, Dm + (0 if skip else d[t])
            if max(n2 * n2, (math.e * K * s2 / 2 + D2) * lnk) <= 2.0**m:
                break
            m, sig, nS, Dm, jumped = m + 1, 0, 0, 0.0, True
        sig, nS, Dm = s2, n2, D2
        if jumped:
            L[:] = 0.0
        w = -(lnk / 2 ** (m / 2)) * L
        p = np.exp(w - w.max(1, keepdims=True))
        p /= p.sum(1, keepdims=True)
        reg += p[:, 1]
        a = np.minimum((np.cumsum(p, 1) < act_u[:, t:t + 1]).sum(1), K - 1)
        if not skip and t + d[t] <= T - 1:
            pend.setdefault(t + d[t], []).append((a, (a == 1) / p[np.arange(R), a], m))
        for aa, lh, e in pend.pop(t, []):
            if e == m:
                L[np.arange(R), aa] += lh
    return reg


T_BC, R_BC, DS_BC = 8192, 20, [0, 8, 32]


@pytest.fixture(scope="module")
def compliance_runs():
    """K = 2, the loss table l[:, 0] = 0, l[:, 1] = 1 (deterministic), T = 8192, constant delays
    d in {0, 8, 32}, 20 runs: DEW-Thm1, Skipper-Cor4 (OT) and Doubling (AT), each as one grid over d."""
    K, T = 2, T_BC
    dls = np.stack([np.full(T, d, np.int64) for d in DS_BC])
    Ds = dls.sum(1).astype(float)
    grid = {"delays": dls, "eta": np.array([A.thm1_eta(K, T, x) for x in Ds]), "dmax": np.array(DS_BC, float),
            "b4": np.array([A.cor4_beta(K, T, x) for x in Ds])}
    env = lambda delays: E.switching([[0.0, 1.0]], T, delays=delays)  # Bernoulli(0) / Bernoulli(1) losses
    key = jax.random.key(1)
    w = max(DS_BC) + 1
    dew = simulate_grid(lambda delays, eta, dmax, b4: (env(delays), A.dew(eta, d_max=dmax)), grid,
                        C.attributed(width=w), T, key, R_BC)
    cor4 = simulate_grid(lambda delays, eta, dmax, b4: (env(delays), A.skipper_dew(b4, count_skipped=False)), grid,
                         C.attributed(width=w), T, key, R_BC)
    dbl = simulate_grid(lambda delays, eta, dmax, b4: (env(delays), A.doubling()), grid,
                        C.action_time(width=max(A.doubling_width(K, T), w)), T, key, R_BC)
    return dew, cor4, dbl, Ds, key


@pytest.mark.parametrize("i", range(len(DS_BC)))
def test_bound_compliance_every_run(compliance_runs, i):
    """Every run under its bound, where the bound is one a bad policy breaks: on this table always
    playing arm 1 scores T = 8192 and uniform play T/2 = 4096 (computed below), and every bound
    asserted is checked to be below uniform play's regret first.

    * DEW-Thm1 (max form) and Skipper-Cor4: 248 / 493 / 888 and 248 / 1490 / 2948 at d = 0 / 8 / 32:
      all below 4096, asserted for every run.
    * Doubling, Thm 6 (e K T / 2 form) and Cor 7: 3835 and 3835 at d = 0 (below 4096, asserted);
      at d = 8 and 32 they are 7508 / 22453 and 13428 / 44329, above uniform play's regret at any
      horizon a test can afford (Cor 7 needs T > 2.4e5 at d = 8 before uniform play breaks it):
      replaced by the comparison with a float64 reference of Doubling fed the same act uniforms,
      run by run (rtol 1e-3; measured agreement 2e-6 relative: the losses are deterministic, so
      float32 rounding is not amplified), which a wrong epoch rule, rate, threshold or restart
      breaks."""
    dew, cor4, dbl, Ds, key = compliance_runs
    K, T, d, Dt = 2, T_BC, DS_BC[i], Ds[i]
    losses = np.zeros((T, K))
    losses[:, 1] = 1.0
    worst = losses[:, 1].sum() - losses[:, 0].sum()
    uniform = losses.mean(1).sum() - losses[:, 0].sum()
    assert worst == T and uniform == T / 2
    eta = A.thm1_eta(K, T, Dt)
    b_dew, b_cor4 = A.thm1_bound(K, T, Dt, d, eta), A.cor4_bound(K, T, Dt)
    assert max(b_dew, b_cor4) < uniform
    assert np.all(dew.expected_regret[i, :, -1] <= b_dew)
    assert np.all(cor4.expected_regret[i, :, -1] <= b_cor4)
    reg = dbl.expected_regret[i, :, -1]
    b6, b7 = A.thm6_bound(np.full(T, d), K, T), A.cor7_bound(K, T, Dt)
    if d == 0:
        assert max(b6, b7) < uniform
        assert np.all(reg <= b6) and np.all(reg <= b7)
    else:
        assert min(b6, b7) > uniform  # vacuous here: the reference comparison below replaces it
    ref = _doubling_regret_ref(np.full(T, d), _act_uniforms(key, R_BC, T))
    np.testing.assert_allclose(reg, ref, rtol=1e-3)
    assert dew.lost_to_W.sum() == 0 and dbl.lost_to_W.sum() == 0


def test_bounds_reference_numbers():
    """Experiments E1 (K = 2, T = 2^12 and 2^17, Example 8 delays) and E3 (d = 0, T = 2^15) of
    docs/reproductions/thune2019.md."""
    for T, beta4, bstar, b_cor4, b_or in [(2**12, 252, 11.7, 3795, 284), (2**17, 3411, 65.9, 51420, 1608)]:
        n = math.ceil(math.sqrt(2 * T / math.log(2))) - 1
        d = np.where(np.arange(T) < n, T - 1 - np.arange(T), 0)
        Dt = int(d.sum())
        assert round(A.cor4_beta(2, T, Dt)) == beta4
        assert abs(A.oracle_beta(d, 2, T) - bstar) < 0.05
        assert abs(A.cor4_bound(2, T, Dt) - b_cor4) < 1
        assert abs(A.oracle_bound(d, 2, T) - b_or) < 1
    T = 2**17
    n = math.ceil(math.sqrt(2 * T / math.log(2))) - 1
    d = np.where(np.arange(T) < n, T - 1 - np.arange(T), 0)
    assert abs(A.thm6_bound(d, 2, T) - 24226) < 10  # spec: "about 24,230"
    assert abs(A.thm1_bound(2, 2**15, 0.0, 0, A.thm1_eta(2, 2**15, 0.0)) - 497) < 1


def test_int64_host_sums_and_never():
    """Totals of huge delays need int64 on the host; NEVER never arrives and never overflows."""
    d = np.full(2**17, 2**30 - 1, np.int64)
    n_s, d_beta = A.skipped_stats(d, beta=2.0**31)
    assert n_s == 0 and d_beta == (2**30 - 1) * 2**17
    T = 3000
    env = E.bernoulli_losses(2, 0.25, delays=np.full(T, D.NEVER))
    st = final_state(env, C.attributed(width=4), with_history(A.dew(0.05), T), T)
    np.testing.assert_allclose(st.probs[0], 0.5)  # nothing ever arrives: uniform play throughout
    o = simulate(env, C.attributed(width=4), A.dew(0.05), T, jax.random.key(0), 2)
    assert o.lost_to_W.sum() == 0 and np.isfinite(o.expected_regret).all()


def test_bad_input():
    with pytest.raises(ValueError, match="eta"):
        A.dew(-1.0)
    with pytest.raises(ValueError, match="d_max"):
        A.dew(0.1, d_max=-2)
    with pytest.raises(ValueError, match="beta"):
        A.skipper_dew(0.0)
    with pytest.raises(TypeError, match="base"):
        A.skipper(3.0, "dew")
    with pytest.raises(ValueError, match="m0"):
        A.doubling(m0=-1)
