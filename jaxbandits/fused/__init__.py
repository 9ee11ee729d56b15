"""The fused GPU path: whole experiments in one Pallas kernel per policy (docs/fused.md).

A kernel instance owns a block of runs, keeps their arm statistics for the whole horizon, loops
over the rounds inside the kernel, draws its random numbers in-kernel from a counter-based
generator (threefry-2x32 keyed by the run's conventions §8 keys and counted by round and stream)
and writes only the record points. :func:`jaxbandits.simulate` chooses it with ``path="auto"``
on a GPU when :func:`unsupported` finds nothing to refuse.

Importing this package is light: Pallas is imported only when a kernel is built.
"""
from __future__ import annotations

from ._registry import FusedSpec, spec_of

__all__ = ["FusedSpec", "spec_of", "unsupported", "simulate_fused", "SUPPORTED"]


def unsupported(*args, **kwargs):
    """Reasons the combination cannot run fused (empty: it can); see :mod:`jaxbandits.fused.path`."""
    from .path import unsupported as f

    return f(*args, **kwargs)


def simulate_fused(*args, **kwargs):
    """Run a supported combination on the fused path; see :mod:`jaxbandits.fused.path`."""
    from .path import simulate_fused as f

    return f(*args, **kwargs)


#: The combinations the fused kernels implement (docs/fused.md).
SUPPORTED = {
    "attributed channel, Bernoulli world, no delay": ("UCB1", "KL-UCB", "Thompson", "Gaussian-TS", "random"),
    "conversions channel with a window m >= 1, conversions world, closed-form delay law "
    "(fixed, uniform, geometric, exponential, weibull, log_normal, pareto)":
        ("UCB1", "KL-UCB", "Thompson", "Gaussian-TS", "random", "d-ucb", "d-klucb"),
}
