"""The documentation builds in strict mode (mkdocs with mkdocstrings: every page of the nav and the
API reference generated from the docstrings); every public symbol has an entry in the API
reference; a broken reference, in a page or in a docstring's role, fails the strict build."""
import subprocess
import sys
import zlib
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]


def _build(config, out):
    return subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(config),
                           "-d", str(out)], cwd=ROOT, capture_output=True, text=True, timeout=600)


def _inventory(site: Path) -> set:
    """The object names of the site's ``objects.inv`` (Sphinx inventory v2: four header lines,
    then zlib-compressed ``name domain:role priority uri dispname`` lines)."""
    data = (site / "objects.inv").read_bytes()
    start = 0
    for _ in range(4):
        start = data.index(b"\n", start) + 1
    return {line.split(" ", 1)[0] for line in zlib.decompress(data[start:]).decode().splitlines()}


def _public_symbols():
    """Every public object of the package, read statically by griffe (as mkdocstrings reads it):
    public modules, and in them the names of ``__all__`` (else those without a leading
    underscore) defined there (re-exports are documented where they are defined), with the
    public members of classes."""
    import griffe

    pkg = griffe.load("jaxbandits", search_paths=[str(ROOT)], resolve_aliases=False)

    def walk(obj):
        for name, m in obj.members.items():
            if m.is_alias or name.startswith("_") or (obj.is_module and not m.is_public):
                continue
            yield m
            if m.is_class or m.is_module:
                yield from walk(m)

    return [pkg] + list(walk(pkg))


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    out = tmp_path_factory.mktemp("site")
    r = _build(ROOT / "mkdocs.yml", out)
    return r, out


def test_docs_build_strict(site):
    r, out = site
    assert r.returncode == 0, r.stdout + r.stderr
    assert "WARNING" not in r.stderr and "Documentation built" in r.stderr, r.stderr
    assert (out / "compare" / "index.html").is_file() and (out / "api" / "experiments" / "index.html").is_file()


def test_every_public_symbol_is_in_the_api_reference(site):
    r, out = site
    assert r.returncode == 0, r.stderr
    inv = _inventory(out)
    syms = _public_symbols()
    paths = {s.path for s in syms}
    # the walk sees what it must (a broken walk would pass vacuously)
    assert len(syms) > 900 and {"jaxbandits.report.compare.compare", "jaxbandits.experiments.results.Results.summary",
                                "jaxbandits.policies.classic.ucb1", "jaxbandits.core.delays.geometric"} <= paths
    missing = sorted(paths - inv)
    assert not missing, f"public symbols without an API entry ({len(missing)}): {missing[:40]}"


def test_broken_references_fail_the_strict_build(tmp_path):
    """The project's mkdocstrings settings on a page with one good and one broken Markdown
    reference and a module whose docstring has a good role and one that names nothing: the strict
    build fails, naming exactly the two broken targets."""
    cfg = yaml.safe_load((ROOT / "mkdocs.yml").read_text())
    handler = next(p["mkdocstrings"] for p in cfg["plugins"] if isinstance(p, dict) and "mkdocstrings" in p)
    handler = handler["handlers"]["python"]
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "planted.py").write_text(
        '"""Planted: see :func:`no_such_function` and :func:`helper`."""\n\n\n'
        'def helper():\n    """Fine."""\n')
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "index.md").write_text("# Planted\n\n[good][planted.helper] and "
                                   "[bad][jaxbandits.report.compare.no_such_symbol]\n\n::: planted\n")
    handler["paths"] = [str(tmp_path / "pkg"), str(ROOT)]
    handler["options"]["extensions"] = [str(ROOT / e) if e.endswith(".py") or ".py:" in e else e
                                        for e in handler["options"]["extensions"]]
    cfg.update(site_name="planted", docs_dir=str(docs), nav=["index.md"])
    (tmp_path / "mkdocs.yml").write_text(yaml.safe_dump(cfg))
    r = _build(tmp_path / "mkdocs.yml", tmp_path / "site")
    assert r.returncode != 0
    broken = sorted(line.split("target ")[-1].strip("'") for line in r.stderr.splitlines()
                    if "Could not find cross-reference target" in line)
    assert broken == ["jaxbandits.report.compare.no_such_symbol", "no_such_function"], r.stderr
