"""Mutants chosen by a tool, not by us: every mutant of a fixed set of operators applied to the
package, and a uniform random sample of them run against the tests (docs/contributing.md,
"Mutation testing").

Why a generator of our own rather than mutmut or cosmic-ray: both apply a mutant, then run a test
command per mutant in the working tree (mutmut) or a copy (cosmic-ray), and both need their own
session database and configuration; what this project needs beyond that is (1) a *uniform random
sample* of a fixed operator set, seeded and reproducible, and (2) per mutant, the test files that
exercise its module, with JAX's persistent compilation cache shared by the mutants (each test
process otherwise pays seconds to a minute of compiling). ``tools/mutants.py`` already runs a
mutant in a private copy of the tree with that cache; this module only generates and samples.

Operators (each applied at one site of one line, Python's ``ast`` finding the sites):

* ``arith``: ``+`` <-> ``-``, ``*`` <-> ``/``, ``**`` -> ``*``, ``//`` -> ``/``
* ``compare``: ``<`` <-> ``<=``, ``>`` <-> ``>=``, ``==`` <-> ``!=``
* ``const``: an integer ``n`` -> ``n + 1`` and ``n - 1``; a float ``x`` -> ``2 x`` (``0.0`` -> ``1.0``)
* ``drop``: ``a + b`` / ``a - b`` -> ``a``; ``a * b`` -> ``a``
* ``swap``: the first two positional arguments of a call exchanged
* ``bool``: ``and`` <-> ``or``; ``not x`` -> ``x``
* ``minmax``: ``maximum`` <-> ``minimum``, ``max`` <-> ``min``
* ``ddof``: ``ddof=1`` <-> ``ddof=0``

Which tests run for a mutant: the *default suite's tests that execute its line*. ``--map`` runs
the default suite once under coverage with one context per test (``JAXBANDITS_FRESH_TRACES=1``:
every test starts with no compiled program cached, so it traces, and covers, all it runs) and
writes ``.mutants_map.json``: for each line of the package the tests that executed it, each
test's duration and the tests that fail unmutated (never used), and a digest of the package's
sources: a sample refuses to run on a package that differs from the map's. ``--map-add FILES``
adds test files written after the map (their coverage, run alone, merged into it) without a
rerun of the whole suite; the package must be the map's. A mutant then runs its covering
tests, those of its module's own test files first and the rest fastest first, with ``-x``, until
one fails (killed) or all pass (survived) or ``--cap`` seconds pass (``capped``: counted as not
killed). A line that runs at import (module and class bodies, decorators, default arguments:
:func:`import_time_lines`) is credited by coverage to whichever test imported its module first,
not to the tests that read what it defines: its mutant runs its module's test files
(``tests_for``) first, then the covering tests, then every test that runs one of the module's
functions, fastest first. A line that no test executes in the test process
(or only in a subprocess of the CLI tests) runs its module's test files. A kill counts only when
the failing test passes on the unmutated tree (``--verify``). ``--resume --retry-import-time``
reruns the surviving and capped import-time mutants of a report written before that rule.

Usage::

    python tools/random_mutants.py --list                        # counts per folder and operator
    python tools/random_mutants.py --map                         # the coverage map (~45 min, 2 cores)
    python tools/random_mutants.py --map-add tests/test_new.py   # add new test files to the map
    python tools/random_mutants.py --sample 400 --seed 1 --jobs 2 --report report.json
"""
from __future__ import annotations

import argparse
import ast
import collections
import json
import os
import random
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

_ARITH = {ast.Add: ("+", "-"), ast.Sub: ("-", "+"), ast.Mult: ("*", "/"), ast.Div: ("/", "*"),
          ast.Pow: ("**", "*"), ast.FloorDiv: ("//", "/")}
_CMP = {ast.Lt: ("<", "<="), ast.LtE: ("<=", "<"), ast.Gt: (">", ">="), ast.GtE: (">=", ">"),
        ast.Eq: ("==", "!="), ast.NotEq: ("!=", "==")}


def package_files():
    out = subprocess.run(["git", "ls-files", "jaxbandits"], cwd=ROOT, check=True, capture_output=True,
                         text=True).stdout.split()
    return sorted(f for f in out if f.endswith(".py"))


def _docstring_lines(tree):
    """Lines of docstrings (never mutated)."""
    skip = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            b = node.body
            if b and isinstance(b[0], ast.Expr) and isinstance(getattr(b[0], "value", None), ast.Constant) \
                    and isinstance(b[0].value.value, str):
                skip.update(range(b[0].lineno, b[0].end_lineno + 1))
    return skip


def _span(src_lines, node):
    if node.lineno != node.end_lineno:
        return None
    return node.lineno, node.col_offset, node.end_col_offset


def _op_text_between(line, left, right):
    """The column range of the operator token between two operand nodes on one line."""
    if left.end_lineno != left.lineno or right.lineno != left.lineno:
        return None
    return left.end_col_offset, right.col_offset


def mutants_of(path):
    """Every mutant of one file: dicts ``{file, line, op, col, end, old, new}`` (one line each)."""
    src = open(os.path.join(ROOT, path)).read()
    lines = src.splitlines()
    tree = ast.parse(src)
    skip = _docstring_lines(tree)
    out = []

    def add(op, lineno, c0, c1, new_text):
        if lineno in skip:
            return
        line = lines[lineno - 1]
        old_text = line[c0:c1]
        if old_text == new_text or "#" in line[:c0] and line.lstrip().startswith("#"):
            return
        out.append({"file": path, "line": lineno, "op": op, "col": c0, "end": c1, "from": old_text,
                    "to": new_text, "new_line": line[:c0] + new_text + line[c1:]})

    for node in ast.walk(tree):
        if isinstance(node, ast.BinOp) and type(node.op) in _ARITH:
            g = _op_text_between(None, node.left, node.right)
            if g:
                a, b = g
                seg = lines[node.lineno - 1][a:b]
                sym, rep = _ARITH[type(node.op)]
                i = seg.find(sym)
                if i >= 0 and (sym != "*" or seg[i:i + 2] != "**"):
                    add("arith", node.lineno, a + i, a + i + len(sym), rep)
                if isinstance(node.op, (ast.Add, ast.Sub, ast.Mult)) and _span(lines, node) and _span(lines, node.left):
                    ln, c0, c1 = _span(lines, node)
                    add("drop", ln, c0, c1, lines[ln - 1][node.left.col_offset:node.left.end_col_offset])
        elif isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in _CMP:
            g = _op_text_between(None, node.left, node.comparators[0])
            if g:
                a, b = g
                seg = lines[node.lineno - 1][a:b]
                sym, rep = _CMP[type(node.ops[0])]
                m = re.search(re.escape(sym) + r"(?![=<>])", seg)
                if m and (sym not in ("<", ">") or seg[m.start():m.start() + 2] not in ("<=", ">=", "<<", ">>")):
                    add("compare", node.lineno, a + m.start(), a + m.start() + len(sym), rep)
        elif isinstance(node, ast.Constant) and type(node.value) in (int, float) and _span(lines, node):
            ln, c0, c1 = _span(lines, node)
            text = lines[ln - 1][c0:c1]
            if not re.fullmatch(r"[0-9_.eE+-]+", text):
                continue
            if type(node.value) is int:
                add("const", ln, c0, c1, str(node.value + 1))
                add("const", ln, c0, c1, str(node.value - 1))
            else:
                add("const", ln, c0, c1, repr(node.value * 2.0) if node.value != 0.0 else "1.0")
        elif isinstance(node, ast.BoolOp) and len(node.values) == 2:
            g = _op_text_between(None, node.values[0], node.values[1])
            if g:
                a, b = g
                seg = lines[node.lineno - 1][a:b]
                sym, rep = ("and", "or") if isinstance(node.op, ast.And) else ("or", "and")
                m = re.search(r"\b" + sym + r"\b", seg)
                if m:
                    add("bool", node.lineno, a + m.start(), a + m.end(), rep)
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not) and _span(lines, node) \
                and _span(lines, node.operand):
            ln, c0, c1 = _span(lines, node)
            add("bool", ln, c0, c1, lines[ln - 1][node.operand.col_offset:node.operand.end_col_offset])
        elif isinstance(node, ast.Call):
            f = node.func
            name = f.attr if isinstance(f, ast.Attribute) else (f.id if isinstance(f, ast.Name) else None)
            pairs = {"maximum": "minimum", "minimum": "maximum", "max": "min", "min": "max"}
            if name in pairs and f.end_lineno == f.lineno:
                c1 = f.end_col_offset
                add("minmax", f.lineno, c1 - len(name), c1, pairs[name])
            args = node.args
            if len(args) >= 2 and all(_span(lines, x) for x in args[:2]) and args[0].lineno == args[1].lineno \
                    and not any(isinstance(x, ast.Starred) for x in args[:2]):
                ln = args[0].lineno
                line = lines[ln - 1]
                a0, a1 = line[args[0].col_offset:args[0].end_col_offset], line[args[1].col_offset:args[1].end_col_offset]
                if a0 != a1:
                    add("swap", ln, args[0].col_offset, args[1].end_col_offset,
                        a1 + line[args[0].end_col_offset:args[1].col_offset] + a0)
            for kw in node.keywords:
                if kw.arg == "ddof" and isinstance(kw.value, ast.Constant) and _span(lines, kw.value):
                    ln, c0, c1 = _span(lines, kw.value)
                    add("ddof", ln, c0, c1, "0" if kw.value.value else "1")
    return out


def folder_of(path):
    parts = path.split("/")
    return "/".join(parts[:2]) if len(parts) > 2 else "jaxbandits (top-level modules)"


def all_mutants():
    muts = []
    for f in package_files():
        muts += mutants_of(f)
    muts.sort(key=lambda m: (m["file"], m["line"], m["col"], m["op"], m["to"]))
    for i, m in enumerate(muts):
        m["id"] = f"{m['file']}:{m['line']}:{m['col']}:{m['op']}:{i}"
    return muts


def tests_for(path, curated, limit=4):
    """The test files that exercise ``path``: those its curated mutants name, then the test files
    that import its module most often (at most ``limit`` in all)."""
    mod = path[:-3].replace("/", ".").removesuffix(".__init__")
    short = mod.split(".")[-1]
    named = list(dict.fromkeys(t.split("::")[0] for t in curated.get(path, [])))
    score = collections.Counter()
    for t in subprocess.run(["git", "ls-files", "tests"], cwd=ROOT, check=True, capture_output=True,
                            text=True).stdout.split():
        if not (t.endswith(".py") and os.path.basename(t).startswith("test_")):
            continue
        txt = open(os.path.join(ROOT, t)).read()
        n = txt.count(mod) + len(re.findall(r"import[^\n]*\b" + re.escape(short) + r"\b", txt))
        if n:
            score[t] = 1000 * n
        elif short != "__init__" and re.search(r"\b" + re.escape(short) + r"\b", txt):
            score[t] = len(re.findall(r"\b" + re.escape(short) + r"\b", txt))  # named, not imported
    ranked = named + [t for t, _ in score.most_common() if t not in named]
    return ranked[:limit]


def curated_tests():
    out = collections.defaultdict(list)
    for p in sorted(os.listdir(os.path.join(ROOT, "tools", "mutants"))):
        if p.endswith(".json"):
            for m in json.load(open(os.path.join(ROOT, "tools", "mutants", p))):
                out[m["file"]] += m.get("tests", [])
    return out


def as_runnable(m, lines_cache, curated):
    """The mutant in ``tools/mutants.py``'s form: ``old`` a unique stretch of the file."""
    path = m["file"]
    lines = lines_cache.setdefault(path, open(os.path.join(ROOT, path)).read().splitlines())
    i = m["line"] - 1
    src = "\n".join(lines)
    lo, hi = i, i + 1
    while "\n".join(lines[lo:hi]).join(["", ""]) and src.count("\n".join(lines[lo:hi])) != 1 and (lo > 0 or hi < len(lines)):
        lo, hi = max(0, lo - 1), min(len(lines), hi + 1)
    old = "\n".join(lines[lo:hi])
    new = "\n".join(lines[lo:i] + [m["new_line"]] + lines[i + 1:hi])
    return dict(m, old=old, new=new, tests=tests_for(path, curated))


MAP = os.path.join(ROOT, ".mutants_map.json")
CACHE = os.path.join(ROOT, ".mutants_cache")


def package_digest():
    """sha256 of the package's sources (paths and contents): the tree a map's line numbers are of."""
    import hashlib

    h = hashlib.sha256()
    for rel in sorted(package_files()):
        h.update(rel.encode() + b"\0" + open(os.path.join(ROOT, rel), "rb").read() + b"\0")
    return h.hexdigest()[:16]


def coverage_run(tests, data_file, extra=()):
    for f in os.listdir(ROOT):
        if f.startswith(os.path.basename(data_file)):
            os.remove(os.path.join(ROOT, f))
    env = dict(os.environ, JAXBANDITS_FRESH_TRACES="1", COVERAGE_FILE=data_file, JAX_PLATFORMS="cpu",
               JAX_COMPILATION_CACHE_DIR=CACHE, JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS="0")
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--cov=jaxbandits",
           "--cov-context=test", "--cov-report=", "--durations=0", "--durations-min=0", "-rfE",
           *extra, *tests]
    r = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
    durations, failed = collections.Counter(), set()
    for ln in r.stdout.splitlines():
        m = re.match(r"^([0-9.]+)s (setup|call|teardown)\s+(\S.*)$", ln)
        if m:
            durations[m.group(3).strip()] += float(m.group(1))
        elif ln.startswith(("FAILED ", "ERROR ")):
            failed.add(ln.split(" ")[1])
    print(r.stdout[-1500:])
    return durations, failed, r.stdout[-3000:]


def lines_of(data_file):
    import coverage

    data = coverage.CoverageData(basename=data_file)
    data.read()
    lines = {}
    for f in data.measured_files():
        rel = os.path.relpath(f, ROOT)
        if not rel.startswith("jaxbandits"):
            continue
        by = data.contexts_by_lineno(f)
        lines[rel] = {str(n): sorted({c.rsplit("|", 1)[0] for c in cs if c}) for n, cs in by.items()}
    return lines


def map_add(tests, out=MAP):
    """Merge the coverage of ``tests`` (test files or node ids, run alone on one worker) into the map
    :func:`build_map` wrote, for tests written after it; the package must be the one it mapped."""
    cmap = json.load(open(out))
    if cmap.get("package") != package_digest():
        raise SystemExit(f"{out} maps another package tree (digest {cmap.get('package')}, this tree "
                         f"{package_digest()}): rebuild it with --map")
    data_file = os.path.join(ROOT, ".mutants_coverage_add")
    # one xdist worker: pytest-cov records no per-test contexts in a run without xdist (seen with
    # pytest-cov 7.1, coverage 7.17)
    durations, failed, _ = coverage_run(list(tests), data_file, extra=("-n", "1"))
    added = 0
    for rel, by in lines_of(data_file).items():
        have = cmap["lines"].setdefault(rel, {})
        for n, ts in by.items():
            new = sorted(set(have.get(n, [])) | set(ts))
            added += len(new) - len(have.get(n, []))
            have[n] = new
    if durations and not added:
        raise SystemExit("map-add: the coverage run recorded no test's lines (no per-test contexts): map unchanged")
    cmap["durations"].update(durations)
    cmap["failed"] = sorted(set(cmap["failed"]) | failed)
    cmap.setdefault("added", []).extend(tests)
    json.dump(cmap, open(out, "w"))
    print(f"map: {len(durations)} tests added, {added} (line, test) pairs, {len(failed)} failing -> {out}")
    return 0


def build_map(out=MAP):
    """Run the default suite once under coverage, one context per test, and write the map."""
    data_file = os.path.join(ROOT, ".mutants_coverage")
    durations, failed, tail = coverage_run([], data_file)
    json.dump({"durations": durations, "failed": sorted(failed), "lines": {}, "tail": tail,
               "package": package_digest()}, open(out, "w"))
    return lines_from_coverage(data_file, out)


def lines_from_coverage(data_file=os.path.join(ROOT, ".mutants_coverage"), out=MAP):
    """Fill the map's ``lines`` from the coverage data of :func:`build_map`'s run."""
    cmap = json.load(open(out))
    cmap["lines"] = lines_of(data_file)
    cmap.setdefault("package", package_digest())
    json.dump(cmap, open(out, "w"))
    print(f"map: {len(cmap['lines'])} files, {len(cmap['durations'])} tests timed, {len(cmap['failed'])} "
          f"failing unmutated -> {out}")
    return 0


def import_time_lines(path):
    """The lines of ``path`` that run when its module is imported, not when a function is called:
    module and class bodies, decorators and default arguments (everything outside a function's or a
    lambda's body). Coverage credits such a line to whichever test imported the module first, not to
    the tests that read what it defines, so a mutant there also runs its module's own test files."""
    tree = ast.parse(open(os.path.join(ROOT, path)).read())
    inside = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            inside.update(range(node.body[0].lineno, node.end_lineno + 1))
        elif isinstance(node, ast.Lambda):
            inside.update(range(node.body.lineno, node.body.end_lineno + 1))
    n = len(open(os.path.join(ROOT, path)).read().splitlines())
    return set(range(1, n + 1)) - inside


def select_tests(m, cmap, module_files, import_time):
    """What a mutant runs, and why: the covering tests (:func:`covering_tests`); for a line that runs
    at import (:func:`import_time_lines`), its module's own test files first, then the covering
    tests, then every test that runs the module's functions (what a module defines at import, a
    constant or a registered experiment, is read by the tests that call its code, and coverage
    credits the line to the first importer alone), fastest first; for a line no test executed, its
    module's files alone."""
    cov = covering_tests(m, cmap, module_files)
    if m["line"] in import_time:
        first = list(module_files) + [t for t in (cov or []) if t.split("::")[0] not in module_files]
        bad, dur = set(cmap["failed"]), cmap["durations"]
        users = {t for n, ts in cmap["lines"].get(m["file"], {}).items() if int(n) not in import_time
                 for t in ts if t and t not in bad}
        have = set(first)
        rest = sorted((t for t in users if t not in have and t.split("::")[0] not in module_files),
                      key=lambda t: (dur.get(t, 1.0), t))
        return "import-time line: module files, covering, then the module's users", first + rest
    if cov:
        return "covering", cov
    return "module files", list(module_files)


def covering_tests(m, cmap, own_files):
    """The default suite's tests that execute the mutant's line, its module's own test files first,
    then fastest first (``None``: no test executes it, in the test process)."""
    tests = cmap["lines"].get(m["file"], {}).get(str(m["line"]), [])
    bad = set(cmap["failed"])
    tests = [t for t in tests if t and t not in bad]
    if not tests:
        return None
    dur = cmap["durations"]
    own = set(own_files)
    return sorted(tests, key=lambda t: (t.split("::")[0] not in own, dur.get(t, 1.0), t))


TEST_LIMIT_FLOOR = 60.0  # seconds: no default test takes a minute alone, compiles included
TEST_LIMIT_FACTOR = 4.0  # times the slowest selected test's time in the map (measured under coverage)


def time_limit_of(tests, durations):
    """Each test's time limit under a mutant (pytest-timeout): a hang is a failure the suite shows
    (the library's rule: never a hang), not a run that ends at the mutant's cap. Generous, so that a
    mutant's fresh compiles never reach it: ``max(60 s, 4 x the slowest selected test's time in the
    map)``."""
    slowest = max((durations.get(t, 1.0) for t in tests), default=1.0)
    return max(TEST_LIMIT_FLOOR, TEST_LIMIT_FACTOR * slowest)


def run_covered(m, files, cap):
    """One mutant against its covering tests (``m['tests']``): killed / survived / capped."""
    import tempfile
    import time

    import mutants as T

    t0 = time.time()
    with tempfile.TemporaryDirectory(prefix="mutant_") as tmp:
        T.copy_tree(tmp, files)
        path = os.path.join(tmp, m["file"])
        src = open(path).read()
        if src.count(m["old"]) != 1:
            return dict(m, status="invalid", seconds=0.0)
        open(path, "w").write(src.replace(m["old"], m["new"]))
        cmd = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", "-n", "0", "-rfE",
               f"--timeout={m.get('test_limit', 0):g}", *m["tests"]]
        env = dict(os.environ, PYTHONPATH=tmp, JAX_PLATFORMS="cpu", JAX_COMPILATION_CACHE_DIR=CACHE,
                   JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS="0")
        try:
            r = subprocess.run(cmd, cwd=tmp, env=env, capture_output=True, text=True, timeout=cap)
            rc, out = r.returncode, r.stdout + r.stderr
        except subprocess.TimeoutExpired as e:
            rc, out = None, (e.stdout or b"").decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
    failed = [ln.split(" ")[1] for ln in out.splitlines() if ln.startswith(("FAILED ", "ERROR "))]
    status = "capped" if rc is None else ("survived" if rc in (0, 5) else "killed")
    hung = status == "killed" and "Timeout (>" in out  # pytest-timeout's words: the test hung or crawled
    return dict(m, status=status, rc=rc, killer=failed[:1], seconds=round(time.time() - t0, 1),
                by_time_limit=hung, tail="" if status == "killed" and not hung else out[-600:])


def verify(res, files):
    """Run each distinct killing test on the unmutated tree: a kill by a test that fails unmutated is
    no kill (its mutants become ``survived``)."""
    killers = sorted({r["killer"][0] for r in res if r["status"] == "killed" and r.get("killer")})
    if not killers:
        return set()
    env = dict(os.environ, JAX_PLATFORMS="cpu", JAX_COMPILATION_CACHE_DIR=CACHE,
               JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS="0")
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "2", "-rfE",
                        *killers], cwd=ROOT, env=env, capture_output=True, text=True)
    bad = {ln.split(" ")[1] for ln in r.stdout.splitlines() if ln.startswith(("FAILED ", "ERROR "))}
    for x in res:
        if x["status"] == "killed" and x.get("killer") and x["killer"][0] in bad:
            x["status"], x["why"] = "survived", f"its killer {x['killer'][0]} fails unmutated too"
    return bad


def summary(res):
    by = collections.defaultdict(collections.Counter)
    for r in res:
        by[folder_of(r["file"])][r["status"]] += 1
    rows = []
    for f in sorted(by):
        c = by[f]
        n = c["killed"] + c["survived"] + c["capped"]
        rows.append(f"{f:40s} {c['killed']}/{n} killed ({100.0 * c['killed'] / max(n, 1):.0f}%)"
                    f"  survived {c['survived']}, capped {c['capped']}, invalid {c['invalid']}")
    hung = sum(1 for r in res if r.get("by_time_limit"))
    if hung:
        rows.append(f"{'(killed by a test time limit: a hang)':40s} {hung}")
    k = sum(c["killed"] for c in by.values())
    n = sum(c["killed"] + c["survived"] + c["capped"] for c in by.values())
    rows.append(f"{'all':40s} {k}/{n} killed ({100.0 * k / max(n, 1):.1f}%)")
    return "\n".join(rows)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--list", action="store_true", help="count the mutants by folder and operator")
    ap.add_argument("--map", action="store_true", help="build the coverage map (runs the default suite)")
    ap.add_argument("--map-add", nargs="+", metavar="TEST",
                    help="add these test files (written after the map) to the map")
    ap.add_argument("--sample", type=int, default=0, help="run a uniform random sample of this many")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--cap", type=float, default=240.0, help="seconds of tests per mutant")
    ap.add_argument("--report")
    ap.add_argument("--dry", action="store_true", help="print the sample, run nothing")
    ap.add_argument("--resume", action="store_true", help="skip the mutants already in --report")
    ap.add_argument("--retry-capped", action="store_true", help="with --resume: run the capped ones again")
    ap.add_argument("--retry-import-time", action="store_true",
                    help="with --resume: run again the survivors and capped mutants of import-time lines "
                         "(reports written before those lines also ran their module's test files)")
    ap.add_argument("--score", action="store_true", help="print the score of --report, run nothing")
    a = ap.parse_args(argv)
    if a.score:
        print(summary(json.load(open(a.report))))
        return 0
    if a.map:
        return build_map()
    if a.map_add:
        return map_add(a.map_add)
    muts = all_mutants()
    if a.list or not a.sample:
        by = collections.Counter((folder_of(m["file"]), m["op"]) for m in muts)
        for f in sorted({k[0] for k in by}):
            print(f, sum(v for k, v in by.items() if k[0] == f), {k[1]: v for k, v in by.items() if k[0] == f})
        print(len(muts), "mutants")
        return 0
    sample = random.Random(a.seed).sample(muts, a.sample)
    cache, cur = {}, curated_tests()
    runnable = [as_runnable(m, cache, cur) for m in sample]
    cmap = json.load(open(MAP))
    if cmap.get("package", package_digest()) != package_digest():
        raise SystemExit(f"{MAP} maps another package tree: rebuild it with --map")
    at_import = {}
    for m in runnable:
        if m["file"] not in at_import:
            at_import[m["file"]] = import_time_lines(m["file"])
        m["selection"], m["tests"] = select_tests(m, cmap, m["tests"], at_import[m["file"]])
        m["test_limit"] = time_limit_of(m["tests"], cmap["durations"])
    if a.dry:
        for m in runnable:
            print(m["id"], "|", m["from"], "->", m["to"], "|", m["selection"], len(m["tests"]))
        return 0
    import concurrent.futures as cf

    import mutants as T

    files = T.tracked_files()
    res = []
    if a.resume and a.report and os.path.exists(a.report):  # a stopped run goes on where it stopped
        res = [r for r in json.load(open(a.report)) if r["status"] != "capped" or not a.retry_capped]
        if a.retry_import_time:
            res = [r for r in res if r["status"] == "killed" or r["line"] not in at_import[r["file"]]]
        done = {r["id"] for r in res}
        runnable = [m for m in runnable if m["id"] not in done]
        print(f"resuming: {len(res)} done, {len(runnable)} to run", flush=True)
    with cf.ThreadPoolExecutor(max_workers=a.jobs) as ex:
        for r in ex.map(lambda m: run_covered(m, files, a.cap), runnable):
            print(f"{r['status']:9s} {r['seconds']:7.1f}s  {r['id']}  {r['from']!r} -> {r['to']!r}"
                  f"  [{r['selection']}: {len(r['tests'])}] {' '.join(r.get('killer', []))}", flush=True)
            res.append(r)
            if a.report:
                json.dump(res, open(a.report, "w"), indent=1)
    bad = verify(res, files)
    if bad:
        print("kills by tests failing unmutated (not counted):", sorted(bad))
    if a.report:
        json.dump(res, open(a.report, "w"), indent=1)
    print(summary(res))
    return 0


if __name__ == "__main__":
    sys.exit(main())
