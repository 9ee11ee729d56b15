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
    "delays": "jaxbandits.delays",
    "envs": "jaxbandits.envs",
    "channels": "jaxbandits.channels",
    "profiles": "jaxbandits.profiles",
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

# ----------------------------------------------------------------------------- kinds
def import_ref(ref: str):
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
    try:
        return inspect.signature(fn)
    except (TypeError, ValueError):
        return None


def check_params(kind, fn, params: dict) -> List[Tuple[str, str]]:
    """Problems of ``params`` against ``fn``'s signature: ``[(parameter or "", message)]``."""
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
