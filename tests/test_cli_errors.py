"""One error format for the command line: every bad invocation exits 2 with one or two lines on
stderr naming the parameter (or the file, row and column) and what is allowed, never a
traceback; ``--debug`` shows the traceback; Ctrl-C exits 130 with one line."""
import os
import subprocess
import sys

import pytest

import jaxbandits.experiments as X
from jaxbandits.apps.cli import main

GOOD = "arm,play_time,conversion_time,cutoff\n0,1,2,10\n1,2,,10\n0,3,5,10\n"
CSV = {
    "good.csv": GOOD,
    "nan_time.csv": "arm,play_time,conversion_time,cutoff\n0,1,2,10\n1,,3,10\n",
    "nan_word.csv": "arm,play_time,conversion_time,cutoff\n0,1,2,10\n1,1,3,nan\n",
    "frac_time.csv": "arm,play_time,conversion_time,cutoff\n0,1,2,10\n1,1,3.5,10\n0,2,4.5,10\n",
    "frac_arm.csv": "arm,play_time,conversion_time,cutoff\n0,1,2,10\n1.5,1,3,10\n",
    "nan_arm.csv": "arm,play_time,conversion_time,cutoff\n0,1,2,10\nnan,1,3,10\n",
    "text_time.csv": "arm,play_time,conversion_time,cutoff\n0,1,2,10\n1,soon,3,10\n",
    "inf_time.csv": "arm,play_time,conversion_time,cutoff\n0,1,2,10\n1,1,inf,10\n",
    "before.csv": "arm,play_time,conversion_time,cutoff\n0,1,2,10\n1,5,3,10\n",
    "no_cutoff.csv": "arm,play_time,conversion_time\n0,1,2\n",
    "empty.csv": "",
}

# (argv, what the message must name); files are relative to a temporary working folder
BAD = [  # a bare `jaxbandits` lists the commands (tests/test_first_hour.py)
    (["bogus"], "invalid choice: 'bogus'"),
    (["run"], "name"),
    (["run", "nope"], "unknown experiment 'nope'"),
    (["run", "quickstart", "--runs", "x"], "--runs"),
    (["run", "quickstart", "--runs", "0"], "--runs must be >= 1"),
    (["run", "quickstart", "--horizon", "0"], "--horizon must be >= 1"),
    (["run", "quickstart", "--horizon", "1e3"], "--horizon"),
    (["run", "quickstart", "--seed", "-1"], "--seed must be >= 0"),
    (["run", "quickstart", "--bogus"], "--bogus"),
    (["run", "quickstart", "--set", "window"], "--set expects key=value"),
    (["run", "quickstart", "--set", "bogus=1"], "unknown config key 'bogus'"),
    (["run", "quickstart", "--set", "window=-3"], "window"),
    (["run", "pikeburke2018-fig3a", "--set", "mean_delays=[]"], "mean_delays"),
    (["run", "bayes-fit-recovery", "--horizon", "5"], "--horizon"),
    (["run", "quickstart", "--out", "a-file"], "--out 'a-file': it is a file"),
    (["run", "quickstart", "--out", "a-file/sub"], "--out 'a-file/sub'"),
    (["plot"], "dir"),
    (["plot", "missing"], "'missing' does not exist"),
    (["plot", "empty-dir"], "holds no results.nc"),
    (["fit", "missing.csv"], "missing.csv: no such file"),
    (["fit", "empty.csv"], "empty.csv: empty file"),
    (["fit", "no_cutoff.csv"], "missing column(s) ['cutoff']"),
    (["fit", "nan_time.csv"], "nan_time.csv: row 2 (line 3), column 'play_time'"),
    (["fit", "nan_word.csv"], "nan_word.csv: row 2 (line 3), column 'cutoff'"),
    (["fit", "frac_time.csv", "--discrete"], "frac_time.csv: row 2 (line 3), column 'conversion_time'"),
    (["fit", "frac_arm.csv"], "frac_arm.csv: row 2 (line 3), column 'arm'"),
    (["fit", "nan_arm.csv"], "nan_arm.csv: row 2 (line 3), column 'arm': missing arm label"),
    (["fit", "text_time.csv"], "text_time.csv: row 2 (line 3), column 'play_time'"),
    (["fit", "inf_time.csv"], "inf_time.csv: row 2 (line 3), column 'conversion_time'"),
    (["fit", "before.csv"], "before.csv: row 2 (line 3), column 'conversion_time'"),
    (["fit", "good.csv", "--chains", "0"], "--chains must be >= 1"),
    (["fit", "good.csv", "--warmup", "-1"], "--warmup must be >= 0"),
    (["fit", "good.csv", "--method", "mh"], "--method"),
    (["fit", "good.csv", "--resolution", "fine"], "--resolution"),
    (["fit", "good.csv", "--column", "arm"], "--column takes FIELD=NAME"),
    (["fit", "good.csv", "--column", "variant=arm"], "unknown key 'variant'"),
    (["fit", "good.csv", "--window", "abc"], "--window"),
    (["fit", "good.csv", "--out", "a-file"], "--out 'a-file'"),
]


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("JAXBANDITS_CACHE_DIR", str(tmp_path / "jax-cache"))
    for name, text in CSV.items():
        (tmp_path / name).write_text(text)
    (tmp_path / "a-file").write_text("x")
    (tmp_path / "empty-dir").mkdir()
    return tmp_path


def _check(err, must):
    lines = err.strip().splitlines()
    assert 1 <= len(lines) <= 2, err
    assert lines[0].startswith(("jaxbandits: error: ", "jaxbandits run: error: ", "jaxbandits plot: error: ",
                                "jaxbandits fit: error: ")), err
    assert must in lines[0], err
    assert "Traceback" not in err


@pytest.mark.parametrize("argv,must", BAD, ids=[" ".join(a) or "(nothing)" for a, _ in BAD])
def test_bad_invocations_exit_2_with_a_named_parameter(argv, must, workdir, capsys, monkeypatch):
    def no_simulation(*a, **k):
        raise AssertionError("simulated before the error was found")

    monkeypatch.setattr(X.runner, "simulate", no_simulation)
    assert main(argv + (["--no-progress"] if argv[:1] in (["run"], ["fit"]) and len(argv) > 1 else [])) == 2
    _check(capsys.readouterr().err, must)
    assert not (workdir / "results").exists()  # a failed command leaves no output folder behind


def test_unexpected_errors_are_two_lines_and_debug_shows_the_traceback(workdir, capsys, monkeypatch):
    def broken(*a, **k):
        raise RuntimeError("something inside broke")

    monkeypatch.setattr(X, "run", broken)
    args = ["run", "quickstart", "--runs", "2", "--horizon", "50", "--no-progress"]
    assert main(args) == 2
    err = capsys.readouterr().err
    _check(err, "unexpected RuntimeError: something inside broke")
    assert "--debug" in err.splitlines()[1]
    assert main(args + ["--debug"]) == 2
    err = capsys.readouterr().err
    assert "Traceback (most recent call last)" in err and "something inside broke" in err
    assert main(["--debug", "run", "quickstart", "--runs", "0"]) == 2  # before the command, a usual error
    err = capsys.readouterr().err
    assert "Traceback" in err and err.strip().splitlines()[-1] == "jaxbandits: error: --runs must be >= 1, got 0"


def test_ctrl_c_exits_130_with_one_line(workdir, capsys, monkeypatch):
    def interrupted(*a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr(X, "run", interrupted)
    assert main(["run", "quickstart", "--no-progress"]) == 130
    assert capsys.readouterr().err.strip() == "jaxbandits: interrupted"


def test_help_still_exits_0(capsys):
    with pytest.raises(SystemExit) as e:
        main(["run", "--help"])
    assert e.value.code == 0 and "--force" in capsys.readouterr().out


def test_console_errors_in_a_fresh_process(workdir):
    """The installed command as a user runs it: ``plot`` of a missing folder (a traceback before)
    exits 2 with one line; with ``--debug`` the traceback is shown."""
    script = os.path.join(os.path.dirname(sys.executable), "jaxbandits")
    cmd = [script] if os.path.isfile(script) else [sys.executable, "-m", "jaxbandits.apps.cli"]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.dirname(os.path.dirname(__file__)),
                                                       os.environ.get("PYTHONPATH", "")]))
    r = subprocess.run(cmd + ["plot", "missing"], capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 2 and r.stderr.strip() == "jaxbandits: error: plot: results folder 'missing' does not exist"
    r = subprocess.run(cmd + ["plot", "missing", "--debug"], capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 2 and "Traceback" in r.stderr and "FileNotFoundError" in r.stderr
