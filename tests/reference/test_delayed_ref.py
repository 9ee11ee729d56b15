"""Exact-trajectory references for the delayed-feedback families of helper "delayed":
Vernade et al. 2017 (DelayedUCB / DelayedKLUCB / Discarding, conversions.py), Pike-Burke et al.
2018 (ODAAF family and QPM-D, anonymous.py) and Vernade et al. 2020 (OTFLinUCB / OTFLinTS and the
two LinUCB baselines, linear.py).

Each reference is a plain numpy float64 re-implementation written from the papers (Vernade et al.
2017, Secs. 5-6; Pike-Burke et al. 2018, Alg. 1 and Joulani et al. 2013, Alg. 2; Vernade et al.
2020, Algs. 1-2) and conventions §1-2, NOT from the library's code. It is fed the same world draws
(tests/reference_tools.Streams: reward uniforms u_t, delay uniforms v_t, act keys) and runs
*teacher-forced*: at every round it makes its own decision, which must equal the simulator's
action, and then absorbs the simulator's action (so a first disagreement is reported at its round
and not smeared over the rest of the run). Rounds where the float64 reference has a near-tie
(relative gap < 1e-5 between the simulator's choice and the reference's) would be excused as
float32 rounding: none is allowed for the elementwise K-armed indices, at most 2 per run for the
linear policies, whose float32 matrix products may legitimately reorder two actions within 1e-5
(none was needed on the development machine).

Randomised policies (OTFLinTS, QPM-D's draws from its queues) use the library's random primitives
(mathlib.uniform / mathlib.normals, jax.random.split) as given streams; every statistic, width,
index and probability is computed here.
"""
import functools
import math

import jax
import numpy as np
import pytest

from jaxbandits import channels as C
from jaxbandits import delays as D
from jaxbandits import envs as E
from jaxbandits import mathlib as M
from jaxbandits.policies import anonymous as A
from jaxbandits.policies import conversions as V
from jaxbandits.policies import linear as L

from reference_tools import Streams, argmax_tie_np, f32, play, world_delays

NEAR = 1e-5  # relative index gap below which float32 vs float64 may legitimately disagree


# ----------------------------------------------------------------------------- shared helpers
def _runs_by_window(env, by_window, T, R):
    """``{window: {label: (policy, cfg)}}`` -> ``{label: (window, cfg, actions [R, T])}``: one
    compiled simulate call per censoring window."""
    out = {}
    for window, pols in by_window.items():
        acts = play(env, C.conversions(window=window), {k: p for k, (p, _) in pols.items()}, T, R)
        for k, (_, cfg) in pols.items():
            out[k] = (window, cfg, acts[k])
    return out


def check_run(decide, absorb, lib_actions, T, label, near_ok=0):
    """Teacher-forced comparison: ``decide(t) -> (action, index values or None)``; ``absorb(t, a)``
    applies the simulator's action ``a`` (and round t's arrivals). Fails at the first round where the
    reference's decision differs from the simulator's, unless it is a float near-tie."""
    near = 0
    for t in range(T):
        a_ref, idx = decide(t)
        a = int(lib_actions[t])
        if a_ref != a:
            ok = False
            if idx is not None:
                top, mine = idx[a_ref], idx[a]
                ok = np.isfinite(top) and np.isfinite(mine) and abs(top - mine) <= NEAR * max(abs(top), 1e-3)
            assert ok, f"{label}: round {t}: reference plays {a_ref}, simulator {a}; index {idx}"
            near += 1
        absorb(t, a)
    assert near <= near_ok, f"{label}: {near} near-tie disagreements"


def kl_pois(p, q):
    """d_Pois(p, q) = p log(p/q) + q - p with 0 log 0 = 0."""
    return (p * math.log(p / q) if p > 0 else 0.0) + q - p


def _pois_root(p, c):
    """The root q >= p of d_Pois(p, q) = c: Newton from the upper bracket p + c + sqrt(c^2 + 2pc)
    (d_Pois(p, q) >= (q-p)^2 / (2q)), which decreases monotonically to it (float64, to 1e-15)."""
    q = p + c + math.sqrt(c * c + 2 * p * c)
    for _ in range(200):
        f = kl_pois(p, q) - c
        fp = 1.0 - p / q
        if f <= 0 or fp <= 0:
            break
        q_new = max(q - f / fp, p)
        if q - q_new <= 1e-15 * q:
            q = q_new
            break
        q = q_new
    return q


def pois_klucb(p, nt, beta, cap=1.0):
    """max{q <= cap : nt d_Pois(p, q) <= beta} (Vernade et al. 2017, sec. 5.3) per arm:
    +inf when nt = 0, p when p >= cap, exactly cap when the cap binds (exact ties)."""
    out = np.empty(len(nt))
    for k, (pk, nk) in enumerate(zip(np.asarray(p, float), np.asarray(nt, float))):
        if nk <= 0:
            out[k] = math.inf
            continue
        pk, c = max(pk, 0.0), beta / nk
        if cap is not None and pk >= cap:
            out[k] = pk
        elif cap is not None and kl_pois(pk, cap) <= c:
            out[k] = cap
        else:
            out[k] = _pois_root(pk, c)
    return out


def kl_bern(p, q):
    e = 1e-15
    p, q = min(max(p, e), 1 - e), min(max(q, e), 1 - e)
    return p * math.log(p / q) + (1 - p) * math.log((1 - p) / (1 - q))


def bern_klucb(p, bound):
    """max{q in [p, 1] : kl(p, q) <= bound} (Garivier and Cappe 2011), float64 bisection."""
    lo, hi = p, 1.0
    for _ in range(100):
        mid = 0.5 * (lo + hi)
        if kl_bern(p, mid) <= bound:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


# ============================================================================= Vernade et al. 2017
THETA = np.array([0.55, 0.4, 0.3])
K3 = 3
T_CONV = 500
R_CONV = 2
WORLD = D.geometric(0.8)  # mean 4: conversions land inside and beyond the windows below
M_WIN = 6
KNOWN_GEO = D.geometric(0.8)
KNOWN_TABLE = D.poisson(3.0)  # a general (table) law for the policy: Ñ through tau_0..tau_m
KNOWN_UNC_TABLE = D.uniform(0, 10)  # bounded: the truncated ring is exact


def conv_policies():
    cens = {
        "d-ucb": (V.delayed_ucb(KNOWN_GEO, M_WIN), dict(index="ucb", law=KNOWN_GEO)),
        "d-klucb": (V.delayed_klucb(KNOWN_GEO, M_WIN), dict(index="kl", law=KNOWN_GEO)),
        "d-ucb-table": (V.delayed_ucb(KNOWN_TABLE, M_WIN), dict(index="ucb", law=KNOWN_TABLE)),
        "d-klucb-table-eps": (V.delayed_klucb(KNOWN_TABLE, M_WIN, eps=0.5), dict(index="kl", law=KNOWN_TABLE, eps=0.5)),
        "d-klucb-nocap": (V.delayed_klucb(KNOWN_GEO, M_WIN, cap=None), dict(index="kl", law=KNOWN_GEO, cap=None)),
        "d-ucb-online": (V.delayed_ucb(window=M_WIN, online=True), dict(index="ucb", online=True)),
        "d-klucb-online": (V.delayed_klucb(window=M_WIN, online=True), dict(index="kl", online=True)),
        "disc-ucb": (V.discarding_ucb(KNOWN_GEO, M_WIN), dict(disc="ucb", law=KNOWN_GEO)),
        "disc-ucb-tau2": (V.discarding_ucb(KNOWN_TABLE, M_WIN, eps=0.3, bonus="tau2"),
                          dict(disc="ucb", law=KNOWN_TABLE, eps=0.3, tau2=True)),
        "disc-klucb": (V.discarding_klucb(KNOWN_GEO, M_WIN), dict(disc="kl", law=KNOWN_GEO)),
    }
    unc = {
        "ud-ucb": (V.delayed_ucb(KNOWN_GEO), dict(index="ucb", law=KNOWN_GEO)),
        "ud-klucb-eps": (V.delayed_klucb(KNOWN_GEO, eps=0.2), dict(index="kl", law=KNOWN_GEO, eps=0.2)),
        "ud-klucb-table": (V.delayed_klucb(KNOWN_UNC_TABLE), dict(index="kl", law=KNOWN_UNC_TABLE)),
        "ud-ucb-online": (V.delayed_ucb(online=True), dict(index="ucb", online=True)),
        "ud-klucb-online": (V.delayed_klucb(online=True), dict(index="kl", online=True)),
    }
    zero = {
        "d0-ucb": (V.delayed_ucb(KNOWN_GEO, 0), dict(index="ucb", law=KNOWN_GEO)),
        # m = 0 scales every Ñ by tau_0: the UCB argmax is invariant to that, the capped KL index is not
        "d0-klucb": (V.delayed_klucb(KNOWN_GEO, 0), dict(index="kl", law=KNOWN_GEO)),
        "disc0-klucb": (V.discarding_klucb(KNOWN_GEO, 0), dict(disc="kl", law=KNOWN_GEO)),
    }
    return {M_WIN: cens, None: unc, 0: zero}


@pytest.fixture(scope="module")
def conv_runs():
    return _runs_by_window(E.conversions(THETA, WORLD), conv_policies(), T_CONV, R_CONV)


@functools.lru_cache(maxsize=None)
def streams(T, run, key=0):
    return Streams(T, key, run)


def conv_world(T, run, window):
    """The world draws of one run: a play of arm a at round s converts iff u_s < theta_a; the
    conversion is seen at the end of round s + d_s iff d_s <= m (inclusive window)."""
    s = streams(T, run)
    return s, world_delays(WORLD, s, T), f32(THETA)


def delayed_reference(cfg, window, T, run, lib):
    """DelayedUCB / DelayedKLUCB (Vernade et al. 2017, Alg. 1), direct sums."""
    s, d, th = conv_world(T, run, window)
    K = K3
    eps = cfg.get("eps", 0.0)
    online = cfg.get("online", False)
    tau_known = None if online else np.asarray(cfg["law"].cdf(np.arange(T + 2)), np.float64)
    acts, N, S = [], np.zeros(K), np.zeros(K)
    pending = {}  # reveal round -> list of (s, arm, delay)
    revealed_delays = []
    st = {}

    def tau_now():
        if not online:
            return tau_known
        if window is not None:  # App. D censored: tau_hat_d = #{revealed delays <= d} / n (estimates tau_d / tau_m); 1 before any
            if not revealed_delays:
                return np.ones(T + 2)
            dl = np.sort(revealed_delays)
            return np.searchsorted(dl, np.arange(T + 2), side="right") / dl.size
        return None  # uncensored online: geometric plug-in, handled by the O recursion

    def n_tilde(t_after):
        """Ñ_k after round t_after: sum over pulls of tau_{min(age, m)}."""
        if not acts:
            return np.zeros(K)
        a = np.asarray(acts)
        ages = t_after - np.arange(len(a))
        if online and window is None:
            return N - st.get("O", np.zeros(K))
        tau = tau_now()
        if window is not None:
            ages = np.minimum(ages, window)
        w = tau[ages]
        return np.array([w[a == k].sum() for k in range(K)])

    def decide(t):
        if t < K:
            return t, None
        nt = st["nt"]
        beta = (1 + eps) * math.log(t + 1)
        if cfg["index"] == "ucb":
            idx = np.array([S[k] / nt[k] + math.sqrt(beta * N[k] / 2) / nt[k] if nt[k] > 0 else math.inf for k in range(K)])
        else:
            idx = pois_klucb(S / np.where(nt > 0, nt, 1.0), nt, beta, cfg.get("cap", 1.0))
        return argmax_tie_np(idx, s.act_u[t]), idx

    def absorb(t, a):
        acts.append(a)
        N[a] += 1
        conv = s.u[t] < th[a]
        if conv and (window is None or d[t] <= window):
            pending.setdefault(t + d[t], []).append((t, a, d[t]))
        for (_, aa, dd) in pending.pop(t, []):
            S[aa] += 1
            revealed_delays.append(dd)
        if online and window is None:  # App. D: mu_hat = running mean of revealed delays, rho = mu/(1+mu)
            mu = np.mean(revealed_delays) if revealed_delays else 0.0
            rho = mu / (1 + mu)
            e = np.zeros(K)
            e[a] = 1
            st["O"] = rho * (st.get("O", np.zeros(K)) + e)  # O <- rho_t (O + e_A), Ñ = N - O
        st["nt"] = n_tilde(t)

    check_run(decide, absorb, lib, T, f"{cfg} run {run}")


def discarding_reference(cfg, window, T, run, lib):
    """Discarding-UCB / -KLUCB (Vernade et al. 2017, sec. 6): only closed pulls (age >= m)."""
    s, d, th = conv_world(T, run, window)
    K = K3
    eps = cfg.get("eps", 0.0)
    tau_m = float(np.float32(cfg["law"].cdf(window)))
    arms, conv = [], []  # per pull: arm, converted within the window (known once the pull closes)

    def decide(t):
        if t < K:
            return t, None
        beta = (1 + eps) * math.log(t + 1)
        n_closed = max(t - window, 0)  # after round t-1 the pulls s <= t-1-m have age >= m (closed)
        a, x = np.asarray(arms[:n_closed], int), np.asarray(conv[:n_closed])
        Nc = np.bincount(a, minlength=K).astype(float)
        Sc = np.bincount(a, weights=x, minlength=K)
        ok = Nc > 0
        theta = Sc / np.where(ok, tau_m * Nc, 1.0)  # S^c / (tau_m N^c)  (sec. 6, E5)
        if cfg["disc"] == "ucb":
            den = tau_m * Nc * (tau_m if cfg.get("tau2") else 1.0)  # printed bonus, or tau_m^2 (E6)
            idx = np.where(ok, theta + np.sqrt(beta / (2 * np.where(ok, den, 1.0))), np.inf)
        else:
            idx = pois_klucb(theta, tau_m * Nc, beta)
        return argmax_tie_np(idx, s.act_u[t]), idx

    def absorb(t, a):
        arms.append(a)
        conv.append(float(s.u[t] < th[a] and d[t] <= window))

    check_run(decide, absorb, lib, T, f"{cfg} run {run}")


def test_vernade2017_policies_exact_trajectories(conv_runs):
    """DelayedUCB / DelayedKLUCB (geometric O(K) recursions, table rings, m = 0, uncensored, eps,
    uncapped, online App. D estimators) and Discarding-UCB (printed and tau_m^2 bonus) /
    Discarding-KLUCB take the reference's action at every round (3 arms, T = 500, 2 runs)."""
    for lab, (window, cfg, acts) in conv_runs.items():
        for r in range(R_CONV):
            if "disc" in cfg:
                discarding_reference(cfg, window, T_CONV, r, acts[r])
            else:
                delayed_reference(cfg, window, T_CONV, r, acts[r])


# ============================================================================= Pike-Burke et al. 2018
MU_ANON = np.array([0.1, 0.85, 0.6])
T_ANON = 3000
R_ANON = 2
ANON_LAW = D.uniform(0, 8)  # E = 4, bounded by 8


def n_schedule(kind, T, E_, bound=None, var=None, M_=12):
    """n_m for m = 0..M_ (Pike-Burke et al. 2018, App. A-B as reconstructed in docs/reproductions/pikeburke2018.md): the smallest
    n with n D/2 >= sqrt(2 n L) + (4/3) L + c_m, D = 2^-m, L = log(T D^2), i.e.
    n = (sqrt(2L) + sqrt(2L + (8/3) D L + 2 D c))^2 / D^2, ceil; T + 1 once L <= 0 or beyond T."""

    def exact(m, c):
        Dm = 2.0**-m
        Lm = math.log(T * Dm * Dm)
        if Lm <= 0:
            return None
        return (math.sqrt(2 * Lm) + math.sqrt(2 * Lm + 8 / 3 * Dm * Lm + 2 * Dm * c)) ** 2 / Dm**2

    out = [0]
    for m in range(1, M_ + 1):
        if kind == "odaaf":  # eq. (2): c_m = 3 m E[tau]
            n = exact(m, 3 * m * E_)
        elif kind == "odaaf_v":  # eq. (6): c_m = 2 (E + 2 V)
            n = exact(m, 2 * (E_ + 2 * var))
        elif kind == "odaaf_b":  # eq. (4.2): max(n'_m (c' = 2 E), m min(d, n_m^ODAAF / m))
            n1, n2 = exact(m, 2 * E_), exact(m, 3 * m * E_)
            n = None if n1 is None else max(n1, m * min(bound, n2 / m))
        else:  # App. B: (sqrt(L/2) + sqrt(L/2 + 2 D m d))^2 / D^2
            Dm = 2.0**-m
            Lm = math.log(T * Dm * Dm)
            n = None if Lm <= 0 else (math.sqrt(Lm / 2) + math.sqrt(Lm / 2 + 2 * Dm * m * bound)) ** 2 / Dm**2
        out.append(T + 1 if n is None else min(math.ceil(n), T + 1))
    return out


def odaaf_policies():
    E_, V_, d_ = ANON_LAW.mean, ANON_LAW.variance, 8
    return {
        "odaaf": (A.odaaf(E_), dict(kind="odaaf", E=E_, bridge=False)),
        "odaaf-bridge-first": (A.odaaf(E_, use_bridge=True, bridge_rule="first_next"),
                               dict(kind="odaaf", E=E_, bridge=True, rule="first_next")),
        "odaaf-b": (A.odaaf_b(E_, d_), dict(kind="odaaf_b", E=E_, bound=d_, bridge=True)),
        "odaaf-v-len": (A.odaaf_v(E_, V_, bridge_len=5), dict(kind="odaaf_v", E=E_, var=V_, bridge=True, blen=5)),
        "naive": (A.odaaf_naive(d_), dict(kind="naive", E=0.0, bound=d_, bridge=False)),
        "naive-bridge": (A.odaaf_naive(d_, use_bridge=True), dict(kind="naive", E=0.0, bound=d_, bridge=True)),
    }


def odaaf_reference(cfg, T, x_of, K):
    """Algorithm 1 (ODAAF) of Pike-Burke et al. 2018, generated as the action sequence it plays given the
    aggregated observations ``x_of(t, actions so far)``; returns (actions, per-arm sums, counts)."""
    n = n_schedule(cfg["kind"], T, cfg["E"], cfg.get("bound"), cfg.get("var"))
    acts, sums, cnts = [], np.zeros(K), np.zeros(K)
    active = list(range(K))
    m, n_elim = 1, 0

    def run_block(arm, length, record):
        for _ in range(length):
            if len(acts) >= T:
                return
            acts.append(arm)
            x = x_of(len(acts) - 1, acts)
            if record:  # Step 1 observations enter T_j(m); bridge observations are discarded
                sums[arm] += x
                cnts[arm] += 1

    while len(acts) < T:
        nu = n[min(m, len(n) - 1)] - n[min(m - 1, len(n) - 1)]
        for j in list(active):  # Step 1: each active arm nu_m rounds, index order
            run_block(j, max(nu, 1), True)
        if len(acts) >= T:
            break
        xbar = sums / np.maximum(cnts, 1)
        best = max(xbar[j] for j in active)
        kept = [j for j in active if not (xbar[j] + 2.0**-m < best)]  # Step 2 (strict)
        n_elim += len(active) - len(kept)
        active = kept
        if cfg["bridge"]:  # Step 4: one arm of S_{m+1}, nu_m rounds (or a fixed length)
            b = active[int(np.argmax([xbar[j] for j in active]))] if cfg.get("rule", "best") == "best" else active[0]
            run_block(b, cfg.get("blen", max(nu, 1)), False)
        m += 1
    return np.asarray(acts[:T]), sums, cnts, n_elim


@pytest.fixture(scope="module")
def anon_runs():
    env = E.bernoulli(MU_ANON, delay=ANON_LAW)
    pols = odaaf_policies()
    acts = play(env, C.anonymous(), {k: p for k, (p, _) in pols.items()}, T_ANON, R_ANON)
    return {k: (cfg, acts[k]) for k, (_, cfg) in pols.items()}


def test_pikeburke2018_odaaf_family_exact_trajectories(anon_runs):
    """ODAAF (eq. 2), ODAAF-B (eq. 4.2, best-arm bridge), ODAAF-V (eq. 6, fixed bridge length),
    ODAAF + first-next bridge, and App. B's naive schedule with and without bridge: the reference
    machine, fed the anonymous sums X_t = sum_{s + d_s = t} R_s of the same world draws, plays the
    same arm at every round (3 arms, T = 3000, 2 runs; eliminations happen in phases 1-2)."""
    mu = f32(MU_ANON)
    for lab, (cfg, acts) in anon_runs.items():
        for r in range(R_ANON):
            s = streams(T_ANON, r)
            d = world_delays(ANON_LAW, s, T_ANON)
            arrive = {}

            def x_of(t, played):
                a = played[t]
                if s.u[t] < mu[a]:
                    arrive[t + d[t]] = arrive.get(t + d[t], 0.0) + 1.0
                return arrive.pop(t, 0.0)

            ref, _, _, n_elim = odaaf_reference(cfg, T_ANON, x_of, 3)
            bad = np.flatnonzero(ref != acts[r])
            assert bad.size == 0, f"{lab} run {r}: first difference at round {bad[0]}"
            assert n_elim >= 1, f"{lab}: no elimination within T (the test would not pin Step 2)"


QPMD_MU = np.array([0.3, 0.6, 0.5, 0.45])
QPMD_LAW = D.geometric(0.85)
T_QPMD = 600
R_QPMD = 2


@pytest.fixture(scope="module")
def qpmd_runs():
    env = E.bernoulli(QPMD_MU, delay=QPMD_LAW)
    return play(env, C.attributed(), {"ucb1": A.qpmd(), "kl-ucb": A.qpmd("kl-ucb")}, T_QPMD, R_QPMD)


@jax.jit
def _split_chain(key):
    """The uniforms of the successive ``key, sub = split(key)`` draws (a given random stream)."""

    def body(k, _):
        k, sub = jax.random.split(k)
        return k, M.uniform(sub)

    return jax.lax.scan(body, key, None, length=T_QPMD)[1]


def test_pikeburke2018_qpmd_exact_trajectories(qpmd_runs):
    """QPM-D (Joulani et al. 2013, Alg. 2) with UCB1 (s/n + sqrt(2 ln n_tot / n)) and
    KL-UCB (log n_tot / n) as base: per-arm queues of arrived rewards, the base is fed from the
    queue of its recommendation as long as it has something (a value drawn without replacement:
    1 with probability queued-sum / queued-count), and the learner plays the recommendation."""
    mu = f32(QPMD_MU)
    K = 4
    for base, acts in qpmd_runs.items():
        for r in range(R_QPMD):
            s = streams(T_QPMD, r)
            d = world_delays(QPMD_LAW, s, T_QPMD)
            draws = np.asarray(_split_chain(s.init_key), np.float64)
            qc, qs, fc, fs = np.zeros(K), np.zeros(K), np.zeros(K), np.zeros(K)
            arrive = {}
            J, used = 0, 0

            def recommend():
                tot = fc.sum()
                idx = np.full(K, np.inf)
                for k in range(K):
                    if fc[k] > 0:
                        mean = fs[k] / fc[k]
                        if base == "ucb1":
                            idx[k] = mean + math.sqrt(2 * math.log(max(tot, 1)) / fc[k])
                        else:
                            idx[k] = bern_klucb(min(max(mean, 0), 1), math.log(max(tot, 1)) / fc[k])
                return int(np.argmax(idx))  # lowest index among ties (unplayed arms first, in order)

            for t in range(T_QPMD):
                assert acts[r][t] == J, f"QPM-D({base}) run {r}: round {t}: reference {J}, simulator {acts[r][t]}"
                rew = float(s.u[t] < mu[J])
                arrive.setdefault(t + d[t], []).append((J, rew))
                for a, x in arrive.pop(t, []):
                    qc[a] += 1
                    qs[a] += x
                while qc[J] > 0:
                    v = float(draws[used] * qc[J] < qs[J])
                    used += 1
                    fc[J] += 1
                    fs[J] += v
                    qc[J] -= 1
                    qs[J] -= v
                    J = recommend()
            assert fc.min() >= 5, "every arm fed"


# ============================================================================= Vernade et al. 2020
TH_LIN = np.array([0.45, 0.3, 0.5, 0.2, 0.35])
T_LIN = 300
R_LIN = 2
M_LIN = 8
LIN_LAW = D.geometric(0.85)  # zero-based, mean 5.7: delays 0, inside and beyond the window


def _lin_features():
    """6 actions in R^5 with distinct norms 0.5..1 (unit norms would make round 0 an exact tie in
    float32 and a near-tie in float64)."""
    rng = np.random.default_rng(11)
    x = rng.random((6, 5))
    return x / np.linalg.norm(x, axis=1, keepdims=True) * np.linspace(1.0, 0.5, 6)[:, None]


def lin_policies():
    m = M_LIN
    cens = {
        "ucb-ref": (L.otf_linucb(m), dict(pol="ucb", variant="ref")),
        "ucb-ref-nobias": (L.otf_linucb(m, bias=False, lam=2.0), dict(pol="ucb", variant="ref", bias=False, lam=2.0)),
        "ucb-paper-exact": (L.otf_linucb(m, variant="paper"), dict(pol="ucb", variant="paper", bias_mode="exact")),
        "ucb-paper-stored": (L.otf_linucb(m, variant="paper", bias_mode="stored", width_scale=0.3, include_sqrt_lam=False,
                                          lam=2.0, delta=0.05),
                             dict(pol="ucb", variant="paper", bias_mode="stored", scale=0.3, sqrt_lam=False, lam=2.0, delta=0.05)),
        "ucb-paper-nobias": (L.otf_linucb(m, variant="paper", bias=False, width_scale=0.2),
                             dict(pol="ucb", variant="paper", bias=False, scale=0.2)),
        "ts-ref": (L.otf_lints(m, sigma0=0.7), dict(pol="ts", variant="ref", sigma0=0.7)),
        "ts-paper-stored": (L.otf_lints(m, variant="paper"), dict(pol="ts", variant="paper", bias_mode="stored")),
        "ts-paper-exact-cons": (L.otf_lints(m, variant="paper", bias_mode="exact", scale="conservative", lam=0.5),
                                dict(pol="ts", variant="paper", bias_mode="exact", ts_scale="conservative", lam=0.5)),
        "wait": (L.linucb_wait(m), dict(pol="wait")),
    }
    unc = {"ignore": (L.linucb_ignore_delays(delta=0.2), dict(pol="ignore", delta=0.2))}
    return {M_LIN: cens, None: unc}


@pytest.fixture(scope="module")
def lin_runs():
    return _runs_by_window(E.linear(TH_LIN, features=_lin_features(), delay=LIN_LAW), lin_policies(), T_LIN, R_LIN)


def f_theorem1(t1, d, lam, delta, sqrt_lam=True):
    """f_{t,delta} = sqrt(lam) + sqrt(2 log(1/delta) + d log((d lam + t)/(d lam))) (Theorem 1)."""
    return (math.sqrt(lam) if sqrt_lam else 0.0) + math.sqrt(2 * math.log(1 / delta) + d * math.log((d * lam + t1) / (d * lam)))


def lin_reference(cfg, window, T, run, lib):
    """OTFLinUCB (Alg. 1), OTFLinTS (Alg. 2), their reference-code variants and the
    LinUCB-wait / LinUCB-ignore-delays baselines, from scratch with np.linalg.inv."""
    feats = f32(_lin_features())
    s = streams(T, run)
    dl = world_delays(LIN_LAW, s, T)
    means = np.clip(feats @ f32(TH_LIN), 0, 1)
    Kn, d = feats.shape
    lam, delta = cfg.get("lam", 1.0), cfg.get("delta", 0.1)
    pol, variant = cfg["pol"], cfg.get("variant")
    sigma0 = cfg.get("sigma0", 0.5)
    ref_ts = pol == "ts" and variant == "ref"
    reg = sigma0**2 if ref_ts else lam
    hist, conv, delivered_by = [], [], []  # A_s; X_s 1{d_s <= m}; round at whose end it is seen
    stored = []  # ||A_s||_{V_s^-1} (paper), its square (ref UCB), b'_s (ref TS)
    st = {"c": sigma0}
    z = np.asarray(jax.vmap(lambda k: M.normals(k, d, offset=1))(s.act_keys), np.float64) if pol == "ts" else None

    def decide(t):
        a_hist = np.asarray(hist).reshape(-1, d)
        cv, due = np.asarray(conv, bool), np.asarray(delivered_by)
        if pol == "wait":  # only closed actions (age >= m): s <= t - 1 - m, with their final outcome
            n_c = max(t - window, 0)
            Vm = lam * np.eye(d) + a_hist[:n_c].T @ a_hist[:n_c]
            B = cv[:n_c].astype(float) @ a_hist[:n_c] if n_c else np.zeros(d)
        else:  # V: every played action at once; B: conversions seen by the end of round t - 1
            Vm = reg * np.eye(d) + a_hist.T @ a_hist
            B = (cv & (due <= t - 1)).astype(float) @ a_hist if t else np.zeros(d)
        Vi = np.linalg.inv(Vm)
        th = Vi @ B
        q = np.einsum("kd,de,ke->k", feats, Vi, feats)
        last = range(max(t - window, 0), t) if window else range(0)  # the last m played actions
        if pol == "ucb" and variant == "ref":
            beta_p = 2 * math.log(1 / delta) + d * math.log(1 + t / (lam * d))
            if cfg.get("bias", True):
                width = math.sqrt(beta_p + lam) + sum(stored[i] for i in last)
            else:
                width = math.sqrt(beta_p + math.sqrt(lam))
            idx = feats @ th + width * q
        elif pol == "ucb":
            f = f_theorem1(t + 1, d, lam, delta, cfg.get("sqrt_lam", True))
            bias = 0.0
            if cfg.get("bias", True):
                bias = (sum(math.sqrt(a_hist[i] @ Vi @ a_hist[i]) for i in last) if cfg["bias_mode"] == "exact"
                        else sum(stored[i] for i in last))
            idx = feats @ th + cfg.get("scale", 1.0) * (2 * f + bias) * np.sqrt(q)
        elif pol == "ts":
            if variant == "ref":
                cov = st["c"]
            else:
                f = f_theorem1(t + 1, d, lam, delta)
                bias = (sum(math.sqrt(a_hist[i] @ Vi @ a_hist[i]) for i in last) if cfg["bias_mode"] == "exact"
                        else sum(stored[i] for i in last))
                cov = 1 + bias / f if cfg.get("ts_scale", "paper") == "paper" else (f + bias) ** 2
            theta_s = th + math.sqrt(cov) * np.linalg.cholesky(Vi) @ z[t]  # N(theta_hat, cov V^-1)
            idx = feats @ theta_s
        elif pol == "wait":
            idx = feats @ th + 2 * f_theorem1(t + 1, d, lam, delta) * np.sqrt(q)
        else:  # ignore delays: OFUL width f, every conversion received so far
            idx = feats @ th + f_theorem1(t + 1, d, lam, delta) * np.sqrt(q)
        return argmax_tie_np(idx, s.act_u[t]), idx

    def absorb(t, a):
        x = feats[a]
        Vs = reg * np.eye(d) + np.asarray(hist).reshape(-1, d).T @ np.asarray(hist).reshape(-1, d)  # V_s, before A_s
        qs = x @ np.linalg.solve(Vs, x)
        if ref_ts:  # b'_s = A_s^T (c_s V'_{s+1})^-1 A_s, after adding A_s; c_t = sigma0 + sum over the last m
            b = x @ np.linalg.solve(Vs + np.outer(x, x), x) / st["c"]
        elif pol == "ucb" and variant == "ref":
            b = qs
        else:
            b = math.sqrt(qs)
        hist.append(x)
        stored.append(b)
        X = s.u[t] < means[a]
        ok = X and (window is None or dl[t] <= window)
        conv.append(bool(ok))
        delivered_by.append(t + dl[t] if ok else T + 10**9)
        if ref_ts:
            st["c"] = sigma0 + sum(stored[max(t + 1 - window, 0): t + 1])

    check_run(decide, absorb, lib, T, f"{cfg} run {run}", near_ok=2)


def test_vernade2020_policies_exact_trajectories(lin_runs):
    """OTFLinUCB (paper width 2f + exact / stored bias, without the bias, width_scale, f without
    sqrt(lam); the reference code's squared-norm width with and without the bias sum), OTFLinTS
    (reference code: N(V'^-1 B, c_t V'^-1); paper: beta = 1 + bias / f, stored or exact; conservative
    (f + bias)^2), LinUCB-wait and LinUCB-ignore-delays take the reference's action at every round
    (6 fixed actions in R^5, T = 300, 2 runs, m = 8, zero-based geometric delays of mean 5.7)."""
    for lab, (window, cfg, acts) in lin_runs.items():
        for r in range(R_LIN):
            lin_reference(cfg, window, T_LIN, r, acts[r])
