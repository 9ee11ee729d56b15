"""Record points, the segment plan of a run, and the outputs (conventions §7).

The driver scans over *segments*: the rounds between two consecutive cut points, where the cut
points are the record points and the chunk boundaries. A segment's records are a scan output,
written once when the segment ends; nothing recorded is carried.
"""
from __future__ import annotations

from typing import List, NamedTuple, Optional, Tuple

import numpy as np

from ..core import validate as V

__all__ = ["record_points", "SimOutput", "SegmentPlan", "segment_plan"]


def record_points(horizon: int, record=None) -> np.ndarray:
    """Static sorted rounds (0-based) at which metrics are written; always contains ``T-1``.

    ``record`` is ``None`` (about 200 evenly spaced points), an int stride ``k`` (``k-1, 2k-1,
    ...``), ``("log", n)`` (``unique(ceil(geomspace(1, T, n))) - 1``) or an explicit array.

    Args:
        horizon: the number of rounds ``T``.
        record: None, a stride ``k >= 1``, ``("log", n)`` with ``n`` in ``[1, 2**20]``, or a 1-d
            integer array of rounds in ``[0, T-1]``.

    Returns:
        i32[R], the sorted record rounds, ``T - 1`` included.

    Raises:
        ValueError: a stride or ``n`` out of range, or rounds outside ``[0, T-1]``.

    Examples:
        >>> from jaxbandits.engine import record_points
        >>> record_points(1000, 250)
        array([249, 499, 749, 999], dtype=int32)
        >>> record_points(1000, ("log", 4))
        array([  0,   9,  99, 999], dtype=int32)
        >>> len(record_points(1000))
        200
    """
    T = horizon
    if record is None:
        record = max(1, T // 200)
    if isinstance(record, (int, np.integer)) and not isinstance(record, bool):
        k = V.integer("record", record, lo=1)
        pts = np.arange(k - 1, T, k)
    elif isinstance(record, tuple) and len(record) == 2 and record[0] == "log":
        n = V.integer("record[1]", record[1], lo=1, hi=2**20)  # bounded: geomspace allocates n points
        pts = np.unique(np.ceil(np.geomspace(1, T, n)).astype(np.int64)) - 1
    else:
        pts = np.asarray(record)
        if pts.ndim != 1 or pts.size == 0 or not np.issubdtype(pts.dtype, np.integer):
            raise ValueError("record must be None, a stride, ('log', n) or a 1-d integer array of rounds")
        if pts.min() < 0 or pts.max() >= T:
            raise ValueError(f"record rounds must lie in [0, {T - 1}]")
    pts = np.union1d(pts, [T - 1]).astype(np.int32)
    return pts


class SegmentPlan(NamedTuple):
    """Segments ``[lo, hi)`` grouped into chunks of equal segment count (padding: empty segments).

    Attributes:
        chunks: per chunk, ``(lo i32[S], hi i32[S])``, the bounds of its segments.
        keep: per chunk, bool[S]: the segment ends at a record point.
        rounds: the rounds of each chunk (the progress bar's).
    """

    chunks: List[Tuple[np.ndarray, np.ndarray]]  # per chunk: (lo i32[S], hi i32[S])
    keep: List[np.ndarray]  # per chunk: bool[S], the segment ends at a record point
    rounds: List[int]  # rounds per chunk (progress bar)


def segment_plan(horizon: int, record_at: np.ndarray, chunk: Optional[int] = None) -> SegmentPlan:
    """Cut ``[0, T)`` at the record points and every ``chunk`` rounds into segments, grouped by
    chunk (module docstring).

    Args:
        horizon: the number of rounds ``T``.
        record_at: the record rounds (:func:`record_points`).
        chunk: the rounds per compiled chunk, an integer ``>= 1`` (None: one chunk).

    Returns:
        The :class:`SegmentPlan`: per chunk the segments' bounds, which end at a record point, and
        its rounds.

    Raises:
        ValueError: ``chunk`` below 1.

    Examples:
        >>> from jaxbandits.engine.recording import record_points, segment_plan
        >>> plan = segment_plan(10, record_points(10, 5), chunk=4)
        >>> plan.rounds
        [4, 4, 2]
        >>> [hi.tolist() for lo, hi in plan.chunks]
        [[4, 4], [5, 8], [10, 10]]
    """
    T = horizon
    ends = set((np.asarray(record_at, np.int64) + 1).tolist()) | {T}
    if chunk is not None and chunk < T:
        chunk = V.integer("chunk", chunk, lo=1)
        cuts = list(range(chunk, T, chunk))
        ends |= set(cuts)
    else:
        cuts = []
    ends = np.array(sorted(ends), np.int64)
    los = np.concatenate([[0], ends[:-1]])
    rec = set((np.asarray(record_at, np.int64) + 1).tolist())
    bounds = cuts + [T]
    groups, start = [], 0
    for b in bounds:
        sel = (ends > start) & (ends <= b)
        groups.append(np.nonzero(sel)[0])
        start = b
    S = max(len(g) for g in groups)
    chunks, keep, rounds = [], [], []
    for g in groups:
        lo, hi = los[g], ends[g]
        pad = S - len(g)
        last = hi[-1]
        lo = np.concatenate([lo, np.full(pad, last)]).astype(np.int32)
        hi_p = np.concatenate([hi, np.full(pad, last)]).astype(np.int32)
        k = np.array([int(h) in rec for h in hi] + [False] * pad)
        chunks.append((lo, hi_p))
        keep.append(k)
        rounds.append(int(hi[-1] - los[g][0]))
    return SegmentPlan(chunks, keep, rounds)


class SimOutput(NamedTuple):
    """What a simulation returns for one policy (numpy arrays; leading axes ``[grid?, runs]``).

    Two forms (docs/simulate.md, "Per-run curves or statistics"): the per-run curves ``regret``,
    ``expected_regret``, ``reward``, ``pulls``, ``delayed_regret`` hold every run (``keep="all"``),
    the first ``N`` runs (``keep=N``) or are ``None`` (``keep="none"``, the reduced form); ``stats``
    (:class:`jaxbandits.engine.stats.Stats`) holds the statistics over all ``runs`` runs, computed on
    the device, in both forms (``None`` for grids: ``simulate_grid`` returns per-run curves).

    Attributes:
        t: the rounds completed at each record point (``record_at + 1``), ``[R]``.
        regret: ``[.., kept runs, R]``, the pseudo-regret (None in the reduced form).
        expected_regret: ``[.., kept runs, R]``, the regret of the policy's expected reward.
        reward: ``[.., kept runs, R]``, the realised cumulative reward.
        pulls: ``[.., kept runs, R, K]``, the plays of every arm.
        lost_to_W: ``[.., runs]``, the records the channel dropped (lag ``>= W``).
        width: the calendar length ``W`` used.
        timing: where the time went: ``compile_s``, ``run_s``, ``run_steps_per_s``, ``devices``, ...
        delayed_regret: ``[.., kept runs, R]``, ``L(t)`` (censoring channels), else None.
        arm_totals: ``[.., runs, R, K]``, ``G(t)`` (adversarial worlds), else None.
        stats: the :class:`~jaxbandits.engine.stats.Stats` over all runs (None for grids).
        runs: the number of runs (None: as many as the curves hold).
    """

    t: np.ndarray  # rounds completed at each record point (record_at + 1)
    regret: Optional[np.ndarray]  # [.., kept runs, R]
    expected_regret: Optional[np.ndarray]  # [.., kept runs, R]
    reward: Optional[np.ndarray]  # [.., kept runs, R]
    pulls: Optional[np.ndarray]  # [.., kept runs, R, K]
    lost_to_W: np.ndarray  # [.., runs]
    width: int
    timing: dict
    delayed_regret: Optional[np.ndarray] = None  # [.., kept runs, R] L(t) (censoring channels), else None
    arm_totals: Optional[np.ndarray] = None  # [.., runs, R, K] G(t) (adversarial worlds), else None
    stats: Optional[object] = None  # Stats over all runs (None for grids)
    runs: Optional[int] = None  # the number of runs (None: as many as the curves hold)

    @property
    def kept(self) -> int:
        """The number of runs whose curves are held (0 in the reduced form)."""
        return 0 if self.regret is None else int(np.shape(self.regret)[-2])

    def final(self, metric: str = "regret") -> np.ndarray:
        """Every run's value of ``metric`` at the last record point, ``[runs]`` (either form)."""
        if self.stats is not None and metric in self.stats.final:
            return self.stats.final[metric]
        return np.asarray(getattr(self, metric))[..., -1]

    @property
    def fixed_regret(self) -> Optional[np.ndarray]:
        """Adversarial worlds: regret against the fixed ``i* = argmax_a G_a(T-1)`` of each run,
        ``G_{i*}(t) - sum_{s<=t} r_s`` (conventions §7; ``regret`` is against the best arm of each
        prefix). ``None`` for stochastic worlds."""
        if self.arm_totals is None:
            return None
        G = self.arm_totals
        best = np.argmax(G[..., -1, :], axis=-1)
        g_star = np.take_along_axis(G, best[..., None, None], axis=-1)[..., 0]
        return g_star - self.reward
