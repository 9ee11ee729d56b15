"""A registered experiment written as a file (``jaxbandits show NAME --toml``).

:func:`describe` writes a registered experiment in the declarative form: it runs the experiment's
build and writes each world, channel and policy of the built panels from the value itself. A
library policy is a value whose fields are its constructor's arguments
(:class:`~jaxbandits.core.values.PolicyValue`); a world, channel, delay law or profile carries the
:class:`~jaxbandits.core.values.Made` record of the public constructor that returned it (declared with
:func:`~jaxbandits.core.values.constructor`: the function and its arguments as given), read with
:func:`~jaxbandits.core.values.made_by`; its ``kind`` is the name under which a module of
:data:`~jaxbandits.experiments.files.kinds.KINDS` exports that function. Arguments that are
themselves such values become nested entries. Nothing is recorded from the interpreter, so running
the written file builds the same objects and gives the same numbers (a test checks this for every
registered experiment). A sweep (``runner``) has no panels to describe: it is written as a
reference to its function with its config. :func:`to_toml` is the text
(:func:`~jaxbandits.experiments.files.tomlwriter.dumps`)."""
from __future__ import annotations

import importlib
import inspect
import json
import tomllib
from typing import Optional, Tuple

import numpy as np

from .kinds import KINDS, import_ref, resolve_kind, signature
from .tomlwriter import NotExpressible, dotted, dumps


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
    from ...core.values import PolicyValue, made_by

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
    sig = signature(fn)
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
    Raises :class:`~jaxbandits.experiments.files.tomlwriter.NotExpressible` (saying why) when
    neither can be written.

    Args:
        exp: a registered :class:`~jaxbandits.experiments.Experiment`.
        overrides: ``--set`` overrides of its config (checked as for a run).

    Returns:
        ``(document, comment)``: the file as a dict (written with
        :func:`~jaxbandits.experiments.files.tomlwriter.dumps`), and the comment at its top
        (how it was written, the config).

    Raises:
        NotExpressible: an object of the build is not a constructor call of the table and the
            build is not a module-level function, or a sweep's runner is not one.

    Examples:
        >>> from jaxbandits.experiments import get
        >>> from jaxbandits.experiments.files import describe
        >>> doc, comment = describe(get("quickstart"))
        >>> doc["world"]["kind"], doc["policies"]["UCB1"]
        ('envs.conversions', {'kind': 'classic.ucb1'})
    """
    from ..specs import resolve_config

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
    from ...core.values import PolicyValue, made_by

    built = exp.build(cfg)
    panels = built if isinstance(built, list) else None
    if panels is None:
        from ..specs import Panel

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
        if import_ref(f"{mod}:{qual}") is fn:
            return f"{mod}:{qual}"
    except ValueError:
        pass
    return None


def to_toml(exp, overrides: Optional[dict] = None) -> str:
    """The file of a registered experiment (see :func:`describe`): what
    ``jaxbandits show NAME --toml`` writes. The text is read back with ``tomllib`` before it is
    returned.

    Args:
        exp: a registered :class:`~jaxbandits.experiments.Experiment`.
        overrides: ``--set`` overrides of its config.

    Returns:
        The TOML text; run as a file, it builds the same objects as the experiment.

    Raises:
        NotExpressible: as :func:`describe`.

    Examples:
        >>> from jaxbandits.experiments import get
        >>> from jaxbandits.experiments.files import to_toml
        >>> print(to_toml(get("quickstart")).splitlines()[8])
        world = {kind = "envs.conversions", theta = [0.5, 0.4, 0.3, 0.2], delay = {kind = "delays.geometric", mean = 50.0}}
    """
    doc, comment = describe(exp, overrides)
    text = dumps(doc, comment)
    tomllib.loads(text)  # what we write, we can read
    return text
