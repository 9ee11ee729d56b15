"""The service of ``jaxbandits serve``: the learner (:class:`jaxbandits.online.Learner`) and its
SQLite database. Every request that changes the state is applied, appended to the ``events`` table
and committed before it is acknowledged; a snapshot of the whole state is written every
``snapshot_every`` events; on start the latest snapshot is loaded and the events after it replayed,
so a restart recovers exactly the state the log implies.
"""
import contextlib
import json
import math
import os
import sqlite3
import time

import numpy as np

from .config import ServeConfig


DB_FORMAT = "jaxbandits.serve"  # an on-disk name, kept when the module moved to apps/serve (docs/online.md)


DB_FORMAT_VERSION = 2  # 2: decide events log ids, arms and propensities; feedback and advance events their round


class BadRequest(Exception):
    """A request refused before anything changed: HTTP ``status`` and a one-line message."""

    def __init__(self, message: str, status: int = 422):
        super().__init__(message)
        self.status = status


_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS events (seq INTEGER PRIMARY KEY, kind TEXT NOT NULL, body TEXT NOT NULL,
                                   at REAL NOT NULL);
CREATE TABLE IF NOT EXISTS snapshots (seq INTEGER PRIMARY KEY, state BLOB NOT NULL, at REAL NOT NULL);
"""


ID_LIMIT = 2**62


def _number(name, x):
    if isinstance(x, bool) or not isinstance(x, (int, float)) or (isinstance(x, float) and not math.isfinite(x)):
        raise BadRequest(f"{name} must be a finite number, got {x!r}")
    return x


class Service:
    """The learner of a :class:`ServeConfig` and its SQLite database at ``db`` (created if absent;
    recovered from its snapshot and log if present; refused if it was created for another config).

    Args:
        config: the :class:`ServeConfig` (checked again here).
        db: the SQLite database's path (one service at a time: it is locked while open).

    Attributes:
        config: the configuration.
        policy: the policy the config names.
        channel: the channel the config names.
        clock: the :class:`~jaxbandits.online.Clock`, or ``None``.
        db_path: the database's path.
        learner: the :class:`~jaxbandits.online.Learner`.
        seq: the log position (requests logged so far).
        recovered_events: the events replayed on start (after the latest snapshot).

    Raises:
        ValueError: a damaged database, one that is not SQLite, or one created for another
            config; a config out of range.

    Example:
        >>> import os, tempfile
        >>> cfg = ServeConfig(arms=["a", "b"], policy={"name": "ucb1"}, channel={"kind": "attributed"})
        >>> svc = Service(cfg, os.path.join(tempfile.mkdtemp(), "serve.db"))  # doctest: +SKIP
        >>> svc.decide(n=2)  # doctest: +SKIP
        {'ids': [0, 1], 'arms': ['a', 'a']}
        >>> svc.close()  # doctest: +SKIP
    """

    def __init__(self, config: ServeConfig, db: str):
        from ... import online

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
        from ...version import __version__

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
        from ...online import REWARD_LIMIT

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
            if abs(i) >= ID_LIMIT:
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
        est = online.arm_estimates(lr.policy, online.close_round(lr.state))
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


def replay_events(config: ServeConfig, rows):
    """A fresh learner of ``config`` driven through ``rows`` of ``(kind, body)`` (the ``events``
    table, in order, bodies as JSON text or dicts): what the log implies, without any snapshot.

    Args:
        config: the :class:`ServeConfig` the log was written for.
        rows: ``(kind, body)`` pairs: ``kind`` one of ``"decide"``, ``"feedback"``,
            ``"advance"``; ``body`` a dict or its JSON text (``n``; ``ids`` and ``rewards``;
            ``now``).

    Returns:
        Learner: the :class:`~jaxbandits.online.Learner` after the requests.

    Example:
        >>> cfg = ServeConfig(arms=["a", "b"], policy={"name": "ucb1"}, channel={"kind": "attributed"})
        >>> replay_events(cfg, []).stats()["decisions"]
        0
        >>> rows = [("decide", {"n": 2}), ("feedback", '{"ids": [0, 1], "rewards": [1.0, 0.0]}')]
        >>> replay_events(cfg, rows).stats()["accepted"]  # doctest: +SKIP
        2
    """
    from ... import online

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
