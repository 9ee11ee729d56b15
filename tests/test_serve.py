"""jaxbandits serve: bad requests change nothing; the SQLite log and snapshots recover the exact
state (in process, and after SIGKILL of a real `jaxbandits serve` driven over HTTP by a simulated
world with delayed conversions)."""
import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import jax
import numpy as np
import pytest

pytest.importorskip("fastapi")
httpx = pytest.importorskip("httpx")
with __import__("warnings").catch_warnings():  # Starlette's note that it prefers httpx2 to httpx
    __import__("warnings").simplefilter("ignore")
    from fastapi.testclient import TestClient  # noqa: E402

from jaxbandits import online
from jaxbandits.apps import serve  # noqa: E402
from jaxbandits.apps.cli import main as cli_main  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]

CONFIG = {"arms": ["a", "b", "c"], "seed": 3, "policy": {"name": "delayed_klucb", "window": 200,
                                                        "delay": {"law": "geometric", "mean": 30.0}},
          "channel": {"kind": "conversions", "window": 200}, "max_batch": 100, "snapshot_every": 5}


def _cfg(**kw):
    return serve.load_config(None, **{**CONFIG, **kw})


def _state_bits(state):
    out = []
    for x in jax.tree.leaves(state):
        if jax.numpy.issubdtype(x.dtype, jax.dtypes.prng_key):
            x = jax.random.key_data(x)
        out.append(np.asarray(x).tobytes())
    return out


def _events(db):
    con = sqlite3.connect(str(db))
    try:
        return con.execute("SELECT kind, body FROM events ORDER BY seq").fetchall()
    finally:
        con.close()


# ----------------------------------------------------------------------------- bad requests
@pytest.fixture
def client(tmp_path):
    svc = serve.Service(_cfg(), tmp_path / "s.db")
    with TestClient(serve.create_app(svc)) as c:
        yield c, svc
    svc.close()


def test_a_route_with_a_typed_parameter_gets_the_services_error_form(client):
    """The service's own routes validate their bodies themselves; a route a user adds to the app with
    a parameter FastAPI validates still answers in the service's form: status 422 and
    ``{"error": "<where>: <what>"}`` naming the parameter, not FastAPI's default body."""
    c, _ = client

    async def probe(n: int):
        return {"n": n}

    c.app.add_api_route("/probe/{n}", probe, methods=["GET"])
    assert c.get("/probe/7").json() == {"n": 7}
    r = c.get("/probe/seven")
    assert r.status_code == 422 and list(r.json()) == ["error"], r.text
    assert r.json()["error"].startswith("path.n: ") and "integer" in r.json()["error"], r.text


BAD = [
    ("/decide", '{"n": 3', 400, "malformed JSON"),
    ("/decide", '[1, 2]', 422, "JSON object"),
    ("/decide", '{"n": "3"}', 422, "n must be an integer"),
    ("/decide", '{"n": 2.0}', 422, "n must be an integer"),
    ("/decide", '{"n": 0}', 422, "n must be >= 1"),
    ("/decide", '{"n": 101}', 413, "max_batch"),
    ("/decide", '{"n": 1, "arms": ["a"]}', 422, "unknown key"),
    ("/decide", '{"n": 1, "now": "soon"}', 422, "now must be a finite number"),
    ("/decide", '{"n": 1, "now": -1}', 422, "now must be an integer round >= 0"),
    ("/advance", '{"now": 20000002}', 422, "max_advance"),
    ("/advance", '{}', 422, "now is required"),
    ("/feedback", '{"events": [{"id": 0, "arm": "z"}]}', 422, "unknown arm 'z'"),
    ("/feedback", '{"events": [{"id": 0, "arm": "WRONG"}]}', 422, "decision 0 chose arm"),
    ("/feedback", '{"events": [{"id": "0"}]}', 422, "events[0].id must be an integer"),
    ("/feedback", '{"events": [{"id": 0}, {"id": true}]}', 422, "events[1].id must be an integer"),
    ("/feedback", '{"events": [{"id": 0, "reward": 0.5}]}', 422, "conversions only"),
    ("/feedback", '{"events": [{"id": 0, "when": 3}]}', 422, "unknown key"),
    ("/feedback", '{"events": {"id": 0}}', 422, "events must be a list"),
    ("/feedback", '{"ids": [0]}', 422, "unknown key"),
    ("/feedback", '{"events": [{"id": 99999999999999999999}]}', 422, "below 2**62"),
    ("/feedback", json.dumps({"events": [{"id": 0}] * 101}), 413, "max_batch"),
    ("/feedback", json.dumps({"events": [{"id": 0, "arm": "a" * 300}] * 100}), 413, "larger than"),
]


def test_bad_requests_get_a_4xx_naming_the_field_and_change_nothing(client):
    c, svc = client
    r = c.post("/decide", content='{"n": 3}')
    assert r.status_code == 200 and r.json()["ids"] == [0, 1, 2]
    arm0 = r.json()["arms"][0]
    before = c.get("/stats").json()
    bits = _state_bits(svc.learner.state)
    for path, body, status, msg in BAD:
        body = body.replace("WRONG", "b" if arm0 != "b" else "c")
        r = c.post(path, content=body, headers={"content-type": "application/json"})
        assert r.status_code == status, (path, body[:60], r.status_code, r.text)
        assert msg in r.json()["error"], (body[:60], r.json())
    assert c.get("/stats").json() == before
    assert _state_bits(svc.learner.state) == bits and len(_events(svc.db_path)) == 1
    # a good request with the right arm, then unknown and duplicate events: counted, not refused
    r = c.post("/feedback", json={"events": [{"id": 0, "arm": arm0}, {"id": 0}, {"id": 7}]})
    assert r.status_code == 200 and r.json()["codes"] == ["accepted", "duplicate", "unknown"]
    s = c.get("/stats").json()
    assert s["arms"][arm0]["events"] == 1 and s["duplicate"] == 1 and s["lost"] == 1 and s["log_seq"] == 2


def test_config_errors_name_the_key(tmp_path, capsys):
    with pytest.raises(ValueError, match="policy.name"):
        _cfg(policy={"name": "nope"})
    with pytest.raises(ValueError, match="channel.window"):
        _cfg(channel={"kind": "conversions"})
    with pytest.raises(ValueError, match="unknown key"):
        serve.load_config(None, **CONFIG, colour="red")
    with pytest.raises(ValueError, match="policy.delay.law"):
        _cfg(policy={"name": "delayed_klucb", "window": 20, "delay": {"law": "zipf"}}).build()
    with pytest.raises(ValueError, match="unknown key.*'alpah'"):
        _cfg(policy={"name": "ucb1", "alpah": 2.0}, channel={"kind": "attributed"}).build()
    with pytest.raises(ValueError, match="round_length"):
        _cfg(clock={"origin": 0, "round_length": -1})
    bad = tmp_path / "bad.toml"
    bad.write_text('arms = ["a"]\n[policy]\nname = "ucb1"\n[channel]\nkind = "smoke"\n')
    assert cli_main(["serve", str(bad), "--db", str(tmp_path / "x.db")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("jaxbandits: error: config key 'channel.kind'") and "Traceback" not in err
    assert not (tmp_path / "x.db").exists()  # refused before anything was created
    junk = tmp_path / "junk.db"
    junk.write_text("not a database\n" * 100)
    with pytest.raises(ValueError, match="not a usable jaxbandits serve database"):
        serve.Service(_cfg(), junk)


def test_restart_recovers_snapshot_plus_log_exactly_and_refuses_another_config(tmp_path):
    db = tmp_path / "s.db"
    cfg = _cfg(clock={"origin": 1000.0, "round_length": 2.0})
    svc = serve.Service(cfg, db)
    rng = np.random.default_rng(0)
    now = 1000.0
    for k in range(12):  # 24 logged requests: snapshots at 5, 10, 15, 20 (the last two kept)
        now += float(rng.choice([0.5, 2.0, 7.0]))
        out = svc.decide(int(rng.integers(1, 9)), now=now)
        back = [{"id": i} for i in out["ids"] if rng.random() < 0.3] + [{"id": out["ids"][0]}]
        svc.feedback(back, now=now + 1.0)
    stats, bits, seq = svc.stats(), _state_bits(svc.learner.state), svc.seq
    svc.close()
    con = sqlite3.connect(str(db))
    assert [r[0] for r in con.execute("SELECT seq FROM snapshots ORDER BY seq")] == [15, 20]
    con.close()
    again = serve.Service(cfg, db)
    assert again.recovered_events == 4 and again.seq == seq == 24
    assert _state_bits(again.learner.state) == bits
    assert {k: v for k, v in again.stats().items() if k != "recovered_events"} == \
        {k: v for k, v in stats.items() if k != "recovered_events"}
    # the whole log replayed from scratch, no snapshot: the same state
    full = serve.replay_events(cfg, _events(db))
    assert _state_bits(full.state) == bits
    again.close()
    with pytest.raises(ValueError, match=r"another config \(differs in \['seed'\]\)"):
        serve.Service(_cfg(seed=4, clock={"origin": 1000.0, "round_length": 2.0}), db)
    # an unreadable snapshot is skipped: the whole log is replayed, to the same bits
    con = sqlite3.connect(str(db))
    con.execute("UPDATE snapshots SET state = X'00'")
    con.commit()
    con.close()
    again = serve.Service(cfg, db)
    assert again.recovered_events == 24 and _state_bits(again.learner.state) == bits
    again.close()
    # one server per database (an OS lock), released when the refused service closed
    first = serve.Service(cfg, db)
    with pytest.raises(OSError, match="in use by another jaxbandits serve"):
        serve.Service(cfg, db)
    first.close()


# ----------------------------------------------------------------------------- a real server, killed
def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class _Server:
    def __init__(self, tmp, config_path, db):
        self.args = [sys.executable, "-m", "jaxbandits.apps.cli", "serve", str(config_path), "--db", str(db)]
        self.env = {**os.environ, "PYTHONPATH": str(ROOT), "JAXBANDITS_CACHE_DIR": str(tmp / "jax-cache"),
                    "JAX_PLATFORMS": "cpu"}
        self.log = tmp / "server.log"
        self.proc = None

    def start(self):
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc = subprocess.Popen(self.args + ["--port", str(self.port)], env=self.env, cwd=str(ROOT),
                                     stdout=open(self.log, "ab"), stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            assert self.proc.poll() is None, self.log.read_text()[-2000:]
            try:
                if httpx.get(self.url + "/health", timeout=1.0).status_code == 200:
                    return
            except httpx.TransportError:
                time.sleep(0.1)
        raise AssertionError("the server did not start: " + self.log.read_text()[-2000:])

    def kill(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()

    def stop(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait()


def _drive(tmp_path, n_decisions, batch, kill_at):
    """A simulated world (conversion rates 0.3 / 0.2 / 0.1, geometric delays of mean 30 decisions,
    window 200) driven through HTTP, conversions reported after each batch of decisions; the server is SIGKILLed while a request is in flight at batch
    ``kill_at`` and restarted; unacknowledged feedback is retried (duplicates must not count)."""
    cfg_path = tmp_path / "serve.json"
    cfg_path.write_text(json.dumps({**CONFIG, "max_batch": 1000, "snapshot_every": 7}))
    db = tmp_path / "serve.db"
    srv = _Server(tmp_path, cfg_path, db)
    rng = np.random.default_rng(0)
    rate = {"a": 0.3, "b": 0.2, "c": 0.1}
    due = {}  # decision count at which the conversion is reported -> ids
    acked = []  # acknowledged feedback batches (ids)
    retry = None
    made = 0
    killed = False
    try:
        srv.start()
        http = httpx.Client(timeout=30.0)
        for k in range(n_decisions // batch + 60):  # bounded: a few extra rounds of requests for the restart
            if made >= n_decisions:
                break
            if k == kill_at and not killed:
                threading.Timer(0.002, srv.kill).start()
                killed = True
            try:
                if retry is not None:
                    r = http.post(srv.url + "/feedback", json={"events": [{"id": i} for i in retry]})
                    r.raise_for_status()
                    acked.append(retry)
                    retry = None
                r = http.post(srv.url + "/decide", json={"n": batch})
                r.raise_for_status()
                out = r.json()
                made += batch
                for i, a in zip(out["ids"], out["arms"]):
                    if rng.random() < rate[a]:
                        due.setdefault(i + int(rng.geometric(1 / 31)), []).append(i)
                back = sorted(i for d in [d for d in due if d <= made] for i in due.pop(d))
                if k % 3 == 0 and back:
                    back.append(back[-1])  # the tracker repeats itself
                if back:
                    retry = back
                    r = http.post(srv.url + "/feedback", json={"events": [{"id": i} for i in back]})
                    r.raise_for_status()
                    acked.append(back)
                    retry = None
            except httpx.TransportError:
                assert killed
                srv.proc.wait(timeout=30)
                srv.start()  # recover: snapshot + log tail
                http = httpx.Client(timeout=30.0)
        assert made >= n_decisions and killed
        stats = http.get(srv.url + "/stats").json()
    finally:
        srv.stop()
    rows = _events(db)
    import re

    starts = [int(x) for x in re.findall(r"recovered (\d+) logged requests", srv.log.read_text())]
    assert len(starts) == 2 and starts[0] == 0 and starts[1] > 0  # the restart found the log
    # no acknowledged feedback lost: every acknowledged batch is in the log, in order
    logged = [json.loads(b)["ids"] for kind, b in rows if kind == "feedback"]
    it = iter(logged)
    assert all(any(x == a for x in it) for a in acked), "an acknowledged feedback batch is missing from the log"
    assert len(logged) - len(acked) <= 1  # at most the one in flight when the server was killed
    # the final state equals an offline replay of the same log, through the online API directly
    lr = online.Learner(*serve.load_config(cfg_path).build()[:2], CONFIG["arms"], key=CONFIG["seed"])
    arm_counts = dict.fromkeys(CONFIG["arms"], 0)
    for kind, b in rows:
        b = json.loads(b)
        if kind == "decide":
            for a in lr.decide(n=b["n"])[1]:
                arm_counts[a] += 1
        elif b["ids"]:
            lr.feedback(b["ids"])
    assert {a: v["decisions"] for a, v in stats["arms"].items()} == arm_counts
    c = online.stats(lr.state)
    assert stats["counters"] == {k: c[k] for k in online.CODES} and stats["pending"] == c["pending"]
    assert stats["decisions"] == sum(arm_counts.values()) >= n_decisions
    assert stats["duplicate"] > 0 and c["accepted"] > n_decisions * 0.1
    est = online.arm_estimates(lr.policy, online.close_round(lr.state))
    assert [stats["arms"][a]["estimate"] for a in CONFIG["arms"]] == est
    return stats


def test_serve_killed_and_restarted_over_http_loses_no_acknowledged_feedback(tmp_path):
    _drive(tmp_path, n_decisions=600, batch=100, kill_at=3)


@pytest.mark.slow
def test_serve_killed_and_restarted_over_http_1e4_decisions(tmp_path):
    _drive(tmp_path, n_decisions=10_000, batch=100, kill_at=40)


def test_attributed_channel_takes_rewards_and_reports_the_means(tmp_path):
    cfg = _cfg(policy={"name": "ucb1"}, channel={"kind": "attributed"}, max_pending=64)
    svc = serve.Service(cfg, tmp_path / "u.db")
    with TestClient(serve.create_app(svc)) as c:
        out = c.post("/decide", json={"n": 6}).json()
        for body, msg in (('{"events": [{"id": 0}]}', "reward is required"),
                          ('{"events": [{"id": 0, "reward": NaN}]}', "finite number"),
                          ('{"events": [{"id": 0, "reward": "1"}]}', "finite number")):
            r = c.post("/feedback", content=body)
            assert r.status_code == 422 and msg in r.json()["error"], r.text
        rewards = [1.0, 0.0, 0.5, 1.0, 0.25, 0.0]
        r = c.post("/feedback", json={"events": [{"id": i, "reward": x} for i, x in zip(out["ids"], rewards)]})
        assert r.json()["codes"] == ["accepted"] * 6
        c.post("/decide", json={"n": 1})  # closes the round: the rewards reach the policy
        s = c.get("/stats").json()
    for name in cfg.arms:
        got = [x for a, x in zip(out["arms"], rewards) if a == name]
        assert s["arms"][name]["events"] == len(got) and s["arms"][name]["rewards"] == sum(got)
        want = sum(got) / len(got) if got else None  # UCB1 on this channel: the mean of what arrived
        assert s["arms"][name]["estimate"] == (pytest.approx(want, rel=1e-6) if got else None)
    assert sum(1 for name in cfg.arms if s["arms"][name]["events"]) >= 2
    svc.close()


def test_stats_report_the_policy_s_declared_estimate(tmp_path):
    """``/stats`` reports ``Policy.estimate`` of the policy's state: for delay-model TS, the
    conversion rate at the tracked posterior mode, which learns the true rate of the arm it plays
    most; NaN (no estimate yet) is reported as null, and a policy that declares none gives null."""
    cfg = _cfg(arms=["low", "high"], policy={"name": "delay_model_ts", "window": 50, "model": "exponential",
                                             "refresh": 10},
               channel={"kind": "conversions", "window": 50}, max_batch=100)
    svc = serve.Service(cfg, tmp_path / "ts.db")
    rate = {"low": 0.05, "high": 0.5}
    rng = np.random.default_rng(0)
    with TestClient(serve.create_app(svc)) as c:
        s0 = c.get("/stats").json()
        for _ in range(250):  # one decision at a time, its conversion (if any) reported at once
            out = c.post("/decide", json={"n": 1}).json()
            if rng.random() < rate[out["arms"][0]]:
                assert c.post("/feedback", json={"events": [{"id": out["ids"][0]}]}).status_code == 200
        c.post("/decide", json={"n": 1})  # closes the round: the conversions reach the policy
        s = c.get("/stats").json()
    est = {a: s["arms"][a]["estimate"] for a in rate}
    lr = svc.learner
    want = np.asarray(lr.policy.estimate(online.close_round(lr.state)))
    assert [est["low"], est["high"]] == [float(x) for x in want]
    n_high = s["arms"]["high"]["decisions"]
    assert n_high > 150 and abs(est["high"] - 0.5) < 4 * np.sqrt(0.25 / n_high)
    assert est["low"] < 0.3
    assert lr.estimates() == est  # the in-process learner reports the same
    # before any data: the prior's rate, the same for both arms
    assert s0["arms"]["low"]["estimate"] == s0["arms"]["high"]["estimate"]
    svc.close()


def test_estimate_nan_is_null_and_a_policy_without_estimate_gives_null():
    import jax.numpy as jnp

    from jaxbandits import online
    from jaxbandits.policies import classic

    pol = classic.ucb1()
    st = classic.IndexState(None, jnp.array([2.0, 0.0, 1.0, 0.0]))  # arm 0: 2 arrivals, sum 1; arm 1: none
    assert online.arm_estimates(pol, st) == [0.5, None]  # what /stats serves (the service's estimates)
    assert online.arm_estimates(pol._replace(estimate=None), st) is None


def test_a_new_service_of_the_same_config_compiles_nothing(tmp_path):
    """Policies are values: the same config builds an equal (not the same) policy, and a second
    service (a restart, another database) reuses the first one's compiled programs."""
    from jaxbandits.policies import conversions as CV

    p1, c1, _ = _cfg().build()
    p2, c2, _ = _cfg().build()
    assert p1 == p2 and p1 is not p2 and c1 == c2 and isinstance(p1, CV.delayed_klucb.value_type)
    assert p1.window == 200 and p1.label is None
    a = serve.Service(_cfg(), tmp_path / "a.db")
    try:
        a.decide(2)
        n = online.pure.decide_batch._cache_size() + online.pure.decide_upto._cache_size()
        assert n > 0
    finally:
        a.close()
    b = serve.Service(_cfg(), tmp_path / "b.db")
    try:
        b.decide(2)
        assert online.pure.decide_batch._cache_size() + online.pure.decide_upto._cache_size() == n
    finally:
        b.close()
