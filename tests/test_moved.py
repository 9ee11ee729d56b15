"""The modules that moved into the layer folders (docs/architecture.md, "Old import paths"): every
old import path still imports, as the very module object of its new path, with one
``DeprecationWarning`` naming the new path; old pickles load; the digests written before the move
are unchanged; the command line runs under its new path and its old one.

Cheap: imports, and three subprocesses that start the command line (about 30 s on 2 cores, JAX's
import in each).
"""
from __future__ import annotations

import importlib
import os
import pickle
import re
import subprocess
import sys
import tomllib
import warnings
from pathlib import Path

import pytest

import jaxbandits
from jaxbandits import moved

ROOT = Path(__file__).resolve().parents[1]
ENV = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))

#: the table as it was written (a test that cannot drift with the table it checks): old -> new
OLD_TO_NEW = {
    "jaxbandits.types": "jaxbandits.core.types", "jaxbandits.values": "jaxbandits.core.values",
    "jaxbandits.mathlib": "jaxbandits.core.mathlib", "jaxbandits.ring": "jaxbandits.core.ring",
    "jaxbandits.delays": "jaxbandits.core.delays", "jaxbandits.profiles": "jaxbandits.core.profiles",
    "jaxbandits.intervals": "jaxbandits.core.intervals", "jaxbandits._validate": "jaxbandits.core.validate",
    "jaxbandits._pytree": "jaxbandits.core.pytree", "jaxbandits._io": "jaxbandits.core.fileio",
    "jaxbandits._version": "jaxbandits.version", "jaxbandits.fused._registry": "jaxbandits.engine.fused.registry",
    "jaxbandits.simulate": "jaxbandits.engine",
    "jaxbandits.parts": "jaxbandits.experiments.parts", "jaxbandits.sweeping": "jaxbandits.experiments.sweeping",
    "jaxbandits.distributed": "jaxbandits.experiments.distributed",
    "jaxbandits.results": "jaxbandits.experiments.results",
    "jaxbandits.labels": "jaxbandits.report.labels", "jaxbandits.plotting": "jaxbandits.report.plotting",
    "jaxbandits.compare": "jaxbandits.report.compare", "jaxbandits.sweeps": "jaxbandits.report.sweeps",
    "jaxbandits.cli": "jaxbandits.apps.cli", "jaxbandits.serve": "jaxbandits.apps.serve",
    "jaxbandits.dashboard": "jaxbandits.apps.dashboard",
    "jaxbandits.fused": "jaxbandits.engine.fused",
    **{f"jaxbandits.bayes.{m}": f"jaxbandits.delaymodels.{m}" for m in ("families", "model", "hierarchical", "logs",
                                                                         "warm")},
}
#: modules inside a moved package, imported by their old dotted path
SUBMODULES = {"jaxbandits.serve.config": "jaxbandits.apps.serve.config",
              "jaxbandits.serve.service": "jaxbandits.apps.serve.service"}


def _fresh(old):
    """Forget that ``old`` was imported, as in a fresh process (importing an old path makes the
    import system set it on its parent too: ``jaxbandits.results`` then reads without a warning)."""
    sys.modules.pop(old, None)
    parent, _, name = old.rpartition(".")
    if parent == "jaxbandits" and name not in jaxbandits.__all__:  # never a public name
        jaxbandits.__dict__.pop(name, None)


def test_the_table_is_the_one_written():
    assert moved.MOVED == OLD_TO_NEW


@pytest.mark.parametrize("old,new", sorted({**OLD_TO_NEW, **SUBMODULES}.items()))
def test_an_old_path_is_the_new_module_and_warns_once(old, new):
    mod = importlib.import_module(new)
    spec = mod.__spec__
    _fresh(old)
    with pytest.warns(DeprecationWarning) as got:
        again = importlib.import_module(old)
    assert again is mod and sys.modules[old] is mod
    assert mod.__spec__ is spec and mod.__name__ == new  # the module keeps its own identity
    msgs = [str(w.message) for w in got if issubclass(w.category, DeprecationWarning)]
    assert len(msgs) == 1 and f"{old} moved to {new}" in msgs[0], msgs
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert importlib.import_module(old) is mod  # once: the second import is silent


def test_from_imports_of_old_paths_give_the_same_objects():
    from jaxbandits.core.delays import Geometric, geometric
    from jaxbandits.experiments.results import Results

    _fresh("jaxbandits.delays")
    _fresh("jaxbandits.results")
    with pytest.warns(DeprecationWarning):
        from jaxbandits.delays import Geometric as G  # noqa: I001 - an old path on purpose
    with pytest.warns(DeprecationWarning, match="jaxbandits.experiments.results"):
        from jaxbandits import results
    assert G is Geometric and results.Results is Results is jaxbandits.Results
    assert isinstance(geometric(mean=3.0), G)


def test_the_public_names_are_plain_attributes():
    from jaxbandits.core import delays, mathlib, ring
    from jaxbandits.engine import simulate, simulate_grid

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert jaxbandits.delays is delays and jaxbandits.mathlib is mathlib and jaxbandits.ring is ring
        assert jaxbandits.simulate is simulate and jaxbandits.simulate_grid is simulate_grid
        from jaxbandits import channels, envs, experiments, policies  # noqa: F401
        assert callable(jaxbandits.simulate) and jaxbandits.Results.__module__ == "jaxbandits.experiments.results"


def test_importing_the_old_simulate_module_keeps_the_function():
    """``import jaxbandits.simulate`` (the module that re-exported the driver) gets the engine; the
    import system's setting of the parent's attribute leaves the public function in place."""
    _fresh("jaxbandits.simulate")
    with pytest.warns(DeprecationWarning):
        from jaxbandits.simulate import PATHS, choose_path, simulate
    from jaxbandits import engine

    assert simulate is engine.simulate is jaxbandits.simulate and callable(jaxbandits.simulate)
    assert choose_path is engine.choose_path and PATHS == engine.PATHS


def test_an_old_attribute_warns_and_an_unknown_one_is_an_attribute_error():
    _fresh("jaxbandits.compare")
    with pytest.warns(DeprecationWarning, match="jaxbandits.report.compare"):
        assert jaxbandits.compare is importlib.import_module("jaxbandits.report.compare")
    with pytest.raises(AttributeError, match="no_such_thing"):
        jaxbandits.no_such_thing  # noqa: B018


def test_an_old_pickle_loads_as_the_new_class():
    """A pickle written by hand as one made before the move is (its class named by the old module
    path ``jaxbandits.delays.Geometric``) loads to an object of the new class, equal to a new one."""
    from jaxbandits.core.delays import Geometric, geometric

    old = (b"\x80\x02"                                   # PROTO 2
           b"cjaxbandits.delays\nGeometric\n"             # GLOBAL: the class by its old module path
           b")\x81"                                      # EMPTY_TUPLE, NEWOBJ
           b"}X\x07\x00\x00\x00log_rho"                   # EMPTY_DICT, BINUNICODE 'log_rho'
           b"cnumpy\nfloat32\nG\xbf\xa8\xfb\x06@\x00\x00\x00\x85R"  # numpy.float32(-0.04879016429185867)
           b"sb.")                                       # SETITEM, BUILD, STOP
    _fresh("jaxbandits.delays")
    with pytest.warns(DeprecationWarning, match="jaxbandits.core.delays"):
        law = pickle.loads(old)
    assert type(law) is Geometric and law == geometric(mean=20.0) and hash(law) == hash(geometric(mean=20.0))
    assert b"jaxbandits.core.delays" in pickle.dumps(law)  # a new pickle names the new module
    assert pickle.loads(pickle.dumps(law)) == law


def test_digests_are_the_ones_written_before_the_move():
    """Digests of policies name the modules of their fields' types as they were before the move
    (checkpoints, split sweeps and parts written before keep matching). Computed on 329b1a0, before
    the move."""
    from jaxbandits.core.delays import geometric
    from jaxbandits.core.values import policy_digest
    from jaxbandits.policies import bayes, classic, conversions

    assert policy_digest(classic.ucb1()) == "v:7ea58aba1f1df31d"
    assert policy_digest(conversions.delayed_klucb(window=200, delay=geometric(mean=20.0))) == "v:f54848341ad62cac"
    assert policy_digest(bayes.delay_model_ts()) == "v:0e8a087c25420a95"


def test_stable_module_names_reverse_the_table():
    for old, new in OLD_TO_NEW.items():
        if new != "jaxbandits.engine":  # the engine did not move: jaxbandits.simulate only re-exported it
            assert moved.stable_module(new) == old
    assert moved.stable_module("jaxbandits.apps.serve.config") == "jaxbandits.serve.config"
    assert moved.stable_module("jaxbandits.engine.driver") == "jaxbandits.engine.driver"
    assert moved.stable_module("jaxbandits.policies.classic") == "jaxbandits.policies.classic"
    assert moved.stable_module("mypkg.core.delays") == "mypkg.core.delays"


def _run(args):
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, env=ENV, cwd=str(ROOT), timeout=300)


def test_the_command_line_under_its_new_and_old_module_paths():
    r = _run(["-m", "jaxbandits.apps.cli", "--help"])
    assert r.returncode == 0 and "usage: jaxbandits" in r.stdout and "DeprecationWarning" not in r.stderr, r.stderr
    r = _run(["-W", "always::DeprecationWarning", "-m", "jaxbandits.cli", "--help"])
    assert r.returncode == 0 and "usage: jaxbandits" in r.stdout, r.stderr
    assert "jaxbandits.cli moved to jaxbandits.apps.cli" in r.stderr


def test_the_console_script_entry_point():
    """What pip writes for ``[project.scripts] jaxbandits``: import the entry point and call it."""
    target = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]["jaxbandits"]
    assert target == "jaxbandits.apps.cli:main"
    module, func = target.split(":")
    code = f"import sys; from {module} import {func}; sys.argv[0] = 'jaxbandits'; sys.exit({func}())"
    r = _run(["-W", "error::DeprecationWarning", "-c", code, "--version"])
    assert r.returncode == 0 and r.stdout.startswith("jaxbandits "), (r.stdout, r.stderr)


def test_the_project_itself_imports_the_new_paths():
    """Tests, tools, benchmarks, docs and the package's docstring examples import the new paths (an
    old one works, with a warning: users' code, not ours). The package's own import statements are
    checked by tests/test_layers.py."""
    names = [k.split(".", 1)[1] for k in OLD_TO_NEW]  # simulate included: the module, not the function
    private = [n for n in names if n not in jaxbandits.__all__]  # delays, mathlib, ring, simulate are public
    alt, alt_private = "|".join(map(re.escape, names)), "|".join(map(re.escape, private))
    # ``from jaxbandits.bayes import families``: an old path named as a parent and a leaf
    nested = "|".join(rf"from jaxbandits\.{re.escape(n.rsplit('.', 1)[0])} import (?:[\w ]+, *)*"
                      rf"{re.escape(n.rsplit('.', 1)[1])}\b" for n in names if "." in n)
    pattern = re.compile(rf"^\s*(?:>>> |\.\.\. )?(?:from jaxbandits\.(?:{alt})\b|import jaxbandits\.(?:{alt})\b"
                         rf"|from jaxbandits import (?:[\w ]+, *)*(?:{alt_private})\b|{nested})"
                         rf"|\"-m\", \"jaxbandits\.(?:{alt})\b", re.M)
    files = [p for d in ("tests", "tools", "benchmarks", "experiments", "docs", "jaxbandits")
             for p in (ROOT / d).rglob("*") if p.suffix in (".py", ".md")] + [ROOT / "README.md"]
    found = [f"{p.relative_to(ROOT)}: {m.group(0).strip()}" for p in files if p.name != "test_moved.py"
             for m in pattern.finditer(p.read_text(encoding="utf-8"))]
    assert len(files) > 200
    assert not found, "old module paths imported:\n" + "\n".join(found)


def test_names_written_to_disk_did_not_move():
    """A serve database names its format ``"jaxbandits.serve"`` (docs/online.md), read back by the
    service and by ``jaxbandits.ope``: a name on disk, not a module path, so it stays when the
    module moves (a database written before the move still opens). The module rename once changed
    it by search-and-replace; both readers are pinned here."""
    import inspect

    from jaxbandits.apps.serve import service
    from jaxbandits.ope import log

    assert service.DB_FORMAT == "jaxbandits.serve"
    assert 'meta.get("format") != "jaxbandits.serve"' in inspect.getsource(log)
