"""A policy on live traffic: decisions now, feedback whenever it comes (docs/online.md).

The simulator's round (conventions §2) is context -> act -> outcome -> channel -> update. On live
traffic the world is the user's: the learner makes the decisions, keeps the pending ones itself
(what the channel's calendar does inside the simulator) and takes the feedback in the channel's
terms. Pure JAX functions over a pytree :class:`LearnerState`, jitted::

    state = online.init(policy, channel, n_arms, key, horizon=None, dim=None, max_pending=None)
    state, ids, arms = online.decide(state, n=1)             # or contexts=f32[n, K, d]
    state, codes = online.feedback(state, ids, rewards)      # attributed channels: (decision id, reward)
    state, codes = online.feedback(state, ids)               # conversions: (decision id), reward 1
    state, codes = online.feedback(state, y=ys)              # anonymous: aggregates of this round

The clock. A round holds at most one decision (conventions §2) and decision ids are the rounds of
the decisions. By default one decision is one round (the decision count): round ``t`` is open from
decision ``t`` until the next ``decide``; feedback given meanwhile *arrives at round t* (delay
``d = t - s`` for decision ``s``) and is handed to the policy's ``update`` at the end of round ``t``,
when the next decision is made. ``decide(state, n)`` makes ``n`` rounds (nothing arrives in the
``n - 1`` between them). With :func:`advance` time is yours: ``advance(state, now)`` moves to round
``now`` (an integer), or to ``clock.round(now)`` for a :class:`Clock` mapping your timestamps to
rounds (``floor((now - origin) / round_length)``, computed on the host in int64/float64). The open
round is closed, each round in between with no decision is closed idle (``update`` with action
``-1``, a zero memo and what was delivered then) and round ``now`` opens without a decision; the
next ``decide`` decides in it. A decision when the open round has one takes the next round (a burst
runs ahead of the clock until it catches up); a time not after the open round changes nothing. A
policy's delay-dependent quantities (a conversion window ``m``, a delay law) are in rounds: in
decisions without a clock, in ``round_length`` units with one.

The keys are the simulator's (conventions §8, run 0): the policy is initialised with
``fold_in(fold_in(fold_in(key, 0), 1), 0)`` and round ``t`` acts with
``fold_in(fold_in(fold_in(fold_in(key, 0), 1), 1), t)``, so replaying a simulated world's stream
through this module gives ``simulate``'s actions bit for bit (``tests/test_online.py``).

Pending decisions live in a ring of ``H`` slots (decision ``s`` at slot ``s mod H``): ``H = m + 1``
for a channel with window ``m``, else ``max_pending`` (default 4096), and at least the policy's
reveal window and ``max_hold + 1``. Each event is checked and counted, never raised:

====  ==================  ===========================================================
code  counter             meaning
====  ==================  ===========================================================
0     ``accepted``        stored; handed to ``update`` at the end of its delivery round
1     ``unknown``         no such decision (negative, or not made yet)
2     ``outside_window``  conversions: ``now - s > m`` (the channel censors it)
3     ``expired``         the decision left the pending ring (older than ``H`` rounds)
4     ``duplicate``       an event for this decision was already accepted (counted once)
5     ``invalid``         a reward or aggregate that is not finite
====  ==================  ===========================================================

Delivery: an accepted event of decision ``s`` at round ``now`` is delivered at
``max(now, s + hold)`` (``hold``: the memo's, for policies that declare ``memo_hold``, else 0),
exactly as the simulator's calendar delivers at ``s + max(d, hold)``. The payloads delivered in
one round are summed in decision order (``0 + x_1 + x_2 + ...``), as the calendar's slot
accumulates them in play order, so float payloads match the simulator's bits too.

Save and load: :func:`save` writes one ``.npz`` file (no pickle) with the flattened state and a
JSON header (format, format version, library version, policy name, channel, sizes, state layout);
:func:`load` refuses a file of a different policy, channel, layout or incompatible version.

:class:`Learner` is a thin stateful wrapper with arm names: ``learner.decide()``,
``learner.feedback(ids, rewards)``, ``learner.stats()``, ``learner.save(path)``.
"""
from __future__ import annotations

import contextlib
import json
import math
from functools import partial
from typing import Any, NamedTuple, Optional

import jax
import jax.numpy as jnp
import numpy as np

from . import _validate as V
from . import mathlib as M
from .policies.explore import chosen_probability
from .types import NEVER, Arrivals, Context, Policy, ProblemSpec
from .values import is_policy

_F = jnp.float32
_I = jnp.int32

FORMAT = "jaxbandits.online"
FORMAT_VERSION = 2  # 2: the state's `play` flag (the clock)
DEFAULT_MAX_PENDING = 4096

ACCEPTED, UNKNOWN, OUTSIDE_WINDOW, EXPIRED, DUPLICATE, INVALID = range(6)
CODES = ("accepted", "unknown", "outside_window", "expired", "duplicate", "invalid")

__all__ = ["Config", "Pending", "Counters", "LearnerState", "init", "decide", "feedback", "close_round",
           "advance", "Clock", "save", "dumps", "loads", "load", "Learner", "CODES", "FORMAT_VERSION", "arm_estimates"]


class Config(NamedTuple):
    """Everything static about a learner (hashable: the jitted functions specialise on it)."""

    policy: Policy
    channel: Any
    spec: ProblemSpec
    pending: int  # H, slots of the pending ring
    payload_size: int  # P
    reveal: int  # the policy's reveal window (0: none)


class Pending(NamedTuple):
    """The ring of pending decisions: decision ``s`` at slot ``s mod H``."""

    memo: Any  # the policy's memos, each leaf with a leading [H]
    action: Any  # i32[H]
    round: Any  # i32[H] decision round of the slot (-1: empty)
    due: Any  # i32[H] delivery round of its accepted event (NEVER: none)
    seen: Any  # bool[H] an event was accepted (duplicates are refused)
    payload: Any  # f32[H, P] the policy's payload of the accepted event


class Counters(NamedTuple):
    decisions: Any
    accepted: Any
    unknown: Any
    outside_window: Any
    expired: Any
    duplicate: Any
    invalid: Any


@jax.tree_util.register_pytree_node_class
class LearnerState:
    """The learner's state: a pytree (its :class:`Config` is static aux data)."""

    _fields = ("policy", "t", "play", "act_key", "pending", "acc", "counts")
    __slots__ = _fields + ("config",)

    def __init__(self, config, policy, t, play, act_key, pending, acc, counts):
        self.config = config
        self.policy, self.t, self.act_key = policy, t, act_key  # t: the open round (-1: none yet)
        self.play = play  # bool: the open round has its decision (False: reached by advance, idle so far)
        self.pending, self.acc, self.counts = pending, acc, counts  # acc: anonymous sum of round t

    def tree_flatten(self):
        return tuple(getattr(self, f) for f in self._fields), self.config

    @classmethod
    def tree_unflatten(cls, config, children):
        return cls(config, *children)

    def _replace(self, **kw):
        vals = {f: getattr(self, f) for f in self._fields}
        vals.update(kw)
        return LearnerState(self.config, **vals)

    def __repr__(self):
        return f"LearnerState({self.config.policy.name}, {self.config.channel}, t={self.t})"


# ----------------------------------------------------------------------------- init
def _config(policy, channel, n_arms, horizon, dim, max_pending) -> Config:
    from .channels import Channel
    from .engine.round import check_pair

    if not isinstance(channel, Channel):
        raise TypeError(f"channel must be a jaxbandits.channels.Channel (e.g. channels.conversions(window=m)), "
                        f"got {type(channel).__name__}")
    check_pair(channel, policy, policy.name if is_policy(policy) else "policy")
    n_arms = V.integer("n_arms", n_arms, lo=1)
    horizon = NEVER - 1 if horizon is None else V.integer("horizon", horizon, lo=1, hi=NEVER - 1)
    if dim is not None:
        dim = V.integer("dim", dim, lo=1)
    fb = channel.feedback
    if fb.spread:
        raise ValueError(f"the channel {channel} spreads rewards over later rounds: the online learner takes "
                         "attributed, conversion or anonymous feedback")
    reveal = int(policy.reveal_window or 0)
    hold_need = (policy.max_hold + 1 if policy.max_hold else 0) if policy.memo_hold else 0
    if policy.memo_hold and not policy.max_hold and max_pending is None:
        raise ValueError(f"{policy.name} holds its deliveries without a bound (max_hold=0): give max_pending")
    if not fb.attributed:
        H = 1  # only the open round's memo is needed
        if max_pending is not None:
            H = V.integer("max_pending", max_pending, lo=1)
    elif max_pending is not None:
        H = V.integer("max_pending", max_pending, lo=1)
        need = max(reveal, hold_need)
        if H < need:
            raise ValueError(f"max_pending must be >= {need} for {policy.name} (its reveal window / hold), got {H}")
    else:
        H = fb.window + 1 if fb.window is not None else DEFAULT_MAX_PENDING
        H = max(H, reveal, hold_need, 1)
    spec = ProblemSpec(n_arms, horizon, dim, fb)
    k = jax.random.key(0)
    st = jax.eval_shape(lambda: policy.init(spec, k))
    action, memo = jax.eval_shape(lambda s: policy.act(s, _ctx0(spec), k), st)
    from .engine.round import check_action

    check_action(policy, policy.name, action)
    if fb.attributed:
        pl = jax.eval_shape(lambda m: policy.payload(m, jnp.float32(1), jnp.int32(0)), memo)
        if pl.ndim != 1:
            raise ValueError(f"{policy.name}: payload must be a 1-d array, got shape {pl.shape}")
        P = int(pl.shape[0])
    else:
        P = 1
    cfg = Config(policy, channel, spec, int(H), P, reveal)
    _check_memory(cfg, max_pending)
    return cfg


def _check_memory(cfg: Config, max_pending):
    """Refuse, before anything is allocated, a learner whose state (its pending ring of
    ``cfg.pending`` slots above all) exceeds the memory available, with the estimate and the limit
    (the allocator would abort the process instead)."""
    from .engine.driver import available_memory

    avail = available_memory()
    if avail is None:
        return
    st = jax.eval_shape(lambda: _init(cfg, jax.random.key(0)))  # traced: nothing allocated
    need = sum(int(np.prod(a.shape)) * a.dtype.itemsize for a in jax.tree.leaves(st))
    if need > avail:
        why = ("max_pending" if max_pending is not None
               else f"the channel's window {cfg.channel.feedback.window} + 1" if cfg.channel.feedback.window is not None
               else "the default")
        raise ValueError(f"the learner's state needs {need / 2**30:.1f} GiB (a pending ring of {cfg.pending} slots, "
                         f"from {why}), more than the {avail / 2**30:.1f} GiB of memory available: give a smaller "
                         "max_pending (or channel window)")


def _ctx0(spec):
    feats = None if spec.dim is None else jnp.zeros((spec.n_arms, spec.dim), _F)
    mask = None if spec.dim is None else jnp.ones((spec.n_arms,), bool)
    return Context(jnp.int32(0), feats, mask, jnp.int32(-1))


def init(policy: Policy, channel, n_arms: int, key, *, horizon: Optional[int] = None, dim: Optional[int] = None,
         max_pending: Optional[int] = None) -> LearnerState:
    """A learner before its first decision. ``key``: a JAX key (or an int seed); ``horizon``: what
    the policy may plan for (``ProblemSpec.horizon``; policies tuned to a known horizon, such as
    Exp3 or ODAAF, need it; default ``2^30 - 1``); ``dim``: the feature dimension of contextual
    policies; ``max_pending``: slots of the pending ring (see the module docstring)."""
    cfg = _config(policy, channel, n_arms, horizon, dim, max_pending)
    if isinstance(key, (int, np.integer)):
        key = jax.random.key(int(key))
    return _init(cfg, key)


def _init(cfg: Config, key) -> LearnerState:
    from .engine.round import run_keys

    keys, _, k_init = run_keys(key, 0)
    pstate = cfg.policy.init(cfg.spec, k_init)
    H, P = cfg.pending, cfg.payload_size
    _, memo = jax.eval_shape(lambda s: cfg.policy.act(s, _ctx0(cfg.spec), k_init), pstate)
    memos = jax.tree.map(lambda m: jnp.zeros((H,) + m.shape, m.dtype), memo)
    pend = Pending(memos, jnp.zeros((H,), _I), jnp.full((H,), -1, _I), jnp.full((H,), NEVER, _I),
                   jnp.zeros((H,), bool), jnp.zeros((H, P), _F))
    z = jnp.zeros((), _I)
    return LearnerState(cfg, pstate, jnp.asarray(-1, _I), jnp.asarray(True), keys.act, pend, jnp.zeros((P,), _F),
                        Counters(*([z] * len(Counters._fields))))


# ----------------------------------------------------------------------------- the round
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
    k_t = M.fold_in(st.act_key, t)  # jax.random.fold_in's bits
    a, memo = cfg.policy.act(pol, ctx, k_t)
    a = jnp.asarray(a, _I)
    # the policy's probability of its choice (docs/ope.md): only when asked (samples > 0, static)
    prop = (chosen_probability(cfg.policy, pol, ctx, k_t, a, memo, samples, cfg.spec.n_arms) if samples
            else jnp.asarray(jnp.nan, _F))
    p, sl = st.pending, t % cfg.pending
    pend = Pending(jax.tree.map(lambda b, v: b.at[sl].set(v), p.memo, memo), p.action.at[sl].set(a),
                   p.round.at[sl].set(t), p.due.at[sl].set(NEVER), p.seen.at[sl].set(False),
                   p.payload.at[sl].set(0.0))
    counts = st.counts._replace(decisions=st.counts.decisions + 1)
    acc = jnp.where(st.play, jnp.zeros_like(st.acc), st.acc)
    return st._replace(policy=pol, t=t, play=jnp.asarray(True), pending=pend, acc=acc, counts=counts), (t, a, prop)


@partial(jax.jit, static_argnames=("n", "samples"))
def _decide(st, feats, masks, delays, n, samples=0):
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
def _decide_upto(st, n, cap, samples=0):
    """``n`` decisions (``1 <= n <= cap``, a traced count) without per-round inputs: one compiled
    program for every ``n`` up to ``cap``; the same rounds and bits as :func:`_decide`."""
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
    decisions are the same bits either way."""
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
        masks = jnp.asarray(masks, bool)
        if masks.shape != (n, spec.n_arms):
            raise ValueError(f"masks must have shape [{n}, {spec.n_arms}], got {masks.shape}")
    if spec.feedback.delay_at_action:
        if delays is None:
            raise ValueError(f"the channel {state.config.channel} shows the delay before acting: give delays i32[n]")
        delays = jnp.asarray(delays, _I)
    elif delays is not None:
        raise ValueError(f"delays given, but the channel {state.config.channel} does not show them before acting")
    samples = V.integer("propensity", propensity, lo=0, hi=2**16)
    st, (ids, arms, props) = _decide(state, contexts, masks, delays, n, samples)
    return (st, ids, arms, props) if samples else (st, ids, arms)


def arm_estimates(policy, pstate):
    """``Policy.estimate`` of a policy state as a list of floats, ``None`` for each arm without one
    yet (NaN), or ``None`` when the policy declares no estimate (docs/online.md)."""
    if policy.estimate is None:
        return None
    return [float(x) if np.isfinite(x) else None for x in np.asarray(policy.estimate(pstate))]


def close_round(state: LearnerState):
    """The policy's state with the open round's arrivals applied (what the next ``decide`` will
    start from): read estimates between decisions without changing the learner."""
    return _close_jit(state)


@jax.jit
def _close_jit(state):
    return jax.lax.cond(state.play, lambda: _closed_policy(state), lambda: state.policy)


# ----------------------------------------------------------------------------- the clock
class Clock(NamedTuple):
    """Your timestamps mapped to rounds: round ``floor((now - origin) / round_length)``.

    ``origin`` and ``round_length`` are numbers in your unit (seconds since the epoch and
    ``60.0``: one-minute rounds), or a ``datetime.datetime`` and a ``datetime.timedelta`` (or
    numpy ``datetime64`` / ``timedelta64``). The mapping runs on the host, exactly for integers,
    datetimes and timedeltas and in float64 for other numbers (a float32 cannot tell seconds apart
    near 1.7e9), so the learner only ever sees integer rounds."""

    origin: Any = 0
    round_length: Any = 1

    def check(self) -> "Clock":
        import datetime as _dt

        o, L = self.origin, self.round_length
        if isinstance(o, (np.datetime64, _dt.datetime)):
            if not isinstance(L, (np.timedelta64, _dt.timedelta)):
                raise TypeError(f"round_length must be a timedelta when the origin is a datetime, got {L!r}")
            if (np.timedelta64(L) if isinstance(L, _dt.timedelta) else L) <= np.timedelta64(0):
                raise ValueError(f"round_length must be > 0, got {L!r}")
            return self
        if isinstance(o, bool) or not isinstance(o, (int, float, np.integer, np.floating)) or not np.isfinite(o):
            raise TypeError(f"origin must be a finite number or a datetime, got {o!r}")
        if isinstance(L, bool) or not isinstance(L, (int, float, np.integer, np.floating)) or not np.isfinite(L) \
                or L <= 0:
            raise ValueError(f"round_length must be a finite number > 0 (in the unit of your timestamps), got {L!r}")
        return self

    def round(self, now) -> int:
        """The round of time ``now`` (a Python int; ``ValueError`` naming ``now`` before the origin)."""
        import datetime as _dt

        o, L = self.origin, self.round_length
        if isinstance(o, (np.datetime64, _dt.datetime)):
            if not isinstance(now, (np.datetime64, _dt.datetime)):
                raise TypeError(f"now must be a datetime (the clock's origin is {o!r}), got {now!r}")
            if isinstance(o, np.datetime64) or isinstance(now, np.datetime64) or isinstance(L, np.timedelta64):
                d = np.datetime64(now, "us") - np.datetime64(o, "us")
                r = int(d // np.timedelta64(L, "us").astype("timedelta64[us]"))
            else:
                r = (now - o) // L
        else:
            if isinstance(now, bool) or not isinstance(now, (int, float, np.integer, np.floating)) \
                    or not np.isfinite(now):
                raise TypeError(f"now must be a finite number in the clock's unit, got {now!r}")
            if all(isinstance(x, (int, np.integer)) for x in (now, o, L)):
                r = (int(now) - int(o)) // int(L)
            else:
                r = math.floor((float(now) - float(o)) / float(L))
        if r < 0:
            raise ValueError(f"now={now!r} is before the clock's origin {o!r}")
        if r > MAX_ROUND:
            raise ValueError(f"now={now!r} is round {r} of the clock, beyond the last round {MAX_ROUND} "
                             "(a later origin or longer rounds?)")
        return int(r)

    def to_json(self) -> dict:
        import datetime as _dt

        o, L = self.origin, self.round_length
        if isinstance(o, (np.datetime64, _dt.datetime)):
            return {"origin": str(np.datetime64(o, "us")), "round_length_us": int(np.timedelta64(L, "us")
                                                                                  .astype(np.int64)),
                    "kind": "datetime"}
        return {"origin": o.item() if hasattr(o, "item") else o,
                "round_length": L.item() if hasattr(L, "item") else L, "kind": "number"}

    @classmethod
    def from_json(cls, d: dict) -> "Clock":
        if d.get("kind") == "datetime":
            import datetime as _dt

            return cls(np.datetime64(d["origin"], "us").astype(_dt.datetime),
                       _dt.timedelta(microseconds=int(d["round_length_us"])))
        return cls(d["origin"], d["round_length"])


#: The last round a clock may reach (round indices plus delays and holds fit int32, conventions §3).
MAX_ROUND = NEVER - 2**24


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
    (clocks never go back). Cost: one ``update`` per round passed."""
    cfg = state.config
    if not cfg.spec.feedback.attributed:
        raise ValueError(f"the clock cannot leave rounds idle on the anonymous channel {cfg.channel}: its policies "
                         "follow their own schedule of plays (one decision per round; use the decision count)")
    if clock is not None:
        r = clock.check().round(now)
    else:
        r = V.integer("now", now, lo=0, hi=MAX_ROUND)
    return _advance_jit(state, jnp.asarray(r, _I))


# ----------------------------------------------------------------------------- feedback
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


def _decision_ids(ids) -> np.ndarray:
    """Decision ids as int64[E]: integers only (no booleans, no fractions: an id is never rounded);
    ids outside int64 (Python ints of any size) are no decision's, and become -1 (code unknown)."""
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
    docstring (:data:`CODES`). Nothing is raised for a bad event: it is counted."""
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
    """Counters and the clock, as Python numbers."""
    c = {k: int(v) for k, v in state.counts._asdict().items()}
    p = state.pending
    t = int(state.t)
    live = np.asarray(p.round) >= max(t - state.config.pending + 1, 0)
    c["round"] = t
    c["pending"] = int(np.sum(live & (np.asarray(p.round) >= 0)))
    return c


# ----------------------------------------------------------------------------- save / load
def _version():
    from ._version import __version__

    return __version__


def _layout(state):
    leaves, treedef = jax.tree.flatten(state.tree_flatten()[0])  # the arrays, without the static config
    out = []
    for x in leaves:
        if jnp.issubdtype(x.dtype, jax.dtypes.prng_key):
            kd = jax.random.key_data(x)
            out.append({"key": str(jax.random.key_impl(x)), "shape": list(kd.shape), "dtype": str(kd.dtype)})
        else:
            out.append({"shape": list(x.shape), "dtype": str(x.dtype)})
    return leaves, treedef, out


def _header(state, extra=None):
    cfg = state.config
    spec = cfg.spec
    _, treedef, layout = _layout(state)
    h = {"format": FORMAT, "format_version": FORMAT_VERSION, "library_version": _version(),
         "policy": cfg.policy.name, "channel": str(cfg.channel), "n_arms": spec.n_arms, "horizon": spec.horizon,
         "dim": spec.dim, "max_pending": cfg.pending, "payload_size": cfg.payload_size, "reveal": cfg.reveal,
         "treedef": str(treedef), "leaves": layout}
    if extra:
        h["extra"] = extra
    return h


def _write(state: LearnerState, f, extra=None) -> None:
    leaves, _, _ = _layout(state)
    arrays = {}
    for i, x in enumerate(leaves):
        if jnp.issubdtype(x.dtype, jax.dtypes.prng_key):
            x = jax.random.key_data(x)
        arrays[f"leaf_{i}"] = np.asarray(x)
    head = json.dumps(_header(state, extra), sort_keys=True)
    arrays["header"] = np.frombuffer(head.encode(), np.uint8)
    np.savez(f, **arrays)


def save(state: LearnerState, path, extra: Optional[dict] = None) -> None:
    """Write the whole learner to one ``.npz`` file (numpy's format, no pickle): arrays
    ``leaf_0..leaf_{n-1}`` (the state's leaves; PRNG keys as their key data) and ``header``, a JSON
    document (format ``"jaxbandits.online"``, ``format_version``, ``library_version``, policy
    name, channel, sizes, the state's tree layout, and ``extra``: JSON-able data of the caller).
    The file is written atomically (a temporary file flushed to disk, then renamed)."""
    from ._io import atomic_write

    def writer(tmp):
        with open(tmp, "wb") as f:
            _write(state, f, extra)

    atomic_write(path, writer)


def dumps(state: LearnerState, extra: Optional[dict] = None) -> bytes:
    """The bytes :func:`save` would write (for a database blob)."""
    import io

    buf = io.BytesIO()
    _write(state, buf, extra)
    return buf.getvalue()


def loads(data: bytes, policy: Policy, channel, *, return_extra: bool = False):
    """:func:`load` from the bytes of :func:`dumps`."""
    import io

    return load(io.BytesIO(data), policy, channel, return_extra=return_extra)


@contextlib.contextmanager
def _open(path):
    """The saved learner's arrays; a damaged or truncated file is a ValueError naming it."""
    import zipfile

    try:
        if hasattr(path, "read"):
            path.seek(0)
            z = np.load(path, allow_pickle=False)
        else:
            z = np.load(str(path), allow_pickle=False)
        with z:
            yield z
    except FileNotFoundError:
        raise
    except (zipfile.BadZipFile, EOFError, OSError, KeyError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ValueError(f"{_name(path)}: not a readable saved jaxbandits learner (damaged or truncated file: "
                         f"{type(e).__name__}: {e})") from None


def read_header(path) -> dict:
    """The JSON header of a saved learner (no arrays are built)."""
    with _open(path) as z:
        if "header" not in z.files:
            raise ValueError(f"{_name(path)}: not a saved jaxbandits learner (no header)")
        h = json.loads(bytes(z["header"]).decode())
    if not isinstance(h, dict) or h.get("format") != FORMAT:
        raise ValueError(f"{_name(path)}: not a saved jaxbandits learner (format "
                         f"{h.get('format') if isinstance(h, dict) else h!r})")
    missing = [k for k in _HEADER_KEYS if k not in h]
    if missing:
        raise ValueError(f"{_name(path)}: its header lacks the key {missing[0]!r} (a damaged or edited saved learner)")
    return h


#: the header keys :func:`load` reads
_HEADER_KEYS = ("format_version", "library_version", "policy", "channel", "n_arms", "horizon", "dim", "max_pending",
                "treedef", "leaves")


def _name(path):
    return "(bytes)" if hasattr(path, "read") else str(path)


def _compatible(a: str, b: str) -> bool:
    return a.split(".")[:2] == b.split(".")[:2]


def load(path, policy: Policy, channel, *, return_extra: bool = False):
    """The learner saved in ``path``, for ``policy`` on ``channel`` (the functions are yours; the
    file holds their state). Refuses, naming what differs: another format version, a library
    version of another major.minor, another policy name or channel, or another state layout."""
    h = read_header(path)
    name = _name(path)
    if h["format_version"] != FORMAT_VERSION:
        raise ValueError(f"{name}: format version {h['format_version']}, this library reads version {FORMAT_VERSION}")
    if not _compatible(h["library_version"], _version()):
        raise ValueError(f"{name}: saved by jaxbandits {h['library_version']}, incompatible with this "
                         f"jaxbandits {_version()} (the major.minor versions differ)")
    if not is_policy(policy):
        raise TypeError(f"policy must be a jaxbandits Policy, got {type(policy).__name__}")
    if policy.name != h["policy"]:
        raise ValueError(f"{name}: saved for policy {h['policy']!r}, cannot load into {policy.name!r}")
    if str(channel) != h["channel"]:
        raise ValueError(f"{name}: saved for channel {h['channel']}, cannot load into {channel}")
    cfg = _config(policy, channel, h["n_arms"], h["horizon"], h["dim"], h["max_pending"])
    template = _init(cfg, jax.random.key(0))
    leaves, treedef, layout = _layout(template)
    if str(treedef) != h["treedef"] or layout != h["leaves"]:
        raise ValueError(f"{name}: the saved state's layout differs from {policy.name}'s state on {channel} "
                         f"(other parameters or another library version?): refusing to load")
    new = []
    with _open(path) as z:
        for i, (x, lay) in enumerate(zip(leaves, layout)):
            if f"leaf_{i}" not in z.files:
                raise ValueError(f"{name}: lacks the array 'leaf_{i}' of the saved state (a damaged or edited file)")
            a = z[f"leaf_{i}"]
            if "key" in lay:
                new.append(jax.random.wrap_key_data(jnp.asarray(a), impl=jax.random.key_impl(x)))
            else:
                new.append(jnp.asarray(a, x.dtype))
    state = LearnerState(cfg, *jax.tree.unflatten(treedef, new))
    return (state, h.get("extra")) if return_extra else state


# ----------------------------------------------------------------------------- stateful wrapper
def _pad(n, least=1):
    return max(1 << max(int(n) - 1, 0).bit_length(), least)


class Learner:
    """A stateful wrapper with arm names (strings or any hashable), for people who want
    ``learner.decide()``. ``arms``: a list of names, or the number of arms (names ``0..K-1``).
    Decision and feedback batches are padded to powers of two (few compilations)."""

    def __init__(self, policy: Policy, channel, arms, key=0, *, horizon=None, dim=None, max_pending=None,
                 clock: Optional[Clock] = None, _state=None):
        if isinstance(arms, (int, np.integer)) and not isinstance(arms, bool):
            arms = list(range(V.integer("arms", arms, lo=1)))
        arms = list(arms)
        if not arms:
            raise ValueError("arms must name at least one arm")
        if len(set(arms)) != len(arms):
            raise ValueError(f"arm names must be distinct, got {arms}")
        self.arms = arms
        self.index = {a: i for i, a in enumerate(arms)}
        self.policy, self.channel = policy, channel
        self.clock = clock.check() if clock is not None else None
        self.state = _state if _state is not None else init(policy, channel, len(arms), key, horizon=horizon,
                                                            dim=dim, max_pending=max_pending)

    def advance(self, now) -> int:
        """Move the clock to ``now`` (a timestamp of the learner's :class:`Clock`, or a round
        number without one; see :func:`advance`). Returns the open round."""
        self.state = advance(self.state, now, self.clock)
        return int(self.state.t)

    def decide(self, n: Optional[int] = None, contexts=None, masks=None, delays=None, *, now=None,
               propensity: int = 0):
        """``(ids, arm names)`` of ``n`` decisions (one if ``n`` and contexts are not given);
        ``now``: advance the clock to it first. Without contexts, masks or delays, one compiled
        program serves every ``n`` up to the next power of two (at least 64). ``propensity=S``:
        ``(ids, arm names, probabilities)``, each chosen arm's probability (see :func:`decide`)."""
        if now is not None:
            self.advance(now)
        if contexts is None and masks is None and delays is None and not self.state.config.spec.feedback.delay_at_action \
                and self.state.config.spec.dim is None:
            n = 1 if n is None else V.integer("n", n, lo=1, hi=2**24)
            samples = V.integer("propensity", propensity, lo=0, hi=2**16)
            self.state, ids, arms, props = _decide_upto(self.state, jnp.asarray(n, _I), max(_pad(n), 64), samples)
            ids, arms, props = np.asarray(ids)[:n], np.asarray(arms)[:n], np.asarray(props)[:n]
        else:
            out = decide(self.state, n, contexts, masks, delays, propensity=propensity)
            self.state, ids, arms = out[:3]
            props = out[3] if propensity else None
        names = [self.arms[i] for i in np.asarray(arms)]
        if propensity:
            return np.asarray(ids).tolist(), names, np.asarray(props, np.float64).tolist()
        return np.asarray(ids).tolist(), names

    def feedback(self, ids=None, rewards=None, *, y=None, now=None) -> list:
        """Events arriving now (see :func:`feedback`); returns the code name of each event.
        ``now``: advance the clock to it first (the events arrive in that round)."""
        if now is not None:
            self.advance(now)
        if y is not None:
            y = np.atleast_1d(np.asarray(y, np.float32))
            n = y.shape[0]
            if n == 0:
                return []
            m = _pad(n, 8)
            yy = np.zeros(m, np.float32)
            yy[:n] = y
            self.state, codes = feedback(self.state, y=yy, valid=np.arange(m) < n)
            return [CODES[c] for c in np.asarray(codes)[:n]]
        ids = _decision_ids(ids)
        n = ids.shape[0]
        if rewards is not None:
            rewards = np.atleast_1d(np.asarray(rewards, np.float32))
            if rewards.shape != (n,):
                raise ValueError(f"rewards must give one reward per id: {n} id(s), got rewards of shape "
                                 f"{rewards.shape}")
            bad = ~(np.abs(rewards) <= REWARD_LIMIT)
            if bad.any():
                i = int(np.argmax(bad))
                raise ValueError(f"rewards[{i}] must be finite with |reward| <= 2**96 (so that the float32 sums of "
                                 f"2**31 of them stay finite), got {rewards[i]!r}")
        if n == 0:
            return []
        m = _pad(n, 8)
        ii = np.full(m, -1, np.int64)
        ii[:n] = ids
        rr = None
        if rewards is not None:
            rr = np.zeros(m, np.float32)
            rr[:n] = rewards
            if self.state.config.spec.feedback.zeros_observed is False:
                rr[n:] = 1.0
        self.state, codes = feedback(self.state, ii, rr, valid=np.arange(m) < n)
        return [CODES[c] for c in np.asarray(codes)[:n]]

    def arm_index(self, name) -> int:
        if name not in self.index:
            raise KeyError(f"unknown arm {name!r}; the arms are {self.arms}")
        return self.index[name]

    def stats(self) -> dict:
        return stats(self.state)

    def estimates(self) -> dict:
        """``{arm: the policy's estimate of its mean}`` (``Policy.estimate`` of the state with the
        open round closed: what the next decision sees; ``None`` where it has none yet), or
        ``None`` when the policy declares no estimate."""
        est = arm_estimates(self.policy, close_round(self.state))
        return None if est is None else dict(zip(self.arms, est))

    def save(self, path) -> None:
        extra = {"arms": [str(a) if not isinstance(a, (int, float)) else a for a in self.arms]}
        if self.clock is not None:
            extra["clock"] = self.clock.to_json()
        save(self.state, path, extra=extra)

    @classmethod
    def load(cls, path, policy: Policy, channel) -> "Learner":
        state, extra = load(path, policy, channel, return_extra=True)
        extra = extra or {}
        arms = extra.get("arms") or list(range(state.config.spec.n_arms))
        clock = Clock.from_json(extra["clock"]) if extra.get("clock") else None
        return cls(policy, channel, arms, clock=clock, _state=state)
