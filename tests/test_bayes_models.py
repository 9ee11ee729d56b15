"""The models beyond the anchors (docs/bayes.md): hierarchical pooling across arms, the contextual
(logistic) model with a delay law per segment, and posterior predictive checks."""
import math
import re

import numpy as np
import pytest

pytest.importorskip("numpyro")
az = pytest.importorskip("arviz")

from jaxbandits import bayes as B  # noqa: E402
from jaxbandits.bayes import ppc as PPC  # noqa: E402  (the report layer: not re-exported by bayes)


def _pop_log(K, plays_per_arm, seed, p_mu=math.log(0.1 / 0.9), p_sd=0.5, m_mu=math.log(30.0), m_sd=0.3):
    rng = np.random.default_rng(seed)
    p = 1 / (1 + np.exp(-(p_mu + p_sd * rng.standard_normal(K))))
    means = np.exp(m_mu + m_sd * rng.standard_normal(K))
    log = B.synthetic_log(p, plays_per_arm * K, span=300, cutoff=400, delay="exponential", arm_means=means, seed=seed + 1)
    return log, p, means


def _mean(idata, name):
    return idata.posterior[name].mean(("chain", "draw")).values


def _check_hierarchical(log, p, means, idh, idf=None):
    """Shrinkage toward the pooled mean, and recovery (of the population and of the arms)."""
    K = log.n_arms
    seen = ~np.isnan(log.conversion_time)
    raw = np.bincount(log.arm[seen], minlength=K) / log.plays_per_arm  # no pooling (few plays are censored)
    ph = _mean(idh, "p")
    pooled = 1 / (1 + np.exp(-_mean(idh, "p_mu")))
    # each arm's estimate moves from its own rate toward the population's: the same side as the
    # population mean, and the spread of the estimates is smaller than the raw rates'
    toward = np.sign(ph - raw) == np.sign(pooled - raw)
    assert toward.mean() >= 0.8, (ph, raw, pooled)
    assert np.std(ph) < 0.8 * np.std(raw)
    # pooling beats no pooling on the arms' rates and (much) on their delay means
    assert np.sqrt(np.mean((ph - p) ** 2)) < np.sqrt(np.mean((raw - p) ** 2))
    # the population parameters are inside their central 98% intervals
    post = idh.posterior
    for name, truth in (("p_mu", math.log(0.1 / 0.9)), ("delay_mean_mu", math.log(30.0))):
        lo, hi = np.percentile(post[name].values, [1, 99])
        assert lo < truth < hi, (name, lo, hi, truth)
    if idf is not None:
        mh, mf = _mean(idh, "delay_mean"), _mean(idf, "delay_mean")
        assert np.sqrt(np.mean((mh - means) ** 2)) < np.sqrt(np.mean((mf - means) ** 2))
        pf = _mean(idf, "p")
        assert np.sqrt(np.mean((ph - p) ** 2)) < np.sqrt(np.mean((pf - p) ** 2))


@pytest.mark.slow  # about 10 s of CPU: the default suite checks the log density by hand instead
def test_hierarchical_shrinks_toward_the_pooled_mean():
    log, p, means = _pop_log(K=12, plays_per_arm=50, seed=11)
    idh = B.fit(log, "exponential", hierarchical=True, num_chains=1, num_warmup=250, num_samples=300, seed=1)
    assert idh.posterior.attrs["hierarchical"] == 1
    assert idh.posterior["p"].dims == ("chain", "draw", "arm") and idh.posterior["delay_mean"].dims[-1] == "arm"
    assert idh.posterior["p_z"].dims[-1] == "arm" and idh.posterior["p_mu"].dims == ("chain", "draw")
    _check_hierarchical(log, p, means, idh)


@pytest.mark.slow
def test_hierarchical_recovers_and_beats_independent_arms():
    log, p, means = _pop_log(K=24, plays_per_arm=60, seed=3)
    idh = B.fit(log, "exponential", hierarchical=True, num_chains=2, num_warmup=400, num_samples=500, seed=0)
    idf = B.fit(log, "exponential", per_arm_delay=True, num_chains=2, num_warmup=400, num_samples=500, seed=0)
    d = B.diagnostics(idh)
    assert d["r_hat_max"] < 1.05 and d["divergences"] <= 5
    _check_hierarchical(log, p, means, idh, idf)
    lo, hi = np.percentile(idh.posterior["p_sd"].values, [1, 99])
    assert lo < 0.5 < hi


def test_hierarchical_log_density_by_hand():
    """The hierarchical model's joint log density at given values: the population priors and the
    standard-normal offsets written out with scipy, plus the flat model's per-arm likelihood at
    ``p = sigmoid(p_mu + p_sd z)`` and ``q = exp(q_mu + q_sd z')`` (Weibull)."""
    import jax.numpy as jnp
    from numpyro.infer.util import log_density
    from scipy import stats

    log = B.synthetic_log([0.1, 0.2, 0.15, 0.3], 300, span=100, cutoff=120, delay="weibull", mean=20, shape=1.4, seed=2)
    wr, _, _ = B.compress_log(log, per_arm_delay=True, resolution=None)
    rng = np.random.default_rng(0)
    K = 4
    v = {"p_mu": -1.7, "p_sd": 0.4, "p_z": rng.standard_normal(K), "delay_mean_mu": 3.1, "delay_mean_sd": 0.3,
         "delay_mean_z": rng.standard_normal(K), "delay_shape_mu": 0.2, "delay_shape_sd": 0.15,
         "delay_shape_z": rng.standard_normal(K)}
    vals = {k: jnp.asarray(x, jnp.float32) for k, x in v.items()}
    ld, tr = log_density(B.hierarchical_model, (wr,), dict(n_arms=K, fam="weibull", prior_mean=25.0), vals)
    p = 1 / (1 + np.exp(-(v["p_mu"] + v["p_sd"] * v["p_z"])))
    th = {q: np.exp(v[f"{q}_mu"] + v[f"{q}_sd"] * v[f"{q}_z"]) for q in ("delay_mean", "delay_shape")}
    np.testing.assert_allclose(np.asarray(tr["p"]["value"]), p, rtol=1e-5)
    np.testing.assert_allclose(np.asarray(tr["delay_mean"]["value"]), th["delay_mean"], rtol=1e-5)
    prior = (stats.norm.logpdf(v["p_mu"], -2.0, 1.5) + stats.halfnorm.logpdf(v["p_sd"], scale=1.0)
             + stats.norm.logpdf(v["delay_mean_mu"], np.log(25.0), 1.5) + stats.halfnorm.logpdf(v["delay_mean_sd"], scale=0.5)
             + stats.norm.logpdf(v["delay_shape_mu"], 0.0, 0.5) + stats.halfnorm.logpdf(v["delay_shape_sd"], scale=0.5)
             + sum(stats.norm.logpdf(v[k]).sum() for k in ("p_z", "delay_mean_z", "delay_shape_z")))
    lik = float(B.loglik_rows(log.rows(), jnp.asarray(p, jnp.float32),
                              {q: jnp.asarray(x, jnp.float32) for q, x in th.items()}, "weibull", per_arm_delay=True))
    assert float(ld) == pytest.approx(prior + lik, rel=2e-5)


def test_hierarchical_arguments_checked_before_compiling():
    log, _, _ = _pop_log(K=3, plays_per_arm=5, seed=1)
    with pytest.raises(ValueError, match="method='nuts'"):
        B.fit(log, "exponential", "svi", hierarchical=True)
    with pytest.raises(ValueError, match="no log-normal parameters to pool"):
        B.fit(log, "histogram", hierarchical=True, discrete=True)
    with pytest.raises(ValueError, match="unknown prior 'p_pool'"):
        B.fit(log, "exponential", hierarchical=True, priors={"p_pool": 1.0})
    with pytest.raises(ValueError, match="'delay_pool_scale' must be a positive number"):
        B.fit(log, "weibull", hierarchical=True, priors={"delay_pool_scale": 0.0})
    with pytest.raises(ValueError, match="hierarchical must be True or False"):
        B.fit(log, "weibull", hierarchical="yes")


def test_cli_hierarchical_flag_reaches_the_fit(tmp_path, capsys):
    """--hierarchical is passed to fit: the histogram family (nothing to pool) is refused with the
    CLI's error format, exit status 2, before anything compiles."""
    from jaxbandits.apps import cli

    log = B.synthetic_log([0.2, 0.3], 50, span=40, cutoff=40, mean=5, discrete=True, seed=1)
    B.write_log(str(tmp_path / "log.csv"), log)
    rc = cli.main(["fit", str(tmp_path / "log.csv"), "--model", "histogram", "--discrete", "--hierarchical",
                   "--out", str(tmp_path / "fit"), "--no-progress"])
    assert rc == 2
    assert "no log-normal parameters to pool" in capsys.readouterr().err


# ----------------------------------------------------------------------------- contextual
TRUTH = {"alpha": [-2.0, -1.5], "beta": [0.8, -0.5], "delay_mean": [15.0, 60.0]}


def _check_context(idata, z=3.5):
    post = idata.posterior
    for name, truth in TRUTH.items():
        v = post[name].values.reshape(-1, len(truth))
        m, s = v.mean(0), v.std(0)
        assert np.all(np.abs(m - np.asarray(truth)) < z * s), (name, m, s, truth)


@pytest.mark.slow  # about 8 s of CPU: the default suite checks the log density by hand instead
def test_contextual_model_recovers_coefficients_and_segment_laws():
    log, X, seg = B.synthetic_contextual_log(2500, TRUTH["alpha"], TRUTH["beta"], TRUTH["delay_mean"], span=400,
                                             cutoff=400, seed=2)
    idata = B.fit_contextual(log, X, seg, "exponential", feature_names=["age", "price"], num_chains=1, num_warmup=250,
                             num_samples=300, seed=0)
    post = idata.posterior
    assert list(post["beta"].coords["feature"].values) == ["age", "price"]
    assert post["delay_mean"].dims[-1] == "segment" and post["alpha"].dims[-1] == "arm"
    _check_context(idata)


@pytest.mark.slow
def test_contextual_model_recovers_with_weibull_delays():
    log, X, seg = B.synthetic_contextual_log(6000, TRUTH["alpha"], TRUTH["beta"], TRUTH["delay_mean"], span=400,
                                             cutoff=400, delay="weibull", shape=1.5, seed=5)
    idata = B.fit_contextual(log, X, seg, "weibull", num_chains=2, num_warmup=400, num_samples=500, seed=1)
    _check_context(idata, z=3.0)
    # the covariates matter: with them shuffled across plays the coefficients collapse to 0
    perm = np.random.default_rng(0).permutation(len(log))
    shuffled = B.fit_contextual(log, X[perm], seg, "weibull", num_chains=2, num_warmup=400, num_samples=500, seed=1)
    b = shuffled.posterior["beta"].values.reshape(-1, 2)
    assert np.all(np.abs(b.mean(0)) < 3 * b.std(0) + 0.05)
    k = idata.posterior["delay_shape"].values.reshape(-1, 2)
    assert np.all(np.abs(k.mean(0) - 1.5) < 3 * k.std(0))
    assert B.diagnostics(idata)["divergences"] == 0


def test_contextual_log_density_by_hand():
    """The summed log-likelihood against a per-play float64 formula (exponential delays)."""
    import jax.numpy as jnp

    from jaxbandits.bayes.contextual import ContextRows, loglik_context

    rng = np.random.default_rng(1)
    N = 50
    arm, seg = rng.integers(0, 2, N), rng.integers(0, 3, N)
    X = rng.standard_normal((N, 2))
    seen = rng.random(N) < 0.4
    delay = np.where(seen, rng.exponential(10, N), 1.0)
    age = rng.uniform(1, 50, N)
    alpha, beta, mean = np.array([-1.0, 0.5]), np.array([0.3, -0.7]), np.array([5.0, 12.0, 40.0])
    p = 1 / (1 + np.exp(-(alpha[arm] + X @ beta)))
    m = mean[seg]
    ref = np.where(seen, np.log(p) - np.log(m) - delay / m, np.log(1 - p * (1 - np.exp(-age / m)))).sum()
    f = lambda x: jnp.asarray(x, jnp.float32)
    rows = ContextRows(jnp.asarray(arm, jnp.int32), f(X), jnp.asarray(seg, jnp.int32), f(seen), f(delay), f(age))
    got = float(loglik_context(rows, f(alpha), f(beta), {"delay_mean": f(mean)}, B.family("exponential")))
    assert got == pytest.approx(ref, rel=2e-5)


def test_contextual_bad_inputs_named():
    log, X, seg = B.synthetic_contextual_log(30, [-1.0], [0.5], [10.0], span=50, cutoff=50, seed=1)
    with pytest.raises(ValueError, match=r"covariates must be an array \[plays=30"):
        B.fit_contextual(log, X[:10])
    Xb = X.copy()
    Xb[4, 0] = np.nan
    with pytest.raises(ValueError, match="covariates: row 4, feature 0"):
        B.fit_contextual(log, Xb)
    with pytest.raises(ValueError, match="segment must have one entry per play"):
        B.fit_contextual(log, X, seg[:3])
    with pytest.raises(ValueError, match="unknown prior 'beta_scale'"):
        B.fit_contextual(log, X, priors={"beta_scale": 1.0})


# ----------------------------------------------------------------------------- posterior predictive checks
def _point_idata(p, mean, shape, n=200, model="weibull"):
    """An InferenceData whose posterior is a point mass (for the check alone, without a fit)."""
    K = len(p)
    post = {"p": np.broadcast_to(np.asarray(p), (1, n, K)).copy(), "delay_mean": np.full((1, n), mean),
            "delay_shape": np.full((1, n), shape)}
    idata = az.from_dict(posterior=post, dims={"p": ["arm"]})
    idata.posterior.attrs.update({"model": model, "window": "none", "discrete": 0})
    return idata


def test_ppc_band_covers_the_data_under_the_truth_and_not_under_a_wrong_law():
    log = B.synthetic_log([0.1, 0.3], 4000, span=500, cutoff=500, delay="weibull", mean=40, shape=2.0, seed=3)
    right = PPC.ppc_curves(_point_idata([0.1, 0.3], 40.0, 2.0), log, n_draws=100)
    wrong = PPC.ppc_curves(_point_idata([0.1, 0.3], 80.0, 2.0), log, n_draws=100)
    assert right["replicated"].shape == (100, 2, right["ages"].size) and right["observed"].shape == (2, right["ages"].size)

    def inside(c):
        lo, hi = np.percentile(c["replicated"], [2.5, 97.5], axis=0)
        return np.mean((c["observed"] >= lo - 1e-12) & (c["observed"] <= hi + 1e-12))

    assert inside(right) > 0.85
    assert inside(wrong) < 0.5
    # without censoring (every play watched 1000 >> delays) the replicated curves average p F(a)
    log2 = B.synthetic_log([0.3], 5000, span=1, cutoff=1000, delay="weibull", mean=40, shape=2.0, seed=4)
    c = PPC.ppc_curves(_point_idata([0.3], 40.0, 2.0), log2, ages=[20.0, 40.0, 80.0], n_draws=200)
    scale = 40.0 / math.gamma(1.5)
    exact = 0.3 * (1 - np.exp(-(np.array([20.0, 40.0, 80.0]) / scale) ** 2))
    np.testing.assert_allclose(c["replicated"].mean(0)[0], exact, atol=0.004)


def test_ppc_plot_and_empty_arm(tmp_path):
    log = B.conversion_log(np.array([0, 0, 0, 0]), np.array([0.0, 1.0, 2.0, 3.0]), np.array([5.0, np.nan, 9.0, np.nan]),
                           20.0, 2)
    c = PPC.ppc_curves(_point_idata([0.5, 0.5], 5.0, 1.0), log, n_draws=20)
    assert np.all(np.isnan(c["observed"][1])) and np.all(np.isfinite(c["observed"][0]))
    PPC.plot_ppc(_point_idata([0.5, 0.5], 5.0, 1.0), log, tmp_path / "ppc.png", n_draws=20)
    assert (tmp_path / "ppc.png").stat().st_size > 5000


def test_km_seen_curve_by_hand():
    # events at 1, 3; censored at 2 and 3 (a tie: the event counts first)
    km = PPC.km_seen_curve([True, False, True, False], [1.0, 2.0, 3.0, 3.0], [0.5, 1, 2, 3, 4])
    s1 = 1 - 1 / 4
    s3 = s1 * (1 - 1 / 2)
    np.testing.assert_allclose(km, [0, 1 - s1, 1 - s1, 1 - s3, 1 - s3])


def test_the_report_layer_is_imported_from_its_modules():
    """``jaxbandits.bayes`` no longer re-exports its report layer (docs/architecture.md): the names
    it used to give raise an AttributeError that names the module to import them from, and that
    module lists it."""
    from jaxbandits.bayes import calibration

    for name, module in [("plot_ppc", PPC), ("ppc_curves", PPC), ("km_seen_curve", PPC), ("sbc", calibration),
                         ("SBCResult", calibration), ("rank_uniformity", calibration)]:
        with pytest.raises(AttributeError, match=re.escape(f"import it from {module.__name__} "
                                                           f"(from {module.__name__} import {name})")):
            getattr(B, name)
        assert name not in B.__all__ and name in module.__all__
    with pytest.raises(AttributeError, match="has no attribute 'no_such_name'"):
        B.no_such_name


def test_hierarchical_and_contextual_priors_follow_one_rule():
    """Both models' priors (``delaymodels.hierarchical.merged_priors``): every key known and named in
    the error with its model, every value a positive number except the model's location, which may
    be any number; booleans are not numbers."""
    from jaxbandits.bayes.contextual import contextual_priors
    from jaxbandits.delaymodels.hierarchical import hierarchical_priors

    for fn, loc, scale, model in ((hierarchical_priors, "p_mu_loc", "p_mu_scale", "hierarchical"),
                                  (contextual_priors, "alpha_loc", "alpha_scale", "contextual")):
        assert fn("weibull", {loc: -3}, 30.0)[loc] == -3.0 and fn("weibull", {scale: 2}, 30.0)[scale] == 2.0
        with pytest.raises(ValueError, match=f"unknown prior 'nope' for the {model} weibull model"):
            fn("weibull", {"nope": 1.0}, 30.0)
        with pytest.raises(ValueError, match=f"prior '{scale}' must be a positive number, got -1"):
            fn("weibull", {scale: -1}, 30.0)
        with pytest.raises(ValueError, match=f"prior '{loc}' must be a number, got True"):
            fn("weibull", {loc: True}, 30.0)
