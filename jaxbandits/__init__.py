"""jaxbandits: bandits under delayed, anonymous, censored and composite feedback, in JAX.

Public API: ``delays``, ``envs``, ``channels``, ``policies``, ``simulate``, ``simulate_grid``,
``experiments``, ``Results``.

The package's folders are its layers (docs/architecture.md): ``core/`` <- ``envs/``, ``channels/``,
``policies/``, ``delaymodels/`` <- ``engine/`` (with the fused backend, ``engine/fused/``) <-
``experiments/`` <- ``report/`` <- ``apps/``. The modules that moved into them keep their old
import paths (``import jaxbandits.results``, ``jaxbandits.types``, ``jaxbandits.cli``, ...) through
:mod:`jaxbandits.moved`, with a ``DeprecationWarning`` naming the new path.

Internal, not public API (each says so in its docstring; docs/api/internal.md): ``jaxbandits.core.fileio``,
``jaxbandits.core.validate``, ``jaxbandits.core.pytree``, ``jaxbandits.version``, ``jaxbandits.moved``,
``jaxbandits.engine.fused.registry`` and the fused backend's ``jaxbandits.engine.fused.kernels``, ``.lanes``, ``.rng`` and
``.lowering``.
"""
import sys as _sys
import types as _types

from . import moved
from .version import __version__  # noqa: E402

moved.install()  # before anything else: old import paths (and old pickles naming them) keep working

from . import channels, engine, envs, policies  # noqa: E402
from .core import delays, mathlib, ring  # noqa: E402
from .core.types import ANY, NEVER, Arrivals, Context, Feedback, Needs, Outcome, Policy, ProblemSpec  # noqa: E402
from .engine import record_points, simulate, simulate_grid  # noqa: E402
from .envs.base import World  # noqa: E402
from .experiments.results import Results  # noqa: E402
from . import experiments  # noqa: E402  (a table of named experiments; imports none of them)
from .experiments import results as _results  # noqa: E402


def _results_figures(results):
    from .report.plotting import results_figures  # the report layer, imported when a figure is drawn

    return results_figures(results)


# The composition root: results (the experiments layer) draw their figures with the report layer's
# plots, given here rather than imported upwards (docs/architecture.md).
_results.FIGURES = _results_figures


def __getattr__(name):
    """``jaxbandits.results``, ``jaxbandits.types``, ...: the old names of moved modules, with a
    ``DeprecationWarning`` naming the new path (:mod:`jaxbandits.moved`)."""
    return moved.attribute(name, stacklevel=2)


class _Package(_types.ModuleType):
    """The package's module type: ``import jaxbandits.simulate`` (an old path, now
    ``jaxbandits.engine``) makes the import system set the attribute ``simulate`` to the module it
    loaded; the public function ``jaxbandits.simulate`` is kept."""

    def __setattr__(self, name, value):
        if name == "simulate" and isinstance(value, _types.ModuleType):
            return
        super().__setattr__(name, value)


_sys.modules[__name__].__class__ = _Package

__all__ = ["channels", "delays", "engine", "envs", "mathlib", "policies", "ring", "simulate", "simulate_grid",
           "record_points", "experiments", "Results", "NEVER", "ANY", "Arrivals", "Context", "Feedback", "Needs",
           "Outcome", "Policy", "ProblemSpec", "World", "__version__"]
