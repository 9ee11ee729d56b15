"""The engine: one public round of world + channel + policy, metrics, and the driver.

* :mod:`jaxbandits.engine.round`: :func:`problem` (host checks and sizes), :func:`init` and
  :func:`round` (pure; call them in your own ``lax.scan``: docs/composing.md);
* :mod:`jaxbandits.engine.metrics`: running sums and the records read from them;
* :mod:`jaxbandits.engine.recording`: record points, segments, :class:`SimOutput`;
* :mod:`jaxbandits.engine.stats`: statistics over runs reduced on the device (blocks of run ids);
* :mod:`jaxbandits.engine.driver`: :func:`simulate`, :func:`simulate_grid`, the entry points; the
  modules beside it check their arguments (``checks``, ``prepare``, ``memory``), choose the path
  (``paths``), compile the programs once (``programs``: vmap, shard) and run them chunk by chunk
  (``loop``, with ``devices`` and ``fingerprint``).
"""
from . import metrics, recording
from .driver import simulate, simulate_grid
from .programs import clear_cache
from .recording import SimOutput, record_points
from .round import Problem, RunKeys, RunState, Step, channel_keys, init, problem, round, run_keys  # noqa: A004

__all__ = ["problem", "init", "round", "Problem", "RunState", "RunKeys", "Step", "run_keys", "channel_keys", "simulate",
           "simulate_grid", "record_points", "SimOutput", "metrics", "recording", "clear_cache"]
