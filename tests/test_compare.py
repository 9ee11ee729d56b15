"""Paired comparisons (``jaxbandits.report.compare``, ``jaxbandits compare``): the intervals cover the true
paired difference at the nominal rate, on synthetic data with a known answer and on the simulator's
own runs; ``summary.json`` keeps its keys and gains the intervals; errors name the option."""
import json
import os

import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

import jaxbandits as jb
from jaxbandits import Results, channels, envs
from jaxbandits.apps.cli import main
from jaxbandits.report.compare import bootstrap_interval, compare, t_interval
from jaxbandits.policies import classic
from jaxbandits.core.types import Needs, Policy


def _covered(lo, hi, truth):
    return (lo <= truth) & (truth <= hi)


def _mc_tol(p, n, k=4.0):
    """``k`` Monte Carlo standard errors of a coverage rate ``p`` estimated from ``n`` replications."""
    return k * np.sqrt(p * (1 - p) / n)


def _results(curves, t, panels=None, runs=None, experiment="synthetic", checkpoints=()):
    """Results built by hand (no simulation): ``curves`` {label: regret [runs, R]}."""
    K = 3
    runs = runs or next(iter(curves.values())).shape[0]
    c = {lab: {"regret": np.asarray(x, np.float32), "expected_regret": np.asarray(x, np.float32),
               "reward": np.zeros_like(x, np.float32),
               "pulls": np.tile(np.arange(1, K + 1, dtype=np.int32), (runs, 1))} for lab, x in curves.items()}
    return Results(experiment, {"theta": [0.5, 0.4]}, 0, runs, int(t[-1]), np.asarray(t), c,
                   panels=dict(panels or {}), checkpoints=list(checkpoints))


def test_t_interval_is_scipys_paired_t_interval():
    """The interval is the one-sample t interval of the differences (scipy's, independently coded)."""
    rng = np.random.default_rng(0)
    x = rng.gamma(2.0, size=(37, 5)) + rng.normal(size=(1, 5))
    for level in (0.9, 0.95, 0.99):
        m, lo, hi = t_interval(x, axis=0, level=level)
        ci = stats.ttest_1samp(x, 0.0, axis=0).confidence_interval(level)
        np.testing.assert_allclose(lo, ci.low, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(hi, ci.high, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(m, x.mean(0), rtol=1e-12)
    m, lo, hi = t_interval(x[:1], axis=0)
    assert np.isnan(lo).all() and np.isnan(hi).all()  # one run: no interval


def test_paired_t_interval_covers_at_nominal_rate():
    """A world term shared by both policies of a run (common random numbers) plus each policy's own
    noise: the paired t interval covers the true difference in 95% of 20,000 replications of 8 runs,
    within Monte Carlo error. An unpaired interval (coverage ~1.0), a normal quantile instead of
    t_7 (~0.91) or ddof=0 (~0.94) all fail this."""
    rng = np.random.default_rng(1)
    reps, n, R = 20_000, 8, 3
    delta = np.array([0.0, -1.5, 4.0])  # the true mean differences at the record points
    world = rng.normal(0.0, 10.0, size=(reps, n, R))
    a = world + delta + rng.normal(0.0, 1.0, size=(reps, n, R))
    b = world + rng.normal(0.0, 1.0, size=(reps, n, R))
    _, lo, hi = t_interval(a - b, axis=1)
    cover = _covered(lo, hi, delta).mean(0)
    assert np.all(np.abs(cover - 0.95) < _mc_tol(0.95, reps)), cover
    # the same at level 0.8
    _, lo, hi = t_interval(a - b, axis=1, level=0.8)
    cover = _covered(lo, hi, delta).mean(0)
    assert np.all(np.abs(cover - 0.8) < _mc_tol(0.8, reps)), cover


def test_bootstrap_interval_covers_at_nominal_rate_and_is_seeded():
    """Percentile bootstrap over runs (400 runs, 2,000 replications, skewed differences): 95%
    coverage within Monte Carlo error (its small-sample deficit, about 0.94 at 100 runs, is well
    inside it at 400); the same seed gives the same interval, another seed another."""
    rng = np.random.default_rng(2)
    reps, n = 2_000, 400
    d = rng.gamma(4.0, 0.5, size=(reps, n, 1)) - 2.0 + 0.5  # mean 0.5
    _, lo, hi = bootstrap_interval(d, axis=1, n_boot=1000, seed=3)
    cover = _covered(lo, hi, 0.5).mean()
    assert abs(cover - 0.95) < _mc_tol(0.95, reps), cover
    a = bootstrap_interval(d[:3], axis=1, n_boot=500, seed=7)
    b = bootstrap_interval(d[:3], axis=1, n_boot=500, seed=7)
    c = bootstrap_interval(d[:3], axis=1, n_boot=500, seed=8)
    assert all(np.array_equal(x, y) for x, y in zip(a, b)) and not np.array_equal(a[1], c[1])


def test_compare_pairs_runs_and_matches_the_core_interval():
    """compare() takes per-run differences against the baseline within each panel (runs paired
    index by index): bitwise the core interval of ``policy - baseline``; the baseline has no entry;
    a shuffled run order (pairing broken) gives another, wider interval."""
    rng = np.random.default_rng(4)
    n, t = 30, np.array([10, 20, 40])
    world = rng.normal(0, 5, size=(n, 3))
    curves = {"A: UCB": world + rng.normal(size=(n, 3)), "A: random": world + 3 + rng.normal(size=(n, 3)),
              "B: UCB": world * 2, "B: random": world * 2 + 1 + rng.normal(size=(n, 3))}
    res = _results(curves, t, panels={k: k.split(": ")[0] for k in curves})
    cmp = compare(res, baseline="random")
    assert cmp.baselines == {"A": "A: random", "B": "B: random"} and set(cmp.diffs) == {"A: UCB", "B: UCB"}
    for lab, base in (("A: UCB", "A: random"), ("B: UCB", "B: random")):
        d = np.asarray(res.curves[lab]["regret"], np.float64) - np.asarray(res.curves[base]["regret"], np.float64)
        m, lo, hi = t_interval(d, axis=0)
        assert np.array_equal(cmp.diffs[lab]["mean"], m) and np.array_equal(cmp.diffs[lab]["lo"], lo)
        assert np.array_equal(cmp.diffs[lab]["hi"], hi)
    shuffled = dict(curves, **{"A: random": curves["A: random"][rng.permutation(n)]})
    un = compare(_results(shuffled, t, panels={k: k.split(": ")[0] for k in curves}), baseline="random")
    width = lambda c: c.diffs["A: UCB"]["hi"] - c.diffs["A: UCB"]["lo"]
    assert np.all(width(un) > 3 * width(cmp))
    # default baseline: the first policy of each panel; a full label compares within its panel only
    assert compare(res).baselines == {"A": "A: UCB", "B": "B: UCB"}
    assert set(compare(res, baseline="B: random").diffs) == {"B: UCB"}
    assert set(compare(res, only=["A: random"]).diffs) == {"A: random"}  # only/exclude choose the compared
    assert set(compare(res, exclude=["random"]).diffs) == set()
    # bootstrap through compare: the core bootstrap of the same differences, same seed
    bs = compare(res, baseline="random", method="bootstrap", n_boot=300, seed=5)
    d = np.stack([np.asarray(curves["A: UCB"], np.float32).astype(np.float64)
                  - np.asarray(curves["A: random"], np.float32).astype(np.float64)])
    assert np.array_equal(bs.diffs["A: UCB"]["lo"], bootstrap_interval(d, axis=1, n_boot=300, seed=5)[1][0])


def _fixed_arm(a):
    """Plays arm ``a`` every round (no regret when ``a`` is the best arm)."""
    def init(spec, key):
        return jnp.zeros((), jnp.float32)

    def act(state, ctx, key):
        return jnp.int32(a), jnp.zeros((), jnp.float32)

    return Policy(init, act, lambda s, arr: s, lambda memo, r, d: jnp.zeros((1,), jnp.float32), Needs(), "fixed")


def test_compare_covers_the_known_difference_on_simulated_runs():
    """The simulator's own paired runs, with a known answer: uniform random against always playing
    the best of Bernoulli arms (0.9, 0.5, 0.1): ``E[R_random(t) - R_best(t)] = 0.4 t`` exactly. 24,000
    runs cut into 3,000 replications of 8 runs (one panel each); the 95% intervals at t = 16 and 32
    cover 0.4 t at the nominal rate within Monte Carlo error (a normal quantile instead of t_7
    would give about 0.91)."""
    reps, n, T = 3_000, 8, 32
    out = jb.simulate(envs.bernoulli([0.9, 0.5, 0.1]), channels.attributed(),
                      {"random": classic.uniform_random(), "best": _fixed_arm(0)}, T, 0, reps * n,
                      record=np.array([15, 31]), shard=False)
    assert np.all(np.asarray(out["best"].regret) == 0)
    curves, panels = {}, {}
    for i in range(reps):
        for lab in ("best", "random"):
            curves[f"{i}: {lab}"] = np.asarray(out[lab].regret[i * n:(i + 1) * n])
            panels[f"{i}: {lab}"] = str(i)
    cmp = compare(_results(curves, np.asarray(out["best"].t), panels=panels, runs=n), baseline="best")
    lo = np.stack([cmp.diffs[f"{i}: random"]["lo"] for i in range(reps)])
    hi = np.stack([cmp.diffs[f"{i}: random"]["hi"] for i in range(reps)])
    truth = 0.4 * np.asarray(out["best"].t)
    cover = _covered(lo, hi, truth).mean(0)
    assert np.all(np.abs(cover - 0.95) < _mc_tol(0.95, reps)), cover


@pytest.mark.parametrize("kw, msg", [
    (dict(baseline="nope"), "baseline 'nope' is not a policy"),
    (dict(level=1.5), "level must be a number in (0, 1)"),
    (dict(method="jackknife"), "method must be one of"),
    (dict(metric="delayed_regret"), "metric 'delayed_regret' is not recorded"),
    (dict(method="bootstrap", n_boot=3), "n_boot must be an integer >= 10"),
])
def test_compare_errors_name_the_argument(kw, msg):
    res = _results({"a": np.ones((4, 2)), "b": np.zeros((4, 2))}, np.array([1, 2]))
    with pytest.raises(ValueError, match=msg.replace("(", r"\(").replace(")", r"\)")):
        compare(res, **kw)


def test_summary_keeps_its_keys_and_gains_intervals(tmp_path):
    """Every key of the summary.json contract stays; each policy gains its 95% t interval of the
    mean regret over runs (scipy's, at every record point and at the horizon; null for one run);
    checkpoints gain theirs."""
    rng = np.random.default_rng(5)
    t = np.array([10, 20, 30])
    res = _results({"UCB1": rng.gamma(3.0, size=(12, 3)).cumsum(1), "random": rng.gamma(9.0, size=(12, 3)).cumsum(1)},
                   t, checkpoints=(20, 30))
    s = res.summary()
    old = {"experiment", "config", "seed", "runs", "horizon", "metric", "width", "lost_to_W", "policies", "timing",
           "versions"}
    assert old <= set(s)
    for lab, v in s["policies"].items():
        for k in ("final_regret_mean", "final_regret_se", "t", "regret_mean", "regret_se", "final_regret_runs",
                  "mean_pulls", "lost_to_W", "checkpoints"):
            assert k in v
        x = np.asarray(res.curves[lab]["regret"], np.float64)
        ci = stats.ttest_1samp(x, 0.0, axis=0).confidence_interval(0.95)
        np.testing.assert_allclose(v["regret_ci95_lo"], ci.low, rtol=1e-12)
        np.testing.assert_allclose(v["regret_ci95_hi"], ci.high, rtol=1e-12)
        np.testing.assert_allclose(v["final_regret_ci95"], [ci.low[-1], ci.high[-1]], rtol=1e-12)
        assert v["final_regret_ci95"][0] < v["final_regret_mean"] < v["final_regret_ci95"][1]
        np.testing.assert_allclose(v["checkpoints"]["20"]["ci95"], [ci.low[1], ci.high[1]], rtol=1e-12)
        assert set(v["checkpoints"]["20"]) == {"mean", "se", "ci95"}
    one = _results({"a": np.ones((1, 3))}, t).summary()["policies"]["a"]
    assert one["final_regret_ci95"] == [None, None] and json.dumps(one)  # valid JSON, no NaN


def test_cli_compare_writes_table_summary_and_plot(tmp_path, capsys):
    """``jaxbandits compare DIR --baseline random``: the table on the terminal, ``comparison`` in
    summary.json (every other key unchanged), compare.png; files recorded in the manifest with their
    checksums; errors name the option, exit 2."""
    import hashlib

    from jaxbandits.core.fileio import files_of

    rng = np.random.default_rng(6)
    world = rng.normal(50, 10, size=(20, 3))
    res = _results({"UCB1": world, "KL-UCB": world - 5 + rng.normal(size=(20, 3)),
                    "random": world + 100 + rng.normal(size=(20, 3))}, np.array([100, 200, 300]))
    d = tmp_path / "res"
    res.save(str(d), plot=False)
    before = json.loads((d / "summary.json").read_text())
    assert main(["compare", str(d), "--baseline", "random"]) == 0
    out = capsys.readouterr().out
    assert "| UCB1 | random |" in out and "| KL-UCB | random |" in out and "ΔR(300)" in out
    after = json.loads((d / "summary.json").read_text())
    assert {k: v for k, v in after.items() if k != "comparison"} == before
    c = after["comparison"]
    assert c["level"] == 0.95 and c["method"] == "t" and c["baselines"] == {"": "random"}
    assert set(c["policies"]) == {"UCB1", "KL-UCB"}
    ref = compare(res, baseline="random")
    for lab, v in c["policies"].items():
        assert v["diff_lo"] == [float(x) for x in ref.diffs[lab]["lo"]] and v["t"] == [100, 200, 300]
        assert v["final_diff_ci"][0] < v["final_diff_mean"] < v["final_diff_ci"][1] < 0
    assert (d / "compare.png").stat().st_size > 1000
    manifest = json.loads((d / ".jaxbandits.json").read_text())
    for name in ("summary.json", "compare.png"):
        assert name in files_of(str(d))
        assert manifest["files"][name] == hashlib.sha256((d / name).read_bytes()).hexdigest()
    assert main(["compare", str(d), "--baseline", "nope"]) == 2
    assert "jaxbandits: error: --baseline 'nope' is not a policy" in capsys.readouterr().err
    assert main(["compare", str(d), "--level", "2"]) == 2
    assert "--level must be in (0, 1)" in capsys.readouterr().err
    assert main(["compare", str(tmp_path / "missing")]) == 2
    assert "does not exist" in capsys.readouterr().err
    assert main(["compare", str(d), "--method", "bootstrap", "--n-boot", "200", "--no-plot"]) == 0
    assert json.loads((d / "summary.json").read_text())["comparison"]["n_boot"] == 200
