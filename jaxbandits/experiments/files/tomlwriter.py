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
    """An experiment (or one of its objects) that cannot be written as a file: the message says
    which object and why."""


_BARE = re.compile(r"[A-Za-z0-9_-]+")


def toml_key(k) -> str:
    """A key as TOML writes it: bare when it is made of letters, digits, ``_`` and ``-``, else quoted.

    Args:
        k: the key (converted with ``str``).

    Returns:
        The key's TOML text.

    Examples:
        >>> from jaxbandits.experiments.files import toml_key
        >>> toml_key("UCB1"), toml_key("KL-UCB"), toml_key("KL UCB")
        ('UCB1', 'KL-UCB', '"KL UCB"')
    """
    k = str(k)
    return k if _BARE.fullmatch(k) else _string(k)


def _string(s: str) -> str:
    return json.dumps(s, ensure_ascii=False).replace("\x7f", "\\u007f")


def toml_value(v) -> str:
    """A value as inline TOML: booleans, integers, floats (``nan``, ``inf``; always with a ``.``
    or an exponent, so they read back as floats), strings, arrays, and tables inline
    (``{key = value, ...}``).

    Args:
        v: the value: a bool, int, float, str, list or tuple, or a dict of such values.

    Returns:
        Its TOML text, one line.

    Raises:
        NotExpressible: a value of another type (None included: TOML has no null).

    Examples:
        >>> from jaxbandits.experiments.files import toml_value
        >>> toml_value({"kind": "delays.geometric", "mean": 50})
        '{kind = "delays.geometric", mean = 50}'
        >>> toml_value([1.0, 2.5e-07, float("inf"), True])
        '[1.0, 2.5e-07, inf, true]'
    """
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
    ``[[name]]`` per array of tables; ``{kind = ...}`` entries inline.

    Args:
        doc: the document: a dict of values :func:`toml_value` can write.
        comment: lines written first, each as a ``#`` comment (none if empty).

    Returns:
        The TOML text, ending with a newline.

    Raises:
        NotExpressible: a value TOML cannot hold.

    Examples:
        >>> from jaxbandits.experiments.files import dumps
        >>> print(dumps({"horizon": 100, "world": {"kind": "envs.bernoulli", "means": [0.5, 0.4]},
        ...              "policies": {"UCB1": {"kind": "classic.ucb1"}}}, comment="an example"), end="")
        # an example
        horizon = 100
        world = {kind = "envs.bernoulli", means = [0.5, 0.4]}
        <BLANKLINE>
        [policies]
        UCB1 = {kind = "classic.ucb1"}
    """
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
    """An array written as ``[[name]]`` tables: tables, none a {kind = ...} entry."""
    return isinstance(v, list) and bool(v) and all(isinstance(x, dict) and "kind" not in x for x in v)


def dotted(path) -> str:
    """A key path as a dotted key, as the messages and ``--set`` name it: keys joined by ``.``
    (each as :func:`toml_key` writes it), the index of an array as ``[i]``.

    Args:
        path: the keys and indices from the document's top, e.g. ``("panels", 1, "world")``.

    Returns:
        The dotted key (empty for an empty path).

    Examples:
        >>> from jaxbandits.experiments.files import dotted
        >>> dotted(("panels", 1, "policies", "KL UCB", "alpha"))
        'panels[1].policies."KL UCB".alpha'
    """
    out = ""
    for p in path:
        if isinstance(p, int):
            out += f"[{p}]"
        else:
            out += ("." if out else "") + toml_key(p)
    return out
