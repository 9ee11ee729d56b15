"""Internal: not public API (the fused backend's implementation; use :func:`jaxbandits.simulate`).

What every fused kernel shares: the static description of a kernel (:class:`KernelSpec`, the
compile cache's key), the tie word's counter, and the delay laws' inverse CDFs in float32.

The kernels themselves are in :mod:`jaxbandits.fused.lanes` (runs on lanes, arms unrolled). The
earlier ``[block, Kp]`` tiles kernels that lived here were removed once the lanes kernels measured
faster on an H200 (UCB1: 5.7e10 against 1.5e10 run-steps/s, docs/benchmarks.md); the calendar
kernels' lanes version gives the tiles version's results bit for bit (tested before the removal)
and is measured by the next device check.
"""
from __future__ import annotations

from typing import NamedTuple

import jax.numpy as jnp
from jax import lax

_F = jnp.float32
TIE = 0xFFFFFFFF  # the counter lane of the tie-breaking word (never a draw's lane)
INF = float("inf")


class KernelSpec(NamedTuple):
    """Everything static about one fused kernel (hashable: the compile cache key)."""

    kind: str  # the policy (fused._registry.FusedSpec.kind)
    params: tuple  # its parameters
    n_arms: int  # K
    k_pad: int  # K padded to a power of two (the length of the means' argument)
    n_rec: int  # number of record points
    r_pad: int  # record rows (= n_rec)
    block: int  # runs per program
    world: tuple = ()  # ("bernoulli",): no delay, attributed; ("conversions",): the calendar kernel
    interpret: bool = False
    num_warps: int = 4
    replay: int = 0  # tests: > 0 reads (u_t, v_t, tie_t) from [replay, runs] arrays instead of threefry

    def p(self, name, default=None):
        return dict(self.params).get(name, default)


def next_pow2(n: int) -> int:
    return 1 << max(0, int(n - 1).bit_length())


def delay_value(law: tuple, v):
    """``floor(F^-1(v))`` of a closed-form delay law as float32 (``law`` = ``(name, params...)``
    with Python floats; the formulas of :mod:`jaxbandits.core.delays`). Values beyond the window are
    compared as floats, so a huge or infinite draw is simply "not within the window"."""
    name = law[0]
    if name == "fixed":
        return jnp.full(v.shape, _F(law[1]))
    if name == "uniform":
        lo, hi = law[1], law[2]
        return jnp.minimum(_F(lo) + jnp.floor(v * _F(hi - lo + 1)), _F(hi))
    if name == "geometric":  # smallest n with 1 - rho^(n+1) >= v
        if law[1] == -INF:
            return jnp.zeros(v.shape, _F)
        return jnp.maximum(jnp.ceil(jnp.log1p(-v) / _F(law[1])) - 1.0, 0.0)
    if name == "exponential":
        return jnp.floor(_F(-law[1]) * jnp.log1p(-v))
    if name == "weibull":  # scale (-log(1 - v))^(1/shape)
        k, lam = law[1], law[2]
        return jnp.floor(_F(lam) * jnp.exp(jnp.log(-jnp.log1p(-v)) / _F(k)))
    if name == "log_normal":  # exp(mu + sigma Phi^-1(v)), Phi^-1(v) = sqrt(2) erfinv(2v - 1)
        z = _F(2.0**0.5) * lax.erf_inv(_F(2.0) * v - _F(1.0))
        return jnp.floor(jnp.exp(_F(law[1]) + _F(law[2]) * z))
    if name == "pareto":  # scale ((1 - v)^(-1/alpha) - 1)
        return jnp.floor(_F(law[2]) * jnp.expm1(-jnp.log1p(-v) / _F(law[1])))
    raise ValueError(f"no closed-form fused delay for {name!r}")
