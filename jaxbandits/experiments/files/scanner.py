"""The line of every key of a TOML document, for error messages that name the line.

``tomllib`` (the standard library's reader, which parses every file here) gives no positions, and
neither does any well-kept TOML reader's parsed document (``tomlkit`` keeps the text's layout, not
line numbers), so :func:`key_lines` finds each key's line in the text itself: a small scanner of
TOML's line structure (table headers, ``[[arrays of tables]]``, ``key = value`` lines, values that
continue over several lines; inline tables are one line in TOML 1.0). It parses no value: the
values are ``tomllib``'s, and the scanner only runs on a text ``tomllib`` has accepted.
:func:`toml_error` is ``tomllib``'s own error with one improvement: for an unclosed bracket it
names the line that opened it (``tomllib`` names the line where it noticed, often the next key's).
A validation library (pydantic, jsonschema) would check the outer types, but its error locations
would still need this mapping to lines."""
from __future__ import annotations

import json
import re
from typing import Dict, List, Optional, Tuple

_KEY_RE = re.compile(r"""\s*(?:[A-Za-z0-9_-]+|"(?:[^"\\]|\\.)*"|'[^']*')""")


def _parse_key(s: str, i: int) -> Tuple[Optional[List[str]], int]:
    """A dotted key at ``s[i:]`` -> (parts, index after it), or (None, i)."""
    parts = []
    while True:
        m = _KEY_RE.match(s, i)
        if not m:
            return (None, i) if not parts else (parts, i)
        tok = m.group(0).strip()
        if tok.startswith('"'):
            tok = json.loads(tok)
        elif tok.startswith("'"):
            tok = tok[1:-1]
        parts.append(tok)
        i = m.end()
        j = i
        while j < len(s) and s[j] in " \t":
            j += 1
        if j < len(s) and s[j] == ".":
            i = j + 1
            continue
        return parts, j


def _scan_value(s: str, i: int, depth: int, in_ml: Optional[str]):
    """Track brackets and multi-line strings through ``s[i:]`` (a value that may continue on the
    next lines): returns ``(depth, in_ml)``, the open brackets and the open multi-line string's
    quotes (or None)."""
    while i < len(s):
        if in_ml:
            end = s.find(in_ml, i)
            if end < 0:
                return depth, in_ml
            i, in_ml = end + 3, None
            continue
        c = s[i]
        if c == "#":
            break
        if s.startswith('"""', i) or s.startswith("'''", i):
            in_ml = s[i:i + 3]
            i += 3
            continue
        if c == '"':
            i += 1
            while i < len(s) and s[i] != '"':
                i += 2 if s[i] == "\\" else 1
            i += 1
            continue
        if c == "'":
            end = s.find("'", i + 1)
            i = len(s) if end < 0 else end + 1
            continue
        if c in "[{":
            depth += 1
        elif c in "]}":
            depth -= 1
        i += 1
    return depth, in_ml


def key_lines(text: str) -> Dict[tuple, int]:
    """Path of every key of a TOML document -> its line (from 1). Paths are tuples of keys, with
    the index of an array of tables (``("panels", 1, "world")``). Keys inside an inline table share
    its line, and are not listed (:func:`line_of` falls back to the nearest listed prefix).

    Args:
        text: a TOML document that ``tomllib`` reads (the scanner does not check the syntax).

    Returns:
        ``{path: line}``, for every table header, array-of-tables element and ``key = value``
        line, and every prefix of a dotted key.

    Examples:
        >>> from jaxbandits.experiments.files import key_lines
        >>> lines = key_lines("horizon = 100\\n\\n[[panels]]\\nworld = {kind = 'envs.bernoulli'}\\n")
        >>> lines[("horizon",)], lines[("panels", 0)], lines[("panels", 0, "world")]
        (1, 3, 4)
    """
    out: Dict[tuple, int] = {}
    table: tuple = ()
    counts: Dict[tuple, int] = {}
    depth, in_ml = 0, None
    for n, raw in enumerate(text.split("\n"), 1):  # TOML's lines (str.splitlines also breaks at \x85, \u2028...)
        raw = raw[:-1] if raw.endswith("\r") else raw
        if in_ml or depth > 0:  # inside a multi-line value
            depth, in_ml = _scan_value(raw, 0, depth, in_ml)
            continue
        s = raw.strip()
        if not s or s.startswith("#"):
            continue
        if s.startswith("[["):
            parts, _ = _parse_key(s, 2)
            if parts:
                base = _resolve(table, tuple(parts), counts, header=True)
                idx = counts.get(base, 0)
                counts[base] = idx + 1
                table = base + (idx,)
                out.setdefault(base, n)
                out[table] = n
            continue
        if s.startswith("["):
            parts, _ = _parse_key(s, 1)
            if parts:
                table = _resolve(table, tuple(parts), counts, header=True)
                out.setdefault(table, n)
            continue
        parts, j = _parse_key(raw, 0)
        if parts and j < len(raw) and raw[j] == "=":
            path = table + tuple(parts)
            for k in range(len(table) + 1, len(path) + 1):
                out.setdefault(path[:k], n)
            depth, in_ml = _scan_value(raw, j + 1, 0, None)
    return out


def toml_error(path, raw: bytes, e) -> str:
    """tomllib's error, with the line that opens an unclosed array or inline table (tomllib names
    the line where it noticed, often the next key's).

    Args:
        path: the file's name, for the message.
        raw: the file's bytes.
        e: the ``tomllib.TOMLDecodeError`` that reading ``raw`` raised.

    Returns:
        The message: ``"PATH: not valid TOML: ERROR"``, or for an unclosed bracket
        ``"PATH, line N, key KEY: this value's brackets are never closed (tomllib: ERROR)"``.

    Examples:
        >>> import tomllib
        >>> from jaxbandits.experiments.files import toml_error
        >>> raw = b"means = [0.5, 0.4\\nhorizon = 100\\n"
        >>> try:
        ...     tomllib.loads(raw.decode())
        ... except tomllib.TOMLDecodeError as e:
        ...     print(toml_error("e.toml", raw, e))
        e.toml, line 1, key means: this value's brackets are never closed (tomllib: ...)
    """
    msg = f"{path}: not valid TOML: {e}"
    if "Unclosed" not in str(e):
        return msg
    text = raw.decode("utf-8", "replace")
    depth, opener, in_str = 0, None, None
    for n, line in enumerate(text.split("\n"), 1):
        i = 0
        while i < len(line):
            ch = line[i]
            if in_str:
                if ch == "\\" and in_str == '"':
                    i += 1
                elif ch == in_str:
                    in_str = None
            elif ch in "\"'":
                in_str = ch
            elif ch == "#":
                break
            elif ch in "[{" and not (depth == 0 and line.lstrip().startswith("[") and "=" not in line[:i]):
                if depth == 0:
                    opener = (n, line.split("=", 1)[0].strip() if "=" in line[:i] else None)
                depth += 1
            elif ch in "]}" and depth > 0:
                depth -= 1
            i += 1
    if depth > 0 and opener is not None:
        n, key = opener
        return (f"{path}, line {n}" + (f", key {key}" if key else "") + ": this value's brackets are never closed "
                f"(tomllib: {e})")
    return msg


def _resolve(table, parts, counts, header):
    """A header's key path, with the index of the latest element of each array of tables it goes
    through (its own last key is never indexed: the header names that array or table)."""
    out: tuple = ()
    for n, p in enumerate(parts):
        out = out + (p,)
        if n < len(parts) - 1 and out in counts:
            out = out + (counts[out] - 1,)
    return out


def line_of(lines: Dict[tuple, int], path) -> Optional[int]:
    """The line of ``path``, or of its longest prefix that has one.

    Args:
        lines: the lines of a document's keys (:func:`key_lines`).
        path: a key path, e.g. ``("world", "delay", "mean")``.

    Returns:
        The line (from 1), or None where no prefix of ``path`` has one.

    Examples:
        >>> from jaxbandits.experiments.files import key_lines, line_of
        >>> lines = key_lines("horizon = 100\\nworld = {kind = 'envs.bernoulli', means = [0.5]}\\n")
        >>> line_of(lines, ("world", "means")), line_of(lines, ("seed",))
        (2, None)
    """
    path = tuple(path)
    for k in range(len(path), 0, -1):
        if path[:k] in lines:
            return lines[path[:k]]
    return None
