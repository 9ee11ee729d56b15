"""Simulation-based calibration of every delay family (docs/sbc.md).

Slow tier: 200 prior draws per family, ranks among 99 thinned NUTS draws, chi-square on 10 bins;
each family passes at family-wise level 0.01 (Bonferroni over its parameters). A misspecified
simulator (delays 1.5x the model's) must fail, so the test has power. Fast tier: the exponential
family with 40 prior draws and 19 posterior draws (5 bins), and its misspecified control."""
import numpy as np
import pytest

pytest.importorskip("numpyro")

from jaxbandits import bayes as B  # noqa: E402
from jaxbandits.bayes import calibration as C  # noqa: E402  (the report layer: not re-exported by bayes)

FAMILIES = ["exponential", "geometric", "weibull", "lognormal", "histogram"]


def test_rank_uniformity_statistic():
    # exactly uniform ranks: p = 1; all ranks in the first bin: p ~ 0
    assert C.rank_uniformity(np.repeat(np.arange(100), 2), 99, 10) == pytest.approx(1.0)
    assert C.rank_uniformity(np.zeros(200, int), 99, 10) < 1e-30
    with pytest.raises(ValueError, match="n_bins=7 must divide n_draws"):
        C.rank_uniformity(np.zeros(5, int), 99, 7)


def test_family_draws_have_the_models_law():
    """The simulator of SBC and PPC (``Family.draw``) against each family's own CDF, by a
    Kolmogorov-Smirnov distance on 20000 draws."""
    rng = np.random.default_rng(0)
    cases = {"exponential": {"delay_mean": 20.0}, "weibull": {"delay_mean": 20.0, "delay_shape": 1.7},
             "lognormal": {"delay_median": 12.0, "delay_sigma": 0.8}}
    grid = np.linspace(0.5, 80, 60)
    for name, th in cases.items():
        fam = B.family(name)
        x = fam.draw(rng, th, 20000)
        emp = np.searchsorted(np.sort(x), grid, side="right") / x.size
        cdf = 1 - np.exp(np.asarray(fam.log_surv_c(grid, th)))
        assert np.max(np.abs(emp - cdf)) < 0.015, name
    fam = B.family("histogram")
    w = np.array([0.1, 0.2, 0.05, 0.15, 0.1, 0.1, 0.1, 0.1, 0.1])
    d = fam.draw(rng, {"delay_w": w}, 40000)
    pmf = np.exp(np.asarray(fam.log_pmf(np.arange(128), {"delay_w": w})))
    np.testing.assert_allclose(np.bincount(d.astype(int), minlength=128) / d.size, pmf, atol=0.004)


def test_sbc_fast_exponential_and_its_misspecified_control():
    kw = dict(n_plays=100, n_draws=19, thin=3, num_warmup=150, max_tree_depth=6, seed=3)
    good = C.sbc("exponential", 40, **kw)
    assert set(good.ranks) == {"p[0]", "p[1]", "delay_mean"}
    assert all(r.min() >= 0 and r.max() <= 19 for r in good.ranks.values())
    assert good.passes(level=0.01, n_bins=5), good.pvalues(5)
    bad = C.sbc("exponential", 40, delay_scale=2.5, **kw)  # same shapes: the compiled program is reused
    assert bad.pvalues(5)["delay_mean"] < 1e-4
    assert not bad.passes(level=0.01, n_bins=5)


@pytest.mark.slow
@pytest.mark.parametrize("model", FAMILIES)
def test_sbc_every_family_200_prior_draws(model):
    res = C.sbc(model, 200, seed=1)
    s = res.summary(level=0.01, n_bins=10)
    assert s["passes"], s["pvalues"]
    assert s["divergences_total"] <= 10  # of 200 x 99 kept transitions
    assert all(r.size == 200 for r in res.ranks.values())


@pytest.mark.slow
def test_sbc_detects_a_misspecified_simulator():
    res = C.sbc("weibull", 200, delay_scale=1.5, seed=1)
    assert not res.passes(level=0.01)
    assert res.pvalues()["delay_mean"] < 1e-6
