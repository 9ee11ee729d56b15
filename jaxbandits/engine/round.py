"""One round of world + channel + policy: a pure function (docs/composing.md).

Round ``t`` (conventions §2): context -> act -> outcome -> channel (calendar insert, read slot
``t``) -> update. The round returns the new state and a :class:`Step` of per-round quantities;
accumulating them into metrics is the recorder's business (:mod:`jaxbandits.engine.metrics`), so
the round can be called from a user's own ``lax.scan``, training loop or serving code::

    prob = engine.problem(world, channel, policy, horizon)   # host: checks and sizes
    state = engine.init(prob, key, run=0)                    # pure
    state, step = engine.round(prob, state, t)               # pure, jit/vmap/scan-able

PRNG (conventions §8)::

    k_run = fold_in(key, r)       r = the global run index (independent of n_runs, shards, chunks)
    k_env = fold_in(k_run, 0); k_pol = fold_in(k_run, 1)
    stream S of the world = fold_in(k_env, S): 0 SETUP, 1 REWARD, 2 DELAY, 3 CONTEXT, 4 WORLD
    round t draws from fold_in(stream, t); policy init key fold_in(k_pol, 0);
    act key fold_in(fold_in(k_pol, 1), t)
    k_ch = fold_in(k_run, 2): channel init key fold_in(k_ch, 0); channel key of round t
    fold_in(fold_in(k_ch, 1), t) (Play.key)

so every policy, grid point and channel of one experiment faces the same world draws.
"""
from __future__ import annotations

from typing import Any, Callable, NamedTuple, Optional

import jax
import jax.numpy as jnp

from ..core import validate as V
from ..channels import Channel, ChannelSpec
from ..core.mathlib import fold_in, uniform
from ..core.types import NEVER, Arrivals, Context, Play, Policy, ProblemSpec
from ..core.values import ById, PolicyValue, is_policy

_F = jnp.float32
SETUP, REWARD, DELAY, CONTEXT, WORLD = range(5)

__all__ = ["Problem", "problem", "init", "round", "act", "policy_shapes", "PolicyShapes", "RunKeys", "RunState",
           "Step", "run_keys", "channel_keys"]


class RunKeys(NamedTuple):
    """The per-round key streams of one run (conventions §8): round ``t`` draws from
    ``fold_in(stream, t)``.

    Attributes:
        reward: the world's REWARD stream, ``fold_in(k_env, 1)`` (the uniform ``u`` of round t).
        delay: the world's DELAY stream, ``fold_in(k_env, 2)`` (the uniform ``v`` of round t).
        context: the world's CONTEXT stream, ``fold_in(k_env, 3)``.
        world: the world's own stream, ``fold_in(k_env, 4)``.
        act: the policy's act stream, ``fold_in(k_pol, 1)``.
        channel: the channel's round stream, ``fold_in(k_ch, 1)`` (``Play.key`` of round t).
    """

    reward: Any
    delay: Any
    context: Any
    world: Any
    act: Any
    channel: Any  # the channel's round stream (Play.key of round t: fold_in(channel, t))


class RunState(NamedTuple):
    """Everything one run carries from round to round (and nothing else).

    Attributes:
        keys: the run's key streams (:class:`RunKeys`).
        world: the world's state.
        policy: the policy's state.
        channel: the channel's state.
    """

    keys: RunKeys
    world: Any  # the world's state
    policy: Any  # the policy's state
    channel: Any  # the channel's state


class Step(NamedTuple):
    """What one round produced (per-round quantities; sums over rounds are the recorder's).

    Attributes:
        t: the round, i32.
        action: i32, the arm played.
        reward: f32, the realised reward of the action (generated now, arriving whenever it does).
        delay: i32, its delay (``NEVER``: never).
        gap: f32, ``max_a mu_t[a] - mu_t[A_t]`` (stochastic worlds; 0 for adversarial ones).
        expected_gap: f32, the gap of the policy's law ``memo.probs`` (``memo_probs``), else
            ``gap``.
        arm_rewards: f32[K], every arm's reward this round (adversarial worlds), else None.
        expected_reward: f32, ``<memo.probs, arm_rewards>`` (adversarial worlds), else None.
        arrivals: the :class:`~jaxbandits.core.types.Arrivals` the policy received this round.
    """

    t: Any  # i32
    action: Any  # i32
    reward: Any  # f32 realised reward of the action (generated now, arriving whenever it does)
    delay: Any  # i32 its delay (NEVER: never)
    gap: Any  # f32 max_a mu_t[a] - mu_t[A_t] (stochastic worlds; 0 for adversarial ones)
    expected_gap: Any  # f32 the gap of the policy's law memo.probs (memo_probs), else = gap
    arm_rewards: Any  # f32[K] every arm's reward this round (adversarial worlds), else None
    expected_reward: Any  # f32 <memo.probs, arm_rewards> (adversarial worlds), else None
    arrivals: Arrivals  # what the policy received this round


def _hashable(x):
    try:
        hash(x)
        return True
    except TypeError:
        return False


class Problem:
    """Everything static about one (world, channel, policy) simulation: the components and the
    sizes fixed before compiling. Equal (and hashed) by value: the world when it is hashable (the
    library's worlds are values), the policy when it is a library
    :class:`~jaxbandits.core.values.PolicyValue`, else by their identity (and the builder's), so a second
    equal ``simulate`` call reuses the program."""

    __slots__ = ("world", "channel", "policy", "horizon", "spec", "cspec", "build", "dl_mode", "dl_len",
                 "_key")

    def __init__(self, world, channel, policy, horizon, spec, cspec, build=None, dl_mode=None, dl_len=0):
        self.world, self.channel, self.policy = world, channel, policy
        self.horizon, self.spec, self.cspec, self.build = horizon, spec, cspec, build
        self.dl_mode, self.dl_len = dl_mode, dl_len
        ch = channel if _hashable(channel) else ById(channel)
        if build is None:  # a library policy is a value: an equal one reuses the program
            comp = (world if _hashable(world) else ById(world),  # library worlds are values
                    policy if isinstance(policy, PolicyValue) else ById(policy))
        else:  # a grid: the program builds its components from build(params)
            comp = (build if _hashable(build) else ById(build), type(world))
        self._key = (comp, ch, horizon, spec, cspec, dl_mode, dl_len)

    @property
    def width(self) -> int:
        return self.cspec.width

    @property
    def payload_size(self) -> int:
        return self.cspec.payload_size

    def components(self, params=None):
        """``(world, policy)``: the stored ones, or ``build(params)`` on a grid."""
        if self.build is None:
            return self.world, self.policy
        return self.build(params)

    def __hash__(self):
        return hash(self._key)

    def __eq__(self, other):
        return isinstance(other, Problem) and self._key == other._key

    def __repr__(self):
        return (f"Problem({type(self.world).__name__}, {self.channel}, {self.policy.name}, T={self.horizon}, "
                f"W={self.width}, P={self.payload_size})")


# ----------------------------------------------------------------------------- host-side checks
def check_world(world):
    from ..envs.base import World

    if not isinstance(world, World):
        raise TypeError(f"world must be a jaxbandits.envs.World (subclass it: docs/envs.md), got "
                        f"{type(world).__name__}")
    n = getattr(world, "n_arms", None)  # an attribute the protocol requires: check it exists
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        raise ValueError(f"world.n_arms must be an int >= 1, got {n!r}")
    md = world.max_delay
    if not isinstance(md, int) or md < 0:
        raise ValueError(f"world.max_delay must be an int >= 0 (NEVER if unbounded), got {md!r}")


def check_pair(channel, policy, label):
    """The policy's needs against the channel's feedback, before anything compiles."""
    if not isinstance(channel, Channel):
        raise TypeError(f"channel must be a jaxbandits.channels.Channel, got {type(channel).__name__}")
    if not is_policy(policy):
        raise TypeError(f"policy {label!r} must be a jaxbandits Policy, got {type(policy).__name__}")
    fb = channel.feedback
    missing = policy.needs.missing(fb)
    if missing:
        raise ValueError(f"policy {label!r} ({policy.name}) cannot run on the channel {channel}: it needs "
                         + "; ".join(missing))
    if fb.attributed and policy.payload is None:
        raise ValueError(f"policy {label!r} ({policy.name}) has no payload function: it cannot use the "
                         f"attributed channel {channel}")
    if policy.reveal_window and not fb.reveal_ages:
        raise ValueError(f"policy {label!r} ({policy.name}) reads reveal ages (reveal_window="
                         f"{policy.reveal_window}) but the channel {channel} does not report them")


def check_mask(world, policy, label, mask):
    """A world whose context masks actions (``mask``, the abstract value of its context's mask: not
    None) needs a policy that declares ``honours_mask`` (it never chooses a masked arm)."""
    if mask is not None and not policy.honours_mask:
        raise ValueError(f"policy {label!r} ({policy.name}) does not honour masks (Policy.honours_mask is False), "
                         f"but the world {type(world).__name__} masks actions in its context (padded or varying "
                         f"action sets): the policy could play an arm that does not exist; use a policy that honours "
                         f"masks, or a world without them (docs/conventions.md §5)")


def _kind(x) -> str:
    dt = getattr(x, "dtype", None)
    return f"{type(x).__name__}" if dt is None else f"{dt}{list(getattr(x, 'shape', ()))}"


def check_action(policy, label, action):
    """``act``'s action, traced: one integer (an arm's index), not a float rounded silently."""
    dt = getattr(action, "dtype", None)
    if dt is None or not jnp.issubdtype(dt, jnp.integer) or getattr(action, "shape", None) != ():
        raise TypeError(f"policy {label!r} ({policy.name}): act(state, context, key) must return "
                        f"(action, memo) with action an integer scalar (e.g. jnp.int32, an arm index in "
                        f"0..K-1), got action of type {_kind(action)} (docs/policies/own.md)")


def check_outcome(world, out):
    """A world's ``Outcome``, traced: an integer scalar delay and a scalar reward."""
    name = type(world).__name__
    if not hasattr(out, "delay") or not hasattr(out, "reward"):
        raise TypeError(f"world {name}: outcome(...) must return (Outcome, state), got {type(out).__name__} "
                        f"as its first element (docs/envs.md)")
    d = out.delay
    if getattr(d, "dtype", None) is None or not jnp.issubdtype(d.dtype, jnp.integer) or d.shape != ():
        raise TypeError(f"world {name}: Outcome.delay must be an integer scalar (jnp.int32 rounds; NEVER "
                        f"for never), got {_kind(d)} (docs/envs.md)")
    r = out.reward
    if getattr(r, "dtype", None) is None or r.dtype == jnp.bool_ or r.shape != ():
        raise TypeError(f"world {name}: Outcome.reward must be a numeric scalar (jnp.float32), got {_kind(r)} "
                        f"(docs/envs.md)")


class PolicyShapes(NamedTuple):
    """What a policy's program looks like, traced: its memo (abstract) and the payload size ``P``.

    Attributes:
        memo: the memo ``act`` returns, as abstract values (``jax.ShapeDtypeStruct`` leaves).
        payload_size: ``P``, the length of the policy's payload (1 without attributed feedback).
    """

    memo: Any
    payload_size: int


def policy_shapes(policy, spec: ProblemSpec, ctx: Context, label) -> PolicyShapes:
    """The policy's ``init`` / ``act`` / ``payload`` traced on abstract values (nothing is built or
    compiled) against ``spec`` and a context of the round's shapes: ``act``'s action an integer
    scalar, the memo fields the policy declares (``memo_hold``, ``memo_probs``) present, the payload
    a 1-d array (attributed feedback; ``P = 1`` otherwise). The simulator's :func:`problem` and the
    online learner (:mod:`jaxbandits.online`) both check a policy here.

    Args:
        policy: the policy value.
        spec: the problem's static sizes (:class:`~jaxbandits.core.types.ProblemSpec`).
        ctx: a :class:`~jaxbandits.core.types.Context` of the round's shapes.
        label: the policy's label, for the error messages.

    Returns:
        The :class:`PolicyShapes`.

    Raises:
        ValueError: ``act`` gives no integer scalar action, a declared memo field is missing, or
            the payload is not 1-d.

    Examples:
        >>> import jax
        >>> import jax.numpy as jnp
        >>> from jaxbandits import channels, envs
        >>> from jaxbandits.engine.round import policy_shapes, problem
        >>> from jaxbandits.policies import classic
        >>> from jaxbandits.core.types import Context
        >>> p = problem(envs.bernoulli([0.3, 0.6]), channels.attributed(), classic.ucb1(), 100)
        >>> i32 = jax.ShapeDtypeStruct((), jnp.int32)
        >>> policy_shapes(p.policy, p.spec, Context(i32, None, None, i32), "UCB1").payload_size  # 2K
        4
    """
    k = jax.eval_shape(lambda: jax.random.key(0))
    st = jax.eval_shape(lambda k: policy.init(spec, k), k)
    action, memo = jax.eval_shape(lambda s, c, k: policy.act(s, c, k), st, ctx, k)
    check_action(policy, label, action)
    for flag, field in ((policy.memo_hold, "hold"), (policy.memo_probs, "probs")):
        if flag and field not in getattr(type(memo), "_fields", ()):
            raise ValueError(f"policy {label!r} ({policy.name}) declares memo_{field}=True but its memo "
                             f"({type(memo).__name__}) has no field {field!r}")
    if spec.feedback.attributed:
        i32 = jax.ShapeDtypeStruct((), jnp.int32)
        pl = jax.eval_shape(lambda m, r, d: policy.payload(m, r, d), memo, jax.ShapeDtypeStruct((), jnp.float32), i32)
        if pl.ndim != 1:
            raise ValueError(f"{policy.name}: payload must be a 1-d array, got shape {pl.shape}")
        P = int(pl.shape[0])
    else:
        P = 1
    return PolicyShapes(memo, P)


def _delayed_regret_mode(world, channel, horizon, delayed_regret):
    """Which L(t) tracker to use: by default for a censoring channel (zeros hidden) of a stochastic
    K-armed world with a delay law."""
    from ..core.delays import geometric_log_rho, truncation_length

    fb = channel.feedback
    want = (not fb.zeros_observed and fb.attributed) if delayed_regret is None else bool(delayed_regret)
    if not want:
        return None, 0
    if world.adversarial or world.delay is None or world.dim is not None:
        if delayed_regret:
            raise ValueError("delayed_regret needs a stochastic K-armed world with a delay law")
        return None, 0
    m = fb.window
    if m is not None:
        m = min(m, horizon)
    if geometric_log_rho(world.delay) is not None and m != 0:
        return "geom", (m if m is not None else 0)
    H = m if m is not None else truncation_length(world.delay, horizon)
    return "ring", (max(int(H), 1) if m != 0 else 0)


def problem(world, channel, policy, horizon: int, *, n_runs: int = 1, delayed_regret: Optional[bool] = None,
            label: Optional[str] = None, build: Optional[Callable] = None) -> Problem:
    """Check a (world, channel, policy) triple and fix its static sizes (calendar width ``W``,
    payload size ``P``, reveal ring): everything before compiling. ``build(params) -> (world,
    policy)`` (grids) rebuilds the components from traced parameters inside the program.

    Nothing compiles: the policy's and the world's functions are traced abstractly
    (``jax.eval_shape``) to check what they return and to size the payload.

    Args:
        world: the world, a :class:`jaxbandits.envs.World`.
        channel: the channel, a :class:`jaxbandits.channels.Channel`.
        policy: the policy, a :class:`jaxbandits.Policy` whose ``needs`` the channel meets.
        horizon: the number of rounds ``T``, an integer ``>= 1`` (at most the world's
            ``max_horizon`` when it has one).
        n_runs: the number of runs the calendars are sized for, an integer ``>= 1``.
        delayed_regret: track the delayed regret ``L(t)`` (None: for a censoring channel of a
            stochastic K-armed world with a delay law).
        label: the policy's name in error messages (None: ``policy.name``).
        build: ``build(params) -> (world, policy)``, the components of a grid point (None: the
            given ones).

    Returns:
        The :class:`Problem`: the components and ``spec``, ``cspec`` (``W``, ``P``, ``H``),
        hashable so an equal problem reuses a compiled program.

    Raises:
        TypeError: a component of the wrong type, or an action or outcome of the wrong dtype.
        ValueError: a bad horizon or ``n_runs``, a policy whose needs the channel does not meet
            (the message names what is missing), a world that masks actions with a policy that
            does not honour masks (``Policy.honours_mask``), or a width too large.

    Examples:
        >>> from jaxbandits import channels, delays, engine, envs
        >>> from jaxbandits.policies import classic
        >>> world = envs.bernoulli([0.3, 0.6], delay=delays.geometric(mean=5.0))
        >>> engine.problem(world, channels.attributed(), classic.ucb1(), 100)
        Problem(BanditEnv, attributed(), UCB1, T=100, W=100, P=4)
    """
    horizon = V.horizon("horizon", horizon)
    n_runs = V.integer("n_runs", n_runs, lo=1)
    label = policy.name if label is None and is_policy(policy) else label
    check_pair(channel, policy, label)
    check_world(world)
    if world.max_horizon is not None and horizon > world.max_horizon:
        raise ValueError(f"horizon={horizon} exceeds the {world.max_horizon} rounds the world "
                         f"{type(world).__name__} has data for (its table of losses, labels or delays): give "
                         f"horizon <= {world.max_horizon}, or data for every round")
    if world.max_delay > NEVER:
        raise ValueError(f"world.max_delay must be <= NEVER = 2**30 (delays are int32, docs/conventions.md §3), "
                         f"got {world.max_delay}")
    fb = channel.feedback
    spec = ProblemSpec(world.n_arms, horizon, world.dim, fb)
    # shapes of a memo and payload, without compiling (abstract values only: nothing is built)
    k = jax.eval_shape(lambda: jax.random.key(0))
    i32 = jax.ShapeDtypeStruct((), jnp.int32)
    f32 = jax.ShapeDtypeStruct((), jnp.float32)
    feats = jax.eval_shape(lambda k: world.context(world.setup(k), 0, k), k)
    check_mask(world, policy, label, feats[1])
    P = policy_shapes(policy, spec, Context(i32, *feats, i32), label).payload_size
    ws = jax.eval_shape(world.setup, k)
    out = jax.eval_shape(lambda *a: world.outcome(*a)[0], ws, i32, i32, f32, f32, feats[0], k)
    check_outcome(world, out)
    # a memo's hold is data: the policy declares its bound (Policy.max_hold), else W covers the horizon
    max_hold = (policy.max_hold or horizon) if policy.memo_hold else 0
    W = int(channel.resolve_width(world, horizon, P, n_runs, max_hold))
    exact = channel.exact_width(world.max_delay, horizon, max_hold)
    if channel.width is not None and W > exact and W * P * 4 * n_runs > 2**31:
        raise ValueError(f"the channel's width={W} exceeds the exact width {exact} that loses nothing "
                         f"(conventions §3) and its calendars would take {W * P * 4 * n_runs / 2**30:.1f} GiB for "
                         f"{n_runs} runs: "
                         f"give width <= {exact} (or leave it None)")
    dl_mode, dl_len = _delayed_regret_mode(world, channel, horizon, delayed_regret)
    cspec = ChannelSpec(horizon, W, P, int(policy.reveal_window or 0))
    return Problem(world, channel, policy, horizon, spec, cspec, build, dl_mode, dl_len)


# ----------------------------------------------------------------------------- the round
def channel_keys(key, run):
    """The channel's keys of run ``run`` (conventions §8): ``(init key, round stream)``, from
    ``k_ch = fold_in(k_run, 2)``, a key no other stream is derived from (the world's and the
    policy's, ``fold_in(k_run, 0)`` and ``fold_in(k_run, 1)``, are untouched by it).

    Args:
        key: the experiment's key (``jax.random.key``).
        run: the global run index ``r`` (an integer or i32).

    Returns:
        ``(init key, round stream)``: ``fold_in(k_ch, 0)``, what ``Channel.init_keyed`` receives,
        and ``fold_in(k_ch, 1)``, from which round ``t``'s ``Play.key`` is ``fold_in(., t)``.

    Examples:
        >>> import jax
        >>> from jaxbandits import engine
        >>> k_init, k_rounds = engine.channel_keys(jax.random.key(0), 3)
        >>> k_ch = jax.random.fold_in(jax.random.fold_in(jax.random.key(0), 3), 2)
        >>> bool((jax.random.key_data(k_init) == jax.random.key_data(jax.random.fold_in(k_ch, 0))).all())
        True
    """
    k_ch = jax.random.fold_in(jax.random.fold_in(key, run), 2)
    return jax.random.fold_in(k_ch, 0), jax.random.fold_in(k_ch, 1)


def run_keys(key, run):
    """The keys of run ``run`` (conventions §8): ``(RunKeys, setup key, policy init key)``.

    Args:
        key: the experiment's key (``jax.random.key``).
        run: the global run index ``r`` (an integer or i32), independent of the number of runs,
            shards and chunks.

    Returns:
        ``(keys, setup key, policy init key)``: the run's :class:`RunKeys`, the world's SETUP key
        ``fold_in(k_env, 0)`` and the policy's init key ``fold_in(k_pol, 0)``.

    Examples:
        >>> import jax
        >>> from jaxbandits import engine
        >>> keys, k_setup, k_init = engine.run_keys(jax.random.key(0), 3)
        >>> keys._fields
        ('reward', 'delay', 'context', 'world', 'act', 'channel')
    """
    k_run = jax.random.fold_in(key, run)
    k_env, k_pol = jax.random.fold_in(k_run, 0), jax.random.fold_in(k_run, 1)
    s = lambda i: jax.random.fold_in(k_env, i)
    keys = RunKeys(s(REWARD), s(DELAY), s(CONTEXT), s(WORLD), jax.random.fold_in(k_pol, 1), channel_keys(key, run)[1])
    return keys, s(SETUP), jax.random.fold_in(k_pol, 0)


def init(prob: Problem, key, run=0, params=None) -> RunState:
    """The state of run ``run`` before round 0 (pure).

    Args:
        prob: the :class:`Problem` (:func:`problem`).
        key: the experiment's key (``jax.random.key``).
        run: the global run index (an integer or i32).
        params: a grid point's parameters, passed to ``prob.build`` (None without a grid).

    Returns:
        The :class:`RunState`: the run's keys, the world's state (``setup``), the policy's
        (``init``) and the channel's (``init_keyed`` with the channel's init key).

    Examples:
        >>> import jax
        >>> from jaxbandits import channels, delays, engine, envs
        >>> from jaxbandits.policies import classic
        >>> world = envs.bernoulli([0.3, 0.6], delay=delays.geometric(mean=5.0))
        >>> prob = engine.problem(world, channels.attributed(), classic.ucb1(), 100)
        >>> state = engine.init(prob, jax.random.key(0), run=0)
        >>> state.channel.cal.buf.shape  # the calendar: W x P
        (100, 4)
    """
    world, policy = prob.components(params)
    keys, k_setup, k_init = run_keys(key, run)
    k_chan = channel_keys(key, run)[0]
    return RunState(keys, world.setup(k_setup), policy.init(prob.spec, k_init),
                    prob.channel.init_keyed(prob.cspec, k_chan))


def act(policy, pstate, ctx: Context, act_key):
    """Step 2 of round ``ctx.t``: the policy acts with the round's key ``fold_in(act_key, t)``
    (conventions §8); ``(action i32, memo)``. The online learner acts through this too, so its
    decisions are the simulator's bit for bit.

    Args:
        policy: the policy value.
        pstate: the policy's state.
        ctx: the round's :class:`~jaxbandits.core.types.Context` (``ctx.t`` the round).
        act_key: the run's ACT-stream key (:class:`RunKeys`).

    Returns:
        ``(action, memo)``: the arm, int32, and the policy's memo of the play.

    Examples:
        >>> import jax
        >>> import jax.numpy as jnp
        >>> from jaxbandits import channels, envs
        >>> from jaxbandits.engine.round import act, init, problem
        >>> from jaxbandits.policies import classic
        >>> from jaxbandits.core.types import Context
        >>> p = problem(envs.bernoulli([0.3, 0.6]), channels.attributed(), classic.ucb1(), 100)
        >>> s = init(p, jax.random.key(0), 0)
        >>> ctx = Context(jnp.int32(0), None, None, jnp.int32(-1))
        >>> action, memo = act(p.policy, s.policy, ctx, s.keys.act)
        >>> int(action)  # round 0 of UCB1 pulls arm 0
        0
    """
    action, memo = policy.act(pstate, ctx, fold_in(act_key, ctx.t))
    return jnp.asarray(action, jnp.int32), memo


def round(prob: Problem, state: RunState, t, params=None):  # noqa: A001  (the round of the papers)
    """One round ``t`` of world + channel + policy: ``(state, t) -> (state, Step)`` (pure).

    Context, act, outcome, channel (insert, then read slot ``t``), update (conventions §2); call
    it under ``jit``, ``vmap`` or in a ``lax.scan`` of your own (docs/composing.md).

    Args:
        prob: the :class:`Problem` (:func:`problem`).
        state: the :class:`RunState` after round ``t - 1`` (:func:`init` for round 0).
        t: the round, an integer or i32 in ``[0, horizon)``.
        params: a grid point's parameters, passed to ``prob.build`` (None without a grid).

    Returns:
        ``(state, step)``: the :class:`RunState` after round ``t`` and its :class:`Step`.

    Examples:
        >>> import jax
        >>> from jaxbandits import channels, delays, engine, envs
        >>> from jaxbandits.policies import classic
        >>> world = envs.bernoulli([0.3, 0.6], delay=delays.geometric(mean=5.0))
        >>> prob = engine.problem(world, channels.attributed(), classic.ucb1(), 100)
        >>> state = engine.init(prob, jax.random.key(0))
        >>> step_fn = jax.jit(lambda s, t: engine.round(prob, s, t))
        >>> state, step = step_fn(state, 0)  # doctest: +SKIP
        >>> int(step.action), float(step.gap)  # doctest: +SKIP
        (0, 0.3...)
    """
    world, policy = prob.components(params)
    channel, fb = prob.channel, prob.spec.feedback
    keys = state.keys
    t = jnp.asarray(t, jnp.int32)
    u = uniform(fold_in(keys.reward, t))
    v = uniform(fold_in(keys.delay, t))
    k_ctx = fold_in(keys.context, t)
    k_world = fold_in(keys.world, t)
    # 1. context
    features, mask = world.context(state.world, t, k_ctx)
    delay_now = world.delay_at(state.world, t, v) if fb.delay_at_action else jnp.asarray(-1, jnp.int32)
    ctx = Context(t, features, mask, delay_now)
    # 2. act
    action, memo = act(policy, state.policy, ctx, keys.act)
    # 3. outcome
    mu = world.means(state.world, t, features)
    out, wstate = world.outcome(state.world, t, action, u, v, features, k_world)
    out = out._replace(reward=jnp.asarray(out.reward, _F), delay=jnp.asarray(out.delay, jnp.int32))
    # 4-5. the channel: insert, then read slot t
    hold = jnp.asarray(memo.hold, jnp.int32) if policy.memo_hold else 0
    payload = None if policy.payload is None else (lambda r, d: policy.payload(memo, r, d))
    cstate, got = channel.round(prob.cspec, state.channel, Play(t, out, payload, hold, fold_in(keys.channel, t)))
    arr = Arrivals(t, action, memo, got.payload, got.rev_age)
    # 6. update
    pstate = policy.update(state.policy, arr)
    # per-round quantities
    probs = memo.probs if policy.memo_probs else None
    if world.adversarial:
        row = out.all_rewards
        p_r = row[action] if probs is None else jnp.dot(probs, row)
        gap = exp_gap = jnp.zeros((), _F)
    else:
        row = p_r = None
        mu_m = mu if mask is None else jnp.where(mask, mu, -jnp.inf)
        best = jnp.max(mu_m)
        gap = best - mu[action]
        exp_gap = gap if probs is None else best - jnp.dot(probs, jnp.where(probs > 0, mu, 0.0))
    step = Step(t, action, out.reward, out.delay, gap, exp_gap, row, p_r, arr)
    return RunState(keys, wstate, pstate, cstate), step
