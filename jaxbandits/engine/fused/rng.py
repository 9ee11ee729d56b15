"""Internal: not public API (the fused backend's implementation).

Counter-based random numbers inside a kernel, from uint32 adds, rotations and xors only (they
lower to Triton and run in Pallas' interpret mode alike).

``threefry2x32(k0, k1, c0, c1)`` is Threefry-2x32 with 20 rounds (Salmon et al. 2011, the
generator behind ``jax.random``'s default keys), applied elementwise: the key is a run's stream
key (conventions §8: ``k_env`` for the world, ``k_pol`` for the policy), the counter is
``(round, lane)``. Every draw of the fused path is therefore a pure function of (run, round,
stream, lane): no state is carried, and every policy of an experiment reads the same world words.
These are not the scan path's bits (which fold keys per round); the statistics are the same
(tests/test_fused.py).

On top of it: open uniforms (23 bits + 1/2, as :func:`jaxbandits.core.mathlib.uniform`), normals by
Box-Muller (both of a pair) and by the inverse CDF, and exact Gamma(a >= 1) variates by Marsaglia
and Tsang (2000), a lane's proposals served to its variates in sequence (Beta(a, b) is then
``G_a / (G_a + G_b)``, in :mod:`jaxbandits.engine.fused.lanes`).
"""
from __future__ import annotations

import math

import jax.numpy as jnp
from jax import lax

from ...core.mathlib import mt_proposal

_U = jnp.uint32
_F = jnp.float32
_ROT = ((13, 15, 26, 6), (17, 29, 16, 24))

def _rotl(x, r):
    return (x << _U(r)) | (x >> _U(32 - r))


def threefry2x32(k0, k1, c0, c1):
    """Threefry-2x32 (20 rounds) of the counter ``(c0, c1)`` under the key ``(k0, k1)``: two
    uint32 words (arrays broadcast together)."""
    k0, k1, c0, c1 = (jnp.asarray(a, _U) for a in (k0, k1, c0, c1))
    ks = (k0, k1, k0 ^ k1 ^ _U(0x1BD11BDA))
    x0, x1 = c0 + ks[0], c1 + ks[1]
    for i in range(5):
        for r in _ROT[i % 2]:
            x0 = x0 + x1
            x1 = _rotl(x1, r) ^ x0
        x0 = x0 + ks[(i + 1) % 3]
        x1 = x1 + ks[(i + 2) % 3] + _U(i + 1)
    return x0, x1


def to_uniform(w):
    """A uint32 word as a uniform on (0, 1): ``((w >> 9) + 1/2) 2^-23``, never 0 or 1."""
    return ((w >> _U(9)).astype(_F) + _F(0.5)) * _F(2.0**-23)


def uniforms2(k0, k1, c0, c1):
    """Two independent open uniforms from one threefry call."""
    w0, w1 = threefry2x32(k0, k1, c0, c1)
    return to_uniform(w0), to_uniform(w1)


def normal_pair(k0, k1, c0, c1):
    """Two independent standard normals (Box-Muller, both branches) from one threefry call."""
    u0, u1 = uniforms2(k0, k1, c0, c1)
    r = jnp.sqrt(_F(-2.0) * jnp.log(u0))
    th = _F(2 * math.pi) * u1
    return r * jnp.cos(th), r * jnp.sin(th)


def normal_icdf(u):
    """The standard normal quantile of an open uniform: ``sqrt(2) erfinv(2u - 1)`` (``2u - 1`` is
    exact for :func:`to_uniform`'s values, never +-1)."""
    return _F(2.0**0.5) * lax.erf_inv(_F(2.0) * u - _F(1.0))


def max_proposals(q: int, p_reject: float = 0.05, tail: float = 1e-18) -> int:
    """The cap on the proposals of :func:`gammas_in_sequence` for ``q`` variates: the smallest
    ``m`` with ``P(more than m proposals) < tail`` when each proposal is rejected with probability
    ``p_reject`` (Marsaglia and Tsang's rejection rate is below 0.05 for every shape >= 1)."""
    # P(F > f) for F the rejections before the q-th acceptance (negative binomial), summed in logs
    lp, la = math.log(p_reject), math.log1p(-p_reject)
    f = 0
    while True:
        rest = sum(math.exp(math.lgamma(q + g) - math.lgamma(q) - math.lgamma(g + 1) + g * lp + q * la)
                   for g in range(f + 1, f + 400))
        if rest < tail:
            return q + f
        f += 1


def gammas_in_sequence(shapes, k0, k1, c0, cap: int):
    """Independent exact ``Gamma(shapes[q], 1)`` variates, ``q = 0 .. Q-1`` (each a vector of
    lanes, every shape >= 1), by Marsaglia and Tsang (2000) with the proposals of a lane served in
    sequence: proposal ``i`` of a lane (counter ``(c0, i)``: one threefry call gives its normal, by
    the inverse CDF, and its uniform) goes to the lane's first variate not yet accepted. Each
    variate's value is then its first accepted proposal among i.i.d. proposals: exact in law, and
    the variates independent. A lane needs ``Q`` proposals plus its rejections, so a block's loop
    runs ``Q`` plus the largest number of rejections among its lanes (the expected maximum over 128
    lanes is a few), not ``Q`` times the largest over the block as variate-by-variate rejection
    loops would. ``cap`` (:func:`max_proposals`) bounds the loop; reaching it has probability
    below 1e-18 per lane and round."""
    Q = len(shapes)
    d = [jnp.asarray(a, _F) - _F(1.0 / 3.0) for a in shapes]
    lanes = jnp.broadcast_to(jnp.asarray(k0, _U), d[0].shape)

    def pick(j, xs):
        out = xs[0]
        for q in range(1, Q):
            out = jnp.where(j == q, xs[q], out)
        return out

    def body(st):
        i, j, vals = st
        w0, w1 = threefry2x32(k0, k1, c0, i.astype(_U))
        x = normal_icdf(to_uniform(w0))
        u = to_uniform(w1)
        dj = pick(j, d)
        ok, g = mt_proposal(dj, _F(1.0) / jnp.sqrt(_F(9.0) * dj), x, u)
        ok = ok & (j < Q)
        vals = tuple(jnp.where(ok & (j == q), g, vals[q]) for q in range(Q))
        return i + 1, j + ok.astype(jnp.int32), vals

    def cond(st):
        i, j, _ = st
        return (i < cap) & (jnp.sum(jnp.where(j < Q, 1, 0)) > 0)  # not jnp.any: no reduce_or in Triton

    z = jnp.zeros(lanes.shape, _F)
    init = (jnp.int32(0), jnp.zeros(lanes.shape, jnp.int32), tuple(z for _ in range(Q)))
    return list(lax.while_loop(cond, body, init)[2])
