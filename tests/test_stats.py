"""Statistics reduced on the device (jaxbandits.engine.stats, docs/results.md "The two forms"):
the moments equal a float64 numpy computation over the per-run arrays of the same runs, for every
metric, record point and policy pair; deliberately wrong reductions fail that check; a whole run,
its parts (1001 runs in 3 uneven parts), 2 devices, chunked and resumed runs give bitwise the same
statistics; compare on the reduced form gives the per-run form's intervals; a 1e5-run simulation
of 4 policies returns less than 50 MB in its default form; keep="all" returns today's arrays."""
import os
import subprocess
import sys

import jax
import numpy as np
import pytest

import jaxbandits as jb
from jaxbandits import channels as C
from jaxbandits import delays as D
from jaxbandits import envs as E
from jaxbandits.engine import stats as ST
from jaxbandits.policies import classic as P

ENV = E.bernoulli([0.6, 0.5, 0.4], delay=D.geometric(mean=3.0))
POLS = {"UCB1": P.ucb1(), "KL-UCB": P.kl_ucb(), "random": P.uniform_random()}
N, T, REC = 1001, 40, 10  # 1001 runs: blocks of 16, the last one partial
METRICS = ("regret", "expected_regret", "reward", "delayed_regret")


@pytest.fixture(scope="module")
def whole():
    return jb.simulate(ENV, C.attributed(), POLS, T, jax.random.key(5), N, record=REC, keep="all",
                       delayed_regret=True, shard=False)


def check_moments(outs, rtol=1e-12):
    """Every statistic of ``outs`` against float64 numpy over the per-run arrays of the same runs."""
    for lab, o in outs.items():
        st = o.stats
        assert st.n == N and st.block == ST.block_size(N) == 16
        for k in METRICS:
            x = np.asarray(getattr(o, k), np.float64)
            n, m, m2 = st.combined(k)
            assert n == x.shape[0]
            np.testing.assert_allclose(m, x.mean(0), rtol=rtol, atol=rtol * np.abs(x).max(), err_msg=f"{lab} {k}")
            np.testing.assert_allclose(m2, ((x - x.mean(0)) ** 2).sum(0), rtol=1e-10, err_msg=f"{lab} {k} m2")
            np.testing.assert_array_equal(st.final[k], getattr(o, k)[:, -1])
            for other, po in outs.items():
                if other == lab:
                    continue
                d = x - np.asarray(getattr(po, k), np.float64)
                n, m, m2 = st.combined(k, other)
                scale = max(np.abs(d).max(), 1.0)
                np.testing.assert_allclose(m, d.mean(0), rtol=0, atol=rtol * scale, err_msg=f"{lab}-{other} {k}")
                np.testing.assert_allclose(m2, ((d - d.mean(0)) ** 2).sum(0), rtol=1e-10, atol=1e-9 * scale ** 2,
                                           err_msg=f"{lab}-{other} {k} m2")
        p = np.asarray(o.pulls, np.float64)
        np.testing.assert_allclose(st.combined("pulls")[1], p.mean(0), rtol=1e-12)
        np.testing.assert_array_equal(st.final["lost_to_W"], o.lost_to_W)


def test_moments_equal_float64_numpy_for_every_metric_point_and_pair(whole):
    assert whole["UCB1"].regret.shape == (N, T // REC)
    check_moments(whole)


def _with_stats(outs, lab, st):
    return {k: (o._replace(stats=st) if k == lab else o) for k, o in outs.items()}


def _reduced(outs):
    """The results of ``outs`` in the reduced form (no run's curves: every number from the stats)."""
    from jaxbandits.experiments.results import Results

    red = {lab: o._replace(regret=None, expected_regret=None, reward=None, pulls=None, delayed_regret=None)
           for lab, o in outs.items()}
    res = Results.from_sim("x", {}, 0, N, T, red)
    assert res.kept == 0 and not res.per_run
    return res


def _chan_in_block_order(count, mean, m2):
    """Chan et al.'s pairwise update over the blocks in block order, written out here: the
    combination docs/results.md specifies (empty blocks skipped)."""
    n, m, M = 0.0, None, None
    for j in range(len(count)):
        nb = float(count[j])
        if nb == 0:
            continue
        if n == 0:
            n, m, M = nb, np.array(mean[j], np.float64), np.array(m2[j], np.float64)
            continue
        tot = n + nb
        d = mean[j] - m
        m = m + d * (nb / tot)
        M = M + m2[j] + d * d * (n * nb / tot)
        n = tot
    return n, m, M


def _check_reduced_library(res, whole):
    """The reduced form's numbers as the library computes them (Results.mean_se, .moments of the
    paired differences, compare's t intervals) against float64 numpy over the per-run arrays of
    the same runs; and its combination bitwise Chan's update in block order."""
    from jaxbandits.report.compare import compare

    c = compare(res, baseline="random")
    for lab, o in whole.items():
        x = np.asarray(o.regret, np.float64)
        m, se = res.mean_se(lab)
        np.testing.assert_allclose(m, x.mean(0), rtol=1e-12, err_msg=lab)
        np.testing.assert_allclose(se, x.std(0, ddof=1) / np.sqrt(N), rtol=1e-12, err_msg=lab)
        st = res.stats[lab]
        n, cm, cM = _chan_in_block_order(st.count, *st.moments["regret"])
        assert n == N and np.array_equal(m, cm) and np.array_equal(res.moments(lab)[2], cM), lab
        if lab == "random":
            continue
        d = x - np.asarray(whole["random"].regret, np.float64)
        n, dm, dM = res.moments(lab, "regret", other="random")
        scale = np.abs(d).max()
        np.testing.assert_allclose(dm, d.mean(0), rtol=0, atol=1e-12 * scale, err_msg=lab)
        np.testing.assert_allclose(dM, ((d - d.mean(0)) ** 2).sum(0), rtol=1e-10, err_msg=lab)
        for k, ref in zip(("mean", "lo", "hi"), _ref_t(d)):
            np.testing.assert_allclose(c.diffs[lab][k], ref, rtol=1e-12, atol=1e-12 * scale, err_msg=f"{lab} {k}")


def test_wrong_reductions_fail(whole, monkeypatch):
    """The library's reduced-form numbers agree with float64 numpy over the per-run arrays (and
    its combination is Chan's update in block order, bit for bit); each deliberately wrong
    reduction patched into the library (ddof=0, blocks combined in reverse order, a dropped block,
    a pair's difference swapped) makes that same check fail."""
    from jaxbandits.report import compare as CMP

    res = _reduced(whole)
    _check_reduced_library(res, whole)  # the real reduction passes
    combine, mean_se, combined, t_mom = ST.combine, ST.Stats.mean_se, ST.Stats.combined, CMP.t_interval_moments

    def ddof0_mean_se(self, metric):
        m, se = mean_se(self, metric)
        return m, se * np.sqrt((self.n - 1) / self.n)

    def swapped(self, metric, other=None):
        n, m, M = combined(self, metric, other)
        return (n, -m, M) if other is not None else (n, m, M)

    mutants = {
        "ddof=0 in the standard error": [(ST.Stats, "mean_se", ddof0_mean_se)],
        "ddof=0 in the t interval": [(CMP, "t_interval_moments",
                                      lambda n, m, M, level=0.95: t_mom(n, m, M * (n - 1) / n, level))],
        "reverse block order": [(ST, "combine", lambda c, m, M: combine(c[::-1], m[::-1], M[::-1]))],
        "dropped block": [(ST, "combine", lambda c, m, M: combine(c[1:], m[1:], M[1:]))],
        "pair swapped": [(ST.Stats, "combined", swapped)],
    }
    for name, patches in mutants.items():
        with monkeypatch.context() as mp:
            for obj, attr, f in patches:
                mp.setattr(obj, attr, f)
            with pytest.raises(AssertionError):
                _check_reduced_library(res, whole)
                print(name, "not caught")


def _json_close(a, b, rtol=1e-12, path="", scale=None):
    """``a`` and ``b`` (JSON values) equal in every key, string, integer and null; their floats
    equal to ``rtol`` relative (of the largest magnitude in the same list, for values near 0)."""
    if isinstance(a, dict):
        assert isinstance(b, dict) and sorted(a) == sorted(b), path
        for k in a:
            _json_close(a[k], b[k], rtol, f"{path}/{k}")
    elif isinstance(a, list):
        assert isinstance(b, list) and len(a) == len(b), path
        nums = [abs(v) for v in a if isinstance(v, float)]
        sc = max(nums) if nums else None
        for i, (x, y) in enumerate(zip(a, b)):
            _json_close(x, y, rtol, f"{path}[{i}]", sc)
    elif isinstance(a, float) and isinstance(b, float):
        tol = rtol * max(abs(b), scale or 0.0)
        assert abs(a - b) <= tol, (path, a, b)
    else:
        assert a == b and type(a) is type(b), (path, a, b)


def _same_stats(a, b):
    for lab in a:
        fa, fb = a[lab].stats.to_flat(), b[lab].stats.to_flat()
        assert sorted(fa) == sorted(fb)
        for k in fa:
            assert np.array_equal(fa[k], fb[k]), (lab, k)


def test_parts_chunks_resume_and_reduced_form_are_bitwise_the_whole(whole, tmp_path):
    from jaxbandits.engine.checkpoint import Interrupted
    from jaxbandits.experiments.parts import run_range

    kw = dict(record=REC, delayed_regret=True, shard=False)
    key = jax.random.key(5)
    # 3 uneven parts by blocks, merged by their blocks
    ranges = [run_range(N, i, 3) for i in range(3)]
    assert ranges == [(0, 336), (336, 336), (672, 329)]
    parts = [jb.simulate(ENV, C.attributed(), POLS, T, key, n, first_run=a, keep="none", stats_block=16, **kw)
             for a, n in ranges]
    merged = {lab: whole[lab]._replace(stats=ST.Stats.concat([p[lab].stats for p in parts])) for lab in POLS}
    _same_stats(whole, merged)
    # the reduced form, chunked, interrupted after 2 chunks and resumed
    stop = {"n": 0}

    def stop_after_two():
        stop["n"] += 1
        return stop["n"] == 2

    with pytest.raises(Interrupted):
        jb.simulate(ENV, C.attributed(), POLS, T, key, N, chunk=15, keep="none", checkpoint=tmp_path / "ck",
                    stop=stop_after_two, **kw)
    res = jb.simulate(ENV, C.attributed(), POLS, T, key, N, chunk=15, keep="none", checkpoint=tmp_path / "ck",
                      resume=True, **kw)
    assert res["UCB1"].regret is None and res["UCB1"].kept == 0
    _same_stats(whole, res)


_TWO_DEVICES = r"""
import sys, numpy as np, jax
import jaxbandits as jb
sys.path.insert(0, sys.argv[1])
from test_stats import ENV, POLS, T, N, REC, C
assert jax.local_device_count() == 2
kw = dict(record=REC, delayed_regret=True)
a = jb.simulate(ENV, C.attributed(), POLS, T, jax.random.key(5), N, shard=True, keep="none", **kw)
assert a["UCB1"].timing["devices"] == 2
np.savez(sys.argv[2], **{f"{lab}|{k}": v for lab, o in a.items() for k, v in o.stats.to_flat().items()})
print("OK")
"""


def test_two_devices_bitwise_one_device(whole, tmp_path):
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=2", JAX_PLATFORMS="cpu")
    out = tmp_path / "two.npz"
    r = subprocess.run([sys.executable, "-c", _TWO_DEVICES, os.path.dirname(__file__), str(out)],
                       capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0 and "OK" in r.stdout, r.stderr[-3000:]
    with np.load(out) as z:
        for lab, o in whole.items():
            for k, v in o.stats.to_flat().items():
                assert np.array_equal(z[f"{lab}|{k}"], v), (lab, k)


def test_compare_on_the_reduced_form_equals_the_per_run_intervals(whole):
    from jaxbandits.report.compare import compare, t_interval
    from jaxbandits.experiments.results import Results

    reduced = {lab: o._replace(regret=None, expected_regret=None, reward=None, pulls=None, delayed_regret=None)
               for lab, o in whole.items()}
    res = Results.from_sim("x", {}, 0, N, T, reduced)
    assert res.kept == 0
    for metric in ("regret", "delayed_regret"):
        c = compare(res, baseline="random", metric=metric)
        for lab in ("UCB1", "KL-UCB"):
            d = np.asarray(whole[lab].__getattribute__(metric), np.float64) - getattr(whole["random"], metric)
            m, lo, hi = t_interval(d, axis=0)
            scale = np.abs(d).max()
            for got, ref in ((c.diffs[lab]["mean"], m), (c.diffs[lab]["lo"], lo), (c.diffs[lab]["hi"], hi)):
                np.testing.assert_allclose(got, ref, rtol=1e-12, atol=1e-12 * scale)
    # the per-run form's summary (float64 numpy over the per-run arrays) and the reduced form's
    # (from the statistics): the same numbers to ~1e-15 relative, every key
    full = Results.from_sim("x", {}, 0, N, T, whole)
    assert full.per_run and not res.per_run
    sa, sb = full.summary(), res.summary()
    sa.pop("timing"), sb.pop("timing")
    _json_close(sb, sa)
    # the bootstrap on the reduced form: over the final values (the last record point)
    b = compare(res, baseline="random", method="bootstrap", n_boot=200)
    fb = compare(full, baseline="random", method="bootstrap", n_boot=200)
    assert np.isnan(b.diffs["UCB1"]["lo"][0])
    np.testing.assert_allclose([b.diffs["UCB1"]["lo"][-1], b.diffs["UCB1"]["hi"][-1]],
                               [fb.diffs["UCB1"]["lo"][-1], fb.diffs["UCB1"]["hi"][-1]], rtol=1e-12)


def test_keep_all_returns_the_per_run_arrays_and_keep_n_their_first_runs(whole):
    kw = dict(record=REC, delayed_regret=True, shard=False)
    first = jb.simulate(ENV, C.attributed(), POLS, T, jax.random.key(5), N, keep=7, **kw)
    for lab in POLS:
        for f in ("regret", "expected_regret", "reward", "pulls", "delayed_regret"):
            assert np.array_equal(getattr(first[lab], f), getattr(whole[lab], f)[:7]), f
        assert np.array_equal(first[lab].lost_to_W, whole[lab].lost_to_W)
    _same_stats(whole, first)
    # the same arrays as the driver gave before statistics existed: a run's curves do not depend
    # on the other runs, nor on the padding to whole blocks
    one = jb.simulate(ENV, C.attributed(), POLS, T, jax.random.key(5), 3, keep="all", **kw)
    for lab in POLS:
        assert np.array_equal(one[lab].regret, whole[lab].regret[:3])
    with pytest.raises(ValueError, match="keep must be"):
        jb.simulate(ENV, C.attributed(), POLS, T, jax.random.key(5), 3, keep="some")


def test_a_1e5_run_simulation_returns_under_50_mb_by_default():
    """4 policies, 200 record points, 1e5 runs: per-run curves would be 2.2 GB on the host; the
    default form (the rule: too large, so statistics) returns less than 50 MB."""
    env = E.bernoulli([0.6, 0.5], delay=D.fixed(2))
    pols = {"UCB1": P.ucb1(), "UCB1 a=0.5": P.ucb1(alpha=0.5), "random": P.uniform_random(),
            "UCB1 a=2": P.ucb1(alpha=2.0)}
    outs = jb.simulate(env, C.attributed(), pols, 200, jax.random.key(0), 100_000, record=1)
    assert all(o.regret is None for o in outs.values())
    held = ST.nbytes(list(outs.values()))
    sent = outs["UCB1"].timing["bytes_to_host"]
    assert len(outs["UCB1"].t) == 200 and outs["UCB1"].stats.n == 100_000
    assert held < 50e6 and sent < 50e6, (held, sent)


def test_fused_path_reduces_on_the_device_too():
    """The fused kernels (Pallas' interpreter on a CPU): the same statistics, checked against numpy
    over the per-run arrays, and bitwise the same whether the curves are kept or not."""
    pols = {"UCB1": P.ucb1(), "random": P.uniform_random()}
    env = E.bernoulli([0.6, 0.5, 0.4])
    kw = dict(record=10, path="fused")
    full = jb.simulate(env, C.attributed(), pols, 30, jax.random.key(2), 40, keep="all", **kw)
    red = jb.simulate(env, C.attributed(), pols, 30, jax.random.key(2), 40, keep="none", **kw)
    assert red["UCB1"].regret is None and full["UCB1"].timing["path"].startswith("fused")
    assert red["UCB1"].timing["bytes_to_host"] < full["UCB1"].timing["bytes_to_host"]
    _same_stats(full, red)
    for lab, other in (("UCB1", "random"), ("random", "UCB1")):
        x = np.asarray(full[lab].regret, np.float64)
        d = x - full[other].regret
        n, m, m2 = full[lab].stats.combined("regret")
        assert n == 40
        np.testing.assert_allclose(m, x.mean(0), rtol=1e-12)
        np.testing.assert_allclose(m2, ((x - x.mean(0)) ** 2).sum(0), rtol=1e-10)
        _, m, m2 = full[lab].stats.combined("regret", other)
        np.testing.assert_allclose(m, d.mean(0), rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(m2, ((d - d.mean(0)) ** 2).sum(0), rtol=1e-10)
        np.testing.assert_array_equal(full[lab].stats.final["regret"], full[lab].regret[:, -1])


def test_cli_keep_none_writes_the_same_summary_and_statistics(tmp_path):
    """``jaxbandits run ... --keep none``: results.nc holds the statistics and no run's curves;
    summary.json and every statistic are those of the per-run form (``--keep all``)."""
    import json

    import xarray as xr

    sys.path.insert(0, os.path.dirname(__file__))
    import scaleout_tiny
    from jaxbandits import experiments as X
    from jaxbandits.apps.cli import main
    from jaxbandits.experiments.results import Results

    scaleout_tiny.register()
    try:
        common = ["run", scaleout_tiny.NAME, "--seed", "3", "--no-progress", "--single-device", "--no-compile-cache"]
        assert main([*common, "--keep", "none", "--out", str(tmp_path / "r")]) == 0
        assert main([*common, "--keep", "all", "--out", str(tmp_path / "a")]) == 0
        assert main([*common, "--keep", "some", "--out", str(tmp_path / "bad")]) == 2
    finally:
        X.unregister(scaleout_tiny.NAME)
    r, a = Results.load(tmp_path / "r"), Results.load(tmp_path / "a")
    assert r.kept == 0 and a.kept == a.runs == 6
    sr, sa = (json.load(open(tmp_path / d / "summary.json")) for d in ("r", "a"))
    sr.pop("timing"), sa.pop("timing")
    _json_close(sr, sa)  # the statistics' numbers against the per-run arrays' (numpy, float64)
    # compare and plot read either folder: the same comparison (from the paired moments)
    for d in ("r", "a"):
        assert main(["compare", str(tmp_path / d), "--baseline", "random"]) == 0
        assert main(["plot", str(tmp_path / d), "--pulls"]) == 0
    cr, ca = (json.load(open(tmp_path / d / "summary.json"))["comparison"] for d in ("r", "a"))
    _json_close(cr, ca)  # the paired moments' t intervals against the per-run differences'
    assert cr["policies"]["delayed: UCB1"]["final_diff_ci"][0] is not None
    xr_, xa = (xr.load_dataset(tmp_path / d / "results.nc", engine="h5netcdf") for d in ("r", "a"))
    assert xr_.sizes["kept_run"] == 0 and "diff_regret_mean" in xr_
    for v in xa.data_vars:
        if v.endswith(("_mean", "_m2")) or v.startswith("final_") and v != "final_pulls" or v == "count":
            np.testing.assert_array_equal(xr_[v].values, xa[v].values, err_msg=v)


def test_two_processes_reduced_form_bitwise_one_process(tmp_path, monkeypatch):
    """``jax.distributed`` on 127.0.0.1, two processes of one CPU device each, 1001 runs in the
    reduced form: results.nc (every statistic) and summary.json bitwise those of one process."""
    import json

    import xarray as xr

    sys.path.insert(0, os.path.dirname(__file__))
    import scaleout_tiny
    from jaxbandits import experiments as X
    from jaxbandits.apps.cli import main
    from jaxbandits.experiments.distributed import launch_local

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    args = ["run", scaleout_tiny.NAME, "--seed", "3", "--runs", "1001", "--keep", "none", "--no-progress",
            "--no-compile-cache"]
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([root, os.environ.get("PYTHONPATH", "")]))
    rc = launch_local([*args, "--out", str(tmp_path / "dist")], 2, devices_per_process=1, timeout=240,
                      command=[sys.executable, os.path.join(root, "tests", "scaleout_tiny.py")])
    assert rc == 0
    scaleout_tiny.register()
    try:
        assert main([*args, "--single-device", "--out", str(tmp_path / "one")]) == 0
    finally:
        X.unregister(scaleout_tiny.NAME)
    sd, so = (json.load(open(tmp_path / d / "summary.json")) for d in ("dist", "one"))
    assert sd["timing"]["processes"] == 2 and sd["runs"] == 1001
    sd.pop("timing"), so.pop("timing")
    assert sd == so
    xd, xo = (xr.load_dataset(tmp_path / d / "results.nc", engine="h5netcdf") for d in ("dist", "one"))
    assert xd.sizes["kept_run"] == 0 and sorted(xd.data_vars) == sorted(xo.data_vars)
    for v in xd.data_vars:
        np.testing.assert_array_equal(xd[v].values, xo[v].values, err_msg=v)


def test_parts_with_keep_n_merge_through_part_files(tmp_path):
    """``run --part i/3 --keep 70`` over 202 runs (blocks of 4: parts of 68, 68 and 66 runs), then
    ``merge``: the last part keeps no curves (68 + 2 + 0 of the first 70), so its part.npz holds none; the merge (save_part, merged_outputs,
    the parts' keep shares) gives the whole run's 400 curves and statistics, bitwise."""
    import json

    import xarray as xr

    sys.path.insert(0, os.path.dirname(__file__))
    import scaleout_tiny
    from jaxbandits import experiments as X
    from jaxbandits.apps.cli import main

    scaleout_tiny.register()
    try:
        common = ["run", scaleout_tiny.NAME, "--seed", "3", "--runs", "202", "--horizon", "12", "--keep", "70",
                  "--no-progress", "--single-device", "--no-compile-cache"]
        for i in range(3):
            assert main([*common, "--part", f"{i}/3", "--out", str(tmp_path / f"p{i}")]) == 0
        with np.load(tmp_path / "p2" / "part.npz") as z:
            assert "p0_regret" not in z.files and "p0_stats/final/regret" in z.files  # crashed the merge
        assert main(["merge", *(str(tmp_path / f"p{i}") for i in range(3)), "--out", str(tmp_path / "m"),
                     "--no-plot"]) == 0
        assert main([*common, "--out", str(tmp_path / "w")]) == 0
    finally:
        X.unregister(scaleout_tiny.NAME)
    xm, xw = (xr.load_dataset(tmp_path / d / "results.nc", engine="h5netcdf") for d in ("m", "w"))
    assert xm.sizes["kept_run"] == 70 and sorted(xm.data_vars) == sorted(xw.data_vars)
    for v in xw.data_vars:
        np.testing.assert_array_equal(xm[v].values, xw[v].values, err_msg=v)
    sm, sw = (json.load(open(tmp_path / d / "summary.json")) for d in ("m", "w"))
    sm.pop("timing"), sw.pop("timing")
    assert sm == sw


def test_a_reproduction_sweep_in_the_reduced_form_completes(monkeypatch):
    """Past KEEP_BYTES of curves (here: any) the default keeps none: a sweep that reads each run's
    final regret (Pike-Burke et al.'s App. F) reads it from the statistics (``SimOutput.final``)."""
    from jaxbandits import experiments as X
    from jaxbandits.engine import reduce

    monkeypatch.setattr(reduce, "KEEP_BYTES", 0)
    assert reduce.resolve_keep(None, [2], 4, 1) == 0  # the default rule now gives the reduced form
    exp = X.get("pikeburke2018-appF")
    cfg = dict(exp.config, delays=[0, 3], families=["const"], horizon=30)
    res = exp.runner(cfg, 4, 0, 30)
    assert sorted(res.finals) == ["const: ODAAF", "const: ODAAF-B", "const: QPM-D"]
    for lab, fs in res.finals.items():
        assert len(fs) == 2 and all(np.shape(f) == (4,) and np.all(np.isfinite(f)) for f in fs), lab


def _ref_t(x, level=0.95):
    """The t interval as jaxbandits computed it before the statistics existed (float64 numpy over
    the per-run values, ``ddof=1``), written out here independently of the library."""
    from scipy.special import stdtrit

    x = np.asarray(x, np.float64)
    n = x.shape[0]
    m = x.mean(0)
    half = stdtrit(n - 1, 0.5 + level / 2) * x.std(0, ddof=1) / np.sqrt(n)
    return m, m - half, m + half


def test_per_run_form_summary_is_the_pre_statistics_formula_to_the_bit(whole, tmp_path):
    """summary.json, table.md and compare of the per-run form: every number exactly what the code
    before the statistics computed (float64 numpy over the per-run arrays), not the block/Chan
    combination (which agrees only to ~1e-15 relative)."""
    import json

    from jaxbandits.report.compare import compare
    from jaxbandits.experiments.results import Results

    res = Results.from_sim("x", {}, 0, N, T, whole)
    res.checkpoints = [20, 40]
    assert res.per_run and res.stats  # the statistics are there, and not used for these numbers
    res.save(tmp_path / "r", plot=False)
    s = json.load(open(tmp_path / "r" / "summary.json"))
    table = open(tmp_path / "r" / "table.md").read()
    t = [int(x) for x in whole["UCB1"].t]
    assert t == [10, 20, 30, 40]
    any_differs = False
    for lab, o in whole.items():
        p = s["policies"][lab]
        x = np.asarray(o.regret, np.float64)
        m, se = x.mean(0), x.std(0, ddof=1) / np.sqrt(N)
        _, lo, hi = _ref_t(x)
        assert p["regret_mean"] == [float(v) for v in m], lab
        assert p["regret_se"] == [float(v) for v in se], lab
        assert p["regret_ci95_lo"] == [float(v) for v in lo] and p["regret_ci95_hi"] == [float(v) for v in hi]
        assert (p["final_regret_mean"], p["final_regret_se"]) == (float(m[-1]), float(se[-1]))
        assert p["final_regret_ci95"] == [float(lo[-1]), float(hi[-1])]
        assert p["final_regret_runs"] == [float(v) for v in o.regret[:, -1]]
        assert p["mean_pulls"] == [float(v) for v in np.asarray(o.pulls[:, -1, :], np.float64).mean(0)]
        dl = np.asarray(o.delayed_regret, np.float64)
        assert p["final_delayed_regret_mean"] == float(dl.mean(0)[-1])
        assert p["final_delayed_regret_se"] == float(dl.std(0, ddof=1)[-1] / np.sqrt(N))
        for c, i in ((20, 1), (40, 3)):
            assert p["checkpoints"][str(c)] == {"mean": float(m[i]), "se": float(se[i]),
                                                "ci95": [float(lo[i]), float(hi[i])]}
        assert f"| {lab} | {m[1]:.1f} ± {se[1]:.1f} | {m[3]:.1f} ± {se[3]:.1f} |" in table
        # the statistics' combination is another computation (agreeing to ~1e-15, not bitwise)
        sm, sse = o.stats.mean_se("regret")
        np.testing.assert_allclose(sm, m, rtol=1e-13)
        any_differs |= not (np.array_equal(sm, m) and np.array_equal(sse, se))
    assert any_differs  # so the bitwise checks above tell the two computations apart
    c = compare(res, baseline="random")
    for lab in ("UCB1", "KL-UCB"):
        m, lo, hi = _ref_t(np.asarray(whole[lab].regret, np.float64) - whole["random"].regret)
        for k, ref in (("mean", m), ("lo", lo), ("hi", hi)):
            assert np.array_equal(c.diffs[lab][k], ref), (lab, k)
