"""Results are never lost (jaxbandits/core/fileio.py): atomic files, saves as one unit, the output folder's
lock, other experiments' results refused without force, stale files removed, an unwritable
output folder found before anything runs. The faults are real: a child process is killed with
SIGKILL in the middle of a save, two processes run into one folder at once."""
import hashlib
import json
import os
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

from jaxbandits.core import fileio
from jaxbandits import experiments as X
from jaxbandits.experiments.results import Results

TESTS = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(TESTS)


def make_results(seed, experiment="exp-a", config=None, ratio=False, delayed=False, runs=2, T=120):
    """Small results built without simulating (saving them is what is tested)."""
    rng = np.random.default_rng(seed)
    curves = {}
    for lab in ("A", "B"):
        reg = np.cumsum(rng.random((runs, T)), 1)
        curves[lab] = {"regret": reg, "expected_regret": reg * 0.9, "reward": reg * 0.5,
                       "pulls": rng.integers(0, T, (runs, 2))}
        if delayed:
            curves[lab]["delayed_regret"] = reg * 1.1
    res = Results(experiment, dict(config or {"x": 1}), seed, runs, T, np.arange(1, T + 1), curves,
                  timing={"compile_s": 0.0, "run_s": 0.0}, versions={"test": 1})
    if ratio:
        res.ratio_to = "A"
    return res


def _env():
    return dict(os.environ, PYTHONPATH=os.pathsep.join([ROOT, TESTS, os.environ.get("PYTHONPATH", "")]))


def _sha(p):
    return hashlib.sha256(open(p, "rb").read()).hexdigest()


def _visible(d):
    return sorted(f for f in os.listdir(d) if not f.startswith("."))


def _assert_whole(d, seed, leftovers=False):
    """The folder holds, whole and consistent, the results of ``seed`` (as saved by make_results):
    no empty file, every file the one the manifest recorded, summary.json, results.nc and
    table.md all of that seed; no temporary file (unless ``leftovers``: a killed writer's, which
    the next writer removes)."""
    names = os.listdir(d)
    tmps = [f for f in names if f.startswith(fileio.TMP_PREFIX)]
    assert leftovers or not tmps, names
    for f in set(names) - set(tmps):
        assert os.path.getsize(os.path.join(d, f)) > 0, f
    m = json.load(open(os.path.join(d, fileio.MANIFEST_NAME)))
    assert m["state"] == "complete"
    assert sorted(m["files"]) == _visible(d)
    for f, sha in m["files"].items():
        assert _sha(os.path.join(d, f)) == sha, f"{f} is not the file saved with the others"
    assert json.load(open(os.path.join(d, "summary.json")))["seed"] == seed
    assert Results.load(d).seed == seed
    ref = make_results(seed)
    assert open(os.path.join(d, "table.md")).read() == f"{ref.experiment}: {ref.runs} runs, mean ± s.e.\n\n" + ref.table()
    png = open(os.path.join(d, "regret.png"), "rb").read()
    assert png.startswith(b"\x89PNG") and png.rstrip(b"\0").endswith(b"IEND\xaeB`\x82")


# ----------------------------------------------------------------------------- single files
def test_atomic_write_keeps_the_old_file_on_failure(tmp_path):
    p = tmp_path / "f.txt"
    fileio.write_text(p, "old")

    def broken(tmp):
        open(tmp, "w").write("half of the new")
        raise RuntimeError("disk full")

    with pytest.raises(RuntimeError):
        fileio.atomic_write(p, broken)
    assert p.read_text() == "old" and os.listdir(tmp_path) == ["f.txt"]
    assert fileio.atomic_write(p, lambda tmp: open(tmp, "w").write("new")) == str(p)
    assert p.read_text() == "new" and os.listdir(tmp_path) == ["f.txt"]


def test_save_writes_a_manifest_and_returns_the_paths(tmp_path):
    d = tmp_path / "r"
    paths = make_results(1, ratio=True).save(str(d))
    assert set(paths) == {"results", "summary", "table", "plot", "plot_ratio"}
    assert all(os.path.isfile(p) for p in paths.values())
    _assert_whole(str(d), 1)


# ----------------------------------------------------------------------------- kill -9 during a save
CHILD = r"""
import os, sys, time
import test_results_io as T
from jaxbandits.core import fileio

stage, out = sys.argv[1], sys.argv[2]

def stop(path=None):
    print("MARK", flush=True)
    time.sleep(600)

if stage == "netcdf":  # killed while results.nc is half written
    import xarray as xr
    def to_netcdf(self, path, *a, **k):
        with open(path, "wb") as fh:
            fh.write(b"\x89HDF\r\n\x1a\n" + b"\0" * 4096)
        stop()
    xr.Dataset.to_netcdf = to_netcdf
elif stage == "png":  # killed while a plot is half written (results.nc and the others are staged)
    from matplotlib.figure import Figure
    def savefig(self, path, *a, **k):
        with open(path, "wb") as fh:
            fh.write(b"\x89PNG\r\n\x1a\n" + b"\0" * 100)
        stop()
    Figure.savefig = savefig
elif stage == "commit":  # killed after the first file of the new set was renamed into place
    real = fileio._replace
    def replace(src, dst):
        real(src, dst)
        if not os.path.basename(dst).startswith("."):
            stop()
    fileio._replace = replace
T.make_results(2).save(out)
print("SAVED", flush=True)
"""


def _killed_save(out, stage):
    """A child process saves the results of seed 2 into ``out``; it is killed with SIGKILL at
    ``stage``. Returns when it is dead."""
    p = subprocess.Popen([sys.executable, "-c", CHILD, stage, out], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, env=_env())
    try:
        line = p.stdout.readline()
        assert line.strip() == "MARK", (line, p.stderr.read()[-3000:])
        os.kill(p.pid, signal.SIGKILL)
        assert p.wait(timeout=30) == -signal.SIGKILL
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()


@pytest.mark.parametrize("stage", ["netcdf", "png"])
def test_kill_while_writing_leaves_the_old_results_whole(tmp_path, stage):
    """SIGKILL while the new results' files are being written: the folder still holds the old
    results, every file whole (no 0-byte or truncated file, none from the new set); the killed
    writer's temporary file is cleaned up by the next use of the folder."""
    d = str(tmp_path / "r")
    make_results(1).save(d)
    before = {f: _sha(os.path.join(d, f)) for f in _visible(d)}
    _killed_save(d, stage)
    assert any(f.startswith(fileio.TMP_PREFIX) for f in os.listdir(d))  # it was killed mid-write
    assert {f: _sha(os.path.join(d, f)) for f in _visible(d)} == before
    _assert_whole(d, 1, leftovers=True)
    make_results(3).save(d)  # the folder is usable (the lock died with the process); leftovers removed
    _assert_whole(d, 3)


def test_kill_during_the_commit_rolls_forward_to_the_new_results(tmp_path):
    """SIGKILL after the first file of the new set was renamed into place (the folder is a mix
    on disk for a moment): the journal makes the next reader finish the save, so what is read is
    the new results, whole, never a mix."""
    d = str(tmp_path / "r")
    make_results(1).save(d)
    _killed_save(d, "commit")
    m = json.load(open(os.path.join(d, fileio.MANIFEST_NAME)))
    assert m["state"] == "committing"
    s = json.load(open(os.path.join(d, "summary.json")))["seed"]
    import xarray as xr

    nc = int(xr.load_dataset(os.path.join(d, "results.nc"), engine="h5netcdf").attrs["seed"])
    assert (nc, s) == (2, 1)  # the mix on disk that the journal repairs
    assert Results.load(d).seed == 2  # a reader finishes the save first
    _assert_whole(d, 2)


# ----------------------------------------------------------------------------- two runs, one folder
GATED = r"""
import os, sys, time
import jaxbandits.experiments as X
from jaxbandits.apps.cli import main

gate = sys.argv[1]
real = X.simulate
def simulate(*a, **k):  # hold the run here until the test has tried a second one
    print("RUNNING", flush=True)
    while not os.path.exists(gate):
        time.sleep(0.05)
    return real(*a, **k)
X.simulate = simulate
sys.exit(main(sys.argv[2:]))
"""


@pytest.mark.slow  # CI time (a CLI run held in a subprocess)
def test_second_concurrent_run_into_one_folder_fails_at_once(tmp_path):
    """A run holds its output folder; a second ``jaxbandits run`` into it, started meanwhile,
    exits 2 at once naming the folder, the first run's pid and what to do, without compiling;
    the first run then completes with its results whole."""
    out, gate = tmp_path / "same", tmp_path / "go"
    env = dict(_env(), JAXBANDITS_CACHE_DIR=str(tmp_path / "cache"), JAX_LOG_COMPILES="1")
    args = ["run", "classic-bernoulli", "--runs", "2", "--horizon", "50", "--out", str(out), "--no-progress",
            "--single-device"]
    first = subprocess.Popen([sys.executable, "-c", GATED, str(gate), *args], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, env=env)
    try:
        assert first.stdout.readline().strip() == "RUNNING", first.stderr.read()[-3000:]
        t0 = time.perf_counter()
        second = subprocess.run([sys.executable, "-m", "jaxbandits.apps.cli", *args], capture_output=True, text=True,
                                env=env, timeout=120)
        dt = time.perf_counter() - t0
        err = second.stderr.strip().splitlines()
        assert second.returncode == 2, second.stderr[-3000:]
        assert len(err) == 1 and "Traceback" not in second.stderr, err
        assert f"--out {str(out)!r}: in use by another jaxbandits run (pid {first.pid}" in err[0]
        assert "choose another output folder" in err[0]
        assert "Finished XLA compilation" not in second.stderr and not os.path.exists(out / "summary.json")
        assert dt < 30, dt  # no run: only the interpreter's start
        gate.touch()
        o, e = first.communicate(timeout=300)
        assert first.returncode == 0, e[-3000:]
    finally:
        gate.touch()
        if first.poll() is None:
            first.kill()
            first.wait()
    s = json.loads((out / "summary.json").read_text())
    assert s["experiment"] == "classic-bernoulli" and s["runs"] == 2 and s["horizon"] == 50
    assert Results.load(str(out)).runs == 2


def test_a_held_folder_is_refused_to_another_thread(tmp_path):
    d = str(tmp_path / "r")
    errors = []
    with fileio.output_folder(d):
        t = threading.Thread(target=lambda: errors.append(pytest.raises(fileio.FolderInUseError, make_results(1).save, d)))
        t.start()
        t.join()
        make_results(1).save(d)  # the holding thread itself may save (re-entrant)
    assert len(errors) == 1 and "in use" in str(errors[0].value)
    _assert_whole(d, 1)


# ----------------------------------------------------------------------------- other results, stale files
def test_other_experiments_results_are_refused_then_replaced_with_force(tmp_path):
    """A folder holding another experiment's results is refused (nothing touched); with force the
    new results replace them and no file of the old ones is left; a user's own file stays."""
    d = str(tmp_path / "r")
    make_results(1, experiment="exp-old", ratio=True, delayed=True).save(d)
    assert {"ratio.png", "delayed_regret.png"} <= set(_visible(d))
    (tmp_path / "r" / "notes.txt").write_text("mine")
    before = {f: _sha(os.path.join(d, f)) for f in _visible(d)}
    with pytest.raises(fileio.ResultsExistError, match=r"holds the results of experiment 'exp-old'.*--force"):
        make_results(2).save(d)
    assert {f: _sha(os.path.join(d, f)) for f in _visible(d)} == before
    make_results(2).save(d, force=True)
    assert _visible(d) == ["notes.txt", "regret.png", "results.nc", "summary.json", "table.md"]
    assert (tmp_path / "r" / "notes.txt").read_text() == "mine"
    (tmp_path / "r" / "notes.txt").unlink()
    _assert_whole(d, 2)


def test_same_experiment_other_settings_needs_force_rerun_does_not(tmp_path):
    d = str(tmp_path / "r")
    make_results(1, config={"x": 1}, ratio=True).save(d)
    with pytest.raises(fileio.ResultsExistError, match=r"x=1 there, x=2 now"):
        make_results(2, config={"x": 2}).save(d)
    make_results(2, config={"x": 1}).save(d)  # a rerun (another seed, runs or horizon): no force needed
    assert "ratio.png" not in _visible(d)  # but the files it does not write are gone
    _assert_whole(d, 2)


def test_a_folder_from_before_manifests_counts_as_results(tmp_path):
    """A folder saved by an earlier version (no manifest): its summary.json names the experiment;
    with force, the files jaxbandits wrote are removed, other files are not."""
    d = tmp_path / "r"
    d.mkdir()
    (d / "summary.json").write_text(json.dumps({"experiment": "exp-old", "config": {}}))
    (d / "ratio.png").write_bytes(b"old plot")
    (d / "mine.csv").write_text("1,2")
    with pytest.raises(fileio.ResultsExistError, match="exp-old"):
        make_results(1).save(str(d))
    make_results(1).save(str(d), force=True)
    assert _visible(str(d)) == ["mine.csv", "regret.png", "results.nc", "summary.json", "table.md"]


def test_run_refuses_other_results_before_running(tmp_path, monkeypatch):
    """experiments.run checks the folder first: other results, no force -> refused before any
    simulation; force -> run, and the old results' files are gone."""
    d = str(tmp_path / "r")
    make_results(1, experiment="exp-old", ratio=True).save(d)

    def no_simulation(*a, **k):
        raise AssertionError("simulated before the output folder was checked")

    with monkeypatch.context() as m:
        m.setattr(X.runner, "simulate", no_simulation)
        with pytest.raises(fileio.ResultsExistError, match="exp-old"):
            X.run("classic-bernoulli", runs=2, horizon=50, out=d)
    res = X.run("classic-bernoulli", runs=2, horizon=50, out=d, force=True)
    assert "ratio.png" not in _visible(d)
    assert Results.load(d).experiment == "classic-bernoulli" == res.experiment


# ----------------------------------------------------------------------------- unwritable output folders
def _bad_outs(tmp_path):
    f = tmp_path / "a-file"
    f.write_text("x")
    return [(str(f), "it is a file, not a folder"), (str(f / "sub"), "is a file, not a folder")]


def test_unwritable_out_is_refused_before_running(tmp_path, monkeypatch):
    def no_simulation(*a, **k):
        raise AssertionError("simulated before the output folder was checked")

    monkeypatch.setattr(X.runner, "simulate", no_simulation)
    for out, msg in _bad_outs(tmp_path):
        t0 = time.perf_counter()
        with pytest.raises(fileio.OutputFolderError, match=msg):
            X.run("quickstart", runs=2, horizon=50, out=out)
        assert time.perf_counter() - t0 < 1.0
        with pytest.raises(fileio.OutputFolderError, match=msg):
            fileio.check_writable(out)


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root may write anywhere")
def test_folder_without_write_permission_is_refused(tmp_path):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    try:
        for out in (ro, ro / "sub"):
            with pytest.raises(fileio.OutputFolderError, match="permission"):
                fileio.check_writable(out)
            with pytest.raises(fileio.OutputFolderError, match="permission"):
                make_results(1).save(str(out))
    finally:
        ro.chmod(0o700)


def test_permission_errors_are_named(tmp_path, monkeypatch):
    """(What root cannot test with chmod:) the OS refusing to create the folder or the lock file
    is reported as an OutputFolderError naming the folder."""
    def refuse(*a, **k):
        raise PermissionError(13, "Permission denied")

    with monkeypatch.context() as m:
        m.setattr(os, "makedirs", refuse)
        with pytest.raises(fileio.OutputFolderError, match=r"'.*new': no permission to create it"):
            make_results(1).save(str(tmp_path / "new"))
    (tmp_path / "there").mkdir()
    with monkeypatch.context() as m:
        m.setattr(os, "open", refuse)
        with pytest.raises(fileio.OutputFolderError, match="no permission to write in it"):
            make_results(1).save(str(tmp_path / "there"))


def test_cli_unwritable_out_fails_before_compiling(tmp_path):
    """``jaxbandits run --out FILE``: exit 2, one line naming --out, no compilation at all."""
    env = dict(_env(), JAXBANDITS_CACHE_DIR=str(tmp_path / "cache"), JAX_LOG_COMPILES="1")
    for out, msg in _bad_outs(tmp_path):
        r = subprocess.run([sys.executable, "-m", "jaxbandits.apps.cli", "run", "quickstart", "--runs", "2", "--horizon",
                            "50", "--out", out, "--no-progress"], capture_output=True, text=True, env=env, timeout=120)
        lines = r.stderr.strip().splitlines()
        assert r.returncode == 2 and len(lines) == 1 and lines[0].startswith(f"jaxbandits: error: --out {out!r}: ")
        assert msg in lines[0] and "Traceback" not in r.stderr
        assert "Compiling" not in r.stderr and "XLA compilation" not in r.stderr


def test_failed_run_leaves_no_empty_folder(tmp_path):
    d = tmp_path / "new" / "deeper"
    with pytest.raises(ValueError, match="window"):
        X.run("quickstart", runs=2, horizon=50, out=str(d), overrides={"window": -3})
    assert not (tmp_path / "new").exists()


def test_plot_command_replaces_regret_png_in_the_manifest(tmp_path, capsys):
    from jaxbandits.apps.cli import main

    d = str(tmp_path / "r")
    make_results(1).save(d)
    before = _sha(os.path.join(d, "regret.png"))
    assert main(["plot", d, "--logx"]) == 0
    assert _sha(os.path.join(d, "regret.png")) != before
    _assert_whole(d, 1)  # the manifest records the new plot
