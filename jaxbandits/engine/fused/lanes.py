"""Internal: not public API (the fused backend's implementation; use :func:`jaxbandits.simulate`).

The lanes-layout kernels: runs on lanes, arms unrolled (docs/fused.md, "The layout").

One program owns ``block`` runs; each run is one lane of every vector. An arm's statistics are a
separate ``[block]`` vector (``K`` Python-unrolled vectors per statistic), so a round is pure
elementwise work: the argmax is ``K - 1`` elementwise compares, the update ``K`` selects, and no
operation reduces across lanes (the earlier kernels kept ``[block, Kp]`` tiles, ``K`` padded to a
power of two, and reduced every row: UCB1's ran at 1.5e10 run-steps/s on an H200 where this one runs
at 5.7e10, docs/benchmarks.md). Records are
written as rows of ``[record point, run]`` arrays: one coalesced store per statistic and record point.

The policy's math is the policy's own: the index of an arm is the elementwise function its
module exports and its ``act`` calls (:func:`jaxbandits.policies.classic.ucb1_index`,
:func:`~jaxbandits.policies.classic.kl_ucb_index`, the posteriors
:func:`~jaxbandits.policies.classic.beta_posterior` and
:func:`~jaxbandits.policies.classic.gaussian_posterior`), traced here on ``[block]`` vectors,
with the tie rule of :func:`jaxbandits.core.mathlib.argmax_random_tie`. Only the random numbers are
the kernel's (:mod:`jaxbandits.engine.fused.rng`, counter-based).

Round ``t`` (0-based) of a run, Bernoulli world, attributed channel, no delay (conventions §2):

1. one threefry call under the world key gives ``(u_t, v_t)`` at counter ``(t, 0)``; ``u_t``
   decides the reward (``r = 1{u_t < mu[A]}``, conventions §8), ``v_t`` (the delay uniform, unused
   without delays) breaks exact ties of the argmax and draws uniform random's arm. Both are the
   world's words: every policy of an experiment reads the same (common random numbers);
2. the policy's index of each arm, its argmax (ties: the ``(floor(v c) + 1)``-th tied arm);
   Thompson samplers draw from the policy key at counters ``(t, i)``;
3. the update of the played arm, pseudo-regret and reward with Kahan compensation (conventions §9).
"""
from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
from jax import lax
from jax.experimental import pallas as pl

from ...core import mathlib as M
from ...policies import classic as P
from . import rng

__all__ = ["build", "argmax_lanes", "index_lanes", "LANES_KINDS"]

_F = jnp.float32
_I = jnp.int32
_U = jnp.uint32

#: the policies with a lanes kernel (fused.registry kinds)
LANES_KINDS = ("ucb1", "kl_ucb", "thompson", "gaussian_ts", "random")


def argmax_lanes(idx, u):
    """The argmax over the arms of ``K`` vectors ``idx[k]`` (``[B]`` each), exact ties broken by the
    uniform ``u[B]``: the ``(floor(u c) + 1)``-th tied arm, ``c`` the number of ties, as
    :func:`jaxbandits.core.mathlib.argmax_random_tie` on each run's ``[K]`` vector."""
    best = idx[0]
    for x in idx[1:]:
        best = jnp.maximum(best, x)
    ties = [x >= best for x in idx]
    c = ties[0].astype(_I)
    for tk in ties[1:]:
        c = c + tk.astype(_I)
    j = jnp.floor(u * c.astype(_F)).astype(_I)  # the (j+1)-th tied arm
    a = jnp.zeros(u.shape, _I)
    seen = jnp.zeros(u.shape, _I)
    found = jnp.zeros(u.shape, bool)
    for k, tk in enumerate(ties):
        seen = seen + tk.astype(_I)
        hit = tk & (seen > j) & ~found
        a = jnp.where(hit, _I(k), a)
        found = found | hit
    return a


def _select(j, values):
    """``values[j]`` per lane from a Python list of ``[B]`` vectors (a chain of selects)."""
    out = values[0]
    for q in range(1, len(values)):
        out = jnp.where(j == q, values[q], out)
    return out


def index_lanes(ks, n, s, t, kp0, kp1):
    """The index of every arm (``K`` vectors ``[B]``) of the policy ``ks.kind`` at round ``t``
    (0-based) from its per-arm counts ``n`` and reward sums ``s``: the policy module's own
    elementwise functions, called on one arm's lanes at a time."""
    kind, K = ks.kind, ks.n_arms
    tf = t.astype(_F) + _F(1.0)  # the policies' 1-based round (conventions §1)
    if kind == "ucb1":
        return [P.ucb1_index(s[k], n[k], tf, ks.p("alpha", 2.0)) for k in range(K)]
    if kind == "kl_ucb":
        return [P.kl_ucb_index(s[k], n[k], tf, ks.p("c", 0.0), ks.p("iters", 4)) for k in range(K)]
    c0 = t.astype(_U)
    if kind == "gaussian_ts":
        post = [P.gaussian_posterior(s[k], n[k], ks.p("sigma", 1.0), ks.p("prior_mean", 0.0), ks.p("prior_var", 1e4))
                for k in range(K)]
        z = []
        for j in range((K + 1) // 2):  # Box-Muller pairs: both normals of one threefry call
            z += list(rng.normal_pair(kp0, kp1, c0, _U(j)))
        return [P.gaussian_index(m, prec, z[k]) for k, (m, prec) in enumerate(post)]
    if kind == "thompson":
        shapes = []
        for k in range(K):
            a, b = P.beta_posterior(s[k], n[k], ks.p("prior_a", 1.0), ks.p("prior_b", 1.0))
            shapes += [a, b]
        g = rng.gammas_in_sequence(shapes, kp0, kp1, c0, ks.p("max_proposals", rng.max_proposals(2 * K)))
        return [M.beta_from_gammas(g[2 * k], g[2 * k + 1]) for k in range(K)]
    raise ValueError(f"no lanes kernel for {kind!r}")


def _lanes_kernel(ks, *refs):
    n_rep = 3 if ks.replay else 0
    (mu_ref, rec_ref, ke0_ref, ke1_ref, kp0_ref, kp1_ref) = refs[:6]
    rep = refs[6:6 + n_rep]
    regret_ref, reward_ref, pulls_ref = refs[6 + n_rep:]
    B, K = ks.block, ks.n_arms
    ke0, ke1, kp0, kp1 = ke0_ref[...], ke1_ref[...], kp0_ref[...], kp1_ref[...]
    mus = [mu_ref[pl.ds(k, 1)][0] for k in range(K)]
    best_mu = mus[0]
    for m in mus[1:]:
        best_mu = jnp.maximum(best_mu, m)
    zb = jnp.zeros((B,), _F)

    def words(t):
        if ks.replay:  # tests: the scan path's reward and tie uniforms, [rounds, runs]
            ur, _, wr = rep
            return ur[pl.ds(t, 1), :][0], wr[pl.ds(t, 1), :][0]
        return rng.uniforms2(ke0, ke1, t.astype(_U), _U(0))

    def one_round(t, st):
        n, s, reg, reg_c, rew, rew_c = st
        u, v = words(t)
        if ks.kind == "random":
            a = _uniform_action(K, v)
        else:
            a = argmax_lanes(index_lanes(ks, n, s, t, kp0, kp1), v)
        mu_a = _select(a, [jnp.broadcast_to(m, (B,)) for m in mus])
        r = (u < mu_a).astype(_F)
        hit = [a == k for k in range(K)]
        n = [n[k] + hit[k].astype(_F) for k in range(K)]
        s = [s[k] + jnp.where(hit[k], r, _F(0.0)) for k in range(K)]
        reg, reg_c = M.kahan_add(reg, reg_c, best_mu - mu_a)
        rew, rew_c = M.kahan_add(rew, rew_c, r)
        return n, s, reg, reg_c, rew, rew_c

    def segment(i, carry):
        st, lo = carry
        hi = rec_ref[pl.ds(i, 1)][0] + 1
        st = lax.fori_loop(lo, hi, one_round, st)
        n, _, reg, _, rew, _ = st
        regret_ref[pl.ds(i, 1), :] = reg[None, :]
        reward_ref[pl.ds(i, 1), :] = rew[None, :]
        for k in range(K):
            pulls_ref[pl.ds(i * K + k, 1), :] = n[k].astype(_I)[None, :]
        return st, hi

    st0 = ([zb] * K, [zb] * K, zb, zb, zb, zb)
    lax.fori_loop(0, ks.n_rec, segment, (st0, jnp.int32(0)))


def _whole_blocks(n_pad, block):
    if n_pad % block:
        raise ValueError(f"the fused kernels run whole blocks: {n_pad} padded runs is not a multiple of the "
                         f"block of {block} runs")


def build(ks, n_pad: int):
    """``f(mu[Kp], rec[R], ke0, ke1, kp0, kp1 [n_pad] (, replay u, v, tie [rounds, n_pad])) ->
    (regret [R, n_pad], reward [R, n_pad], pulls [R * K, n_pad])``: the ``pallas_call`` of one lanes
    kernel over ``n_pad // block`` programs. Row ``i * K + k`` of ``pulls`` is arm ``k``'s pulls at
    record point ``i``."""
    from jax.experimental.pallas import triton as pltriton

    B, K, R = ks.block, ks.n_arms, ks.r_pad
    _whole_blocks(n_pad, B)
    runs = pl.BlockSpec((B,), lambda i: (i,))
    whole = lambda n: pl.BlockSpec((n,), lambda i: (0,))
    cols = lambda h: pl.BlockSpec((h, B), lambda i: (0, i))
    S = jax.ShapeDtypeStruct
    out_shape = (S((R, n_pad), _F), S((R, n_pad), _F), S((R * K, n_pad), _I))
    return pl.pallas_call(
        functools.partial(_lanes_kernel, ks),
        grid=(n_pad // B,),
        in_specs=[whole(ks.k_pad), whole(R), runs, runs, runs, runs] + [cols(ks.replay)] * (3 if ks.replay else 0),
        out_specs=(cols(R), cols(R), cols(R * K)),
        out_shape=out_shape,
        interpret=ks.interpret,
        compiler_params=pltriton.CompilerParams(num_warps=ks.num_warps, num_stages=1),
        name=f"jaxbandits_lanes_{ks.kind}",
    )


# ----------------------------------------------------------------------------- delayed conversions
def _lanes_delayed_kernel(ks, *refs):
    """DelayedUCB / DelayedKLUCB (Vernade et al. 2017) with the censoring window ``m`` on a
    conversions world and the conversions channel, and the classic policies there (their index on
    plays and arrived conversions), in the lanes layout: every per-arm statistic (plays ``N``,
    conversions ``S``, ``Ñ`` and its window sums) a ``[block]`` vector per arm.

    Pending conversions wait in a *calendar* in device memory: row ``r`` of ``NW = ceil(K / 4)``
    words per arrival round modulo ``Wp`` (a power of two > ``m``), each word packing four arms'
    8-bit counts, one column per run. A play converting with delay ``1 <= d <= m`` adds one to its
    arm's count in row ``(t + d) mod Wp``; round ``t`` reads and clears row ``t mod Wp``; ``d = 0``
    arrives at once. A count that would pass 255 is dropped and counted in ``lost_to_W`` (never
    in practice: a Poisson-binomial count of mean <= 1 per round). ``Ñ`` as the scan policy keeps
    it: a ring of the last ``H = min(m, T)`` arms (row ``s mod Wp``), the closed pulls ``nc`` at
    weight ``tau_H``, and either the geometric O(K) recursion of :mod:`jaxbandits.core.ring` or the
    direct sum over the ring with the table ``tau_0 .. tau_H`` (the other laws: O(H K) a round).
    The indices are :mod:`jaxbandits.policies.conversions`' ``delayed_ucb_index`` and
    ``delayed_klucb_index``; the tie word is the policy key's ``(t, TIE)`` (``v_t`` draws the delay)."""
    from ...policies import conversions as CV
    from ...core.ring import discounted_value, discounted_window
    from .kernels import TIE

    n_rep = 3 if ks.replay else 0
    mu_ref, rec_ref, tau_ref, ke0_ref, ke1_ref, kp0_ref, kp1_ref = refs[:7]
    rep = refs[7:7 + n_rep]
    regret_ref, reward_ref, pulls_ref, dl_ref, lost_ref, ring_ref, cal_ref = refs[7 + n_rep:]
    B, K = ks.block, ks.n_arms
    m, H, T, Wp = ks.p("window"), ks.p("H"), ks.p("T"), ks.p("Wp")
    NW = (K + 3) // 4
    law, log_rho = ks.p("law"), ks.p("log_rho")
    eps, kind = ks.p("eps", 0.0), ks.kind
    ke0, ke1, kp0, kp1 = ke0_ref[...], ke1_ref[...], kp0_ref[...], kp1_ref[...]
    mus = [mu_ref[pl.ds(k, 1)][0] for k in range(K)]
    best_mu = mus[0]
    for x in mus[1:]:
        best_mu = jnp.maximum(best_mu, x)
    gaps = [best_mu - x for x in mus]
    col = lax.broadcasted_iota(_I, (B,), 0)
    zb = jnp.zeros((B,), _F)
    Wm = jnp.int32(Wp - 1)
    rows = lambda r: jnp.broadcast_to(r, (B,))
    lr = None if log_rho is None else jnp.float32(log_rho)

    def clear(j, c):
        cal_ref[rows(j), col] = jnp.zeros((B,), _I)
        return c

    lax.fori_loop(0, Wp * NW, clear, jnp.int32(0))

    def words(t):
        if ks.replay:
            ur, vr, wr = rep
            return ur[pl.ds(t, 1), :][0], vr[pl.ds(t, 1), :][0], wr[pl.ds(t, 1), :][0]
        tu = t.astype(_U)
        u, v = rng.uniforms2(ke0, ke1, tu, _U(0))
        tie, _ = rng.uniforms2(kp0, kp1, tu, _U(TIE))
        return u, v, tie

    def n_tilde_table(t, nc):
        def add(a, acc):
            s = t - a
            arms = ring_ref[rows(jnp.maximum(s, 0) & Wm), col]
            w = jnp.where(s >= 0, tau_ref[pl.ds(a, 1)][0], _F(0.0))
            return [acc[k] + jnp.where(arms == k, w, _F(0.0)) for k in range(K)]

        tau_h = tau_ref[pl.ds(H, 1)][0]
        return lax.fori_loop(0, H, add, [tau_h * nc[k] for k in range(K)])

    def one_round(t, st):
        n, s, nt, o, w, nc, leave, reg, reg_c, rew, rew_c, lost = st
        u, v, tie = words(t)
        if kind in ("delayed_ucb", "delayed_klucb"):  # beta(t) = (1 + eps) log(t + 1): conventions §1
            beta = CV.exploration(t, eps)
            if kind == "delayed_ucb":
                idx = [CV.delayed_ucb_index(s[k], n[k], nt[k], beta) for k in range(K)]
            else:
                idx = [CV.delayed_klucb_index(s[k], nt[k], beta, ks.p("cap"), ks.p("iters")) for k in range(K)]
            a = jnp.where(CV.round_robin(t, K), lax.rem(t, jnp.int32(K)), argmax_lanes(idx, tie))  # rounds 1..K: each arm once
        elif kind == "random":
            a = _uniform_action(K, tie)
        else:  # a classic policy: plays counted when made, conversions when they arrive
            a = argmax_lanes(index_lanes(ks, n, s, t, kp0, kp1), tie)
        hit = [a == k for k in range(K)]
        oh = [h.astype(_F) for h in hit]
        mu_a = _select(a, [jnp.broadcast_to(x, (B,)) for x in mus])
        conv = u < mu_a
        d = law.ppf_float(v)  # the law's own inverse CDF (jaxbandits.core.delays), float32
        inwin = conv & (d <= _F(m))
        di = jnp.where(inwin, d, 0.0).astype(_I)
        now = inwin & (di == 0)
        later = inwin & (di > 0) & (di <= T - 1 - t)  # later than T - 1: never (and never aliased)
        # the calendar: read and clear row t, then insert this play at row t + d (d >= 1)
        slot = (t & Wm) * NW
        got = []
        for j in range(NW):
            wd = cal_ref[rows(slot + j), col].astype(_U)
            for k in range(4 * j, min(4 * j + 4, K)):
                got.append(zb + ((wd >> _U(8 * (k - 4 * j))) & _U(255)).astype(_F))
            cal_ref[rows(slot + j), col] = jnp.zeros((B,), _I)
        row = ((t + di) & Wm) * NW + a // 4
        old = cal_ref[row, col].astype(_U)
        sh = ((a & 3) * 8).astype(_U)
        full = ((old >> sh) & _U(255)) == _U(255)
        cal_ref[row, col] = (old + jnp.where(later & ~full, _U(1) << sh, _U(0))).astype(_I)
        lost = lost + (later & full).astype(_I)
        got = [got[k] + jnp.where(now, oh[k], _F(0.0)) for k in range(K)]
        # update (the scan policy's order: the pull closing now, write the ring, read the next)
        n = [n[k] + oh[k] for k in range(K)]
        s = [s[k] + got[k] for k in range(K)]
        e_old = [(leave == k).astype(_F) for k in range(K)]
        nc = [nc[k] + e_old[k] for k in range(K)]
        ring_ref[rows(t & Wm), col] = a
        nxt = t + 1 - H
        leave = jnp.where(nxt >= 0, ring_ref[rows(jnp.maximum(nxt, 0) & Wm), col], -1)
        if lr is not None:  # geometric delays: jaxbandits.core.ring's window recursion
            ow = [discounted_window(o[k], w[k], oh[k], e_old[k], lr, m) for k in range(K)]
            o, w = [x[0] for x in ow], [x[1] for x in ow]
            nt = [discounted_value(nc[k], w[k], o[k], lr, m) for k in range(K)]
        else:
            nt = n_tilde_table(t, nc)
        reg, reg_c = M.kahan_add(reg, reg_c, best_mu - mu_a)
        rew, rew_c = M.kahan_add(rew, rew_c, conv.astype(_F))
        return n, s, nt, o, w, nc, leave, reg, reg_c, rew, rew_c, lost

    def segment(i, carry):
        st, lo = carry
        hi = rec_ref[pl.ds(i, 1)][0] + 1
        st = lax.fori_loop(lo, hi, one_round, st)
        n, nt, reg, rew = st[0], st[2], st[7], st[9]
        regret_ref[pl.ds(i, 1), :] = reg[None, :]
        reward_ref[pl.ds(i, 1), :] = rew[None, :]
        for k in range(K):
            pulls_ref[pl.ds(i * K + k, 1), :] = n[k].astype(_I)[None, :]
        dl = gaps[0] * nt[0]  # L(t) = sum_k Delta_k Ñ_k(t)
        for k in range(1, K):
            dl = dl + gaps[k] * nt[k]
        dl_ref[pl.ds(i, 1), :] = dl[None, :]
        return st, hi

    zk = [zb] * K
    st0 = (zk, zk, zk, zk, zk, zk, jnp.full((B,), -1, _I), zb, zb, zb, zb, jnp.zeros((B,), _I))
    st, _ = lax.fori_loop(0, ks.n_rec, segment, (st0, jnp.int32(0)))
    lost_ref[...] = st[-1]


def _uniform_action(K, v):
    """Uniform random's arm from the uniform ``v``: conventions §8's inverse-CDF draw
    ``min(K - 1, #{a : c_a < v c_K})``, ``c`` the running sums of ``1/K``."""
    p = _F(1.0 / K)
    c, cs = jnp.zeros(v.shape, _F), []
    for _ in range(K):
        c = c + p
        cs.append(c)
    a = jnp.zeros(v.shape, _I)
    for ck in cs:
        a = a + (ck < v * cs[-1]).astype(_I)
    return jnp.minimum(a, K - 1)


def build_delayed(ks, n_pad: int):
    """``f(mu, rec, tau[Wp], ke0, ke1, kp0, kp1 (, replay u, v, tie [rounds, n_pad])) -> (regret,
    reward [R, n_pad], pulls [R * K, n_pad], delayed_regret [R, n_pad], lost [n_pad], ring [Wp, n_pad],
    calendar [Wp * NW, n_pad])``: the last two are the kernel's device-memory work space."""
    from jax.experimental.pallas import triton as pltriton

    B, K, R, Wp = ks.block, ks.n_arms, ks.r_pad, ks.p("Wp")
    NW = (K + 3) // 4
    _whole_blocks(n_pad, B)
    runs = pl.BlockSpec((B,), lambda i: (i,))
    whole = lambda n: pl.BlockSpec((n,), lambda i: (0,))
    cols = lambda h: pl.BlockSpec((h, B), lambda i: (0, i))
    S = jax.ShapeDtypeStruct
    out_shape = (S((R, n_pad), _F), S((R, n_pad), _F), S((R * K, n_pad), _I), S((R, n_pad), _F),
                 S((n_pad,), _I), S((Wp, n_pad), _I), S((Wp * NW, n_pad), _I))
    return pl.pallas_call(
        functools.partial(_lanes_delayed_kernel, ks),
        grid=(n_pad // B,),
        in_specs=[whole(ks.k_pad), whole(R), whole(Wp), runs, runs, runs, runs]
        + [cols(ks.replay)] * (3 if ks.replay else 0),
        out_specs=(cols(R), cols(R), cols(R * K), cols(R), runs, cols(Wp), cols(Wp * NW)),
        out_shape=out_shape,
        interpret=ks.interpret,
        compiler_params=pltriton.CompilerParams(num_warps=ks.num_warps, num_stages=1),
        name=f"jaxbandits_lanes_{ks.kind}",
    )
