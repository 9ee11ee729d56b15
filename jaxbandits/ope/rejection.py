"""Replay (rejection sampling, Li et al. 2011) of an adaptive target policy over a log
(docs/ope.md, *Replay*).

The target is any library :class:`~jaxbandits.core.types.Policy`, run in one ``lax.scan`` over the log's
decisions in time order, one log row a round. At each row it acts; when its arm is the logged arm
and a coin with probability ``c / propensity`` (``c``: the smallest propensity in the log, so the
accepted rows are a uniform-logging sample) comes up, the decision is *accepted*: the round is the
target's play, its memo is kept and its outcome is delivered to it when the log saw it: a
conversion at the first row at or after the conversion time, a zero (channels that observe zeros)
at the first row after the window closed. Other rows are idle rounds (``update`` with action
``-1``, as :func:`jaxbandits.online.advance` closes them). The estimate is the mean outcome over
accepted rows (delay-ignorant: the observed conversion; delay-aware: divided by ``G``, the
probability it was seen by the log's end, as in :mod:`~jaxbandits.ope.estimators`), with a normal
interval over the accepted rows.

Validity: the logging law must be known (propensities) and give every arm positive probability;
the target's rounds are the log's rows (its round counter and any window it takes are in rows);
policies with reveal windows are not supported. A log with per-arm features (``context`` of shape
``[N, K, d]``) shows them to the target at each row (contextual policies: LinUCB, LinTS).
"""
from __future__ import annotations

import math
import statistics
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

from ..core import mathlib as M
from ..core import ring as R
from ..core.types import NEVER, Arrivals, Context, Policy, ProblemSpec
from ..core.values import is_policy
from .estimators import Estimate, old_enough, seen_probability
from .log import DecisionLog

__all__ = ["replay", "ReplayResult"]

_F, _I = jnp.float32, jnp.int32


class ReplayResult(tuple):
    """``(estimates, accepted)``: the estimates (delay-aware first when a law is given) and the
    accepted rows (bool[N], in the log's order)."""


def _rows_of(times, at):
    """The first row whose time is >= ``at`` (``N``: after the log)."""
    return np.searchsorted(times, at, side="left")


@partial(jax.jit, static_argnames=("policy", "spec", "W"))
def _scan(policy, spec, W, key, arm, u_ok, deliv, reward, feats):
    k_init = jax.random.fold_in(key, 0)
    k_act = jax.random.fold_in(key, 1)
    k_acc = jax.random.fold_in(key, 2)
    st = policy.init(spec, k_init)
    ctx0 = Context(jnp.int32(0), None if feats is None else feats[0], None, jnp.int32(-1))
    _, memo0 = jax.eval_shape(lambda s: policy.act(s, ctx0, k_act), st)
    if spec.feedback.attributed:
        P = jax.eval_shape(lambda m: policy.payload(m, jnp.float32(1), jnp.int32(0)),
                           jax.tree.map(lambda x: jnp.zeros(x.shape, x.dtype), memo0)).shape[0]
    else:
        P = 1
    ring = jnp.zeros((W, P), _F)

    coins = jax.random.uniform(k_acc, arm.shape) < u_ok  # the acceptance coins, drawn at once

    def step(c, x):
        st, ring = c
        j, a_log, coin, dv, r, f = x
        a, memo = policy.act(st, Context(j, f, None, jnp.int32(-1)), M.fold_in(k_act, j))
        acc = (a == a_log) & coin
        hold = jnp.asarray(memo.hold, _I) if policy.memo_hold else jnp.asarray(0, _I)
        due = jnp.maximum(dv, j + hold)
        pl = jnp.asarray(policy.payload(memo, r, (dv - j).astype(_I)), _F)
        go = acc & (dv < NEVER)
        # the library's ring, writes first (clear the slot read last row, add this row's outcome),
        # then the read: XLA:CPU then updates it in place
        ring = R.clear(ring, j - 1)
        ring = R.add(ring, due, pl, ok=go)
        got = R.get(ring, j)
        memo_c = jax.tree.map(lambda m: jnp.where(acc, m, jnp.zeros_like(m)), memo)
        st = policy.update(st, Arrivals(j, jnp.where(acc, a, -1).astype(_I), memo_c, got, None))
        return (st, ring), acc

    j = jnp.arange(arm.shape[0], dtype=_I)
    _, acc = jax.lax.scan(step, (st, ring), (j, arm, coins, deliv, reward, feats))  # not unrolled: an unrolled
    # body reads the ring before the next row's writes, and XLA:CPU then copies it every row
    return acc


def replay(log: DecisionLog, policy: Policy, channel, key=0, *, window=None, delay=None, level: float = 0.95,
           min_seen: float = 0.05) -> ReplayResult:
    """Replay ``policy`` over ``log`` by rejection sampling: an unbiased value for adaptive policies.

    The policy runs on ``channel`` (what it is told, e.g. ``channels.conversions()``); a row is
    accepted when the policy's choice equals the logged arm, weighted by the logged propensity.

    Args:
        log: the :class:`~jaxbandits.ope.log.DecisionLog` (every arm must be played in it).
        policy: the policy to evaluate.
        channel: the channel the policy is told through (attributed or conversions).
        key: a JAX key or an int seed.
        window: the conversion window of the value (log time units).
        delay: a delay law (or one per arm) for the delay-aware estimate.
        level: the interval's confidence level.
        min_seen: rows seen with probability below it are left out of the delay-aware form.

    Returns:
        The :class:`ReplayResult` ``(estimates, accepted)``.

    Raises:
        TypeError: ``channel`` is not a channel.
        ValueError: a channel replay cannot serve, a policy that reads reveal ages, or an arm
            never played in the log.

    Examples:
        >>> from jaxbandits import channels, delays, ope
        >>> from jaxbandits.policies import classic
        >>> log = ope.simulate_log(0, 2000, [0.1, 0.3], delays.geometric(mean=5.0), [0.5, 0.5])  # doctest: +SKIP
        >>> estimates, accepted = ope.replay(log, classic.ucb1(), channels.conversions(), key=0)  # doctest: +SKIP
        >>> estimates[0].estimator, accepted.shape  # doctest: +SKIP
        ('replay', (2000,))
    """
    from ..channels import Channel
    from ..engine.round import check_pair

    if not isinstance(channel, Channel):
        raise TypeError(f"channel must be a jaxbandits.channels.Channel, got {type(channel).__name__}")
    check_pair(channel, policy, policy.name if is_policy(policy) else "policy")
    fb = channel.feedback
    if not fb.attributed or fb.spread or fb.delay_at_action:
        raise ValueError(f"replay runs policies of attributed or conversion channels, not {channel}")
    if policy.reveal_window:
        raise ValueError(f"{policy.name} reads reveal ages (reveal_window={policy.reveal_window}): replay does not "
                         "support it")
    if isinstance(key, (int, np.integer)):
        key = jax.random.key(int(key))
    N = len(log)
    order = np.argsort(log.time, kind="stable")
    t = log.time[order]
    arm = log.arm[order]
    prop = log.propensity[order]
    played = np.bincount(arm, minlength=log.n_arms) > 0
    if not played.all():
        a = int(np.argmin(played))
        raise ValueError(f"arm {log.label(a)} is never played in the log: replay needs a logging policy that plays "
                         "every arm (the target may choose it, and no row could be accepted)")
    y_all = log.observed(window)[order]
    ct = log.conversion_time[order]
    end = log.end[order]
    c = float(prop.min())
    u_ok = (c / prop).astype(np.float32)
    conv_row = np.where(y_all, _rows_of(t, np.nan_to_num(ct, nan=np.inf)), NEVER)
    conv_row = np.maximum(conv_row, np.arange(N))
    if fb.zeros_observed:
        if window is None:
            raise ValueError(f"{policy.name} observes zero outcomes (channel {channel}): give the window after which "
                             "a decision without conversion counts as a zero")
        close = t + window
        known0 = ~y_all & (close < end)
        zero_row = np.where(known0, _rows_of(t, np.nextafter(close, np.inf)), NEVER)
        deliv = np.where(y_all, conv_row, np.minimum(zero_row, NEVER))
    else:
        deliv = conv_row
    deliv = np.where(deliv >= N, NEVER, deliv).astype(np.int64)
    dist = deliv - np.arange(N)
    live = deliv < NEVER
    W = int(dist[live].max()) + 1 if live.any() else 1
    W += int(policy.max_hold) if policy.memo_hold else 0
    if W > 2**24:
        raise ValueError(f"replay: outcomes arrive up to {W} rows after their decision: too many for the pending ring")
    W = 1 << max(W - 1, 0).bit_length()  # few compilations
    feats = None
    if log.context is not None and log.context.ndim == 3:  # per-arm features: contextual policies see them
        feats = jnp.asarray(log.context[order], _F)
    dim = None if feats is None else int(feats.shape[2])
    spec = ProblemSpec(log.n_arms, N, dim, fb)  # the horizon: the log's rows (policies may size tables by it)
    yf = y_all.astype(np.float32)
    if delay is not None:
        G = seen_probability(log, delay, window)[order]
        keep = old_enough(log, delay, window, min_seen)[order]
        yt = np.where(keep, yf / np.maximum(G, min_seen), 0.0).astype(np.float32)
    else:
        keep = np.ones(N, bool)
        yt = yf
    acc = np.asarray(_scan(policy, spec, W, key, jnp.asarray(arm, _I), jnp.asarray(u_ok),
                           jnp.asarray(np.minimum(deliv, NEVER), _I), jnp.asarray(yf, _F), feats))
    z = statistics.NormalDist().inv_cdf(0.5 + level / 2)
    out = []

    def est(aware, vals):
        n = float(vals.size)
        if n < 2:
            raise ValueError(f"replay accepted {int(n)} of {N} rows: too few for an estimate (the target rarely "
                             "agrees with the logged arms)")
        m = float(vals.mean())
        se = math.sqrt(float(vals.var(ddof=1)) / n)
        return Estimate("replay", aware, m, m - z * se, m + z * se, se, n, int(n))

    if delay is not None:
        # the aware mean counts only accepted rows old enough (min over arms of G >= min_seen)
        out.append(est(True, np.asarray(yt, np.float64)[acc & keep]))
    out.append(est(False, yf.astype(np.float64)[acc]))
    res = ReplayResult((tuple(out), acc[np.argsort(order)]))
    return res
