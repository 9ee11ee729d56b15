"""Delay laws: the empirical CDF of 1e6 samples matches ``cdf`` within 3 sigma at several points,
and the sample mean matches ``mean`` within 4 standard errors."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxbandits import delays as D

LAWS = [
    D.fixed(3), D.uniform(2, 9), D.geometric(0.9), D.geometric(mean=20.0), D.poisson(4.0), D.poisson(25.0),
    D.exponential(10.0), D.half_normal(6.0), D.weibull(0.7, 15.0), D.weibull(2.0, 8.0),
    D.log_normal(2.0, 0.8), D.pareto(2.5), D.pareto(1.5, 3.0), D.histogram([0.1, 0.0, 0.3, 0.6]),
    D.shift(D.geometric(0.5), 1),
]
N = 1_000_000


@pytest.mark.parametrize("law", LAWS, ids=lambda l: type(l).__name__)
def test_ecdf_and_mean(law):
    s = np.asarray(law.sample(jax.random.key(7), (N,)))
    assert s.min() >= 0
    qs = np.unique(np.quantile(s, [0.1, 0.3, 0.5, 0.7, 0.9, 0.99]).astype(int))
    for n in qs:
        p = float(law.cdf(int(n)))
        emp = float((s <= n).mean())
        sd = np.sqrt(max(p * (1 - p), 1e-12) / N)
        assert abs(emp - p) <= 3 * sd + 1e-6, (n, emp, p)
    if np.isfinite(law.variance) and law.variance > 0 and not isinstance(law, D.Pareto):
        se = np.sqrt(law.variance / N)
        assert abs(s.mean() - law.mean) <= 4 * se, (s.mean(), law.mean)
    elif law.variance == 0:
        assert s.mean() == law.mean


def test_pmf_sums_to_cdf():
    law = D.poisson(7.0)
    n = jnp.arange(60)
    np.testing.assert_allclose(np.cumsum(law.pmf(n)), law.cdf(n), atol=1e-5)


def test_geometric_reference_table():
    # Vernade et al. 2017 spec, section 1.4 (rho = 0.998): tau_0, tau_100, tau_999, tau_1000
    law = D.geometric(0.998)
    for d, tau in [(0, 0.002), (100, 0.1830703), (999, 0.8649355), (1000, 0.8652056)]:
        assert abs(float(law.cdf(d)) - tau) < 2e-6


def test_pareto_is_thune_law():
    # Thune et al. 2019 spec: d = floor(U^(-1/alpha)) - 1, so P(d >= k) = (k+1)^(-alpha)
    law = D.pareto(1.5)
    for k in [1, 5, 40]:
        assert abs((1 - float(law.cdf(k - 1))) - (k + 1) ** -1.5) < 1e-6
    assert law.mean > 0 and np.isinf(D.pareto(0.9).mean)


def test_sequence_law():
    law = D.sequence([0, 5, 2, D.NEVER])
    assert [int(law.draw(0.5, t)) for t in range(4)] == [0, 5, 2, D.NEVER]
    assert law.support_max == D.NEVER


@pytest.mark.parametrize("bad", [
    lambda: D.fixed(-1), lambda: D.uniform(5, 2), lambda: D.geometric(1.0), lambda: D.geometric(-0.1),
    lambda: D.geometric(), lambda: D.poisson(0.0), lambda: D.exponential(float("nan")),
    lambda: D.weibull(-1.0, 2.0), lambda: D.log_normal(0.0, 0.0), lambda: D.pareto(float("inf")),
    lambda: D.histogram([]), lambda: D.histogram([0.5, -0.1]), lambda: D.sequence([1, -2]),
    lambda: D.sequence([[1, 2]]), lambda: D.shift("geometric"),
])
def test_bad_input(bad):
    with pytest.raises((ValueError, TypeError)):
        bad()


def test_error_names_parameter():
    with pytest.raises(ValueError, match="rho"):
        D.geometric(1.5)
    with pytest.raises(ValueError, match="lam"):
        D.poisson(-1.0)


def test_log_normal_mixture_ecdf_and_criteo_statistics():
    """The Criteo-like law: its CDF matches 1e6 samples (3 sigma), and it stays within the documented
    distance of the published statistics of the rescaled Criteo delays (Vernade et al. 2020 spec
    8.3: mean 5720, median 2913, P(D=0) = 0.073, tau_500 0.31, tau_2000 0.445, tau_5000 0.60,
    tau_10000 0.76)."""
    law = D.criteo_like()
    s = np.asarray(law.sample(jax.random.key(3), (N,)))
    for n in [0, 100, 500, 2000, 5000, 10_000, 50_000]:
        p = float(law.cdf(n))
        assert abs((s <= n).mean() - p) <= 3 * np.sqrt(p * (1 - p) / N) + 1e-6
    st = D.CRITEO_STATS
    assert abs(law.mean / st["mean"] - 1) < 0.03 and abs(np.median(s) / st["median"] - 1) < 0.03
    assert abs(float(law.cdf(0)) - st["p0"]) < 1e-3
    for k, tol in [(500, 0.03), (2000, 0.01), (5000, 0.01), (10_000, 0.05)]:
        assert abs(float(law.cdf(k)) - st[f"tau_{k}"]) < tol


def test_from_samples_is_the_empirical_law():
    s = np.array([0, 0, 1, 3, 3, 3, 7])
    law = D.from_samples(s)
    np.testing.assert_allclose(np.asarray(law.cdf(np.arange(9))), [2 / 7, 3 / 7, 3 / 7, 6 / 7, 6 / 7, 6 / 7, 6 / 7, 1, 1],
                               atol=1e-6)
    draws = np.asarray(law.sample(jax.random.key(0), (70_000,)))
    np.testing.assert_allclose(np.bincount(draws, minlength=8) / 70_000, np.bincount(s, minlength=8) / 7, atol=0.01)
    with pytest.raises(ValueError):
        D.from_samples([1, -1])
