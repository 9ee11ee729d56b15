"""Feedback channels: what reaches the policy, and when (docs/architecture.md, conventions §3-4).

A channel is a component, optax style: an object of pure functions over its own fixed-shape state,
which declares what it reveals in a typed :class:`~jaxbandits.types.Feedback` record::

    feedback                                   # Feedback: what the policy may see
    width(world, horizon, payload_size, n_runs, max_hold) -> int    # host, before compiling
    init(spec: ChannelSpec)        -> state
    init_keyed(spec, key)          -> state # what the engine calls; default: init(spec)
    round(spec, state, play: Play) -> (state, Delivery)
    lost(state)                    -> i32   # records dropped because their lag was >= W

The five channels of the papers are below. A user's channel is a class of their own with these
methods (docs/composing.md has complete ones: conversions reported in batches, and conversions
reported for a random 70% of users).

Randomness (conventions §8): a channel has a stream of its own, ``k_ch = fold_in(k_run, 2)``,
from which no world or policy key is derived. ``init_keyed`` receives ``fold_in(k_ch, 0)``;
``round`` receives the key of round ``t``, ``fold_in(fold_in(k_ch, 1), t)``, as ``play.key``. A
deterministic channel ignores both (``init(spec)`` alone, as before); a random one overrides
``init_keyed`` when its initial state is random and draws from ``play.key`` in ``round``. Drawing
from it changes no world draw and no policy key: comparisons stay paired.

The calendar: the record of the play of round ``s`` goes into a ring of shape ``[W, P]`` at slot
``(s + lag) mod W``; at round ``t`` slot ``t mod W`` is read and handed to the policy. Cost per
round is ``O(P)`` (``O(W)`` for the composite channel) whatever the number of outstanding plays.
All writes come first (clear the slot read last round, insert this round's record), then the one
read (:mod:`jaxbandits.ring`). A record with lag ``>= W`` that would otherwise be delivered is
dropped, never aliased, and counted in ``lost_to_W`` unless its value is all zeros.
"""
from __future__ import annotations

import dataclasses
from typing import Any, NamedTuple, Optional

import jax
import jax.numpy as jnp

from . import _validate as V
from . import ring
from .types import NEVER, Delivery, Feedback, Play
from .values import constructor

_F = jnp.float32


class ChannelSpec(NamedTuple):
    """Static sizes of a channel in one simulation (fixed before compiling).

    Attributes:
        horizon: the number of rounds ``T``.
        width: ``W``, the calendar length.
        payload_size: ``P``, the length of a play's record.
        reveal: ``H`` of the reveal ring (a policy's ``reveal_window``); 0: none.
    """

    horizon: int
    width: int  # W, the calendar length
    payload_size: int  # P
    reveal: int = 0  # H of the reveal ring (a policy's reveal_window), 0: none


class Calendar(NamedTuple):
    """The calendar ring of a channel's state (module docstring, "The calendar").

    Attributes:
        buf: f32[W, P]: slot ``j`` holds the sum of what arrives at the next round ``= j mod W``.
        lost: i32, the records dropped because their lag was ``>= W``.
    """

    buf: jax.Array  # f32[W, P]: slot j holds the sum of what arrives at the next round = j mod W
    lost: jax.Array  # i32: records dropped because their lag was >= W


def calendar_init(width: int, size: int) -> Calendar:
    """An empty calendar.

    Args:
        width: ``W``, the number of slots, an integer ``>= 1``.
        size: ``P``, the length of a record, an integer ``>= 1``.

    Returns:
        A :class:`Calendar` of zeros (``buf`` f32[W, P], ``lost`` 0).

    Examples:
        >>> from jaxbandits.channels import calendar_init
        >>> calendar_init(4, 2).buf.shape
        (4, 2)
    """
    return Calendar(jnp.zeros((width, size), _F), jnp.zeros((), jnp.int32))


def calendar_round(cal: Calendar, t, value, lag, deliverable):
    """One round of the calendar: clear last round's slot, insert ``value`` at ``t + lag`` if it is
    ``deliverable`` and ``lag < W``, then read slot ``t``. Returns ``(calendar, arrived[P])``.
    With ``W = 1`` nothing waits: the record of lag 0 arrives at once and no buffer is touched.

    Args:
        cal: the :class:`Calendar` after round ``t - 1``.
        t: the round, i32.
        value: f32[P], the record of the play of round ``t``.
        lag: i32, its lag: it arrives at round ``t + lag``.
        deliverable: bool, whether it arrives at all (a record with ``lag >= W`` that would is
            dropped and counted in ``lost`` unless it is all zeros).

    Returns:
        ``(calendar, arrived)``: the calendar after round ``t`` and f32[P], the sum of the records
        arriving at ``t``.

    Examples:
        >>> import jax.numpy as jnp
        >>> from jaxbandits.channels import calendar_init, calendar_round
        >>> cal = calendar_init(4, 1)
        >>> cal, got = calendar_round(cal, 0, jnp.array([1.0]), 2, True)  # arrives at round 2
        >>> cal, got = calendar_round(cal, 1, jnp.array([0.5]), 9, True)  # lag >= W: lost
        >>> cal, got = calendar_round(cal, 2, jnp.array([0.0]), 0, False)
        >>> got, cal.lost
        (Array([1.], dtype=float32), Array(1, dtype=int32))
    """
    W = cal.buf.shape[0]
    if W == 1:
        fits = lag < 1
        arrived = 0.0 + jnp.where(deliverable & fits, value, 0.0)  # 0 + x, as the buffer's slot
        lost = cal.lost + (deliverable & ~fits & jnp.any(value != 0)).astype(jnp.int32)
        return Calendar(cal.buf, lost), arrived
    buf = ring.clear(cal.buf, t - 1)
    fits = lag < W
    buf = ring.add(buf, t + jnp.minimum(lag, W), value, deliverable & fits)
    lost = cal.lost + (deliverable & ~fits & jnp.any(value != 0)).astype(jnp.int32)
    return Calendar(buf, lost), ring.get(buf, t)


def calendar_round_profile(cal: Calendar, t, spread):
    """Composite insertion: ``spread[l]`` (length ``W``) lands at round ``t + l``; O(W).

    The spread is rotated by ``t`` (a dynamic slice of ``[spread, spread]``) and added densely:
    under ``vmap`` a W-element scatter per round was ~100x slower on XLA:CPU (W = 4096).

    Args:
        cal: the :class:`Calendar` after round ``t - 1`` (``P = 1``).
        t: the round, i32.
        spread: f32[W], the part of the play's reward landing at each lag ``0 .. W-1``.

    Returns:
        ``(calendar, arrived)``: the calendar after round ``t`` and f32[1], the sum arriving at
        ``t``.

    Examples:
        >>> import jax.numpy as jnp
        >>> from jaxbandits.channels import calendar_init, calendar_round_profile
        >>> cal = calendar_init(3, 1)
        >>> cal, got = calendar_round_profile(cal, 0, jnp.array([0.5, 0.3, 0.2]))
        >>> cal, got = calendar_round_profile(cal, 1, jnp.array([1.0, 0.0, 0.0]))
        >>> got
        Array([1.3], dtype=float32)
    """
    W = cal.buf.shape[0]
    buf = ring.clear(cal.buf, t - 1)
    rolled = jax.lax.dynamic_slice(jnp.concatenate([spread, spread]), ((W - t % W) % W,), (W,))
    buf = buf + rolled[:, None]
    return Calendar(buf, cal.lost), ring.get(buf, t)


class CalendarState(NamedTuple):
    """The state of a calendar channel (:class:`CalendarChannel`, :class:`Composite`).

    Attributes:
        cal: the :class:`Calendar` of records in flight.
        due: i32[H], the reveal ring: the delivery round of each of the last ``H`` plays, or
            ``NEVER``.
    """

    cal: Calendar
    due: Any  # i32[H] reveal ring: delivery round of each of the last H plays, or NEVER


def _width(width):
    return None if width is None else V.integer("width", width, lo=1)


class Channel:
    """Base of the channels: the protocol (see the module docstring) and the calendar sizing.

    ``width`` (an attribute) fixes the calendar length ``W``; ``None`` takes the safe default of
    :meth:`resolve_width`."""

    feedback: Feedback = Feedback()
    width: Optional[int] = None

    # -- host-side sizing --------------------------------------------------------------------
    def exact_width(self, max_delay: int, horizon: int, max_hold: int = 0) -> int:
        """The smallest ``W`` that loses nothing: every deliverable lag is ``< W``."""
        bound = horizon  # a lag >= T - s never arrives anyway
        m = self.feedback.window
        if m is not None:
            bound = min(bound, max(m, max_hold) + 1)
        bound = min(bound, max(max_delay, max_hold) + 1)
        return max(int(bound), 1)

    def resolve_width(self, env, horizon: int, payload_size: int, n_runs: int, max_hold: int = 0,
                      budget_bytes: int = 2 << 30) -> int:
        """``width`` if given, else the exact width when the calendars of all runs fit in
        ``budget_bytes``; otherwise the ``1 - 2^-23`` quantile of the world's delay law plus one
        (losses, if any, are counted in ``lost_to_W``)."""
        if self.width is not None:
            return self.width
        exact = self.exact_width(env.max_delay, horizon, max_hold)
        if exact * payload_size * 4 * n_runs <= budget_bytes:
            return exact
        if env.delay is None:
            return exact
        q = int(env.delay.ppf(jnp.asarray(1.0 - 2.0**-23, _F)))
        cap = max(1, budget_bytes // (payload_size * 4 * max(n_runs, 1)))
        return int(max(1, min(exact, max(q + 1, min(cap, exact)))))

    # -- the component -----------------------------------------------------------------------
    def init(self, spec: ChannelSpec):
        """The state before round 0 of a deterministic channel (a random one overrides
        :meth:`init_keyed` instead).

        Args:
            spec: the :class:`ChannelSpec` (horizon, width ``W``, payload size ``P``, reveal ``H``).

        Returns:
            The channel's state, a pytree of fixed shape.
        """
        raise NotImplementedError

    def init_keyed(self, spec: ChannelSpec, key):
        """The state before round 0, given the channel's init key ``fold_in(k_ch, 0)``
        (conventions §8): what the engine calls. The default ignores the key and returns
        ``init(spec)``; a channel whose initial state is random overrides this."""
        return self.init(spec)

    def round(self, spec: ChannelSpec, state, play: Play):
        """Take the play of round ``t`` and hand over what arrives at ``t`` (pure).

        Args:
            spec: the :class:`ChannelSpec`.
            state: the channel's state after round ``t - 1``.
            play: the :class:`~jaxbandits.types.Play` of round ``t``; a random channel draws from
                ``play.key``, the channel's key of round ``t`` (conventions §8).

        Returns:
            ``(state, delivery)``: the state after round ``t`` and a
            :class:`~jaxbandits.types.Delivery` (f32[P] payload, reveal ages or None).
        """
        raise NotImplementedError

    def lost(self, state):
        """The records dropped so far because their lag was ``>= W`` (reported as ``lost_to_W``).

        Args:
            state: the channel's state.

        Returns:
            i32, the count.
        """
        raise NotImplementedError


class CalendarChannel(Channel):
    """A channel that delivers one record per play through the calendar. Subclasses say what the
    record of a play is: :meth:`record` returns ``(value f32[P], lag i32, deliverable bool)``."""

    def record(self, spec: ChannelSpec, play: Play):
        """The record of the play of round ``t``: what arrives, after how long, and whether at all.

        Args:
            spec: the :class:`ChannelSpec`.
            play: the :class:`~jaxbandits.types.Play` of round ``t`` (``play.key``: the channel's key
                of round ``t``, for a random channel).

        Returns:
            ``(value, lag, deliverable)``: f32[P], i32 (``max(delay, hold)``, usually) and bool.
        """
        raise NotImplementedError

    def init(self, spec: ChannelSpec) -> CalendarState:
        return CalendarState(calendar_init(spec.width, spec.payload_size),
                             jnp.full((spec.reveal,), NEVER, jnp.int32))

    def round(self, spec: ChannelSpec, state: CalendarState, play: Play):
        t = play.t
        value, lag, deliverable = self.record(spec, play)
        deliverable = deliverable & (lag <= spec.horizon - 1 - t)  # later than T - 1: never
        cal, arrived = calendar_round(state.cal, t, jnp.asarray(value, _F), lag, deliverable)
        due, rev_age = state.due, None
        if spec.reveal > 0:  # reveal ages: a play-indexed ring of delivery rounds; write, then read
            H = spec.reveal
            due = ring.put(due, t, jnp.where(deliverable & (lag < H), t + lag, NEVER).astype(jnp.int32))
            rounds, valid = ring.window(due, t)
            rev_age = (rounds == t) & valid
        return CalendarState(cal, due), Delivery(arrived, rev_age)

    def lost(self, state: CalendarState):
        return state.cal.lost


def _lag(play: Play):
    d = jnp.asarray(play.outcome.delay, jnp.int32)
    return d, jnp.maximum(d, jnp.asarray(play.hold, jnp.int32))


@dataclasses.dataclass(frozen=True)
class Attributed(CalendarChannel):
    """Each arrival carries the policy's payload of its play (timestamped / attributed feedback).

    Attributes:
        width: the calendar length ``W`` (None: :meth:`~Channel.resolve_width`'s default).
    """

    width: Optional[int] = None
    feedback = Feedback(attributed=True, zeros_observed=True)

    def record(self, spec, play):
        d, lag = _lag(play)
        return play.payload(jnp.asarray(play.outcome.reward, _F), d), lag, d < NEVER

    def __str__(self):
        return "attributed()" if self.width is None else f"attributed(width={self.width})"


@dataclasses.dataclass(frozen=True)
class ActionTime(Attributed):
    """As attributed, and the delay ``d_t`` is revealed in the context before acting.

    Attributes:
        width: the calendar length ``W`` (None: :meth:`~Channel.resolve_width`'s default).
    """

    width: Optional[int] = None
    feedback = Feedback(attributed=True, zeros_observed=True, delay_at_action=True)

    def __str__(self):
        return "action_time()" if self.width is None else f"action_time(width={self.width})"


@dataclasses.dataclass(frozen=True)
class Anonymous(CalendarChannel):
    """Only the sum ``y_t`` of the rewards arriving at round ``t``: arm and origin hidden.

    Attributes:
        width: the calendar length ``W`` (None: :meth:`~Channel.resolve_width`'s default).
    """

    width: Optional[int] = None
    feedback = Feedback(attributed=False, zeros_observed=True)

    def record(self, spec, play):
        d, lag = _lag(play)
        return jnp.asarray(play.outcome.reward, _F)[None], lag, d < NEVER

    def __str__(self):
        return "anonymous()" if self.width is None else f"anonymous(width={self.width})"


@dataclasses.dataclass(frozen=True)
class Conversions(CalendarChannel):
    """Censored conversions: only positive outcomes, only with delay ``d <= window``; each
    delivered as the policy's payload of a unit reward.

    Attributes:
        window: the censoring window ``m``: only delays ``d <= m`` arrive (None: uncensored).
        width: the calendar length ``W`` (None: :meth:`~Channel.resolve_width`'s default).
    """

    window: Optional[int] = None
    width: Optional[int] = None

    @property
    def feedback(self) -> Feedback:
        return Feedback(attributed=True, zeros_observed=False, window=self.window, reveal_ages=True)

    def record(self, spec, play):
        d, lag = _lag(play)
        ok = (d < NEVER) & (jnp.asarray(play.outcome.reward, _F) > 0)
        if self.window is not None:
            ok = ok & (d <= self.window)
        return play.payload(jnp.asarray(1.0, _F), d), lag, ok

    def __str__(self):
        extra = [] if self.window is None else [f"window={self.window}"]
        extra += [] if self.width is None else [f"width={self.width}"]
        return f"conversions({', '.join(extra)})"


@dataclasses.dataclass(frozen=True)
class Composite(Channel):
    """Composite anonymous: the partial rewards of all past plays landing at round ``t``, summed.
    A world's ``Outcome.profile`` splits a reward over lags ``0..L-1``; without one, the whole
    reward lands at lag ``d``.

    Attributes:
        width: the calendar length ``W`` (None: the exact width, ``max_delay + 1`` capped at the
            horizon).
    """

    width: Optional[int] = None
    feedback = Feedback(attributed=False, zeros_observed=True, spread=True)

    def resolve_width(self, env, horizon, payload_size, n_runs, max_hold=0, budget_bytes=2 << 30):
        return self.width or self.exact_width(env.max_delay, horizon)

    def init(self, spec: ChannelSpec) -> CalendarState:
        return CalendarState(calendar_init(spec.width, 1), jnp.zeros((0,), jnp.int32))

    def round(self, spec: ChannelSpec, state: CalendarState, play: Play):
        W, T, t = spec.width, spec.horizon, play.t
        out = play.outcome
        r = jnp.asarray(out.reward, _F)
        d = jnp.asarray(out.delay, jnp.int32)
        if out.profile is not None:
            L = out.profile.shape[0]
            prof = out.profile[:W] if L >= W else jnp.pad(out.profile, (0, W - L))
            spread = r * prof
            lost_now = (r > 0) & (jnp.sum(out.profile[W:]) > 0) if L > W else jnp.asarray(False)
        else:
            spread = r * (jnp.arange(W) == d).astype(_F)
            lost_now = (r > 0) & (d >= W) & (d < NEVER) & (t + jnp.minimum(d, NEVER) <= T - 1)
        cal, arrived = calendar_round_profile(state.cal, t, spread)
        cal = cal._replace(lost=cal.lost + lost_now.astype(jnp.int32))
        return CalendarState(cal, state.due), Delivery(arrived, None)

    def lost(self, state):
        return state.cal.lost

    def __str__(self):
        return "composite()" if self.width is None else f"composite(width={self.width})"


@constructor
def attributed(width: Optional[int] = None) -> Attributed:
    """Each arrival carries the policy's payload of its play (timestamped / attributed feedback).

    Args:
        width: the calendar length ``W``, an integer ``>= 1``; None (default): the exact width
            when all runs' calendars fit in 2 GiB, else a high quantile of the delay law (losses
            counted in ``lost_to_W``).

    Returns:
        The channel, a frozen value (``Attributed(width=...)``).

    Raises:
        ValueError: ``width`` below 1.

    Examples:
        >>> from jaxbandits import channels
        >>> channels.attributed()
        Attributed(width=None)
        >>> channels.attributed(width=64).feedback.attributed
        True
    """
    return Attributed(_width(width))


@constructor
def action_time(width: Optional[int] = None) -> ActionTime:
    """As attributed, and the delay ``d_t`` is revealed in the context before acting.

    Args:
        width: the calendar length ``W``, an integer ``>= 1`` (None: as :func:`attributed`).

    Returns:
        The channel, a frozen value (``ActionTime(width=...)``).

    Raises:
        ValueError: ``width`` below 1.

    Examples:
        >>> from jaxbandits import channels
        >>> channels.action_time().feedback.delay_at_action
        True
    """
    return ActionTime(_width(width))


@constructor
def anonymous(width: Optional[int] = None) -> Anonymous:
    """Only the sum ``y_t`` of the rewards arriving at round ``t``: arm and origin hidden.

    Args:
        width: the calendar length ``W``, an integer ``>= 1`` (None: as :func:`attributed`).

    Returns:
        The channel, a frozen value (``Anonymous(width=...)``).

    Raises:
        ValueError: ``width`` below 1.

    Examples:
        >>> from jaxbandits import channels
        >>> channels.anonymous().feedback.aggregated
        True
    """
    return Anonymous(_width(width))


@constructor
def conversions(window: Optional[int] = None, width: Optional[int] = None) -> Conversions:
    """Censored conversions: only positive outcomes, only with delay ``d <= window`` (inclusive;
    ``None`` = uncensored, ``0`` = same round only).

    Args:
        window: the censoring window ``m``, an integer ``>= 0`` (None: uncensored).
        width: the calendar length ``W``, an integer ``>= 1`` (None: as :func:`attributed`).

    Returns:
        The channel, a frozen value (``Conversions(window=..., width=...)``); its feedback has
        ``zeros_observed=False``, the window and ``reveal_ages=True``.

    Raises:
        ValueError: ``window`` below 0 or ``width`` below 1.

    Examples:
        >>> from jaxbandits import channels
        >>> channels.conversions(window=30)
        Conversions(window=30, width=None)
        >>> channels.conversions(window=30).feedback.window
        30
    """
    if window is not None:
        window = V.integer("window", window, lo=0)
    return Conversions(window, _width(width))


@constructor
def composite(width: Optional[int] = None) -> Composite:
    """Composite anonymous: the partial rewards of all past plays landing at round ``t``, summed.

    Args:
        width: the calendar length ``W``, an integer ``>= 1`` (None: the exact width).

    Returns:
        The channel, a frozen value (``Composite(width=...)``).

    Raises:
        ValueError: ``width`` below 1.

    Examples:
        >>> from jaxbandits import channels
        >>> channels.composite().feedback.spread
        True
    """
    return Composite(_width(width))


__all__ = ["Channel", "CalendarChannel", "ChannelSpec", "Calendar", "CalendarState", "Attributed",
           "ActionTime", "Anonymous", "Conversions", "Composite", "attributed", "action_time",
           "anonymous", "conversions", "composite", "calendar_init", "calendar_round",
           "calendar_round_profile", "Feedback"]
