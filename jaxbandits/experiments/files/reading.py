"""Reading an experiment file: :func:`read` parses it with ``tomllib``, applies the ``--set``
overrides (:func:`parse_sets`) and checks it against the schema
(:func:`~jaxbandits.experiments.files.schema.check`), collecting every problem with its line."""
from __future__ import annotations

import os
import tomllib
from typing import Optional, Tuple

from .scanner import key_lines, toml_error
from .schema import FILE_KEYS, FileContext, FileError, check, get_path
from .tomlwriter import dotted


def _apply_sets(doc: dict, sets: dict, ctx: FileContext) -> dict:
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
            parent = get_path(doc, path[:-1])
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
    ``--set`` on a file: ``world.delay.mean=20``, ``policies.UCB1.alpha=1.5``, ``horizon=500``.

    Args:
        items: the ``--set`` arguments, each ``"dotted.key=value"`` (None: none).

    Returns:
        ``{dotted key: value}``, each value read as a Python literal where it is one
        (:func:`ast.literal_eval`), else kept as the string written.

    Raises:
        ValueError: an item without ``=``, or a key with an empty part.

    Examples:
        >>> from jaxbandits.experiments.files import parse_sets
        >>> parse_sets(["world.delay.mean=20", "policies.UCB1.alpha=1.5", "name=run 2"])
        {'world.delay.mean': 20, 'policies.UCB1.alpha': 1.5, 'name': 'run 2'}
    """
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


def read(path: str, sets: Optional[dict] = None) -> Tuple[dict, FileContext]:
    """Read and check a file (``sets``: ``--set`` overrides of its dotted keys). Raises
    :class:`~jaxbandits.experiments.files.schema.FileError` naming the file, the line and the key of
    every problem.

    Args:
        path: the experiment file (TOML, UTF-8).
        sets: ``--set`` overrides, ``{dotted key: value}`` (:func:`parse_sets`): a key of the file,
            or a new parameter of a ``{kind = ...}`` entry; for a build or runner file, a key of
            its ``[config]``.

    Returns:
        ``(document, context)``: the file as a dict, overrides applied and checked, and the
        :class:`~jaxbandits.experiments.files.schema.FileContext` that locates its keys.

    Raises:
        FileError: the file cannot be read, is not UTF-8 or not TOML, an override names no key, or
            the document breaks the schema (every problem in one message).

    Examples:
        >>> import pathlib, tempfile
        >>> from jaxbandits.experiments.files import read
        >>> path = pathlib.Path(tempfile.mkdtemp()) / "e.toml"
        >>> _ = path.write_text('horizon = 100\\nworld = {kind = "envs.bernoulli", means = [0.5, 0.4]}\\n'
        ...                 'channel = {kind = "channels.attributed"}\\n[policies]\\n'
        ...                 'UCB1 = {kind = "classic.ucb1", alpha = 9.0}\\n')
        >>> doc, ctx = read(path, {"policies.UCB1.alpha": 2.0})
        >>> doc["policies"], ctx.lines[("policies", "UCB1")]
        ({'UCB1': {'kind': 'classic.ucb1', 'alpha': 2.0}}, 5)
    """
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
    ctx = FileContext(path, key_lines(text), sets=tuple(tuple(int(p) if p.isdigit() else p for p in k.split("."))
                                                 for k in (sets or {})))
    if sets:
        doc = _apply_sets(doc, sets, ctx)
    check(doc, ctx)
    ctx.raise_if_any()
    return doc, ctx
