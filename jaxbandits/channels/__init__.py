"""Feedback channels: what reaches the policy, and when (docs/architecture.md, conventions §3-4).

A channel is a component, optax style: an object of pure functions over its own fixed-shape state,
which declares what it reveals in a typed :class:`~jaxbandits.core.types.Feedback` record::

    feedback                                   # Feedback: what the policy may see
    width(world, horizon, payload_size, n_runs, max_hold) -> int    # host, before compiling
    init(spec: ChannelSpec)        -> state
    init_keyed(spec, key)          -> state # what the engine calls; default: init(spec)
    round(spec, state, play: Play) -> (state, Delivery)
    lost(state)                    -> i32   # records dropped because their lag was >= W

The five channels of the papers are in :mod:`~jaxbandits.channels.library`, on the protocol and
the calendar of :mod:`~jaxbandits.channels.base`; every name is re-exported here. A user's channel
is a class of their own with these methods (docs/composing.md has complete ones: conversions
reported in batches, and conversions reported for a random 70% of users).

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
read (:mod:`jaxbandits.core.ring`). A record with lag ``>= W`` that would otherwise be delivered is
dropped, never aliased, and counted in ``lost_to_W`` unless its value is all zeros.
"""
from __future__ import annotations

from .base import (Calendar, CalendarChannel, CalendarState, Channel, ChannelSpec, Feedback, calendar_init,
                   calendar_round, calendar_round_profile)
from .library import (ActionTime, Anonymous, Attributed, Composite, Conversions, action_time, anonymous, attributed,
                      composite, conversions)

__all__ = ["Channel", "CalendarChannel", "ChannelSpec", "Calendar", "CalendarState", "Attributed",
           "ActionTime", "Anonymous", "Conversions", "Composite", "attributed", "action_time",
           "anonymous", "conversions", "composite", "calendar_init", "calendar_round",
           "calendar_round_profile", "Feedback"]
