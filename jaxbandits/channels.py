"""Feedback channels and the calendar (docs/architecture.md, conventions §3-4).

A channel decides what reaches the policy, and when. The record of the play of round ``s`` is
put in a ring buffer, the *calendar*, of shape ``[W, P]`` at slot ``(s + lag) mod W``; at round
``t`` slot ``t mod W`` is read and handed to the policy. Cost per round is ``O(P)`` (``O(W)`` for the
composite channel) whatever the number of outstanding plays.

Order inside a round (PERFORMANCE.md: on XLA:CPU reading a carried buffer before writing it makes
XLA copy the whole buffer each round): *all writes first* (clear the slot read last round, insert
this round's record), *then the one read* (this round's slot).

A record with lag ``>= W`` that would otherwise be delivered is dropped, never aliased, and counted
in ``lost_to_W`` unless its value is all zeros.
"""
from __future__ import annotations

import dataclasses
from typing import NamedTuple, Optional

import jax
import jax.numpy as jnp

from . import _validate as V
from .types import CHANNEL_KINDS

_F = jnp.float32


class Calendar(NamedTuple):
    buf: jax.Array  # f32[W, P]: slot j holds the sum of what arrives at the next round = j mod W
    lost: jax.Array  # i32: records dropped because their lag was >= W


def calendar_init(width: int, size: int) -> Calendar:
    return Calendar(jnp.zeros((width, size), _F), jnp.zeros((), jnp.int32))


def calendar_round(cal: Calendar, t, value, lag, deliverable):
    """One round of the calendar: clear last round's slot, insert ``value`` at ``t + lag`` if it is
    ``deliverable`` and ``lag < W``, then read slot ``t``. Returns ``(calendar, arrived[P])``."""
    W = cal.buf.shape[0]
    buf = cal.buf.at[(t - 1) % W].set(0.0)
    fits = lag < W
    slot = jnp.where(deliverable & fits, (t + jnp.minimum(lag, W)) % W, W)  # W: dropped
    buf = buf.at[slot].add(value, mode="drop")
    lost = cal.lost + (deliverable & ~fits & jnp.any(value != 0)).astype(jnp.int32)
    return Calendar(buf, lost), buf[t % W]


def calendar_round_profile(cal: Calendar, t, spread):
    """Composite insertion: ``spread[l]`` (length ``W``) lands at round ``t + l``; O(W).

    The spread is rotated by ``t`` (a dynamic slice of ``[spread, spread]``) and added densely:
    under ``vmap`` a W-element scatter per round was ~100x slower on XLA:CPU (W = 4096)."""
    W = cal.buf.shape[0]
    buf = cal.buf.at[(t - 1) % W].set(0.0)
    rolled = jax.lax.dynamic_slice(jnp.concatenate([spread, spread]), ((W - t % W) % W,), (W,))
    buf = buf + rolled[:, None]
    return Calendar(buf, cal.lost), buf[t % W]


@dataclasses.dataclass(frozen=True)
class Channel:
    """A feedback channel: ``kind`` in CHANNEL_KINDS, censoring ``window`` (conversions only) and
    the calendar width ``width`` (``None``: the safe default of :meth:`resolve_width`)."""

    kind: str
    window: Optional[int] = None
    width: Optional[int] = None

    @property
    def attributed(self) -> bool:
        return self.kind in ("attributed", "action_time", "conversions")

    def exact_width(self, max_delay: int, horizon: int, max_hold: int = 0) -> int:
        """The smallest ``W`` that loses nothing: every deliverable lag is ``< W``."""
        bound = horizon  # a lag >= T - s never arrives anyway
        if self.kind == "conversions" and self.window is not None:
            bound = min(bound, max(self.window, max_hold) + 1)
        bound = min(bound, max(max_delay, max_hold) + 1)
        return max(int(bound), 1)

    def resolve_width(self, env, horizon: int, payload_size: int, n_runs: int, max_hold: int = 0,
                      budget_bytes: int = 2 << 30) -> int:
        """``width`` if given, else the exact width when the calendars of all runs fit in
        ``budget_bytes``; otherwise the ``1 - 2^-23`` quantile of the delay law plus one (losses,
        if any, are counted in ``lost_to_W``)."""
        if self.width is not None:
            return self.width
        exact = self.exact_width(env.max_delay, horizon, max_hold)
        if exact * payload_size * 4 * n_runs <= budget_bytes:
            return exact
        q = int(env.delay.ppf(jnp.asarray(1.0 - 2.0**-23, _F)))
        cap = max(1, budget_bytes // (payload_size * 4 * max(n_runs, 1)))
        return int(max(1, min(exact, max(q + 1, min(cap, exact)))))

    def __str__(self):
        extra = [] if self.window is None else [f"window={self.window}"]
        extra += [] if self.width is None else [f"width={self.width}"]
        return f"{self.kind}({', '.join(extra)})"


def _width(width):
    return None if width is None else V.integer("width", width, lo=1)


def attributed(width: Optional[int] = None) -> Channel:
    """Each arrival carries the policy's payload of its play (timestamped / attributed feedback)."""
    return Channel("attributed", None, _width(width))


def action_time(width: Optional[int] = None) -> Channel:
    """As attributed, and the delay ``d_t`` is revealed in the context before acting."""
    return Channel("action_time", None, _width(width))


def anonymous(width: Optional[int] = None) -> Channel:
    """Only the sum ``y_t`` of the rewards arriving at round ``t``: arm and origin hidden."""
    return Channel("anonymous", None, _width(width))


def conversions(window: Optional[int] = None, width: Optional[int] = None) -> Channel:
    """Censored conversions: only positive outcomes, only with delay ``d <= window`` (inclusive;
    ``None`` = uncensored, ``0`` = same round only)."""
    if window is not None:
        window = V.integer("window", window, lo=0)
    return Channel("conversions", window, _width(width))


def composite(width: Optional[int] = None) -> Channel:
    """Composite anonymous: the partial rewards of all past plays landing at round ``t``, summed."""
    return Channel("composite", None, _width(width))


__all__ = ["Channel", "Calendar", "attributed", "action_time", "anonymous", "conversions", "composite",
           "calendar_init", "calendar_round", "calendar_round_profile", "CHANNEL_KINDS"]
