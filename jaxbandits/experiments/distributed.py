"""One simulation over many processes (hosts) with JAX's multi-controller runtime
(``jax.distributed``), and a local launcher that starts N processes on this machine
(docs/cluster.md).

Every process runs the same program. After :func:`initialize`, ``jax.devices()`` lists the devices
of *all* processes; :func:`simulate_global` pads the runs axis to a multiple of their number and
shards it over that global mesh, so each process computes the runs of its own devices with the
driver's own compiled programs (``shard_map``, no collective: runs are independent). The records
of each chunk are then gathered to every process (``multihost_utils.process_allgather``, which
on CPU uses the gloo collectives that ``jax.distributed`` sets up) and assembled exactly as the
one-process driver assembles them, so the outputs are bitwise those of one process: run ``r`` is
keyed by ``fold_in(key, r)`` whatever the device that runs it (docs/conventions.md §8).

The engine's chunk loop does the work (``engine.loop.run_problems(..., global_devices=True)``: the same
compiled programs; only the mesh, all processes' devices instead of the local ones, and the
gather differ).
"""
from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from typing import List, Optional


__all__ = ["initialize", "is_initialized", "process_index", "process_count", "simulate_global", "run_sweep_global",
           "launch_local"]

_STATE = {"initialized": False}


def initialize(coordinator: Optional[str] = None, num_processes: Optional[int] = None,
               process_id: Optional[int] = None) -> None:
    """Join the distributed runtime: ``jax.distributed.initialize`` with the coordinator
    ``host:port``, the number of processes and this process's id; any of them left ``None`` is read
    from the environment as JAX reads it (SLURM: ``SLURM_*`` variables; Kubernetes indexed jobs,
    Open MPI, ... : JAX's cluster detection). Must be called before anything runs on a device.
    Every argument is checked before the runtime is touched; a second call does nothing.

    Args:
        coordinator: the coordinator's ``HOST:PORT`` (None: from the environment).
        num_processes: the number of processes, >= 1 (None: from the environment).
        process_id: this process's id, in ``[0, num_processes - 1]`` (None: from the environment).

    Returns:
        None.

    Raises:
        ValueError: an argument is out of range, JAX has already started in this process, or
            nothing was given and no cluster is detected (the message says what to give).

    Examples:
        >>> from jaxbandits.experiments import distributed
        >>> distributed.initialize("127.0.0.1:1234", num_processes=2, process_id=0)  # doctest: +SKIP
        >>> distributed.initialize("localhost")
        Traceback (most recent call last):
        ...
        ValueError: coordinator must be HOST:PORT (a port in 1..65535), got 'localhost'
    """
    import jax

    from ..core import validate as V

    if num_processes is not None:
        num_processes = V.integer("num_processes", num_processes, lo=1)
    if process_id is not None:
        hi = None if num_processes is None else num_processes - 1
        process_id = V.integer("process_id", process_id, lo=0, hi=hi)
    if coordinator is not None:
        host, sep, port = str(coordinator).rpartition(":")
        if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise ValueError(f"coordinator must be HOST:PORT (a port in 1..65535), got {coordinator!r}")
    if _STATE["initialized"]:
        return
    try:
        jax.distributed.initialize(coordinator_address=coordinator, num_processes=num_processes,
                                   process_id=process_id)
    except RuntimeError as e:
        if "before any JAX" not in str(e):
            raise
        raise ValueError("--distributed: this process has already started JAX; the distributed runtime must be "
                         "joined first (start the run in a fresh process)") from None
    except ValueError as e:  # nothing given and no cluster detected: say what to give
        raise ValueError(f"--distributed: {e} (give --coordinator HOST:PORT, --num-processes N and --process-id I, "
                         "or run under a scheduler JAX detects, such as SLURM)") from None
    _STATE["initialized"] = True


def is_initialized() -> bool:
    """Whether this process has joined the distributed runtime through :func:`initialize`.

    Returns:
        A bool.

    Examples:
        >>> from jaxbandits.experiments import distributed
        >>> distributed.is_initialized()
        False
    """
    return _STATE["initialized"]


def process_index() -> int:
    """This process's index among the processes of the runtime (``jax.process_index``; 0 without
    :func:`initialize`); process 0 writes the outputs.

    Returns:
        An int.

    Examples:
        >>> from jaxbandits.experiments import distributed
        >>> distributed.process_index()
        0
    """
    import jax

    return int(jax.process_index())


def process_count() -> int:
    """The number of processes of the runtime (``jax.process_count``; 1 without :func:`initialize`).

    Returns:
        An int.

    Examples:
        >>> from jaxbandits.experiments import distributed
        >>> distributed.process_count()
        1
    """
    import jax

    return int(jax.process_count())


def run_problems_global(problems, key, n_runs, record_at, chunk=None, progress=False, first_run=0,
                        checkpoint=None, resume=False, keep=None, block=None):
    """:func:`jaxbandits.engine.loop.run_problems` (no grid) with the runs axis sharded over the
    devices of every process. Returns ``(records, timing)``; the records are numpy arrays on every
    process, laid out as the one-process driver lays them out. ``checkpoint``: written by process
    0 after every chunk, read by every process on ``resume`` (a folder they share)."""
    from ..engine.loop import run_problems

    _, recs, timing = run_problems(problems, None, key, n_runs, record_at, chunk, progress,
                                   first_run=first_run, checkpoint=checkpoint, resume=resume,
                                   global_devices=True, keep=keep, block=block)
    return recs, timing


def simulate_global(env, channel, policies, horizon: int, key, n_runs: int = 1, *, record=None,
                    chunk: Optional[int] = None, progress: bool = False, first_run: int = 0,
                    delayed_regret: Optional[bool] = None, checkpoint=None, resume: bool = False, keep=None,
                    stats_block: Optional[int] = None):
    """:func:`jaxbandits.simulate` with the runs sharded over the devices of every process of the
    distributed runtime (call :func:`initialize` first; without it, over the local devices). Every
    process must call it with the same arguments; every process gets the whole outputs.
    ``checkpoint`` (a folder every process sees, or a
    :class:`~jaxbandits.engine.checkpoint.Checkpoint`) is written by process 0 after every chunk;
    ``resume=True`` continues from it on every process, bitwise as if never stopped.

    Args:
        env: the world.
        channel: the feedback channel.
        policies: a policy, or ``{label: policy}``.
        horizon: the number of rounds.
        key: the PRNG key (or an int seed, as :func:`jaxbandits.simulate` takes it).
        n_runs: the number of runs.
        record: the record points (None: the default; :func:`jaxbandits.simulate`).
        chunk: rounds per chunk (None: the default).
        progress: print progress.
        first_run: the index of the first run (runs ``first_run ..`` are keyed as in a whole run).
        delayed_regret: record ``L(t)`` (None: where the channel censors).
        checkpoint: a shared folder or a ``Checkpoint`` (None: none).
        resume: continue from ``checkpoint``.
        keep: the per-run curves kept (``"all"``, ``"none"``, N; None: the default rule).
        stats_block: runs per block of the statistics (None: the default).

    Returns:
        A :class:`~jaxbandits.engine.recording.SimOutput`, or ``{label: SimOutput}`` for a dict of
        policies, the same on every process.

    Raises:
        ValueError: an argument is out of range, or the records would not fit in memory (checked
            before anything is allocated).
        TypeError: ``key`` is neither a PRNG key nor an int seed.

    Examples:
        >>> from jaxbandits import channels, envs
        >>> from jaxbandits.experiments.distributed import simulate_global
        >>> from jaxbandits.policies import classic
        >>> out = simulate_global(envs.bernoulli([0.3, 0.6]), channels.attributed(), classic.ucb1(),
        ...                       200, 0, n_runs=8)  # doctest: +SKIP
        >>> out.regret.shape[0]  # doctest: +SKIP
        8
    """
    from ..engine import checks as CK
    from ..engine import reduce as RD
    from ..engine.loop import collect_outputs
    from ..engine.memory import check_memory
    from ..engine.round import problem
    from ..engine.recording import record_points

    horizon, n_runs, key = CK.check_common(horizon, n_runs, key)
    first_run = CK.check_run_args(n_runs, first_run, chunk)
    record_at = record_points(horizon, record)
    single, pols = CK.policies_dict(policies)
    problems = {lab: problem(env, channel, pol, horizon, n_runs=n_runs, delayed_regret=delayed_regret, label=lab)
                for lab, pol in pols.items()}
    keep_n = RD.resolve_keep(keep, [p.spec.n_arms for p in problems.values()], n_runs, len(record_at),
                             any(p.world.adversarial for p in problems.values()))
    # every process carries its share of the runs and receives every record: refused before allocating
    check_memory(problems, n_runs, record_at, keep=keep_n, runs_here=-(-n_runs // process_count()))
    recs, timing = run_problems_global(problems, key, n_runs, record_at, chunk, progress, first_run,
                                       checkpoint, resume, keep=keep_n, block=stats_block)
    outs = collect_outputs(problems, recs, timing, n_runs, record_at)
    return outs[next(iter(outs))] if single else outs


def bytes_all(data: bytes) -> list:
    """``data`` of every process, on every process (lengths, then the bytes padded to the longest)."""
    import numpy as np
    from jax.experimental import multihost_utils as mh

    n = np.asarray(mh.process_allgather(np.array([len(data)], np.int64))).reshape(-1)
    buf = np.zeros(int(n.max()) if n.size else 0, np.uint8)
    buf[:len(data)] = np.frombuffer(data, np.uint8)
    got = np.asarray(mh.process_allgather(buf)).reshape(n.size, -1)
    return [got[i, :int(n[i])].tobytes() for i in range(n.size)]


def run_sweep_global(runner, cfg, runs: int, seed: int, horizon, folder: Optional[str] = None):
    """A sweep (an experiment with its own loop over settings or replications) over every process:
    each computes its share of the sweep's units (each simulation or fit, shared out by cost as
    :class:`jaxbandits.engine.checkpoint.SweepShare` does for ``--part``), the units are exchanged,
    and every process replays the sweep over all of them. The results are those of one process,
    bit for bit: a unit's numbers do not depend on the process that computes it. ``folder`` (one
    every process sees) keeps each unit as its process completes it: a rerun replays them.

    Args:
        runner: the sweep's loop (:attr:`~jaxbandits.experiments.specs.Experiment.runner`).
        cfg: its config.
        runs: the number of runs.
        seed: the seed.
        horizon: a horizon given to the run (None: the sweep's own).
        folder: a shared folder keeping the units (None: none).

    Returns:
        What ``runner`` returns (its results), the same on every process.

    Raises:
        RuntimeError: the processes asked for different units.

    Examples:
        >>> from jaxbandits.experiments.distributed import run_sweep_global
        >>> from jaxbandits.experiments import get
        >>> exp = get("thune2019-bounds")  # doctest: +SKIP
        >>> res = run_sweep_global(exp.runner, exp.config, exp.runs, 0, None)  # doctest: +SKIP
    """
    from ..engine.checkpoint import SweepShare
    from .sweeping import call_runner, sweep_checkpoints

    me, count = process_index(), process_count()
    with sweep_checkpoints(folder, share=SweepShare(me, count)) as ctx:  # this process's units
        call_runner(runner, cfg, runs, seed, horizon, ctx)
    if count > 1:  # every process must have asked for the same units, or the exchange below would pair them wrongly
        import hashlib
        import json

        mine = hashlib.sha256(json.dumps(ctx.units).encode()).digest()
        got = bytes_all(mine)
        if any(g != mine for g in got):
            odd = [i for i, g in enumerate(got) if g != got[0]]
            raise RuntimeError(f"distributed sweep: process(es) {odd} asked for other units than process 0 (the "
                               "sweep's code must ask for the same units in the same order on every process, "
                               "whatever the numbers it gets back)")
    with sweep_checkpoints(None, replay_only=True) as rep:
        for uid, kind, owner in ctx.units:
            mine = ctx.cache.get_bytes(uid, kind) if owner == me else b""
            rep.cache.put_bytes(uid, kind, bytes_all(mine or b"")[owner] if count > 1 else mine)
        return call_runner(runner, cfg, runs, seed, horizon, rep)


# ----------------------------------------------------------------------------- the local launcher
def free_port() -> int:
    """A TCP port free on 127.0.0.1 now (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def launch_local(args: List[str], n_processes: int, devices_per_process: Optional[int] = None,
                 timeout: Optional[float] = None, command: Optional[List[str]] = None) -> int:
    """Start ``n_processes`` processes of ``python -m jaxbandits.apps.cli *args --distributed
    --coordinator 127.0.0.1:PORT --num-processes N --process-id i`` on this machine, each with
    ``devices_per_process`` CPU devices (default: this machine's cores shared out, at least one),
    and wait for them. Returns the first non-zero exit status (the others are then stopped), else
    0. Process 0 prints and writes; the others' output goes to stderr. ``command`` replaces
    ``[python, -m, jaxbandits.apps.cli]``: e.g. a script that registers experiments of its own and then
    calls :func:`jaxbandits.apps.cli.main`.

    Args:
        args: the command line's arguments after ``jaxbandits`` (e.g. ``["run", NAME, ...]``).
        n_processes: the number of processes, in ``[1, 1024]``.
        devices_per_process: CPU devices per process, >= 1 (None: the cores shared out).
        timeout: seconds before the processes are killed (status 124; None: no limit).
        command: the program started instead of ``python -m jaxbandits.apps.cli`` (None: that).

    Returns:
        The first non-zero exit status, else 0.

    Raises:
        ValueError: ``n_processes`` or ``devices_per_process`` is out of range.

    Examples:
        >>> import tempfile
        >>> from jaxbandits.experiments.distributed import launch_local
        >>> launch_local(["run", "classic-bernoulli", "--runs", "8", "--horizon", "200",
        ...               "--out", tempfile.mkdtemp()], 2)  # doctest: +SKIP
        0
    """
    from ..core import validate as V

    n = V.integer("processes", n_processes, lo=1, hi=1024)
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    per = max(1, cores // n) if devices_per_process is None else V.integer("devices_per_process",
                                                                             devices_per_process, lo=1)
    port = free_port()
    env = dict(os.environ)
    flags = " ".join(f for f in env.get("XLA_FLAGS", "").split() if "xla_force_host_platform_device_count" not in f)
    env["XLA_FLAGS"] = (flags + f" --xla_force_host_platform_device_count={per}").strip()
    env["JAX_PLATFORMS"] = "cpu"
    procs = []
    try:
        for i in range(n):
            cmd = [*(command or [sys.executable, "-m", "jaxbandits.apps.cli"]), *args, "--distributed", "--coordinator",
                   f"127.0.0.1:{port}", "--num-processes", str(n), "--process-id", str(i)]
            procs.append(subprocess.Popen(cmd, env=env, stdout=None if i == 0 else sys.stderr))
        deadline = None if timeout is None else time.monotonic() + timeout
        status = 0
        running = list(procs)
        while running:
            for p in list(running):
                rc = p.poll()
                if rc is None:
                    continue
                running.remove(p)
                if rc != 0 and status == 0:
                    status = rc
                    for q in running:  # one failed: the others would wait for it forever
                        q.terminate()
            if deadline is not None and time.monotonic() > deadline and running:
                for q in running:
                    q.kill()
                status = status or 124
            time.sleep(0.05)
        return status
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
