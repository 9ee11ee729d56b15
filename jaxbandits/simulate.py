"""The loop: one ``lax.scan`` over rounds inside ``vmap`` over runs (and over a grid of
hyper-parameters), compiled once, sharded over devices along the runs axis.

Round ``t`` (conventions §2): context -> act -> outcome -> calendar insert -> read slot ``t`` ->
update -> metrics, recorded at the static rounds ``record_at``.

PRNG (conventions §8)::

    k_run = fold_in(key, r)       r = the global run index (independent of n_runs, shards, chunks)
    k_env = fold_in(k_run, 0); k_pol = fold_in(k_run, 1)
    stream S of the world = fold_in(k_env, S): 0 SETUP, 1 REWARD, 2 DELAY, 3 CONTEXT, 4 WORLD
    round t draws from fold_in(stream, t); policy init key fold_in(k_pol, 0);
    act key fold_in(fold_in(k_pol, 1), t)

so every policy, grid point and channel of one experiment faces the same world draws.
"""
from __future__ import annotations

import math
import time
from typing import Any, Callable, Dict, Mapping, NamedTuple, Optional

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from . import _validate as V
from .channels import Channel, calendar_init, calendar_round, calendar_round_profile
from .mathlib import kahan_add, uniform
from .types import NEVER, Arrivals, Context, Policy, ProblemSpec

__all__ = ["simulate", "simulate_grid", "record_points", "SimOutput"]

_F = jnp.float32
SETUP, REWARD, DELAY, CONTEXT, WORLD = range(5)


# ----------------------------------------------------------------------------- recording
def record_points(horizon: int, record=None) -> np.ndarray:
    """Static sorted rounds (0-based) at which metrics are written; always contains ``T-1``.

    ``record`` is ``None`` (about 200 evenly spaced points), an int stride ``k`` (``k-1, 2k-1,
    ...``), ``("log", n)`` (``unique(ceil(geomspace(1, T, n))) - 1``) or an explicit array.
    """
    T = horizon
    if record is None:
        record = max(1, T // 200)
    if isinstance(record, (int, np.integer)) and not isinstance(record, bool):
        k = V.integer("record", record, lo=1)
        pts = np.arange(k - 1, T, k)
    elif isinstance(record, tuple) and len(record) == 2 and record[0] == "log":
        n = V.integer("record[1]", record[1], lo=1)
        pts = np.unique(np.ceil(np.geomspace(1, T, n)).astype(np.int64)) - 1
    else:
        pts = np.asarray(record)
        if pts.ndim != 1 or pts.size == 0 or not np.issubdtype(pts.dtype, np.integer):
            raise ValueError("record must be None, a stride, ('log', n) or a 1-d integer array of rounds")
        if pts.min() < 0 or pts.max() >= T:
            raise ValueError(f"record rounds must lie in [0, {T - 1}]")
    pts = np.union1d(pts, [T - 1]).astype(np.int32)
    return pts


# ----------------------------------------------------------------------------- state of a run
class RunKeys(NamedTuple):
    reward: Any
    delay: Any
    context: Any
    world: Any
    act: Any


class Accum(NamedTuple):
    """Running sums (float32 with Kahan compensation: chunking changes no bit)."""

    regret: Any
    regret_c: Any
    exp_regret: Any
    exp_regret_c: Any
    reward: Any
    reward_c: Any
    exp_reward: Any  # sum <p_t, r_t> (adversarial expected reward)
    exp_reward_c: Any
    pulls: Any  # i32[K]
    arm_totals: Any  # f32[K] cumulative reward of every arm (adversarial G(t))
    arm_totals_c: Any


class DelayedRegret(NamedTuple):
    """Vernade et al. (2017) delayed regret ``L(t) = sum_s Delta_{A_s} tau_{min(t-s, m)}`` (eqs. 1, 3),
    kept exactly in the scan: geometric laws by O(1) recursions (censored: with a ring of the last
    ``m`` gaps), other laws by a ring of the last ``H`` gaps (``H = m``, or uncensored the length
    where ``1 - tau_H <= 1e-6``), O(H) per round. Ring order: write this round's gap first, then read
    the one that leaves the window next round (carried in ``leave``)."""

    closed: Any  # f32 sum of the gaps of pulls older than the window
    win: Any  # f32 sum of the gaps in the window (geometric censored)
    geo: Any  # f32 sum over the window of gap * rho^(age+1) (geometric)
    ring: Any  # f32[H] gaps of the last H pulls, slot s mod H
    leave: Any  # f32 gap of the pull that leaves the window at the next round


class Records(NamedTuple):
    regret: Any  # f32[R] pseudo-regret (adversarial: vs the best arm on the prefix, realised)
    exp_regret: Any  # f32[R] regret of the policy's expected reward (memo.probs), else = regret
    reward: Any  # f32[R] realised cumulative reward (generated, not arrived)
    pulls: Any  # i32[R, K]
    delayed_regret: Any  # f32[R] L(t), or f32[0] when not tracked
    arm_totals: Any  # f32[R, K] adversarial worlds: G(t) of every arm (f32[0, K] otherwise)


class Carry(NamedTuple):
    keys: RunKeys
    env_state: Any
    pol_state: Any
    cal: Any
    acc: Accum
    rec: Records
    dl: DelayedRegret
    due: Any  # i32[H] reveal ring (conventions R3c): delivery round of each of the last H plays, or NEVER


class _Problem(NamedTuple):
    """Everything static about one simulation."""

    build: Callable  # params -> (env, policy)
    channel: Channel
    horizon: int
    record_at: np.ndarray
    width: int
    payload_size: int
    spec: ProblemSpec
    has_hold: bool
    dl_mode: Optional[str] = None  # None, "geom" (O(1)), "ring" (O(H)): the delayed-regret tracker
    dl_len: int = 0  # H, the ring length
    rev_len: int = 0  # H of the reveal ring (policy.reveal_window), 0: no rev_age
    shardable: bool = True  # Policy.shard


def _run_keys(key, run_id):
    k_run = jax.random.fold_in(key, run_id)
    k_env, k_pol = jax.random.fold_in(k_run, 0), jax.random.fold_in(k_run, 1)
    s = lambda i: jax.random.fold_in(k_env, i)
    keys = RunKeys(s(REWARD), s(DELAY), s(CONTEXT), s(WORLD), jax.random.fold_in(k_pol, 1))
    return keys, s(SETUP), jax.random.fold_in(k_pol, 0)


def _init_carry(prob: _Problem, params, key, run_id):
    env, policy = prob.build(params)
    keys, k_setup, k_init = _run_keys(key, run_id)
    K, R = prob.spec.n_arms, prob.record_at.shape[0]
    z = jnp.zeros((), _F)
    zk = jnp.zeros((K,), _F)
    acc = Accum(z, z, z, z, z, z, z, z, jnp.zeros((K,), jnp.int32), zk, zk)
    rec = Records(jnp.zeros((R,), _F), jnp.zeros((R,), _F), jnp.zeros((R,), _F), jnp.zeros((R, K), jnp.int32),
                  jnp.zeros((R if prob.dl_mode else 0,), _F),
                  jnp.zeros((R if env.adversarial else 0, K), _F))
    dl = DelayedRegret(z, z, z, jnp.zeros((prob.dl_len,), _F), z)
    return Carry(keys, env.setup(k_setup), policy.init(prob.spec, k_init),
                 calendar_init(prob.width, prob.payload_size), acc, rec, dl,
                 jnp.full((prob.rev_len,), NEVER, jnp.int32))


def _delayed_regret_step(prob: _Problem, env, dl: DelayedRegret, t, gap, regret):
    """Advance L(t) by the gap of round t's pull; returns (state, L(t))."""
    from .delays import geometric_log_rho

    m = prob.channel.window
    H = prob.dl_len
    if m == 0:  # only same-round conversions count: L = tau_0 R
        return dl, env.delay.cdf(0) * regret
    if prob.dl_mode == "geom":
        lr = geometric_log_rho(env.delay)
        rho = jnp.exp(lr)
        if m is None:  # G <- rho (G + gap), L = R - G
            geo = rho * (dl.geo + gap)
            return dl._replace(geo=geo), regret - geo
        old = jnp.where(t >= m, dl.leave, 0.0)
        geo = rho * dl.geo - jnp.exp((m + 1) * lr) * old + rho * gap
        win = dl.win - old + gap
        closed = dl.closed + old
        ring = dl.ring.at[t % H].set(gap)
        dl = DelayedRegret(closed, win, geo, ring, ring[(t + 1) % H])
        tau_m = -jnp.expm1((m + 1) * lr)
        return dl, tau_m * closed + win - geo
    # general law: closed pulls weigh tau_H' (H' = m censored; uncensored tau_H ~ 1 - 1e-6)
    tau = env.delay.cdf_table(H + 1)
    old = jnp.where(t >= H, dl.leave, 0.0)
    closed = dl.closed + old
    ring = dl.ring.at[t % H].set(gap)
    ages = (t - jnp.arange(H)) % H
    ages = jnp.where(jnp.arange(H) <= t, ages, 0)
    live = (jnp.arange(H) <= t) | (t >= H)
    val = tau[H] * closed + jnp.sum(jnp.where(live, ring * tau[ages], 0.0))
    return DelayedRegret(closed, dl.win, dl.geo, ring, ring[(t + 1) % H]), val


def _step(prob: _Problem, params, carry: Carry, xs):
    t, i = xs  # round, and its record slot (R = not a record round)
    env, policy = prob.build(params)
    ch, T, W = prob.channel, prob.horizon, prob.width
    keys = carry.keys
    u = uniform(jax.random.fold_in(keys.reward, t))
    v = uniform(jax.random.fold_in(keys.delay, t))
    k_ctx = jax.random.fold_in(keys.context, t)
    k_world = jax.random.fold_in(keys.world, t)
    k_act = jax.random.fold_in(keys.act, t)

    # 1. context
    features, mask = env.context(carry.env_state, t, k_ctx)
    delay_now = env.delay_at(carry.env_state, t, v) if ch.kind == "action_time" else jnp.asarray(-1, jnp.int32)
    ctx = Context(t, features, mask, delay_now)
    # 2. act
    action, memo = policy.act(carry.pol_state, ctx, k_act)
    action = jnp.asarray(action, jnp.int32)
    # 3. outcome
    mu = env.means(carry.env_state, t, features)
    out, env_state = env.outcome(carry.env_state, t, action, u, v, features, k_world)
    d = jnp.asarray(out.delay, jnp.int32)
    r = jnp.asarray(out.reward, _F)
    # 4-5. calendar: insert, then read slot t
    if ch.kind == "composite":
        if out.profile is not None:
            L = out.profile.shape[0]
            prof = out.profile[:W] if L >= W else jnp.pad(out.profile, (0, W - L))
            spread = r * prof
            lost_now = (r > 0) & (jnp.sum(out.profile[W:]) > 0) if L > W else jnp.asarray(False)
        else:
            spread = r * (jnp.arange(W) == d).astype(_F)
            lost_now = (r > 0) & (d >= W) & (d < NEVER) & (t + jnp.minimum(d, NEVER) <= T - 1)
        cal, arrived = calendar_round_profile(carry.cal, t, spread)
        cal = cal._replace(lost=cal.lost + lost_now.astype(jnp.int32))
    else:
        hold = jnp.asarray(getattr(memo, "hold", 0), jnp.int32) if prob.has_hold else 0
        lag = jnp.maximum(d, hold)
        deliverable = (d < NEVER) & (lag <= T - 1 - t)
        if ch.kind == "anonymous":
            value = r[None]
        elif ch.kind == "conversions":
            value = policy.payload(memo, jnp.asarray(1.0, _F), d)
            deliverable = deliverable & (r > 0)
            if ch.window is not None:
                deliverable = deliverable & (d <= ch.window)
        else:
            value = policy.payload(memo, r, d)
        cal, arrived = calendar_round(carry.cal, t, jnp.asarray(value, _F), lag, deliverable)
    # R3c reveal ages: a pull-indexed ring of delivery rounds, written first, then one read
    due, rev_age = carry.due, None
    if prob.rev_len > 0:
        H = prob.rev_len
        due = due.at[t % H].set(jnp.where(deliverable & (lag < H), t + lag, NEVER).astype(jnp.int32))
        ages = jnp.arange(H)
        rev_age = (due[(t - ages) % H] == t) & (ages <= t)
    # 6. update
    pol_state = policy.update(carry.pol_state, Arrivals(t, action, memo, arrived, rev_age))
    # 7. metrics
    acc = carry.acc
    probs = getattr(memo, "probs", None)
    if env.adversarial:
        row = out.all_rewards
        p_r = row[action] if probs is None else jnp.dot(probs, row)
        arm_totals, arm_totals_c = kahan_add(acc.arm_totals, acc.arm_totals_c, row)
        exp_reward, exp_reward_c = kahan_add(acc.exp_reward, acc.exp_reward_c, p_r)
        regret, regret_c, exp_regret, exp_regret_c = acc.regret, acc.regret_c, acc.exp_regret, acc.exp_regret_c
    else:
        mu_m = mu if mask is None else jnp.where(mask, mu, -jnp.inf)
        best = jnp.max(mu_m)
        gap = best - mu[action]
        exp_gap = gap if probs is None else best - jnp.dot(probs, jnp.where(probs > 0, mu, 0.0))
        regret, regret_c = kahan_add(acc.regret, acc.regret_c, gap)
        exp_regret, exp_regret_c = kahan_add(acc.exp_regret, acc.exp_regret_c, exp_gap)
        arm_totals, arm_totals_c = acc.arm_totals, acc.arm_totals_c
        exp_reward, exp_reward_c = acc.exp_reward, acc.exp_reward_c
    reward, reward_c = kahan_add(acc.reward, acc.reward_c, r)
    pulls = acc.pulls.at[action].add(1)
    acc = Accum(regret, regret_c, exp_regret, exp_regret_c, reward, reward_c, exp_reward, exp_reward_c,
                pulls, arm_totals, arm_totals_c)
    # write at the record point (write-only scatter; slot R = not a record round)
    if env.adversarial:
        best_g = jnp.max(arm_totals)
        rg, erg = best_g - reward, best_g - exp_reward
    else:
        rg, erg = regret, exp_regret
    dl, dl_rec = carry.dl, carry.rec.delayed_regret
    if prob.dl_mode is not None:
        dl, lt = _delayed_regret_step(prob, env, dl, t, gap, regret)
        dl_rec = dl_rec.at[i].set(lt, mode="drop")
    rec = Records(carry.rec.regret.at[i].set(rg, mode="drop"),
                  carry.rec.exp_regret.at[i].set(erg, mode="drop"),
                  carry.rec.reward.at[i].set(reward, mode="drop"),
                  carry.rec.pulls.at[i].set(pulls, mode="drop"), dl_rec,
                  carry.rec.arm_totals.at[i].set(arm_totals, mode="drop") if env.adversarial
                  else carry.rec.arm_totals)
    return Carry(keys, env_state, pol_state, cal, acc, rec, dl, due), None


# ----------------------------------------------------------------------------- outputs
class SimOutput(NamedTuple):
    """Per-run recordings of one policy (numpy arrays; leading axes ``[grid?, runs]``)."""

    t: np.ndarray  # rounds completed at each record point (record_at + 1)
    regret: np.ndarray  # [.., runs, R]
    expected_regret: np.ndarray  # [.., runs, R]
    reward: np.ndarray  # [.., runs, R]
    pulls: np.ndarray  # [.., runs, R, K]
    lost_to_W: np.ndarray  # [.., runs]
    width: int
    timing: dict
    delayed_regret: Optional[np.ndarray] = None  # [.., runs, R] L(t) (conversions channel), else None
    arm_totals: Optional[np.ndarray] = None  # [.., runs, R, K] G(t) (adversarial worlds), else None

    @property
    def fixed_regret(self) -> Optional[np.ndarray]:
        """Adversarial worlds: regret against the fixed ``i* = argmax_a G_a(T-1)`` of each run,
        ``G_{i*}(t) - sum_{s<=t} r_s`` (conventions §7; ``regret`` is against the best arm of each
        prefix). ``None`` for stochastic worlds."""
        if self.arm_totals is None:
            return None
        G = self.arm_totals
        best = np.argmax(G[..., -1, :], axis=-1)
        g_star = np.take_along_axis(G, best[..., None, None], axis=-1)[..., 0]
        return g_star - self.reward


def _validate_common(channel, horizon, n_runs, key):
    if not isinstance(channel, Channel):
        raise TypeError(f"channel must be a jaxbandits.channels.Channel, got {type(channel).__name__}")
    horizon = V.integer("horizon", horizon, lo=1, hi=NEVER - 1)
    n_runs = V.integer("n_runs", n_runs, lo=1)
    if isinstance(key, (int, np.integer)) and not isinstance(key, bool):
        key = jax.random.key(int(key))
    elif not (isinstance(key, jax.Array) and jnp.issubdtype(key.dtype, jax.dtypes.prng_key)):
        raise TypeError(f"key must be a jax.random.key(...) or an int seed, got {type(key).__name__}")
    return horizon, n_runs, key


def _check_pair(env, channel, policy, label):
    if not isinstance(policy, Policy):
        raise TypeError(f"policy {label!r} must be a jaxbandits Policy, got {type(policy).__name__}")
    if channel.kind not in policy.channels:
        raise ValueError(f"policy {label!r} ({policy.name}) accepts the channels {sorted(policy.channels)}, "
                         f"not {channel.kind!r}")
    if channel.kind in ("attributed", "action_time", "conversions") and policy.payload is None:
        raise ValueError(f"policy {label!r} has no payload function: it cannot use the {channel.kind} channel")


def _delayed_regret_mode(env, channel, horizon, delayed_regret):
    """Which L(t) tracker to use: by default only for the conversions channel of a stochastic world."""
    from .delays import geometric_log_rho, truncation_length

    want = (channel.kind == "conversions") if delayed_regret is None else bool(delayed_regret)
    if not want:
        return None, 0
    if getattr(env, "adversarial", False) or not hasattr(env, "delay") or env.dim is not None:
        if delayed_regret:
            raise ValueError("delayed_regret needs a stochastic K-armed world with a delay law")
        return None, 0
    m = channel.window if channel.kind == "conversions" else None
    if m is not None:
        m = min(m, horizon)
    if geometric_log_rho(env.delay) is not None and m != 0:
        return "geom", (m if m is not None else 0)
    H = m if m is not None else truncation_length(env.delay, horizon)
    return "ring", (max(int(H), 1) if m != 0 else 0)


def _make_problem(build, env, policy, channel, horizon, record, n_runs, delayed_regret=None):
    spec = ProblemSpec(env.n_arms, horizon, env.dim, channel.kind, channel.window)
    # shapes of a memo and payload, without compiling
    k = jax.random.key(0)
    st = jax.eval_shape(lambda: policy.init(spec, k))
    feats = jax.eval_shape(lambda: env.context(env.setup(k), 0, k))
    ctx = Context(jnp.int32(0), *feats, jnp.int32(-1))
    _, memo = jax.eval_shape(lambda s, c: policy.act(s, c, k), st, ctx)
    has_hold = hasattr(memo, "hold") if isinstance(memo, tuple) else False
    if channel.kind in ("anonymous", "composite"):
        P = 1
    else:
        pl = jax.eval_shape(lambda m: policy.payload(m, jnp.float32(1), jnp.int32(0)), memo)
        if pl.ndim != 1:
            raise ValueError(f"{policy.name}: payload must be a 1-d array, got shape {pl.shape}")
        P = pl.shape[0]
    # a memo's hold is data: the policy declares its bound (Policy.max_hold), else W covers the horizon
    max_hold = (policy.max_hold or horizon) if has_hold else 0
    W = channel.resolve_width(env, horizon, P, n_runs, max_hold)
    if channel.kind == "composite":
        W = channel.width or channel.exact_width(env.max_delay, horizon)
    dl_mode, dl_len = _delayed_regret_mode(env, channel, horizon, delayed_regret)
    rev_len = int(getattr(policy, "reveal_window", 0) or 0)
    if rev_len and channel.kind != "conversions":
        raise ValueError(f"{policy.name}: reveal ages (reveal_window) need the conversions channel, "
                         f"got {channel.kind!r}")
    return _Problem(build, channel, horizon, record_points(horizon, record), int(W), int(P), spec, has_hold,
                    dl_mode, dl_len, rev_len, bool(getattr(policy, "shard", True)))


def _record_slots(prob: _Problem) -> np.ndarray:
    """``slot[t]`` = the index of round ``t`` in ``record_at``, or ``R`` if it is not recorded
    (fed to the scan as input: no search inside the round)."""
    R = prob.record_at.shape[0]
    slots = np.full(prob.horizon, R, np.int32)
    slots[prob.record_at] = np.arange(R, dtype=np.int32)
    return slots


def _mesh(n_dev):
    return jax.sharding.Mesh(np.array(jax.devices()[:n_dev]), ("runs",))


def _runs_spec(gridded):
    P = jax.sharding.PartitionSpec
    return P(None, "runs") if gridded else P("runs")


def _per_device(fn, n_dev, gridded, n_replicated):
    """Run ``fn`` on each device's block of runs with ``shard_map``: runs are independent, so no
    collective is needed (automatic partitioning turned the Beta sampler's while-loop predicate
    into an all-reduce every round). Arguments after the first are replicated."""
    if n_dev <= 1:
        return fn
    P = jax.sharding.PartitionSpec
    spec = _runs_spec(gridded)
    return jax.shard_map(fn, mesh=_mesh(n_dev), in_specs=(spec,) + (P(),) * n_replicated,
                         out_specs=spec, check_vma=False)


def _chunk_plan(T, chunk):
    if chunk is None or chunk >= T:
        return [(0, T)]
    chunk = V.integer("chunk", chunk, lo=1)
    return [(s, min(chunk, T - s)) for s in range(0, T, chunk)]


def _run(problems: Dict[str, _Problem], grid_params, key, n_runs, chunk, progress, shard, first_run=0):
    """Compile and run every problem (policy) in one jitted program per chunk length."""
    if shard is None:  # all devices, unless there are too few runs to be worth padding and splitting
        n_dev = jax.local_device_count() if n_runs >= 8 * jax.local_device_count() else 1
        if any(not p.shardable for p in problems.values()):
            n_dev = 1  # a policy opted out (Policy.shard=False)
    elif shard is True:
        n_dev = jax.local_device_count()
    else:
        n_dev = 1 if shard is False else V.integer("shard", shard, lo=1, hi=jax.local_device_count())
    n_pad = int(math.ceil(n_runs / n_dev) * n_dev)
    gridded = grid_params is not None
    run_ids = jnp.arange(n_pad, dtype=jnp.int32) + jnp.int32(first_run)
    if n_dev > 1:
        run_ids = jax.device_put(run_ids, jax.sharding.NamedSharding(_mesh(n_dev), _runs_spec(False)))

    def init_local(run_ids, gp):
        out = {}
        for lab, prob in problems.items():
            f = lambda p, r, prob=prob: _init_carry(prob, p, key, r)
            f_runs = jax.vmap(f, in_axes=(None, 0))
            out[lab] = jax.vmap(f_runs, in_axes=(0, None))(gp, run_ids) if gridded else f_runs(None, run_ids)
        return out

    def chunk_local(carries, gp, t0, length):
        out = {}
        for lab, prob in problems.items():
            ts = t0 + jnp.arange(length, dtype=jnp.int32)
            slots = lax.dynamic_slice_in_dim(jnp.asarray(_record_slots(prob)), t0, length)

            def scan_one(p, c, prob=prob, ts=ts, slots=slots):
                return lax.scan(lambda cc, x: _step(prob, p, cc, x), c, (ts, slots))[0]

            f_runs = jax.vmap(scan_one, in_axes=(None, 0))
            out[lab] = jax.vmap(f_runs, in_axes=(0, 0))(gp, carries[lab]) if gridded else f_runs(None, carries[lab])
        return out

    if n_dev > 1:  # run_ids are sharded on axis 0 even behind a grid axis: map them separately
        init_all = jax.shard_map(init_local, mesh=_mesh(n_dev),
                                 in_specs=(_runs_spec(False), jax.sharding.PartitionSpec()),
                                 out_specs=_runs_spec(gridded), check_vma=False)
    else:
        init_all = init_local

    def chunk_all(carries, gp, t0, length):
        f = _per_device(lambda c, g, t: chunk_local(c, g, t, length), n_dev, gridded, 2)
        return f(carries, gp, t0)

    T = next(iter(problems.values())).horizon
    plan = _chunk_plan(T, chunk)
    compile_s = 0.0
    t0c = time.perf_counter()
    init_c = jax.jit(init_all).lower(run_ids, grid_params).compile()
    carries = init_c(run_ids, grid_params)
    compile_s += time.perf_counter() - t0c
    compiled = {}
    run_s = 0.0
    bar = None
    if progress:
        try:
            from tqdm.auto import tqdm

            bar = tqdm(total=T, unit="round", desc="simulate", leave=False)
        except ImportError:  # pragma: no cover
            bar = None
    for start, length in plan:
        if length not in compiled:
            tc = time.perf_counter()
            fn = jax.jit(chunk_all, static_argnums=(3,), donate_argnums=(0,))
            compiled[length] = fn.lower(carries, grid_params, jnp.int32(start), length).compile()
            compile_s += time.perf_counter() - tc
        tr = time.perf_counter()
        carries = compiled[length](carries, grid_params, jnp.int32(start), )
        jax.block_until_ready(carries)
        run_s += time.perf_counter() - tr
        if bar is not None:
            bar.update(length)
    if bar is not None:
        bar.close()
    return carries, compile_s, run_s, n_dev


def _outputs(problems, carries, n_runs, compile_s, run_s, n_dev, n_grid=1):
    outs = {}
    steps = n_runs * n_grid * next(iter(problems.values())).horizon * len(problems)
    timing = {"compile_s": compile_s, "run_s": run_s, "run_steps_per_s": steps / max(run_s, 1e-12),
              "devices": n_dev, "policies_in_program": len(problems)}
    for lab, prob in problems.items():
        c = carries[lab]
        rec = jax.tree.map(lambda a: np.asarray(a), c.rec)
        cut = lambda a: a[..., :n_runs, :] if a.ndim >= 2 else a
        pulls = np.asarray(c.rec.pulls)
        pulls = pulls[..., :n_runs, :, :]
        outs[lab] = SimOutput(
            t=prob.record_at.astype(np.int64) + 1,
            regret=cut(rec.regret), expected_regret=cut(rec.exp_regret), reward=cut(rec.reward),
            pulls=pulls, lost_to_W=np.asarray(c.cal.lost)[..., :n_runs],
            width=prob.width, timing=dict(timing),
            delayed_regret=cut(rec.delayed_regret) if prob.dl_mode else None,
            arm_totals=rec.arm_totals[..., :n_runs, :, :] if rec.arm_totals.shape[-2] > 0 else None)
    return outs


def simulate(env, channel: Channel, policies, horizon: int, key, n_runs: int = 1, *, record=None,
             chunk: Optional[int] = None, progress: bool = False, shard=None, first_run: int = 0,
             delayed_regret: Optional[bool] = None):
    """Simulate ``n_runs`` paired runs of one policy or a ``{label: policy}`` dict.

    All policies are traced into one program (one compile, one call per chunk); every policy
    faces the same world draws. ``chunk`` splits the horizon into scans of that many rounds (same
    bits as one scan) with an optional progress bar. ``shard`` spreads runs over the local devices
    (default: all of them once there are at least 8 runs per device; ``True``: always; ``False``:
    one device; an int: that many). Runs are numbered ``first_run, first_run + 1, ...`` (run ``r`` is keyed by
    ``fold_in(key, r)`` whatever the batch: several hosts or calls can split one experiment).
    ``delayed_regret`` tracks Vernade et al.'s ``L(t)`` (default: on for the conversions channel).
    Returns ``SimOutput`` (or a dict of them for a dict of policies).
    """
    horizon, n_runs, key = _validate_common(channel, horizon, n_runs, key)
    first_run = V.integer("first_run", first_run, lo=0)
    single = isinstance(policies, Policy)
    pols = {policies.name: policies} if single else dict(policies)
    if not pols:
        raise ValueError("policies must be a Policy or a non-empty {label: Policy} dict")
    problems = {}
    for lab, pol in pols.items():
        _check_pair(env, channel, pol, lab)
        problems[lab] = _make_problem(lambda _p, pol=pol: (env, pol), env, pol, channel, horizon,
                                      record, n_runs, delayed_regret)
    carries, cs, rs, nd = _run(problems, None, key, n_runs, chunk, progress, shard, first_run)
    outs = _outputs(problems, carries, n_runs, cs, rs, nd)
    return outs[next(iter(outs))] if single else outs


def simulate_grid(build: Callable, grid: Mapping[str, Any], channel: Channel, horizon: int, key,
                  n_runs: int = 1, *, record=None, chunk=None, progress=False, shard=None):
    """Simulate a grid of hyper-parameters in one compiled program.

    ``build(**params)`` returns ``(env, policy)``; ``grid`` maps each parameter name to an array
    whose leading axis has the common length ``G`` (a row may itself be an array, e.g. a delay
    sequence per grid point). Every grid point is built once on the host first (which runs the
    constructors' input checks on concrete values), then ``vmap`` runs all of them. Outputs have a
    leading axis of size ``G``; every grid point faces the same world draws.
    """
    horizon, n_runs, key = _validate_common(channel, horizon, n_runs, key)
    if not grid:
        raise ValueError("grid must map at least one parameter name to an array of values")
    arrs = {k: np.asarray(v) for k, v in grid.items()}
    sizes = {k: a.shape[0] if a.ndim >= 1 else -1 for k, a in arrs.items()}
    if len(set(sizes.values())) != 1 or -1 in sizes.values():
        raise ValueError(f"grid values must be arrays with one common leading length, got sizes {sizes}")
    G = next(iter(sizes.values()))
    first = None
    for g in range(G):
        env, pol = build(**{k: (a[g].item() if a.ndim == 1 else a[g]) for k, a in arrs.items()})
        _check_pair(env, channel, pol, pol.name)
        first = first or (env, pol)
    env, pol = first
    params = {k: jnp.asarray(a) for k, a in arrs.items()}
    prob = _make_problem(lambda p: build(**p), env, pol, channel, horizon, record, n_runs)
    carries, cs, rs, nd = _run({pol.name: prob}, params, key, n_runs, chunk, progress, shard)
    return _outputs({pol.name: prob}, carries, n_runs, cs, rs, nd, n_grid=G)[pol.name]
