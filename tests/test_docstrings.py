"""The public API's docstrings (docs/contributing.md, "Docstrings"): every public function of the
documented modules has ``Args:`` (when it takes arguments), ``Returns:`` and an ``Example:`` with a
doctest; every public class has a docstring of its own (classes and NamedTuples are exempt from
Args/Returns: their fields are their interface); and the examples of a cheap subset of modules
run as written under doctest."""
from __future__ import annotations

import doctest
import importlib
import inspect
import re
import types

import pytest

#: the modules whose public names must all be documented in the Args / Returns / Example form
#: (modules not listed here still describe their functions in free prose)
DOCUMENTED = [
    "jaxbandits.policies.classic",
    "jaxbandits.policies.conversions",
    "jaxbandits.policies.adversarial",
    "jaxbandits.policies.anonymous",
    "jaxbandits.policies.linear",
    "jaxbandits.policies.composite",
    "jaxbandits.policies.bayes",
    "jaxbandits.policies.explore",
    "jaxbandits.core.mathlib",
    "jaxbandits.core.ring",
    "jaxbandits.ope.estimators",
    "jaxbandits.ope.log",
    "jaxbandits.ope.rejection",
    "jaxbandits.ope.simulate",
    "jaxbandits.ope.command",
    "jaxbandits.engine.fused",
    "jaxbandits.engine.fused.path",
    "jaxbandits.delaymodels.families",
    "jaxbandits.delaymodels.logs",
    "jaxbandits.delaymodels.model",
    "jaxbandits.bayes.synth",
    "jaxbandits.delaymodels.warm",
    "jaxbandits.bayes.ppc",
    "jaxbandits.bayes.report",
    "jaxbandits.bayes.calibration",
    "jaxbandits.bayes.contextual",
    "jaxbandits.bayes.fit",
    "jaxbandits.delaymodels.hierarchical",
    "jaxbandits.core.profiles",
    "jaxbandits.core.delays",
    "jaxbandits.envs.stochastic",
    "jaxbandits.envs.linear",
    "jaxbandits.envs.adversarial",
    "jaxbandits.envs.composite",
    "jaxbandits.envs.base",
    "jaxbandits.reproductions.vernade2017",
    "jaxbandits.reproductions.thune2019",
    "jaxbandits.reproductions.wang2021",
    "jaxbandits.reproductions.bayes",
    "jaxbandits.reproductions.ope",
    "jaxbandits.core.types",
    "jaxbandits.core.values",
    "jaxbandits.channels",
    "jaxbandits.channels.base",
    "jaxbandits.channels.library",
    "jaxbandits.engine",
    "jaxbandits.engine.round",
    "jaxbandits.engine.metrics",
    "jaxbandits.engine.recording",
    "jaxbandits.engine.stats",
    "jaxbandits.engine.checkpoint",
    "jaxbandits.engine.driver",
    "jaxbandits.engine.reduce",
    "jaxbandits.engine.checks",
    "jaxbandits.engine.prepare",
    "jaxbandits.engine.memory",
    "jaxbandits.engine.paths",
    "jaxbandits.engine.programs",
    "jaxbandits.engine.loop",
    "jaxbandits.engine.devices",
    "jaxbandits.engine.fingerprint",
    "jaxbandits.report.sweeps",
    "jaxbandits.experiments.sweeping",
    "jaxbandits.experiments.parts",
    "jaxbandits.core.intervals",
    "jaxbandits.report.labels",
    "jaxbandits.report.compare",
    "jaxbandits.experiments.results",
    "jaxbandits.experiments.specs",
    "jaxbandits.experiments.registry",
    "jaxbandits.experiments.runner",
    "jaxbandits.experiments.assemble",
    "jaxbandits.experiments",
    "jaxbandits.experiments.files.kinds",
    "jaxbandits.experiments.files.scanner",
    "jaxbandits.experiments.files.tomlwriter",
    "jaxbandits.experiments.files.schema",
    "jaxbandits.experiments.files.reading",
    "jaxbandits.experiments.files.loading",
    "jaxbandits.experiments.files.writing",
    "jaxbandits.experiments.files",
    "jaxbandits.experiments.distributed",
    "jaxbandits.report.plotting",
    "jaxbandits.online.state",
    "jaxbandits.online.clock",
    "jaxbandits.online.pure",
    "jaxbandits.online.persistence",
    "jaxbandits.online.learner",
    "jaxbandits.online",
    "jaxbandits.apps.serve.config",
    "jaxbandits.apps.serve.service",
    "jaxbandits.apps.serve.http",
    "jaxbandits.apps.serve",
    "jaxbandits.apps.dashboard",
    "jaxbandits.apps.cli",
    # the packages that re-export their modules' names (and the package itself)
    "jaxbandits",
    "jaxbandits.bayes",
    "jaxbandits.envs",
    "jaxbandits.ope",
    "jaxbandits.policies",
]

#: modules whose examples run in the default suite (cheap: constructors, numpy, small eager array
#: calls; about 15 s together on 2 cores); examples that compile a simulation, run MCMC or need a
#: file are marked ``# doctest: +SKIP``
DOCTESTED = [m for m in DOCUMENTED if m not in ("jaxbandits.core.mathlib", "jaxbandits.delaymodels.model", "jaxbandits.core.delays",
                                                # classes only: exempt, no examples
                                                "jaxbandits.reproductions.bayes", "jaxbandits.reproductions.ope",
                                                # re-exports: their examples run in the defining modules
                                                "jaxbandits.engine", "jaxbandits.channels",
                                                "jaxbandits.experiments", "jaxbandits.experiments.files",
                                                "jaxbandits.online", "jaxbandits.apps.serve",
                                                "jaxbandits", "jaxbandits.bayes", "jaxbandits.envs", "jaxbandits.ope",
                                                "jaxbandits.policies")]

#: modules whose examples are many small eager JAX calls (about 10 s each on 2 cores): ``-m slow``
DOCTESTED_SLOW = ["jaxbandits.core.mathlib", "jaxbandits.delaymodels.model", "jaxbandits.core.delays"]

SECTION = re.compile(r"^\s*(Args|Arguments|Parameters|Returns|Yields|Raises|Example|Examples)\s*:\s*$", re.M)


def public_names(mod) -> list[str]:
    """The names a module makes public: its ``__all__``, else the names defined in it (not
    imported) without a leading underscore."""
    names = getattr(mod, "__all__", None)
    if names is not None:
        return list(names)
    out = []
    for n, v in vars(mod).items():
        if n.startswith("_") or isinstance(v, types.ModuleType):
            continue
        if getattr(v, "__module__", None) == mod.__name__ and (inspect.isfunction(v) or inspect.isclass(v)):
            out.append(n)
    return out


def _takes_arguments(fn) -> bool:
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return True
    return any(p.name not in ("self", "cls") for p in sig.parameters.values())


def _own_doc(obj):
    """The docstring written for ``obj`` (a NamedTuple's generated ``Name(a, b)`` does not count)."""
    doc = obj.__dict__.get("__doc__") if inspect.isclass(obj) else obj.__doc__
    if not doc:
        return None
    if inspect.isclass(obj) and re.fullmatch(rf"{re.escape(obj.__name__)}\(.*\)", doc.strip(), re.S):
        return None
    return doc


def _fields(cls) -> tuple:
    """The fields of a NamedTuple or a dataclass (what its ``Attributes:`` section must list)."""
    import dataclasses

    if dataclasses.is_dataclass(cls):
        return tuple(f.name for f in dataclasses.fields(cls))
    return tuple(getattr(cls, "_fields", ()))


def problems(mod) -> tuple[list[str], list[str], list[str]]:
    """``(problems, documented, exempt)`` of a module's public names: a function must have a
    docstring with ``Args:`` (if it takes arguments), ``Returns:`` and ``Example:`` sections, the
    example a doctest (``>>>``); a class must have a docstring of its own that lists its fields (a
    NamedTuple's or a dataclass's) under ``Attributes:`` (it is exempt from the other sections);
    other objects (constants) are exempt."""
    bad, documented, exempt = [], [], []
    for name in public_names(mod):
        obj = getattr(mod, name)
        where = f"{mod.__name__}.{name}"
        if inspect.isclass(obj):
            doc = _own_doc(obj)
            if not doc:
                bad.append(f"{where}: no docstring")
                continue
            fields = _fields(obj)
            undocumented = [f for f in fields if not re.search(rf"^\s+{re.escape(f)}\s*(\(.*\))?:", doc, re.M)]
            if fields and ("Attributes:" not in doc or undocumented):
                bad.append(f"{where}: fields without an Attributes entry: {', '.join(undocumented)}")
            else:
                exempt.append(where)
            continue
        if not callable(obj):
            exempt.append(where)
            continue
        doc = inspect.getdoc(obj) or ""
        found = set(SECTION.findall(doc))
        missing = []
        if not doc:
            missing.append("docstring")
        if _takes_arguments(obj) and not found & {"Args", "Arguments", "Parameters"}:
            missing.append("Args")
        if not found & {"Returns", "Yields"}:
            missing.append("Returns")
        if not found & {"Example", "Examples"} or ">>>" not in doc:
            missing.append("Example")
        if missing:
            bad.append(f"{where}: no {', '.join(missing)}")
        else:
            documented.append(where)
    return bad, documented, exempt


@pytest.mark.parametrize("modname", DOCUMENTED)
def test_public_names_have_args_returns_and_an_example(modname):
    mod = importlib.import_module(modname)
    bad, documented, exempt = problems(mod)
    assert documented or exempt, modname  # the walk finds something (a broken walk would pass vacuously)
    assert not bad, "\n".join(bad)


def test_the_checker_catches_a_missing_section():
    """A planted module: one function documented in full, one without Returns, one without an
    example, one with no docstring, a class without one, a NamedTuple with a field missing from
    its Attributes, one with both, a constant: the checker names exactly the five defects and
    exempts the complete NamedTuple and the constant."""
    mod = types.ModuleType("planted")
    src = '''
def good(x):
    """Good.

    Args:
        x: a number.

    Returns:
        ``x``.

    Example:
        >>> good(1)
        1
    """
    return x


def no_returns(x):
    """No returns.

    Args:
        x: a number.

    Example:
        >>> no_returns(1)
    """


def no_example(x):
    """No example.

    Args:
        x: a number.

    Returns:
        ``x``.
    """


def bare(x):
    return x


class Bare:
    pass


class Pair(NamedTuple):
    """Two fields, one documented.

    Attributes:
        a: the first.
    """

    a: int
    b: int


class Both(NamedTuple):
    """Both documented.

    Attributes:
        a: the first.
        b: the second.
    """

    a: int
    b: int


LIMIT = 3
__all__ = ["good", "no_returns", "no_example", "bare", "Bare", "Pair", "Both", "LIMIT"]
'''
    mod.__dict__["NamedTuple"] = __import__("typing").NamedTuple
    exec(compile(src, "planted", "exec"), mod.__dict__)
    for v in vars(mod).values():
        if inspect.isfunction(v) or inspect.isclass(v):
            v.__module__ = "planted"
    bad, documented, exempt = problems(mod)
    assert documented == ["planted.good"] and exempt == ["planted.Both", "planted.LIMIT"]
    assert bad == ["planted.no_returns: no Returns", "planted.no_example: no Example",
                   "planted.bare: no docstring, Args, Returns, Example", "planted.Bare: no docstring",
                   "planted.Pair: fields without an Attributes entry: b"]


@pytest.mark.parametrize("modname", DOCTESTED + [pytest.param(m, marks=pytest.mark.slow) for m in DOCTESTED_SLOW])
def test_docstring_examples_run(modname):
    mod = importlib.import_module(modname)
    finder = doctest.DocTestFinder(exclude_empty=True)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    tests = []  # each public name's own (the library's constructors are wrapped: doctest's module
    for name in public_names(mod):  # walk would skip them as defined elsewhere)
        obj = getattr(mod, name)
        if callable(obj):
            tests += [t for t in finder.find(obj, f"{modname}.{name}", module=False, globs=dict(vars(mod)))
                      if t.examples]
    assert tests, modname
    for t in tests:
        runner.run(t)
    res = runner.summarize(verbose=False)
    assert res.failed == 0, f"{res.failed} of {res.attempted} examples failed in {modname}"


#: modules that are not public API: each says so in its docstring's first line and is rendered
#: only on docs/api/internal.md (docs/contributing.md, "Public and internal")
INTERNAL = [
    "jaxbandits.version",
    "jaxbandits.moved",
    "jaxbandits.core.fileio",
    "jaxbandits.core.validate",
    "jaxbandits.core.pytree",
    "jaxbandits.engine.fused.registry",
    "jaxbandits.engine.fused.kernels",
    "jaxbandits.engine.fused.lanes",
    "jaxbandits.engine.fused.rng",
    "jaxbandits.engine.fused.lowering",
]


def _module_names():
    import pkgutil

    import jaxbandits

    return [m.name for m in pkgutil.walk_packages(jaxbandits.__path__, "jaxbandits.")]


def test_internal_modules_say_so_and_only_the_internals_page_renders_them():
    from pathlib import Path

    api = Path(__file__).resolve().parents[1] / "docs" / "api"
    names = _module_names()
    assert "jaxbandits.engine.fused.lanes" in names and "jaxbandits.policies.classic" in names
    underscored = {n for n in names if any(p.startswith("_") for p in n.split(".")[1:])}
    assert underscored <= set(INTERNAL), f"modules named private but not listed as internal: {underscored - set(INTERNAL)}"
    for name in INTERNAL:
        # the docstring is read from the source: importing the fused kernels would pull in Pallas
        import ast
        import importlib.util

        spec = importlib.util.find_spec(name)
        doc = ast.get_docstring(ast.parse(Path(spec.origin).read_text())) or ""
        assert doc.startswith("Internal: not public API"), name
    rendered = {}
    for page in api.glob("*.md"):
        for m in re.findall(r"^::: (\S+)", page.read_text(), re.M):
            rendered.setdefault(m, []).append(page.name)
    for name in INTERNAL:
        assert rendered.get(name) == ["internal.md"], (name, rendered.get(name))
    for name, pages in rendered.items():
        if "internal.md" in pages:
            assert name in INTERNAL, f"{name} is on the internals page but not listed as internal"


def test_the_package_docstring_names_the_internal_modules():
    import jaxbandits

    doc = " ".join(jaxbandits.__doc__.split())
    assert "Internal, not public API" in doc
    for name in INTERNAL:
        short = name.rsplit(".", 1)[-1]
        assert f"``{name}``" in doc or f"``.{short}``" in doc, name
