"""jaxbandits: bandits under delayed, anonymous, censored and composite feedback, in JAX.

Public API: ``delays``, ``envs``, ``channels``, ``policies``, ``simulate``, ``simulate_grid``,
``experiments``, ``Results``.

Internal, not public API (each says so in its docstring; docs/api/internal.md): ``jaxbandits._io``,
``jaxbandits._validate``, ``jaxbandits._pytree``, ``jaxbandits._version``, ``jaxbandits.fused._registry`` and the fused
backend's ``jaxbandits.fused.kernels``, ``.lanes``, ``.rng`` and ``.lowering``.
"""
from ._version import __version__  # noqa: E402

from . import channels, delays, engine, envs, mathlib, policies, ring  # noqa: E402
from .envs.base import World  # noqa: E402
from .results import Results  # noqa: E402
from .simulate import record_points, simulate, simulate_grid  # noqa: E402
from .types import ANY, NEVER, Arrivals, Context, Feedback, Needs, Outcome, Policy, ProblemSpec  # noqa: E402
from . import experiments  # noqa: E402  (a table of named experiments; imports none of them)
from . import results as _results  # noqa: E402


def _results_figures(results):
    from .plotting import results_figures  # the report layer, imported when a figure is drawn

    return results_figures(results)


# The composition root: results (the experiments layer) draw their figures with the report layer's
# plots, given here rather than imported upwards (docs/architecture.md).
_results.FIGURES = _results_figures

__all__ = ["channels", "delays", "engine", "envs", "mathlib", "policies", "ring", "simulate", "simulate_grid",
           "record_points", "experiments", "Results", "NEVER", "ANY", "Arrivals", "Context", "Feedback", "Needs",
           "Outcome", "Policy", "ProblemSpec", "World", "__version__"]
