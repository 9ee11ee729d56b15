"""Sweeps past one process (docs/cluster.md): an experiment with its own loop over settings
(regret against T, against d, ...) or replications (a fit per replication) splits its *units*
(each simulation or fit) into ``--part I/N`` shares by cost; ``merge`` replays the sweep over the
parts' units, so its results are the whole run's, bit for bit; a part killed and resumed changes
nothing; a 2-process ``jax.distributed`` run exchanges the units and equals one process, bitwise."""
import json
import os
import shutil
import sys

import numpy as np
import pytest

import scaleout_tiny

from jaxbandits.core import fileio
from jaxbandits.apps.cli import main
from jaxbandits.engine.checkpoint import SweepShare

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BOUNDS = ["thune2019-bounds", "--runs", "4", "--set", "log2_T=8", "--set", "delays=[0, 4, 16, 64]", "--seed", "5",
          "--no-progress"]


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory):
    return str(tmp_path_factory.mktemp("jax-cache"))


@pytest.fixture(autouse=True)
def _cache(cache_dir, monkeypatch):
    monkeypatch.setenv("JAXBANDITS_CACHE_DIR", cache_dir)


def _same_results(a, b, arrays=True):
    """Bitwise: every number of summary.json and every array of results.nc (timing aside)."""
    sa, sb = (json.load(open(os.path.join(d, "summary.json"))) for d in (a, b))
    sa.pop("timing", None), sb.pop("timing", None)
    assert json.dumps(sa) == json.dumps(sb)  # json floats are repr'd exactly: equal text is equal bits (and order)
    ta, tb = (open(os.path.join(d, "table.md")).read() for d in (a, b))
    assert ta == tb
    if arrays:
        import xarray as xr

        xa, xb = (xr.load_dataset(os.path.join(d, "results.nc"), engine="h5netcdf") for d in (a, b))
        assert sorted(xa.data_vars) == sorted(xb.data_vars)
        for v in xa.data_vars:
            assert xa[v].dtype == xb[v].dtype
            np.testing.assert_array_equal(xa[v].values, xb[v].values, err_msg=v)


@pytest.fixture(scope="module")
def bounds(tmp_path_factory, cache_dir):
    """thune2019-bounds (4 delays: 8 simulations) whole, and in three parts."""
    d = tmp_path_factory.mktemp("sweep")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("JAXBANDITS_CACHE_DIR", cache_dir)
        assert main(["run", *BOUNDS, "--out", str(d / "whole")]) == 0
        for i in range(3):
            assert main(["run", *BOUNDS, "--part", f"{i}/3", "--out", str(d / f"p{i}")]) == 0
    return d


def test_share_is_greedy_by_cost_and_the_same_in_every_part():
    costs = [1, 2, 4, 8, 16, 32, 32]
    owners = []
    for i in range(3):
        s = SweepShare(i, 3)
        owners.append([s.owner(c) for c in costs])
        assert s.loads == [41.0, 18.0, 36.0]  # each unit to the least loaded so far, in the sweep's order
    assert owners[0] == owners[1] == owners[2] == [0, 1, 2, 0, 1, 2, 0]  # every part computes the same
    # one part: everything is its own
    s = SweepShare(0, 1)
    assert {s.owner(c) for c in costs} == {0}


def test_sweep_parts_merge_bitwise_the_whole_run(bounds, tmp_path, capsys):
    d = bounds
    metas = [json.load(open(d / f"p{i}" / "part.json")) for i in range(3)]
    units = metas[0]["units"]
    assert len(units) == 8 and all(m["units"] == units for m in metas)  # 4 delays x (OT, AT) simulations
    owned = [[u for u, _, o in units if o == i] for i in range(3)]
    assert all(owned) and sum(map(len, owned)) == 8  # every part computes some, each unit once
    for i in range(3):  # a part holds its own units only
        with np.load(d / f"p{i}" / "part.npz") as z:
            assert sorted(k[2:] for k in z.files) == sorted(owned[i])
        assert not (d / f"p{i}" / ".checkpoint").exists() and not (d / f"p{i}" / "summary.json").exists()
    assert main(["merge", str(d / "p2"), str(d / "p0"), str(d / "p1"), "--out", str(tmp_path / "m")]) == 0
    _same_results(d / "whole", tmp_path / "m")
    s = json.load(open(tmp_path / "m" / "summary.json"))
    assert s["sweep"] == "d" and s["runs"] == 4 and len(s["policies"]["DEW-Thm1"]["regret_mean"]) == 4


def _merge_err(capsys, *dirs, out):
    assert main(["merge", *map(str, dirs), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("jaxbandits: error: merge: ") and "Traceback" not in err, err
    assert not (out / "summary.json").exists()
    return err


def _resign(folder, name):
    man = folder / fileio.MANIFEST_NAME
    m = json.load(open(man))
    m["files"][name] = fileio.sha256_file(str(folder / name))
    man.write_text(json.dumps(m))


def test_sweep_merge_refuses(bounds, tmp_path, capsys):
    d, out = bounds, tmp_path / "m"
    assert "part(s) 1/3 missing" in _merge_err(capsys, d / "p0", d / "p2", out=out)
    # a part of the same sweep with other settings
    other = tmp_path / "other"
    assert main(["run", *BOUNDS, "--set", "gap=0.2", "--part", "1/3", "--out", str(other)]) == 0
    capsys.readouterr()
    assert "its config differs (gap=0.2 there, 0.25 here)" in _merge_err(capsys, d / "p0", other, d / "p2", out=out)
    # a sweep's part with a run's part
    odd_kind = tmp_path / "odd-kind"
    shutil.copytree(d / "p1", odd_kind)
    meta = json.load(open(odd_kind / "part.json"))
    meta.pop("kind")
    (odd_kind / "part.json").write_text(json.dumps(meta))
    _resign(odd_kind, "part.json")
    assert "is a run's part and" in _merge_err(capsys, d / "p0", odd_kind, d / "p2", out=out)
    # a part whose units file lost one of its units (re-signed, so only the content check can see it)
    bad = tmp_path / "bad"
    shutil.copytree(d / "p1", bad)
    with np.load(bad / "part.npz") as z:
        kept = {k: z[k] for k in list(z.files)[1:]}
    with open(bad / "part.npz", "wb") as fh:
        np.savez(fh, **kept)
    _resign(bad, "part.npz")
    assert "lacks unit" in _merge_err(capsys, d / "p0", bad, d / "p2", out=out)
    # parts that say they are of code that asks for other units than this code does
    odd = tmp_path / "odd"
    shutil.copytree(d / "p1", odd)
    for p in (d / "p0", d / "p2"):
        shutil.copytree(p, tmp_path / p.name)
    for f in (tmp_path / "p0", odd, tmp_path / "p2"):
        meta = json.load(open(f / "part.json"))
        meta["units"] = [[u if o != 1 else "0" * 24, k, o] for u, k, o in meta["units"]]
        (f / "part.json").write_text(json.dumps(meta))
        _resign(f, "part.json")
    err = _merge_err(capsys, tmp_path / "p0", odd, tmp_path / "p2", out=out)
    assert "lacks unit" in err or "no part holds it" in err


def test_sweep_part_killed_then_resumed_leaves_the_merge_unchanged(bounds, tmp_path, monkeypatch, capsys):
    from jaxbandits.engine import checkpoint as K

    d = bounds
    # the machine is lost after the part's first unit was saved
    put, dies_after_1 = scaleout_tiny.after_nth_call(K.CallCache, "put_bytes", 1, scaleout_tiny.interrupt)
    monkeypatch.setattr(K.CallCache, "put_bytes", dies_after_1)
    p0 = tmp_path / "p0"
    assert main(["run", *BOUNDS, "--part", "0/3", "--out", str(p0)]) == 130
    assert capsys.readouterr().err.strip() == "jaxbandits: interrupted"
    monkeypatch.setattr(K.CallCache, "put_bytes", put)
    saved = os.listdir(p0 / ".checkpoint" / "sweep")
    assert len([f for f in saved if f.startswith("call-")]) == 1 and not (p0 / "part.json").exists()
    assert "unfinished part" in _merge_err(capsys, p0, d / "p1", d / "p2", out=tmp_path / "m")
    # the resumed part replays its saved unit (computes it no more) and computes the rest
    from jaxbandits.engine import driver as DR

    ran, real = {"n": 0}, DR.run_problems

    def counting(*a, **k):
        ran["n"] += 1
        return real(*a, **k)

    monkeypatch.setattr(DR, "run_problems", counting)
    assert main(["run", *BOUNDS, "--part", "0/3", "--out", str(p0), "--resume"]) == 0
    assert "part 0/3 (its share of the sweep's simulations and fits) written to" in capsys.readouterr().out
    owned = sum(1 for _, _, o in json.load(open(p0 / "part.json"))["units"] if o == 0)
    assert ran["n"] == owned - 1
    assert main(["merge", str(p0), str(d / "p1"), str(d / "p2"), "--out", str(tmp_path / "m")]) == 0
    _same_results(d / "whole", tmp_path / "m")


def test_sweep_two_processes_bitwise_one_process(tmp_path):
    """``--processes 2``: each process computes its share of the units, the units are exchanged
    (gloo collectives on 127.0.0.1), process 0 writes; bitwise the one-process run."""
    from jaxbandits.experiments.distributed import launch_local

    args = ["thune2019-bounds", "--runs", "4", "--set", "log2_T=6", "--set", "delays=[0, 4]", "--seed", "5",
            "--no-progress"]
    assert main(["run", *args, "--single-device", "--out", str(tmp_path / "whole")]) == 0
    rc = launch_local(["run", *args, "--no-compile-cache", "--out", str(tmp_path / "dist")], 2,
                      devices_per_process=1, timeout=240)
    assert rc == 0
    _same_results(tmp_path / "whole", tmp_path / "dist")


def test_parts_and_merge_on_other_device_counts(tmp_path):
    """Parts computed on 2 devices (another machine's cores) and merged by a process of 1 device
    equal the whole run on 1 device: a unit is named by what it computes, not where."""
    import subprocess

    args = ["thune2019-bounds", "--runs", "16", "--set", "log2_T=6", "--set", "delays=[0, 4]", "--seed", "5",
            "--no-progress"]  # 16 runs: sharded over 2 devices (8 runs a device at least)

    def child(devices, code):
        env = dict(os.environ, XLA_FLAGS=f"--xla_force_host_platform_device_count={devices}", JAX_PLATFORMS="cpu")
        code = (f"import sys, jax; from jaxbandits.apps.cli import main\nassert jax.local_device_count() == {devices}\n"
                + code)
        r = subprocess.run([sys.executable, "-c", code, str(tmp_path)], env=env, capture_output=True, text=True,
                           timeout=300)
        assert r.returncode == 0, r.stderr[-3000:]

    child(2, f"for i in (0, 1): assert main({['run', *args]!r} + ['--part', f'{{i}}/2', '--out', sys.argv[1] + f'/p{{i}}']) == 0")
    child(1, "assert main(['merge', sys.argv[1] + '/p0', sys.argv[1] + '/p1', '--out', sys.argv[1] + '/m']) == 0")
    assert main(["run", *args, "--single-device", "--out", str(tmp_path / "whole")]) == 0
    _same_results(tmp_path / "whole", tmp_path / "m")
    assert json.load(open(tmp_path / "p0" / "part.json"))["units"] == json.load(open(tmp_path / "p1" / "part.json"))["units"]


def test_sweep_units_are_named_by_the_policy_s_parameters():
    """Two calls of one sweep that differ only in a policy's hyper-parameter (same label, same
    code) are two units: each gets its own numbers, never the other's saved ones."""
    import jax

    import jaxbandits as jb
    from jaxbandits.policies import classic
    from jaxbandits.experiments.sweeping import sweep_checkpoints

    env, ch = jb.envs.bernoulli([0.3, 0.5, 0.6]), jb.channels.attributed()
    direct = [jb.simulate(env, ch, {"p": classic.ucb1(alpha=a)}, 300, jax.random.key(1), 8)["p"] for a in (0.01, 2.0)]
    assert not np.array_equal(direct[0].pulls, direct[1].pulls)
    with sweep_checkpoints(None) as ctx:
        got = [ctx.simulate(env, ch, {"p": classic.ucb1(alpha=a)}, 300, jax.random.key(1), 8)["p"] for a in (0.01, 2.0)]
    assert len({u for u, _, _ in ctx.units}) == 2
    for d, g in zip(direct, got):
        np.testing.assert_array_equal(d.pulls, g.pulls)
        np.testing.assert_array_equal(d.regret, g.regret)


@pytest.mark.slow
def test_distributed_sweep_killed_then_resumed_equals_the_whole_run(bounds, tmp_path):
    """Two processes; process 0 is SIGKILLed right after saving its first unit of the sweep, the
    other is lost with it; --resume on two processes replays the saved units and computes the rest:
    bitwise the one-process run."""
    from jaxbandits.experiments.distributed import launch_local

    tiny = os.path.join(ROOT, "tests", "scaleout_tiny.py")
    out = tmp_path / "dist"
    assert scaleout_tiny.lose_process_0(["run", *BOUNDS, "--no-compile-cache", "--out", str(out)],
                                        {"SCALEOUT_TINY_DIE_AFTER_UNITS": "1"}) == -9
    saved = [f for f in os.listdir(out / ".checkpoint" / "sweep") if f.startswith("call-")]
    assert 1 <= len(saved) < 8 and not (out / "summary.json").exists()
    rc = launch_local(["run", *BOUNDS, "--no-compile-cache", "--out", str(out), "--resume"], 2,
                      devices_per_process=1, timeout=240, command=[sys.executable, tiny])
    assert rc == 0 and not (out / ".checkpoint").exists()
    _same_results(bounds / "whole", out)


@pytest.mark.slow
@pytest.mark.parametrize("name,sets", [
    ("thune2019-heavy-tail", ["--runs", "3", "--set", "log2_T=[7, 8]", "--set", "models=['pareto']"]),
    ("thune2019-example8", ["--runs", "3", "--set", "log2_T=[7, 8, 9]"]),
    ("pikeburke2018-appF", ["--runs", "3", "--set", "horizon=300", "--set", "delays=[0, 5, 10]"]),
    ("bayes-fit-recovery", ["--runs", "3", "--set", "n_plays=300", "--set", "model='exponential'"]),
])
def test_every_sweep_splits_into_parts_bitwise(name, sets, tmp_path):
    args = [name, *sets, "--seed", "2", "--no-progress"]
    assert main(["run", *args, "--out", str(tmp_path / "whole")]) == 0
    for i in range(2):
        assert main(["run", *args, "--part", f"{i}/2", "--out", str(tmp_path / f"p{i}")]) == 0
        assert any(o == i for _, _, o in json.load(open(tmp_path / f"p{i}" / "part.json"))["units"])
    assert main(["merge", str(tmp_path / "p0"), str(tmp_path / "p1"), "--out", str(tmp_path / "m")]) == 0
    _same_results(tmp_path / "whole", tmp_path / "m", arrays=name != "bayes-fit-recovery")


def test_the_fused_path_runs_inside_a_sweep(monkeypatch):
    """A sweep calls the simulate it is handed: path='fused' runs there (no global refuses it),
    is a unit of its own (another name than the scan's: other bits), and is replayed bitwise the
    second time (simulate not called again). jaxbandits.simulate called directly inside the block
    is not a unit (nothing is intercepted)."""
    import jax

    import jaxbandits as jb
    from jaxbandits.engine import driver
    from jaxbandits.policies import classic
    from jaxbandits.experiments.sweeping import sweep_checkpoints

    env, ch, pol = jb.envs.bernoulli([0.3, 0.5, 0.6]), jb.channels.attributed(), classic.ucb1()
    args = (env, ch, pol, 64, jax.random.key(2), 4)
    direct = jb.simulate(*args, path="fused")
    calls = []
    real = driver.simulate
    monkeypatch.setattr(driver, "simulate", lambda *a, **k: calls.append(k["path"]) or real(*a, **k))
    with sweep_checkpoints(None) as sw:
        a = sw.simulate(*args, path="fused")
        b = sw.simulate(*args, path="fused")
        s = sw.simulate(*args, path="scan")
        jb.simulate(*args, path="scan")
    assert calls == ["fused", "scan"]  # the second fused call was replayed
    assert [u[0] for u in sw.units][0] == sw.units[1][0] != sw.units[2][0] and len(sw.units) == 3
    for f in ("regret", "pulls", "reward"):
        np.testing.assert_array_equal(getattr(a, f), getattr(direct, f))
        np.testing.assert_array_equal(getattr(b, f), getattr(direct, f))
    np.testing.assert_array_equal(s.pulls, real(*args, path="scan").pulls)


def test_a_runner_is_handed_its_sweep_and_an_old_runner_still_runs():
    """call_runner gives a runner with a ``sweep`` parameter the Sweep (DIRECT when called plainly);
    a runner of four parameters, written before, still runs: silently when nothing is cached, with
    a DeprecationWarning naming it under a cache (its simulations are not saved nor split)."""
    import warnings

    from jaxbandits.experiments.sweeping import DIRECT, call_runner, sweep_checkpoints

    got = []
    new = lambda cfg, runs, seed, horizon, sweep: got.append(sweep) or (cfg, runs, seed, horizon)
    old = lambda cfg, runs, seed, horizon: (cfg, runs, seed, horizon)
    assert call_runner(new, {"a": 1}, 2, 3, None) == ({"a": 1}, 2, 3, None) and got == [DIRECT]
    with sweep_checkpoints(None) as sw:
        assert call_runner(new, {}, 1, 0, 8, sw) == ({}, 1, 0, 8) and got[-1] is sw
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert call_runner(old, {}, 1, 0, 8) == ({}, 1, 0, 8)  # DIRECT: nothing to warn about
        with pytest.warns(DeprecationWarning, match="'<lambda>' takes no sweep= argument"):
            assert call_runner(old, {}, 1, 0, 8, sw) == ({}, 1, 0, 8)
