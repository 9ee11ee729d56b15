"""``simulate`` and ``simulate_grid``: the driver's own (:mod:`jaxbandits.engine.driver`; one
implementation, re-exported here as ``jaxbandits.simulate``), and the choice between the two
execution paths (docs/fused.md):

* ``"scan"``: the engine's scan over rounds: every world, channel and policy;
* ``"fused"``: :mod:`jaxbandits.fused`, one Pallas kernel per policy with the whole time loop
  inside (GPU; Pallas' interpreter elsewhere), for the combinations it covers;
* ``"auto"`` (default): fused when the default backend is a GPU and the combination is covered,
  the scan otherwise.

``jaxbandits.simulate``, ``jaxbandits.engine.simulate`` and ``jaxbandits.simulate.simulate`` are
one function object. A sweep that saves, resumes or splits its calls calls its
:class:`jaxbandits.sweeping.Sweep`'s ``simulate`` instead (docs/cluster.md).
"""
from __future__ import annotations

from .engine.driver import PATHS, choose_path, simulate, simulate_grid
from .engine.recording import SimOutput, record_points

__all__ = ["simulate", "simulate_grid", "record_points", "SimOutput", "choose_path", "PATHS"]
