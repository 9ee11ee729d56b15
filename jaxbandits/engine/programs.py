"""The compiled programs of the scan path and their cache: :class:`Plan` (what one program
runs), the init and chunk programs (``vmap`` over runs, and a grid, of a scan over segments of a
loop over rounds; ``shard_map`` over devices along the runs axis), the small programs that take the
kept runs and the final values, and the carried state as a checkpoint saves it.

Records are scan outputs of the segment scan, never carried: device memory is the records
requested plus the state of the runs (docs/architecture.md).
"""
from __future__ import annotations

import collections
import functools
import time
from typing import Any, NamedTuple, Tuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from . import metrics as M
from . import reduce as RD
from . import round as R
from .devices import mesh
from .reduce import CACHE_SIZE, signature

__all__ = ["Plan", "Carry", "strip_empty", "init_program", "chunk_program", "whole_carries", "saved_state",
           "with_channel_keys", "compiled", "clear_cache", "first_runs_program", "take_program"]


class Plan(NamedTuple):
    """Static description of one compiled program (hashable).

    Attributes:
        problems: ``((label, Problem), ...)``, the problems traced into the program.
        n_dev: the number of devices the runs are sharded over.
        gridded: the program runs a grid of parameters (:func:`~jaxbandits.engine.driver.simulate_grid`).
    """

    problems: Tuple[Tuple[str, R.Problem], ...]
    n_dev: int
    gridded: bool


class Carry(NamedTuple):
    """What one run carries from round to round: its state and its running metrics.

    Attributes:
        state: the :class:`~jaxbandits.engine.round.RunState` (world, policy, channel, keys).
        metrics: the running sums of :mod:`jaxbandits.engine.metrics`.
    """

    state: R.RunState
    metrics: M.Metrics


# ----------------------------------------------------------------------------- the programs
# Zero-size leaves (a channel's empty reveal ring, an untracked L(t)'s ring, the records of a metric
# a problem does not keep) hold nothing, yet as outputs of a program vmapped over runs they become
# literal constants of shape [runs, 0] or [segments, runs, 0], which XLA prints, fingerprints and
# copies element row by element row while compiling: at 1e6 runs and 200 record points the text of
# the program reached 800 MB and its compile 12 s on a CPU (30 s on an H200). The programs
# therefore carry and return the state and the records *stripped* of their zero-size leaves
# (:func:`strip_empty`), and rebuild them as zeros where a component reads them (:func:`_fill`): the same
# operations on the same values, so the same bits.
def _empty(x) -> bool:
    return 0 in np.shape(x)


def strip_empty(tree):
    """``tree`` with every zero-size leaf replaced by None (an empty subtree): what the programs
    carry and return (the comment above says why).

    Args:
        tree: a pytree of arrays.

    Returns:
        The same tree, its zero-size leaves None.

    Example:
        >>> import numpy as np
        >>> from jaxbandits.engine.programs import strip_empty
        >>> strip_empty({"ring": np.zeros((4, 0)), "t": np.zeros(4)})["ring"] is None
        True
    """
    return jax.tree.map(lambda x: None if _empty(x) else x, tree)


def _fill(stripped, template, zeros=jnp.zeros):
    """The inverse of :func:`strip_empty`: ``template``'s structure, its zero-size leaves as ``zeros``
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
    and the records are stripped of their zero-size leaves (:func:`strip_empty`)."""
    world, _ = prob.components(params)
    whole = functools.partial(_fill, template=_run_template(prob, params))

    def body(t, c):
        c = whole(c)
        state, step = R.round(prob, c.state, t, params)
        return strip_empty(Carry(state, M.update(prob, world, c.metrics, step)))

    def segment(c, x):
        a, b = x
        c = lax.fori_loop(a, b, body, c)
        w = whole(c)
        return c, strip_empty(M.record(prob, world, w.metrics, b - 1, w.state.channel))

    return lax.scan(segment, carry, (lo, hi))


def _init_local(plan: Plan, key, run_ids, gp):
    out = {}
    for lab, prob in plan.problems:
        def f(p, r, prob=prob):
            return strip_empty(Carry(R.init(prob, key, r, p), M.init(prob)))

        f_runs = jax.vmap(f, in_axes=(None, 0))
        out[lab] = jax.vmap(f_runs, in_axes=(0, None))(gp, run_ids) if plan.gridded else f_runs(None, run_ids)
    return out


def whole_carries(plan: Plan, carries, gp, n_pad):
    """The carries of :func:`~jaxbandits.engine.loop.run_problems` (stripped) with their zero-size
    leaves back, as numpy zeros: the state a checkpoint saves and ``run_problems`` returns.

    Args:
        plan: the programs' :class:`Plan`.
        carries: ``{label: Carry}`` as the programs return them (stripped).
        gp: the grid's parameters (None: no grid).
        n_pad: the runs, padded to a multiple of the devices (and blocks).

    Returns:
        ``{label: Carry}``, whole.

    Example:
        >>> import jax, jax.numpy as jnp
        >>> from jaxbandits import channels, envs
        >>> from jaxbandits.engine import problem, programs
        >>> from jaxbandits.policies import classic
        >>> prob = problem(envs.bernoulli([0.3, 0.6]), channels.attributed(), classic.ucb1(), 100)
        >>> plan = programs.Plan((("ucb1", prob),), 1, False)
        >>> c = programs.init_program(plan, jax.random.key(0), jnp.arange(2), None)  # doctest: +SKIP
        >>> programs.whole_carries(plan, c, None, 2)["ucb1"].state.keys.reward.shape  # doctest: +SKIP
        (2,)
    """
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


def saved_state(carries):
    """What a checkpoint saves of the carries: all but the channels' round streams
    (``RunKeys.channel``), which are a function of the key and the run alone and never advance.
    Checkpoints written before channels had a stream hold exactly this, so they still load.

    Args:
        carries: ``{label: Carry}``, whole (:func:`whole_carries`).

    Returns:
        ``{label: Carry}`` with ``state.keys.channel`` None.

    Example:
        >>> import jax, jax.numpy as jnp
        >>> from jaxbandits import channels, envs
        >>> from jaxbandits.engine import problem, programs
        >>> from jaxbandits.policies import classic
        >>> prob = problem(envs.bernoulli([0.3, 0.6]), channels.attributed(), classic.ucb1(), 100)
        >>> plan = programs.Plan((("ucb1", prob),), 1, False)
        >>> c = programs.whole_carries(plan, programs.init_program(plan, jax.random.key(0), jnp.arange(2), None),
        ...                            None, 2)  # doctest: +SKIP
        >>> programs.saved_state(c)["ucb1"].state.keys.channel is None  # doctest: +SKIP
        True
    """
    return {lab: c._replace(state=c.state._replace(keys=c.state.keys._replace(channel=None)))
            for lab, c in carries.items()}


def with_channel_keys(saved, fresh):
    """The inverse of :func:`saved_state`: ``saved`` with the channels' streams of ``fresh`` (the
    carries that the init program has just computed for the same key and runs).

    Args:
        saved: ``{label: Carry}`` as a checkpoint loads it.
        fresh: ``{label: Carry}`` from the init program, whole.

    Returns:
        ``saved`` with ``state.keys.channel`` from ``fresh``.

    Example:
        >>> import jax, jax.numpy as jnp
        >>> from jaxbandits import channels, envs
        >>> from jaxbandits.engine import problem, programs
        >>> from jaxbandits.policies import classic
        >>> prob = problem(envs.bernoulli([0.3, 0.6]), channels.attributed(), classic.ucb1(), 100)
        >>> plan = programs.Plan((("ucb1", prob),), 1, False)
        >>> fresh = programs.whole_carries(plan, programs.init_program(plan, jax.random.key(0), jnp.arange(2),
        ...                                                            None), None, 2)  # doctest: +SKIP
        >>> back = programs.with_channel_keys(programs.saved_state(fresh), fresh)  # doctest: +SKIP
        >>> back["ucb1"].state.keys.channel is fresh["ucb1"].state.keys.channel  # doctest: +SKIP
        True
    """
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


def init_program(plan: Plan, key, run_ids, gp):
    """The init program: every problem's runs ``run_ids`` (and grid points) initialised from the
    key, stripped of their zero-size leaves; over ``plan.n_dev`` devices with ``shard_map``.

    Args:
        plan: the programs' :class:`Plan`.
        key: the experiment's key.
        run_ids: int32 ``[runs]``, the global run indices.
        gp: the grid's parameters ``{name: [G, ...]}`` (None: no grid).

    Returns:
        ``{label: Carry}``, stripped (:func:`strip_empty`), leading axes ``[(G,) runs]``.

    Example:
        >>> import jax, jax.numpy as jnp
        >>> from jaxbandits import channels, envs
        >>> from jaxbandits.engine import problem, programs
        >>> from jaxbandits.policies import classic
        >>> prob = problem(envs.bernoulli([0.3, 0.6]), channels.attributed(), classic.ucb1(), 100)
        >>> plan = programs.Plan((("ucb1", prob),), 1, False)
        >>> carries = jax.eval_shape(lambda r: programs.init_program(plan, jax.random.key(0), r, None),
        ...                          jnp.arange(4))
        >>> carries["ucb1"].state.keys.reward.shape
        (4,)
    """
    if plan.n_dev <= 1:
        return _init_local(plan, key, run_ids, gp)
    P = jax.sharding.PartitionSpec
    carry_spec = P(None, "runs") if plan.gridded else P("runs")
    f = jax.shard_map(lambda r, g: _init_local(plan, key, r, g), mesh=mesh(plan.n_dev),
                      in_specs=(P("runs"), P()), out_specs=carry_spec, check_vma=False)
    return f(run_ids, gp)


def chunk_program(plan: Plan, carries, gp, lo, hi):
    """The chunk program: every problem's runs through the segments ``[lo[i], hi[i])``, each
    emitting its records at its end. Runs are independent, so each device runs its block with
    ``shard_map`` and no collective (automatic partitioning turned the Beta sampler's while-loop
    predicate into an all-reduce).

    Args:
        plan: the programs' :class:`Plan`.
        carries: ``{label: Carry}``, stripped.
        gp: the grid's parameters (None: no grid).
        lo: int32 ``[S]``, each segment's first round.
        hi: int32 ``[S]``, each segment's end (exclusive).

    Returns:
        ``(carries, records)``: the carries after the chunk and ``{label: Records}`` (stripped),
        leading axes ``[S, (G,) runs]``.

    Example:
        >>> import jax, jax.numpy as jnp
        >>> from jaxbandits import channels, envs
        >>> from jaxbandits.engine import problem, programs
        >>> from jaxbandits.policies import classic
        >>> prob = problem(envs.bernoulli([0.3, 0.6]), channels.attributed(), classic.ucb1(), 100)
        >>> plan = programs.Plan((("ucb1", prob),), 1, False)
        >>> c = jax.eval_shape(lambda r: programs.init_program(plan, jax.random.key(0), r, None), jnp.arange(4))
        >>> seg = jnp.array([0, 50]), jnp.array([50, 100])
        >>> _, ys = jax.eval_shape(lambda c: programs.chunk_program(plan, c, None, *seg), c)  # doctest: +SKIP
        >>> ys["ucb1"].regret.shape  # doctest: +SKIP
        (2, 4)
    """
    if plan.n_dev <= 1:
        return _chunk_local(plan, carries, gp, lo, hi)
    P = jax.sharding.PartitionSpec
    carry_spec = P(None, "runs") if plan.gridded else P("runs")
    rec_spec = P(None, None, "runs") if plan.gridded else P(None, "runs")
    f = jax.shard_map(lambda c, g, a, b: _chunk_local(plan, c, g, a, b), mesh=mesh(plan.n_dev),
                      in_specs=(carry_spec, P(), P(), P()), out_specs=(carry_spec, rec_spec), check_vma=False)
    return f(carries, gp, lo, hi)


#: compiled programs, keyed by (program, plan, argument shapes): a second identical simulate
#: compiles nothing. Bounded, least recently used first out.
_COMPILED: "collections.OrderedDict[Any, Any]" = collections.OrderedDict()
def compiled(name, fn, plan, args, donate=()):
    """``(executable, compile seconds)`` of ``fn(plan, *args)``, from the cache when it is there
    (keyed by ``name``, the plan and the arguments' :func:`~jaxbandits.engine.reduce.signature`;
    the least recently used program leaves past :data:`~jaxbandits.engine.reduce.CACHE_SIZE`).

    Args:
        name: the program's name in the cache (hashable).
        fn: ``fn(plan, *args)``, the program.
        plan: its :class:`Plan` (static).
        args: its arguments (arrays, or their shapes).
        donate: the positions in ``(plan, *args)`` of the arguments donated (``1``: the first).

    Returns:
        ``(executable, seconds)``: 0.0 seconds when the program was cached.

    Example:
        >>> import jax, jax.numpy as jnp
        >>> from jaxbandits import channels, envs
        >>> from jaxbandits.engine import problem, programs
        >>> from jaxbandits.policies import classic
        >>> prob = problem(envs.bernoulli([0.3, 0.6]), channels.attributed(), classic.ucb1(), 100)
        >>> plan = programs.Plan((("ucb1", prob),), 1, False)
        >>> args = ({"x": jnp.arange(6.0)}, jnp.int32(2))
        >>> exe, s = programs.compiled("take", programs.take_program, plan, args)  # doctest: +SKIP
        >>> exe(*args)["x"].item(), programs.compiled("take", programs.take_program, plan, args)[1]  # doctest: +SKIP
        (2.0, 0.0)
    """
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


def first_runs_program(n):
    """The program that keeps the records of the first ``n`` runs (``[S, runs, ...]`` leaves).

    Args:
        n: the runs kept.

    Returns:
        ``f(plan, records)``, the records cut to ``[S, n, ...]``.

    Example:
        >>> import numpy as np
        >>> from jaxbandits.engine.programs import first_runs_program
        >>> first_runs_program(2)(None, {"r": np.zeros((3, 5))})["r"].shape
        (3, 2)
    """
    return lambda plan, t: jax.tree.map(lambda a: a[:, :n], t)


def take_program(plan, tree, i):
    """Segment ``i`` of every ``[S, ...]`` leaf of ``tree`` (each run's final values).

    Args:
        plan: the programs' :class:`Plan` (unused: the cache's key).
        tree: a pytree of ``[S, ...]`` arrays.
        i: the segment.

    Returns:
        The tree of ``[...]`` arrays at segment ``i``.

    Example:
        >>> import numpy as np
        >>> from jaxbandits.engine.programs import take_program
        >>> take_program(None, {"r": np.arange(6).reshape(3, 2)}, 2)["r"].tolist()
        [4, 5]
    """
    return jax.tree.map(lambda a: a[i], tree)
