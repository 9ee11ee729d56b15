"""Fitted delay models to simulation laws: the law of :func:`jaxbandits.bayes.delay_law` has the
model's own discrete CDF (two independent code paths: the model's log-survival and the delay law's
cdf), for every family; ``delay_laws`` reads a fit's posterior (mean, draws, per-arm)."""
import arviz as az
import numpy as np
import pytest

from jaxbandits import bayes as B
from jaxbandits import delays as D

CASES = {
    "exponential": {"delay_mean": 37.5},
    "geometric": {"delay_mean": 12.0},
    "weibull": {"delay_mean": 50.0, "delay_shape": 1.5},
    "lognormal": {"delay_median": 20.0, "delay_sigma": 0.8},
    "histogram": {"delay_w": np.array([0.3, 0.2, 0.1, 0.1, 0.1, 0.05, 0.05, 0.05, 0.05])},
}


@pytest.mark.parametrize("name", list(CASES))
def test_law_has_the_models_discrete_cdf(name):
    fam = B.family(name)
    th = CASES[name]
    law = B.delay_law(fam, th)
    n = np.arange(0, 300)
    model_cdf = 1.0 - np.exp(np.asarray(fam.log_surv(n, {k: np.float32(v) if np.ndim(v) == 0 else np.asarray(v, np.float32)
                                                        for k, v in th.items()}), np.float64))
    np.testing.assert_allclose(np.asarray(law.cdf(n), np.float64), model_cdf, atol=2e-6)
    if name != "histogram":  # the implied mean (floor of X: about E[X] - 1/2)
        assert abs(law.mean - (float(fam.mean({k: np.float32(v) for k, v in th.items()})) - 0.5)) < 0.05


def _idata(name, per_arm=False):
    rng = np.random.default_rng(0)
    th = CASES[name]
    post, dims = {}, {}
    for k, v in th.items():
        v = np.asarray(v, np.float64)
        shape = (2, 50) + ((3,) if per_arm else ()) + v.shape
        post[k] = np.broadcast_to(v, shape) * rng.uniform(0.9, 1.1, shape)
        dims[k] = (["arm"] if per_arm else []) + (["delay_bin"] if v.ndim else [])
    coords = {"delay_bin": ["[0,4)", "[4,8)", "[8,16)", "[16,24)", "[24,32)", "[32,48)", "[48,64)", "[64,96)", "[96,128)"],
              "arm": ["a", "b", "c"]}
    idata = az.from_dict(posterior=post, dims=dims, coords=coords)
    idata.posterior.attrs["model"] = name  # where fit() writes it
    return idata, post


@pytest.mark.parametrize("name", ["weibull", "histogram"])
def test_delay_laws_posterior_mean_draws_and_per_arm(name):
    idata, post = _idata(name)
    law = B.delay_laws(idata)
    want = B.delay_law(name, {k: v.reshape((-1,) + v.shape[2:]).mean(0) for k, v in post.items()})
    np.testing.assert_allclose(np.asarray(law.cdf(np.arange(200))), np.asarray(want.cdf(np.arange(200))), atol=1e-7)
    laws = B.delay_laws(idata, draws=5, seed=1)
    assert len(laws) == 5 and all(isinstance(x, D.DelayLaw) for x in laws)
    assert len({float(x.mean) for x in laws}) == 5  # five different draws
    idata_a, _ = _idata(name, per_arm=True)
    per_arm = B.delay_laws(idata_a)
    assert isinstance(per_arm, tuple) and len(per_arm) == 3
    with pytest.raises(ValueError, match="draws"):
        B.delay_laws(idata, draws=0)


@pytest.mark.parametrize("law", [D.exponential(37.5), D.weibull(1.5, 40.0), D.weibull(0.7, 9.0), D.log_normal(3.0, 0.8)],
                         ids=["exponential", "weibull", "weibull-k<1", "lognormal"])
def test_law_log_survival_and_pmf_agree_with_its_cdf(law):
    """The floored laws' log-survival and log-pmf (what the Bayesian families' likelihoods use) are
    those of the law's own CDF: ``1 - exp(log_sf(n)) = cdf(n)``, ``exp(log_pmf(n)) = pmf(n)``."""
    n = np.arange(0, 400)
    np.testing.assert_allclose(1.0 - np.exp(np.asarray(law.log_sf(n), np.float64)), np.asarray(law.cdf(n)), atol=2e-6)
    np.testing.assert_allclose(np.exp(np.asarray(law.log_pmf(n), np.float64)), np.asarray(law.pmf(n)), atol=2e-6)


@pytest.mark.parametrize("name", ["exponential", "weibull", "lognormal"])
def test_family_likelihood_is_the_laws_math(name):
    """A family's continuous log-survival and log-density are those of its delays law (one
    implementation): bitwise equal to ``at(th).log_sf_x`` / ``log_pdf_x``, and ``at`` at the
    parameters has the CDF of :func:`jaxbandits.bayes.delay_law`'s law."""
    fam = B.family(name)
    th = {k: np.float32(v) for k, v in CASES[name].items()}
    x = np.linspace(0.0, 300.0, 61, dtype=np.float32)
    law = fam.at(th)
    assert isinstance(law, D.DelayLaw)
    assert np.asarray(fam.log_surv_c(x, th)).tobytes() == np.asarray(law.log_sf_x(x)).tobytes()
    assert np.asarray(fam.log_pdf_c(x, th)).tobytes() == np.asarray(law.log_pdf_x(x)).tobytes()
    n = np.arange(0, 300)
    np.testing.assert_allclose(np.asarray(law.cdf(n)), np.asarray(B.delay_law(fam, CASES[name]).cdf(n)), atol=2e-6)
