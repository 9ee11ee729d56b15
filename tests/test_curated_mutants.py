"""The curated mutant lists (tools/mutants/*.json) stay runnable as the code moves: every mutant's
``old`` text occurs exactly once in its file (else tools/mutants.py reports it ``invalid`` and it
measures nothing), its ``new`` text differs and still parses, ids are unique, and the tests it
names exist (docs/contributing.md, "Mutation testing")."""
import ast
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_every_curated_mutant_applies_once_parses_and_names_existing_tests():
    ids, bad = [], []
    for lst in sorted((ROOT / "tools" / "mutants").glob("*.json")):
        for m in json.loads(lst.read_text()):
            ids.append(m["id"])
            src = (ROOT / m["file"]).read_text() if (ROOT / m["file"]).exists() else ""
            n = src.count(m["old"])
            if n != 1:
                bad.append(f"{lst.name} {m['id']}: 'old' occurs {n} times in {m['file']}")
                continue
            if m["new"] == m["old"]:
                bad.append(f"{lst.name} {m['id']}: 'new' is 'old'")
            try:
                ast.parse(src.replace(m["old"], m["new"]))
            except SyntaxError as e:
                bad.append(f"{lst.name} {m['id']}: the mutated file does not parse ({e})")
            for t in m.get("tests", []):
                if not (ROOT / t.split("::")[0]).exists():
                    bad.append(f"{lst.name} {m['id']}: no test file {t}")
    assert not bad, "\n".join(bad)
    assert len(ids) == len(set(ids)) and len(ids) >= 250, len(ids)
