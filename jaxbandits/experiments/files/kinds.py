"""What a ``kind`` of an experiment file names: the short table of the library's constructor
modules (:data:`KINDS`), the resolution of a ``kind`` to its constructor, and the check of an
entry's parameters against that constructor's signature (unknown names, missing required ones)
before anything is called."""
from __future__ import annotations

import difflib
import importlib
import inspect
from typing import Any, Dict, List, Tuple

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


def import_ref(ref: str):
    """The object a reference ``package.module:attribute.path`` names (a file's ``build``,
    ``runner`` and ``package.module:function`` kinds).

    Args:
        ref: ``"package.module:attribute"``, the attribute possibly dotted (``"module:Class.method"``).

    Returns:
        The object, imported.

    Raises:
        ValueError: ``ref`` is not of that form, its module cannot be imported (its syntax error or
            the exception its import raised, with file and line), or it has no such attribute.

    Examples:
        >>> from jaxbandits.experiments.files import import_ref
        >>> import_ref("math:sqrt")(4.0)
        2.0
    """
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
    ``package.module:function``.

    Args:
        kind: a non-empty string: ``PREFIX.function`` with ``PREFIX`` a key of :data:`KINDS` (or a
            policy family spelled with its package, ``policies.classic.kl_ucb``), or
            ``"package.module:function"``.

    Returns:
        The function (a public function of the module, or the one the reference names).

    Raises:
        ValueError: not a string, an unknown prefix, a name the module does not export as a public
            function (with the closest names), or a reference that names no function.

    Examples:
        >>> from jaxbandits.experiments.files import resolve_kind
        >>> resolve_kind("classic.ucb1").__name__
        'ucb1'
        >>> resolve_kind("delays.geometrc")
        Traceback (most recent call last):
        ...
        ValueError: unknown kind 'delays.geometrc': jaxbandits.core.delays has no public function 'geometrc' ...
    """
    if not isinstance(kind, str) or not kind:
        raise ValueError(f"kind must be a string such as \"classic.ucb1\" or \"package.module:function\", got {kind!r}")
    if ":" in kind:
        fn = import_ref(kind)
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


def signature(fn):
    """``fn``'s signature, or None where Python cannot read one (some builtins).

    Args:
        fn: a callable.

    Returns:
        An ``inspect.Signature``, or None.

    Examples:
        >>> from jaxbandits.experiments.files import signature
        >>> str(signature(lambda mean, n=2: None))
        '(mean, n=2)'
    """
    try:
        return inspect.signature(fn)
    except (TypeError, ValueError):
        return None


def check_params(kind, fn, params: dict) -> List[Tuple[str, str]]:
    """Problems of ``params`` against ``fn``'s signature: parameters it does not take (with the
    closest name and the list of those it takes) and required ones missing. A function that takes
    ``**kwargs`` or has no readable signature takes anything.

    Args:
        kind: the kind as written in the file, for the messages.
        fn: the constructor it names (:func:`resolve_kind`).
        params: the entry's parameters, ``{name: value}`` (the values are not looked at).

    Returns:
        ``[(parameter or "", message)]``, empty when the parameters fit.

    Examples:
        >>> from jaxbandits.experiments.files import check_params, resolve_kind
        >>> check_params("classic.ucb1", resolve_kind("classic.ucb1"), {"alpah": 2.0})[0][0]
        'alpah'
        >>> check_params("classic.ucb1", resolve_kind("classic.ucb1"), {"alpha": 2.0})
        []
    """
    sig = signature(fn)
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
