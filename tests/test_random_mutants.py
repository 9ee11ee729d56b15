"""tools/random_mutants.py: the operator set finds its sites in the package, a seeded sample is
reproducible and uniform over the generated mutants, and the mutants are real code changes."""
import ast
import importlib.util
import random
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("random_mutants", ROOT / "tools" / "random_mutants.py")
RM = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(RM)


def test_every_operator_finds_sites_and_mutants_are_one_line_changes_that_parse():
    muts = RM.mutants_of("jaxbandits/core/mathlib.py")
    assert {m["op"] for m in muts} >= {"arith", "compare", "const", "drop", "swap", "minmax"}
    src = (ROOT / "jaxbandits" / "core" / "mathlib.py").read_text().splitlines()
    ok = 0
    for m in muts:
        line = src[m["line"] - 1]
        assert line[m["col"]:m["end"]] == m["from"] and m["new_line"] != line
        mutated = "\n".join(src[: m["line"] - 1] + [m["new_line"]] + src[m["line"]:])
        try:
            ast.parse(mutated)
            ok += 1
        except SyntaxError:
            pass
    assert ok >= 0.98 * len(muts)
    # a known site: UCB1's width sqrt(alpha * log(t) / n) has its division flipped among the mutants
    assert any(m["op"] == "arith" and m["from"] == "/" and "alpha * jnp.log(t)" in m["new_line"] for m in muts)


def test_sample_is_seeded_and_each_mutant_is_unique_in_its_file():
    muts = RM.all_mutants()
    a = random.Random(3).sample(muts, 20)
    b = random.Random(3).sample(RM.all_mutants(), 20)
    assert [m["id"] for m in a] == [m["id"] for m in b]
    assert [m["id"] for m in a] != [m["id"] for m in random.Random(4).sample(muts, 20)]
    cache, cur = {}, RM.curated_tests()
    for m in a:
        r = RM.as_runnable(m, cache, cur)
        text = (ROOT / m["file"]).read_text()
        assert text.count(r["old"]) == 1 and r["old"] != r["new"]


def test_covering_tests_order_and_fallback():
    """A mutant runs the tests that executed its line: its module's own test files first, then the
    rest fastest first; tests failing unmutated are never used; a line no test executed gives None
    (the module's files are run instead). The score counts capped mutants as not killed."""
    cmap = {"lines": {"jaxbandits/x.py": {"3": ["tests/b.py::slow", "tests/a.py::t", "tests/b.py::fast",
                                                "tests/c.py::broken"], "4": []}},
            "durations": {"tests/b.py::slow": 9.0, "tests/b.py::fast": 0.5, "tests/a.py::t": 5.0,
                          "tests/c.py::broken": 0.1},
            "failed": ["tests/c.py::broken"]}
    m = {"file": "jaxbandits/x.py", "line": 3}
    assert RM.covering_tests(m, cmap, ["tests/a.py"]) == ["tests/a.py::t", "tests/b.py::fast", "tests/b.py::slow"]
    assert RM.covering_tests(m, cmap, []) == ["tests/b.py::fast", "tests/a.py::t", "tests/b.py::slow"]
    assert RM.covering_tests({"file": "jaxbandits/x.py", "line": 4}, cmap, []) is None
    assert RM.covering_tests({"file": "jaxbandits/y.py", "line": 1}, cmap, []) is None
    res = [{"file": "jaxbandits/x.py", "status": s} for s in ("killed", "killed", "survived", "capped", "invalid")]
    text = RM.summary(res)
    assert "2/4 killed (50%)" in text and "capped 1" in text and "invalid 1" in text


def test_import_time_lines_run_their_module_files_first(tmp_path, monkeypatch):
    """Module and class bodies, decorators and default arguments run at import: coverage credits them
    to the first test that imported the module, so a mutant there runs its module's test files, then
    the covering tests; a line inside a function or lambda body keeps the covering tests alone."""
    src = ("X = 2 ** 30\n"                      # 1 module level
           "@deco(3)\n"                         # 2 decorator
           "def f(a, b=4):\n"                   # 3 default argument
           "    return a + b\n"                 # 4 body
           "class C:\n"                         # 5
           "    k = 5\n"                        # 6 class body
           "    def g(self):\n"                 # 7
           "        return [\n"                 # 8 body, continued
           "            1]\n"                   # 9
           "h = lambda x: (\n"                  # 10 the assignment (its body starts on 11)
           "    x + 1)\n")                      # 11 body
    (tmp_path / "jaxbandits").mkdir()
    (tmp_path / "jaxbandits" / "x.py").write_text(src)
    monkeypatch.setattr(RM, "ROOT", str(tmp_path))
    assert RM.import_time_lines("jaxbandits/x.py") == {1, 2, 3, 5, 6, 7, 10}
    cmap = {"lines": {"jaxbandits/x.py": {"1": ["tests/other.py::first_importer"], "4": ["tests/a.py::t"],
                                          "11": ["tests/b.py::u", "tests/test_x.py::own", "tests/bad.py::f"]}},
            "durations": {"tests/a.py::t": 5.0, "tests/b.py::u": 1.0}, "failed": ["tests/bad.py::f"]}
    at = RM.import_time_lines("jaxbandits/x.py")
    sel, tests = RM.select_tests({"file": "jaxbandits/x.py", "line": 1}, cmap, ["tests/test_x.py"], at)
    # an import-time line: its module's files, its first importer, then every test that runs one of
    # the module's functions (fastest first; not those failing unmutated, nor the module's own again)
    assert sel.startswith("import-time") and tests == ["tests/test_x.py", "tests/other.py::first_importer",
                                                       "tests/b.py::u", "tests/a.py::t"]
    assert RM.select_tests({"file": "jaxbandits/x.py", "line": 4}, cmap, ["tests/test_x.py"], at) == \
        ("covering", ["tests/a.py::t"])
    assert RM.select_tests({"file": "jaxbandits/x.py", "line": 9}, cmap, ["tests/test_x.py"], at) == \
        ("module files", ["tests/test_x.py"])


def test_a_map_is_of_one_package_tree_and_map_add_refuses_another(tmp_path, monkeypatch):
    """The map's line numbers hold for the tree it ran on only: the digest changes with any file's
    contents or name, and adding tests to a map of another tree is refused before anything runs."""
    (tmp_path / "jaxbandits").mkdir()
    (tmp_path / "jaxbandits" / "a.py").write_text("x = 1\n")
    (tmp_path / "jaxbandits" / "b.py").write_text("y = 2\n")
    monkeypatch.setattr(RM, "ROOT", str(tmp_path))
    names = ["jaxbandits/a.py", "jaxbandits/b.py"]
    monkeypatch.setattr(RM, "package_files", lambda: names)
    d0 = RM.package_digest()
    assert RM.package_digest() == d0
    (tmp_path / "jaxbandits" / "b.py").write_text("y = 3\n")
    d1 = RM.package_digest()
    assert d1 != d0
    (tmp_path / "jaxbandits" / "b.py").rename(tmp_path / "jaxbandits" / "c.py")
    names[1] = "jaxbandits/c.py"
    assert RM.package_digest() not in (d0, d1)
    out = tmp_path / "map.json"
    out.write_text('{"lines": {}, "durations": {}, "failed": [], "package": "%s"}' % d1)
    monkeypatch.setattr(RM, "coverage_run", lambda *a, **k: (_ for _ in ()).throw(AssertionError("ran")))
    try:
        RM.map_add(["tests/test_x.py"], out=str(out))
    except SystemExit as e:
        assert "another package tree" in str(e)
    else:
        raise AssertionError("map_add accepted a map of another tree")


def test_map_add_merges_new_tests_into_the_lines_they_cover(tmp_path, monkeypatch):
    (tmp_path / "jaxbandits").mkdir()
    (tmp_path / "jaxbandits" / "a.py").write_text("x = 1\n")
    monkeypatch.setattr(RM, "ROOT", str(tmp_path))
    monkeypatch.setattr(RM, "package_files", lambda: ["jaxbandits/a.py"])
    out = tmp_path / "map.json"
    import json
    out.write_text(json.dumps({"lines": {"jaxbandits/a.py": {"1": ["tests/old.py::t"]}},
                               "durations": {"tests/old.py::t": 1.0}, "failed": [],
                               "package": RM.package_digest()}))
    monkeypatch.setattr(RM, "coverage_run", lambda tests, data, extra=(): (
        {"tests/new.py::u": 2.0}, set(), ""))
    monkeypatch.setattr(RM, "lines_of", lambda data: {"jaxbandits/a.py": {"1": ["tests/new.py::u"],
                                                                            "2": ["tests/new.py::u"]}})
    assert RM.map_add(["tests/new.py"], out=str(out)) == 0
    cmap = json.loads(out.read_text())
    assert cmap["lines"]["jaxbandits/a.py"] == {"1": ["tests/new.py::u", "tests/old.py::t"],
                                                "2": ["tests/new.py::u"]}
    assert cmap["durations"] == {"tests/old.py::t": 1.0, "tests/new.py::u": 2.0}
    assert cmap["added"] == ["tests/new.py"]


def test_a_hung_test_fails_at_its_time_limit_in_the_words_the_tool_reads(tmp_path):
    """A mutant that makes a test hang is killed, not capped: each test of a mutant's run has a time
    limit (pytest-timeout), ``max(60 s, 4 x the slowest selected test's mapped time)``, and the tool
    marks such kills ``by_time_limit`` from pytest-timeout's words, which this pins."""
    import subprocess
    import sys

    assert RM.time_limit_of(["a", "b"], {"a": 2.0, "b": 30.0}) == 120.0
    assert RM.time_limit_of(["a"], {"a": 2.0}) == RM.TEST_LIMIT_FLOOR == 60.0
    assert RM.time_limit_of([], {}) == 60.0
    (tmp_path / "test_hang.py").write_text("import time\n\ndef test_hangs():\n    time.sleep(60)\n")
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
                        "-rfE", "--timeout=1", "test_hang.py"], cwd=tmp_path, capture_output=True, text=True,
                       timeout=50)
    out = r.stdout + r.stderr
    assert r.returncode == 1 and "Timeout (>" in out and "FAILED test_hang.py::test_hangs" in out, out[-800:]
