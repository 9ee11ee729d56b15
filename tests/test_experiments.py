"""Where experiments are found: the built-in table (lazy: nothing imported for its side effects),
entry points of other packages, ``register()``; name clashes; what ``import jaxbandits`` loads."""
import importlib
import inspect
import json
import pkgutil
import subprocess
import sys
import textwrap
from importlib import metadata

import numpy as np
import pytest

from jaxbandits import experiments as X
from jaxbandits.apps.cli import main

HEAVY = ("numpyro", "arviz", "matplotlib", "pandas", "xarray", "fastapi", "uvicorn", "starlette")


def _python(code):
    r = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1])


def test_import_jaxbandits_loads_no_heavy_dependency():
    """``import jaxbandits`` imports neither NumPyro, ArviZ, matplotlib, pandas, xarray nor the web
    stack of ``jaxbandits serve`` (FastAPI, Starlette, uvicorn), and no
    reproduction module or the Bayesian subpackage; they load with the features that need them."""
    loaded = _python(f"""
        import json, sys
        import jaxbandits
        print(json.dumps([m for m in sys.modules if m.split('.')[0] in {HEAVY!r}
                          or m.startswith(('jaxbandits.reproductions', 'jaxbandits.bayes', 'jaxbandits.policies.bayes',
                                           'jaxbandits.report.plotting'))]))
    """)
    assert loaded == [], loaded


def test_experiments_module_imports_no_reproduction():
    """Importing the table and listing its names imports no reproduction; asking for one experiment
    imports only the module that defines it."""
    out = _python("""
        import json, sys
        import jaxbandits.experiments as X
        repro = lambda: sorted(m for m in sys.modules if m.startswith('jaxbandits.reproductions'))
        a = repro()
        names = X.names()
        b = repro()
        X.get('quickstart')
        c = repro()
        X.get('vernade2017-fig2')
        d = repro()
        print(json.dumps([a, b, c, d, 'numpyro' in sys.modules, len(names)]))
    """)
    a, b, c, d, numpyro, n = out
    assert a == b == c == [] and n == len(X.BUILTIN)
    assert d == ["jaxbandits.reproductions", "jaxbandits.reproductions.vernade2017"]
    assert not numpyro


def test_builtin_table_is_complete_and_consistent():
    """Every entry of the table loads an Experiment of that name, and every Experiment defined in
    ``jaxbandits.reproductions`` or ``jaxbandits.experiments`` is in the table (none is forgotten)."""
    exps = X.load_all()
    assert list(exps) == sorted(X.BUILTIN)
    for name, e in exps.items():
        assert isinstance(e, X.Experiment) and e.name == name
    import jaxbandits.reproductions as R

    defined = {}
    for mod in [X] + [importlib.import_module(f"{R.__name__}.{m.name}") for m in pkgutil.iter_modules(R.__path__)]:
        for attr, v in vars(mod).items():
            if isinstance(v, X.Experiment):
                defined[v.name] = f"{mod.__name__}:{attr}"
    assert defined == X.BUILTIN


@pytest.fixture
def user_experiment():
    from jaxbandits import channels as C
    from jaxbandits import envs as E
    from jaxbandits.policies import classic as P

    def build(cfg):
        return E.bernoulli([cfg["low"], 0.8]), C.attributed(), {"UCB1": P.ucb1(), "random": P.uniform_random()}

    exp = X.Experiment("my-two-arms", "a user's own: two Bernoulli arms", build, {"low": 0.2}, horizon=60, runs=3)
    yield exp
    if "my-two-arms" in X.registry._SESSION:
        X.unregister("my-two-arms")


def test_register_lists_and_runs(user_experiment, tmp_path, capsys):
    assert "my-two-arms" not in X.names()
    assert X.register(user_experiment) is user_experiment
    assert "my-two-arms" in X.names() and X.get("my-two-arms") is user_experiment
    res = X.run("my-two-arms", overrides={"low": 0.3})
    assert res.runs == 3 and res.horizon == 60 and set(res.curves) == {"UCB1", "random"}
    assert main(["list"]) == 0
    assert "my-two-arms" in capsys.readouterr().out
    out = tmp_path / "mine"
    assert main(["run", "my-two-arms", "--out", str(out), "--no-progress", "--single-device",
                 "--no-compile-cache"]) == 0
    s = json.loads((out / "summary.json").read_text())
    assert s["experiment"] == "my-two-arms" and s["runs"] == 3 and s["horizon"] == 60
    X.unregister("my-two-arms")
    with pytest.raises(ValueError, match="unknown experiment 'my-two-arms'"):
        X.get("my-two-arms")


def test_register_name_clash_is_an_error(user_experiment):
    import dataclasses

    with pytest.raises(ValueError, match=r"'quickstart' is already defined by jaxbandits \(jaxbandits.experiments:QUICKSTART\)"):
        X.register(dataclasses.replace(user_experiment, name="quickstart"))
    X.register(user_experiment)
    other = dataclasses.replace(user_experiment, description="another")
    with pytest.raises(ValueError, match="already defined by jaxbandits.experiments.register.*replace=True"):
        X.register(other)
    X.register(other, replace=True)
    assert X.get("my-two-arms").description == "another"
    with pytest.raises(TypeError, match="Experiment"):
        X.register({"name": "x"})
    with pytest.raises(ValueError, match="was not added by register"):
        X.unregister("quickstart")


# ----------------------------------------------------------------------------- entry points (faked)
USER_MODULE = '''
from jaxbandits import channels as C, envs as E
from jaxbandits.experiments import Experiment
from jaxbandits.policies import classic as P

def _build(cfg):
    return E.bernoulli([0.3, cfg["high"]]), C.attributed(), {"KL-UCB": P.kl_ucb()}

EXP = Experiment("ep-two-arms", "from an entry point", _build, {"high": 0.7}, horizon=40, runs=2)
CLASH = Experiment("quickstart", "a second quickstart", _build, {"high": 0.7}, horizon=40, runs=2)
MISNAMED = Experiment("some-other-name", "names itself differently", _build, {"high": 0.7}, horizon=40, runs=2)
NOT_AN_EXPERIMENT = 42
'''


@pytest.fixture
def fake_entry_points(tmp_path, monkeypatch):
    """A package outside jaxbandits (written to tmp_path) and a fake ``importlib.metadata.entry_points``
    that declares the given ``(name, value)`` pairs in the group ``jaxbandits.experiments``."""
    (tmp_path / "user_exps_pkg.py").write_text(USER_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    real = metadata.entry_points

    def install(*pairs):
        eps = [metadata.EntryPoint(n, v, X.ENTRY_POINT_GROUP) for n, v in pairs]

        def entry_points(**kw):
            if kw.get("group") == X.ENTRY_POINT_GROUP:
                return metadata.EntryPoints(eps)
            return real(**kw)

        monkeypatch.setattr(metadata, "entry_points", entry_points)

    yield install
    sys.modules.pop("user_exps_pkg", None)


def test_entry_point_experiment_lists_and_runs(fake_entry_points, tmp_path, capsys):
    fake_entry_points(("ep-two-arms", "user_exps_pkg:EXP"))
    assert "ep-two-arms" in X.names() and "user_exps_pkg" not in sys.modules  # listed names import nothing
    assert X.get("ep-two-arms").description == "from an entry point"
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    assert "ep-two-arms" in out and "from an entry point" in out and "quickstart" in out
    d = tmp_path / "ep"
    assert main(["run", "ep-two-arms", "--set", "high=0.9", "--out", str(d), "--no-progress", "--single-device",
                 "--no-compile-cache"]) == 0
    s = json.loads((d / "summary.json").read_text())
    assert s["config"]["high"] == 0.9 and list(s["policies"]) == ["KL-UCB"] and s["horizon"] == 40
    assert np.isfinite(s["policies"]["KL-UCB"]["final_regret_mean"])


def test_entry_point_name_clash_is_an_error(fake_entry_points, capsys):
    fake_entry_points(("quickstart", "user_exps_pkg:CLASH"))
    with pytest.raises(ValueError, match=r"'quickstart' is defined twice: by jaxbandits .* and by the entry point "
                                         r"quickstart = 'user_exps_pkg:CLASH'"):
        X.get("classic-bernoulli")
    assert main(["list"]) == 2
    assert "defined twice" in capsys.readouterr().err
    assert main(["run", "quickstart", "--no-progress", "--single-device", "--no-compile-cache"]) == 2
    assert "defined twice" in capsys.readouterr().err


def test_two_entry_points_of_one_name_clash(fake_entry_points):
    fake_entry_points(("ep-two-arms", "user_exps_pkg:EXP"), ("ep-two-arms", "user_exps_pkg:MISNAMED"))
    with pytest.raises(ValueError, match="'ep-two-arms' is defined twice"):
        X.names()


def test_bad_entry_points_are_named(fake_entry_points, capsys):
    fake_entry_points(("bad-type", "user_exps_pkg:NOT_AN_EXPERIMENT"), ("misnamed", "user_exps_pkg:MISNAMED"))
    with pytest.raises(TypeError, match="bad-type.*must name a jaxbandits.experiments.Experiment, got int"):
        X.get("bad-type")
    with pytest.raises(ValueError, match="'misnamed'.*called 'some-other-name'"):
        X.get("misnamed")
    assert main(["list"]) == 1  # the others are still listed
    out = capsys.readouterr().out
    assert "quickstart" in out and "bad-type" in out and "could not be loaded" in out
    assert main(["run", "misnamed", "--no-progress", "--single-device", "--no-compile-cache"]) == 2


def test_experiments_are_plain_values():
    """A reproduction module defines its experiments as module attributes and registers nothing:
    no ``register`` call in any of them (importing them has no effect on the table)."""
    import jaxbandits.reproductions as R

    for m in pkgutil.iter_modules(R.__path__):
        src = inspect.getsource(importlib.import_module(f"{R.__name__}.{m.name}"))
        assert "register(" not in src, m.name
