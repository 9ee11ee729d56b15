"""``simulate`` and ``simulate_grid`` (the driver lives in :mod:`jaxbandits.engine`), and the choice
between the two execution paths (docs/fused.md):

* ``"scan"``: the engine's driver (:func:`jaxbandits.engine.driver.simulate`): every world,
  channel and policy;
* ``"fused"``: :mod:`jaxbandits.fused`, one Pallas kernel per policy with the whole time loop
  inside (GPU; Pallas' interpreter elsewhere), for the combinations it covers;
* ``"auto"`` (default): fused when the default backend is a GPU and the combination is covered,
  the scan otherwise.
"""
from __future__ import annotations

from typing import List, Optional

from .engine import driver as _driver
from .engine.driver import simulate_grid
from .engine.recording import SimOutput, record_points

__all__ = ["simulate", "simulate_grid", "record_points", "SimOutput", "choose_path", "PATHS"]

PATHS = ("auto", "fused", "scan")


def _fused_blockers(env, channel, policies, *, chunk, shard, resume) -> List[str]:
    from . import fused
    from .engine.checkpoint import active_sweep

    why = fused.unsupported(env, channel, policies, chunk=chunk, shard=shard, resume=resume)
    if active_sweep() is not None:
        why.append("inside sweep_checkpoints (its cache replays scan-path calls)")
    return why


def choose_path(env, channel, policies, path: str = "auto", *, chunk=None, shard=None, resume=False,
                backend: Optional[str] = None) -> str:
    """``"fused"`` or ``"scan"``: the path ``simulate(..., path=path)`` takes for this combination.

    ``"auto"`` gives ``"fused"`` when ``backend`` (default: JAX's default backend) is ``"gpu"`` and
    the fused kernels cover the combination; ``"fused"`` on a combination they do not cover raises
    a ``ValueError`` naming everything that is not covered."""
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
        import jax

        backend = jax.default_backend()
    if backend != "gpu":
        return "scan"
    try:
        why = _fused_blockers(env, channel, policies, chunk=chunk, shard=shard, resume=resume)
    except Exception:  # malformed arguments: the scan path's checks name them
        return "scan"
    return "scan" if why else "fused"


def simulate(env, channel, policies, horizon: int, key, n_runs: int = 1, *, record=None,
             chunk: Optional[int] = None, progress: bool = False, shard=None, first_run: int = 0,
             delayed_regret: Optional[bool] = None, checkpoint=None, resume: bool = False, stop=None,
             path: str = "auto", keep=None, stats_block: Optional[int] = None):
    """Simulate ``n_runs`` paired runs of one policy or a ``{label: policy}`` dict.

    ``path`` picks the execution path (docs/fused.md): ``"auto"`` (default) runs the fused GPU
    kernels when the default backend is a GPU and they cover the combination, else the scan;
    ``"scan"`` always the engine's scan; ``"fused"`` the fused kernels (on a CPU through Pallas'
    interpreter: slow, for tests), refusing with a ``ValueError`` a combination they do not
    cover. Both paths return the same ``SimOutput``, with its statistics reduced on the device and
    the per-run curves that ``keep`` asks for (docs/simulate.md). On the fused path the whole horizon is one
    kernel call, so ``chunk``, ``progress``, ``checkpoint`` and ``stop`` have no chunk boundary to
    act at (they are accepted and do nothing); ``resume=True`` and ``shard`` other than one device
    keep the scan.

    The rest is :func:`jaxbandits.engine.driver.simulate`'s (its docstring documents every argument).
    """
    if path == "fused":  # the scan path's argument checks first: a malformed call gets the same error
        _check_args(env, channel, policies, horizon, key, n_runs, record, chunk, first_run, delayed_regret)
    stats_block = _driver.check_stats_block(stats_block)
    which = choose_path(env, channel, policies, path, chunk=chunk, shard=shard, resume=resume)
    if which == "scan":
        return _driver.simulate(env, channel, policies, horizon, key, n_runs, record=record, chunk=chunk,
                                progress=progress, shard=shard, first_run=first_run,
                                delayed_regret=delayed_regret, checkpoint=checkpoint, resume=resume, stop=stop,
                                keep=keep, stats_block=stats_block)
    from .fused import simulate_fused

    horizon, n_runs, key, first_run = _check_args(env, channel, policies, horizon, key, n_runs, record, chunk,
                                                  first_run, delayed_regret)
    _check_memory(env, channel, policies, horizon, n_runs, record, delayed_regret, keep)
    return simulate_fused(env, channel, policies, horizon, key, n_runs, record=record, first_run=first_run,
                          delayed_regret=delayed_regret, keep=keep, stats_block=stats_block)


def _check_memory(env, channel, policies, horizon, n_runs, record, delayed_regret, keep):
    """The fused path's runs refused before anything is allocated when their state and records
    cannot fit in memory (:func:`jaxbandits.engine.driver.check_memory`, the scan path's rule)."""
    from .engine.round import problem

    _, pols = _driver.policies_dict(policies)
    problems = {lab: problem(env, channel, pol, horizon, n_runs=n_runs, delayed_regret=delayed_regret, label=lab)
                for lab, pol in pols.items()}
    record_at = record_points(horizon, record)
    keep_n = _driver.resolve_keep(keep, [p.spec.n_arms for p in problems.values()], n_runs, len(record_at),
                                  any(p.world.adversarial for p in problems.values()))
    _driver.check_memory(problems, n_runs, record_at, keep=keep_n)


def _check_args(env, channel, policies, horizon, key, n_runs, record, chunk, first_run, delayed_regret):
    """The scan path's host checks, in its order and with its messages, before anything compiles."""
    from .engine.round import problem

    horizon, n_runs, key = _driver._validate_common(horizon, n_runs, key)
    first_run = _driver._validate_run_args(n_runs, first_run, chunk)
    record_points(horizon, record)
    _, pols = _driver.policies_dict(policies)
    for lab, pol in pols.items():
        problem(env, channel, pol, horizon, n_runs=n_runs, delayed_regret=delayed_regret, label=lab)
    return horizon, n_runs, key, first_run
