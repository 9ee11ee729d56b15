"""Logged decisions for off-policy evaluation (docs/ope.md): one row per decision with its time,
its arm, the logging policy's probability of that arm (its *propensity*), optionally the logging
policy's probabilities of every arm, and the time of its conversion (NaN: none seen) and the time
the log was read (its end).

Sources: arrays (:func:`decision_log`), a CSV or Parquet file or a pandas DataFrame with the columns
of :func:`jaxbandits.bayes.load_log` plus ``propensity`` (:func:`load`; its rows, times, arms and
errors are ``load_log``'s), or the SQLite database of ``jaxbandits serve`` (:func:`read_serve_db`).
"""
from __future__ import annotations

import dataclasses
import json
import os
from typing import Optional

import numpy as np

__all__ = ["DecisionLog", "decision_log", "load", "read_serve_db", "PROPENSITY_COLUMN"]

PROPENSITY_COLUMN = "propensity"


@dataclasses.dataclass(frozen=True)
class DecisionLog:
    """A log of decisions (numpy arrays, one row per decision).

    Attributes:
        arm: i64[N], arm index 0..K-1.
        time: f64[N], decision time.
        propensity: f64[N], the logging policy's probability of the chosen arm, in (0, 1].
        conversion_time: f64[N], NaN: no conversion seen.
        end: f64[N], when the row was read (the log's end): conversions after it are not seen.
        n_arms: the number of arms ``K``.
        arm_labels: the label of each arm index.
        probs: f64[N, K], the logging policy's law of each decision, when known.
        propensity_samples: Monte Carlo sample size of Monte Carlo propensities (0: exact; None: not
            stated).
        time_unit: the unit of the times when they came from timestamps.
        context: f32[N, d], or f32[N, K, d]: what each decision saw, for targets that depend on it
            (a callable target, or a contextual policy in replay).
    """

    arm: np.ndarray  # i64[N] arm index 0..K-1
    time: np.ndarray  # f64[N] decision time
    propensity: np.ndarray  # f64[N] the logging policy's probability of the chosen arm, in (0, 1]
    conversion_time: np.ndarray  # f64[N], NaN: no conversion seen
    end: np.ndarray  # f64[N] when the row was read (the log's end): conversions after it are not seen
    n_arms: int
    arm_labels: tuple
    probs: Optional[np.ndarray] = None  # f64[N, K] the logging policy's law of each decision, when known
    #: Monte Carlo sample size of Monte Carlo propensities (0: exact; None: not stated)
    propensity_samples: Optional[int] = None
    time_unit: Optional[str] = None
    #: f32[N, d] or f32[N, K, d] (per-arm features, as the linear worlds' contexts): what the
    #: decision saw, for targets that depend on it (a callable target, or a contextual policy in replay)
    context: Optional[np.ndarray] = None

    def __len__(self):
        return int(self.arm.shape[0])

    def age(self):
        """``end - time`` (how long each decision's conversion could be observed)."""
        return self.end - self.time

    def observed(self, window=None):
        """``bool[N]``: a conversion seen by the end (and, with ``window``, within ``window`` of its decision)."""
        d = self.conversion_time - self.time
        y = ~np.isnan(self.conversion_time) & (self.conversion_time <= self.end)
        if window is not None:
            y &= d <= window
        return y

    def label(self, k) -> str:
        return repr(self.arm_labels[int(k)])


def decision_log(arm, time, propensity, conversion_time, end, *, n_arms=None, arms=None, probs=None,
                 propensity_samples=None, context=None) -> DecisionLog:
    """Validate a decision log given as arrays.

    ``arm``/``time``/``conversion_time``/``end`` (and ``n_arms``, ``arms``) are as in
    :func:`jaxbandits.bayes.conversion_log`, whose checks and errors they get.

    Args:
        arm: the arm of each decision (integer indices or labels).
        time: f[N], each decision's time.
        propensity: f[N], the logging policy's probability of the chosen arm, each in ``(0, 1]``.
        conversion_time: f[N], when the conversion was seen (NaN: none seen).
        end: when the log was read (a number, or one per row).
        n_arms: declares integer arm indices ``0..n_arms-1``.
        arms: the list of arm labels, in index order.
        probs: f[N, K] (optional), the logging law of each decision (rows summing to 1,
            ``probs[i, arm[i]] == propensity[i]``).
        propensity_samples: the Monte Carlo sample size behind the propensities (0: exact).
        context: f[N, d] or f[N, K, d], what each decision saw.

    Returns:
        The :class:`DecisionLog`.

    Raises:
        ValueError: naming the row and column: a propensity outside ``(0, 1]``, a shape mismatch,
            a conversion before its decision, a non-finite time or context.

    Examples:
        >>> from jaxbandits import ope
        >>> nan = float("nan")
        >>> log = ope.decision_log(arm=[0, 1, 1, 0], time=[0, 1, 2, 3], propensity=[0.5] * 4,
        ...                        conversion_time=[nan, 3, nan, nan], end=10)
        >>> len(log), log.n_arms, log.age().tolist()
        (4, 2, [10.0, 9.0, 8.0, 7.0])
    """
    from ..delaymodels.logs import conversion_log

    log = conversion_log(arm, time, conversion_time, end, n_arms=n_arms, arms=arms)
    out = _with_propensity(log, propensity, probs, propensity_samples, lambda i: f"row {i}", PROPENSITY_COLUMN)
    if context is not None:
        c = np.asarray(context, np.float32)
        if c.ndim not in (2, 3) or c.shape[0] != len(out) or (c.ndim == 3 and c.shape[1] != out.n_arms):
            raise ValueError(f"context must have shape ({len(out)}, d) or ({len(out)}, {out.n_arms}, d), got {c.shape}")
        if not np.isfinite(c).all():
            i = int(np.argwhere(~np.isfinite(c))[0][0])
            raise ValueError(f"row {i}: context must be finite")
        out = dataclasses.replace(out, context=c)
    return out


def _with_propensity(log, propensity, probs, samples, name_row, col) -> DecisionLog:
    N = len(log)
    p = np.asarray(propensity, np.float64)
    if p.shape != (N,):
        raise ValueError(f"propensity must have shape ({N},) like arm, got {p.shape}")
    bad = ~np.isfinite(p) | (p <= 0) | (p > 1)
    if bad.any():
        i = int(np.argmax(bad))
        more = int(bad.sum()) - 1
        raise ValueError(f"{name_row(i)}, column {col!r}: the logging propensity of arm {log.arm_labels[log.arm[i]]!r} "
                         f"must lie in (0, 1], got {float(p[i])!r}" + (f" (and {more} more row(s))" if more else "")
                         + ": a decision its policy gave probability 0 cannot be weighted (off-policy estimates "
                           "need every logged decision's probability)")
    q = None
    if probs is not None:
        q = np.asarray(probs, np.float64)
        if q.shape != (N, log.n_arms):
            raise ValueError(f"probs must have shape ({N}, {log.n_arms}), got {q.shape}")
        if not np.isfinite(q).all() or (q < 0).any() or np.abs(q.sum(1) - 1).max() > 1e-4:
            raise ValueError("probs: each row must be a probability vector (finite, >= 0, summing to 1)")
        off = np.abs(q[np.arange(N), log.arm] - p) > 1e-6
        if off.any():
            i = int(np.argmax(off))
            raise ValueError(f"{name_row(i)}: probs[arm] = {q[i, log.arm[i]]} differs from the propensity {p[i]}")
    return DecisionLog(log.arm, log.play_time, p, log.conversion_time, log.cutoff, log.n_arms, tuple(log.arm_labels),
                       q, samples, log.time_unit)


def load(source, *, end=None, time_unit=None, origin=None, arms=None, n_arms=None, columns=None) -> DecisionLog:
    """A decision log from a file, a DataFrame, or the database of ``jaxbandits serve``.

    A CSV/Parquet file or a DataFrame with the columns of :func:`jaxbandits.bayes.load_log`
    (``arm``, ``play_time``, ``conversion_time``, ``cutoff``; or ``end=`` for the cutoff) and
    ``propensity``; or the SQLite database of ``jaxbandits serve`` (a path ending ``.db``,
    ``.sqlite`` or ``.sqlite3``, read by :func:`read_serve_db`).

    Args:
        source: a path or a pandas DataFrame.
        end: the cutoff for every row, instead of a ``cutoff`` column.
        time_unit: the unit of date-time columns (see :func:`jaxbandits.bayes.load_log`).
        origin: the time origin of date-time columns.
        arms: the arm labels, in index order.
        n_arms: declares integer arm indices.
        columns: renames, as in ``load_log`` (``propensity`` may be renamed too).

    Returns:
        The :class:`DecisionLog`.

    Raises:
        ValueError: a missing column or a bad row (named).

    Examples:
        >>> import pandas as pd
        >>> from jaxbandits import ope
        >>> df = pd.DataFrame({"arm": ["a", "b"], "play_time": [0.0, 1.0], "conversion_time": [2.0, None],
        ...                    "propensity": [0.5, 0.5]})
        >>> log = ope.load(df, end=5.0)
        >>> log.arm_labels, log.arm.tolist()
        (('a', 'b'), [0, 1])
    """
    if isinstance(source, (str, os.PathLike)) and os.fspath(source).lower().endswith((".db", ".sqlite", ".sqlite3")):
        return read_serve_db(source)
    from ..delaymodels.logs import load_log

    cols = dict(columns or {})
    pcol = cols.pop("propensity", PROPENSITY_COLUMN)
    log = load_log(source, cutoff=end, time_unit=time_unit, origin=origin, arms=arms, n_arms=n_arms, columns=cols)
    if isinstance(source, (str, os.PathLike)):
        path = os.fspath(source)
        import pandas as pd

        if path.lower().endswith((".parquet", ".pq")):
            table = pd.read_parquet(path)
        else:
            table = pd.read_csv(path, skipinitialspace=True, low_memory=False)
            table.columns = [str(c).strip() for c in table.columns]
        if pcol not in table.columns:
            raise ValueError(f"{path}: missing column {pcol!r} (the logging policy's probability of the chosen arm); "
                             f"found {sorted(map(str, table.columns))}")
        col = pd.to_numeric(table[pcol], errors="coerce").to_numpy(np.float64)
        name_row = lambda i: f"{path}: row {i + 1} (line {i + 2})"
    else:
        found = list(source.columns) if hasattr(source, "columns") else list(source)
        if pcol not in found:
            raise ValueError(f"table: missing column {pcol!r} (the logging policy's probability of the chosen arm); "
                             f"found {sorted(map(str, found))}")
        col = np.asarray(source[pcol], np.float64)
        name_row = lambda i: f"row {i}"
    return _with_propensity(log, col, None, None, name_row, pcol)


def read_serve_db(path) -> DecisionLog:
    """The decisions and conversions recorded by ``jaxbandits serve``.

    Database format version 2 and later: each ``decide`` event holds its decisions' ids, arms and
    propensities; each ``feedback`` event the round it arrived in. Times are rounds (decision ids).
    The log's end is the last round the database reached. A database of format version 1 holds no
    propensities: the error says so.

    Args:
        path: the SQLite database.

    Returns:
        The :class:`DecisionLog`.

    Raises:
        ValueError: a database without propensities (format version 1) or not of ``serve``.

    Examples:
        >>> from jaxbandits import ope
        >>> log = ope.read_serve_db("serve.db")  # doctest: +SKIP
    """
    import sqlite3

    path = os.fspath(path)
    if not os.path.exists(path):
        raise OSError(f"{path}: no such file")
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        meta = dict(db.execute("SELECT key, value FROM meta").fetchall())
        if meta.get("format") != "jaxbandits.serve":  # the serve database's on-disk format name
            raise ValueError(f"{path}: not a jaxbandits serve database (format {meta.get('format')!r})")
        rows = db.execute("SELECT seq, kind, body FROM events ORDER BY seq").fetchall()
    except sqlite3.DatabaseError as e:
        raise ValueError(f"{path}: not a usable jaxbandits serve database ({e})") from None
    finally:
        db.close()
    return _serve_log(path, meta, rows)


_DAMAGED = (KeyError, TypeError, ValueError, AttributeError, IndexError)


def _damaged(path, where, e) -> ValueError:
    """A damaged or edited serving database's error, naming the file, the place and the key."""
    what = f"the key {e.args[0]!r} is missing" if isinstance(e, KeyError) and e.args else " ".join(str(e).split())
    return ValueError(f"{path}: not a usable jaxbandits serve database ({where}: {what}; damaged or edited)")


def _serve_log(path, meta, rows) -> DecisionLog:
    """The decision log of a serving database's ``meta`` and ``rows`` (``seq, kind, body``)."""
    try:
        labels = list(json.loads(meta["config"])["arms"])
    except _DAMAGED as e:
        raise _damaged(path, "its meta table's config", e) from None
    index = {a: k for k, a in enumerate(labels)}
    ids, arm, prop, conv_id, conv_round = [], [], [], [], []
    samples = set()
    last = -1
    for seq, kind, body in rows:
        try:
            b = json.loads(body)
            if kind == "decide":
                if "propensity" not in b:
                    raise ValueError(f"{path}: decisions without logged propensities (written by jaxbandits before "
                                     f"serving database format version 2, this one says version "
                                     f"{meta.get('format_version')!r}, or logged before its upgrade): off-policy "
                                     "estimates need them; serve with this version to record them")
                ids += b["ids"]
                arm += [index[a] for a in b["arms"]]
                prop += b["propensity"]
                samples.add(int(b.get("propensity_samples", 0)))
                last = max(last, max(b["ids"]))
            elif kind == "feedback":
                r = b.get("round")
                if r is None:
                    continue
                rewards = b.get("rewards") or [1.0] * len(b["ids"])  # conversions channel: each event is one
                for i, c, rw in zip(b["ids"], b.get("codes", []), rewards):
                    if c == "accepted" and rw > 0:  # a conversion (attributed channels: a positive reward)
                        conv_id.append(i)
                        conv_round.append(r)
                last = max(last, r)
            elif kind == "advance" and b.get("round") is not None:
                last = max(last, b["round"])
        except _DAMAGED as e:
            if isinstance(e, ValueError) and str(e).startswith(path):
                raise
            raise _damaged(path, f"event {seq} ({kind})", e) from None
    if not ids:
        raise ValueError(f"{path}: no logged decisions with propensities")
    ids = np.asarray(ids, np.int64)
    order = np.argsort(ids)
    ids = ids[order]
    conv = np.full(ids.shape, np.nan)
    if conv_id:
        pos = np.searchsorted(ids, np.asarray(conv_id))
        ok = (pos < ids.size) & (ids[np.minimum(pos, ids.size - 1)] == np.asarray(conv_id))
        pos, cr = pos[ok], np.asarray(conv_round, np.float64)[ok]
        first = np.full(ids.shape, np.inf)
        np.minimum.at(first, pos, cr)
        conv = np.where(np.isinf(first), np.nan, first)
    log = decision_log(np.asarray(arm, np.int64)[order], ids.astype(np.float64), np.asarray(prop)[order], conv,
                       float(last), n_arms=len(labels), propensity_samples=max(samples) if samples else None)
    return dataclasses.replace(log, arm_labels=tuple(labels), time_unit="rounds")
