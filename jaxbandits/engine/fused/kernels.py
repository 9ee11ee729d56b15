"""Internal: not public API (the fused backend's implementation; use :func:`jaxbandits.simulate`).

What every fused kernel shares: the static description of a kernel (:class:`KernelSpec`, the
compile cache's key) and the tie word's counter. The delays are drawn by the delay law's own
``ppf_float`` (:func:`jaxbandits.engine.fused.path.kernel_law`), not by a copy of its formula here.

The kernels themselves are in :mod:`jaxbandits.engine.fused.lanes` (runs on lanes, arms unrolled). The
earlier ``[block, Kp]`` tiles kernels that lived here were removed once the lanes kernels measured
faster on an H200 (UCB1: 5.7e10 against 1.5e10 run-steps/s, docs/benchmarks.md); the calendar
kernels' lanes version gives the tiles version's results bit for bit (tested before the removal)
and is measured by the next device check.
"""
from __future__ import annotations

from typing import NamedTuple


TIE = 0xFFFFFFFF  # the counter lane of the tie-breaking word (never a draw's lane)


class KernelSpec(NamedTuple):
    """Everything static about one fused kernel (hashable: the compile cache key)."""

    kind: str  # the policy (fused.registry.FusedSpec.kind)
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
