"""Interrupt and resume: checkpoints at chunk ends; a resumed run equals an uninterrupted one bit
for bit (API with a stop request, sharded over 2 devices, the CLI under SIGINT and under kill -9)."""
import json
import os
import signal
import subprocess
import sys
import time

import jax
import numpy as np
import pytest

import jaxbandits as jb
from jaxbandits import channels as C
from jaxbandits import delays as D
from jaxbandits import envs as E
from jaxbandits.engine.checkpoint import Interrupted
from jaxbandits.policies import classic as P
from jaxbandits.policies import conversions as V

FIELDS = ("regret", "expected_regret", "reward", "pulls", "delayed_regret", "lost_to_W")


def _setup():
    law = D.geometric(mean=20.0)
    return (E.conversions([0.5, 0.4, 0.3], law), C.conversions(window=50),
            {"TS": P.thompson(), "DKLUCB": V.delayed_klucb(law, 50)})


def _stop_after(n):
    calls = {"n": 0}

    def stop():
        calls["n"] += 1
        return calls["n"] >= n

    return stop


def test_stop_then_resume_is_bitwise_the_uninterrupted_run(tmp_path):
    env, ch, pols = _setup()
    kw = dict(record=("log", 40), chunk=90)
    whole = jb.simulate(env, ch, pols, 900, jax.random.key(3), 6, **kw)
    with pytest.raises(Interrupted, match="stopped after 360 of 900 rounds"):
        jb.simulate(env, ch, pols, 900, jax.random.key(3), 6, checkpoint=tmp_path, stop=_stop_after(4), **kw)
    assert sorted(os.listdir(tmp_path)) == ["fingerprint.json"] + [f"records-{i}.npz" for i in range(4)] + ["state.npz"]
    # a second interruption, then the rest
    with pytest.raises(Interrupted, match="stopped after 540"):
        jb.simulate(env, ch, pols, 900, jax.random.key(3), 6, checkpoint=tmp_path, resume=True,
                    stop=_stop_after(2), **kw)
    res = jb.simulate(env, ch, pols, 900, jax.random.key(3), 6, checkpoint=tmp_path, resume=True, **kw)
    for lab in pols:
        for f in FIELDS:
            np.testing.assert_array_equal(getattr(whole[lab], f), getattr(res[lab], f), err_msg=f"{lab} {f}")


def test_resume_refuses_another_run(tmp_path):
    env, ch, pols = _setup()
    with pytest.raises(Interrupted):
        jb.simulate(env, ch, pols, 400, jax.random.key(3), 4, chunk=100, checkpoint=tmp_path, stop=_stop_after(1))
    with pytest.raises(ValueError, match="another run: key"):
        jb.simulate(env, ch, pols, 400, jax.random.key(4), 4, chunk=100, checkpoint=tmp_path, resume=True)
    with pytest.raises(ValueError, match="another run: n_runs"):
        jb.simulate(env, ch, pols, 400, jax.random.key(3), 5, chunk=100, checkpoint=tmp_path, resume=True)
    with pytest.raises(ValueError, match="resume=True needs the checkpoint"):
        jb.simulate(env, ch, pols, 400, jax.random.key(3), 4, chunk=100, checkpoint=tmp_path / "none", resume=True)


_SHARDED = r"""
import sys, numpy as np, jax
import jaxbandits as jb
from jaxbandits import channels as C, delays as D, envs as E
from jaxbandits.policies import classic as P
from jaxbandits.engine.checkpoint import Interrupted
assert jax.local_device_count() == 2
env = E.conversions([0.5, 0.4, 0.3], D.geometric(mean=20.0))
pol = P.thompson()
whole = jb.simulate(env, C.conversions(window=50), pol, 600, 1, 32, chunk=100, shard=True)
n = {"k": 0}
def stop():
    n["k"] += 1
    return n["k"] == 3
try:
    jb.simulate(env, C.conversions(window=50), pol, 600, 1, 32, chunk=100, shard=True, checkpoint=sys.argv[1], stop=stop)
    raise SystemExit("not interrupted")
except Interrupted:
    pass
res = jb.simulate(env, C.conversions(window=50), pol, 600, 1, 32, chunk=100, shard=True, checkpoint=sys.argv[1], resume=True)
assert res.timing["devices"] == 2
for f in ("regret", "pulls", "reward", "delayed_regret"):
    assert np.array_equal(getattr(whole, f), getattr(res, f)), f
print("OK")
"""


def test_sharded_resume_is_bitwise(tmp_path):
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=2", JAX_PLATFORMS="cpu")
    r = subprocess.run([sys.executable, "-c", _SHARDED, str(tmp_path / "ck")], capture_output=True, text=True,
                       env=env, timeout=300)
    assert r.returncode == 0 and "OK" in r.stdout, r.stderr[-3000:]


def _cli(out, *extra):
    return [sys.executable, "-m", "jaxbandits.apps.cli", "run", "quickstart", "--runs", "8", "--horizon", "60000",
            "--chunk", "1000", "--out", str(out), "--no-progress", "--no-compile-cache", "--single-device", *extra]


def _wait_for(path, proc, timeout=240):
    t0 = time.time()
    while not os.path.exists(path):
        assert proc.poll() is None, proc.communicate()[1][-3000:]
        assert time.time() - t0 < timeout, "no checkpoint appeared"
        time.sleep(0.05)


@pytest.mark.slow  # the CLI round trips (3 processes each); the API tests above keep the default suite's coverage
@pytest.mark.parametrize("how", ["sigint", "kill9"])
def test_cli_interrupt_then_resume_equals_uninterrupted(tmp_path, how):
    ref = subprocess.run(_cli(tmp_path / "ref"), capture_output=True, text=True, timeout=600)
    assert ref.returncode == 0, ref.stderr[-3000:]
    out = tmp_path / "cut"
    proc = subprocess.Popen(_cli(out), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    _wait_for(out / ".checkpoint" / "panel-0" / "records-2.npz", proc)
    if how == "sigint":
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 130, err[-3000:]
        assert "resume with: " in err and "Traceback" not in err
        summary = json.load(open(out / "summary.json"))
        assert summary["partial"] is True and summary["resume"].endswith("--resume")
        assert 0 < summary["rounds_done_in_panel"] < 60000
    else:
        proc.kill()  # kill -9: at most the chunk in flight is lost
        proc.communicate(timeout=60)
        assert not (out / "summary.json").exists()
    res = subprocess.run(_cli(out, "--resume"), capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    assert not (out / ".checkpoint").exists()  # removed once the results are written
    a, b = json.load(open(tmp_path / "ref" / "summary.json")), json.load(open(out / "summary.json"))
    for lab in a["policies"]:
        for k in ("regret_mean", "final_regret_runs", "mean_pulls", "regret_se"):
            assert a["policies"][lab][k] == b["policies"][lab][k], (lab, k)
    import xarray as xr

    with xr.open_dataset(tmp_path / "ref" / "results.nc") as x, xr.open_dataset(out / "results.nc") as y:
        for v in ("regret", "reward", "final_pulls"):
            np.testing.assert_array_equal(x[v].values, y[v].values, err_msg=v)


@pytest.mark.slow
def test_cli_sweep_interrupt_then_resume_replays_the_saved_settings(tmp_path):
    """A sweep (one simulation per setting): SIGINT after two settings are saved; --resume replays
    them from the checkpoint and runs the rest; the summary equals an uninterrupted run's."""
    base = [sys.executable, "-m", "jaxbandits.apps.cli", "run", "thune2019-bounds", "--runs", "2", "--set", "log2_T=10",
            "--set", "delays=[0, 8, 32, 64]", "--no-progress", "--no-compile-cache", "--single-device"]
    ref = subprocess.run(base + ["--out", str(tmp_path / "ref")], capture_output=True, text=True, timeout=600)
    assert ref.returncode == 0, ref.stderr[-3000:]
    proc = subprocess.Popen(base + ["--out", str(tmp_path / "cut")], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    d = tmp_path / "cut" / ".checkpoint" / "sweep"
    t0 = time.time()
    while not (d.is_dir() and len([f for f in os.listdir(d) if f.startswith("call-")]) >= 2):
        assert proc.poll() is None, proc.communicate()[1][-3000:]
        assert time.time() - t0 < 300
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130 and "before the next simulation of the sweep" in err, err[-3000:]
    assert json.load(open(tmp_path / "cut" / "summary.json"))["partial"] is True
    res = subprocess.run(base + ["--out", str(tmp_path / "cut"), "--resume"], capture_output=True, text=True,
                         timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    a, b = (json.load(open(tmp_path / x / "summary.json")) for x in ("ref", "cut"))
    for s in (a, b):
        s.pop("timing", None)
    assert a == b
    assert not (tmp_path / "cut" / ".checkpoint").exists()


def test_sigterm_and_sigint_request_a_stop_and_handlers_are_restored():
    from jaxbandits.engine.checkpoint import graceful_stop

    before = signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)
    for sig in (signal.SIGTERM, signal.SIGINT):
        with graceful_stop() as stop:
            assert not stop()
            os.kill(os.getpid(), sig)
            time.sleep(0.05)
            assert stop()
    with graceful_stop() as stop:  # a second SIGINT aborts at once
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.05)
        with pytest.raises(KeyboardInterrupt):
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.05)
    assert (signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)) == before
