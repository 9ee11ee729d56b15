"""Experiment files (``jaxbandits run FILE.toml``, ``jaxbandits show NAME --toml``): every registered
experiment written out and read back builds the same objects (and, run, the same summary.json
numbers); components of one's own by import path; schema errors name the key and its line; the
CLI's help documents every option."""
import argparse
import functools
import json
import math
import os
import tomllib
import types

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jaxbandits import experiments as X
from jaxbandits.experiments import files as F
from jaxbandits.apps.cli import main, parser

HERE = os.path.dirname(os.path.abspath(__file__))


@pytest.fixture(autouse=True)
def _cache_in_tmp(tmp_path, monkeypatch):
    """``run`` turns the persistent compilation cache on: keep it out of the user's home; the user
    components of tests/user_components.py are importable by their path."""
    monkeypatch.setenv("JAXBANDITS_CACHE_DIR", str(tmp_path / "jax-cache"))
    monkeypatch.syspath_prepend(HERE)


# ----------------------------------------------------------------------------- structural equality
#: attributes that are not a value's data: how it was made (jaxbandits.core.values.Made), its cached hash
TRANSIENT = ("_made", "_value_hash")


def difference(a, b, path="", seen=None):
    """Where two objects differ (None if they are the same program and data): functions by code,
    closure, defaults and module; arrays bitwise with dtype and shape; objects field by field."""
    seen = set() if seen is None else seen
    if (id(a), id(b)) in seen or a is b:
        return None
    seen.add((id(a), id(b)))
    if isinstance(a, np.ndarray) and isinstance(b, list) or isinstance(a, list) and isinstance(b, np.ndarray):
        # a numpy array written to a file reads back as a list; equal when np.asarray(list) is that array
        a, b = np.asarray(a), np.asarray(b)
    if type(a) is not type(b):
        return f"{path}: {type(a).__name__} vs {type(b).__name__}"
    if isinstance(a, (types.FunctionType,)):
        if a.__code__ is not b.__code__:
            return f"{path}: functions {a.__qualname__} vs {b.__qualname__}"
        if a.__globals__ is not b.__globals__:
            return f"{path}: functions of different modules"
        for attr in ("__defaults__", "__kwdefaults__"):
            d = difference(getattr(a, attr), getattr(b, attr), f"{path}.{attr}", seen)
            if d:
                return d
        ca, cb = a.__closure__ or (), b.__closure__ or ()
        for name, x, y in zip(a.__code__.co_freevars, ca, cb):
            d = difference(x.cell_contents, y.cell_contents, f"{path}<{a.__qualname__}>.{name}", seen)
            if d:
                return d
        return None
    if isinstance(a, functools.partial):
        return (difference(a.func, b.func, path + ".func", seen) or difference(a.args, b.args, path + ".args", seen)
                or difference(a.keywords, b.keywords, path + ".keywords", seen))
    if isinstance(a, types.MethodType):
        return difference(a.__func__, b.__func__, path, seen) or difference(a.__self__, b.__self__, path, seen)
    if hasattr(a, "__array__") and not isinstance(a, (list, tuple, dict)):
        x, y = np.asarray(a), np.asarray(b)
        if x.dtype != y.dtype or x.shape != y.shape:
            return f"{path}: array {x.dtype}{x.shape} vs {y.dtype}{y.shape}"
        if x.dtype.kind in "biufc" and x.tobytes() != y.tobytes():
            return f"{path}: array values differ"
        return None
    if isinstance(a, (list, tuple)):
        if len(a) != len(b):
            return f"{path}: length {len(a)} vs {len(b)}"
        for i, (x, y) in enumerate(zip(a, b)):
            d = difference(x, y, f"{path}[{i}]", seen)
            if d:
                return d
        return None
    if isinstance(a, dict):
        if list(a) != list(b):
            return f"{path}: keys {list(a)} vs {list(b)}"
        for k in a:
            d = difference(a[k], b[k], f"{path}[{k!r}]", seen)
            if d:
                return d
        return None
    if isinstance(a, float):
        return None if (a == b or (math.isnan(a) and math.isnan(b))) else f"{path}: {a!r} vs {b!r}"
    if isinstance(a, (int, str, bool, bytes, type(None), type)) or callable(a) and not hasattr(a, "__dict__"):
        return None if a == b else f"{path}: {a!r} vs {b!r}"
    fields = {}
    if hasattr(a, "__dict__"):  # without the per-object caches (the made-by record, a cached hash)
        fields.update({k: v for k, v in vars(a).items() if k not in TRANSIENT})
    for cls in type(a).__mro__:
        for s in getattr(cls, "__slots__", ()):
            if hasattr(a, s):
                fields[s] = getattr(a, s)
    if not fields:
        return None if a == b else f"{path}: {a!r} vs {b!r}"
    other = {k: v for k, v in vars(b).items() if k not in TRANSIENT} if hasattr(b, "__dict__") else {}
    for cls in type(b).__mro__:
        for s in getattr(cls, "__slots__", ()):
            if hasattr(b, s):
                other[s] = getattr(b, s)
    return difference(fields, other, f"{path}<{type(a).__name__}>", seen)


def test_difference_sees_a_changed_parameter():
    """The comparison is not blind: a parameter, a constructor or a nested law that differs is found."""
    from jaxbandits import delays as D
    from jaxbandits import envs as E
    from jaxbandits.policies import classic as P
    from jaxbandits.policies import conversions as PC

    assert difference(P.ucb1(), P.ucb1()) is None
    assert difference(P.ucb1(2.0), P.ucb1(2.5)) is not None
    assert difference(P.ucb1(), P.kl_ucb()) is not None
    assert difference(PC.delayed_ucb(D.geometric(0.99), 100), PC.delayed_ucb(D.geometric(0.99), 100)) is None
    assert difference(PC.delayed_ucb(D.geometric(0.99), 100), PC.delayed_ucb(D.geometric(0.98), 100)) is not None
    assert difference(E.bernoulli([0.5, 0.4]), E.bernoulli([0.5, 0.4])) is None
    assert difference(E.bernoulli([0.5, 0.4]), E.bernoulli([0.5, 0.41])) is not None
    assert difference(E.bernoulli([0.5, 0.4]), E.bernoulli([0.5, 0.4], D.fixed(1))) is not None


def _panels(built):
    return built if isinstance(built, list) else [X.Panel("", *built)]


# ----------------------------------------------------------------------------- every registered experiment
@pytest.mark.parametrize("name", X.names())
def test_every_registered_experiment_round_trips_as_a_file(name, tmp_path):
    """show NAME --toml, read back: a build's file builds the same worlds, channels and policies
    (same code, same closed-over parameters, bitwise the same arrays), panel names and reference
    lines; a sweep's file names the same runner with the same config and run settings."""
    exp = X.get(name)
    text = F.to_toml(exp)
    path = tmp_path / f"{name}.toml"
    path.write_text(text)
    back = F.experiment(str(path))
    assert (back.name, back.description, back.runs) == (exp.name, exp.description, exp.runs)
    for attr in ("metric", "chunk", "checkpoints", "layout", "ratio_to", "ignores", "horizon_keys"):
        assert getattr(back, attr) == getattr(exp, attr), attr
    if exp.runner is not None:
        assert back.runner is exp.runner and back.build is None
        assert back.config == exp.config
        return
    assert back.horizon == exp.horizon
    assert difference(back.record, exp.record) is None
    if "build" in tomllib.loads(text):  # written as its build function and config (not declarable)
        assert back.build is exp.build and back.config == exp.config
        return
    orig, again = _panels(exp.build(dict(exp.config))), _panels(back.build(back.config))
    assert len(orig) == len(again)
    for p, q in zip(orig, again):
        assert p.name == q.name and p.log_lines == q.log_lines and list(p.policies) == list(q.policies)
        d = (difference(p.env, q.env, "world") or difference(p.channel, q.channel, "channel")
             or difference(p.policies, q.policies, "policies"))
        assert d is None, f"{name}, panel {p.name!r}: {d}"


def test_show_toml_honours_set(tmp_path):
    """show NAME --toml --set: the file is written at the overridden config."""
    text = F.to_toml(X.get("quickstart"), {"window": 77, "theta": [0.6, 0.1]})
    doc = tomllib.loads(text)
    assert doc["channel"] == {"kind": "channels.conversions", "window": 77}
    assert doc["world"]["theta"] == [0.6, 0.1]
    assert "--set window=77" in text


def _numbers(summary):
    """What must agree between a registered run and its file's run: everything but the config
    (a file's config is its description), timing and versions; as JSON text, so that the NaN of a
    missing bound equals itself."""
    return json.dumps({k: v for k, v in summary.items() if k not in ("config", "timing", "versions")},
                      sort_keys=True)


def test_quickstart_file_runs_to_the_same_summary(tmp_path, capsys):
    """The end-to-end round trip on the command line, small: show --toml, run the file (runs and
    horizon set on the file with --set), run the name: the same summary.json numbers."""
    f = tmp_path / "qs.toml"
    assert main(["show", "quickstart", "--toml", "--output", str(f)]) == 0
    common = ["--no-progress", "--single-device", "--seed", "5"]
    assert main(["run", str(f), "--set", "runs=3", "--set", "horizon=120", "--out", str(tmp_path / "a")] + common) == 0
    assert main(["run", "quickstart", "--runs", "3", "--horizon", "120", "--out", str(tmp_path / "b")] + common) == 0
    a = json.loads((tmp_path / "a" / "summary.json").read_text())
    b = json.loads((tmp_path / "b" / "summary.json").read_text())
    assert a["runs"] == 3 and a["horizon"] == 120 and a["seed"] == 5
    assert _numbers(a) == _numbers(b)
    assert a["config"]["spec"]["world"]["kind"] == "envs.conversions"


SMALL_SWEEPS = {"thune2019-example8": {"log2_T": [5, 6]}, "thune2019-heavy-tail": {"log2_T": [5, 6]},
                "thune2019-bounds": {"log2_T": 6, "delays": [0, 8]},
                "pikeburke2018-appF": {"horizon": 400, "delays": [0, 5]},
                "bayes-fit-recovery": {"n_plays": 200, "n_arms": 2},
                "ope-bias-coverage": {"n_decisions": 300, "laws": ["geometric"]}}


@pytest.mark.slow
@pytest.mark.parametrize("name", X.names())
def test_every_registered_experiment_file_runs_to_the_same_summary(name, tmp_path):
    """Every registered experiment and its file, run small (2 runs, 200 rounds; sweeps at two small
    settings): the same summary.json numbers."""
    exp = X.get(name)
    path = tmp_path / f"{name}.toml"
    path.write_text(F.to_toml(exp))
    back = F.experiment(str(path))
    if exp.runner is not None:
        kw = dict(runs=1 if name == "bayes-fit-recovery" else 2, overrides=SMALL_SWEEPS[name])
    else:
        kw = dict(runs=2, horizon=200)
    a = X.run(name, seed=3, **kw).summary()
    b = X.run(back, seed=3, **kw).summary()
    assert _numbers(a) == _numbers(b)


# ----------------------------------------------------------------------------- components of one's own
USER = """\
name = "mine"
horizon = 150
runs = 3
seed = 1
world = {kind = "user_components:two_arms", low = 0.3}
channel = {kind = "user_components:plain_channel"}

[policies]
"fixed-1" = {kind = "user_components:fixed_arm", arm = 1}
"fixed-0" = {kind = "user_components:fixed_arm", arm = 0}
UCB1 = {kind = "classic.ucb1", alpha = 1.5}
"""


def test_user_policy_world_and_channel_by_import_path(tmp_path, capsys):
    """A policy, a world and a channel of one's own, named package.module:function, run: the fixed
    arm's pulls and expected regret are exactly T and T * gap (and 0 for the best arm)."""
    f = tmp_path / "mine.toml"
    f.write_text(USER)
    assert main(["run", str(f), "--out", str(tmp_path / "out"), "--no-progress", "--single-device"]) == 0
    s = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert s["experiment"] == "mine" and s["runs"] == 3 and s["horizon"] == 150 and s["seed"] == 1
    p = s["policies"]
    assert p["fixed-1"]["mean_pulls"] == [0.0, 150.0] and p["fixed-0"]["mean_pulls"] == [150.0, 0.0]
    from jaxbandits import Results

    res = Results.load(str(tmp_path / "out"))
    np.testing.assert_allclose(res.curves["fixed-0"]["expected_regret"][:, -1], 150 * (0.8 - 0.3), rtol=1e-6)
    np.testing.assert_array_equal(res.curves["fixed-1"]["expected_regret"][:, -1], 0.0)
    assert sum(p["UCB1"]["mean_pulls"]) == 150.0


def test_user_build_with_config_and_set(tmp_path):
    """build = "package.module:function" with [config]: --set changes a config key (kind-checked as
    for a registered experiment); the objects are the user's build's."""
    f = tmp_path / "b.toml"
    f.write_text('build = "user_components:build"\nhorizon = 50\nruns = 2\n[config]\nlow = 0.25\n')
    exp = F.experiment(str(f))
    import user_components as U

    assert exp.build is U.build and exp.config == {"low": 0.25} and exp.horizon == 50
    with pytest.raises(ValueError, match="config key 'low' must be a number"):
        X.run(exp, overrides={"low": "x"})


def test_resume_command_of_a_file_names_the_file(tmp_path):
    """An interrupted file run resumes with `jaxbandits run FILE.toml --set ...` (the file, not a
    registered name)."""
    f = tmp_path / "mine.toml"
    f.write_text(USER)
    exp = F.experiment(str(f), {"horizon": 90})
    cmd = X.resume_command(exp.source, None, None, 1, None, "out", None)
    assert cmd.startswith(f"jaxbandits run {f} --set horizon=90 ") and cmd.endswith("--out out --resume")


def test_grid_expands_into_panels(tmp_path):
    """[grid]: one panel per combination of values, named by them, each built as if written out."""
    from jaxbandits import channels as C
    from jaxbandits import delays as D
    from jaxbandits import envs as E
    from jaxbandits.policies import classic as P

    f = tmp_path / "g.toml"
    f.write_text('horizon = 100\nworld = {kind = "envs.conversions", theta = [0.5, 0.3], '
                 'delay = {kind = "delays.geometric", mean = 5.0}}\nchannel = {kind = "channels.conversions"}\n'
                 '[policies]\nUCB1 = {kind = "classic.ucb1"}\n'
                 '[grid]\n"world.delay.mean" = [10.0, 50.0]\n"policies.UCB1.alpha" = [1.0, 2.5]\n')
    exp = F.experiment(str(f))
    panels = exp.build(exp.config)
    assert [p.name for p in panels] == ["world.delay.mean=10.0, policies.UCB1.alpha=1.0",
                                        "world.delay.mean=10.0, policies.UCB1.alpha=2.5",
                                        "world.delay.mean=50.0, policies.UCB1.alpha=1.0",
                                        "world.delay.mean=50.0, policies.UCB1.alpha=2.5"]
    for p, (m, a) in zip(panels, [(10.0, 1.0), (10.0, 2.5), (50.0, 1.0), (50.0, 2.5)]):
        assert difference(p.env, E.conversions([0.5, 0.3], D.geometric(mean=m))) is None
        assert difference(p.channel, C.conversions()) is None
        assert difference(p.policies["UCB1"], P.ucb1(a)) is None


# ----------------------------------------------------------------------------- schema errors: key and line
GOOD = """\
horizon = 100
runs = 2
world = {kind = "envs.bernoulli", means = [0.5, 0.4]}
channel = {kind = "channels.attributed"}

[policies]
UCB1 = {kind = "classic.ucb1"}
"""

BAD = [
    # (file text, substrings the message must hold)
    (GOOD.replace("horizon = 100", "horizn = 100"), ["line 1, key horizn", "unknown key 'horizn'",
                                                      "did you mean 'horizon'"]),
    (GOOD.replace("horizon = 100", "horizon = 0"), ["line 1, key horizon", "[1, 16777216]", "got 0"]),
    (GOOD.replace("runs = 2", 'runs = "two"'), ["line 2, key runs", "must be an integer"]),
    (GOOD.replace("classic.ucb1", "classic.ucb2"), ["line 7, key policies.UCB1.kind", "classic.ucb1"]),
    (GOOD.replace('"classic.ucb1"}', '"classic.ucb1", alfa = 2.0}'),
     ["line 7, key policies.UCB1.alfa", "no parameter 'alfa'", "did you mean 'alpha'"]),
    (GOOD.replace('"classic.ucb1"}', '"classic.ucb1", alpha = -1.0}'),
     ["line 7, key policies.UCB1.alpha: classic.ucb1: alpha must lie in (0.0, inf]"]),
    (GOOD.replace('means = [0.5, 0.4]', 'means = [1.5, 0.4]'), ["line 3, key world.means: envs.bernoulli: means must lie in [0.0, 1.0]"]),
    (GOOD.replace('{kind = "envs.bernoulli", means = [0.5, 0.4]}', '{kind = "envs.conversions", theta = [0.5, 0.4]}'),
     ["line 3, key world", "needs the parameter 'delay'"]),
    (GOOD.replace('"channels.attributed"', '"user_components:nope"'),
     ["line 4, key channel.kind", "no attribute 'nope'"]),
    (GOOD.replace('"envs.bernoulli", means = [0.5, 0.4]', '"user_components:not_a_world"'),
     ["line 3, key world", "not a world"]),
    (GOOD.replace("[policies]\n", "[policies]\nUCB1.alpha = 2.0\n").replace('UCB1 = {kind = "classic.ucb1"}\n',
                                                                         'UCB1.kind = "classic.ucb1"\n'),
     None),  # dotted keys are fine (a good file)
    (GOOD + "\n[policies.KL]\nkind = \"classic.kl_ucb\"\nc = -3.0\n", ["line 11, key policies.KL.c: classic.kl_ucb: c must lie in [0.0, inf], got -3.0"]),
    (GOOD + "\n[policies.KL]\nkind = \"classic.kl_ucb\"\nitres = 3\n", ["line 11, key policies.KL.itres",
                                                                        "did you mean 'iters'"]),
    ("horizon = 100\n\n[[panels]]\nname = 'a'\nworld = {kind = \"envs.bernoulli\", means = [0.5, 0.4]}\n"
     "channel = {kind = \"channels.attributed\"}\npolicies = {U = {kind = \"classic.ucb1\"}}\n\n[[panels]]\n"
     "name = 'b'\nworld = {kind = \"envs.bernoulli\", means = [0.5, 0.4]}\nchannel = {kind = \"channels.anonymous\"}\n"
     "[panels.policies]\nU = {kind = \"classic.ucb1\", alpha = 0.0}\n",
     ["line 14, key panels[1].policies.U.alpha", "alpha must lie in (0.0, inf]"]),
    (GOOD + '\n[[panels]]\nname = "x"\n', ["give one of world/channel/policies, panels"]),
    ('ratio_to = "QPM-D"\n' + GOOD, ["line 1, key ratio_to: must be a policy label of the file (UCB1)"]),
    (GOOD.replace("runs = 2", "runs = 2 x"), ["not valid TOML", "(at line 2, column 10)"]),
    (GOOD + '\n[grid]\n"world.nope.mean" = [1.0]\n', ["key grid.\"world.nope.mean\"", "names no table"]),
    (GOOD + '\n[grid]\n"world.meanz" = [[0.5, 0.4]]\n', ["key grid.\"world.meanz\"", "no parameter 'meanz'"]),
    (GOOD.replace("horizon = 100\n", "") + "checkpoints = [10]\n", ["missing key 'horizon'"]),
    ('horizon = 10\nrunner = "user_components:nothing"\n',
     ["2 problems: line 1, key horizon: a runner file takes no horizon", "line 2, key runner", "no attribute 'nothing'"]),
    (GOOD.replace("runs = 2", "runs = 0\nseed = -1\nrecord = [\"log\", 0]"),
     ["bad.toml: 3 problems: line 2, key runs", "; line 3, key seed", "; line 4, key record"]),
]


@pytest.mark.parametrize("text,expected", BAD, ids=range(len(BAD)))
def test_schema_errors_name_the_key_and_its_line(text, expected, tmp_path, capsys, monkeypatch):
    """Bad files fail on the command line in the one error format (exit 2), naming the file, the
    line and the key of each problem, before anything is simulated (let alone compiled)."""
    f = tmp_path / "bad.toml"
    f.write_text(text)

    def no_simulation(*a, **k):
        raise AssertionError("simulate called")

    monkeypatch.setattr(X.runner, "simulate", no_simulation)
    rc = main(["run", str(f), "--out", str(tmp_path / "out"), "--no-progress", "--single-device"])
    err = capsys.readouterr().err
    if expected is None:  # a good file: it got as far as simulating
        assert "simulate called" in err
        return
    assert rc == 2, err
    assert err.startswith(f"jaxbandits: error: {f}"), err
    assert len(err.strip().splitlines()) <= 2
    for e in expected:
        assert e in err, (e, err)


def test_set_on_a_file_names_unknown_keys_and_checks_values(tmp_path, capsys):
    f = tmp_path / "g.toml"
    f.write_text(GOOD)
    assert main(["run", str(f), "--set", "world.meens=[0.1, 0.2]"]) == 2
    assert ("line 3, key world.meens (given by --set): envs.bernoulli has no parameter 'meens' (did you mean "
            "'means'?)") in capsys.readouterr().err
    assert main(["run", str(f), "--set", "nope.x=1"]) == 2
    assert "has no key 'nope.x'" in capsys.readouterr().err
    exp = F.experiment(str(f), {"seed": 7, "record": ["log", 5], "world.means": [0.2, 0.9]})  # keys the file lacks
    assert exp.record == ("log", 5) and exp.config["spec"]["world"]["means"] == [0.2, 0.9]
    assert F.read(str(f), {"seed": 7})[0]["seed"] == 7
    assert main(["run", str(f), "--set", "horizon=-5"]) == 2
    err = capsys.readouterr().err
    assert "key horizon (given by --set): must lie in [1, 16777216], got -5" in err


def test_key_lines_of_every_written_file():
    """The line found for every policy, world and channel of every registered experiment's file
    holds that key: what errors report is where the key is."""
    for name in X.names():
        exp = X.get(name)
        text = F.to_toml(exp)
        lines = F.key_lines(text)
        doc = tomllib.loads(text)
        rows = text.splitlines()
        panels = [(("panels", i), p) for i, p in enumerate(doc["panels"])] if "panels" in doc else [((), doc)]
        for path, p in panels:
            for lab in p.get("policies", {}):
                n = F.line_of(lines, path + ("policies", lab))
                assert lab in rows[n - 1] and "kind" in rows[n - 1], (name, lab, rows[n - 1])
            for slot in ("world", "channel"):
                if slot in p:
                    assert rows[F.line_of(lines, path + (slot,)) - 1].startswith(slot + " = "), (name, slot)
        for k in doc:
            if not isinstance(doc[k], (dict, list)) or k in ("checkpoints", "layout", "record"):
                assert rows[lines[(k,)] - 1].startswith(f"{k} = "), (name, k)


def test_key_lines_of_tables_arrays_and_multiline_values():
    text = ('a = 1\n"b.c" = """x\ny = 2\n"""\nd = [\n  1,\n  2,\n]\n[t]\ne.f = 3\n[[arr]]\ng = 4\n[[arr]]\n'
            "g = 5\n[arr.sub]\nh = 'q = 1'\n")
    tomllib.loads(text)
    lines = F.key_lines(text)
    assert lines[("a",)] == 1 and lines[("b.c",)] == 2 and lines[("d",)] == 5
    assert ("y",) not in lines  # inside a multi-line string
    assert lines[("t",)] == 9 and lines[("t", "e", "f")] == 10
    assert lines[("arr", 0, "g")] == 12 and lines[("arr", 1, "g")] == 14
    assert lines[("arr", 1, "sub")] == 15 and lines[("arr", 1, "sub", "h")] == 16
    assert F.line_of(lines, ("arr", 1, "sub", "h", "deeper")) == 16


_scalars = st.one_of(st.integers(-2**63, 2**63 - 1), st.floats(allow_nan=False), st.booleans(),
                     st.text(max_size=12))
_values = st.recursive(_scalars, lambda c: st.one_of(st.lists(c, max_size=4),
                                                   st.dictionaries(st.text(max_size=6), c, max_size=3)), max_leaves=12)


@settings(max_examples=150, deadline=None)
@given(st.dictionaries(st.text(min_size=1, max_size=8), _values, max_size=5))
def test_toml_writer_round_trips(doc):
    """What dumps writes, tomllib reads back to the same document (strings with any character,
    floats bit for bit, nested tables and arrays)."""
    back = tomllib.loads(F.dumps(doc))
    assert json.dumps(back, sort_keys=True) == json.dumps(doc, sort_keys=True)


def test_toml_writer_nan_and_inf():
    back = tomllib.loads(F.dumps({"a": [float("nan"), float("inf"), -float("inf"), 1e-300, 0.1]}))
    assert math.isnan(back["a"][0]) and back["a"][1:] == [float("inf"), -float("inf"), 1e-300, 0.1]


def test_not_expressible_is_said_clearly():
    """An experiment whose build makes objects no constructor call made (a class built by hand)
    cannot be written: show --toml says so, naming what, instead of writing a wrong file."""
    from jaxbandits import channels as C
    from jaxbandits.envs.stochastic import BanditEnv
    import jax.numpy as jnp
    from jaxbandits import delays as D
    from jaxbandits.policies import classic as P

    def build(cfg):
        env = BanditEnv(jnp.asarray([0.5, 0.4]), D.fixed(0), jnp.asarray(0.0), n_arms=2, noise="bernoulli")
        return env, C.attributed(), {"U": P.ucb1()}

    exp = X.Experiment("handmade", "a world built from its class", build, {}, horizon=10, runs=1)
    with pytest.raises(F.NotExpressible, match="world .BanditEnv. was not made by a constructor"):
        F.to_toml(exp)


# ----------------------------------------------------------------------------- the discoverable CLI
def _commands():
    p = parser()
    sub = next(a for a in p._actions if isinstance(a, argparse._SubParsersAction))
    return p, sub.choices


def test_every_option_of_every_command_has_help(capsys):
    """Every option and argument of every command (those added later included: the parser is
    walked) has help text, and `jaxbandits CMD --help` shows each with it."""
    p, cmds = _commands()
    assert {"list", "run", "show", "plot", "fit"} <= set(cmds)
    for name, sp in [("", p)] + sorted(cmds.items()):
        for a in sp._actions:
            if isinstance(a, (argparse._HelpAction, argparse._SubParsersAction)):
                continue
            assert a.help and a.help != argparse.SUPPRESS, (name, a.option_strings or a.dest)
        with pytest.raises(SystemExit) as e:
            main(([name] if name else []) + ["--help"])
        assert e.value.code == 0
        out = "".join(capsys.readouterr().out.split())  # argparse wraps lines (at hyphens too)
        for a in sp._actions:
            if isinstance(a, (argparse._HelpAction, argparse._SubParsersAction)):
                continue
            shown = a.option_strings[-1] if a.option_strings else (a.metavar or a.dest)
            assert shown in out, (name, shown)
            text = "".join(a.help.split("%")[0].split())  # the text before any %(default)s
            assert text[:30] in out, (name, shown)


@pytest.mark.parametrize("name", X.names())
def test_show_lists_every_settable_key(name, capsys):
    """show NAME: the description and every --set key with its type, default and stated range."""
    exp = X.get(name)
    assert main(["show", name]) == 0
    out = capsys.readouterr().out
    assert exp.description in out
    rows = {ln.split()[0]: ln for ln in out.splitlines() if ln.startswith("  ") and ln.split()}
    for k, d in exp.config.items():
        assert k in rows, k
        assert X.type_name(d) in rows[k] and repr(d)[:30] in rows[k]
        assert exp.ranges[k][:40] in rows[k]  # every built-in key states its allowed values


def test_show_errors(tmp_path, capsys):
    assert main(["show", "nope"]) == 2
    assert "unknown experiment 'nope'" in capsys.readouterr().err
    assert main(["show", "quickstart", "--set", "window=2.5"]) == 2
    assert "window" in capsys.readouterr().err
    assert main(["show", "quickstart", "--output", str(tmp_path / "x.toml")]) == 2
    assert "--output writes the file of --toml" in capsys.readouterr().err


def test_the_docs_example_files_are_valid(tmp_path):
    """Every TOML example of docs/experiment-files.md (but the one naming a package of the reader's
    own) passes the schema and builds: the page shows files that run."""
    import re

    page = open(os.path.join(HERE, "..", "docs", "experiment-files.md")).read()
    blocks = re.findall(r"```toml\n(.*?)```", page, re.S)
    assert len(blocks) >= 5
    checked = 0
    for i, text in enumerate(blocks):
        if "mylab" in text:
            continue
        f = tmp_path / f"ex{i}.toml"
        f.write_text(text)
        exp = F.experiment(str(f))
        if exp.runner is None:
            assert exp.build(exp.config)
        checked += 1
    assert checked >= 4


def test_show_file_lists_its_dotted_keys(tmp_path, capsys):
    """show FILE.toml: the keys --set can change, with their values (after --set) and what they are."""
    f = tmp_path / "g.toml"
    f.write_text(GOOD)
    assert main(["show", str(f), "--set", "world.means=[0.7, 0.1]"]) == 0
    rows = {ln.split()[0]: ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("  ")}
    assert "[0.7, 0.1]" in rows["world.means"] and "parameter 'means' of envs.bernoulli" in rows["world.means"]
    assert "100" in rows["horizon"] and "2" in rows["runs"]


_keys = st.text(max_size=6)
_docs = st.recursive(
    st.dictionaries(_keys, _scalars, max_size=3),
    lambda c: st.dictionaries(_keys, st.one_of(_scalars, c, st.lists(c, min_size=1, max_size=2)), max_size=3),
    max_leaves=10)


@settings(max_examples=150, deadline=None)
@given(_docs)
def test_key_lines_point_at_each_key(doc):
    """For any document the writer produces (keys with dots, quotes, escapes; sections; arrays of
    tables), the line found for each key is the line that holds it: `key = ...`, `[... .key]` or
    `[[... .key]]`. Errors can only be as good as these lines."""
    text = F.dumps(doc)
    assert json.dumps(tomllib.loads(text), sort_keys=True) == json.dumps(doc, sort_keys=True)
    lines, rows = F.key_lines(text), text.split("\n")

    def walk(path, d):
        for k, v in d.items():
            p = path + (k,)
            row = rows[lines[p] - 1].strip()
            if isinstance(v, dict) and "kind" in v:  # a {kind = ...} entry: inline, its keys on its line
                assert row.startswith(F.toml_key(k) + " = {"), (p, row)
            elif isinstance(v, dict):
                assert row.startswith("[") and row.endswith(F.toml_key(k) + "]"), (p, row)
                walk(p, v)
            elif isinstance(v, list) and v and all(isinstance(x, dict) and "kind" not in x for x in v):
                assert row.startswith("[[") and row.endswith(F.toml_key(k) + "]]"), (p, row)
                for i, x in enumerate(v):
                    assert rows[lines[p + (i,)] - 1].strip() == row
                    walk(p + (i,), x)
            else:
                assert row.startswith(F.toml_key(k) + " = "), (p, row)

    walk((), doc)


def test_describe_writes_user_constructors_and_refuses_closure_policies(monkeypatch):
    """describe reads each value's made-by record: a function of one's own declared with
    ``values.constructor`` is written as ``package.module:function`` with its arguments; an
    undeclared one as the library call inside it; a Policy NamedTuple of closures is refused,
    naming the way out (policy_value)."""
    monkeypatch.syspath_prepend(HERE)
    import user_components as U
    from jaxbandits.policies import classic as P

    def build(cfg):
        return U.two_arms_world(cfg["low"]), U.plain_channel(), {"UCB1": P.ucb1(alpha=1.5)}

    doc, _ = F.describe(X.Experiment("mine", "user values", build, {"low": 0.25}, horizon=10, runs=1))
    assert doc["world"] == {"kind": "user_components:two_arms_world", "low": 0.25}
    assert doc["channel"] == {"kind": "channels.attributed"}
    assert doc["policies"] == {"UCB1": {"kind": "classic.ucb1", "alpha": 1.5}}

    def build2(cfg):
        return U.two_arms(0.25), U.plain_channel(), {"fixed": U.fixed_arm(1)}

    doc, _ = F.describe(X.Experiment("mine", "", lambda c: build2(c)[:2] + ({},), {}, horizon=10, runs=1))
    assert doc["world"] == {"kind": "envs.bernoulli", "means": [0.25, 0.8]}
    with pytest.raises(F.NotExpressible, match="policy 'fixed' is a Policy.*policy_value"):
        F.describe(X.Experiment("mine", "", build2, {}, horizon=10, runs=1))
