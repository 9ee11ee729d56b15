"""Checks of the *kinds* that random mutants showed missing, fifth part (e) (docs/contributing.md,
"Mutation testing"; the earlier parts are tests/test_kinds.py ... tests/test_kinds4b.py): each test
is a kind of check applied to every case it covers, not a test aimed at one mutated line.

* every bound at the bound: Doubling's skip test at a delay exactly ``beta_m`` (where float32 ties),
  DEW's truncation at ``d_max = 0`` for every ``eta`` up to float32's largest, every stated integer
  range of a constructor that needs arguments, the estimates that are NaN until a pull closes, the
  online reward limit and ``max_pending`` at their bounds;
* a law in the fast suite: every policy that logs its law logs a probability vector at every round;
* independent computations: delay-model TS's declared estimate (the posterior's ``p``), Beta TS's
  closed counts written out by hand, ARS-EXP3's block table in integer arithmetic;
* stated defaults pinned: ``f_poly()`` and Doubling's lanes as docs/benchmarks.md states them;
* every documented form run once: an online learner on the anonymous channel decided, fed, saved
  and loaded; ``Learner.feedback`` with rewards on a conversion channel at padded sizes;
* a hang fails: QPM-D with every arm's queue full finishes within a time limit.
"""
import inspect
import math
import os
import pathlib
import re
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxbandits import channels as C, online
from jaxbandits.core import delays as D
from jaxbandits.core.types import Arrivals, Context, ProblemSpec
from jaxbandits.policies import adversarial as A, anonymous as AN, bayes as PB, classic, composite as CO
from jaxbandits.policies import conversions as CV, linear as L

ROOT = pathlib.Path(__file__).parents[1]
F32 = np.float32


# ------------------------------------------------------------------------- every bound at the bound
def _f32_integer_betas(n):
    """The first ``n`` pairs ``(K, m)`` (``m`` even) whose ``beta_m = 2^(m/2) / (4e ln K)`` is an
    integer in float32 (one rounding of ``4e ln K``, one division), with eq. (6) holding at a delay
    ``beta_m`` so that round 0 stays in epoch ``m``. Only pairs where the division and the multiply
    by the reciprocal agree (XLA may compile either)."""
    out = []
    for m in range(20, 41, 2):
        for K in range(2, 20000):
            c = F32(4 * math.e * math.log(K))
            b = F32(2.0 ** (m // 2)) / c
            if b == F32(2.0 ** (m // 2)) * (F32(1) / c) and b == np.floor(b) and b >= 2 and (math.e * K / 2 + float(b)) * math.log(K) <= 2.0**m / 2:
                out.append((K, m, int(b)))
                break
        if len(out) == n:
            return out
    return out


def test_every_doubling_skip_is_at_a_delay_of_at_least_beta_m_at_the_bound():
    """Every bound at the bound, Doubling's skip rule (``d_t >= beta_m``, not strict, Alg. 2): where
    float32 makes ``beta_m`` an integer (K = 2696, m = 32: 763 exactly, first checked in the
    library's own compiled ``act``), a delay of ``beta_m`` is skipped and ``beta_m - 1`` kept, with
    no epoch change."""
    pairs = [(2696, 32, 763)] + _f32_integer_betas(1)
    assert len(pairs) == 2, pairs
    for K, m, b in pairs:
        pol = A.doubling(m0=m)
        st = pol.init(ProblemSpec(K, 10), jax.random.key(0))
        act = jax.jit(jax.vmap(pol.act, in_axes=(None, 0, None)))
        ds = jnp.asarray([b - 1, b, b + 1], jnp.int32)
        _, memo = act(st, Context(jnp.zeros(3, jnp.int32), delay_now=ds), jax.random.key(1))
        assert np.asarray(memo.skip).tolist() == [False, True, True], (K, m, b, memo.skip)
        assert np.asarray(memo.m).tolist() == [m] * 3 and np.asarray(memo.jumps).tolist() == [0] * 3, (K, m)
        assert np.asarray(memo.n_skip).tolist() == [0.0, 1.0, 1.0] and float(memo.dsum[0]) == b - 1, (K, m)


def test_every_dew_truncation_is_min_eta_and_its_bound_at_d_max_zero_and_above():
    """Every bound at the bound, DEW's rate ``eta' = min(eta, 1/(4e d_max))`` with no truncation for
    ``d_max`` None or 0 (its stated ``>= 0`` end): for every ``eta`` up to float32's largest, the
    state's rate is ``eta`` exactly at ``d_max = 0`` and the float64 formula within float32 rounding above."""
    big = float(np.finfo(np.float32).max)
    for eta in (1e-3, 0.5, 1e20, 1e30, big):
        for d_max in (None, 0, 0.0, 1e-3, 1, 99):
            st = A.dew(eta=eta, d_max=d_max).init(ProblemSpec(3, 10), jax.random.key(0))
            if not d_max:
                assert float(st.eta) == float(F32(eta)), (eta, d_max, float(st.eta))
            else:
                want = min(eta, 1.0 / (4 * math.e * d_max))
                assert float(st.eta) == pytest.approx(want, rel=2.0**-21), (eta, d_max, float(st.eta), want)


# every constructor that needs an argument, with values for its other required arguments
_REQUIRED = {
    L.linucb_wait: {},
    A.dew: {"eta": 0.1},
    CV.discarding_ucb: {"delay": D.geometric(0.5), "window": 5},
    CV.discarding_klucb: {"delay": D.geometric(0.5), "window": 5},
    CO.clw: {},
    AN.odaaf: {"mean_delay": 2.0},
}


def test_every_stated_integer_range_of_a_constructor_that_needs_arguments_at_the_bound():
    """Every bound at the bound, the constructors tests/test_kinds3.py leaves out (they need
    arguments): each integer range ``>= lo`` their docstring states is accepted at ``lo`` and
    refused at ``lo - 1`` with a ValueError naming the parameter."""
    checked = set()
    for f, base in _REQUIRED.items():
        doc = inspect.getdoc(f)
        args = doc.split("Args:")[1].split("Returns:")[0]
        for name, lo in re.findall(r"^    (\w+): [^\n]*?an integer ``>= (\d+)``", args, re.M):
            lo = int(lo)
            kw = dict(base)
            for other in inspect.signature(f).parameters.values():  # required integers at their bound
                if other.default is inspect.Parameter.empty and other.name not in kw and other.name != name:
                    kw[other.name] = 1
            f(**{**kw, name: lo})
            with pytest.raises(ValueError, match=rf"\b{name}\b"):
                f(**{**kw, name: lo - 1})
            checked.add(f"{f.__name__}:{name}")
    assert {"linucb_wait:window", "clw:d"} <= checked, sorted(checked)


def _discarding_run(pol, K, T):
    """``estimate`` after each update of a round-robin run with no conversions (``t`` = 0..T-1)."""
    st = pol.init(ProblemSpec(K, T), jax.random.key(0))

    def step(st, t):  # update reads the round, the action and the payload (no conversions) only
        st = pol.update(st, Arrivals(t, t % K, None, jnp.zeros(K, jnp.float32)))
        return st, pol.estimate(st)

    _, est = jax.jit(lambda s: jax.lax.scan(step, s, jnp.arange(T, dtype=jnp.int32)))(st)
    return [np.asarray(pol.estimate(st))] + list(np.asarray(est))


def test_every_closed_pull_estimate_is_nan_until_the_first_pull_closes_and_zero_then():
    """Every bound at the bound, ``Policy.estimate``'s 'NaN where it has none yet': Discarding
    UCB and KL-UCB count a pull once it is ``m`` rounds old, so every arm's estimate is NaN at the
    start and after the updates of rounds 0..m-1; after the update of round ``t >= m`` the pulls of
    rounds 0..t-m have closed, and an arm with one of them has the estimate 0 (no conversions)."""
    K, m, T = 2, 3, 6
    for ctor in (CV.discarding_ucb, CV.discarding_klucb):
        est = _discarding_run(ctor(D.geometric(0.5), window=m), K, T)
        # the pulls of rounds 0..t-m have closed after t + 1 updates (index t + 1 of est)
        for i, e in enumerate(est):
            closed = [s for s in range(i) if s <= i - 1 - m]
            for k in range(K):
                if any(s % K == k for s in closed):
                    assert e[k] == 0.0, (ctor.__name__, i, k, e)
                else:
                    assert np.isnan(e[k]), (ctor.__name__, i, k, e)
        assert not np.isnan(est[-1]).any()


def _learner_one_decision():
    lr = online.Learner(classic.ucb1(), C.attributed(), 3)
    return lr, lr.decide(2)[0]


def test_every_reward_at_the_stated_limit_is_accepted_and_one_ulp_above_refused():
    """Every bound at the bound, the online reward limit: the message states ``|reward| <= 2**96``;
    ``+-2**96`` are accepted, the next float32 beyond refused with that message."""
    lr, ids = _learner_one_decision()
    for r in (np.nextafter(F32(2.0**96), F32(np.inf)), -np.nextafter(F32(2.0**96), F32(np.inf))):
        with pytest.raises(ValueError) as e:
            lr.feedback(ids[:1], [r])
        stated = re.search(r"\|reward\| <= 2\*\*(\d+)", str(e.value))
        assert stated and float(2 ** int(stated[1])) == 2.0**96, str(e.value)
    assert lr.feedback(ids, [2.0**96, -(2.0**96)]) == ["accepted", "accepted"]  # the refusals changed nothing


def test_every_max_pending_is_accepted_at_one_and_refused_at_zero():
    """Every bound at the bound, ``max_pending`` (an integer ``>= 1``) on a channel with and
    without attribution: 1 gives a 1-slot ring, 0 is refused naming the parameter."""
    for ch in (C.attributed(), C.anonymous()):
        pol = classic.ucb1() if ch.feedback.attributed else AN.odaaf(3.0)
        st = online.init(pol, ch, 3, 0, max_pending=1, horizon=1000)
        assert st.config.pending == 1, st.config
        with pytest.raises(ValueError, match=r"\bmax_pending\b"):
            online.init(pol, ch, 3, 0, max_pending=0, horizon=1000)


# ------------------------------------------------------------------------- a law in the fast suite
def _law_run(pol, K, T, key):
    """Every round's logged law of ``pol`` with feedback delivered at once (Bernoulli(0.5) rewards)."""
    spec = ProblemSpec(K, T)
    st0 = pol.init(spec, key)

    def step(st, t):
        k = jax.random.fold_in(key, t)
        a, memo = pol.act(st, Context(t, delay_now=jnp.asarray(0, jnp.int32)), k)
        r = (jax.random.uniform(jax.random.fold_in(k, 1)) < 0.5).astype(jnp.float32)
        pay = pol.payload(memo, r, jnp.asarray(0, jnp.int32)) if pol.payload is not None else r[None]
        return pol.update(st, Arrivals(t, a, memo, pay)), (a, memo.probs)

    _, (a, probs) = jax.jit(lambda s: jax.lax.scan(step, s, jnp.arange(T, dtype=jnp.int32)))(st0)
    return np.asarray(a), np.asarray(probs, np.float64)


def test_every_logged_law_is_a_distribution_at_every_round():
    """A law in the fast suite, every policy that declares ``memo_probs`` (the law the engine's
    expected regret is taken over): at every round of a run the logged law is non-negative, sums
    to 1, and gives the played arm positive mass (inside a block of a block policy, mass 1)."""
    K, T = 3, 24
    pols = [classic.exp3(), A.doubling(), CO.ars_exp3(beta=0.5), CO.clw(d=2)]  # DEW draws as Doubling does
    for pol in pols:
        assert pol.memo_probs, pol.name
        a, p = _law_run(pol, K, T, jax.random.key(3))
        assert p.shape == (T, K) and (p >= 0).all(), (pol.name, p)
        assert np.allclose(p.sum(1), 1.0, atol=1e-5), (pol.name, p.sum(1))
        assert (p[np.arange(T), a] > 0).all(), (pol.name, a, p)


# ------------------------------------------------------------------------- independent computations
def test_every_delay_model_ts_estimate_is_the_posterior_p_with_a_shared_law():
    """An independent computation, delay-model TS's ``Policy.estimate`` (what ``serve /stats``
    reports): with a shared delay law, or a known one, it is ``p`` at the mode, i.e. the
    posterior's ``p`` (``sigmoid`` of the mode's logit), not ``p F(M)``; with per-arm laws it is
    ``p F(M)`` with ``F(M)`` of the mode's own law, well below 1 here (prior mean 40, M = 4)."""
    K, M_ = 3, 4
    for kw in ({}, {"fixed_delay": {"delay_mean": 40.0}, "per_arm_delay": True}, {"per_arm_delay": True}):
        pol = PB.delay_model_ts(M_, "exponential", engine="laplace", prior_mean=40.0, **kw)
        est, post = jax.jit(lambda k: (lambda st: (pol.estimate(st), pol.posterior(st)))(
            pol.init(ProblemSpec(K, 50), k)))(jax.random.key(0))
        F = np.asarray(post.delay_pmf, np.float64)[:, : M_ + 1].sum(1)  # P(delay <= M) from the mode's law
        assert (F < 0.5).all(), F
        p = np.asarray(post.rate, np.float64)
        want = p * F if kw == {"per_arm_delay": True} else p
        np.testing.assert_allclose(np.asarray(est), want, rtol=1e-5, err_msg=str(kw))


def test_every_beta_ts_closed_count_is_the_plays_older_than_the_window_counted_by_hand():
    """An independent computation, Beta TS's closed counts (``"closed"``: plays older than ``M``
    and their conversions seen within ``M``), written out from a random sequence of plays and
    conversion lags, at every round of a horizon several windows long."""
    K, M_, T = 3, 4, 17
    W = M_ + 1
    rng = np.random.default_rng(5)
    acts = rng.integers(0, K, T)
    conv = rng.random(T) < 0.5
    lag = rng.integers(0, M_ + 1, T)
    pol = PB.beta_ts("closed", window=M_)
    rev = np.array([[t - a >= 0 and conv[t - a] and lag[t - a] == a for a in range(W)] for t in range(T)])

    def step(st, x):  # update reads the round, the action, the payload and the reveals only
        t, a, r = x
        st = pol.update(st, Arrivals(t, a, None, jnp.zeros(K, jnp.float32), r))
        return st, (st.closed_n, st.closed_s)

    st0 = pol.init(ProblemSpec(K, T), jax.random.key(0))
    xs = (jnp.arange(T, dtype=jnp.int32), jnp.asarray(acts, jnp.int32), jnp.asarray(rev))
    _, (cn, cs) = jax.jit(lambda s: jax.lax.scan(step, s, xs))(st0)
    for t in range(T):
        closed = np.arange(T) <= t - W  # the plays of rounds 0..t-W have left the window
        n = np.bincount(acts[closed], minlength=K)
        s = np.bincount(acts[closed & conv], minlength=K)
        assert np.asarray(cn[t]).tolist() == n.tolist(), (t, cn[t], n)
        assert np.asarray(cs[t]).tolist() == s.tolist(), (t, cs[t], s)


def _ceil_root_power(k, num, den):
    """``ceil(k^(num/den))`` in integer arithmetic: the least ``g`` with ``g^den >= k^num``."""
    target = k**num
    g = max(1, int(round(k ** (num / den))) - 2)
    while g**den < target:
        g += 1
    while g > 1 and (g - 1) ** den >= target:
        g -= 1
    return g


@pytest.mark.parametrize("beta,num,den,T", [(0.4, 2, 5, 4000), (0.2, 1, 5, 16000), (0.5, 1, 2, 3000),
                                            (1.0, 1, 1, 300), (0.75, 3, 4, 3000)])
def test_every_exp3_block_is_the_integer_ceiling_of_k_to_the_beta(beta, num, den, T):
    """An independent computation, ARS-EXP3's blocks ``g(k) = ceil(k^beta)`` in exact integer
    arithmetic, including where ``k^beta`` is an integer float pow rounds up (beta = 0.4: 243^0.4
    = 9; beta = 0.2: 3125^0.2 = 5), and ``K = max{k : G(k) <= T}``."""
    tab, K = CO.exp3_block_table(T, beta=beta)
    want, tot = [], 0
    for k in range(1, T + 1):
        g = _ceil_root_power(k, num, den)
        if tot + g > T:
            break
        want.append(g)
        tot += g
    assert K == len(want), (K, len(want))
    assert [int(x) for x in np.asarray(tab)[:K]] == want


# ------------------------------------------------------------------------- stated defaults pinned
def test_every_stated_block_size_and_lane_default_is_pinned():
    """Stated defaults pinned: ``f_poly()`` is ``f_poly(1, 2)``, ars_ucb's default ``"k^2"``
    (blocks 1, 4, 9); ``doubling()`` has the 48 epoch lanes docs/benchmarks.md states (``P = 480``
    at K = 10): its payload is ``48 K`` floats."""
    assert CO.f_poly() == CO.f_poly(1, 2) == CO.block_size("k^2")
    page = (ROOT / "docs" / "benchmarks.md").read_text()
    lanes, P = map(int, re.search(r"(\d+) epoch lanes: P = (\d+)", page).groups())
    assert (lanes, P) == (48, 480)
    pol = A.doubling()
    K = 10
    st = pol.init(ProblemSpec(K, 10), jax.random.key(0))
    ctx = Context(jnp.asarray(0, jnp.int32), delay_now=jnp.asarray(0, jnp.int32))
    out = jax.eval_shape(lambda: pol.payload(pol.act(st, ctx, jax.random.key(1))[1], 1.0, 0))
    assert out.shape == (P,), out
    assert inspect.signature(A.doubling).parameters["lanes"].default == lanes


# ------------------------------------------------------------------------- every documented form run once
def test_every_online_learner_on_the_anonymous_channel_decides_feeds_saves_and_loads(tmp_path):
    """Every documented form run once, the online learner on a channel without attribution: an
    ODAAF learner decides, takes an aggregate, saves, loads, and decides again where it left off."""
    lr = online.Learner(AN.odaaf(3.0), C.anonymous(), 3, horizon=1000)  # ODAAF's schedule needs T <= 2**24
    assert lr.state.config.pending == 1  # only the open round's memo is kept
    ids, _ = lr.decide(2)
    assert lr.feedback(y=[1.0]) == ["accepted"]
    p = tmp_path / "anon.json"
    lr.save(p)
    back = online.Learner.load(p, AN.odaaf(3.0), C.anonymous())
    assert int(back.state.t) == int(lr.state.t) >= 1
    ids2, _ = back.decide(1)
    assert ids2[0] > max(ids)


def test_every_learner_feedback_form_on_a_conversion_channel_at_padded_sizes():
    """Every documented form run once, ``Learner.feedback`` on a conversion channel: ids alone and
    ids with rewards of ones (pure.feedback's 'conversions only'), at sizes 1 and 9 (padded to 8 and
    16 rows), all accepted."""
    lr = online.Learner(classic.ucb1(), C.conversions(window=10), 3)
    ids, _ = lr.decide(11)
    assert lr.feedback(ids[:1]) == ["accepted"]
    assert lr.feedback(ids[1:2], [1.0]) == ["accepted"]
    assert lr.feedback(ids[2:11], [1.0] * 9) == ["accepted"] * 9


# ------------------------------------------------------------------------- a hang fails
def test_every_qpmd_run_with_every_arm_queued_finishes():
    """A hang fails (the suite sets no per-test time limit): QPM-D's feeding loop, given a queued
    reward on every arm at once, ends (the recommended arm's queue empties) within a time limit;
    run in a subprocess so that a loop that never ends is a failure, not a stalled suite."""
    prog = """
import jax, jax.numpy as jnp
from jaxbandits.core.types import Arrivals, Context, ProblemSpec
from jaxbandits.policies import anonymous as AN
pol = AN.qpmd()
K = 3
st = pol.init(ProblemSpec(K, 20), jax.random.key(0))
a, memo = pol.act(st, Context(jnp.asarray(0, jnp.int32)), jax.random.key(1))
pay = jnp.concatenate([jnp.full(K, 2.0), jnp.full(K, 1.0)])
st = jax.jit(pol.update)(st, Arrivals(jnp.asarray(0, jnp.int32), a, memo, pay))
print(int(st.fed_cnt.sum()), float(st.q_cnt.sum()))
"""
    r = subprocess.run([sys.executable, "-c", prog], capture_output=True, text=True, timeout=60,
                       env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert r.returncode == 0, r.stderr[-2000:]
    fed, queued = r.stdout.split()
    assert int(fed) + float(queued) == 6.0 and int(fed) >= 1, r.stdout
