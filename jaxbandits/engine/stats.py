"""Statistics over runs, reduced on the device where the runs are (docs/results.md, "The two forms").

Runs are cut into fixed **blocks of global run ids**: block ``j`` holds runs
``[j B, (j + 1) B)`` with ``B = block_size(total runs)``, a power of two that depends only on the
total number of runs of the experiment (so every part, device, process and chunk sees the same
blocks). Within a block, on the device, in float64:

* the sum of the block's values is an explicit pairwise tree of elementwise adds over the block
  padded to ``B`` (padded runs masked to zero): elementwise adds are bitwise deterministic whatever
  the batch shape and the device count, where XLA's own reductions may reorder;
* the sums are of the deviations from the block's first run and of their squares; the host
  divides (``mean = shift + s1 / n``, ``M2 = s2 - s1^2 / n``: :func:`host_moments`), since
  XLA:CPU's division is approximate and its fused multiply-adds depend on the batch shape.

The block statistics (``count [blocks]``, ``mean`` and ``M2`` ``[blocks, ...]``) go to the host
(kilobytes to megabytes) and are combined there in float64, **in block order**, by Chan et al.'s
pairwise update (Chan, Golub & LeVeque 1979)::

    n = na + nb;  d = mb - ma;  mean = ma + d nb / n;  M2 = M2a + M2b + d^2 na nb / n

A whole run, its parts merged, its chunks resumed, any number of devices or processes hold the
same blocks, each computed from the same per-run values by the same elementwise operations, and
combine them in the same order: the statistics are bitwise the same.
"""
from __future__ import annotations

import math
from typing import Dict, NamedTuple, Optional, Tuple

import jax
import jax.numpy as jnp
import numpy as np

__all__ = ["block_size", "block_moments", "host_moments", "combine", "Stats", "MAX_BLOCKS", "nbytes", "device_stats"]

#: about this many blocks at most, whatever the number of runs (the block statistics sent to the
#: host are then ``MAX_BLOCKS x record points`` per statistic: 100 kB in float64 at 200 points)
MAX_BLOCKS = 64


def block_size(total_runs: int) -> int:
    """``B``: the power of two ``>= total_runs / MAX_BLOCKS`` (1 up to 64 runs, 16 at 1001 runs, 2048
    at 1e5, 16384 at 1e6). A function of the experiment's total run count only.

    Args:
        total_runs: the experiment's total number of runs (every part together).

    Returns:
        ``B``, a power of two.

    Examples:
        >>> from jaxbandits.engine.stats import block_size
        >>> block_size(64), block_size(1001), block_size(10**6)
        (1, 16, 16384)
    """
    return 1 << max(0, math.ceil(math.log2(max(1, -(-int(total_runs) // MAX_BLOCKS)))))


def _tree_sum(x):
    """Sum over axis 1 (a power of two long) by a fixed pairwise tree of elementwise adds."""
    while x.shape[1] > 1:
        h = x.shape[1] // 2
        x = x[:, :h] + x[:, h:]
    return x[:, 0]


def block_moments(x, valid, B: int):
    """``(count [nb], shift [nb, ...], s1 [nb, ...], s2 [nb, ...])`` in float64 of ``x``
    ``[nb * B, ...]`` by blocks of ``B`` consecutive runs; ``valid`` (bool ``[nb * B]``) masks
    padded runs. ``shift`` is the block's first run's value, ``s1 = sum (x - shift)``,
    ``s2 = sum (x - shift)^2`` over the valid runs (:func:`host_moments` turns them into the
    block's mean and second central moment on the host). Call under ``jax.enable_x64(True)``.

    Only subtractions, products, selections and adds: XLA:CPU divides approximately and
    contracts a product and an add into one fused multiply-add where it vectorises, which gives
    other bits for other batch shapes; so the division is the host's, and no product feeds an add
    directly (a selection lies between them).

    Args:
        x: ``[nb * B, ...]``, one value per run (any float dtype; summed in float64).
        valid: bool ``[nb * B]``, False for padded runs.
        B: the block size (:func:`block_size`), a power of two.

    Returns:
        ``(count, shift, s1, s2)``: float64 ``[nb]`` and ``[nb, ...]``.

    Examples:
        >>> import jax, jax.numpy as jnp
        >>> from jaxbandits.engine.stats import block_moments
        >>> with jax.enable_x64(True):
        ...     cnt, shift, s1, s2 = block_moments(jnp.arange(8.0), jnp.ones(8, bool), 4)
        >>> cnt.tolist(), shift.tolist(), s1.tolist(), s2.tolist()
        ([4.0, 4.0], [0.0, 4.0], [6.0, 6.0], [14.0, 14.0])
    """
    n = x.shape[0]
    nb = n // B
    x = jnp.asarray(x).astype(jnp.float64).reshape((nb, B) + x.shape[1:])
    v = valid.reshape((nb, B) + (1,) * (x.ndim - 2))
    cnt = _tree_sum(jnp.where(valid.reshape(nb, B), 1.0, 0.0))
    shift = x[:, 0]
    d = jnp.where(v, x - shift[:, None], 0.0)
    s1 = _tree_sum(d)
    s2 = _tree_sum(jnp.where(v, d * d, 0.0))
    return cnt, shift, s1, s2


def host_moments(cnt, shift, s1, s2):
    """``(mean, m2)`` of each block, float64 on the host, from :func:`block_moments`' sums about
    the block's shift: ``mean = shift + s1 / n``, ``m2 = s2 - s1^2 / n`` (about a value of the
    block itself, so little cancels).

    Args:
        cnt: ``[nb]``, the valid runs of each block.
        shift: ``[nb, ...]``, each block's first value.
        s1: ``[nb, ...]``, the sums of the deviations from ``shift``.
        s2: ``[nb, ...]``, the sums of their squares.

    Returns:
        ``(mean, m2)``, float64 ``[nb, ...]`` (zero for an empty block).

    Examples:
        >>> from jaxbandits.engine.stats import host_moments
        >>> host_moments([4, 4], [0.0, 4.0], [6.0, 6.0], [14.0, 14.0])
        (array([1.5, 5.5]), array([5., 5.]))
    """
    c = np.asarray(cnt, np.float64).reshape((-1,) + (1,) * (np.ndim(s1) - 1))
    s1 = np.asarray(s1, np.float64)
    safe = np.where(c > 0, c, 1.0)
    mean = np.where(c > 0, np.asarray(shift, np.float64) + s1 / safe, 0.0)
    m2 = np.where(c > 0, np.maximum(np.asarray(s2, np.float64) - s1 * s1 / safe, 0.0), 0.0)
    return mean, m2


def combine(count, mean, m2) -> Tuple[int, np.ndarray, np.ndarray]:
    """Chan et al.'s pairwise update over the blocks, in block order, in float64 on the host:
    ``(n, mean, m2)`` of all runs from per-block ``count [nb]``, ``mean`` and ``m2`` ``[nb, ...]``.
    Empty blocks (padding) are skipped.

    Args:
        count: ``[nb]``, the runs of each block.
        mean: ``[nb, ...]``, each block's mean (:func:`host_moments`).
        m2: ``[nb, ...]``, each block's sum of squared deviations from its mean.

    Returns:
        ``(n, mean, m2)`` of all runs: an int and float64 arrays ``[...]``.

    Examples:
        >>> import numpy as np
        >>> from jaxbandits.engine.stats import combine
        >>> n, mean, m2 = combine([4, 4], np.array([1.5, 5.5]), np.array([5.0, 5.0]))  # runs 0 .. 7
        >>> n, float(mean), float(m2)
        (8, 3.5, 42.0)
    """
    count = np.asarray(count, np.float64)
    mean, m2 = np.asarray(mean, np.float64), np.asarray(m2, np.float64)
    n, m, M = 0.0, np.zeros(mean.shape[1:]), np.zeros(mean.shape[1:])
    for j in range(count.shape[0]):
        nb = count[j]
        if nb == 0:
            continue
        if n == 0:
            n, m, M = nb, mean[j].copy(), m2[j].copy()
            continue
        tot = n + nb
        d = mean[j] - m
        m = m + d * (nb / tot)
        M = M + m2[j] + d * d * (n * nb / tot)
        n = tot
    return int(n), m, M


class Stats(NamedTuple):
    """Statistics over the runs of one policy (numpy, host): the block statistics of every metric
    at every record point, the moments of the paired differences with the other policies of the
    same simulation, and each run's final values.

    ``moments[metric] = (mean, m2)``, each ``[blocks, R, ...]`` (``pulls``: ``[blocks, R, K]``);
    ``paired[other][metric] = (mean, m2)`` of ``self - other`` per run; ``final[metric]``: ``[runs]``
    per-run values at the last record point (float32 as recorded; ``lost_to_W`` int32).

    Attributes:
        block: the block size ``B`` (:func:`block_size`).
        count: f64 ``[blocks]``, the runs of each block.
        moments: ``{metric: (mean, m2)}``, each ``[blocks, R, ...]``.
        paired: ``{other: {metric: (mean, m2)}}`` of ``self - other`` per run.
        final: ``{metric: [runs]}``, each run's value at the last record point.
    """

    block: int
    count: np.ndarray  # f64 [blocks]
    moments: Dict[str, Tuple[np.ndarray, np.ndarray]]
    paired: Dict[str, Dict[str, Tuple[np.ndarray, np.ndarray]]]
    final: Dict[str, np.ndarray]

    @property
    def n(self) -> int:
        return int(np.sum(self.count))

    def metrics(self):
        return [k for k in self.moments if k != "pulls"]

    def combined(self, metric: str, other: Optional[str] = None) -> Tuple[int, np.ndarray, np.ndarray]:
        """``(n, mean, m2)`` over all runs of ``metric`` (of the difference ``self - other`` when
        ``other`` is a policy label)."""
        mm = self.moments[metric] if other is None else self.paired[other][metric]
        return combine(self.count, *mm)

    def mean_se(self, metric: str):
        """Mean and standard error (``ddof=1``; zero for one run) at every record point, float64."""
        n, m, M = self.combined(metric)
        se = np.sqrt(M / (n - 1)) / np.sqrt(n) if n > 1 else np.zeros(m.shape)
        return m, se

    # -- (de)serialisation: a flat {name: array} for .npz files ----------------------------------
    def to_flat(self, prefix: str = "") -> Dict[str, np.ndarray]:
        out = {f"{prefix}block": np.asarray(self.block, np.int64), f"{prefix}count": np.asarray(self.count)}
        for k, (a, b) in self.moments.items():
            out[f"{prefix}mom/{k}/mean"], out[f"{prefix}mom/{k}/m2"] = np.asarray(a), np.asarray(b)
        for o, d in self.paired.items():
            for k, (a, b) in d.items():
                out[f"{prefix}pair/{o}/{k}/mean"], out[f"{prefix}pair/{o}/{k}/m2"] = np.asarray(a), np.asarray(b)
        for k, v in self.final.items():
            out[f"{prefix}final/{k}"] = np.asarray(v)
        return out

    @classmethod
    def from_flat(cls, flat: Dict[str, np.ndarray], prefix: str = "") -> "Stats":
        mom, pair, fin = {}, {}, {}
        for name, a in flat.items():
            if not name.startswith(prefix):
                continue
            parts = name[len(prefix):].split("/")
            if parts[0] == "mom":
                mom.setdefault(parts[1], {})[parts[2]] = a
            elif parts[0] == "pair":
                other, k, which = "/".join(parts[1:-2]), parts[-2], parts[-1]
                pair.setdefault(other, {}).setdefault(k, {})[which] = a
            elif parts[0] == "final":
                fin["/".join(parts[1:])] = a
        return cls(int(flat[f"{prefix}block"]), np.asarray(flat[f"{prefix}count"]),
                   {k: (v["mean"], v["m2"]) for k, v in mom.items()},
                   {o: {k: (v["mean"], v["m2"]) for k, v in d.items()} for o, d in pair.items()}, fin)

    @staticmethod
    def concat(parts) -> "Stats":
        """The statistics of consecutive block-aligned parts of one run, in run order: their blocks
        and final values concatenated (what a run done whole holds)."""
        p0 = parts[0]
        cat = lambda xs, ax: np.concatenate(xs, axis=ax)
        return Stats(p0.block, cat([p.count for p in parts], 0),
                     {k: (cat([p.moments[k][0] for p in parts], 0), cat([p.moments[k][1] for p in parts], 0))
                      for k in p0.moments},
                     {o: {k: (cat([p.paired[o][k][0] for p in parts], 0), cat([p.paired[o][k][1] for p in parts], 0))
                          for k in d} for o, d in p0.paired.items()},
                     {k: cat([p.final[k] for p in parts], 0) for k in p0.final})


def nbytes(tree) -> int:
    """Bytes of the numpy arrays of ``tree`` (a SimOutput, Stats, dict ...).

    Args:
        tree: nested tuples, lists, dicts and numpy arrays; an array reached twice counts once.

    Returns:
        The total ``nbytes`` of its distinct numpy arrays.

    Examples:
        >>> import numpy as np
        >>> from jaxbandits.engine.stats import nbytes
        >>> a = np.zeros(3)
        >>> nbytes({"a": a, "b": (a, np.zeros(2, np.int32))})
        32
    """
    total = 0
    seen = set()

    def walk(v):
        nonlocal total
        if isinstance(v, np.ndarray):
            if id(v) not in seen:
                seen.add(id(v))
                total += v.nbytes
        elif isinstance(v, dict):
            for x in v.values():
                walk(x)
        elif isinstance(v, (tuple, list)):
            for x in v:
                walk(x)

    walk(tree)
    return total


def device_stats(records: dict, pairs_of: dict, valid, B: int):
    """The block statistics of one chunk on the device (jitted under x64 by the caller).

    ``records``: ``{label: {metric: array [S, runs_pad, ...]}}``; ``pairs_of``: ``{(a, b): [metrics]}``
    the policy pairs and the metrics they share; ``valid`` bool ``[runs_pad]``. Returns
    ``({label: {metric: (shift, s1, s2)}}, {(a, b): {metric: (shift, s1, s2)}}, count)`` with
    leading axes ``[S, blocks]`` (:func:`block_moments`).

    Args:
        records: ``{label: {metric: [S, runs_pad, ...]}}``, a chunk's records.
        pairs_of: ``{(a, b): [metrics]}``, the policy pairs and the metrics they share.
        valid: bool ``[runs_pad]``, False for padded runs.
        B: the block size (:func:`block_size`); ``runs_pad`` is a multiple of it.

    Returns:
        ``(moments, pair moments, count)``: ``{label: {metric: (shift, s1, s2)}}``,
        ``{(a, b): {metric: (shift, s1, s2)}}`` and ``count [blocks]``.

    Examples:
        >>> import jax, jax.numpy as jnp
        >>> from jaxbandits.engine.stats import device_stats
        >>> recs = {"a": {"regret": jnp.arange(8.0)[None]}, "b": {"regret": jnp.zeros((1, 8))}}
        >>> with jax.enable_x64(True):  # doctest: +SKIP
        ...     mom, pair, count = device_stats(recs, {("a", "b"): ["regret"]}, jnp.ones(8, bool), 4)
        >>> count.tolist(), pair[("a", "b")]["regret"][1].tolist()  # doctest: +SKIP
        ([4.0, 4.0], [[6.0, 6.0]])
    """
    def per_seg(x):  # [S, runs, ...] -> sums [S, nb, ...]
        f = lambda xs: block_moments(xs, valid, B)
        cnt, sh, s1, s2 = jax.vmap(f)(x)
        return cnt[0], (sh, s1, s2)

    mom, pair, count = {}, {}, None
    for lab, d in records.items():
        mom[lab] = {}
        for k, x in d.items():
            count, mom[lab][k] = per_seg(x)
    for (a, b), ks in pairs_of.items():
        pair[(a, b)] = {}
        for k in ks:
            x = records[a][k].astype(jnp.float64) - records[b][k].astype(jnp.float64)
            _, pair[(a, b)][k] = per_seg(x)
    return mom, pair, count
