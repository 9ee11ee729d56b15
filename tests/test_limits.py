"""benchmarks/limits.py measures the library against hand-written scans of the same algorithms;
its speeds mean something only if those scans are the same algorithm on the same world. Here, at
a tiny size, every hand-written scan must take the library's actions (equal final pull counts in
every run) and record its regret at the same points, and the check must refuse a different
algorithm."""
import importlib.util
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxbandits as jb

_spec = importlib.util.spec_from_file_location("limits", Path(__file__).resolve().parents[1] / "benchmarks" / "limits.py")
L = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(L)

RUNS, T, K, RECORDS = 8, 300, 10, 40  # stride 7: 42 full blocks and a tail of 6 rounds
STRIDE = L.record_stride(T, RECORDS)
KEY = jax.random.key(3)
DELAY_MEAN, WINDOW = 20.0, 50  # a short window, so that pulls leave it and conversions are censored


def _hand(run_one):
    regret, pulls = jax.jit(jax.vmap(run_one))(jnp.arange(RUNS, dtype=jnp.int32))
    return {"regret": np.asarray(regret), "pulls": np.asarray(pulls)}


def _library(env, ch, pol):
    return jb.simulate(env, ch, pol, T, KEY, RUNS, record=STRIDE)


@pytest.fixture(scope="module")
def classic():
    names = ("UCB1", "KL-UCB", "Thompson")
    env, ch, _ = L.classic_setup(names[0], K)
    libs = _library(env, ch, {n: L.classic_setup(n, K)[2] for n in names})  # one program, one compile
    return {n: (libs[n], _hand(L.naive_classic(n, K, T, STRIDE, KEY))) for n in names}


@pytest.mark.parametrize("name", ["UCB1", "KL-UCB", "Thompson"])
def test_naive_classic_is_the_library_algorithm(classic, name):
    lib, hand = classic[name]
    assert STRIDE == 7 and T % STRIDE != 0  # the tail block is exercised
    np.testing.assert_array_equal(lib.t, np.r_[np.arange(STRIDE, T + 1, STRIDE), T])
    rel = L.check_same(name, lib, hand)
    assert rel < 1e-5  # float32 plain sum vs the library's compensated sum: a few ulps
    # the runs are not all alike (the check compares something)
    assert len({tuple(p) for p in np.asarray(lib.pulls)[:, -1, :]}) > 1


def test_check_refuses_another_algorithm(classic):
    # the naive UCB1 is not KL-UCB: same world, other actions
    with pytest.raises(AssertionError, match="pull counts"):
        L.check_same("UCB1 vs KL-UCB", classic["KL-UCB"][0], classic["UCB1"][1])
    # same actions but a regret accumulated on another world (gaps doubled)
    lib, hand = classic["UCB1"]
    with pytest.raises(AssertionError, match="regret differs"):
        L.check_same("UCB1", lib, {**hand, "regret": 2.0 * hand["regret"]})


def test_naive_and_fused_delayed_klucb_are_the_library_algorithm():
    env, ch, pol = L.delayed_setup(K, DELAY_MEAN, WINDOW)
    lib = jb.simulate(env, ch, pol, T, KEY, RUNS, record=STRIDE, delayed_regret=False)
    assert int(np.sum(lib.lost_to_W)) == 0
    args = (K, T, STRIDE, KEY, DELAY_MEAN, WINDOW)
    for what, fn in (("naive", L.naive_delayed_klucb), ("fused", L.fused_delayed_klucb)):
        assert L.check_same(f"DelayedKLUCB {what}", lib, _hand(fn(*args))) < 1e-5
    # the world is censored and pulls leave the window: the ring and the recursions are exercised
    law = jb.delays.geometric(mean=DELAY_MEAN)
    assert float(law.cdf(WINDOW)) < 0.95 and T > 2 * WINDOW


@pytest.mark.parametrize("algos", [("UCB1",), pytest.param(("UCB1", "DelayedKLUCB"), marks=pytest.mark.slow)],
                         ids=["ucb1", "ucb1+delayed"])
def test_the_gpu_rows_run_here_through_the_interpreter(algos, capsys):
    """On a GPU each row also times the fused Pallas path; that code runs nowhere else before a GPU
    session. Here it runs at a tiny size through Pallas' interpreter (timings meaningless): the rows
    are complete, the fused regret is checked against the scan's, and the GPU table prints."""
    import argparse

    a = argparse.Namespace(horizon=T, arms=K, records=RECORDS, delay_mean=DELAY_MEAN, window=WINDOW)
    rows = [L.measure(algo, a, KEY, 64, repeat=1, pallas=True) for algo in algos]
    for r in rows:
        p = r["pallas"]
        assert p["run_steps_per_s"] > 0 and abs(p["regret_z_vs_scan"]) <= 4
        assert r["pallas_over_library"] > 0 and r["pallas_over_naive"] > 0
    assert "pallas_over_cuda_anchor" in rows[0] and all("pallas_over_cuda_anchor" not in r for r in rows[1:])
    L.print_table(rows, "gpu")
    out = capsys.readouterr().out
    assert "fused path (Pallas" in out and "of the 1.08e11 CUDA anchor" in out


def test_gpu_check_runs_and_writes_its_table(tmp_path, capsys):
    """The device check's script (benchmarks/gpu_check.py, also `limits.py --gpu-check`) at its
    smoke size on the CPU: the anchor and statistics rows run without error and the JSON is written
    (the GPU rows are measured on a GPU: docs/benchmarks.md)."""
    import json

    out = tmp_path / "g.json"
    assert L.main(["--gpu-check", "--quick", "--skip", "fused", "plain", "delayed", "scan", "other",
                        "--out", str(out)])
    res = json.loads(out.read_text())
    names = [r["name"] for r in res["rows"]]
    assert any(n.startswith("anchor: Pallas") for n in names) and any(n.startswith("statistics") for n in names)
    assert not [r for r in res["rows"] if "error" in r], res["rows"]
    assert "| row | run-steps/s |" in capsys.readouterr().out
