"""Checks of the *kinds* that the second random sample's survivors showed missing, fifth part (a)
(docs/contributing.md, "Mutation testing"; ``tools/mutants/random/seed2.md``): each test is a kind
of check applied to every case it covers, not a test aimed at one mutated line.

* every bound at the bound: every numeric key of the serve config, every bound of the HTTP request
  bodies, every integer of an experiment file, every argument of ``distributed.initialize``, the
  ``run`` command's ``--runs 1`` and ``--seed 0`` accepted (``--runs 0``, ``--horizon 0``,
  ``--seed -1`` refused);
* error messages read whole: each at its key and line (experiment files, the serve config's
  unknown keys of every table beside a valid one);
* each clause of a guard alone (a foreign database; the access tokens' negative cases);
* a command's printed output read whole (the files the ``wrote`` line names are the manifest's);
* every documented form run once (the placeholder outputs of a split sweep have the real
  simulation's form, field by field, for every ``keep``; a stopped sweep's resume command);
* a stated default pinned (lost records of a policy a Results does not list);
* an uneven size (a pending ring longer than the delay posterior's window).
"""
import json
import math
import pathlib

import numpy as np
import pytest

from jaxbandits.apps import serve
from jaxbandits.core import validate as V
from jaxbandits.experiments import files as F

ROOT = pathlib.Path(__file__).parents[1]
I32 = 2**31 - 1  # the top of an integer config value without a stated top (core.validate.integer's default)


# ------------------------------------------------------------------ every bound of the serve config
def _serve(**kw):
    base = {"arms": ["a", "b"], "policy": {"name": "ucb1"}, "channel": {"kind": "attributed"}}
    return serve.load_config(None, **{**base, **kw})


def _at(path, v):
    """The load_config overrides that set the config key ``path`` (``("policy", "explore")``) to ``v``."""
    if path[0] == "policy":
        return {"policy": {"name": "ucb1", path[1]: v}}
    if path[0] == "channel":
        return {"channel": {"kind": "conversions", path[1]: v}}
    if path[0] == "clock":
        return {"clock": {"origin": 0, "round_length": 1, path[1]: v}}
    return {path[0]: v}


#: Every numeric key of the serve config with its allowed range (docs/online.md, ServeConfig's
#: docstring, core.validate's ranges): (key path, lowest, highest or None, the key its error names).
SERVE_BOUNDS = [
    (("seed",), 0, 2**64 - 1, "seed"),
    (("horizon",), 1, I32, "horizon"),
    (("max_pending",), 1, I32, "max_pending"),
    (("max_batch",), 1, 100_000, "max_batch"),
    (("snapshot_every",), 1, I32, "snapshot_every"),
    (("max_advance",), 1, I32, "max_advance"),
    (("channel", "window"), 0, I32, "channel.window"),
    (("policy", "propensity_samples"), 1, 2**16, "policy.propensity_samples"),
    (("policy", "explore"), 0.0, 1.0, "policy.explore"),
    (("clock", "round_length"), 5e-324, None, "round_length"),  # > 0: the least positive float is allowed
]


def _below(lo):
    return lo - 1 if isinstance(lo, int) else (0.0 if lo > 0 else math.nextafter(lo, -1.0))


@pytest.mark.parametrize("path,lo,hi,word", SERVE_BOUNDS, ids=[".".join(b[0]) for b in SERVE_BOUNDS])
def test_every_numeric_key_of_the_serve_config_is_its_check_at_the_bound(path, lo, hi, word):
    """Every bound at the bound: each numeric key of the serve config is accepted at its lowest and
    highest allowed value (kept as given) and refused one step outside with a ValueError naming the
    key (the key's path as the file writes it) and the value given, before anything is built."""
    for v in (lo, hi):
        if v is None:
            continue
        cfg = _serve(**_at(path, v))
        got = getattr(cfg, path[0]) if len(path) == 1 else getattr(cfg, path[0])[path[1]]
        assert got == v and type(got) is type(v), (path, v, got)
    outside = [_below(lo)] + ([] if hi is None else [hi + 1 if isinstance(hi, int) else math.nextafter(hi, 2.0)])
    for v in outside:
        with pytest.raises(ValueError) as e:
            _serve(**_at(path, v))
        msg = str(e.value)
        assert (msg.startswith(f"{word} must") or msg.startswith(f"config key {word!r} must")) and msg.endswith(f"got {v!r}" if isinstance(v, float) else f"got {v}"), (v, msg)
    if isinstance(lo, int):  # the integer keys say their range the same way (core.validate.integer)
        with pytest.raises(ValueError, match=f"^{word} must be >= {lo}, got {lo - 1}$" if path != ("seed",) else
                           rf"^seed must lie in \[0, 2\*\*64 - 1\] = \[0, {2**64 - 1}\], got -1$"):
            _serve(**_at(path, lo - 1))
        with pytest.raises(ValueError, match=f"^{word} must be <= {hi}, got {hi + 1}$" if path != ("seed",) else
                           rf"^seed must lie in .*, got {2**64}$"):
            _serve(**_at(path, hi + 1))


@pytest.mark.parametrize("table,valid,allowed", [
    ("clock", {"origin": 0, "round_length": 1}, "origin, round_length"),
    ("channel", {"kind": "conversions", "window": 5}, "kind, window"),
    ("policy", {"name": "ucb1", "alpha": 2.0}, "alpha, explore, name, propensity_samples"),
])
def test_an_unknown_key_beside_valid_keys_is_the_one_named_in_every_table(table, valid, allowed, tmp_path):
    """An error message read whole: a misspelt key beside the valid keys of each table of the serve
    config (``round_lenght`` sorts after ``origin``; the valid keys must not be the ones named),
    read from a file: its line, its key, the close match and the allowed keys."""
    bad = {**valid, "zz_" + list(valid)[-1]: 1}
    cfg = {"arms": ["a", "b"], "policy": {"name": "ucb1"}, "channel": {"kind": "attributed"}, table: bad}
    f = tmp_path / "s.json"
    f.write_text(json.dumps(cfg, indent=1))
    line = next(n for n, ln in enumerate(f.read_text().split("\n"), 1) if '"zz_' in ln)
    key = "zz_" + list(valid)[-1]
    with pytest.raises(ValueError) as e:
        serve.load_config(f)
    assert str(e.value) == (f"{f}, line {line}, key {table}.{key}: unknown key {key!r} in table {table!r}"
                            + (" (ucb1)" if table == "policy" else "")
                            + f" (did you mean {list(valid)[-1]!r}?); allowed: {allowed}"), str(e.value)


# ---------------------------------------------------------------- every bound of the request bodies
def test_every_bound_of_the_http_request_bodies_at_the_bound():
    """Every bound at the bound: the request models (``serve.request_models()``) accept ``n = 1``
    and ids of magnitude ``2**62 - 1`` (both signs), and refuse ``n = 0`` and ids of magnitude
    ``2**62`` themselves (docs/online.md: "ids below 2**62 in magnitude"), naming the field."""
    pytest.importorskip("pydantic")
    from pydantic import ValidationError

    Decide, Feedback, _ = serve.request_models()
    assert Decide(n=1).n == 1
    with pytest.raises(ValidationError, match="greater than or equal to 1"):
        Decide(n=0)
    for i in (2**62 - 1, -(2**62 - 1), 0):
        assert Feedback(events=[{"id": i}]).events[0].id == i
    for i in (2**62, -(2**62), 2**63):
        with pytest.raises(ValidationError) as e:
            Feedback(events=[{"id": 0}, {"id": i}])
        errs = e.value.errors()
        assert [x["loc"] for x in errs] == [("events", 1, "id")], errs
        assert "must be below 2**62 in absolute value" in errs[0]["msg"], errs


# ------------------------------------------------------------- every integer of an experiment file
GOOD = """\
horizon = 100
runs = 2
world = {kind = "envs.bernoulli", means = [0.5, 0.4]}
channel = {kind = "channels.attributed"}

[policies]
UCB1 = {kind = "classic.ucb1"}
"""

#: Every integer key of an experiment file with its range (schema.FILE_KEYS states them; the
#: file's horizon is 100): (the line that sets it, with V for the value; the key the error names;
#: lowest; highest or None).
FILE_BOUNDS = [
    ("horizon = V", "horizon", 1, 2**24),
    ("runs = V", "runs", 1, None),
    ("seed = V", "seed", 0, 2**64 - 1),
    ("chunk = V", "chunk", 1, None),
    ("record = V", "record", 1, None),
    ('record = ["log", V]', "record", 1, 2**20),
    ("record = [0, V]", "record[1]", 0, 99),
    ("record = [V]", "record[0]", 0, 99),
    ("checkpoints = [10, V]", "checkpoints[1]", 1, 100),
    ("layout = [1, V]", "layout[1]", 1, 100),
    ("layout = [V, 1]", "layout[0]", 1, 100),
]


def _file(tmp_path, line):
    """GOOD with ``line`` set (replacing the key's line, or appended before the tables); its line number."""
    key = line.split(" =")[0]
    lines = GOOD.split("\n")
    at = next((i for i, ln in enumerate(lines) if ln.startswith(key + " =")), None)
    if at is None:
        at = 2
        lines.insert(at, line)
    else:
        lines[at] = line
    f = tmp_path / "e.toml"
    f.write_text("\n".join(lines))
    return str(f), at + 1


@pytest.mark.parametrize("line,key,lo,hi", FILE_BOUNDS, ids=[b[0] for b in FILE_BOUNDS])
def test_every_integer_of_an_experiment_file_is_its_check_at_the_bound(line, key, lo, hi, tmp_path):
    """Every bound at the bound, the message read whole: each integer key of an experiment file
    (and each point of a list) is accepted at its lowest and highest value, and refused one past
    with exactly ``FILE, line N, key K: must lie in [lo, hi], got v``."""
    for v in (lo, hi):
        if v is not None:
            f, _ = _file(tmp_path, line.replace("V", str(v)))
            doc, _ = F.read(f)
    for v in (lo - 1, None if hi is None else hi + 1):
        if v is None:
            continue
        f, n = _file(tmp_path, line.replace("V", str(v)))
        with pytest.raises(F.FileError) as e:
            F.read(f)
        rng = f"[{lo}, {hi if hi is not None else 'inf'}]"
        assert str(e.value) == f"{f}, line {n}, key {key}: must lie in {rng}, got {v}", str(e.value)


@pytest.mark.parametrize("value", ["inf", "nan", '"x"', "true"])
def test_a_bad_log_lines_value_is_named_by_its_key_and_line_in_every_form(value, tmp_path):
    """An error message read whole: a log_lines value that is not a finite number, at the top of a
    file and in a panel, is named by its own key (``log_lines.UCB1``, ``panels[1].log_lines.U``)
    and line."""
    f, _ = _file(tmp_path, "log_lines = {UCB1 = 1.0, KL = V}".replace("V", value))
    shown = {"inf": "inf", "nan": "nan", '"x"': "'x'", "true": "True"}[value]
    with pytest.raises(F.FileError) as e:
        F.read(f)
    assert str(e.value) == f"{f}, line 3, key log_lines.KL: must be a finite number, got {shown}", str(e.value)
    panels = ("horizon = 100\n\n[[panels]]\nname = 'a'\nworld = {kind = \"envs.bernoulli\", means = [0.5, 0.4]}\n"
              "channel = {kind = \"channels.attributed\"}\npolicies = {U = {kind = \"classic.ucb1\"}}\n\n[[panels]]\n"
              "name = 'b'\nworld = {kind = \"envs.bernoulli\", means = [0.5, 0.4]}\n"
              "channel = {kind = \"channels.attributed\"}\npolicies = {U = {kind = \"classic.ucb1\"}}\n"
              f"log_lines = {{U = {value}}}\n")
    g = tmp_path / "p.toml"
    g.write_text(panels)
    with pytest.raises(F.FileError) as e:
        F.read(str(g))
    assert str(e.value) == f"{g}, line 14, key panels[1].log_lines.U: must be a finite number, got {shown}", str(e.value)


# ------------------------------------------------------- every argument of distributed.initialize
def test_every_argument_of_distributed_initialize_is_its_check_at_the_bound(monkeypatch):
    """Every bound at the bound: the coordinator's port is accepted at 1 and 65535 and refused at 0
    and 65536 (and without a port or a host), ``num_processes`` from 1, ``process_id`` in
    ``[0, num_processes - 1]``; each refusal a ValueError naming the argument before the runtime
    is asked (it is stubbed here: an accepted call reaches it, with the arguments as given)."""
    import jax

    from jaxbandits.experiments import distributed as DIST

    class Reached(Exception):
        pass

    calls = []

    def stub(**kw):
        calls.append(kw)
        raise Reached  # never marks the runtime initialised

    monkeypatch.setattr(jax.distributed, "initialize", stub)

    def accepted(*a, **kw):
        n = len(calls)
        try:
            DIST.initialize(*a, **kw)
        except Reached:
            pass
        return len(calls) == n + 1 or not calls  # (or already initialised by another test: returned)

    for port in (1, 65535):
        assert accepted(f"localhost:{port}", 2, 1)
        if calls:  # (not when another test of this process initialised the runtime: then it returns at once)
            assert calls[-1] == {"coordinator_address": f"localhost:{port}", "num_processes": 2, "process_id": 1}
    for bad in ("localhost:0", "localhost:65536", "localhost:", ":80", "localhost", "localhost:-1", "h:1x"):
        with pytest.raises(ValueError) as e:
            DIST.initialize(bad, 2, 0)
        assert str(e.value) == f"coordinator must be HOST:PORT (a port in 1..65535), got {bad!r}"
    assert accepted("h:1", 1, 0) and accepted("h:1", 3, 2) and accepted("h:1", None, 5)
    for args, msg in ((("h:1", 0, 0), "num_processes must be >= 1, got 0"),
                      (("h:1", 3, 3), "process_id must be <= 2, got 3"),
                      (("h:1", 3, -1), "process_id must be >= 0, got -1"),
                      (("h:1", 1, 1), "process_id must be <= 0, got 1")):
        n = len(calls)
        with pytest.raises(ValueError) as e:
            DIST.initialize(*args)
        assert str(e.value) == msg and len(calls) == n


# ---------------------------------------------------- each clause of the foreign-database guard
@pytest.mark.parametrize("tables,named", [
    (["users"], "users"),                          # another application's table alone
    (["meta", "users"], "users"),                  # beside a table named like the service's own meta
    (["meta", "events", "snapshots", "users"], "users"),
    (["events"], "events"),                        # the service's table names without its meta table
    (["events", "snapshots"], "events, snapshots"),
])
def test_each_clause_of_the_foreign_database_guard_refuses_alone_and_writes_nothing(tables, named, tmp_path):
    """Each clause of a guard alone: a SQLite file with a table the service does not make (whatever
    else it holds), and one with the service's table names but no ``meta`` table, are each refused
    naming the tables, before anything is written to them (the file's bytes are unchanged)."""
    import hashlib
    import sqlite3

    db = tmp_path / "app.db"
    con = sqlite3.connect(db)
    for t in tables:
        con.execute(f"CREATE TABLE {t} (x TEXT)")
        con.execute(f"INSERT INTO {t} VALUES ('theirs')")
    con.commit()
    con.close()
    digest = hashlib.sha256(db.read_bytes()).hexdigest()
    with pytest.raises(ValueError) as e:
        serve.Service(_serve(), str(db))
    assert str(e.value) == (f"{db}: not a jaxbandits serve database (it holds the table(s) {named} of another "
                            "application); nothing was written to it: choose another --db")
    assert hashlib.sha256(db.read_bytes()).hexdigest() == digest


# ----------------------------------------------------------- a stated default: lost records are 0
def test_a_policy_without_lost_records_reports_zero_in_summary_and_results_nc(tmp_path):
    """A stated default pinned: ``Results.lost_to_W`` defaults to no entries (no record lost);
    a policy it does not list reports ``lost_to_W = 0`` in summary.json as in results.nc (read
    back), and the total is the sum of the listed ones."""
    from jaxbandits import Results

    c = {"regret": np.array([[1.0, 2.0], [3.0, 4.0]]), "pulls": np.array([[5, 15], [10, 10]])}
    c.update(expected_regret=c["regret"] / 2, reward=10 - c["regret"])  # the curves Results states
    r = Results("demo", {}, 0, 2, 20, np.array([10, 20]), {"A": c, "B": c})
    assert r.lost_to_W == {}
    s = r.summary()
    assert [s["policies"][k]["lost_to_W"] for k in "AB"] == [0, 0] and s["lost_to_W"] == 0
    r.lost_to_W = {"B": 3}
    s = r.summary()
    assert [s["policies"][k]["lost_to_W"] for k in "AB"] == [0, 3] and s["lost_to_W"] == 3
    r.save(tmp_path / "o", plot=False)
    back = Results.load(tmp_path / "o")
    assert back.lost_to_W == {"A": 0, "B": 3}
    saved = json.loads((tmp_path / "o" / "summary.json").read_text())
    assert {k: v["lost_to_W"] for k, v in saved["policies"].items()} == back.lost_to_W



def test_every_curve_form_of_a_results_is_saved_and_read_back(tmp_path):
    """Every documented form of ``Results.curves`` runs once through save and load: the class's own
    example (regret and pulls alone) and the whole set; what was held comes back, bit for bit, and
    nothing else (saving the example raised KeyError 'expected_regret')."""
    from jaxbandits import Results

    base = {"regret": np.array([[1.0, 2.0], [3.0, 4.0]]), "pulls": np.array([[5, 15], [10, 10]])}
    whole = dict(base, expected_regret=base["regret"] / 2, reward=10 - base["regret"])
    for i, c in enumerate((base, whole)):
        r = Results("demo", {}, 0, 2, 20, np.array([10, 20]), {"UCB1": c})
        r.save(tmp_path / f"o{i}", plot=False)
        back = Results.load(tmp_path / f"o{i}").curves["UCB1"]
        assert sorted(back) == sorted(c)
        for k in c:
            np.testing.assert_array_equal(back[k], c[k])


# ------------------------------------------------- the run command at its lowest, its output read
def _zeros_simulate(monkeypatch):
    """``jaxbandits run``'s simulations stood in by zeros of their form (nothing compiles)."""
    from jaxbandits.engine import prepare as PR
    from jaxbandits.experiments import runner
    from jaxbandits.experiments.sweeping import placeholder_outputs

    def zeros(env, channel, policies, horizon, key, n_runs=1, *, record=None, chunk=None, first_run=0, keep=None,
              stats_block=None, **kw):
        p = PR.prepare(env, channel, policies, horizon, key, n_runs, record=record, chunk=chunk, first_run=first_run,
                       keep=keep, stats_block=stats_block)
        outs = placeholder_outputs(p.problems, p.n_runs, p.record_at, keep=p.keep)
        return outs if isinstance(policies, dict) else next(iter(outs.values()))
    monkeypatch.setattr(runner, "simulate", zeros)


def test_the_run_command_at_its_lowest_settings_and_its_wrote_line_names_the_manifest_files(tmp_path, monkeypatch,
                                                                                           capsys):
    """Every bound at the bound and a command's printed output read whole: ``jaxbandits run
    quickstart --runs 1 --seed 0`` is accepted (exit 0, summary.json records 1 run and seed 0),
    ``--runs 0``, ``--horizon 0`` and ``--seed -1`` are refused naming the option (exit 2); the
    last line printed, ``wrote OUT/summary.json, OUT/results.nc, ...``, names exactly the files the
    folder's manifest lists (summary.json and results.nc first, then the others sorted), each of
    which exists (the simulations stood in by zeros of their form)."""
    from jaxbandits.apps import cli
    from jaxbandits.core import fileio

    _zeros_simulate(monkeypatch)
    monkeypatch.chdir(tmp_path)
    base = ["run", "quickstart", "--horizon", "32", "--no-progress", "--out", "o"]
    for opt, v, msg in (("--runs", "0", "--runs must be >= 1, got 0"), ("--horizon", "0", "--horizon must be >= 1, got 0"),
                        ("--seed", "-1", "--seed must be >= 0, got -1")):
        args = [x for x in base if x not in ("--horizon", "32")] + [opt, v]
        assert cli.main(args) == 2
        assert capsys.readouterr().err.strip() == f"jaxbandits: error: {msg}"
    assert not (tmp_path / "o").exists()
    assert cli.main(base + ["--runs", "1", "--seed", "0"]) == 0
    out = capsys.readouterr().out.strip().splitlines()
    s = json.loads((tmp_path / "o" / "summary.json").read_text())
    assert s["runs"] == 1 and s["seed"] == 0 and s["horizon"] == 32
    files = list(json.loads((tmp_path / "o" / fileio.MANIFEST_NAME).read_text())["files"])
    assert {"summary.json", "results.nc", "table.md"} <= set(files)
    want = ["summary.json", "results.nc"] + sorted(f for f in files if f not in ("summary.json", "results.nc"))
    assert out[-1] == "wrote " + ", ".join(f"o/{f}" for f in want), out[-1]
    assert all((tmp_path / "o" / f).is_file() for f in want)


# ------------------------------------------- the placeholder of a split sweep: every form of keep
def test_the_placeholders_of_a_split_sweep_have_the_simulations_form_for_every_keep():
    """Every documented form run once: for every form of ``keep`` (``"none"``, ``0``, one run, every
    run) and a censoring channel (so ``delayed_regret`` is a field), the zeros that a part of a
    split sweep stands in for a simulation it does not run (``placeholder_outputs``) have the real
    simulation's form field by field: the same fields ``None``, every array of the same shape, the
    same ``t``, width and run count (3 runs of 8 rounds: one compiled program for every keep)."""
    import jax

    from jaxbandits import channels, engine, envs
    from jaxbandits.core import delays
    from jaxbandits.engine import prepare as PR
    from jaxbandits.experiments.sweeping import placeholder_outputs
    from jaxbandits.policies import classic

    env = envs.conversions([0.3, 0.6], delays.fixed(2))
    ch = channels.conversions(window=3)
    pols = {"ucb1": classic.ucb1()}
    key = jax.random.key(0)
    for keep in ("none", 0, 1, "all"):
        real = engine.simulate(env, ch, pols, 8, key, 3, record=2, keep=keep)
        p = PR.prepare(env, ch, pols, 8, key, 3, record=2, keep=keep)
        fake = placeholder_outputs(p.problems, p.n_runs, p.record_at, keep=p.keep)
        assert list(fake) == list(real)
        for lab in real:
            a, b = real[lab], fake[lab]
            for f in a._fields:
                x, y = getattr(a, f), getattr(b, f)
                if f in ("timing", "stats"):
                    assert (x is None) == (y is None), (keep, lab, f)
                    continue
                assert (x is None) == (y is None), (keep, lab, f, x, y)
                if isinstance(x, np.ndarray):
                    assert x.shape == np.shape(y), (keep, lab, f, x.shape, np.shape(y))
                else:
                    assert x == y, (keep, lab, f, x, y)
            assert np.array_equal(a.t, b.t)
        assert (real["ucb1"].regret is None) == (keep in ("none", 0))


# ------------------------------------- a stopped sweep's resume command, in each form that names it
_STOPPING_SWEEP = '''
import os
import signal

from jaxbandits.core.fileio import json_writer, save_files


class Values:
    def __init__(self, config, runs, seed, values):
        self.experiment, self.config, self.runs, self.seed, self.values = "stopsweep", config, runs, seed, values

    def summary(self):
        return {"experiment": self.experiment, "config": self.config, "seed": self.seed, "values": self.values}

    def table(self):
        return str(self.values)

    def save(self, out, plot=True, force=False):
        save_files(out, {"summary.json": json_writer(self.summary())},
                   {"experiment": self.experiment, "config": self.config}, force=force)


def unit(i, config, runs, seed):
    if i == config["stop_after"] and os.path.exists("stop-once"):  # a Ctrl-C while this unit is computed:
        os.remove("stop-once")                                      # the sweep stops before the next
        os.kill(os.getpid(), signal.SIGINT)
    return {"v": i * config["scale"] + seed, "runs": runs}


def run(config, runs, seed, horizon, sweep):
    vals = [sweep.unit({"stopsweep": i, "seed": seed, "scale": config["scale"]},
                       lambda i=i: unit(i, config, runs, seed), kind="json", what="value") for i in range(config["n"])]
    return Values(config, runs, seed, vals)
'''


def test_a_stopped_sweep_prints_the_command_that_resumes_it_registered_or_from_a_file(tmp_path, monkeypatch, capsys):
    """Every documented form run once (docs/results.md, an interrupted run): a sweep stopped by
    Ctrl-C after its second unit, registered by name and defined by an experiment file, exits 130
    and prints ``resume with: jaxbandits run NAME-OR-FILE ... --resume`` (the file's own words for a
    file, the name for a registered sweep), and that command, run, completes it to the
    uninterrupted run's summary."""
    import dataclasses
    import shlex

    from jaxbandits import experiments as X
    from jaxbandits.apps import cli

    (tmp_path / "stopsweep_mod.py").write_text(_STOPPING_SWEEP)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(tmp_path)
    import stopsweep_mod

    (tmp_path / "s.toml").write_text('name = "stopsweep"\nrunner = "stopsweep_mod:run"\nruns = 2\n\n'
                                     '[config]\nn = 4\nscale = 2\nstop_after = 1\n')
    exp = X.Experiment(name="stopsweep-5a", description="a sweep stopped after its second unit", build=None,
                       config={"n": 4, "scale": 2, "stop_after": 1}, horizon=1, runs=2, runner=stopsweep_mod.run,
                       ignores=("horizon",))
    X.register(exp)
    try:
        for target in ("s.toml", "stopsweep-5a"):
            args = ["run", target, "--set", "scale=3", "--seed", "4", "--no-progress"]
            capsys.readouterr()
            (tmp_path / "stop-once").write_text("")
            assert cli.main([*args, "--out", "cut"]) == 130
            err = capsys.readouterr().err
            want = f"jaxbandits run {target} --runs 2 --seed 4 --set scale=3 --out cut --resume"
            assert err.strip().splitlines()[-1] == f"resume with: {want}", err
            assert json.loads((tmp_path / "cut" / "summary.json").read_text())["partial"] is True
            assert cli.main(shlex.split(want)[1:] + ["--no-progress"]) == 0
            assert cli.main([*args, "--out", "whole"]) == 0
            cut, whole = (json.loads((tmp_path / d / "summary.json").read_text()) for d in ("cut", "whole"))
            assert cut == whole and [v["v"] for v in whole["values"]] == [3 * i + 4 for i in range(4)], (cut, whole)
            for d in ("cut", "whole"):
                __import__("shutil").rmtree(tmp_path / d)
    finally:
        X.unregister(exp.name)


# ------------------- the dashboard of a service whose pending ring is longer than the posterior's window
@pytest.fixture(scope="module")
def dmts(tmp_path_factory):
    """A delay-model TS service (posterior window 4: delay pmfs over ages 0..4) with a pending ring
    of 16 slots, 12 decisions made one per round (ages 0..11, so past the window) and a few
    conversions; the HTTP app with a read and a write token; the decisions' (id, arm)."""
    pytest.importorskip("fastapi")
    pytest.importorskip("httpx")
    with __import__("warnings").catch_warnings():  # Starlette's note that it prefers httpx2 to httpx
        __import__("warnings").simplefilter("ignore")
        from fastapi.testclient import TestClient

    cfg = serve.load_config(None, arms=["a", "b"], policy={"name": "delay_model_ts", "window": 4, "refresh": 2},
                            channel={"kind": "conversions", "window": 4}, max_pending=16, seed=1)
    svc = serve.Service(cfg, tmp_path_factory.mktemp("dmts") / "d.db")
    rng = np.random.default_rng(0)
    made = []
    try:
        for _ in range(12):
            out = svc.decide(1)
            made += list(zip(out["ids"], out["arms"]))
            svc.feedback([{"id": i} for i, _ in made[-3:] if rng.random() < 0.3])
        with TestClient(serve.create_app(svc, read_token="r-5a", write_token="w-5a")) as c:
            yield c, svc, made
    finally:
        svc.close()


def test_each_clause_of_the_access_check_alone(dmts):
    """Each clause of a guard alone (the access tokens, docs/online.md, *The dashboard*): the token
    is read only from an ``Authorization`` header of the Bearer scheme (any case), else from
    ``?token=`` on a read. A ``Bearer <token>`` value in another header is refused (reads and
    writes); an ``Authorization`` header of another scheme is not a token, so a read with it and
    ``?token=`` is let in by the query token, and a write with it is refused."""
    c, svc, _ = dmts
    R, W = "r-5a", "w-5a"
    for path in ("/stats", "/estimates"):
        assert c.get(path, headers={"Authorization": f"Bearer {R}"}).status_code == 200
        assert c.get(path, headers={"Authorization": f"bEaReR {R}"}).status_code == 200
        for h in ({"X-Token": f"Bearer {R}"}, {"Cookie": f"Bearer {R}"}, {"Authorization": f"Basic {R}"},
                  {"Authorization": f"Bearer{R}"}, {"Authorization": R}):
            r = c.get(path, headers=h)
            assert r.status_code == 401 and "needs the read token" in r.json()["error"], (path, h, r.text)
        assert c.get(f"{path}?token={R}", headers={"Authorization": "Basic dXNlcjpwYXNz"}).status_code == 200
        assert c.get(f"{path}?token={R}", headers={"X-Other": "Bearer nope"}).status_code == 200
        assert c.get(f"{path}?token={R}", headers={"Authorization": "Bearer nope"}).status_code == 401
    n = svc.learner.state.t
    for h in ({"X-Token": f"Bearer {W}"}, {"Authorization": f"Basic {W}"}):
        r = c.post("/advance", json={"now": int(n)}, headers=h)
        assert r.status_code == 401 and "needs the write token" in r.json()["error"], (h, r.text)


def test_estimates_with_a_pending_ring_longer_than_the_posteriors_window(dmts):
    """An uneven size: the pending ring (16) is longer than the delay posterior's window (ages
    0..4) and holds decisions of every age 0..11. ``GET /estimates`` answers, and the delays the
    fit expects to have been seen are, independently, ``sum_k rate_k pmf_k(d) n_k(age >= d)``
    counted from the decisions made (decision ``i`` made in round ``i``)."""
    c, svc, made = dmts
    r = c.get("/estimates", headers={"Authorization": "Bearer r-5a"})
    assert r.status_code == 200, r.text
    e = r.json()
    d = e["delay"]
    W = len(d["ages"])
    t = int(svc.learner.state.t)
    assert d["source"] == "posterior" and W == 5 and t == 11 and [i for i, _ in made] == list(range(12))
    assert sorted((t - np.asarray(svc.learner.state.pending.round)[:12]).tolist()) == list(range(12))
    want = np.zeros(W)
    for k, arm in enumerate(["a", "b"]):
        rate, pmf = e["arms"][k]["rate"], np.asarray(d["pmf_per_arm"][arm])
        ages = np.array([t - i for i, a in made if a == arm])
        want += rate * pmf * np.array([(ages >= a).sum() for a in range(W)])
    assert np.allclose(d["expected_seen"], want, rtol=1e-6, atol=1e-12), (d["expected_seen"], want)
