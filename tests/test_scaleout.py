"""Past one machine (docs/cluster.md): ``run --part I/N`` then ``merge`` is bitwise the whole run;
merge refuses parts of other runs, missing, duplicated or damaged parts; a part killed and
resumed leaves the merge unchanged; a 2-process ``jax.distributed`` run (the local launcher, CPU
devices on 127.0.0.1) is bitwise the 1-process run."""
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

import scaleout_tiny
from jaxbandits.core import fileio
from jaxbandits import experiments as X
from jaxbandits.apps.cli import main

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NAME = scaleout_tiny.NAME
COMMON = ["--seed", "3", "--no-progress", "--single-device"]


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory):
    """One persistent compilation cache for the module: a rerun part compiles nothing."""
    return str(tmp_path_factory.mktemp("jax-cache"))


@pytest.fixture(scope="module", autouse=True)
def _registered():
    """The tiny experiment is known while this module runs, and forgotten after it: other test
    modules of the same process (pytest-xdist workers run several) see the built-in table alone."""
    scaleout_tiny.register()
    yield
    X.unregister(NAME)


@pytest.fixture(autouse=True)
def _tiny(cache_dir, monkeypatch):
    monkeypatch.setenv("JAXBANDITS_CACHE_DIR", cache_dir)


def _run(out, *extra):
    return main(["run", NAME, *COMMON, "--out", str(out), *extra])


def _same_results(a, b):
    """Bitwise: every array of results.nc, every number of summary.json (timing aside: seconds)."""
    import xarray as xr

    sa, sb = (json.load(open(os.path.join(d, "summary.json"))) for d in (a, b))
    assert sa.pop("timing") and sb.pop("timing")
    assert sa == sb  # json floats are repr'd exactly: equal text is equal bits
    xa, xb = (xr.load_dataset(os.path.join(d, "results.nc"), engine="h5netcdf") for d in (a, b))
    assert sorted(xa.data_vars) == sorted(xb.data_vars)
    for v in xa.data_vars:
        assert xa[v].dtype == xb[v].dtype
        np.testing.assert_array_equal(xa[v].values, xb[v].values, err_msg=v)
    for k in set(xa.attrs) - {"timing"}:
        assert str(xa.attrs[k]) == str(xb.attrs[k]), k


@pytest.fixture(scope="module")
def parts(tmp_path_factory, cache_dir):
    """The whole run and its three parts (2 runs each), computed once for the module."""
    d = tmp_path_factory.mktemp("parts")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("JAXBANDITS_CACHE_DIR", cache_dir)
        assert _run(d / "whole") == 0
        for i in range(3):
            assert _run(d / f"p{i}", "--part", f"{i}/3") == 0
    return d


def test_parts_merge_bitwise_the_whole_run(parts, tmp_path, capsys):
    d = parts
    meta = json.load(open(d / "p1" / "part.json"))
    assert (meta["part"], meta["parts"], meta["first_run"], meta["n_runs"], meta["runs"]) == (1, 3, 2, 2, 6)
    assert not (d / "p1" / ".checkpoint").exists() and not (d / "p1" / "summary.json").exists()
    # the parts in any order
    assert main(["merge", str(d / "p2"), str(d / "p0"), str(d / "p1"), "--out", str(tmp_path / "m")]) == 0
    _same_results(d / "whole", tmp_path / "m")
    s = json.load(open(tmp_path / "m" / "summary.json"))
    assert s["runs"] == 6 and s["timing"]["parts"] == 3
    # and the means are not trivially equal: the parts' own means differ from the whole's
    own = [np.mean(np.load(d / f"p{i}" / "part.npz")["p0_regret"][:, -1]) for i in range(3)]
    assert len(set(own)) > 1
    assert "final regret" in capsys.readouterr().out


def _edit_part_json(folder, **changes):
    """Change part.json and re-sign it in the manifest (what a part of another run would hold)."""
    p = folder / "part.json"
    meta = json.load(open(p))
    for k, v in changes.items():
        if k == "versions":
            meta["versions"].update(v)
        else:
            meta[k] = v
    p.write_text(json.dumps(meta))
    man = folder / fileio.MANIFEST_NAME
    m = json.load(open(man))
    m["files"]["part.json"] = fileio.sha256_file(str(p))
    man.write_text(json.dumps(m))


def _merge_err(capsys, *dirs, out):
    assert main(["merge", *map(str, dirs), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("jaxbandits: error: merge: ") and "Traceback" not in err
    assert not (out / "summary.json").exists()
    return err


def test_merge_refuses(parts, tmp_path, capsys):
    d, out = parts, tmp_path / "m"
    # a missing part, a part given twice, a whole run's folder, a folder that does not exist
    assert "part(s) 1/3 missing (given: 0/3, 2/3)" in _merge_err(capsys, d / "p0", d / "p2", out=out)
    shutil.copytree(d / "p1", tmp_path / "p1-copy")
    err = _merge_err(capsys, d / "p0", d / "p1", tmp_path / "p1-copy", d / "p2", out=out)
    assert "part 1/3 is given twice" in err and "p1-copy" in err
    assert "is not a part folder (a whole run's results)" in _merge_err(capsys, d / "whole", d / "p1", out=out)
    assert "does not exist" in _merge_err(capsys, tmp_path / "nope", out=out)
    assert "is one of the parts" in _merge_err(capsys, d / "p0", d / "p1", d / "p2", out=d / "p2")
    # parts of other runs: another seed, config, number of parts, versions
    for change, msg in [({"seed": 4}, "seed is 4 there and 3 here"),
                        ({"config": {"means": [0.6, 0.4], "max_delay": 7}}, "its config differs (max_delay=7 there, 6 here)"),
                        ({"parts": 4}, "parts is 4 there and 3 here"),
                        ({"versions": {"jax": "0.0.1"}}, "computed with jax '0.0.1'"),
                        ({"experiment": "quickstart"}, "experiment is \"quickstart\" there")]:
        odd = tmp_path / f"odd-{next(iter(change))}"
        shutil.copytree(d / "p1", odd)
        _edit_part_json(odd, **change)
        err = _merge_err(capsys, d / "p0", odd, d / "p2", out=out)
        assert "is a part of another run" in err or "computed with" in err, err
        assert msg in err, err
    # a damaged file
    bad = tmp_path / "bad"
    shutil.copytree(d / "p2", bad)
    with open(bad / "part.npz", "r+b") as fh:
        fh.seek(-20, 2)
        fh.write(b"\0" * 8)
    assert "does not match the checksum" in _merge_err(capsys, d / "p0", d / "p1", bad, out=out)


def test_resume_after_kill_takes_the_chunks_from_the_checkpoint(parts, tmp_path, monkeypatch, capsys):
    """A part cut with --chunk 10 is lost (no summary, no printed command, as after kill -9); the
    rerun with --resume but without --chunk continues with the checkpoint's chunks."""
    from jaxbandits.engine import checkpoint as K

    save, dies_after_2 = scaleout_tiny.after_nth_call(K.Checkpoint, "save", 2, scaleout_tiny.interrupt)
    monkeypatch.setattr(K.Checkpoint, "save", dies_after_2)
    p0 = tmp_path / "p0"
    assert _run(p0, "--part", "0/3", "--chunk", "10") == 130
    monkeypatch.setattr(K.Checkpoint, "save", save)
    capsys.readouterr()
    assert _run(p0, "--part", "0/3", "--resume") == 0
    assert main(["merge", str(p0), str(parts / "p1"), str(parts / "p2"), "--out", str(tmp_path / "m")]) == 0
    _same_results(parts / "whole", tmp_path / "m")


def test_a_whole_run_and_a_part_do_not_replace_each_other(parts, tmp_path, capsys):
    """A whole run into a part's folder, or a part into a whole run's folder, is refused (as other
    settings are) unless --force: neither silently removes the other's files."""
    shutil.copytree(parts / "p1", tmp_path / "p1")
    shutil.copytree(parts / "whole", tmp_path / "whole")
    assert _run(tmp_path / "p1") == 2
    assert "holds part 1/3 of 'scaleout-tiny', not the whole run's results" in capsys.readouterr().err
    assert (tmp_path / "p1" / "part.npz").exists()
    assert _run(tmp_path / "whole", "--part", "0/3") == 2
    assert "holds the whole run's results of 'scaleout-tiny', not part 0/3" in capsys.readouterr().err
    assert (tmp_path / "whole" / "results.nc").exists()


def test_part_killed_then_resumed_leaves_the_merge_unchanged(parts, tmp_path, monkeypatch, capsys):
    from jaxbandits.engine import checkpoint as K

    d = parts
    # the machine is lost after the third chunk was saved
    save, dies_after_3 = scaleout_tiny.after_nth_call(K.Checkpoint, "save", 3, scaleout_tiny.interrupt)
    monkeypatch.setattr(K.Checkpoint, "save", dies_after_3)
    p1 = tmp_path / "p1"
    assert _run(p1, "--part", "1/3") == 130
    assert capsys.readouterr().err.strip() == "jaxbandits: interrupted"
    monkeypatch.setattr(K.Checkpoint, "save", save)
    assert (p1 / ".checkpoint" / "panel-0" / "state.npz").exists() and not (p1 / "part.json").exists()
    assert "unfinished part" in _merge_err(capsys, d / "p0", p1, d / "p2", out=tmp_path / "m")
    assert _run(p1, "--part", "1/3") == 2  # a fresh run into it is refused: resume it (or --force)
    assert "--resume" in capsys.readouterr().err
    assert _run(p1, "--part", "1/3", "--resume") == 0
    assert not (p1 / ".checkpoint").exists()
    assert main(["merge", str(d / "p0"), str(p1), str(d / "p2"), "--out", str(tmp_path / "m")]) == 0
    _same_results(d / "whole", tmp_path / "m")


@pytest.mark.parametrize("args,msg", [
    (["--part", "3/3"], "0 <= I < N"),
    (["--part", "one/3"], "--part must be I/N"),
    (["--part", "0/7"], "7 parts of 6 runs"),
    (["--part", "0/2", "--distributed"], "exclusive"),
    (["--coordinator", "127.0.0.1:1234"], "--coordinator applies to a --distributed run only"),
    (["--processes", "0"], "--processes must be >= 1"),
    (["--processes", "2", "--process-id", "1"], "leave out --distributed"),
    (["--part", "0/3", "--out-of", "p1"], "holds part 1/3"),
])
def test_option_errors(args, msg, parts, tmp_path, capsys):
    out = tmp_path / "x"
    if "--out-of" in args:  # into the folder of another part
        out, args = parts / args[-1], args[:-2]
    assert _run(out, *args) == 2
    err = capsys.readouterr().err
    assert msg in err and err.startswith("jaxbandits: error:"), err


def test_processes_option_is_stripped_for_the_children():
    from jaxbandits.apps.cli import _without_processes

    assert _without_processes(["run", "x", "--processes", "2", "--seed", "1"]) == ["run", "x", "--seed", "1"]
    assert _without_processes(["run", "x", "--processes=3"]) == ["run", "x"]


def test_two_processes_bitwise_one_process(parts, tmp_path, monkeypatch):
    """``jax.distributed`` on 127.0.0.1: two processes of one CPU device each shard the runs over
    the global mesh of two devices; process 0 gathers and writes; the results are bitwise those of
    the one-process run (``parts/whole``)."""
    from jaxbandits.experiments.distributed import launch_local

    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([ROOT, os.environ.get("PYTHONPATH", "")]))
    out = tmp_path / "dist"
    rc = launch_local(["run", NAME, "--seed", "3", "--no-progress", "--no-compile-cache", "--out", str(out)], 2,
                      devices_per_process=1, timeout=240,
                      command=[sys.executable, os.path.join(ROOT, "tests", "scaleout_tiny.py")])
    assert rc == 0
    s = json.load(open(out / "summary.json"))
    assert s["timing"]["processes"] == 2 and s["timing"]["devices"] == 2
    _same_results(parts / "whole", out)


def test_distributed_run_killed_then_resumed_equals_the_whole_run(parts, tmp_path):
    """A 2-process run whose process 0 (the one that writes the checkpoint) is SIGKILLed after its
    third chunk was saved, the other then lost too (as when a node of a job fails): rerun with
    --resume, every process reads the checkpoint, places its own runs' state, and the results are
    bitwise those of one uninterrupted process."""
    from jaxbandits.experiments.distributed import launch_local

    out = tmp_path / "dist"
    rc = scaleout_tiny.lose_process_0(["run", NAME, "--seed", "3", "--no-progress", "--no-compile-cache", "--out",
                                       str(out)], {"SCALEOUT_TINY_DIE_AFTER_SAVES": "3"})
    assert rc == -9  # killed by the hook, after its third save
    ck = out / ".checkpoint" / "panel-0"
    assert (ck / "records-2.npz").exists() and not (ck / "records-3.npz").exists()
    assert not (out / "summary.json").exists()
    rc = launch_local(["run", NAME, "--seed", "3", "--no-progress", "--no-compile-cache", "--out", str(out),
                       "--resume"], 2, devices_per_process=1, timeout=240,
                      command=[sys.executable, os.path.join(ROOT, "tests", "scaleout_tiny.py")])
    assert rc == 0
    assert not (out / ".checkpoint").exists()
    s = json.load(open(out / "summary.json"))
    assert s["timing"]["processes"] == 2
    _same_results(parts / "whole", out)


def test_processes_that_disagree_fail_together_rather_than_hang(tmp_path):
    """Process 1 asks to resume, process 0 does not (different commands): both stop at once with
    the same error naming what differs, instead of waiting for each other in a collective."""
    import subprocess

    from jaxbandits.experiments.distributed import free_port

    out, port = tmp_path / "dist", free_port()
    (out / ".checkpoint").mkdir(parents=True)  # something to resume, as far as process 1 is concerned
    env = dict(os.environ, JAX_PLATFORMS="cpu", XLA_FLAGS="--xla_force_host_platform_device_count=1",
               PYTHONPATH=os.pathsep.join([ROOT, os.environ.get("PYTHONPATH", "")]))
    procs = [subprocess.Popen([sys.executable, os.path.join(ROOT, "tests", "scaleout_tiny.py"), "run", NAME,
                               "--no-progress", "--no-compile-cache", "--out", str(out), "--force", "--distributed",
                               "--coordinator", f"127.0.0.1:{port}", "--num-processes", "2", "--process-id", str(i),
                               *(["--resume"] if i == 1 else [])], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for i in range(2)]
    try:
        errs = [p.communicate(timeout=120)[1] for p in procs]
    finally:
        for p in procs:
            p.kill()
    assert all(p.returncode == 2 for p in procs), errs
    assert all("the processes disagree on (checkpoint folder given, present, resume)" in e and "Traceback" not in e
               for e in errs), errs


def _free_slurm_port():
    """A free port that JAX's SLURM detection derives from a job id: ``61440 + id % 4096``."""
    import socket

    for port in range(61440 + os.getpid() % 4000, 65536):
        with socket.socket() as so:
            try:
                so.bind(("127.0.0.1", port))
            except OSError:
                continue
        return port
    pytest.skip("no free port in 61440..65535 for a simulated SLURM job")


@pytest.mark.slow
def test_distributed_under_slurm_reads_the_cluster_from_the_environment(parts, tmp_path):
    """``--distributed`` with no coordinator flags under SLURM (``srun``): JAX reads the coordinator
    (first host of ``SLURM_STEP_NODELIST``, port from ``SLURM_JOB_ID``), the process count and id
    from the environment. Two processes with the variables ``srun`` sets, on 127.0.0.1: the run
    equals the one-process run bitwise."""
    import subprocess

    port = _free_slurm_port()
    out = tmp_path / "slurm"
    procs = []
    for i in range(2):
        env = dict(os.environ, SLURM_JOB_ID=str(port - 61440), SLURM_STEP_NODELIST="127.0.0.1", SLURM_NTASKS="2",
                   SLURM_PROCID=str(i), SLURM_LOCALID=str(i), SLURM_STEP_NUM_NODES="1", JAX_PLATFORMS="cpu",
                   XLA_FLAGS="--xla_force_host_platform_device_count=1",
                   PYTHONPATH=os.pathsep.join([ROOT, os.environ.get("PYTHONPATH", "")]))
        procs.append(subprocess.Popen([sys.executable, os.path.join(ROOT, "tests", "scaleout_tiny.py"), "run", NAME,
                                       "--seed", "3", "--no-progress", "--no-compile-cache", "--distributed",
                                       "--out", str(out)], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                      text=True))
    try:
        res = [p.communicate(timeout=240) for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    assert all(p.returncode == 0 for p in procs), [r[1][-2000:] for r in res]
    assert "of 2 processes" in res[0][0]
    s = json.load(open(out / "summary.json"))
    assert s["timing"]["processes"] == 2
    _same_results(parts / "whole", out)


@pytest.mark.slow
def test_cli_processes_two_equals_one_process(tmp_path):
    """The command line's own launcher (``run --processes 2``) on a built-in experiment."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([ROOT, os.environ.get("PYTHONPATH", "")]),
               JAXBANDITS_CACHE_DIR=str(tmp_path / "cache"))
    args = [sys.executable, "-m", "jaxbandits.apps.cli", "run", "quickstart", "--runs", "6", "--horizon", "200",
            "--set", "window=30", "--no-progress"]
    for extra, out in ((["--single-device"], "one"), (["--processes", "2"], "two")):
        r = subprocess.run(args + extra + ["--out", str(tmp_path / out)], env=env, capture_output=True, text=True,
                           timeout=600)
        assert r.returncode == 0, r.stderr[-2000:]
    assert "of 2 processes" in r.stdout
    _same_results(tmp_path / "one", tmp_path / "two")


@pytest.mark.slow
def test_grid_points_split_bitwise():
    """A grid split by its points: ``simulate_grid`` on slices of the grid values is, row for row,
    the whole grid (each point's runs are keyed by the run index alone)."""
    import jax.numpy as jnp

    from jaxbandits import channels as C
    from jaxbandits import envs as E
    from jaxbandits.policies import classic as P
    from jaxbandits.engine import simulate_grid

    def build(gap):
        return E.bernoulli(jnp.stack([0.5 + gap, 0.5 - gap])), P.ucb1()

    gaps = np.linspace(0.05, 0.3, 6).astype(np.float32)
    whole = simulate_grid(build, {"gap": gaps}, C.attributed(), 300, 0, 5)
    a, b = (simulate_grid(build, {"gap": g}, C.attributed(), 300, 0, 5) for g in (gaps[:2], gaps[2:]))
    for f in ("regret", "reward", "pulls", "lost_to_W"):
        np.testing.assert_array_equal(getattr(whole, f), np.concatenate([getattr(a, f), getattr(b, f)]), err_msg=f)
    assert not np.array_equal(whole.regret[0], whole.regret[1])  # the points differ: the test can fail


def test_a_part_uses_the_whole_runs_calendar_width():
    """The default calendar width depends on the number of runs (all calendars within 2 GiB): a
    part of fewer runs would get the exact width where the whole run gets the delay law's quantile
    (and loses records to it). The part's channel carries the whole run's width."""
    from jaxbandits import channels as C
    from jaxbandits import delays as D
    from jaxbandits import envs as E
    from jaxbandits import experiments as X
    from jaxbandits.engine.round import problem
    from jaxbandits.experiments.parts import whole_width_channel
    from jaxbandits.policies import classic as P

    T = 2**20
    panel = X.Panel("", E.bernoulli([0.6, 0.4], delay=D.geometric(mean=50.0)), C.attributed(), {"UCB1": P.ucb1()})
    w = lambda ch, n: problem(panel.env, ch, P.ucb1(), T, n_runs=n).cspec.width
    whole, alone = w(C.attributed(), 300), w(C.attributed(), 100)
    assert whole < alone  # the premise: 100 runs alone would get a wider calendar
    ch = whole_width_channel(panel, T, 300, 100)
    assert ch.width == whole and w(ch, 100) == whole
    assert whole_width_channel(panel, T, 300, 300) is panel.channel  # the whole run: unchanged
