"""The channel protocol and the calendar every library channel is built on (re-exported by
:mod:`jaxbandits.channels`; the module docstring there states the protocol, its randomness and the
calendar): :class:`ChannelSpec`, :class:`Calendar` with :func:`calendar_init`,
:func:`calendar_round` and :func:`calendar_round_profile`, :class:`CalendarState`, the base
:class:`Channel` (sizing) and :class:`CalendarChannel` (a channel that only says what the record of
a play is)."""
from __future__ import annotations

from typing import Any, NamedTuple, Optional

import jax
import jax.numpy as jnp

from ..core import validate as V
from ..core import ring
from ..core.types import NEVER, Delivery, Feedback, Play
from ..core.values import constructor

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
    """The state of a calendar channel (:class:`CalendarChannel`, :class:`~jaxbandits.channels.library.Composite`).

    Attributes:
        cal: the :class:`Calendar` of records in flight.
        due: i32[H], the reveal ring: the delivery round of each of the last ``H`` plays, or
            ``NEVER``.
    """

    cal: Calendar
    due: Any  # i32[H] reveal ring: delivery round of each of the last H plays, or NEVER



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
            play: the :class:`~jaxbandits.core.types.Play` of round ``t``; a random channel draws from
                ``play.key``, the channel's key of round ``t`` (conventions §8).

        Returns:
            ``(state, delivery)``: the state after round ``t`` and a
            :class:`~jaxbandits.core.types.Delivery` (f32[P] payload, reveal ages or None).
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
            play: the :class:`~jaxbandits.core.types.Play` of round ``t`` (``play.key``: the channel's key
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


__all__ = ["Channel", "CalendarChannel", "ChannelSpec", "Calendar", "CalendarState", "calendar_init",
           "calendar_round", "calendar_round_profile", "Feedback"]
