"""``jaxbandits serve``: a policy on live traffic over HTTP, with a durable SQLite log (docs/online.md).

Three parts, only the last needs the optional extra (``pip install 'jaxbandits[serve]'``:
FastAPI and uvicorn):

* :class:`ServeConfig`, read from a small TOML or JSON file (or built from command-line flags):
  the arms, the policy and its parameters, the channel and its window, the clock, the seed and
  the service's limits. Checked before anything compiles; an error names the key.
* :class:`Service`: the learner (:class:`jaxbandits.online.Learner`) and its SQLite database.
  Every request that changes the state is applied, appended to the ``events`` table and
  committed (WAL, ``synchronous=FULL``: on disk) before it is acknowledged; a snapshot of the
  whole state is written every ``snapshot_every`` events. On start the service loads the latest
  snapshot and replays the events after it: the learner's functions are deterministic, so a
  restart (even after ``kill -9``) recovers exactly the state the log implies. A request that
  fails validation, or whose commit fails, changes nothing (the state is an immutable pytree: the
  previous one is kept until the commit succeeds).
* :func:`create_app`: the FastAPI application: ``POST /decide``, ``POST /feedback``,
  ``POST /advance``, ``GET /stats``, ``GET /health``, and the dashboard (``GET /dashboard``,
  ``/series``, ``/estimates``, ``/config``: :mod:`jaxbandits.dashboard`). A bad request gets a 4xx and one
  ``{"error": "..."}`` message naming the field.
"""

import contextlib
import dataclasses
import difflib
import inspect
import json
import math
import os
import sqlite3
import time
from typing import Any, Dict, List, Optional

import numpy as np

from . import _validate as V
from .delays import DELAY_LAWS, delay_law  # re-exported: serve.DELAY_LAWS, serve.delay_law as before

__all__ = ["ServeConfig", "Service", "BadRequest", "load_config", "create_app", "replay_events", "POLICIES",
           "DELAY_LAWS", "DB_FORMAT", "DB_FORMAT_VERSION", "delay_law"]

DB_FORMAT = "jaxbandits.serve"
DB_FORMAT_VERSION = 2  # 2: decide events log ids, arms and propensities; feedback and advance events their round
#: The policy table's keys that are not the policy's parameters: the exploration floor and the Monte
#: Carlo sample size of logged propensities (docs/ope.md, *Logging*).
LOGGING_KEYS = ("explore", "propensity_samples")
DEFAULT_PROPENSITY_SAMPLES = 256


def policy_table():
    """``{name: constructor}`` of the policies a serve config may name (``[policy] name``)."""
    from .policies import bayes, classic
    from .policies import conversions as C

    return {
        "ucb1": classic.ucb1, "kl_ucb": classic.kl_ucb, "thompson": classic.thompson,
        "delayed_ucb": C.delayed_ucb, "delayed_klucb": C.delayed_klucb,
        "discarding_ucb": C.discarding_ucb, "discarding_klucb": C.discarding_klucb,
        "delay_model_ts": bayes.delay_model_ts, "beta_ts": bayes.beta_ts,
    }


#: The policies a config may name (``[policy] name``), with the channels they take.
POLICIES = ("ucb1", "kl_ucb", "thompson", "delayed_ucb", "delayed_klucb", "discarding_ucb", "discarding_klucb",
            "delay_model_ts", "beta_ts")
CHANNELS = ("attributed", "conversions")


class BadRequest(Exception):
    """A request refused before anything changed: HTTP ``status`` and a one-line message."""

    def __init__(self, message: str, status: int = 422):
        super().__init__(message)
        self.status = status


# ----------------------------------------------------------------------------- the config
class ConfigKeyError(ValueError):
    """A config key that is not one of those allowed; ``path`` is the key's path in the config
    (``("policy", "delay", "shap")``), for :func:`load_config` to name its file and line."""

    def __init__(self, path: tuple, message: str):
        super().__init__(f"config key {'.'.join(map(str, path))!r}: {message}")
        self.path, self.message = tuple(path), message


def _unknown(path: tuple, keys, allowed, what: str) -> ConfigKeyError:
    """The error of the first of ``keys`` that ``allowed`` lacks, with the close matches."""
    k = sorted(map(str, keys))[0]
    close = difflib.get_close_matches(k, list(allowed), n=1)
    return ConfigKeyError(path + (k,), f"unknown key {k!r} in {what}" + (f" (did you mean {close[0]!r}?)" if close
                                                                          else "")
                          + f"; allowed: {', '.join(sorted(allowed))}")


def _policy_parameters(make) -> List[str]:
    """The parameters of a policy: the fields of the value its constructor makes (``label``, the
    display name, is the constructor's ``name``)."""
    return list(make.value_type.field_arguments())


def _parameters(fn) -> List[str]:
    return [n for n, p in inspect.signature(fn).parameters.items() if p.kind in (p.POSITIONAL_OR_KEYWORD,
                                                                                   p.KEYWORD_ONLY)]


@dataclasses.dataclass
class ServeConfig:
    """What ``jaxbandits serve`` serves (the TOML/JSON keys, docs/online.md).

    ``arms``: names (strings); ``policy``: ``{"name": ..., parameters...}``, a ``delay``
    parameter being a table ``{"law": "geometric", "mean": 20.0}``; ``channel``: ``{"kind":
    "conversions", "window": m}`` or ``{"kind": "attributed"}``; ``clock``: ``None`` (one decision
    is one round) or ``{"origin": t0, "round_length": L}`` in the unit of the timestamps (requests
    without ``now`` then use the server's time, seconds since the epoch); ``max_batch``: the most
    decisions or events in one request; ``snapshot_every``: events logged between two snapshots;
    ``max_advance``: the most rounds one request may move the clock (each costs an ``update``)."""

    arms: List[str]
    policy: Dict[str, Any]
    channel: Dict[str, Any]
    seed: int = 0
    horizon: Optional[int] = None
    max_pending: Optional[int] = None
    clock: Optional[Dict[str, Any]] = None
    max_batch: int = 1000
    snapshot_every: int = 1000
    max_advance: int = 10_000_000

    def to_json(self) -> dict:
        return dataclasses.asdict(self)

    def canonical(self) -> str:
        return json.dumps(self.to_json(), sort_keys=True)

    def check(self) -> "ServeConfig":
        if not isinstance(self.arms, list) or not self.arms or not all(isinstance(a, str) and a for a in self.arms):
            raise ValueError(f"config key 'arms' must be a list of at least one non-empty string, got {self.arms!r}")
        if len(set(self.arms)) != len(self.arms):
            raise ValueError(f"config key 'arms' must name distinct arms, got {self.arms!r}")
        V.seed("seed", self.seed)
        if self.horizon is not None:
            V.integer("horizon", self.horizon, lo=1)
        if self.max_pending is not None:
            V.integer("max_pending", self.max_pending, lo=1)
        V.integer("max_batch", self.max_batch, lo=1, hi=100_000)
        V.integer("snapshot_every", self.snapshot_every, lo=1)
        V.integer("max_advance", self.max_advance, lo=1)
        if not isinstance(self.channel, dict) or self.channel.get("kind") not in CHANNELS:
            raise ValueError(f"config key 'channel.kind' must be one of {list(CHANNELS)}, got "
                             f"{self.channel.get('kind') if isinstance(self.channel, dict) else self.channel!r}")
        extra = set(self.channel) - {"kind", "window"}
        if extra:
            raise _unknown(("channel",), extra, ["kind", "window"], "table 'channel'")
        if self.channel["kind"] == "conversions":
            if "window" not in self.channel:
                raise ValueError("config key 'channel.window' is required for the conversions channel (an integer "
                                 ">= 0, in rounds)")
            V.integer("channel.window", self.channel["window"], lo=0)
        elif "window" in self.channel:
            raise ValueError("config key 'channel.window' is for the conversions channel only")
        if not isinstance(self.policy, dict) or self.policy.get("name") not in POLICIES:
            raise ValueError(f"config key 'policy.name' must be one of {list(POLICIES)}, got "
                             f"{self.policy.get('name') if isinstance(self.policy, dict) else self.policy!r}")
        allowed = _policy_parameters(policy_table()[self.policy["name"]])
        extra = set(self.policy) - {"name"} - set(LOGGING_KEYS) - set(allowed)
        if extra:
            raise _unknown(("policy",), extra, ["name", *LOGGING_KEYS] + allowed, f"table 'policy' ({self.policy['name']})")
        if isinstance(self.policy.get("delay"), dict):
            law = self.policy["delay"].get("law")
            if law not in DELAY_LAWS:
                close = difflib.get_close_matches(str(law), DELAY_LAWS, n=1)
                raise ConfigKeyError(("policy", "delay", "law"), f"must be one of {list(DELAY_LAWS)}, got {law!r}"
                                     + (f" (did you mean {close[0]!r}?)" if close else ""))
            from . import delays

            allowed = _parameters(getattr(delays, law))
            extra = set(self.policy["delay"]) - {"law"} - set(allowed)
            if extra:
                raise _unknown(("policy", "delay"), extra, ["law"] + allowed, f"table 'policy.delay' ({law})")
        if "explore" in self.policy:
            e = self.policy["explore"]
            if isinstance(e, bool) or not isinstance(e, (int, float)) or not 0 <= e <= 1:
                raise ValueError(f"config key 'policy.explore' must be a number in [0, 1] (the exploration floor: "
                                 f"a uniformly drawn arm with that probability), got {e!r}")
        if "propensity_samples" in self.policy:
            V.integer("policy.propensity_samples", self.policy["propensity_samples"], lo=1, hi=2**16)
        if self.clock is not None:
            if isinstance(self.clock, dict) and set(self.clock) - {"origin", "round_length"}:
                raise _unknown(("clock",), set(self.clock) - {"origin", "round_length"}, ["origin", "round_length"],
                               "table 'clock'")
            if not isinstance(self.clock, dict):
                raise ValueError("config table 'clock' takes the keys origin and round_length (numbers, in the "
                                 f"unit of your timestamps), got {self.clock!r}")
            self._clock().check()
        return self

    def _clock(self):
        from .online import Clock

        if self.clock is None:
            return None
        return Clock(self.clock.get("origin", 0), self.clock.get("round_length", 1))

    def build(self):
        """(policy, channel, clock): the objects the config describes. The policy and the channel
        are values, equal for the same config, so a restarted service reuses the compiled programs."""
        pol, ch, _ = self._built()
        return pol, ch, self._clock()

    def propensity_exact(self) -> bool:
        """Whether the logged propensities are exact: the policy (the base under an exploration
        floor) declares its law (``memo_probs``); else they are Monte Carlo estimates."""
        return self._built()[2]

    def _built(self):
        self.check()
        return self._build()

    def _build(self):
        from . import channels

        ch = (channels.conversions(window=int(self.channel["window"])) if self.channel["kind"] == "conversions"
              else channels.attributed())
        params = {k: v for k, v in self.policy.items() if k != "name" and k not in LOGGING_KEYS}
        name = self.policy["name"]
        make = policy_table()[name]
        if isinstance(params.get("delay"), dict):  # its keys were checked by check()
            params["delay"] = delay_law(params["delay"])
        try:
            pol = make(**params)
        except TypeError as e:
            raise ValueError(f"config table 'policy' ({name}): {e}") from None
        exact = pol.memo_probs  # explore's law is exact when its base's is (docs/ope.md)
        eps = self.policy.get("explore", 0)
        if eps:
            from .policies.explore import explore

            pol = explore(pol, eps, samples=self.propensity_samples())
        return pol, ch, exact

    def propensity_samples(self) -> int:
        """Monte Carlo draws of a logged propensity (``policy.propensity_samples``, default 256)."""
        return int(self.policy.get("propensity_samples", DEFAULT_PROPENSITY_SAMPLES))


def load_config(path=None, **overrides) -> ServeConfig:
    """A :class:`ServeConfig` from a TOML (``.toml``) or JSON file, then ``overrides`` (the
    command line's flags; ``None`` values are ignored). Unknown keys are refused, naming them."""
    raw: Dict[str, Any] = {}
    text = None
    if path is not None:
        path = os.fspath(path)
        with open(path, "rb") as fh:
            data = fh.read()
        text = data.decode(errors="replace")
        try:
            if path.endswith(".json"):
                raw = json.loads(data.decode())
            else:
                import tomllib

                raw = tomllib.loads(data.decode())
        except (ValueError, UnicodeDecodeError) as e:  # tomllib.TOMLDecodeError and JSONDecodeError
            from .expfile import toml_error

            raise ValueError(f"{path}: not valid JSON: {e}" if path.endswith(".json")
                             else toml_error(path, data, e)) from None
        if not isinstance(raw, dict):
            raise ValueError(f"{path}: must hold a table of keys (arms, policy, channel, ...), got {type(raw).__name__}")
        if "serve" in raw and isinstance(raw["serve"], dict):  # [serve] limits may sit in their own table
            raw = {**{k: v for k, v in raw.items() if k != "serve"}, **raw["serve"]}
    from_file = json.loads(json.dumps(raw, default=str))
    for k, v in overrides.items():
        if v is None:
            continue
        if k in ("policy", "channel") and isinstance(v, dict):
            raw[k] = {**raw.get(k, {}), **v}
        else:
            raw[k] = v
    fields = {f.name for f in dataclasses.fields(ServeConfig)}
    try:
        unknown = set(raw) - fields
        if unknown:
            raise _unknown((), unknown, fields, "the config")
        missing = [k for k in ("arms", "policy", "channel") if k not in raw]
        if missing:
            raise ValueError(f"{path or 'config'}: missing key(s) {missing} (give them in the file or as --arms, "
                             "--policy, --channel)")
        return ServeConfig(**raw).check()
    except ConfigKeyError as e:
        raise ValueError(f"{_where(path, text, from_file, e.path)}: {e.message}") from None


def _where(path, text, from_file, key) -> str:
    """``FILE, line N, key a.b`` of a config key (``given on the command line`` when the file does
    not hold it)."""
    dotted = ".".join(map(str, key))
    node = from_file
    for k in key:
        node = node.get(k) if isinstance(node, dict) else None
        if node is None:
            break
    if path is None or node is None:
        return f"config key {dotted}" + (" (given on the command line)" if path is not None else "")
    line = None
    if path.endswith(".json"):
        for n, ln in enumerate(text.split("\n"), 1):
            if f'"{key[-1]}"' in ln:
                line = n
                break
    else:
        from .expfile import key_lines, line_of

        lines = key_lines(text)
        line = line_of(lines, key) or line_of(lines, ("serve",) + tuple(key))
    return f"{path}" + (f", line {line}" if line else "") + f", key {dotted}"


# ----------------------------------------------------------------------------- the service
_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS events (seq INTEGER PRIMARY KEY, kind TEXT NOT NULL, body TEXT NOT NULL,
                                   at REAL NOT NULL);
CREATE TABLE IF NOT EXISTS snapshots (seq INTEGER PRIMARY KEY, state BLOB NOT NULL, at REAL NOT NULL);
"""

_ID_LIMIT = 2**62


def _number(name, x):
    if isinstance(x, bool) or not isinstance(x, (int, float)) or (isinstance(x, float) and not math.isfinite(x)):
        raise BadRequest(f"{name} must be a finite number, got {x!r}")
    return x


class Service:
    """The learner of a :class:`ServeConfig` and its SQLite database at ``db`` (created if absent;
    recovered from its snapshot and log if present; refused if it was created for another config)."""

    def __init__(self, config: ServeConfig, db: str):
        from . import online

        self.config = config.check()
        self.policy, self.channel, self.clock = config.build()
        self.db_path = os.fspath(db)
        self._lock_fd = self._lock()
        self.db = None
        try:
            self.db = sqlite3.connect(self.db_path, isolation_level=None, check_same_thread=False)
            self._check_foreign()  # before anything is written to it
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("PRAGMA synchronous=FULL")  # a commit is on disk before the request is acknowledged
            self.db.executescript(_SCHEMA)
            self._online = online
            self._fresh()
            self._check_meta()
            self.recovered_events = self._recover()
        except sqlite3.DatabaseError as e:
            self.close()
            raise ValueError(f"{self.db_path}: not a usable jaxbandits serve database ({e}: damaged, or not an "
                             "SQLite file); restore it from a copy, or serve with a new --db") from None
        except BaseException:
            self.close()
            raise

    # ------------------------------------------------------------------ storage
    def _lock(self):
        import fcntl

        d = os.path.dirname(os.path.abspath(self.db_path))
        os.makedirs(d, exist_ok=True)
        fd = os.open(self.db_path + ".lock", os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            raise OSError(f"{self.db_path}: in use by another jaxbandits serve (lock {self.db_path}.lock)") from None
        return fd

    def _fresh(self):
        online = self._online
        self.learner = online.Learner(self.policy, self.channel, list(self.config.arms), key=int(self.config.seed),
                                      horizon=self.config.horizon, max_pending=self.config.max_pending,
                                      clock=self.clock)
        K = len(self.config.arms)
        self.host = {"decisions": [0] * K, "events": [0] * K, "rewards": [0.0] * K}
        self.seq = 0

    def _check_foreign(self):
        """Refuse another application's database before writing anything to it: tables other
        than the service's own."""
        tables = sorted(r[0] for r in self.db.execute("SELECT name FROM sqlite_master WHERE type='table'"))
        other = [t for t in tables if t not in ("meta", "events", "snapshots") and not t.startswith("sqlite_")]
        if other or (tables and "meta" not in tables):
            raise ValueError(f"{self.db_path}: not a jaxbandits serve database (it holds the table(s) "
                             f"{', '.join(other or tables)} of another application); nothing was written to it: "
                             "choose another --db")

    def _check_meta(self):
        from ._version import __version__

        rows = dict(self.db.execute("SELECT key, value FROM meta").fetchall())
        want = {"format": DB_FORMAT, "format_version": str(DB_FORMAT_VERSION), "config": self.config.canonical()}
        if not rows:
            self.db.execute("BEGIN IMMEDIATE")
            for k, v in {**want, "library_version": __version__, "created": str(time.time())}.items():
                self.db.execute("INSERT INTO meta VALUES (?, ?)", (k, v))
            self.db.execute("COMMIT")
            return
        if rows.get("format") != DB_FORMAT:
            raise ValueError(f"{self.db_path}: not a jaxbandits serve database (format {rows.get('format')!r})")
        if rows.get("format_version") == "1" and rows.get("config") == want["config"]:
            # version 1 -> 2: same tables; from now on decide events also log their propensities
            # (earlier decisions have none: jaxbandits.ope refuses them, naming the version)
            self.db.execute("BEGIN IMMEDIATE")
            self.db.execute("UPDATE meta SET value = ? WHERE key = 'format_version'", (want["format_version"],))
            self.db.execute("INSERT OR REPLACE INTO meta VALUES ('upgraded_from_1_at_seq', "
                            "(SELECT COALESCE(MAX(seq), 0) FROM events))")
            self.db.execute("COMMIT")
            rows["format_version"] = want["format_version"]
        if rows.get("format_version") != want["format_version"]:
            raise ValueError(f"{self.db_path}: database format version {rows.get('format_version')}, this "
                             f"jaxbandits reads version {DB_FORMAT_VERSION}")
        if rows.get("config") != want["config"]:
            try:
                old = json.loads(rows["config"])
                new = self.config.to_json()
                diff = sorted(k for k in set(old) | set(new) if old.get(k) != new.get(k))
            except (ValueError, KeyError, TypeError, AttributeError):
                raise ValueError(f"{self.db_path}: its meta table's config is not a config (a damaged or edited "
                                 "database): restore the database, or serve with a new --db") from None
            raise ValueError(f"{self.db_path}: the database was created for another config (differs in {diff}); "
                             "serve it with its own config, or start a new --db")

    def _recover(self) -> int:
        online = self._online
        row = self.db.execute("SELECT seq, state FROM snapshots ORDER BY seq DESC LIMIT 1").fetchone()
        if row is not None:
            try:
                state, extra = online.loads(row[1], self.policy, self.channel, return_extra=True)
            except Exception:  # unreadable (e.g. written by an incompatible version): the log alone is replayed
                state = None
            if state is not None:
                self.learner.state = state
                self.host = extra["host"]
                self.seq = int(row[0])
        n = 0
        for seq, kind, body in self.db.execute("SELECT seq, kind, body FROM events WHERE seq > ? ORDER BY seq",
                                               (self.seq,)).fetchall():
            try:
                self._apply(kind, json.loads(body))
            except (ValueError, KeyError, TypeError, IndexError) as e:  # a damaged or edited log
                what = f"the key {e.args[0]!r} is missing" if isinstance(e, KeyError) and e.args else " ".join(
                    str(e).split())
                raise ValueError(f"{self.db_path}: event {seq} ({kind}) of the log cannot be replayed ({what}; a "
                                 "damaged or edited database): restore the database, or serve with a new --db") from None
            self.seq = int(seq)
            n += 1
        return n

    def _snapshot(self):
        blob = self._online.dumps(self.learner.state, extra={"arms": list(self.config.arms), "host": self.host,
                                                             "seq": self.seq})
        self.db.execute("BEGIN IMMEDIATE")
        self.db.execute("INSERT INTO snapshots VALUES (?, ?, ?)", (self.seq, blob, time.time()))
        self.db.execute("DELETE FROM snapshots WHERE seq < (SELECT MIN(seq) FROM (SELECT seq FROM snapshots "
                        "ORDER BY seq DESC LIMIT 2))")
        self.db.execute("COMMIT")

    def _commit(self, kind, body, saved):
        """Log the applied request; on failure restore the state before it and refuse."""
        try:
            self.db.execute("BEGIN IMMEDIATE")
            self.db.execute("INSERT INTO events VALUES (?, ?, ?, ?)",
                            (self.seq + 1, kind, json.dumps(body, separators=(",", ":")), time.time()))
            self.db.execute("COMMIT")
        except BaseException as e:
            with contextlib.suppress(sqlite3.Error):
                if self.db.in_transaction:
                    self.db.execute("ROLLBACK")
            self.learner.state, self.host = saved
            if isinstance(e, sqlite3.Error):  # a full disk ("database or disk is full"), an I/O error: say so
                full = "full" in str(e).lower()
                raise BadRequest(f"the event log {self.db_path} could not be written ({e}): the request was not "
                                 "applied" + ("; free disk space and send it again" if full else ""),
                                 507 if full else 503) from None
            raise
        self.seq += 1
        if self.seq % self.config.snapshot_every == 0:
            try:
                self._snapshot()
            except sqlite3.Error:  # the log holds everything: a missed snapshot only lengthens a replay
                if self.db.in_transaction:
                    self.db.execute("ROLLBACK")

    # ------------------------------------------------------------------ requests (applied identically on replay)
    def _apply(self, kind, body):
        lr = self.learner
        if body.get("now") is not None:
            lr.advance(body["now"])
        if kind == "decide":
            ids, arms, props = lr.decide(n=int(body["n"]), propensity=self.config.propensity_samples())
            # logged with the decision (docs/ope.md): exact for memo_probs policies, else Monte Carlo
            body.update(ids=ids, arms=arms, propensity=props,
                        propensity_samples=self._propensity_samples())
            counts = np.bincount([lr.index[a] for a in arms], minlength=len(lr.arms))
            self.host["decisions"] = [int(x) + int(c) for x, c in zip(self.host["decisions"], counts)]
            return ids, arms
        if kind == "feedback":
            ids = body["ids"]
            rewards = body.get("rewards")
            acts = np.asarray(lr.state.pending.action)
            codes = lr.feedback(ids, rewards) if ids else []
            H = acts.shape[0]
            ev, rw = list(self.host["events"]), list(self.host["rewards"])
            for j, (i, c) in enumerate(zip(ids, codes)):
                if c == "accepted":
                    a = int(acts[i % H])
                    ev[a] += 1
                    rw[a] += 1.0 if rewards is None else float(rewards[j])
            self.host["events"], self.host["rewards"] = ev, rw
            body.update(round=int(lr.state.t), codes=codes)
            return codes
        if kind == "advance":
            body["round"] = int(lr.state.t)
            return None
        raise ValueError(f"unknown event kind {kind!r} in the log")

    def _propensity_samples(self) -> int:
        """0 when the logged propensities are exact (a policy that declares its law, with or without
        an exploration floor), else their Monte Carlo sample size."""
        return 0 if self.config.propensity_exact() else self.config.propensity_samples()

    def _now(self, now):
        if now is None:
            return time.time() if self.clock is not None else None
        _number("now", now)
        if self.clock is None:
            if not isinstance(now, int) or now < 0:
                raise BadRequest(f"now must be an integer round >= 0 (no clock is configured), got {now!r}")
            if now > self._online.MAX_ROUND:
                raise BadRequest(f"now must be <= {self._online.MAX_ROUND}, got {now}")
        try:
            r = now if self.clock is None else self.clock.round(now)
        except (TypeError, ValueError) as e:
            raise BadRequest(str(e)) from None
        ahead = r - int(self.learner.state.t)
        if ahead > self.config.max_advance:
            raise BadRequest(f"now={now!r} is {ahead} rounds after the open round {int(self.learner.state.t)}; one "
                             f"request may advance the clock by at most {self.config.max_advance} rounds (max_advance)")
        return now

    def _saved(self):
        return self.learner.state, {k: list(v) for k, v in self.host.items()}

    def decide(self, n=1, now=None) -> dict:
        if isinstance(n, bool) or not isinstance(n, int):
            raise BadRequest(f"n must be an integer, got {n!r}")
        if n < 1:
            raise BadRequest(f"n must be >= 1, got {n}")
        if n > self.config.max_batch:
            raise BadRequest(f"n must be <= {self.config.max_batch} (max_batch), got {n}", 413)
        body = {"n": n, "now": self._now(now)}
        saved = self._saved()
        ids, arms = self._apply("decide", body)
        self._commit("decide", body, saved)
        return {"ids": ids, "arms": arms}

    def feedback(self, events, now=None) -> dict:
        if not isinstance(events, list):
            raise BadRequest(f"events must be a list, got {type(events).__name__}")
        if len(events) > self.config.max_batch:
            raise BadRequest(f"events must hold at most {self.config.max_batch} events (max_batch), got "
                             f"{len(events)}", 413)
        from .online import REWARD_LIMIT

        zeros = self.channel.feedback.zeros_observed
        lr = self.learner
        acts = rounds = None
        ids, rewards = [], []
        for j, e in enumerate(events):
            if not isinstance(e, dict):
                raise BadRequest(f"events[{j}] must be an object with an id, got {e!r}")
            unknown = set(e) - {"id", "reward", "arm"}
            if unknown:
                raise BadRequest(f"events[{j}] has unknown key(s) {sorted(unknown)} (allowed: id, reward, arm)")
            i = e.get("id")
            if isinstance(i, bool) or not isinstance(i, int):
                raise BadRequest(f"events[{j}].id must be an integer (a decision id), got {i!r}")
            if abs(i) >= _ID_LIMIT:
                raise BadRequest(f"events[{j}].id must be below 2**62 in absolute value, got {i}")
            r = e.get("reward")
            if zeros:
                if r is None:
                    raise BadRequest(f"events[{j}].reward is required: the {self.config.channel['kind']} channel "
                                     "observes every outcome")
                _bad = isinstance(r, bool) or not isinstance(r, (int, float))
                if _bad or not math.isfinite(r) or abs(r) > REWARD_LIMIT:
                    raise BadRequest(f"events[{j}].reward must be a finite number with |reward| <= 2**96 (so that "
                                     f"the float32 sums stay finite), got {r!r}")
                rewards.append(float(r))
            elif r is not None and (isinstance(r, bool) or r != 1):
                raise BadRequest(f"events[{j}].reward: the conversions channel reports conversions only (reward 1 "
                                 f"or no reward), got {r!r}")
            if "arm" in e:
                arm = e["arm"]
                if arm not in lr.index:
                    shown = repr(arm) if len(repr(arm)) <= 60 else repr(arm)[:57] + "..."
                    raise BadRequest(f"events[{j}].arm: unknown arm {shown}; the arms are {lr.arms}")
                if acts is None:
                    acts = np.asarray(lr.state.pending.action)
                    rounds = np.asarray(lr.state.pending.round)
                H = acts.shape[0]
                if 0 <= i and rounds[i % H] == i and lr.arms[int(acts[i % H])] != arm:
                    raise BadRequest(f"events[{j}]: decision {i} chose arm {lr.arms[int(acts[i % H])]!r}, not {arm!r}")
            ids.append(int(i))
        body = {"ids": ids, "rewards": rewards if zeros else None, "now": self._now(now)}
        saved = self._saved()
        codes = self._apply("feedback", body)
        self._commit("feedback", body, saved)
        return {"codes": codes}

    def advance(self, now) -> dict:
        if now is None:
            raise BadRequest("now is required")
        body = {"now": self._now(now)}
        saved = self._saved()
        self._apply("advance", body)
        self._commit("advance", body, saved)
        return {"round": int(self.learner.state.t)}

    def stats(self) -> dict:
        """Per-arm decisions, accepted events and rewards, the policy's estimate where it has one,
        the learner's counters (lost and duplicate events included), the log position."""
        online = self._online
        lr = self.learner
        c = online.stats(lr.state)
        est = _estimates(lr.policy, online.close_round(lr.state))
        arms = {}
        for k, name in enumerate(lr.arms):
            d = self.host["decisions"][k]
            arms[name] = {"decisions": d, "events": self.host["events"][k], "rewards": self.host["rewards"][k],
                          "rate": self.host["rewards"][k] / d if d else None,
                          "estimate": None if est is None else est[k]}
        counters = {k: c[k] for k in online.CODES}
        lost = c["unknown"] + c["outside_window"] + c["expired"] + c["invalid"]
        return {"arms": arms, "decisions": c["decisions"], "round": c["round"], "pending": c["pending"],
                "counters": counters, "lost": lost, "duplicate": c["duplicate"], "log_seq": self.seq,
                "recovered_events": self.recovered_events, "policy": self.policy.name, "channel": str(self.channel)}

    def close(self):
        try:
            if self.db is not None:
                self.db.close()
        finally:
            if self._lock_fd is not None:
                os.close(self._lock_fd)
                self._lock_fd = None


def _estimates(policy, pstate):
    """The policy's own estimate of each arm's mean (``Policy.estimate``), None where it declares none."""
    from .online import arm_estimates

    return arm_estimates(policy, pstate)


def replay_events(config: ServeConfig, rows):
    """A fresh learner of ``config`` driven through ``rows`` of ``(kind, body)`` (the ``events``
    table, in order, bodies as JSON text or dicts): what the log implies, without any snapshot."""
    from . import online

    pol, ch, clock = config.build()
    lr = online.Learner(pol, ch, list(config.arms), key=int(config.seed), horizon=config.horizon,
                        max_pending=config.max_pending, clock=clock)
    for kind, body in rows:
        body = json.loads(body) if isinstance(body, str) else body
        if body.get("now") is not None:
            lr.advance(body["now"])
        if kind == "decide":
            lr.decide(n=int(body["n"]))
        elif kind == "feedback" and body["ids"]:
            lr.feedback(body["ids"], body.get("rewards"))
    return lr


# ----------------------------------------------------------------------------- HTTP
_BODIES = None


def request_models():
    """The request bodies of the HTTP API as pydantic models ``(Decide, Feedback, Advance)``:
    strict types (no ``"3"`` for 3, no ``2.0`` or ``true`` for an integer), unknown keys refused,
    bounds on each field. :func:`create_app` parses and validates each body with them in one step
    (pydantic's own JSON parser: its nesting limit turns a deeply nested body into a 400, never a
    500); what depends on the config (``max_batch``, the arms, the channel's rewards, the clock) is
    checked by :class:`Service` afterwards."""
    global _BODIES
    if _BODIES is None:
        from typing import Annotated, Union

        from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StrictFloat, StrictInt, StrictStr

        def _id(i):
            if abs(i) >= _ID_LIMIT:
                raise ValueError("must be below 2**62 in absolute value")
            return i

        Finite = Annotated[StrictFloat, Field(allow_inf_nan=False)]
        Now = Optional[Union[StrictInt, Finite]]  # a round (no clock) or a timestamp (a clock)

        class _Body(BaseModel):
            model_config = ConfigDict(extra="forbid", strict=True)

        class Decide(_Body):
            n: StrictInt = Field(1, ge=1, description="decisions to make (at most max_batch)")
            now: Now = None

        class Event(_Body):
            id: Annotated[StrictInt, AfterValidator(_id)] = Field(description="a decision id")
            reward: Optional[Finite] = Field(None, description="the reward (conversions: 1 or absent)")
            arm: Optional[StrictStr] = Field(None, description="the arm the decision chose (checked)")

        class Feedback(_Body):
            events: List[Event]
            now: Now = None

        class Advance(_Body):
            now: Union[StrictInt, Finite]

        _BODIES = (Decide, Feedback, Advance)
    return _BODIES


#: pydantic's error types in words (the rest: pydantic's own message).
_WORDS = {"int_type": "must be an integer", "int_parsing": "must be an integer", "int_from_float": "must be an integer",
          "float_type": "must be a finite number", "float_parsing": "must be a finite number",
          "finite_number": "must be a finite number", "list_type": "must be a list", "string_type": "must be a string"}
_FIELDS = ("n", "now", "events", "id", "reward", "arm")


def _validation_message(errors, allowed) -> str:
    """One line naming the field (``events[1].id``) of the first of pydantic's ``errors`` (an unknown
    key first: a misspelt key also makes the right one missing)."""
    e = next((x for x in errors if x.get("type") == "extra_forbidden"), errors[0])
    loc, kind = tuple(e.get("loc", ())), e.get("type", "")
    if kind == "extra_forbidden" and loc:  # the last name is the unknown key itself
        inner = [x for x in loc[:-1] if isinstance(x, int) or x in _FIELDS]
        where = "".join(f"[{x}]" if isinstance(x, int) else f".{x}" for x in inner).lstrip(".")
        return (f"{where + ': ' if where else ''}unknown key {loc[-1]!r} (allowed: "
                f"{', '.join(allowed.get(bool(inner), ()))})")
    path = [x for x in loc if isinstance(x, int) or x in _FIELDS]
    union = len(path) < len(loc)  # a union's member tag ("int", "float"): the field is a number
    where = "".join(f"[{x}]" if isinstance(x, int) else f".{x}" for x in path).lstrip(".")
    got = e.get("input")
    shown = repr(got) if len(repr(got)) <= 60 else repr(got)[:57] + "..."
    if not where:
        return f"the body must be a JSON object, got {type(got).__name__}"
    if kind in ("model_type", "model_attributes_type", "dict_type"):
        return f"{where} must be an object, got {shown}"
    if kind in ("greater_than_equal", "less_than_equal", "greater_than", "less_than"):
        op = {"greater_than_equal": ">=", "less_than_equal": "<=", "greater_than": ">", "less_than": "<"}[kind]
        return f"{where} must be {op} {list((e.get('ctx') or {}).values())[0]}, got {shown}"
    if kind == "value_error":
        return f"{where} {str(e.get('msg', '')).removeprefix('Value error, ')}, got {shown}"
    if kind == "missing":
        return f"{where} is required"
    words = "must be a finite number" if union else _WORDS.get(kind)
    return f"{where} {words}, got {shown}" if words else f"{where}: {e.get('msg', 'invalid')}"


def create_app(service: Service, read_token: Optional[str] = None, write_token: Optional[str] = None):
    """The FastAPI application of ``service`` (requests are served one at a time), with the
    dashboard and the optional access tokens (:mod:`jaxbandits.dashboard`)."""
    from fastapi import FastAPI, Request
    from fastapi.exceptions import RequestValidationError
    from fastapi.responses import JSONResponse

    app = FastAPI(title="jaxbandits serve", description=f"{service.policy.name} on {service.channel}")
    limit = 4096 + 200 * service.config.max_batch  # bytes: a request larger than max_batch events is refused unread

    def _err(status, msg):
        return JSONResponse({"error": msg}, status_code=status)

    @app.exception_handler(RequestValidationError)
    async def _invalid(request, exc):
        errs = exc.errors()
        e = errs[0] if errs else {}
        where = ".".join(str(x) for x in e.get("loc", ()) if x != "body")
        if e.get("type") == "json_invalid":
            return _err(400, f"malformed JSON: {e.get('msg', '')}".strip())
        return _err(422, f"{where or 'body'}: {e.get('msg', 'invalid')}")

    @app.exception_handler(BadRequest)
    async def _bad(request, exc):
        return _err(exc.status, str(exc))

    Decide, Feedback, Advance = request_models()
    allowed = {Decide: {False: ("n", "now")}, Feedback: {False: ("events", "now"), True: ("id", "reward", "arm")},
               Advance: {False: ("now",)}}

    async def _body(request: Request, model):
        """The request's body, read up to the size limit, parsed and validated by ``model``."""
        from pydantic import ValidationError

        cl = request.headers.get("content-length")
        if cl is not None and cl.isdigit() and int(cl) > limit:
            raise BadRequest(f"request body of {cl} bytes is larger than {limit} (max_batch "
                             f"{service.config.max_batch})", 413)
        raw = await request.body()
        if len(raw) > limit:
            raise BadRequest(f"request body larger than {limit} bytes (max_batch {service.config.max_batch})", 413)
        try:
            return model.model_validate_json(raw if raw.strip() else b"{}")
        except ValidationError as e:
            errs = e.errors()
            if errs and errs[0].get("type") == "json_invalid":
                msg = str(errs[0].get("msg", ""))
                if "recursion limit" in msg:  # a body nested deeper than the parser allows
                    raise BadRequest("JSON nested too deeply: the bodies of this API are {\"n\": ...} or "
                                     "{\"events\": [{...}, ...]}", 400) from None
                raise BadRequest(f"malformed JSON: {msg.removeprefix('Invalid JSON: ')}", 400) from None
            raise BadRequest(_validation_message(errs, allowed[model])) from None

    def _schema(model):  # the body's schema in the OpenAPI document (/docs)
        return {"requestBody": {"required": model is not Decide,
                                "content": {"application/json": {"schema": model.model_json_schema()}}}}

    # The handlers are ``async`` and never await while the learner runs: requests are applied one
    # at a time, in the order the log records them.
    @app.post("/decide", openapi_extra=_schema(Decide))
    async def decide(request: Request):
        body = await _body(request, Decide)
        return service.decide(body.n, body.now)

    @app.post("/feedback", openapi_extra=_schema(Feedback))
    async def feedback(request: Request):
        body = await _body(request, Feedback)
        return service.feedback([e.model_dump(exclude_unset=True) for e in body.events], body.now)

    @app.post("/advance", openapi_extra=_schema(Advance))
    async def advance(request: Request):
        body = await _body(request, Advance)
        return service.advance(body.now)

    @app.get("/stats")
    async def stats():
        return service.stats()

    @app.get("/health")
    async def health():
        return {"ok": True, "log_seq": service.seq}

    from .dashboard import install

    install(app, service, read_token=read_token, write_token=write_token)
    return app


def _parse_value(text):
    try:
        return json.loads(text)
    except ValueError:
        return text


def config_from_args(a) -> ServeConfig:
    """The :class:`ServeConfig` of ``jaxbandits serve``'s arguments (a file, then the flags)."""
    policy = None
    if a.policy is not None or a.params:
        policy = {} if a.policy is None else {"name": a.policy}
        for kv in a.params:
            if "=" not in kv:
                raise ValueError(f"--param takes KEY=VALUE (e.g. window=200 or delay.mean=20.0), got {kv!r}")
            k, v = kv.split("=", 1)
            k = k.strip()
            if "." in k:
                outer, inner = k.split(".", 1)
                policy.setdefault(outer, {})[inner] = _parse_value(v)
            else:
                policy[k] = _parse_value(v)
    channel = None
    if a.channel is not None or a.window is not None:
        channel = {} if a.channel is None else {"kind": a.channel}
        if a.window is not None:
            channel["window"] = a.window
    clock = None
    if a.round_length is not None or a.origin is not None:
        clock = {"origin": a.origin if a.origin is not None else 0,
                 "round_length": a.round_length if a.round_length is not None else 1}
    arms = None if a.arms is None else [x.strip() for x in a.arms.split(",")]
    return load_config(a.config, arms=arms, policy=policy, channel=channel, seed=a.seed, clock=clock,
                       max_batch=a.max_batch, snapshot_every=a.snapshot_every, max_pending=a.max_pending,
                       horizon=a.horizon, max_advance=a.max_advance)


def run(config: ServeConfig, db: str, host: str = "127.0.0.1", port: int = 8000, log_level: str = "warning"):
    """Start the service and serve it with uvicorn until interrupted."""
    try:
        import uvicorn
    except ImportError:
        raise ImportError("jaxbandits serve needs FastAPI and uvicorn: pip install 'jaxbandits[serve]'") from None
    from .dashboard import tokens_from_env

    read_token, write_token = tokens_from_env()  # checked before anything compiles
    service = Service(config, db)
    app = create_app(service, read_token, write_token)
    print(f"jaxbandits serve: {service.policy.name} on {service.channel}, {len(config.arms)} arms, db {db} "
          f"(recovered {service.seq} logged requests, {service.recovered_events} replayed), http://{host}:{port}",
          flush=True)
    try:
        uvicorn.run(app, host=host, port=port, log_level=log_level)
    finally:
        service.close()
    return 0
