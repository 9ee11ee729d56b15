"""Your timestamps mapped to the learner's rounds (:class:`Clock`), on the host in exact integer,
datetime or float64 arithmetic; the learner only ever sees integer rounds."""
from __future__ import annotations

import math
from typing import Any, NamedTuple

import numpy as np

from ..core.types import NEVER


class Clock(NamedTuple):
    """Your timestamps mapped to rounds: round ``floor((now - origin) / round_length)``.

    ``origin`` and ``round_length`` are numbers in your unit (seconds since the epoch and
    ``60.0``: one-minute rounds), or a ``datetime.datetime`` and a ``datetime.timedelta`` (or
    numpy ``datetime64`` / ``timedelta64``). The mapping runs on the host, exactly for integers,
    datetimes and timedeltas and in float64 for other numbers (a float32 cannot tell seconds apart
    near 1.7e9), so the learner only ever sees integer rounds.

    Attributes:
        origin: the time of round 0's start: a number (default 0) or a datetime.
        round_length: the length of a round, ``> 0``: a number in the origin's unit (default 1)
            or a timedelta.

    Example:
        >>> import datetime
        >>> Clock(origin=1000.0, round_length=60.0).round(1130.0)
        2
        >>> t0 = datetime.datetime(2026, 1, 1)
        >>> Clock(t0, datetime.timedelta(hours=1)).round(datetime.datetime(2026, 1, 2, 0, 30))
        24
    """

    origin: Any = 0
    round_length: Any = 1

    def check(self) -> "Clock":
        import datetime as _dt

        o, L = self.origin, self.round_length
        if isinstance(o, (np.datetime64, _dt.datetime)):
            if not isinstance(L, (np.timedelta64, _dt.timedelta)):
                raise TypeError(f"round_length must be a timedelta when the origin is a datetime, got {L!r}")
            if (np.timedelta64(L) if isinstance(L, _dt.timedelta) else L) <= np.timedelta64(0):
                raise ValueError(f"round_length must be > 0, got {L!r}")
            return self
        if isinstance(o, bool) or not isinstance(o, (int, float, np.integer, np.floating)) or not np.isfinite(o):
            raise TypeError(f"origin must be a finite number or a datetime, got {o!r}")
        if isinstance(L, bool) or not isinstance(L, (int, float, np.integer, np.floating)) or not np.isfinite(L) \
                or L <= 0:
            raise ValueError(f"round_length must be a finite number > 0 (in the unit of your timestamps), got {L!r}")
        return self

    def round(self, now) -> int:
        """The round of time ``now`` (a Python int; ``ValueError`` naming ``now`` before the origin)."""
        import datetime as _dt

        o, L = self.origin, self.round_length
        if isinstance(o, (np.datetime64, _dt.datetime)):
            if not isinstance(now, (np.datetime64, _dt.datetime)):
                raise TypeError(f"now must be a datetime (the clock's origin is {o!r}), got {now!r}")
            if isinstance(o, np.datetime64) or isinstance(now, np.datetime64) or isinstance(L, np.timedelta64):
                d = np.datetime64(now, "us") - np.datetime64(o, "us")
                r = int(d // np.timedelta64(L, "us").astype("timedelta64[us]"))
            else:
                r = (now - o) // L
        else:
            if isinstance(now, bool) or not isinstance(now, (int, float, np.integer, np.floating)) \
                    or not np.isfinite(now):
                raise TypeError(f"now must be a finite number in the clock's unit, got {now!r}")
            if all(isinstance(x, (int, np.integer)) for x in (now, o, L)):
                r = (int(now) - int(o)) // int(L)
            else:
                r = math.floor((float(now) - float(o)) / float(L))
        if r < 0:
            raise ValueError(f"now={now!r} is before the clock's origin {o!r}")
        if r > MAX_ROUND:
            raise ValueError(f"now={now!r} is round {r} of the clock, beyond the last round {MAX_ROUND} "
                             "(a later origin or longer rounds?)")
        return int(r)

    def to_json(self) -> dict:
        import datetime as _dt

        o, L = self.origin, self.round_length
        if isinstance(o, (np.datetime64, _dt.datetime)):
            return {"origin": str(np.datetime64(o, "us")), "round_length_us": int(np.timedelta64(L, "us")
                                                                                  .astype(np.int64)),
                    "kind": "datetime"}
        return {"origin": o.item() if hasattr(o, "item") else o,
                "round_length": L.item() if hasattr(L, "item") else L, "kind": "number"}

    @classmethod
    def from_json(cls, d: dict) -> "Clock":
        if d.get("kind") == "datetime":
            import datetime as _dt

            return cls(np.datetime64(d["origin"], "us").astype(_dt.datetime),
                       _dt.timedelta(microseconds=int(d["round_length_us"])))
        return cls(d["origin"], d["round_length"])


#: The last round a clock may reach (round indices plus delays and holds fit int32, conventions §3).
MAX_ROUND = NEVER - 2**24
