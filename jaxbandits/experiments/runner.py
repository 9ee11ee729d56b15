"""Running an experiment: :func:`run` checks every argument, locks the output folder, simulates
each panel (or runs a sweep's own loop), checkpoints, saves parts or results, and on an interrupt
writes a partial ``summary.json`` with the command that resumes (docs/results.md).
"""
from __future__ import annotations

import contextlib
import errno
import os
from typing import Optional

import numpy as np

from ..core import fileio
from ..core import validate as V
from ..engine.checkpoint import CallCache, Checkpoint, Interrupted, graceful_stop
from .results import Results, versions
from ..engine import simulate
from .assemble import assemble_results, collect_panel
from .registry import get
from .specs import Experiment, Panel, describe_run, resolve_config


def run(name, runs: Optional[int] = None, horizon: Optional[int] = None, seed: int = 0,
        overrides: Optional[dict] = None, out: Optional[str] = None, progress: bool = False,
        chunk: Optional[int] = None, resume: bool = False, force: bool = False, part=None,
        distributed: bool = False, path: str = "auto", keep=None) -> Results:
    """Run a registered experiment (all its policies in one compiled program); save to ``out``.
    ``name`` may also be an :class:`Experiment` (one read from a file:
    :func:`~jaxbandits.experiments.files.loading.experiment`).

    ``out`` is checked and locked before anything runs: a folder that cannot be written raises
    :class:`jaxbandits.core.fileio.OutputFolderError`, one another run is writing
    :class:`~jaxbandits.core.fileio.FolderInUseError`, one holding another experiment's results (or this
    experiment's with other settings) :class:`~jaxbandits.core.fileio.ResultsExistError` unless
    ``force=True`` (which replaces them, removing their files). A sweep runs at ``horizon`` alone
    when it is given, else at its own list of horizons.

    With ``out``, the run is checkpointed in ``out/.checkpoint`` after every chunk (default: 20
    chunks) and SIGINT / SIGTERM stop it at the end of the current chunk: the work done is saved,
    ``out/summary.json`` says ``"partial": true`` with the command that resumes, and
    :class:`~jaxbandits.engine.checkpoint.Interrupted` is raised. ``resume=True`` continues such a
    run; its results are bitwise those of an uninterrupted run (docs/results.md).

    Every argument is checked before anything is built or compiled: ``runs >= 1``, ``horizon`` in
    ``[1, 2**24]``, ``seed`` in ``[0, 2**64 - 1]`` (docs/conventions.md §8), ``overrides`` against
    the config's keys and kinds (:func:`resolve_config`); an option the experiment does not use
    (``horizon`` of an offline study, ``chunk`` of a sweep, ``horizon`` together with a config key
    it replaces) is an error rather than silently ignored.

    ``part=(i, n)`` (or ``"i/n"``) runs only part ``i`` of ``n`` of the runs (of a sweep: of its
    units, each simulation or fit) and writes a part folder to ``out`` (``part.json``, ``part.npz``)
    instead of results; :func:`jaxbandits.experiments.parts.merge`
    combines the ``n`` parts into the results of the whole run, bitwise. Returns the results of the
    part's runs alone (``None`` for a sweep's part: its units are not results by themselves). ``distributed=True`` shards the runs over the devices of every process of
    ``jax.distributed`` (:func:`jaxbandits.experiments.distributed.initialize` first); process 0 writes ``out``
    (docs/cluster.md). ``keep`` chooses the per-run curves kept (``"all"``, ``"none"``, the first
    ``N`` runs; default: every run while they are small, the statistics alone beyond: docs/simulate.md).

    Args:
        name: the experiment's name (:func:`~jaxbandits.experiments.registry.names`) or an :class:`Experiment`.
        runs: the number of runs, >= 1 (None: the experiment's).
        horizon: the number of rounds, in ``[1, 2**24]`` (None: the experiment's).
        seed: the seed, in ``[0, 2**64 - 1]``.
        overrides: ``{config key: value}`` (None: the defaults).
        out: the output folder (None: nothing is written and nothing checkpointed).
        progress: print progress.
        chunk: rounds per chunk, >= 1 (None: the default; not for a sweep).
        resume: continue the interrupted run in ``out``.
        force: replace other results in ``out``.
        part: ``(i, n)`` or ``"i/n"``: run part ``i`` of ``n`` only.
        distributed: shard the runs over the processes of ``jax.distributed``.
        path: the simulation path, one of ``"auto"`` (chosen), ``"scan"`` or ``"fused"``.
        keep: the per-run curves kept: ``"all"``, ``"none"`` or a number of runs (None: the
            experiment's, else the default rule).

    Returns:
        The :class:`jaxbandits.Results` (of a part: its runs alone; a sweep's results object of
        its own; None for a sweep's part).

    Raises:
        ValueError: an argument is out of range or not used by the experiment, or the name is
            unknown (each message names the argument).
        jaxbandits.core.fileio.OutputFolderError: ``out`` cannot be written (its subclasses
            ``FolderInUseError``, ``ResultsExistError`` as above).
        jaxbandits.engine.checkpoint.Interrupted: SIGINT / SIGTERM stopped a run with ``out``.

    Examples:
        >>> import tempfile
        >>> from jaxbandits.experiments import run
        >>> r = run("classic-bernoulli", runs=4, horizon=200, out=tempfile.mkdtemp())  # doctest: +SKIP
        >>> r.runs, int(r.t[-1]), list(r.curves)  # doctest: +SKIP
        (4, 200, ['UCB1', 'KL-UCB', 'Thompson', 'Exp3'])
        >>> run("classic-bernoulli", runs=0)
        Traceback (most recent call last):
        ...
        ValueError: runs must be >= 1, got 0
    """
    exp = name if isinstance(name, Experiment) else get(name)
    name = exp.name
    runs = exp.runs if runs is None else V.integer("runs", runs, lo=1)
    given_horizon = None if horizon is None else V.horizon("horizon", horizon)
    horizon = exp.horizon if horizon is None else given_horizon
    seed = V.seed("seed", seed)
    if chunk is not None:
        chunk = V.integer("chunk", chunk, lo=1)
    cfg = resolve_config(exp, overrides)
    ignored = set(exp.ignores) | ({"chunk"} if exp.runner is not None else set())
    for opt, val in (("horizon", given_horizon), ("chunk", chunk)):
        if opt in ignored and val is not None:
            raise ValueError(f"experiment {name!r} does not use {opt} (--{opt}; it is "
                             + ("not a simulation" if opt in exp.ignores else "a sweep with its own settings")
                             + f"); leave {opt} out")
    clash = sorted(k for k in exp.horizon_keys if k in (overrides or {}))
    if given_horizon is not None and clash:
        raise ValueError(f"experiment {name!r}: horizon replaces the config key(s) {clash}; give either horizon "
                         f"or {', '.join(clash)}, not both")
    if resume and out is None:
        raise ValueError("resume=True needs out=, the folder of the interrupted run")
    if given_horizon is not None and exp.runner is None:
        _note_short_horizon(exp, given_horizon)
    _check_path(name, exp, path)
    keep = check_keep(exp.keep if keep is None else keep)
    job = dict(overrides=overrides, chunk=chunk, resume=bool(resume), force=bool(force), given_runs=runs, path=path,
               keep=keep)
    if part is not None or distributed:
        _scale_out_checks(name, exp, runs, out, resume, part, distributed, job)
    if distributed and job["process"] != 0:  # process 0 holds and writes out; the others compute
        job["dist_out"] = out  # ... and read its checkpoint on --resume (a folder every process sees)
        return _run(name, exp, runs, horizon, seed, cfg, None, False, chunk, given_horizon, job)
    if out is None:
        return _run(name, exp, runs, horizon, seed, cfg, out, progress, chunk, given_horizon, job)
    ident = {"experiment": name, "config": cfg}
    if job.get("part"):  # a part folder is not a whole run's results, nor another part's
        ident["part"] = "{}/{}".format(*job["part"])
    with fileio.output_folder(out, ident, force=bool(force)):
        return _run(name, exp, runs, horizon, seed, cfg, out, progress, chunk, given_horizon, job)


class ShortHorizon(UserWarning):
    """A ``horizon`` given to :func:`run` that ends before some of the experiment's reporting rounds
    (``checkpoints``) or explicit record points: the run reports and records only those within it
    (``jaxbandits run`` prints the warning as a note)."""


def _beyond(points, horizon) -> list:
    return [int(x) for x in points if int(x) > horizon]


def _record_within(record, horizon):
    """An explicit array of record points cut to the horizon (the last round is always recorded); a
    stride, ``("log", n)`` or None as it is."""
    if record is None or isinstance(record, (int, np.integer, tuple)):
        return record
    pts = np.asarray(record)
    if pts.ndim == 1 and np.issubdtype(pts.dtype, np.integer) and pts.size:
        within = pts[pts < horizon]
        return within if within.size else np.array([horizon - 1], pts.dtype)
    return record


def _note_short_horizon(exp, horizon):
    """Warn (:class:`ShortHorizon`) of the reporting rounds and record points that ``horizon``, shorter
    than the experiment's own, leaves out: the results hold only those within it. A shorter run is
    what a quick look asks for, so this is a note, not a refusal; the note says how to keep them."""
    cps = _beyond(exp.checkpoints, horizon)
    rec = exp.record
    recs = ([] if rec is None or isinstance(rec, (int, np.integer, tuple))
            else [int(x) + 1 for x in np.asarray(rec).ravel() if int(x) >= horizon])  # rounds, 1-based like t
    what = []
    if cps:
        kept = [c for c in exp.checkpoints if c <= horizon]
        what.append(f"its reporting rounds t = {_few(cps)} (summary.json and table.md report R(t) "
                    + (f"at t = {_few(kept)} only)" if kept else "at none of them)"))
    if recs:
        what.append(f"its record points t = {_few(recs)} (the curves end at t = {horizon})")
    if what:
        import warnings

        warnings.warn(ShortHorizon(f"horizon {horizon} is shorter than experiment {exp.name!r}'s "
                                   f"({exp.horizon}) and leaves out " + " and ".join(what)
                                   + f"; give a horizon of at least {max(cps + recs)} to keep them"), stacklevel=3)


def _few(xs) -> str:
    xs = sorted(set(int(x) for x in xs))
    return ", ".join(map(str, xs)) if len(xs) <= 6 else ", ".join(map(str, xs[:5])) + f", ... ({len(xs)} in all)"


def _scale_out_checks(name, exp, runs, out, resume, part, distributed, job):
    """Arguments of a part or of a distributed run, checked before anything is built."""
    if part is not None and distributed:
        raise ValueError("part and distributed are exclusive: a part runs on one process (run the parts as "
                         "separate jobs), a distributed run is the whole run over many processes")
    if part is not None:
        from . import parts as _parts

        if out is None:
            raise ValueError("part needs out=, the part folder to write (--out)")
        job["part"] = _parts.parse_part(part)
        if exp.runner is None:  # a sweep splits its units (simulations, fits), not its runs
            job["range"] = _parts.run_range(runs, *job["part"])
        held = fileio.read_json(os.path.join(out, "part.json"))
        if isinstance(held, dict) and not job["force"] and (held.get("part"), held.get("parts")) != job["part"]:
            raise ValueError(f"--out {out} holds part {held.get('part')}/{held.get('parts')}; give each part its own "
                             f"folder (or --force to replace it)")
    if distributed:
        from . import distributed as _dist

        job["distributed"] = True
        job["process"] = _dist.process_index()


def check_keep(keep):
    """``keep`` as the simulator takes it: ``None``, ``"all"``, ``"none"`` or an int ``>= 0`` (a
    string of digits from the command line is that int); anything else a ValueError naming it.

    Args:
        keep: the per-run curves kept.

    Returns:
        ``keep`` as the simulator takes it.

    Raises:
        ValueError: ``keep`` is none of these.

    Examples:
        >>> from jaxbandits.experiments import check_keep
        >>> check_keep("all"), check_keep("12"), check_keep(3), check_keep(None)
        ('all', 12, 3, None)
        >>> check_keep(-1)
        Traceback (most recent call last):
        ...
        ValueError: keep must be 'all', 'none' or a number of runs >= 0, got -1
    """
    if keep is None or keep in ("all", "none"):
        return keep
    if isinstance(keep, str) and keep.strip().isdigit():
        return int(keep)
    if isinstance(keep, (int, np.integer)) and not isinstance(keep, bool) and keep >= 0:
        return int(keep)
    raise ValueError(f"keep must be 'all', 'none' or a number of runs >= 0, got {keep!r}")


def _panel_keep(p, horizon, runs, n_rec, keep, first, n_here):
    """The curves a panel (or a part of it: runs ``first .. first + n_here - 1``) keeps: the rule
    applied to the whole run's runs, so a part keeps its share of what the whole keeps."""
    from ..engine.reduce import resolve_keep
    from ..engine.round import problem

    probs = [problem(p.env, p.channel, pol, horizon, n_runs=runs, label=lab) for lab, pol in p.policies.items()]
    n = resolve_keep(keep, [q.spec.n_arms for q in probs], runs, n_rec, any(q.world.adversarial for q in probs))
    return max(0, min(n - first, n_here))


def _check_path(name, exp, path):
    """``path`` (docs/fused.md) is one of the simulator's; a sweep or an offline study runs its own
    loop, whose simulations take the path ``"auto"`` picks (``Sweep.simulate``), so forcing the
    fused one there is an error rather than ignored."""
    from ..engine import PATHS

    if path not in PATHS:
        raise ValueError(f"path must be one of {', '.join(PATHS)}, got {path!r}")
    if path == "fused" and exp.runner is not None:
        raise ValueError(f"experiment {name!r} is a sweep or study with its own loop: each of its simulations "
                         "takes the path 'auto' picks (leave --path out, or give --path scan)")


def _run(name, exp, runs, horizon, seed, cfg, out, progress, chunk, sweep_horizon, job):
    resume = job["resume"]
    part, dist = job.get("part"), job.get("distributed", False)
    first, n_here = job.get("range", (0, runs))
    base = out if out is not None else job.get("dist_out")  # the other processes of a distributed run read it
    ckpt_root = None if base is None else os.path.join(base, ".checkpoint")
    if dist:  # the checks below must come out alike on every process (one collective, then the same errors)
        from ..engine.devices import agree_across_processes

        agree_across_processes([ckpt_root is not None, ckpt_root is not None and os.path.isdir(ckpt_root), bool(resume)],
               "(checkpoint folder given, present, resume)")
    if resume and not os.path.isdir(ckpt_root):
        raise ValueError(f"resume: nothing to resume in {base} (no {ckpt_root}): the run finished or never "
                         f"started there" + (" (or this process does not see it: a distributed run needs --out on a "
                                             "file system every process shares)" if dist else ""))
    if ckpt_root is not None and not resume and os.path.isdir(ckpt_root):
        if not job["force"]:
            raise ValueError(f"--out {base} holds an interrupted run ({ckpt_root}): pass --resume to continue it, "
                             f"or --force to start afresh (its checkpoint is removed)")
        if out is not None:  # process 0 alone removes it ...
            for d in sorted(os.listdir(ckpt_root)):
                Checkpoint(os.path.join(ckpt_root, d)).remove()
                CallCache(os.path.join(ckpt_root, d)).remove()
        if dist:  # ... while the others wait
            from ..engine.devices import process_barrier

            process_barrier("jaxbandits: old checkpoint removed")
    if exp.runner is not None:  # a sweep (regret against T, d, ...): its own loop over settings
        return _run_sweep(name, exp, runs, horizon, seed, cfg, out, chunk, sweep_horizon, job, ckpt_root)
    built = exp.build(cfg)
    panels = built if isinstance(built, list) else [Panel("", *built)]
    curves = [(p.name, lab) for p in panels for lab in p.policies]
    twice = [c for i, c in enumerate(curves) if c in curves[:i]]
    if twice:
        raise ValueError(f"experiment {name!r}: two panels are named {twice[0][0]!r} and both have the policy "
                         f"{twice[0][1]!r}: give each panel its own name, or one's curves would replace the other's")
    ch = chunk if chunk is not None else exp.chunk
    if resume and chunk is None:  # continue with the chunks the run was cut into (a kill -9 leaves no command)
        ch = _saved_chunk(ckpt_root, ch)
    # chunks: progress, checkpoints, resume; every process of a distributed run cuts the same chunks
    if ch is None and (progress or out is not None or dist):
        ch = max(1, horizon // 20)
    checkpoints = tuple(c for c in exp.checkpoints if c <= horizon)  # run() said so of any dropped
    record = _record_within(exp.record, horizon)
    if checkpoints:  # make sure every checkpoint is a record point
        from ..engine import record_points

        record = np.union1d(record_points(horizon, record), np.asarray(checkpoints) - 1)
    outs, panel_of, lines, timing = {}, {}, {}, {"compile_s": 0.0, "run_s": 0.0, "devices": 1}
    cps = []
    with contextlib.ExitStack() as stack:
        stop = None
        if out is not None and not dist:  # one process of a distributed run cannot stop alone
            stop = stack.enter_context(graceful_stop(
                "jaxbandits: stopping at the end of this chunk (Ctrl-C again to abort at once)"))
        for i, p in enumerate(panels):
            cp = None
            if ckpt_root is not None:
                cp = Checkpoint(os.path.join(ckpt_root, f"panel-{i}"),
                                extra={"experiment": name, "config": repr(sorted(cfg.items())), "seed": seed,
                                       "panel": p.name, **({"part": list(part)} if part else {})})
                cps.append(cp)
            try:
                if dist:
                    from .distributed import simulate_global

                    o = simulate_global(p.env, p.channel, p.policies, horizon, V.seed_key(seed), runs, record=record,
                                        chunk=ch, progress=progress, checkpoint=cp,
                                        resume=bool(resume and cp is not None and cp.exists()), keep=job.get("keep"))
                else:
                    channel = p.channel
                    if part is not None:  # the calendar width of the whole run
                        from .parts import whole_width_channel

                        channel = whole_width_channel(p, horizon, runs, n_here)
                    keep = job.get("keep")
                    if part is not None:  # the whole run's block size and the share of its kept curves
                        from ..engine.stats import block_size
                        from ..engine import record_points

                        keep = _panel_keep(p, horizon, runs, len(record_points(horizon, record)), keep, first,
                                           n_here)
                    o = simulate(p.env, channel, p.policies, horizon, V.seed_key(seed), n_here, record=record,
                                 chunk=ch, progress=progress, checkpoint=cp, resume=bool(resume and cp.exists()),
                                 stop=stop, first_run=first, path=job.get("path", "auto"), keep=keep,
                                 stats_block=block_size(runs) if part is not None else None)
            except Interrupted as e:
                e.resume_command = resume_command(exp.source or name, runs, horizon, seed, job["overrides"], out,
                                                   chunk, part)
                _write_partial(out, name, cfg, seed, runs, horizon, i, len(panels), e)
                raise
            except OSError as e:  # a full disk while checkpointing
                raise _disk_full_hint(e, ckpt_root, done=False) from None
            collect_panel(o, p, outs, panel_of, lines, timing)
    steps = n_here * horizon * len(outs)
    timing["run_steps_per_s"] = steps / max(timing["run_s"], 1e-12)
    full_cfg = {"channels": sorted({str(p.channel) for p in panels}), **cfg,
                **describe_run(exp, panels, job["overrides"])}
    res = assemble_results(name, full_cfg, seed, n_here, horizon, outs, exp.metric, timing, panel_of, lines, checkpoints,
                    exp.layout, exp.ratio_to)
    try:
        if out is not None and part is not None:
            from .parts import save_part

            save_part(out, {"experiment": name, "config": cfg, "full_config": full_cfg, "seed": seed, "runs": runs,
                            "horizon": horizon, "part": part[0], "parts": part[1], "first_run": first, "n_runs": n_here,
                            "t": res.t, "metric": exp.metric, "panel_of": panel_of, "log_lines": lines,
                            "checkpoints": list(checkpoints), "layout": exp.layout, "ratio_to": exp.ratio_to,
                            "timing": timing, "versions": res.versions}, outs)
        elif out is not None:
            res.save(out)
    except OSError as e:
        raise _disk_full_hint(e, ckpt_root, done=True) from None
    if out is not None:
        for cp in cps:  # the results are safely written: the checkpoints have done their job
            cp.remove()
        with contextlib.suppress(OSError):
            os.rmdir(ckpt_root)
    return res


def _run_sweep(name, exp, runs, horizon, seed, cfg, out, chunk, sweep_horizon, job, ckpt_root):
    """A sweep: its runner, with every unit (simulation, fit) saved as it completes so a resumed
    sweep replays them. A part (``--part I/N``) computes only its share of the units and writes
    them to its part folder; a distributed run has each process compute its share, exchanges the
    units, and replays the sweep on every process (docs/cluster.md)."""
    part, dist = job.get("part"), job.get("distributed", False)
    if dist:
        from .distributed import run_sweep_global

        folder = None if ckpt_root is None else os.path.join(ckpt_root, "sweep")
        res = run_sweep_global(exp.runner, cfg, runs, seed, sweep_horizon, folder)
        if out is not None:
            res.save(out)
            CallCache(folder).remove()
            with contextlib.suppress(OSError):
                os.rmdir(ckpt_root)
        return res
    from .sweeping import call_runner, sweep_checkpoints

    if out is None:
        return call_runner(exp.runner, cfg, runs, seed, sweep_horizon)
    share = None
    if part is not None:
        from ..engine.checkpoint import SweepShare

        share = SweepShare(*part)
    # every completed unit of the sweep is saved; a resumed sweep replays them
    with graceful_stop("jaxbandits: stopping before the next setting of the sweep (Ctrl-C again to abort "
                       "at once)") as stop, sweep_checkpoints(os.path.join(ckpt_root, "sweep"), stop,
                                                              share=share) as ctx:
        try:
            res = call_runner(exp.runner, cfg, runs, seed, sweep_horizon, ctx)
        except Interrupted as e:
            e.resume_command = resume_command(exp.source or name, job["given_runs"], sweep_horizon, seed,
                                               job["overrides"], out, chunk, part)
            # a sweep's horizon is its config's (or the one given); it has no panels
            _write_partial(out, name, cfg, seed, runs, sweep_horizon, None, None, e, part)
            raise
    try:
        if part is not None:
            from .parts import save_sweep_part

            save_sweep_part(out, {"experiment": name, "source": list(exp.source) if exp.source else None,
                                  "config": cfg, "seed": seed, "runs": runs, "horizon": sweep_horizon,
                                  "part": part[0], "parts": part[1], "versions": versions()}, ctx)
            res = None  # the runner's own result holds placeholders for the other parts' units
        else:
            res.save(out)
    except OSError as e:
        raise _disk_full_hint(e, ckpt_root, done=True) from None
    ctx.cache.remove()
    with contextlib.suppress(OSError):
        os.rmdir(ckpt_root)
    return res


def _disk_full_hint(e: OSError, ckpt_root, done: bool) -> OSError:
    """``e`` as it is, or for a full disk (:func:`jaxbandits.core.fileio.disk_full_error`: the file and the
    cause) with what is kept and how to go on: the checkpoint in ``ckpt_root`` holds the finished
    run (``done``) or its chunks saved so far, and ``--resume`` continues from it (docs/results.md)."""
    if e.errno != errno.ENOSPC or ckpt_root is None or not os.path.isdir(ckpt_root):
        return e
    what = ("the finished run is kept in its checkpoint" if done
            else "the run is kept up to its last saved chunk in its checkpoint")
    goon = ("write its results without simulating again" if done else "continue from there")
    return OSError(errno.ENOSPC, f"{str(e.strerror or e).removesuffix(fileio.FREE_SPACE)}; {what} ({ckpt_root}): free space, then run the same command "
                   f"with --resume to {goon} (or --force to start afresh)")


def _saved_chunk(ckpt_root, default):
    """The chunk size an interrupted run's checkpoint was cut with (its fingerprint), else ``default``."""
    for d in sorted(os.listdir(ckpt_root)) if ckpt_root and os.path.isdir(ckpt_root) else ():
        fp = fileio.read_json(os.path.join(ckpt_root, d, "fingerprint.json"))
        if isinstance(fp, dict) and isinstance(fp.get("chunk"), int):
            return fp["chunk"]
    return default


def resume_command(name, runs, horizon, seed, overrides, out, chunk, part=None) -> str:
    """The ``jaxbandits run`` command line that resumes an interrupted run (written into a partial
    ``summary.json`` and printed on an interrupt; docs/results.md).

    Args:
        name: the experiment's name, or the words naming an experiment file (a sequence of str).
        runs: the number of runs (None: left out).
        horizon: the number of rounds (None: left out).
        seed: the seed.
        overrides: ``{config key: value}`` (None: none), each a ``--set key=repr(value)``.
        out: the output folder.
        chunk: rounds per chunk (None: left out).
        part: ``(i, n)``: the part run (None: a whole run).

    Returns:
        The command, a str quoted for a POSIX shell.

    Examples:
        >>> from jaxbandits.experiments import resume_command
        >>> resume_command("classic-bernoulli", 8, 500, 0, {"n_arms": 5}, "out", None)
        'jaxbandits run classic-bernoulli --runs 8 --horizon 500 --seed 0 --set n_arms=5 --out out --resume'
        >>> resume_command("classic-bernoulli", 8, None, 0, None, "out", 100, part=(1, 4))
        'jaxbandits run classic-bernoulli --runs 8 --seed 0 --chunk 100 --part 1/4 --out out --resume'
    """
    import shlex

    cmd = ["jaxbandits", "run", *((name,) if isinstance(name, str) else name)]
    if runs is not None:
        cmd += ["--runs", str(runs)]
    if horizon is not None:
        cmd += ["--horizon", str(horizon)]
    cmd += ["--seed", str(seed)]
    for k, v in (overrides or {}).items():
        cmd += ["--set", f"{k}={v!r}"]
    if chunk is not None:
        cmd += ["--chunk", str(chunk)]
    if part is not None:
        cmd += ["--part", f"{part[0]}/{part[1]}"]
    return " ".join(shlex.quote(c) for c in cmd + ["--out", str(out), "--resume"])


def _write_partial(out, name, cfg, seed, runs, horizon, panel, n_panels, err, part=None):
    """``summary.json`` of an interrupted run: partial, how far it got, how to resume."""

    doc = {"experiment": name, "config": fileio.json_normal(cfg), "seed": seed, "runs": runs,
           "horizon": horizon, "partial": True, "panels_done": panel, "panels": n_panels,
           "rounds_done_in_panel": err.rounds_done, "checkpoint": os.path.join(out, ".checkpoint"),
           "resume": err.resume_command}
    if n_panels is None:  # a sweep: units, not panels and rounds
        for k in ("panels_done", "panels", "rounds_done_in_panel"):
            doc.pop(k)
    if part is not None:
        doc["part"] = f"{part[0]}/{part[1]}"
    fileio.atomic_write(os.path.join(out, "summary.json"), fileio.json_writer(doc))
