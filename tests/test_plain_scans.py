"""benchmarks/plain_scans.py times the library beside a hand-written plain ``vmap(lax.scan)`` of
every algorithm of the papers; the speeds compare only if each plain scan is the same algorithm on
the same world. Here, at a small size, each plain scan's mean final regret must agree with the
library's (|z| < 4, 200 runs), not trivially (positive regret), and the check must be able to
fail: a plain scan of another algorithm on the same world is told apart."""
import functools
import importlib.util
import json
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxbandits as jb

_spec = importlib.util.spec_from_file_location(
    "plain_scans", Path(__file__).resolve().parents[1] / "benchmarks" / "plain_scans.py")
P = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(P)

RUNS, N_REC = 200, 4
KEY = jax.random.key(7)


def _small(name):
    """``(K, T)`` of the check: the algorithm's own (ODAAF: K=3, T=2000 so that phases end and
    eliminations are random; ARS-UCB: K=5, T=1500, past its clipped round robin), else K=10, T=300."""
    return P.ALGOS[name].check


@functools.lru_cache(maxsize=None)  # shared by the tests below (one worker runs this file)
def _library(name, K, T):
    env, ch, pol = P.ALGOS[name].setup(K, T)
    out = jb.simulate(env, ch, pol, T, KEY, RUNS, record=P.stride(T, N_REC), path="scan", delayed_regret=False)
    return out


@functools.lru_cache(maxsize=None)
def _plain(name, K, T):
    run = P.ALGOS[name].plain(K, T, N_REC)
    return np.asarray(P.plain_program(run)(KEY, jnp.arange(RUNS, dtype=jnp.int32)))


#: variants whose code paths the default rows already cover (Skipper: DEW with a mask; ODAAF-V:
#: ODAAF-B's bridge with another schedule; ODAAF-naive: ODAAF's machine with another schedule;
#: Discarding-KLUCB: Discarding-UCB's ring with mathlib's Poisson KL-UCB index), run with -m slow
#: to keep this file under a minute (every row costs two compiles, 2-4 s on 2 cores)
_SLOW = {"Skipper", "ODAAF-V", "ODAAF-naive", "Discarding-KLUCB"}


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.slow) if n in _SLOW else n for n in P.ALGOS])
def test_plain_scan_agrees_with_the_library(name):
    K, T = _small(name)
    out, reg = _library(name, K, T), _plain(name, K, T)
    assert reg.shape == (RUNS, len(out.t))  # the same record points
    lib = np.asarray(out.regret, np.float64)
    for j in range(len(out.t)):  # every record point, not only the last
        z = P.z_score(lib[:, j], reg[:, j])
        assert abs(z) < 4, f"{name}: mean regret at t={out.t[j]} differs by {z:.1f} standard errors"
    assert reg[:, -1].mean() > 1.0  # not trivially zero
    # the plain scans draw from the library's streams with its float operations: most runs take the
    # very same actions (all of them here; the library's Kahan sums may round a tie apart)
    same = np.isclose(lib[:, -1], reg[:, -1], rtol=1e-4, atol=1e-3)
    assert same.mean() >= 0.5, f"{name}: only {same.mean():.0%} of the runs end with the library's regret"


def test_a_different_algorithm_is_told_apart():
    """The check can fail: the plain Discarding-KLUCB against the library's Discarding-UCB, and the
    plain ODAAF-B against the library's ODAAF (same worlds, same streams: only the algorithm
    differs) are refused."""
    for lib_name, plain_name in (("Discarding-UCB", "Discarding-KLUCB"), ("ODAAF", "ODAAF-B")):
        K, T = _small(lib_name)
        z = P.z_score(_library(lib_name, K, T).final("regret"), _plain(plain_name, K, T)[:, -1])
        assert abs(z) > 4, (lib_name, plain_name, z)


def test_z_score():
    a, b = np.array([1.0, 2.0, 3.0, 4.0]), np.array([2.0, 3.0, 4.0, 5.0])
    se = np.sqrt(a.var(ddof=1) / 4 + b.var(ddof=1) / 4)
    assert P.z_score(a, b) == pytest.approx(-1.0 / se)
    assert P.z_score(np.full(5, 3.0), np.full(5, 3.0)) == 0.0
    # constant and apart: the floored standard error makes it a large z, not a division by zero
    assert P.z_score(np.full(5, 3.0), np.full(5, 3.1)) == pytest.approx(-0.1 / 3.1e-3)
    # ... and float32 rounding of a deterministic regret (here 1e-4 relative) is not a difference
    assert abs(P.z_score(np.full(5, 400.0), np.full(5, 400.04))) < 0.2


def test_cli_goes_on_after_a_failing_row(tmp_path, monkeypatch, capsys):
    """One failing algorithm prints its error; the next row still runs; the JSON holds both."""
    def broken(K, T):
        raise RuntimeError("broken on purpose")

    monkeypatch.setitem(P.ALGOS, "Exp3", P.ALGOS["Exp3"]._replace(setup=broken))
    out = tmp_path / "r.json"
    rc = P.main(["--algos", "Exp3", "ODAAF", "--runs", "4", "--horizon", "30", "--records", "3", "--out", str(out),
                 "--fold-in", "mathlib"])
    assert rc == 1
    text = capsys.readouterr().out
    assert "ERROR: RuntimeError: broken on purpose" in text and "ODAAF" in text
    rows = json.loads(out.read_text())["rows"]
    assert rows[0]["error"].startswith("RuntimeError") and "error" not in rows[1]
    r = rows[1]
    assert r["runs"] == 4 and r["horizon"] == 30 and r["records"] == 3
    assert r["ratio_lib_over_plain"] == pytest.approx(r["lib_run_steps_per_s"] / r["plain_run_steps_per_s"])
    assert r["lib_compile_s"] > 0 and r["plain_compile_s"] > 0
    # the engine's written-out fold_in gives the same bits: the same actions, the same regret
    assert r["plain_fold_in"] == "mathlib" and r["same_final_share"] == 1.0


def test_cli_refuses_bad_sizes(capsys):
    with pytest.raises(SystemExit):
        P.main(["--runs", "1"])
    assert "--runs must be >= 2" in capsys.readouterr().err
