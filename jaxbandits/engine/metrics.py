"""Metrics: running sums carried from round to round, and the records read from them at the
record points (conventions §7). Records are never carried: the driver emits them as scan outputs.
"""
from __future__ import annotations

from typing import Any, NamedTuple

import jax.numpy as jnp
from jax import lax

from ..core import ring
from ..core.mathlib import kahan_add

_F = jnp.float32


class Accum(NamedTuple):
    """Running sums. The four scalar sums are float32 with Kahan compensation, each sum and its
    compensation held as one complex64 element (real part the sum, imaginary part the
    compensation): a round's update is then elementwise, one fused kernel that XLA:CPU does in
    place (as separate arrays it took four kernels and a copy; as one real vector, one kernel and
    a copy of it every round). Pull counts are float32, exact: the horizon is at most 2**24
    (conventions §1).

    Attributes:
        kahan: c64[4], the sums REGRET, EXP_REGRET, REWARD, EXP_REWARD (``sum <p_t, r_t>``,
            adversarial): real part the float32 sum, imaginary part its Kahan compensation.
        pulls: f32[K], the plays of every arm.
        arm_totals: f32[K], the cumulative reward of every arm (adversarial ``G(t)``).
        arm_totals_c: f32[K], the Kahan compensation of ``arm_totals``.
    """

    kahan: Any  # c64[4]: REGRET, EXP_REGRET, REWARD, EXP_REWARD (sum <p_t, r_t>, adversarial);
    #             real part the float32 sum, imaginary part its Kahan compensation
    pulls: Any  # f32[K] plays of every arm
    arm_totals: Any  # f32[K] cumulative reward of every arm (adversarial G(t))
    arm_totals_c: Any


REGRET, EXP_REGRET, REWARD, EXP_REWARD = range(4)


class DelayedRegret(NamedTuple):
    """Vernade et al. (2017) delayed regret ``L(t) = sum_s Delta_{A_s} tau_{min(t-s, m)}`` (eqs. 1, 3),
    kept exactly: geometric laws by O(1) recursions (censored: with a ring of the last ``m`` gaps),
    other laws by a ring of the last ``H`` gaps (``H = m``, or uncensored the length where
    ``1 - tau_H <= 1e-6``); the O(H) sum is taken only at record points. Ring order: write this
    round's gap first, then read the one that leaves the window next round (carried in ``leave``).

    Attributes:
        closed: f32, the sum of the gaps of pulls older than the window.
        win: f32, the sum of the gaps in the window (geometric, censored).
        geo: f32, the sum over the window of ``gap * rho^(age+1)`` (geometric).
        ring: f32[H], the gaps of the last ``H`` pulls, slot ``s mod H``.
        leave: f32, the gap of the pull that leaves the window at the next round.
    """

    closed: Any  # f32 sum of the gaps of pulls older than the window
    win: Any  # f32 sum of the gaps in the window (geometric censored)
    geo: Any  # f32 sum over the window of gap * rho^(age+1) (geometric)
    ring: Any  # f32[H] gaps of the last H pulls, slot s mod H
    leave: Any  # f32 gap of the pull that leaves the window at the next round


class Metrics(NamedTuple):
    """The running sums one run carries (:func:`init`, :func:`update`).

    Attributes:
        acc: the :class:`Accum` sums (regret, reward, pulls, arm totals).
        dl: the :class:`DelayedRegret` state of ``L(t)`` (empty when not tracked).
    """

    acc: Accum
    dl: DelayedRegret


class Records(NamedTuple):
    """What is written at one record point (a scan output, never carried).

    Attributes:
        regret: f32, the pseudo-regret (adversarial: against the best arm of the prefix, realised).
        exp_regret: f32, the regret of the policy's expected reward (``memo.probs``), else
            ``regret``.
        reward: f32, the realised cumulative reward (generated, not arrived).
        pulls: i32[K], the plays of every arm.
        delayed_regret: f32, ``L(t)``, or f32[0] when not tracked.
        arm_totals: f32[K], adversarial worlds: ``G(t)`` of every arm (f32[0] otherwise).
        lost: i32, the records dropped by the channel so far (``lost_to_W``).
    """

    regret: Any  # f32 pseudo-regret (adversarial: vs the best arm on the prefix, realised)
    exp_regret: Any  # f32 regret of the policy's expected reward (memo.probs), else = regret
    reward: Any  # f32 realised cumulative reward (generated, not arrived)
    pulls: Any  # i32[K]
    delayed_regret: Any  # f32 L(t), or f32[0] when not tracked
    arm_totals: Any  # f32[K] adversarial worlds: G(t) of every arm (f32[0] otherwise)
    lost: Any  # i32 records dropped by the channel so far (lost_to_W)


def init(prob) -> Metrics:
    """The running sums before round 0: all zeros.

    Args:
        prob: the :class:`~jaxbandits.engine.round.Problem` (its ``n_arms`` and ``dl_len``).

    Returns:
        The :class:`Metrics` of zeros.

    Examples:
        >>> from jaxbandits import channels, engine, envs
        >>> from jaxbandits.engine import metrics
        >>> from jaxbandits.policies import classic
        >>> prob = engine.problem(envs.bernoulli([0.3, 0.6]), channels.attributed(), classic.ucb1(), 100)
        >>> metrics.init(prob).acc.pulls
        Array([0., 0.], dtype=float32)
    """
    K = prob.spec.n_arms
    z = jnp.zeros((), _F)
    zk = jnp.zeros((K,), _F)
    acc = Accum(jnp.zeros((4,), jnp.complex64), zk, zk, zk)
    return Metrics(acc, DelayedRegret(z, z, z, jnp.zeros((prob.dl_len,), _F), z))


def _dl_update(prob, world, dl: DelayedRegret, t, gap):
    """Advance the L(t) state by the gap of round t's pull."""
    from ..core.delays import geometric_log_rho

    m = prob.spec.feedback.window
    H = prob.dl_len
    if m == 0:
        return dl
    if prob.dl_mode == "geom":
        lr = geometric_log_rho(world.delay)
        if m is None:  # G <- rho (G + gap), L = R - G
            return dl._replace(geo=ring.discounted_total(dl.geo, gap, lr))
        old = jnp.where(t >= m, dl.leave, 0.0)
        geo, win = ring.discounted_window(dl.geo, dl.win, gap, old, lr, m)
        closed = dl.closed + old
        buf = ring.put(dl.ring, t, gap)
        return DelayedRegret(closed, win, geo, buf, ring.get(buf, t + 1))
    old = jnp.where(t >= H, dl.leave, 0.0)
    closed = dl.closed + old
    buf = ring.put(dl.ring, t, gap)
    return DelayedRegret(closed, dl.win, dl.geo, buf, ring.get(buf, t + 1))


def _dl_value(prob, world, dl: DelayedRegret, t, regret):
    """L(t) after round t's update."""
    from ..core.delays import geometric_log_rho

    m = prob.spec.feedback.window
    H = prob.dl_len
    if m == 0:  # only same-round conversions count: L = tau_0 R
        return world.delay.cdf(0) * regret
    if prob.dl_mode == "geom":
        if m is None:
            return regret - dl.geo
        return ring.discounted_value(dl.closed, dl.win, dl.geo, geometric_log_rho(world.delay), m)
    # general law: closed pulls weigh tau_H' (H' = m censored; uncensored tau_H ~ 1 - 1e-6)
    tau = world.delay.cdf_table(H + 1)
    ages, live = ring.ages(t, H)
    return tau[H] * dl.closed + jnp.sum(jnp.where(live, dl.ring * tau[ages], 0.0))


def update(prob, world, met: Metrics, step) -> Metrics:
    """Add one round's :class:`~jaxbandits.engine.round.Step` to the running sums.

    Args:
        prob: the :class:`~jaxbandits.engine.round.Problem`.
        world: the world of the run (``prob.components(params)[0]`` on a grid).
        met: the :class:`Metrics` after round ``t - 1``.
        step: the :class:`~jaxbandits.engine.round.Step` of round ``t``.

    Returns:
        The :class:`Metrics` after round ``t`` (Kahan-compensated sums, pulls, ``L(t)`` state).

    Examples:
        >>> import jax.numpy as jnp
        >>> from jaxbandits import channels, engine, envs
        >>> from jaxbandits.engine import metrics
        >>> from jaxbandits.engine.round import Step
        >>> from jaxbandits.policies import classic
        >>> world = envs.bernoulli([0.3, 0.6])
        >>> prob = engine.problem(world, channels.attributed(), classic.ucb1(), 100)
        >>> step = Step(jnp.int32(0), jnp.int32(0), jnp.float32(1.0), jnp.int32(0), jnp.float32(0.3),
        ...             jnp.float32(0.3), None, None, None)  # round 0: arm 0, reward 1, gap 0.3
        >>> metrics.update(prob, world, metrics.init(prob), step).acc.pulls
        Array([1., 0.], dtype=float32)
    """
    acc = met.acc
    zero = jnp.zeros((), _F)
    if step.arm_rewards is not None:
        arm_totals, arm_totals_c = kahan_add(acc.arm_totals, acc.arm_totals_c, step.arm_rewards)
        vals = jnp.stack([zero, zero, step.reward, step.expected_reward])
    else:
        arm_totals, arm_totals_c = acc.arm_totals, acc.arm_totals_c
        exp_gap = step.expected_gap if prob.policy.memo_probs else zero  # else read as the regret
        vals = jnp.stack([step.gap, exp_gap, step.reward, zero])
    sums, comp = kahan_add(jnp.real(acc.kahan), jnp.imag(acc.kahan), vals)
    pulls = acc.pulls + (jnp.arange(acc.pulls.shape[0]) == step.action).astype(_F)
    acc = Accum(lax.complex(sums, comp), pulls, arm_totals, arm_totals_c)
    dl = _dl_update(prob, world, met.dl, step.t, step.gap) if prob.dl_mode is not None else met.dl
    return Metrics(acc, dl)


def record(prob, world, met: Metrics, t, channel_state) -> Records:
    """The records after round ``t``.

    Args:
        prob: the :class:`~jaxbandits.engine.round.Problem`.
        world: the world of the run.
        met: the :class:`Metrics` after round ``t``.
        t: the round, i32.
        channel_state: the channel's state after round ``t`` (for ``lost_to_W``).

    Returns:
        The :class:`Records` of round ``t``.

    Examples:
        >>> import jax.numpy as jnp
        >>> from jaxbandits import channels, engine, envs
        >>> from jaxbandits.engine import metrics
        >>> from jaxbandits.engine.round import Step
        >>> from jaxbandits.policies import classic
        >>> world = envs.bernoulli([0.3, 0.6])
        >>> prob = engine.problem(world, channels.attributed(), classic.ucb1(), 100)
        >>> step = Step(jnp.int32(0), jnp.int32(0), jnp.float32(1.0), jnp.int32(0), jnp.float32(0.3),
        ...             jnp.float32(0.3), None, None, None)  # round 0: arm 0, reward 1, gap 0.3
        >>> met = metrics.update(prob, world, metrics.init(prob), step)
        >>> rec = metrics.record(prob, world, met, 0, prob.channel.init(prob.cspec))
        >>> float(rec.regret), float(rec.reward), rec.pulls
        (0.3..., 1.0, Array([1, 0], dtype=int32))
    """
    acc = met.acc
    sums = jnp.real(acc.kahan)
    if world.adversarial:
        best_g = jnp.max(acc.arm_totals)
        rg, erg = best_g - sums[REWARD], best_g - sums[EXP_REWARD]
        totals = acc.arm_totals
    else:
        rg, erg = sums[REGRET], sums[EXP_REGRET if prob.policy.memo_probs else REGRET]
        totals = jnp.zeros((0,), _F)
    dl = _dl_value(prob, world, met.dl, t, sums[REGRET]) if prob.dl_mode is not None else jnp.zeros((0,), _F)
    return Records(rg, erg, sums[REWARD], acc.pulls.astype(jnp.int32), dl, totals, prob.channel.lost(channel_state))
