"""What the fused path needs to know about a policy: its algorithm and parameters.

A :class:`~jaxbandits.types.Policy` is a tuple of closures; the constructors of the policies the
fused kernels implement (UCB1, KL-UCB, Beta-Bernoulli and Gaussian Thompson, DelayedUCB,
DelayedKLUCB) record here what they built, keyed (weakly) by the policy's ``act`` function. A
policy that is not recorded (a user's own, a wrapper, another algorithm) runs on the scan path.
This module imports nothing heavy: the policies import it.
"""
from __future__ import annotations

import weakref
from typing import NamedTuple, Optional

__all__ = ["FusedSpec", "register", "spec_of"]


class FusedSpec(NamedTuple):
    kind: str  # "ucb1", "kl_ucb", "thompson", "gaussian_ts", "delayed_ucb", "delayed_klucb"
    params: tuple  # sorted (name, value) pairs of the constructor's arguments

    def get(self, name, default=None):
        return dict(self.params).get(name, default)


_SPECS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def register(policy, kind: str, **params):
    """Record that ``policy`` is the fused kernel ``kind`` with ``params``; returns ``policy``.
    A policy built from traced parameters (inside a grid's program) is not recorded: grids run on
    the scan path, and the registry must not keep tracers alive."""
    from jax.core import Tracer

    if not any(isinstance(v, Tracer) for v in params.values()):
        _SPECS[policy.act] = FusedSpec(kind, tuple(sorted(params.items())))
    return policy


def spec_of(policy) -> Optional[FusedSpec]:
    """The fused description of ``policy``, or ``None`` when it has no fused kernel."""
    try:
        return _SPECS.get(policy.act)
    except TypeError:  # an act that cannot be weakly referenced: not one of ours
        return None
