"""A catalogue of bad inputs met in a new user's first hour (issue 32): each raises a clear error
naming the component, the file or the field (never a traceback, a silent cast or a NaN)."""
import os
import re
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxbandits as jb
from jaxbandits import channels, delays, envs, online
from jaxbandits.policies import classic


# ----------------------------------------------------------------------------- own components
class _M(NamedTuple):
    t: Any


def _policy(action_dtype):
    def act(state, ctx, key):
        return jnp.asarray(0, action_dtype), _M(ctx.t)

    return jb.Policy(lambda spec, key: jnp.zeros(()), act, lambda s, a: s, lambda m, r, d: jnp.ones(1),
                     name="mine")


class _World(jb.World):
    def __init__(self, delay_dtype):
        self.n_arms, self.dt = 2, delay_dtype

    def means(self, state, t, features):
        return jnp.array([0.5, 0.4], jnp.float32)

    def outcome(self, state, t, action, u, v, features, key):
        return jb.Outcome(reward=(u < 0.5).astype(jnp.float32), delay=jnp.asarray(1, self.dt)), state


@pytest.mark.parametrize("dtype", [jnp.float32, jnp.bool_])
def test_act_returning_a_non_integer_action_is_refused(dtype):
    with pytest.raises(TypeError, match=r"policy 'mine' \(mine\).*action an integer scalar"):
        jb.simulate(envs.bernoulli([0.5, 0.4]), channels.attributed(), _policy(dtype), 10, jax.random.key(0))
    with pytest.raises(TypeError, match=r"mine.*action an integer scalar"):
        online.Learner(_policy(dtype), channels.attributed(), ["a", "b"])


def test_world_returning_a_float_delay_is_refused():
    with pytest.raises(TypeError, match=r"world _World: Outcome.delay must be an integer scalar.*float32"):
        jb.simulate(_World(jnp.float32), channels.attributed(), classic.ucb1(), 10, jax.random.key(0))
    out = jb.simulate(_World(jnp.int32), channels.attributed(), classic.ucb1(), 10, jax.random.key(0))
    assert np.isfinite(out.regret).all()


# ----------------------------------------------------------------------------- figures
FILE = """
description = "three arms, mean delay 50"
horizon = 60
runs = 3
world = {kind = "envs.conversions", theta = [0.5, 0.4, 0.3], delay = {kind = "delays.geometric", mean = 50.0}}
channel = {kind = "channels.conversions", window = 200}
[policies]
UCB1 = {kind = "classic.ucb1"}
"""


def test_file_figure_is_captioned_from_description_and_overrides_in_words(tmp_path, monkeypatch, capsys):
    import matplotlib

    matplotlib.use("Agg")
    from jaxbandits import Results
    from jaxbandits.apps.cli import main
    from jaxbandits.report.plotting import figure_regret

    monkeypatch.setenv("JAXBANDITS_CACHE_DIR", str(tmp_path / "cache"))
    f = tmp_path / "mine.toml"
    f.write_text(FILE)
    out = tmp_path / "out"
    assert main(["run", str(f), "--set", "channel.window=20", "--out", str(out), "--no-progress",
                 "--single-device"]) == 0
    fig = figure_regret(Results.load(str(out)))
    cap = " ".join(t.get_text() for t in fig.texts)
    assert cap.startswith("three arms, mean delay 50 · settings changed: channel.window set to 20 · seed 0")
    assert "spec=" not in cap and "{" not in cap  # no raw config dict
    title = " ".join(fig._suptitle.get_text().split())
    assert title == "mine: 3 runs × 60 rounds · geometric delays, mean 50 · conversions(window=20)"
    table = (out / "table.md").read_text()
    assert "| L(T) |" in table and "L(T): the delayed regret at the horizon T = 60" in table


def test_fit_plots_name_the_time_unit(monkeypatch, tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    import xarray as xr
    from matplotlib.axes import Axes

    from jaxbandits.delaymodels import logs as L
    from jaxbandits.bayes import report

    labels = []
    monkeypatch.setattr(Axes, "set_xlabel", lambda self, s, *a, **k: labels.append(s))
    z = np.zeros(3)
    for unit, words in (("h", "hours"), (None, "the log's own time unit")):
        log = L.ConversionLog(np.array([0, 1, 1]), z, np.array([1.0, np.nan, 2.0]), z + 5, 2, time_unit=unit)
        post = xr.Dataset({"p": (("chain", "draw", "arm"), np.full((1, 4, 2), 0.5)),
                           "age": (("age",), np.arange(5.0)),
                           "delay_cdf": (("chain", "draw", "age"), np.tile(np.linspace(0, 1, 5), (1, 4, 1)))})
        labels.clear()
        report.plot_delay(type("I", (), {"posterior": post})(), log, ["a", "b"], set(), {}, tmp_path / "d.png")
        assert labels == [f"age a (time since the play, in {words})"]



# ----------------------------------------------------------------------------- serve config
SERVE_TOML = """arms = ["a", "b"]
seed = 0

[policy]
name = "delayed_klucb"
window = 20
delay = {law = "weibull", scale = 10.0, shap = 1.5}

[channel]
kind = "conversions"
window = 20
"""


@pytest.mark.parametrize("bad, good, where", [
    ("shap = 1.5", "shap = 1.5", "line 7, key policy.delay.shap: unknown key 'shap' in table 'policy.delay' "
                                 "(weibull) (did you mean 'shape'?)"),
    ("window = 20\ndelay", "windw = 20\ndelay", "line 6, key policy.windw: unknown key 'windw' in table 'policy' "
                                                "(delayed_klucb) (did you mean 'window'?)"),
    ('kind = "conversions"', 'kind = "conversions"\nwindo = 3', "line 11, key channel.windo: unknown key 'windo' "
                                                                "in table 'channel' (did you mean 'window'?)"),
    ("seed = 0", "sed = 0", "line 2, key sed: unknown key 'sed' in the config (did you mean 'seed'?)"),
    ('law = "weibull"', 'law = "weibul"', "line 7, key policy.delay.law: must be one of"),
])
def test_serve_config_typos_name_the_line_and_a_suggestion(tmp_path, bad, good, where):
    from jaxbandits.apps import serve

    f = tmp_path / "s.toml"
    f.write_text(SERVE_TOML.replace(bad, good))
    with pytest.raises(ValueError) as e:
        serve.load_config(f)
    assert str(e.value).startswith(f"{f}, {where}"), str(e.value)


def test_serve_config_typo_on_the_command_line_says_so(tmp_path):
    from jaxbandits.apps import serve

    f = tmp_path / "s.toml"
    f.write_text(SERVE_TOML.replace("shap", "shape"))
    with pytest.raises(ValueError, match=r"config key policy.alpah \(given on the command line\): unknown key 'alpah'"):
        serve.load_config(f, policy={"alpah": 1.0})
    j = tmp_path / "s.json"
    j.write_text('{"arms": ["a", "b"],\n "policy": {"name": "ucb1",\n  "alpah": 2},\n "channel": {"kind": "attributed"}}')
    with pytest.raises(ValueError, match=r"s.json, line 3, key policy.alpah: .*did you mean 'alpha'"):
        serve.load_config(j)


# ----------------------------------------------------------------------------- the command line
def test_bare_command_lists_the_commands_and_version_prints(capsys):
    from jaxbandits import __version__
    from jaxbandits.apps.cli import main

    assert main([]) == 0
    out = capsys.readouterr().out
    for cmd in ("list", "run", "show", "merge", "plot", "compare", "fit", "serve"):
        assert f"\n    {cmd} " in out, cmd
    with pytest.raises(SystemExit) as e:
        main(["--version"])
    assert e.value.code == 0 and capsys.readouterr().out.strip() == f"jaxbandits {__version__}"


def test_fit_on_timestamps_names_the_cli_option(tmp_path, capsys):
    from jaxbandits.apps.cli import main

    log = tmp_path / "log.csv"
    log.write_text("arm,play_time,conversion_time,cutoff\n"
                   "a,2024-01-01T00:00:00,2024-01-01T05:00:00,2024-01-03T00:00:00\n"
                   "b,2024-01-01T01:00:00,,2024-01-03T00:00:00\n")
    assert main(["fit", str(log), "--out", str(tmp_path / "fit"), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "--time-unit h on the command line" in err and "time_unit=" not in err.split("(time_unit=")[0]


# ----------------------------------------------------------------------------- silently wrong, now refused
BASE = """horizon = 60
runs = 2
world = {kind = "envs.bernoulli", means = [0.5, 0.4]}
channel = {kind = "channels.attributed"}
[policies]
UCB1 = {kind = "classic.ucb1"}
"""
PANELS = """horizon = 60
runs = 2
[[panels]]
name = "a"
world = {kind = "envs.bernoulli", means = [0.5, 0.4]}
channel = {kind = "channels.attributed"}
policies = {UCB1 = {kind = "classic.ucb1"}}
[[panels]]
name = "a"
world = {kind = "envs.bernoulli", means = [0.6, 0.4]}
channel = {kind = "channels.attributed"}
policies = {UCB1 = {kind = "classic.ucb1"}}
"""


@pytest.mark.parametrize("text, match", [
    (BASE + '[grid]\n"world.means" = [[0.5, 0.4], [0.5, 0.4]]\n',
     r"line 8, key grid.\"world.means\": the value \[0.5, 0.4\] is given twice"),
    (PANELS, r"line 9, key panels\[1\].name: two panels are named 'a' \(also line 4.*both have the policy 'UCB1'"),
    ("checkpoints = [30, 61]\n" + BASE, r"line 1, key checkpoints\[1\]: must lie in \[1, 60\], got 61"),
])
def test_experiment_file_refuses_what_it_would_drop(tmp_path, text, match):
    from jaxbandits.experiments import files as expfile

    f = tmp_path / "e.toml"
    f.write_text(text)
    with pytest.raises(ValueError, match=match):
        expfile.experiment(str(f))


def test_build_returning_two_panels_of_one_name_is_refused():
    from jaxbandits import experiments as X

    def build(cfg):
        p = X.Panel("same", envs.bernoulli([0.5, 0.4]), channels.attributed(), {"UCB1": classic.ucb1()})
        return [p, p]

    exp = X.Experiment("twice", "two panels, one name", build, {}, horizon=20, runs=2)
    with pytest.raises(ValueError, match="two panels are named 'same' and both have the policy 'UCB1'"):
        X.run(exp)


@pytest.fixture(scope="module")
def learner():
    """One learner with decisions 0..2 open (refused calls change nothing: it is shared)."""
    lr = online.Learner(classic.ucb1(), channels.attributed(), ["a", "b", "c"])
    lr.decide(3)
    return lr


@pytest.mark.parametrize("ids, rewards, match", [
    ([0.5], [1.0], r"ids\[0\] must be an integer decision id, got 0.5"),
    ([1.0], [1.0], r"ids\[0\] must be an integer decision id, got 1.0"),
    ([True], [1.0], r"ids\[0\] must be an integer decision id, got True"),
    ([0, 1, 2], [1.0], r"one reward per id: 3 id\(s\), got rewards of shape \(1,\)"),
    ([0, 1], [1.0, 0.0, 1.0], r"one reward per id: 2 id\(s\)"),
    ([[0, 1]], [1.0, 0.0], r"1-d"),
])
def test_learner_feedback_refuses_ids_it_would_round_and_rewards_it_would_broadcast(learner, ids, rewards, match):
    before = learner.state
    with pytest.raises(ValueError, match=match):
        learner.feedback(ids, rewards)
    assert learner.state is before


def test_learner_feedback_ids_beyond_64_bits_are_unknown(learner):
    assert learner.feedback([2**70, -2**70, 1], [1.0, 1.0, 1.0]) == ["unknown", "unknown", "accepted"]
    assert learner.feedback(np.array([2**64 - 1], np.uint64), [0.0]) == ["unknown"]


def test_serve_refuses_another_applications_sqlite_file_and_leaves_it_alone(tmp_path):
    import hashlib
    import sqlite3

    from jaxbandits.apps import serve

    db = tmp_path / "app.db"
    con = sqlite3.connect(db)
    con.execute("CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT)")
    con.execute("INSERT INTO users VALUES (1, 'ada')")
    con.commit()
    con.close()
    digest = hashlib.sha256(db.read_bytes()).hexdigest()
    cfg = serve.load_config(None, arms=["a", "b"], policy={"name": "ucb1"}, channel={"kind": "attributed"})
    with pytest.raises(ValueError, match=r"app.db: not a jaxbandits serve database \(it holds the table\(s\) users"):
        serve.Service(cfg, str(db))
    assert hashlib.sha256(db.read_bytes()).hexdigest() == digest
    assert sorted(p.name for p in tmp_path.iterdir()) == ["app.db", "app.db.lock"]


@pytest.mark.parametrize("col, values, what", [
    ("play_time", [True, False, True], "booleans"),
    ("cutoff", "timedelta", r"durations \(timedelta\)"),
    ("conversion_time", [b"1", b"2", b"3"], "bytes"),
])
def test_parquet_columns_of_the_wrong_type_are_refused(tmp_path, col, values, what):
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    from jaxbandits.delaymodels import logs as L

    d = dict(arm=["a", "b", "a"], play_time=[0.0, 1.0, 2.0], conversion_time=[1.0, np.nan, 3.0], cutoff=[10.0] * 3)
    d[col] = pd.to_timedelta([1, 2, 3], unit="h") if values == "timedelta" else values
    f = tmp_path / "log.parquet"
    pd.DataFrame(d).to_parquet(f)
    with pytest.raises(ValueError, match=rf"log.parquet: row 1 \(line 2\), column '{col}': the column holds {what}"):
        L.load_log(str(f))


def test_fit_summary_with_one_chain_is_json_without_nan(tmp_path):
    import json

    az = pytest.importorskip("arviz")
    from jaxbandits.delaymodels import logs as L
    from jaxbandits.bayes import report

    rng = np.random.default_rng(0)
    idata = az.from_dict(posterior={"p": rng.uniform(size=(1, 40, 2)), "delay_mean": rng.uniform(5, 6, (1, 40)),
                                    "pending_conversions": rng.uniform(size=(1, 40, 2))})
    idata.posterior.attrs.update(model="exponential", method="nuts")
    z = np.zeros(3)
    log = L.ConversionLog(np.array([0, 1, 1]), z, np.array([1.0, np.nan, 2.0]), z + 5, 2)
    report.save_fit(idata, log, str(tmp_path / "fit"), plot=False)
    text = (tmp_path / "fit/summary.json").read_text()

    def no_nan(c):
        raise AssertionError(f"{c} in summary.json")

    doc = json.loads(text, parse_constant=no_nan)
    assert doc["diagnostics"]["r_hat_max"] is None and "one chain" in doc["undefined"]["r_hat_max"]
    assert np.isfinite(doc["diagnostics"]["ess_bulk_min"])


def test_compare_on_one_run_says_why_there_are_no_intervals():
    from jaxbandits import Results
    from jaxbandits.report.compare import compare

    t = np.array([10, 100])
    curves = {lab: {"regret": np.array([[1.0, 5.0 + i]], np.float32), "expected_regret": np.zeros((1, 2), np.float32),
                    "reward": np.zeros((1, 2), np.float32), "pulls": np.array([[50, 50]], np.int32)}
              for i, lab in enumerate(["A", "B"])}
    table = compare(Results("x", {}, 0, 1, 100, t, curves), baseline="A").table()
    assert "+1.0 [no interval: 1 run]" in table and "nan" not in table.split("No intervals")[0]
    assert "they need at least 2 paired runs, and this comparison has 1" in table


@pytest.mark.parametrize("make", [
    lambda: envs.oblivious(np.full((50, 2), 0.5)),
    lambda: envs.oblivious(np.full((200, 2), 0.5), delays=delays.sequence(np.zeros(50, int))),
    lambda: envs.bernoulli([0.5, 0.4], delay=delays.sequence(np.zeros(50, int))),
])
def test_world_data_shorter_than_the_horizon_is_refused(make):
    with pytest.raises(ValueError, match=r"horizon=100 exceeds the 50 rounds the world \w+ has data for"):
        jb.simulate(make(), channels.attributed(), classic.ucb1(), 100, jax.random.key(0))


@pytest.mark.parametrize("source, match", [
    ("def build(cfg:\n    pass\n", r"module 'fh_broken_\w+' has a syntax error: .*fh_broken_\w+.py, line 1"),
    ("raise RuntimeError('no database here')\n", r"importing module 'fh_broken_\w+' raised RuntimeError: no database "
                                                 r"here \(.*fh_broken_\w+.py, line 1\)"),
])
def test_experiment_file_naming_a_broken_user_module(tmp_path, monkeypatch, capsys, source, match):
    from jaxbandits.apps.cli import main

    mod = f"fh_broken_{abs(hash(source)) % 10**6}"
    (tmp_path / f"{mod}.py").write_text(source)
    monkeypatch.syspath_prepend(str(tmp_path))
    f = tmp_path / "e.toml"
    f.write_text(BASE.replace('UCB1 = {kind = "classic.ucb1"}', f'UCB1 = {{kind = "{mod}:make"}}'))
    assert main(["show", str(f)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("jaxbandits: error: ") and "unexpected" not in err and "Traceback" not in err
    assert re.search(match, err), err


@pytest.fixture(scope="module")
def http(tmp_path_factory):
    pytest.importorskip("fastapi")
    pytest.importorskip("httpx")
    from fastapi.testclient import TestClient

    from jaxbandits.apps import serve

    cfg = serve.load_config(None, arms=["a", "b"], policy={"name": "ucb1"}, channel={"kind": "attributed"})
    svc = serve.Service(cfg, str(tmp_path_factory.mktemp("serve") / "s.db"))
    with TestClient(serve.create_app(svc), raise_server_exceptions=False) as c:
        yield c
    svc.close()


@pytest.mark.parametrize("path, body, status, match", [
    ("/decide", "[" * 100_000 + "]" * 100_000, 400, "nested too deeply"),
    ("/feedback", '{"events": ' + "[" * 50_000 + "]" * 50_000 + "}", 400, "nested too deeply"),
    ("/feedback", '{"events": [{"id": ' + str(2**70) + ', "reward": 1}]}', 422, "id"),
    # the bodies' pydantic models: wrong types and nesting anywhere are a 422 naming the field
    ("/feedback", '{"events": [{"id": 0, "reward": 1, "arm": ["a"]}]}', 422, "events[0].arm must be a string, got"),
    ("/feedback", '{"events": [{"id": 0, "reward": 1, "arm": {"x": [[1]]}}]}', 422, "events[0].arm must be a string"),
    ("/feedback", '{"events": [[[[[[0]]]]]]}', 422, "events[0] must be an object, got [[[[[0]]]]]"),
    ("/feedback", '{"events": [{"id": 0.5, "reward": 1}]}', 422, "events[0].id must be an integer, got 0.5"),
    ("/feedback", '{"events": [{"id": 0, "reward": Infinity}]}', 422, "events[0].reward must be a finite number"),
    ("/feedback", '{"events": [{"id": 0, "reward": 1}], "now": true}', 422, "now must be a finite number, got True"),
    ("/decide", '{"n": {"a": ' + "[" * 150 + "]" * 150 + "}}", 422, "n must be an integer, got {'a': [[[[["),
    ("/decide", '{"n": 1, "now": [1]}', 422, "now must be a finite number, got [1]"),
    ("/decide", '"n"', 422, "the body must be a JSON object, got str"),
    ("/decide", '{"m": 1}', 422, "unknown key 'm' (allowed: n, now)"),
    ("/feedback", '{"events": [{"id": 0, "rewrad": 1}]}', 422, "events[0]: unknown key 'rewrad' (allowed: id, reward, "
                                                              "arm)"),
    ("/advance", '{"now": null}', 422, "now must be a finite number, got None"),
])
def test_http_bodies_that_were_internal_errors_are_4xx(http, path, body, status, match):
    r = http.post(path, content=body)
    assert r.status_code == status and match in r.json()["error"], r.text


def test_http_bodies_are_declared_in_the_openapi_document(http):
    paths = http.get("/openapi.json").json()["paths"]
    ev = paths["/feedback"]["post"]["requestBody"]["content"]["application/json"]["schema"]["$defs"]["Event"]
    assert ev["required"] == ["id"] and set(ev["properties"]) == {"id", "reward", "arm"}
    assert ev["additionalProperties"] is False
    n = paths["/decide"]["post"]["requestBody"]["content"]["application/json"]["schema"]["properties"]["n"]
    assert n["minimum"] == 1 and n["type"] == "integer"


@pytest.mark.parametrize("cut", [0.5, 0.9, 0])
def test_truncated_saved_learner_names_the_file(learner, tmp_path, cut):
    f = tmp_path / "learner.npz"
    learner.save(str(f))
    data = f.read_bytes()
    f.write_bytes(data[: int(len(data) * cut)])
    with pytest.raises(ValueError, match=r"learner.npz: not a readable saved jaxbandits learner \(damaged or truncated"):
        online.Learner.load(str(f), classic.ucb1(), channels.attributed())


@pytest.mark.parametrize("edit, match", [
    (lambda h, z: ({k: v for k, v in h.items() if k != "treedef"}, z),
     r"learner.npz: its header lacks the key 'treedef' \(a damaged or edited"),
    (lambda h, z: (h, {k: v for k, v in z.items() if k != "leaf_0"}),
     r"learner.npz: lacks the array 'leaf_0' of the saved state"),
    (lambda h, z: ([h], z), r"learner.npz: not a saved jaxbandits learner \(format \[\{"),
])
def test_an_edited_saved_learner_names_the_file_and_the_key(learner, tmp_path, edit, match):
    import json

    f = tmp_path / "learner.npz"
    learner.save(str(f))
    with np.load(f) as z:
        arrays = {k: z[k] for k in z.files}
    h = json.loads(bytes(arrays["header"]).decode())
    h, arrays = edit(h, arrays)
    arrays["header"] = np.frombuffer(json.dumps(h).encode(), np.uint8)
    np.savez(f, **arrays)
    with pytest.raises(ValueError, match=match):
        online.Learner.load(str(f), classic.ucb1(), channels.attributed())


# ----------------------------------------------------------------------------- vague messages, now naming the file
def test_damaged_results_nc_names_the_file(tmp_path):
    from jaxbandits import Results

    t = np.array([10, 100])
    curves = {lab: {"regret": np.ones((2, 2), np.float32), "expected_regret": np.ones((2, 2), np.float32),
                    "reward": np.zeros((2, 2), np.float32), "pulls": np.full((2, 2), 50, np.int32)} for lab in "AB"}
    Results("x", {}, 0, 2, 100, t, curves).save(str(tmp_path), plot=False)
    nc = tmp_path / "results.nc"
    nc.write_bytes(nc.read_bytes()[: nc.stat().st_size // 2])
    with pytest.raises(ValueError, match=r"results.nc: not a readable results file \(damaged or truncated"):
        Results.load(str(tmp_path))


@pytest.mark.parametrize("edit, what", [
    (lambda ds: ds.drop_attrs(deep=False), r"it lacks 'experiment'"),
    (lambda ds: ds.drop_vars("lost_to_W"), r"AttributeError: .*lost_to_W"),
])
def test_an_edited_results_nc_names_the_file_and_the_key(tmp_path, edit, what):
    import xarray as xr

    from jaxbandits import Results

    t = np.array([10, 100])
    curves = {lab: {"regret": np.ones((2, 2), np.float32), "expected_regret": np.ones((2, 2), np.float32),
                    "reward": np.zeros((2, 2), np.float32), "pulls": np.full((2, 2), 50, np.int32)} for lab in "AB"}
    Results("x", {}, 0, 2, 100, t, curves).save(str(tmp_path), plot=False)
    nc = tmp_path / "results.nc"
    ds = edit(xr.load_dataset(nc, engine="h5netcdf"))
    nc.unlink()
    ds.to_netcdf(nc, engine="h5netcdf")
    with pytest.raises(ValueError, match=rf"results.nc: not a results file of this version \({what}"):
        Results.load(str(tmp_path))


def test_non_utf8_log_names_the_file_line_and_byte(tmp_path):
    pytest.importorskip("pandas")
    from jaxbandits.delaymodels import logs as L

    f = tmp_path / "log.csv"
    f.write_bytes(b"arm,play_time,conversion_time,cutoff\na,1,2,3\n\xff\xfe,1,2,3\n")
    with pytest.raises(ValueError, match=r"log.csv, line 3: not UTF-8 text \(byte 0xff at offset 45\)"):
        L.load_log(str(f))


def test_damaged_serving_database_names_the_file(tmp_path):
    from jaxbandits.apps import serve

    db = tmp_path / "s.db"
    db.write_bytes(b"SQLite format 3\x00" + bytes(range(256)) * 12)
    cfg = serve.load_config(None, arms=["a", "b"], policy={"name": "ucb1"}, channel={"kind": "attributed"})
    with pytest.raises(ValueError, match=r"s.db: not a usable jaxbandits serve database \(.*damaged"):
        serve.Service(cfg, str(db))


@pytest.mark.parametrize("text, where", [
    ('horizon = 10\nruns = 2\nrecord = [1, 2\nworld = {kind = "envs.bernoulli"}\n', "line 3, key record"),
    ('horizon = 10\n[policies]\nA = {kind = "classic.ucb1"\nB = 3\n', "line 3, key A"),
])
def test_unclosed_toml_names_the_line_that_opens_it(tmp_path, text, where):
    from jaxbandits.apps import serve
    from jaxbandits.experiments import files as expfile

    f = tmp_path / "e.toml"
    f.write_text(text)
    with pytest.raises(ValueError, match=rf"e.toml, {where}: this value's brackets are never closed"):
        expfile.read(str(f))
    with pytest.raises(ValueError, match=rf"e.toml, {where}: this value's brackets are never closed"):
        serve.load_config(str(f))


def test_rewards_whose_float32_sums_would_overflow_are_refused(learner, http):
    for r in (3e38, -1e30, np.inf, np.nan):
        with pytest.raises(ValueError, match=r"rewards\[1\] must be finite with \|reward\| <= 2\*\*96"):
            learner.feedback([0, 1], [1.0, r])
    d = http.post("/decide", json={"n": 1}).json()["ids"]
    r = http.post("/feedback", json={"events": [{"id": d[0], "reward": 3e38}]})
    assert r.status_code == 422 and "|reward| <= 2**96" in r.json()["error"]


# ----------------------------------------------------------------------------- memory, estimated before allocating
def test_runs_that_cannot_fit_in_memory_are_refused_with_the_estimate_and_the_limit(monkeypatch):
    from jaxbandits.engine import memory

    # 2**30 runs x 10**6 rounds (in range: runs < 2**31, horizon <= 2**24): its records alone are terabytes
    with pytest.raises(ValueError, match=r"needs at least [\d.]+ GiB \(1073741824 runs x 1 policies: 200 record "
                                         r"points.*more than the [\d.]+ GiB of memory available"):
        jb.simulate(envs.bernoulli([0.5, 0.4]), channels.attributed(), classic.ucb1(), 10**6, jax.random.key(0),
                    2**30)
    monkeypatch.setattr(memory, "available_memory", lambda: 10_000)  # the limit is the host's: 10 kB here
    with pytest.raises(ValueError, match=r"more than the 0.0 GiB"):
        jb.simulate(envs.bernoulli([0.5, 0.4]), channels.attributed(), classic.ucb1(), 100, jax.random.key(0), 64)
    monkeypatch.setattr(memory, "available_memory", lambda: 10**9)
    assert np.isfinite(jb.simulate(envs.bernoulli([0.5, 0.4]), channels.attributed(), classic.ucb1(), 100,
                                   jax.random.key(0), 64).regret).all()


# ----------------------------------------------------------------------------- full disks
def test_serve_on_a_full_disk_refuses_the_request_and_keeps_its_state(tmp_path):
    import sqlite3

    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from jaxbandits.apps import serve

    cfg = serve.load_config(None, arms=["a", "b"], policy={"name": "ucb1"}, channel={"kind": "attributed"})
    svc = serve.Service(cfg, str(tmp_path / "s.db"))

    class Full:  # the connection, with a disk that is full for new events
        def __init__(self, db):
            self.db = db

        def execute(self, sql, *a):
            if sql.startswith("INSERT INTO events"):
                raise sqlite3.OperationalError("database or disk is full")
            return self.db.execute(sql, *a)

        def __getattr__(self, name):
            return getattr(self.db, name)

    with TestClient(serve.create_app(svc), raise_server_exceptions=False) as c:
        ok = c.post("/decide", json={"n": 1})
        assert ok.status_code == 200
        real, svc.db = svc.db, Full(svc.db)
        before = (svc.seq, svc.learner.state)
        r = c.post("/decide", json={"n": 2})
        assert r.status_code == 507 and "database or disk is full" in r.json()["error"]
        assert "not applied" in r.json()["error"] and (svc.seq, svc.learner.state) == before
        svc.db = real
        assert c.post("/decide", json={"n": 1}).json()["ids"] == [1]  # the refused request took no id
    svc.close()


def test_atomic_write_on_a_full_disk_says_so_and_leaves_no_temporary(tmp_path):
    import errno

    from jaxbandits.core import fileio

    def writer(p):
        with open(p, "w") as fh:
            fh.write("partial")
        raise OSError(errno.ENOSPC, "No space left on device")

    with pytest.raises(OSError, match=r"summary.json: no space left on the device .* nothing was replaced"):
        fileio.atomic_write(str(tmp_path / "summary.json"), writer)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("sweep, label", [("T", "horizon T (rounds)"), ("d", "delay d (rounds)"),
                                          ("E[tau]", "mean delay E[tau] (rounds)")])
def test_sweep_figures_name_the_unit_of_their_time_axis(tmp_path, monkeypatch, sweep, label):
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.axes import Axes

    from jaxbandits.report.sweeps import SweepResults

    labels = []
    monkeypatch.setattr(Axes, "set_xlabel", lambda self, s, *a, **k: labels.append(s))
    res = SweepResults("s", {}, 0, 2, sweep, [10.0, 100.0], finals={"A": [np.ones(2), np.full(2, 3.0)]},
                       bounds={"A": [np.nan, np.nan]})
    res.plot(str(tmp_path / "s.png"))
    assert labels == [label]


def _nc_arrays(folder):
    import xarray as xr

    with xr.open_dataset(os.path.join(folder, "results.nc"), engine="h5netcdf") as ds:
        return {k: ds[k].values.copy() for k in ds.data_vars}


def _leftovers(folder):
    """Temporary files left anywhere under ``folder``."""
    return [os.path.join(d, f) for d, _, fs in os.walk(folder) for f in fs if f.startswith(".tmp-")]


RUN = []  # jaxbandits run FILE --chunk 10 --no-progress (a small file: one policy, quick to compile)


@pytest.fixture(scope="module")
def whole_run(tmp_path_factory):
    """The results of RUN uninterrupted."""
    from jaxbandits.apps.cli import main

    f = tmp_path_factory.mktemp("file") / "small.toml"
    f.write_text(BASE.replace("horizon = 60", "horizon = 40"))
    RUN[:] = ["run", str(f), "--chunk", "10"]
    out = str(tmp_path_factory.mktemp("whole"))
    assert main(RUN + ["--out", out]) == 0
    return _nc_arrays(out)


@pytest.mark.parametrize("when", ["results", "checkpoint"])
def test_run_on_a_full_disk_says_so_and_resumes_to_the_same_results(tmp_path, monkeypatch, capsys, when,
                                                                    whole_run):
    """A full disk while ``jaxbandits run`` writes results.nc (after the last chunk) or a checkpoint
    (mid-run): one line naming the file and the cause, no temporary left, and ``--resume`` then
    writes results bitwise equal to an uninterrupted run's."""
    import errno

    import xarray as xr

    from jaxbandits.apps.cli import main
    from jaxbandits.engine import checkpoint

    def full(fh):  # a writer that fills the disk half-way
        fh.write(b"\x89HDF partial")
        raise OSError(errno.ENOSPC, "No space left on device")

    out = str(tmp_path / "out")
    with monkeypatch.context() as m:
        if when == "results":
            def to_netcdf(self, p, **kw):
                with open(p, "wb") as fh:
                    full(fh)

            m.setattr(xr.Dataset, "to_netcdf", to_netcdf)
            file, kept = "results.nc", "the finished run is kept in its checkpoint"
        else:
            calls, atomic = [], checkpoint._atomic

            def flaky(path, write):  # the 3rd chunk's state cannot be written
                calls.append(path)
                if path.endswith("state.npz") and len(calls) > 6:
                    return atomic(path, full)
                return atomic(path, write)

            m.setattr(checkpoint, "_atomic", flaky)
            file, kept = "state.npz", "the run is kept up to its last saved chunk in its checkpoint"
        assert main(RUN + ["--out", out]) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert re.fullmatch(rf"jaxbandits: error: \S*{file}: no space left on the device while writing it \(OSError: "
                        rf".*No space left on device\); nothing was replaced and its temporary file was removed; "
                        rf"{kept} \(\S*\.checkpoint\): free space, then run the same command with --resume .*", err), err
    assert _leftovers(out) == [] and not os.path.exists(os.path.join(out, "results.nc"))
    assert main(RUN + ["--out", out]) == 2 and "pass --resume" in capsys.readouterr().err  # nothing lost or replaced
    assert main(RUN + ["--out", out, "--resume"]) == 0
    assert not os.path.exists(os.path.join(out, ".checkpoint")) and _leftovers(out) == []
    got, want = _nc_arrays(out), whole_run
    assert got.keys() == want.keys()
    for k in want:
        np.testing.assert_array_equal(got[k], want[k], err_msg=k)


# ----------------------------------------------------------------------------- a horizon shorter than the file's
def test_a_shorter_horizon_says_which_reporting_rounds_and_record_points_it_leaves_out(tmp_path, capsys):
    """``--horizon`` below an experiment's reporting rounds (checkpoints) and explicit record points:
    the run goes on (a quick look is what a short horizon is for) and says what it leaves out; the
    results hold exactly the points within the horizon."""
    import json

    from jaxbandits.apps.cli import main

    f = tmp_path / "e.toml"
    f.write_text("checkpoints = [20, 40, 60]\nrecord = [4, 19, 39, 59]\n" + BASE)
    out = tmp_path / "o"
    assert main(["run", str(f), "--horizon", "30", "--out", str(out), "--no-progress"]) == 0
    err = capsys.readouterr().err
    assert ("jaxbandits: note: horizon 30 is shorter than experiment 'e''s (60) and leaves out its reporting rounds "
            "t = 40, 60 (summary.json and table.md report R(t) at t = 20 only) and its record points t = 40, 60 (the "
            "curves end at t = 30); give a horizon of at least 60 to keep them") in err, err
    s = json.loads((out / "summary.json").read_text())
    assert s["horizon"] == 30 and "| policy | R(20) |\n" in (out / "table.md").read_text()
    import xarray as xr

    with xr.open_dataset(out / "results.nc", engine="h5netcdf") as ds:
        assert ds["t"].values.tolist() == [5, 20, 30]
    # the experiment's own horizon: no note, every point
    assert main(["run", str(f), "--out", str(tmp_path / "o2"), "--no-progress"]) == 0
    assert "note" not in capsys.readouterr().err
    with xr.open_dataset(tmp_path / "o2" / "results.nc", engine="h5netcdf") as ds:
        assert ds["t"].values.tolist() == [5, 20, 40, 60]
    # explicit record points all beyond the horizon: the last round alone (not the default stride)
    g = tmp_path / "g.toml"
    g.write_text("record = [39, 59]\n" + BASE)
    assert main(["run", str(g), "--horizon", "30", "--out", str(tmp_path / "o3"), "--no-progress"]) == 0
    assert "record points t = 40, 60" in capsys.readouterr().err
    with xr.open_dataset(tmp_path / "o3" / "results.nc", engine="h5netcdf") as ds:
        assert ds["t"].values.tolist() == [30]


# ----------------------------------------------------------------------------- every file read back names itself
CK = (envs.bernoulli([0.5, 0.4]), channels.attributed(), classic.ucb1())  # one program for every case


@pytest.fixture(scope="module")
def interrupted_checkpoint(tmp_path_factory):
    from jaxbandits.engine.checkpoint import Interrupted

    folder, calls = tmp_path_factory.mktemp("ck"), []
    with pytest.raises(Interrupted):
        jb.simulate(*CK, 40, jax.random.key(0), 2, chunk=10, checkpoint=str(folder),
                    stop=lambda: calls.append(1) or len(calls) >= 2)
    return folder


@pytest.mark.parametrize("damage, match", [
    (lambda d: (d / "state.npz").write_bytes((d / "state.npz").read_bytes()[:100]), r"state.npz: not a readable "
     r"checkpoint file \(damaged or truncated: .*\); it cannot be resumed: start afresh"),
    (lambda d: np.savez(d / "records-0.npz", n=1), r"records-0.npz: not a readable checkpoint file \(damaged or "
     r"truncated: it lacks the key 'a0'\)"),
    (lambda d: (d / "fingerprint.json").write_text("[1, 2"), r"fingerprint.json: not a readable checkpoint file"),
    (lambda d: (d / "fingerprint.json").write_text("[1, 2]"), r"fingerprint.json: .*not an object but a list"),
])
def test_a_damaged_checkpoint_names_the_file_and_the_key(tmp_path, interrupted_checkpoint, damage, match):
    import shutil

    d = tmp_path / "ck"
    shutil.copytree(interrupted_checkpoint, d)
    damage(d)
    with pytest.raises(ValueError, match=match):
        jb.simulate(*CK, 40, jax.random.key(0), 2, chunk=10, checkpoint=str(d), resume=True)


def test_a_damaged_or_foreign_posterior_for_ope_names_the_file(tmp_path):
    pytest.importorskip("arviz")
    import xarray as xr

    from jaxbandits.ope.command import delay_from_fit

    nc = tmp_path / "posterior.nc"
    nc.write_bytes(b"\x89HDF\r\n\x1a\n" + bytes(200))
    with pytest.raises(ValueError, match=r"posterior.nc: not a readable posterior file \(damaged or truncated"):
        delay_from_fit(str(tmp_path), 4)
    xr.Dataset({"p": (("chain", "draw"), np.zeros((1, 4)))}).to_netcdf(nc, engine="h5netcdf", group="posterior")
    with pytest.raises(ValueError, match=r"posterior.nc: holds no fitted delay law \(idata has no attrs\['model'\]"):
        delay_from_fit(str(tmp_path), 4)


def test_compare_on_an_edited_summary_names_it(tmp_path):
    from jaxbandits import Results
    from jaxbandits.report import compare

    t = np.array([10, 100])
    curves = {lab: {"regret": np.ones((3, 2), np.float32) * (i + 1), "expected_regret": np.ones((3, 2), np.float32),
                    "reward": np.zeros((3, 2), np.float32), "pulls": np.full((3, 2), 50, np.int32)}
              for i, lab in enumerate("AB")}
    res = Results("x", {}, 0, 3, 100, t, curves)
    res.save(str(tmp_path), plot=False)
    (tmp_path / "summary.json").write_text("[1, 2, 3]")
    with pytest.raises(ValueError, match=r"summary.json: not the summary.json of jaxbandits run"):
        compare.save_comparison(str(tmp_path), compare.compare(res), plot=False)


def test_write_log_is_atomic(tmp_path):
    import dataclasses

    pytest.importorskip("pandas")
    from jaxbandits import bayes as B

    log = B.conversion_log([0, 1, 0], [1.0, 2.0, 3.0], [2.0, np.nan, np.nan], 10.0, n_arms=2)
    f = tmp_path / "log.csv"
    B.write_log(str(f), log)
    before = f.read_bytes()
    bad = dataclasses.replace(log)
    object.__setattr__(bad, "arm_labels", ("a",))  # past the checks: an arm without a label
    with pytest.raises(IndexError):
        B.write_log(str(f), bad)  # an arm without a label: fails half-way through the rows
    assert f.read_bytes() == before and sorted(p.name for p in tmp_path.iterdir()) == ["log.csv"]


def test_an_edited_serving_database_names_the_file_and_the_event(tmp_path):
    import sqlite3

    pytest.importorskip("fastapi")
    from jaxbandits import ope
    from jaxbandits.apps import serve

    cfg = serve.load_config(None, arms=["a", "b"], policy={"name": "ucb1"}, channel={"kind": "attributed"})
    svc = serve.Service(cfg, str(tmp_path / "s.db"))
    svc.decide(3)
    svc.close()
    assert len(ope.read_serve_db(str(tmp_path / "s.db")).arm) == 3
    con = sqlite3.connect(str(tmp_path / "s.db"))
    con.execute("UPDATE events SET body = '{\"n\": 3}' WHERE kind = 'decide'")
    con.commit()
    con.close()
    with pytest.raises(ValueError, match=r"s.db: not a usable jaxbandits serve database \(event 1 \(decide\): the key "
                                         r"'propensity' is missing|s.db: decisions without logged propensities"):
        ope.read_serve_db(str(tmp_path / "s.db"))
    con = sqlite3.connect(str(tmp_path / "s.db"))
    con.execute("UPDATE events SET body = '{\"n\": 3, \"propensity\": [1, 1, 1]}' WHERE kind = 'decide'")
    con.commit()
    con.close()
    with pytest.raises(ValueError, match=r"s.db: not a usable jaxbandits serve database \(event 1 \(decide\): the key "
                                         r"'ids' is missing; damaged or edited\)"):
        ope.read_serve_db(str(tmp_path / "s.db"))


def test_sbc_figure_is_written_atomically(tmp_path, monkeypatch):
    """A figure written by SBCResult.plot goes through the atomic writer: a failing write leaves
    the previous file and no temporary; a full disk is named."""
    import errno

    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    from jaxbandits.bayes.calibration import SBCResult

    rng = np.random.default_rng(0)
    res = SBCResult("m", 19, {"a": rng.integers(0, 20, 40)}, {"a": np.zeros(40)}, np.zeros(40, int), np.ones(40), {})
    f = tmp_path / "sbc.png"
    assert res.plot(str(f)) == str(f) and f.read_bytes()[:4] == b"\x89PNG"
    before = f.read_bytes()

    def full(self, p, **kw):
        with open(p, "wb") as fh:
            fh.write(b"\x89PNG partial")
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(Figure, "savefig", full)
    with pytest.raises(OSError, match=r"sbc.png: no space left on the device while writing it"):
        res.plot(str(f))
    assert f.read_bytes() == before and [p.name for p in tmp_path.iterdir()] == ["sbc.png"]


@pytest.mark.parametrize("sql, match", [
    ("UPDATE events SET body = '{\"now\": null}' WHERE seq = 2", r"s.db: event 2 \(decide\) of the log cannot be "
     r"replayed \(the key 'n' is missing; a damaged or edited database\)"),
    ("UPDATE events SET body = '{\"n\": 1' WHERE seq = 1", r"s.db: event 1 \(decide\) of the log cannot be replayed"),
    ("UPDATE meta SET value = '[1' WHERE key = 'config'", r"s.db: its meta table's config is not a config"),
])
def test_an_edited_serving_log_names_the_file_and_the_event(tmp_path, sql, match):
    import sqlite3

    from jaxbandits.apps import serve

    cfg = serve.load_config(None, arms=["a", "b"], policy={"name": "ucb1"}, channel={"kind": "attributed"},
                            snapshot_every=100)
    svc = serve.Service(cfg, str(tmp_path / "s.db"))
    svc.decide(1)
    svc.decide(2)
    svc.close()
    con = sqlite3.connect(str(tmp_path / "s.db"))
    con.execute(sql)
    con.commit()
    con.close()
    with pytest.raises(ValueError, match=match):
        serve.Service(cfg, str(tmp_path / "s.db"))


def test_a_learner_that_cannot_fit_in_memory_is_refused_with_the_estimate_and_the_limit(monkeypatch):
    from jaxbandits.engine import memory

    monkeypatch.setattr(memory, "available_memory", lambda: 2**30)  # the limit is the host's: 1 GiB here
    with pytest.raises(ValueError, match=r"the learner's state needs [\d.]+ GiB \(a pending ring of 2147483647 "
                                         r"slots, from max_pending\), more than the 1.0 GiB of memory available"):
        online.Learner(classic.ucb1(), channels.attributed(), ["a", "b"], max_pending=2**31 - 1)
    monkeypatch.setattr(memory, "available_memory", lambda: 10_000)
    with pytest.raises(ValueError, match=r"a pending ring of 1001 slots, from the channel's window 1000 \+ 1\)"):
        online.Learner(classic.thompson(), channels.conversions(window=1000), ["a", "b"])
