"""What a simulation holds in memory, estimated before anything is allocated or compiled: each
run's carried state (exactly, from the program's shapes) and the records it keeps; the refusal of a
run that cannot fit (every path that allocates runs calls :func:`check_memory`); the chunk size of
the reduced form; and the compiled program's own sizes (:func:`program_memory`).
"""
from __future__ import annotations

import functools
from typing import Dict, Optional

import jax
import jax.numpy as jnp
import numpy as np

from . import metrics as M
from . import reduce as RD
from . import round as R
from .checks import policies_dict
from .programs import Carry, Plan, chunk_program, init_program
from .recording import record_points, segment_plan
from .reduce import resolve_keep

__all__ = ["available_memory", "memory_estimate", "check_memory", "check_memory_fused", "auto_chunk",
           "program_memory"]


def available_memory() -> Optional[int]:
    """Bytes of memory the host can still give (Linux ``MemAvailable``), or None where unknown.

    Returns:
        An ``int`` number of bytes, or None (no ``/proc/meminfo``: the refusal is then skipped).

    Example:
        >>> from jaxbandits.engine.memory import available_memory
        >>> avail = available_memory()
        >>> avail is None or avail > 0
        True
    """
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
    :func:`check_memory` errs on the side of running.

    Args:
        problems: ``{label: Problem}``.
        n_runs: the runs (of each grid point).
        record_at: the record rounds.
        n_grid: the grid points (1: no grid).
        keep: the runs whose curves are kept (None: all).
        params: one grid point's parameters, ``{name: [G, ...]}`` (None: no grid).
        runs_here: the runs whose state this process carries (None: ``n_runs``).

    Returns:
        The bytes, an ``int``.

    Example:
        >>> from jaxbandits import channels, engine, envs
        >>> from jaxbandits.policies import classic
        >>> prob = engine.problem(envs.bernoulli([0.3, 0.6]), channels.attributed(), classic.ucb1(), 1000)
        >>> from jaxbandits.engine.memory import memory_estimate
        >>> memory_estimate({"UCB1": prob}, 8, [499, 999], keep=0) > 8 * 4 * (3 + 2)
        True
    """
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
    that allocates runs calls it (the scan, a grid, the fused kernels, a distributed run).

    Args:
        problems: ``{label: Problem}``.
        n_runs: the runs (of each grid point).
        record_at: the record rounds.
        n_grid: the grid points (1: no grid).
        keep: the runs whose curves are kept (None: all).
        params: one grid point's parameters (None: no grid).
        runs_here: the runs whose state this process carries (None: ``n_runs``).

    Returns:
        None, when the simulation fits (or the available memory is unknown).

    Raises:
        ValueError: the estimate exceeds the memory available; the message gives both, the runs,
            record points and bytes of state per run, and what to reduce.

    Example:
        >>> from jaxbandits import channels, engine, envs
        >>> from jaxbandits.policies import classic
        >>> prob = engine.problem(envs.bernoulli([0.3, 0.6]), channels.attributed(), classic.ucb1(), 1000)
        >>> from jaxbandits.engine.memory import check_memory
        >>> check_memory({"UCB1": prob}, 2**30, list(range(0, 1000, 5)))  # doctest: +SKIP
        Traceback (most recent call last):
        ValueError: this simulation needs at least ... GiB (1073741824 runs x 1 policies: 200 record points ...
    """
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
    reduced after every chunk, so chunks of about
    :data:`~jaxbandits.engine.reduce.CHUNK_RECORD_BYTES` of records bound the device memory
    (``None``: one chunk is small enough). Chunks do not change the bits.

    Args:
        n_arms: the arms of each policy's problem.
        n_runs: the runs.
        horizon: the number of rounds.
        n_rec: the number of record points.

    Returns:
        Rounds per chunk (``>= 1``), or None for one chunk.

    Example:
        >>> from jaxbandits.engine.memory import auto_chunk
        >>> auto_chunk([2], 1000, 10_000, 200), auto_chunk([2], 10**6, 10_000, 200)
        (None, 479)
    """
    total = sum(4 * n_rec * (5 + int(k)) for k in n_arms) * n_runs
    if total <= RD.CHUNK_RECORD_BYTES:
        return None
    return max(1, int(horizon * RD.CHUNK_RECORD_BYTES // total))


def check_memory_fused(env, channel, policies, horizon, n_runs, record, delayed_regret, keep):
    """The fused path's runs refused before anything is allocated when their state and records
    cannot fit in memory (:func:`check_memory`, the scan path's rule).

    Args:
        env: the world.
        channel: the channel.
        policies: a policy or a ``{label: policy}`` dict.
        horizon: the number of rounds.
        n_runs: the runs.
        record: the record points (:func:`~jaxbandits.engine.recording.record_points`).
        delayed_regret: track ``L(t)`` (None: for censoring channels).
        keep: the per-run curves kept (:func:`~jaxbandits.engine.reduce.resolve_keep`).

    Returns:
        None, when the runs fit.

    Raises:
        ValueError: as :func:`check_memory`.

    Example:
        >>> from jaxbandits import channels, envs
        >>> from jaxbandits.engine.memory import check_memory_fused
        >>> from jaxbandits.policies import classic
        >>> check_memory_fused(envs.bernoulli([0.3, 0.6]), channels.attributed(), classic.ucb1(), 1000, 8,
        ...                    None, None, None)
    """
    _, pols = policies_dict(policies)
    problems = {lab: R.problem(env, channel, pol, horizon, n_runs=n_runs, delayed_regret=delayed_regret, label=lab)
                for lab, pol in pols.items()}
    record_at = record_points(horizon, record)
    keep_n = resolve_keep(keep, [p.spec.n_arms for p in problems.values()], n_runs, len(record_at),
                          any(p.world.adversarial for p in problems.values()))
    check_memory(problems, n_runs, record_at, keep=keep_n)


def program_memory(problems: Dict[str, R.Problem], n_runs: int, record_at, grid_params=None) -> dict:
    """Bytes of the compiled program of a whole run (one chunk), from XLA's memory analysis,
    without running it: ``state`` (the carried runs), ``records`` (the outputs written at the
    record points), and the program's ``arguments``, ``outputs``, ``temp`` and ``aliased`` (donated)
    sizes; ``device = arguments + outputs + temp - aliased`` is the peak it needs.

    Args:
        problems: ``{label: Problem}``, as :func:`~jaxbandits.engine.loop.run_problems` takes them.
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
        >>> from jaxbandits.engine import memory, problem, record_points
        >>> probs = {"ucb1": problem(world, channels.attributed(), classic.ucb1(), 200, n_runs=4)}
        >>> mem = memory.program_memory(probs, 4, record_points(200, 100))  # doctest: +SKIP
        >>> mem["device"] >= mem["state"]  # doctest: +SKIP
        True
    """
    plan = Plan(tuple(problems.items()), 1, grid_params is not None)
    T = plan.problems[0][1].horizon
    run_ids = jax.ShapeDtypeStruct((n_runs,), jnp.int32)
    key = jax.eval_shape(lambda: jax.random.key(0))
    carries = jax.eval_shape(lambda r, g: init_program(plan, jax.random.key(0), r, g), run_ids, grid_params)
    seg = segment_plan(T, record_at)
    lo, hi = (jax.ShapeDtypeStruct(a.shape, jnp.int32) for a in seg.chunks[0])
    exe = jax.jit(chunk_program, static_argnums=(0,), donate_argnums=(1,)).lower(
        plan, carries, grid_params, lo, hi).compile()
    ma = exe.memory_analysis()
    nbytes = lambda tree: sum(int(np.prod(a.shape)) * a.dtype.itemsize for a in jax.tree.leaves(tree))
    _, ys = jax.eval_shape(lambda c, g, a, b: chunk_program(plan, c, g, a, b), carries, grid_params, lo, hi)
    del key
    out = {"state": nbytes(carries), "records": nbytes(ys), "arguments": int(ma.argument_size_in_bytes),
           "outputs": int(ma.output_size_in_bytes), "temp": int(ma.temp_size_in_bytes),
           "aliased": int(ma.alias_size_in_bytes)}
    out["device"] = out["arguments"] + out["outputs"] + out["temp"] - out["aliased"]
    return out
