"""The fused GPU path: whole experiments in one Pallas kernel per policy (docs/fused.md).

A kernel instance owns a block of runs, keeps their arm statistics for the whole horizon, loops
over the rounds inside the kernel, draws its random numbers in-kernel from a counter-based
generator (threefry-2x32 keyed by the run's conventions §8 keys and counted by round and stream)
and writes only the record points. :func:`jaxbandits.simulate` chooses it with ``path="auto"``
on a GPU when :func:`unsupported` finds nothing to refuse.

Importing this package is light: Pallas is imported only when a kernel is built.
"""
from __future__ import annotations

from .registry import FusedSpec, spec_of

__all__ = ["FusedSpec", "spec_of", "unsupported", "simulate_fused", "SUPPORTED"]


def unsupported(*args, **kwargs):
    """Everything that keeps a simulation off the fused path, as sentences (empty: it can run fused).

    :func:`jaxbandits.simulate` with ``path="auto"`` runs fused on a GPU exactly when this list is
    empty; ``path="fused"`` raises with these sentences. Implemented in
    :func:`jaxbandits.engine.fused.path.unsupported` (imported on first call).

    Args:
        *args: ``(env, channel, policies)``: the world, the channel, and one policy or a dict of
            named policies, as given to :func:`jaxbandits.simulate`.
        **kwargs: ``chunk``, ``shard``, ``resume``, ``grid``: the other settings of the run that
            the fused path does not cover.

    Returns:
        A list of strings, one reason each.

    Examples:
        >>> from jaxbandits import channels, envs
        >>> from jaxbandits.engine import fused
        >>> from jaxbandits.policies import adversarial, classic
        >>> world = envs.bernoulli([0.1, 0.5])
        >>> fused.unsupported(world, channels.attributed(), classic.ucb1())
        []
        >>> fused.unsupported(world, channels.attributed(), {"dew": adversarial.dew(0.1)})
        ["policy 'dew' (DEW) has no fused kernel (covered: ...)"]
    """
    from .path import unsupported as f

    return f(*args, **kwargs)


def simulate_fused(*args, **kwargs):
    """Run a covered simulation on the fused kernels.

    Most users call :func:`jaxbandits.simulate`, which picks this path on a GPU. Nothing is
    checked here: :func:`jaxbandits.simulate` (``path="fused"``) checks the inputs and refuses a
    combination :func:`unsupported` names; call this directly only with one it accepts.
    Implemented in :func:`jaxbandits.engine.fused.path.simulate_fused` (Pallas is imported on first
    call).

    Args:
        *args: ``(env, channel, policies, horizon, key, n_runs)`` as for :func:`jaxbandits.simulate`.
        **kwargs: ``record``, ``first_run``, ``delayed_regret``, ``keep``, ``stats_block`` as for
            :func:`jaxbandits.simulate`; ``interpret`` (default: not on a GPU) runs the kernels
            through Pallas' interpreter; ``block``, the runs per program (default 128 on a GPU, 32
            interpreted); ``replay`` (tests), three ``[n_runs, horizon]`` arrays of uniforms to use
            instead of the kernels' own generator.

    Returns:
        A ``SimOutput``, or a dict of them by policy name when ``policies`` is a dict.

    Examples:
        >>> import jax
        >>> from jaxbandits import channels, envs
        >>> from jaxbandits.engine import fused
        >>> from jaxbandits.policies import classic
        >>> out = fused.simulate_fused(envs.bernoulli([0.1, 0.5]), channels.attributed(), classic.ucb1(),
        ...                            1000, jax.random.key(0), 64)  # doctest: +SKIP
    """
    from .path import simulate_fused as f

    return f(*args, **kwargs)


#: The combinations the fused kernels implement (docs/fused.md).
SUPPORTED = {
    "attributed channel, Bernoulli world, no delay": ("UCB1", "KL-UCB", "Thompson", "Gaussian-TS", "random"),
    "conversions channel with a window m >= 1, conversions world, closed-form delay law "
    "(fixed, uniform, geometric, exponential, weibull, log_normal, pareto)":
        ("UCB1", "KL-UCB", "Thompson", "Gaussian-TS", "random", "d-ucb", "d-klucb"),
}
