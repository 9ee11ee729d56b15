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
