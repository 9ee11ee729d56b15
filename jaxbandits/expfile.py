"""Experiment files: an experiment written as TOML, run with ``jaxbandits run FILE.toml``, and the
registered experiments written out in that form (``jaxbandits show NAME --toml``).

A file takes one of three forms (docs/experiment-files.md)::

    # declarative: the world, the channel and the policies as {kind = "...", parameters} entries
    horizon = 10000
    runs = 200
    world = {kind = "envs.conversions", theta = [0.5, 0.4], delay = {kind = "delays.geometric", mean = 50.0}}
    channel = {kind = "channels.conversions", window = 200}
    [policies]
    UCB1 = {kind = "classic.ucb1"}
    "KL-UCB" = {kind = "classic.kl_ucb"}

or ``[[panels]]`` (each with its ``name``, ``world``, ``channel``, ``policies``, ``log_lines``), or
a Python function with a config: ``build = "package.module:function"`` (returns what an
:class:`~jaxbandits.experiments.Experiment`'s build returns) or ``runner = "package.module:function"``
(a sweep: a loop of its own), each with a ``[config]`` table.

A ``kind`` is a public constructor of the library named through a short table (:data:`KINDS`:
``delays.geometric``, ``envs.conversions``, ``channels.conversions``, ``profiles.interval``,
``classic.kl_ucb``, ``conversions.delayed_klucb``, ...) or any ``package.module:function`` (a
policy, a world or a channel of one's own). A table with a ``kind`` is a call; every other value
is passed as it is (lists, numbers, strings, tables without ``kind``).

Everything is checked before anything compiles: the file against the schema (:data:`FILE_KEYS`),
every ``kind`` and its parameters against the constructor's signature, then every constructor is
called on the host (they check their ranges and name their parameter). Errors name the file, the
key and its line. ``tomllib`` (the standard library's reader) gives no positions, so
:func:`key_lines` finds each key's line in the text itself: a small scanner of TOML's line
structure (table headers, ``key = value`` lines, inline tables being one line in TOML 1.0). A
validation library (pydantic, jsonschema) would check the outer types, but its error locations
would still need this mapping to lines, the ranges are the library's own checks
(``jaxbandits.core._validate``, the same as for ``--set`` and the Python API), and a constructor's
parameters are checked against its own signature: the schema here is a small table instead.

:func:`describe` writes a registered experiment in the declarative form: it runs the experiment's
build and writes each world, channel and policy of the built panels from the value itself. A
library policy is a value whose fields are its constructor's arguments
(:class:`~jaxbandits.core.values.PolicyValue`); a world, channel, delay law or profile carries the
:class:`~jaxbandits.core.values.Made` record of the public constructor that returned it (declared with
:func:`~jaxbandits.core.values.constructor`: the function and its arguments as given), read with
:func:`~jaxbandits.core.values.made_by`; its ``kind`` is the name under which a module of :data:`KINDS`
exports that function. Arguments that are themselves such values become nested entries. Nothing is
recorded from the interpreter, so running the written file builds the same objects and gives the
same numbers (a test checks this for every registered experiment). A sweep (``runner``) has no panels to describe: it is written as a
reference to its function with its config.
"""
from __future__ import annotations

import dataclasses
import difflib
import importlib
import inspect
import itertools
import json
import math
import os
import re
import tomllib
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from .core import _validate as V

#: Short names of the library's constructor modules: ``kind = "PREFIX.function"``. A kind may also
#: be ``"package.module:function"`` (any importable function, your own included).
KINDS: Dict[str, str] = {
    "delays": "jaxbandits.core.delays",
    "envs": "jaxbandits.envs",
    "channels": "jaxbandits.channels",
    "profiles": "jaxbandits.core.profiles",
    "classic": "jaxbandits.policies.classic",
    "conversions": "jaxbandits.policies.conversions",
    "adversarial": "jaxbandits.policies.adversarial",
    "anonymous": "jaxbandits.policies.anonymous",
    "linear": "jaxbandits.policies.linear",
    "composite": "jaxbandits.policies.composite",
    "bayes": "jaxbandits.policies.bayes",
    "policies": "jaxbandits.policies",
}
#: Also accepted: the policy families spelled with their package (``policies.classic.kl_ucb``).
_ALIASES = {f"policies.{k}": k for k in ("classic", "conversions", "adversarial", "anonymous", "linear",
                                          "composite", "bayes")}

#: The keys of a file: key -> what it holds (the schema; also the reference table of the docs).
FILE_KEYS: Dict[str, str] = {
    "name": "the experiment's name in summary.json and the default output folder (default: the file's stem)",
    "description": "one line shown by jaxbandits show",
    "horizon": "rounds per run, an integer in [1, 2**24] (required; not with runner: --horizon T runs a sweep at T)",
    "runs": "paired runs, an integer >= 1 (default 100)",
    "seed": "an integer in [0, 2**64 - 1] (default 0)",
    "record": "record points: a stride k >= 1, [\"log\", n] (n points spaced evenly in log t), or a list of "
              "0-based rounds (default: about 200 evenly spaced)",
    "metric": "the metric of the summary and plots: regret (default), expected_regret, delayed_regret, fixed_regret",
    "chunk": "rounds per chunk (checkpoints, progress, Ctrl-C), an integer >= 1 (default horizon/20)",
    "keep": "per-run curves kept: \"all\", \"none\" (statistics only) or the first N runs, an integer >= 0 "
            "(default: every run's while they take at most 64 MiB, else none; --keep overrides it)",
    "checkpoints": "rounds at which table.md and summary.json report R(t): integers in [1, horizon]",
    "layout": "[rows, cols] of the figure's panels",
    "ratio_to": "a policy label: ratio.png plots every curve as a ratio to its mean regret",
    "world": "the world: {kind = \"envs....\" or \"package.module:function\", parameters}",
    "channel": "the feedback channel: {kind = \"channels....\" or \"package.module:function\", parameters}",
    "policies": "a table {label = {kind = ..., parameters}}: the policies compared (one compiled program)",
    "log_lines": "a table {label = c}: reference lines c log t drawn on the figure",
    "panels": "an array of tables [[panels]], each with name, world, channel, policies, log_lines",
    "grid": "a table {\"dotted.key\" = [values]}: one panel per combination (e.g. \"world.delay.mean\" = [10.0, 50.0])",
    "build": "\"package.module:function\": build(config) returns (world, channel, {label: policy}) or a list of Panels",
    "runner": "\"package.module:function\": a sweep, runner(config, runs, seed, horizon, sweep) -> results",
    "config": "the table passed to build or runner (its keys may be changed with --set key=value)",
    "ignores": "run options a runner does not use ([\"horizon\"]): giving one is an error",
    "horizon_keys": "config keys that a horizon given to run replaces (giving both is an error)",
}
_PANEL_KEYS = ("name", "world", "channel", "policies", "log_lines")
_METRICS = ("regret", "expected_regret", "delayed_regret", "fixed_regret")


class FileError(ValueError):
    """A bad experiment file: names the file, the line and the key."""


class NotExpressible(ValueError):
    """An experiment (or one of its objects) that cannot be written as a file."""


# ----------------------------------------------------------------------------- kinds
def _import_ref(ref: str):
    """``package.module:attribute.path`` -> the object."""
    module, _, attr = ref.partition(":")
    if not module or not attr:
        raise ValueError(f"{ref!r} is not of the form package.module:function")
    try:
        obj = importlib.import_module(module)
    except ImportError as e:
        raise ValueError(f"{ref!r}: cannot import module {module!r} ({e})") from None
    except SyntaxError as e:  # the user's module does not parse: its file and line
        raise ValueError(f"{ref!r}: module {module!r} has a syntax error: {e.filename}, line {e.lineno}: "
                         f"{e.msg}") from None
    except Exception as e:  # the user's module raised while importing: say where
        tb = e.__traceback__
        while tb is not None and tb.tb_next is not None:
            tb = tb.tb_next
        at = f" ({tb.tb_frame.f_code.co_filename}, line {tb.tb_lineno})" if tb is not None else ""
        raise ValueError(f"{ref!r}: importing module {module!r} raised {type(e).__name__}: {e}{at}") from None
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise ValueError(f"{ref!r}: module {module!r} has no attribute {attr!r}")
        obj = getattr(obj, part)
    return obj


def resolve_kind(kind) -> Any:
    """The constructor a ``kind`` names: ``PREFIX.function`` of :data:`KINDS` or
    ``package.module:function``."""
    if not isinstance(kind, str) or not kind:
        raise ValueError(f"kind must be a string such as \"classic.ucb1\" or \"package.module:function\", got {kind!r}")
    if ":" in kind:
        fn = _import_ref(kind)
    else:
        prefix, _, name = kind.rpartition(".")
        prefix = _ALIASES.get(prefix, prefix)
        if prefix not in KINDS or not name:
            raise ValueError(f"unknown kind {kind!r}: write PREFIX.function with PREFIX one of "
                             f"{', '.join(KINDS)}, or package.module:function")
        mod = importlib.import_module(KINDS[prefix])
        fn = getattr(mod, name, None)
        if name.startswith("_") or fn is None or not callable(fn) or inspect.isclass(fn) or inspect.ismodule(fn):
            public = sorted(n for n, v in vars(mod).items() if not n.startswith("_") and inspect.isfunction(v))
            close = difflib.get_close_matches(name, public, n=3)
            raise ValueError(f"unknown kind {kind!r}: {KINDS[prefix]} has no public function {name!r}"
                             + (f" (did you mean {', '.join(f'{prefix}.{c}' for c in close)}?)" if close else ""))
    if not callable(fn):
        raise ValueError(f"kind {kind!r} names a {type(fn).__name__}, not a function")
    return fn


def _signature(fn):
    try:
        return inspect.signature(fn)
    except (TypeError, ValueError):
        return None


def check_params(kind, fn, params: dict) -> List[Tuple[str, str]]:
    """Problems of ``params`` against ``fn``'s signature: ``[(parameter or "", message)]``."""
    sig = _signature(fn)
    if sig is None:
        return []
    ps = sig.parameters
    if any(p.kind == p.VAR_KEYWORD for p in ps.values()):
        return []
    out = []
    named = [n for n, p in ps.items() if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    for k in params:
        if k not in named:
            close = difflib.get_close_matches(k, named, n=1)
            out.append((k, f"{kind} has no parameter {k!r}" + (f" (did you mean {close[0]!r}?)" if close else "")
                        + f"; its parameters: {', '.join(named) or 'none'}"))
    for n, p in ps.items():
        if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) and p.default is p.empty and n not in params:
            out.append(("", f"{kind} needs the parameter {n!r}"))
    return out


# ----------------------------------------------------------------------------- TOML writing
# tomli_w (the usual writer) writes every nested table as a [section] of its own: a policy with a
# delay law would take three sections. Inline tables keep each {kind = ...} entry on one line, as
# a user writes it; the few value types involved (strings, numbers, booleans, arrays, tables) make
# this writer short, and every file it writes is read back by tomllib in the tests.
_BARE = re.compile(r"[A-Za-z0-9_-]+")


def _key(k) -> str:
    k = str(k)
    return k if _BARE.fullmatch(k) else _string(k)


def _string(s: str) -> str:
    return json.dumps(s, ensure_ascii=False).replace("\x7f", "\\u007f")


def _value(v) -> str:
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
        return "[" + ", ".join(_value(x) for x in v) + "]"
    if isinstance(v, dict):
        if not v:
            return "{}"
        return "{" + ", ".join(f"{_key(k)} = {_value(x)}" for k, x in v.items()) + "}"
    raise NotExpressible(f"a {type(v).__name__} ({v!r}) cannot be written to TOML")


def dumps(doc: dict, comment: str = "") -> str:
    """``doc`` as TOML: scalars and arrays first, then one ``[table]`` per table of tables and one
    ``[[name]]`` per array of tables; ``{kind = ...}`` entries inline."""
    lines = [f"# {c}" if c else "#" for c in comment.splitlines()] if comment else []

    def section(prefix, d):
        simple = [(k, v) for k, v in d.items() if not _is_section(v) and not _is_array_of_tables(v)]
        for k, v in simple:
            lines.append(f"{_key(k)} = {_value(v)}")
        for k, v in d.items():
            name = f"{prefix}.{_key(k)}" if prefix else _key(k)
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


# ----------------------------------------------------------------------------- lines of keys
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
    its line, and are not listed (:func:`line_of` falls back to the nearest listed prefix)."""
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
    the line where it noticed, often the next key's)."""
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
    """The line of ``path``, or of its longest prefix that has one."""
    path = tuple(path)
    for k in range(len(path), 0, -1):
        if path[:k] in lines:
            return lines[path[:k]]
    return None


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


# ----------------------------------------------------------------------------- reading and checking
@dataclasses.dataclass
class _Ctx:
    file: str
    lines: Dict[tuple, int]
    errors: List[tuple] = dataclasses.field(default_factory=list)
    sets: tuple = ()  # dotted keys given by --set

    def where(self, path, file=True) -> str:
        path = tuple(path)
        given = [k for k in self.sets if path and (path[:len(k)] == k or k[:len(path)] == path)]
        n = line_of(self.lines, path)
        at = [self.file] if file else []
        at += [f"line {n}"] if n else []
        at += [f"key {dotted(path)}"] if path else []
        return ", ".join(at) + (" (given by --set)" if given else "")

    def err(self, path, msg):
        self.errors.append((tuple(path), msg))

    def raise_if_any(self):
        if len(self.errors) == 1:
            path, msg = self.errors[0]
            raise FileError(f"{self.where(path)}: {msg}")
        if self.errors:
            raise FileError(f"{self.file}: {len(self.errors)} problems: "
                            + "; ".join((f"{self.where(p, file=False)}: " if p else "") + m for p, m in self.errors))


def _check_int(ctx, path, v, lo=None, hi=None) -> bool:
    if isinstance(v, bool) or not isinstance(v, int):
        ctx.err(path, f"must be an integer, got {_show(v)}")
        return False
    if (lo is not None and v < lo) or (hi is not None and v > hi):
        rng = f"[{lo if lo is not None else '-inf'}, {hi if hi is not None else 'inf'}]"
        ctx.err(path, f"must lie in {rng}, got {v}")
        return False
    return True


def _show(v) -> str:
    s = repr(v)
    return s if len(s) <= 60 else s[:57] + "..."


def _check_kind_table(ctx, path, v, what):
    """A {kind = ..., parameters} entry (nested entries checked too)."""
    if not isinstance(v, dict) or "kind" not in v:
        ctx.err(path, f"must be a table {{kind = \"...\", parameters}} ({what}), got {_show(v)}")
        return
    try:
        fn = resolve_kind(v["kind"])
    except ValueError as e:
        ctx.err(path + ("kind",), str(e))
        return
    params = {k: x for k, x in v.items() if k != "kind"}
    for p, msg in check_params(v["kind"], fn, params):
        ctx.err(path + ((p,) if p else ()), msg)
    for k, x in params.items():
        _check_nested(ctx, path + (k,), x)


def _check_nested(ctx, path, x):
    if isinstance(x, dict):
        if "kind" in x:
            _check_kind_table(ctx, path, x, "a constructor call")
        else:
            for k, y in x.items():
                _check_nested(ctx, path + (k,), y)
    elif isinstance(x, list):
        for i, y in enumerate(x):
            _check_nested(ctx, path + (i,), y)


def _check_panel(ctx, path, p, *, top):
    for slot, what in (("world", "a world"), ("channel", "a feedback channel")):
        if slot not in p:
            ctx.err(path, f"missing key {slot!r} ({what})")
        else:
            _check_kind_table(ctx, path + (slot,), p[slot], what)
    pols = p.get("policies")
    if pols is None:
        ctx.err(path, "missing table 'policies' ({label = {kind = ..., parameters}})")
    elif not isinstance(pols, dict) or not pols:
        ctx.err(path + ("policies",), f"must be a non-empty table {{label = {{kind = ...}}}}, got {_show(pols)}")
    else:
        for lab, v in pols.items():
            _check_kind_table(ctx, path + ("policies", lab), v, "a policy")
    ll = p.get("log_lines", {})
    if not isinstance(ll, dict):
        ctx.err(path + ("log_lines",), f"must be a table {{label = c}}, got {_show(ll)}")
    else:
        for lab, c in ll.items():
            if isinstance(c, bool) or not isinstance(c, (int, float)) or not math.isfinite(c):
                ctx.err(path + ("log_lines", lab), f"must be a finite number, got {_show(c)}")
    if not top:
        name = p.get("name", "")
        if not isinstance(name, str):
            ctx.err(path + ("name",), f"must be a string, got {_show(name)}")
        for k in p:
            if k not in _PANEL_KEYS:
                ctx.err(path + (k,), f"unknown key {k!r} in a panel; a panel has {', '.join(_PANEL_KEYS)}")


def _get_path(doc, path):
    x = doc
    for p in path:
        x = x[p]
    return x


def check(doc: dict, ctx: _Ctx) -> None:
    """The schema: every key known and of its type and range; one form (world/channel/policies,
    panels, build or runner); every kind and its parameters known. Collects every problem."""
    for k in doc:
        if k not in FILE_KEYS:
            close = difflib.get_close_matches(k, list(FILE_KEYS), n=1)
            ctx.err((k,), f"unknown key {k!r}" + (f" (did you mean {close[0]!r}?)" if close else "")
                    + f"; the keys of a file: {', '.join(FILE_KEYS)}")
    forms = [f for f in ("world/channel/policies", "panels", "build", "runner")
             if any(k in doc for k in f.split("/"))]
    if not forms:
        ctx.err((), "no experiment: give world, channel and [policies] (or [[panels]], or build = / runner = "
                    "\"package.module:function\" with [config])")
    elif len(forms) > 1:
        ctx.err((), f"give one of world/channel/policies, panels, build, runner; this file has {' and '.join(forms)}")
    for k in ("name", "description", "ratio_to", "metric"):
        if k in doc and not isinstance(doc[k], str):
            ctx.err((k,), f"must be a string, got {_show(doc[k])}")
    if isinstance(doc.get("metric"), str) and doc["metric"] not in _METRICS:
        ctx.err(("metric",), f"must be one of {', '.join(_METRICS)}, got {doc['metric']!r}")
    ok_h = "horizon" in doc and _check_int(ctx, ("horizon",), doc["horizon"], 1, V.MAX_HORIZON)
    if "horizon" in doc and "runner" in doc:
        ctx.err(("horizon",), "a runner file takes no horizon: its [config] sets its horizons (jaxbandits run "
                              "FILE.toml --horizon T runs the sweep at T alone)")
    if "horizon" not in doc and "runner" not in doc and forms:
        ctx.err((), "missing key 'horizon' (rounds per run, an integer in [1, 2**24])")
    if "runs" in doc:
        _check_int(ctx, ("runs",), doc["runs"], 1, None)
    if "seed" in doc:
        _check_int(ctx, ("seed",), doc["seed"], 0, V.MAX_SEED)
    if "chunk" in doc:
        _check_int(ctx, ("chunk",), doc["chunk"], 1, None)
    if "keep" in doc and doc["keep"] not in ("all", "none"):
        k = doc["keep"]
        if isinstance(k, bool) or not isinstance(k, int) or k < 0:
            ctx.err(("keep",), f"must be \"all\", \"none\" or a number of runs >= 0, got {_show(k)}")
    if "record" in doc:
        r = doc["record"]
        if isinstance(r, list) and len(r) == 2 and r[0] == "log":
            _check_int(ctx, ("record",), r[1], 1, 2**20)
        elif isinstance(r, list):
            if not r:
                ctx.err(("record",), "must not be an empty list")
            for i, x in enumerate(r):
                _check_int(ctx, ("record", i), x, 0, doc["horizon"] - 1 if ok_h else None)
        else:
            _check_int(ctx, ("record",), r, 1, None)
    if "checkpoints" in doc:
        cps = doc["checkpoints"]
        if not isinstance(cps, list):
            ctx.err(("checkpoints",), f"must be a list of rounds, got {_show(cps)}")
        else:
            for i, c in enumerate(cps):
                _check_int(ctx, ("checkpoints", i), c, 1, doc["horizon"] if ok_h else None)
    if "layout" in doc:
        lay = doc["layout"]
        if not (isinstance(lay, list) and len(lay) == 2):
            ctx.err(("layout",), f"must be [rows, cols], got {_show(lay)}")
        else:
            for i in range(2):
                _check_int(ctx, ("layout", i), lay[i], 1, 100)
    for k in ("build", "runner"):
        if k in doc:
            if not isinstance(doc[k], str) or ":" not in doc[k]:
                ctx.err((k,), f"must be \"package.module:function\", got {_show(doc[k])}")
            else:
                try:
                    if not callable(_import_ref(doc[k])):
                        ctx.err((k,), f"{doc[k]!r} is not a function")
                except ValueError as e:
                    ctx.err((k,), str(e))
    if "config" in doc and not isinstance(doc["config"], dict):
        ctx.err(("config",), f"must be a table, got {_show(doc['config'])}")
    if "config" in doc and "build" not in doc and "runner" not in doc:
        ctx.err(("config",), "config is passed to build or runner: this file has neither (the parameters of a "
                             "declarative file are written in its world, channel and policies)")
    for k in ("ignores", "horizon_keys"):
        if k in doc and (not isinstance(doc[k], list) or not all(isinstance(x, str) for x in doc[k])):
            ctx.err((k,), f"must be a list of strings, got {_show(doc[k])}")
    if isinstance(doc.get("ignores"), list):
        for i, x in enumerate(doc["ignores"]):
            if x not in ("horizon", "chunk"):
                ctx.err(("ignores", i), f"must be \"horizon\" or \"chunk\", got {x!r}")
    if "world" in doc or "channel" in doc or "policies" in doc:
        _check_panel(ctx, (), doc, top=True)
    elif "log_lines" in doc:
        ctx.err(("log_lines",), "log_lines belongs with world/channel/policies (or inside a [[panels]] entry)")
    if "panels" in doc:
        ps = doc["panels"]
        if not isinstance(ps, list) or not ps or not all(isinstance(p, dict) for p in ps):
            ctx.err(("panels",), "must be a non-empty array of tables [[panels]]")
        else:
            for i, p in enumerate(ps):
                _check_panel(ctx, ("panels", i), p, top=False)
    if isinstance(doc.get("ratio_to"), str) and not ("build" in doc or "runner" in doc):
        panels = doc["panels"] if isinstance(doc.get("panels"), list) else [doc]
        labels = {lab for p in panels if isinstance(p, dict) and isinstance(p.get("policies"), dict)
                  for lab in p["policies"]}
        if doc["ratio_to"] not in labels:
            ctx.err(("ratio_to",), f"must be a policy label of the file ({', '.join(sorted(labels))}), "
                                   f"got {doc['ratio_to']!r}")
    if "grid" in doc:
        g = doc["grid"]
        if not isinstance(g, dict) or not g:
            ctx.err(("grid",), f"must be a non-empty table {{\"dotted.key\" = [values]}}, got {_show(g)}")
        elif "build" in doc or "runner" in doc:
            ctx.err(("grid",), "grid varies the world, channel and policies of a declarative file, not a build/runner's "
                               "config (use a list in [config] and let the function loop)")
        else:
            for k, vals in g.items():
                if not isinstance(vals, list) or not vals:
                    ctx.err(("grid", k), f"must be a non-empty list of values, got {_show(vals)}")
                    continue
                target = tuple(k.split("."))
                panels = doc.get("panels") if isinstance(doc.get("panels"), list) else [doc]
                for p in panels:
                    if not isinstance(p, dict):
                        continue
                    try:
                        parent = _get_path(p, target[:-1])
                    except (KeyError, TypeError, IndexError):
                        parent = None
                    if not isinstance(parent, dict) or target[0] not in ("world", "channel", "policies"):
                        ctx.err(("grid", k), f"{k!r} names no table of the file's world, channel or policies "
                                             "(write e.g. \"world.delay.mean\" or \"policies.UCB1.alpha\")")
                        break
                    if "kind" in parent:
                        fn = None
                        try:
                            fn = resolve_kind(parent["kind"])
                        except ValueError:
                            pass
                        if fn is not None:
                            for _, msg in check_params(parent["kind"], fn, {target[-1]: None}):
                                if "no parameter" in msg:
                                    ctx.err(("grid", k), msg)


def _apply_sets(doc: dict, sets: dict, ctx: _Ctx) -> dict:
    """``--set dotted.key=value`` on the file: the key must exist, except a new parameter of a
    {kind = ...} entry (checked against its signature like any other)."""
    import copy

    doc = copy.deepcopy(doc)
    for k, v in (sets or {}).items():
        path = tuple(int(p) if p.isdigit() else p for p in k.split("."))
        if "build" in doc or "runner" in doc:
            cfg = doc.setdefault("config", {})
            if len(path) != 1 or path[0] not in cfg:
                raise FileError(f"--set {k}: unknown config key {k!r}; [config] of {ctx.file} has "
                                f"{', '.join(cfg) or 'no key'}")
            cfg[path[0]] = v
            continue
        try:
            parent = _get_path(doc, path[:-1])
        except (KeyError, TypeError, IndexError):
            parent = None
        new_ok = (len(path) == 1 and path[0] in FILE_KEYS) or (path[:1] != ("grid",) and isinstance(parent, dict)
                                                                and "kind" in parent)
        if not isinstance(parent, (dict, list)) or (isinstance(parent, dict) and path[-1] not in parent and not new_ok):
            raise FileError(f"--set {k}: {ctx.file} has no key {k!r} (dotted keys of the file, e.g. "
                            "horizon, world.delay.mean, policies.UCB1.alpha)")
        if isinstance(parent, list):
            if not isinstance(path[-1], int) or not 0 <= path[-1] < len(parent):
                raise FileError(f"--set {k}: no entry {path[-1]} in {dotted(path[:-1])} (length {len(parent)})")
        parent[path[-1]] = v
    return doc


def parse_sets(items) -> dict:
    """``["dotted.key=value", ...]`` -> dict (values: Python literals, else plain strings), for
    ``--set`` on a file: ``world.delay.mean=20``, ``policies.UCB1.alpha=1.5``, ``horizon=500``."""
    import ast

    out = {}
    for it in items or []:
        if not isinstance(it, str) or "=" not in it:
            raise ValueError(f"--set expects key=value, got {it!r}")
        k, v = (x.strip() for x in it.split("=", 1))
        if not k or any(not p for p in k.split(".")):
            raise ValueError(f"--set key must be a dotted key of the file (world.delay.mean), got {k!r}")
        try:
            out[k] = ast.literal_eval(v)
        except (ValueError, SyntaxError):
            out[k] = v
    return out


def read(path: str, sets: Optional[dict] = None) -> Tuple[dict, _Ctx]:
    """Read and check a file (``sets``: ``--set`` overrides of its dotted keys). Raises
    :class:`FileError` naming the file, the line and the key of every problem."""
    path = os.fspath(path)
    try:
        with open(path, "rb") as fh:
            raw = fh.read()
    except OSError as e:
        raise FileError(f"{path}: cannot read the experiment file ({e.strerror or e})") from None
    try:
        text = raw.decode("utf-8")
        doc = tomllib.loads(text)
    except UnicodeDecodeError as e:
        line = raw[:e.start].count(b"\n") + 1
        raise FileError(f"{path}, line {line}: not UTF-8 text (byte 0x{raw[e.start]:02x} at offset {e.start})") from None
    except tomllib.TOMLDecodeError as e:
        raise FileError(toml_error(path, raw, e)) from None
    ctx = _Ctx(path, key_lines(text), sets=tuple(tuple(int(p) if p.isdigit() else p for p in k.split("."))
                                                 for k in (sets or {})))
    if sets:
        doc = _apply_sets(doc, sets, ctx)
    check(doc, ctx)
    ctx.raise_if_any()
    return doc, ctx


# ----------------------------------------------------------------------------- building
def _call(entry, path, ctx):
    """Build a value of the file: {kind = ...} tables are constructor calls (innermost first)."""
    if isinstance(entry, dict):
        if "kind" not in entry:
            return {k: _call(v, path + (k,), ctx) for k, v in entry.items()}
        fn = resolve_kind(entry["kind"])
        kw = {k: _call(v, path + (k,), ctx) for k, v in entry.items() if k != "kind"}
        try:
            return fn(**kw)
        except (ValueError, TypeError) as e:  # the constructor names its parameter: point at its key
            first = re.match(r"[A-Za-z_][A-Za-z0-9_]*", str(e))
            at = path + (first.group(0),) if first and first.group(0) in kw else path
            raise FileError(f"{ctx.where(at)}: {entry['kind']}: {e}") from e
    if isinstance(entry, list):
        return [_call(v, path + (i,), ctx) for i, v in enumerate(entry)]
    return entry


def _grid_panels(doc: dict) -> List[Tuple[tuple, dict]]:
    """``[(path of the panel in the file, panel table)]``, the grid expanded: one panel per
    combination of the grid's values, named by the values."""
    import copy

    base = doc["panels"] if "panels" in doc else [{k: doc[k] for k in _PANEL_KEYS if k in doc}]
    paths = [("panels", i) for i in range(len(base))] if "panels" in doc else [()]
    grid = doc.get("grid")
    if not grid:
        return list(zip(paths, base))
    keys = list(grid)
    out = []
    for path, p in zip(paths, base):
        for combo in itertools.product(*(grid[k] for k in keys)):
            q = copy.deepcopy(p)
            for k, v in zip(keys, combo):
                target = k.split(".")
                _get_path(q, target[:-1])[target[-1]] = v
            label = ", ".join(f"{k}={_value(v)}" for k, v in zip(keys, combo))
            q["name"] = f"{p['name']}: {label}" if p.get("name") else label
            out.append((path, q))
    return out


def build_panels(doc: dict, ctx: Optional[_Ctx] = None) -> list:
    """The panels of a declarative file: every world, channel and policy built (on the host, no
    compilation); an object of the wrong sort is an error naming its key and line."""
    from .channels import Channel
    from .envs.base import World
    from .experiments.specs import Panel
    from .core.values import is_policy

    ctx = ctx or _Ctx("<experiment file>", {})
    panels = []
    for k, vals in (doc.get("grid") or {}).items():
        seen = [json.dumps(v, sort_keys=True) for v in vals] if isinstance(vals, list) else []
        twice = [v for i, v in enumerate(vals) if seen[i] in seen[:i]] if seen else []
        if twice:
            raise FileError(f"{ctx.where(('grid', k))}: the value {_value(twice[0])} is given twice: each grid point "
                            "is one panel, and a repeated one would replace the other's curves")
    named = {}
    for path, p in _grid_panels(doc):
        nm = p.get("name", "")
        for lab in p.get("policies", {}):  # a curve is (panel name, policy label): one may not replace another
            if (nm, lab) in named:
                raise FileError(f"{ctx.where(path + ('name',))}: two panels are named {nm!r} (also "
                                f"{ctx.where(named[nm, lab], False)}) and both have the policy {lab!r}: give each "
                                "panel its own name, or one's curves would replace the other's")
            named[nm, lab] = path + ("name",)
        env = _call(p["world"], path + ("world",), ctx)
        if not isinstance(env, World):
            raise FileError(f"{ctx.where(path + ('world',))}: {p['world']['kind']} returned a {type(env).__name__}, "
                            "not a world (a jaxbandits.World)")
        ch = _call(p["channel"], path + ("channel",), ctx)
        if not isinstance(ch, Channel):
            raise FileError(f"{ctx.where(path + ('channel',))}: {p['channel']['kind']} returned a "
                            f"{type(ch).__name__}, not a channel (a jaxbandits.channels.Channel)")
        pols = {}
        for lab, e in p["policies"].items():
            pol = _call(e, path + ("policies", lab), ctx)
            if not is_policy(pol):
                raise FileError(f"{ctx.where(path + ('policies', lab))}: {e['kind']} returned a "
                                f"{type(pol).__name__}, not a policy (a jaxbandits.Policy)")
            pols[lab] = pol
        panels.append(Panel(p.get("name", ""), env, ch, pols, {k: float(v) for k, v in p.get("log_lines", {}).items()}))
    return panels


def _spec_of(doc: dict) -> dict:
    keep = ("world", "channel", "policies", "log_lines", "panels", "grid")
    return {k: doc[k] for k in keep if k in doc}


def _build_from_spec(cfg):
    """The build of a declarative file's experiment: its config holds the spec."""
    return build_panels(cfg["spec"])


def experiment(path: str, sets: Optional[dict] = None, *, doc_ctx=None):
    """The :class:`~jaxbandits.experiments.Experiment` of a file, checked, with every object of a
    declarative file already built once (so every constructor's check has run before anything
    compiles). ``sets``: ``--set`` overrides (dotted keys of the file; keys of [config] for build
    and runner files)."""
    from .experiments.specs import Experiment

    doc, ctx = doc_ctx or read(path, sets)
    name = doc.get("name") or os.path.splitext(os.path.basename(os.fspath(path)))[0]
    record = doc.get("record")
    if isinstance(record, list):
        record = ("log", record[1]) if len(record) == 2 and record[0] == "log" else np.asarray(record, np.int64)
    common = dict(runs=doc.get("runs", 100), record=record, metric=doc.get("metric", "regret"),
                  chunk=doc.get("chunk"), keep=doc.get("keep"), checkpoints=tuple(doc.get("checkpoints", ())),
                  layout=tuple(doc["layout"]) if "layout" in doc else None, ratio_to=doc.get("ratio_to"),
                  ignores=tuple(doc.get("ignores", ())), horizon_keys=tuple(doc.get("horizon_keys", ())),
                  source=(os.fspath(path),) + tuple(w for k, v in (sets or {}).items() for w in ("--set", f"{k}={v!r}")))
    desc = doc.get("description", f"experiment file {os.path.basename(os.fspath(path))}")
    if "runner" in doc:
        return Experiment(name, desc, None, dict(doc.get("config", {})), horizon=1, runner=_import_ref(doc["runner"]),
                          **common)
    if "build" in doc:
        return Experiment(name, desc, _import_ref(doc["build"]), dict(doc.get("config", {})),
                          horizon=doc["horizon"], **common)
    spec = _spec_of(doc)
    build_panels(spec, ctx)  # every constructor's own checks, with the file's lines
    return Experiment(name, desc, _build_from_spec, {"spec": spec}, horizon=doc["horizon"], **common)


# ----------------------------------------------------------------------------- describing
def _fn_kind(fn) -> Optional[str]:
    """The ``kind`` of a :func:`~jaxbandits.core.values.constructor` ``fn``: ``PREFIX.name`` where a module of
    :data:`KINDS` exports it, else ``package.module:function`` for a function of one's own."""
    for prefix, modname in KINDS.items():
        if getattr(importlib.import_module(modname), fn.__name__, None) is fn:
            return f"{prefix}.{fn.__name__}"
    ref = _ref_of(fn)
    if ref is not None and not ref.startswith("jaxbandits") and not ref.startswith("__main__"):
        return ref
    return None


def _policy_kind(pol) -> Optional[str]:
    """The ``kind`` of the constructor that makes values of ``pol``'s type (its declared
    ``constructor_fn``): in :data:`KINDS`, else ``package.module:function`` of one's own."""
    return _fn_kind(type(pol).constructor_fn)


def _encode(x, path, seen=()):
    """A Python value as a file value: a library policy as the call its fields make, a value made by
    a :func:`~jaxbandits.core.values.constructor` as that call (:func:`~jaxbandits.core.values.made_by`)."""
    from .core.values import PolicyValue, made_by

    if isinstance(x, PolicyValue):
        kind = _policy_kind(x)
        if kind is None:
            raise NotExpressible(f"{dotted(path)}: {x!r} has no constructor in the library's table")
        return _encode_call(kind, x.arguments(), path, seen)
    made = made_by(x)
    if made is not None and id(x) not in seen:
        kind = _fn_kind(made.fn)
        if kind is not None:
            return _encode_call(kind, made.arguments, path, seen + (id(x),))
    if isinstance(x, (bool, np.bool_)):
        return bool(x)
    if isinstance(x, (int, np.integer)):
        return int(x)
    if isinstance(x, (float, np.floating)):
        return float(x)
    if isinstance(x, str):
        return x
    if hasattr(x, "__array__") and not isinstance(x, (list, tuple, dict)):
        a = np.asarray(x)
        if a.dtype.kind in "biuf":
            if not a.ndim:
                return _encode(a.item(), path, seen)
            if np.asarray(a.tolist()).dtype == a.dtype:  # a plain list reads back as this very array
                return _encode(a.tolist(), path, seen)
            return {"kind": "numpy:asarray", "a": a.tolist(), "dtype": str(a.dtype)}  # keeps its dtype
    if isinstance(x, (list, tuple)) and type(x) in (list, tuple):  # a NamedTuple would read back as a list
        return [_encode(v, path + (i,), seen) for i, v in enumerate(x)]
    if isinstance(x, dict) and all(isinstance(k, str) for k in x) and "kind" not in x:
        return {k: _encode(v, path + (k,), seen) for k, v in x.items()}
    if x is None:
        raise NotExpressible(f"{dotted(path)} is None (TOML has no null) where the constructor's default is not None")
    raise NotExpressible(f"{dotted(path)}: a {type(x).__name__} that no recorded constructor call made")


def _encode_call(kind, args, path, seen):
    fn = resolve_kind(kind)
    sig = _signature(fn)
    out = {"kind": kind}
    for k, v in args.items():
        d = sig.parameters[k].default if sig is not None and k in sig.parameters else inspect.Parameter.empty
        if d is not inspect.Parameter.empty and _same(v, d):
            continue
        out[k] = _encode(v, path + (k,), seen)
    return out


def _same(v, d) -> bool:
    if v is d:
        return True
    simple = (bool, int, float, str)
    return type(v) is type(d) and isinstance(v, simple) and v == d


def describe(exp, overrides: Optional[dict] = None) -> Tuple[dict, str]:
    """A registered experiment as a file: ``(document, comment)``. A build's values are written
    declaratively (module docstring); a sweep (``runner``) as its function and config.
    Raises :class:`NotExpressible` (saying why) when neither can be written."""
    from .experiments.specs import resolve_config

    cfg = resolve_config(exp, overrides)
    head = {"name": exp.name, "description": exp.description}
    if exp.runner is not None:
        ref = _ref_of(exp.runner)
        if ref is None:
            raise NotExpressible(f"experiment {exp.name!r} is a sweep whose runner {exp.runner!r} is not a module-level "
                                 "function (package.module:function): it cannot be referenced from a file")
        doc = {**head, "runner": ref, "runs": exp.runs, "seed": 0}
        for k in ("ignores", "horizon_keys"):
            if getattr(exp, k):
                doc[k] = list(getattr(exp, k))
        doc["config"] = _encode(cfg, ("config",))
        comment = (f"{exp.name}: written by jaxbandits show {exp.name} --toml.\n"
                   f"A sweep: {ref} loops over its settings itself (its worlds, channels and policies are\n"
                   "built inside that function, with per-setting tuning and bounds), so this file gives the\n"
                   "function and its [config] rather than world/channel/policies tables.")
        return doc, comment
    try:
        return _describe_declarative(exp, cfg, head, overrides)
    except NotExpressible as e:
        ref = _ref_of(exp.build)
        if ref is None:
            raise
        why = str(e)
    # a build whose objects are not all constructor calls of the table (e.g. a prior fitted inside
    # the build): the file names the build function and its config instead
    doc = {**head, "build": ref, "horizon": exp.horizon, "runs": exp.runs, "seed": 0}
    _common_keys(exp, doc)
    doc["config"] = _encode(cfg, ("config",))
    comment = (f"{exp.name}: written by jaxbandits show {exp.name} --toml.\n"
               f"Not every object of its build can be written as {{kind = ...}} ({why});\n"
               f"so this file gives the build function, {ref}, and its [config].")
    return doc, comment


def _common_keys(exp, doc):
    """The experiment's record points, metric, chunk, checkpoints, layout and ratio, into ``doc``."""
    if exp.record is not None:
        rec = exp.record
        doc["record"] = list(rec) if isinstance(rec, tuple) else _encode(rec, ("record",))
    if exp.metric != "regret":
        doc["metric"] = exp.metric
    if exp.chunk is not None:
        doc["chunk"] = exp.chunk
    if exp.keep is not None:
        doc["keep"] = exp.keep
    if exp.checkpoints:
        doc["checkpoints"] = [int(c) for c in exp.checkpoints]
    if exp.layout is not None:
        doc["layout"] = [int(x) for x in exp.layout]
    if exp.ratio_to is not None:
        doc["ratio_to"] = exp.ratio_to


def _describe_declarative(exp, cfg, head, overrides):
    from .core.values import PolicyValue, made_by

    built = exp.build(cfg)
    panels = built if isinstance(built, list) else None
    if panels is None:
        from .experiments.specs import Panel

        panels = [Panel("", *built)]
    doc = dict(head, horizon=exp.horizon, runs=exp.runs, seed=0)
    _common_keys(exp, doc)
    entries = []
    for i, p in enumerate(panels):
        where = ("panels", i) if len(panels) > 1 or p.name else ()
        e = {}
        if p.name:
            e["name"] = p.name
        for slot, obj in (("world", p.env), ("channel", p.channel)):
            if made_by(obj) is None:
                raise NotExpressible(f"experiment {exp.name!r}: {dotted(where + (slot,))} ({type(obj).__name__}) was "
                                     "not made by a constructor of the library's table or a function of your own "
                                     "package (decorated with jaxbandits.core.values.constructor), so it cannot be written "
                                     "as {kind = ...}")
            e[slot] = _encode(obj, where + (slot,))
        e["policies"] = {}
        for lab, pol in p.policies.items():
            if not isinstance(pol, PolicyValue):
                raise NotExpressible(f"experiment {exp.name!r}: policy {lab!r} is a {type(pol).__name__}, not a policy "
                                     "value: a Policy NamedTuple of closures cannot say its parameters; make its "
                                     "constructor a value with jaxbandits.core.values.policy_value (docs/composing.md)")
            e["policies"][lab] = _encode(pol, where + ("policies", lab))
        if p.log_lines:
            e["log_lines"] = {k: float(v) for k, v in p.log_lines.items()}
        entries.append(e)
    if len(entries) == 1 and "name" not in entries[0]:
        doc.update(entries[0])
    else:
        doc["panels"] = entries
    over = f" --set {' --set '.join(f'{k}={v!r}' for k, v in overrides.items())}" if overrides else ""
    comment = (f"{exp.name}: written by jaxbandits show {exp.name} --toml{over}.\n"
               f"Config: {json.dumps(_encode(cfg, ('config',)))}\n"
               "Every value below is the one the experiment's build passed to the constructor.")
    return doc, comment


def _ref_of(fn) -> Optional[str]:
    mod, qual = getattr(fn, "__module__", None), getattr(fn, "__qualname__", "")
    if not mod or "<" in qual:
        return None
    try:
        if _import_ref(f"{mod}:{qual}") is fn:
            return f"{mod}:{qual}"
    except ValueError:
        pass
    return None


def to_toml(exp, overrides: Optional[dict] = None) -> str:
    """The file of a registered experiment (see :func:`describe`)."""
    doc, comment = describe(exp, overrides)
    text = dumps(doc, comment)
    tomllib.loads(text)  # what we write, we can read
    return text


def settable_keys(doc: dict) -> List[Tuple[str, Any, str]]:
    """``[(dotted key, value, what it is)]`` of a declarative file: every value ``--set`` can change
    (kinds excepted: a different constructor is a different file)."""
    out = []

    def walk(path, x, what):
        if isinstance(x, dict) and x:
            for k, v in x.items():
                if k == "kind":
                    continue
                walk(path + (k,), v, f"parameter {k!r} of {x['kind']}" if "kind" in x else what)
        else:
            out.append((dotted(path), x, what))

    for k, v in doc.items():
        if k in ("world", "channel", "policies", "panels", "grid", "log_lines"):
            if k == "panels":
                for i, p in enumerate(v):
                    walk(("panels", i), {q: w for q, w in p.items() if q != "name"}, "")
            else:
                walk((k,), v, FILE_KEYS[k] if k in ("grid", "log_lines") else "")
        elif k not in ("config", "build", "runner", "name", "description"):
            out.append((k, v, FILE_KEYS.get(k, "")))
    return out


def show_file(exp, path, sets: Optional[dict] = None) -> str:
    """What ``jaxbandits show FILE.toml [--set ...]`` prints (``sets``: the [config] overrides of a
    build/runner file, the dotted keys of a declarative one)."""
    from .experiments.specs import show as show_exp

    if exp.runner is not None or exp.build is not _build_from_spec:
        return show_exp(exp, sets).rsplit("\n\n", 1)[0]
    doc, _ = read(path, sets)
    lines = [f"{exp.name}: {exp.description}", "", f"horizon {exp.horizon}, {exp.runs} runs", "",
             "settable keys (--set DOTTED.KEY=VALUE):"]
    rows = [(k, type(v).__name__ if not isinstance(v, list) else "list", _value(v) if not isinstance(v, dict)
             else "{...}", what) for k, v, what in settable_keys(doc)]
    w = [min(max(len(r[i]) for r in rows), 40) for i in range(3)]
    for r in [("key", "type", "value", "what")] + rows:
        lines.append("  " + "  ".join(c[:60].ljust(w[i]) for i, c in enumerate(r[:3])) + "  " + r[3])
    return "\n".join(lines)
