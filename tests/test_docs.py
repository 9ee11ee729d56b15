"""Code, docs and tests cite only what users have: the numbered sections of docs/conventions.md
("conventions §N", "§N.M") and the papers' own section, equation and algorithm numbers; never the
project's internal documents (their file names, rule labels such as "R3c", numbered pitfalls,
section numbers of the implementer's specifications)."""
import io
import re
import tokenize
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCOPE = ("jaxbandits", "docs", "tests", "benchmarks", "experiments", "tools", "README.md", "mkdocs.yml")
SUFFIXES = {".py", ".md", ".json", ".yml", ".yaml", ".toml", ".txt", ".cfg"}
CONVENTIONS = ROOT / "docs" / "conventions.md"

#: (what it is, pattern) for citations of documents users do not have
FORBIDDEN = [
    ("an internal document", re.compile(r"\b(?:CONVENTIONS|DESIGN|PERFORMANCE|STYLE)\.md\b")),
    ("the specs folder", re.compile(r"\bspecs/")),
    ("a spec file", re.compile(r"\b(?:thune2019_dew_skipper|pikeburke2018_odaaf|vernade2017_delayed_conversions|"
                               r"vernade2020_otflin|wang2021_ars|bayes_delay_models)\.md\b")),
    ("a rule label (cite conventions §5.N)", re.compile(r"\bR[1-5][a-c]?\b")),
    ("a numbered pitfall", re.compile(r"\bpitfalls?\s+P?\d+", re.I)),
    ("a pitfall label", re.compile(r"\(P\d{1,2}\)|\bP\d{1,2}:")),
    ("a spec section", re.compile(r"\bspec(?:'s)?\s+(?:§\s*|sec(?:tion|\.)?\s*)?(?:\d|E\d)", re.I)),
    ("an implementer's spec", re.compile(r"\bthe spec's\b|\b(?:the|project's) specs\b|\bof the spec\b|"
                                         r"\b(?:Pike-Burke|Vernade|Thune|Wang|Bayes) spec\b|\bspec pitfall", re.I)),
    ("a provenance tag", re.compile(r"\[R\?\]")),
]
SECTION = re.compile(r"§\s*(\d+(?:\.\d+)?)(?:\s*[-–]\s*(\d+(?:\.\d+)?))?")


def _files():
    for name in SCOPE:
        p = ROOT / name
        paths = [p] if p.is_file() else sorted(p.rglob("*")) if p.is_dir() else []
        for f in paths:
            if f.is_file() and f.suffix in SUFFIXES and f.resolve() != Path(__file__).resolve() \
                    and "__pycache__" not in f.parts:
                yield f


def _prose(path: Path, text: str):
    """``(line number, text)`` of what a reader reads: comments and strings of Python files (so
    that code such as a variable ``R2`` is not prose), every line of the other files."""
    if path.suffix != ".py":
        yield from enumerate(text.splitlines(), 1)
        return
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if tok.type in (tokenize.COMMENT, tokenize.STRING):
            for i, line in enumerate(tok.string.splitlines()):
                yield tok.start[0] + i, line


def find_forbidden(path: Path, text: str):
    out = []
    for n, line in _prose(path, text):
        for what, pat in FORBIDDEN:
            m = pat.search(line)
            if m:
                out.append(f"{path.relative_to(ROOT) if path.is_absolute() else path}:{n}: {what} "
                           f"({m.group(0)!r}): {line.strip()}")
    return out


def headings(text: str) -> set:
    """Section numbers of conventions.md: ``## N. Title`` and ``### N.M Title``."""
    secs = set(re.findall(r"^## (\d+)\. ", text, re.M))
    secs |= set(re.findall(r"^### (\d+\.\d+) ", text, re.M))
    return secs


def bad_sections(path: Path, text: str, secs: set, own: bool = False):
    """Every ``§`` outside conventions.md is a citation of it ("conventions" on the same line), and
    every cited section (both ends of a range) is a heading there."""
    out = []
    for n, line in enumerate(text.splitlines(), 1):
        if "§" not in line:
            continue
        if not own and "conventions" not in line.lower():
            out.append(f"{path}:{n}: '§' that is not a conventions section (cite a paper as 'Sec. N'): "
                       f"{line.strip()}")
        for m in SECTION.finditer(line):
            for num in filter(None, m.groups()):
                if num not in secs:
                    out.append(f"{path}:{n}: conventions §{num} is not a heading of docs/conventions.md: "
                               f"{line.strip()}")
    return out


def test_no_citation_of_documents_users_do_not_have():
    bad = []
    for f in _files():
        bad += find_forbidden(f, f.read_text(encoding="utf-8"))
    assert not bad, "cite docs/conventions.md sections or the papers instead:\n" + "\n".join(bad)


def test_every_cited_conventions_section_exists():
    conv = CONVENTIONS.read_text(encoding="utf-8")
    secs = headings(conv)
    assert {str(i) for i in range(1, 13)} <= secs and {f"5.{i}" for i in range(1, 8)} <= secs
    bad, n_cited = [], 0
    for f in _files():
        text = f.read_text(encoding="utf-8")
        n_cited += text.count("§")
        bad += bad_sections(f.relative_to(ROOT), text, secs, own=(f == CONVENTIONS))
    assert not bad, "\n".join(bad)
    assert n_cited > 50  # the scan reads the files that cite (a broken walk would pass vacuously)


def test_conventions_sections_are_numbered_in_order():
    """Stable numbering: sections 1..N in order, subsections N.1..N.k in order under their section."""
    text = CONVENTIONS.read_text(encoding="utf-8")
    tops = [int(x) for x in re.findall(r"^## (\d+)\. ", text, re.M)]
    assert tops == list(range(1, len(tops) + 1))
    for sec in tops:
        body = text.split(f"\n## {sec}. ", 1)[1].split("\n## ", 1)[0]
        subs = re.findall(r"^### (\d+)\.(\d+) ", body, re.M)
        assert all(int(a) == sec for a, _ in subs)
        assert [int(b) for _, b in subs] == list(range(1, len(subs) + 1))


@pytest.mark.parametrize("line, ok", [
    ("# the reveal ring (conventions R3c)", False),
    ("x = 1  # exact comparison (pitfall 4)", False),
    ('"""Feedback arrives at the play-time probability (P2)."""', False),
    ("# guard (spec 2.2.6): the phase never completes", False),
    ('"""Reference tables: specs/pikeburke2018_odaaf.md 2.2.7."""', False),
    ("# writes before reads (PERFORMANCE.md)", False),
    ('"""Option B of the spec\'s reconstruction."""', False),
    ("# the reveal ring (conventions §5.5)", True),
    ("R2 = np.repeat(x, 2)  # the swapped rounds", True),
    ("spec = ProblemSpec(K, T)  # what a policy may know", True),
    ("# Kahan compensation (conventions §9); Vernade et al. 2017, Sec. 6", True),
])
def test_checker_catches_planted_citations(line, ok):
    assert (find_forbidden(Path("planted.py"), line + "\n") == []) == ok


def test_section_checker_catches_planted_sections():
    secs = {"1", "2", "5", "5.4"}
    assert bad_sections(Path("x.md"), "conventions §5.4 and §1-2\n", secs) == []
    assert bad_sections(Path("x.md"), "conventions §5.9\n", secs)  # no such section
    assert bad_sections(Path("x.md"), "conventions §1-3\n", secs)  # a range's far end
    assert bad_sections(Path("x.md"), "the spec's §2.8 timing\n", secs)  # not a conventions citation
