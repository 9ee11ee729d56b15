"""The chunk loop of the scan path: :func:`run_problems` compiles (once) and runs the programs of
:mod:`jaxbandits.engine.programs` chunk by chunk, reduces each chunk's records to statistics on the
device, keeps the curves asked for, saves and resumes checkpoints, and stops when asked;
:func:`collect_outputs` turns what it collected into ``SimOutput`` values.
"""
from __future__ import annotations

import json
import math
import time
from typing import Any, Dict, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from . import metrics as M
from . import round as R
from . import stats as ST
from .devices import (agree_across_processes, gather_global, gather_local, mesh, n_devices, place, place_global,
                      state_global)
from .fingerprint import checkpoint_fingerprint
from .programs import (Plan, chunk_program, compiled, first_runs_program, init_program, saved_state, strip_empty,
                       take_program, whole_carries, with_channel_keys)
from .recording import SimOutput, segment_plan
from .reduce import (FINAL_FIELDS, STAT_FIELD, host_block_stats, host_stats, reduce_on_device, stat_metrics,
                     stat_pairs)

__all__ = ["run_problems", "Collected", "collect_outputs"]


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
        shard: the devices (as :func:`~jaxbandits.engine.driver.simulate`'s ``shard``).
        first_run: the global index of this call's first run.
        checkpoint: a folder or a :class:`~jaxbandits.engine.checkpoint.Checkpoint` (None: none).
        resume: continue from ``checkpoint``.
        stop: a callable asked after every chunk (None: never stop).
        global_devices: shard over the devices of every process.
        keep: the runs whose curves are returned (None: all).
        block: the statistics' block size (None: ``block_size(n_runs)``).

    Returns:
        ``(final carries, Collected, timing)``; :func:`~jaxbandits.engine.driver.simulate` turns the
        last two into ``SimOutput`` values (:func:`collect_outputs`).

    Raises:
        ValueError: ``stop`` with ``global_devices``, or a checkpoint of another simulation.
        jaxbandits.engine.checkpoint.Interrupted: ``stop()`` said so (the work is saved).

    Examples:
        >>> import jax
        >>> import jaxbandits as jb
        >>> from jaxbandits import channels, delays, envs
        >>> from jaxbandits.policies import classic
        >>> world = envs.bernoulli([0.3, 0.6], delay=delays.geometric(mean=5.0))
        >>> from jaxbandits.engine import loop, problem, record_points
        >>> probs = {"ucb1": problem(world, channels.attributed(), classic.ucb1(), 200, n_runs=4)}
        >>> carries, col, timing = loop.run_problems(probs, None, jax.random.key(0), 4,
        ...                                          record_points(200, 100))  # doctest: +SKIP
        >>> col.recs["ucb1"].regret.shape  # doctest: +SKIP
        (4, 2)
    """
    from .checkpoint import Checkpoint, Interrupted

    if global_devices:
        if stop is not None:
            raise ValueError("a run over the devices of several processes takes no stop (one process cannot stop "
                             "alone)")
        n_dev, gather = jax.device_count(), gather_global
        progress = progress and jax.process_index() == 0
    else:
        n_dev, gather = n_devices(shard, n_runs), gather_local
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
        sh = jax.sharding.NamedSharding(mesh(n_dev), jax.sharding.PartitionSpec("runs"))
        run_ids = jax.make_array_from_callback((n_pad,), sh, lambda i: ids[i])
        valid = jax.make_array_from_callback((n_pad,), sh, lambda i: valid_np[i])
    else:
        run_ids, valid = jnp.asarray(ids), jnp.asarray(valid_np)
    init_exe, compile_s = compiled("init", init_program, plan, (key, run_ids, grid_params))
    by_program = {"init": compile_s, "chunk": 0.0, "reduce": 0.0}  # seconds of lowering + compiling
    carries = init_exe(key, run_ids, grid_params)
    seg = segment_plan(T, record_at, chunk)
    if checkpoint is not None:
        if not isinstance(checkpoint, Checkpoint):
            checkpoint = Checkpoint(checkpoint)
        if checkpoint.fingerprint is None:
            checkpoint.fingerprint = checkpoint._norm(
                checkpoint_fingerprint(plan, key, n_runs, record_at, chunk, first_run,
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
        fresh = whole_carries(plan, state_global(carries) if global_devices else carries, grid_params, n_pad)
        start, state, saved = checkpoint.load(saved_state(fresh))
        state = strip_empty(with_channel_keys(state, fresh))
        carries = place_global(state, carries) if global_devices else place(state, carries)
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
            exe, dt = compiled("chunk", chunk_program, plan, (carries, grid_params, lo, hi), donate=(1,))
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
                    take, dt = compiled("finals", take_program, plan, (fin, last))
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
                    first, dt = compiled(("first_runs", keep_n), first_runs_program(keep_n), plan, (ys,))
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
                    checkpoint.save(i + 1, saved_state(whole_carries(plan, carries, grid_params, n_pad)), flat)
                else:  # every process takes part in the gather; process 0 writes
                    whole = saved_state(whole_carries(plan, state_global(carries), grid_params, n_pad))
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
    return whole_carries(plan, carries, grid_params, n_pad), Collected(recs, stats, keep_n), timing


class Collected(NamedTuple):
    """What :func:`run_problems` returns besides the state: per label the per-run records of the
    first ``keep`` runs (``None`` for none) and the statistics over all runs (``None`` for grids).

    Attributes:
        recs: ``{label: Records}`` (:class:`~jaxbandits.engine.metrics.Records`, numpy
            ``[(G,) runs, R, ...]``), or ``{label: None}`` when no curve is kept.
        stats: ``{label: Stats}`` (:class:`~jaxbandits.engine.stats.Stats`), ``None`` per label
            for a grid.
        keep: the runs whose curves are kept.
    """

    recs: Dict[str, Any]
    stats: Dict[str, Any]
    keep: int


def collect_outputs(problems, col, timing, n_runs, record_at, n_grid=1):
    """The ``SimOutput`` of every policy from what :func:`run_problems` collected (records, statistics
    and timing), as ``simulate``, ``simulate_grid`` and a distributed run return them.

    Args:
        problems: ``{label: Problem}``, as given to :func:`run_problems`.
        col: the :class:`Collected` records and statistics.
        timing: the timing dict of :func:`run_problems` (``run_steps_per_s`` is added).
        n_runs: the runs (of each grid point).
        record_at: the record rounds (0-based: ``SimOutput.t`` is ``record_at + 1``).
        n_grid: the grid points (1: no grid).

    Returns:
        ``{label: SimOutput}``.

    Example:
        >>> import jax
        >>> from jaxbandits import channels, envs
        >>> from jaxbandits.engine import loop, problem, record_points
        >>> from jaxbandits.policies import classic
        >>> probs = {"ucb1": problem(envs.bernoulli([0.3, 0.6]), channels.attributed(), classic.ucb1(), 200)}
        >>> rec = record_points(200, 100)
        >>> _, col, timing = loop.run_problems(probs, None, jax.random.key(0), 4, rec)  # doctest: +SKIP
        >>> loop.collect_outputs(probs, col, timing, 4, rec)["ucb1"].t  # doctest: +SKIP
        array([100, 200])
    """
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
