"""The fused path (docs/fused.md): Pallas kernels run here through Pallas' interpreter on the CPU,
and are lowered for CUDA (Triton) without a GPU.

* statistics: the final regret (and delayed regret, and each arm's share of the pulls) of every
  covered policy x world x channel agree with the scan engine's within 3 standard errors;
* common random numbers: the policies of one experiment see the same world draws (each round's
  outcome of every policy is consistent with one reward uniform), and a different key breaks that;
* the same key gives bitwise the same result twice;
* the choice of path, and the error when the fused path is forced on what it does not cover;
* every kernel lowers to a Triton kernel for CUDA (needs jax-cuda12-plugin, see .ci/run; skipped
  with its reason otherwise).

A *replay* mode feeds a kernel the scan path's own reward, delay and tie uniforms: policies
without other draws (UCB1, KL-UCB, DelayedUCB, DelayedKLUCB) must then take the scan's actions,
run for run, round for round, which checks their index, tie rule, delays, censoring, calendar
and metrics exactly; the statistical tests check the kernels' own generator and samplers.

The default suite runs a reduced set (UCB1, KL-UCB and both Thompsons' statistics, DelayedUCB's
under Weibull delays, KL-UCB and DelayedKLUCB replays, the samplers, one shape lowered); the ``slow`` tests cover every policy, the seven delay laws and
more shapes.
"""
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import jax
import numpy as np
import pytest

import jaxbandits as jb
from jaxbandits.engine.fused import path as FP
from jaxbandits.policies import classic
from jaxbandits.policies import conversions as CV
from jaxbandits.engine import choose_path

ROOT = Path(__file__).resolve().parents[1]
KEY = jax.random.key(11)
MEANS = [0.25, 0.45, 0.6]  # best arm last (conventions §10)


def _z(a, b):
    """Difference of the means of two samples in standard errors."""
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    se = np.sqrt(a.var(ddof=1) / a.size + b.var(ddof=1) / b.size)
    return (a.mean() - b.mean()) / max(se, 1e-12)


def _agree(fused, scan, what, delayed=False):
    """Final regret, each arm's final pull share (and L(T)) within 3 standard errors."""
    assert abs(_z(fused.regret[:, -1], scan.regret[:, -1])) < 3, what
    for k in range(fused.pulls.shape[-1]):
        assert abs(_z(fused.pulls[:, -1, k], scan.pulls[:, -1, k])) < 3, (what, "arm", k)
    if delayed:
        assert abs(_z(fused.delayed_regret[:, -1], scan.delayed_regret[:, -1])) < 3, what


def _same_form(fused, scan):
    """The same SimOutput: fields, shapes, dtypes and record rounds."""
    for f in fused._fields:
        a, b = getattr(fused, f), getattr(scan, f)
        if f == "timing":
            continue
        if f == "stats":  # the same statistics: names, shapes and dtypes
            fa, fb = a.to_flat(), b.to_flat()
            assert sorted(fa) == sorted(fb)
            assert all(fa[k].shape == fb[k].shape and fa[k].dtype == fb[k].dtype for k in fa), f
            continue
        if a is None or b is None:
            assert a is None and b is None, f
        elif isinstance(b, np.ndarray):
            assert a.shape == b.shape and a.dtype == b.dtype, (f, a.shape, a.dtype, b.shape, b.dtype)
        else:
            assert a == b, f
    np.testing.assert_array_equal(fused.t, scan.t)


# ----------------------------------------------------------------------------- classic policies
N_C, T_C = 256, 300


@pytest.fixture(scope="module")
def classic_runs():
    env, ch = jb.envs.bernoulli(MEANS), jb.channels.attributed()
    pols = {"UCB1": classic.ucb1(), "KL-UCB": classic.kl_ucb()}
    fused = jb.simulate(env, ch, pols, T_C, KEY, N_C, record=1, path="fused")
    again = jb.simulate(env, ch, pols, T_C, KEY, N_C, record=1, path="fused")
    other = jb.simulate(env, ch, pols, T_C, jax.random.key(12), N_C, record=1, path="fused")
    scan = jb.simulate(env, ch, pols, T_C, KEY, N_C, record=1, path="scan")
    return env, fused, again, other, scan


def test_classic_statistics_agree_with_the_scan(classic_runs):
    _, fused, _, _, scan = classic_runs
    for lab in fused:
        _same_form(fused[lab], scan[lab])
        _agree(fused[lab], scan[lab], lab)
        assert fused[lab].timing["path"].startswith("fused") and "path" not in scan[lab].timing
    # the check has power: UCB1's regret is not KL-UCB's at this size
    assert abs(_z(fused["UCB1"].regret[:, -1], scan["KL-UCB"].regret[:, -1])) > 3


def test_thompson_statistics_agree_with_the_scan():
    """Beta-Bernoulli and Gaussian Thompson sampling: their posterior draws come from the kernel's
    own samplers (Marsaglia-Tsang gammas, Box-Muller normals), so no replay can check them; their
    final regret and pull shares agree with the scan's within 3 standard errors, and the same key
    gives the same bits."""
    env, ch = jb.envs.bernoulli(MEANS), jb.channels.attributed()
    pols = {"Thompson": classic.thompson(), "Gaussian-TS": classic.gaussian_thompson()}
    fused = jb.simulate(env, ch, pols, T_C, KEY, N_C, record=1, path="fused")
    scan = jb.simulate(env, ch, pols, T_C, KEY, N_C, record=1, path="scan")
    for lab in pols:
        _same_form(fused[lab], scan[lab])
        _agree(fused[lab], scan[lab], lab)
    assert abs(_z(fused["Thompson"].regret[:, -1], scan["Gaussian-TS"].regret[:, -1])) > 3  # the check has power
    again = jb.simulate(env, ch, pols["Thompson"], T_C, KEY, N_C, record=1, path="fused")
    np.testing.assert_array_equal(again.pulls, fused["Thompson"].pulls)


def test_same_key_same_bits_and_another_key_other_bits(classic_runs):
    _, fused, again, other, _ = classic_runs
    for lab in fused:
        for f in ("regret", "reward", "pulls"):
            np.testing.assert_array_equal(getattr(fused[lab], f), getattr(again[lab], f))
        assert not np.array_equal(fused[lab].pulls, other[lab].pulls)
        assert fused[lab].timing["compile_s"] > 0 and again[lab].timing["compile_s"] == 0  # compiled once
    # delayed_regret asked for without delays: tau_d = 1 for every d, so L(t) = R(t) (as the scan's)
    env = classic_runs[0]
    dl = jb.simulate(env, jb.channels.attributed(), classic.ucb1(), T_C, KEY, N_C, record=1, path="fused",
                     delayed_regret=True)
    np.testing.assert_array_equal(dl.delayed_regret, fused["UCB1"].regret)


def test_replaying_the_scan_draws_takes_the_scan_actions(classic_runs):
    """With the scan path's own reward and tie uniforms fed in (replay), the kernel takes the scan's
    actions in every run and round and records the same regret and reward, bit for bit: the index,
    the tie rule, the update and the metrics are the scan's, only the generator differs."""
    env, _, _, _, scan = classic_runs
    rep = FP.scan_uniforms(KEY, N_C, T_C)
    got = FP.simulate_fused(env, jb.channels.attributed(), classic.kl_ucb(), T_C, KEY, N_C, record=1, replay=rep)
    for f in ("pulls", "regret", "reward"):
        np.testing.assert_array_equal(getattr(got, f), getattr(scan["KL-UCB"], f))


def _actions_rewards(out):
    p = np.asarray(out.pulls)
    d = np.diff(np.concatenate([np.zeros_like(p[:, :1]), p], axis=1), axis=1)
    assert (d.sum(-1) == 1).all()
    r = np.diff(np.concatenate([np.zeros_like(out.reward[:, :1]), out.reward], axis=1), axis=1)
    return d.argmax(-1), np.rint(r).astype(int)


def _consistent(outs, means):
    """Fraction of (run, round) where every policy's reward is ``1{u < mu[A]}`` for one ``u``."""
    lo, hi = 0.0, 1.0
    for out in outs:
        a, r = _actions_rewards(out)
        m = np.asarray(means)[a]
        lo = np.maximum(lo, np.where(r == 0, m, 0.0))
        hi = np.minimum(hi, np.where(r == 1, m, 1.0))
    return np.mean(lo < hi), lo.shape


def test_common_random_numbers_across_policies(classic_runs):
    env, fused, _, other, _ = classic_runs
    a1, _ = _actions_rewards(fused["UCB1"])
    a2, _ = _actions_rewards(fused["KL-UCB"])
    assert np.mean(a1 != a2) > 0.1  # the policies often play different arms: the check bites
    frac, _ = _consistent([fused["UCB1"], fused["KL-UCB"]], MEANS)
    assert frac == 1.0
    # the same policies on another key's world draws are not coupled
    frac_other, _ = _consistent([fused["UCB1"], other["KL-UCB"]], MEANS)
    assert frac_other < 0.95


# ----------------------------------------------------------------------------- delayed conversions
N_D, T_D, M_D = 256, 400, 20


def _delayed_pair(make, law, m=M_D, N=N_D, T=T_D, theta=(0.2, 0.35, 0.5)):
    env, ch = jb.envs.conversions(list(theta), law), jb.channels.conversions(window=m)
    pol = make(law, m)
    return (jb.simulate(env, ch, pol, T, KEY, N, record=50, path="fused"),
            jb.simulate(env, ch, pol, T, KEY, N, record=50, path="scan"))


def _replayed(make, law, scan, m=M_D, N=N_D, T=T_D, theta=(0.2, 0.35, 0.5)):
    """The fused kernel fed the scan path's uniforms (see test_replaying_the_scan_draws_...)."""
    env, ch = jb.envs.conversions(list(theta), law), jb.channels.conversions(window=m)
    return FP.simulate_fused(env, ch, make(law, m), T, KEY, N, record=50, replay=FP.scan_uniforms(KEY, N, T))


def test_delayed_klucb_replaying_the_scan_draws_takes_its_actions():
    """DelayedKLUCB (geometric delays, window m) fed the scan path's uniforms: the same actions in
    every run and record point (delays, censoring, the calendar of pending conversions, the Ñ
    recursion and the index are the scan's), the same realised rewards, and L(t) equal up to
    float32 rounding; the output has the scan's form. (Its statistics with the kernel's own
    generator, for every law: the slow tests.)"""
    law = jb.delays.geometric(mean=8.0)
    env, ch = jb.envs.conversions([0.2, 0.35, 0.5], law), jb.channels.conversions(window=M_D)
    scan = jb.simulate(env, ch, CV.delayed_klucb(law, M_D), T_D, KEY, N_D, record=50, path="scan")
    rep = _replayed(CV.delayed_klucb, law, scan)
    _same_form(rep, scan)
    np.testing.assert_array_equal(rep.pulls, scan.pulls)
    np.testing.assert_array_equal(rep.reward, scan.reward)
    np.testing.assert_allclose(rep.delayed_regret, scan.delayed_regret, rtol=1e-5, atol=1e-3)
    assert rep.width == scan.width == M_D + 1 and rep.lost_to_W.sum() == 0
    # L(t) <= R(t) (tau <= 1) and censoring bites: L(T) < R(T)
    assert (rep.delayed_regret <= rep.regret + 1e-3).all()
    assert rep.delayed_regret[:, -1].mean() < 0.99 * rep.regret[:, -1].mean()


def test_calendar_packs_more_than_four_arms():
    """Six arms: two calendar words a row, arms 4 and 5 in the second (shifts 0 and 8) and arm 3 at
    the first word's top byte (shift 24). A replay of the scan's draws takes its actions exactly."""
    law = jb.delays.geometric(mean=6.0)
    env = jb.envs.conversions([0.3, 0.35, 0.4, 0.45, 0.5, 0.55], law)
    ch = jb.channels.conversions(window=15)
    scan = jb.simulate(env, ch, CV.delayed_ucb(law, 15), 150, KEY, 32, record=10, path="scan", keep="all")
    rep = FP.simulate_fused(env, ch, CV.delayed_ucb(law, 15), 150, KEY, 32, record=10, keep="all",
                            replay=FP.scan_uniforms(KEY, 32, 150))
    np.testing.assert_array_equal(rep.pulls, scan.pulls)
    np.testing.assert_array_equal(rep.reward, scan.reward)
    assert (rep.pulls[:, -1, 3:] > 5).all()  # the arms past the first word are played and converted
    assert rep.reward[:, -1].sum() > 0


def test_delayed_ucb_statistics_agree_with_the_scan():
    """DelayedUCB under Weibull delays (sampled in-kernel by inversion, Ñ from the tau-table sum)
    with the kernel's own generator: final regret, L(T) and pull shares within 3 s.e. of the scan's.
    (Every law and both policies: the slow tests.)"""
    law = jb.delays.weibull(0.7, 8.0)
    fused, scan = _delayed_pair(CV.delayed_ucb, law)
    _same_form(fused, scan)
    _agree(fused, scan, "DelayedUCB weibull", delayed=True)


LAWS = {"fixed": jb.delays.fixed(3), "uniform": jb.delays.uniform(0, 30), "geometric": jb.delays.geometric(mean=8.0),
        "exponential": jb.delays.exponential(8.0), "weibull": jb.delays.weibull(0.7, 8.0),
        "log_normal": jb.delays.log_normal(1.5, 1.0), "pareto": jb.delays.pareto(1.5, 4.0)}


@pytest.mark.slow
@pytest.mark.parametrize("law", list(LAWS))
@pytest.mark.parametrize("make", [CV.delayed_ucb, CV.delayed_klucb], ids=["d-ucb", "d-klucb"])
def test_delayed_policies_agree_with_the_scan_for_every_law(make, law):
    fused, scan = _delayed_pair(make, LAWS[law], N=512)
    _same_form(fused, scan)
    _agree(fused, scan, f"{make.__name__} {law}", delayed=True)
    assert fused.lost_to_W.sum() == 0 and fused.width == scan.width


@pytest.mark.slow
@pytest.mark.parametrize("law", list(LAWS))
@pytest.mark.parametrize("make", [CV.delayed_ucb, CV.delayed_klucb], ids=["d-ucb", "d-klucb"])
def test_delayed_policies_replaying_the_scan_draws_take_its_actions(make, law):
    scan = _delayed_pair(make, LAWS[law], N=64)[1]
    rep = _replayed(make, LAWS[law], scan, N=64)
    same = (rep.pulls == scan.pulls).all(axis=(1, 2))
    if law in ("geometric", "exponential"):  # the recursion, in the scan's float32 order: bitwise
        assert same.all()
    else:  # the tau-table sum adds in another order than the scan's matrix product: a near tie of
        assert same.mean() >= 0.75, same.mean()  # two indices may resolve the other way in a run
    np.testing.assert_array_equal(rep.reward[same], scan.reward[same])


@pytest.mark.slow
@pytest.mark.parametrize("pol", ["UCB1", "KL-UCB", "random"])
def test_classic_on_conversions_replaying_the_scan_draws_takes_its_actions(pol):
    make = {"UCB1": classic.ucb1, "KL-UCB": classic.kl_ucb, "random": classic.uniform_random}[pol]
    law = jb.delays.geometric(mean=8.0)
    env, ch = jb.envs.conversions([0.2, 0.35, 0.5], law), jb.channels.conversions(window=M_D)
    scan = jb.simulate(env, ch, make(), T_D, KEY, 64, record=50, path="scan")
    rep = FP.simulate_fused(env, ch, make(), T_D, KEY, 64, record=50, replay=FP.scan_uniforms(KEY, 64, T_D))
    _same_form(rep, scan)
    np.testing.assert_array_equal(rep.pulls, scan.pulls)
    np.testing.assert_allclose(rep.delayed_regret, scan.delayed_regret, rtol=1e-5, atol=1e-3)
    np.testing.assert_allclose(rep.expected_regret, scan.expected_regret, rtol=1e-5)


@pytest.mark.slow
@pytest.mark.parametrize("law", ["geometric", "weibull"])
@pytest.mark.parametrize("pol", ["UCB1", "KL-UCB", "Thompson", "Gaussian-TS", "random"])
def test_classic_on_conversions_agree_with_the_scan(pol, law):
    make = {"UCB1": classic.ucb1, "KL-UCB": classic.kl_ucb, "Thompson": classic.thompson,
            "Gaussian-TS": classic.gaussian_thompson, "random": classic.uniform_random}[pol]
    env, ch = jb.envs.conversions([0.2, 0.35, 0.5], LAWS[law]), jb.channels.conversions(window=M_D)
    fused = jb.simulate(env, ch, make(), T_D, KEY, 512, record=50, path="fused")
    scan = jb.simulate(env, ch, make(), T_D, KEY, 512, record=50, path="scan")
    _same_form(fused, scan)
    _agree(fused, scan, (pol, law), delayed=True)


@pytest.mark.slow
def test_ucb1_replaying_the_scan_draws_takes_its_actions():
    env, ch = jb.envs.bernoulli([0.3, 0.5, 0.5, 0.45]), jb.channels.attributed()
    scan = jb.simulate(env, ch, classic.ucb1(), 400, KEY, 64, record=1, path="scan")
    got = FP.simulate_fused(env, ch, classic.ucb1(), 400, KEY, 64, record=1, replay=FP.scan_uniforms(KEY, 64, 400))
    np.testing.assert_array_equal(got.pulls, scan.pulls)
    np.testing.assert_array_equal(got.regret, scan.regret)


@pytest.mark.slow
@pytest.mark.parametrize("pol", ["UCB1", "KL-UCB", "Thompson", "Gaussian-TS", "random"])
@pytest.mark.parametrize("means", [[0.5, 0.55], [0.1, 0.2, 0.3, 0.4, 0.9], [0.7, 0.3, 0.7]], ids=["close", "K5", "tie"])
def test_classic_policies_agree_with_the_scan(pol, means):
    make = {"UCB1": classic.ucb1, "KL-UCB": classic.kl_ucb, "Thompson": classic.thompson,
            "Gaussian-TS": classic.gaussian_thompson, "random": classic.uniform_random}[pol]
    env, ch, p = jb.envs.bernoulli(means), jb.channels.attributed(), make()
    fused = jb.simulate(env, ch, p, 500, KEY, 512, path="fused")
    scan = jb.simulate(env, ch, p, 500, KEY, 512, path="scan")
    _same_form(fused, scan)
    _agree(fused, scan, (pol, means))


@pytest.mark.slow
def test_runs_are_keyed_by_their_global_index():
    env, ch, p = jb.envs.bernoulli(MEANS), jb.channels.attributed(), classic.thompson()
    full = FP.simulate_fused(env, ch, p, 200, KEY, 16, record=20, block=8)
    tail = FP.simulate_fused(env, ch, p, 200, KEY, 8, record=20, block=8, first_run=8)
    np.testing.assert_array_equal(full.pulls[8:], tail.pulls)
    np.testing.assert_array_equal(full.regret[8:], tail.regret)


# ----------------------------------------------------------------------------- in-kernel samplers
def test_in_kernel_samplers_have_their_laws():
    """The generator and the samplers the kernels call, run as plain JAX: uniforms and normals (both
    of a Box-Muller pair, and by the inverse CDF) match their laws (Kolmogorov-Smirnov, p > 1e-3
    each); Gamma and Beta draws: test_sequential_gammas_have_their_laws_and_are_independent."""
    from scipy import stats

    import jax.numpy as jnp
    from jaxbandits.engine.fused import rng

    n = 5000
    lane = jnp.arange(n, dtype=jnp.uint32)
    k0, k1 = jnp.uint32(123), jnp.uint32(456)
    u, v = jax.jit(rng.uniforms2)(k0, k1, jnp.uint32(7), lane)
    z, z2 = jax.jit(rng.normal_pair)(k0, k1, jnp.uint32(8), lane)
    zi = rng.normal_icdf(u)
    assert stats.kstest(np.asarray(u), "uniform").pvalue > 1e-3
    assert stats.kstest(np.asarray(v), "uniform").pvalue > 1e-3
    assert abs(np.corrcoef(np.asarray(u), np.asarray(v))[0, 1]) < 0.06
    for x in (z, z2, zi):
        assert stats.kstest(np.asarray(x), "norm").pvalue > 1e-3
    assert abs(np.corrcoef(np.asarray(z), np.asarray(z2))[0, 1]) < 0.06  # the two of a Box-Muller pair
    # counters are keys: the same counter gives the same word, a neighbouring one another
    w = rng.threefry2x32(k0, k1, jnp.uint32(3), lane)
    assert np.array_equal(np.asarray(w[0]), np.asarray(rng.threefry2x32(k0, k1, jnp.uint32(3), lane)[0]))
    assert len(np.unique(np.asarray(w[0]))) == n
    # threefry-2x32 is jax.random's: its known-answer vector (Salmon et al. 2011, 20 rounds)
    got = rng.threefry2x32(jnp.uint32(0x13198A2E), jnp.uint32(0x03707344), jnp.uint32(0x243F6A88),
                           jnp.uint32(0x85A308D3))
    assert [int(g) for g in got] == [0xC4923A9C, 0x483DF7A0]


def test_sequential_gammas_have_their_laws_and_are_independent():
    """The lanes Thompson kernel's sampler (rng.gammas_in_sequence: a lane's proposals served to its
    variates in turn, normals by the inverse CDF): every variate has its Gamma law whatever its
    place in the sequence (KS against scipy, p > 1e-3, and the mean within 4 standard errors),
    variates of one lane are uncorrelated, and the Beta ratio of two has its law."""
    from scipy import stats

    import jax.numpy as jnp
    from jaxbandits.engine.fused import rng

    n = 4000
    lane_keys = jnp.arange(n, dtype=jnp.uint32)
    shapes = [1.0, 30.0, 2.5, 1.0, 400.0, 7.0]
    f = jax.jit(lambda k0: rng.gammas_in_sequence([jnp.full((n,), a, jnp.float32) for a in shapes], k0,
                                                  jnp.uint32(77), jnp.uint32(5), rng.max_proposals(len(shapes))))
    g = [np.asarray(x, np.float64) for x in f(lane_keys)]
    for a, x in zip(shapes, g):
        assert stats.kstest(x, stats.gamma(a).cdf).pvalue > 1e-3, a
        assert abs(x.mean() - a) < 4 * np.sqrt(a / n), a
    c = np.corrcoef(np.stack(g))
    assert np.abs(c[np.triu_indices(len(shapes), 1)]).max() < 0.07, c
    b = g[0] / (g[0] + g[1])  # Beta(1, 30)
    assert stats.kstest(b, stats.beta(1.0, 30.0).cdf).pvalue > 1e-3
    # the cap: never reached at 1e-18 per lane and round
    assert rng.max_proposals(20) < 60 and rng.max_proposals(20) > 20


def test_lanes_argmax_is_the_scan_tie_rule():
    """argmax_lanes on K vectors is mathlib.argmax_random_tie on each run's [K] vector, exact ties
    (many of them: values drawn from {0, 1, 2, inf}) and the uniform included."""
    import jax.numpy as jnp
    from jaxbandits import mathlib as M
    from jaxbandits.engine.fused.lanes import argmax_lanes

    rs = np.random.default_rng(0)
    K, n = 7, 5000
    vals = rs.choice(np.array([0.0, 1.0, 2.0, np.inf], np.float32), size=(n, K))
    u = rs.random(n).astype(np.float32)
    got = np.asarray(jax.jit(argmax_lanes)([jnp.asarray(vals[:, k]) for k in range(K)], jnp.asarray(u)))
    want = np.asarray(jax.jit(jax.vmap(M.argmax_random_tie))(jnp.asarray(vals), jnp.asarray(u)))
    np.testing.assert_array_equal(got, want)
    assert len(np.unique(got)) == K  # every arm is picked somewhere: the check has power


# ----------------------------------------------------------------------------- choosing the path
def test_auto_picks_fused_only_on_a_gpu_and_only_what_it_covers():
    env, ch = jb.envs.bernoulli(MEANS), jb.channels.attributed()
    pols = {"u": classic.ucb1(), "t": classic.thompson()}
    assert choose_path(env, ch, pols, "auto", backend="cpu") == "scan"
    assert choose_path(env, ch, pols, "auto", backend="gpu") == "fused"
    assert choose_path(env, ch, pols, "scan", backend="gpu") == "scan"
    assert choose_path(env, ch, pols, "fused", backend="cpu") == "fused"
    # one uncovered policy, a delay, another channel, chunks to resume: auto keeps the scan
    assert choose_path(env, ch, dict(pols, e=classic.exp3()), "auto", backend="gpu") == "scan"
    delayed = jb.envs.bernoulli(MEANS, jb.delays.fixed(2))
    assert choose_path(delayed, ch, pols, "auto", backend="gpu") == "scan"
    assert choose_path(env, jb.channels.action_time(), pols, "auto", backend="gpu") == "scan"
    assert choose_path(env, ch, pols, "auto", backend="gpu", resume=True) == "scan"
    law = jb.delays.geometric(mean=5.0)
    cenv, cch = jb.envs.conversions(MEANS, law), jb.channels.conversions(window=10)
    assert choose_path(cenv, cch, CV.delayed_klucb(law, 10), "auto", backend="gpu") == "fused"
    assert choose_path(cenv, cch, CV.delayed_klucb(law, 10, online=True), "auto", backend="gpu") == "scan"
    assert choose_path(cenv, cch, CV.discarding_klucb(law, 10), "auto", backend="gpu") == "scan"
    # the classic policies (and uniform random) on the conversions channel with a window, not without
    quick = {"u": classic.ucb1(), "k": classic.kl_ucb(), "t": classic.thompson(), "r": classic.uniform_random()}
    assert choose_path(cenv, cch, quick, "auto", backend="gpu") == "fused"
    assert choose_path(cenv, jb.channels.conversions(), quick, "auto", backend="gpu") == "scan"
    # a policy built for another law than the world's
    other = CV.delayed_klucb(jb.delays.geometric(mean=9.0), 10)
    assert choose_path(cenv, cch, other, "auto", backend="gpu") == "scan"
    # a law without a closed-form fused sampler
    penv = jb.envs.conversions(MEANS, jb.delays.poisson(4.0))
    assert choose_path(penv, cch, CV.delayed_klucb(jb.delays.poisson(4.0), 10), "auto", backend="gpu") == "scan"
    if jax.default_backend() != "gpu":  # on a CPU machine auto runs the scan
        assert choose_path(env, ch, pols) == "scan"


def test_forced_fused_names_what_it_does_not_cover():
    env = jb.envs.bernoulli(MEANS, jb.delays.fixed(2))
    pols = {"e": classic.exp3(), "u": classic.ucb1()}
    with pytest.raises(ValueError) as e:
        jb.simulate(env, jb.channels.attributed(), pols, 20, 0, 2, path="fused")
    msg = str(e.value)
    assert "path='fused'" in msg and "'e' (Exp3) has no fused kernel" in msg and "without delay" in msg
    law = jb.delays.poisson(4.0)
    with pytest.raises(ValueError, match="Poisson has no closed-form fused sampler"):
        jb.simulate(jb.envs.conversions(MEANS, law), jb.channels.conversions(window=5), CV.delayed_ucb(law, 5), 20,
                    0, 2, path="fused")
    with pytest.raises(ValueError, match="censoring window m >= 1"):
        law = jb.delays.geometric(mean=3.0)
        jb.simulate(jb.envs.conversions(MEANS, law), jb.channels.conversions(), CV.delayed_ucb(law), 20, 0, 2,
                    path="fused")
    for sb in (48, 0):  # checked before the path is chosen (a block that is not a power of two left runs unwritten)
        with pytest.raises(ValueError, match="stats_block must be"):
            jb.simulate(jb.envs.bernoulli(MEANS), jb.channels.attributed(), classic.ucb1(), 20, 0, 48, path="fused",
                        stats_block=sb)
    with pytest.raises(ValueError, match="path must be one of 'auto', 'fused', 'scan', got 'gpu'"):
        jb.simulate(env, jb.channels.attributed(), classic.ucb1(), 20, 0, 2, path="gpu")
    # the scan path's own checks come first, with its messages
    with pytest.raises(ValueError, match="n_runs"):
        jb.simulate(jb.envs.bernoulli(MEANS), jb.channels.attributed(), classic.ucb1(), 20, 0, 0, path="fused")
    # a direct call of the fused backend names the same reasons (it was an AttributeError on None)
    from jaxbandits.engine.fused import simulate_fused

    with pytest.raises(ValueError, match=r"simulate_fused: .*'e' \(Exp3\) has no fused kernel"):
        simulate_fused(env, jb.channels.attributed(), pols, 20, jax.random.key(0), 2)


def test_cli_path_flag(capsys):
    from jaxbandits.apps.cli import main

    assert main(["run", "vernade2017-fig1", "--path", "gpu"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("jaxbandits run: error: argument --path") and "'gpu'" in err and "Traceback" not in err
    from jaxbandits import experiments as X

    sweeps = [n for n in X.names() if X.get(n).runner is not None]
    assert sweeps
    with pytest.raises(ValueError, match="sweep or study with its own loop: each of its simulations takes the path .auto. picks"):
        X.run(sweeps[0], runs=1, path="fused")


# ----------------------------------------------------------------------------- CUDA lowering
def _plugin_path():
    """A folder holding jax-cuda12-plugin (as .ci/run installs it), or '' when it is installed in
    this environment; None when it is nowhere."""
    d = os.environ.get("JAXBANDITS_CUDA_PLUGIN_DIR") or os.path.join(sys.prefix, "cuda-plugin")
    if os.path.isdir(os.path.join(d, "jax_plugins", "xla_cuda12")):
        return d
    if importlib.util.find_spec("jax_plugins") is not None and importlib.util.find_spec("jax_plugins.xla_cuda12"):
        return ""
    return None


def _lower(*flags):
    d = _plugin_path()
    if d is None:
        pytest.skip("jax-cuda12-plugin is not installed, so the CUDA lowering of the fused kernels is NOT checked: "
                    "install it as .ci/run does (pip install --no-deps --target .venv/cuda-plugin "
                    "jax-cuda12-plugin==<jaxlib version> jax-cuda12-pjrt==<jaxlib version>)")
    env = dict(os.environ, JAX_PLATFORMS="cpu",
               PYTHONPATH=os.pathsep.join(p for p in (str(ROOT), d, os.environ.get("PYTHONPATH", "")) if p))
    r = subprocess.run([sys.executable, "-m", "jaxbandits.engine.fused.lowering", *flags],
                       capture_output=True, text=True, env=env, cwd=ROOT, timeout=1200)
    recs = [json.loads(line) for line in r.stdout.splitlines() if line.startswith("{")]
    assert recs, r.stderr[-3000:]
    bad = [x for x in recs if not (x["ok"] and x["triton"])]
    assert not bad, bad
    assert r.returncode == 0, r.stderr[-3000:]
    return recs


def test_every_fused_kernel_lowers_to_triton_for_cuda():
    recs = _lower()
    kernels = {x["kernel"].split("/")[0] for x in recs}
    assert kernels == {"UCB1", "KL-UCB", "Thompson", "Gaussian-TS", "d-ucb", "d-klucb"}
    # the lowered program is the kernel alone: XLA allocates nothing but its arguments and results
    assert all(x["ops"] == ["custom_call"] for x in recs), {x["kernel"]: x["ops"] for x in recs}


def test_fused_device_memory_is_the_records_plus_the_state():
    """At the benchmark's sizes (lowered for CUDA, nothing allocated): the program's buffers are the
    per-run keys, the records (regret and reward f32, pulls as int32: K = 10 rows a record point in
    the lanes layout) and, on the conversions channel, the calendar and the ring (``Wp (1 + ceil(K / 4))``
    int32 words a run, ``Wp = 1024`` for m = 1000) plus the lost counts."""
    recs = {x["kernel"]: x for x in _lower("--memory")}
    n, R = 1_000_000 + 64, 200  # runs padded to the block of 128
    for name in ("UCB1", "KL-UCB", "Thompson"):
        b = recs[name]["bytes"]
        assert recs[name]["ops"] == ["custom_call"]
        assert b["records"] == n * R * 4 * (2 + 10) and b["work_space"] == 0  # lanes layout: no arm padding
        assert b["arguments"] == 4 * n * 4 + 16 * 4 + R * 4  # four key words a run, means, record rounds
    d = recs["DelayedKLUCB/m=1000"]["bytes"]
    n = 100_000 + 96  # runs padded to the block of 128
    assert d["records"] == n * R * 4 * (3 + 10)
    assert d["work_space"] == n * 4 * (1 + 1024 * (1 + 3))  # the ring and ceil(K / 4) = 3 calendar words a row


@pytest.mark.slow
def test_every_fused_kernel_lowers_for_several_shapes():
    recs = _lower("--all")
    assert len({json.dumps(x["shape"]) for x in recs}) >= 4 and len(recs) >= 40


def test_every_library_algorithm_is_fused_or_says_why():
    """The coverage table (``python -m jaxbandits.engine.fused.lowering --coverage``, docs/fused.md): each
    algorithm of the library in the world and channel it is built for, whether the fused path takes
    it (the kernels of those that do are lowered for CUDA by the tests above), and why not."""
    from jaxbandits.engine.fused.lowering import policy_coverage

    cov = policy_coverage()
    assert {r["policy"] for r in cov if r["fused"]} == {"UCB1", "KL-UCB", "Thompson", "Gaussian-TS", "uniform random",
                                                         "DelayedUCB", "DelayedKLUCB"}
    for r in cov:
        assert r["fused"] or (r["reasons"] and r["why"]), r
    papers = {"Exp3", "DEW", "Skipper(DEW)", "Doubling", "ODAAF", "ODAAF-B", "ODAAF-V", "QPM-D", "Discarding-UCB",
              "Discarding-KLUCB", "OTFLinUCB", "OTFLinTS", "ARS-UCB", "ARS-EXP3", "CLW", "ARS-CLW", "delay-model TS"}
    assert papers <= {r["policy"] for r in cov}


# ----------------------------------------------------------------------------- static work per round
#: operations per round of each lanes kernel at K = 10 (tests/fused_work.py, measured 2026-11-27 with
#: jax 0.10.2): a change that adds work to a round shows here without a GPU. Raise a budget only
#: with a measurement on a GPU that the kernel did not get slower (docs/fused.md, "Work per round").
DUCB_OPS, DKLUCB_OPS = 948, 2908  # the calendar kernels (m = 1000, geometric delays): 15 memory accesses a round
WORK_BUDGET = {"UCB1": 443, "KL-UCB": 1803, "Thompson": 414, "Gaussian-TS": 1088, "random": 258,
               "Thompson 32x1": 414, "d-ucb": DUCB_OPS, "d-klucb": DKLUCB_OPS}
#: one pass of Thompson's proposal loop (a round runs about 2K of them)
THOMPSON_PROPOSAL_BUDGET = 304


def test_work_per_round_is_the_anchors_and_does_not_grow():
    """The static work of every lanes kernel, read from its lowered Triton module (the body of the
    rounds loop, operations counted through jaxlib's MLIR bindings), stays within its recorded
    budget (+5%), and UCB1's, traced from the policy module's own index, is the hand-written minimal
    Pallas anchor's (benchmarks/anchors.py) within 5%: on an H200 the two ran at 5.74e10 and
    5.79e10 run-steps/s (docs/benchmarks.md)."""
    d = _plugin_path()
    if d is None:
        pytest.skip("jax-cuda12-plugin is not installed: the kernels' work per round is NOT checked")
    env = dict(os.environ, JAX_PLATFORMS="cpu",
               PYTHONPATH=os.pathsep.join(p for p in (str(ROOT), d, os.environ.get("PYTHONPATH", "")) if p))
    r = subprocess.run([sys.executable, str(ROOT / "tests" / "fused_work.py")], capture_output=True, text=True,
                       env=env, cwd=ROOT, timeout=600)
    lines = [x for x in r.stdout.splitlines() if x.startswith("{")]
    assert r.returncode == 0 and lines, r.stderr[-3000:]
    work = json.loads(lines[-1])
    for name, budget in WORK_BUDGET.items():
        assert work[name]["round_ops"] <= 1.05 * budget, (name, work[name], budget)
        assert work[name]["round_ops"] >= 0.5 * budget, (name, work[name])  # the count still finds the loop
    assert work["Thompson"]["inner_loop_ops"] <= 1.05 * THOMPSON_PROPOSAL_BUDGET, work["Thompson"]
    assert abs(work["UCB1"]["round_ops"] / work["anchor UCB1"]["round_ops"] - 1) < 0.05, work
    # the kernels keep their state in registers: no memory access inside a round, but the calendar
    # kernels' (read and clear ceil(K / 4) = 3 calendar words, insert one, write and read the ring)
    assert all(w["round_memory"] == 0 for k, w in work.items() if not k.startswith("d-")), work
    assert all(w["round_memory"] <= 15 for k, w in work.items() if k.startswith("d-")), work
    assert work["Thompson 32x1"] == work["Thompson"]  # the GPU launch lowers, to the same loop body


def test_the_pallas_anchor_is_the_librarys_ucb1_bit_for_bit():
    """benchmarks/anchors.py's minimal lanes-layout UCB1 (written without the library, the GPU
    check's hardware-pace reference) and the library's fused UCB1 read the same threefry words and
    apply the same tie rule: the same regret records, bit for bit (interpreted here), so the
    anchor's speed is the speed of this algorithm."""
    import importlib.util

    import jax.numpy as jnp

    spec = importlib.util.spec_from_file_location("anchors", ROOT / "benchmarks" / "anchors.py")
    anchors = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(anchors)
    K, T, n = 4, 300, 64
    mu = np.linspace(0.1, 0.9, K).astype(np.float32)
    rec = np.array([99, 199, 299], np.int32)
    ke0, ke1, _, _ = FP.run_keys_words(KEY, jnp.arange(n, dtype=jnp.int32))
    f = anchors.pallas_ucb1(n, K, len(rec), block=32, interpret=True)
    got = np.asarray(f(jnp.asarray(mu), jnp.asarray(rec), ke0, ke1))
    out = jb.simulate(jb.envs.bernoulli(mu), jb.channels.attributed(), classic.ucb1(), T, KEY, n, record=100,
                      path="fused", keep="all")
    np.testing.assert_array_equal(got.T, out.regret)
    assert got[-1].std() > 0  # runs differ: the check bites


def test_statistics_reduced_by_groups_of_record_points_are_the_same(monkeypatch):
    """The fused path reduces its records on the device by groups of record points (bounded
    float64 temporaries, small programs, as the scan path's chunks): any grouping gives bitwise
    the same statistics."""
    from jaxbandits.engine import reduce as RD

    env, ch = jb.envs.bernoulli(MEANS), jb.channels.attributed()
    pols = {"u": classic.ucb1(), "k": classic.kl_ucb()}
    whole = jb.simulate(env, ch, pols, 120, KEY, 64, record=10, path="fused")
    # a record point of both policies takes 2 x 4 bytes x 64 runs x (4 + K) = 3584 bytes: groups of 5, 5, 2
    monkeypatch.setattr(RD, "CHUNK_RECORD_BYTES", 18000)
    grouped = jb.simulate(env, ch, pols, 120, KEY, 64, record=10, path="fused")
    for lab in pols:
        fa, fb = whole[lab].stats.to_flat(), grouped[lab].stats.to_flat()
        assert sorted(fa) == sorted(fb)
        for k in fa:
            np.testing.assert_array_equal(fa[k], fb[k], err_msg=k)
