"""jaxbandits: bandits under delayed, anonymous, censored and composite feedback, in JAX.

Public API: ``delays``, ``envs``, ``channels``, ``policies``, ``simulate``, ``simulate_grid``,
``experiments``, ``Results``.
"""
__version__ = "0.1.0"

from . import channels, delays, envs, mathlib, policies  # noqa: E402
from .results import Results  # noqa: E402
from .simulate import record_points, simulate, simulate_grid  # noqa: E402
from .types import NEVER, Arrivals, Context, Policy, ProblemSpec  # noqa: E402
from . import experiments  # noqa: E402  (a table of named experiments; imports none of them)

__all__ = ["channels", "delays", "envs", "mathlib", "policies", "simulate", "simulate_grid",
           "record_points", "experiments", "Results", "NEVER", "Arrivals", "Context", "Policy",
           "ProblemSpec", "__version__"]
