"""TOML text as a user writes it: :func:`dumps` writes a document with each ``{kind = ...}`` entry
inline, on one line, and :func:`dotted` writes a key path as a dotted key (what error messages
and ``--set`` name).

``tomli_w`` (the usual writer) writes every nested table as a ``[section]`` of its own: a policy
with a delay law would take three sections. Inline tables keep each ``{kind = ...}`` entry on one
line, as a user writes it; the few value types involved (strings, numbers, booleans, arrays,
tables) make this writer short, and every file it writes is read back by ``tomllib`` in the tests
(and in :func:`~jaxbandits.experiments.files.writing.to_toml`)."""
from __future__ import annotations

import json
import math
import re

class NotExpressible(ValueError):
    """An experiment (or one of its objects) that cannot be written as a file."""

# ----------------------------------------------------------------------------- TOML writing
# tomli_w (the usual writer) writes every nested table as a [section] of its own: a policy with a
# delay law would take three sections. Inline tables keep each {kind = ...} entry on one line, as
# a user writes it; the few value types involved (strings, numbers, booleans, arrays, tables) make
# this writer short, and every file it writes is read back by tomllib in the tests.
_BARE = re.compile(r"[A-Za-z0-9_-]+")


def toml_key(k) -> str:
    k = str(k)
    return k if _BARE.fullmatch(k) else _string(k)


def _string(s: str) -> str:
    return json.dumps(s, ensure_ascii=False).replace("\x7f", "\\u007f")


def toml_value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        r = repr(v)
        return r if any(c in r for c in ".en") else r + ".0"
    if isinstance(v, str):
        return _string(v)
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(toml_value(x) for x in v) + "]"
    if isinstance(v, dict):
        if not v:
            return "{}"
        return "{" + ", ".join(f"{toml_key(k)} = {toml_value(x)}" for k, x in v.items()) + "}"
    raise NotExpressible(f"a {type(v).__name__} ({v!r}) cannot be written to TOML")


def dumps(doc: dict, comment: str = "") -> str:
    """``doc`` as TOML: scalars and arrays first, then one ``[table]`` per table of tables and one
    ``[[name]]`` per array of tables; ``{kind = ...}`` entries inline."""
    lines = [f"# {c}" if c else "#" for c in comment.splitlines()] if comment else []

    def section(prefix, d):
        simple = [(k, v) for k, v in d.items() if not _is_section(v) and not _is_array_of_tables(v)]
        for k, v in simple:
            lines.append(f"{toml_key(k)} = {toml_value(v)}")
        for k, v in d.items():
            name = f"{prefix}.{toml_key(k)}" if prefix else toml_key(k)
            if _is_section(v):
                lines.append("")
                lines.append(f"[{name}]")
                section(name, v)
            elif _is_array_of_tables(v):
                for item in v:
                    lines.append("")
                    lines.append(f"[[{name}]]")
                    section(name, item)

    section("", doc)
    return "\n".join(lines).strip("\n") + "\n"


def _is_section(v) -> bool:
    """A table written as a [section]: one that is not a {kind = ...} entry."""
    return isinstance(v, dict) and "kind" not in v


def _is_array_of_tables(v) -> bool:
    return isinstance(v, list) and bool(v) and all(isinstance(x, dict) and "kind" not in x for x in v)


def dotted(path) -> str:
    out = ""
    for p in path:
        if isinstance(p, int):
            out += f"[{p}]"
        else:
            s = str(p)
            s = s if _BARE.fullmatch(s) else _string(s)
            out += ("." if out else "") + s
    return out
