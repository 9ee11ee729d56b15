"""The package's layers (docs/architecture.md): every import of a jaxbandits module, including
those inside functions (a "lazy" import only hides a circle), read from the source with ``ast``.

* no import circle among the package's modules;
* every import goes from a module to one of the same layer or a lower one (:data:`LAYERS`), and no
  module imports the package ``jaxbandits`` itself (its ``__init__`` is the facade on top);
* no module imports another module's private (``_``-prefixed) name, nor reaches one through a
  module it imported (``mod._name``).

Reads files only: nothing is imported, so this test takes well under a second.
"""
from __future__ import annotations

import ast
import importlib.util
import os

import pytest

PKG = "jaxbandits"
ROOT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), PKG)

#: Layer of every module, by the longest matching dotted prefix (a package names its whole subtree
#: unless a longer entry says otherwise). Imports go downwards or sideways, never upwards.
CORE, COMPONENTS, ENGINE, EXPERIMENTS, STATISTICS, REPORT, APPS, FACADE = range(8)
LAYERS = {
    # core (jaxbandits/core/): types, values, math, the ring buffer, delay laws, plain helpers; the
    # version and the table of moved modules (imports nothing of the package)
    "jaxbandits.version": CORE, "jaxbandits.moved": CORE, "jaxbandits.core": CORE,
    # components: worlds, channels, policies, and the Bayesian delay models the policies use
    "jaxbandits.envs": COMPONENTS, "jaxbandits.channels": COMPONENTS, "jaxbandits.policies": COMPONENTS,
    "jaxbandits.delaymodels": COMPONENTS,
    # engine: the round, the driver and the public simulate, the fused backend
    "jaxbandits.engine": ENGINE, "jaxbandits.engine.fused": ENGINE,
    # experiments (jaxbandits/experiments/: specs, registry, runner, sweeping, parts, distributed,
    # results; the experiment files); the online learner; off-policy evaluation of logs
    "jaxbandits.experiments": EXPERIMENTS, "jaxbandits.online": EXPERIMENTS,
    "jaxbandits.ope": EXPERIMENTS,
    # report, statistics with no plotting: which policies a report shows, offline Bayesian fits
    "jaxbandits.report.labels": STATISTICS, "jaxbandits.bayes.fit": STATISTICS,
    "jaxbandits.bayes.contextual": STATISTICS, "jaxbandits.bayes.synth": STATISTICS,
    # report, plots and comparisons (jaxbandits/report/: plotting, compare, sweeps; and what draws its
    # own figures: the bayes reports, the reproductions)
    "jaxbandits.report": REPORT, "jaxbandits.reproductions": REPORT,
    # the bayes package: its __init__ re-exports the fits and the delay models' names (statistics);
    # its reports and plots are imported from their modules
    "jaxbandits.bayes": STATISTICS, "jaxbandits.bayes.ppc": REPORT, "jaxbandits.bayes.calibration": REPORT,
    "jaxbandits.bayes.report": REPORT,
    # apps (jaxbandits/apps/): the command line, the web service and its dashboard; ope's command
    "jaxbandits.apps": APPS, "jaxbandits.ope.command": APPS,
    # the package itself: the facade that re-exports the public API and wires the layers together
    "jaxbandits": FACADE,
}


def modules(root=ROOT, pkg=PKG):
    """``{dotted module name: path}`` of every ``.py`` file under ``root``."""
    out = {}
    for dp, dirs, fs in os.walk(root):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        for f in fs:
            if f.endswith(".py"):
                rel = os.path.relpath(os.path.join(dp, f), os.path.dirname(root))[:-3]
                out[rel.replace(os.sep, ".").removesuffix(".__init__")] = os.path.join(dp, f)
    return out


def imports(mods, everything=False):
    """Every import of a package module, at any depth of the source: ``(importer, imported module,
    line, names)`` where ``names`` are the names taken from it (``from m import a, b``), plus the
    private attributes read off a name bound to a package module (``m._x``), as ``("attr", name)``."""
    found = []
    for m, path in mods.items():
        ispkg = path.endswith("__init__.py")
        tree = ast.parse(open(path, encoding="utf-8").read(), path)
        bound = {}  # local alias -> module, for `import jaxbandits.x as y` / `from . import x as y`
        for n in ast.walk(tree):
            if isinstance(n, ast.Import):
                for a in n.names:
                    if a.name == PKG or a.name.startswith(PKG + "."):
                        found.append((m, a.name, n.lineno, ()))
                        if a.asname:
                            bound[a.asname] = a.name
            elif isinstance(n, ast.ImportFrom):
                if n.level:
                    base = m.split(".") if ispkg else m.split(".")[:-1]
                    base = base[:len(base) - (n.level - 1)]
                    full = ".".join(base + ([n.module] if n.module else []))
                else:
                    full = n.module or ""
                if not (full == PKG or full.startswith(PKG + ".")):
                    continue
                names = []
                for a in n.names:
                    sub = f"{full}.{a.name}"
                    if sub in mods:  # a module taken from its package
                        found.append((m, sub, n.lineno, ()))
                        bound[a.asname or a.name] = sub
                    else:
                        names.append(a.name)
                if names:
                    found.append((m, full, n.lineno, tuple(names)))
        for n in ast.walk(tree):
            if (isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id in bound
                    and is_private(n.attr)):
                found.append((m, bound[n.value.id], n.lineno, (("attr", n.attr),)))
    return found if everything else [f for f in found if f[1] in mods and f[1] != f[0]]


def is_private(name):
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def layer_of(m):
    best = max((k for k in LAYERS if m == k or m.startswith(k + ".")), key=len, default=None)
    return None if best is None else LAYERS[best]


def cycles(edges):
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    graph = {}
    for a, b in edges:
        graph.setdefault(a, set()).add(b)
        graph.setdefault(b, set())
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):  # iterative Tarjan: the graph may be deep
        work = [(v, iter(sorted(graph[v])))]
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        while work:
            u, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                elif w in on:
                    low[u] = min(low[u], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[u])
            if low[u] == index[u]:
                comp = []
                while True:
                    x = stack.pop()
                    on.discard(x)
                    comp.append(x)
                    if x == u:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


MODS = modules()
IMPORTS = imports(MODS)


def test_every_module_has_a_layer():
    missing = sorted(m for m in MODS if layer_of(m) is None)
    assert not missing, f"modules with no layer in tests/test_layers.py's LAYERS: {missing}"


def test_no_import_circle():
    found = cycles({(a, b) for a, b, _, _ in IMPORTS})
    assert not found, "import circles (function-level imports included): " + "; ".join(" <-> ".join(c) for c in found)


def test_no_module_imports_the_package_facade():
    back = sorted(f"{a}:{line}" for a, b, line, _ in IMPORTS if b == PKG)
    assert not back, f"modules importing the package `jaxbandits` itself (take names from their own module): {back}"


def test_imports_go_down_the_layers():
    up = sorted(f"{a} (layer {layer_of(a)}) -> {b} (layer {layer_of(b)}) at line {line}"
                for a, b, line, _ in IMPORTS if b != PKG and layer_of(b) is not None and layer_of(a) is not None
                and layer_of(b) > layer_of(a))
    assert not up, "imports from a lower layer up to a higher one:\n" + "\n".join(up)


def moved_table():
    """``jaxbandits/moved.py``'s table of old module paths, read without importing the package (the
    module imports only the standard library)."""
    spec = importlib.util.spec_from_file_location("_moved_table", os.path.join(ROOT, "moved.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.MOVED


def test_no_module_imports_an_old_path():
    """The package imports its modules by their new paths: an old one (``from .. import delays``,
    ``from ..results import Results``) would work, through the import hook, with a warning."""
    moved = moved_table()

    def old(name):
        return any(name == k or name.startswith(k + ".") for k in moved)

    bad = sorted(f"{a}:{line} imports {b}" + (f" ({', '.join(n for n in names if isinstance(n, str))})" if b == PKG else "")
                 for a, b, line, names in imports(MODS, everything=True)
                 if old(b) or (b == PKG and any(isinstance(n, str) and old(f"{PKG}.{n}") for n in names)))
    assert not bad, "imports of old module paths (see jaxbandits/moved.py):\n" + "\n".join(bad)


#: Private names taken across modules, each ``(importer, module, name)``: none. Nothing may be
#: added here; an entry no longer used fails the test.
KNOWN_PRIVATE: set = set()  # none: every name used across modules is public


def test_no_private_name_of_another_module():
    taken = {(a, b, n[1] if isinstance(n, tuple) else n) for a, b, _, names in IMPORTS for n in names}
    assert not KNOWN_PRIVATE - taken, f"no longer used, remove from KNOWN_PRIVATE: {sorted(KNOWN_PRIVATE - taken)}"
    bad = sorted(f"{a}:{line} takes {n[1] if isinstance(n, tuple) else n} from {b}"
                 for a, b, line, names in IMPORTS for n in names
                 if is_private(n[1] if isinstance(n, tuple) else n)
                 and (a, b, n[1] if isinstance(n, tuple) else n) not in KNOWN_PRIVATE)
    assert not bad, "private names used outside their module:\n" + "\n".join(bad)


def private_modules_taken(found):
    """``importer:line imports module`` for every import of a module with a ``_``-prefixed part
    (``jaxbandits.core._io``) from outside it: a module other modules share is not private."""
    return sorted(f"{a}:{line} imports {b}" for a, b, line, _ in found
                  if any(is_private(p) for p in b.split(".")[1:]) and a != b and not a.startswith(b + "."))


def test_no_private_module_of_another_module():
    bad = private_modules_taken(IMPORTS)
    assert not bad, "private modules imported by other modules (name them without the underscore):\n" + "\n".join(bad)


def package_edges(mods, found):
    """The imports Python adds: importing ``a.b.c`` first runs ``a/__init__.py`` and
    ``a/b/__init__.py``. ``(importer, package)`` for every package above an imported module that
    the importer is not itself inside (the top-level facade left out: it is checked above)."""
    out = set()
    for a, b, _, _ in found:
        parts = b.split(".")
        for i in range(2, len(parts)):
            pkg = ".".join(parts[:i])
            if pkg in mods and a != pkg and not a.startswith(pkg + "."):
                out.add((a, pkg))
    return out


def test_package_inits_add_no_circle_and_no_upward_import():
    """Counting the package ``__init__`` files each import runs: no circle and no upward import.
    (The last three such edges went when the experiment files and parts moved into
    ``experiments/``, the fused backend into ``engine/`` and the Bayesian delay models the policies
    use out of ``bayes/`` into ``delaymodels/``.)"""
    edges = {(a, b) for a, b, _, _ in IMPORTS} | package_edges(MODS, IMPORTS)
    up = sorted(f"{a} -> {b}" for a, b in edges if b != PKG and layer_of(b) > layer_of(a))
    assert not cycles(edges) and not up, (cycles(edges), up)


# ----------------------------------------------------------------------------- the checks themselves
def _tree(tmp_path, files):
    root = tmp_path / PKG
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return modules(str(root))


def test_a_lazy_circle_is_found(tmp_path):
    """A circle closed by an import inside a function is a circle (as the package's ones were)."""
    mods = _tree(tmp_path, {"__init__.py": "", "a.py": "from .b import f\n",
                            "b.py": "def f():\n    from . import a\n    return a\n", "c.py": "from . import a\n"})
    edges = {(x, y) for x, y, _, _ in imports(mods)}
    assert cycles(edges) == [["jaxbandits.a", "jaxbandits.b"]]
    mods = _tree(tmp_path, {"b.py": "def f():\n    return 1\n"})
    assert cycles({(x, y) for x, y, _, _ in imports(mods)}) == []


def test_upward_and_private_imports_are_found(tmp_path):
    mods = _tree(tmp_path, {"__init__.py": "", "core/__init__.py": "", "apps/__init__.py": "",
                            "core/types.py": "def g():\n    from ..apps.cli import main\n",
                            "apps/cli.py": "from ..core import types as T\nfrom ..core.types import _hidden\nT._inner()\n"
                                           "import jaxbandits\nfrom ..core import _shared\n",
                            "core/_shared.py": ""})
    found = imports(mods)
    assert ([(a, b) for a, b, _, _ in found if b != PKG and layer_of(b) > layer_of(a)]
            == [("jaxbandits.core.types", "jaxbandits.apps.cli")])
    private = sorted(n if isinstance(n, str) else n[1] for _, _, _, ns in found for n in ns
                     if is_private(n if isinstance(n, str) else n[1]))
    assert private == ["_hidden", "_inner"]
    assert [a for a, b, _, _ in found if b == PKG] == ["jaxbandits.apps.cli"]
    assert private_modules_taken(found) == ["jaxbandits.apps.cli:5 imports jaxbandits.core._shared"]


def test_package_inits_are_edges_of_their_submodules_importers(tmp_path):
    mods = _tree(tmp_path, {"__init__.py": "", "sub/__init__.py": "from .b import g\n", "sub/b.py": "def g():\n    pass\n",
                            "a.py": "from .sub.b import g\n"})
    assert package_edges(mods, imports(mods)) == {("jaxbandits.a", "jaxbandits.sub")}


@pytest.mark.parametrize("module", ["jaxbandits.experiments.runner", "jaxbandits.online", "jaxbandits.apps.cli",
                                    "jaxbandits.core.delays", "jaxbandits.report.plotting"])
def test_the_table_places_modules_by_prefix(module):
    assert layer_of(module) is not None
