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

``simulate`` and ``simulate_grid`` are the driver's own (one implementation: ``jaxbandits.simulate``
and ``jaxbandits.engine.simulate`` are one function object), with the choice between the two
execution paths (docs/fused.md, :data:`PATHS`, :func:`choose_path`):

* ``"scan"``: the engine's scan over rounds: every world, channel and policy;
* ``"fused"``: :mod:`jaxbandits.engine.fused`, one Pallas kernel per policy with the whole time loop
  inside (GPU; Pallas' interpreter elsewhere), for the combinations it covers;
* ``"auto"`` (default): fused when the default backend is a GPU and the combination is covered,
  the scan otherwise.

A sweep that saves, resumes or splits its calls calls its
:class:`jaxbandits.experiments.sweeping.Sweep`'s ``simulate`` instead (docs/cluster.md).
"""
from . import metrics, recording
from .driver import simulate, simulate_grid
from .paths import PATHS, choose_path
from .programs import clear_cache
from .recording import SimOutput, record_points
from .round import Problem, RunKeys, RunState, Step, channel_keys, init, problem, round, run_keys  # noqa: A004

__all__ = ["problem", "init", "round", "Problem", "RunState", "RunKeys", "Step", "run_keys", "channel_keys", "simulate",
           "simulate_grid", "record_points", "SimOutput", "metrics", "recording", "clear_cache", "choose_path", "PATHS"]
