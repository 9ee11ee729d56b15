"""Bayesian conversion-and-delay models (spec `bayes_delay_models.md` §7: T1, T5, T7, the log
checks and a small coverage run)."""
import math

import jax.numpy as jnp
import numpy as np
import pytest
from numpyro.infer.util import log_likelihood
from scipy import stats

from jaxbandits import bayes as B
from jaxbandits import cli

TH = {"exponential": {"delay_mean": 23.0}, "geometric": {"delay_mean": 23.0},
      "weibull": {"delay_mean": 23.0, "delay_shape": 1.7}, "lognormal": {"delay_median": 15.0, "delay_sigma": 0.8}}


def _scipy_law(name, th):
    if name in ("exponential", "geometric"):
        return stats.expon(scale=th["delay_mean"])
    if name == "weibull":
        k = th["delay_shape"]
        return stats.weibull_min(k, scale=th["delay_mean"] / math.gamma(1 + 1 / k))
    return stats.lognorm(th["delay_sigma"], scale=th["delay_median"])


def _hand_loglik(log, p, name, th, discrete, window=None):
    """Per-row likelihood of §2.2 written out with scipy, float64."""
    law = _scipy_law(name, th)
    out = 0.0
    for a, s, c, k in zip(log.arm, log.play_time, log.conversion_time, log.cutoff):
        age = k - s if window is None else min(k - s, window)
        seen = not math.isnan(c) and c <= k and (window is None or c - s <= window)
        if seen:
            d = c - s
            f = (law.cdf(d + 1) - law.cdf(d)) if discrete else law.pdf(d)
            out += math.log(p[a] * f)
        else:
            F = law.cdf(age + 1) if discrete else law.cdf(age)
            out += math.log(1 - p[a] * F)
    return out


@pytest.mark.parametrize("name", ["exponential", "weibull", "lognormal"])
@pytest.mark.parametrize("discrete", [False, True])
def test_log_density_matches_hand_likelihood(name, discrete):
    log = B.synthetic_log([0.3, 0.6], 60, span=80, cutoff=80, mean=20, delay="weibull", discrete=discrete, seed=3)
    p = np.array([0.35, 0.55])
    th = {k: jnp.float32(v) for k, v in TH[name].items()}
    rows = log.rows(window=40 if discrete else None, discrete=discrete)
    ref = _hand_loglik(log, p, name, TH[name], discrete, 40 if discrete else None)
    got = float(B.loglik_rows(rows, jnp.asarray(p, jnp.float32), th, name, discrete))
    assert got == pytest.approx(ref, rel=2e-5)
    # the NumPyro model's pointwise log-likelihood is the same thing (p[arm] and the law wired right)
    ll = log_likelihood(B.conversion_model, {"p": jnp.asarray(p, jnp.float32)[None], **{k: v[None] for k, v in th.items()}},
                        rows, n_arms=2, fam=name, discrete=discrete)["obs"]
    assert float(ll.sum()) == pytest.approx(ref, rel=2e-5)


def test_histogram_log_density_by_hand():
    edges = (0, 2, 5, 10)
    w = np.array([0.5, 0.3, 0.2])
    fam = B.family("histogram", edges)
    th = {"delay_w": jnp.asarray(w, jnp.float32)}
    pmf = np.concatenate([np.full(2, 0.25), np.full(3, 0.1), np.full(5, 0.04)])
    np.testing.assert_allclose(np.exp(fam.log_pmf(jnp.arange(10), th)), pmf, rtol=1e-5)
    np.testing.assert_allclose(np.exp(fam.log_surv(jnp.arange(10), th)), 1 - np.cumsum(pmf), atol=1e-6)


@pytest.mark.parametrize("name", ["exponential", "weibull", "lognormal", "histogram"])
def test_compression_is_exact(name):
    """T1: the fixed-size statistics give the per-row log-likelihood (3000 one-play rounds, M = 127)."""
    M = 127
    log = B.synthetic_log([0.05, 0.1, 0.15], 3000, span=3000, cutoff=3000, mean=30, delay="weibull",
                          discrete=True, seed=1)
    rows = log.rows(window=M, discrete=True)
    ss = B.compress(rows, 3, M)
    p = jnp.asarray([0.07, 0.11, 0.13])
    th = {k: jnp.float32(v) for k, v in TH.get(name, {}).items()} or {"delay_w": jnp.asarray(
        np.random.default_rng(0).dirichlet(np.ones(9)), jnp.float32)}
    a = float(B.loglik_rows(rows, p, th, name, discrete=True))
    b = float(B.loglik_suffstats(ss, p, th, name))
    assert b == pytest.approx(a, rel=1e-5)
    # per-arm laws: one law per arm, hist[K, M+1]
    ssk = B.compress(rows, 3, M, per_arm_delay=True)
    thk = {k: jnp.stack([v, v * 1.2, v * 0.8]) for k, v in th.items()}
    if name == "histogram":
        thk = {"delay_w": jnp.stack([th["delay_w"]] * 3)}
    a = float(B.loglik_rows(rows, p, thk, name, discrete=True, per_arm_delay=True))
    b = float(B.loglik_suffstats(ssk, p, thk, name, per_arm_delay=True))
    assert b == pytest.approx(a, rel=1e-5)


def test_offline_nuts_recovers_truth_and_reports_diagnostics():
    """T5 at a smaller size: truth inside the 94% HDI, r_hat < 1.01, no divergences; posterior
    delay curves and pending conversions present."""
    import arviz as az

    log = B.synthetic_log([0.05, 0.10, 0.15], 6000, span=1000, cutoff=1000, mean=50, seed=2)
    idata = B.fit(log, "exponential", num_chains=2, num_warmup=300, num_samples=400, seed=1)
    d = B.diagnostics(idata)
    assert d["r_hat_max"] < 1.02 and d["divergences"] == 0 and d["ess_bulk_min"] > 200
    hdi = az.hdi(idata, var_names=["p", "delay_mean"], hdi_prob=0.94)
    lo, hi = hdi["p"].values[:, 0], hdi["p"].values[:, 1]
    assert ((lo < [0.05, 0.10, 0.15]) & ([0.05, 0.10, 0.15] < hi)).all()
    assert hdi["delay_mean"].values[0] < 50 < hdi["delay_mean"].values[1]
    assert idata.posterior["delay_cdf"].shape[-1] == idata.posterior["age"].shape[0]
    assert "log_likelihood" in idata.groups() and idata.log_likelihood["obs"].dtype == np.float64
    # expected pending conversions per arm: close to their value under the true parameters,
    # sum over unseen plays of p S(a) / (1 - p F(a)) with S(a) = exp(-a / 50)
    pend = idata.posterior["pending_conversions"].mean(("chain", "draw")).values
    p_true = np.array([0.05, 0.10, 0.15])[log.arm]
    unseen = np.isnan(log.conversion_time)
    s = np.exp(-(log.cutoff - log.play_time) / 50.0)
    w = (p_true * s / (1 - p_true * (1 - s)))[unseen]
    ref = np.array([w[log.arm[unseen] == k].sum() for k in range(3)])
    np.testing.assert_allclose(pend, ref, rtol=0.25)


def test_svi_agrees_with_nuts_on_weibull():
    log = B.synthetic_log([0.05, 0.10, 0.15], 6000, span=1000, cutoff=1000, mean=50, delay="weibull", shape=1.5, seed=4)
    idata = B.fit(log, "weibull", method="svi", svi_steps=2000, svi_lr=0.02, num_samples=500)
    post = idata.posterior
    assert post.attrs["method"] == "svi"
    assert abs(float(post["delay_shape"].mean()) - 1.5) < 4 * float(post["delay_shape"].std()) + 0.05
    assert abs(float(post["delay_mean"].mean()) - 50) < 4 * float(post["delay_mean"].std()) + 1
    np.testing.assert_allclose(post["p"].mean(("chain", "draw")).values, [0.05, 0.10, 0.15], atol=0.02)


def test_coverage_small():
    """A small calibration run (fast tier): truth drawn from the prior (K = 2, p ~ Beta(1, 1),
    mu ~ LogNormal(log 20, 0.5)), NUTS on each replication; the central 90% intervals must cover
    the truth at about the nominal rate (12 replications x 3 parameters; slow tier: 60)."""
    _coverage(12, lo=0.72)


@pytest.mark.slow
def test_coverage_slow():
    _coverage(60, lo=0.83, hi=0.97)


def _coverage(n_rep, lo, hi=1.0):
    rng = np.random.default_rng(7)
    hits = []
    for r in range(n_rep):
        p = rng.uniform(size=2)
        mu = float(np.exp(math.log(20) + 0.5 * rng.standard_normal()))
        log = B.synthetic_log(p, 300, span=100, cutoff=100, mean=mu, seed=100 + r)
        idata = B.fit(log, "exponential", num_chains=1, num_warmup=300, num_samples=600, seed=r,
                      priors={"delay_mean_scale": 0.5}, prior_mean=20.0)
        post = idata.posterior
        for name, truth in (("p", p), ("delay_mean", np.array([mu]))):
            x = post[name].values.reshape(600, -1)
            q = np.percentile(x, [5, 95], axis=0)
            hits += list((q[0] <= truth) & (truth <= q[1]))
    cov = float(np.mean(hits))
    assert lo <= cov <= hi, cov


@pytest.mark.parametrize("kw, word", [
    (dict(arm=[0, 1], play_time=[5, 3], conversion_time=[4, np.nan], cutoff=10), "conversion before its play"),
    (dict(arm=[0, 1], play_time=[-1, 3], conversion_time=[np.nan, np.nan], cutoff=10), "negative play_time"),
    (dict(arm=[0, 3], play_time=[1, 3], conversion_time=[np.nan, np.nan], cutoff=10, n_arms=2), "unknown arm 3"),
    (dict(arm=[0, -1], play_time=[1, 3], conversion_time=[np.nan, np.nan], cutoff=10), "unknown arm -1"),
    (dict(arm=[0, 1], play_time=[1, 30], conversion_time=[np.nan, np.nan], cutoff=10), "cutoff before the play"),
    (dict(arm=[0.5, 1], play_time=[1, 3], conversion_time=[np.nan, np.nan], cutoff=10), "integer arm"),
])
def test_bad_logs_rejected(kw, word):
    with pytest.raises(ValueError, match=word):
        B.conversion_log(**kw)


def test_bad_fit_arguments_and_csv(tmp_path):
    log = B.synthetic_log([0.3, 0.6], 50, span=50, cutoff=50, seed=0)
    for kw, word in [(dict(model="gamma"), "model must be"), (dict(method="mh"), "method"),
                     (dict(model="histogram"), "discrete=True"), (dict(window=-3), "window"),
                     (dict(priors={"p_a": -1}), "positive"), (dict(priors={"nope": 1.0}), "unknown prior")]:
        with pytest.raises(ValueError, match=word):
            B.fit(log, **{"model": "exponential", **kw})
    bad = tmp_path / "bad.csv"
    bad.write_text("arm,play_time,conversion_time,cutoff\n0,5,3,10\n")
    with pytest.raises(ValueError, match="conversion before its play"):
        B.read_log(str(bad))
    bad.write_text("arm,play_time,cutoff\n0,5,10\n")
    with pytest.raises(ValueError, match="missing column"):
        B.read_log(str(bad))
    assert cli.main(["fit", str(bad)]) == 2


def test_log_from_a_pandas_table():
    pd = pytest.importorskip("pandas")
    df = pd.DataFrame({"arm": [0, 1, 1], "play_time": [0.0, 1.0, 2.0], "conversion_time": [3.0, None, None],
                       "cutoff": [5.0, 5.0, 5.0]})
    log = B.from_table(df)
    assert log.n_arms == 2 and np.isnan(log.conversion_time[1]) and log.conversion_time[0] == 3.0
    with pytest.raises(ValueError, match="conversion before its play"):
        B.from_table(df.assign(conversion_time=[0.2, None, None], play_time=[0.5, 1.0, 2.0]))
    with pytest.raises(ValueError, match="missing column"):
        B.from_table(df.drop(columns=["cutoff"]))


def test_cli_fit_writes_files(tmp_path):
    log = B.synthetic_log([0.2, 0.4], 400, span=200, cutoff=200, mean=20, seed=5)
    path = tmp_path / "log.csv"
    B.write_log(str(path), log)
    assert B.read_log(str(path)).arm.tolist() == log.arm.tolist()
    out = tmp_path / "fit"
    assert cli.main(["fit", str(path), "--model", "weibull", "--out", str(out), "--chains", "1",
                     "--warmup", "150", "--samples", "150"]) == 0
    for f in ("posterior.nc", "summary.md", "summary.json", "posterior_p.png", "delay_cdf.png", "trace.png"):
        assert (out / f).exists(), f
    import arviz as az

    idata = az.from_netcdf(str(out / "posterior.nc"))
    assert set(idata.posterior.data_vars) >= {"p", "delay_mean", "delay_shape", "delay_cdf"}


def test_kaplan_meier_matches_truth_without_censoring():
    from jaxbandits.bayes.report import kaplan_meier_conversion

    log = B.synthetic_log([0.4], 20000, span=1, cutoff=1000, mean=10, seed=9)  # every play watched ~1000
    km = kaplan_meier_conversion(log, 0, [5, 10, 30])
    np.testing.assert_allclose(km, 0.4 * (1 - np.exp(-np.array([5, 10, 30]) / 10)), atol=0.012)
