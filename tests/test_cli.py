"""The command line: list, run (summary.json contract, results file, plot), plot, errors."""
import json
import subprocess
import sys

import numpy as np
import pytest

from jaxbandits import Results
from jaxbandits.cli import main


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
