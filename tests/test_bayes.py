"""Bayesian conversion-and-delay models (docs/bayes.md, *Tests of the offline models*): the exact
compression against a float64 likelihood for every family, NUTS recovery, the log checks, SVI
against NUTS and a small two-sided coverage run."""
import math

import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

from jaxbandits import bayes as B
from jaxbandits.apps import cli

# ----------------------------------------------------------------------------- float64 reference likelihood
# The likelihood of docs/bayes.md (The model), written out in float64 (never through the library's code):
#   seen conversion with delay d:    log p + log f(d)
#   nothing seen by age a (capped):  log(1 - p F(a))
# discrete delays D = floor(X): S(a) = S_c(a + 1), f(d) = S_c(d) - S_c(d + 1); geometric in its closed
# form S(a) = exp(-(a+1)/mu), f(d) = exp(-d/mu) (1 - exp(-1/mu)); histogram: pmf w_b / (e_{b+1} - e_b)
# on the integers of bin b.
HIST_EDGES = (0, 2, 5, 10, 20, 35, 60)
TH_SHARED = {"exponential": {"delay_mean": 23.0}, "geometric": {"delay_mean": 17.0},
             "weibull": {"delay_mean": 23.0, "delay_shape": 1.7}, "lognormal": {"delay_median": 10.0, "delay_sigma": 1.0},
             "histogram": {"delay_w": np.array([0.1, 0.25, 0.3, 0.2, 0.1, 0.05])}}
TH_PER_ARM = {"exponential": {"delay_mean": np.array([9.0, 23.0, 41.0])},
              "geometric": {"delay_mean": np.array([30.0, 6.0, 14.0])},
              "weibull": {"delay_mean": np.array([12.0, 31.0, 20.0]), "delay_shape": np.array([0.8, 1.9, 1.3])},
              "lognormal": {"delay_median": np.array([5.0, 26.0, 12.0]), "delay_sigma": np.array([0.9, 1.3, 1.0])},
              "histogram": {"delay_w": np.array([[0.4, 0.3, 0.1, 0.1, 0.05, 0.05], [0.05, 0.05, 0.1, 0.2, 0.3, 0.3],
                                                 [0.1, 0.25, 0.3, 0.2, 0.1, 0.05]])}}
P_TRUE = np.array([0.35, 0.6, 0.2])
# (log-normal laws are kept away from a tiny head mass P(D = 0): there log f(0) = log(-expm1(log S_c(1)))
# with S_c(1) ~ 1 carries float32's absolute error ~6e-8 / f(0), a precision limit, not a bug)


def _surv_c64(name, x, th):
    """Continuous survival S_c(x) = P(X > x), float64."""
    if name in ("exponential", "geometric"):
        return math.exp(-x / th["delay_mean"])
    if name == "weibull":
        k = th["delay_shape"]
        scale = th["delay_mean"] / math.gamma(1 + 1 / k)
        return math.exp(-((x / scale) ** k))
    if x <= 0:
        return 1.0
    z = (math.log(x) - math.log(th["delay_median"])) / th["delay_sigma"]
    return 0.5 * math.erfc(z / math.sqrt(2))


def _dens_c64(name, x, th):
    """Continuous density f_c(x), float64."""
    if name in ("exponential", "geometric"):
        return math.exp(-x / th["delay_mean"]) / th["delay_mean"]
    if name == "weibull":
        k = th["delay_shape"]
        scale = th["delay_mean"] / math.gamma(1 + 1 / k)
        return k / scale * (x / scale) ** (k - 1) * math.exp(-((x / scale) ** k))
    s = th["delay_sigma"]
    z = (math.log(x) - math.log(th["delay_median"])) / s
    return math.exp(-0.5 * z * z) / (x * s * math.sqrt(2 * math.pi))


def _hist_pmf64(w, edges, d):
    for b in range(len(edges) - 1):
        if edges[b] <= d < edges[b + 1]:
            return w[b] / (edges[b + 1] - edges[b])
    return 0.0


def _surv_d64(name, a, th, edges=HIST_EDGES):
    """Discrete survival P(D > a), float64."""
    if name == "geometric":
        return math.exp(-(a + 1) / th["delay_mean"])
    if name == "histogram":
        return sum(_hist_pmf64(th["delay_w"], edges, d) for d in range(int(a) + 1, edges[-1]))
    return _surv_c64(name, a + 1, th)


def _pmf_d64(name, d, th, edges=HIST_EDGES):
    """Discrete pmf P(D = d), float64."""
    if name == "geometric":
        return math.exp(-d / th["delay_mean"]) * (1 - math.exp(-1 / th["delay_mean"]))
    if name == "histogram":
        return _hist_pmf64(th["delay_w"], edges, d)
    return _surv_c64(name, d, th) - _surv_c64(name, d + 1, th)


def _ref_loglik_rows(arm, play, conv_time, cutoff, p, name, th, discrete, window=None, per_arm=False):
    """Per-row log-likelihood of the raw log (docs/bayes.md, The model), float64: a conversion after
    the cutoff or with a delay above the window is not seen; the age is capped at the window."""
    out = np.empty(len(arm))
    for i, (k, s, c, co) in enumerate(zip(arm, play, conv_time, cutoff)):
        thk = {n: float(v[k]) if per_arm else float(v) for n, v in th.items() if n != "delay_w"}
        if "delay_w" in th:
            thk["delay_w"] = th["delay_w"][k] if per_arm else th["delay_w"]
        age = co - s if window is None else min(co - s, window)
        seen = not math.isnan(c) and c <= co and (window is None or c - s <= window)
        if seen:
            f = _pmf_d64(name, c - s, thk) if discrete else _dens_c64(name, c - s, thk)
            out[i] = math.log(p[k]) + math.log(f)
        else:
            surv = _surv_d64(name, age, thk) if discrete else _surv_c64(name, age, thk)
            out[i] = math.log(1 - p[k] * (1 - surv))
    return out


def _ref_log_prior(name, p, th, prior_mean, per_arm, pa=1.0, pb=1.0, mean_scale=1.5, edges=HIST_EDGES):
    """The priors of docs/bayes.md (The model), float64: p ~ Beta(pa, pb); scale parameters
    LogNormal(log prior_mean, mean_scale); Weibull shape and log-normal sigma LogNormal(0, 0.5);
    histogram Dirichlet(1)."""
    lp = float(np.sum(stats.beta.logpdf(p, pa, pb)))
    ln = lambda x, loc, s: float(np.sum(stats.lognorm.logpdf(x, s, scale=loc)))
    if name in ("exponential", "geometric"):
        return lp + ln(th["delay_mean"], prior_mean, mean_scale)
    if name == "weibull":
        return lp + ln(th["delay_mean"], prior_mean, mean_scale) + ln(th["delay_shape"], 1.0, 0.5)
    if name == "lognormal":
        return lp + ln(th["delay_median"], prior_mean, mean_scale) + ln(th["delay_sigma"], 1.0, 0.5)
    w = np.atleast_2d(th["delay_w"])  # Dirichlet(1, ..., 1): the constant log Gamma(B) per law
    return lp + w.shape[0] * math.lgamma(len(edges) - 1)


def _edge_case_log(discrete, seed=11, n=240, K=3, M=40, cutoff=200):
    """A raw log with random rows plus the boundary cases: delay 0, delay exactly M and M + 1, a
    conversion exactly at the cutoff and one just after it, a play at the cutoff."""
    rng = np.random.default_rng(seed)
    arm = rng.integers(0, K, n)
    play = rng.uniform(0, cutoff, n)
    d = rng.weibull(1.3, n) * 25
    if discrete:
        play, d = np.floor(play), np.floor(d)
    ct = np.where(rng.random(n) < 0.5, play + d, np.nan)  # conversion times past the cutoff are not trusted
    z = 0 if discrete else 0.25  # delay 0 (discrete); the continuous density at 0 may be 0 or infinite
    extra = [(0, 10, 10 + z), (1, 20, 20 + M), (2, 30, 31 + M), (0, cutoff - 7, cutoff), (1, cutoff - 7, cutoff + 1),
             (2, cutoff, np.nan), (1, cutoff - z, cutoff), (2, 50, 50 + M)]
    arm = np.concatenate([arm, [e[0] for e in extra]])
    play = np.concatenate([play, [e[1] for e in extra]])
    ct = np.concatenate([ct, [e[2] for e in extra]])
    return B.conversion_log(arm, play, ct, cutoff, K)


def _th32(th):
    return {k: jnp.asarray(v, jnp.float32) for k, v in th.items()}


@pytest.mark.parametrize("per_arm", [False, True], ids=["shared", "per-arm"])
@pytest.mark.parametrize("name", ["exponential", "geometric", "weibull", "lognormal", "histogram"])
def test_log_density_and_compression_equal_the_float64_likelihood(name, per_arm):
    """Every family, shared and per-arm laws: (1) the per-row log-likelihood (discrete, window
    M = 40, and continuous where the family has it) equals the float64 formula above row by row
    and in sum; (2) the sufficient statistics give the same number; (3) the NumPyro model's
    log joint on rows and on the statistics equals float64 prior + likelihood (a tempered or
    re-weighted likelihood, or a wrong prior, fails here directly)."""
    from numpyro.infer.util import log_density

    M, K, prior_mean = 40, 3, 25.0
    th = (TH_PER_ARM if per_arm else TH_SHARED)[name]
    fam = B.family(name, HIST_EDGES) if name == "histogram" else name
    p32 = jnp.asarray(P_TRUE, jnp.float32)
    p64 = P_TRUE.astype(np.float32).astype(np.float64)
    th64 = {k: np.asarray(v, np.float32).astype(np.float64) for k, v in th.items()}  # the float32 values used
    for discrete in ([True] if name in ("geometric", "histogram") else [True, False]):
        log = _edge_case_log(discrete)
        window = M
        rows = log.rows(window=window, discrete=discrete)
        ref_rows = _ref_loglik_rows(log.arm, log.play_time, log.conversion_time, log.cutoff, p64, name, th64, discrete,
                                    window, per_arm)
        ref = ref_rows.sum()
        d = B.CensoredConversion(p32[rows.arm], {k: (v[rows.arm] if per_arm else v) for k, v in _th32(th).items()},
                                 rows.age, B.family(fam), discrete)
        got_rows = np.asarray(d.log_prob(jnp.stack([rows.converted, rows.delay], -1)), np.float64)
        np.testing.assert_allclose(got_rows, ref_rows, rtol=2e-5, atol=2e-6)
        got = float(B.loglik_rows(rows, p32, _th32(th), fam, discrete, per_arm_delay=per_arm))
        assert got == pytest.approx(ref, rel=1e-5)
        kw = dict(n_arms=K, fam=fam, discrete=discrete, per_arm_delay=per_arm, prior_mean=prior_mean)
        params = {"p": p32, **_th32(th)}
        prior = _ref_log_prior(name, p64, th64, prior_mean, per_arm)
        assert float(log_density(B.conversion_model, (rows,), kw, params)[0]) == pytest.approx(ref + prior, rel=1e-5)
        if discrete:
            ss = B.compress(rows, K, M, per_arm_delay=per_arm)
            assert float(B.loglik_suffstats(ss, p32, _th32(th), fam, per_arm_delay=per_arm)) == pytest.approx(ref, rel=1e-5)
            lj = float(log_density(B.conversion_model, (ss,), kw, params)[0])
            assert lj == pytest.approx(ref + prior, rel=1e-5)


def test_priors_are_wired():
    """Non-default priors reach the model: Beta(p_a, p_b) on p and the delay scale's log-sd."""
    from numpyro.infer.util import log_density

    log = _edge_case_log(True)
    rows = log.rows(window=40, discrete=True)
    th = TH_SHARED["exponential"]
    params = {"p": jnp.asarray(P_TRUE, jnp.float32), **_th32(th)}
    ref = _ref_loglik_rows(log.arm, log.play_time, log.conversion_time, log.cutoff,
                           P_TRUE.astype(np.float32).astype(np.float64), "exponential", th, True, 40).sum()
    pri = {"p_a": 2.0, "p_b": 3.5, "delay_mean_scale": 0.7}
    prior = _ref_log_prior("exponential", P_TRUE.astype(np.float32).astype(np.float64), th, 12.0, False, 2.0, 3.5, 0.7)
    lj = float(log_density(B.conversion_model, (rows,), dict(n_arms=3, fam="exponential", discrete=True, priors=pri,
                                                             prior_mean=12.0), params)[0])
    assert lj == pytest.approx(ref + prior, rel=1e-5)


@pytest.mark.parametrize("name", ["exponential", "geometric", "weibull", "lognormal", "histogram"])
def test_family_mean_and_discrete_laws_are_distributions(name):
    """The implied delay mean (float64 formula) and, for the discrete law, pmf and survival
    consistent: sum of the pmf above a equals S(a)."""
    th = TH_SHARED[name]
    fam = B.family(name, HIST_EDGES) if name == "histogram" else B.family(name)
    if name == "lognormal":
        ref = th["delay_median"] * math.exp(0.5 * th["delay_sigma"] ** 2)
    elif name == "histogram":
        e = np.asarray(HIST_EDGES)
        ref = float(np.sum(th["delay_w"] * (e[:-1] + e[1:] - 1) / 2))
    else:
        ref = th["delay_mean"]
    assert float(fam.mean(_th32(th))) == pytest.approx(ref, rel=1e-6)
    a = np.arange(60)
    pmf = np.exp(np.asarray(fam.log_pmf(jnp.asarray(a), _th32(th)), np.float64))
    surv = np.exp(np.asarray(fam.log_surv(jnp.asarray(a), _th32(th)), np.float64))
    np.testing.assert_allclose(pmf, [_pmf_d64(name, x, th) for x in a], rtol=1e-4, atol=1e-9)
    np.testing.assert_allclose(surv, [_surv_d64(name, x, th) for x in a], rtol=1e-4, atol=1e-7)


def test_histogram_log_density_by_hand():
    edges = (0, 2, 5, 10)
    w = np.array([0.5, 0.3, 0.2])
    fam = B.family("histogram", edges)
    th = {"delay_w": jnp.asarray(w, jnp.float32)}
    pmf = np.concatenate([np.full(2, 0.25), np.full(3, 0.1), np.full(5, 0.04)])
    np.testing.assert_allclose(np.exp(fam.log_pmf(jnp.arange(10), th)), pmf, rtol=1e-5)
    np.testing.assert_allclose(np.exp(fam.log_surv(jnp.arange(10), th)), 1 - np.cumsum(pmf), atol=1e-6)


def test_offline_nuts_recovers_truth_and_reports_diagnostics():
    """NUTS recovery at a smaller size: truth inside the 94% HDI, r_hat < 1.01, no divergences; posterior
    delay curves and pending conversions present."""
    import arviz as az

    log = B.synthetic_log([0.05, 0.10, 0.15], 6000, span=1000, cutoff=1000, mean=50, seed=2)
    idata = B.fit(log, "exponential", num_chains=2, num_warmup=300, num_samples=400, seed=1, log_likelihood=True)
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
    """SVI (full-rank Gaussian guide) and NUTS (the reference, run here) on the same Weibull log:
    posterior means within 0.5 NUTS posterior sd, posterior sds within 35%, both near the truth."""
    log = B.synthetic_log([0.05, 0.10, 0.15], 4000, span=1000, cutoff=1000, mean=50, delay="weibull", shape=1.5, seed=4)
    svi = B.fit(log, "weibull", method="svi", svi_steps=2000, svi_lr=0.02, num_samples=1000).posterior
    nuts = B.fit(log, "weibull", num_chains=1, num_warmup=200, num_samples=400, seed=3).posterior
    assert svi.attrs["method"] == "svi" and nuts.attrs["method"] == "nuts"
    draws = lambda post: np.column_stack([post["p"].values.reshape(-1, 3), post["delay_mean"].values.ravel(),
                                          post["delay_shape"].values.ravel()])
    s, n = draws(svi), draws(nuts)
    print("svi", s.mean(0), s.std(0), "\nnuts", n.mean(0), n.std(0))
    assert np.all(np.abs(s.mean(0) - n.mean(0)) < 0.5 * n.std(0)), (s.mean(0), n.mean(0), n.std(0))
    assert np.all(np.abs(s.std(0) / n.std(0) - 1) < 0.35), (s.std(0), n.std(0))
    truth = np.array([0.05, 0.10, 0.15, 50.0, 1.5])
    assert np.all(np.abs(n.mean(0) - truth) < 3 * n.std(0)), (n.mean(0), n.std(0))


def test_geometric_fit_recovers_truth():
    """The geometric family (the discretised exponential) on discrete data floor(Exp(mu)), mu = 40,
    with a window M = 63: NUTS recovers p and mu within 3 posterior sd, with tight posteriors."""
    log = B.synthetic_log([0.2, 0.4], 2000, span=400, cutoff=400, mean=40.0, discrete=True, seed=6)
    post = B.fit(log, "geometric", discrete=True, window=63, num_chains=1, num_warmup=200, num_samples=300,
                 seed=1, prior_mean=20.0).posterior
    x = np.column_stack([post["p"].values.reshape(-1, 2), post["delay_mean"].values.ravel()])
    truth = np.array([0.2, 0.4, 40.0])
    assert np.all(np.abs(x.mean(0) - truth) < 3 * x.std(0)), (x.mean(0), x.std(0))
    assert np.all(x.std(0) < [0.04, 0.05, 10.0]), x.std(0)


def test_coverage_small():
    """A small calibration run (fast tier): truth drawn from the prior (K = 2, p ~ Beta(1, 1),
    mu ~ LogNormal(log 20, 0.5)), 2000 plays observed over 300 rounds (the likelihood dominates the
    prior, so a mis-scaled likelihood shows in full), NUTS on each replication (12 replications x
    3 parameters; slow tier: 60). Two-sided: the central 90% intervals must cover the truth at about the nominal rate
    AND the central 50% intervals must cover it about half of the time, so intervals that are too
    wide (a tempered likelihood) fail as well as intervals that are too narrow; the mean distance
    of the truth's posterior quantile from 1/2 must be near its calibrated value 1/4 (uniform
    quantiles; sd about 0.024 for 36 independent ones)."""
    _coverage(12, lo90=0.72, lo50=0.25, hi50=0.75, mad_tol=0.07)


@pytest.mark.slow
def test_coverage_slow():
    _coverage(60, lo90=0.83, hi90=0.97, lo50=0.38, hi50=0.62, mad_tol=0.035)


def _coverage(n_rep, lo90, lo50, hi50, mad_tol, hi90=1.0):
    rng = np.random.default_rng(7)
    ranks = []
    for r in range(n_rep):
        p = rng.uniform(size=2)
        mu = float(np.exp(math.log(20) + 0.5 * rng.standard_normal()))
        log = B.synthetic_log(p, 2000, span=300, cutoff=300, mean=mu, seed=100 + r)  # data-dominated posteriors
        idata = B.fit(log, "exponential", num_chains=1, num_warmup=300, num_samples=600, seed=r,
                      priors={"delay_mean_scale": 0.5}, prior_mean=20.0)
        post = idata.posterior
        for name, truth in (("p", p), ("delay_mean", np.array([mu]))):
            x = post[name].values.reshape(600, -1)
            ranks += list(np.mean(x < truth, axis=0))  # posterior quantile of the truth: ~U(0, 1) when calibrated
    u = np.asarray(ranks)
    cov90 = float(np.mean((u >= 0.05) & (u <= 0.95)))
    cov50 = float(np.mean((u >= 0.25) & (u <= 0.75)))
    mad = float(np.mean(np.abs(u - 0.5)))  # 0.25 for uniform ranks; smaller: too wide; larger: too narrow
    print(f"coverage 90%: {cov90:.3f}, 50%: {cov50:.3f}, mean |rank - 1/2| {mad:.3f}")
    assert lo90 <= cov90 <= hi90, cov90
    assert lo50 <= cov50 <= hi50, cov50
    assert 0.25 - mad_tol <= mad <= 0.25 + mad_tol, mad


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
                     "--warmup", "150", "--samples", "150", "--window", "150"]) == 0
    import json

    attrs = json.loads((out / "summary.json").read_text())["attrs"]
    assert attrs["model"] == "weibull" and attrs["window"] == 150.0 and attrs["n_rows"] == 400
    for f in ("posterior.nc", "summary.md", "summary.json", "posterior_p.png", "delay_cdf.png", "trace.png", "ppc.png"):
        assert (out / f).exists(), f
    import arviz as az

    idata = az.from_netcdf(str(out / "posterior.nc"))
    assert set(idata.posterior.data_vars) >= {"p", "delay_mean", "delay_shape", "delay_cdf"}


def test_kaplan_meier_matches_truth_without_censoring():
    from jaxbandits.bayes.report import kaplan_meier_conversion

    log = B.synthetic_log([0.4], 20000, span=1, cutoff=1000, mean=10, seed=9)  # every play watched ~1000
    km = kaplan_meier_conversion(log, 0, [5, 10, 30])
    np.testing.assert_allclose(km, 0.4 * (1 - np.exp(-np.array([5, 10, 30]) / 10)), atol=0.012)


class _Lomax(B.Family):
    """A family of one's own, written outside the package: Lomax (Pareto II) delays,
    ``S_c(x) = (1 + x / delay_scale)^(-delay_alpha)``."""

    def __init__(self):
        super().__init__("lomax", ("delay_scale", "delay_alpha"))

    def default_priors(self, prior_mean):
        return {"delay_scale_loc": prior_mean, "delay_scale_scale": 1.5, "delay_alpha_scale": 0.5}

    def sample(self, priors, n_laws=None):
        import numpyro
        import numpyro.distributions as dist

        def ln(loc, s):
            d = dist.LogNormal(math.log(loc), s)
            return d if n_laws is None else d.expand((n_laws,)).to_event(1)

        return {"delay_scale": numpyro.sample("delay_scale", ln(priors["delay_scale_loc"], priors["delay_scale_scale"])),
                "delay_alpha": numpyro.sample("delay_alpha", ln(2.0, priors["delay_alpha_scale"]))}

    def unconstrained_locs(self, prior_mean):
        return {"delay_scale": math.log(prior_mean), "delay_alpha": math.log(2.0)}

    def log_surv_c(self, x, th):
        return -th["delay_alpha"] * jnp.log1p(jnp.asarray(x, jnp.float32) / th["delay_scale"])

    def log_pdf_c(self, x, th):
        a, s = th["delay_alpha"], th["delay_scale"]
        return jnp.log(a / s) - (a + 1.0) * jnp.log1p(jnp.asarray(x, jnp.float32) / s)

    def mean(self, th):
        return th["delay_scale"] / (th["delay_alpha"] - 1.0)


@pytest.mark.parametrize("per_arm", [False, True], ids=["shared", "per-arm"])
def test_a_family_of_ones_own_runs_through_models_and_the_policy(per_arm):
    """A family defined here (no name known to the library) goes through every path that takes a
    family: the per-row likelihood equals the float64 formula, the compressed one equals it, the
    NumPyro model's log joint is prior + likelihood, and the in-scan TS runs on it."""
    import jax
    from numpyro.infer.util import log_density

    from jaxbandits import channels as C, delays as D, envs as E
    from jaxbandits.policies import bayes as PB
    from jaxbandits.engine import simulate

    fam, K, M = _Lomax(), 3, 40
    th = ({"delay_scale": np.array([12.0, 30.0, 20.0]), "delay_alpha": np.array([1.5, 3.0, 2.2])} if per_arm
          else {"delay_scale": 25.0, "delay_alpha": 2.5})
    th64 = {k: np.asarray(v, np.float32).astype(np.float64) for k, v in th.items()}
    p32, p64 = jnp.asarray(P_TRUE, jnp.float32), P_TRUE.astype(np.float32).astype(np.float64)
    log = _edge_case_log(True)
    rows = log.rows(window=M, discrete=True)
    S = lambda x, k: (1 + x / (th64["delay_scale"][k] if per_arm else th64["delay_scale"])) ** -(
        th64["delay_alpha"][k] if per_arm else th64["delay_alpha"])
    ref = 0.0
    for k, c, d, a in zip(np.asarray(rows.arm), np.asarray(rows.converted), np.asarray(rows.delay), np.asarray(rows.age)):
        ref += (math.log(p64[k]) + math.log(S(d, k) - S(d + 1, k)) if c > 0
                else math.log(1 - p64[k] * (1 - S(a + 1, k))))
    got = float(B.loglik_rows(rows, p32, _th32(th), fam, True, per_arm_delay=per_arm))
    assert got == pytest.approx(ref, rel=1e-5)
    ss = B.compress(rows, K, M, per_arm_delay=per_arm)
    assert float(B.loglik_suffstats(ss, p32, _th32(th), fam, per_arm_delay=per_arm)) == pytest.approx(ref, rel=1e-5)
    ln = lambda x, loc, s: float(np.sum(stats.lognorm.logpdf(x, s, scale=loc)))
    prior = (float(np.sum(stats.beta.logpdf(p64, 1, 1))) + ln(th64["delay_scale"], 25.0, 1.5)
             + ln(th64["delay_alpha"], 2.0, 0.5))
    kw = dict(n_arms=K, fam=fam, discrete=True, per_arm_delay=per_arm, prior_mean=25.0)
    lj = float(log_density(B.conversion_model, (ss,), kw, {"p": p32, **_th32(th)})[0])
    assert lj == pytest.approx(ref + prior, rel=1e-5)
    env = E.conversions([0.2, 0.3, 0.4], D.geometric(mean=5.0))
    o = simulate(env, C.conversions(), PB.delay_model_ts(15, model=fam, per_arm_delay=per_arm), 60,
                 jax.random.key(0), 2)
    assert np.isfinite(o.regret).all() and o.pulls[:, -1].sum() == 2 * 60


@pytest.mark.parametrize("name", ["exponential", "weibull", "lognormal", "histogram"])
def test_delay_cdf_grid_is_each_draws_cdf(name):
    """fit()'s posterior delay curves: F(a) on a grid for every draw (and arm), each equal to the
    float64 CDF of that draw's own parameters (the grid axis goes before the histogram's bin axis)."""
    from jaxbandits.bayes.fit import delay_cdf_grid

    ages = np.array([0.0, 1.0, 3.0, 7.0, 12.0, 30.0, 59.0])
    per_arm = TH_PER_ARM[name]
    draws = {k: np.stack([v, v[::-1]]) for k, v in per_arm.items()}  # [S=2, K=3(, bins)]
    for discrete in ([True] if name == "histogram" else [True, False]):
        fam = B.family(name, HIST_EDGES) if name == "histogram" else name
        got = np.asarray(delay_cdf_grid(fam, draws, ages, discrete), np.float64)
        assert got.shape == (2, 3, len(ages))
        shared = np.asarray(delay_cdf_grid(fam, {k: v[:, 0] for k, v in draws.items()}, ages, discrete), np.float64)
        assert shared.shape == (2, len(ages))
        for s in range(2):
            for k in range(3):
                th = {n: np.asarray(v[s, k], np.float32).astype(np.float64) for n, v in draws.items()}
                surv = [_surv_d64(name, a, th) if discrete else _surv_c64(name, a, th) for a in ages]
                np.testing.assert_allclose(got[s, k], 1 - np.asarray(surv), atol=2e-6)
                if k == 0:
                    np.testing.assert_allclose(shared[s], got[s, 0], atol=1e-7)
