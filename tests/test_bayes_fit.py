"""Offline fits at scale and on real logs: the compressed likelihood (distinct rows with counts)
against the per-row one, the resolution grid's error bound, logs from CSV / Parquet / DataFrames
with timestamps and arm labels, rows named in errors, empty arms reported, ArviZ conventions
(dims, sample_stats, observed/constant data, LOO) and recovery of known parameters."""
import math
import warnings

import jax.numpy as jnp
import numpy as np
import pytest

from jaxbandits import bayes as B
from jaxbandits.apps import cli


def _dup_log(K=3, n=3000, seed=3, step=0.5, cutoff=300.0):
    """A continuous-time log whose times lie on a grid of ``step``, so many rows repeat (counts > 1)."""
    rng = np.random.default_rng(seed)
    arm = rng.integers(0, K, n)
    play = np.round(rng.uniform(0, cutoff, n) / step) * step
    d = np.maximum(np.round(rng.weibull(1.4, n) * 40 / step) * step, step)
    ct = np.where(rng.random(n) < np.array([0.2, 0.35, 0.5])[arm], play + d, np.nan)
    return B.conversion_log(arm, play, ct, cutoff, K)


def _weibull_ref64(log, p, mean, shape, per_arm):
    """Per-row log-likelihood in float64, written out: seen: log p + log f(d); unseen: log(1 - p F(a))."""
    out = []
    for k, s, c, co in zip(log.arm, log.play_time, log.conversion_time, log.cutoff):
        m, kk = (mean[k], shape[k]) if per_arm else (mean, shape)
        lam = m / math.gamma(1 + 1 / kk)
        if not math.isnan(c) and c <= co:
            z = (c - s) / lam
            out.append(math.log(p[k]) + math.log(kk / lam) + (kk - 1) * math.log(z) - z**kk)
        else:
            out.append(math.log(1 - p[k] * (1 - math.exp(-(((co - s) / lam) ** kk)))))
    return np.asarray(out)


@pytest.mark.parametrize("per_arm", [False, True], ids=["shared", "per-arm"])
@pytest.mark.parametrize("name", ["weibull", "lognormal", "exponential"])
def test_compressed_log_density_equals_per_row(name, per_arm):
    """Exact compression: sum over distinct rows of count x log-likelihood equals the sum of the
    per-row log-likelihoods (both accumulated in float64; relative 1e-6 — a dropped, miscounted or
    mis-armed row shows), the NumPyro model's log joint agrees on both layouts, and for Weibull the
    float64 formula agrees too."""
    from numpyro.infer.util import log_density

    log = _dup_log()
    K = 3
    wr, (inv_d, inv_a), res = B.compress_log(log, per_arm_delay=per_arm, resolution=None)
    assert res is None and wr.delay.shape[0] + wr.age.shape[0] < 0.8 * len(log)  # rows really merged
    assert float(wr.delay_count.sum() + wr.age_count.sum()) == len(log)
    p = jnp.asarray([0.25, 0.4, 0.55], jnp.float32)
    th = {"weibull": {"delay_mean": 35.0, "delay_shape": 1.3}, "lognormal": {"delay_median": 20.0, "delay_sigma": 0.9},
          "exponential": {"delay_mean": 30.0}}[name]
    if per_arm:
        th = {k: np.array([v * 0.8, v, v * 1.2]) for k, v in th.items()}
    th = {k: jnp.asarray(v, jnp.float32) for k, v in th.items()}
    fam = B.family(name)
    rows = log.rows()
    d = B.CensoredConversion(p[rows.arm], {k: (v[rows.arm] if per_arm else v) for k, v in th.items()}, rows.age, fam, False)
    per_row = np.asarray(d.log_prob(jnp.stack([rows.converted, rows.delay], -1)), np.float64)
    log_f, unseen = B.pointwise_weighted(wr, p, th, fam, False, per_arm)
    comp = (np.sum(np.asarray(wr.n_conv, np.float64) * np.log(np.asarray(p, np.float64).astype(np.float32)))
            + np.sum(np.asarray(wr.delay_count, np.float64) * np.asarray(log_f, np.float64))
            + np.sum(np.asarray(wr.age_count, np.float64) * np.asarray(unseen, np.float64)))
    assert comp == pytest.approx(per_row.sum(), rel=1e-6)
    # expanding the distinct rows back to the plays gives every play's own value
    arm, seen, _, _ = log.arrays()
    lp = np.log(np.asarray(p, np.float32)).astype(np.float64)
    np.testing.assert_allclose(lp[arm[seen]] + np.asarray(log_f, np.float64)[inv_d], per_row[seen], rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(np.asarray(unseen, np.float64)[inv_a], per_row[~seen], rtol=1e-6, atol=1e-6)
    kw = dict(n_arms=K, fam=fam, per_arm_delay=per_arm, prior_mean=30.0)
    params = {"p": p, **th}
    a = float(log_density(B.conversion_model, (wr,), kw, params)[0])
    b = float(log_density(B.conversion_model, (rows,), kw, params)[0])
    assert a == pytest.approx(b, rel=1e-5)
    if name == "weibull":
        th64 = {k: np.asarray(v, np.float64) for k, v in th.items()}
        ref = _weibull_ref64(log, np.asarray(p, np.float64), th64["delay_mean"], th64["delay_shape"], per_arm)
        assert comp == pytest.approx(ref.sum(), rel=2e-6)


def test_resolution_grid_moves_times_within_its_bound_and_changes_little():
    """With ``resolution=r`` every seen delay and unseen age moves by a factor within exp(+-r/2)
    (checked play by play through the inverse index), the counts still add up to the log, and the
    log-likelihood moves by at most the first-order bound sum |d loglik / d log t| r/2."""
    log = B.synthetic_log([0.1, 0.2], 5000, span=500, cutoff=500, delay="weibull", mean=40, shape=1.4, seed=2)
    r = 0.01
    wr, (inv_d, inv_a), res = B.compress_log(log, resolution=r)
    assert res == r and wr.delay.shape[0] + wr.age.shape[0] < 0.5 * len(log)
    arm, seen, delay, age = log.arrays()
    for got, x in ((np.asarray(wr.delay, np.float64)[inv_d], delay[seen]), (np.asarray(wr.age, np.float64)[inv_a], age[~seen])):
        pos = x > 0
        ratio = np.log(got[pos] / x[pos])
        assert np.abs(ratio).max() <= r / 2 * (1 + 1e-4) + 1e-6  # float32 storage of the grid point
    assert float(wr.delay_count.sum() + wr.age_count.sum()) == len(log)
    exact, _, _ = B.compress_log(log, resolution=None)
    p = jnp.asarray([0.1, 0.2], jnp.float32)
    th = {"delay_mean": jnp.float32(40.0), "delay_shape": jnp.float32(1.4)}
    le = float(B.loglik_weighted(exact, p, th, "weibull"))
    lr = float(B.loglik_weighted(wr, p, th, "weibull"))
    # first-order bound: seen d log f / d log d = (k - 1) - k z^k; unseen: -p f(a) a / (1 - p F(a))
    lam = 40.0 / math.gamma(1 + 1 / 1.4)
    z = delay[seen] / lam
    g_seen = np.abs(0.4 - 1.4 * z**1.4)
    za = age[~seen] / lam
    F = 1 - np.exp(-(za**1.4))
    pa = np.array([0.1, 0.2])[arm[~seen]]
    g_unseen = pa * 1.4 * za**1.4 * (1 - F) / (1 - pa * F)
    bound = (g_seen.sum() + g_unseen.sum()) * r / 2
    assert abs(le - lr) <= bound, (le, lr, bound)
    assert abs(le - lr) > 0  # the grid did change something (the test can fail)
    with pytest.raises(ValueError, match="resolution"):
        B.compress_log(log, resolution=0.5)


def test_small_fit_recovers_truth_and_agrees_with_per_row_nuts():
    """A compressed, gridded (resolution 0.01) Weibull fit recovers known parameters, and agrees
    with NUTS run directly on the per-row model (posterior means within 0.25 sd)."""
    import functools

    import jax
    from numpyro.infer import MCMC, NUTS, init_to_median

    truth = {"p": np.array([0.1, 0.25]), "delay_mean": 40.0, "delay_shape": 1.5}
    log = B.synthetic_log(truth["p"], 2500, span=400, cutoff=400, delay="weibull", mean=40, shape=1.5, seed=8)
    idata = B.fit(log, "weibull", num_chains=2, num_warmup=200, num_samples=300, seed=1, resolution=0.01,
                  log_likelihood=False)
    post = idata.posterior
    x = np.column_stack([post["p"].values.reshape(-1, 2), post["delay_mean"].values.ravel(), post["delay_shape"].values.ravel()])
    t = np.array([0.1, 0.25, 40.0, 1.5])
    assert np.all(np.abs(x.mean(0) - t) < 3.5 * x.std(0)), (x.mean(0), x.std(0))
    assert post.attrs["resolution"] == 0.01 and B.diagnostics(idata)["divergences"] == 0
    assert "log_likelihood" not in idata.groups()  # only when asked
    m = functools.partial(B.conversion_model, n_arms=2, fam=B.family("weibull"), prior_mean=post.attrs["prior_mean"])
    mc = MCMC(NUTS(m, init_strategy=init_to_median), num_warmup=150, num_samples=500, num_chains=1, progress_bar=False)
    mc.run(jax.random.key(5), log.rows())
    s = mc.get_samples()
    y = np.column_stack([np.asarray(s["p"]), np.asarray(s["delay_mean"]), np.asarray(s["delay_shape"])])
    assert np.all(np.abs(x.mean(0) - y.mean(0)) < 0.25 * y.std(0)), (x.mean(0), y.mean(0), y.std(0))


def test_arviz_conventions_empty_arm_and_loo(tmp_path):
    """Labelled arms (one with no rows): dims named ``arm`` with the labels, complete sample_stats,
    observed/constant data, the empty arm warned about and listed, az.loo on the per-play
    log-likelihood, az.summary, and the report (Kaplan-Meier on the empty arm) writes its files."""
    import arviz as az

    from jaxbandits.bayes.report import kaplan_meier_conversion, save_fit

    base = B.synthetic_log([0.2, 0.4], 1500, span=300, cutoff=300, mean=30, seed=4)
    labels = np.array(["control", "variant-b"])[base.arm]
    log = B.conversion_log(labels, base.play_time, base.conversion_time, base.cutoff, arms=["control", "variant-b", "new"])
    assert log.empty_arms == ("new",) and log.n_arms == 3
    np.testing.assert_array_equal(np.isnan(kaplan_meier_conversion(log, 2, [1.0, 10.0])), [True, True])
    with pytest.warns(UserWarning, match="new"):
        idata = B.fit(log, "exponential", num_chains=2, num_warmup=150, num_samples=150, log_likelihood=True)
    post = idata.posterior
    assert post["p"].dims == ("chain", "draw", "arm") and list(post["arm"].values) == ["control", "variant-b", "new"]
    assert post["pending_conversions"].dims == ("chain", "draw", "arm")
    assert "p_dim_0" not in post.dims and post.attrs["empty_arms"] == '["new"]'
    for v in ("diverging", "energy", "tree_depth", "step_size", "lp", "acceptance_rate", "n_steps"):
        assert v in idata.sample_stats, v
    assert np.all(idata.sample_stats["lp"].values < 0)
    assert list(idata.observed_data["n_conv"].values) == [int(x) for x in np.bincount(log.arm[~np.isnan(log.conversion_time)], minlength=3)]
    assert int(idata.constant_data["plays"].values.sum()) == len(log)
    assert int(idata.observed_data["seen_count"].sum() + idata.observed_data["unseen_count"].sum()) == len(log)
    ll = idata.log_likelihood["obs"]
    assert ll.dims == ("chain", "draw", "row") and ll.shape[-1] == len(log) and ll.dtype == np.float64
    # the pointwise values add up to the model's likelihood at a draw
    p0 = jnp.asarray(post["p"].values[0, 0]); th0 = {"delay_mean": jnp.asarray(post["delay_mean"].values[0, 0])}
    assert float(ll.values[0, 0].sum()) == pytest.approx(float(B.loglik_rows(log.rows(), p0, th0, "exponential")), rel=1e-5)
    loo = az.loo(idata)
    assert np.isfinite(loo.elpd_loo) and loo.n_data_points == len(log)
    s = az.summary(idata, var_names=["p", "delay_mean"])
    assert "p[new]" in s.index and s.loc["p[new]", "mean"] == pytest.approx(0.5, abs=0.1)  # the prior Beta(1, 1)
    paths = save_fit(idata, log, str(tmp_path / "fit"))
    assert "new" in (tmp_path / "fit" / "summary.md").read_text()
    assert all((tmp_path / "fit" / f).exists() for f in ("posterior.nc", "delay_cdf.png", "trace.png", "ppc.png"))
    back = az.from_netcdf(paths["idata"])
    assert list(back.posterior["arm"].values) == ["control", "variant-b", "new"]


def test_bad_fit_options_rejected_before_compiling():
    log = _dup_log(n=400)
    with pytest.raises(ValueError, match="log_likelihood"):
        B.fit(log, log_likelihood="yes")
    with pytest.raises(ValueError, match="chain_method"):
        B.fit(log, chain_method="threads")


def _stamp_table():
    """Hand-computed case: origin 2024-03-01 00:00, unit hours.
    row 0: arm "b", decided 10:20, converted 13:50 -> play 10.333.., conversion 13.833.., rounds 10 and 13
    row 1: arm "a", decided 11:00, nothing       -> play 11, round 11
    row 2: arm "b", decided 23:30 (UTC+1 stamp = 22:30 UTC), converted 02-Mar 01:15 UTC -> 22.5, 25.25; rounds 22, 25
    cutoff 2024-03-02 06:00 -> 30 hours."""
    import pandas as pd

    return pd.DataFrame({"variant": ["b", "a", "b"],
                         "decided": ["2024-03-01 10:20", "2024-03-01T11:00:00", "2024-03-01T23:30:00+01:00"],
                         "converted": ["2024-03-01 13:50", "", "2024-03-02 01:15:00Z"],
                         "seen_at": ["2024-03-02 06:00"] * 3})


def test_timestamps_parsed_into_the_right_rounds(tmp_path):
    pd = pytest.importorskip("pandas")
    df = _stamp_table()
    cols = {"arm": "variant", "play_time": "decided", "conversion_time": "converted", "cutoff": "seen_at"}
    csv_path = tmp_path / "log.csv"
    df.to_csv(csv_path, index=False)
    sources = [df, str(csv_path)]
    try:
        import pyarrow  # noqa: F401

        pq = tmp_path / "log.parquet"
        df.assign(decided=pd.to_datetime(df["decided"], utc=True, format="mixed"),
                  converted=pd.to_datetime(df["converted"].replace("", None), utc=True, format="mixed"),
                  seen_at=pd.to_datetime(df["seen_at"], utc=True)).to_parquet(pq)
        sources.append(str(pq))
    except ImportError:
        pass
    for src in sources:
        log = B.load_log(src, columns=cols, time_unit="h", origin="2024-03-01")
        assert log.arm_labels == ("a", "b") and log.arm.tolist() == [1, 0, 1], src
        np.testing.assert_allclose(log.play_time, [10 + 1 / 3, 11.0, 22.5], rtol=1e-12)
        np.testing.assert_allclose(log.conversion_time, [13 + 5 / 6, np.nan, 25.25], rtol=1e-12)
        np.testing.assert_allclose(log.cutoff, [30.0] * 3)
        r = B.load_log(src, columns=cols, time_unit="h", origin="2024-03-01", rounds=True)
        np.testing.assert_array_equal(r.play_time, [10, 11, 22])
        np.testing.assert_array_equal(r.conversion_time, [13, np.nan, 25])
        m = B.load_log(src, columns=cols, time_unit="min")  # origin: the first decision, 10:20
        np.testing.assert_allclose(m.play_time, [0.0, 40.0, 730.0])
    log = B.load_log(df.drop(columns=["seen_at"]), columns=cols, cutoff="2024-03-02 06:00", time_unit="D",
                     origin="2024-03-01")
    np.testing.assert_allclose(log.cutoff, [1.25] * 3)
    with pytest.raises(ValueError, match="time_unit"):
        B.load_log(df, columns=cols)


def test_bad_rows_named_by_number_and_column(tmp_path):
    pytest.importorskip("pandas")
    path = tmp_path / "bad.csv"
    path.write_text("arm,play_time,conversion_time,cutoff\n"
                    "a,2024-01-01 00:00,2024-01-01 05:00,2024-01-03\n"
                    "b,2024-01-01 01:00,,2024-01-03\n"
                    "a,2024-01-01 02:00,yesterday-ish,2024-01-03\n")
    with pytest.raises(ValueError, match=r"bad.csv: row 3 \(line 4\), column 'conversion_time'.*yesterday-ish"):
        B.load_log(str(path), time_unit="h")
    path.write_text("arm,play_time,conversion_time,cutoff\n"
                    "a,1,3,10\nb,2,,10\na,5,4,10\n")
    with pytest.raises(ValueError, match=r"conversion before its play at .*row 3 \(line 4\), column 'conversion_time'"):
        B.load_log(str(path))
    path.write_text("arm,play_time,conversion_time,cutoff\n"
                    "a,1,3,10\nb,x2,,10\n")
    with pytest.raises(ValueError, match=r"row 2 \(line 3\), column 'play_time'.*not a number"):
        B.load_log(str(path))
    path.write_text("arm,play_time,conversion_time,cutoff\n"
                    "a,1,3,10\nzz,2,,10\n")
    with pytest.raises(ValueError, match=r"unknown arm 'zz' at .*row 2 \(line 3\), column 'arm'"):
        B.load_log(str(path), arms=["a", "b"])
    with pytest.raises(ValueError, match=r"row 1, column 'cutoff'.*finite"):
        B.conversion_log([0, 1], [0.0, 1.0], [np.nan, np.nan], [5.0, np.inf])
    # the CLI reports the row and exits 2
    path.write_text("arm,play_time,conversion_time,cutoff\na,1,3,10\nb,5,4,10\n")
    assert cli.main(["fit", str(path), "--no-progress"]) == 2


def test_large_arm_labels_do_not_allocate_by_index():
    log = B.conversion_log([1_000_000, 7, 1_000_000], [0.0, 1.0, 2.0], [np.nan, 2.0, np.nan], 5.0)
    assert log.n_arms == 2 and log.arm_labels == (7, 1_000_000) and log.arm.tolist() == [1, 0, 1]
    wr, _, _ = B.compress_log(log)
    assert wr.n_conv.shape == (2,)
    log = B.conversion_log([0, 2], [0.0, 1.0], [np.nan, np.nan], 5.0, n_arms=4)  # declared indices: 1 and 3 empty
    assert log.empty_arms == (1, 3)


def test_cli_fit_timestamps_parquet_columns(tmp_path, capsys):
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    base = B.synthetic_log([0.2, 0.4], 600, span=200, cutoff=200, mean=20, seed=5)
    t0 = pd.Timestamp("2024-05-01")
    stamp = lambda x: t0 + pd.to_timedelta(x, unit="h")
    df = pd.DataFrame({"variant": np.array(["x", "y"])[base.arm], "decided": stamp(base.play_time),
                       "converted": stamp(base.conversion_time), "observed": stamp(base.cutoff)})
    path = tmp_path / "log.parquet"
    df.to_parquet(path)
    out = tmp_path / "fit"
    cols = ["--column", "arm=variant", "--column", "play_time=decided", "--column", "conversion_time=converted",
            "--column", "cutoff=observed"]
    rc = cli.main(["fit", str(path), "--model", "weibull", "--time-unit", "h", *cols,
                   "--chains", "1", "--warmup", "100", "--samples", "100", "--out", str(out), "--no-progress",
                   "--log-likelihood"])
    assert rc == 0, capsys.readouterr().err
    import arviz as az

    idata = az.from_netcdf(str(out / "posterior.nc"))
    assert list(idata.posterior["arm"].values) == ["x", "y"] and idata.posterior.attrs["time_unit"] == "h"
    assert "log_likelihood" in idata.groups()
    capsys.readouterr()
    assert cli.main(["fit", str(path), *cols, "--no-progress"]) == 2  # timestamps without --time-unit
    assert "time_unit" in capsys.readouterr().err
