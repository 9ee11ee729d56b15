"""Checks of the *kinds* that random mutants showed missing, fifth part (d) (docs/contributing.md,
"Mutation testing"; the earlier parts are tests/test_kinds*.py): each test is a kind of check
applied to every case it covers, not a test aimed at one mutated line.

* a law in the fast suite: the fused kernels fed the scan path's uniforms take the scan's actions
  and record its regret, reward and expected regret (the slow tests of tests/test_fused.py do this
  at size; here one tiny default case per kernel family: uniform random in a world whose
  only best arm is arm 0, DelayedUCB with a tau-table delay law);
* independent computations: uniform play's expected regret ``(t + 1)(max mu - mean mu)`` on both
  paths; ``bytes_to_host`` grown by exactly the bytes of the arrays one more run or the kept curves
  add; ``compile_s`` bounded by the call's wall time; a log-normal's floored variance and the
  zeta-normalised polynomial profile against scipy at tolerances that resolve their last terms;
* the whole distribution: the fused uniform-random policy's pulls over every arm;
* every documented form run once: every ``shard`` form against the fused path's choice, the
  progress bar of a multi-process run (process 0 only);
* a stated default pinned (simulate_fused's defaults are simulate's), every bound at the bound
  (delay-law parameters), an error message read whole (the held folder names its holder's pid).
"""
import fcntl
import inspect
import math
import os
import time

import jax
import numpy as np
import pytest
import scipy.special as SS
import scipy.stats as SST

import jaxbandits as jb
from jaxbandits import delays
from jaxbandits.core import fileio
from jaxbandits.core import profiles as Pr
from jaxbandits.engine.fused import path as FP
from jaxbandits.experiments import distributed as DIST
from jaxbandits.policies import classic
from jaxbandits.policies import conversions as CV

KEY = jax.random.key(5)
MU0 = [0.6, 0.5, 0.4]  # arm 0 the only best arm (an uneven case: the usual worlds put the best last)
N, T = 6, 40  # interpreted Pallas on the CPU is slow: tiny sizes, one program shared by several checks
CLASSIC = {"random": classic.uniform_random()}  # the index kernels' replay: tests/test_fused.py (KL-UCB)


# ------------------------------------------------------------------- a law in the fast suite
@pytest.fixture(scope="module")
def classic_replay():
    """The classic kernels (uniform random) fed the scan path's uniforms, and the scan's runs."""
    env, ch = jb.envs.bernoulli(MU0), jb.channels.attributed()
    t0 = time.perf_counter()
    rep = FP.simulate_fused(env, ch, CLASSIC, T, KEY, N, record=1, keep="all", replay=FP.scan_uniforms(KEY, N, T))
    wall = time.perf_counter() - t0
    scan = jb.simulate(env, ch, CLASSIC, T, KEY, N, record=1, keep="all", path="scan")
    return rep, scan, wall


def test_every_classic_kernel_replaying_the_scan_draws_takes_its_actions(classic_replay):
    """The fused kernel of uniform random, fed the scan's reward and tie uniforms, take the
    scan's actions in every run and round and record its regret (against arm 0, the only best arm),
    reward and expected regret: the arm map, the best mean and the expected regret are the scan's."""
    rep, scan, _ = classic_replay
    for lab in CLASSIC:
        np.testing.assert_array_equal(rep[lab].pulls, scan[lab].pulls, err_msg=lab)
        np.testing.assert_array_equal(rep[lab].reward, scan[lab].reward, err_msg=lab)
        np.testing.assert_allclose(rep[lab].regret, scan[lab].regret, rtol=1e-6, atol=1e-5, err_msg=lab)
        np.testing.assert_allclose(rep[lab].expected_regret, scan[lab].expected_regret, rtol=1e-5, atol=1e-5,
                                   err_msg=lab)
    # the check bites: every arm is played by uniform random, and arm 0 is played
    assert (rep["random"].pulls[:, -1] > 0).all()


def test_every_regret_is_against_the_gaps_written_out(classic_replay):
    """Independent computation: the regret of every run and round is ``sum_k pulls_k (max mu - mu_k)``
    with the gaps written out (the best arm is arm 0), on both paths."""
    rep, scan, _ = classic_replay
    gaps = max(MU0) - np.asarray(MU0)
    for out in (rep, scan):
        for lab in CLASSIC:
            want = np.asarray(out[lab].pulls, np.float64) @ gaps
            np.testing.assert_allclose(out[lab].regret, want, rtol=1e-5, atol=1e-5, err_msg=lab)


def test_uniform_plays_expected_regret_is_t_plus_1_times_the_mean_gap(classic_replay):
    """Independent computation: uniform play's expected regret after round t is
    ``(t + 1)(max mu - mean mu)`` in every run, on both paths."""
    rep, scan, _ = classic_replay
    want = np.arange(1, T + 1) * (max(MU0) - np.mean(MU0))
    for out in (rep["random"], scan["random"]):
        np.testing.assert_array_equal(out.t, np.arange(1, T + 1))
        np.testing.assert_allclose(out.expected_regret, np.broadcast_to(want, (N, T)), rtol=1e-5)


def test_every_delayed_kernel_with_a_tau_table_law_replays_the_scan():
    """DelayedUCB under a Weibull delay law (not geometric: Ñ is the tau-table sum, the play of the
    round itself weighted by ``tau_0 = P(D <= 0)``), fed the scan path's uniforms, takes the scan's
    actions in every run (tiny: a near tie that float order could flip is unlikely at this size)."""
    law = delays.weibull(0.7, 8.0)
    env, ch = jb.envs.conversions([0.2, 0.35, 0.5], law), jb.channels.conversions(window=10)
    pol = CV.delayed_ucb(law, 10)
    n, t = 4, 24
    scan = jb.simulate(env, ch, pol, t, KEY, n, record=1, keep="all", path="scan")
    rep = FP.simulate_fused(env, ch, pol, t, KEY, n, record=1, keep="all", replay=FP.scan_uniforms(KEY, n, t))
    np.testing.assert_array_equal(rep.pulls, scan.pulls)
    np.testing.assert_array_equal(rep.reward, scan.reward)
    np.testing.assert_allclose(rep.delayed_regret, scan.delayed_regret, rtol=1e-5, atol=1e-4)
    assert float(law.cdf(0)) > 0.1  # tau_0 weighs: the check bites


# ------------------------------------------------------------ the whole distribution; one program
@pytest.fixture(scope="module")
def fused_random():
    """The fused uniform-random kernel with its own generator, 32 runs (one interpreted block)."""
    env, ch = jb.envs.bernoulli(MU0), jb.channels.attributed()
    return env, ch, jb.simulate(env, ch, classic.uniform_random(), T, KEY, 32, record=1, keep="all", path="fused")


def test_the_fused_random_policys_pulls_are_uniform_over_every_arm(fused_random):
    """The whole distribution: 32 x 40 uniform plays put each arm's count within 5 binomial standard
    deviations of 1/K of them, and every round plays one arm."""
    _, _, out = fused_random
    p = np.asarray(out.pulls)
    assert (p[:, -1].sum(-1) == T).all()
    n = p[:, -1].sum(0)
    tot, K = n.sum(), len(MU0)
    sd = math.sqrt(tot * (1 / K) * (1 - 1 / K))
    assert (np.abs(n - tot / K) < 5 * sd).all(), n


# ------------------------------------------------------------------- every documented form run once
@pytest.mark.parametrize("shard,fused", [(None, True), (False, True), (1, True), (True, True), (2, False)])
def test_every_shard_form_against_the_fused_paths_choice(fused_random, shard, fused):
    """``shard`` (docs: None, True, False or a count): None, False, 1 and True (all local devices: one
    here) run fused; a count above 1 asks for several devices, which the fused path does not cover
    and names."""
    env, ch, ref = fused_random
    why = FP.unsupported(env, ch, classic.uniform_random(), shard=shard)
    if fused:
        assert why == []
        out = jb.simulate(env, ch, classic.uniform_random(), T, KEY, 32, record=1, keep="all", path="fused",
                          shard=shard)
        assert out.timing["path"].startswith("fused")
        np.testing.assert_array_equal(out.pulls, ref.pulls)
    else:
        assert why == [f"shard={shard!r}: the fused path runs on one device"]



def test_shard_true_over_several_devices_is_named_unsupported(monkeypatch):
    """``shard=True`` means every local device: over several it is not the fused path's one device
    (it was taken as ``shard=1``, since ``True == 1`` in Python, and run silently on one)."""
    env, ch = jb.envs.bernoulli(MU0), jb.channels.attributed()
    assert FP.unsupported(env, ch, classic.uniform_random(), shard=True) == []
    monkeypatch.setattr(jax, "local_device_count", lambda *a, **k: 4)
    assert FP.unsupported(env, ch, classic.uniform_random(), shard=True) == [
        "shard=True over 4 devices: the fused path runs on one device"]
    assert FP.unsupported(env, ch, classic.uniform_random(), shard=1) == []


def test_progress_bar_is_shown_by_process_0_of_a_multi_process_run_only(monkeypatch, capsys):
    """A run over the devices of every process with ``progress=True``: process 0 writes the bar to
    stderr, any other process writes none (here one process, its index stubbed)."""
    env, ch = jb.envs.bernoulli(MU0), jb.channels.attributed()
    seen = {}
    for me in (0, 1):
        monkeypatch.setattr(jax, "process_index", lambda me=me: me)
        capsys.readouterr()
        DIST.simulate_global(env, ch, classic.uniform_random(), 20, KEY, 8, record=2, progress=True, keep="none")
        seen[me] = capsys.readouterr().err
    assert "simulate" in seen[0] and "round" in seen[0], seen[0]
    assert "simulate" not in seen[1] and "round" not in seen[1], seen[1]


# ------------------------------------------------------------------------ a stated default pinned
def test_simulate_fused_defaults_are_simulates(fused_random):
    """Every parameter simulate_fused shares with jaxbandits.simulate (whose defaults its docstring
    says it follows) has simulate's default; ``n_runs`` left out runs one run."""
    a = inspect.signature(FP.simulate_fused).parameters
    b = inspect.signature(jb.simulate).parameters
    shared = sorted(set(a) & set(b) - {"env", "channel", "policies", "horizon", "key"})
    assert "n_runs" in shared and "record" in shared
    for p in shared:
        assert a[p].default == b[p].default, p
    env, ch, _ = fused_random
    out = FP.simulate_fused(env, ch, classic.uniform_random(), T, KEY, record=1, keep="all")
    assert out.pulls.shape == (1, T, len(MU0))


# --------------------------------------------------------------------- independent computations
@pytest.mark.parametrize("path", ["fused", "scan"])
def test_bytes_to_host_grow_by_the_bytes_of_every_array_added(path):
    """``bytes_to_host`` is the bytes copied to the host: one more run (in the same statistics block
    and padding) adds exactly the bytes of its final values (every metric's and ``lost_to_W``); on the
    fused path, which copies only the kept runs, ``keep='all'`` adds exactly the returned curves."""
    env, ch = jb.envs.bernoulli(MU0), jb.channels.attributed()
    b, outs = {}, {}
    for n in (4, 5):
        for keep in ("none", "all"):
            o = jb.simulate(env, ch, classic.uniform_random(), T, KEY, n, record=1, path=path, keep=keep,
                            stats_block=8)
            b[n, keep], outs[n, keep] = o.timing["bytes_to_host"], o
    o = outs[5, "all"]
    mets = ["regret", "expected_regret", "reward"] + (["delayed_regret"] if o.delayed_regret is not None else [])
    per_run = sum(np.asarray(o.final(m)).itemsize for m in mets) + o.lost_to_W.itemsize
    assert per_run == 16  # three float32 metrics and an int32: the check bites
    assert b[5, "none"] - b[4, "none"] == per_run, b
    if path == "fused":
        for n in (4, 5):
            o = outs[n, "all"]
            curves = sum(getattr(o, f).nbytes for f in ("regret", "expected_regret", "reward", "pulls",
                                                         "delayed_regret") if getattr(o, f) is not None)
            assert b[n, "all"] - b[n, "none"] == curves


def test_compile_s_is_bounded_by_the_calls_wall_time(classic_replay):
    """Independent computation: a call's ``compile_s`` (and each program's) lies in
    ``[0, wall time of the call]``, on a cold compile of both paths (the scan with a shape no other
    test compiles)."""
    _, _, wall = classic_replay
    rep, _, _ = classic_replay
    assert 0 < rep["random"].timing["compile_s"] <= wall
    env, ch = jb.envs.bernoulli(MU0), jb.channels.attributed()
    t0 = time.perf_counter()
    out = jb.simulate(env, ch, classic.ucb1(), 29, KEY, 3, record=1, path="scan", keep="none")
    wall = time.perf_counter() - t0
    by = out.timing["compile_s_by_program"]
    assert 0 < out.timing["compile_s"] <= wall
    assert all(0 <= s <= wall for s in by.values()), by
    assert math.isclose(sum(by.values()), out.timing["compile_s"], rel_tol=1e-9, abs_tol=1e-9)


def test_a_narrow_log_normals_floored_variance_is_resolved():
    """Independent computation at a tolerance that resolves the moment sum's tail (cut at 5e6 terms,
    the rest in closed form): ``X = exp(mu + sigma Z)`` around 6e6 and 8e6, whose mass lies mostly
    past the cut; ``floor(X)``'s mean is ``E[X] - 1/2`` and its variance ``Var X + 1/12`` up to terms
    far below float64 (the density is smooth on a scale of 1e4 or more), scipy's lognorm."""
    for mu, s in [(math.log(6e6), 0.01), (math.log(8e6), 0.05)]:
        law = delays.log_normal(mu, s)
        x = SST.lognorm(float(law.sigma), scale=math.exp(float(law.mu)))  # the law's own float32 values
        assert math.isclose(float(law.mean), x.mean() - 0.5, rel_tol=1e-12)
        assert math.isclose(float(law.variance), x.var() + 1 / 12, rel_tol=1e-9), (mu, s)


@pytest.mark.parametrize("g", [1.01, 1.1, 1.5, 2.0, 3.0])
def test_polynomial_profiles_zeta_resolves_its_last_term(g):
    """Independent computation: ``polynomial(g, tail='drop')`` keeps ``l^-g / zeta(g)`` unrenormalised,
    so its weights are scipy's zeta-normalised power law to float64 rounding (rtol 1e-14; the
    Euler-Maclaurin sum's last term is 1e-13..1e-11 relative), and its tail mass is what they leave."""
    p = Pr.polynomial(g, tail="drop", max_len=64)
    l = np.arange(1, 64, dtype=np.float64)
    want = l**-g / SS.zeta(g)
    assert p.weights[0] == 0.0
    np.testing.assert_allclose(p.weights[1:], want, rtol=1e-14, atol=0)
    assert abs(p.tail_mass - (1 - want.sum())) < 1e-14


# ------------------------------------------------------------------------- every bound at the bound
@pytest.mark.parametrize("make,at,past", [
    (lambda v: delays.weibull(v, 8.0), 0.01, np.nextafter(0.01, 0)),  # "k >= MIN_WEIBULL_SHAPE (0.01)"
    (lambda v: delays.log_normal(v, 1.0), 100.0, np.nextafter(100.0, 200)),  # "|mu| <= 100"
    (lambda v: delays.log_normal(v, 1.0), -100.0, np.nextafter(-100.0, -200)),
    (lambda v: delays.log_normal(0.0, v), 15.0, np.nextafter(15.0, 20)),  # "sigma in (0, 15]"
], ids=["weibull-shape", "log_normal-mu-hi", "log_normal-mu-lo", "log_normal-sigma"])
def test_every_delay_law_bound_its_docstring_states_is_its_check_at_the_bound(make, at, past):
    """Every bound at the bound: the value the docstring states is accepted, the next float past it
    refused with an error naming the parameter."""
    make(at)
    with pytest.raises(ValueError):
        make(float(past))


# ---------------------------------------------------------------------- an error message read whole
def test_a_held_folders_error_names_its_holders_pid(tmp_path):
    """An error message read whole: a folder whose lock another process holds (simulated in-process:
    an open file description of the lock file holding the lock, the holder's pid written in it as a
    run writes its own) is refused with the holder's pid and the lock file named."""
    out = tmp_path / "res"
    out.mkdir()
    lock = os.path.realpath(out / fileio.LOCK_NAME)
    holder = os.getppid()  # a live pid other than ours
    fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        os.write(fd, f"{holder}\n".encode())
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        with pytest.raises(fileio.FolderInUseError) as e:
            with fileio.output_folder(out):
                pass
    finally:
        os.close(fd)
    assert str(e.value) == (f"output folder {os.fspath(out)!r}: in use by another jaxbandits run (pid {holder}, "
                            f"lock {lock}); wait for it to end or choose another output folder")
