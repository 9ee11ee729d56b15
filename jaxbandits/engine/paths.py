"""The execution path of a ``simulate`` call: the engine's scan or the fused GPU kernels
(:mod:`jaxbandits.engine.fused`; docs/fused.md), :data:`PATHS` and :func:`choose_path`.
"""
from __future__ import annotations

from typing import List, Optional

import jax

PATHS = ("auto", "fused", "scan")


def _fused_blockers(env, channel, policies, *, chunk, shard, resume) -> List[str]:
    from . import fused

    return fused.unsupported(env, channel, policies, chunk=chunk, shard=shard, resume=resume)


def choose_path(env, channel, policies, path: str = "auto", *, chunk=None, shard=None, resume=False,
                backend: Optional[str] = None) -> str:
    """``"fused"`` or ``"scan"``: the path ``simulate(..., path=path)`` takes for this combination.

    ``"auto"`` gives ``"fused"`` when ``backend`` (default: JAX's default backend) is ``"gpu"`` and
    the fused kernels cover the combination; ``"fused"`` on a combination they do not cover raises
    a ``ValueError`` naming everything that is not covered.

    Args:
        env: the world.
        channel: the channel.
        policies: a policy or a ``{label: policy}`` dict.
        path: ``"auto"``, ``"fused"`` or ``"scan"`` (:data:`PATHS`).
        chunk: as :func:`~jaxbandits.engine.driver.simulate`'s (a chunked run keeps the scan when the
            fused path cannot chunk).
        shard: as :func:`~jaxbandits.engine.driver.simulate`'s.
        resume: as :func:`~jaxbandits.engine.driver.simulate`'s (a resume keeps the scan).
        backend: the backend to decide for (None: JAX's default backend).

    Returns:
        ``"fused"`` or ``"scan"``.

    Raises:
        ValueError: ``path`` not one of :data:`PATHS`, or ``"fused"`` on a combination the fused
            kernels do not cover.

    Examples:
        >>> from jaxbandits import channels, envs
        >>> from jaxbandits.policies import classic
        >>> from jaxbandits.engine import choose_path
        >>> world = envs.bernoulli([0.3, 0.6])
        >>> choose_path(world, channels.attributed(), classic.ucb1(), "auto", backend="cpu")
        'scan'
    """
    if path not in PATHS:
        raise ValueError(f"path must be one of {', '.join(map(repr, PATHS))}, got {path!r}")
    if path == "scan":
        return "scan"
    if path == "fused":
        why = _fused_blockers(env, channel, policies, chunk=chunk, shard=shard, resume=resume)
        if why:
            raise ValueError("path='fused' cannot run this simulation: " + "; ".join(why)
                             + " (docs/fused.md lists what the fused path covers; path='auto' falls back to the scan)")
        return "fused"
    if backend is None:
        backend = jax.default_backend()
    if backend != "gpu":
        return "scan"
    try:
        why = _fused_blockers(env, channel, policies, chunk=chunk, shard=shard, resume=resume)
    except Exception:  # malformed arguments: the scan path's checks name them
        return "scan"
    return "scan" if why else "fused"
