"""Internal: not public API (the modules that moved into the layer folders, and the import hook that
keeps their old paths working: docs/architecture.md, "Old import paths").

:data:`MOVED` is the one table ``old dotted path -> new dotted path``. A package maps its whole
subtree (``jaxbandits.serve.config`` is ``jaxbandits.apps.serve.config``). It is read three ways:

* :class:`Finder`, installed on ``sys.meta_path`` by ``jaxbandits/__init__.py``: ``import
  jaxbandits.delays`` (or an old pickle naming ``jaxbandits.delays.Geometric``, or ``python -m
  jaxbandits.cli``) gets the module object of the new path itself, never a second copy, so classes
  and ``isinstance`` are unchanged, with a ``DeprecationWarning`` naming the new path;
* ``jaxbandits.__getattr__``: ``jaxbandits.results`` and the other old names read as attributes;
* :func:`stable_module`, reversed: what the digests of policies and the fingerprints of
  checkpoints, split sweeps and parts write for a class's module is its path *before* the move, so
  every file written before loads (``jaxbandits.core.delays.Geometric`` is written
  ``jaxbandits.delays.Geometric``, as it always was).

Imports nothing of the package: it is installed before anything else is imported.
"""
from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
import warnings

#: old dotted path -> new dotted path (a package: its whole subtree). The one table: the import
#: hook reads it forwards, :func:`stable_module` backwards.
MOVED = {
    **{f"jaxbandits.{m}": f"jaxbandits.core.{m}" for m in
       ("types", "values", "mathlib", "ring", "delays", "profiles", "intervals")},
    # the internal helpers the modules share, public names since they are shared
    "jaxbandits._validate": "jaxbandits.core.validate", "jaxbandits._pytree": "jaxbandits.core.pytree",
    "jaxbandits._io": "jaxbandits.core.fileio", "jaxbandits._version": "jaxbandits.version",
    "jaxbandits.fused._registry": "jaxbandits.engine.fused.registry",
    "jaxbandits.simulate": "jaxbandits.engine",  # the module that re-exported the driver's simulate
    **{f"jaxbandits.{m}": f"jaxbandits.experiments.{m}" for m in ("parts", "sweeping", "distributed", "results")},
    **{f"jaxbandits.{m}": f"jaxbandits.report.{m}" for m in ("labels", "plotting", "compare", "sweeps")},
    "jaxbandits.cli": "jaxbandits.apps.cli",
    "jaxbandits.serve": "jaxbandits.apps.serve",
    "jaxbandits.dashboard": "jaxbandits.apps.dashboard",
    "jaxbandits.fused": "jaxbandits.engine.fused",  # the engine's second backend
    # the Bayesian delay models the policies use (components), out of the bayes package (statistics)
    **{f"jaxbandits.bayes.{m}": f"jaxbandits.delaymodels.{m}" for m in ("families", "model", "hierarchical", "logs", "warm")},
}

#: new dotted path -> old one, for the stable forms written to files. ``jaxbandits.engine`` is left
#: out: it did not move (``jaxbandits.simulate`` only re-exported it).
_BACK = {new: old for old, new in MOVED.items() if new != "jaxbandits.engine"}


def _longest(table, name):
    return max((k for k in table if name == k or name.startswith(k + ".")), key=len, default=None)


def new_path(name: str):
    """The new dotted path of an old one, or ``None`` where ``name`` did not move."""
    k = _longest(MOVED, name)
    return None if k is None else MOVED[k] + name[len(k):]


def stable_module(name: str) -> str:
    """The name a module had before the move (``jaxbandits.core.delays`` -> ``jaxbandits.delays``),
    what digests and fingerprints write, so that they do not change with the folders; any other
    name unchanged."""
    k = _longest(_BACK, name) if isinstance(name, str) else None
    return name if k is None else _BACK[k] + name[len(k):]


def _warn(old, new, stacklevel):
    warnings.warn(f"{old} moved to {new}: import {new} (the old path will be removed)", DeprecationWarning,
                  stacklevel=stacklevel + 1)


class _Alias(importlib.abc.Loader):
    """Loads an old path as the module object of its new path (one module, not a copy)."""

    def __init__(self, old: str, new: str):
        self.old, self.new = old, new
        self._spec = None

    def create_module(self, spec):
        module = importlib.import_module(self.new)
        self._spec = module.__spec__
        return module

    def exec_module(self, module):
        # the import system set ``module.__spec__`` to the old path's spec: give the module back its own
        module.__spec__ = self._spec
        _warn(self.old, self.new, 2)  # the import system's own frames are skipped: the importer's line

    def get_code(self, fullname):
        """What ``python -m <old path>`` runs: the new path as ``__main__``."""
        _warn(fullname, self.new, 2)
        return compile(f"import runpy\nrunpy.run_module({self.new!r}, run_name='__main__', alter_sys=True)\n",
                       f"<{fullname}: moved to {self.new}>", "exec")

    def is_package(self, fullname):
        return False


class Finder(importlib.abc.MetaPathFinder):
    """Finds the old paths of :data:`MOVED` (see the module docstring)."""

    def find_spec(self, fullname, path=None, target=None):
        if not fullname.startswith("jaxbandits."):
            return None
        new = new_path(fullname)
        if new is None or importlib.util.find_spec(new) is None:
            return None
        return importlib.util.spec_from_loader(fullname, _Alias(fullname, new))


def install() -> None:
    """Put :class:`Finder` first on ``sys.meta_path`` (once)."""
    if not any(isinstance(f, Finder) for f in sys.meta_path):
        sys.meta_path.insert(0, Finder())


def attribute(name: str, stacklevel: int = 1):
    """``jaxbandits.<old name>`` read as an attribute: the new module, with the warning (at
    ``stacklevel`` above the caller); raises ``AttributeError`` for any other name."""
    new = new_path(f"jaxbandits.{name}")
    if new is None or "." in name:
        raise AttributeError(f"module 'jaxbandits' has no attribute {name!r}")
    _warn(f"jaxbandits.{name}", new, stacklevel + 1)
    return importlib.import_module(new)
