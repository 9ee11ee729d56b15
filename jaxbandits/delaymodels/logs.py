"""Conversion logs: one row per play (decision), with its arm, its decision time, the time its
conversion was seen (empty when none) and the time the log was observed (extracted).

Sources: arrays (:func:`conversion_log`), a CSV or Parquet file or a pandas DataFrame
(:func:`load_log`; :func:`read_log` and :func:`from_table` are its column-name-fixed forms). Times
are either numbers (integer rounds or durations in any unit) or timestamps, which are turned into
durations in the unit the caller names (``time_unit="h"``) from an origin (the earliest decision
unless given). Arms are any labels: they map to indices ``0..K-1`` in sorted order (or the order of
``arms=``), so an arm called ``1000000`` costs one index, not a million. Every row is checked before
anything is compiled and a bad one is named by its row number and column.

Bounds (docs/bayes.md): at most :data:`MAX_ARMS` arms (the model has per-arm parameters), integer
arm labels exact (``|label| < 2**53`` when they come as floats), times finite and at most the
largest float32 (the model computes in float32).
"""
from __future__ import annotations

import csv
import dataclasses
import math
import os
import warnings
from typing import Callable, Optional

import numpy as np

__all__ = ["ConversionLog", "conversion_log", "load_log", "read_log", "from_table", "write_log", "TIME_UNITS"]

#: The most arms a log may have (declared with ``n_arms``/``arms`` or found): the models keep
#: per-arm parameters, so a log with an arm per row would not be a bandit log.
MAX_ARMS = 2**16
#: The largest time (a number, or a duration from timestamps): the model's rows are float32.
MAX_TIME = float(np.finfo(np.float32).max)
TIME_UNITS = {"ms": 1e-3, "s": 1.0, "min": 60.0, "h": 3600.0, "D": 86400.0, "d": 86400.0, "W": 7 * 86400.0}
COLUMNS = ("arm", "play_time", "conversion_time", "cutoff")
UNIT_WORDS = {"ms": "milliseconds", "s": "seconds", "min": "minutes", "h": "hours", "D": "days", "d": "days",
              "W": "weeks"}


@dataclasses.dataclass(frozen=True)
class ConversionLog:
    """A conversion log: one row per play (decision), made by :func:`conversion_log` or :func:`load_log`.

    Attributes:
        arm: i64[N], each play's arm index ``0..K-1``.
        play_time: f64[N], each play's time.
        conversion_time: f64[N], when its conversion was seen (NaN: none seen).
        cutoff: f64[N], when the row was observed.
        n_arms: the number of arms ``K``.
        arm_labels: the label of each arm index (default ``0..K-1``).
        time_unit: the unit of the times when they came from timestamps.
        origin: the timestamp of time 0 (ISO 8601) when they came from timestamps.
        row_name: how errors name row ``i`` (not part of the log's value).
        column_names: the source's name of each field's column, for errors.
    """
    arm: np.ndarray  # i64[N] arm index 0..K-1
    play_time: np.ndarray  # f64[N]
    conversion_time: np.ndarray  # f64[N], NaN = none seen
    cutoff: np.ndarray  # f64[N]
    n_arms: int
    arm_labels: Optional[tuple] = None  # label of each arm index (None: 0..K-1)
    time_unit: Optional[str] = None  # the unit of the times when they came from timestamps
    origin: Optional[str] = None  # the timestamp of time 0 (ISO 8601) when they came from timestamps
    #: how errors name row i (``FILE: row i+1 (line i+2)`` for a file); not part of the log's value
    row_name: Optional[Callable[[int], str]] = dataclasses.field(default=None, repr=False, compare=False)
    #: the source's name of each field's column (renamed with ``columns=``), for errors
    column_names: Optional[dict] = dataclasses.field(default=None, repr=False, compare=False)

    def __post_init__(self):
        if self.arm_labels is None:
            object.__setattr__(self, "arm_labels", tuple(range(self.n_arms)))
        if len(self.arm_labels) != self.n_arms:
            raise ValueError(f"arm_labels has {len(self.arm_labels)} labels for {self.n_arms} arms")

    def __len__(self):
        return int(self.arm.shape[0])

    @property
    def unit_words(self) -> str:
        """The unit of the log's times, in words, for axis labels: the unit the timestamps were
        turned into (``time_unit``), else the numbers' own unit (rounds, or whatever the log's
        numbers count)."""
        return UNIT_WORDS.get(self.time_unit, self.time_unit) if self.time_unit else "the log's own time unit"

    @property
    def plays_per_arm(self) -> np.ndarray:
        """The number of plays of each arm, i64[K]."""
        return np.bincount(self.arm, minlength=self.n_arms)

    @property
    def empty_arms(self) -> tuple:
        """The labels of the arms that have no row (their posterior is their prior)."""
        return tuple(lab for lab, n in zip(self.arm_labels, self.plays_per_arm) if n == 0)

    def arrays(self, window=None, discrete=False):
        """``(arm, seen, delay, age)`` as numpy arrays (float64 times): a conversion after the cutoff
        or with delay above ``window`` is **not seen** (future information is not trusted); ages
        are capped at ``window``; the delay is 0 where nothing was seen."""
        delay = self.conversion_time - self.play_time
        seen = ~np.isnan(self.conversion_time) & (self.conversion_time <= self.cutoff)
        age = self.cutoff - self.play_time
        if window is not None:
            seen &= delay <= window
            age = np.minimum(age, window)
        delay = np.where(seen, delay, 0.0)
        if discrete:
            name_row = self.row_name or _row_namer(None)
            cols = self.column_names or {}
            for name, x, check in (("play_time", self.play_time, True), ("conversion_time", self.conversion_time, seen),
                                   ("cutoff", self.cutoff, True)):
                bad = (x != np.round(x)) & check
                if bad.any():
                    i = int(np.argmax(bad))
                    more = int(bad.sum()) - 1
                    raise ValueError(f"{name_row(i)}, column {cols.get(name, name)!r}: discrete=True (--discrete) "
                                     f"needs integer times, got {float(x[i])!r}"
                                     + (f" (and {more} more row(s))" if more else "")
                                     + "; load timestamps with rounds=True (--rounds)")
        return self.arm, seen, delay, age

    def rows(self, window=None, discrete=False):
        """Model rows (:class:`~jaxbandits.delaymodels.model.Rows`, float32), one per play."""
        import jax.numpy as jnp

        from .model import Rows

        arm, seen, delay, age = self.arrays(window, discrete)
        return Rows(jnp.asarray(arm, jnp.int32), jnp.asarray(seen, jnp.float32), jnp.asarray(delay, jnp.float32),
                    jnp.asarray(age, jnp.float32))


def _row_namer(source: Optional[str], index=None, base: int = 0) -> Callable[[int], str]:
    """How a row is named in errors: ``row i`` of an array, ``FILE: row i (line i+1)`` of a file
    (data rows from 1, the header is line 1), ``row i (index L)`` of a DataFrame."""
    if source is not None and base == 1:
        return lambda i: f"{source}: row {i + 1} (line {i + 2})"
    if index is not None:
        return lambda i: f"row {i} (index {index[i]!r})"
    return lambda i: f"row {i}"


def _missing_label(v) -> bool:
    """An empty arm label, or one that spells a missing value ("nan", "NaT", as in the time columns)."""
    return isinstance(v, str) and v.strip().lower() in ("", "nan", "nat")


def _map_arms(arm, n_arms, arms, name_row, col):
    """Arm labels -> indices 0..K-1 and the labels. Integers are labels too unless ``n_arms`` makes
    them indices ``0..n_arms-1``; floats must be integer-valued; strings (any objects) are labels."""
    a = np.asarray(arm)
    if a.ndim != 1 or a.size == 0:
        raise ValueError(f"arm must be a non-empty 1-d array, got shape {a.shape}")
    if a.dtype.kind == "b":
        a = a.astype(np.int64)
    if a.dtype.kind == "f":
        bad = np.isnan(a) | (a != np.round(a)) | (np.abs(a) >= 2.0**53)
        if bad.any():
            i = int(np.argmax(bad))
            raise ValueError(f"{name_row(i)}, column {col!r}: arm must hold integer arm indices (exact: below "
                             f"2**53 in magnitude) or labels (strings), got {float(a[i])!r}")
        a = a.astype(np.int64)
    if a.dtype.kind == "O":
        miss = np.array([v is None or (isinstance(v, float) and math.isnan(v)) or _missing_label(v) for v in a])
        if miss.any():
            i = int(np.argmax(miss))
            raise ValueError(f"{name_row(i)}, column {col!r}: missing arm label ({a[i]!r}); every row needs an arm")
        kinds = {type(v) for v in a}
        if kinds <= {int, np.int64, np.int32}:
            a = a.astype(np.int64)
        else:
            a = np.array([str(v).strip() for v in a])
    if a.dtype.kind in ("U", "S"):
        a = np.char.strip(a.astype(str))
        miss = np.array([_missing_label(v) for v in a], bool)
        if miss.any():
            i = int(np.argmax(miss))
            raise ValueError(f"{name_row(i)}, column {col!r}: missing arm label ({str(a[i])!r}); every row needs an arm")
    if arms is not None:
        labels = list(arms)
        if len(labels) > MAX_ARMS:
            raise ValueError(f"arms must list at most MAX_ARMS = {MAX_ARMS} labels, got {len(labels)}")
        if len(set(map(str, labels))) != len(labels) or not labels:
            raise ValueError(f"arms must be a non-empty list of distinct labels, got {arms!r}")
        if n_arms is not None and int(n_arms) != len(labels):
            raise ValueError(f"n_arms={n_arms} disagrees with the {len(labels)} labels in arms")
        key = {str(lab): k for k, lab in enumerate(labels)}
        u, inv = np.unique(a, return_inverse=True)
        code = np.array([key.get(str(v), -1) for v in u], np.int64)
        if (code < 0).any():
            v = u[int(np.argmax(code < 0))]
            i = int(np.argmax(a == v))
            v = v.item() if hasattr(v, "item") else v
            raise ValueError(f"unknown arm {v!r} at {name_row(i)}, column {col!r}: arms are {labels!r}")
        return code[inv].astype(np.int64), tuple(labels)
    if a.dtype.kind in "iu":
        a = a.astype(np.int64)
        if n_arms is not None:
            K = _n_arms(n_arms)
            bad = (a < 0) | (a >= K)
            if bad.any():
                i = int(np.argmax(bad))
                raise ValueError(f"unknown arm {int(a[i])} at {name_row(i)}, column {col!r}: arms must lie in [0, {K - 1}]")
            return a, tuple(range(K))
        if (a < 0).any():
            i = int(np.argmax(a < 0))
            raise ValueError(f"unknown arm {int(a[i])} at {name_row(i)}, column {col!r}: integer arms must be >= 0 "
                             "(or give string labels)")
        u, inv = np.unique(a, return_inverse=True)
        _few_arms(u, col)
        return inv.astype(np.int64), tuple(int(x) for x in u)
    if n_arms is not None:
        raise ValueError("n_arms applies to integer arm indices; give arms=[labels] for labelled arms")
    u, inv = np.unique(a, return_inverse=True)
    _few_arms(u, col)
    return inv.astype(np.int64), tuple(str(x) for x in u)


def _n_arms(n_arms):
    if isinstance(n_arms, bool) or not isinstance(n_arms, (int, np.integer)):
        raise TypeError(f"n_arms must be an integer in [1, {MAX_ARMS}], got {n_arms!r}")
    if not 1 <= int(n_arms) <= MAX_ARMS:
        raise ValueError(f"n_arms must lie in [1, MAX_ARMS = {MAX_ARMS}], got {n_arms}")
    return int(n_arms)


def _few_arms(labels, col):
    if len(labels) > MAX_ARMS:
        raise ValueError(f"column {col!r}: the log has {len(labels)} distinct arms; at most MAX_ARMS = {MAX_ARMS} "
                         "(the model keeps per-arm parameters)")


def conversion_log(arm, play_time, conversion_time, cutoff, n_arms: Optional[int] = None, arms=None, *,
                   _name_row=None, _cols=None, time_unit=None, origin=None) -> ConversionLog:
    """Validate a conversion log given as arrays (numbers).

    Without ``n_arms`` or ``arms`` the labels are the distinct values of ``arm``, sorted.

    Args:
        arm: each play's arm: integer indices or any labels.
        play_time: f[N], each play's (decision's) time.
        conversion_time: f[N], when its conversion was seen (NaN: none seen).
        cutoff: when each row was observed (one number, or one per row).
        n_arms: declares integer indices ``0..n_arms-1`` (arms with no rows exist, reported in
            :attr:`ConversionLog.empty_arms`).
        arms: the list of labels, in index order.
        time_unit: the unit the times are in (recorded; see :func:`load_log`).
        origin: the time origin (recorded).

    Returns:
        The :class:`ConversionLog`.

    Raises:
        ValueError: naming the row and column: negative or non-finite times, a conversion before
            its play, an unknown arm, a cutoff before a play.

    Examples:
        >>> import numpy as np
        >>> from jaxbandits import bayes
        >>> log = bayes.conversion_log(arm=["a", "b", "a"], play_time=[0.0, 1.0, 2.0],
        ...                            conversion_time=[3.0, np.nan, np.nan], cutoff=10.0)
        >>> log.n_arms, log.arm_labels, log.arm.tolist()
        (2, ('a', 'b'), [0, 1, 0])
    """
    name_row = _name_row or _row_namer(None)
    cols = {c: c for c in COLUMNS}
    cols.update(_cols or {})
    arm_i, labels = _map_arms(arm, n_arms, arms, name_row, cols["arm"])
    N = arm_i.size
    pt = np.asarray(play_time, np.float64)
    ct = np.asarray(conversion_time, np.float64)
    co = np.broadcast_to(np.asarray(cutoff, np.float64), (N,)).copy()
    for name, x in (("play_time", pt), ("conversion_time", ct)):
        if x.shape != (N,):
            raise ValueError(f"{name} must have shape ({N},) like arm, got {x.shape}")
    for name, x in (("play_time", pt), ("cutoff", co)):
        if not np.isfinite(x).all():
            i = int(np.argmax(~np.isfinite(x)))
            raise ValueError(f"{name_row(i)}, column {cols[name]!r}: {name} must be a finite number, got {float(x[i])!r}")
    for name, x in (("play_time", pt), ("conversion_time", ct), ("cutoff", co)):
        big = np.abs(np.nan_to_num(x)) > MAX_TIME
        if big.any():
            i = int(np.argmax(big))
            raise ValueError(f"{name_row(i)}, column {cols[name]!r}: {name} must be at most {MAX_TIME:.8g} (the "
                             f"model computes in float32), got {float(x[i])!r}")
    if (pt < 0).any():
        i = int(np.argmax(pt < 0))
        raise ValueError(f"negative play_time at {name_row(i)}, column {cols['play_time']!r}: {pt[i]!r} "
                         "(times must be >= 0)")
    has = ~np.isnan(ct)
    if np.isinf(ct).any():
        i = int(np.argmax(np.isinf(ct)))
        raise ValueError(f"{name_row(i)}, column {cols['conversion_time']!r}: conversion_time must be finite or empty")
    if (ct[has] < 0).any():
        i = int(np.flatnonzero(has)[np.argmax(ct[has] < 0)])
        raise ValueError(f"negative conversion_time at {name_row(i)}, column {cols['conversion_time']!r}: {ct[i]!r}")
    if (ct[has] < pt[has]).any():
        i = int(np.flatnonzero(has)[np.argmax(ct[has] < pt[has])])
        raise ValueError(f"conversion before its play at {name_row(i)}, column {cols['conversion_time']!r}: "
                         f"conversion_time {ct[i]} < play_time {pt[i]}")
    if (co < pt).any():
        i = int(np.argmax(co < pt))
        raise ValueError(f"cutoff before the play at {name_row(i)}, column {cols['cutoff']!r}: cutoff {co[i]} < "
                         f"play_time {pt[i]}")
    return ConversionLog(arm_i, pt, ct, co, len(labels), labels, time_unit, origin, row_name=_name_row,
                         column_names=cols)


# ------------------------------------------------------------------------------------------ tables and files
def _as_times(values, name_row, col, allow_empty):
    """A column as numbers (float64, NaN where empty) or as timestamps (datetime64[ns]). Returns
    ``(array, "number" | "timestamp")``."""
    v = np.asarray(values)
    if v.dtype.kind == "M":
        return v.astype("datetime64[ns]"), "timestamp"
    wrong = {"b": "booleans", "m": "durations (timedelta)", "c": "complex numbers"}.get(v.dtype.kind)
    if wrong is None and v.dtype.kind == "O":
        first = next((x for x in v if isinstance(x, (bool, np.bool_, bytes, np.timedelta64))
                      or type(x).__name__ == "Timedelta"), None)
        wrong = None if first is None else {bool: "booleans", np.bool_: "booleans", bytes: "bytes"}.get(
            type(first), "durations (timedelta)")
    if wrong:
        raise ValueError(f"{name_row(0)}, column {col!r}: the column holds {wrong} (type {v.dtype}); {col} must hold "
                         "numbers (rounds, or durations in one unit) or timestamps")
    if v.dtype.kind in "iuf":
        return v.astype(np.float64), "number"
    # strings / objects: empty -> missing; numbers if every value parses, else timestamps
    def empty(x):
        if isinstance(x, str):
            return x.strip().lower() in ("", "nan", "nat", "none", "null")
        try:
            return x is None or bool(x != x)  # NaN, NaT (numpy and pandas)
        except (TypeError, ValueError):
            return False

    miss = np.array([empty(x) for x in v], bool)
    if miss.any() and not allow_empty:
        i = int(np.argmax(miss))
        raise ValueError(f"{name_row(i)}, column {col!r}: empty value (only the conversion time may be empty)")
    vals = v[~miss]
    if any(hasattr(x, "year") for x in vals):  # datetime objects (pandas Timestamp, datetime)
        return _parse_timestamps(v, miss, name_row, col), "timestamp"
    idx = np.flatnonzero(~miss)
    num = _to_numbers(vals)
    out = np.full(v.shape, np.nan)
    if not np.isnan(num).any():
        out[idx] = num
        return out, "number"
    if not np.isnan(num).all():  # mostly numbers: name the first value that is not one
        i = int(idx[np.argmax(np.isnan(num))])
        raise ValueError(f"{name_row(i)}, column {col!r}: {v[i]!r} is not a number")
    return _parse_timestamps(v, miss, name_row, col), "timestamp"


def _to_numbers(vals):
    """Object values -> float64 (NaN where a value is not a number)."""
    try:
        import pandas as pd

        return pd.to_numeric(pd.Series(vals, dtype=object).map(lambda x: x.strip() if isinstance(x, str) else x),
                             errors="coerce").to_numpy(np.float64)
    except ImportError:  # pragma: no cover
        out = np.empty(len(vals))
        for j, x in enumerate(vals):
            try:
                out[j] = float(x)
            except (TypeError, ValueError):
                out[j] = np.nan
        return out


def _parse_timestamps(v, miss, name_row, col):
    """Strings / datetime objects -> datetime64[ns] (UTC for zone-aware stamps); the first value
    that does not parse is named by row."""
    try:
        import pandas as pd
    except ImportError:  # pragma: no cover - pandas is an optional dependency
        pd = None
    out = np.full(v.shape, np.datetime64("NaT"), "datetime64[ns]")
    idx = np.flatnonzero(~miss)
    if pd is not None:
        vals = [x.strip() if isinstance(x, str) else x for x in v[idx]]
        try:
            parsed = pd.to_datetime(pd.Series(vals, dtype=object), errors="coerce", utc=True, format="mixed")
        except (TypeError, ValueError):
            parsed = pd.Series([pd.NaT] * len(vals))
        bad = parsed.isna().to_numpy()
        if bad.any():
            i = int(idx[np.argmax(bad)])
            raise ValueError(f"{name_row(i)}, column {col!r}: {v[i]!r} is neither a number nor a timestamp")
        out[idx] = parsed.dt.tz_convert("UTC").dt.tz_localize(None).to_numpy().astype("datetime64[ns]")
        return out
    for i in idx:
        try:
            out[i] = np.datetime64(str(v[i]).strip(), "ns")
        except (TypeError, ValueError):
            out[i] = np.datetime64("NaT")
        if np.isnat(out[i]):
            raise ValueError(f"{name_row(int(i))}, column {col!r}: {v[i]!r} is neither a number nor a timestamp")
    return out


def _scalar_cutoff(cutoff):
    if isinstance(cutoff, (int, float, np.integer, np.floating)) and not isinstance(cutoff, bool):
        return float(cutoff), "number"
    v, kind = _as_times(np.array([cutoff], dtype=object), lambda i: "cutoff", "cutoff", False)
    return v[0], kind


def _from_columns(get, n, *, cutoff, time_unit, origin, rounds, arms, n_arms, cols, name_row, source_desc):
    """Build a log from column getters: timestamps -> durations in ``time_unit`` from ``origin``."""
    arm = get(cols["arm"])
    pt, k_pt = _as_times(get(cols["play_time"]), name_row, cols["play_time"], False)
    ct, k_ct = _as_times(get(cols["conversion_time"]), name_row, cols["conversion_time"], True)
    if k_ct == "number" and np.isnan(ct).all():
        k_ct = k_pt  # an all-empty conversion column takes the decisions' kind
        ct = np.full(n, np.nan) if k_pt == "number" else np.full(n, np.datetime64("NaT"), "datetime64[ns]")
    if cutoff is None:
        co, k_co = _as_times(get(cols["cutoff"]), name_row, cols["cutoff"], False)
    else:
        co, k_co = _scalar_cutoff(cutoff)
    kinds = {cols["play_time"]: k_pt, cols["conversion_time"]: k_ct, "cutoff" if cutoff is not None else cols["cutoff"]: k_co}
    if len(set(kinds.values())) > 1:
        raise ValueError(f"{source_desc}: time columns mix numbers and timestamps: {kinds}")
    if k_pt == "number":
        if rounds:
            for c, x in ((cols["play_time"], pt), (cols["conversion_time"], ct), (cols["cutoff"], np.atleast_1d(co))):
                bad = ~np.isnan(x) & (x != np.floor(x))
                if bad.any():
                    i = int(np.argmax(bad))
                    raise ValueError(f"{name_row(i)}, column {c!r}: --rounds (rounds=True) needs integer rounds, got {x[i]!r}")
        return conversion_log(arm, pt, ct, co, n_arms, arms, _name_row=name_row, _cols=cols)
    if time_unit is None:
        raise ValueError(f"{source_desc}: the times are timestamps; give the unit of the durations, one of "
                         f"{sorted(TIME_UNITS)}: --time-unit h on the command line (time_unit='h' in Python)")
    if time_unit not in TIME_UNITS:
        raise ValueError(f"--time-unit (time_unit) must be one of {sorted(TIME_UNITS)}, got {time_unit!r}")
    if origin is None:
        t0 = pt.min()
    else:
        t0, k0 = _scalar_cutoff(origin)
        if k0 != "timestamp":
            raise ValueError(f"origin must be a timestamp when the times are timestamps, got {origin!r}")
    unit_ns = TIME_UNITS[time_unit] * 1e9

    def dur(x):
        d = (x - t0).astype("timedelta64[ns]")
        out = d.astype(np.int64).astype(np.float64) / unit_ns
        out = np.where(np.isnat(d), np.nan, out)
        return np.floor(out) if rounds else out

    pt_d = dur(pt)
    if (pt_d < 0).any():
        i = int(np.argmax(pt_d < 0))
        raise ValueError(f"{name_row(i)}, column {cols['play_time']!r}: decision at {pt[i]} is before the origin {t0}")
    return conversion_log(arm, pt_d, dur(ct), dur(np.atleast_1d(co)) if cutoff is None else float(dur(np.atleast_1d(co))[0]),
                          n_arms, arms, _name_row=name_row, _cols=cols, time_unit=time_unit,
                          origin=str(np.datetime_as_string(np.datetime64(t0, "s"))))


def _columns(columns):
    cols = {c: c for c in COLUMNS}
    for k, v in (columns or {}).items():
        if k not in cols:
            raise ValueError(f"columns: unknown key {k!r}; keys are {list(COLUMNS)} (log field -> your column name)")
        cols[k] = v
    return cols


def _not_utf8(path) -> str:
    """Where a CSV file stops being UTF-8: its line and byte."""
    with open(path, "rb") as fh:
        raw = fh.read()
    try:
        raw.decode("utf-8")
        return f"{path}: not UTF-8 text"
    except UnicodeDecodeError as e:
        line = raw[:e.start].count(b"\n") + 1
        return (f"{path}, line {line}: not UTF-8 text (byte 0x{raw[e.start]:02x} at offset {e.start}); save the log "
                "as UTF-8 (CSV exports often offer it)")


def load_log(source, *, cutoff=None, time_unit: Optional[str] = None, origin=None, rounds: bool = False, arms=None,
             n_arms: Optional[int] = None, columns: Optional[dict] = None) -> ConversionLog:
    """A conversion log from a CSV file, a Parquet file, a pandas DataFrame or a mapping of columns.

    Columns: ``arm`` (any labels), ``play_time`` (the decision), ``conversion_time`` (empty when none
    seen) and ``cutoff`` (when the row was observed; or give ``cutoff=``). Times are numbers (rounds,
    or durations) or timestamps; timestamps become durations in ``time_unit`` since ``origin``
    (time-zone aware stamps are converted to UTC). Errors name the file, the row (data rows from 1,
    the header is line 1) and the column.

    Args:
        source: a path (``.csv``, or ``.parquet``/``.pq``: needs pyarrow), a DataFrame or a mapping
            of columns.
        cutoff: one number or timestamp for every row, instead of a ``cutoff`` column.
        time_unit: the unit of timestamps: ``"ms" "s" "min" "h" "D" "W"``.
        origin: the time origin of timestamps (default: the earliest decision).
        rounds: floor the times to integer rounds of one ``time_unit`` (the discrete models).
        arms: the arm labels, in index order (see :func:`conversion_log`).
        n_arms: declares integer arm indices.
        columns: renames, e.g. ``{"arm": "variant", "play_time": "decided_at"}``.

    Returns:
        The :class:`ConversionLog`.

    Raises:
        ValueError: a missing column or a bad row (named).

    Examples:
        >>> from jaxbandits import bayes
        >>> log = bayes.load_log({"arm": [0, 1], "play_time": [0.0, 1.0],
        ...                       "conversion_time": [2.0, None], "cutoff": [5.0, 5.0]})
        >>> log.arm_labels, log.n_arms
        ((0, 1), 2)
    """
    cols = _columns(columns)
    need = [cols[c] for c in COLUMNS if c != "cutoff" or cutoff is None]
    kw = dict(cutoff=cutoff, time_unit=time_unit, origin=origin, rounds=rounds, arms=arms, n_arms=n_arms, cols=cols)
    if isinstance(source, (str, os.PathLike)):
        path = os.fspath(source)
        if not os.path.exists(path):
            raise OSError(f"{path}: no such file")
        low = path.lower()
        if low.endswith((".parquet", ".pq")):
            try:
                import pandas as pd

                table = pd.read_parquet(path)
            except ImportError as e:
                raise ImportError(f"reading Parquet needs pandas and pyarrow (pip install pandas pyarrow): {e}") from None
            found = list(table.columns)
            get = lambda c: table[c].to_numpy()
        else:
            try:
                import pandas as pd
            except ImportError:  # pragma: no cover - pandas is optional: the csv module then
                pd = None
            if pd is not None:
                try:
                    table = pd.read_csv(path, skipinitialspace=True, keep_default_na=False, na_values=[""],
                                        low_memory=False)
                except pd.errors.EmptyDataError:
                    raise ValueError(f"{path}: empty file (no header)") from None
                except UnicodeDecodeError:
                    raise ValueError(_not_utf8(path)) from None
                except pd.errors.ParserError as e:
                    raise ValueError(f"{path}: {e}") from None
                table.columns = [str(c).strip() for c in table.columns]
                if len(table) == 0:
                    raise ValueError(f"{path}: no data rows")
                found = list(table.columns)
                get = lambda c: table[c].to_numpy()
            else:
                with open(path, newline="") as fh:
                    rd = csv.reader(fh)
                    try:
                        header = [h.strip() for h in next(rd)]
                    except StopIteration:
                        raise ValueError(f"{path}: empty file (no header)") from None
                    body = list(rd)
                found = header
                for i, r in enumerate(body):
                    if len(r) != len(header):
                        raise ValueError(f"{path}: row {i + 1} (line {i + 2}) has {len(r)} fields, the header has {len(header)}")
                if not body:
                    raise ValueError(f"{path}: no data rows")
                data = np.array(body, dtype=object).reshape(len(body), len(header))
                get = lambda c: data[:, header.index(c)]
        missing = [c for c in need if c not in found]
        if missing:
            raise ValueError(f"{path}: missing column(s) {missing}; found {sorted(map(str, found))}")
        n = len(get(need[0]))
        return _from_columns(get, n, name_row=_row_namer(path, base=1), source_desc=path, **kw)
    found = list(source.columns) if hasattr(source, "columns") else list(source)
    missing = [c for c in need if c not in found]
    if missing:
        raise ValueError(f"table: missing column(s) {missing}; found {sorted(map(str, found))}")
    index = list(source.index) if hasattr(source, "index") and hasattr(source, "columns") else None
    get = (lambda c: source[c].to_numpy()) if hasattr(source, "columns") else (lambda c: np.asarray(source[c]))
    n = len(get(need[0]))
    if n == 0:
        raise ValueError("table: no rows")
    return _from_columns(get, n, name_row=_row_namer(None, index=index), source_desc="table", **kw)


def read_log(path, cutoff=None, n_arms=None, **kw) -> ConversionLog:
    """Read a CSV (or Parquet) conversion log; see :func:`load_log` for timestamps, labels and renames.

    Args:
        path: the file: columns ``arm, play_time, conversion_time`` (empty: none) and ``cutoff``.
        cutoff: the cutoff of every row, instead of the column.
        n_arms: declares integer arm indices.
        **kw: the other arguments of :func:`load_log`.

    Returns:
        The :class:`ConversionLog`.

    Raises:
        ValueError: a missing column or a bad row (named).

    Examples:
        >>> import os, tempfile
        >>> from jaxbandits import bayes
        >>> path = os.path.join(tempfile.mkdtemp(), "log.csv")
        >>> bayes.write_log(path, bayes.conversion_log(arm=["a", "b"], play_time=[0.0, 1.0],
        ...                                           conversion_time=[3.0, float("nan")], cutoff=10.0))
        >>> log = bayes.read_log(path)
        >>> log.arm_labels, log.conversion_time.tolist()
        (('a', 'b'), [3.0, nan])
    """
    return load_log(path, cutoff=cutoff, n_arms=n_arms, **kw)


def from_table(table, cutoff=None, n_arms=None, **kw) -> ConversionLog:
    """A conversion log from a pandas DataFrame (or any mapping of columns); see :func:`load_log`.

    Args:
        table: the DataFrame or mapping.
        cutoff: the cutoff of every row, instead of a ``cutoff`` column.
        n_arms: declares integer arm indices.
        **kw: the other arguments of :func:`load_log`.

    Returns:
        The :class:`ConversionLog`.

    Raises:
        ValueError: a missing column or a bad row (named).

    Examples:
        >>> import pandas as pd
        >>> from jaxbandits import bayes
        >>> df = pd.DataFrame({"arm": ["a", "b"], "play_time": [0.0, 1.0], "conversion_time": [2.0, None]})
        >>> bayes.from_table(df, cutoff=5.0).arm_labels
        ('a', 'b')
    """
    return load_log(table, cutoff=cutoff, n_arms=n_arms, **kw)


def write_log(path, log: ConversionLog):
    """Write a conversion log as a CSV (arm labels, times as numbers in the log's unit), atomically.

    The file is written to a temporary name and renamed into place (removed on failure).

    Args:
        path: the CSV file.
        log: the :class:`ConversionLog`.

    Returns:
        None.

    Examples:
        >>> import numpy as np
        >>> from jaxbandits import bayes
        >>> log = bayes.conversion_log(arm=["a", "b", "a"], play_time=[0.0, 1.0, 2.0],
        ...                            conversion_time=[3.0, np.nan, np.nan], cutoff=10.0)
        >>> import os, tempfile
        >>> path = os.path.join(tempfile.mkdtemp(), "log.csv")
        >>> bayes.write_log(path, log)
        >>> print(open(path).read().strip())
        arm,play_time,conversion_time,cutoff
        a,0,3,10
        b,1,,10
        a,2,,10
    """
    from ..core.fileio import atomic_write

    def write(p):
        with open(p, "w", newline="") as fh:
            w = csv.writer(fh)
            w.writerow(list(COLUMNS))
            labels = log.arm_labels
            for a, pt, c, k in zip(log.arm, log.play_time, log.conversion_time, log.cutoff):
                w.writerow([labels[int(a)], f"{pt:.10g}", "" if math.isnan(c) else f"{c:.10g}", f"{k:.10g}"])

    atomic_write(path, write)


def warn_empty_arms(log: ConversionLog):
    """Warn (once per call) when arms have no rows: their posterior is their prior."""
    empty = log.empty_arms
    if empty:
        warnings.warn(f"arm(s) {list(empty)} have no rows in the log: their posterior is the prior", stacklevel=3)
    return empty
