"""The driver: ``vmap`` over runs (and a grid of hyper-parameters) of a scan over segments (the
rounds between record points / chunk boundaries) of a loop over rounds; sharded over devices
along the runs axis; compiled once per shape and reused.

Records are scan outputs of the segment scan, never carried: device memory is the records
requested plus the state of the runs (docs/architecture.md).
"""
from __future__ import annotations

import collections
import functools
import json
import math
import time
from typing import Any, Callable, Dict, List, Mapping, NamedTuple, Optional, Tuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from ..core import _validate as V
from ..core.types import Policy
from ..core.values import FieldGrid, is_policy, policy_digest
from . import metrics as M
from . import reduce as RD
from . import round as R
from . import stats as ST
from .recording import SimOutput, record_points, segment_plan
from .reduce import (CACHE_SIZE, FINAL_FIELDS, STAT_FIELD, host_block_stats, host_stats, reduce_on_device, resolve_keep,
                     signature, stat_metrics, stat_pairs)

__all__ = ["simulate", "simulate_grid", "choose_path", "PATHS", "prepare", "Prepared", "prepare_grid", "PreparedGrid",
           "unit_fingerprint", "Plan", "run_problems", "program_memory", "clear_cache", "policy_digest"]


class Plan(NamedTuple):
    """Static description of one compiled program (hashable).

    Attributes:
        problems: ``((label, Problem), ...)``, the problems traced into the program.
        n_dev: the number of devices the runs are sharded over.
        gridded: the program runs a grid of parameters (:func:`simulate_grid`).
    """

    problems: Tuple[Tuple[str, R.Problem], ...]
    n_dev: int
    gridded: bool


class Carry(NamedTuple):
    state: R.RunState
    metrics: M.Metrics


# ----------------------------------------------------------------------------- the programs
# Zero-size leaves (a channel's empty reveal ring, an untracked L(t)'s ring, the records of a metric
# a problem does not keep) hold nothing, yet as outputs of a program vmapped over runs they become
# literal constants of shape [runs, 0] or [segments, runs, 0], which XLA prints, fingerprints and
# copies element row by element row while compiling: at 1e6 runs and 200 record points the text of
# the program reached 800 MB and its compile 12 s on a CPU (30 s on an H200). The programs
# therefore carry and return the state and the records *stripped* of their zero-size leaves
# (:func:`_strip`), and rebuild them as zeros where a component reads them (:func:`_fill`): the same
# operations on the same values, so the same bits.
def _empty(x) -> bool:
    return 0 in np.shape(x)


def _strip(tree):
    """``tree`` with every zero-size leaf replaced by None (an empty subtree)."""
    return jax.tree.map(lambda x: None if _empty(x) else x, tree)


def _fill(stripped, template, zeros=jnp.zeros):
    """The inverse of :func:`_strip`: ``template``'s structure, its zero-size leaves as ``zeros``
    of their shape and dtype, the other leaves from ``stripped`` (in order)."""
    got = iter(jax.tree.leaves(stripped))
    leaves, tree = jax.tree.flatten(template)
    return jax.tree.unflatten(tree, [zeros(t.shape, t.dtype) if _empty(t) else next(got) for t in leaves])


def _run_template(prob: R.Problem, params):
    """Shapes and dtypes of one run's carry (no work: an abstract evaluation)."""
    p = None if params is None else jax.tree.map(lambda x: jax.ShapeDtypeStruct(np.shape(x), x.dtype), params)
    return jax.eval_shape(lambda p: Carry(R.init(prob, jax.random.key(0), 0, p), M.init(prob)), p)


def _run_segments(prob: R.Problem, params, carry: Carry, lo, hi):
    """One run: scan over segments ``[lo[i], hi[i])``; each emits its records at its end. ``carry``
    and the records are stripped of their zero-size leaves (:func:`_strip`)."""
    world, _ = prob.components(params)
    whole = functools.partial(_fill, template=_run_template(prob, params))

    def body(t, c):
        c = whole(c)
        state, step = R.round(prob, c.state, t, params)
        return _strip(Carry(state, M.update(prob, world, c.metrics, step)))

    def segment(c, x):
        a, b = x
        c = lax.fori_loop(a, b, body, c)
        w = whole(c)
        return c, _strip(M.record(prob, world, w.metrics, b - 1, w.state.channel))

    return lax.scan(segment, carry, (lo, hi))


def _init_local(plan: Plan, key, run_ids, gp):
    out = {}
    for lab, prob in plan.problems:
        def f(p, r, prob=prob):
            return _strip(Carry(R.init(prob, key, r, p), M.init(prob)))

        f_runs = jax.vmap(f, in_axes=(None, 0))
        out[lab] = jax.vmap(f_runs, in_axes=(0, None))(gp, run_ids) if plan.gridded else f_runs(None, run_ids)
    return out


def _whole_carries(plan: Plan, carries, gp, n_pad):
    """The carries of :func:`run_problems` (stripped) with their zero-size leaves back, as numpy
    zeros: the state a checkpoint saves and ``run_problems`` returns."""
    out = {}
    for lab, prob in plan.problems:
        lead = (n_pad,)
        g1 = None
        if plan.gridded:
            lead = (int(np.shape(jax.tree.leaves(gp)[0])[0]), n_pad)
            g1 = jax.tree.map(lambda x: jax.ShapeDtypeStruct(np.shape(x)[1:], x.dtype), gp)
        t = jax.tree.map(lambda s: jax.ShapeDtypeStruct(lead + s.shape, s.dtype), _run_template(prob, g1))
        out[lab] = _fill(carries[lab], t, np.zeros)
    return out


def _saved_state(carries):
    """What a checkpoint saves of the carries: all but the channels' round streams
    (``RunKeys.channel``), which are a function of the key and the run alone and never advance.
    Checkpoints written before channels had a stream hold exactly this, so they still load."""
    return {lab: c._replace(state=c.state._replace(keys=c.state.keys._replace(channel=None)))
            for lab, c in carries.items()}


def _with_channel_keys(saved, fresh):
    """The inverse of :func:`_saved_state`: ``saved`` with the channels' streams of ``fresh`` (the
    carries that the init program has just computed for the same key and runs)."""
    return {lab: c._replace(state=c.state._replace(keys=c.state.keys._replace(
        channel=fresh[lab].state.keys.channel))) for lab, c in saved.items()}


def _chunk_local(plan: Plan, carries, gp, lo, hi):
    out, ys = {}, {}
    for lab, prob in plan.problems:
        f = lambda p, c, prob=prob: _run_segments(prob, p, c, lo, hi)
        f_runs = jax.vmap(f, in_axes=(None, 0), out_axes=(0, 1))  # records: [segments, runs, ...]
        if plan.gridded:
            out[lab], ys[lab] = jax.vmap(f_runs, in_axes=(0, 0), out_axes=(0, 1))(gp, carries[lab])
        else:
            out[lab], ys[lab] = f_runs(None, carries[lab])
    return out, ys


def _mesh(n_dev):
    return jax.sharding.Mesh(np.array(jax.devices()[:n_dev]), ("runs",))


def _init_program(plan: Plan, key, run_ids, gp):
    if plan.n_dev <= 1:
        return _init_local(plan, key, run_ids, gp)
    P = jax.sharding.PartitionSpec
    carry_spec = P(None, "runs") if plan.gridded else P("runs")
    f = jax.shard_map(lambda r, g: _init_local(plan, key, r, g), mesh=_mesh(plan.n_dev),
                      in_specs=(P("runs"), P()), out_specs=carry_spec, check_vma=False)
    return f(run_ids, gp)


def _chunk_program(plan: Plan, carries, gp, lo, hi):
    """Runs are independent, so each device runs its block with ``shard_map`` and no collective
    (automatic partitioning turned the Beta sampler's while-loop predicate into an all-reduce)."""
    if plan.n_dev <= 1:
        return _chunk_local(plan, carries, gp, lo, hi)
    P = jax.sharding.PartitionSpec
    carry_spec = P(None, "runs") if plan.gridded else P("runs")
    rec_spec = P(None, None, "runs") if plan.gridded else P(None, "runs")
    f = jax.shard_map(lambda c, g, a, b: _chunk_local(plan, c, g, a, b), mesh=_mesh(plan.n_dev),
                      in_specs=(carry_spec, P(), P(), P()), out_specs=(carry_spec, rec_spec), check_vma=False)
    return f(carries, gp, lo, hi)


#: compiled programs, keyed by (program, plan, argument shapes): a second identical simulate
#: compiles nothing. Bounded, least recently used first out.
_COMPILED: "collections.OrderedDict[Any, Any]" = collections.OrderedDict()
def _compiled(name, fn, plan, args, donate=()):
    """``(executable, compile seconds)`` of ``fn(plan, *args)``, from the cache when it is there."""
    key = (name, plan, signature(args))
    hit = _COMPILED.get(key)
    if hit is not None:
        _COMPILED.move_to_end(key)
        return hit, 0.0
    t0 = time.perf_counter()
    # a fresh partial per program: JAX's tracing caches are keyed by the function, so they let go
    # of the traced program (and the constants it holds) once this cache drops the executable
    exe = jax.jit(functools.partial(fn, plan), donate_argnums=tuple(d - 1 for d in donate)).lower(*args).compile()
    dt = time.perf_counter() - t0
    _COMPILED[key] = exe
    while len(_COMPILED) > CACHE_SIZE:
        _COMPILED.popitem(last=False)
    return exe, dt


def check_stats_block(stats_block):
    """``stats_block`` checked (``None``, or a power of two >= 1), as every path takes it."""
    if stats_block is not None:
        stats_block = V.integer("stats_block", stats_block, lo=1)
        if stats_block & (stats_block - 1):
            raise ValueError(f"stats_block must be a power of two, got {stats_block}")
    return stats_block


def clear_cache():
    """Forget every compiled program (frees their memory and the worlds they hold).

    Returns:
        None. The next ``simulate`` of any problem compiles again.

    Examples:
        >>> from jaxbandits import engine
        >>> engine.clear_cache()
    """
    _COMPILED.clear()
    RD.clear_cache()


# ----------------------------------------------------------------------------- running
def _devices(shard, n_runs):
    if shard is None:  # all devices, unless there are too few runs to be worth padding and splitting
        return jax.local_device_count() if n_runs >= 8 * jax.local_device_count() else 1
    if shard is True:
        return jax.local_device_count()
    if shard is False:
        return 1
    return V.integer("shard", shard, lo=1, hi=jax.local_device_count())


#: how a fingerprint names its policies: library policies by value (``v:`` and the digest of their
#: fields), a user's Policy NamedTuple by its name and functions' names (``u:``, values.user_policy_id).
#: Checkpoints written before named them otherwise: none (by a digest of their code and closures),
#: "values" (user policies still by a digest of their code): refused, naming the version.
POLICY_IDS = "values+names"


def _fingerprint(plan: Plan, key, n_runs, record_at, chunk, first_run, extra=None) -> dict:
    """What a checkpoint must match to be resumed: the components as far as they can be named,
    every size, the key, the record points and chunks, and the versions that change the bits."""
    import hashlib

    from .._version import __version__

    def digest(tree):
        h = hashlib.sha256()
        for a in jax.tree.leaves(tree):
            a = jax.random.key_data(a) if isinstance(a, jax.Array) and jnp.issubdtype(a.dtype, jax.dtypes.prng_key) else a
            h.update(np.asarray(a).tobytes())
        return h.hexdigest()[:16]

    probs = {lab: f"{p.policy.name} {policy_digest(p.policy)} | {p.channel} | {type(p.world).__name__} "
                  f"{digest(p.world)} | W={p.width} "
                  f"P={p.payload_size} H={p.cspec.reveal} T={p.horizon} dl={p.dl_mode},{p.dl_len}"
             for lab, p in plan.problems}
    return {"problems": probs, "key": digest(key), "n_runs": int(n_runs), "first_run": int(first_run),
            "record_at": digest(np.asarray(record_at)), "chunk": chunk, "devices": plan.n_dev,
            "gridded": plan.gridded, "jax": jax.__version__, "jaxbandits": __version__,
            "x64": bool(jax.config.jax_enable_x64), "policy_ids": POLICY_IDS, **(extra or {})}


def _place(tree, like):
    """Host arrays of a loaded state onto the devices, each as its fresh counterpart ``like`` is
    placed (the program was compiled for those shardings)."""
    return jax.tree.map(lambda a, t: jax.device_put(a, t.sharding), tree, like)


def _place_global(tree, like):
    """:func:`_place` for arrays sharded over the devices of several processes: every process holds
    the whole loaded state and places the blocks of its own devices."""
    def one(a, t):
        if _is_key_array(t):
            data = np.asarray(jax.random.key_data(a))
            arr = jax.make_array_from_callback(data.shape, t.sharding, lambda idx: data[idx])
            return jax.random.wrap_key_data(arr, impl=jax.random.key_impl(t))
        a = np.asarray(a)
        return jax.make_array_from_callback(a.shape, t.sharding, lambda idx: a[idx])

    return jax.tree.map(one, tree, like)


def _is_key_array(a) -> bool:
    return isinstance(a, jax.Array) and jnp.issubdtype(a.dtype, jax.dtypes.prng_key)


def _state_global(tree):
    """The carried state of a run over several processes, whole, as host arrays on every process
    (PRNG keys gathered as their key data and wrapped again): what a checkpoint saves."""
    if jax.process_count() == 1:
        return tree
    from jax.experimental import multihost_utils

    leaves, treedef = jax.tree.flatten(tree)
    data = [jax.random.key_data(a) if _is_key_array(a) else a for a in leaves]
    got = multihost_utils.process_allgather(data, tiled=True)
    out = [jax.random.wrap_key_data(np.asarray(g), impl=jax.random.key_impl(a)) if _is_key_array(a) else np.asarray(g)
           for a, g in zip(leaves, got)]
    return jax.tree.unflatten(treedef, out)


def agree_across_processes(values, what: str):
    """Every process of a distributed run holds the same integers ``values`` (else the same clear
    error on each): one collective that every process reaches."""
    if jax.process_count() == 1:
        return
    from jax.experimental import multihost_utils

    mine = np.atleast_1d(np.asarray(values, np.int64))
    got = np.asarray(multihost_utils.process_allgather(mine)).reshape(jax.process_count(), -1)
    if (got != got[0]).any():
        raise RuntimeError(f"distributed run: the processes disagree on {what}: {got.tolist()} (every process must "
                           "run the same command with the same --out, on a file system they share)")


def process_barrier(name: str):
    """Every process of a distributed run waits here for the others."""
    if jax.process_count() > 1:
        from jax.experimental import multihost_utils

        multihost_utils.sync_global_devices(name)


def _gather_local(tree):
    return jax.device_get(tree)


def _gather_global(tree):
    """Every leaf (an array sharded along the runs axis over the devices of every process) as a
    numpy array on every process."""
    if jax.process_count() == 1:
        return jax.device_get(tree)
    from jax.experimental import multihost_utils

    return multihost_utils.process_allgather(tree, tiled=True)


def run_problems(problems: Dict[str, R.Problem], grid_params, key, n_runs, record_at, chunk=None,
                 progress=False, shard=None, first_run=0, checkpoint=None, resume=False, stop=None,
                 global_devices=False, keep=None, block=None):
    """Compile (once) and run every problem in one program per chunk shape.
    Returns ``(final carries, Collected, timing)``: per label the records (numpy
    ``[.., runs, R, ...]``) of the first ``keep`` runs (``None``: all; ``0``: none) and the
    statistics over all runs, reduced on the device by blocks of ``block`` runs (default
    :func:`jaxbandits.engine.stats.block_size` of ``n_runs``; a part of a run passes the whole
    run's) and combined on the host (:mod:`jaxbandits.engine.stats`; not for grids).

    ``checkpoint`` (a folder, or a :class:`~jaxbandits.engine.checkpoint.Checkpoint`) saves the
    state and the records after every chunk; ``resume=True`` continues from it (bitwise as if never
    stopped); ``stop()`` is asked after every chunk: when it says so, the run stops there and
    raises :class:`~jaxbandits.engine.checkpoint.Interrupted` (its work saved in the checkpoint).

    ``global_devices=True`` shards the runs over the devices of every process of JAX's distributed
    runtime (``jaxbandits.experiments.distributed``; every process calls this with the same arguments and gets
    every record). A checkpoint is then written by process 0 (the whole state, gathered) and read by
    every process on resume, so its folder must be one they share; no ``stop`` (one process cannot
    stop alone).

    Args:
        problems: ``{label: Problem}``, one compiled program for all of them (the same horizon).
        grid_params: ``{name: [G, ...]}``, a grid's parameters (None: no grid).
        key: the experiment's key.
        n_runs: the runs of this call.
        record_at: the record rounds (:func:`~jaxbandits.engine.recording.record_points`).
        chunk: rounds per compiled chunk (None: the whole horizon at once).
        progress: show a progress bar over the chunks.
        shard: the devices (as :func:`simulate`'s ``shard``).
        first_run: the global index of this call's first run.
        checkpoint: a folder or a :class:`~jaxbandits.engine.checkpoint.Checkpoint` (None: none).
        resume: continue from ``checkpoint``.
        stop: a callable asked after every chunk (None: never stop).
        global_devices: shard over the devices of every process.
        keep: the runs whose curves are returned (None: all).
        block: the statistics' block size (None: ``block_size(n_runs)``).

    Returns:
        ``(final carries, Collected, timing)``; :func:`simulate` turns the last two into
        ``SimOutput`` values.

    Raises:
        ValueError: ``stop`` with ``global_devices``, or a checkpoint of another simulation.
        jaxbandits.engine.checkpoint.Interrupted: ``stop()`` said so (the work is saved).

    Examples:
        >>> import jax
        >>> import jaxbandits as jb
        >>> from jaxbandits import channels, delays, envs
        >>> from jaxbandits.policies import classic
        >>> world = envs.bernoulli([0.3, 0.6], delay=delays.geometric(mean=5.0))
        >>> from jaxbandits.engine import driver, problem, record_points
        >>> probs = {"ucb1": problem(world, channels.attributed(), classic.ucb1(), 200, n_runs=4)}
        >>> carries, col, timing = driver.run_problems(probs, None, jax.random.key(0), 4,
        ...                                            record_points(200, 100))  # doctest: +SKIP
        >>> col.recs["ucb1"].regret.shape  # doctest: +SKIP
        (4, 2)
    """
    from .checkpoint import Checkpoint, Interrupted

    if global_devices:
        if stop is not None:
            raise ValueError("a run over the devices of several processes takes no stop (one process cannot stop "
                             "alone)")
        n_dev, gather = jax.device_count(), _gather_global
        progress = progress and jax.process_index() == 0
    else:
        n_dev, gather = _devices(shard, n_runs), _gather_local
    n_pad = int(math.ceil(n_runs / n_dev) * n_dev)
    gridded = grid_params is not None
    with_stats = not gridded
    B = (block or ST.block_size(n_runs)) if with_stats else 1
    if with_stats:  # every device holds whole blocks of runs (the block statistics are computed where they are)
        n_pad = int(math.ceil(n_runs / (n_dev * B)) * n_dev * B)
    keep_n = n_runs if keep is None else min(int(keep), n_runs)
    plan = Plan(tuple(problems.items()), n_dev, gridded)
    T = plan.problems[0][1].horizon
    ids = np.arange(n_pad, dtype=np.int32) + np.int32(first_run)
    valid_np = np.arange(n_pad) < n_runs
    if n_dev > 1:  # each process places the blocks of its own devices
        sh = jax.sharding.NamedSharding(_mesh(n_dev), jax.sharding.PartitionSpec("runs"))
        run_ids = jax.make_array_from_callback((n_pad,), sh, lambda i: ids[i])
        valid = jax.make_array_from_callback((n_pad,), sh, lambda i: valid_np[i])
    else:
        run_ids, valid = jnp.asarray(ids), jnp.asarray(valid_np)
    init_exe, compile_s = _compiled("init", _init_program, plan, (key, run_ids, grid_params))
    by_program = {"init": compile_s, "chunk": 0.0, "reduce": 0.0}  # seconds of lowering + compiling
    carries = init_exe(key, run_ids, grid_params)
    seg = segment_plan(T, record_at, chunk)
    if checkpoint is not None:
        if not isinstance(checkpoint, Checkpoint):
            checkpoint = Checkpoint(checkpoint)
        if checkpoint.fingerprint is None:
            checkpoint.fingerprint = checkpoint._norm(
                _fingerprint(plan, key, n_runs, record_at, chunk, first_run,
                             dict(checkpoint.extra, stats_keep=keep_n, stats_block=B)))
    labels = list(problems)
    mets = {lab: stat_metrics(problems[lab]) for lab in labels}
    pairs = stat_pairs(labels, mets)
    done = []  # per chunk: {name: host array} (what a checkpoint saves of the chunk)
    start = 0
    if resume:
        if checkpoint is None or not checkpoint.exists():
            raise ValueError("resume=True needs the checkpoint folder of an interrupted run "
                             f"({'no checkpoint given' if checkpoint is None else 'none in ' + checkpoint.folder})")
        fresh = _whole_carries(plan, _state_global(carries) if global_devices else carries, grid_params, n_pad)
        start, state, saved = checkpoint.load(_saved_state(fresh))
        state = _strip(_with_channel_keys(state, fresh))
        carries = _place_global(state, carries) if global_devices else _place(state, carries)
        for flat in saved:  # each chunk's host arrays, as saved: their names first
            done.append(dict(zip(json.loads(str(flat[0])), flat[1:])))
    if global_devices:  # whether to checkpoint, and where to start, decided alike on every process
        agree_across_processes([checkpoint is not None, bool(resume), start], "(checkpoint given, resume, chunk to start from)")
    bar = None
    if progress:
        try:
            from tqdm.auto import tqdm

            bar = tqdm(total=T, unit="round", desc="simulate", leave=False)
        except ImportError:  # pragma: no cover
            bar = None
    run_s = 0.0
    to_host = 0
    n_chunks = len(seg.chunks)
    try:
        for i, ((lo, hi), keep_seg, n_rounds) in enumerate(zip(seg.chunks, seg.keep, seg.rounds)):
            if i < start:
                if bar is not None:
                    bar.update(n_rounds)
                continue
            lo, hi = jnp.asarray(lo), jnp.asarray(hi)
            exe, dt = _compiled("chunk", _chunk_program, plan, (carries, grid_params, lo, hi), donate=(1,))
            compile_s += dt
            by_program["chunk"] += dt
            tr = time.perf_counter()
            carries, ys = exe(carries, grid_params, lo, hi)
            host = {}
            sel = np.nonzero(keep_seg)[0]
            if with_stats:
                recs_dev = {lab: {k: getattr(ys[lab], STAT_FIELD[k]) for k in mets[lab]} for lab in labels}
                red, dt = reduce_on_device(recs_dev, valid, B, labels, pairs)
                compile_s += dt
                by_program["reduce"] += dt
                host.update(host_block_stats(gather(red), sel, labels, -(-n_runs // B)))
                if i == n_chunks - 1:  # each run's final values: the last record point is the last round
                    last = np.int32(sel[-1])
                    fin = {lab: {k: getattr(ys[lab], f) for k, f in FINAL_FIELDS
                                 if k != "delayed_regret" or problems[lab].dl_mode} for lab in labels}
                    # one compiled program (cached), not an eager slice per metric and dtype
                    take, dt = _compiled("finals", _take_program, plan, (fin, last))
                    compile_s += dt
                    by_program["finals"] = dt
                    fin = gather(take(fin, last))
                    for j, lab in enumerate(labels):
                        for k, v in fin[lab].items():
                            host[f"f/{j}/{k}"] = np.asarray(v)[:n_runs]
            if keep_n > 0:
                if keep_n >= n_runs or gridded:
                    kept = gather(ys)
                else:
                    first, dt = _compiled(("first_runs", keep_n), _first_runs_program(keep_n), plan, (ys,))
                    compile_s += dt
                    by_program["first_runs"] = by_program.get("first_runs", 0.0) + dt
                    kept = gather(first(ys))
                for j, lab in enumerate(labels):
                    rg = np.asarray(kept[lab].regret)
                    for f, a in zip(M.Records._fields, kept[lab]):
                        # a field stripped for its zero size: metrics.record's f32[0] per run
                        a = np.zeros(rg.shape + (0,), np.float32) if a is None else np.asarray(a)
                        host[f"r/{j}/{f}"] = a[sel]
            run_s += time.perf_counter() - tr
            to_host += sum(a.nbytes for a in host.values())
            done.append(host)
            if bar is not None:
                bar.update(n_rounds)
            if checkpoint is not None:
                names = list(host)
                flat = [np.asarray(json.dumps(names))] + [host[k] for k in names]
                if not global_devices:
                    checkpoint.save(i + 1, _saved_state(_whole_carries(plan, carries, grid_params, n_pad)), flat)
                else:  # every process takes part in the gather; process 0 writes
                    whole = _saved_state(_whole_carries(plan, _state_global(carries), grid_params, n_pad))
                    if jax.process_index() == 0:
                        checkpoint.save(i + 1, whole, flat)
            if stop is not None and i + 1 < n_chunks and stop():
                raise Interrupted(int(np.asarray(hi)[-1]), T, None if checkpoint is None else checkpoint.folder)
    finally:  # an error (a full disk, ...) is printed on a line of its own, not after the bar
        if bar is not None:
            bar.close()
    nb = 2 if gridded else 1
    recs = {}
    for j, lab in enumerate(labels):
        if keep_n > 0:
            fields = []
            for f in M.Records._fields:
                # [R, (G,) runs, ...] -> [(G,) runs, R, ...], padded runs cut
                cat = np.concatenate([h[f"r/{j}/{f}"] for h in done], axis=0)
                fields.append(np.moveaxis(cat, 0, nb)[(slice(None),) * (nb - 1) + (slice(0, keep_n),)])
            recs[lab] = M.Records(*fields)
        else:
            recs[lab] = None
    stats = host_stats(labels, mets, pairs, B, done, done[-1]) if with_stats else {lab: None for lab in labels}
    timing = {"compile_s": compile_s, "compile_s_by_program": by_program, "run_s": run_s, "devices": n_dev,
              "policies_in_program": len(problems),
              "bytes_to_host": int(to_host)}
    if global_devices:
        timing["processes"] = jax.process_count()
    return _whole_carries(plan, carries, grid_params, n_pad), Collected(recs, stats, keep_n), timing


class Collected(NamedTuple):
    """What :func:`run_problems` returns besides the state: per label the per-run records of the
    first ``keep`` runs (``None`` for none) and the statistics over all runs (``None`` for grids)."""

    recs: Dict[str, Any]
    stats: Dict[str, Any]
    keep: int


def _first_runs_program(n):
    """``(plan, records) ->`` the records of the first ``n`` runs (``[S, runs, ...]`` leaves)."""
    return lambda plan, t: jax.tree.map(lambda a: a[:, :n], t)


def _take_program(plan, tree, i):
    """Segment ``i`` of every ``[S, ...]`` leaf of ``tree`` (each run's final values)."""
    return jax.tree.map(lambda a: a[i], tree)


def program_memory(problems: Dict[str, R.Problem], n_runs: int, record_at, grid_params=None) -> dict:
    """Bytes of the compiled program of a whole run (one chunk), from XLA's memory analysis,
    without running it: ``state`` (the carried runs), ``records`` (the outputs written at the
    record points), and the program's ``arguments``, ``outputs``, ``temp`` and ``aliased`` (donated)
    sizes; ``device = arguments + outputs + temp - aliased`` is the peak it needs.

    Args:
        problems: ``{label: Problem}``, as :func:`run_problems` takes them.
        n_runs: the runs of the program.
        record_at: the record rounds.
        grid_params: a grid's parameters (None: no grid).

    Returns:
        ``{"state", "records", "arguments", "outputs", "temp", "aliased", "device"}``, in bytes.

    Examples:
        >>> import jax
        >>> import jaxbandits as jb
        >>> from jaxbandits import channels, delays, envs
        >>> from jaxbandits.policies import classic
        >>> world = envs.bernoulli([0.3, 0.6], delay=delays.geometric(mean=5.0))
        >>> from jaxbandits.engine import driver, problem, record_points
        >>> probs = {"ucb1": problem(world, channels.attributed(), classic.ucb1(), 200, n_runs=4)}
        >>> mem = driver.program_memory(probs, 4, record_points(200, 100))  # doctest: +SKIP
        >>> mem["device"] >= mem["state"]  # doctest: +SKIP
        True
    """
    plan = Plan(tuple(problems.items()), 1, grid_params is not None)
    T = plan.problems[0][1].horizon
    run_ids = jax.ShapeDtypeStruct((n_runs,), jnp.int32)
    key = jax.eval_shape(lambda: jax.random.key(0))
    carries = jax.eval_shape(lambda r, g: _init_program(plan, jax.random.key(0), r, g), run_ids, grid_params)
    seg = segment_plan(T, record_at)
    lo, hi = (jax.ShapeDtypeStruct(a.shape, jnp.int32) for a in seg.chunks[0])
    exe = jax.jit(_chunk_program, static_argnums=(0,), donate_argnums=(1,)).lower(
        plan, carries, grid_params, lo, hi).compile()
    ma = exe.memory_analysis()
    nbytes = lambda tree: sum(int(np.prod(a.shape)) * a.dtype.itemsize for a in jax.tree.leaves(tree))
    _, ys = jax.eval_shape(lambda c, g, a, b: _chunk_local(plan, c, g, a, b), carries, grid_params, lo, hi)
    del key
    out = {"state": nbytes(carries), "records": nbytes(ys), "arguments": int(ma.argument_size_in_bytes),
           "outputs": int(ma.output_size_in_bytes), "temp": int(ma.temp_size_in_bytes),
           "aliased": int(ma.alias_size_in_bytes)}
    out["device"] = out["arguments"] + out["outputs"] + out["temp"] - out["aliased"]
    return out


def collect_outputs(problems, col, timing, n_runs, record_at, n_grid=1):
    outs = {}
    steps = n_runs * n_grid * next(iter(problems.values())).horizon * len(problems)
    timing = dict(timing, run_steps_per_s=steps / max(timing["run_s"], 1e-12))
    for lab, prob in problems.items():
        r, st = col.recs[lab], col.stats[lab]
        get = (lambda f: None) if r is None else (lambda f: getattr(r, f))
        lost = st.final["lost_to_W"] if st is not None else r.lost[..., -1]
        outs[lab] = SimOutput(
            t=record_at.astype(np.int64) + 1, regret=get("regret"), expected_regret=get("exp_regret"),
            reward=get("reward"), pulls=get("pulls"), lost_to_W=lost, width=prob.width, timing=dict(timing),
            delayed_regret=get("delayed_regret") if prob.dl_mode else None,
            arm_totals=get("arm_totals") if prob.world.adversarial else None, stats=st, runs=int(n_runs))
    return outs


def available_memory() -> Optional[int]:
    """Bytes of memory the host can still give (Linux ``MemAvailable``), or None where unknown."""
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


@functools.lru_cache(maxsize=64)
def _state_bytes(prob: R.Problem, params_shape=None) -> int:
    """Bytes of one run's carried state (world, policy, channel calendar, keys, metrics), exactly,
    from the program's shapes (``jax.eval_shape``: traced, nothing compiled or allocated)."""
    params = None if params_shape is None else {k: jax.ShapeDtypeStruct(s, d) for k, s, d in params_shape}
    c = jax.eval_shape(lambda p: Carry(R.init(prob, jax.random.key(0), 0, p), M.init(prob)), params)
    return sum(int(np.prod(a.shape)) * a.dtype.itemsize for a in jax.tree.leaves(c))


def _params_shape(params):
    """One grid point's parameters as a hashable ``((name, shape, dtype), ...)`` (None: no grid)."""
    if params is None:
        return None
    return tuple(sorted((k, tuple(np.shape(v)[1:]), np.dtype(getattr(v, "dtype", np.asarray(v).dtype)))
                        for k, v in params.items()))


def memory_estimate(problems: Dict[str, R.Problem], n_runs: int, record_at, n_grid: int = 1, keep=None,
                    params=None, runs_here: Optional[int] = None) -> int:
    """Bytes a simulation holds at least: every run's carried state (exact, from the program's shapes)
    and the records it keeps (the per-run curves of ``keep`` runs, default all; each other run's
    final values). ``params``: one grid point's parameters (a grid's state depends on them);
    ``runs_here``: the runs whose state this process carries (a distributed run's share). What
    XLA adds for its temporaries is not counted: this is a lower bound, and the refusal of
    :func:`check_memory` errs on the side of running."""
    R_ = len(record_at)
    kept = n_runs if keep is None else min(int(keep), n_runs)
    shape = _params_shape(params)
    need = 0
    for prob in problems.values():
        K = prob.spec.n_arms
        per_record = 3 + K + (1 if prob.dl_mode else 0)  # regret, expected regret, reward; pulls; L(t)
        need += n_grid * (kept * R_ * per_record + (n_runs - kept) * per_record) * 4
        need += (n_runs if runs_here is None else runs_here) * n_grid * (_state_bytes(prob, shape)
                                                                          + (K * 4 if prob.world.adversarial else 0))
    return need


def check_memory(problems: Dict[str, R.Problem], n_runs: int, record_at, n_grid: int = 1, keep=None, params=None,
                 runs_here: Optional[int] = None):
    """Refuse, before anything is allocated or compiled, a simulation whose carried state and
    records (:func:`memory_estimate`, a lower bound of what it needs) exceed the memory available,
    with the estimate and the limit: the allocator would abort the process instead. Every path
    that allocates runs calls it (the scan, a grid, the fused kernels, a distributed run)."""
    avail = available_memory()
    if avail is None:
        return
    need = memory_estimate(problems, n_runs, record_at, n_grid, keep, params, runs_here)
    if need > avail:
        per_run = sum(_state_bytes(p, _params_shape(params)) for p in problems.values())
        raise ValueError(f"this simulation needs at least {need / 2**30:.1f} GiB ({n_runs} runs"
                         + (f" x {n_grid} grid points" if n_grid > 1 else "") + f" x {len(problems)} policies: "
                         f"{len(record_at)} record points and a carried state of {per_run} bytes per run, its calendar "
                         f"of width {max(p.width for p in problems.values())}), more than the {avail / 2**30:.1f} "
                         "GiB of memory available: give fewer runs (several calls with first_run=, or --part), fewer "
                         "record points (record=), keep='none' (statistics only), or a smaller channel width")


def auto_chunk(n_arms, n_runs, horizon, n_rec) -> Optional[int]:
    """Rounds per chunk of a reduced-form simulation given no ``chunk``: its per-run records are
    reduced after every chunk, so chunks of about :data:`~jaxbandits.engine.reduce.CHUNK_RECORD_BYTES` of records bound the
    device memory (``None``: one chunk is small enough). Chunks do not change the bits."""
    total = sum(4 * n_rec * (5 + int(k)) for k in n_arms) * n_runs
    if total <= RD.CHUNK_RECORD_BYTES:
        return None
    return max(1, int(horizon * RD.CHUNK_RECORD_BYTES // total))


def check_run_args(n_runs, first_run, chunk):
    """Arguments of the driver checked before anything compiles: run indices fit int32, a chunk is
    a positive number of rounds."""
    first_run = V.integer("first_run", first_run, lo=0)
    if first_run + n_runs > 2**31 - 1:
        raise ValueError(f"first_run + n_runs must be at most 2**31 - 1 (run indices are int32), got "
                         f"{first_run} + {n_runs}")
    if chunk is not None:
        V.integer("chunk", chunk, lo=1)
    return first_run


def check_common(horizon, n_runs, key):
    """Host checks of the arguments every simulation takes (docs/conventions.md §1, §8): the
    horizon (<= 2**24: float32 counts stay exact), the runs (run indices are int32) and the key
    (a PRNG key, or an int seed in 0 .. 2**64 - 1 mapped by ``_validate.seed_key``)."""
    horizon = V.horizon("horizon", horizon)
    n_runs = V.integer("n_runs", n_runs, lo=1)
    if isinstance(key, (int, np.integer)) and not isinstance(key, bool):
        key = V.seed_key(key, "key")
    elif not (isinstance(key, jax.Array) and jnp.issubdtype(key.dtype, jax.dtypes.prng_key)):
        raise TypeError(f"key must be a jax.random.key(...) or an int seed in [0, 2**64 - 1], got {type(key).__name__}")
    elif key.shape != ():
        raise ValueError(f"key must be a single PRNG key (shape ()), got shape {key.shape}")
    return horizon, n_runs, key


class Prepared(NamedTuple):
    """A ``simulate`` call's arguments, checked and resolved on the host (nothing compiled): what
    runs it, and what names it (:func:`unit_fingerprint`).

    Attributes:
        single: one policy was given (not a dict): ``simulate`` returns its ``SimOutput`` alone.
        problems: ``{label: Problem}``.
        horizon: the number of rounds.
        key: the experiment's key (a seed turned into a key).
        n_runs: the runs of the call.
        first_run: the global index of its first run.
        record_at: the record rounds.
        chunk: the chunk given, or the reduced form's automatic one.
        keep: the runs whose curves are kept (:func:`resolve_keep`).
        stats_block: the statistics' block size (None: the default).
    """

    single: bool  # one policy given (not a dict): simulate returns its SimOutput alone
    problems: Dict[str, R.Problem]
    horizon: int
    key: Any
    n_runs: int
    first_run: int
    record_at: np.ndarray
    chunk: Optional[int]  # the chunk given, or the reduced form's automatic one
    keep: int  # runs whose curves are kept (resolve_keep)
    stats_block: Optional[int]


def prepare(env, channel, policies, horizon: int, key, n_runs: int = 1, *, record=None,
            chunk: Optional[int] = None, first_run: int = 0, delayed_regret: Optional[bool] = None,
            keep=None, stats_block: Optional[int] = None) -> Prepared:
    """Every host check of :func:`simulate`'s arguments, in its order, and the sizes they fix:
    a :class:`Prepared` (no compile, no device work).

    Args:
        env: the world.
        channel: the channel.
        policies: a policy or a ``{label: policy}`` dict.
        horizon: the number of rounds, an integer in ``[1, 2**24]``.
        key: a ``jax.random.key`` or an integer seed.
        n_runs: the runs, an integer ``>= 1``.
        record: the record points (:func:`~jaxbandits.engine.recording.record_points`).
        chunk: rounds per compiled chunk (None: automatic in the reduced form, else one chunk).
        first_run: the global index of the first run, ``>= 0``.
        delayed_regret: track ``L(t)`` (None: for censoring channels).
        keep: the per-run curves kept (:func:`resolve_keep`).
        stats_block: the statistics' block size, a power of two (None: the default).

    Returns:
        The :class:`Prepared` call.

    Raises:
        TypeError: a component or argument of the wrong type.
        ValueError: an argument out of range, or a policy the channel cannot serve.

    Examples:
        >>> import jax
        >>> import jaxbandits as jb
        >>> from jaxbandits import channels, delays, envs
        >>> from jaxbandits.policies import classic
        >>> world = envs.bernoulli([0.3, 0.6], delay=delays.geometric(mean=5.0))
        >>> from jaxbandits.engine import driver
        >>> p = driver.prepare(world, channels.attributed(), classic.ucb1(), 1000, 0, n_runs=8, record=250)
        >>> p.single, list(p.problems), p.record_at.tolist(), p.keep
        (True, ['UCB1'], [249, 499, 749, 999], 8)
    """
    horizon, n_runs, key = check_common(horizon, n_runs, key)
    first_run = check_run_args(n_runs, first_run, chunk)
    record_at = record_points(horizon, record)
    single, pols = policies_dict(policies)
    problems = {lab: R.problem(env, channel, pol, horizon, n_runs=n_runs, delayed_regret=delayed_regret, label=lab)
                for lab, pol in pols.items()}
    keep_n = resolve_keep(keep, [p.spec.n_arms for p in problems.values()], n_runs, len(record_at),
                          any(p.world.adversarial for p in problems.values()))
    if chunk is None and keep_n < n_runs:  # the reduced form: a chunk's records bound the device memory
        chunk = auto_chunk([p.spec.n_arms for p in problems.values()], n_runs, horizon, len(record_at))
    stats_block = check_stats_block(stats_block)
    return Prepared(single, problems, horizon, key, n_runs, first_run, record_at, chunk, keep_n, stats_block)


def _simulate_scan(env, channel, policies, horizon: int, key, n_runs: int = 1, *, record=None,
                   chunk: Optional[int] = None, progress: bool = False, shard=None, first_run: int = 0,
                   delayed_regret: Optional[bool] = None, checkpoint=None, resume: bool = False, stop=None,
                   keep=None, stats_block: Optional[int] = None):
    """The scan path of :func:`simulate` (its docstring documents every argument)."""
    p = prepare(env, channel, policies, horizon, key, n_runs, record=record, chunk=chunk, first_run=first_run,
                delayed_regret=delayed_regret, keep=keep, stats_block=stats_block)
    check_memory(p.problems, p.n_runs, p.record_at, keep=p.keep)
    outs = collect_outputs(p.problems, *run_problems(p.problems, None, p.key, p.n_runs, p.record_at, p.chunk, progress,
                                                     shard, p.first_run, checkpoint, resume, stop, keep=p.keep,
                                                     block=p.stats_block)[1:], p.n_runs, p.record_at)
    return outs[next(iter(outs))] if p.single else outs


PATHS = ("auto", "fused", "scan")


def _fused_blockers(env, channel, policies, *, chunk, shard, resume) -> List[str]:
    from .. import fused

    return fused.unsupported(env, channel, policies, chunk=chunk, shard=shard, resume=resume)


def choose_path(env, channel, policies, path: str = "auto", *, chunk=None, shard=None, resume=False,
                backend: Optional[str] = None) -> str:
    """``"fused"`` or ``"scan"``: the path ``simulate(..., path=path)`` takes for this combination.

    ``"auto"`` gives ``"fused"`` when ``backend`` (default: JAX's default backend) is ``"gpu"`` and
    the fused kernels cover the combination; ``"fused"`` on a combination they do not cover raises
    a ``ValueError`` naming everything that is not covered.

    Args:
        env: the world.
        channel: the channel.
        policies: a policy or a ``{label: policy}`` dict.
        path: ``"auto"``, ``"fused"`` or ``"scan"`` (:data:`PATHS`).
        chunk: as :func:`simulate`'s (a chunked run keeps the scan when the fused path cannot
            chunk).
        shard: as :func:`simulate`'s.
        resume: as :func:`simulate`'s (a resume keeps the scan).
        backend: the backend to decide for (None: JAX's default backend).

    Returns:
        ``"fused"`` or ``"scan"``.

    Raises:
        ValueError: ``path`` not one of :data:`PATHS`, or ``"fused"`` on a combination the fused
            kernels do not cover.

    Examples:
        >>> from jaxbandits import channels, envs
        >>> from jaxbandits.policies import classic
        >>> from jaxbandits.engine import choose_path
        >>> world = envs.bernoulli([0.3, 0.6])
        >>> choose_path(world, channels.attributed(), classic.ucb1(), "auto", backend="cpu")
        'scan'
    """
    if path not in PATHS:
        raise ValueError(f"path must be one of {', '.join(map(repr, PATHS))}, got {path!r}")
    if path == "scan":
        return "scan"
    if path == "fused":
        why = _fused_blockers(env, channel, policies, chunk=chunk, shard=shard, resume=resume)
        if why:
            raise ValueError("path='fused' cannot run this simulation: " + "; ".join(why)
                             + " (docs/fused.md lists what the fused path covers; path='auto' falls back to the scan)")
        return "fused"
    if backend is None:
        backend = jax.default_backend()
    if backend != "gpu":
        return "scan"
    try:
        why = _fused_blockers(env, channel, policies, chunk=chunk, shard=shard, resume=resume)
    except Exception:  # malformed arguments: the scan path's checks name them
        return "scan"
    return "scan" if why else "fused"


def simulate(env, channel, policies, horizon: int, key, n_runs: int = 1, *, record=None,
             chunk: Optional[int] = None, progress: bool = False, shard=None, first_run: int = 0,
             delayed_regret: Optional[bool] = None, checkpoint=None, resume: bool = False, stop=None,
             path: str = "auto", keep=None, stats_block: Optional[int] = None):
    """Simulate ``n_runs`` paired runs of one policy or a ``{label: policy}`` dict.

    All policies are traced into one program (one compile, one call per chunk; a second call with
    the same components and shapes compiles nothing); every policy faces the same world draws.
    ``chunk`` splits the horizon into scans of that many rounds (same bits as one scan) with an
    optional progress bar. ``shard`` spreads runs over the local devices (default: all of them once
    there are at least 8 runs per device; ``True``: always; ``False``: one device; an int: that
    many). Runs are numbered ``first_run, first_run + 1, ...`` (run ``r`` is keyed by
    ``fold_in(key, r)`` whatever the batch: several hosts or calls can split one experiment).
    ``delayed_regret`` tracks Vernade et al.'s ``L(t)`` (default: on for censoring channels).
    ``checkpoint`` (a folder) saves the state and records after every chunk; ``resume=True``
    continues an interrupted run from it, bitwise as if it had never stopped; ``stop`` (a callable,
    e.g. from :func:`jaxbandits.engine.checkpoint.graceful_stop`) is asked after every chunk and
    ends the run there with :class:`~jaxbandits.engine.checkpoint.Interrupted` (docs/results.md).
    ``keep`` chooses the per-run curves returned (:func:`resolve_keep`: ``"all"``, ``"none"``, the
    first ``N`` runs, default every run while they are small); the statistics over runs
    (``SimOutput.stats``: means, second moments, paired differences, final values) are always
    computed, on the device, by blocks of ``stats_block`` runs (default
    :func:`jaxbandits.engine.stats.block_size` of ``n_runs``; the parts of one run pass the whole
    run's, docs/results.md).

    ``path`` picks the execution path (docs/fused.md): ``"auto"`` (default) runs the fused GPU
    kernels (:mod:`jaxbandits.fused`) when the default backend is a GPU and they cover the
    combination, else the scan; ``"scan"`` always the engine's scan; ``"fused"`` the fused kernels
    (on a CPU through Pallas' interpreter: slow, for tests), refusing with a ``ValueError`` a
    combination they do not cover. Both paths return the same ``SimOutput``, with its statistics
    reduced on the device and the per-run curves that ``keep`` asks for (docs/simulate.md). On the
    fused path the whole horizon is one kernel call, so ``chunk``, ``progress``, ``checkpoint`` and
    ``stop`` have no chunk boundary to act at (they are accepted and do nothing); ``resume=True``
    and ``shard`` other than one device keep the scan.

    A sweep that wants its calls saved, resumed or split into parts calls the ``simulate`` of the
    :class:`jaxbandits.experiments.sweeping.Sweep` it is given (docs/cluster.md); this function never looks
    for one. Returns ``SimOutput`` (or a dict of them for a dict of policies).

    Args:
        env: the world (:mod:`jaxbandits.envs`).
        channel: the channel (:mod:`jaxbandits.channels`).
        policies: a policy, or a non-empty ``{label: policy}`` dict.
        horizon: the number of rounds ``T``, an integer in ``[1, 2**24]``.
        key: a ``jax.random.key(...)`` or an integer seed in ``[0, 2**64 - 1]``.
        n_runs: the number of runs, an integer ``>= 1``.
        record: the record points: None (about 200), a stride, ``("log", n)`` or an array of
            rounds (:func:`~jaxbandits.engine.recording.record_points`).
        chunk: rounds per compiled scan, an integer ``>= 1`` (None: the whole horizon, or
            automatic in the reduced form).
        progress: show a progress bar over the chunks.
        shard: the local devices: None (all, from 8 runs per device), True, False or a count.
        first_run: the global index of the first run, ``>= 0``.
        delayed_regret: track ``L(t)`` (None: on for censoring channels).
        checkpoint: a folder to save the state and records after every chunk (None: none).
        resume: continue an interrupted run from ``checkpoint``.
        stop: a callable asked after every chunk; True stops the run there.
        path: ``"auto"``, ``"scan"`` or ``"fused"`` (:func:`choose_path`).
        keep: the per-run curves returned: ``"all"``, ``"none"``, an integer ``N`` or None
            (:func:`resolve_keep`).
        stats_block: the statistics' block size, a power of two (None: the default).

    Returns:
        A ``SimOutput`` (numpy arrays, leading axis the runs), or ``{label: SimOutput}`` for a
        dict of policies.

    Raises:
        TypeError: a component, key or policies argument of the wrong type.
        ValueError: an argument out of range (the message names it and the range), a policy the
            channel cannot serve (the message names what is missing), a run too large for the
            memory, or ``path="fused"`` on a combination the fused kernels do not cover.
        jaxbandits.engine.checkpoint.Interrupted: ``stop()`` asked for a stop (the work is in the
            checkpoint).

    Examples:
        >>> import jax
        >>> import jaxbandits as jb
        >>> from jaxbandits import channels, delays, envs
        >>> from jaxbandits.policies import classic
        >>> world = envs.bernoulli([0.3, 0.6], delay=delays.geometric(mean=5.0))
        >>> out = jb.simulate(world, channels.attributed(), classic.ucb1(), 1000, jax.random.key(0),
        ...                   n_runs=8, record=250)  # doctest: +SKIP
        >>> out.t, out.regret.shape  # doctest: +SKIP
        (array([ 250,  500,  750, 1000]), (8, 4))
    """
    if path == "fused":  # the scan path's argument checks first: a malformed call gets the same error
        _check_args(env, channel, policies, horizon, key, n_runs, record, chunk, first_run, delayed_regret)
    stats_block = check_stats_block(stats_block)
    which = choose_path(env, channel, policies, path, chunk=chunk, shard=shard, resume=resume)
    if which == "scan":
        return _simulate_scan(env, channel, policies, horizon, key, n_runs, record=record, chunk=chunk,
                              progress=progress, shard=shard, first_run=first_run, delayed_regret=delayed_regret,
                              checkpoint=checkpoint, resume=resume, stop=stop, keep=keep, stats_block=stats_block)
    from ..fused import simulate_fused

    horizon, n_runs, key, first_run = _check_args(env, channel, policies, horizon, key, n_runs, record, chunk,
                                                  first_run, delayed_regret)
    _check_memory_fused(env, channel, policies, horizon, n_runs, record, delayed_regret, keep)
    return simulate_fused(env, channel, policies, horizon, key, n_runs, record=record, first_run=first_run,
                          delayed_regret=delayed_regret, keep=keep, stats_block=stats_block)


def _check_memory_fused(env, channel, policies, horizon, n_runs, record, delayed_regret, keep):
    """The fused path's runs refused before anything is allocated when their state and records
    cannot fit in memory (:func:`check_memory`, the scan path's rule)."""
    _, pols = policies_dict(policies)
    problems = {lab: R.problem(env, channel, pol, horizon, n_runs=n_runs, delayed_regret=delayed_regret, label=lab)
                for lab, pol in pols.items()}
    record_at = record_points(horizon, record)
    keep_n = resolve_keep(keep, [p.spec.n_arms for p in problems.values()], n_runs, len(record_at),
                          any(p.world.adversarial for p in problems.values()))
    check_memory(problems, n_runs, record_at, keep=keep_n)


def _check_args(env, channel, policies, horizon, key, n_runs, record, chunk, first_run, delayed_regret):
    """The scan path's host checks, in its order and with its messages, before anything compiles."""
    horizon, n_runs, key = check_common(horizon, n_runs, key)
    first_run = check_run_args(n_runs, first_run, chunk)
    record_points(horizon, record)
    _, pols = policies_dict(policies)
    for lab, pol in pols.items():
        R.problem(env, channel, pol, horizon, n_runs=n_runs, delayed_regret=delayed_regret, label=lab)
    return horizon, n_runs, key, first_run


def policies_dict(policies):
    """``(single, {label: Policy})`` of one Policy (labelled by its name) or a non-empty
    ``{label: Policy}`` mapping; another type is a TypeError, an empty mapping a ValueError."""
    if is_policy(policies):
        return True, {policies.name: policies}
    if not isinstance(policies, Mapping):
        raise TypeError("policies must be a Policy or a non-empty {label: Policy} dict, got "
                        f"{type(policies).__name__}" + (" (give a dict: {label: policy})"
                                                         if isinstance(policies, (list, tuple)) else ""))
    if not policies:
        raise ValueError("policies must be a Policy or a non-empty {label: Policy} dict, got an empty one")
    for lab, pol in policies.items():
        if not is_policy(pol):
            raise TypeError(f"policies[{lab!r}] must be a Policy (a policy constructor's result), got "
                            f"{type(pol).__name__}")
    return False, dict(policies)


def unit_fingerprint(problems: Dict[str, R.Problem], grid_params, key, n_runs, record_at, first_run=0, shard=None,
                     extra: Optional[dict] = None) -> dict:
    """What names a simulation as a unit of a sweep (:class:`jaxbandits.experiments.sweeping.Sweep`): the
    checkpoint fingerprint of its program without the devices and the chunks (what a unit
    computes depends on neither: tested), plus its grid and ``extra``.

    Args:
        problems: ``{label: Problem}``.
        grid_params: a grid's parameters (None: no grid).
        key: the experiment's key.
        n_runs: the runs.
        record_at: the record rounds.
        first_run: the global index of the first run.
        shard: as :func:`simulate`'s.
        extra: more JSON-serialisable fields (None: none).

    Returns:
        A JSON-serialisable ``dict``: the components (each policy by its digest), sizes, key, runs,
        record points, grid and ``extra``.

    Examples:
        >>> import jax
        >>> import jaxbandits as jb
        >>> from jaxbandits import channels, delays, envs
        >>> from jaxbandits.policies import classic
        >>> world = envs.bernoulli([0.3, 0.6], delay=delays.geometric(mean=5.0))
        >>> from jaxbandits.engine import driver, problem, record_points
        >>> probs = {"ucb1": problem(world, channels.attributed(), classic.ucb1(), 200)}
        >>> fp = driver.unit_fingerprint(probs, None, jax.random.key(0), 4, record_points(200, 100))
        >>> "devices" in fp, "chunk" in fp
        (False, False)
    """
    plan = Plan(tuple(problems.items()), _devices(shard, n_runs), grid_params is not None)
    fp = _fingerprint(plan, key, n_runs, record_at, None, first_run,
                      {"grid": None if grid_params is None else {k: np.asarray(v).tolist() for k, v in grid_params.items()},
                       **(extra or {})})
    fp.pop("devices"), fp.pop("chunk")
    return fp


class PreparedGrid(NamedTuple):
    """A ``simulate_grid`` call's arguments, checked and resolved on the host.

    Attributes:
        label: the policy's name (of the first grid point).
        problem: the :class:`~jaxbandits.engine.round.Problem`, its components built from the
            parameters inside the program.
        params: ``{name: jnp array [G, ...]}``.
        n_grid: ``G``, the number of grid points.
        horizon: the number of rounds.
        key: the experiment's key.
        n_runs: the runs of each grid point.
        record_at: the record rounds.
    """

    label: str
    problem: R.Problem
    params: Dict[str, Any]  # name -> jnp array [G, ...]
    n_grid: int
    horizon: int
    key: Any
    n_runs: int
    record_at: np.ndarray


def prepare_grid(build: Callable, grid: Mapping[str, Any], channel, horizon: int, key, n_runs: int = 1, *,
                 record=None, chunk=None) -> PreparedGrid:
    """Every host check of :func:`simulate_grid`'s arguments (every grid point built once on the
    host) and the problem it runs: a :class:`PreparedGrid`.

    Args:
        build: ``build(**params) -> (env, policy)``, or a pair ``(env, policy value)`` (a grid
            over the policy's fields, :class:`~jaxbandits.core.values.FieldGrid`).
        grid: ``{name: array [G, ...]}``, one common leading length ``G``.
        channel: the channel.
        horizon: the number of rounds.
        key: a ``jax.random.key`` or an integer seed.
        n_runs: the runs of each grid point, ``>= 1``.
        record: the record points.
        chunk: rounds per compiled chunk (None: one chunk).

    Returns:
        The :class:`PreparedGrid`.

    Raises:
        ValueError: an empty grid, arrays of different leading lengths, or a bad argument (also
            from the constructors, run on every grid point).

    Examples:
        >>> from jaxbandits import channels, envs
        >>> from jaxbandits.engine import driver
        >>> from jaxbandits.policies import classic
        >>> build = lambda alpha: (envs.bernoulli([0.3, 0.6]), classic.ucb1(alpha=alpha))
        >>> g = driver.prepare_grid(build, {"alpha": [0.5, 1.0, 2.0]}, channels.attributed(), 500, 0)
        >>> g.n_grid, g.label
        (3, 'UCB1')
    """
    if isinstance(build, tuple):  # (world, policy value): a grid over the policy's fields
        if len(build) != 2:
            raise ValueError(f"build must be a function or a pair (world, policy), got a tuple of {len(build)}")
        build = FieldGrid(build[0], build[1], tuple(grid))
    horizon, n_runs, key = check_common(horizon, n_runs, key)
    check_run_args(n_runs, 0, chunk)
    record_at = record_points(horizon, record)
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
        R.check_pair(channel, pol, pol.name)
        first = first or (env, pol)
    env, pol = first
    params = {k: jnp.asarray(a) for k, a in arrs.items()}
    prob = R.problem(env, channel, pol, horizon, n_runs=n_runs, build=_Splat(build))
    return PreparedGrid(pol.name, prob, params, G, horizon, key, n_runs, record_at)


def simulate_grid(build: Callable, grid: Mapping[str, Any], channel, horizon: int, key,
                  n_runs: int = 1, *, record=None, chunk=None, progress=False, shard=None):
    """Simulate a grid of hyper-parameters in one compiled program.

    ``build(**params)`` returns ``(env, policy)``; ``grid`` maps each parameter name to an array
    whose leading axis has the common length ``G`` (a row may itself be an array, e.g. a delay
    sequence per grid point). Every grid point is built once on the host first (which runs the
    constructors' input checks on concrete values), then ``vmap`` runs all of them. Outputs have a
    leading axis of size ``G``; every grid point faces the same world draws.

    ``build`` may also be a pair ``(env, policy)`` of a world and a policy value: ``grid`` then maps
    fields of the policy to their values (``simulate_grid((env, classic.ucb1()), {"alpha": [0.5,
    2.0]}, ...)``; :class:`~jaxbandits.core.values.FieldGrid`).

    Args:
        build: ``build(**params) -> (env, policy)``, written with ``jnp`` so it traces.
        grid: ``{name: array [G, ...]}``, one common leading length ``G``.
        channel: the channel.
        horizon: the number of rounds, an integer in ``[1, 2**24]``.
        key: a ``jax.random.key`` or an integer seed.
        n_runs: the runs of each grid point, ``>= 1``.
        record: the record points (as :func:`simulate`'s).
        chunk: rounds per compiled scan (None: the whole horizon).
        progress: show a progress bar over the chunks.
        shard: the local devices (as :func:`simulate`'s).

    Returns:
        A ``SimOutput`` with a leading grid axis: ``regret`` is ``[G, runs, R]``.

    Raises:
        ValueError: an empty grid, arrays of different leading lengths, a bad argument, or a grid
            too large for the memory.

    Examples:
        >>> import jax
        >>> import jaxbandits as jb
        >>> from jaxbandits import channels, envs
        >>> from jaxbandits.policies import classic
        >>> build = lambda alpha: (envs.bernoulli([0.3, 0.6]), classic.ucb1(alpha=alpha))
        >>> out = jb.simulate_grid(build, {"alpha": [0.5, 1.0, 2.0]}, channels.attributed(), 500,
        ...                        jax.random.key(0), n_runs=4, record=250)  # doctest: +SKIP
        >>> out.regret.shape  # doctest: +SKIP
        (3, 4, 2)
    """
    g = prepare_grid(build, grid, channel, horizon, key, n_runs, record=record, chunk=chunk)
    probs = {g.label: g.problem}
    check_memory(probs, g.n_runs, g.record_at, n_grid=g.n_grid, params=g.params)
    outs = collect_outputs(probs, *run_problems(probs, g.params, g.key, g.n_runs, g.record_at, chunk, progress,
                                                shard)[1:], g.n_runs, g.record_at, n_grid=g.n_grid)
    return outs[g.label]


class _Splat:
    """``build(**params)`` as ``f(params)``, equal for the same ``build`` (so programs are reused)."""

    __slots__ = ("build",)

    def __init__(self, build):
        self.build = build

    def __call__(self, params):
        return self.build(**params)

    def __hash__(self):
        return hash(("splat", self.build if isinstance(self.build, FieldGrid) else id(self.build)))

    def __eq__(self, other):
        if not isinstance(other, _Splat):
            return False
        if isinstance(self.build, FieldGrid):  # a grid over a policy's fields: by value
            return self.build == other.build
        return other.build is self.build
