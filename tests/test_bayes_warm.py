"""A fitted model as the prior of the in-scan delay-model Thompson policy (docs/bayes.md, *Warm
start*): the priors and the initial state are as specified, and a warm start lowers early regret."""
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

az = pytest.importorskip("arviz")

from jaxbandits import bayes as B  # noqa: E402
from jaxbandits import channels as C  # noqa: E402
from jaxbandits import delays as D  # noqa: E402
from jaxbandits import envs as E  # noqa: E402
from jaxbandits.policies import bayes as PB  # noqa: E402
from jaxbandits.engine import simulate  # noqa: E402
from jaxbandits.core.types import ProblemSpec  # noqa: E402

THETA = np.array([0.05, 0.07, 0.10])


def _fake_fit(theta=THETA, n_per_arm=3000, mean=50.0, log_sd=0.05, S=2000, seed=0, model="geometric"):
    """The posterior a fit of a past campaign of ``n_per_arm`` plays per arm would give (Beta
    draws of p, log-normal draws of the delay mean), as fit() lays it out."""
    rng = np.random.default_rng(seed)
    n = n_per_arm
    p = rng.beta(theta * n + 1, (1 - theta) * n + 1, size=(S, theta.size))
    dm = np.exp(math.log(mean) + log_sd * rng.standard_normal(S))
    idata = az.from_dict(posterior={"p": p[None], "delay_mean": dm[None]}, dims={"p": ["arm"]})
    idata.posterior.attrs.update({"model": model})
    return idata, p, dm


def test_policy_prior_moment_matches_the_posterior():
    idata, p, dm = _fake_fit()
    w = B.policy_prior(idata)
    a, b = w.priors["p_a"], w.priors["p_b"]
    m, v = p.mean(0), p.var(0)
    np.testing.assert_allclose(a / (a + b), m, rtol=1e-12)
    np.testing.assert_allclose(a * b / ((a + b) ** 2 * (a + b + 1)), v, rtol=1e-9)  # the Beta's variance
    assert w.priors["delay_mean_loc"] == pytest.approx(math.exp(np.log(dm).mean()), rel=1e-12)
    assert w.priors["delay_mean_scale"] == pytest.approx(np.log(dm).std(), rel=1e-12)
    np.testing.assert_allclose(w.z0["p"], np.log(m / (1 - m)), rtol=1e-12)
    half = B.policy_prior(idata, strength=0.25)  # a power prior: a quarter of the information
    np.testing.assert_allclose(half.priors["p_a"] + half.priors["p_b"], 0.25 * (a + b), rtol=1e-9)
    assert half.priors["delay_mean_scale"] == pytest.approx(2 * w.priors["delay_mean_scale"], rel=1e-12)
    for bad in (0, 1.5, True, "1"):
        with pytest.raises(ValueError, match="strength must be a number in"):
            B.policy_prior(idata, strength=bad)
    with pytest.raises(ValueError, match="new_arms needs a hierarchical fit"):
        B.policy_prior(idata, new_arms=5)


def test_warm_start_sets_the_initial_state_as_specified():
    """The chain and the tracked mode start at z0 (logit of the posterior mean of p, mean of the log
    delay mean); the mass matrix is the prior's Hessian there, in closed form
    ``diag((a + b) s (1 - s), 1 / scale^2)`` (s = sigmoid z; the Beta prior in logit space and the
    log-normal prior in log space). The cold start is unchanged."""
    idata, _, _ = _fake_fit()
    w = B.policy_prior(idata)
    spec = ProblemSpec(3, 1000)
    st = PB.delay_model_ts(255, "geometric", warm_start=w).init(spec, jax.random.key(0))
    z0 = np.concatenate([[w.z0["delay_mean"]], w.z0["p"]]).astype(np.float32)  # ravel order: sorted keys
    np.testing.assert_array_equal(np.asarray(st.eng.z), z0)
    np.testing.assert_array_equal(np.asarray(st.eng.mode), z0)
    s = 1 / (1 + np.exp(-w.z0["p"]))
    H = np.diag(np.concatenate([[1 / w.priors["delay_mean_scale"] ** 2],
                                (w.priors["p_a"] + w.priors["p_b"]) * s * (1 - s)]))
    lam, vec = np.asarray(st.eng.lam, np.float64), np.asarray(st.eng.vec, np.float64)
    np.testing.assert_allclose(vec @ np.diag(lam) @ vec.T, H, rtol=2e-3, atol=1e-2)
    assert float(st.stats.n_conv.sum()) == 0 and int(st.stats.t) == -1
    cold = PB.delay_model_ts(255, "geometric").init(spec, jax.random.key(0))
    np.testing.assert_array_equal(np.asarray(cold.eng.z), np.r_[math.log(255 / 4), 0, 0, 0].astype(np.float32))
    np.testing.assert_array_equal(np.asarray(cold.eng.lam), np.ones(4, np.float32))
    np.testing.assert_array_equal(np.asarray(cold.eng.vec), np.eye(4, dtype=np.float32))


def test_warm_start_checked_before_compiling():
    idata, _, _ = _fake_fit()
    w = B.policy_prior(idata)
    with pytest.raises(ValueError, match="fitted with the geometric model"):
        PB.delay_model_ts(255, "weibull", warm_start=w)
    with pytest.raises(ValueError, match="per_arm_delay=False"):
        PB.delay_model_ts(255, "geometric", per_arm_delay=True, warm_start=w)
    with pytest.raises(ValueError, match="exclude each other"):
        PB.delay_model_ts(255, "geometric", warm_start=w, fixed_delay={"delay_mean": 50.0})
    with pytest.raises(TypeError, match="warm_start must be"):
        PB.delay_model_ts(255, "geometric", warm_start={"p_a": 1.0})
    with pytest.raises(ValueError, match="warm_start has 3 arms, the problem has 4"):
        PB.delay_model_ts(255, "geometric", warm_start=w).init(ProblemSpec(4, 100), jax.random.key(0))
    with pytest.raises(ValueError, match="prior 'p_a' must be a positive number or a 1-d array"):
        PB.delay_model_ts(255, "geometric", priors={"p_a": np.array([1.0, -1.0])})


def test_warm_start_lowers_early_regret():
    """A world equal to the past campaign's (geometric delays of mean 50, p = 0.05 / 0.07 / 0.10):
    the warm-started policy, which already knows the best arm, has less regret over the first 300
    rounds than the cold one, paired over 32 runs, by more than 3 standard errors (Laplace engine)."""
    idata, _, _ = _fake_fit(n_per_arm=1500)
    w = B.policy_prior(idata)
    env = E.conversions(THETA.tolist(), D.geometric(mean=50.0))
    # the Laplace engine (lighter to compile); the HMC engine in the slow test of the experiment
    pols = {"cold": PB.delay_model_ts(255, "geometric", "laplace", prior_mean=30.0),
            "warm": PB.delay_model_ts(255, "geometric", "laplace", prior_mean=30.0, warm_start=w)}
    o = simulate(env, C.conversions(), pols, 300, jax.random.key(1), 32)
    d = o["cold"].regret[:, -1] - o["warm"].regret[:, -1]
    se = d.std(ddof=1) / math.sqrt(d.size)
    assert d.mean() > 3 * se, (d.mean(), se)


@pytest.mark.slow
def test_warm_start_experiment_small():
    """bayes-ts-warm-start (its own past-campaign fit) at a reduced size: warm below cold at
    R(500) in every world, paired."""
    from jaxbandits import experiments as X

    res = X.run("bayes-ts-warm-start", runs=24, horizon=500, seed=0)
    assert len(res.curves) == 4
    for world in ("world 0", "world 1"):
        labs = [k for k in res.curves if k.startswith(world)]
        cold = next(k for k in labs if "Cold" in k)
        warm = next(k for k in labs if "Warm" in k)
        d = np.asarray(res.curves[cold]["regret"])[:, -1] - np.asarray(res.curves[warm]["regret"])[:, -1]
        assert d.mean() > 2 * d.std(ddof=1) / math.sqrt(d.size), (world, d.mean())


def test_hierarchical_new_arms_prior():
    """new_arms: every new arm gets the population's predictive law."""
    rng = np.random.default_rng(0)
    S, K = 4000, 5
    post = {"p_mu": rng.normal(-2.0, 0.05, S)[None], "p_sd": np.abs(rng.normal(0.3, 0.02, S))[None],
            "p_z": rng.standard_normal((1, S, K)), "p": rng.random((1, S, K)) * 0.2,
            "delay_mean_mu": rng.normal(math.log(40), 0.05, S)[None],
            "delay_mean_sd": np.abs(rng.normal(0.2, 0.02, S))[None], "delay_mean": rng.random((1, S, K)) * 50 + 10}
    idata = az.from_dict(posterior=post, dims={"p": ["arm"], "p_z": ["arm"], "delay_mean": ["arm"]})
    idata.posterior.attrs.update({"model": "exponential", "hierarchical": 1})
    w = B.policy_prior(idata, new_arms=7)
    assert w.n_arms == 7 and w.per_arm_delay and w.priors["p_a"].shape == (7,)
    m = w.priors["p_a"][0] / (w.priors["p_a"][0] + w.priors["p_b"][0])
    # E sigmoid(N(-2, sd ~ 0.3)): between sigmoid(-2) = 0.119 and a little above it
    assert 0.119 < m < 0.13
    assert w.priors["delay_mean_loc"] == pytest.approx(40.0, rel=0.02)
    assert w.priors["delay_mean_scale"] == pytest.approx(math.sqrt(0.2**2 + 0.05**2), rel=0.05)
    st = PB.delay_model_ts(255, "exponential", per_arm_delay=True, warm_start=w).init(ProblemSpec(7, 100),
                                                                                    jax.random.key(0))
    assert st.eng.z.shape == (14,)
