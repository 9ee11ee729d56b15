"""The entry points of a simulation: :func:`simulate` (the scan path or the fused kernels, as
:func:`~jaxbandits.engine.paths.choose_path` decides) and :func:`simulate_grid` (a grid of
hyper-parameters in one program). The work is done by the modules beside this one: the argument
checks (:mod:`~jaxbandits.engine.checks`), the prepared call (:mod:`~jaxbandits.engine.prepare`),
the memory estimate (:mod:`~jaxbandits.engine.memory`), the compiled programs
(:mod:`~jaxbandits.engine.programs`) and the chunk loop (:mod:`~jaxbandits.engine.loop`).
"""
from __future__ import annotations

from typing import Any, Callable, Mapping, Optional

from .checks import check_args, check_stats_block
from .loop import collect_outputs, run_problems
from .memory import check_memory, check_memory_fused
from .paths import choose_path
from .prepare import prepare, prepare_grid

# the other names this module held before the engine was split by concern (its public API then),
# still importable from here; their homes are the modules named above
from .fingerprint import unit_fingerprint  # noqa: F401
from .memory import memory_estimate, program_memory  # noqa: F401
from .paths import PATHS  # noqa: F401
from .prepare import Prepared, PreparedGrid  # noqa: F401
from .programs import Plan, clear_cache  # noqa: F401

__all__ = ["simulate", "simulate_grid"]


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
    ``keep`` chooses the per-run curves returned (:func:`~jaxbandits.engine.reduce.resolve_keep`:
    ``"all"``, ``"none"``, the first ``N`` runs, default every run while they are small); the
    statistics over runs
    (``SimOutput.stats``: means, second moments, paired differences, final values) are always
    computed, on the device, by blocks of ``stats_block`` runs (default
    :func:`jaxbandits.engine.stats.block_size` of ``n_runs``; the parts of one run pass the whole
    run's, docs/results.md).

    ``path`` picks the execution path (docs/fused.md): ``"auto"`` (default) runs the fused GPU
    kernels (:mod:`jaxbandits.engine.fused`) when the default backend is a GPU and they cover the
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
            (:func:`~jaxbandits.engine.reduce.resolve_keep`).
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
        check_args(env, channel, policies, horizon, key, n_runs, record, chunk, first_run, delayed_regret)
    stats_block = check_stats_block(stats_block)
    which = choose_path(env, channel, policies, path, chunk=chunk, shard=shard, resume=resume)
    if which == "scan":
        return _simulate_scan(env, channel, policies, horizon, key, n_runs, record=record, chunk=chunk,
                              progress=progress, shard=shard, first_run=first_run, delayed_regret=delayed_regret,
                              checkpoint=checkpoint, resume=resume, stop=stop, keep=keep, stats_block=stats_block)
    from .fused import simulate_fused

    horizon, n_runs, key, first_run = check_args(env, channel, policies, horizon, key, n_runs, record, chunk,
                                                  first_run, delayed_regret)
    check_memory_fused(env, channel, policies, horizon, n_runs, record, delayed_regret, keep)
    return simulate_fused(env, channel, policies, horizon, key, n_runs, record=record, first_run=first_run,
                          delayed_regret=delayed_regret, keep=keep, stats_block=stats_block)


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
