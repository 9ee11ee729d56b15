"""``simulate`` and ``simulate_grid`` (the driver lives in :mod:`jaxbandits.engine`)."""
from .engine.driver import simulate, simulate_grid
from .engine.recording import SimOutput, record_points

__all__ = ["simulate", "simulate_grid", "record_points", "SimOutput"]
