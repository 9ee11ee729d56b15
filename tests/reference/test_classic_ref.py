"""Exact-trajectory references for the classic baselines (jaxbandits/policies/classic.py).

Each policy is re-implemented below in plain numpy float64 from its paper / docstring (never by
calling the library's policy code), fed the world draws rebuilt from the documented PRNG rule
(tests/reference_tools.py), and must take the same action as the simulator at every round.
Randomised policies take the library's random *primitives* (``mathlib.beta_sample``,
``jax.random.beta``, ``mathlib.normals``) with the round's act key as a given stream; every
statistic, posterior parameter, index, probability and tie is computed here.

Feedback rules (conventions §2, §4; classic.py's module docstring): a record of round
``s`` with delay ``d_s`` reaches ``update`` at the end of round ``s + d_s`` (``d = 0`` included),
so round ``t`` acts on the records with ``s + d_s <= t - 1``. On the attributed channel the
index policies divide by the number of *arrived* records; on the censored conversions channel
(only conversions with ``d <= m`` ever arrive) they divide by the number of *plays*, counted at
the end of the round they are made.
"""
import math
from collections import defaultdict

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxbandits import channels as C
from jaxbandits import delays as D
from jaxbandits import envs as E
from jaxbandits import mathlib as M
from jaxbandits.policies import classic as P
from jaxbandits.engine import simulate
from reference_tools import Streams, argmax_tie_np, first_mismatch, inverse_cdf_np

MU = np.array([0.3, 0.5, 0.45, 0.2])
MU32 = MU.astype(np.float32).astype(np.float64)  # the world's float32 means (r = 1{u < mu})
K = len(MU)
T = 400
RUNS = 3
LAW = D.geometric(mean=5.0)
WINDOW = 8  # censoring window of the conversions channel (inclusive: d <= 8 arrives)

# non-default parameters, so that a parameter ignored or misplaced by the library is seen
ATTR_POLICIES = {
    "ucb1": P.ucb1(),
    "ucb1_a": P.ucb1(alpha=0.7),
    "kl": P.kl_ucb(),
    "kl_c": P.kl_ucb(c=3.0, iters=6),
    "ts": P.thompson(),
    "ts_prior": P.thompson(prior_a=2.0, prior_b=3.0),
    "ts_jax": P.thompson(prior_a=0.5, prior_b=0.7, sampler="jax"),
    "gts": P.gaussian_thompson(sigma=0.5, prior_mean=0.2, prior_var=4.0),
    "exp3": P.exp3(),
    "exp3_g": P.exp3(eta=0.05, gamma=0.1),
    "rnd": P.uniform_random(),
}
CONV_POLICIES = {"ucb1": P.ucb1(), "kl": P.kl_ucb(), "ts": P.thompson(), "gts": P.gaussian_thompson()}


@pytest.fixture(scope="module")
def attributed():
    """One simulate call (one compile) for every policy on the attributed channel."""
    env = E.bernoulli(MU, delay=LAW)
    return simulate(env, C.attributed(), ATTR_POLICIES, T, jax.random.key(0), RUNS, record=1)


@pytest.fixture(scope="module")
def conversions():
    env = E.conversions(MU, LAW)
    return simulate(env, C.conversions(window=WINDOW), CONV_POLICIES, T, jax.random.key(0), RUNS, record=1)


@pytest.fixture(scope="module")
def streams():
    return [Streams(T, 0, r) for r in range(RUNS)]


def _acts(out):
    from conftest import actions_of

    return actions_of(out)


# ----------------------------------------------------------------------------- the reference loop
def _feedback(channel):
    """What the named channel declares it reveals (the references read feedback, not names)."""
    return C.conversions(window=WINDOW).feedback if channel == "conversions" else getattr(C, channel)().feedback


def run_reference(choose, s, channel="attributed", mu=MU32, law=LAW, window=WINDOW, payload=None):
    """Play one run: ``choose(t, n, S, s) -> (action, extra)`` sees the per-arm counts ``n`` (arrivals,
    or plays under censoring) and sums ``S`` of what has arrived. Returns the actions and, for
    each round, the ``extra`` of ``choose``. ``payload(a, r, extra)`` (Exp3) replaces the default
    ``(e_A, e_A r)`` statistics: then ``S`` accumulates it and ``n`` is unused."""
    d = np.asarray(law.ppf(s.v.astype(np.float32))).astype(np.int64)
    n_play, n_arr, S = np.zeros(K), np.zeros(K), np.zeros(K)
    due = defaultdict(list)
    acts, extras = [], []
    for t in range(T):
        hidden = not _feedback(channel).zeros_observed  # zeros hidden: counts are plays (conventions §4)
        n = n_play if hidden else n_arr
        a, extra = choose(t, n.copy(), S.copy(), s)
        acts.append(a)
        extras.append(extra)
        r = float(s.u[t] < mu[a])
        if hidden:
            ok = r == 1.0 and d[t] <= window  # zeros and late conversions never arrive
        else:
            ok = True
        if ok and t + d[t] <= T - 1:
            due[t + d[t]].append((a, r, extra))
        n_play[a] += 1  # the play is echoed to update at the end of round t
        for aa, rr, ex in due.pop(t, []):  # then every record with s + d_s = t
            if payload is None:
                n_arr[aa] += 1
                S[aa] += rr
            else:
                S += payload(aa, rr, ex)
    return np.array(acts), extras


def ucb1_choose(alpha):
    def choose(t, n, S, s):  # Auer et al. 2002: mean + sqrt(alpha log t / n), paper round t -> t + 1
        idx = np.where(n > 0, S / np.maximum(n, 1) + np.sqrt(alpha * math.log(t + 1) / np.maximum(n, 1)), np.inf)
        return argmax_tie_np(idx, s.act_u[t]), None
    return choose


def kl_bern(p, q):
    """kl(p, q) with 0 log 0 = 0, in float64."""
    with np.errstate(divide="ignore", invalid="ignore"):
        a = np.where(p > 0, p * np.log(p / q), 0.0)
        b = np.where(p < 1, (1 - p) * np.log((1 - p) / (1 - q)), 0.0)
    return a + b


def kl_ucb_index(p, bound, iters=50):
    """max {q in [p, 1] : kl(p, q) <= bound} by float64 bisection (Garivier and Cappe 2011)."""
    lo, hi = p.copy(), np.ones_like(p)
    for _ in range(iters):
        mid = 0.5 * (lo + hi)
        ok = kl_bern(p, mid) <= bound
        lo, hi = np.where(ok, mid, lo), np.where(ok, hi, mid)
    return np.where(kl_bern(p, hi) <= bound, hi, lo)


def kl_ucb_choose(c):
    def choose(t, n, S, s):
        # exploration log(t+1) + c log log(t+1) at code round t (paper round t + 1), log log floored at 0
        lt = math.log(t + 1)
        expl = lt + c * math.log(max(lt, 1.0))
        p = np.clip(S / np.maximum(n, 1), 0, 1)
        idx = np.where(n > 0, kl_ucb_index(p, expl / np.maximum(n, 1)), np.inf)
        return argmax_tie_np(idx, s.act_u[t]), None
    return choose


_beta_mt = jax.jit(M.beta_sample)
_beta_jax = jax.jit(jax.random.beta)
_normals = jax.jit(M.normals, static_argnums=1)


def thompson_choose(pa, pb, sampler="mt"):
    draw = _beta_mt if sampler == "mt" else _beta_jax

    def choose(t, n, S, s):  # posterior Beta(pa + successes, pb + failures)
        a = pa + S
        b = pb + np.maximum(n - S, 0)
        theta = np.asarray(draw(s.act_keys[t], jnp.asarray(a, jnp.float32), jnp.asarray(b, jnp.float32)), np.float64)
        return argmax_tie_np(theta, s.act_u[t]), None
    return choose


def gts_choose(sigma, m0, v0):
    def choose(t, n, S, s):  # N(m0, v0) prior, N(mu, sigma^2) likelihood: conjugate posterior
        prec = 1 / v0 + n / sigma**2
        mean = (m0 / v0 + S / sigma**2) / prec
        z = np.asarray(_normals(s.act_keys[t], K), np.float64)
        return argmax_tie_np(mean + z / np.sqrt(prec), s.act_u[t]), None
    return choose


def exp3_choose(eta, gamma):
    def choose(t, n, L, s):  # L: importance-weighted cumulative losses that have arrived
        w = np.exp(-eta * (L - L.min()))
        p = (1 - gamma) * w / w.sum() + gamma / K
        a = inverse_cdf_np(p, s.act_u[t])
        return a, p
    return choose


def exp3_payload(a, r, p):
    e = np.zeros(K)
    e[a] = (1.0 - r) / p[a]  # the play-time probability of the played arm
    return e


def rnd_choose(t, n, S, s):
    return inverse_cdf_np(np.full(K, 1.0 / K), s.act_u[t]), np.full(K, 1.0 / K)


EXP3_ETA = math.sqrt(2 * math.log(K) / (K * T))  # known-horizon tuning (exp3's docstring)
ATTR_REFS = {
    "ucb1": (ucb1_choose(2.0), None),
    "ucb1_a": (ucb1_choose(0.7), None),
    "kl": (kl_ucb_choose(0.0), None),
    "kl_c": (kl_ucb_choose(3.0), None),
    "ts": (thompson_choose(1.0, 1.0), None),
    "ts_prior": (thompson_choose(2.0, 3.0), None),
    "ts_jax": (thompson_choose(0.5, 0.7, "jax"), None),
    "gts": (gts_choose(0.5, 0.2, 4.0), None),
    "exp3": (exp3_choose(EXP3_ETA, 0.0), exp3_payload),
    "exp3_g": (exp3_choose(0.05, 0.1), exp3_payload),
    "rnd": (rnd_choose, None),
}
CONV_REFS = {
    "ucb1": ucb1_choose(2.0),
    "kl": kl_ucb_choose(0.0),
    "ts": thompson_choose(1.0, 1.0),
    "gts": gts_choose(1.0, 0.0, 1e4),
}


@pytest.mark.parametrize("lab", list(ATTR_REFS))
def test_attributed_delayed_exact_trajectory(attributed, streams, lab):
    """Geometric delays (mean 5), attributed channel: same actions for T = 400 rounds x 3 runs."""
    choose, payload = ATTR_REFS[lab]
    acts = _acts(attributed[lab])
    for r in range(RUNS):
        ref, _ = run_reference(choose, streams[r], payload=payload)
        assert first_mismatch(ref, acts[r]) is None, (lab, r, first_mismatch(ref, acts[r]))


@pytest.mark.parametrize("lab", list(CONV_REFS))
def test_conversions_censored_exact_trajectory(conversions, streams, lab):
    """Censored conversions (window 8): plays are the denominator, conversions the numerator."""
    acts = _acts(conversions[lab])
    for r in range(RUNS):
        ref, _ = run_reference(CONV_REFS[lab], streams[r], channel="conversions")
        assert first_mismatch(ref, acts[r]) is None, (lab, r, first_mismatch(ref, acts[r]))


@pytest.mark.parametrize("lab", ["exp3", "exp3_g", "rnd"])
def test_played_probabilities_exact(attributed, streams, lab):
    """The law A_t is drawn from (memo.probs, read by the expected-regret metric) equals the
    reference's probabilities: the per-round expected gap max mu - <p_t, mu> matches."""
    choose, payload = ATTR_REFS[lab]
    er = np.asarray(attributed[lab].expected_regret, np.float64)
    for r in range(RUNS):
        _, probs = run_reference(choose, streams[r], payload=payload)
        gap = MU32.max() - np.array(probs) @ MU32
        np.testing.assert_allclose(np.diff(er[r], prepend=0.0), gap, atol=3e-5)
        np.testing.assert_allclose(er[r], np.cumsum(gap), rtol=1e-5, atol=1e-4)


def test_records_equal_reference(attributed, streams):
    """The library's records for UCB1 equal what the reference computes from its own actions:
    pseudo-regret = sum of the gaps of the actions, pulls = per-arm counts, reward = sum of
    1{u_t < mu[A_t]}, expected regret = pseudo-regret for a deterministic policy."""
    o = attributed["ucb1"]
    for r in range(RUNS):
        s = streams[r]
        ref, _ = run_reference(ucb1_choose(2.0), s)
        gaps = MU32.max() - MU32[ref]
        np.testing.assert_allclose(o.regret[r], np.cumsum(gaps), rtol=1e-6, atol=1e-4)
        np.testing.assert_allclose(o.expected_regret[r], np.cumsum(gaps), rtol=1e-6, atol=1e-4)
        onehot = np.eye(K)[ref]
        np.testing.assert_array_equal(o.pulls[r], np.cumsum(onehot, 0))
        np.testing.assert_allclose(o.reward[r], np.cumsum(s.u < MU32[ref]), atol=1e-4)
    np.testing.assert_array_equal(o.t, np.arange(1, T + 1))


# ----------------------------------------------------------------------------- linear worlds
THETA = np.array([0.3, 0.1, 0.2, 0.05, 0.15])
DIM, N_ACT = len(THETA), 8
LIN_LAW = D.geometric(mean=3.0)
LIN_T = 300
LIN_PARAMS = {"linucb": P.linucb(), "linucb_p": P.linucb(lam=2.0, delta=0.1, sigma=0.3, s_norm=0.5, scale=0.8),
              "lints": P.lints(), "lints_p": P.lints(lam=0.5, v=0.3)}
LIN_POLICIES = {k: LIN_PARAMS[k] for k in ("linucb", "lints")}  # trajectories: defaults (parameters: threshold test)


def _lin_env():
    # continuous actions in [0, 1]^5: no symmetric exact ties that float32 and float64 would break apart
    return E.linear(THETA, n_actions=N_ACT, action_set="uniform", delay=LIN_LAW)


@pytest.fixture(scope="module")
def linear_runs():
    return {ch: simulate(_lin_env(), chan, LIN_POLICIES, LIN_T, jax.random.key(1), 2, record=1)
            for ch, chan in (("attributed", C.attributed()), ("conversions", C.conversions(window=5)))}


@pytest.fixture(scope="module")
def linear_draws():
    """Per run: its streams and the world's action sets [T, K, d] (the world is not under test
    here: context() on each round's key)."""
    env = _lin_env()
    out = []
    for r in range(2):
        s = Streams(LIN_T, 1, r)
        state = env.setup(s.setup_key)
        f = jax.vmap(lambda k, t: env.context(state, t, k)[0])(s.ctx_keys, jnp.arange(LIN_T))
        out.append((s, np.asarray(f, np.float64)))
    return out


def lin_reference(kind, params, s, X, channel, window=5):
    """LinUCB / OFUL (Abbasi-Yadkori et al. 2011) and LinTS (Agrawal and Goyal 2013) in float64:
    V = lam I + sum x x^T (arrivals; plays under censoring), b = sum r x (arrivals),
    theta_hat = V^-1 b; LinUCB index <theta_hat, x> + scale beta_t ||x||_{V^-1} with
    beta_t = sigma sqrt(2 log(1/delta) + d log(1 + t_info/(lam d))) + sqrt(lam) S, t_info the
    number of rows in V; LinTS theta~ = theta_hat + v L^-T zeta (L L^T = V, zeta the act key's normals)."""
    d = np.asarray(LIN_LAW.ppf(s.v.astype(np.float32))).astype(np.int64)
    lam = params["lam"]
    Vp, Va, b = lam * np.eye(DIM), lam * np.eye(DIM), np.zeros(DIM)
    n_rows_play, n_rows_arr = 0, 0
    due = defaultdict(list)
    acts = []
    theta32 = THETA.astype(np.float32)
    for t in range(LIN_T):
        x = X[t]
        conv = not _feedback(channel).zeros_observed
        Vm = Vp if conv else Va
        n_rows = n_rows_play if conv else n_rows_arr
        th = np.linalg.solve(Vm, b)
        if kind == "linucb":
            beta = params["sigma"] * math.sqrt(2 * math.log(1 / params["delta"]) + DIM * math.log(1 + n_rows / (lam * DIM))) \
                + math.sqrt(lam) * params["s_norm"]
            width = np.sqrt(np.einsum("ki,ij,kj->k", x, np.linalg.inv(Vm), x))
            idx = x @ th + params["scale"] * beta * width
        else:
            L = np.linalg.cholesky(Vm)
            zeta = np.asarray(_normals(s.act_keys[t], DIM), np.float64)
            idx = x @ (th + params["v"] * np.linalg.solve(L.T, zeta))
        a = argmax_tie_np(idx, s.act_u[t])
        acts.append(a)
        mean = float(np.float32(X[t, a].astype(np.float32) @ theta32))
        r = float(s.u[t] < min(max(mean, 0.0), 1.0))
        ok = (r == 1.0 and d[t] <= window) if conv else True
        if ok and t + d[t] <= LIN_T - 1:
            due[t + d[t]].append((x[a], r))
        Vp += np.outer(x[a], x[a])
        n_rows_play += 1
        for xx, rr in due.pop(t, []):
            Va += np.outer(xx, xx)
            b += rr * xx
            n_rows_arr += 1
    return np.array(acts)


LIN_REFS = {
    "linucb": ("linucb", dict(lam=1.0, delta=0.05, sigma=0.5, s_norm=1.0, scale=1.0)),
    "linucb_p": ("linucb", dict(lam=2.0, delta=0.1, sigma=0.3, s_norm=0.5, scale=0.8)),
    "lints": ("lints", dict(lam=1.0, v=0.5)),
    "lints_p": ("lints", dict(lam=0.5, v=0.3)),
}


@pytest.mark.parametrize("channel", ["attributed", "conversions"])
@pytest.mark.parametrize("lab", list(LIN_POLICIES))
def test_linear_exact_trajectory(linear_runs, linear_draws, lab, channel):
    """LinUCB / LinTS with geometric delays (mean 3), 8 fresh actions in [0,1]^5 per round:
    same actions as the float64 reference for 300 rounds x 2 runs, attributed and censored."""
    kind, params = LIN_REFS[lab]
    acts = _acts(linear_runs[channel][lab])
    for r, (s, X) in enumerate(linear_draws):
        ref = lin_reference(kind, params, s, X, channel)
        assert first_mismatch(ref, acts[r]) is None, (lab, channel, r, first_mismatch(ref, acts[r]))


@pytest.mark.parametrize("lab", list(LIN_REFS))
def test_linear_index_pinned_at_the_threshold(lab):
    """The index itself, to 1e-4 relative: after 37 records fed through payload/update, two actions
    x1 and c x2 tie at c = c* under the float64 reference index (which is linear in the action's
    scale); the policy must pick x1 at c*(1 - 1e-4) and c x2 at c*(1 + 1e-4). A radius beta_t or a
    width off by 0.1% fails here even where it changes no action of a short run."""
    from jaxbandits.policies.classic import LinMemo
    from jaxbandits.core.types import Arrivals, Context, ProblemSpec

    kind, prm = LIN_REFS[lab]
    pol = LIN_PARAMS[lab]
    rng = np.random.default_rng(5)
    n_rec = 37
    X = rng.random((n_rec, DIM)).astype(np.float32)
    R = (rng.random(n_rec) < X @ THETA).astype(np.float32)
    state = pol.init(ProblemSpec(n_arms=2, horizon=100, dim=DIM), jax.random.key(0))
    upd = jax.jit(pol.update)
    for i in range(n_rec):
        memo = LinMemo(jnp.asarray(X[i]))
        state = upd(state, Arrivals(jnp.int32(i), jnp.int32(0), memo, pol.payload(memo, jnp.float32(R[i]), 0), None))
    lam = prm["lam"]
    Xd = X.astype(np.float64)
    Vm = lam * np.eye(DIM) + Xd.T @ Xd
    th = np.linalg.solve(Vm, Xd.T @ R.astype(np.float64))
    key = jax.random.key(3)
    if kind == "linucb":
        beta = prm["sigma"] * math.sqrt(2 * math.log(1 / prm["delta"]) + DIM * math.log(1 + n_rec / (lam * DIM))) \
            + math.sqrt(lam) * prm["s_norm"]
        Vi = np.linalg.inv(Vm)
        index = lambda x: x @ th + prm["scale"] * beta * math.sqrt(x @ Vi @ x)
    else:
        zeta = np.asarray(_normals(key, DIM), np.float64)
        th_s = th + prm["v"] * np.linalg.solve(np.linalg.cholesky(Vm).T, zeta)
        index = lambda x: x @ th_s
    act = jax.jit(pol.act)
    trial = 0
    while trial < 4:
        x1, x2 = rng.random(DIM), rng.random(DIM)
        x2 = np.where(rng.random(DIM) < 0.5, x2, 0.1 * x2)  # mean and width trade off differently
        i1, g2 = index(x1), index(x2)
        if not (i1 > 0.05 and g2 > 0.05):  # the tie c* must be positive (LinTS' sample may point away)
            continue
        trial += 1
        c = i1 / g2
        for eps, want in ((-1e-4, 0), (1e-4, 1)):
            feats = jnp.asarray(np.stack([x1, c * (1 + eps) * x2]), jnp.float32)
            a, _ = act(state, Context(jnp.int32(n_rec), feats, jnp.ones(2, bool), jnp.int32(-1)), key)
            assert int(a) == want, (lab, trial, eps)


def test_action_time_channel_same_trajectories(streams):
    """Under the action-time channel the delay d_t is shown before acting; the classic policies
    ignore it, so they must take the reference's actions exactly as on the attributed channel
    (the arrivals are the same records at the same rounds)."""
    pols = {k: ATTR_POLICIES[k] for k in ("ucb1", "kl", "ts", "exp3")}
    out = simulate(E.bernoulli(MU, delay=LAW), C.action_time(), pols, T, jax.random.key(0), RUNS, record=1)
    for lab in pols:
        choose, payload = ATTR_REFS[lab]
        acts = _acts(out[lab])
        for r in range(RUNS):
            ref, _ = run_reference(choose, streams[r], payload=payload)
            assert first_mismatch(ref, acts[r]) is None, (lab, r, first_mismatch(ref, acts[r]))
