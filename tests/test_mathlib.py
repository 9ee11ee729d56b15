"""Shared math: KL-UCB solver against bisection, exact Beta sampler, random words."""
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import special, stats

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
    # the whole law: Kolmogorov-Smirnov against scipy's Beta(a, b) (sup-distance ~0.004 detectable)
    for j in range(a.size):
        assert stats.kstest(s[:, j], stats.beta(a[j], b[j]).cdf).pvalue > 1e-4, (a[j], b[j])


def test_gamma_mt_law_ks():
    """gamma_mt(key, a) is Gamma(a, 1) (Marsaglia and Tsang 2000) for a >= 1, small and large:
    Kolmogorov-Smirnov against scipy over 100k draws per shape, and the mean and variance a."""
    a = np.float32([1.0, 1.7, 4.0, 30.0, 400.0])
    keys = jax.random.split(jax.random.key(4), 100_000)
    g = np.asarray(jax.vmap(lambda k: M.gamma_mt(k, jnp.asarray(a)))(keys), np.float64)
    for j, aj in enumerate(a.astype(np.float64)):
        assert stats.kstest(g[:, j], stats.gamma(aj).cdf).pvalue > 1e-4, aj
        assert abs(g[:, j].mean() - aj) < 4.5 * math.sqrt(aj / g.shape[0])
        assert abs(g[:, j].var() / aj - 1) < 0.03


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


# ============================================================================ pinned formulas
# Every function against a closed form or a float64 reference written here (not the library's own
# reference solvers), on float32 inputs, to float32 accuracy.
U23 = 2.0**-23  # uniforms on (0, 1) are (m + 1/2) 2^-23


def _kl_b64(p, q):
    p, q = np.asarray(p, np.float64), np.asarray(q, np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        a = np.where(p > 0, p * np.log(p / q), 0.0)
        b = np.where(p < 1, (1 - p) * np.log((1 - p) / (1 - q)), 0.0)
    return a + b


def _kl_pois64(p, q):
    p, q = np.asarray(p, np.float64), np.asarray(q, np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        return q - p + np.where(p > 0, p * np.log(p / q), 0.0)


def _bisect64(f, lo, hi, iters=200):
    """max {x in [lo, hi] : f(x) <= 0} for f increasing on [lo, hi] (vectorised float64)."""
    lo, hi = np.asarray(lo, np.float64).copy(), np.asarray(hi, np.float64).copy()
    for _ in range(iters):
        mid = 0.5 * (lo + hi)
        ok = f(mid) <= 0
        lo, hi = np.where(ok, mid, lo), np.where(ok, hi, mid)
    return lo


def test_kl_divergences_closed_form():
    """kl_bernoulli (p log p/q + (1-p) log (1-p)/(1-q), clipped to [1e-7, 1-1e-7]), kl_gaussian
    ((p-q)^2 / 2 sigma^2) and kl_poisson (q - p + p log p/q, 0 log 0 = 0) in float64."""
    g = np.concatenate([[0.0, 1e-4, 0.01], np.linspace(0.05, 0.95, 19), [0.99, 1 - 1e-4, 1.0]]).astype(np.float32)
    p, q = (a.ravel() for a in np.meshgrid(g, g))
    lo, hi = float(np.float32(1e-7)), float(np.float32(1 - 1e-7))  # the clip bounds, as float32
    pc, qc = (np.clip(x.astype(np.float64), lo, hi) for x in (p, q))
    np.testing.assert_allclose(np.asarray(M.kl_bernoulli(p, q)), _kl_b64(pc, qc), rtol=2e-4, atol=2e-5)
    # the clipping is only at the ends: kl(0, q) = -log(1-q), kl(1, q) = -log q
    qq = np.float32([0.1, 0.5, 0.9])
    np.testing.assert_allclose(np.asarray(M.kl_bernoulli(np.float32(0), qq)), -np.log1p(-qq.astype(float)), atol=3e-6)
    np.testing.assert_allclose(np.asarray(M.kl_bernoulli(np.float32(1), qq)), -np.log(qq.astype(float)), atol=3e-6)
    for s2 in [1.0, 0.25, 4.0]:
        np.testing.assert_allclose(np.asarray(M.kl_gaussian(p * 3, q - 1, s2)),
                                   (p.astype(float) * 3 - (q.astype(float) - 1)) ** 2 / (2 * s2), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(np.asarray(M.kl_gaussian(p, q)), (p.astype(float) - q) ** 2 / 2, rtol=1e-5, atol=1e-7)
    pp, qp = p * 3, np.maximum(q * 4, np.float32(0.01))
    np.testing.assert_allclose(np.asarray(M.kl_poisson(pp, qp)), _kl_pois64(pp, qp), rtol=1e-4, atol=2e-5)
    np.testing.assert_allclose(np.asarray(M.kl_poisson(np.float32(0), qq)), qq, rtol=1e-6)


def test_kl_ucb_bernoulli_against_float64_root():
    """kl_ucb_bernoulli (4 Newton steps, float32) and kl_ucb_bernoulli_bisect against the float64
    root max{q in [p, 1] : kl(p, q) <= d}, for p in [0, 1], d in [1e-5, 20]; d = 0 gives p, inf gives 1."""
    p, d = np.meshgrid(np.linspace(0, 1, 41), np.geomspace(1e-5, 20, 31))
    p, d = p.ravel().astype(np.float32), d.ravel().astype(np.float32)
    ref = _bisect64(lambda q: _kl_b64(p, q) - d.astype(np.float64), p.astype(np.float64), np.ones(p.size))
    q = np.asarray(M.kl_ucb_bernoulli(p, d), np.float64)
    np.testing.assert_allclose(q, ref, atol=3e-5, rtol=0)
    # the bisection reference (kl clipped at 1e-7) agrees where the root is not within 1e-6 of 1
    qb = np.asarray(M.kl_ucb_bernoulli_bisect(p, d, 40), np.float64)
    inner = ref < 1 - 1e-5
    np.testing.assert_allclose(qb[inner], ref[inner], atol=2e-5, rtol=0)
    e = np.asarray(M.kl_ucb_bernoulli(np.float32([0.3, 0.3, 0.0]), np.float32([0.0, np.inf, 0.5])))
    assert e[0] == np.float32(0.3) and e[1] == 1.0 and abs(e[2] - (1 - math.exp(-0.5))) < 1e-5


def test_exploration_and_widths_closed_form():
    """kl_ucb_exploration(t, c) = log t + c log(max(log t, 1)) (t clipped to >= 1);
    ucb1_width(n, t, alpha) = sqrt(alpha log t / n), inf at n = 0."""
    t = np.float32([0, 1, 2, 3, 10, 1000, 1e6])
    tt = np.maximum(t.astype(np.float64), 1)
    for c in [0.0, 3.0]:
        np.testing.assert_allclose(np.asarray(M.kl_ucb_exploration(t, c)),
                                   np.log(tt) + c * np.log(np.maximum(np.log(tt), 1)), rtol=1e-6, atol=1e-7)
    n, tq = (a.ravel() for a in np.meshgrid(np.float32([0, 1, 5, 100]), np.float32([1, 2, 50, 1e4])))
    for alpha in [2.0, 0.5]:
        w = np.asarray(M.ucb1_width(n, tq, alpha), np.float64)
        with np.errstate(divide="ignore", invalid="ignore"):
            ref = np.where(n > 0, np.sqrt(alpha * np.log(tq.astype(float)) / n), np.inf)
        np.testing.assert_allclose(w, ref, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(M.ucb1_width(np.float32(4), np.float32(0.5))), 0.0)  # t clipped to 1


def test_linucb_beta_is_abbasi_yadkori():
    """Abbasi-Yadkori, Pal, Szepesvari (2011), Thm 2 with ||x|| <= 1: sqrt(beta_t) =
    R sqrt(2 log(det(V_t)^(1/2) det(lam I)^(-1/2) / delta)) + sqrt(lam) S with the determinant bound
    det V_t <= (lam + t/d)^d (their Lemma 10)."""
    for t, d, lam, sig, S, delta in [(0, 2, 1.0, 1.0, 1.0, 0.05), (10, 3, 1.0, 0.5, 2.0, 0.1),
                                     (1000, 5, 0.1, 1.0, 1.0, 0.01), (5e4, 10, 4.0, 0.2, 3.0, 0.2)]:
        log_det_ratio = d * math.log(lam + t / d) - d * math.log(lam)
        ref = sig * math.sqrt(2 * (0.5 * log_det_ratio + math.log(1 / delta))) + math.sqrt(lam) * S
        got = float(M.linucb_beta(np.float32(t), d, lam, sig, S, delta))
        assert abs(got / ref - 1) < 1e-5, (t, d, got, ref)


def test_log_normalize_exp_weights_and_kahan():
    rng = np.random.default_rng(0)
    logw = (rng.normal(0, 5, (3, 7)) + 60).astype(np.float32)
    for row in logw:
        out = np.asarray(M.log_normalize(row), np.float64)
        np.testing.assert_allclose(out, row - special.logsumexp(row.astype(np.float64)), atol=2e-5)
    # exp weights: (1 - gamma) softmax(-eta L) + gamma / K, over the last axis
    L = rng.uniform(0, 30, (2, 5)).astype(np.float32)
    for eta, gamma in [(0.3, 0.0), (0.05, 0.1), (1.5, 0.5)]:
        z = -eta * L.astype(np.float64)
        sm = np.exp(z - z.max(-1, keepdims=True))
        ref = (1 - gamma) * sm / sm.sum(-1, keepdims=True) + gamma / 5
        np.testing.assert_allclose(np.asarray(M.exp_weights_probs(L, eta, gamma)), ref, atol=1e-6, rtol=1e-5)
    # Kahan: the compensation is exactly the lost low part, and 200k float32 additions stay exact to 1 ulp
    s, c = M.kahan_add(np.float32(1.0), np.float32(0.0), np.float32(1e-8))
    assert float(s) == 1.0 and float(c) == -float(np.float32(1e-8))
    x = rng.uniform(0, 2e-3, 200_000).astype(np.float32)
    (s, c), _ = jax.lax.scan(lambda sc, xi: (M.kahan_add(sc[0], sc[1], xi), None),
                             (jnp.float32(1000.0), jnp.float32(0.0)), jnp.asarray(x))
    ref = 1000.0 + x.astype(np.float64).sum()
    ulp = float(np.spacing(np.float32(ref)))
    assert abs(float(s) - ref) <= ulp, (float(s), ref)
    naive = jax.lax.scan(lambda a, xi: (a + xi, None), jnp.float32(1000.0), jnp.asarray(x))[0]
    assert abs(float(naive) - ref) > 20 * ulp  # the instance discriminates


def test_poisson_kl_ucb_against_float64_root():
    """poisson_kl_ucb(p, n, beta, cap) = max{q in [p, cap] : n d_Pois(p, q) <= beta} (Vernade et al.
    2017 sec. 5.3), exactly cap when it binds, p when p >= cap, +inf when n = 0; cap=None: the root."""
    p, n, b = (a.ravel() for a in np.meshgrid(np.float32([0, 0.01, 0.1, 0.3, 0.5, 0.9, 1.0, 1.3]),
                                              np.float32([0, 0.5, 3, 40, 1000]), np.float32([0.05, 1.0, 8.0])))
    c = b.astype(np.float64) / np.where(n > 0, n, 1)
    p64 = p.astype(np.float64)
    root = _bisect64(lambda q: _kl_pois64(p64, q) - c, p64, p64 + 2 * c + 2 * np.sqrt(c * c + 2 * p64 * c) + 1)
    unc = np.where(n > 0, root, np.inf)
    capped = np.where(n > 0, np.where(p64 >= 1, p64, np.minimum(root, 1.0)), np.inf)
    for fn, kw in [(M.poisson_kl_ucb, {}), (M.poisson_kl_ucb_bisect, {})]:
        got = np.asarray(fn(p, n, b, **kw), np.float64)
        np.testing.assert_allclose(got, capped, rtol=2e-5, atol=1e-6, err_msg=fn.__name__)
        got_u = np.asarray(fn(p, n, b, cap=None), np.float64)
        np.testing.assert_allclose(got_u, unc, rtol=2e-5, atol=1e-6, err_msg=fn.__name__)
    binds = (n > 0) & (p < 1) & (root >= 1 + 1e-4)
    assert binds.any() and np.all(np.asarray(M.poisson_kl_ucb(p, n, b))[binds] == 1.0)  # exact ties at the cap


def test_sample_from_probs_is_inverse_cdf():
    """A = min(K-1, #{a : cumsum(w)_a < u sum(w)}) for unnormalised w, exact on the uniform lattice
    (dyadic weights: every cumsum is exact), including the lattice points next to each boundary."""
    w = np.float32([2.0, 0.0, 4.0, 1.0, 1.0])
    cw = np.cumsum(w.astype(np.float64)) / w.sum()
    m = np.concatenate([np.arange(0, 2**23, 9973), np.floor(cw / U23 - 0.5), np.floor(cw / U23 - 0.5) + 1])
    m = np.clip(m, 0, 2**23 - 1)
    u = ((m + 0.5) * U23).astype(np.float32)
    a = np.asarray(jax.vmap(lambda x: M.sample_from_probs(jnp.asarray(w), x))(u))
    ref = np.minimum((cw[None, :] < u.astype(np.float64)[:, None]).sum(1), 4)
    np.testing.assert_array_equal(a, ref)
    assert set(np.unique(a)) == {0, 2, 3, 4}


def test_argmax_random_tie_exact_rule_and_mask():
    """argmax_random_tie(v, u, mask): among the (unmasked) indices attaining the max, the
    floor(u * count)-th; masked arms are never picked, whatever their value (negative values too)."""
    rng = np.random.default_rng(3)
    V = rng.integers(-3, 2, (400, 6)).astype(np.float32) - 0.5  # many ties, negative values
    mask = rng.random((400, 6)) < 0.7
    mask[np.arange(400), rng.integers(0, 6, 400)] = True
    u = ((rng.integers(0, 2**23, 400) + 0.5) * U23).astype(np.float32)
    got = np.asarray(jax.vmap(M.argmax_random_tie)(jnp.asarray(V), jnp.asarray(u), jnp.asarray(mask)))
    got_nomask = np.asarray(jax.vmap(M.argmax_random_tie)(jnp.asarray(V), jnp.asarray(u)))
    for i in range(400):
        for g, msk in [(got[i], mask[i]), (got_nomask[i], np.ones(6, bool))]:
            vals = np.where(msk, V[i], -np.inf)
            ties = np.flatnonzero(vals == vals.max())
            assert g == ties[int(np.floor(float(u[i]) * len(ties)))], (i, V[i], msk, u[i], g)
    assert mask[np.arange(400), got].all()
    assert (got != got_nomask).any()


def test_argmax_random_tie_never_picks_a_masked_arm_when_the_allowed_values_are_all_minus_inf_or_nan():
    """Every allowed value -inf, or an allowed NaN: the arm is uniform over the allowed arms (the
    (floor(u n) + 1)-th of the n allowed), never a masked one (before, -inf tied with the masked
    arms' -inf and NaN tied with nothing, giving arm 0 whatever the mask)."""
    mask = jnp.array([False, True, False, True, True, False])
    allowed = np.flatnonzero(np.asarray(mask))
    us = (jnp.arange(300, dtype=jnp.float32) + 0.5) / 300
    for v in ([5.0, -np.inf, 7.0, -np.inf, -np.inf, 1.0], [5.0, 1.0, 7.0, np.nan, 2.0, 9.0]):
        got = np.asarray(jax.vmap(lambda u: M.argmax_random_tie(jnp.asarray(v, jnp.float32), u, mask))(us))
        want = allowed[np.floor(np.asarray(us) * len(allowed)).astype(int)]
        np.testing.assert_array_equal(got, want)


def _mix32_np(x):
    """Wellons' lowbias32 finaliser (published constants 0x7feb352d, 0x846ca68b), uint32 arithmetic."""
    x = x.astype(np.uint64)
    x ^= x >> 16
    x = (x * 0x7FEB352D) & 0xFFFFFFFF
    x ^= x >> 15
    x = (x * 0x846CA68B) & 0xFFFFFFFF
    x ^= x >> 16
    return x


def test_words_counter_hash_pinned():
    """words(key, n, offset)[i] = mix(mix(k0 ^ (i + offset) * 0x9E3779B9) + k1) with mix = lowbias32 and
    (k0, k1) the key's two words (conventions §8); uniform/uniforms = ((w >> 9) + 1/2) 2^-23;
    open_uniform reshapes uniforms; normals are Box-Muller of 2 ceil(n/2) uniforms. Deterministic,
    and offsets select disjoint counter blocks."""
    for seed in [0, 123, 2**31 - 1]:
        key = jax.random.fold_in(jax.random.key(seed), 7)
        kd = np.asarray(jax.random.key_data(key)).astype(np.uint64)
        k0, k1 = (np.asarray(x) for x in M.key_words(key))
        assert int(k0) == kd[0] and int(k1) == kd[1]
        for n, off in [(10, 0), (6, 7), (3, 1000)]:
            i = np.arange(n, dtype=np.uint64) + off
            ref = _mix32_np((_mix32_np(kd[0] ^ ((i * 0x9E3779B9) & 0xFFFFFFFF)) + kd[1]) & 0xFFFFFFFF)
            w = np.asarray(M.words(key, n, off)).astype(np.uint64)
            np.testing.assert_array_equal(w, ref)
            np.testing.assert_array_equal(np.asarray(M.uniforms(key, n, off), np.float64), ((ref >> 9) + 0.5) * U23)
        np.testing.assert_array_equal(np.asarray(M.words(key, 5, 3)), np.asarray(M.words(key, 8))[3:])
        np.testing.assert_array_equal(np.asarray(M.words(key, 8)), np.asarray(M.words(key, 8)))
        assert float(M.uniform(key)) == ((int(kd[0]) >> 9) + 0.5) * U23
        np.testing.assert_array_equal(np.asarray(M.open_uniform(key, (3, 4))), np.asarray(M.uniforms(key, 12)).reshape(3, 4))
        for n in [5, 6]:
            h = (n + 1) // 2
            uu = np.asarray(M.uniforms(key, 2 * h, 4), np.float64)
            r, th = np.sqrt(-2 * np.log(uu[:h])), 2 * np.pi * uu[h:]
            np.testing.assert_allclose(np.asarray(M.normals(key, n, 4)), np.concatenate([r * np.cos(th), r * np.sin(th)])[:n],
                                       atol=2e-5, rtol=1e-5)
    keys = jax.random.split(jax.random.key(1), 4)  # batched keys: one row of words per key
    wb = np.asarray(M.words(keys, 3))
    assert wb.shape == (4, 3) and np.array_equal(wb[2], np.asarray(M.words(keys[2], 3)))
    assert len({tuple(r) for r in wb}) == 4


def test_fold_in_is_jax_fold_in_bitwise():
    """The engine's per-round ``fold_in`` (a written-out Threefry-2x32, conventions §8) is
    ``jax.random.fold_in`` bit for bit: scalars, the extremes of int32, under vmap and jit, and
    chained (a wrong rotation, key schedule or counter word changes every output)."""
    keys = jax.random.split(jax.random.key(2024), 257)
    ts = jnp.concatenate([jnp.array([0, 1, 2**31 - 1, 65535, 65536], jnp.int32),
                          jax.random.randint(jax.random.key(1), (252,), 0, 2**31 - 1, jnp.int32)])
    ref = jax.vmap(lambda k, t: jax.random.key_data(jax.random.fold_in(k, t)))(keys, ts)
    got = jax.jit(jax.vmap(lambda k, t: jax.random.key_data(M.fold_in(k, t))))(keys, ts)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(ref))
    k = jax.random.key(7)
    a, b = k, k
    for t in (3, 0, 99):
        a, b = jax.random.fold_in(a, t), M.fold_in(b, jnp.uint32(t))
    np.testing.assert_array_equal(jax.random.key_data(a), jax.random.key_data(b))
    # another key implementation goes to jax.random.fold_in
    r = jax.random.key(3, impl="rbg")
    np.testing.assert_array_equal(jax.random.key_data(M.fold_in(r, 5)), jax.random.key_data(jax.random.fold_in(r, 5)))


def test_ndtri_is_jaxs_bit_for_bit_and_has_no_array_constant():
    """``mathlib.ndtri`` (the log-normal delay's quantile, also run inside the fused kernels) gives
    jax.scipy.special.ndtri's float32 bits at every 97th float32 of [0, 1] and the edges, and its
    program captures no array constant (what a Pallas kernel refuses)."""
    import jax
    import jax.numpy as jnp
    from jax.scipy.special import ndtri as jax_ndtri

    from jaxbandits.core.mathlib import ndtri

    p = np.arange(0, 0x3F800001, 97, dtype=np.uint32).view(np.float32)
    p = np.concatenate([p, np.float32([0.0, 1.0, 0.5, np.nextafter(np.float32(1), np.float32(0))])])
    a = np.asarray(jax.jit(jax_ndtri)(jnp.asarray(p))).view(np.uint32)
    b = np.asarray(jax.jit(ndtri)(jnp.asarray(p))).view(np.uint32)
    np.testing.assert_array_equal(a, b)
    consts = jax.make_jaxpr(ndtri)(jnp.float32(0.3)).consts
    assert all(np.ndim(c) == 0 for c in consts), [np.shape(c) for c in consts]


def test_gamma_mt_refuses_a_concrete_shape_out_of_range_and_a_traced_one_ends_in_nan():
    """Bad input gets an error before anything runs (a concrete shape below 1, or NaN), never a
    hang: under jit, where a shape cannot be checked, a shape below 1/3 (Marsaglia-Tsang accepts
    no proposal) ends the loop after GAMMA_MAX_ROUNDS rounds with NaN for that variate alone."""
    key = jax.random.key(0)
    for bad in ([2.0, 0.2], [np.nan, 3.0], [0.999]):
        with pytest.raises(ValueError, match=r"gamma_mt: shapes a must be >= 1"):
            M.gamma_mt(key, jnp.asarray(bad, jnp.float32))
    g = np.asarray(jax.jit(M.gamma_mt)(key, jnp.asarray([2.0, 0.2, 5.0], jnp.float32)))
    assert np.isnan(g[1]) and np.isfinite(g[[0, 2]]).all() and (g[[0, 2]] > 0).all()
    # in range, the values are those of the unbounded loop: the same bits eager and jitted
    a = jnp.asarray([1.0, 1.5, 7.0, 30.0], jnp.float32)
    np.testing.assert_array_equal(np.asarray(M.gamma_mt(key, a)), np.asarray(jax.jit(M.gamma_mt)(key, a)))
