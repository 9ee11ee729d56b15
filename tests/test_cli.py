"""The command line: list, run (summary.json contract, results file, plot), plot, errors, the
persistent compilation cache of ``run``."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from jaxbandits import Results
from jaxbandits.apps.cli import main


@pytest.fixture(autouse=True)
def _cache_in_tmp(tmp_path, monkeypatch):
    """``run`` turns the persistent compilation cache on: keep it out of the user's home."""
    monkeypatch.setenv("JAXBANDITS_CACHE_DIR", str(tmp_path / "jax-cache"))


def test_list(capsys):
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    assert "quickstart" in out and "classic-bernoulli" in out


def test_run_writes_contract(tmp_path, capsys):
    out = tmp_path / "qs"
    rc = main(["run", "quickstart", "--runs", "8", "--horizon", "300", "--seed", "3", "--out", str(out),
               "--set", "window=50", "--no-progress", "--single-device"])
    assert rc == 0
    s = json.loads((out / "summary.json").read_text())
    for k in ("experiment", "config", "seed", "runs", "horizon", "metric", "policies", "timing"):
        assert k in s
    assert s["experiment"] == "quickstart" and s["runs"] == 8 and s["horizon"] == 300 and s["seed"] == 3
    assert s["config"]["window"] == 50
    for lab, v in s["policies"].items():
        for k in ("final_regret_mean", "final_regret_se", "t", "regret_mean", "regret_se"):
            assert k in v
        assert v["t"][-1] == 300 and len(v["regret_mean"]) == len(v["t"])
    for k in ("compile_s", "run_s", "run_steps_per_s"):
        assert s["timing"][k] > 0
    assert (out / "regret.png").stat().st_size > 1000
    res = Results.load(str(out))
    assert np.isclose(res.summary()["policies"]["UCB1"]["final_regret_mean"], s["policies"]["UCB1"]["final_regret_mean"])
    assert main(["plot", str(out)]) == 0


@pytest.mark.parametrize("args,msg", [
    (["run", "nope"], "unknown experiment"),
    (["run", "quickstart", "--set", "window"], "key=value"),
    (["run", "quickstart", "--set", "bogus=1"], "unknown config key"),
    (["run", "quickstart", "--runs", "0"], "--runs"),
    (["run", "quickstart", "--horizon", "0"], "--horizon"),
    (["run", "quickstart", "--set", "window=-3"], "window"),
])
def test_errors(args, msg, capsys):
    assert main(args + ["--no-progress", "--single-device"]) == 2
    assert msg in capsys.readouterr().err


def test_console_script_installed():
    """The installed ``jaxbandits`` console script (pyproject [project.scripts]) next to this
    interpreter runs the CLI: ``list`` prints the experiments, a bad command exits 2."""
    from pathlib import Path

    script = Path(sys.executable).parent / "jaxbandits"
    assert script.is_file(), f"console script not installed at {script} (pip install -e .)"
    r = subprocess.run([str(script), "list"], capture_output=True, text=True)
    assert r.returncode == 0 and "quickstart" in r.stdout and "bayes-ts-shared-delay" in r.stdout, r.stderr
    r = subprocess.run([str(script), "run", "no-such-experiment", "--no-progress"], capture_output=True, text=True)
    assert r.returncode == 2 and "unknown experiment" in r.stderr


def _cli_run(out, cache, *extra):
    """``jaxbandits run quickstart`` in a fresh interpreter (the CLI's own process, as a user runs
    it); returns (summary.json, stderr) with JAX logging every compilation."""
    env = dict(os.environ, JAXBANDITS_CACHE_DIR=str(cache), JAX_LOG_COMPILES="1")
    r = subprocess.run([sys.executable, "-m", "jaxbandits.apps.cli", "run", "quickstart", "--runs", "4", "--horizon", "200",
                        "--out", str(out), "--no-progress", *extra], capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads((out / "summary.json").read_text()), r.stderr


@pytest.mark.slow  # CI time (two CLI runs in subprocesses)
def test_second_run_is_served_by_the_compile_cache(tmp_path):
    """Two identical ``jaxbandits run`` in two processes: the first compiles and fills the cache
    folder, every XLA compilation of the second is a persistent-cache hit, and the second's
    recorded compile time is under a second and under half the first's (tracing remains)."""
    cache = tmp_path / "cache"
    s1, e1 = _cli_run(tmp_path / "a", cache)
    assert cache.is_dir() and any(cache.iterdir())
    assert "Persistent compilation cache hit" not in e1
    s2, e2 = _cli_run(tmp_path / "b", cache)
    n_compiles = e2.count("Finished XLA compilation")
    assert n_compiles > 0 and e2.count("Persistent compilation cache hit") == n_compiles, e2[-3000:]
    c1, c2 = s1["timing"]["compile_s"], s2["timing"]["compile_s"]
    assert c2 < 1.0 and c2 < 0.5 * c1, (c1, c2)
    assert s1["policies"] == s2["policies"]  # same numbers from the cached programs


@pytest.mark.slow  # CI time (a CLI run in a subprocess)
def test_no_compile_cache_writes_nothing(tmp_path):
    cache = tmp_path / "cache"
    _, err = _cli_run(tmp_path / "a", cache, "--no-compile-cache")
    assert not cache.exists() or not any(cache.iterdir())
    assert "Persistent compilation cache hit" not in err


def test_compile_cache_in_process_restores_jax_settings(tmp_path, capsys):
    """``main(["run", ...])`` called inside a process whose own JAX cache is already in use (at
    another folder) caches into the jaxbandits folder while it runs, then leaves JAX's settings
    and its cache as it found them: the process's later programs go to its own folder again."""
    import jax
    from jax.experimental.compilation_cache import compilation_cache as cc

    keys = ("jax_enable_compilation_cache", "jax_compilation_cache_dir",
            "jax_persistent_cache_min_compile_time_secs", "jax_persistent_cache_min_entry_size_bytes")
    original = {k: getattr(jax.config, k) for k in keys}
    mine, ours = tmp_path / "process-own-cache", tmp_path / "jax-cache"  # ours: the autouse JAXBANDITS_CACHE_DIR
    count = lambda d: len(list(d.iterdir())) if d.exists() else 0
    try:
        jax.config.update("jax_compilation_cache_dir", str(mine))
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
        cc.reset_cache()
        jax.jit(lambda x: x * 3.0 + 1.0)(1.0)
        n_mine = count(mine)
        assert n_mine > 0  # the process's own cache is initialised and in use
        before = {k: getattr(jax.config, k) for k in keys}
        from jaxbandits import engine

        engine.clear_cache()  # an equal run earlier in this process would otherwise compile nothing
        jax.clear_caches()
        assert main(["run", "classic-bernoulli", "--runs", "2", "--horizon", "50", "--out", str(tmp_path / "o"),
                     "--no-progress", "--single-device"]) == 0
        assert f"compilation cache {ours}" in capsys.readouterr().out
        n_ours = count(ours)
        assert n_ours > 0 and count(mine) == n_mine  # the run's programs went to the jaxbandits folder
        assert {k: getattr(jax.config, k) for k in keys} == before
        jax.jit(lambda x: x * 5.0 - 2.0)(1.0)  # a new program after the run: back to the process's folder
        assert count(mine) > n_mine and count(ours) == n_ours
    finally:
        for k, v in original.items():
            jax.config.update(k, v)
        cc.reset_cache()


def test_compile_cache_location(tmp_path, monkeypatch):
    from jaxbandits.apps.cli import compile_cache_dir

    monkeypatch.setenv("JAXBANDITS_CACHE_DIR", str(tmp_path / "mine"))
    assert compile_cache_dir() == str(tmp_path / "mine")
    monkeypatch.delenv("JAXBANDITS_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    import jax

    if jax.config.jax_compilation_cache_dir is None:  # a user's JAX_COMPILATION_CACHE_DIR would win
        assert compile_cache_dir() == str(tmp_path / "xdg" / "jaxbandits" / "jax")
        monkeypatch.delenv("XDG_CACHE_HOME")
        monkeypatch.setenv("HOME", str(tmp_path / "home"))
        assert compile_cache_dir() == str(tmp_path / "home" / ".cache" / "jaxbandits" / "jax")


def test_sweeps_honour_horizon(tmp_path):
    """A sweep given ``--horizon`` runs at that horizon alone, the experiment's default horizon
    included (it was passed on as "not given" before); without it, the sweep's own list."""
    from jaxbandits import experiments as X
    from jaxbandits.report.sweeps import SweepResults

    seen = []

    def runner(cfg, runs, seed, horizon):
        seen.append(horizon)
        Ts = [16, 32] if horizon is None else [horizon]
        res = SweepResults("toy-sweep", dict(cfg), seed, runs, "T", Ts)
        for i, T in enumerate(Ts):
            res.add("A", i, np.full(runs, float(T)))
        return res

    X.register(X.Experiment("toy-sweep", "a sweep over T", None, {"k": 1}, horizon=32, runs=2, runner=runner))
    try:
        base = ["run", "toy-sweep", "--no-progress", "--single-device", "--no-compile-cache"]
        assert main(base + ["--out", str(tmp_path / "a")]) == 0
        assert main(base + ["--out", str(tmp_path / "b"), "--horizon", "32"]) == 0
        assert main(base + ["--out", str(tmp_path / "c"), "--horizon", "8"]) == 0
    finally:
        X.unregister("toy-sweep")
    assert seen == [None, 32, 8]
    t = lambda d: json.loads((tmp_path / d / "summary.json").read_text())["policies"]["A"]["t"]
    assert (t("a"), t("b"), t("c")) == ([16.0, 32.0], [32.0], [8.0])
