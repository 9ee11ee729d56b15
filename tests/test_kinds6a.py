"""Checks of the *kinds* that the third random sample's survivors showed missing, sixth part (a)
(docs/contributing.md, "Mutation testing"): each test is a kind of check applied to every case it
covers, not a test aimed at one mutated line.

* every documented form run once: every time unit of a timestamp log against the duration computed
  by hand; every form of ``--set`` on an experiment file (a top key, a nested key, a list entry in
  range and out of range, an unknown key); every key ``show`` lists is one ``--set`` takes (flat
  and [[panels]] files); every form of a serve config file (TOML/JSON, limits in [serve] or not);
* every bound at the bound: every integer and positive argument of ``bayes.calibration.sbc``; the
  online learner's default pending ring at every small window (window 0: one slot); the exploration
  floor under every mask of three arms (one allowed arm included) and on a one-armed world; Exp3's
  law under every mask when weights underflow; the disk-full rule's free-space bound; a stop at
  every chunk boundary (the last included); a list config key at its shortest;
* a stated default pinned: ``engine.problem``'s ``n_runs = 1``, with a given width at the calendar
  budget's bound for one run;
* an independent computation: the fused Gamma sampler against Marsaglia-Tsang at the stated Threefry
  counters; the anonymous learner's aggregate; the memory estimate with and without L(t); a panel
  experiment's run time; every entry of the ODAAF schedules;
* the whole distribution: the number of actions of a linear world with varying action sets; drifting
  synthetic labels; the fused Thompson indices at many arms;
* a figure's drawn data read back: the ``evaluate`` forest plot;
* an uneven size: switching worlds with P != K phases; the dashboard's delay-law weights with a
  pending ring longer than the law's table; an empty batch of feedback in every form;
* a fixed-feature linear world built from a traced parameter (a grid's build).
"""
import itertools
import json
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxbandits import channels, engine, envs
from jaxbandits.bayes import calibration as CAL
from jaxbandits.core.types import Context, ProblemSpec
from jaxbandits.delaymodels import logs as L
from jaxbandits.experiments import files as F
from jaxbandits.online.state import configure
from jaxbandits.policies import anonymous as AN
from jaxbandits.policies import classic
from jaxbandits.policies import explore as X


# ------------------------------------------------------------------ every documented form run once
#: Seconds in each documented time unit (load_log's docstring: "ms" "s" "min" "h" "D" "W"; "d" is
#: accepted as "D"), written out by hand.
SECONDS = {"ms": 0.001, "s": 1.0, "min": 60.0, "h": 3600.0, "D": 86400.0, "d": 86400.0, "W": 604800.0}


def test_every_time_unit_of_a_timestamp_log_against_the_duration_by_hand():
    """One decision at 2024-03-01 00:00, converted one week and 90 minutes later, observed two weeks
    after it: in every unit the delay is that duration over the unit's seconds, the cutoff two
    weeks'; the set of units is the documented one."""
    assert set(L.TIME_UNITS) == set(SECONDS)
    delay_s, cut_s = 7 * 86400 + 90 * 60, 14 * 86400
    for unit, sec in SECONDS.items():
        log = L.load_log({"arm": [0, 1], "play_time": ["2024-03-01 00:00", "2024-03-01 00:00"],
                          "conversion_time": ["2024-03-08 01:30", None],
                          "cutoff": ["2024-03-15 00:00", "2024-03-15 00:00"]}, time_unit=unit)
        assert log.time_unit == unit
        assert np.asarray(log.play_time, np.float64).tolist() == [0.0, 0.0], unit
        ct = np.asarray(log.conversion_time, np.float64)
        assert ct[0] == pytest.approx(delay_s / sec, rel=1e-12) and np.isnan(ct[1]), (unit, ct)
        assert np.asarray(log.cutoff, np.float64) == pytest.approx([cut_s / sec] * 2, rel=1e-12), unit


_FILE = ('horizon = 100\nworld = {kind = "envs.bernoulli", means = [0.5, 0.4]}\n'
         'channel = {kind = "channels.attributed"}\n[policies]\n'
         'UCB1 = {kind = "classic.ucb1", alpha = 2.0}\n')


def test_every_form_of_set_on_an_experiment_file(tmp_path):
    """``--set``: a top key, a nested key, a list entry (each entry of the list, the others kept;
    the experiment built from it holds the new value); a list entry past the end and an unknown key
    are refused with the message read whole."""
    path = tmp_path / "e.toml"
    path.write_text(_FILE)
    doc, _ = F.read(str(path), {"horizon": 50, "policies.UCB1.alpha": 1.5})
    assert doc["horizon"] == 50 and doc["policies"]["UCB1"]["alpha"] == 1.5
    for i in range(2):
        doc, _ = F.read(str(path), {f"world.means.{i}": 0.7})
        want = [0.5, 0.4]
        want[i] = 0.7
        assert doc["world"]["means"] == want, i
    exp = F.experiment(str(path), {"world.means.1": 0.7})  # built: the world holds the new means
    env = exp.build(exp.config)[0].env
    assert env == envs.bernoulli([0.5, 0.7])
    doc, _ = F.read(str(path), {"policies.UCB1.alpha": 3.0})
    assert doc["policies"]["UCB1"] == {"kind": "classic.ucb1", "alpha": 3.0}
    for k in ("world.means.2", "world.means.5"):
        with pytest.raises(F.FileError) as e:
            F.read(str(path), {k: 0.7})
        assert str(e.value) == f"--set {k}: no entry {k.rsplit('.', 1)[1]} in world.means (length 2)"
    with pytest.raises(F.FileError) as e:
        F.read(str(path), {"world.nope.x": 1})
    assert str(e.value) == (f"--set world.nope.x: {path} has no key 'world.nope.x' (dotted keys of the file, e.g. "
                            "horizon, world.delay.mean, policies.UCB1.alpha)")


_PANELS = """horizon = 60
runs = 2
[[panels]]
name = "a"
world = {kind = "envs.bernoulli", means = [0.5, 0.4]}
channel = {kind = "channels.conversions", window = 9}
policies = {UCB1 = {kind = "classic.ucb1", alpha = 2.0}}
[[panels]]
name = "b"
world = {kind = "envs.bernoulli", means = [0.6, 0.4]}
channel = {kind = "channels.attributed"}
policies = {UCB1 = {kind = "classic.ucb1"}}
"""


@pytest.mark.parametrize("text", [_FILE, _PANELS], ids=["flat", "panels"])
def test_every_key_that_show_lists_is_a_key_that_set_takes(tmp_path, text):
    """``jaxbandits show FILE.toml`` lists "settable keys (--set DOTTED.KEY=VALUE)": for a flat file
    and a file of [[panels]], the listed keys are every parameter (one row per value, in the file's
    order), and each, given to ``--set`` with a new value, is accepted and changes that value only."""
    path = tmp_path / "e.toml"
    path.write_text(text)
    doc, _ = F.read(str(path))
    rows = F.settable_keys(doc)
    if text is _PANELS:
        assert [(k, v) for k, v, _ in rows] == [
            ("horizon", 60), ("runs", 2), ("panels.0.world.means", [0.5, 0.4]), ("panels.0.channel.window", 9),
            ("panels.0.policies.UCB1.alpha", 2.0), ("panels.1.world.means", [0.6, 0.4])]
    else:
        assert [(k, v) for k, v, _ in rows] == [("horizon", 100), ("world.means", [0.5, 0.4]),
                                                 ("policies.UCB1.alpha", 2.0)]
    for k, v, _ in rows:
        new = [0.3, 0.2] if isinstance(v, list) else v + 1
        got, _ = F.read(str(path), {k: new})
        path_k = tuple(int(p) if p.isdigit() else p for p in k.split("."))
        assert F.get_path(got, path_k) == new, k
        assert {kk: vv for kk, vv, _ in F.settable_keys(got) if kk != k} == {kk: vv for kk, vv, _ in rows if kk != k}


def test_every_documented_form_of_a_serve_config_file(tmp_path):
    """``load_config``: a TOML file and a JSON file, each with its limits at the top and in their
    own ``[serve]`` table (load_config's docstring), give one config: the arms, policy, channel
    and every limit as written."""
    pytest.importorskip("fastapi")
    from jaxbandits.apps import serve

    head = {"arms": ["a", "b"], "policy": {"name": "ucb1"}, "channel": {"kind": "conversions", "window": 7}}
    limits = {"max_batch": 100, "seed": 3, "max_pending": 20}
    toml_head = 'arms = ["a", "b"]\n[policy]\nname = "ucb1"\n[channel]\nkind = "conversions"\nwindow = 7\n'
    toml_lim = "".join(f"{k} = {v}\n" for k, v in limits.items())
    files = {"flat.toml": toml_lim + toml_head, "table.toml": toml_head + "[serve]\n" + toml_lim,
             "flat.json": json.dumps({**head, **limits}), "table.json": json.dumps({**head, "serve": limits})}
    for name, text in files.items():
        f = tmp_path / name
        f.write_text(text)
        cfg = serve.load_config(str(f))
        got = {k: getattr(cfg, k) for k in (*head, *limits)}
        assert got == {**head, **limits}, name


# ------------------------------------------------------------------------- every bound at the bound
class _Stop(Exception):
    """Raised by a stand-in once validation has passed: nothing compiles or samples."""


#: sbc's integer arguments and their stated lowest values (its code and docstring), and its
#: positive ones.
SBC_LOWEST = {"n_reps": 2, "n_draws": 1, "thin": 1, "num_warmup": 1, "n_plays": 1, "n_arms": 1}
SBC_POSITIVE = ("span", "delay_scale")


def test_every_bound_of_sbc_at_the_bound(monkeypatch):
    """Each integer argument of ``sbc`` at its lowest value is accepted (the validation passes: a
    stand-in for what runs next stops the call), one below refused with the message read whole;
    each positive argument refused at 0 and accepted just above."""
    def stop(*a, **k):
        raise _Stop

    monkeypatch.setattr(CAL, "simulate_rows", stop)
    base = dict(SBC_LOWEST)
    with pytest.raises(_Stop):
        CAL.sbc("exponential", **base)
    for name, lo in SBC_LOWEST.items():
        with pytest.raises(ValueError) as e:
            CAL.sbc("exponential", **{**base, name: lo - 1})
        assert str(e.value) == f"{name} must be >= {lo}, got {lo - 1}", name
    for name in SBC_POSITIVE:
        with pytest.raises(ValueError) as e:
            CAL.sbc("exponential", **base, **{name: 0.0})
        assert str(e.value) == f"{name} must lie in (0.0, inf], got 0.0", name
        with pytest.raises(_Stop):
            CAL.sbc("exponential", **base, **{name: 1e-3})


@pytest.mark.parametrize("window", [0, 1, 2, 7])
def test_every_small_window_sizes_the_default_pending_ring(window):
    """The online learner's default ring on a conversions channel of window ``m`` (no max_pending,
    a policy without reveal window or hold) has ``m + 1`` slots: one at window 0; the state built
    from the config has that many slots."""
    from jaxbandits.online.state import initial_state

    cfg = configure(classic.ucb1(), channels.conversions(window=window), 3, None, None, None)
    assert cfg.pending == window + 1
    st = jax.eval_shape(lambda: initial_state(cfg, jax.random.key(0)))
    assert st.pending.round.shape == (window + 1,)


def test_every_mask_of_three_arms_gives_the_exploration_floor_its_law():
    """``explore(base, eps)``: the logged law ``eps q + (1 - eps) p`` with ``q`` uniform on the
    allowed arms, for every non-empty mask of 3 arms (the three one-arm masks included) and on a
    one-armed world (with eps = 1; three arms also with eps = 0.5): it sums to 1, it is 0 on
    masked arms, and with ``eps = 1`` it is exactly ``q``, every played arm allowed and the plays
    spread evenly over the allowed ones (5 s.e.)."""
    n = 600
    keys = jax.random.split(jax.random.key(3), n)
    for K, eps in ((3, 1.0), (3, 0.5), (1, 1.0)):
        pol = X.explore(classic.ucb1(), eps)
        st = pol.init(ProblemSpec(K, 100), jax.random.key(0))

        @jax.jit
        def acts(mask):
            ctx = Context(jnp.int32(0), None, mask, jnp.int32(0))
            a, memo = jax.vmap(lambda k: pol.act(st, ctx, k))(keys)
            return a, memo.probs

        for bits in itertools.product([False, True], repeat=K):
            if not any(bits):
                continue
            mask = np.array(bits)
            a, probs = (np.asarray(x) for x in acts(jnp.asarray(mask)))
            assert np.allclose(probs.sum(axis=1), 1.0, atol=1e-6), (K, eps, bits)
            assert (probs[:, ~mask] == 0).all() and mask[a].all(), (K, eps, bits)
            if eps == 1.0:
                q = mask / mask.sum()
                assert np.allclose(probs, q[None], atol=1e-7), (K, bits)
                freq = np.bincount(a, minlength=K) / n
                se = np.sqrt(q * (1 - q) / n)
                assert (np.abs(freq - q) <= 5 * se + 1e-12).all(), (K, bits, freq)


def test_every_mask_of_three_arms_gives_exp3_a_law_when_weights_underflow():
    """Exp3 with arms 1 and 2's weights underflowed (cum_loss 1e6): under every non-empty mask of
    3 arms the law sums to 1 and is 0 on masked arms; a mask that allows only underflowed arms
    (one of them alone included) gets the uniform law over them; every played arm is allowed."""
    pol = classic.exp3(eta=1.0)
    st = pol.init(ProblemSpec(3, 100), jax.random.key(0))._replace(cum_loss=jnp.array([0.0, 1e6, 1e6]))
    keys = jax.random.split(jax.random.key(2), 64)

    @jax.jit
    def acts(mask):
        a, memo = jax.vmap(lambda k: pol.act(st, Context(jnp.int32(0), None, mask, jnp.int32(-1)), k))(keys)
        return a, memo.probs

    for bits in itertools.product([False, True], repeat=3):
        if not any(bits):
            continue
        mask = np.array(bits)
        a, probs = (np.asarray(x) for x in acts(jnp.asarray(mask)))
        want = np.array([1.0, 0.0, 0.0]) if mask[0] else mask / mask.sum()
        np.testing.assert_allclose(probs, np.broadcast_to(want, probs.shape), atol=1e-7, err_msg=str(bits))
        assert mask[a].all(), bits


def _no_space_free(monkeypatch, free):
    import collections
    import shutil

    monkeypatch.setattr(shutil, "disk_usage", lambda p: collections.namedtuple("u", "total used free")(10**12, 0, free))


def test_every_bound_of_the_disk_full_rule(tmp_path, monkeypatch):
    """``core.fileio.disk_full``: an ENOSPC or EDQUOT OSError is a full disk whatever the free
    space; any other writer's error is one exactly when the folder's file system has under 1 MiB
    free (2**20 - 1 bytes: full; 2**20: not); a BaseException that is not an Exception never is."""
    import errno

    from jaxbandits.core import fileio

    path = tmp_path / "x.h5"
    for free, full in ((0, True), (2**20 - 1, True), (2**20, False), (10**9, False)):
        _no_space_free(monkeypatch, free)
        assert fileio.disk_full(RuntimeError("h5py: can't write data"), path) is full, free
        assert fileio.disk_full(OSError(errno.ENOSPC, "no space"), path) is True
        assert fileio.disk_full(OSError(errno.EDQUOT, "quota"), path) is True
        assert fileio.disk_full(OSError(errno.EIO, "io"), path) is full, free
        assert fileio.disk_full(KeyboardInterrupt(), path) is False


def test_every_chunk_boundary_a_stop_can_come_at(tmp_path):
    """``simulate(..., chunk, checkpoint, stop)``, 3 chunks of 20 rounds: ``stop`` is asked after
    each chunk but the last; a stop requested after chunk ``j < 3`` raises ``Interrupted`` with
    ``j * 20`` rounds done (the message read whole), a stop requested during the last chunk (the
    bound) changes nothing: the run returns, bitwise equal to one without ``stop``."""
    from jaxbandits import simulate
    from jaxbandits.engine.checkpoint import Interrupted

    args = (envs.bernoulli([0.6, 0.4]), channels.attributed(), classic.ucb1(), 60, jax.random.key(2), 2)
    ref = simulate(*args, chunk=20, checkpoint=str(tmp_path / "ref"))
    for j in (1, 2, 3):
        asked = []

        def stop():
            asked.append(1)
            return len(asked) >= j

        folder = str(tmp_path / f"s{j}")
        if j < 3:
            with pytest.raises(Interrupted) as e:
                simulate(*args, chunk=20, checkpoint=folder, stop=stop)
            assert str(e.value) == f"stopped after {20 * j} of 60 rounds; checkpoint in {folder}"
        else:
            got = simulate(*args, chunk=20, checkpoint=folder, stop=stop)
            assert len(asked) == 2
            np.testing.assert_array_equal(got.regret, ref.regret)


@pytest.mark.parametrize("default", [[5], [5, 6], [2.5]])
def test_every_list_config_key_at_its_shortest(default):
    """A registered experiment's list config key (defaults of one entry, the bound, and of two):
    an override with no entry is refused with the message read whole, one entry and more are
    accepted."""
    from jaxbandits import experiments as XP
    from jaxbandits.experiments.specs import resolve_config

    exp = XP.Experiment("lists", "a list key", lambda cfg: None, {"delays": default}, horizon=20, runs=2)
    with pytest.raises(ValueError) as e:
        resolve_config(exp, {"delays": []})
    assert str(e.value) == f"config key 'delays' must be a non-empty list like its default {default!r}, got []"
    for v in ([7], [7, 8, 9]):
        assert resolve_config(exp, {"delays": v})["delays"] == v


#: Pike-Burke et al. (2018): the ODAAF phase length (eq. 2) and the naive one (App. B), written
#: out: D = 2^-m, L = log(T D^2); no phase completes once L <= 0 (the sentinel T + 1).
def _odaaf_n(T, m, d):
    D = 2.0**-m
    L = math.log(T * D * D)
    return None if L <= 0 else (math.sqrt(2 * L) + math.sqrt(2 * L + 8 / 3 * D * L + 2 * D * 3 * m * d)) ** 2 / D**2


def _naive_n(T, m, bound):
    D = 2.0**-m
    L = math.log(T * D * D)
    return None if L <= 0 else (math.sqrt(L / 2) + math.sqrt(L / 2 + 2 * D * m * bound)) ** 2 / D**2


@pytest.mark.parametrize("T, n_phases", [(1000, None), (10**6, None), (1000, 2), (1000, 9)])
def test_every_entry_of_the_odaaf_schedules(T, n_phases):
    """``anonymous.schedule`` returns ``[M + 1]`` entries (``M = n_phases``, default
    ``ceil(log2(T) / 2) + 2``): 0, then each phase's length by the paper's formula, ceil'd and
    clipped at ``T + 1``, the sentinel ``T + 1`` from the first phase that cannot complete on;
    every entry pinned, for ODAAF and the naive schedule."""
    M_ = n_phases or math.ceil(math.log2(T) / 2) + 2
    for kind, f, kw in (("odaaf", lambda m: _odaaf_n(T, m, 5.0), dict(mean_delay=5.0)),
                        ("naive", lambda m: _naive_n(T, m, 20.0), dict(mean_delay=5.0, bound=20.0))):
        want = [0]
        for m in range(1, M_ + 1):
            n = f(m)
            want.append(T + 1 if n is None or want[-1] > T else min(math.ceil(n), T + 1))
        got = AN.schedule(kind, T, n_phases=n_phases, **kw)
        assert got.dtype == np.int64 and got.tolist() == want, (kind, got.tolist(), want)


# ---------------------------------------------------------------------------- an independent computation
@pytest.mark.parametrize("case", ["attributed, no delay", "conversions, geometric delay"])
def test_the_memory_estimate_written_out_with_and_without_delayed_regret(case):
    """``memory_estimate`` = every run's carried state (its exact size, from the program's shapes)
    + 4 bytes per kept value: regret, expected regret, reward, K pulls, and L(t) only for a problem
    that tracks delayed regret (a delay law on a censoring channel; none on an attributed channel
    without delays); with ``keep=0`` one record per run, else one per record point."""
    from jaxbandits import delays
    from jaxbandits.engine import memory, programs

    if case.startswith("attributed"):
        world, ch, tracks = envs.bernoulli([0.3, 0.6, 0.5]), channels.attributed(), False
    else:
        world = envs.conversions([0.3, 0.6, 0.5], delays.geometric(mean=5.0))
        ch, tracks = channels.conversions(window=9), True
    pol = classic.ucb1()
    prob = engine.problem(world, ch, pol, 100, n_runs=8)
    assert bool(prob.dl_mode) is tracks
    plan = programs.Plan(((pol.name, prob),), 1, False)
    carries = jax.eval_shape(lambda r: programs.init_program(plan, jax.random.key(0), r, None),
                             jax.ShapeDtypeStruct((8,), jnp.int32))
    exact = sum(int(np.prod(a.shape)) * a.dtype.itemsize for a in jax.tree.leaves(carries))
    per = 3 + 3 + (1 if tracks else 0)
    rec = np.arange(9, 100, 10)
    assert memory.memory_estimate({"U": prob}, 8, rec, keep=0) == exact + 8 * 4 * per
    assert memory.memory_estimate({"U": prob}, 8, rec) == exact + 8 * 4 * per * len(rec)


def test_a_panel_experiments_run_time_is_the_sum_of_its_simulations(monkeypatch):
    """``experiments.run`` of a two-panel experiment with its simulations timed at known values
    (each call's ``run_s`` set to 0.25 s, ``compile_s`` to 0.5 s): the result's ``run_s`` and
    ``compile_s`` are the sums over the calls, and ``run_steps_per_s`` is the run-steps (runs x
    rounds x curves) over that ``run_s``."""
    from jaxbandits import experiments as XP
    from jaxbandits.experiments import runner as RN

    calls = []

    def timed(*a, **k):
        out = real(*a, **k)
        for o in out.values():
            o.timing.update(run_s=0.25, compile_s=0.5)
        calls.append(1)
        return out

    real = RN.simulate
    monkeypatch.setattr(RN, "simulate", timed)

    def build(cfg):
        return [XP.Panel(n, envs.bernoulli([0.6, 0.4]), channels.attributed(), {"UCB1": classic.ucb1()})
                for n in ("a", "b")]

    exp = XP.Experiment("timed", "two panels", build, {}, horizon=20, runs=2)
    res = XP.run(exp)
    assert len(calls) == 2
    assert res.timing["run_s"] == pytest.approx(0.5, rel=1e-12) and res.timing["compile_s"] == pytest.approx(1.0)
    assert res.timing["run_steps_per_s"] == pytest.approx(2 * 20 * 2 / 0.5, rel=1e-12)


# ------------------------------------------------------------------------------ a stated default pinned
def test_engine_problem_default_n_runs_is_one_at_the_calendar_budget():
    """``engine.problem``'s ``n_runs`` defaults to 1: a given width whose calendars take exactly
    the 2 GiB limit for one run (W P 4 = 2^27 * 4 * 4 = 2^31 bytes) is accepted without n_runs as
    with ``n_runs=1``, and refused for 2 runs with the message read whole."""
    world, ch, pol = envs.bernoulli([0.3, 0.6]), channels.attributed(width=2**27), classic.ucb1()
    p = engine.problem(world, ch, pol, 100)
    assert p.width == 2**27 and p.cspec.payload_size == 4
    assert p.cspec == engine.problem(world, ch, pol, 100, n_runs=1).cspec
    with pytest.raises(ValueError) as e:
        engine.problem(world, ch, pol, 100, n_runs=2)
    assert str(e.value) == ("the channel's width=134217728 exceeds the exact width 1 that loses nothing "
                            "(conventions §3) and its calendars would take 4.0 GiB for 2 runs: give width <= 1 "
                            "(or leave it None)")


# ------------------------------------------------------------------------------ the whole distribution
@pytest.mark.parametrize("n_valid", [0, 6])
def test_the_whole_distribution_of_the_number_of_actions_of_a_varying_set(n_valid):
    """A linear world with ``min_valid = 2``: the number of actions each round is uniform on
    ``{2..n_valid}`` (``{2..10}`` without padding): every size's frequency within 5 s.e. of
    ``1 / (n_valid - 1)``, never a size outside it; the allowed actions are the first ``K_t``."""
    env = envs.linear(np.array([0.3, 0.1]), n_actions=10, action_set="uniform", min_valid=2, n_valid=n_valid)
    top = n_valid or 10
    n = 6000
    keys = jax.random.split(jax.random.key(5), n)
    masks = np.asarray(jax.jit(jax.vmap(lambda k: env.context(None, jnp.int32(0), k)[1]))(keys))
    k_t = masks.sum(axis=1)
    assert (masks == (np.arange(10)[None] < k_t[:, None])).all()
    assert k_t.min() >= 2 and k_t.max() <= top
    freq = np.bincount(k_t, minlength=11)[2:top + 1] / n
    p = 1.0 / (top - 1)
    assert (np.abs(freq - p) <= 5 * math.sqrt(p * (1 - p) / n)).all(), freq


@pytest.mark.parametrize("probs, drift", [([0.5, 0.3, 0.2], 2.0), ([0.5, 0.3, 0.2], 400.0), ([0.5, 0.5, 0.0], 20.0),
                                          ([0.2, 0.8], 0.0)])
def test_the_whole_distribution_of_drifting_synthetic_labels(probs, drift):
    """``synthetic_labels(probs, T, drift)``: round ``t``'s label has the law ``p_t(a)`` proportional
    to ``probs[a] exp(drift sin(2 pi (t/T + a/K)))``, computed here as weights (not logits); in each
    of 6 stretches of rounds each arm's frequency lies within 5 s.e. of the stretch's mean
    ``p_t(a)``. A large drift and a zero weight (accepted inputs) included."""
    from jaxbandits.envs import adversarial as AD

    T, S = 60_000, 6
    y = AD.synthetic_labels(probs, T, drift=drift, seed=4)
    p, K = np.asarray(probs, np.float64), len(probs)
    s = np.sin(2 * np.pi * (np.arange(T)[:, None] / T + np.arange(K)[None, :] / K))
    w = p[None, :] * np.exp(drift * (s - s.max(axis=1, keepdims=True)))
    pt = w / w.sum(axis=1, keepdims=True)
    n = T // S
    for j in range(S):
        sl = slice(j * n, (j + 1) * n)
        freq = np.bincount(y[sl], minlength=K) / n
        want = pt[sl].mean(axis=0)
        se = np.sqrt(want * (1 - want) / n)
        assert (np.abs(freq - want) <= 5 * se + 1e-12).all(), (j, freq, want)


@pytest.mark.parametrize("table", [[[0.1, 0.9], [0.9, 0.1], [0.5, 0.5]], [[0.1, 0.5, 0.9], [0.9, 0.5, 0.1]]],
                         ids=["P3K2", "P2K3"])
def test_switching_worlds_with_as_many_phases_as_arms_or_not(table):
    """``envs.switching(loss_means [P, K], period)`` at uneven sizes (P != K), over more than
    ``max(P, K)`` phases: the world's expected rewards in round ``t`` are ``1 -`` row
    ``(t // period) % P`` of the table, and with the coupled uniform ``u`` every arm's draw is
    ``u <`` those, so the regret's comparator and the rewards drawn agree."""
    lm = (1.0 - np.asarray(table, np.float64)).astype(np.float32)
    period, T = 3, 3 * 7
    env = envs.switching(table, period=period)
    t = jnp.arange(T)
    mu = np.asarray(jax.vmap(lambda t: env.means(None, t, None))(t))
    want = lm[(np.arange(T) // period) % lm.shape[0]]
    np.testing.assert_array_equal(mu, want)
    for u in (0.05, 0.3, 0.7, 0.95):
        out = jax.vmap(lambda t: env.outcome(None, t, 0, jnp.float32(u), jnp.float32(0.5), None, jax.random.key(0))[0])
        rows = np.asarray(out(t).all_rewards)
        np.testing.assert_array_equal(rows, (u < want).astype(np.float32))


# ---------------------------------------------------------------------------- an independent computation
def test_the_anonymous_learner_holds_the_sum_of_the_aggregates_fed_in_its_open_round():
    """The online learner on an anonymous channel: before any decision every ``y`` is ``unknown``;
    then, round by round, ``state.acc`` is the float32 sum, in the order given, of the finite ``y``
    fed since the round opened (non-finite ones ``invalid``, not added), over several feedback calls
    of uneven sizes; a new decision opens a round with 0."""
    from jaxbandits import online

    lr = online.Learner(AN.odaaf(3.0), channels.anonymous(), 3, horizon=100)
    assert lr.feedback(y=[1.0]) == ["unknown"] and np.asarray(lr.state.acc).tolist() == [0.0]
    rng = np.random.default_rng(6)
    for r in range(4):
        lr.decide(1 + r % 2)
        assert np.asarray(lr.state.acc).tolist() == [0.0]
        want = np.float32(0.0)
        for n in (3, 1, 5)[: 1 + r % 3]:
            y = rng.normal(size=n).astype(np.float32)
            y[rng.random(n) < 0.3] = np.nan
            codes = lr.feedback(y=y.tolist())
            assert codes == ["accepted" if np.isfinite(v) else "invalid" for v in y]
            for v in y[np.isfinite(y)]:
                want = np.float32(want + v)
            assert np.asarray(lr.state.acc).tolist() == [float(want)], r


def test_the_fused_gamma_sampler_against_marsaglia_tsang_by_hand():
    """The fused path's Gamma variates (``rng.gammas_in_sequence``), recomputed here in float64:
    the counter words come from JAX's own Threefry-2x32 (``jax.extend.random.threefry_2x32``) at the
    stated counters ``(c0, i)``, ``i = 0, 1, ...``, proposal ``i`` of a lane is the normal
    ``ndtri(u(w0))`` and the uniform ``u(w1)`` (``u(w) = ((w >> 9) + 1/2) 2^-23``), tested by
    Marsaglia and Tsang's rule and served to the lane's first variate not yet accepted."""
    from jax.extend.random import threefry_2x32
    from scipy.special import ndtri

    from jaxbandits.engine.fused import rng as FR

    shapes, k1, c0, lanes = (1.0, 2.5, 7.0), 77, 4, np.arange(1, 9, dtype=np.uint32) * 1000003
    cap = FR.max_proposals(len(shapes))
    got = jax.jit(lambda k0: FR.gammas_in_sequence([jnp.full(k0.shape, a, jnp.float32) for a in shapes], k0,
                                                   jnp.uint32(k1), jnp.uint32(c0), cap))(jnp.asarray(lanes))
    got = np.stack([np.asarray(g) for g in got], axis=1)
    for lane, k0 in enumerate(lanes):
        i = np.arange(cap, dtype=np.uint32)
        words = np.asarray(threefry_2x32(jnp.array([k0, k1], jnp.uint32),
                                         jnp.concatenate([jnp.full(cap, c0, jnp.uint32), jnp.asarray(i)])))
        u = ((words >> 9).astype(np.float64) + 0.5) * 2.0**-23
        x, uu = ndtri(u[:cap]), u[cap:]
        want, j = [], 0
        for t in range(cap):
            if j == len(shapes):
                break
            d = shapes[j] - 1 / 3
            v = (1 + x[t] / math.sqrt(9 * d)) ** 3
            if v > 0 and math.log(uu[t]) < 0.5 * x[t] ** 2 + d - d * v + d * math.log(v):
                want.append(d * v)
                j += 1
        assert len(want) == len(shapes)
        np.testing.assert_allclose(got[lane], want, rtol=1e-4, err_msg=str(lane))


# ------------------------------------------------------------------------ a figure's drawn data read back
def test_the_evaluate_forest_plot_draws_each_estimate_on_its_row(tmp_path, monkeypatch):
    """``jaxbandits evaluate``'s forest plot, read back from the figure: row ``i`` (from the top) is
    the ``i``-th estimate, its marker at x = the estimate and y = its row, its bar from ``lo`` to
    ``hi`` on that row, its tick label ``target: estimator``; uneven intervals (hi - value !=
    value - lo) so that the two ends cannot be swapped unseen."""
    import matplotlib.pyplot as plt

    from jaxbandits.ope import command as OC
    from jaxbandits.ope.estimators import Estimate

    figs, close = [], plt.close
    monkeypatch.setattr(plt, "close", lambda fig=None: figs.append(fig))  # kept open to be read
    est = {"A": [Estimate("ips", True, 0.12, 0.05, 0.16, 0.02, 50.0, 100),
                 Estimate("dm", False, 0.30, 0.28, 0.41, 0.03, 100.0, 100)],
           "B": [Estimate("dr", True, 0.61, 0.52, 0.64, 0.02, 80.0, 100)]}
    OC.plot({k: {"estimates": v} for k, v in est.items()}, str(tmp_path / "f.png"), 0.95)
    assert (tmp_path / "f.png").stat().st_size > 0
    (ax,) = figs[0].axes
    rows = [(k, e) for k, v in est.items() for e in v]
    bars = ax.containers
    assert len(bars) == len(rows)
    for i, ((label, e), c) in enumerate(zip(rows, bars)):
        y = len(rows) - 1 - i
        x_d, y_d = c.lines[0].get_data()
        assert (float(x_d[0]), float(y_d[0])) == pytest.approx((e.value, y)), label
        (seg,) = c.lines[2][0].get_segments()
        np.testing.assert_allclose(np.asarray(seg), [[e.lo, y], [e.hi, y]], rtol=1e-12, err_msg=label)
    ticks = {int(round(t)): lab.get_text() for t, lab in zip(ax.get_yticks(), ax.get_yticklabels())}
    assert ticks == {len(rows) - 1 - i: f"{label}: {e.name}" for i, (label, e) in enumerate(rows)}
    close(figs[0])


def test_the_fused_thompson_indices_at_many_arms_have_their_beta_laws():
    """An uneven size: the fused Thompson kernel's indices (``lanes.index_lanes``, the function the
    kernel calls per round) at K = 24 arms (48 Gamma variates a lane and round), arm ``k`` with
    ``n_k = k`` plays and ``s_k = k // 3`` successes: over 128 lanes every index lies in (0, 1) and
    each arm's mean is within 5 s.e. of its Beta(1 + s, 1 + n - s) mean."""
    from jaxbandits.engine.fused import lanes as LN
    from jaxbandits.engine.fused.kernels import KernelSpec

    K, B = 24, 128
    ks = KernelSpec("thompson", (), K, 32, 1, 1, B)  # k_pad 32: K padded to a power of two
    n_k, s_k = np.arange(K, dtype=np.float64), np.arange(K) // 3.0
    n = [jnp.full((B,), v, jnp.float32) for v in n_k]
    s = [jnp.full((B,), v, jnp.float32) for v in s_k]
    idx = np.asarray(jax.jit(lambda kp0: jnp.stack(LN.index_lanes(ks, n, s, jnp.int32(3), kp0, jnp.uint32(5))))(
        jnp.arange(B, dtype=jnp.uint32) * 7919 + 1), np.float64)
    assert idx.shape == (K, B) and ((idx > 0) & (idx < 1)).all()
    a, b = 1 + s_k, 1 + n_k - s_k
    mean, var = a / (a + b), a * b / ((a + b) ** 2 * (a + b + 1))
    assert (np.abs(idx.mean(axis=1) - mean) <= 5 * np.sqrt(var / B)).all(), idx.mean(axis=1) - mean


def test_an_empty_batch_of_feedback_in_every_form_on_every_channel_kind():
    """An uneven size: an empty batch (``y=[]``, ``ids=[]``, ``ids=[]`` with ``rewards=[]``) on a
    new attributed, conversions and anonymous learner returns no codes and leaves the state
    bitwise as it was."""
    from jaxbandits import online

    def leaves(st):
        return [np.asarray(jax.random.key_data(x) if jnp.issubdtype(x.dtype, jax.dtypes.prng_key) else x)
                for x in jax.tree.leaves(st)]

    for pol, ch in ((classic.ucb1(), channels.attributed()), (classic.ucb1(), channels.conversions(window=5)),
                    (AN.odaaf(3.0), channels.anonymous())):
        lr = online.Learner(pol, ch, 3, horizon=100)
        before = leaves(lr.state)
        for kw in (dict(y=[]), dict(ids=[]), dict(ids=[], rewards=[])):
            assert lr.feedback(**kw) == [], (ch, kw)
            after = leaves(lr.state)
            assert all(a.dtype == b.dtype and np.array_equal(a, b) for a, b in zip(before, after)), (ch, kw)


def test_a_fixed_feature_linear_world_built_from_a_traced_parameter():
    """Every documented form run once: a grid's build calls ``envs.linear(theta, features=F)`` with
    one of the two a traced parameter (the other concrete, or both traced): the world is built (its
    features, shape [K, d]) and its means are ``F theta``, computed here."""
    F0, th0 = np.array([[1.0, 0.0], [0.0, 1.0], [0.5, 0.5]]), np.array([0.3, 0.1])
    builds = {"theta traced": lambda s: envs.linear(th0 * s, features=F0),
              "features traced": lambda s: envs.linear(th0, features=F0 * s),
              "both traced": lambda s: envs.linear(th0 * s, features=F0 * s)}
    for name, build in builds.items():
        mu = jax.jit(lambda s: build(s).means(None, jnp.int32(0), build(s).features))(jnp.float32(0.5))
        sc = 0.25 if name == "both traced" else 0.5
        np.testing.assert_allclose(np.asarray(mu), F0 @ th0 * sc, rtol=1e-6, err_msg=name)


# ------------------------------------------------------------------------------------ an uneven size
def test_dashboard_weights_with_a_ring_longer_than_the_delay_laws_table(tmp_path):
    """A conversions service with a configured geometric law and window 5 (the law's table: ages
    0..5) but a pending ring of 16 slots, 4 batches of 5 decisions (ring ages up to 15):
    ``/estimates`` answers, and each arm's interval weights are, independently,
    ``sum_i F(min(age_i, m))`` over its decisions (``F`` the law's CDF)."""
    pytest.importorskip("fastapi")
    from jaxbandits import delays
    from jaxbandits.apps import dashboard, serve

    m = 5
    law = {"law": "geometric", "mean": 3.0}
    cfg = serve.load_config(None, arms=["x", "y"], seed=1, max_batch=100, max_pending=16,
                            policy={"name": "delayed_klucb", "window": m, "delay": law},
                            channel={"kind": "conversions", "window": m})
    svc = serve.Service(cfg, tmp_path / "e.db")
    made = []
    try:
        for b in range(4):
            out = svc.decide(5)
            made += list(zip(out["ids"], out["arms"]))
            svc.feedback([{"id": made[-1][0]}])
        e = dashboard.Monitor(svc).estimates()
        Fc = np.asarray(delays.geometric(mean=3.0).cdf_table(m + 1), np.float64)
        t = int(svc.learner.state.t)
        assert max(t - i for i, _ in made) > m + 2  # ages past the law's table are in the ring
        est = {a["name"]: a for a in e["arms"]}
        for k, name in enumerate(cfg.arms):
            n = sum(Fc[min(t - i, m)] for i, a in made if a == name)
            s = svc.host["rewards"][k]
            assert est[name]["rate"] == pytest.approx(s / n, rel=1e-9), name
            z = 1.959964
            c = (s / n + z * z / (2 * n)) / (1 + z * z / n)
            h = z * math.sqrt((s / n) * (1 - s / n) / n + z * z / (4 * n * n)) / (1 + z * z / n)
            assert (est[name]["lo"], est[name]["hi"]) == (pytest.approx(c - h), pytest.approx(c + h)), name
    finally:
        svc.close()
