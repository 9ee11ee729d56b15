"""Exact references for helper "adversarial": Thune, Cesa-Bianchi and Seldin 2019 (DEW, Skipper,
Skipper-DEW, Doubling; jaxbandits/policies/adversarial.py) and Wang, Wang and Huang 2021 (ARS-UCB,
ARS-EXP3, ARS-CLW, CLW; jaxbandits/policies/composite.py), their bound / tuning / table helpers,
the composite lag profiles (jaxbandits/core/profiles.py) and the adversarial / composite worlds.

Every reference here is plain numpy float64 written from the papers (numbers copied here with
their source), NOT from the library's code. Each is fed the same world draws, rebuilt from the PRNG
rule of conventions §8 (tests/reference_tools.Streams), and runs *teacher-forced*: at every round
it computes the law / the decision itself, checks the simulator's recorded law against it (to
float32 precision) and its action against an inverse-CDF draw with the round's act uniform, then
absorbs the simulator's action. A disagreement is excused only where the float64 reference's
cumulative probability lies within 1e-5 of the uniform (an inverse-CDF boundary) or, for the
deterministic ARS-UCB, where two indices are within 1e-5 (float32 rounding); each test asserts
how many excuses it used.

Randomised policies use the library's random primitives as given streams only (mathlib.uniform of
a documented key); every statistic, rate, probability, block size, phase constant and coin
decision is computed here.
"""
import importlib
import math
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxbandits import channels as C
from jaxbandits import delays as D
from jaxbandits import envs as E
from jaxbandits import mathlib as M
from jaxbandits.core import profiles as Pr
from jaxbandits.policies import adversarial as A
from jaxbandits.policies import composite as W

from reference_tools import Streams, f32, inverse_cdf_np, world_delays

EU = math.e
NEAR = 1e-5


# ============================================================================= shared machinery
class Rec(NamedTuple):
    base: Any
    acts: Any  # i32[T] the action of each round
    probs: Any  # f32[T, K] the law it was drawn from (memo.probs), zeros when the memo has none


def recorder(pol, T):
    """The policy unchanged, plus a record of every round's action and memo.probs in its state."""

    def init(spec, key):
        return Rec(pol.init(spec, key), jnp.zeros((T,), jnp.int32), jnp.zeros((T, spec.n_arms), jnp.float32))

    def act(st, ctx, key):
        return pol.act(st.base, ctx, key)

    def update(st, arr):
        p = getattr(arr.memo, "probs", None)
        probs = st.probs if p is None else st.probs.at[arr.t].set(p)
        return Rec(pol.update(st.base, arr), st.acts.at[arr.t].set(arr.action), probs)

    return pol._replace(init=init, act=act, update=update)


def run_all(problems, T, n_runs, key=0):
    """``{label: (env, channel, policy)}`` -> ``{label: final Rec state (numpy, leading run axis)}``,
    every problem traced into ONE compiled program (the simulator's own runner, as
    conftest.final_carry uses it), all facing the same world draws."""
    from conftest import run_many

    res = run_many({lab: (env, ch, recorder(pol, T)) for lab, (env, ch, pol) in problems.items()}, T, n_runs, key)
    return {lab: state.policy for lab, (state, _) in res.items()}


def draw_check(p, u, a_sim, label, t):
    """Inverse-CDF draw ``min(K-1, #{cumsum(p) < u})`` from the reference law: True if it equals the
    simulator's action; an inverse-CDF boundary within NEAR is an excuse (returns False); anything
    else fails."""
    a_ref = inverse_cdf_np(p, u)
    if a_ref == a_sim:
        return True
    c = np.cumsum(p) / np.sum(p)
    assert np.min(np.abs(c - u)) < NEAR, f"{label}: round {t}: reference draws {a_ref}, simulator {a_sim}; p={p}, u={u}"
    return False


def check_law(p_sim, p_ref, label, t, rtol=3e-3, atol=1e-6):
    """The recorded float32 law against the float64 reference. Exponential weights on importance-
    weighted losses amplify rounding (an error in p_s enters the next update through 1/p_s): a
    free-running float64 recursion drifts from the float32 one exponentially, ~1e-5 relative after
    300 rounds, 2e-2 after 550 (measured on DEW(0.06)), hence the step-forced comparison of
    _dew_family_ref for long runs; a wrong rate, weight or timing moves the law by O(1)."""
    assert np.all(np.abs(p_sim - p_ref) <= atol + rtol * p_ref), f"{label}: round {t}: law {p_sim} vs reference {p_ref}"


def softmax(x):
    z = np.exp(x - x.max())
    return z / z.sum()


# ============================================================================= Thune et al. 2019
# ----------------------------------------------------------------------------- bound / tuning helpers
def test_thune_formula_helpers_match_the_paper():
    """Thm 1 (rate and max-form bound), Thm 3, Cor 4 (beta and bound), Cor 7, written here from
    Thune et al. 2019 sec. 3, on a grid of (K, T, D, d_max, beta)."""
    lnk = math.log
    for K, T, Dt, dm, beta, eta, nS, Db in [(2, 4096, 0.0, 0, 3.0, 0.01, 0, 0), (3, 1000, 5e4, 40, 7.5, 0.2, 12, 300),
                                            (10, 2**15, 3.3e7, 1024, 100.0, 1e-4, 77, 4e5)]:
        kt = EU * K * T / 2
        assert A.thm1_eta(K, T, Dt) == pytest.approx(math.sqrt(lnk(K) / (kt + Dt)), rel=1e-12)
        assert A.thm1_bound(K, T, Dt, dm, eta) == pytest.approx(
            max(lnk(K) / eta, 4 * EU * dm * lnk(K)) + eta * (kt + Dt), rel=1e-12)
        assert A.thm3_bound(K, T, nS, Db, beta, eta) == pytest.approx(
            nS + max(lnk(K) / eta, 4 * EU * beta * lnk(K)) + eta * (kt + Db), rel=1e-12)
        b4 = math.sqrt((kt + (1 + 4 * EU) * Dt) / (16 * EU**2 * lnk(K)))
        assert A.cor4_beta(K, T, Dt) == pytest.approx(b4, rel=1e-12)
        assert A.cor4_bound(K, T, Dt) == pytest.approx(2 * math.sqrt((kt + (1 + 4 * EU) * Dt) * lnk(K)), rel=1e-12)
        # Cor 4 = Thm 3 at eta = 1/(4 e beta), |S| <= D / beta, D_beta <= D, minimised over beta
        thm3_relaxed = Dt / b4 + 4 * EU * b4 * lnk(K) + (kt + Dt) / (4 * EU * b4)
        assert thm3_relaxed == pytest.approx(A.cor4_bound(K, T, Dt), rel=1e-12)
        assert A.cor7_bound(K, T, Dt) == pytest.approx(
            30 * math.sqrt((kt + (1 + 4 * EU) * Dt) * lnk(K)) + 10 * EU**2 * K * lnk(K) + 5, rel=1e-12)
    # Thm 1 eq. (1): at the tuned rate with no truncation the max form is 2 sqrt((eKT/2 + D) ln K)
    eta = A.thm1_eta(2, 2**15, 0.0)
    assert A.thm1_bound(2, 2**15, 0.0, 0, eta) == pytest.approx(2 * math.sqrt(EU * 2**15 * math.log(2)), rel=1e-12)


def _oracle_brute(d, K, T, kterm):
    """min over beta > 0 of |S_beta| + 4 e beta ln K + (kterm + D_beta)/(4 e beta), by direct counting
    at every candidate: each delay value, just above it, and each piece's stationary point."""
    d = np.asarray(d, np.float64)
    lnk = math.log(K)
    f = lambda b: np.sum(d >= b) + 4 * EU * b * lnk + (kterm + d[d < b].sum()) / (4 * EU * b)
    vals = np.unique(d[d > 0])
    cands = list(vals) + list(vals + 1e-9) + [1e-9]
    for Db in np.unique(np.concatenate([[0.0], np.cumsum(np.sort(d))])):
        cands.append(math.sqrt((kterm + Db) / (16 * EU**2 * lnk)))
    cands += list(np.geomspace(1e-3, max(d.max(), 1) * 10, 400))
    best = min(cands, key=f)
    return f(best), best, f


@pytest.mark.parametrize("case", ["random", "example8", "zeros"])
def test_thune_oracle_thm6_skipped_stats(case):
    """oracle_bound / oracle_beta = min / argmin of the Thm 3 oracle term by brute force;
    thm6_bound = 15 min{...} + 10 e^2 K ln K + 5 (eKT/2 form and the printed KT form);
    skipped_stats = (#{d >= beta}, sum of d < beta)."""
    rng = np.random.default_rng(11)
    K, T = (3, 500) if case != "example8" else (2, 4096)
    if case == "random":
        d = np.where(rng.random(T) < 0.1, rng.integers(50, 400, T), rng.integers(0, 9, T))
    elif case == "example8":  # Thune et al. Example 8, 0-indexed: d[i] = T-1-i for i < ceil(sqrt(KT/lnK)) - 1
        n = math.ceil(math.sqrt(K * T / math.log(K))) - 1
        d = np.where(np.arange(T) < n, T - 1 - np.arange(T), 0)
    else:
        d = np.zeros(T, int)
    for kterm in (EU * K * T / 2, K * T):
        val, _, f = _oracle_brute(d, K, T, kterm)
        assert A.oracle_bound(d, K, T, kterm) == pytest.approx(val, rel=1e-9)
    val, _, f = _oracle_brute(d, K, T, EU * K * T / 2)
    assert f(A.oracle_beta(d, K, T)) == pytest.approx(val, rel=1e-7)
    c = 10 * EU**2 * K * math.log(K) + 5
    assert A.thm6_bound(d, K, T) == pytest.approx(15 * val + c, rel=1e-9)
    assert A.thm6_bound(d, K, T, printed=True) == pytest.approx(15 * _oracle_brute(d, K, T, K * T)[0] + c, rel=1e-9)
    for beta in (0.5, 3.0, 8.0, 9.0, 50.0, 1e9):
        assert A.skipped_stats(d, beta) == (int(np.sum(d >= beta)), int(d[d < beta].sum()))


def _epochs_ref(d, K, m0=0):
    """Doubling's epochs (Thune et al. sec. 4, eq. 5-6): stay in epoch m while
    max(|S^m|^2, (e K sigma/2 + D^m) ln K) <= 2^m with round t counted in; otherwise round t opens
    epoch m+1 (counters reset) and is tested again. Returns (epoch[t], jumps[t], skip[t])."""
    lnk = math.log(K)
    m, sig, nS, Dm = m0, 0, 0, 0.0
    ep, jumps, skips = [], [], []
    for dt in d:
        j = 0
        while True:
            beta = math.sqrt(2.0**m) / (4 * EU * lnk)
            sk = dt >= beta
            s2, n2, D2 = sig + 1, nS + sk, Dm + (0 if sk else dt)
            if max(n2**2, (EU * K * s2 / 2 + D2) * lnk) <= 2.0**m:
                break
            m, sig, nS, Dm, j = m + 1, 0, 0, 0.0, j + 1
        sig, nS, Dm = s2, n2, D2
        ep.append(m)
        jumps.append(j)
        skips.append(sk)
    return np.array(ep), np.array(jumps), np.array(skips)


def test_thune_doubling_epochs_and_width():
    """doubling_epochs against the reference loop (random delays with skips, empty epochs and large
    K); doubling_width = ceil(beta_M) + 1 for the first M with 2^M >= max(T^2, (eKT/2 + T beta_M) ln K)."""
    rng = np.random.default_rng(3)
    for K, T, m0 in [(2, 3000, 0), (5, 2000, 0), (10, 800, 3)]:
        d = np.where(rng.random(T) < 0.05, rng.integers(20, 5000, T), rng.integers(0, 12, T))
        ep, jumps, _ = _epochs_ref(d, K, m0)
        ep2, j2 = A.doubling_epochs(d, K, m0)
        np.testing.assert_array_equal(ep2, ep)
        np.testing.assert_array_equal(j2, jumps)
    for K, T in [(2, 100), (2, 4096), (7, 10**5)]:
        lnk = math.log(K)
        m = 0
        while 2.0**m < max(float(T) ** 2, (EU * K * T / 2 + T * 2 ** (m / 2) / (4 * EU * lnk)) * lnk):
            m += 1
        assert A.doubling_width(K, T) == math.ceil(2 ** (m / 2) / (4 * EU * lnk)) + 1


# ----------------------------------------------------------------------------- policies
def _adv_world(T, K, seed):
    rng = np.random.default_rng(seed)
    losses = (rng.random((T, K)) < np.linspace(0.3, 0.7, K)).astype(float)
    d = rng.integers(0, 9, T)
    d[40:60] = 75 - np.arange(40, 60)  # staircase: 20 arrivals at the end of round 75 (simultaneous arrivals)
    d[rng.random(T) < 0.03] = 25  # some long ones (skipped by small betas)
    d[5] = D.NEVER  # never arrives
    d[T - 4] = 30  # lands after the horizon
    d[[100, 300, 500]] = 16  # exactly d_max of "dew_trunc" (kept: the drop rule is delay > d_max)
    return losses, d


FREE = 300  # rounds over which the free-running float64 reference is compared (see check_law)


def _step(p_prev, eta, g):
    """One batch of arrivals applied to a law: p ~ p_prev exp(-eta g) (float64, log domain)."""
    with np.errstate(divide="ignore"):
        return softmax(np.log(p_prev) - eta * g)


def _dew_family_ref(losses, d, acts, act_u, P, eta, keep, label):
    """Exponential weights on importance-weighted delayed losses (Thune et al. Alg. 1 / 2):
    p_t = softmax(-eta' Lhat_{t-1}); at the end of round t each (s, l_s) with s + d_s = t and
    keep(d_s) adds l_s / p_s[A_s] (play-time probability) to Lhat[A_s].

    Two comparisons every round: (i) *step-forced*: the simulator's law P[t] must equal its own
    previous law P[t-1] times exp(-eta' g), g the importance-weighted losses landing at the end of
    round t-1 weighted by the simulator's play-time laws P[s] (rtol 1e-4: this pins the rule with
    no float32 drift); (ii) *free-running*: the float64 recursion from uniform, over the first
    FREE rounds (rtol 3e-3). Actions: inverse-CDF draws of the step-forced law with the act
    uniform. Returns (#draw excuses, #arrivals discarded by keep within the horizon)."""
    T, K = losses.shape
    L = np.zeros(K)
    pend = {}
    excuses = discarded = 0
    g = np.zeros(K)
    for t in range(T):
        p_step = np.full(K, 1.0 / K) if t == 0 else _step(P[t - 1], eta, g)
        check_law(P[t], p_step, label + " (step)", t, rtol=1e-4)
        if t < FREE:
            check_law(P[t], softmax(-eta * L), label + " (free)", t)
        p_free = softmax(-eta * L)
        a = int(acts[t])
        excuses += not draw_check(p_step, act_u[t], a, label, t)
        if t + d[t] <= T - 1:
            if keep(d[t]):
                pend.setdefault(t + d[t], []).append((a, losses[t, a] / P[t, a], losses[t, a] / p_free[a]))
            else:
                discarded += 1
        g = np.zeros(K)
        for aa, lh_step, lh_free in pend.pop(t, []):
            g[aa] += lh_step
            L[aa] += lh_free
    return excuses, discarded


def _doubling_ref(losses, d, acts, act_u, P, label):
    """Doubling (Thune et al. sec. 4): epoch m from _epochs_ref; eta_m = ln K / sqrt(2^m),
    beta_m = sqrt(2^m)/(4 e ln K); a restart resets the weights and discards every pending feedback
    of earlier epochs; rounds with d_t >= beta_m keep no feedback. Step-forced and free-running
    comparisons as in _dew_family_ref."""
    T, K = losses.shape
    ep, jumps, skip = _epochs_ref(d, K)
    lnk = math.log(K)
    eta = lambda m: lnk / math.sqrt(2.0**m)
    L = np.zeros(K)
    pend = {}
    excuses = 0
    g = np.zeros(K)
    for t in range(T):
        if jumps[t] > 0:
            L[:] = 0.0
            p_step = np.full(K, 1.0 / K)
        else:
            p_step = np.full(K, 1.0 / K) if t == 0 else _step(P[t - 1], eta(ep[t - 1]), g)
        check_law(P[t], p_step, label + " (step)", t, rtol=1e-4)
        p_free = softmax(-eta(ep[t]) * L)
        if t < FREE:
            check_law(P[t], p_free, label + " (free)", t)
        a = int(acts[t])
        excuses += not draw_check(p_step, act_u[t], a, label, t)
        if not skip[t] and t + d[t] <= T - 1:
            pend.setdefault(t + d[t], []).append((a, losses[t, a] / P[t, a], losses[t, a] / p_free[a], ep[t]))
        g = np.zeros(K)
        for aa, lh_step, lh_free, e in pend.pop(t, []):
            if e == ep[t]:
                g[aa] += lh_step
                L[aa] += lh_free
    return excuses, ep


T_ADV, K_ADV, R_ADV = 700, 3, 3


@pytest.fixture(scope="module")
def thune_runs():
    return _thune_runs()


def _thune_runs():
    """One compiled program: DEW (plain, truncated, d_max drop rule), Skipper with count_skipped
    both ways (integer and fractional beta), Skipper-DEW (default and truncated eta), Doubling
    (lanes 48 and 2), and DEW on the generated Bern(K, Delta) world."""
    losses, d = _adv_world(T_ADV, K_ADV, 0)
    env = E.oblivious(losses, d)
    ch = C.attributed(width=T_ADV)
    dd = np.where(np.random.default_rng(1).random(T_ADV) < 0.04, 3000, np.random.default_rng(2).integers(0, 7, T_ADV))
    env_at = E.oblivious(losses, dd)
    ch_at = C.action_time(width=A.doubling_width(K_ADV, T_ADV))
    gen = E.bernoulli_losses(K_ADV, 0.2, delays=d, salt=5)
    probs = {
        "dew": (env, ch, A.dew(0.04)),
        "dew_trunc": (env, ch, A.dew(0.5, d_max=16)),  # eta' = 1/(64 e) and delays > 16 dropped
        "skip5": (env, ch, A.skipper(5.0, A.dew(0.05))),
        "skip5.5_nocount": (env, ch, A.skipper(5.5, A.dew(0.05), count_skipped=False)),
        "skipdew": (env, ch, A.skipper_dew(9.0)),
        "skipdew_eta": (env, ch, A.skipper_dew(4.5, eta=1.0)),  # truncated to 1/(4 e 4.5)
        "doubling": (env_at, ch_at, A.doubling()),
        "doubling_l2": (env_at, ch_at, A.doubling(lanes=2)),
        "dew_gen": (gen, ch, A.dew(0.06)),
    }
    return run_all(probs, T_ADV, R_ADV, key=0), losses, d, dd


DEW_CASES = {  # label -> (eta', keep rule), from Thune et al. Thm 1 truncation and Alg. 2's skip rule
    "dew": (0.04, lambda x: True),
    "dew_trunc": (1 / (4 * EU * 16), lambda x: x <= 16),  # docstring: a delay above d_max is dropped
    "skip5": (0.05, lambda x: x < 5.0),
    "skip5.5_nocount": (0.05, lambda x: x < 5.5),
    "skipdew": (1 / (4 * EU * 9.0), lambda x: x < 9.0),
    "skipdew_eta": (1 / (4 * EU * 4.5), lambda x: x < 4.5),
}


@pytest.mark.parametrize("label", list(DEW_CASES))
def test_dew_skipper_exact_laws(thune_runs, label):
    """Every round's law equals the float64 reference (step-forced every round, rtol 1e-4; free-running
    over the first 300 rounds, rtol 3e-3), every action is its inverse-CDF draw with the act uniform,
    for T = 700 x 3 runs; Skipper's discard counter counts exactly the discarded arrivals
    (count_skipped=True) or stays 0 (False)."""
    st, losses, d, _ = thune_runs
    eta, keep = DEW_CASES[label]
    s = st[label]
    tot = 0
    for r in range(R_ADV):
        sr = Streams(T_ADV, 0, r)
        exc, disc = _dew_family_ref(losses, d, s.acts[r], sr.act_u, s.probs[r].astype(np.float64), eta, keep,
                                    f"{label} run {r}")
        tot += exc
        if label.startswith("skip"):
            want = 0 if label.endswith("nocount") else disc
            assert s.base.skipped[r] == want, (label, r, s.base.skipped[r], want)
            assert label.endswith("nocount") or disc > 10  # the counter is exercised
    assert tot <= 1, f"{label}: {tot} inverse-CDF boundary excuses"
    # the law actually moved away from uniform (the test exercises the updates)
    assert np.abs(s.probs[:, -1] - 1 / K_ADV).max() > 0.1


def test_dew_generated_bernoulli_world(thune_runs):
    """E.bernoulli_losses (Thune et al.'s Bern(K, Delta)): reward 1{u_{t,a} < 1 - loss
    mean} with one uniform per arm from the round's WORLD key folded with the salt (drawn before
    the game), arm 0 loss mean 0.5 - Delta, the others 0.5; DEW on it matches the reference."""
    st, _, d, _ = thune_runs
    s = st["dew_gen"]
    mu_r = f32([1 - 0.3] + [0.5] * (K_ADV - 1))  # reward means 1 - loss means, stored as float32
    for r in range(R_ADV):
        sr = Streams(T_ADV, 0, r)
        u = np.asarray(jax.vmap(lambda k: M.uniforms(jax.random.fold_in(k, 5), K_ADV))(sr.world_keys), np.float64)
        losses = 1.0 - (u < mu_r).astype(float)
        assert abs(losses[:, 0].mean() - 0.3) < 0.06 and abs(losses[:, 1:].mean() - 0.5) < 0.05
        exc, _ = _dew_family_ref(losses, d, s.acts[r], sr.act_u, s.probs[r].astype(np.float64), 0.06,
                                 lambda x: True, f"dew_gen run {r}")
        assert exc <= 1


@pytest.mark.parametrize("label", ["doubling", "doubling_l2"])
def test_doubling_exact_laws(thune_runs, label):
    """Doubling: epochs, per-epoch rate and threshold, restart (weights reset, earlier epochs'
    feedback discarded) and skip rule against the float64 reference, every round of 3 runs; with
    only 2 payload lanes the trajectory is the same (old feedback never aliases into a later epoch
    here, the epochs being longer than the processed delays)."""
    st, losses, _, dd = thune_runs
    s = st[label]
    tot = 0
    for r in range(R_ADV):
        sr = Streams(T_ADV, 0, r)
        exc, ep = _doubling_ref(losses, dd, s.acts[r], sr.act_u, s.probs[r].astype(np.float64), f"{label} run {r}")
        tot += exc
    assert tot <= 1
    assert len(np.unique(ep)) >= 6 and s.base.restarts[0] == ep[-1]  # many restarts; m0 = 0


# ============================================================================= Wang et al. 2021
# ----------------------------------------------------------------------------- table / formula helpers
def _g_table(T, beta):
    """ARS-EXP3's blocks (Wang et al. Alg. 2, one rounding everywhere): g(k) = ceil(k^beta),
    K = max{k : G(k) <= T}, then the leftover T - G(K)."""
    g, k = [], 1
    while sum(g) + math.ceil(k**beta - 1e-9) <= T:
        g.append(math.ceil(k**beta - 1e-9))
        k += 1
    return g, T - sum(g)


def _gamma_thm2(N, T, beta):
    """Wang et al. Thm 2: gamma = min{1, sqrt(N log N / ((e - 1) ((beta + 1) T)^(1/(beta+1))))}."""
    return min(1.0, math.sqrt(N * math.log(N) / ((EU - 1) * ((beta + 1) * T) ** (1 / (beta + 1)))))


def _cube_root_ceil(T):
    r = 1
    while r**3 < T:
        r += 1
    return r


def _phases(N, T, d=None, first_end=1024, params="wang"):
    """ARS-CLW phases (Wang et al. Alg. 3, App. C): T^(k) = first_end 2^(k-1) until one reaches T,
    d^(k) = h(T^(k)) = ceil(T^(k)^(1/3)) (our default h), gamma^(k) = min(1,
    sqrt(2 d N log N / (T^(k) + d))), q = 1/(2d). CLW: one phase (T, d). COLT constants (Cesa-Bianchi
    et al. 2018, Cor. of Thm 1): q = 1/(2(2d - 1)), eta = 4 sqrt(d ln N / ((4N + 1) T))."""
    if d is not None:
        ends, ds = [T], [d]
    else:
        ends = [first_end]
        while ends[-1] < T:
            ends.append(2 * ends[-1])
        ds = [max(1, _cube_root_ceil(e)) for e in ends]
    if params == "colt":
        qs = [1 / (2 * (2 * x - 1)) if x > 1 else 0.5 for x in ds]
        rates = [4 * math.sqrt(x * math.log(N) / ((4 * N + 1) * e)) for e, x in zip(ends, ds)]
    else:
        qs = [1 / (2 * x) for x in ds]
        rates = [min(1.0, math.sqrt(2 * x * N * math.log(N) / (e + x))) for e, x in zip(ends, ds)]
    return ends, ds, qs, rates


def test_wang_helpers_match_the_paper():
    """exp3_block_table, ars_exp3_gamma, clw_phase_table (both parametrisations, ARS-CLW and CLW),
    update_round_probability (q (1-q)^(2d-1): 0.018868 at d = 10, 0.0093137 at d = 20),
    h_default (ceil of the cube root) and thm1_log_coefficient (sum_{i >= 2} 8 alpha / Delta_i;
    sum 1/Delta_i = 10 H_8 = 27.18 for the nine arms s = (0.9, ..., 0.1))."""
    for T, beta in [(1, 0.5), (7, 0.5), (100_000, 0.5), (5000, 0.7), (999, 1.0), (12345, 0.25)]:
        tab, K = W.exp3_block_table(T, beta)
        g, left = _g_table(T, beta)
        assert K == len(g) and list(tab) == g + [left]
        assert 0 <= left < math.ceil((K + 1) ** beta - 1e-9)
    for N, T, beta in [(9, 100_000, 0.5), (2, 50, 0.5), (7, 10**6, 0.8), (3, 2, 0.5)]:
        assert W.ars_exp3_gamma(N, T, beta) == pytest.approx(_gamma_thm2(N, T, beta), rel=1e-12)
    for args in [(5, 5000, None, 1024, "wang"), (9, 100_000, None, 256, "wang"), (7, 10_000, 10, None, "wang"),
                 (7, 10_000, 10, None, "colt"), (3, 4000, 1, None, "colt"), (2, 20, 15, None, "wang")]:
        N, T, d, fe, params = args
        got = W.clw_phase_table(N, T, d, fe if fe else 1024, params=params)
        ref = _phases(N, T, d, fe if fe else 1024, params)
        for a, b in zip(got, ref):
            np.testing.assert_allclose(np.asarray(a, np.float64), np.asarray(b, np.float64), rtol=1e-12)
    for q, d in [(0.05, 10), (0.025, 20), (0.3, 1), (1 / 38, 10)]:
        assert W.update_round_probability(q, d) == pytest.approx(q * (1 - q) ** (2 * d - 1), rel=1e-12)
    assert W.update_round_probability(1 / 20, 10) == pytest.approx(0.018868, abs=1e-6)
    assert W.update_round_probability(1 / 40, 20) == pytest.approx(0.0093137, abs=1e-7)
    for T in list(range(1, 3000)) + [10**6, 10**6 + 1, 2**30]:
        assert W.h_default(T) == max(1, _cube_root_ceil(T)), T
    s9 = np.linspace(0.9, 0.1, 9)
    assert W.thm1_log_coefficient(s9, 4.0) == pytest.approx(8 * 4 * 10 * sum(1 / k for k in range(1, 9)), rel=1e-9)
    mu = [0.2, 0.7, 0.7, 0.45]  # unsorted, a tie at the top (zero gap: no term)
    assert W.thm1_log_coefficient(mu, 5.0) == pytest.approx(8 * 5 * (1 / 0.25 + 1 / 0.5), rel=1e-12)


# ----------------------------------------------------------------------------- profiles
def test_profiles_weights_and_d1_exact():
    """The lag profiles of Wang et al. sec. 4.1, weight by weight: interval X/(d_max -
    d_min) on {d_min..d_max-1}; linear decreasing (d+1-l) 2/(d(d+1)) and increasing l 2/(d(d+1)) on
    l = 1..d; discounted (1-g) g^(l-1) for l = 1..n, n = ceil(log tol / log g) (tail g^n); polynomial
    l^-g / zeta(g) cut at the first n with tail <= tol (at most max_len lags); renormalised or
    dropped tails; d_1 = s_max E[lag] (infinite for polynomial g <= 2); the random-delay moments."""
    chk = lambda prof, w: np.testing.assert_allclose(prof.weights, w, rtol=1e-12, atol=1e-15)
    w = np.zeros(14)
    w[9:14] = 0.2
    chk(Pr.interval(9, 14), w)
    for d in (1, 5, 50):
        l = np.arange(d + 1.0)
        chk(Pr.linear_decreasing(d), np.where(l >= 1, (d + 1 - l) * 2 / (d * (d + 1)), 0))
        chk(Pr.linear_increasing(d), l * 2 / (d * (d + 1)))
        assert Pr.linear_increasing(d).d1(0.9) == pytest.approx(0.9 * (2 * d + 1) / 3, rel=1e-12)
        assert Pr.linear_decreasing(d).d1(0.9) == pytest.approx(0.9 * (d + 2) / 3, rel=1e-12)
    for g, tol in [(0.8, 1e-9), (0.9, 1e-6), (0.5, 1e-3)]:
        n = math.ceil(math.log(tol) / math.log(g))
        head = np.array([0.0] + [(1 - g) * g ** (l - 1) for l in range(1, n + 1)])
        p = Pr.discounted(g, tol=tol)
        assert p.length == n + 1 and p.tail_mass == pytest.approx(g**n, rel=1e-9) and g**n <= tol < g ** (n - 1)
        chk(p, head / head.sum())
        chk(Pr.discounted(g, tol=tol, tail="drop"), head)
        assert p.d1(1.0) == pytest.approx(np.dot(np.arange(n + 1), head / head.sum()), rel=1e-12)
    zeta = {3.0: 1.2020569031595942, 2.0: math.pi**2 / 6, 2.5: 1.3414872572509171}
    for g, tol, max_len in [(3.0, 1e-6, 4096), (2.0, 1e-6, 4096), (2.5, 1e-4, 8192), (3.0, 1e-9, 300)]:
        full = np.arange(1, 200_000, dtype=np.float64) ** -g / zeta[g]
        tails = 1 - np.cumsum(full)  # tails[i] = mass beyond lag i + 1
        ok = np.flatnonzero(tails[: max_len - 1] <= tol)
        n = int(ok[0]) + 1 if ok.size else max_len - 1
        head = np.concatenate([[0.0], full[:n]])
        p = Pr.polynomial(g, tol=tol, max_len=max_len)
        assert p.length == n + 1, (g, tol, p.length, n + 1)
        assert p.tail_mass == pytest.approx(1 - head.sum(), rel=1e-3, abs=1e-12)
        chk(Pr.polynomial(g, tol=tol, tail="drop", max_len=max_len), head)
        np.testing.assert_allclose(p.weights, head / head.sum(), rtol=1e-9)
        assert math.isinf(p.d1(0.9)) == (g <= 2)
    # d_1 of the untruncated law is s_max zeta(2)/zeta(3) = 1.2316 (1.232); cutting the tail at
    # 1e-6 (L ~ 700) removes ~1/L of the mean lag: the truncated profile reports 0.1% less
    assert Pr.polynomial(3.0).d1(0.9) == pytest.approx(0.9 * 1.6449340668 / 1.2020569032, rel=2e-3)
    law = Pr.random_delay(10, 30)  # mean 20, variance ((b-a+1)^2-1)/12 = 36.67
    assert float(law.mean) == pytest.approx(20) and float(law.variance) == pytest.approx(440 / 12, rel=1e-5)


# ----------------------------------------------------------------------------- policies
MEANS5 = np.array([0.9, 0.7, 0.5, 0.35, 0.2])
T_W, R_W = 1500, 2
LAW_A = D.uniform(0, 8)
PROF_B = Pr.linear_decreasing(6).weights
LABELS = E.synthetic_labels(E.zipf_probs(4), T_W, seed=7)


def _f_ref(kind, c, p):
    """Wang et al.'s block sizes (text after Thm 1): c k^p (rounded up), 2^(k+c) with
    f(1) = 2^(2+c), or the constant c."""
    if kind == "const":
        return lambda k: c
    if kind == "exp2":
        return lambda k: 2 ** ((2 if k == 1 else k) + c)
    return lambda k: math.ceil(c * k**p - 1e-9)


UCB_CASES = {  # label -> (world, alpha, f as (kind, c, p), library f)
    "ucb_k2": ("A", 4.0, ("poly", 1, 2), "k^2"),
    "ucb_k": ("B", 4.0, ("poly", 1, 1), "k"),
    "ucb_k3": ("A", 2.0, ("poly", 1, 3), "k^3"),
    "ucb_2k": ("B", 6.0, ("exp2", 0, 0), "2^k"),
    "ucb_2k1": ("A", 4.0, ("exp2", 1, 0), W.f_exp2(1)),
    "ucb_const3": ("B", 4.0, ("const", 3, 0), W.f_const(3)),
    "ucb_2k15": ("A", 4.0, ("poly", 2, 1.5), W.f_poly(2, 1.5)),
}


def _worlds():
    return {"A": E.composite(MEANS5, delay=LAW_A), "B": E.composite(MEANS5, profile=PROF_B)}


@pytest.fixture(scope="module")
def wang_runs():
    return _wang_runs()


def _wang_runs():
    """One compiled program: ARS-UCB for every f family (two worlds: a random one-point delay and a
    fixed linear split), ARS-EXP3 (two betas, given and Thm 2 gamma), CLW in its four variants,
    ARS-CLW, and ARS-EXP3 / CLW on click streams (non-oblivious and oblivious delays)."""
    wd = _worlds()
    ch = C.composite()
    stream_na = E.label_stream(LABELS, n_arms=4, adaptive_d=3)
    stream_ob = E.label_stream(LABELS, n_arms=4, delay=D.uniform(2, 5))
    probs = {lab: (wd[w], ch, W.ars_ucb(alpha, f)) for lab, (w, alpha, _, f) in UCB_CASES.items()}
    probs.update({
        "exp3": (wd["A"], ch, W.ars_exp3(0.5)),
        "exp3_b": (wd["B"], ch, W.ars_exp3(0.7, gamma=0.2)),
        "clw_fw": (wd["A"], ch, W.clw(4)),
        "clw_orig": (wd["A"], ch, W.clw(4, round_rule="original")),
        "clw_colt": (wd["B"], ch, W.clw(3, clw_params="colt")),
        "clw_colt_orig": (wd["A"], ch, W.clw(5, round_rule="original", clw_params="colt")),
        "arsclw": (wd["A"], ch, W.ars_clw(128)),
        "exp3_stream": (stream_na, C.anonymous(), W.ars_exp3(0.5, gamma=0.3)),
        "clw_stream": (stream_ob, C.anonymous(), W.clw(3)),
    })
    return run_all(probs, T_W, R_W, key=0)


def _observations(world, acts, s):
    """y_t of the composite / anonymous channel from the world's draws (conventions): a pull's total
    X_s = 1{u_s < mean[A_s]} (float32 means) lands whole at s + d_s (world A, d_s = F^-1(v_s)) or is
    split by the profile (world B); the click streams pay 1{A_s = label_s} at lag z_s: U{2..5} from
    v_s ("ob") or, non-oblivious ("na", Wang et al. sec. 4.2), d = 3 if A_s is the best arm and has
    been played >= 3d rounds in a row (this one included), else 1."""
    T = len(acts)
    y = np.zeros(T + 64)
    if world in ("A", "B"):
        X = (s.u < f32(MEANS5)[acts]).astype(float)
        if world == "A":
            d = world_delays(LAW_A, s, T)
            np.add.at(y, np.arange(T) + d, X)
        else:
            for t in range(T):
                y[t:t + len(PROF_B)] += X[t] * PROF_B
        return y[:T]
    X = (acts == LABELS[:T]).astype(float)
    if world == "ob":
        d = world_delays(D.uniform(2, 5), s, T)
    else:
        best = int(np.argmax(np.bincount(LABELS, minlength=4)))
        streak = np.ones(T, int)
        for t in range(1, T):
            streak[t] = streak[t - 1] + 1 if acts[t] == acts[t - 1] else 1
        d = np.where((acts == best) & (streak >= 9), 3, 1)
    np.add.at(y, np.arange(T) + d, X)
    return y[:T]


def _ars_ucb_ref(y, acts, alpha, f, N, label):
    """ARS-UCB (Wang et al. Alg. 1, in its single-rule form): u_i = 1 if N_i = 0, else
    min{M_i/N_i + sqrt(alpha log t / N_i), 1} with t the slots elapsed; play the argmax, ties to the
    smallest N_i then the lowest index, for f(K_a) consecutive slots, K_a += 1; M_a sums every y
    received while a is played. Returns the number of near-tie excuses."""
    n, m, kk = np.zeros(N), np.zeros(N), np.ones(N, int)
    arm, left, excuses = -1, 0, 0
    for t in range(len(acts)):
        a_sim = int(acts[t])
        if left == 0:
            nn = np.maximum(n, 1)
            u = np.where(n > 0, np.minimum(m / nn + np.sqrt(alpha * math.log(max(t, 1)) / nn), 1.0), 1.0)
            a_ref = int(np.argmin(np.where(u == u.max(), n, np.inf)))
            if a_ref != a_sim:
                why = f"{label}: slot {t}: reference {a_ref}, simulator {a_sim}; u={u}"
                assert abs(u[a_ref] - u[a_sim]) <= NEAR, why
                excuses += 1
            arm, left = a_sim, max(f(kk[a_sim]), 1)
            kk[a_sim] += 1
        assert a_sim == arm, f"{label}: slot {t}: the simulator left arm {arm}'s block early (plays {a_sim})"
        n[arm] += 1
        m[arm] += y[t]
        left -= 1
    return excuses


@pytest.mark.parametrize("label", list(UCB_CASES))
def test_ars_ucb_exact_actions(wang_runs, label):
    """ARS-UCB's every action for 1500 slots x 2 runs against the float64 reference (each f family,
    alpha in {2, 4, 6}, both worlds)."""
    world, alpha, (kind, c, p), _ = UCB_CASES[label]
    acts = wang_runs[label].acts
    tot = 0
    for r in range(R_W):
        s = Streams(T_W, 0, r)
        tot += _ars_ucb_ref(_observations(world, acts[r], s), acts[r], alpha, _f_ref(kind, c, p), 5, f"{label} run {r}")
    assert tot <= 2, f"{label}: {tot} near-tie excuses"
    assert len(np.unique(acts)) == 5 and np.bincount(acts.ravel()).argmax() == 0  # explored, then exploited


def _ars_exp3_ref(y, acts, act_u, P, N, T, beta, gamma, label):
    """ARS-EXP3 (Wang et al. Alg. 2): block k lasts g(k) = ceil(k^beta) slots, its arm drawn
    at its start from p = (1 - gamma) softmax(w / g(K)) + gamma/N (K the last full block); at its end
    w_a += gamma min(Z(k), g(k)) / (N p_a), Z(k) the observations summed over the block; the leftover
    slots play one more draw with no update. Inside a block the law is the point mass."""
    g, left = _g_table(T, beta)
    K, gK = len(g), g[-1]
    gam = _gamma_thm2(N, T, beta) if gamma is None else gamma
    w = np.zeros(N)
    t, excuses, n_upd = 0, 0, 0
    for k, blen in enumerate(g + ([left] if left else []), start=1):
        p = (1 - gam) * softmax(w / gK) + gam / N
        check_law(P[t], p, label, t, rtol=1e-4)
        a = int(acts[t])
        excuses += not draw_check(p, act_u[t], a, label, t)
        assert np.all(acts[t:t + blen] == a), f"{label}: block {k} at slot {t} switches arm"
        np.testing.assert_array_equal(P[t + 1:t + blen], np.eye(N)[[a] * (blen - 1)].reshape(-1, N))
        Z = y[t:t + blen].sum()
        if k <= K:
            w[a] += gam * min(Z, blen) / (N * p[a])
            n_upd += 1
        t += blen
    assert t == T and n_upd == K
    return excuses


@pytest.mark.parametrize("label, world, beta, gamma", [("exp3", "A", 0.5, None), ("exp3_b", "B", 0.7, 0.2),
                                                       ("exp3_stream", "na", 0.5, 0.3)])
def test_ars_exp3_exact_laws(wang_runs, label, world, beta, gamma):
    s = wang_runs[label]
    N = 4 if world == "na" else 5
    tot = 0
    for r in range(R_W):
        sr = Streams(T_W, 0, r)
        y = _observations(world, s.acts[r], sr)
        tot += _ars_exp3_ref(y, s.acts[r], sr.act_u, s.probs[r].astype(np.float64), N, T_W, beta, gamma,
                             f"{label} run {r}")
    assert tot <= 1
    assert s.base.n_updates.min() == len(_g_table(T_W, beta)[0])


def _geometric_np(u, q):
    """Geometric(q) on {1, 2, ...} from a uniform: 1 + floor(log u / log(1 - q)) (float32 inputs)."""
    return 1 + int(math.floor(math.log(float(np.float32(u))) / math.log1p(-float(np.float32(q)))))


def _clw_ref(y, acts, act_u, P, key, N, T, d, first_end, rule, params, label):
    """CLW / ARS-CLW (Wang et al. Alg. 3, App. C; Cesa-Bianchi et al. 2018).

    Coins: per phase starting at t0 with success rate q, a Bernoulli(q) sequence given as a renewal
    process: first success t0 + G0 - 1, then gaps G1, G2, ... (Geometric(q) on {1, 2, ...}); the
    uniforms are the given stream ``mathlib.uniform(fold_in(key, i))``: G0 from i = 2 t0, G1 from
    2 t0 + 1, and the gap after the success following s from 2 s + 1. Update rounds: forward rule
    (Wang): B_t = 1 and B_{t+1} = ... = B_{t+2d-1} = 0, literally on that coin sequence; original
    (COLT): B_t = 1 (B_t = 1{u_{2t+1} < q}) and no update round in t-2d+1..t-1.
    At an update round t the played arm gets the window (1/(2d)) sum_{tau=t-d+1}^{t} y_tau:
    reward-Exp3 (wang): log w_a += gamma (window) / (N p_a), p = (1 - gamma) softmax + gamma/N;
    loss-Exp3 (colt): log w_a -= eta ((d - sum y)/(2d)) / p_a, p = softmax (the loss of a slot taken
    as 1 - y, the library's documented choice). A new arm is drawn after an update round and at a
    phase start; Exp3 and the coins restart at every phase end T^(k)."""
    ends, ds, qs, rates = _phases(N, T, d, first_end, params)
    n_u = 2 * (max(ends) + 2 * max(ds)) + 4
    us = np.asarray(jax.vmap(lambda i: M.uniform(jax.random.fold_in(key, i)))(jnp.arange(n_u)), np.float64)
    uni = lambda i: us[i]

    def coins(t0, q, upto):
        s = [t0 + _geometric_np(uni(2 * t0), q) - 1]
        s.append(s[0] + _geometric_np(uni(2 * t0 + 1), q))
        while s[-1] <= upto:
            s.append(s[-1] + _geometric_np(uni(2 * s[-2] + 1), q))
        return set(s)

    ph, logw, draw, last_u, excuses, n_upd = 0, np.zeros(N), True, -(10**9), 0, 0
    succ = coins(0, qs[0], ends[0] + 2 * ds[0])
    arm = p_arm = None
    for t in range(T):
        dk, q, rate = ds[ph], qs[ph], rates[ph]
        if draw:
            p = softmax(logw) if params == "colt" else (1 - rate) * softmax(logw) + rate / N
            check_law(P[t], p, label, t, rtol=1e-4)
            arm = int(acts[t])
            excuses += not draw_check(p, act_u[t], arm, label, t)
            p_arm = p[arm]
        else:
            assert acts[t] == arm, f"{label}: slot {t}: switched arm outside an update round"
            np.testing.assert_array_equal(P[t], np.eye(N)[arm])
        win = y[max(0, t - dk + 1):t + 1].sum()
        if rule == "wang_forward":
            in_u = t in succ and not any(t + j in succ for j in range(1, 2 * dk))
        else:
            in_u = uni(2 * t + 1) < np.float32(q) and t - last_u >= 2 * dk
            last_u = t if in_u else last_u
        if in_u:
            n_upd += 1
            if params == "colt":
                logw[arm] -= rate * ((dk - win) / (2 * dk)) / p_arm
            else:
                logw[arm] += rate * (win / (2 * dk)) / (N * p_arm)
        draw = in_u
        if t + 1 == ends[ph] and ph + 1 < len(ends):
            ph += 1
            logw[:] = 0.0
            succ = coins(t + 1, qs[ph], ends[ph] + 2 * ds[ph])
            last_u, draw = -(10**9), True
    return excuses, n_upd


CLW_CASES = {  # label -> (world, N, d, first_end, rule, params)
    "clw_fw": ("A", 5, 4, None, "wang_forward", "wang"),
    "clw_orig": ("A", 5, 4, None, "original", "wang"),
    "clw_colt": ("B", 5, 3, None, "wang_forward", "colt"),
    "clw_colt_orig": ("A", 5, 5, None, "original", "colt"),
    "arsclw": ("A", 5, None, 128, "wang_forward", "wang"),
    "clw_stream": ("ob", 4, 3, None, "wang_forward", "wang"),
}


@pytest.mark.parametrize("label", list(CLW_CASES))
def test_clw_exact_laws(wang_runs, label):
    """CLW (both coin rules, both parametrisations) and ARS-CLW (five phases): update rounds, arm
    holds, every draw's law and action, and the update count, for 1500 slots x 2 runs."""
    world, N, d, fe, rule, params = CLW_CASES[label]
    s = wang_runs[label]
    tot = 0
    for r in range(R_W):
        sr = Streams(T_W, 0, r)
        y = _observations(world, s.acts[r], sr)
        exc, n_upd = _clw_ref(y, s.acts[r], sr.act_u, s.probs[r].astype(np.float64), sr.init_key, N, T_W, d,
                              fe or 1024, rule, params, f"{label} run {r}")
        tot += exc
        assert s.base.n_updates[r] == n_upd and n_upd >= 8, (label, r, s.base.n_updates[r], n_upd)
    assert tot <= 1
