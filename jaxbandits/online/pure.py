"""The pure learner: decisions, the end of a round, feedback and the clock's advance, as jitted
functions of a :class:`~jaxbandits.online.state.LearnerState` (docs/online.md). A decision is the
simulator's step 2 (:func:`jaxbandits.engine.round.act`, the same key and bits); the pending ring
plays the channel's calendar.
"""
from __future__ import annotations

from functools import partial
from typing import Optional

import jax
import jax.numpy as jnp
import numpy as np

from ..core import validate as V
from ..core import mathlib as M
from ..engine.round import act
from ..policies.explore import chosen_probability
from ..core.types import NEVER, Arrivals, Context
from .clock import MAX_ROUND, Clock
from .state import ACCEPTED, DUPLICATE, EXPIRED, INVALID, OUTSIDE_WINDOW, UNKNOWN, Config, LearnerState, Pending

_F = jnp.float32
_I = jnp.int32


def _delivered(cfg: Config, pend: Pending, t):
    """Sum of the payloads delivered at round ``t``, in decision order (oldest first)."""
    H, P = cfg.pending, cfg.payload_size
    ages = jnp.arange(H - 1, -1, -1)
    s = t - ages
    sl = s % H
    ok = (s >= 0) & (pend.round[sl] == s) & (pend.due[sl] == t)

    def gather():
        idx = jnp.nonzero(ok, size=H, fill_value=0)[0]
        body = lambda i, acc: acc + pend.payload[sl[idx[i]]]
        return jax.lax.fori_loop(0, jnp.sum(ok.astype(_I)), body, jnp.zeros((P,), _F))

    # most rounds of a batch of decisions have no arrival: skip the ordered gather then
    return jax.lax.cond(jnp.any(pend.due == t), gather, lambda: jnp.zeros((P,), _F))


def _arrivals(cfg: Config, st: LearnerState, quiet: bool = False) -> Arrivals:
    """What ``update`` receives at the end of the open round. ``quiet`` (static): nothing can be
    delivered in this round (a round inside a batch of decisions, for a policy without holds)."""
    t, pend, H = st.t, st.pending, cfg.pending
    slot = t % H
    play = st.play
    memo = jax.tree.map(lambda m: jnp.where(play, m[slot], jnp.zeros_like(m[slot])), pend.memo)
    if not cfg.spec.feedback.attributed:
        pay = st.acc
    elif quiet:
        pay = jnp.zeros((cfg.payload_size,), _F)
    else:
        pay = _delivered(cfg, pend, t)
    rev = None
    if cfg.reveal > 0:
        a = jnp.arange(cfg.reveal)
        s = t - a
        sl = s % H
        rev = jnp.zeros((cfg.reveal,), bool) if quiet else (s >= 0) & (pend.round[sl] == s) & (pend.due[sl] == t)
    return Arrivals(t, jnp.where(play, pend.action[slot], -1), memo, pay, rev)


def _closed_policy(st: LearnerState):
    """The policy after the end of the open round ``t`` (its update), whether it had a decision or
    was idle (an idle round's update echoes action ``-1`` and a zero memo)."""
    cfg = st.config
    return jax.lax.cond(st.t >= 0, lambda: cfg.policy.update(st.policy, _arrivals(cfg, st)), lambda: st.policy)


def _step(st: LearnerState, x, quiet=False, samples=0):
    cfg = st.config
    feats, mask, dnow = x
    # the open round already has its decision: close it and decide in the next one; an idle open
    # round (reached by advance) gets its decision now and stays open
    pol = jax.lax.cond(st.play & (st.t >= 0), lambda: cfg.policy.update(st.policy, _arrivals(cfg, st, quiet)),
                       lambda: st.policy)
    t = jnp.where(st.play, st.t + 1, st.t)
    ctx = Context(t, feats, mask, jnp.asarray(-1, _I) if dnow is None else dnow)
    a, memo = act(cfg.policy, pol, ctx, st.act_key)  # the simulator's step 2: key fold_in(act_key, t)
    # the policy's probability of its choice (docs/ope.md): only when asked (samples > 0, static)
    prop = (chosen_probability(cfg.policy, pol, ctx, M.fold_in(st.act_key, t), a, memo, samples, cfg.spec.n_arms)
            if samples else jnp.asarray(jnp.nan, _F))
    p, sl = st.pending, t % cfg.pending
    pend = Pending(jax.tree.map(lambda b, v: b.at[sl].set(v), p.memo, memo), p.action.at[sl].set(a),
                   p.round.at[sl].set(t), p.due.at[sl].set(NEVER), p.seen.at[sl].set(False),
                   p.payload.at[sl].set(0.0))
    counts = st.counts._replace(decisions=st.counts.decisions + 1)
    acc = jnp.where(st.play, jnp.zeros_like(st.acc), st.acc)
    return st._replace(policy=pol, t=t, play=jnp.asarray(True), pending=pend, acc=acc, counts=counts), (t, a, prop)


@partial(jax.jit, static_argnames=("n", "samples"))
def decide_batch(st, feats, masks, delays, n, samples=0):
    """``n`` decisions from state ``st`` (the compiled program behind :func:`decide`): the new state and
    the batch's ``(rounds, arms, propensities)``."""
    # The first decision closes the open round, which may have received feedback. The rounds of the
    # later decisions of the batch receive none (no feedback can be reported between them): for a
    # policy without holds (whose deliveries are all due in the round they are reported) nothing is
    # delivered then, so their ends skip the ring search. Same arrivals, same bits, O(1) per round.
    xs = (feats, masks, delays)
    first = jax.tree.map(lambda v: v[0], xs)
    st, (t0, a0, p0) = _step(st, first, samples=samples)
    if n == 1:
        return st, (t0[None], a0[None], p0[None])
    rest = jax.tree.map(lambda v: v[1:], xs)
    quiet = not st.config.policy.memo_hold
    st, (ts, arms, ps) = jax.lax.scan(partial(_step, quiet=quiet, samples=samples), st, rest, length=n - 1)
    return st, (jnp.concatenate([t0[None], ts]), jnp.concatenate([a0[None], arms]), jnp.concatenate([p0[None], ps]))


@partial(jax.jit, static_argnames=("cap", "samples"))
def decide_upto(st, n, cap, samples=0):
    """``n`` decisions (``1 <= n <= cap``, a traced count) without per-round inputs: one compiled
    program for every ``n`` up to ``cap``; the same rounds and bits as :func:`decide`."""
    x0 = (None, None, None)
    st, (t0, a0, p0) = _step(st, x0, samples=samples)
    ids = jnp.zeros((cap,), _I).at[0].set(t0)
    arms = jnp.zeros((cap,), _I).at[0].set(a0)
    props = jnp.zeros((cap,), _F).at[0].set(p0)
    quiet = not st.config.policy.memo_hold

    def body(i, c):
        s, ids, arms, props = c
        s, (t, a, p) = _step(s, x0, quiet=quiet, samples=samples)
        return s, ids.at[i].set(t), arms.at[i].set(a), props.at[i].set(p)

    return jax.lax.fori_loop(1, n, body, (st, ids, arms, props))


def decide(state: LearnerState, n: Optional[int] = None, contexts=None, masks=None, delays=None, *,
           propensity: int = 0):
    """Make ``n`` decisions in ``n`` rounds (the open round first if :func:`advance` left it
    without a decision, then the next ones): ``(state, ids i32[n], arms i32[n])``. ``contexts``:
    ``f32[n, K, d]`` for contextual policies (then ``n`` is its length); ``masks``: ``bool[n, K]``
    which arms exist; ``delays``: ``i32[n]`` the delays shown before acting (action-time channels).
    Closes the open round first: the feedback it received reaches the policy now.

    ``propensity=S`` (``S >= 1``) also returns ``f32[n]``, the probability the policy gave each
    chosen arm (docs/ope.md): exact for a policy with ``memo_probs`` (explicitly randomised, or
    with an exploration floor, :func:`jaxbandits.policies.explore.explore`), else the frequency of
    the arm over ``S`` draws of the policy's randomness (1 for a deterministic choice); the
    decisions are the same bits either way.

    Args:
        state: the learner.
        n: the number of decisions, ``>= 1``; ``None``: the length of ``contexts`` (or
            ``masks``, ``delays``), else 1.
        contexts: f32[n, K, d], the arms' features of each decision (contextual policies only).
        masks: bool[n, K], which arms exist at each decision (optional; only for a policy that
            honours them, ``Policy.honours_mask``: it never chooses an arm a mask leaves out).
        delays: i32[n], the delays shown before acting (action-time channels only).
        propensity: ``S``, ``0 <= S <= 2^16``; ``S >= 1`` also returns the chosen arms'
            probabilities (0: not).

    Returns:
        tuple: ``(state, ids, arms)``: the learner after the decisions, the decision ids i32[n]
        (their rounds) and the chosen arms i32[n]; with ``propensity`` also ``probs`` f32[n].

    Raises:
        ValueError: ``n`` or ``propensity`` out of range, rows of different lengths, contexts
            missing for a contextual policy (or given for a K-armed one), masks given to a policy
            that does not honour them (``Policy.honours_mask`` False), masks of the wrong shape or
            with a row that leaves no arm, delays missing for an action-time channel (or given for
            another).

    Example:
        >>> from jaxbandits import channels, online
        >>> from jaxbandits.policies import classic
        >>> st = online.init(classic.ucb1(), channels.attributed(), 3, 0)
        >>> st, ids, arms = decide(st, n=3)  # doctest: +SKIP
        >>> ids.tolist()  # doctest: +SKIP
        [0, 1, 2]
    """
    spec = state.config.spec
    lead = [x.shape[0] for x in (contexts, masks, delays) if x is not None]
    if n is None:
        n = lead[0] if lead else 1
    n = V.integer("n", n, lo=1)
    if any(m != n for m in lead):
        raise ValueError(f"contexts, masks and delays must have n={n} rows, got {lead}")
    if spec.dim is not None:
        if contexts is None:
            raise ValueError(f"{state.config.policy.name} is contextual (dim={spec.dim}): give contexts f32[n, "
                             f"{spec.n_arms}, {spec.dim}]")
        contexts = jnp.asarray(contexts, _F)
        if contexts.shape[1:] != (spec.n_arms, spec.dim):
            raise ValueError(f"contexts must have shape [n, {spec.n_arms}, {spec.dim}], got {contexts.shape}")
    elif contexts is not None:
        raise ValueError("contexts given, but the learner was initialised without dim (a K-armed policy)")
    if masks is not None:
        policy = state.config.policy
        if not policy.honours_mask:
            raise ValueError(f"masks given, but the policy {policy.name} does not honour masks (its act may choose "
                             f"an arm the mask leaves out; Policy.honours_mask is False): decide without masks, or "
                             f"use a policy that honours them (docs/online.md)")
        masks = jnp.asarray(masks, bool)
        if masks.shape != (n, spec.n_arms):
            raise ValueError(f"masks must have shape [{n}, {spec.n_arms}], got {masks.shape}")
        empty = np.flatnonzero(~np.asarray(masks).any(axis=1))
        if empty.size:
            raise ValueError(f"masks must leave at least one arm in every row, row {int(empty[0])} has none")
    if spec.feedback.delay_at_action:
        if delays is None:
            raise ValueError(f"the channel {state.config.channel} shows the delay before acting: give delays i32[n]")
        delays = jnp.asarray(delays, _I)
    elif delays is not None:
        raise ValueError(f"delays given, but the channel {state.config.channel} does not show them before acting")
    samples = V.integer("propensity", propensity, lo=0, hi=2**16)
    st, (ids, arms, props) = decide_batch(state, contexts, masks, delays, n, samples)
    return (st, ids, arms, props) if samples else (st, ids, arms)


def arm_estimates(policy, pstate):
    """``Policy.estimate`` of a policy state as a list of floats, ``None`` for each arm without one
    yet (NaN), or ``None`` when the policy declares no estimate (docs/online.md).

    Args:
        policy: the learner's policy (``state.config.policy``).
        pstate: a state of that policy (``state.policy``, or :func:`close_round`'s).

    Returns:
        list or None: one float or ``None`` per arm, or ``None``.

    Example:
        >>> from jaxbandits import channels, online
        >>> from jaxbandits.policies import classic
        >>> st = online.init(classic.ucb1(), channels.attributed(), 3, 0)
        >>> arm_estimates(st.config.policy, st.policy)
        [None, None, None]
    """
    if policy.estimate is None:
        return None
    return [float(x) if np.isfinite(x) else None for x in np.asarray(policy.estimate(pstate))]


def close_round(state: LearnerState):
    """The policy's state with the open round's arrivals applied (what the next ``decide`` will
    start from): read estimates between decisions without changing the learner.

    Args:
        state: the learner.

    Returns:
        The policy's state after the open round's update (``state.policy`` itself when the open
        round has no decision).

    Example:
        >>> from jaxbandits import channels, online
        >>> from jaxbandits.policies import classic
        >>> st = online.init(classic.ucb1(), channels.attributed(), 3, 0)
        >>> st, ids, arms = decide(st, n=3)  # doctest: +SKIP
        >>> st, codes = feedback(st, ids, [1.0, 0.0, 1.0])  # doctest: +SKIP
        >>> est = arm_estimates(st.config.policy, close_round(st))  # doctest: +SKIP
        >>> [None if e is None else round(e, 3) for e in est]  # doctest: +SKIP
        [0.667, None, None]
    """
    return _close_jit(state)


@jax.jit
def _close_jit(state):
    return jax.lax.cond(state.play, lambda: _closed_policy(state), lambda: state.policy)


@jax.jit
def _advance_jit(st: LearnerState, c):
    cfg = st.config

    def close(s):  # the end of the open round (its decision's round or an idle one): update
        pol = jax.lax.cond(s.t >= 0, lambda: cfg.policy.update(s.policy, _arrivals(cfg, s)), lambda: s.policy)
        return s._replace(policy=pol, t=s.t + 1, play=jnp.asarray(False), acc=jnp.zeros_like(s.acc))

    return jax.lax.while_loop(lambda s: s.t < c, close, st)


def advance(state: LearnerState, now, clock: Optional[Clock] = None) -> LearnerState:
    """Move the clock to round ``now`` (or, with ``clock``, to the round of your timestamp ``now``).

    Every round before it ends: the open round is closed (the feedback it received reaches the
    policy) and each round in between with no decision is closed *idle* (the policy's ``update``
    sees the arrivals delivered then, with action ``-1`` and a zero memo: no play). Round ``now``
    is then open without a decision: feedback reported meanwhile arrives at round ``now`` and the
    next :func:`decide` decides in it. A round holds at most one decision (conventions §2): a
    decision when the open round has one takes the next round, so a burst of decisions runs
    ahead of the clock until it catches up. A time not later than the open round changes nothing
    (clocks never go back). Cost: one ``update`` per round passed.

    Args:
        state: the learner (on an attributed or conversion channel).
        now: the round to move to, ``0 <= now <= MAX_ROUND``; with ``clock``, your timestamp.
        clock: a :class:`~jaxbandits.online.clock.Clock` mapping ``now`` to a round; ``None``:
            ``now`` is a round.

    Returns:
        LearnerState: the learner with round ``now`` open (unchanged if ``now`` is not later than
        the open round).

    Raises:
        ValueError: an anonymous channel (its rounds cannot be left idle), or ``now`` out of
            range (before the clock's origin, beyond its last round).
        TypeError: a timestamp of the wrong type for ``clock``.

    Example:
        >>> from jaxbandits import channels, online
        >>> from jaxbandits.policies import classic
        >>> st = online.init(classic.ucb1(), channels.attributed(), 3, 0)
        >>> st = advance(st, 10)  # doctest: +SKIP
        >>> stats(st)["round"]  # doctest: +SKIP
        10
    """
    cfg = state.config
    if not cfg.spec.feedback.attributed:
        raise ValueError(f"the clock cannot leave rounds idle on the anonymous channel {cfg.channel}: its policies "
                         "follow their own schedule of plays (one decision per round; use the decision count)")
    if clock is not None:
        r = clock.check().round(now)
    else:
        r = V.integer("now", now, lo=0, hi=MAX_ROUND)
    return _advance_jit(state, jnp.asarray(r, _I))


def _event(st: LearnerState, e):
    cfg = st.config
    fb = cfg.spec.feedback
    s, r, valid = e
    t, p, H = st.t, st.pending, cfg.pending
    age = t - s
    sl = s % H
    memo = jax.tree.map(lambda m: m[sl], p.memo)
    bad = ~jnp.isfinite(r)
    expired = age >= H
    # within the ring a slot that does not hold decision s means no decision s was made (an idle round)
    unknown = (s < 0) | (s > t) | ((s == t) & ~st.play) | (~expired & (p.round[sl] != s))
    outside = (age > fb.window) if (fb.window is not None) else jnp.asarray(False)
    dup = p.seen[sl]
    code = jnp.where(bad, INVALID, jnp.where(unknown, UNKNOWN, jnp.where(outside, OUTSIDE_WINDOW, jnp.where(
        expired, EXPIRED, jnp.where(dup, DUPLICATE, ACCEPTED))))).astype(_I)
    ok = valid & (code == ACCEPTED)
    reward = jnp.asarray(1.0, _F) if not fb.zeros_observed else r
    d = jnp.asarray(age, _I)
    pl = jnp.asarray(cfg.policy.payload(memo, reward, d), _F)
    hold = jnp.asarray(memo.hold, _I) if cfg.policy.memo_hold else jnp.asarray(0, _I)
    due = jnp.maximum(t, s + hold)
    w = lambda buf, v: buf.at[sl].set(jnp.where(ok, v, buf[sl]))
    pend = p._replace(due=w(p.due, due), seen=w(p.seen, True), payload=w(p.payload, pl))
    c = st.counts
    inc = lambda x, k: x + (valid & (code == k)).astype(_I)
    counts = c._replace(accepted=inc(c.accepted, ACCEPTED), unknown=inc(c.unknown, UNKNOWN),
                        outside_window=inc(c.outside_window, OUTSIDE_WINDOW), expired=inc(c.expired, EXPIRED),
                        duplicate=inc(c.duplicate, DUPLICATE), invalid=inc(c.invalid, INVALID))
    return st._replace(pending=pend, counts=counts), jnp.where(valid, code, -1)


def _aggregate(st: LearnerState, e):
    y, valid = e
    bad = ~jnp.isfinite(y)
    code = jnp.where(bad, INVALID, jnp.where(st.t < 0, UNKNOWN, ACCEPTED)).astype(_I)
    ok = valid & (code == ACCEPTED)
    acc = jnp.where(ok, st.acc + y, st.acc)
    c = st.counts
    inc = lambda x, k: x + (valid & (code == k)).astype(_I)
    counts = c._replace(accepted=inc(c.accepted, ACCEPTED), unknown=inc(c.unknown, UNKNOWN),
                        invalid=inc(c.invalid, INVALID))
    return st._replace(acc=acc, counts=counts), jnp.where(valid, code, -1)


@jax.jit
def _feedback_attr(st, ids, rewards, valid):
    return jax.lax.scan(_event, st, (ids, rewards, valid))


@jax.jit
def _feedback_anon(st, y, valid):
    return jax.lax.scan(_aggregate, st, (y, valid))


#: The largest |reward| the learner takes: 2**31 of them sum to 2**127, within float32 (3.4e38).
REWARD_LIMIT = 2.0**96


def decision_ids(ids) -> np.ndarray:
    """Decision ids as int64[E]: integers only (no booleans, no fractions: an id is never rounded);
    ids outside int64 (Python ints of any size) are no decision's, and become -1 (code unknown).

    Args:
        ids: a 1-d sequence or array of integer decision ids (``None``: none).

    Returns:
        numpy.ndarray: int64[E], the ids (-1 for those outside int64).

    Raises:
        ValueError: ids that are not a 1-d list, or an id that is not an integer.

    Example:
        >>> decision_ids([3, 2**70, -5]).tolist()
        [3, -1, -1]
    """
    try:
        a = np.atleast_1d(np.asarray([] if ids is None else ids))
    except (OverflowError, ValueError):
        a = np.atleast_1d(np.asarray(ids, dtype=object))
    if a.size == 0:
        return np.zeros((0,), np.int64)
    if a.ndim == 1 and a.dtype.kind == "i":  # the common case, without a Python loop
        return a.astype(np.int64)
    if a.ndim == 1 and a.dtype.kind == "u":
        return np.where(a < 2**63, a, 0).astype(np.int64) * (a < 2**63) - (a >= 2**63)
    a = a.astype(object)
    if a.ndim != 1:
        raise ValueError(f"ids must be a 1-d list of decision ids, got shape {a.shape}")
    out = np.empty(a.shape, np.int64)
    for i, x in enumerate(a):
        if isinstance(x, (bool, np.bool_)) or not isinstance(x, (int, np.integer)):
            raise ValueError(f"ids[{i}] must be an integer decision id, got {x!r} ({type(x).__name__})")
        x = int(x)
        out[i] = x if -1 <= x < 2**63 else -1
    return out


def feedback(state: LearnerState, ids=None, rewards=None, *, y=None, valid=None):
    """Take a batch of events arriving now (in the open round): ``(state, codes i32[E])``.

    * attributed channels: ``ids`` (decision ids) and ``rewards`` (every outcome, zeros included);
    * conversion channels (zeros not observed): ``ids`` of the decisions that converted (reward 1);
    * anonymous channels: ``y``, aggregate rewards arriving now (summed in the order given).

    ``valid`` (``bool[E]``, optional) marks padding rows (``False``: ignored, code ``-1``), so a
    caller can pad batches to a few fixed sizes and compile once per size. Codes: see the module
    docstring (:data:`CODES`). Nothing is raised for a bad event: it is counted.

    Args:
        state: the learner.
        ids: int[E], the decision ids the events are about (attributed and conversion channels).
        rewards: f32[E], the rewards (channels that observe every outcome; a conversion
            channel takes none, or all ones).
        y: f32[E], aggregate rewards arriving now (anonymous channels only).
        valid: bool[E], ``False`` for padding rows (optional).

    Returns:
        tuple: ``(state, codes)``: the learner with the events stored and counted, and each
        event's code i32[E] (0 accepted ... 5 invalid; -1 for padding).

    Raises:
        ValueError: the wrong arguments for the channel (``y`` for an attributed one, ``ids``
            for an anonymous one, rewards missing where every outcome is observed, rewards other
            than 1 for conversions), ids that are not integers, or shapes that differ.

    Example:
        >>> from jaxbandits import channels, online
        >>> from jaxbandits.policies import classic
        >>> st = online.init(classic.ucb1(), channels.conversions(window=10), 3, 0)
        >>> st, ids, arms = decide(st, n=2)  # doctest: +SKIP
        >>> st, codes = feedback(st, [1, 5])  # doctest: +SKIP
        >>> [online.CODES[c] for c in codes.tolist()]  # doctest: +SKIP
        ['accepted', 'unknown']
    """
    cfg = state.config
    fb = cfg.spec.feedback
    if not fb.attributed:
        if y is None or ids is not None or rewards is not None:
            raise ValueError(f"the channel {cfg.channel} is anonymous: give y=, the aggregate rewards arriving now")
        y = jnp.atleast_1d(jnp.asarray(y, _F))
        if y.ndim != 1:
            raise ValueError(f"y must be a 1-d array of aggregates, got shape {y.shape}")
        valid = jnp.ones(y.shape, bool) if valid is None else jnp.asarray(valid, bool)
        if valid.shape != y.shape:
            raise ValueError(f"valid must have the shape of y {y.shape}, got {valid.shape}")
        return _feedback_anon(state, y, valid)
    if y is not None:
        raise ValueError(f"the channel {cfg.channel} is attributed: give decision ids (and rewards), not y")
    if ids is None:
        raise ValueError("give ids, the decision ids the events are about")
    ids = np.asarray(ids)
    if ids.dtype.kind not in "iu":
        raise ValueError(f"ids must be integers (decision ids), got dtype {ids.dtype}")
    ids = np.atleast_1d(ids)
    if ids.ndim != 1:
        raise ValueError(f"ids must be a 1-d array, got shape {ids.shape}")
    ids = jnp.asarray(np.clip(ids, -1, NEVER), _I)  # anything out of int32 range is unknown anyway
    if fb.zeros_observed:
        if rewards is None:
            raise ValueError(f"the channel {cfg.channel} observes every outcome: give rewards with the ids")
        rewards = jnp.atleast_1d(jnp.asarray(rewards, _F))
    else:
        if rewards is not None:
            r = np.asarray(rewards)
            if not np.all(r == 1):
                raise ValueError(f"the channel {cfg.channel} reports conversions (reward 1) only: give ids alone")
        rewards = jnp.ones(ids.shape, _F)
    if rewards.shape != ids.shape:
        raise ValueError(f"rewards must have the shape of ids {ids.shape}, got {rewards.shape}")
    valid = jnp.ones(ids.shape, bool) if valid is None else jnp.asarray(valid, bool)
    if valid.shape != ids.shape:
        raise ValueError(f"valid must have the shape of ids {ids.shape}, got {valid.shape}")
    return _feedback_attr(state, ids, rewards, valid)


def stats(state: LearnerState) -> dict:
    """Counters and the clock, as Python numbers.

    Args:
        state: the learner.

    Returns:
        dict: the :class:`~jaxbandits.online.state.Counters` by name, ``round`` (the open round,
        -1 before the first) and ``pending`` (decisions still in the pending ring).

    Example:
        >>> from jaxbandits import channels, online
        >>> from jaxbandits.policies import classic
        >>> st = online.init(classic.ucb1(), channels.attributed(), 3, 0)
        >>> stats(st)
        {'decisions': 0, 'accepted': 0, 'unknown': 0, 'outside_window': 0, 'expired': 0, 'duplicate': 0,
         'invalid': 0, 'round': -1, 'pending': 0}
    """
    c = {k: int(v) for k, v in state.counts._asdict().items()}
    p = state.pending
    t = int(state.t)
    live = np.asarray(p.round) >= max(t - state.config.pending + 1, 0)
    c["round"] = t
    c["pending"] = int(np.sum(live & (np.asarray(p.round) >= 0)))
    return c
