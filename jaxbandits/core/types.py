"""Protocols and shared records of jaxbandits (docs/architecture.md, docs/conventions.md).

Three kinds of components meet in one round (docs/architecture.md):

* a **world** (:class:`jaxbandits.envs.World`) draws outcomes and reports expected rewards;
* a **channel** (:class:`jaxbandits.channels.Channel`) decides what reaches the policy and when,
  and declares it in a typed :class:`Feedback` record;
* a **policy** (:class:`Policy`), a NamedTuple of pure functions (optax style)::

      init(spec, key)              -> state
      act(state, context, key)     -> (action, memo)
      payload(memo, reward, delay) -> f32[P]    # attributed channels only
      update(state, arrivals)      -> state     # deterministic, takes no key

  ``act`` returns no state: what it decides travels in the memo and ``update`` commits it from
  ``arrivals.memo`` (conventions §5.1). An attributed channel stores only ``payload(...)`` (§5.6).
  A policy states what it requires of a channel in a :class:`Needs` record; the simulator checks
  ``needs`` against the channel's ``feedback`` before compiling and names what is missing.
"""
from __future__ import annotations

from typing import Any, Callable, NamedTuple, Optional, Tuple

import jax.numpy as jnp

#: "Never arrives": a delay so large that ``s + NEVER`` still fits in int32.
NEVER = 2**30


class _AnyWindow:
    """Sentinel of :attr:`Needs.window`: any censoring window (or none) will do."""

    def __repr__(self):
        return "ANY"

    def __reduce__(self):
        return (_any_window, ())


def _any_window():
    return ANY


ANY = _AnyWindow()


class Feedback(NamedTuple):
    """What a channel reveals: typed feedback properties (conventions §4).

    A policy reads these from ``spec.feedback`` (never a channel's name), so a new channel with
    the same properties works with every policy unchanged.

    Attributes:
        attributed: an arrival carries the payload the policy attached to its play (False:
            anonymous sums of rewards, ``payload = [y_t]``).
        zeros_observed: zero outcomes are delivered (False: only positive events, each as 1).
        delay_at_action: the delay ``d_t`` is shown in the context before acting.
        window: the censoring window ``m``: only delays ``d <= m`` arrive (None: uncensored).
        spread: a play's reward may be split over several later rounds (composite).
        reveal_ages: ``arrivals.rev_age`` can flag which past play was revealed this round.

    Examples:
        >>> from jaxbandits.core.types import Feedback
        >>> Feedback(window=50).aggregated
        False
        >>> Feedback(attributed=False, zeros_observed=False).aggregated
        True
    """

    attributed: bool = True  # an arrival carries the payload the policy attached to its play
    zeros_observed: bool = True  # zero outcomes are delivered (False: only positive events, each as 1)
    delay_at_action: bool = False  # the delay d_t is shown in the context before acting
    window: Optional[int] = None  # censoring window m: only delays d <= m arrive (None: uncensored)
    spread: bool = False  # a play's reward may be split over several later rounds (composite)
    reveal_ages: bool = False  # arrivals.rev_age can flag which past play was revealed this round

    @property
    def aggregated(self) -> bool:
        """Arrivals are anonymous sums of rewards (``payload = [y_t]``): not attributed."""
        return not self.attributed


_NEEDS_TEXT = {  # what each required value means
    ("attributed", True): "arrivals attributed to their play",
    ("attributed", False): "anonymous sums of rewards",
    ("zeros_observed", True): "zero outcomes observed",
    ("zeros_observed", False): "only positive outcomes reported",
    ("delay_at_action", True): "the delay shown before acting",
    ("delay_at_action", False): "the delay not shown before acting",
    ("spread", True): "rewards spread over later rounds",
    ("spread", False): "each reward arriving whole",
    ("reveal_ages", True): "reveal ages of past plays",
    ("reveal_ages", False): "no reveal ages",
}


class Needs(NamedTuple):
    """What a policy requires of its channel, in the terms of :class:`Feedback`.

    ``None`` (``ANY`` for the window) means "either"; any other value must equal the channel's.

    Attributes:
        attributed: arrivals attributed to their play (True) or anonymous sums (False).
        zeros_observed: zero outcomes observed (True) or only positive outcomes (False).
        delay_at_action: the delay shown before acting (True) or not (False).
        window: the censoring window the policy needs (``ANY``: any window, or none).
        spread: rewards spread over later rounds (True) or each arriving whole (False).
        reveal_ages: reveal ages of past plays (True) or none (False).

    Examples:
        >>> from jaxbandits.core.types import Feedback, Needs
        >>> Needs(attributed=True).missing(Feedback(attributed=False))
        ('attributed=True (arrivals attributed to their play), the channel has attributed=False',)
        >>> Needs(attributed=True).missing(Feedback())
        ()
    """

    attributed: Optional[bool] = None
    zeros_observed: Optional[bool] = None
    delay_at_action: Optional[bool] = None
    window: Any = ANY
    spread: Optional[bool] = None
    reveal_ages: Optional[bool] = None

    def missing(self, feedback: Feedback) -> Tuple[str, ...]:
        """Human-readable list of the requirements ``feedback`` does not meet (empty: all met)."""
        out = []
        for f in Needs._fields:
            want = getattr(self, f)
            if want is None or want is ANY:
                continue
            have = getattr(feedback, f)
            if have != want:
                what = _NEEDS_TEXT.get((f, want), "censoring window" if f == "window" else "")
                out.append(f"{f}={want!r} ({what}), the channel has {f}={have!r}")
        return tuple(out)


class ProblemSpec(NamedTuple):
    """What a policy may know about the problem before the first round.

    Attributes:
        n_arms: the number of arms ``K``.
        horizon: the number of rounds ``T``.
        dim: the feature dimension ``d`` of linear worlds (None otherwise).
        feedback: what the channel reveals (its :class:`Feedback`).

    Examples:
        >>> from jaxbandits.core.types import Feedback, ProblemSpec
        >>> ProblemSpec(n_arms=3, horizon=1000, feedback=Feedback(window=40)).window
        40
    """

    n_arms: int
    horizon: int
    dim: Optional[int] = None  # feature dimension of linear worlds
    feedback: Feedback = Feedback()  # what the channel reveals

    @property
    def window(self) -> Optional[int]:
        """The channel's censoring window ``m`` (``None``: uncensored)."""
        return self.feedback.window


class Context(NamedTuple):
    """What the world shows before the action of round ``t``.

    Attributes:
        t: the round index, i32, 0-based.
        features: f32[K, d], the arms' features in linear worlds (None otherwise).
        mask: bool[K], which actions exist this round (None: all).
        delay_now: i32 ``d_t`` when the channel has ``feedback.delay_at_action``, else -1.
    """

    t: Any  # i32 round index, 0-based
    features: Any = None  # f32[K, d] for linear worlds
    mask: Any = None  # bool[K]: which actions exist this round
    delay_now: Any = -1  # i32 d_t when the channel has feedback.delay_at_action, else -1


class Arrivals(NamedTuple):
    """What ``update`` receives at the end of round ``t``.

    Attributes:
        t: the round index, i32.
        action: i32, this round's own action (an echo of ``act``'s).
        memo: this round's memo (an echo of ``act``'s).
        payload: f32[P], the sum of the payloads delivered at ``t`` (``[y_t]`` on aggregated
            channels).
        rev_age: bool[H], the play of round ``t - a`` is revealed at ``t`` (conventions §5.5);
            None unless the policy has a ``reveal_window``.
    """

    t: Any  # i32
    action: Any  # i32, this round's own action (echo)
    memo: Any  # this round's memo (echo)
    payload: Any  # f32[P]: sum of the payloads delivered at t (or [y_t] on aggregated channels)
    rev_age: Any = None  # bool[H]: the play of round t-a is revealed at t (conventions §5.5), else None


class Policy(NamedTuple):
    """A bandit policy: pure functions over a fixed-shape pytree state.

    The memo fields the engine reads are declared, never probed: ``memo_hold`` (the memo has an
    i32 ``hold``: deliver the play's record at ``s + max(d, hold)``, with ``hold <= max_hold``) and
    ``memo_probs`` (the memo has ``probs``, f32[K], the law the action was drawn from: expected
    regret is taken over it). ``estimate`` (optional) maps a state to the policy's own estimate of
    each arm's mean reward, f32[K] with NaN where it has none yet: what ``jaxbandits serve``
    reports in ``/stats`` (docs/online.md); it is never called by the engine. ``posterior``
    (optional) maps a state to a :class:`RatePosterior`, the policy's posterior of each arm's
    conversion rate and its fitted delay law: what ``jaxbandits serve``'s dashboard draws.
    ``honours_mask`` declares that ``act`` never returns an arm the context's ``mask`` leaves out
    (``Context.mask``, which actions exist this round): a world whose context masks actions, and
    :func:`jaxbandits.online.decide` given ``masks``, refuse a policy that does not declare it
    (docs/conventions.md §5).

    Attributes:
        init: ``init(spec, key) -> state``.
        act: ``act(state, context, key) -> (action, memo)``.
        update: ``update(state, arrivals) -> state``, deterministic (takes no key).
        payload: ``payload(memo, reward, delay) -> f32[P]`` (attributed channels; None otherwise).
        needs: what the policy requires of its channel (:class:`Needs`).
        name: its label in results and plots.
        max_hold: the largest ``memo.hold`` (sizes the calendar: ``W > max_hold``; 0 with
            ``memo_hold``: ``T``).
        reveal_window: ``H > 0``: ``arrivals.rev_age[a]`` flags the play of round ``t - a``
            revealed at ``t``.
        memo_hold: the memo has an i32 ``hold``.
        memo_probs: the memo has ``probs``, f32[K], the law the action was drawn from.
        estimate: ``estimate(state) -> f32[K]``, the policy's estimate of each arm's mean (None:
            none).
        posterior: ``posterior(state) ->`` :class:`RatePosterior` (None: none).
        honours_mask: ``act`` never returns an arm the context's ``mask`` leaves out (False: it
            may ignore the mask; masked worlds and masked decisions refuse it).
    """

    init: Callable[[ProblemSpec, Any], Any]
    act: Callable[[Any, Context, Any], Tuple[Any, Any]]
    update: Callable[[Any, Arrivals], Any]
    payload: Optional[Callable[[Any, Any, Any], Any]] = None
    needs: Needs = Needs()
    name: str = "policy"
    max_hold: int = 0  # the largest memo.hold (sizes the calendar: W > max_hold); 0 with memo_hold: T
    reveal_window: int = 0  # H > 0: arrivals.rev_age[a] flags the play of round t-a revealed at t
    memo_hold: bool = False
    memo_probs: bool = False
    estimate: Optional[Callable[[Any], Any]] = None
    posterior: Optional[Callable[[Any], "RatePosterior"]] = None
    honours_mask: bool = False  # act never returns an arm the context's mask leaves out


class RatePosterior(NamedTuple):
    """A Bayesian policy's summary of its posterior (``Policy.posterior``), over ``K`` arms and the
    ages ``0 .. W-1`` of its window: ``rate`` f32[K], the conversion rate ``p`` at the posterior
    mode; ``lo``, ``hi`` f32[K], its 95% interval (the policy says how it approximates it);
    ``delay_pmf`` f32[K, W], the fitted discrete delay law ``P(D = d)`` at the mode (a shared law
    repeated per arm); ``seen_delays`` f32[W], the delays of the conversions seen so far, all arms (counts).

    Attributes:
        rate: f32[K], the conversion rate at the posterior mode.
        lo: f32[K], the lower end of its 95% interval.
        hi: f32[K], the upper end of its 95% interval.
        delay_pmf: f32[K, W], the fitted delay law ``P(D = d)`` at the mode.
        seen_delays: f32[W], the counts of the delays of the conversions seen so far.
    """

    rate: Any
    lo: Any
    hi: Any
    delay_pmf: Any
    seen_delays: Any


class Outcome(NamedTuple):
    """What the world produces for the action of one round.

    Attributes:
        reward: f32, the realised (total) reward of the chosen action.
        delay: i32, the delay of that reward (``NEVER``: never arrives).
        profile: f32[L], composite worlds: the split of the reward over lags ``0 .. L-1``.
        all_rewards: f32[K], adversarial worlds: every arm's reward this round.
    """

    reward: Any  # f32 realised (total) reward of the chosen action
    delay: Any  # i32 delay of that reward (NEVER = never)
    profile: Any = None  # f32[L] composite worlds: the split of the reward over lags 0..L-1
    all_rewards: Any = None  # f32[K] adversarial worlds: every arm's reward this round


class Play(NamedTuple):
    """What a channel receives about the play of round ``t`` (``Channel.round``).

    Attributes:
        t: the round index, i32.
        outcome: the world's :class:`Outcome` of the play.
        payload: ``payload(reward, delay) -> f32[P]``, the policy's payload of this play (None on
            aggregated channels).
        hold: i32, deliver no earlier than ``t + hold`` (the memo's hold, else 0).
        key: the channel's key of round ``t``, ``fold_in(channel stream, t)`` (conventions §8):
            what a random channel draws from.
    """

    t: Any  # i32
    outcome: Outcome
    payload: Optional[Callable[[Any, Any], Any]]  # (reward, delay) -> f32[P], the policy's payload of this play
    hold: Any = 0  # i32: deliver no earlier than t + hold (the memo's hold, else 0)
    key: Any = None  # the channel's key of round t: fold_in(channel stream, t) (conventions §8)


class Delivery(NamedTuple):
    """What a channel hands over at the end of round ``t``.

    Attributes:
        payload: f32[P], the sum of the payloads delivered.
        rev_age: bool[H], which past plays were revealed, or None.
    """

    payload: Any  # f32[P]
    rev_age: Any = None  # bool[H] or None


def one_hot(a, k):
    """``e_a`` as f32[k] (all zeros when ``a`` is outside ``0..k-1``): a compare, not a scatter
    (an unfused scatter kernel per round on XLA:CPU).

    Args:
        a: the index, an integer (or i32 array).
        k: the length, a positive integer.

    Returns:
        f32[k], 1 at ``a`` and 0 elsewhere.

    Examples:
        >>> from jaxbandits.core.types import one_hot
        >>> one_hot(2, 4)
        Array([0., 0., 1., 0.], dtype=float32)
        >>> one_hot(5, 4)
        Array([0., 0., 0., 0.], dtype=float32)
    """
    return (jnp.arange(k) == a).astype(jnp.float32)
