"""Sweeps' units, saved, resumed and split into parts: the explicit object a sweep calls
(docs/architecture.md, docs/cluster.md).

A sweep (an experiment's ``runner``: a loop of its own over settings or replications) receives a
:class:`Sweep` and calls its ``simulate`` / ``simulate_grid`` (the library's, same arguments) and
wraps any other unit of work (a fit) in :meth:`Sweep.unit`::

    def runner(config, runs, seed, horizon, sweep=DIRECT):
        for T in horizons:
            out = sweep.simulate(env, channel, policies, T, key, runs)

Each call is a *unit*, named by a fingerprint of what it computes. :data:`DIRECT` computes every
unit and saves none (a plain call of the runner). Inside :func:`sweep_checkpoints` a unit is
replayed when its cache holds it, else computed and saved; a :class:`SweepShare` computes only one
part's units (the others get placeholders of the same form); ``replay_only`` (a merge of parts)
computes none. Nothing is intercepted: ``jaxbandits.simulate`` called directly is never cached,
and the fused path runs inside a sweep as anywhere else.
"""
from __future__ import annotations

import contextlib
import os
import warnings
from typing import Any, Callable, List, Optional, Tuple

import numpy as np

from ..engine import driver as DR
from ..engine import prepare as PR
from ..engine import reduce as RD
from ..engine import stats as ST
from ..engine.checkpoint import (CallCache, Interrupted, MissingUnit, SweepShare, reading_saved, unit_bytes,
                                unit_value)
from ..engine.fingerprint import unit_fingerprint
from ..engine.paths import choose_path
from ..engine.recording import SimOutput

__all__ = ["Sweep", "DIRECT", "sweep_checkpoints", "call_runner", "placeholder_outputs", "SweepShare", "CallCache",
           "MissingUnit"]


class Sweep:
    """What a sweep calls: ``simulate``, ``simulate_grid`` and ``unit``, each a unit saved in
    ``cache`` (``None``: computed, never saved: :data:`DIRECT`). ``stop()`` is asked before each
    unit is computed (:class:`~jaxbandits.engine.checkpoint.Interrupted` when it says so);
    ``share`` computes only this part's units; ``replay_only`` computes none
    (:class:`~jaxbandits.engine.checkpoint.MissingUnit` for a unit the cache lacks). ``units``
    lists every unit asked for, in order: ``(id, kind, owner)``.

    Args:
        cache: where completed units are saved (None: nothing saved).
        stop: asked before each unit is computed; True stops the sweep there.
        share: this part's share of a split sweep (None: every unit).
        replay_only: compute no unit: replay them all from the cache (a merge of parts).

    Examples:
        >>> from jaxbandits.experiments.sweeping import DIRECT, CallCache, Sweep
        >>> sweep = Sweep(CallCache(None))  # units kept in memory
        >>> sweep.unit({"fit": 1}, lambda: {"mean": 0.5}, kind="json")
        {'mean': 0.5}
        >>> sweep.unit({"fit": 1}, lambda: {"mean": 9.9}, kind="json")  # replayed, not computed
        {'mean': 0.5}
        >>> DIRECT.cache is None
        True
    """

    def __init__(self, cache: Optional[CallCache] = None, stop: Callable[[], bool] = lambda: False,
                 share: Optional[SweepShare] = None, replay_only: bool = False):
        self.cache, self.stop, self.share, self.replay_only = cache, stop, share, replay_only
        self.units: List[Tuple[str, str, Optional[int]]] = []

    def unit(self, fingerprint: dict, compute: Callable[[], Any], *, cost: float = 1.0,
             placeholder: Callable[[], Any] = lambda: None, kind: str = "sim", what: str = "unit"):
        """One unit: without a cache, ``compute()``. With one, the saved result if the cache holds
        ``fingerprint``; else, if this part does not own the unit, ``placeholder()`` (a value of
        the same form that the sweep's code may read but whose numbers are discarded); else
        ``compute()``, saved. ``kind``: ``"sim"`` for ``{label: SimOutput}``, ``"json"`` for a
        JSON value. ``cost`` (run-steps) balances a split sweep's parts.

        Args:
            fingerprint: a JSON-serialisable ``dict`` naming what the unit computes.
            compute: ``compute() -> value``.
            cost: the unit's work in run-steps (how a split sweep balances its parts).
            placeholder: ``placeholder() -> value`` of the same form, for a unit another part
                computes.
            kind: ``"sim"`` (``{label: SimOutput}``) or ``"json"``.
            what: what the unit is, in messages.

        Returns:
            The unit's value as saved (the same arrays a resumed sweep or a merge of parts gets).

        Raises:
            jaxbandits.engine.checkpoint.MissingUnit: ``replay_only`` and the cache lacks it.
            jaxbandits.engine.checkpoint.Interrupted: ``stop()`` said so before computing it.
        """
        if self.cache is None:
            return compute()
        uid = self.cache.unit_id(fingerprint)
        owner = self.share.owner(cost) if self.share is not None else None
        self.units.append((uid, kind, owner))
        saved = self.cache.get_bytes(uid, kind)
        if saved is not None:
            where = self.cache.folder and os.path.join(self.cache.folder, self.cache.file_name(uid, kind))
            with reading_saved(where or f"the saved {what} {uid}"):
                return unit_value(kind, saved)
        if self.replay_only:
            raise MissingUnit(f"the sweep needs {what} {uid} and no part holds it")
        if owner is not None and owner != self.share.index:
            return placeholder()
        if self.stop():
            raise Interrupted(0, 0, self.cache.folder, what=f"before the next {what} of the sweep (the completed "
                                                            "ones are saved)")
        data = unit_bytes(kind, compute())
        self.cache.put_bytes(uid, kind, data)
        # the value as saved, not as computed: a whole run, a resumed one and a merge of parts then
        # hand the sweep the same objects (arrays of the same layout, dicts of the same key order)
        return unit_value(kind, data)

    def simulate(self, env, channel, policies, horizon: int, key, n_runs: int = 1, *, record=None,
                 chunk: Optional[int] = None, progress: bool = False, shard=None, first_run: int = 0,
                 delayed_regret: Optional[bool] = None, checkpoint=None, resume: bool = False, stop=None,
                 path: str = "auto", keep=None, stats_block: Optional[int] = None):
        """:func:`jaxbandits.simulate` (same arguments, same result) as a unit of the sweep. A
        call with a ``checkpoint`` of its own is not a unit (its checkpoint resumes it).

        Args:
            env: the world; the other arguments are :func:`jaxbandits.simulate`'s.
            channel: the channel.
            policies: a policy or a ``{label: policy}`` dict.
            horizon: the number of rounds.
            key: a ``jax.random.key`` or an integer seed.
            n_runs: the runs.
            record: the record points.
            chunk: rounds per compiled chunk.
            progress: show a progress bar.
            shard: the local devices.
            first_run: the global index of the first run.
            delayed_regret: track ``L(t)``.
            checkpoint: a folder of the call's own (then the call is not a unit).
            resume: continue from ``checkpoint``.
            stop: asked after every chunk.
            path: ``"auto"``, ``"scan"`` or ``"fused"`` (a fused unit is named apart from a scan one).
            keep: the per-run curves returned.
            stats_block: the statistics' block size.

        Returns:
            What :func:`jaxbandits.simulate` returns: replayed when the cache holds the unit,
            zeros of the same form when another part computes it.
        """
        call = lambda which=path: DR.simulate(
            env, channel, policies, horizon, key, n_runs, record=record, chunk=chunk, progress=progress, shard=shard,
            first_run=first_run, delayed_regret=delayed_regret, checkpoint=checkpoint, resume=resume, stop=stop,
            path=which, keep=keep, stats_block=stats_block)
        if self.cache is None or checkpoint is not None:
            return call()
        p = PR.prepare(env, channel, policies, horizon, key, n_runs, record=record, chunk=chunk, first_run=first_run,
                       delayed_regret=delayed_regret, keep=keep, stats_block=stats_block)
        which = choose_path(env, channel, policies, path, chunk=chunk, shard=shard, resume=resume)
        extra = {"keep": p.keep, "block": p.stats_block}
        if which == "fused":  # its numbers are not the scan's bits: another unit (a scan unit's name is unchanged)
            extra["path"] = "fused"
        fp = unit_fingerprint(p.problems, None, p.key, p.n_runs, p.record_at, p.first_run, shard, extra)
        outs = self.unit(fp, lambda: _as_dict(call(which), p), cost=_cost(p.problems, p.n_runs, p.horizon), kind="sim",
                         what="simulation",
                         placeholder=lambda: placeholder_outputs(p.problems, p.n_runs, p.record_at, None, p.keep))
        return outs[next(iter(outs))] if p.single else outs

    def simulate_grid(self, build: Callable, grid, channel, horizon: int, key, n_runs: int = 1, *, record=None,
                      chunk=None, progress=False, shard=None):
        """:func:`jaxbandits.simulate_grid` (same arguments, same result) as a unit of the sweep.

        Args:
            build: ``build(**params) -> (env, policy)``; the other arguments are
                :func:`jaxbandits.simulate_grid`'s.
            grid: ``{name: array [G, ...]}``.
            channel: the channel.
            horizon: the number of rounds.
            key: a ``jax.random.key`` or an integer seed.
            n_runs: the runs of each grid point.
            record: the record points.
            chunk: rounds per compiled chunk.
            progress: show a progress bar.
            shard: the local devices.

        Returns:
            What :func:`jaxbandits.simulate_grid` returns (replayed, or placeholders, as
            :meth:`simulate`).
        """
        call = lambda: DR.simulate_grid(build, grid, channel, horizon, key, n_runs, record=record, chunk=chunk,
                                        progress=progress, shard=shard)
        if self.cache is None:
            return call()
        g = PR.prepare_grid(build, grid, channel, horizon, key, n_runs, record=record, chunk=chunk)
        probs = {g.label: g.problem}
        fp = unit_fingerprint(probs, g.params, g.key, g.n_runs, g.record_at, 0, shard)
        outs = self.unit(fp, lambda: {g.label: call()}, cost=_cost(probs, g.n_runs, g.horizon, g.n_grid), kind="sim",
                         what="simulation",
                         placeholder=lambda: placeholder_outputs(probs, g.n_runs, g.record_at, g.params))
        return outs[g.label]


#: The sweep that computes every unit and saves none: what a runner gets when called plainly.
DIRECT = Sweep(None)


def _as_dict(out, p: PR.Prepared):
    return {next(iter(p.problems)): out} if p.single else out


def _cost(problems, n_runs, horizon, n_grid=1) -> float:
    return float(horizon) * n_runs * n_grid * len(problems)


@contextlib.contextmanager
def sweep_checkpoints(folder: Optional[str], stop: Callable[[], bool] = lambda: False, *,
                      share: Optional[SweepShare] = None, replay_only: bool = False):
    """A :class:`Sweep` whose units are saved whole in ``folder`` (``None``: in memory) when they
    complete and replayed from there when the same unit comes again (a resumed sweep). Yields the
    sweep; hand it to the runner (:func:`call_runner`). Nothing outside it is affected.

    Args:
        folder: the folder of the saved units (None: kept in memory).
        stop: asked before each unit is computed.
        share: this part's share of a split sweep (None: every unit).
        replay_only: compute no unit (a merge of parts).

    Yields:
        The :class:`Sweep`.

    Examples:
        >>> import tempfile
        >>> from jaxbandits.experiments.sweeping import sweep_checkpoints
        >>> folder = tempfile.mkdtemp()
        >>> with sweep_checkpoints(folder) as sweep:
        ...     sweep.unit({"replication": 0}, lambda: [1, 2], kind="json")
        [1, 2]
        >>> with sweep_checkpoints(folder, replay_only=True) as sweep:  # a resumed sweep replays it
        ...     sweep.unit({"replication": 0}, lambda: [0, 0], kind="json")
        [1, 2]
        >>> import shutil; shutil.rmtree(folder)
    """
    yield Sweep(CallCache(folder), stop, share, replay_only)


def _takes_sweep(runner) -> bool:
    import inspect

    try:
        params = inspect.signature(runner).parameters
    except (TypeError, ValueError):
        return False
    return "sweep" in params or any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())


def call_runner(runner, config, runs, seed, horizon, sweep: Sweep = DIRECT):
    """``runner(config, runs, seed, horizon, sweep=sweep)``: a sweep's runner given the
    :class:`Sweep` whose ``simulate`` / ``unit`` it calls. A runner written before sweeps were
    handed their ``Sweep`` (four parameters, no ``sweep``) still runs, with a
    ``DeprecationWarning`` when a cache was to be used: its direct ``simulate`` calls are not
    saved, replayed or split (a resumed sweep recomputes them; each part computes all of them).

    Args:
        runner: ``runner(config, runs, seed, horizon, sweep=...)`` (or without ``sweep``: deprecated).
        config: the experiment's configuration.
        runs: the runs.
        seed: the seed.
        horizon: the horizon.
        sweep: the :class:`Sweep` (default :data:`DIRECT`).

    Returns:
        What the runner returns.

    Warns:
        DeprecationWarning: a runner without ``sweep`` given a sweep with a cache.

    Examples:
        >>> from jaxbandits.experiments.sweeping import call_runner
        >>> def runner(config, runs, seed, horizon, sweep):
        ...     return sweep.unit({"seed": seed}, lambda: {"runs": runs}, kind="json")
        >>> call_runner(runner, {}, 8, 0, 100)
        {'runs': 8}
    """
    if _takes_sweep(runner):
        return runner(config, runs, seed, horizon, sweep=sweep)
    if sweep.cache is not None:
        warnings.warn(f"the sweep runner {getattr(runner, '__name__', runner)!r} takes no sweep= argument: its "
                      "simulations are not saved, resumed or split into parts; add a parameter sweep and call "
                      "sweep.simulate (docs/experiment-files.md)", DeprecationWarning, stacklevel=2)
    return runner(config, runs, seed, horizon)


def placeholder_outputs(problems, n_runs, record_at, grid_params=None, keep=None):
    """Outputs of the form a call returns, all zeros: what a part of a split sweep gets for a call
    another part computes (its numbers are discarded; docs/cluster.md).

    Args:
        problems: ``{label: Problem}`` of the call.
        n_runs: its runs.
        record_at: its record rounds.
        grid_params: a grid's parameters (None: no grid).
        keep: the runs whose curves are kept (None: all).

    Returns:
        ``{label: SimOutput}`` of zeros, of the shapes the call returns.

    Examples:
        >>> from jaxbandits import channels, engine, envs
        >>> from jaxbandits.policies import classic
        >>> from jaxbandits.experiments.sweeping import placeholder_outputs
        >>> probs = {"ucb1": engine.problem(envs.bernoulli([0.3, 0.6]), channels.attributed(), classic.ucb1(), 100)}
        >>> out = placeholder_outputs(probs, 4, engine.record_points(100, 50))["ucb1"]
        >>> out.regret.shape, out.pulls.shape, float(out.regret.sum())
        ((4, 2), (4, 2, 2), 0.0)
    """
    lead = () if grid_params is None else (int(np.asarray(next(iter(grid_params.values()))).shape[0]),)
    R = len(record_at)
    n_keep = n_runs if keep is None else keep
    outs = {}
    labels = list(problems)
    for lab, prob in problems.items():
        K = int(prob.spec.n_arms)
        z = np.zeros(lead + (n_keep, R), np.float32)
        st = None
        if grid_params is None:
            zm = lambda *s: (np.zeros((1, R) + s), np.zeros((1, R) + s))
            mets = RD.stat_metrics(prob)
            st = ST.Stats(1, np.zeros(1), {k: zm(K) if k == "pulls" else zm() for k in mets},
                          {o: {k: zm() for k in mets if k != "pulls" and k in RD.stat_metrics(problems[o])}
                           for o in labels if o != lab},
                          {k: np.zeros(n_runs, np.int32 if k == "lost_to_W" else np.float32) for k, _ in RD.FINAL_FIELDS
                           if k != "delayed_regret" or prob.dl_mode})
        kept = n_keep > 0
        outs[lab] = SimOutput(t=np.asarray(record_at, np.int64) + 1, regret=z if kept else None,
                              expected_regret=z if kept else None, reward=z if kept else None,
                              pulls=np.zeros(lead + (n_keep, R, K), np.float32) if kept else None,
                              lost_to_W=np.zeros(lead + (n_runs,), np.int32), width=prob.width,
                              timing={"compile_s": 0.0, "run_s": 0.0, "devices": 1},
                              delayed_regret=z if prob.dl_mode and kept else None,
                              arm_totals=np.zeros(lead + (n_runs, R, K), np.float32) if prob.world.adversarial else None,
                              stats=st, runs=int(n_runs))
    return outs
