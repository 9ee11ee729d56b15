"""The statistics of a simulation's records reduced on the device, and how much of the per-run
records is kept (docs/results.md, "The two forms"): the one implementation both backends use, the
scan path (:mod:`jaxbandits.engine.loop`) and the fused kernels (:mod:`jaxbandits.engine.fused`).
"""
from __future__ import annotations

import collections
import functools
import time
from typing import Any, Tuple

import jax
import numpy as np

from ..core import validate as V
from . import stats as ST

__all__ = ["FINAL_FIELDS", "STAT_FIELD", "stat_metrics", "stat_pairs", "reduce_on_device", "host_stats",
           "host_block_stats", "CHUNK_RECORD_BYTES", "KEEP_BYTES", "resolve_keep", "signature", "CACHE_SIZE",
           "clear_cache", "programs"]

#: compiled reductions kept (least recently used first out); the compile cache
#: (:mod:`jaxbandits.engine.programs`) keeps as many programs
CACHE_SIZE = 32


def signature(args):
    """What a compiled program is specialised to: the tree and each leaf's shape and dtype (the
    key of the compiled-program caches, with the program's name and static arguments).

    Args:
        args: the program's arguments, a pytree of arrays.

    Returns:
        ``(treedef, ((shape, dtype name), ...))``, hashable.

    Example:
        >>> import numpy as np
        >>> from jaxbandits.engine.reduce import signature
        >>> signature({"x": np.zeros((2, 3), np.float32)})[1]
        (((2, 3), 'float32'),)
    """
    leaves, tree = jax.tree.flatten(args)
    return tree, tuple((np.shape(a), str(getattr(a, "dtype", type(a)))) for a in leaves)


#: per-run values kept at the last record point: (name, field of Records)
FINAL_FIELDS = (("regret", "regret"), ("expected_regret", "exp_regret"), ("reward", "reward"),
                 ("delayed_regret", "delayed_regret"), ("lost_to_W", "lost"))


def stat_metrics(prob) -> Tuple[str, ...]:
    """The metrics whose statistics a problem's records give.

    Args:
        prob: a :class:`~jaxbandits.engine.round.Problem`.

    Returns:
        The metric names: regret, expected regret, reward, ``delayed_regret`` when the problem
        tracks ``L(t)``, and pulls.

    Example:
        >>> from jaxbandits import channels, engine, envs
        >>> from jaxbandits.engine.reduce import stat_metrics
        >>> from jaxbandits.policies import classic
        >>> prob = engine.problem(envs.bernoulli([0.3, 0.6]), channels.attributed(), classic.ucb1(), 100)
        >>> stat_metrics(prob)
        ('regret', 'expected_regret', 'reward', 'pulls')
    """
    return ("regret", "expected_regret", "reward") + (("delayed_regret",) if prob.dl_mode else ()) + ("pulls",)


STAT_FIELD = {"regret": "regret", "expected_regret": "exp_regret", "reward": "reward",
              "delayed_regret": "delayed_regret", "pulls": "pulls"}


def _reduce_program(labels, pairs, B, recs, valid):
    mom, pair, count = ST.device_stats(recs, {(labels[a], labels[b]): ks for (a, b), ks in pairs}, valid, B)
    # pairs keyed by label indices (a pytree's dict keys must sort)
    return mom, {(a, b): pair[(labels[a], labels[b])] for (a, b), _ in pairs}, count


_REDUCERS: "collections.OrderedDict[Any, Any]" = collections.OrderedDict()


def stat_pairs(labels, mets):
    """The policy pairs ``(i, j)``, ``i < j``, of one simulation and the metrics both record
    (``pulls`` left out: a paired difference of pull counts is not reported).

    Args:
        labels: the policies' labels, in order.
        mets: ``{label: metric names}`` (:func:`stat_metrics`).

    Returns:
        ``(((i, j), (metric, ...)), ...)``, hashable.

    Example:
        >>> from jaxbandits.engine.reduce import stat_pairs
        >>> stat_pairs(["a", "b", "c"], {"a": ("regret", "pulls"), "b": ("regret", "reward", "pulls"),
        ...                              "c": ("reward",)})
        (((0, 1), ('regret',)), ((0, 2), ()), ((1, 2), ('reward',)))
    """
    return tuple(((i, j), tuple(k for k in mets[a] if k in mets[b] and k != "pulls"))
                 for i, a in enumerate(labels) for j, b in enumerate(labels) if i < j)


def reduce_on_device(recs, valid, B, labels, pairs):
    """The block statistics of records ``{label: {metric: [S, runs_pad, ...]}}`` (device arrays) on
    the device, in float64 (compiled under x64, once per shape: the program is cached).

    Args:
        recs: ``{label: {metric: [S, runs_pad, ...]}}``, a chunk's records on the device.
        valid: bool ``[runs_pad]``, False for padded runs.
        B: the block size (:func:`~jaxbandits.engine.stats.block_size`); ``runs_pad`` is a
            multiple of it.
        labels: the policies' labels, in order.
        pairs: the policy pairs and their shared metrics (:func:`stat_pairs`).

    Returns:
        ``((moments, pair moments, count), compile seconds)``: the sums of
        :func:`~jaxbandits.engine.stats.device_stats`, leading axes ``[S, blocks]``, pairs keyed by
        label indices; 0.0 seconds when the program was cached.

    Example:
        >>> import jax.numpy as jnp
        >>> from jaxbandits.engine.reduce import reduce_on_device
        >>> recs = {"a": {"regret": jnp.arange(8.0)[None]}}
        >>> (mom, pair, count), _ = reduce_on_device(recs, jnp.ones(8, bool), 4, ["a"], ())  # doctest: +SKIP
        >>> count.tolist()  # doctest: +SKIP
        [4.0, 4.0]
    """
    key = (tuple(labels), pairs, B, signature((recs, valid)))
    dt = 0.0
    with jax.enable_x64(True):
        exe = _REDUCERS.get(key)
        if exe is None:
            t0 = time.perf_counter()
            exe = jax.jit(functools.partial(_reduce_program, tuple(labels), pairs, B)).lower(recs, valid).compile()
            dt = time.perf_counter() - t0
            _REDUCERS[key] = exe
            while len(_REDUCERS) > CACHE_SIZE:
                _REDUCERS.popitem(last=False)
        out = exe(recs, valid)
    return out, dt


def host_stats(labels, mets, pairs, B, chunks, final):
    """``{label: Stats}`` from the host block statistics of consecutive pieces of the record points
    (``chunks``: dicts named as :func:`jaxbandits.engine.loop.run_problems` names them) and the
    final values.

    Args:
        labels: the policies' labels, in order.
        mets: ``{label: metric names}`` (:func:`stat_metrics`).
        pairs: the policy pairs and their shared metrics (:func:`stat_pairs`).
        B: the block size.
        chunks: per piece of the record points, its named host arrays (:func:`host_block_stats`:
            ``count``, ``m/{j}/{metric}/mean`` and ``/m2``, ``p/{a}/{b}/{metric}/...``).
        final: the named final values, ``f/{j}/{metric}``: ``[runs]`` (those absent are left out).

    Returns:
        ``{label: Stats}`` (:class:`~jaxbandits.engine.stats.Stats`), moments ``[blocks, R, ...]``.

    Example:
        >>> import numpy as np
        >>> from jaxbandits.engine.reduce import host_stats
        >>> piece = {"count": np.array([4.0, 4.0]), "m/0/regret/mean": np.array([[1.5, 5.5]]),
        ...          "m/0/regret/m2": np.array([[5.0, 5.0]])}
        >>> st = host_stats(["a"], {"a": ("regret",)}, (), 4, [piece], {"f/0/regret": np.arange(8.0)})["a"]
        >>> mean, m2 = st.moments["regret"]
        >>> st.n, mean.tolist(), list(st.final)
        (8, [[1.5], [5.5]], ['regret'])
    """
    stats = {}
    for j, lab in enumerate(labels):
        cat = lambda name: np.moveaxis(np.concatenate([h[name] for h in chunks], axis=0), 0, 1)  # [nb, R, ...]
        mom = {k: (cat(f"m/{j}/{k}/mean"), cat(f"m/{j}/{k}/m2")) for k in mets[lab]}
        paired = {}
        for (a, b), ks in pairs:
            if j in (a, b):
                other, sign = (labels[b], 1.0) if j == a else (labels[a], -1.0)
                # self - other: the pair's (a - b) moments, the mean negated for b (exactly)
                paired[other] = {k: (sign * cat(f"p/{a}/{b}/{k}/mean"), cat(f"p/{a}/{b}/{k}/m2")) for k in ks}
        fin = {k: final[f"f/{j}/{k}"] for k, _ in FINAL_FIELDS if f"f/{j}/{k}" in final}
        stats[lab] = ST.Stats(B, chunks[-1]["count"], mom, paired, fin)
    return stats


def host_block_stats(red, sel, labels, n_blocks):
    """The named host arrays of one piece's reduced statistics, the segments ``sel`` kept and the
    first ``n_blocks`` blocks (those holding runs: the padding of the devices adds empty ones).

    Args:
        red: ``(moments, pair moments, count)`` as :func:`reduce_on_device` gives them (device or
            host arrays), sums ``(shift, s1, s2)`` with leading axes ``[S, blocks]``.
        sel: the indices of the segments kept (those ending at a record point).
        labels: the policies' labels, in order.
        n_blocks: the blocks that hold runs.

    Returns:
        ``{name: numpy array}``: ``count`` ``[blocks]`` and each block's ``mean`` and ``m2``
        (float64, ``[R, blocks, ...]``) as ``m/{j}/{metric}/...`` and ``p/{a}/{b}/{metric}/...``.

    Example:
        >>> import numpy as np
        >>> from jaxbandits.engine.reduce import host_block_stats
        >>> sums = (np.array([[0.0, 4.0]]), np.array([[6.0, 6.0]]), np.array([[14.0, 14.0]]))
        >>> host = host_block_stats(({"a": {"regret": sums}}, {}, np.array([4.0, 4.0])), np.array([0]), ["a"], 2)
        >>> host["m/0/regret/mean"].tolist(), host["m/0/regret/m2"].tolist()
        ([[1.5, 5.5]], [[5.0, 5.0]])
    """
    mom, pm, cnt = red
    cnt = np.asarray(cnt)[:n_blocks]
    host = {"count": cnt}
    cut = lambda a: np.moveaxis(np.asarray(a)[sel][:, :n_blocks], 1, 0)  # [nb, S, ...]

    def put(name, sums):
        m, m2 = ST.host_moments(cnt, *map(cut, sums))
        host[f"{name}/mean"], host[f"{name}/m2"] = np.moveaxis(m, 0, 1), np.moveaxis(m2, 0, 1)

    for j, lab in enumerate(labels):
        for k, sums in mom[lab].items():
            put(f"m/{j}/{k}", sums)
    for (a, b), d in pm.items():
        for k, sums in d.items():
            put(f"p/{a}/{b}/{k}", sums)
    return host


#: the reduced form without a ``chunk``: chunks whose records take about this many device bytes
CHUNK_RECORD_BYTES = 256 * 2**20



#: the default rule (``keep=None``): every run's curves while they take at most this many bytes on
#: the host (all policies together), the reduced form beyond (docs/simulate.md)
KEEP_BYTES = 64 * 2**20


def resolve_keep(keep, n_arms, n_runs, n_rec, adversarial=False) -> int:
    """How many runs' curves a simulation keeps: ``"all"`` (or ``True``) every run, ``"none"`` (or
    ``False``, 0) none, an int ``N`` the first ``N``; ``None`` (default) every run while the
    per-run curves of all policies take at most :data:`KEEP_BYTES`, none beyond. Adversarial
    worlds keep every run's curves (the regret against the fixed best arm of a run needs them).

    Args:
        keep: ``"all"``, ``"none"``, ``True``, ``False``, a number of runs ``>= 0``, or None.
        n_arms: the arms of each policy's problem.
        n_runs: the runs of the simulation.
        n_rec: the number of record points.
        adversarial: the world is adversarial (every run's curves are kept).

    Returns:
        The number of runs whose curves are kept, in ``[0, n_runs]``.

    Raises:
        ValueError: ``keep`` of another value or type, or negative.

    Example:
        >>> from jaxbandits.engine.reduce import resolve_keep
        >>> resolve_keep(None, [2], 100, 200), resolve_keep(None, [2], 10**6, 200), resolve_keep(5, [2], 100, 200)
        (100, 0, 5)
    """
    if adversarial:
        return int(n_runs)
    if keep is None:
        per_run = sum(4 * n_rec * (4 + int(k)) for k in n_arms)
        return int(n_runs) if per_run * n_runs <= KEEP_BYTES else 0
    if keep is True or keep == "all":
        return int(n_runs)
    if keep is False or keep == "none":
        return 0
    if isinstance(keep, (int, np.integer)) and not isinstance(keep, bool):
        return min(V.integer("keep", keep, lo=0), int(n_runs))
    raise ValueError(f"keep must be 'all', 'none', a number of runs >= 0 or None (the default rule), got {keep!r}")


def clear_cache():
    """Forget the compiled reductions (:func:`jaxbandits.engine.clear_cache` forgets them with the
    simulation programs).

    Returns:
        None.

    Example:
        >>> from jaxbandits.engine import reduce
        >>> reduce.clear_cache()
        >>> reduce.programs()
        []
    """
    _REDUCERS.clear()


def programs():
    """The compiled reductions now cached (for the compile-time benchmark).

    Returns:
        A list of compiled executables, least recently used first.

    Example:
        >>> from jaxbandits.engine import reduce
        >>> isinstance(reduce.programs(), list)
        True
    """
    return list(_REDUCERS.values())
