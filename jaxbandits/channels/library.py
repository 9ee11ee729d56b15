"""The five channels of the papers (re-exported by :mod:`jaxbandits.channels`): :class:`Attributed`,
:class:`ActionTime`, :class:`Anonymous`, :class:`Conversions` (four calendar channels) and
:class:`Composite`, with their lower-case constructors, which check their arguments."""
from __future__ import annotations

import dataclasses
from typing import Optional

import jax.numpy as jnp

from ..core import validate as V
from ..core.types import NEVER, Delivery, Feedback, Play
from ..core.values import constructor
from .base import CalendarChannel, CalendarState, Channel, ChannelSpec, calendar_init, calendar_round_profile

_F = jnp.float32


def _width(width):
    return None if width is None else V.integer("width", width, lo=1)



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


__all__ = ["Attributed", "ActionTime", "Anonymous", "Conversions", "Composite", "attributed", "action_time",
           "anonymous", "conversions", "composite"]
