"""The statistics of a simulation's records reduced on the device, and how much of the per-run
records is kept (docs/results.md, "The two forms"): the one implementation both backends use, the
scan path (:mod:`jaxbandits.engine.driver`) and the fused kernels (:mod:`jaxbandits.fused`).
"""
from __future__ import annotations

import collections
import functools
import time
from typing import Any, Tuple

import jax
import numpy as np

from .. import _validate as V
from . import stats as ST

__all__ = ["FINAL_FIELDS", "STAT_FIELD", "stat_metrics", "stat_pairs", "reduce_on_device", "host_stats",
           "host_block_stats", "CHUNK_RECORD_BYTES", "KEEP_BYTES", "resolve_keep", "signature", "CACHE_SIZE",
           "clear_cache", "programs"]

#: compiled reductions kept (least recently used first out); the driver keeps as many programs
CACHE_SIZE = 32


def signature(args):
    """What a compiled program is specialised to: the tree and each leaf's shape and dtype."""
    leaves, tree = jax.tree.flatten(args)
    return tree, tuple((np.shape(a), str(getattr(a, "dtype", type(a)))) for a in leaves)


#: per-run values kept at the last record point: (name, field of Records)
FINAL_FIELDS = (("regret", "regret"), ("expected_regret", "exp_regret"), ("reward", "reward"),
                 ("delayed_regret", "delayed_regret"), ("lost_to_W", "lost"))


def stat_metrics(prob) -> Tuple[str, ...]:
    """The metrics whose statistics a problem's records give."""
    return ("regret", "expected_regret", "reward") + (("delayed_regret",) if prob.dl_mode else ()) + ("pulls",)


STAT_FIELD = {"regret": "regret", "expected_regret": "exp_regret", "reward": "reward",
              "delayed_regret": "delayed_regret", "pulls": "pulls"}


def _reduce_program(labels, pairs, B, recs, valid):
    mom, pair, count = ST.device_stats(recs, {(labels[a], labels[b]): ks for (a, b), ks in pairs}, valid, B)
    # pairs keyed by label indices (a pytree's dict keys must sort)
    return mom, {(a, b): pair[(labels[a], labels[b])] for (a, b), _ in pairs}, count


_REDUCERS: "collections.OrderedDict[Any, Any]" = collections.OrderedDict()


def stat_pairs(labels, mets):
    """The policy pairs ``(i, j)``, ``i < j``, of one simulation and the metrics both record."""
    return tuple(((i, j), tuple(k for k in mets[a] if k in mets[b] and k != "pulls"))
                 for i, a in enumerate(labels) for j, b in enumerate(labels) if i < j)


def reduce_on_device(recs, valid, B, labels, pairs):
    """The block statistics of records ``{label: {metric: [S, runs_pad, ...]}}`` (device arrays) on
    the device, in float64 (compiled under x64): ``((moments, pair moments, count), compile s)``,
    moments ``[S, blocks, ...]``."""
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
    (``chunks``: dicts named as :func:`jaxbandits.engine.loop.run_problems` names them) and the final values."""
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
    first ``n_blocks`` blocks (those holding runs: the padding of the devices adds empty ones)."""
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
    ``n_arms``: the arms of each policy's problem."""
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
    """Forget the compiled reductions."""
    _REDUCERS.clear()


def programs():
    """The compiled reductions now cached (for the compile-time benchmark)."""
    return list(_REDUCERS.values())
