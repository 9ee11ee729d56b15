"""Internal: not public API (:class:`FusedSpec` and :func:`spec_of` are public as
``jaxbandits.engine.fused.FusedSpec`` and ``jaxbandits.engine.fused.spec_of``).

What the fused path needs to know about a policy: its algorithm and parameters.

A library policy is a value (:class:`~jaxbandits.core.values.PolicyValue`) whose class declares the
fused kernel that implements it, if any (``fused = (kind, field names)``: UCB1, KL-UCB,
Beta-Bernoulli and Gaussian Thompson, uniform random, DelayedUCB, DelayedKLUCB); the parameters are
read from its fields. Any other policy (a user's own, a wrapper, another algorithm) runs on the
scan path. This module imports nothing heavy.
"""
from __future__ import annotations

from typing import NamedTuple, Optional

from ...core.values import PolicyValue

__all__ = ["FusedSpec", "spec_of"]

#: fields the constructors check and round to integers (the kernels unroll by them)
_INTEGER = ("iters", "window")


class FusedSpec(NamedTuple):
    """What the fused path needs to know about a policy: its kernel and parameters.

    Attributes:
        kind: the kernel (``"ucb1"``, ``"kl_ucb"``, ``"thompson"``, ``"gaussian_ts"``,
            ``"random"``, ``"delayed_ucb"``, ``"delayed_klucb"``).
        params: sorted ``(name, value)`` pairs of the constructor's arguments.
    """
    kind: str  # "ucb1", "kl_ucb", "thompson", "gaussian_ts", "random", "delayed_ucb", "delayed_klucb"
    params: tuple  # sorted (name, value) pairs of the constructor's arguments

    def get(self, name, default=None):
        """A parameter's value.

        Args:
            name: the parameter.
            default: the value when it is absent.

        Returns:
            The value.
        """
        return dict(self.params).get(name, default)


def spec_of(policy) -> Optional[FusedSpec]:
    """The fused description of ``policy``.

    Args:
        policy: any policy.

    Returns:
        The :class:`FusedSpec`, or ``None`` when the policy has no fused kernel (or when its fields
        are traced: a policy built inside a grid's program runs on the scan path).

    Examples:
        >>> from jaxbandits.engine import fused
        >>> from jaxbandits.policies import adversarial, classic
        >>> fused.spec_of(classic.ucb1(alpha=0.5))
        FusedSpec(kind='ucb1', params=(('alpha', 0.5),))
        >>> fused.spec_of(adversarial.dew(0.1)) is None
        True
    """
    from jax.core import Tracer

    if not isinstance(policy, PolicyValue) or policy.fused is None:
        return None
    kind, names = policy.fused
    params = {}
    for n in names:
        v = getattr(policy, n)
        if isinstance(v, Tracer):
            return None
        params[n] = int(v) if n in _INTEGER and v is not None else v
    return FusedSpec(kind, tuple(sorted(params.items())))
