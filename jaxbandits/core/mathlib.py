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

from . import validate as V

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
    """The two 32-bit words of a (threefry) key.

    Args:
        key: a typed PRNG key (``jax.random.key``).

    Returns:
        ``(k0, k1)``, two uint32 scalars.

    Examples:
        >>> import jax
        >>> from jaxbandits import mathlib
        >>> [int(w) for w in mathlib.key_words(jax.random.key(42))]
        [0, 42]
    """
    kd = jax.random.key_data(key) if jnp.issubdtype(key.dtype, jax.dtypes.prng_key) else key
    return kd[..., 0].astype(jnp.uint32), kd[..., 1].astype(jnp.uint32)


_ROT = ((13, 15, 26, 6), (17, 29, 16, 24))


def _rotl(x, d):
    return (x << jnp.uint32(d)) | (x >> jnp.uint32(32 - d))


def threefry2x32(k0, k1, x0, x1):
    """The Threefry-2x32 block (20 rounds), written out.

    The same function as JAX's ``threefry2x32`` primitive, word for word. JAX lowers that primitive
    on CPU as a rolled 5-iteration ``while`` loop (several kernel launches per call); written out,
    XLA fuses it into the surrounding round (conventions §8: the engine's per-round ``fold_in``).

    Args:
        k0: uint32, the key's first word.
        k1: uint32, the key's second word.
        x0: uint32 (any shape), the counters' first words.
        x1: uint32, the counters' second words.

    Returns:
        ``(y0, y1)``, the two uint32 output words.

    Examples:
        Random123's known answer for a zero key and counter:

        >>> import jax.numpy as jnp
        >>> from jaxbandits import mathlib
        >>> z = jnp.uint32(0)
        >>> [hex(int(y)) for y in mathlib.threefry2x32(z, z, z, z)]
        ['0x6b200159', '0x99ba4efe']
    """
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
    """``jax.random.fold_in(key, data)`` bit for bit (a 32-bit ``data``).

    Computed by the written-out :func:`threefry2x32` for threefry keys, the default
    (tests/test_mathlib.py checks the equality); other key implementations go to
    ``jax.random.fold_in``.

    Args:
        key: a typed PRNG key.
        data: an integer (32-bit) to fold in.

    Returns:
        A new key.

    Examples:
        >>> import jax
        >>> from jaxbandits import mathlib
        >>> key = jax.random.key(0)
        >>> same = jax.random.key_data(mathlib.fold_in(key, 7)) == jax.random.key_data(jax.random.fold_in(key, 7))
        >>> bool(same.all())
        True
    """
    if not (jnp.issubdtype(key.dtype, jax.dtypes.prng_key) and str(jax.random.key_impl(key)) == "threefry2x32"):
        return jax.random.fold_in(key, data)
    k0, k1 = key_words(key)
    d = jnp.asarray(data)
    if d.dtype not in (jnp.int32, jnp.uint32):
        return jax.random.fold_in(key, data)
    y0, y1 = threefry2x32(k0, k1, jnp.zeros_like(k0), d.astype(jnp.uint32))
    return jax.random.wrap_key_data(jnp.stack([y0, y1], axis=-1), impl="threefry2x32")


def words(key, n: int, offset: int = 0):
    """``n`` pseudo-random uint32 words from ``key`` (a counter hash).

    Args:
        key: a typed PRNG key.
        n: the number of words.
        offset: the first counter: two draws from one key with disjoint blocks
            ``[offset, offset + n)`` never share words.

    Returns:
        uint32[n].

    Examples:
        >>> import jax
        >>> from jaxbandits import mathlib
        >>> w = mathlib.words(jax.random.key(42), 3)
        >>> w.dtype, w.shape
        (dtype('uint32'), (3,))
    """
    k0, k1 = key_words(key)
    i = jnp.arange(n, dtype=jnp.uint32) + jnp.asarray(offset, jnp.uint32)
    return _mix32(_mix32(k0[..., None] ^ (i * jnp.uint32(_GOLDEN))) + k1[..., None])


def _to_open_unit(w):
    # 23 bits + 1/2: the largest value 2^23 - 1/2 is exact in float32, so u < 1 always
    return ((w >> 9).astype(_F) + 0.5) * _F(2.0**-23)


def uniform(key):
    """One uniform on (0, 1) straight from the key's first word: the round's reward and delay uniforms.

    23-bit resolution, never 0 or 1, so inverse-CDF transforms are always finite.

    Args:
        key: a typed PRNG key.

    Returns:
        f32 scalar in (0, 1).

    Examples:
        >>> import jax
        >>> from jaxbandits import mathlib
        >>> 0.0 < float(mathlib.uniform(jax.random.key(3))) < 1.0
        True
    """
    return _to_open_unit(key_words(key)[0])


def uniforms(key, n: int, offset: int = 0):
    """``n`` uniforms on (0, 1) from :func:`words`.

    Args:
        key: a typed PRNG key.
        n: the number of uniforms.
        offset: the first counter (see :func:`words`).

    Returns:
        f32[n] in (0, 1).

    Examples:
        >>> import jax
        >>> from jaxbandits import mathlib
        >>> u = mathlib.uniforms(jax.random.key(42), 1000)
        >>> bool((u > 0).all() & (u < 1).all())
        True
    """
    return _to_open_unit(words(key, n, offset))


def normals(key, n: int, offset: int = 0):
    """``n`` standard normals by Box-Muller from ``2 ceil(n/2)`` uniforms.

    Args:
        key: a typed PRNG key.
        n: the number of normals.
        offset: the first counter (see :func:`words`).

    Returns:
        f32[n].

    Examples:
        >>> import jax
        >>> from jaxbandits import mathlib
        >>> mathlib.normals(jax.random.key(42), 3).shape
        (3,)
    """
    h = (n + 1) // 2
    u = uniforms(key, 2 * h, offset)
    r = jnp.sqrt(-2.0 * jnp.log(u[..., :h]))
    th = _F(2 * math.pi) * u[..., h:]
    return jnp.concatenate([r * jnp.cos(th), r * jnp.sin(th)], axis=-1)[..., :n]


def open_uniform(key, shape=()):
    """Uniforms on (0, 1) of any shape (used off the hot path, e.g. ``DelayLaw.sample``).

    Args:
        key: a typed PRNG key.
        shape: the output shape.

    Returns:
        f32 array of ``shape`` in (0, 1).

    Examples:
        >>> import jax
        >>> from jaxbandits import mathlib
        >>> mathlib.open_uniform(jax.random.key(42), (2, 3)).shape
        (2, 3)
    """
    n = int(np.prod(shape)) if shape else 1
    return uniforms(key, n).reshape(shape)


def sample_from_probs(probs, u):
    """Inverse-CDF draw: ``A = min(K-1, #{a : cumsum(p)_a < u})`` (conventions §8).

    Policies with equal distributions take equal actions from the same uniform.

    Args:
        probs: f32[K], a probability vector.
        u: a uniform on (0, 1).

    Returns:
        i32, the arm drawn.

    Examples:
        >>> import jax.numpy as jnp
        >>> from jaxbandits import mathlib
        >>> p = jnp.array([0.2, 0.5, 0.3])
        >>> int(mathlib.sample_from_probs(p, 0.1)), int(mathlib.sample_from_probs(p, 0.6))
        (0, 1)
    """
    c = jnp.cumsum(probs)
    return jnp.minimum(jnp.sum(c < u * c[-1]), probs.shape[0] - 1).astype(jnp.int32)


def argmax_random_tie(values, u, mask=None):
    """Argmax with exact ties broken uniformly at random by the one uniform ``u``.

    Args:
        values: f32[K].
        u: a uniform on (0, 1).
        mask: bool[K], the allowed arms (at least one), or ``None`` for all. The arm is always
            an allowed one: if every allowed value is ``-inf``, or one is NaN, it is uniform over
            the allowed arms.

    Returns:
        i32, the arm.

    Examples:
        >>> import jax.numpy as jnp
        >>> from jaxbandits import mathlib
        >>> v = jnp.array([1.0, 3.0, 3.0])
        >>> int(mathlib.argmax_random_tie(v, 0.1)), int(mathlib.argmax_random_tie(v, 0.9))
        (1, 2)
        >>> int(mathlib.argmax_random_tie(v, 0.9, mask=jnp.array([True, True, False])))
        1
    """
    if mask is not None:
        values = jnp.where(mask, values, -jnp.inf)
    ties = values >= jnp.max(values)
    if mask is not None:  # never a masked arm: not when every allowed value is -inf (all tie at
        ties = ties & mask  # -inf), nor when one is NaN (nothing ties: uniform over the allowed)
        ties = jnp.where(jnp.any(ties), ties, mask)
    c = jnp.cumsum(ties.astype(jnp.int32))
    j = jnp.floor(u * c[-1]).astype(jnp.int32)  # pick the (j+1)-th tied index
    return jnp.argmax(ties & (c > j)).astype(jnp.int32)


# ----------------------------------------------------------------------------- KL
def kl_bernoulli(p, q):
    """``kl(p, q) = p log(p/q) + (1-p) log((1-p)/(1-q))``, clipped away from 0 and 1.

    Args:
        p: Bernoulli means (arrays broadcast).
        q: Bernoulli means.

    Returns:
        f32, the divergence.

    Examples:
        >>> from jaxbandits import mathlib
        >>> round(float(mathlib.kl_bernoulli(0.5, 0.9)), 4)
        0.5108
    """
    p = jnp.clip(p, _EPS, 1 - _EPS)
    q = jnp.clip(q, _EPS, 1 - _EPS)
    return p * jnp.log(p / q) + (1 - p) * jnp.log((1 - p) / (1 - q))


def kl_gaussian(p, q, sigma2=1.0):
    """The Gaussian divergence ``(p - q)^2 / (2 sigma2)`` of two means under a common variance.

    Args:
        p: a mean.
        q: a mean.
        sigma2: the variance.

    Returns:
        The divergence.

    Examples:
        >>> from jaxbandits import mathlib
        >>> float(mathlib.kl_gaussian(0.0, 1.0))
        0.5
    """
    return (p - q) ** 2 / (2.0 * sigma2)


def kl_poisson(p, q):
    """The Poisson divergence ``q - p + p log(p/q)``, ``0 log 0 = 0`` (Vernade et al. 2017's index).

    Args:
        p: a rate ``>= 0``.
        q: a rate ``> 0``.

    Returns:
        f32, the divergence.

    Examples:
        >>> from jaxbandits import mathlib
        >>> round(float(mathlib.kl_poisson(0.2, 0.5)), 4)
        0.1167
    """
    q = jnp.maximum(q, _EPS)
    return q - p + jnp.where(p > 0, p * jnp.log(jnp.maximum(p, _EPS) / q), 0.0)


def kl_ucb_bernoulli(p_hat, bound, iters: int = 4):
    """The KL-UCB index ``max {q in [p_hat, 1] : kl(p_hat, q) <= bound}``.

    Fixed-iteration Newton on ``y = -log(1 - q)``, where ``kl(p, 1 - e^-y)`` is convex and
    increasing, started from an upper bound (the smaller of Pinsker's ``p + sqrt(bound/2)`` and
    ``kl >= (1-p) log((1-p)/(1-q)) + p log p``): the iterates decrease monotonically to the root,
    so every iterate is a valid (conservative) upper confidence bound. Four steps reach float32
    accuracy on ``p in [0, 1]``, ``bound in [1e-6, 30]`` (tests/test_mathlib.py checks it against
    :func:`kl_ucb_bernoulli_bisect`). No data-dependent loop: safe under ``vmap``.

    Args:
        p_hat: empirical means in ``[0, 1]``.
        bound: the divergence budget ``>= 0``; ``inf`` (no data) gives 1.
        iters: Newton steps.

    Returns:
        f32, the index.

    Examples:
        >>> from jaxbandits import mathlib
        >>> round(float(mathlib.kl_ucb_bernoulli(0.5, 0.2)), 4)
        0.7871
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
    """Reference solver for :func:`kl_ucb_bernoulli` by bisection (slow, exact to ``2^-iters``; tests).

    Args:
        p_hat: empirical means in ``[0, 1]``.
        bound: the divergence budget.
        iters: bisection steps.

    Returns:
        f32, the index.

    Examples:
        >>> from jaxbandits import mathlib
        >>> round(float(mathlib.kl_ucb_bernoulli_bisect(0.5, 0.2)), 4)
        0.7871
    """
    p_hat = jnp.clip(p_hat, 0.0, 1.0)

    def body(_, lh):
        lo, hi = lh
        mid = 0.5 * (lo + hi)
        ok = kl_bernoulli(p_hat, mid) <= bound
        return jnp.where(ok, mid, lo), jnp.where(ok, hi, mid)

    return lax.fori_loop(0, iters, body, (p_hat, jnp.ones_like(p_hat)))[1]


def kl_ucb_exploration(t, c: float = 0.0):
    """KL-UCB's exploration ``log(t) + c log(log(t))`` at the 1-based round ``t``; non-negative.

    Garivier and Cappe (2011); ``c = 0`` in practice.

    Args:
        t: the 1-based round.
        c: the ``log log`` coefficient.

    Returns:
        f32, the exploration term.

    Examples:
        >>> from jaxbandits import mathlib
        >>> round(float(mathlib.kl_ucb_exploration(100)), 4)
        4.6052
    """
    t = jnp.maximum(jnp.asarray(t, _F), 1.0)
    return jnp.log(t) + c * jnp.log(jnp.maximum(jnp.log(t), 1.0))


# ----------------------------------------------------------------------------- widths
def ucb1_width(n, t, alpha: float = 2.0):
    """The UCB1 width ``sqrt(alpha log(t) / n)`` (UCB1: ``alpha = 2``), ``inf`` for ``n = 0``.

    Args:
        n: counts.
        t: the 1-based round.
        alpha: the exploration constant.

    Returns:
        f32, the widths.

    Examples:
        >>> from jaxbandits import mathlib
        >>> round(float(mathlib.ucb1_width(4.0, 10)), 4), float(mathlib.ucb1_width(0.0, 10))
        (1.073, inf)
    """
    t = jnp.maximum(jnp.asarray(t, _F), 1.0)
    return jnp.where(n > 0, jnp.sqrt(alpha * jnp.log(t) / jnp.maximum(n, 1.0)), jnp.inf)


def linucb_beta(t, dim, lam: float, sigma: float, s_norm: float, delta: float):
    """The Abbasi-Yadkori et al. (2011) radius ``sigma sqrt(2 log(1/delta) + d log(1 + t/(lam d))) + sqrt(lam) S``.

    Args:
        t: the number of rows in the design matrix.
        dim: the dimension ``d``.
        lam: the ridge regularisation.
        sigma: the noise's sub-Gaussian scale.
        s_norm: the bound ``S`` on ``||theta||``.
        delta: the confidence level.

    Returns:
        f32, the radius.

    Examples:
        >>> from jaxbandits import mathlib
        >>> round(float(mathlib.linucb_beta(100, 5, 1.0, 0.5, 1.0, 0.05)), 4)
        3.3029
    """
    t = jnp.asarray(t, _F)
    return sigma * jnp.sqrt(2 * math.log(1 / delta) + dim * jnp.log1p(t / (lam * dim))) + math.sqrt(lam) * s_norm


# ----------------------------------------------------------------------------- exp weights
def log_normalize(logw):
    """Log-probabilities from log-weights (log-sum-exp, stable).

    Args:
        logw: f32[K], log-weights.

    Returns:
        f32[K], log-probabilities (``logsumexp = 0``).

    Examples:
        >>> import jax.numpy as jnp
        >>> from jaxbandits import mathlib
        >>> jnp.exp(mathlib.log_normalize(jnp.log(jnp.array([1.0, 3.0])))).tolist()
        [0.25, 0.75]
    """
    return logw - jax.nn.logsumexp(logw)


def kahan_add(s, c, x):
    """Compensated summation ``s + x``: float32 running sums stay exact to about 1 ulp of the total.

    Args:
        s: the running sum.
        c: its compensation (start at 0).
        x: the term to add.

    Returns:
        ``(sum, compensation)``; ``sum - compensation`` is the total to float32's precision of the
        low-order part.

    Examples:
        >>> import jax.numpy as jnp
        >>> from jaxbandits import mathlib
        >>> s, c = jnp.float32(1e8), jnp.float32(0.0)
        >>> for _ in range(2):
        ...     s, c = mathlib.kahan_add(s, c, jnp.float32(1.0))
        >>> float(s), float(c)  # a plain float32 sum would have lost both ones
        (100000000.0, -2.0)
    """
    y = x - c
    t = s + y
    return t, (t - s) - y


def exp_weights_probs(cum_loss, eta, gamma=0.0):
    """Exponential weights ``p ~ exp(-eta L)`` mixed with ``gamma`` uniform exploration.

    Args:
        cum_loss: f32[K], cumulative losses.
        eta: the learning rate.
        gamma: the uniform mixture weight, in ``[0, 1]``.

    Returns:
        f32[K], the probabilities.

    Examples:
        >>> import numpy as np, jax.numpy as jnp
        >>> from jaxbandits import mathlib
        >>> p = mathlib.exp_weights_probs(jnp.array([0.0, 1.0]), 1.0, gamma=0.5)
        >>> print(np.asarray(p, float).round(4))
        [0.6155 0.3845]
    """
    p = jax.nn.softmax(-eta * cum_loss)
    k = cum_loss.shape[-1]
    return (1.0 - gamma) * p + gamma / k


# ----------------------------------------------------------------------------- Beta draws
def mt_proposal(d, c, x, u):
    """Marsaglia and Tsang's (2000) test of one Gamma(a) proposal.

    With ``d = a - 1/3`` and ``c = 1/sqrt(9 d)``, from a standard normal ``x`` and a uniform ``u``.

    Args:
        d: ``a - 1/3``.
        c: ``1/sqrt(9 d)``.
        x: a standard normal.
        u: a uniform on (0, 1).

    Returns:
        ``(accepted, d v)`` with ``v = (1 + c x)^3``.

    Examples:
        >>> import math
        >>> from jaxbandits import mathlib
        >>> d = 2.0 - 1 / 3
        >>> ok, g = mathlib.mt_proposal(d, 1 / math.sqrt(9 * d), 0.0, 0.5)
        >>> bool(ok), round(float(g), 4)
        (True, 1.6667)
    """
    v = (1.0 + c * x) ** 3
    ok = (v > 0) & (jnp.log(u) < 0.5 * x * x + d - d * v + d * jnp.log(jnp.where(v > 0, v, 1.0)))
    return ok, d * v


def beta_from_gammas(ga, gb):
    """``G_a / (G_a + G_b)``: a Beta(a, b) variate from independent Gamma(a) and Gamma(b) ones.

    Args:
        ga: Gamma(a) variates.
        gb: Gamma(b) variates.

    Returns:
        The Beta(a, b) variates.

    Examples:
        >>> from jaxbandits import mathlib
        >>> float(mathlib.beta_from_gammas(1.0, 3.0))
        0.25
    """
    return ga / (ga + gb)


#: the most rounds of further proposals :func:`gamma_mt` draws (a bound, not a tuning: reached only
#: for shapes outside its range)
GAMMA_MAX_ROUNDS = 4096


def gamma_mt(key, a, n_try: int = 4):
    """Exact Gamma(a, 1) variates for ``a >= 1`` by Marsaglia and Tsang (2000).

    ``n_try`` proposals per variate are drawn at once (each accepted with probability > 0.95 for
    ``a >= 1``); a variate that rejects all of them (probability < 1e-5) goes on through a
    ``while_loop`` of further proposals, so the law is exact. The loop stops after
    :data:`GAMMA_MAX_ROUNDS` rounds (for ``a >= 1`` it ends sooner with probability above
    ``1 - 1e-5000``): a shape outside the range (below 1/3, NaN) gives NaN there, not a hang; a
    concrete one is refused before anything runs.

    Args:
        key: a typed PRNG key.
        a: f32[n], the shapes, each ``>= 1``.
        n_try: proposals drawn at once per variate.

    Returns:
        f32[n], one Gamma(a_i) variate each.

    Raises:
        ValueError: a concrete shape below 1 or not finite.

    Examples:
        >>> import jax, jax.numpy as jnp  # doctest: +SKIP
        >>> from jaxbandits import mathlib  # doctest: +SKIP
        >>> g = mathlib.gamma_mt(jax.random.key(42), jnp.array([2.0, 5.0]))  # doctest: +SKIP
        >>> g.shape, bool((g > 0).all())  # doctest: +SKIP
        ((2,), True)
    """
    if V.is_concrete(a):
        bad = ~(np.asarray(a, np.float64) >= 1.0)  # NaN is bad too
        if bad.any():
            raise ValueError(f"gamma_mt: shapes a must be >= 1 (finite), got {np.asarray(a)[bad][:4].tolist()}")
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

    done, val, _ = lax.while_loop(lambda s: ~jnp.all(s[0]) & (s[2] < GAMMA_MAX_ROUNDS), body,
                                  (done, val, jnp.uint32(0)))
    return jnp.where(done, val, jnp.nan)


def beta_sample(key, a, b):
    """Exact Beta(a, b), elementwise for arrays ``a, b >= 1``, as ``G_a / (G_a + G_b)`` with :func:`gamma_mt`.

    Several times faster than ``jax.random.beta`` on CPU under ``vmap``
    (benchmarks/beta_sampler.py); Beta-Bernoulli Thompson always has ``a, b >= 1``.

    Args:
        key: a typed PRNG key.
        a: f32[K], first parameters ``>= 1``.
        b: f32[K], second parameters ``>= 1``.

    Returns:
        f32[K] in (0, 1).

    Examples:
        >>> import jax, jax.numpy as jnp  # doctest: +SKIP
        >>> from jaxbandits import mathlib  # doctest: +SKIP
        >>> x = mathlib.beta_sample(jax.random.key(42), jnp.array([2.0, 1.0]), jnp.array([3.0, 1.0]))  # doctest: +SKIP
        >>> x.shape, bool(((x > 0) & (x < 1)).all())  # doctest: +SKIP
        ((2,), True)
    """
    a = jnp.asarray(a, _F)
    k = a.shape[0]
    g = gamma_mt(key, jnp.concatenate([a, jnp.asarray(b, _F)]))
    return beta_from_gammas(g[:k], g[k:])


# ----------------------------------------------------------------------------- Poisson KL-UCB
def poisson_kl_ucb(p_hat, n_eff, beta, cap=1.0, iters: int = 10):
    """The DelayedKLUCB index ``max {q in [p_hat, cap] : n_eff d_Pois(p_hat, q) <= beta}``.

    Vernade et al. (2017), sec. 5.3. Newton on ``f(q) = d_Pois(p, q) - beta/n_eff`` (convex,
    increasing on ``[p, inf)``) from the bracket ``p + c + sqrt(c^2 + 2pc)`` (valid because
    ``d_Pois(p, q) >= (q-p)^2/(2q)``): the iterates decrease monotonically to the root, so each is a
    valid upper bound. When the cap binds the index is exactly ``cap`` (exact ties, broken at
    random by the policy); ``p_hat >= cap`` returns ``p_hat``. Tested against float64 ``brentq``
    roots and a bisection.

    Args:
        p_hat: the estimates ``S / Ñ``.
        n_eff: the effective counts ``Ñ``.
        beta: the exploration term.
        cap: the upper bound, or ``None`` for the uncapped root.
        iters: Newton steps.

    Returns:
        f32, the index (``+inf`` where ``n_eff = 0``).

    Examples:
        >>> from jaxbandits import mathlib
        >>> round(float(mathlib.poisson_kl_ucb(0.2, 10.0, 2.0)), 3), float(mathlib.poisson_kl_ucb(0.2, 0.0, 2.0))
        (0.629, inf)
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
    """Reference bisection for :func:`poisson_kl_ucb` (Vernade et al. 2017, Sec. 5.3), for tests.

    Args:
        p_hat: the estimates.
        n_eff: the effective counts.
        beta: the exploration term.
        cap: the upper bound, or ``None``.
        iters: bisection steps.

    Returns:
        f32, the index.

    Examples:
        >>> from jaxbandits import mathlib
        >>> round(float(mathlib.poisson_kl_ucb_bisect(0.2, 10.0, 2.0)), 3)
        0.629
    """
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


# jax.scipy.special.ndtri's coefficients (Cephes' ndtri), as Python floats: jax holds them as
# arrays and evaluates them by a scan, which a Pallas kernel cannot capture; here each is a
# constant of the program, applied in the same order, so the result is the same float32.
_NDTRI_P0 = (-5.99633501014107895267E1, 9.80010754185999661536E1, -5.66762857469070293439E1,
             1.39312609387279679503E1, -1.23916583867381258016E0)
_NDTRI_Q0 = (1.0, 1.95448858338141759834E0, 4.67627912898881538453E0, 8.63602421390890590575E1,
             -2.25462687854119370527E2, 2.00260212380060660359E2, -8.20372256168333339912E1,
             1.59056225126211695515E1, -1.18331621121330003142E0)
_NDTRI_P1 = (4.05544892305962419923E0, 3.15251094599893866154E1, 5.71628192246421288162E1,
             4.40805073893200834700E1, 1.46849561928858024014E1, 2.18663306850790267539E0,
             -1.40256079171354495875E-1, -3.50424626827848203418E-2, -8.57456785154685413611E-4)
_NDTRI_Q1 = (1.0, 1.57799883256466749731E1, 4.53907635128879210584E1, 4.13172038254672030440E1,
             1.50425385692907503408E1, 2.50464946208309415979E0, -1.42182922854787788574E-1,
             -3.80806407691578277194E-2, -9.33259480895457427372E-4)
_NDTRI_P2 = (3.23774891776946035970E0, 6.91522889068984211695E0, 3.93881025292474443415E0,
             1.33303460815807542389E0, 2.01485389549179081538E-1, 1.23716634817820021358E-2,
             3.01581553508235416007E-4, 2.65806974686737550832E-6, 6.23974539184983293730E-9)
_NDTRI_Q2 = (1.0, 6.02427039364742014255E0, 3.67983563856160859403E0, 1.37702099489081330271E0,
             2.16236993594496635890E-1, 1.34204006088543189037E-2, 3.28014464682127739104E-4,
             2.89247864745380683936E-6, 6.79019408009981274425E-9)


def _polyval32(coeffs, x):
    """Horner's rule from ``0`` as ``jnp.polyval`` runs it, each coefficient a float32 constant."""
    y = jnp.zeros_like(x)
    for c in coeffs:
        y = y * x + np.float32(c)
    return y


def ndtri(p):
    """The standard normal quantile ``Phi^-1(p)`` of float32 ``p``, computed as
    ``jax.scipy.special.ndtri`` computes it (the same operations on the same float32
    constants: equal bit for bit, tested), but with no array constant, so it also runs inside a
    fused Pallas kernel (the log-normal delay law's inverse CDF, :mod:`jaxbandits.core.delays`).

    Args:
        p: probabilities, float32, in ``[0, 1]`` (``0`` and ``1`` give ``-inf`` and ``inf``).

    Returns:
        ``Phi^-1(p)``, float32 of ``p``'s shape.

    Examples:
        >>> import jax.numpy as jnp
        >>> from jaxbandits.core import mathlib
        >>> [round(float(x), 4) for x in mathlib.ndtri(jnp.array([0.5, 0.975, 0.0], jnp.float32))]
        [0.0, 1.96, -inf]
    """
    p = jnp.asarray(p, jnp.float32)
    f = np.float32
    mcp = jnp.where(p > f(-np.expm1(-2.0)), f(1.0) - p, p)
    mcp = jnp.where(mcp == f(0.0), jnp.full(p.shape, f(0.5)), mcp)
    w = mcp - f(0.5)
    ww = lax.square(w)
    big = w + w * ww * (_polyval32(_NDTRI_P0, ww) / _polyval32(_NDTRI_Q0, ww))
    big = big * -f(np.sqrt(2.0 * np.pi))
    z = lax.sqrt(f(-2.0) * lax.log(mcp))
    first = z - lax.log(z) / z
    iz = 1 / z
    small = first - _polyval32(_NDTRI_P2, iz) / _polyval32(_NDTRI_Q2, iz) / z
    other = first - _polyval32(_NDTRI_P1, iz) / _polyval32(_NDTRI_Q1, iz) / z
    x = jnp.where(mcp > f(np.exp(-2.0)), big, jnp.where(z >= f(8.0), small, other))
    x = jnp.where(p > f(1.0 - np.exp(-2.0)), x, -x)
    inf = jnp.full(p.shape, f(np.inf))
    return jnp.where(p == f(0.0), -inf, jnp.where(p == f(1.0), inf, x))
