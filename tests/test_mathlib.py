"""Shared math: KL-UCB solver against bisection, exact Beta sampler, random words."""
import jax
import jax.numpy as jnp
import numpy as np

from jaxbandits import mathlib as M


def test_kl_ucb_newton_matches_bisection_and_is_upper():
    p, d = np.meshgrid(np.linspace(0, 1, 101), np.geomspace(1e-6, 30, 50))
    p, d = jnp.asarray(p.ravel(), jnp.float32), jnp.asarray(d.ravel(), jnp.float32)
    q = M.kl_ucb_bernoulli(p, d)
    ref = M.kl_ucb_bernoulli_bisect(p, d, 40)
    assert float(jnp.max(jnp.abs(q - ref))) < 5e-5
    assert bool(jnp.all(q >= p))
    # kl(p, q) <= bound up to float32, except where q saturates at 1 - 1e-7 (the root is ~1)
    inside = q < 1 - 1e-6
    assert bool(jnp.all(jnp.where(inside, M.kl_bernoulli(p, q) <= d * 1.01 + 1e-4, True)))


def test_kl_ucb_edge_cases():
    q = M.kl_ucb_bernoulli(jnp.array([0.0, 0.3, 1.0, 0.5]), jnp.array([0.5, jnp.inf, 0.2, 0.0]))
    assert abs(float(q[0]) - (1 - np.exp(-0.5))) < 1e-5  # kl(0, q) = -log(1-q)
    assert float(q[1]) == 1.0 and float(q[2]) == 1.0 and float(q[3]) == 0.5


def test_beta_sampler_matches_law():
    a = jnp.array([1.0, 2.0, 1.0, 30.0, 300.0])
    b = jnp.array([1.0, 9.0, 50.0, 3.0, 700.0])
    keys = jax.random.split(jax.random.key(0), 200_000)
    s = np.asarray(jax.vmap(lambda k: M.beta_sample(k, a, b))(keys))
    a, b = np.asarray(a), np.asarray(b)
    mean = a / (a + b)
    var = a * b / ((a + b) ** 2 * (a + b + 1))
    n = s.shape[0]
    assert np.all(np.abs(s.mean(0) - mean) < 4 * np.sqrt(var / n))
    assert np.all(np.abs(s.var(0) / var - 1) < 0.03)
    # the CDF at the true median-ish points: Beta(1, 1) is uniform, Beta(1, 50): P(X <= x) = 1-(1-x)^50
    assert abs((s[:, 0] < 0.25).mean() - 0.25) < 4 * np.sqrt(0.25 * 0.75 / n)
    x = 0.02
    p = 1 - (1 - x) ** 50
    assert abs((s[:, 2] < x).mean() - p) < 4 * np.sqrt(p * (1 - p) / n)


def test_gamma_fallback_path_is_exact():
    # n_try=1 forces the while-loop fallback often; the law must not change
    keys = jax.random.split(jax.random.key(1), 100_000)
    g = np.asarray(jax.vmap(lambda k: M.gamma_mt(k, jnp.array([1.0, 4.0]), n_try=1))(keys))
    assert np.all(np.abs(g.mean(0) - [1.0, 4.0]) < 4 * np.sqrt(np.array([1.0, 4.0]) / g.shape[0]))
    assert np.all(np.abs(g.var(0) / [1.0, 4.0] - 1) < 0.04)


def test_words_uniform_and_independent():
    keys = jax.random.split(jax.random.key(3), 20_000)
    u = np.asarray(jax.vmap(lambda k: M.uniforms(k, 8))(keys))
    assert 0 < u.min() and u.max() < 1
    counts = np.histogram(u.ravel(), bins=32, range=(0, 1))[0]
    exp = u.size / 32
    chi2 = ((counts - exp) ** 2 / exp).sum()
    assert chi2 < 70  # 31 dof: P(chi2 > 70) < 1e-4
    c = np.corrcoef(u.T)
    assert np.abs(c - np.eye(8)).max() < 0.04
    z = np.asarray(jax.vmap(lambda k: M.normals(k, 5))(keys)).ravel()
    assert abs(z.mean()) < 0.02 and abs(z.var() - 1) < 0.03


def test_sample_from_probs_and_ties():
    p = jnp.array([0.2, 0.0, 0.5, 0.3])
    us = (jnp.arange(10000) + 0.5) / 10000
    a = np.asarray(jax.vmap(lambda u: M.sample_from_probs(p, u))(us))
    np.testing.assert_allclose(np.bincount(a, minlength=4) / 10000, p, atol=2e-4)
    v = jnp.array([1.0, 3.0, 3.0, 0.0, 3.0])
    picks = np.asarray(jax.vmap(lambda u: M.argmax_random_tie(v, u))(us))
    np.testing.assert_allclose(np.bincount(picks, minlength=5) / 10000, [0, 1 / 3, 1 / 3, 0, 1 / 3], atol=2e-4)
