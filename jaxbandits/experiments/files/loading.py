"""An experiment file as an :class:`~jaxbandits.experiments.Experiment`: :func:`experiment` reads
and checks the file, then builds every world, channel and policy of a declarative file once on the
host (:func:`build_panels`: ``{kind = ...}`` tables are constructor calls, innermost first), so
every constructor's own check has run, naming the file's key and line, before anything compiles.
What ``jaxbandits show FILE.toml`` prints (:func:`show_file`, :func:`settable_keys`) is here too."""
from __future__ import annotations

import itertools
import json
import os
import re
from typing import Any, List, Optional, Tuple

import numpy as np

from .kinds import import_ref, resolve_kind
from .reading import read
from .schema import FILE_KEYS, PANEL_KEYS, FileContext, FileError, get_path
from .tomlwriter import toml_value


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

    base = doc["panels"] if "panels" in doc else [{k: doc[k] for k in PANEL_KEYS if k in doc}]
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
                get_path(q, target[:-1])[target[-1]] = v
            label = ", ".join(f"{k}={toml_value(v)}" for k, v in zip(keys, combo))
            q["name"] = f"{p['name']}: {label}" if p.get("name") else label
            out.append((path, q))
    return out


def build_panels(doc: dict, ctx: Optional[FileContext] = None) -> list:
    """The panels of a declarative file: every world, channel and policy built (on the host, no
    compilation); an object of the wrong sort is an error naming its key and line.

    Args:
        doc: the declarative part of a checked file (``world``, ``channel``, ``policies``,
            ``log_lines``, or ``panels``; and ``grid``): ``{kind = ...}`` tables are constructor
            calls, innermost first.
        ctx: where the file's keys are, for the messages (default: none known).

    Returns:
        A list of :class:`~jaxbandits.experiments.Panel`, one per panel and grid point (a grid
        point's panel named by its values).

    Raises:
        FileError: a constructor refused its arguments (the message names the key and its line),
            a call returned no world, channel or policy, a grid value is repeated, or two panels
            of the same name share a policy label.

    Examples:
        >>> from jaxbandits.experiments.files import build_panels
        >>> [p] = build_panels({"world": {"kind": "envs.bernoulli", "means": [0.5, 0.4]},
        ...                     "channel": {"kind": "channels.attributed"},
        ...                     "policies": {"UCB1": {"kind": "classic.ucb1"}}})
        >>> p.env.n_arms, list(p.policies)
        (2, ['UCB1'])
    """
    from ...channels import Channel
    from ...envs.base import World
    from ...core.values import is_policy
    from ..specs import Panel

    ctx = ctx or FileContext("<experiment file>", {})
    panels = []
    for k, vals in (doc.get("grid") or {}).items():
        seen = [json.dumps(v, sort_keys=True) for v in vals] if isinstance(vals, list) else []
        twice = [v for i, v in enumerate(vals) if seen[i] in seen[:i]] if seen else []
        if twice:
            raise FileError(f"{ctx.where(('grid', k))}: the value {toml_value(twice[0])} is given twice: each grid point "
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
    and runner files).

    Args:
        path: the experiment file.
        sets: ``--set`` overrides, ``{dotted key: value}``
            (:func:`~jaxbandits.experiments.files.reading.parse_sets`).
        doc_ctx: the file already read and checked, ``(document, context)`` as
            :func:`~jaxbandits.experiments.files.reading.read` returns it (it is not read again).

    Returns:
        The :class:`~jaxbandits.experiments.Experiment`: named by the file's ``name`` (else its
        stem), with the file (and the overrides) as its source.

    Raises:
        FileError: any problem of the file, or a constructor's refusal, naming the key and its
            line.

    Examples:
        >>> import pathlib, tempfile
        >>> path = pathlib.Path(tempfile.mkdtemp()) / "e.toml"
        >>> _ = path.write_text('horizon = 100\\nworld = {kind = "envs.bernoulli", means = [0.5, 0.4]}\\n'
        ...                 'channel = {kind = "channels.attributed"}\\n[policies]\\n'
        ...                 'UCB1 = {kind = "classic.ucb1", alpha = 2.0}\\n')
        >>> from jaxbandits.experiments.files import experiment
        >>> exp = experiment(path, {"horizon": 50})
        >>> exp.name, exp.horizon, exp.runs
        ('e', 50, 100)
    """
    from ..specs import Experiment

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
        return Experiment(name, desc, None, dict(doc.get("config", {})), horizon=1, runner=import_ref(doc["runner"]),
                          **common)
    if "build" in doc:
        return Experiment(name, desc, import_ref(doc["build"]), dict(doc.get("config", {})),
                          horizon=doc["horizon"], **common)
    spec = _spec_of(doc)
    build_panels(spec, ctx)  # every constructor's own checks, with the file's lines
    return Experiment(name, desc, _build_from_spec, {"spec": spec}, horizon=doc["horizon"], **common)


def settable_keys(doc: dict) -> List[Tuple[str, Any, str]]:
    """``[(dotted key, value, what it is)]`` of a declarative file: every value ``--set`` can change
    (kinds excepted: a different constructor is a different file), each key in the form ``--set``
    takes (a list's entry by its index: ``panels.1.channel.window``).

    Args:
        doc: a read file (:func:`~jaxbandits.experiments.files.reading.read`).

    Returns:
        ``[(dotted key, value, what it is)]``, in the file's order.

    Examples:
        >>> from jaxbandits.experiments.files import settable_keys
        >>> settable_keys({"horizon": 100, "world": {"kind": "envs.bernoulli", "means": [0.5, 0.4]}})[1]
        ('world.means', [0.5, 0.4], "parameter 'means' of envs.bernoulli")
    """
    out = []

    def walk(path, x, what):
        if isinstance(x, dict) and x:
            for k, v in x.items():
                if k == "kind":
                    continue
                walk(path + (k,), v, f"parameter {k!r} of {x['kind']}" if "kind" in x else what)
        else:
            out.append((".".join(str(p) for p in path), x, what))  # the form --set takes: panels.0.world

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
    build/runner file, the dotted keys of a declarative one).

    Args:
        exp: the file's experiment (:func:`experiment`).
        path: the file.
        sets: the overrides it was read with.

    Returns:
        The text: the name and description, horizon and runs, and a table of the settable keys
        (:func:`settable_keys`) with their types and values; for a build or runner file, what
        :func:`~jaxbandits.experiments.show` says of its config.

    Examples:
        >>> import pathlib, tempfile
        >>> path = pathlib.Path(tempfile.mkdtemp()) / "e.toml"
        >>> _ = path.write_text('horizon = 100\\nworld = {kind = "envs.bernoulli", means = [0.5, 0.4]}\\n'
        ...                 'channel = {kind = "channels.attributed"}\\n[policies]\\n'
        ...                 'UCB1 = {kind = "classic.ucb1", alpha = 2.0}\\n')
        >>> from jaxbandits.experiments.files import experiment, show_file
        >>> print(show_file(experiment(path), path).splitlines()[-1])
          policies.UCB1.alpha  float  2.0    parameter 'alpha' of classic.ucb1
    """
    from ..specs import show as show_exp

    if exp.runner is not None or exp.build is not _build_from_spec:
        return show_exp(exp, sets).rsplit("\n\n", 1)[0]
    doc, _ = read(path, sets)
    lines = [f"{exp.name}: {exp.description}", "", f"horizon {exp.horizon}, {exp.runs} runs", "",
             "settable keys (--set DOTTED.KEY=VALUE):"]
    rows = [(k, type(v).__name__ if not isinstance(v, list) else "list", toml_value(v) if not isinstance(v, dict)
             else "{...}", what) for k, v, what in settable_keys(doc)]
    w = [min(max(len(r[i]) for r in rows), 40) for i in range(3)]
    for r in [("key", "type", "value", "what")] + rows:
        lines.append("  " + "  ".join(c[:60].ljust(w[i]) for i, c in enumerate(r[:3])) + "  " + r[3])
    return "\n".join(lines)
