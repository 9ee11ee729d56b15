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

The package by concern: :mod:`~jaxbandits.online.state` (the state and its set-up), :mod:`~jaxbandits.online.pure` (the pure learner:
decide, feedback, advance), :mod:`~jaxbandits.online.clock` (timestamps to rounds), :mod:`~jaxbandits.online.persistence` (save and
load) and :mod:`~jaxbandits.online.learner` (the stateful :class:`Learner`); every name is re-exported here.
"""

from __future__ import annotations

from .clock import MAX_ROUND, Clock
from .learner import Learner
from .persistence import FORMAT, FORMAT_VERSION, dumps, load, loads, read_header, save
from .pure import REWARD_LIMIT, advance, arm_estimates, close_round, decide, decide_upto, decision_ids, feedback, stats
from .state import (ACCEPTED, CODES, DEFAULT_MAX_PENDING, DUPLICATE, EXPIRED, INVALID, OUTSIDE_WINDOW, UNKNOWN, Config,
                    Counters, LearnerState, Pending, configure, init, initial_state)

__all__ = ["Config", "Pending", "Counters", "LearnerState", "init", "decide", "feedback", "close_round",
           "advance", "Clock", "save", "dumps", "loads", "load", "Learner", "CODES", "FORMAT_VERSION", "arm_estimates"]
