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
    r_pad: int  # record columns (= n_rec: columns are stored one at a time, so no power of two is needed)
    block: int  # runs per program
    world: tuple = ()  # ("bernoulli",): no delay, attributed; ("conversions",): the calendar kernel
    interpret: bool = False
    num_warps: int = 4
    replay: int = 0  # tests: > 0 reads (u_t, v_t, tie_t) from [runs, replay] arrays instead of threefry
    layout: str = "lanes"  # "lanes": jaxbandits.fused.lanes; "tiles": this module's [block, Kp] kernels

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


def _classic_action(ks: KernelSpec, n, s, t, kp0, kp1, arm, valid, tie):
    """The action of a classic policy: argmax of its index with random ties, or (uniform random)
    the inverse-CDF draw ``min(K-1, #{a : cumsum(p)_a < u cumsum(p)_K})`` of conventions §8 from
    the same uniform."""
    if ks.kind == "random":
        p = jnp.where(valid, _F(1.0 / ks.n_arms), _F(0.0))
        c = jnp.cumsum(p, axis=1)
        last = jnp.max(c, axis=1, keepdims=True)
        return jnp.minimum(jnp.sum((c < tie[:, None] * last).astype(_I), axis=1), ks.n_arms - 1)
    return _argmax_random_tie(_classic_index(ks, n, s, t, kp0, kp1, arm), valid, tie, arm)


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
def _words(ks, replay_refs, ke0, ke1, kp0, kp1, t):
    """The round's world uniforms ``(u_t, v_t)`` and tie uniform: threefry of ``(t, 0)`` under
    ``k_env`` and of ``(t, TIE)`` under ``k_pol``; in replay mode (tests) read from the inputs."""
    if ks.replay:
        ur, vr, wr = replay_refs
        col = pl.ds(t, 1)
        return ur[:, col][:, 0], vr[:, col][:, 0], wr[:, col][:, 0]
    tu = t.astype(_U)
    u, v = rng.uniforms2(ke0, ke1, tu, _U(0))
    tie, _ = rng.uniforms2(kp0, kp1, tu, _U(TIE))
    return u, v, tie


def _split_refs(ks, refs, n_in):
    """``(inputs, replay inputs, outputs)`` of a kernel's refs."""
    n_rep = 3 if ks.replay else 0
    return refs[:n_in], refs[n_in:n_in + n_rep], refs[n_in + n_rep:]


def _classic_kernel(ks: KernelSpec, *refs):
    (mu_ref, rec_ref, ke0_ref, ke1_ref, kp0_ref, kp1_ref), rep, (regret_ref, reward_ref, pulls_ref) = \
        _split_refs(ks, refs, 6)
    _classic_body(ks, mu_ref, rec_ref, ke0_ref, ke1_ref, kp0_ref, kp1_ref, rep, regret_ref, reward_ref, pulls_ref)


def _block_setup(ks: KernelSpec, mu_ref, ke0_ref, ke1_ref, kp0_ref, kp1_ref):
    """What every kernel reads first: the block's world and policy key words, the arm means
    broadcast over the block's runs, the arm index, the mask of real (unpadded) arms and the best
    mean of each run."""
    B, Kp, K = ks.block, ks.k_pad, ks.n_arms
    mu = jnp.broadcast_to(mu_ref[...][None, :], (B, Kp))
    arm = lax.broadcasted_iota(_I, (B, Kp), 1)
    valid = arm < K
    best = jnp.max(jnp.where(valid, mu, -INF), axis=1)
    return ke0_ref[...], ke1_ref[...], kp0_ref[...], kp1_ref[...], mu, arm, valid, best


def _classic_body(ks: KernelSpec, mu_ref, rec_ref, ke0_ref, ke1_ref, kp0_ref, kp1_ref, rep,
                  regret_ref, reward_ref, pulls_ref):
    """UCB1, KL-UCB, Beta-Bernoulli and Gaussian Thompson on a Bernoulli world without delay,
    attributed channel: a play's record arrives in its own round (conventions §2, step 5)."""
    B, Kp = ks.block, ks.k_pad
    ke0, ke1, kp0, kp1, mu, arm, valid, best = _block_setup(ks, mu_ref, ke0_ref, ke1_ref, kp0_ref, kp1_ref)
    zb = jnp.zeros((B,), _F)
    zk = jnp.zeros((B, Kp), _F)

    def one_round(t, st):
        n, s, reg, reg_c, rew, rew_c = st
        u, _, w = _words(ks, rep, ke0, ke1, kp0, kp1, t)  # world (u_t, v_t), the tie word
        a = _classic_action(ks, n, s, t, kp0, kp1, arm, valid, w)
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
        in_specs=[whole(Kp), whole(Rp), runs, runs, runs, runs] + [rows(ks.replay)] * (3 if ks.replay else 0),
        out_specs=(rows(Rp), rows(Rp), rows(Rp * Kp)),
        out_shape=out_shape,
        interpret=ks.interpret,
        compiler_params=pltriton.CompilerParams(num_warps=ks.num_warps, num_stages=1),
        name=f"jaxbandits_fused_{ks.kind}",
    )


# ----------------------------------------------------------------------------- delayed conversions
def delay_value(law: tuple, v):
    """``floor(F^-1(v))`` of a closed-form delay law as float32 (``law`` = ``(name, params...)``
    with Python floats; the formulas of :mod:`jaxbandits.delays`). Values beyond the window are
    compared as floats, so a huge or infinite draw is simply "not within the window"."""
    name = law[0]
    if name == "fixed":
        return jnp.full(v.shape, _F(law[1]))
    if name == "uniform":
        lo, hi = law[1], law[2]
        return jnp.minimum(_F(lo) + jnp.floor(v * _F(hi - lo + 1)), _F(hi))
    if name == "geometric":  # smallest n with 1 - rho^(n+1) >= v
        if law[1] == -INF:
            return jnp.zeros(v.shape, _F)
        return jnp.maximum(jnp.ceil(jnp.log1p(-v) / _F(law[1])) - 1.0, 0.0)
    if name == "exponential":
        return jnp.floor(_F(-law[1]) * jnp.log1p(-v))
    if name == "weibull":  # scale (-log(1 - v))^(1/shape)
        k, lam = law[1], law[2]
        return jnp.floor(_F(lam) * jnp.exp(jnp.log(-jnp.log1p(-v)) / _F(k)))
    if name == "log_normal":  # exp(mu + sigma Phi^-1(v)), Phi^-1(v) = sqrt(2) erfinv(2v - 1)
        z = _F(2.0**0.5) * lax.erf_inv(_F(2.0) * v - _F(1.0))
        return jnp.floor(jnp.exp(_F(law[1]) + _F(law[2]) * z))
    if name == "pareto":  # scale ((1 - v)^(-1/alpha) - 1)
        return jnp.floor(_F(law[2]) * jnp.expm1(-jnp.log1p(-v) / _F(law[1])))
    raise ValueError(f"no closed-form fused delay for {name!r}")


def _delayed_kernel(ks: KernelSpec, *refs):
    ins, rep, outs = _split_refs(ks, refs, 7)
    _delayed_body(ks, *ins, rep, *outs)


def _delayed_body(ks: KernelSpec, mu_ref, rec_ref, tau_ref, ke0_ref, ke1_ref, kp0_ref, kp1_ref, rep,
                  regret_ref, reward_ref, pulls_ref, dl_ref, lost_ref, ring_ref, cal_ref):
    """DelayedUCB / DelayedKLUCB (Vernade et al. 2017) with the censoring window ``m`` on a
    conversions world and the conversions channel; also UCB1, KL-UCB and the Thompson samplers
    there (their index on plays and arrived conversions; ``Ñ`` then only serves ``L(t)``).

    Pending conversions: a *calendar* in device memory, one row of ``NW = Kp / 4`` words per
    arrival round modulo ``Wp`` (a power of two > ``m``), each word packing four arms' 8-bit counts.
    A play that converts with delay ``1 <= d <= m`` adds one to its arm's count at row
    ``(t + d) mod Wp`` (a per-run scatter into its own column); round ``t`` reads and clears row
    ``t mod Wp``; ``d = 0`` arrives at once. A count that would pass 255 is dropped and counted in
    ``lost_to_W`` (a Poisson-binomial count of mean <= 1 per round: never in practice).

    ``Ñ`` as the scan policy keeps it: a ring of the last ``H = min(m, T)`` arms (device memory,
    row ``s mod Wp``), the closed pulls ``nc`` (weight ``tau_H``), and either the geometric O(K)
    recursion (geometric and exponential laws) or the direct sum over the ring with the table
    ``tau_0..tau_H`` (the other laws: O(H K) per round).
    """
    B, Kp, K = ks.block, ks.k_pad, ks.n_arms
    m, H, T = ks.p("window"), ks.p("H"), ks.p("T")
    Wp = ks.p("Wp")
    NW = Kp // 4
    law, log_rho = ks.p("law"), ks.p("log_rho")
    eps, index = ks.p("eps", 0.0), ks.kind
    ke0, ke1, kp0, kp1, mu, arm, valid, best = _block_setup(ks, mu_ref, ke0_ref, ke1_ref, kp0_ref, kp1_ref)
    gaps = jnp.where(valid, best[:, None] - mu, 0.0)
    col = lax.broadcasted_iota(_I, (B,), 0)
    word_of = arm // 4
    shift = ((arm - word_of * 4) * 8).astype(_U)
    zb = jnp.zeros((B,), _F)
    zk = jnp.zeros((B, Kp), _F)
    Wm = jnp.int32(Wp - 1)  # Wp is a power of two: s mod Wp = s & (Wp - 1) for s >= 0

    # Every access to the calendar and the ring is a (B,)-vector gather or scatter with the same
    # index form, (row vector, column iota): each run's column is then read and written by the same
    # lanes throughout, so program order alone orders a write before a later read of it.
    def rows(r):
        return jnp.broadcast_to(r, (B,))

    def clear(j, c):
        cal_ref[rows(j), col] = jnp.zeros((B,), _I)
        return c

    lax.fori_loop(0, Wp * NW, clear, jnp.int32(0))

    if log_rho is not None:  # in float32, as jaxbandits.ring.discounted_window / discounted_value
        lr = jnp.full((B, Kp), log_rho, _F)
        rho, rho_m1, tau_m = jnp.exp(lr), jnp.exp(_F(m + 1) * lr), -jnp.expm1(_F(m + 1) * lr)

    def n_tilde_table(t, nc):
        def add(a, acc):
            s = t - a
            row = jnp.maximum(s, 0) & Wm
            arms = ring_ref[rows(row), col]
            w = jnp.where(s >= 0, tau_ref[pl.ds(a, 1)][0], _F(0.0))
            return acc + jnp.where(arm == arms[:, None], w, 0.0)

        return lax.fori_loop(0, H, add, tau_ref[pl.ds(H, 1)][0] * nc)

    def one_round(t, st):
        n, s, nt, o, w, nc, leave, reg, reg_c, rew, rew_c, lost = st
        u, v, tie = _words(ks, rep, ke0, ke1, kp0, kp1, t)  # world (u_t, v_t), the tie word
        if index in ("delayed_ucb", "delayed_klucb"):  # beta(t) = (1 + eps) log(t + 1): conventions §1
            beta = _F(1.0 + eps) * jnp.log(t.astype(_F) + _F(1.0))
            if index == "delayed_ucb":
                ok = nt > 0
                safe = jnp.where(ok, nt, _F(1.0))
                idx = jnp.where(ok, s / safe + jnp.sqrt(beta * n / _F(2.0)) / safe, INF)
            else:
                theta = s / jnp.where(nt > 0, nt, _F(1.0))
                idx = M.poisson_kl_ucb(theta, nt, beta, ks.p("cap"), ks.p("iters"))
            a_idx = _argmax_random_tie(idx, valid, tie, arm)
            a = jnp.where(t < K, lax.rem(t, jnp.int32(K)), a_idx)  # rounds 1..K play each arm once
        else:  # a classic policy on the conversions channel: plays counted when made, conversions
            # when they arrive (pending plays count as failures: jaxbandits.policies.classic)
            a = _classic_action(ks, n, s, t, kp0, kp1, arm, valid, tie)
        oh_b = arm == a[:, None]
        oh = oh_b.astype(_F)
        mu_a = jnp.sum(jnp.where(oh_b, mu, 0.0), axis=1)
        # outcome: conversion and its delay (conventions §8: one u, one v per round)
        conv = u < mu_a
        d = delay_value(law, v)
        inwin = conv & (d <= _F(m))
        di = jnp.where(inwin, d, 0.0).astype(_I)
        now = inwin & (di == 0)
        later = inwin & (di > 0) & (di <= T - 1 - t)  # later than T - 1: never (and never aliased)
        # the calendar: read and clear row t, then insert this play at row t + d (d >= 1)
        slot = (t & Wm) * NW
        got = zk
        for j in range(NW):
            wd = cal_ref[rows(slot + j), col].astype(_U)
            cnt = ((wd[:, None] >> shift) & _U(255)).astype(_F)
            got = got + jnp.where(word_of == j, cnt, 0.0)
            cal_ref[rows(slot + j), col] = jnp.zeros((B,), _I)
        row = (((t + di) & Wm) * NW + a // 4)
        old = cal_ref[row, col].astype(_U)
        sh = ((a & 3) * 8).astype(_U)
        full = ((old >> sh) & _U(255)) == _U(255)
        add = later & ~full
        cal_ref[row, col] = (old + jnp.where(add, _U(1) << sh, _U(0))).astype(_I)
        lost = lost + (later & full).astype(_I)
        got = got + jnp.where(now[:, None], oh, 0.0)
        # update (the scan policy's order: the pull closing now, write the ring, read the next)
        n = n + oh
        s = s + got
        e_old = (arm == leave[:, None]).astype(_F)
        nc = nc + e_old
        ring_ref[rows(t & Wm), col] = a
        nxt = t + 1 - H
        leave = jnp.where(nxt >= 0, ring_ref[rows(jnp.maximum(nxt, 0) & Wm), col], -1)
        if log_rho is not None:  # geometric: o <- rho o - rho^(m+1) old + rho new (jaxbandits.ring)
            o = rho * o - rho_m1 * e_old + rho * oh
            w = w - e_old + oh
            nt = tau_m * nc + w - o
        else:
            nt = n_tilde_table(t, nc)
        reg, reg_c = _kahan(reg, reg_c, best - mu_a)
        rew, rew_c = _kahan(rew, rew_c, conv.astype(_F))
        return n, s, nt, o, w, nc, leave, reg, reg_c, rew, rew_c, lost

    def segment(i, carry):
        st, lo = carry
        hi = rec_ref[i] + 1
        st = lax.fori_loop(lo, hi, one_round, st)
        n, nt, reg, rew = st[0], st[2], st[7], st[9]
        regret_ref[:, pl.ds(i, 1)] = reg[:, None]
        reward_ref[:, pl.ds(i, 1)] = rew[:, None]
        pulls_ref[:, pl.ds(i * Kp, Kp)] = n.astype(_I)
        dl_ref[:, pl.ds(i, 1)] = jnp.sum(gaps * nt, axis=1)[:, None]  # L(t) = sum_k Delta_k Ñ_k(t)
        return st, hi

    st0 = (zk, zk, zk, zk, zk, zk, jnp.full((B,), -1, _I), zb, zb, zb, zb, jnp.zeros((B,), _I))
    st, _ = lax.fori_loop(0, ks.n_rec, segment, (st0, jnp.int32(0)))
    lost_ref[...] = st[-1]


def build_delayed(ks: KernelSpec, n_pad: int):
    """``f(mu, rec, tau[Wp], ke0, ke1, kp0, kp1) -> (regret, reward, pulls, delayed_regret, lost,
    ring, calendar)``: the last two are the kernel's device-memory work space."""
    from jax.experimental.pallas import triton as pltriton

    B, Kp, Rp, Wp = ks.block, ks.k_pad, ks.r_pad, ks.p("Wp")
    NW = Kp // 4
    runs = pl.BlockSpec((B,), lambda i: (i,))
    whole = lambda n: pl.BlockSpec((n,), lambda i: (0,))
    rows = lambda w: pl.BlockSpec((B, w), lambda i: (i, 0))
    cols = lambda h: pl.BlockSpec((h, B), lambda i: (0, i))
    S = jax.ShapeDtypeStruct
    out_shape = (S((n_pad, Rp), _F), S((n_pad, Rp), _F), S((n_pad, Rp * Kp), _I), S((n_pad, Rp), _F),
                 S((n_pad,), _I), S((Wp, n_pad), _I), S((Wp * NW, n_pad), _I))
    return pl.pallas_call(
        functools.partial(_delayed_kernel, ks),
        grid=(n_pad // B,),
        in_specs=[whole(Kp), whole(Rp), whole(Wp), runs, runs, runs, runs]
        + [rows(ks.replay)] * (3 if ks.replay else 0),
        out_specs=(rows(Rp), rows(Rp), rows(Rp * Kp), rows(Rp), runs, cols(Wp), cols(Wp * NW)),
        out_shape=out_shape,
        interpret=ks.interpret,
        compiler_params=pltriton.CompilerParams(num_warps=ks.num_warps, num_stages=1),
        name=f"jaxbandits_fused_{ks.kind}",
    )
