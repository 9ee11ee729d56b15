"""Which simulations the fused kernels cover, and running them (docs/fused.md).

:func:`unsupported` lists, in words, everything that keeps a simulation off the fused path (an
empty list: it is covered); :func:`simulate_fused` runs a covered one and returns the same
:class:`~jaxbandits.engine.recording.SimOutput` as the scan path.
"""
from __future__ import annotations

import collections
import dataclasses
import time
from typing import Dict, List

import jax
import jax.numpy as jnp
import numpy as np

from ... import channels as C
from ...core import delays as D
from ..recording import SimOutput, record_points
from ...core.values import is_policy
from .registry import spec_of

__all__ = ["unsupported", "simulate_fused", "CLASSIC", "DELAYED", "run_keys_words", "scan_uniforms", "clear_cache"]

CLASSIC = ("ucb1", "kl_ucb", "thompson", "gaussian_ts", "random")
DELAYED = ("delayed_ucb", "delayed_klucb")
#: runs per program on a GPU (one run per lane: 4 warps)
GPU_BLOCK = 128
#: (runs, warps) per program of a Bernoulli-world kernel on a GPU where another launch measured
#: faster: Thompson's proposal loop runs until the block's last lane is done, so one warp a program
#: (3.4e9 against 3.2e9 run-steps/s at 128 runs and 4 warps, T = 2000, H200, docs/benchmarks.md)
GPU_LAUNCH = {"thompson": (32, 1)}


def _world_kind(env):
    """("bernoulli", law) for the library's Bernoulli / conversions worlds, else None."""
    from ...envs.stochastic import BanditEnv

    if type(env) is not BanditEnv or env.noise != "bernoulli":
        return None
    return env.delay


def _no_delay(law):
    return isinstance(law, D.Fixed) and int(law.support_max) == 0


def unsupported(env, channel, policies, *, chunk=None, shard=None, resume=False, grid=False) -> List[str]:
    """Everything that keeps this simulation off the fused path, as sentences (empty: covered).

    Args:
        env: the world.
        channel: the channel.
        policies: one policy or a dict of named policies.
        chunk: the run's ``chunk`` setting.
        shard: the run's ``shard`` setting (the fused path runs on one device).
        resume: a resumed run (a scan-path checkpoint).
        grid: a grid of hyper-parameters (``simulate_grid``).

    Returns:
        A list of strings, one reason each.

    Examples:
        >>> from jaxbandits import channels, envs
        >>> from jaxbandits.engine.fused import path
        >>> from jaxbandits.policies import classic
        >>> path.unsupported(envs.bernoulli([0.1, 0.5]), channels.attributed(), classic.ucb1(), grid=True)
        ['grids of hyper-parameters (simulate_grid) run on the scan path']
    """
    why = []
    if jax.config.jax_enable_x64:
        why.append("x64 mode (jax_enable_x64): the kernels are written for 32-bit types")
    if grid:
        why.append("grids of hyper-parameters (simulate_grid) run on the scan path")
    if resume:
        why.append("resume=True continues a scan-path checkpoint")
    if shard is True:  # every local device (True == 1 in Python, so it is asked apart)
        if jax.local_device_count() > 1:
            why.append(f"shard=True over {jax.local_device_count()} devices: the fused path runs on one device")
    elif shard not in (None, False, 1):
        why.append(f"shard={shard!r}: the fused path runs on one device")
    law = _world_kind(env)
    if law is None:
        why.append(f"the world {type(env).__name__} (the fused kernels cover the library's Bernoulli and "
                   "conversions worlds: envs.bernoulli, envs.conversions)")
    pols = {policies.name: policies} if is_policy(policies) else dict(policies)
    for lab, pol in pols.items():
        sp = spec_of(pol) if is_policy(pol) else None
        if sp is None:
            why.append(f"policy {lab!r} ({getattr(pol, 'name', type(pol).__name__)}) has no fused kernel "
                       "(covered: UCB1, KL-UCB, Thompson, Gaussian-TS, uniform random, DelayedUCB, DelayedKLUCB)")
            continue
        if sp.kind in CLASSIC:
            if type(channel) is C.Conversions:
                why += _conversions_unsupported(lab, pol, channel.window, law)
            elif type(channel) is not C.Attributed:
                why.append(f"policy {lab!r} ({pol.name}) runs fused only on the attributed channel (without "
                           f"delay) or the conversions channel (with a window), not {channel}")
            elif law is not None and not _no_delay(law):
                why.append(f"policy {lab!r} ({pol.name}) runs fused on the attributed channel only without delay "
                           f"(delay law fixed(0)), got {type(law).__name__}")
            if sp.kind == "thompson" and sp.get("sampler") != "mt":
                why.append(f"policy {lab!r}: Thompson with sampler={sp.get('sampler')!r} (fused: 'mt' only)")
        else:
            why += _delayed_unsupported(lab, pol, sp, env, law, channel)
    if channel.width is not None:
        why.append(f"an explicit calendar width ({channel})")
    return why


def kernel_law(law):
    """The delay law as the fused kernels hold it, or ``None`` when it has no in-kernel sampler.

    A closed-form law (:attr:`jaxbandits.core.delays.DelayLaw.closed_form`) with each array field made a
    NumPy scalar of the same dtype and value: hashable (it is part of the kernel's compile key) and
    a constant inside the kernel, where its own ``ppf_float`` draws the delays, so the kernels and
    the scan path share one inverse CDF, computed in the same float32 operations.

    Args:
        law: a delay law (:mod:`jaxbandits.core.delays`).

    Returns:
        The law with NumPy scalar fields, or ``None`` for a law that is not closed-form (a
        histogram, Poisson, a mixture, a shift, a user's law).

    Example:
        >>> from jaxbandits import delays
        >>> k = kernel_law(delays.uniform(3, 11))
        >>> type(k).__name__, k == kernel_law(delays.uniform(3, 11)), kernel_law(delays.poisson(4.0))
        ('Uniform', True, None)
    """
    if not getattr(type(law), "closed_form", False):
        return None
    fields = {f.name: np.asarray(getattr(law, f.name))[()] for f in dataclasses.fields(law)
              if not f.metadata.get("static")}
    return dataclasses.replace(law, **fields)


def _conversions_unsupported(lab, pol, m, law):
    why = []
    if m is None or m < 1:
        why.append(f"policy {lab!r} ({pol.name}): on the conversions channel the fused kernels need a censoring "
                   f"window m >= 1, got window={m}")
    if law is not None and kernel_law(law) is None:
        why.append(f"the delay law {type(law).__name__} has no closed-form fused sampler (covered: fixed, "
                   "uniform, geometric, exponential, weibull, log_normal, pareto)")
    return why


def _delayed_unsupported(lab, pol, sp, env, law, channel):
    why = []
    if sp.get("online"):
        why.append(f"policy {lab!r} ({pol.name}): the online delay-CDF variant (online=True) has no fused kernel")
    if type(channel) is not C.Conversions:
        why.append(f"policy {lab!r} ({pol.name}) runs fused only on the conversions channel, not {channel}")
    else:
        why += _conversions_unsupported(lab, pol, sp.get("window"), law)
    if law is not None and kernel_law(law) is not None:
        if sp.get("delay") != law:
            why.append(f"policy {lab!r} ({pol.name}) was built for another delay law than the world's")
    return why


def scan_uniforms(key, n_runs, horizon, first_run=0):
    """The scan path's reward, delay and act-key (tie) uniforms of every run and round.

    Conventions §8 (``jaxbandits.engine.round``): for replaying the scan's world draws through a
    kernel in tests.

    Args:
        key: the PRNG key of the simulation.
        n_runs: the runs.
        horizon: the rounds.
        first_run: the index of the first run.

    Returns:
        ``(reward, delay, tie)``, each f32 ``[n_runs, horizon]``.

    Examples:
        >>> import jax
        >>> from jaxbandits.engine.fused import path
        >>> reward, delay, tie = path.scan_uniforms(jax.random.key(0), 2, 5)
        >>> reward.shape
        (2, 5)
    """
    from ..round import run_keys
    from ...core.mathlib import uniform

    def one(r):
        keys = run_keys(key, r)[0]
        at = lambda k: jax.vmap(lambda t: uniform(jax.random.fold_in(k, t)))(jnp.arange(horizon))
        return at(keys.reward), at(keys.delay), at(keys.act)

    return jax.device_get(jax.jit(jax.vmap(one))(jnp.arange(n_runs, dtype=jnp.int32) + first_run))


def run_keys_words(key, run_ids):
    """The per-run words of the world key and the policy key (conventions §8).

    ``k_run = fold_in(key, r)``, ``k_env = fold_in(k_run, 0)``, ``k_pol = fold_in(k_run, 1)``.

    Args:
        key: the PRNG key of the simulation.
        run_ids: i32[n], the runs.

    Returns:
        ``(env0, env1, pol0, pol1)``, four ``uint32[n]`` arrays.

    Examples:
        >>> import jax, jax.numpy as jnp
        >>> from jaxbandits.engine.fused import path
        >>> words = path.run_keys_words(jax.random.key(0), jnp.arange(3))
        >>> len(words), words[0].dtype, words[0].shape
        (4, dtype('uint32'), (3,))
    """
    def one(r):
        k_run = jax.random.fold_in(key, r)
        ke = jax.random.key_data(jax.random.fold_in(k_run, 0)).astype(jnp.uint32)
        kp = jax.random.key_data(jax.random.fold_in(k_run, 1)).astype(jnp.uint32)
        return ke[0], ke[1], kp[0], kp[1]

    return jax.vmap(one)(run_ids)


_CACHE: "collections.OrderedDict" = collections.OrderedDict()  # jitted programs
COMPILED: "collections.OrderedDict" = collections.OrderedDict()  # their executables, by argument shapes


def clear_cache():
    """Forget every compiled fused program.

    Returns:
        None.

    Examples:
        >>> from jaxbandits.engine.fused import path
        >>> path.clear_cache()
    """
    _CACHE.clear()
    COMPILED.clear()
    _WORDS.clear()


def kernel_program(ks, n_pad):
    """The jitted program of one kernel (cached by its static description and the runs)."""
    from . import kernels as Kn

    k = (ks, n_pad)
    if k not in _CACHE:
        from . import lanes

        if ks.world[0] == "conversions":
            call = lanes.build_delayed(ks, n_pad)

            def prog(mu, rec, tau, words, *replay):
                return call(mu, rec, tau, *words, *(jnp.swapaxes(x, 0, 1) for x in replay))[:5]
        else:  # records [R, runs]
            call = lanes.build(ks, n_pad)

            def prog(mu, rec, tau, words, *replay):
                del tau
                return call(mu, rec, *words, *(jnp.swapaxes(x, 0, 1) for x in replay))

        _CACHE[k] = jax.jit(prog)
        while len(_CACHE) > 32:
            _CACHE.popitem(last=False)
    _CACHE.move_to_end(k)
    return _CACHE[k]


_WORDS: "collections.OrderedDict" = collections.OrderedDict()  # run_keys_words, compiled by runs and key type


def _key_words(key, run_ids):
    """``(words, compile s)``: every run's key words, one compiled program per number of runs and
    key type, shared by every kernel of a call and later calls."""
    k = (run_ids.shape, str(jax.random.key_impl(key)))
    dt = 0.0
    if k not in _WORDS:
        t0 = time.perf_counter()
        _WORDS[k] = jax.jit(run_keys_words).lower(key, run_ids).compile()
        dt = time.perf_counter() - t0
        while len(_WORDS) > 8:
            _WORDS.popitem(last=False)
    return _WORDS[k](key, run_ids), dt


def _scalar(v):
    """A constructor's argument as a hashable Python value (the kernel bakes it in as a constant)."""
    if v is None or isinstance(v, (bool, str)):
        return v
    if isinstance(v, (int, np.integer)):
        return int(v)
    return float(v)


def kernel_spec(env, channel, pol, horizon, n_rec, *, block, interpret, num_warps=4, replay=0):
    """``(KernelSpec, tau)``: the static description of ``pol``'s kernel and its CDF table
    (``tau_0..tau_H`` padded to ``Wp``; a one-element dummy for the classic kernels)."""
    from . import kernels as Kn

    sp = spec_of(pol)
    K = env.n_arms
    kp = max(Kn.next_pow2(K), 4)
    tau = np.zeros((1,), np.float32)
    params = tuple((k, _scalar(v)) for k, v in sp.params if k not in ("delay", "window"))
    world = ("bernoulli",)
    if type(channel) is C.Conversions:  # the calendar kernel (jaxbandits.engine.fused.lanes.build_delayed)
        world = ("conversions",)
        law = env.delay
        m = int(channel.window)
        H = min(m, horizon)
        Wp = Kn.next_pow2(min(m, horizon - 1) + 1)
        Wp = max(Wp, Kn.next_pow2(H + 1))
        lr = D.geometric_log_rho(law)
        lr = None if lr is None else float(lr)
        tau = np.zeros((Wp,), np.float32)
        tau[: H + 1] = np.asarray(law.cdf_table(H + 1), np.float32)
        params = params + (("window", m), ("H", H), ("T", horizon), ("Wp", Wp), ("law", kernel_law(law)),
                           ("log_rho", lr))
    ks = Kn.KernelSpec(sp.kind, tuple(sorted(params, key=lambda kv: kv[0])), K, kp, n_rec,
                       n_rec, block, world, interpret, num_warps, replay)
    return ks, tau


def simulate_fused(env, channel, policies, horizon, key, n_runs=1, *, record=None, first_run=0,
                   delayed_regret=None, interpret=None, block=None, replay=None, keep=None,
                   stats_block=None) -> Dict[str, SimOutput] | SimOutput:
    """Run a covered simulation on the fused kernels (inputs checked by ``jaxbandits.simulate``).

    ``replay`` (tests): three ``[n_runs, horizon]`` arrays of the rounds' reward, delay and tie
    uniforms to use instead of the kernels' own generator (e.g. :func:`scan_uniforms`, the scan
    path's: then the fused and scan paths take the same actions, policies without other draws).
    ``keep`` and ``stats_block`` as for the scan path: the statistics are reduced on the device
    right after the kernels (every policy's records are there then, so the paired differences
    too), and only the per-run curves ``keep`` asks for are copied to the host.

    Args:
        env: the world (a Bernoulli or conversions world of the library).
        channel: the channel.
        policies: one policy or a dict of named policies, each with a fused kernel.
        horizon: the rounds.
        key: the PRNG key.
        n_runs: the runs.
        record: the record points (as for :func:`jaxbandits.simulate`).
        first_run: the index of the first run (a part of a larger run).
        delayed_regret: track the delayed regret ``L(t)`` (None: on a channel that attributes
            feedback and hides zero outcomes, the conversions channel).
        interpret: run the kernels through Pallas' interpreter (default: not on a GPU).
        block: the runs per program (default 128 on a GPU, 32 interpreted).
        replay: the uniforms to use instead of the kernels' own (tests).
        keep: the per-run curves copied to the host.
        stats_block: the runs per block of the on-device statistics.

    Returns:
        A ``SimOutput``, or a dict of them by policy name when ``policies`` is a dict.

    Examples:
        >>> import jax
        >>> from jaxbandits import channels, envs
        >>> from jaxbandits.engine.fused import path
        >>> from jaxbandits.policies import classic
        >>> out = path.simulate_fused(envs.bernoulli([0.1, 0.5]), channels.attributed(), classic.ucb1(),
        ...                           100, jax.random.key(0), 8)  # doctest: +SKIP
    """
    from .. import reduce as RD
    from .. import stats as ST
    from . import kernels as Kn

    why = unsupported(env, channel, policies)
    if why:  # a direct call gets the reasons jaxbandits.simulate(..., path="fused") gives, before compiling
        raise ValueError("simulate_fused: the fused kernels do not cover this simulation: " + "; ".join(why)
                         + " (jaxbandits.simulate with path='scan' or 'auto' runs it)")
    single = is_policy(policies)
    pols = {policies.name: policies} if single else dict(policies)
    if interpret is None:
        interpret = jax.default_backend() != "gpu"
    chosen = block is not None
    if block is None:
        block = GPU_BLOCK if not interpret else 32
    block = Kn.next_pow2(block)
    record_at = record_points(horizon, record)
    R = len(record_at)
    B = stats_block or ST.block_size(n_runs)
    n_pad = -(-n_runs // max(block, B)) * max(block, B)  # whole kernel blocks and whole statistics blocks
    run_ids = jnp.arange(n_pad, dtype=jnp.int32) + jnp.int32(first_run)
    outs, compile_s, run_s, kernel_s = {}, 0.0, 0.0, 0.0
    words, compile_s = _key_words(key, run_ids)
    for lab, pol in pols.items():
        pb, pw = block, 4
        sp = spec_of(pol)
        if not chosen and not interpret and sp.kind in GPU_LAUNCH and type(channel) is not C.Conversions:
            pb, pw = GPU_LAUNCH[sp.kind]  # divides n_pad: a power of two <= block
        ks, tau = kernel_spec(env, channel, pol, horizon, R, block=pb, interpret=interpret, num_warps=pw,
                              replay=Kn.next_pow2(horizon) if replay is not None else 0)
        rep = ()
        if replay is not None:
            rep = tuple(np.pad(np.asarray(x, np.float32), ((0, n_pad - n_runs), (0, ks.replay - horizon)),
                               constant_values=0.5) for x in replay)
        mu = np.zeros((ks.k_pad,), np.float32)
        mu[: ks.n_arms] = np.asarray(env.means_, np.float32)
        rec = np.full((ks.r_pad,), horizon - 1, np.int32)
        rec[:R] = record_at
        ck = (ks, n_pad, tau.shape)
        if rep:
            ck = ck + (rep[0].shape,)
        exe = COMPILED.get(ck)
        if exe is None:  # compile once per kernel and shape (a second call compiles nothing)
            t0 = time.perf_counter()
            exe = kernel_program(ks, n_pad).lower(mu, rec, tau, words, *rep).compile()
            compile_s += time.perf_counter() - t0
            COMPILED[ck] = exe
            while len(COMPILED) > 32:
                COMPILED.popitem(last=False)
        COMPILED.move_to_end(ck)
        t0 = time.perf_counter()
        got = exe(mu, rec, tau, words, *rep)
        jax.block_until_ready(got)
        kernel_s += time.perf_counter() - t0
        o = dict(regret=got[0], reward=got[1], pulls=got[2], dl=None, lost=None, width=1, r_pad=ks.r_pad,
                 k_pad=ks.k_pad, K=ks.n_arms)
        if ks.world[0] == "bernoulli" and delayed_regret:  # asked for without delays: tau_d = 1, L(t) = R(t)
            o["dl"] = o["regret"]
        if ks.world[0] == "conversions":
            o["lost"] = got[4]
            o["width"] = channel.exact_width(env.max_delay, horizon)  # the scan path's exact W: nothing lost
            if delayed_regret is not False:
                o["dl"] = got[3]
        if ks.kind == "random":  # memo_probs: the expected regret is the gap of the uniform law, every round
            mu_k = np.asarray(env.means_, np.float64)
            o["exp"] = jnp.broadcast_to(jnp.asarray(((record_at + 1) * (mu_k.max() - mu_k.mean())).astype(np.float32)),
                                        (n_pad, R))
        outs[lab] = o
    labels = list(outs)
    t0 = time.perf_counter()

    def cut(o, lo, hi):  # record points lo..hi-1 as the reduction takes them: [points, runs_pad, ...]
        d = {"regret": o["regret"][lo:hi], "expected_regret": o["regret"][lo:hi] if o.get("exp") is None
             else jnp.swapaxes(o["exp"], 0, 1)[lo:hi], "reward": o["reward"][lo:hi]}
        if o["dl"] is not None:
            d["delayed_regret"] = o["dl"][lo:hi]
        K = o["K"]  # pulls: rows i K + k of [R K, runs], transposed one group at a time
        d["pulls"] = jnp.swapaxes(o["pulls"][lo * K: hi * K].reshape(hi - lo, K, n_pad), 1, 2)
        return d

    mets = {lab: tuple(cut(o, 0, 1)) for lab, o in outs.items()}
    pairs = RD.stat_pairs(labels, mets)
    valid = jnp.arange(n_pad) < n_runs
    # reduced by groups of record points of about RD.CHUNK_RECORD_BYTES, as the scan path reduces
    # its chunks: the same statistics (each record point's are its own), bounded float64
    # temporaries, and one small program compiled per group size
    per_point = sum(4 * n_pad * (4 + o["K"]) for o in outs.values())
    step = max(1, min(R, int(RD.CHUNK_RECORD_BYTES // per_point)))
    pieces, dt = [], 0.0
    for lo in range(0, R, step):
        sub = {lab: cut(o, lo, min(R, lo + step)) for lab, o in outs.items()}
        red, dti = RD.reduce_on_device(sub, valid, B, labels, pairs)
        dt += dti
        pieces.append(RD.host_block_stats(jax.device_get(red), np.arange(min(step, R - lo)), labels, -(-n_runs // B)))
    compile_s += dt
    final = {}
    for j, lab in enumerate(labels):
        last = cut(outs[lab], R - 1, R)
        for k in ("regret", "expected_regret", "reward", "delayed_regret"):
            if k in last:
                final[f"f/{j}/{k}"] = last[k][0, :n_runs]
        lost = outs[lab]["lost"]
        final[f"f/{j}/lost_to_W"] = lost[:n_runs] if lost is not None else jnp.zeros((n_runs,), jnp.int32)
    final = jax.device_get(final)
    stats = RD.host_stats(labels, mets, pairs, B, pieces, final)
    n_keep = RD.resolve_keep(keep, [env.n_arms] * len(labels), n_runs, R)
    def first_runs(o):  # every record of the first n_keep runs: [n_keep, R, ...]
        ex = o["regret"] if o.get("exp") is None else jnp.swapaxes(o["exp"], 0, 1)
        d = {"regret": o["regret"], "expected_regret": ex, "reward": o["reward"]}
        if o["dl"] is not None:
            d["delayed_regret"] = o["dl"]
        d = {k: jnp.swapaxes(a[:R, :n_keep], 0, 1) for k, a in d.items()}
        d["pulls"] = jnp.transpose(o["pulls"][: R * o["K"], :n_keep].reshape(R, o["K"], n_keep), (2, 0, 1))
        return d

    kept = jax.device_get({lab: first_runs(o) for lab, o in outs.items()}) if n_keep else None
    run_s += kernel_s + time.perf_counter() - t0 - dt  # the reduction's compile is in compile_s
    to_host = sum(ST.nbytes(h) for h in pieces) + ST.nbytes(final) + (ST.nbytes(kept) if kept else 0)
    timing = {"compile_s": compile_s, "run_s": run_s, "devices": 1, "policies_in_program": 1,
              "path": "fused" + (" (interpreted)" if interpret else ""), "bytes_to_host": int(to_host),
              "kernel_s": kernel_s}
    timing["run_steps_per_s"] = n_runs * horizon * len(pols) / max(run_s, 1e-12)
    res = {}
    for lab, o in outs.items():
        k = kept[lab] if kept else {}
        res[lab] = SimOutput(t=record_at.astype(np.int64) + 1, regret=k.get("regret"),
                             expected_regret=k.get("expected_regret"), reward=k.get("reward"), pulls=k.get("pulls"),
                             lost_to_W=stats[lab].final["lost_to_W"], width=o["width"], timing=dict(timing),
                             delayed_regret=k.get("delayed_regret"), arm_totals=None, stats=stats[lab], runs=n_runs)
    return res[next(iter(res))] if single else res

