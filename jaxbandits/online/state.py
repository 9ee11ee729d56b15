"""The online learner's state and how it is set up: :class:`Config` (everything static),
:class:`Pending` (the ring of pending decisions), :class:`Counters`, :class:`LearnerState` (a
pytree) and :func:`init`. A policy is checked against its channel and sized by the engine's own
checks (:func:`jaxbandits.engine.round.check_pair`, :func:`~jaxbandits.engine.round.policy_shapes`),
and its keys are the simulator's (:func:`~jaxbandits.engine.round.run_keys`).
"""
from __future__ import annotations

from typing import Any, NamedTuple, Optional

import jax
import jax.numpy as jnp
import numpy as np

from ..core import validate as V
from ..channels import Channel
from ..engine.round import check_pair, policy_shapes, run_keys
from ..core.types import NEVER, Context, Policy, ProblemSpec
from ..core.values import is_policy

_F = jnp.float32
_I = jnp.int32

DEFAULT_MAX_PENDING = 4096

#: Event codes (the module docstring of :mod:`jaxbandits.online`)
ACCEPTED, UNKNOWN, OUTSIDE_WINDOW, EXPIRED, DUPLICATE, INVALID = range(6)
CODES = ("accepted", "unknown", "outside_window", "expired", "duplicate", "invalid")


class Config(NamedTuple):
    """Everything static about a learner (hashable: the jitted functions specialise on it).

    Attributes:
        policy: the policy (a library value or a user's :class:`~jaxbandits.core.types.Policy`).
        channel: the feedback channel (:mod:`jaxbandits.channels`).
        spec: the :class:`~jaxbandits.core.types.ProblemSpec` the policy was set up for (arms,
            horizon, feature dimension, feedback).
        pending: ``H``, the slots of the pending ring (see :mod:`jaxbandits.online`).
        payload_size: ``P``, the length of the policy's feedback payload.
        reveal: the policy's reveal window (0: none).
    """

    policy: Policy
    channel: Any
    spec: ProblemSpec
    pending: int  # H, slots of the pending ring
    payload_size: int  # P
    reveal: int  # the policy's reveal window (0: none)


class Pending(NamedTuple):
    """The ring of pending decisions: decision ``s`` at slot ``s mod H``.

    Attributes:
        memo: the policy's memos, each leaf with a leading ``[H]``.
        action: i32[H], the arm each slot's decision chose.
        round: i32[H], the decision round of each slot (-1: empty).
        due: i32[H], the delivery round of the slot's accepted event (``NEVER``: none).
        seen: bool[H], an event was accepted for the slot (duplicates are refused).
        payload: f32[H, P], the policy's payload of the accepted event.
    """

    memo: Any  # the policy's memos, each leaf with a leading [H]
    action: Any  # i32[H]
    round: Any  # i32[H] decision round of the slot (-1: empty)
    due: Any  # i32[H] delivery round of its accepted event (NEVER: none)
    seen: Any  # bool[H] an event was accepted (duplicates are refused)
    payload: Any  # f32[H, P] the policy's payload of the accepted event


class Counters(NamedTuple):
    """How many decisions were made and how many events got each code (i32 scalars; the codes
    are in :mod:`jaxbandits.online`'s module docstring and :data:`CODES`).

    Attributes:
        decisions: decisions made.
        accepted: events stored (code 0).
        unknown: events about no decision made (code 1).
        outside_window: conversions later than the channel's window (code 2).
        expired: events about decisions that left the pending ring (code 3).
        duplicate: second events about the same decision (code 4).
        invalid: rewards or aggregates that are not finite (code 5).
    """

    decisions: Any
    accepted: Any
    unknown: Any
    outside_window: Any
    expired: Any
    duplicate: Any
    invalid: Any


@jax.tree_util.register_pytree_node_class
class LearnerState:
    """The learner's state: a pytree (its :class:`Config` is static aux data, ``config``).

    Attributes:
        policy: the policy's state.
        t: i32, the open round (-1: none yet).
        play: bool, the open round has its decision (``False``: reached by :func:`~jaxbandits.online.pure.advance`,
            idle so far).
        act_key: the key the rounds' action keys are folded from (``fold_in(act_key, t)``).
        pending: the :class:`Pending` ring of decisions awaiting feedback.
        acc: f32[P], the anonymous channels' sum of the aggregates of round ``t``.
        counts: the :class:`Counters`.
    """

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


def configure(policy, channel, n_arms, horizon, dim, max_pending) -> Config:
    """The learner's :class:`Config`: every argument checked, the pending ring sized (see
    :mod:`jaxbandits.online`), the policy traced against its channel as the simulator's
    :func:`~jaxbandits.engine.round.problem` traces it; nothing is allocated or compiled.

    Args:
        policy: the policy (a :class:`~jaxbandits.core.types.Policy`).
        channel: a :class:`~jaxbandits.channels.Channel` with attributed, conversion or
            anonymous feedback (not one that spreads rewards over later rounds).
        n_arms: the number of arms, ``>= 1``.
        horizon: what the policy may plan for, ``1 <= horizon < 2^30``; ``None``: ``2^30 - 1``.
        dim: the feature dimension of a contextual policy, ``>= 1``; ``None``: K-armed.
        max_pending: slots of the pending ring, ``>= 1`` (and at least the policy's reveal
            window and ``max_hold + 1``); ``None``: the channel's window ``+ 1``, else 4096.

    Returns:
        Config: the learner's static description.

    Raises:
        TypeError: ``channel`` is not a :class:`~jaxbandits.channels.Channel`.
        ValueError: an argument out of its range, a policy that does not fit the channel, a
            spreading channel, or a state larger than the memory available.

    Example:
        >>> from jaxbandits import channels
        >>> from jaxbandits.policies import classic
        >>> cfg = configure(classic.ucb1(), channels.conversions(window=10), 3, None, None, None)
        >>> cfg.pending, cfg.spec.n_arms
        (11, 3)
    """
    if not isinstance(channel, Channel):
        raise TypeError(f"channel must be a jaxbandits.channels.Channel (e.g. channels.conversions(window=m)), "
                        f"got {type(channel).__name__}")
    label = policy.name if is_policy(policy) else "policy"
    check_pair(channel, policy, label)
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
    P = policy_shapes(policy, spec, _ctx0(spec), label).payload_size  # the simulator's checks and sizes
    cfg = Config(policy, channel, spec, int(H), P, reveal)
    _check_memory(cfg, max_pending)
    return cfg


def _check_memory(cfg: Config, max_pending):
    """Refuse, before anything is allocated, a learner whose state (its pending ring of
    ``cfg.pending`` slots above all) exceeds the memory available, with the estimate and the limit
    (the allocator would abort the process instead)."""
    from ..engine.memory import available_memory

    avail = available_memory()
    if avail is None:
        return
    st = jax.eval_shape(lambda: initial_state(cfg, jax.random.key(0)))  # traced: nothing allocated
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
    policies; ``max_pending``: slots of the pending ring (see the module docstring).

    Args:
        policy: the policy (a :class:`~jaxbandits.core.types.Policy`).
        channel: a :class:`~jaxbandits.channels.Channel` with attributed, conversion or
            anonymous feedback.
        n_arms: the number of arms, ``>= 1``.
        key: a JAX PRNG key, or an int seed.
        horizon: what the policy may plan for, ``1 <= horizon < 2^30``; ``None``: ``2^30 - 1``.
        dim: the feature dimension of a contextual policy, ``>= 1``; ``None``: K-armed.
        max_pending: slots of the pending ring, ``>= 1``; ``None``: sized from the channel.

    Returns:
        LearnerState: the learner before its first decision (no round open, ``t = -1``).

    Raises:
        TypeError: ``channel`` is not a :class:`~jaxbandits.channels.Channel`.
        ValueError: an argument out of its range or a policy that does not fit the channel
            (see :func:`configure`).

    Example:
        >>> from jaxbandits import channels
        >>> from jaxbandits.policies import classic
        >>> init(classic.ucb1(), channels.attributed(), 3, 0)
        LearnerState(UCB1, attributed(), t=-1)
    """
    cfg = configure(policy, channel, n_arms, horizon, dim, max_pending)
    if isinstance(key, (int, np.integer)):
        key = jax.random.key(int(key))
    return initial_state(cfg, key)


def initial_state(cfg: Config, key) -> LearnerState:
    """The state of a learner of ``cfg`` before its first decision, from ``key`` (run 0's keys).

    Args:
        cfg: the learner's :class:`Config` (from :func:`configure`).
        key: a JAX PRNG key.

    Returns:
        LearnerState: the learner before its first decision (``t = -1``).

    Example:
        >>> import jax
        >>> from jaxbandits import channels
        >>> from jaxbandits.policies import classic
        >>> cfg = configure(classic.ucb1(), channels.conversions(window=10), 3, None, None, None)
        >>> initial_state(cfg, jax.random.key(0))
        LearnerState(UCB1, conversions(window=10), t=-1)
    """
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
