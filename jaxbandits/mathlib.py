"""Shared math: the one place for KL divergences and their inverses, confidence widths,
exponential weights, sampling from a probability vector and exact fast Beta draws.

Policies import from here; nothing here is re-derived elsewhere.
"""
from __future__ import annotations

import math

import numpy as np

import jax
import jax.numpy as jnp
from jax import lax

_F = jnp.float32
_EPS = 1e-7


# ----------------------------------------------------------------------------- random words
# Keys follow conventions §8 (threefry ``fold_in`` per stream and round). Inside one round, the
# words a draw needs come from a counter-mode integer hash keyed by the round key's two words
# (Wellons' lowbias32 finaliser, applied twice): on XLA:CPU this is about 7x cheaper than
# ``jax.random.bits`` for the handful of words a round needs, and it is what makes Thompson
# sampling meet its throughput target (benchmarks/beta_sampler.py). tests/test_mathlib.py checks
# uniformity and independence of the words.
_GOLDEN = 0x9E3779B9


def _mix32(x):
    x = x ^ (x >> 16)
    x = x * jnp.uint32(0x7FEB352D)
    x = x ^ (x >> 15)
    x = x * jnp.uint32(0x846CA68B)
    return x ^ (x >> 16)


def key_words(key):
    """The two 32-bit words of a (threefry) key."""
    kd = jax.random.key_data(key) if jnp.issubdtype(key.dtype, jax.dtypes.prng_key) else key
    return kd[..., 0].astype(jnp.uint32), kd[..., 1].astype(jnp.uint32)


_ROT = ((13, 15, 26, 6), (17, 29, 16, 24))


def _rotl(x, d):
    return (x << jnp.uint32(d)) | (x >> jnp.uint32(32 - d))


def threefry2x32(k0, k1, x0, x1):
    """The Threefry-2x32 block (20 rounds), written out: the same function as JAX's
    ``threefry2x32`` primitive, word for word. JAX lowers that primitive on CPU as a rolled
    5-iteration ``while`` loop (several kernel launches per call); written out, XLA fuses it
    into the surrounding round (conventions §8: the engine's per-round ``fold_in``)."""
    ks = (k0, k1, k0 ^ k1 ^ jnp.uint32(0x1BD11BDA))
    x0, x1 = x0 + ks[0], x1 + ks[1]
    for i in range(5):
        for r in _ROT[i % 2]:
            x0 = x0 + x1
            x1 = x0 ^ _rotl(x1, r)
        x0 = x0 + ks[(i + 1) % 3]
        x1 = x1 + ks[(i + 2) % 3] + jnp.uint32(i + 1)
    return x0, x1


def fold_in(key, data):
    """``jax.random.fold_in(key, data)`` bit for bit (a 32-bit ``data``), computed by the
    written-out :func:`threefry2x32` for threefry keys, the default (tests/test_mathlib.py checks
    the equality); other key implementations go to ``jax.random.fold_in``."""
    if not (jnp.issubdtype(key.dtype, jax.dtypes.prng_key) and str(jax.random.key_impl(key)) == "threefry2x32"):
        return jax.random.fold_in(key, data)
    k0, k1 = key_words(key)
    d = jnp.asarray(data)
    if d.dtype not in (jnp.int32, jnp.uint32):
        return jax.random.fold_in(key, data)
    y0, y1 = threefry2x32(k0, k1, jnp.zeros_like(k0), d.astype(jnp.uint32))
    return jax.random.wrap_key_data(jnp.stack([y0, y1], axis=-1), impl="threefry2x32")


def words(key, n: int, offset: int = 0):
    """``n`` pseudo-random uint32 words from ``key`` (counter hash; ``offset`` selects a disjoint
    block of counters so that two draws from one key never share words)."""
    k0, k1 = key_words(key)
    i = jnp.arange(n, dtype=jnp.uint32) + jnp.asarray(offset, jnp.uint32)
    return _mix32(_mix32(k0[..., None] ^ (i * jnp.uint32(_GOLDEN))) + k1[..., None])


def _to_open_unit(w):
    # 23 bits + 1/2: the largest value 2^23 - 1/2 is exact in float32, so u < 1 always
    return ((w >> 9).astype(_F) + 0.5) * _F(2.0**-23)


def uniform(key):
    """One uniform on (0, 1) straight from the key's first word (23-bit resolution, never 0 or 1,
    so inverse-CDF transforms are always finite). The round's reward and delay uniforms."""
    return _to_open_unit(key_words(key)[0])


def uniforms(key, n: int, offset: int = 0):
    """``n`` uniforms on (0, 1) from :func:`words`."""
    return _to_open_unit(words(key, n, offset))


def normals(key, n: int, offset: int = 0):
    """``n`` standard normals by Box-Muller from ``2 ceil(n/2)`` uniforms."""
    h = (n + 1) // 2
    u = uniforms(key, 2 * h, offset)
    r = jnp.sqrt(-2.0 * jnp.log(u[..., :h]))
    th = _F(2 * math.pi) * u[..., h:]
    return jnp.concatenate([r * jnp.cos(th), r * jnp.sin(th)], axis=-1)[..., :n]


def open_uniform(key, shape=()):
    """Uniforms on (0, 1) of any shape (used off the hot path, e.g. ``DelayLaw.sample``)."""
    n = int(np.prod(shape)) if shape else 1
    return uniforms(key, n).reshape(shape)


def sample_from_probs(probs, u):
    """Inverse-CDF draw: ``A = min(K-1, #{a : cumsum(p)_a < u})`` (conventions §8): policies
    with equal distributions take equal actions from the same uniform."""
    c = jnp.cumsum(probs)
    return jnp.minimum(jnp.sum(c < u * c[-1]), probs.shape[0] - 1).astype(jnp.int32)


def argmax_random_tie(values, u, mask=None):
    """Argmax with exact ties broken uniformly at random by the one uniform ``u``."""
    if mask is not None:
        values = jnp.where(mask, values, -jnp.inf)
    ties = values >= jnp.max(values)
    c = jnp.cumsum(ties.astype(jnp.int32))
    j = jnp.floor(u * c[-1]).astype(jnp.int32)  # pick the (j+1)-th tied index
    return jnp.argmax(ties & (c > j)).astype(jnp.int32)


# ----------------------------------------------------------------------------- KL
def kl_bernoulli(p, q):
    """``kl(p, q) = p log(p/q) + (1-p) log((1-p)/(1-q))``, clipped away from 0 and 1."""
    p = jnp.clip(p, _EPS, 1 - _EPS)
    q = jnp.clip(q, _EPS, 1 - _EPS)
    return p * jnp.log(p / q) + (1 - p) * jnp.log((1 - p) / (1 - q))


def kl_gaussian(p, q, sigma2=1.0):
    return (p - q) ** 2 / (2.0 * sigma2)


def kl_poisson(p, q):
    """``q - p + p log(p/q)`` (Vernade et al. 2017's index uses it), ``0 log 0 = 0``."""
    q = jnp.maximum(q, _EPS)
    return q - p + jnp.where(p > 0, p * jnp.log(jnp.maximum(p, _EPS) / q), 0.0)


def kl_ucb_bernoulli(p_hat, bound, iters: int = 4):
    """``max {q in [p_hat, 1] : kl(p_hat, q) <= bound}`` (the KL-UCB index).

    Fixed-iteration Newton on ``y = -log(1 - q)``, where ``kl(p, 1 - e^-y)`` is convex and
    increasing, started from an upper bound (the smaller of Pinsker's ``p + sqrt(bound/2)`` and
    ``kl >= (1-p) log((1-p)/(1-q)) + p log p``): the iterates decrease monotonically to the root,
    so every iterate is a valid (conservative) upper confidence bound. Four steps reach float32
    accuracy on ``p in [0, 1]``, ``bound in [1e-6, 30]`` (tests/test_mathlib.py checks it against
    :func:`kl_ucb_bernoulli_bisect`). No data-dependent loop: safe under ``vmap``.
    ``bound = inf`` (no data) gives 1.
    """
    # exp/log only: XLA:CPU fuses them well, expm1/log1p made this 8x slower (measured).
    p = jnp.clip(p_hat, 0.0, 1.0)
    pc = jnp.clip(p, _EPS, 1 - _EPS)
    d = jnp.maximum(bound, 0.0)
    dfin = jnp.where(jnp.isfinite(d), d, 1.0)
    log_pc, log_1mpc = jnp.log(pc), jnp.log(1 - pc)
    y_pin = -jnp.log(1 - jnp.minimum(p + jnp.sqrt(dfin / 2), 1 - _EPS))
    y_up = (dfin - pc * log_pc) / (1 - pc) - log_1mpc
    y_lo = -log_1mpc
    y = jnp.minimum(y_pin, y_up)
    for _ in range(iters):  # unrolled: a handful of fused elementwise steps
        g = pc * (log_pc - jnp.log(1 - jnp.exp(-y))) + (1 - pc) * (log_1mpc + y) - dfin
        gp = (1 - pc) - pc / (jnp.exp(y) - 1)
        y = jnp.maximum(jnp.where(g > 0, y - g / jnp.maximum(gp, 1e-12), y), y_lo)
    q = jnp.maximum(1 - jnp.exp(-y), p)
    return jnp.where(jnp.isfinite(bound), jnp.where(bound > 0, q, p), 1.0)


def kl_ucb_bernoulli_bisect(p_hat, bound, iters: int = 40):
    """Reference solver for :func:`kl_ucb_bernoulli`: ``iters`` bisection steps (slow, exact to
    ``2^-iters``). Used by tests."""
    p_hat = jnp.clip(p_hat, 0.0, 1.0)

    def body(_, lh):
        lo, hi = lh
        mid = 0.5 * (lo + hi)
        ok = kl_bernoulli(p_hat, mid) <= bound
        return jnp.where(ok, mid, lo), jnp.where(ok, hi, mid)

    return lax.fori_loop(0, iters, body, (p_hat, jnp.ones_like(p_hat)))[1]


def kl_ucb_exploration(t, c: float = 0.0):
    """``log(t) + c log(log(t))`` at 1-based round ``t`` (Garivier and Cappe 2011, c = 0 in
    practice); non-negative."""
    t = jnp.maximum(jnp.asarray(t, _F), 1.0)
    return jnp.log(t) + c * jnp.log(jnp.maximum(jnp.log(t), 1.0))


# ----------------------------------------------------------------------------- widths
def ucb1_width(n, t, alpha: float = 2.0):
    """``sqrt(alpha log(t) / n)`` (UCB1: alpha = 2), ``inf`` for ``n = 0``."""
    t = jnp.maximum(jnp.asarray(t, _F), 1.0)
    return jnp.where(n > 0, jnp.sqrt(alpha * jnp.log(t) / jnp.maximum(n, 1.0)), jnp.inf)


def linucb_beta(t, dim, lam: float, sigma: float, s_norm: float, delta: float):
    """Abbasi-Yadkori et al. (2011) radius ``sigma sqrt(2 log(1/delta) + d log(1 + t/(lam d)))
    + sqrt(lam) S``."""
    t = jnp.asarray(t, _F)
    return sigma * jnp.sqrt(2 * math.log(1 / delta) + dim * jnp.log1p(t / (lam * dim))) + math.sqrt(lam) * s_norm


# ----------------------------------------------------------------------------- exp weights
def log_normalize(logw):
    """Log-probabilities from log-weights (log-sum-exp, stable)."""
    return logw - jax.nn.logsumexp(logw)


def kahan_add(s, c, x):
    """Compensated summation ``s + x`` (float32 running sums stay exact to ~1 ulp of the total);
    returns ``(sum, compensation)``."""
    y = x - c
    t = s + y
    return t, (t - s) - y


def exp_weights_probs(cum_loss, eta, gamma=0.0):
    """Exponential weights ``p ~ exp(-eta L)`` mixed with ``gamma`` uniform exploration."""
    p = jax.nn.softmax(-eta * cum_loss)
    k = cum_loss.shape[-1]
    return (1.0 - gamma) * p + gamma / k


# ----------------------------------------------------------------------------- Beta draws
def mt_proposal(d, c, x, u):
    """Marsaglia and Tsang's (2000) test of one Gamma(a) proposal, ``d = a - 1/3``,
    ``c = 1/sqrt(9 d)``, from a standard normal ``x`` and a uniform ``u``: ``(accepted, d v)`` with
    ``v = (1 + c x)^3``."""
    v = (1.0 + c * x) ** 3
    ok = (v > 0) & (jnp.log(u) < 0.5 * x * x + d - d * v + d * jnp.log(jnp.where(v > 0, v, 1.0)))
    return ok, d * v


def beta_from_gammas(ga, gb):
    """``G_a / (G_a + G_b)``: a Beta(a, b) variate from independent Gamma(a) and Gamma(b) ones."""
    return ga / (ga + gb)


def gamma_mt(key, a, n_try: int = 4):
    """Exact Gamma(a, 1) for ``a >= 1`` by Marsaglia and Tsang (2000).

    ``n_try`` proposals per variate are drawn at once (each accepted with probability > 0.95 for
    ``a >= 1``); a variate that rejects all of them (probability < 1e-5) goes on through a
    ``while_loop`` of further proposals, so the law is exact. ``a`` is a 1-d array.
    """
    a = jnp.asarray(a, _F)
    n = a.shape[0]
    d = a - 1.0 / 3.0
    c = 1.0 / jnp.sqrt(9.0 * d)

    def propose(k, offset):
        x = normals(k, n_try * n, offset).reshape(n_try, n)
        u = uniforms(k, n_try * n, offset + 2 * n_try * n).reshape(n_try, n)
        ok, dv = mt_proposal(d, c, x, u)
        first = jnp.argmax(ok, axis=0)
        val = jnp.take_along_axis(dv, first[None], axis=0)[0]
        return jnp.any(ok, axis=0), val

    done, val = propose(key, 0)

    def body(s):
        done, val, i = s
        ok2, v2 = propose(key, (i + 1) * 4 * n_try * n)
        return done | ok2, jnp.where(done, val, v2), i + 1

    done, val, _ = lax.while_loop(lambda s: ~jnp.all(s[0]), body, (done, val, jnp.uint32(0)))
    return val


def beta_sample(key, a, b):
    """Exact Beta(a, b), elementwise for arrays ``a, b >= 1``, as ``G_a / (G_a + G_b)`` with
    :func:`gamma_mt`. Several times faster than ``jax.random.beta`` on CPU under ``vmap``
    (benchmarks/beta_sampler.py); Beta-Bernoulli Thompson always has ``a, b >= 1``."""
    a = jnp.asarray(a, _F)
    k = a.shape[0]
    g = gamma_mt(key, jnp.concatenate([a, jnp.asarray(b, _F)]))
    return beta_from_gammas(g[:k], g[k:])


# ----------------------------------------------------------------------------- Poisson KL-UCB
def poisson_kl_ucb(p_hat, n_eff, beta, cap=1.0, iters: int = 10):
    """``max {q in [p_hat, cap] : n_eff d_Pois(p_hat, q) <= beta}`` (Vernade et al. 2017, sec. 5.3,
    the DelayedKLUCB index), ``+inf`` when ``n_eff = 0``; ``cap=None`` gives the uncapped root.

    Newton on ``f(q) = d_Pois(p, q) - beta/n_eff`` (convex, increasing on ``[p, inf)``) from the
    bracket ``p + c + sqrt(c^2 + 2pc)`` (valid because ``d_Pois(p, q) >= (q-p)^2/(2q)``): the iterates
    decrease monotonically to the root, so each is a valid upper bound. When the cap binds the
    index is exactly ``cap`` (exact ties, broken at random by the policy); ``p_hat >= cap`` returns
    ``p_hat``. Tested against float64 ``brentq`` roots and a bisection.
    """
    ok_n = n_eff > 0
    c = beta / jnp.where(ok_n, n_eff, 1.0)
    p = jnp.maximum(p_hat, 0.0)
    q = p + c + jnp.sqrt(c * c + 2.0 * p * c)
    for _ in range(iters):
        qs = jnp.maximum(q, 1e-30)
        f = kl_poisson(p, qs) - c
        fp = 1.0 - p / qs
        q = jnp.maximum(jnp.where((f > 0) & (fp > 0), q - f / jnp.where(fp > 0, fp, 1.0), q), p)
    if cap is not None:
        q = jnp.where(kl_poisson(p, jnp.full_like(q, cap)) <= c, cap, jnp.minimum(q, cap))
        q = jnp.where(p >= cap, p, q)
    return jnp.where(ok_n, q, jnp.inf)


def poisson_kl_ucb_bisect(p_hat, n_eff, beta, cap=1.0, iters: int = 60):
    """Reference bisection for :func:`poisson_kl_ucb` (Vernade et al. 2017, Sec. 5.3), for tests."""
    ok_n = n_eff > 0
    c = beta / jnp.where(ok_n, n_eff, 1.0)
    p = jnp.maximum(p_hat, 0.0)
    hi = p + c + jnp.sqrt(c * c + 2.0 * p * c)
    if cap is not None:
        hi = jnp.maximum(jnp.minimum(hi, cap), p)

    def body(_, lh):
        lo, hi = lh
        mid = 0.5 * (lo + hi)
        feas = kl_poisson(p, mid) <= c
        return jnp.where(feas, mid, lo), jnp.where(feas, hi, mid)

    lo, hi = lax.fori_loop(0, iters, body, (p, hi))
    u = 0.5 * (lo + hi)
    if cap is not None:
        u = jnp.where(kl_poisson(p, jnp.full_like(p, cap)) <= c, cap, u)
        u = jnp.where(p >= cap, p, u)
    return jnp.where(ok_n, u, jnp.inf)
