"""The schema of an experiment file: its keys (:data:`FILE_KEYS`), the check of a parsed document
against them (:func:`check`: every key known and of its type and range, one form, every ``kind``
and its parameters known), and the errors, which name the file, the line and the key
(:class:`FileError`, collected by a :class:`FileContext`).

The schema is a small table and plain checks rather than a validation library (pydantic,
jsonschema): the ranges are the library's own (``jaxbandits.core.validate``, the same as for ``--set``
and the Python API), a constructor's parameters are checked against its own signature
(:mod:`~jaxbandits.experiments.files.kinds`), and each error needs the key's line
(:mod:`~jaxbandits.experiments.files.scanner`)."""
from __future__ import annotations

import dataclasses
import difflib
import math
from typing import Dict, List

from ...core import validate as V
from .kinds import check_params, import_ref, resolve_kind
from .scanner import line_of
from .tomlwriter import dotted

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
#: The keys of a ``[[panels]]`` entry.
PANEL_KEYS = ("name", "world", "channel", "policies", "log_lines")
_METRICS = ("regret", "expected_regret", "delayed_regret", "fixed_regret")


class FileError(ValueError):
    """A bad experiment file: names the file, the line and the key."""


@dataclasses.dataclass
class FileContext:
    """Where a file's problems are, and the problems found: what every error message names.

    Attributes:
        file: the file's path as given (or a placeholder such as ``"<experiment file>"``).
        lines: the line of every key (:func:`~jaxbandits.experiments.files.scanner.key_lines`).
        errors: the problems collected so far, ``[(key path, message)]``.
        sets: the key paths given by ``--set`` (their messages say so).

    Examples:
        >>> from jaxbandits.experiments.files import FileContext, key_lines
        >>> ctx = FileContext("e.toml", key_lines("horizon = 0\\n"))
        >>> ctx.where(("horizon",))
        'e.toml, line 1, key horizon'
    """

    file: str
    lines: Dict[tuple, int]
    errors: List[tuple] = dataclasses.field(default_factory=list)
    sets: tuple = ()  # dotted keys given by --set

    def where(self, path, file=True) -> str:
        """``"FILE, line N, key K"`` of a key path (the line of its longest prefix that has one)."""
        path = tuple(path)
        given = [k for k in self.sets if path and (path[:len(k)] == k or k[:len(path)] == path)]
        n = line_of(self.lines, path)
        at = [self.file] if file else []
        at += [f"line {n}"] if n else []
        at += [f"key {dotted(path)}"] if path else []
        return ", ".join(at) + (" (given by --set)" if given else "")

    def err(self, path, msg):
        """Record a problem of the key at ``path``."""
        self.errors.append((tuple(path), msg))

    def raise_if_any(self):
        """Raise a :class:`FileError` naming every problem recorded, if any."""
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
            if k not in PANEL_KEYS:
                ctx.err(path + (k,), f"unknown key {k!r} in a panel; a panel has {', '.join(PANEL_KEYS)}")


def get_path(doc, path):
    """The value at a key path of a document.

    Args:
        doc: the document (nested dicts and lists).
        path: its keys and indices, e.g. ``("panels", 0, "world")``.

    Returns:
        The value there.

    Raises:
        KeyError: a key of the path is not there (IndexError, TypeError: an index out of range, or a
            step into a value that is not a table or an array).

    Examples:
        >>> from jaxbandits.experiments.files import get_path
        >>> get_path({"panels": [{"world": {"mean": 2.0}}]}, ("panels", 0, "world", "mean"))
        2.0
    """
    x = doc
    for p in path:
        x = x[p]
    return x


def check(doc: dict, ctx: FileContext) -> None:
    """The schema: every key known and of its type and range; one form (world/channel/policies,
    panels, build or runner); every kind and its parameters known. Collects every problem.

    Args:
        doc: the parsed file (``tomllib``'s dict, ``--set`` applied).
        ctx: where its keys are; the problems are recorded in it (``ctx.errors``), not raised
            (:meth:`FileContext.raise_if_any` raises them).

    Returns:
        None.

    Examples:
        >>> from jaxbandits.experiments.files import FileContext, check
        >>> ctx = FileContext("e.toml", {("horizon",): 1})
        >>> check({"horizon": 0, "build": "math:sqrt"}, ctx)
        >>> ctx.errors
        [(('horizon',), 'must lie in [1, 16777216], got 0')]
    """
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
                    if not callable(import_ref(doc[k])):
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
                        parent = get_path(p, target[:-1])
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
