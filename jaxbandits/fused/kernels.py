"""The fused kernels (Pallas; Triton on GPU, interpret mode anywhere).

One program owns ``block`` runs (rows) and the ``Kp`` arm columns (``K`` padded to a power of
two; padded arms are never chosen). It loops over record segments and, inside, over the rounds of
a segment (``lax.fori_loop``); the state lives in the loop carry for the whole horizon; each
segment's end writes one column of every record. Round ``t`` of a run follows conventions §2:

1. the world's words of round ``t``: ``(u_t, v_t) = threefry(k_env, (t, 0))`` (reward and delay
   uniforms, shared by every policy of the experiment: common random numbers);
2. act: the policy's index from its statistics, argmax with exact ties broken uniformly at random
   by ``threefry(k_pol, (t, TIE))`` (conventions §10); Thompson draws from ``k_pol``, counters
   ``(t, lane)``;
3. outcome ``r = 1{u_t < mu[A]}`` (conventions §8), delay ``d = F^-1(v_t)``;
4-6. what the channel delivers this round, then the update;
7. metrics: pseudo-regret and reward with Kahan compensation (conventions §9), pulls.

Everything inside is elementwise uint32/float32 arithmetic on ``[block, Kp]`` tiles, row
reductions, ``iota`` one-hots and loops: the operations that lower to Triton (checked in
tests/test_fused.py by lowering every kernel for CUDA on a CPU machine).
"""
from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
from jax import lax
from jax.experimental import pallas as pl

from .. import mathlib as M
from . import rng

_F = jnp.float32
_I = jnp.int32
_U = jnp.uint32
TIE = 0xFFFFFFFF  # the counter lane of the tie-breaking word (never a draw's lane)
INF = float("inf")


class KernelSpec(NamedTuple):
    """Everything static about one fused kernel (hashable: the compile cache key)."""

    kind: str  # the policy (fused._registry.FusedSpec.kind)
    params: tuple  # its parameters
    n_arms: int  # K
    k_pad: int  # Kp: K padded to a power of two
    n_rec: int  # number of record points
    r_pad: int  # record columns, padded to a power of two
    block: int  # runs per program
    world: tuple = ()  # ("bernoulli",)
    interpret: bool = False
    num_warps: int = 4

    def p(self, name, default=None):
        return dict(self.params).get(name, default)


def next_pow2(n: int) -> int:
    return 1 << max(0, int(n - 1).bit_length())


# ----------------------------------------------------------------------------- shared pieces
def _kahan(s, c, x):
    y = x - c
    t = s + y
    return t, (t - s) - y


def _argmax_random_tie(idx, valid, u, arm):
    """Row argmax of ``idx[B, Kp]`` over the valid arms, exact ties broken by the row's uniform
    ``u[B]``: the ``(floor(u c) + 1)``-th tied arm, ``c`` the number of ties (as
    :func:`jaxbandits.mathlib.argmax_random_tie`)."""
    v = jnp.where(valid, idx, -INF)
    best = jnp.max(v, axis=1, keepdims=True)
    ties = (v >= best) & valid
    c = jnp.cumsum(ties.astype(_I), axis=1)
    n = jnp.sum(ties.astype(_I), axis=1)
    j = jnp.minimum(jnp.floor(u * n.astype(_F)).astype(_I), n - 1)
    sel = ties & (c == (j + 1)[:, None])
    return jnp.sum(jnp.where(sel, arm, 0), axis=1)


def _classic_index(ks: KernelSpec, n, s, t, kp0, kp1, arm):
    """The index of every arm (``[B, Kp]``) of the classic policies at round ``t`` (0-based)."""
    kind = ks.kind
    tf = t.astype(_F) + _F(1.0)  # the paper's 1-based round (conventions §1)
    pos = n > 0
    nn = jnp.maximum(n, _F(1.0))
    if kind == "ucb1":
        alpha = _F(ks.p("alpha", 2.0))
        return jnp.where(pos, s / nn + jnp.sqrt(alpha * jnp.log(tf) / nn), INF)
    if kind == "kl_ucb":
        mean = jnp.clip(s / nn, 0.0, 1.0)
        bound = jnp.where(pos, M.kl_ucb_exploration(tf, ks.p("c", 0.0)) / nn, INF)
        return jnp.where(pos, M.kl_ucb_bernoulli(mean, bound, ks.p("iters", 4)), INF)
    lane = arm.astype(_U)
    c0 = jnp.broadcast_to(t.astype(_U), n.shape)
    k0 = jnp.broadcast_to(kp0[:, None], n.shape)
    k1 = jnp.broadcast_to(kp1[:, None], n.shape)
    if kind == "thompson":
        a = _F(ks.p("prior_a", 1.0)) + s
        b = _F(ks.p("prior_b", 1.0)) + jnp.maximum(n - s, 0.0)
        return rng.beta(a, b, k0, k1, c0, lane, ks.k_pad)
    if kind == "gaussian_ts":
        sigma2 = _F(ks.p("sigma", 1.0) ** 2)
        pv = ks.p("prior_var", 1e4)
        prec = _F(1.0 / pv) + n / sigma2
        mean = (_F(ks.p("prior_mean", 0.0) / pv) + s / sigma2) / prec
        return mean + rng.normal(k0, k1, c0, lane) / jnp.sqrt(prec)
    raise ValueError(f"no fused kernel for {kind!r}")


# ----------------------------------------------------------------------------- classic kernel
def _classic_kernel(ks: KernelSpec, mu_ref, rec_ref, ke0_ref, ke1_ref, kp0_ref, kp1_ref,
                    regret_ref, reward_ref, pulls_ref):
    """UCB1, KL-UCB, Beta-Bernoulli and Gaussian Thompson on a Bernoulli world without delay,
    attributed channel: a play's record arrives in its own round (conventions §2, step 5)."""
    B, Kp, K = ks.block, ks.k_pad, ks.n_arms
    ke0, ke1 = ke0_ref[...], ke1_ref[...]
    kp0, kp1 = kp0_ref[...], kp1_ref[...]
    mu = jnp.broadcast_to(mu_ref[...][None, :], (B, Kp))
    arm = lax.broadcasted_iota(_I, (B, Kp), 1)
    valid = arm < K
    best = jnp.max(jnp.where(valid, mu, -INF), axis=1)
    zb = jnp.zeros((B,), _F)
    zk = jnp.zeros((B, Kp), _F)

    def one_round(t, st):
        n, s, reg, reg_c, rew, rew_c = st
        u, _ = rng.uniforms2(ke0, ke1, t.astype(_U), _U(0))  # world: (u_t, v_t)
        w, _ = rng.uniforms2(kp0, kp1, t.astype(_U), _U(TIE))
        idx = _classic_index(ks, n, s, t, kp0, kp1, arm)
        a = _argmax_random_tie(idx, valid, w, arm)
        oh = (arm == a[:, None]).astype(_F)
        mu_a = jnp.sum(oh * mu, axis=1)
        r = (u < mu_a).astype(_F)
        n = n + oh
        s = s + oh * r[:, None]
        reg, reg_c = _kahan(reg, reg_c, best - mu_a)
        rew, rew_c = _kahan(rew, rew_c, r)
        return n, s, reg, reg_c, rew, rew_c

    def segment(i, carry):
        st, lo = carry
        hi = rec_ref[i] + 1
        st = lax.fori_loop(lo, hi, one_round, st)
        n, s, reg, _, rew, _ = st
        regret_ref[:, pl.ds(i, 1)] = reg[:, None]
        reward_ref[:, pl.ds(i, 1)] = rew[:, None]
        pulls_ref[:, pl.ds(i * Kp, Kp)] = n.astype(_I)
        return st, hi

    st0 = (zk, zk, zb, zb, zb, zb)
    lax.fori_loop(0, ks.n_rec, segment, (st0, jnp.int32(0)))


# ----------------------------------------------------------------------------- the call
def build(ks: KernelSpec, n_pad: int):
    """``f(mu[Kp], rec[r_pad], ke0, ke1, kp0, kp1 [n_pad]) -> (regret, reward [n_pad, r_pad],
    pulls [n_pad, r_pad * Kp])``: the ``pallas_call`` of one kernel over ``n_pad // block``
    programs."""
    from jax.experimental.pallas import triton as pltriton

    B, Kp, Rp = ks.block, ks.k_pad, ks.r_pad
    runs = pl.BlockSpec((B,), lambda i: (i,))
    whole = lambda n: pl.BlockSpec((n,), lambda i: (0,))
    rows = lambda w: pl.BlockSpec((B, w), lambda i: (i, 0))
    out_shape = (jax.ShapeDtypeStruct((n_pad, Rp), _F), jax.ShapeDtypeStruct((n_pad, Rp), _F),
                 jax.ShapeDtypeStruct((n_pad, Rp * Kp), _I))
    return pl.pallas_call(
        functools.partial(_classic_kernel, ks),
        grid=(n_pad // B,),
        in_specs=[whole(Kp), whole(Rp), runs, runs, runs, runs],
        out_specs=(rows(Rp), rows(Rp), rows(Rp * Kp)),
        out_shape=out_shape,
        interpret=ks.interpret,
        compiler_params=pltriton.CompilerParams(num_warps=ks.num_warps, num_stages=1),
        name=f"jaxbandits_fused_{ks.kind}",
    )
