"""Named experiments: a config (world, channel, delay law, policies and their parameters,
horizon, runs) and a ``build(config)`` that turns it into objects.

Experiments are found in three places, and nothing is registered by importing a module for its
side effects:

* :data:`BUILTIN`, an explicit table ``{name: "module:attribute"}`` of the experiments that ship
  with jaxbandits (the core ones below and the paper reproductions in
  ``jaxbandits/reproductions/``). A module is imported only when one of its experiments is asked
  for, so ``import jaxbandits.experiments`` imports no reproduction (nor NumPyro).
* Python entry points in the group ``jaxbandits.experiments`` (:data:`ENTRY_POINT_GROUP`), for
  experiments that live in a user's own package: ``[project.entry-points."jaxbandits.experiments"]``
  ``my-exp = "mypkg.experiments:MY_EXP"`` in its ``pyproject.toml``.
* :func:`register`, for an experiment defined in the current session (a notebook, a script).

A name defined in two places is an error naming both. ``experiments/`` holds the scripts and notes
that use the reproductions.
"""
from __future__ import annotations

import ast
import contextlib
import dataclasses
import errno
import importlib
import os
from importlib import metadata
from typing import Callable, Dict, List, Optional, Tuple

import numpy as np

from . import _io
from . import _validate as V
from . import channels as C
from . import delays as D
from . import envs as E
from .policies import classic as P
from .engine.checkpoint import CallCache, Checkpoint, Interrupted, graceful_stop
from .results import Results, versions
from .simulate import simulate


@dataclasses.dataclass(frozen=True)
class Panel:
    """One panel of a figure: a world, a channel and the policies compared on it (one compiled
    program), plus reference lines ``{label: coefficient c}`` drawn as ``c log t``."""

    name: str
    env: object
    channel: object
    policies: dict
    log_lines: dict = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True)
class Experiment:
    name: str
    description: str
    build: Callable  # config -> (env, channel, {label: policy}) or [Panel, ...]
    config: dict  # defaults; every key may be overridden by --set key=value
    horizon: int
    runs: int
    record: object = None
    metric: str = "regret"
    chunk: Optional[int] = None
    keep: object = None  # per-run curves kept: "all", "none", N; None: the default rule (docs/simulate.md)
    checkpoints: tuple = ()  # rounds at which summary/table report R(t) (and L(T) at T)
    layout: Optional[tuple] = None  # (rows, cols) of the figure's panels
    runner: Optional[Callable] = None  # sweeps: (config, runs, seed, horizon, sweep) -> SweepResults (jaxbandits.sweeping)
    ratio_to: Optional[str] = None  # plot each panel's curves as ratios to this policy's mean regret
    ignores: tuple = ()  # run options the experiment does not use ("horizon", "chunk"): giving one is an error
    horizon_keys: tuple = ()  # config keys that a horizon given to run() replaces (both at once: an error)
    ranges: dict = dataclasses.field(default_factory=dict)  # config key -> its allowed values, in words (show NAME)
    source: Optional[tuple] = None  # read from a file: the words naming it to `jaxbandits run` (FILE.toml, --set ...)


# ----------------------------------------------------------------------------- where experiments are found
#: The experiments that ship with jaxbandits: name -> "module:attribute", imported on first use.
BUILTIN: Dict[str, str] = {
    "quickstart": "jaxbandits.experiments:QUICKSTART",
    "classic-bernoulli": "jaxbandits.experiments:CLASSIC_BERNOULLI",
    "classic-delayed": "jaxbandits.experiments:CLASSIC_DELAYED",
    "vernade2017-fig1": "jaxbandits.reproductions.vernade2017:FIG1",
    "vernade2017-fig2": "jaxbandits.reproductions.vernade2017:FIG2",
    "vernade2017-fig3": "jaxbandits.reproductions.vernade2017:FIG3",
    "thune2019-example8": "jaxbandits.reproductions.thune2019:EXAMPLE8",
    "thune2019-heavy-tail": "jaxbandits.reproductions.thune2019:HEAVY_TAIL",
    "thune2019-bounds": "jaxbandits.reproductions.thune2019:BOUNDS",
    "pikeburke2018-fig3a": "jaxbandits.reproductions.pikeburke2018:FIG3A",
    "pikeburke2018-fig3b": "jaxbandits.reproductions.pikeburke2018:FIG3B",
    "pikeburke2018-appF": "jaxbandits.reproductions.pikeburke2018:APP_F",
    "vernade2020-fig1": "jaxbandits.reproductions.vernade2020:FIG1",
    "vernade2020-fig3": "jaxbandits.reproductions.vernade2020:FIG3",
    "bayes-fit-recovery": "jaxbandits.reproductions.bayes:FIT_RECOVERY",
    "bayes-ts-shared-delay": "jaxbandits.reproductions.bayes:TS_SHARED_DELAY",
    "bayes-ts-arm-delays": "jaxbandits.reproductions.bayes:TS_ARM_DELAYS",
    "bayes-ts-warm-start": "jaxbandits.reproductions.bayes:TS_WARM_START",
    "wang2021-fig2": "jaxbandits.reproductions.wang2021:FIG2",
    "wang2021-fig3": "jaxbandits.reproductions.wang2021:FIG3",
    "wang2021-fig4": "jaxbandits.reproductions.wang2021:FIG4",
    "wang2021-fig5": "jaxbandits.reproductions.wang2021:FIG5",
    "ope-bias-coverage": "jaxbandits.reproductions.ope:BIAS_COVERAGE",
}

#: The entry-point group in which other packages declare their experiments.
ENTRY_POINT_GROUP = "jaxbandits.experiments"

_SESSION: Dict[str, Experiment] = {}  # register()ed in this process


def _entry_points() -> list:
    return list(metadata.entry_points(group=ENTRY_POINT_GROUP))


def _table() -> Dict[str, Tuple[str, object]]:
    """name -> (where it is defined, what to load), over the three sources; imports nothing."""
    table: Dict[str, Tuple[str, object]] = {}

    def add(name, where, target):
        if name in table:
            raise ValueError(f"experiment name {name!r} is defined twice: by {table[name][0]} and by {where}; "
                             f"rename one of them")
        table[name] = (where, target)

    for name, ref in BUILTIN.items():
        add(name, f"jaxbandits ({ref})", ref)
    for ep in _entry_points():
        dist = getattr(getattr(ep, "dist", None), "name", None)
        add(ep.name, f"the entry point {ep.name} = {ep.value!r} (group {ENTRY_POINT_GROUP!r}"
                     + (f", package {dist})" if dist else ")"), ep)
    for name, exp in _SESSION.items():
        add(name, "jaxbandits.experiments.register()", exp)
    return table


def _load(name: str, where: str, target) -> Experiment:
    if isinstance(target, str):  # "module:attribute"
        module, _, attr = target.partition(":")
        obj = importlib.import_module(module)
        for part in attr.split("."):
            obj = getattr(obj, part)
    elif isinstance(target, Experiment):
        obj = target
    else:  # an entry point
        obj = target.load()
    if not isinstance(obj, Experiment):
        raise TypeError(f"experiment {name!r}: {where} must name a jaxbandits.experiments.Experiment, "
                        f"got {type(obj).__name__}")
    if obj.name != name:
        raise ValueError(f"experiment {name!r}: {where} names an Experiment called {obj.name!r}; "
                         f"the two names must agree")
    return obj


def names() -> List[str]:
    """The names of every experiment (built in, entry points, registered), sorted; imports no
    experiment module."""
    return sorted(_table())


def get(name: str) -> Experiment:
    """The experiment called ``name``; imports the module that defines it (only that one)."""
    table = _table()
    if name not in table:
        raise ValueError(f"unknown experiment {name!r}; registered: {', '.join(sorted(table))}")
    return _load(name, *table[name])


def load_all() -> Dict[str, Experiment]:
    """Every experiment, by name (sorted); imports every module that defines one."""
    return {name: _load(name, *src) for name, src in sorted(_table().items())}


def register(exp: Experiment, *, replace: bool = False) -> Experiment:
    """Make ``exp`` available by its name in this process (``get``, ``run``, ``names``). A name
    already used by a built-in or entry-point experiment is an error; one registered earlier in
    this session is an error unless ``replace=True``."""
    if not isinstance(exp, Experiment):
        raise TypeError(f"register expects a jaxbandits.experiments.Experiment, got {type(exp).__name__}")
    if not isinstance(exp.name, str) or not exp.name:
        raise ValueError(f"an experiment's name must be a non-empty string, got {exp.name!r}")
    if not (replace and exp.name in _SESSION):
        table = _table()
        if exp.name in table:
            raise ValueError(f"experiment name {exp.name!r} is already defined by {table[exp.name][0]}"
                             + ("; pass replace=True to replace it" if exp.name in _SESSION else "; choose another name"))
    _SESSION[exp.name] = exp
    return exp


def unregister(name: str) -> None:
    """Remove an experiment added by :func:`register` in this session."""
    if name not in _SESSION:
        raise ValueError(f"experiment {name!r} was not added by register(); registered in this session: "
                         f"{', '.join(sorted(_SESSION)) or 'none'}")
    del _SESSION[name]


def parse_set(items) -> dict:
    """``["key=value", ...]`` -> dict; values are Python literals (numbers, lists, True, None) or
    plain strings."""
    out = {}
    for it in items or []:
        if not isinstance(it, str) or "=" not in it:
            raise ValueError(f"--set expects key=value, got {it!r}")
        k, v = it.split("=", 1)
        k = k.strip()
        if not k.isidentifier():
            raise ValueError(f"--set key must be an identifier, got {k!r}")
        try:
            out[k] = ast.literal_eval(v.strip())
        except (ValueError, SyntaxError):
            out[k] = v.strip()
    return out


def _kind(v) -> str:
    if v is None:
        return "None"
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, (int, np.integer)):
        return "int"
    if isinstance(v, (float, np.floating)):
        return "float"
    if isinstance(v, str):
        return "str"
    if isinstance(v, (list, tuple)):
        return "list"
    if isinstance(v, dict):
        return "dict"
    return type(v).__name__


_KIND_NAMES = {"int": "an integer", "float": "a number", "str": "a string", "bool": "True or False",
               "list": "a list", "dict": "a dict", "None": "None"}


def _check_value(key, default, value):
    """An override must have the shape of the default: the same kind (an int where a float is
    expected is fine, a float where an int is, is not), a non-empty list where the default is one,
    list entries of the kinds the default's entries have; numbers finite and float32-representable
    (integers within int64). Ranges are the constructors' business (they name their parameter)."""
    kd, kv = _kind(default), _kind(value)
    if kd == "None":
        allowed = None
    elif kd == "float":
        allowed = {"float", "int"}
    else:
        allowed = {kd}
    if allowed is not None and kv not in allowed:
        raise ValueError(f"config key {key!r} must be {_KIND_NAMES.get(kd, kd)} like its default {default!r}, got {value!r}")
    if kv == "float":
        x = float(value)
        if not np.isfinite(x) or abs(x) > V.F32_MAX:
            raise ValueError(f"config key {key!r} must be a finite float32-representable number "
                             f"(|x| <= {V.F32_MAX:.8g}), got {value!r}")
    if kv == "int" and not -(2**63) <= int(value) < 2**63:
        raise ValueError(f"config key {key!r} must be an integer within int64, got {value!r}")
    if kv == "list" and kd == "list":
        if len(default) > 0 and len(value) == 0:
            raise ValueError(f"config key {key!r} must be a non-empty list like its default {list(default)!r}, got []")
        subs = list(default)
        kinds = {_kind(d) for d in subs}
        if "float" in kinds:
            kinds.add("int")
        for i, v in enumerate(value):
            kv_i = _kind(v)
            if subs and kv_i not in kinds:
                want = " or ".join(_KIND_NAMES.get(k, k) for k in sorted(kinds - {"int"} if "float" in kinds else kinds))
                raise ValueError(f"config key {key!r}: entry {i} must be {want} like the default's entries "
                                 f"{list(default)!r}, got {v!r}")
            same = ([d for d in subs if _kind(d) == kv_i]
                    or [d for d in subs if kv_i == "int" and _kind(d) == "float"])
            if same:  # check the entry against the default's entries of its kind
                _check_value(f"{key}[{i}]", _widest(same), v)
            elif kv_i in ("float", "int", "list"):
                _check_value(f"{key}[{i}]", None, v)
    if kv == "list" and kd == "None":
        for i, v in enumerate(value):
            _check_value(f"{key}[{i}]", None, v)


def _widest(entries):
    """Among default entries of one kind, the one to check an override entry against: for lists,
    one that holds every kind the entries hold (the union of their entries)."""
    if len(entries) == 1 or _kind(entries[0]) != "list":
        return entries[0]
    merged = []
    for e in entries:
        merged.extend(e)
    return merged


def resolve_config(exp: Experiment, overrides: Optional[dict]) -> dict:
    """The experiment's config with ``overrides`` applied. Every override names a known key and has
    the kind of its default (a number, a non-empty list of numbers, a string, ...): errors name the
    key before anything is built or compiled."""
    cfg = dict(exp.config)
    if overrides is not None and not isinstance(overrides, dict):
        raise TypeError(f"overrides must be a dict {{key: value}}, got {type(overrides).__name__}")
    for k, v in (overrides or {}).items():
        if k not in cfg:
            raise ValueError(f"unknown config key {k!r} for experiment {exp.name!r}; keys: {', '.join(sorted(cfg))}")
        _check_value(k, cfg[k], v)
        cfg[k] = v
    return cfg


def run(name, runs: Optional[int] = None, horizon: Optional[int] = None, seed: int = 0,
        overrides: Optional[dict] = None, out: Optional[str] = None, progress: bool = False,
        chunk: Optional[int] = None, resume: bool = False, force: bool = False, part=None,
        distributed: bool = False, path: str = "auto", keep=None) -> Results:
    """Run a registered experiment (all its policies in one compiled program); save to ``out``.
    ``name`` may also be an :class:`Experiment` (one read from a file: :func:`jaxbandits.expfile.experiment`).

    ``out`` is checked and locked before anything runs: a folder that cannot be written raises
    :class:`jaxbandits._io.OutputFolderError`, one another run is writing
    :class:`~jaxbandits._io.FolderInUseError`, one holding another experiment's results (or this
    experiment's with other settings) :class:`~jaxbandits._io.ResultsExistError` unless
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
    instead of results; :func:`jaxbandits.parts.merge`
    combines the ``n`` parts into the results of the whole run, bitwise. Returns the results of the
    part's runs alone (``None`` for a sweep's part: its units are not results by themselves). ``distributed=True`` shards the runs over the devices of every process of
    ``jax.distributed`` (:func:`jaxbandits.distributed.initialize` first); process 0 writes ``out``
    (docs/cluster.md). ``keep`` chooses the per-run curves kept (``"all"``, ``"none"``, the first
    ``N`` runs; default: every run while they are small, the statistics alone beyond: docs/simulate.md).
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
    with _io.output_folder(out, ident, force=bool(force)):
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
        held = _io._read_json(os.path.join(out, "part.json"))
        if isinstance(held, dict) and not job["force"] and (held.get("part"), held.get("parts")) != job["part"]:
            raise ValueError(f"--out {out} holds part {held.get('part')}/{held.get('parts')}; give each part its own "
                             f"folder (or --force to replace it)")
    if distributed:
        from . import distributed as _dist

        job["distributed"] = True
        job["process"] = _dist.process_index()


def check_keep(keep):
    """``keep`` as the simulator takes it: ``None``, ``"all"``, ``"none"`` or an int ``>= 0`` (a
    string of digits from the command line is that int); anything else a ValueError naming it."""
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
    from .engine.driver import resolve_keep
    from .engine.round import problem

    probs = [problem(p.env, p.channel, pol, horizon, n_runs=runs, label=lab) for lab, pol in p.policies.items()]
    n = resolve_keep(keep, [q.spec.n_arms for q in probs], runs, n_rec, any(q.world.adversarial for q in probs))
    return max(0, min(n - first, n_here))


def _check_path(name, exp, path):
    """``path`` (docs/fused.md) is one of the simulator's; a sweep or an offline study always runs its
    own loop on the scan path, so forcing the fused one there is an error rather than ignored."""
    from .simulate import PATHS

    if path not in PATHS:
        raise ValueError(f"path must be one of {', '.join(PATHS)}, got {path!r}")
    if path == "fused" and exp.runner is not None:
        raise ValueError(f"experiment {name!r} is a sweep or study with its own loop: it runs on the scan path "
                         "(leave --path out, or give --path scan)")


def _run(name, exp, runs, horizon, seed, cfg, out, progress, chunk, sweep_horizon, job):
    resume = job["resume"]
    part, dist = job.get("part"), job.get("distributed", False)
    first, n_here = job.get("range", (0, runs))
    base = out if out is not None else job.get("dist_out")  # the other processes of a distributed run read it
    ckpt_root = None if base is None else os.path.join(base, ".checkpoint")
    if dist:  # the checks below must come out alike on every process (one collective, then the same errors)
        from .engine.driver import agree_across_processes

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
            from .engine.driver import process_barrier

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
        from .simulate import record_points

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
                        from .engine.stats import block_size
                        from .simulate import record_points

                        keep = _panel_keep(p, horizon, runs, len(record_points(horizon, record)), keep, first,
                                           n_here)
                    o = simulate(p.env, channel, p.policies, horizon, V.seed_key(seed), n_here, record=record,
                                 chunk=ch, progress=progress, checkpoint=cp, resume=bool(resume and cp.exists()),
                                 stop=stop, first_run=first, path=job.get("path", "auto"), keep=keep,
                                 stats_block=block_size(runs) if part is not None else None)
            except Interrupted as e:
                e.resume_command = _resume_command(exp.source or name, runs, horizon, seed, job["overrides"], out,
                                                   chunk, part)
                _write_partial(out, name, cfg, seed, runs, horizon, i, len(panels), e)
                raise
            except OSError as e:  # a full disk while checkpointing
                raise _disk_full_hint(e, ckpt_root, done=False) from None
            _collect(o, p, outs, panel_of, lines, timing)
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


def delay_words(law) -> Optional[str]:
    """A delay law in words for a figure's title: ``geometric delays, mean 50``."""
    if law is None:
        return None
    name = type(law).__name__.lower()
    try:
        return f"{name} delays, mean {float(law.mean):.4g}"
    except Exception:  # a law of the user's without a mean
        return f"{name} delays"


def describe_run(exp, panels, overrides) -> dict:
    """What the figures say of a run besides its numbers (plotting.caption, plotting.figure_regret):
    the experiment's ``description``, the settings changed from its defaults or its file (``--set``),
    and the delay laws of its worlds in words."""
    changed = {str(k): v for k, v in (overrides or {}).items()}
    src = list(exp.source or ())[1:]  # an experiment file's own --set words: "--set", "key=value", ...
    for flag, kv in zip(src[::2], src[1::2]):
        if flag == "--set" and "=" in kv:
            k, v = kv.split("=", 1)
            changed[k] = v
    laws = sorted({w for w in (delay_words(getattr(p.env, "delay", None)) for p in panels) if w})
    return {"description": exp.description, "overrides": changed, "delays": laws}


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
        from .engine.checkpoint import SweepShare

        share = SweepShare(*part)
    # every completed unit of the sweep is saved; a resumed sweep replays them
    with graceful_stop("jaxbandits: stopping before the next setting of the sweep (Ctrl-C again to abort "
                       "at once)") as stop, sweep_checkpoints(os.path.join(ckpt_root, "sweep"), stop,
                                                              share=share) as ctx:
        try:
            res = call_runner(exp.runner, cfg, runs, seed, sweep_horizon, ctx)
        except Interrupted as e:
            e.resume_command = _resume_command(exp.source or name, job["given_runs"], sweep_horizon, seed,
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
    """``e`` as it is, or for a full disk (:func:`jaxbandits._io.disk_full_error`: the file and the
    cause) with what is kept and how to go on: the checkpoint in ``ckpt_root`` holds the finished
    run (``done``) or its chunks saved so far, and ``--resume`` continues from it (docs/results.md)."""
    if e.errno != errno.ENOSPC or ckpt_root is None or not os.path.isdir(ckpt_root):
        return e
    what = ("the finished run is kept in its checkpoint" if done
            else "the run is kept up to its last saved chunk in its checkpoint")
    goon = ("write its results without simulating again" if done else "continue from there")
    return OSError(errno.ENOSPC, f"{str(e.strerror or e).removesuffix(_io.FREE_SPACE)}; {what} ({ckpt_root}): free space, then run the same command "
                   f"with --resume to {goon} (or --force to start afresh)")


def _saved_chunk(ckpt_root, default):
    """The chunk size an interrupted run's checkpoint was cut with (its fingerprint), else ``default``."""
    for d in sorted(os.listdir(ckpt_root)) if ckpt_root and os.path.isdir(ckpt_root) else ():
        fp = _io._read_json(os.path.join(ckpt_root, d, "fingerprint.json"))
        if isinstance(fp, dict) and isinstance(fp.get("chunk"), int):
            return fp["chunk"]
    return default


def assemble_results(name, full_cfg, seed, runs, horizon, outs, metric, timing, panel_of, lines, checkpoints, layout,
              ratio_to) -> Results:
    """The results of an experiment from its outputs ``{label: SimOutput}``: one function for a run
    done whole and for merged parts (:mod:`jaxbandits.parts`), so both compute the same numbers."""
    res = Results.from_sim(name, full_cfg, seed, runs, horizon, outs, metric=metric, timing=timing)
    res.panels = panel_of if any(panel_of.values()) else {}
    res.log_lines = lines if any(lines.values()) else {}
    res.checkpoints = list(checkpoints)
    res.layout = layout
    res.ratio_to = ratio_to
    return res


def _collect(o, p, outs, panel_of, lines, timing):
    """Add one panel's outputs to the experiment's."""
    tm = {}
    name = (lambda lab: f"{p.name}: {lab}") if p.name else (lambda lab: lab)
    for lab, x in o.items():
        key = name(lab)
        if x.stats is not None and p.name:  # the paired statistics name the other policies as the results do
            x = x._replace(stats=x.stats._replace(paired={name(k): v for k, v in x.stats.paired.items()}))
        outs[key], panel_of[key] = x, p.name
        tm = x.timing
    timing["compile_s"] += tm["compile_s"]
    timing["run_s"] += tm["run_s"]
    timing["devices"] = tm["devices"]
    if "processes" in tm:  # a distributed run
        timing["processes"] = tm["processes"]
    if "path" in tm:  # a panel that ran on the fused path (docs/fused.md) says so
        timing.setdefault("paths", {})[p.name or "all"] = tm["path"]
    lines[p.name] = dict(p.log_lines)


def _resume_command(name, runs, horizon, seed, overrides, out, chunk, part=None) -> str:
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

    doc = {"experiment": name, "config": _io._normal(cfg), "seed": seed, "runs": runs,
           "horizon": horizon, "partial": True, "panels_done": panel, "panels": n_panels,
           "rounds_done_in_panel": err.rounds_done, "checkpoint": os.path.join(out, ".checkpoint"),
           "resume": err.resume_command}
    if n_panels is None:  # a sweep: units, not panels and rounds
        for k in ("panels_done", "panels", "rounds_done_in_panel"):
            doc.pop(k)
    if part is not None:
        doc["part"] = f"{part[0]}/{part[1]}"
    _io.atomic_write(os.path.join(out, "summary.json"), _io.json_writer(doc))


def type_name(v) -> str:
    """The type of a config value in words: ``int``, ``float``, ``str``, ``list[float]``,
    ``list[list[int]]``, ``list[str | int]``..."""
    k = _kind(v)
    if k != "list":
        return k
    subs = sorted({type_name(x) for x in v})
    return f"list[{' | '.join(subs)}]" if subs else "list"


def show(exp: Experiment, overrides: Optional[dict] = None) -> str:
    """What ``jaxbandits show NAME`` prints: the description, the run settings, and every key
    ``--set`` accepts with its type, default (and value, if ``overrides`` changes it) and allowed
    values (:attr:`Experiment.ranges`)."""
    cfg = resolve_config(exp, overrides)
    lines = [f"{exp.name}: {exp.description}", ""]
    if exp.runner is not None:
        lines.append(f"a loop of its own (over settings or replications), {exp.runs} runs by default"
                     + ("" if "horizon" in exp.ignores else
                        "; --horizon T runs it at T alone" + (f" (instead of {', '.join(exp.horizon_keys)})"
                                                               if exp.horizon_keys else "")))
    else:
        rec = exp.record
        rec = ("about 200 evenly spaced record points" if rec is None else
               f"{rec[1]} record points spaced evenly in log t" if isinstance(rec, tuple) else f"record {rec!r}")
        lines.append(f"horizon {exp.horizon}, {exp.runs} runs, {rec}"
                     + (f", R(t) reported at t = {', '.join(map(str, exp.checkpoints))}" if exp.checkpoints else ""))
    if exp.ignores:
        lines.append(f"run options it does not use: {', '.join('--' + o for o in exp.ignores)}")
    lines += ["", "settable keys (--set KEY=VALUE):" if cfg else "no settable key"]
    rows = [("key", "type", "default", "allowed")]
    for k, d in exp.config.items():
        dv = repr(d) + (f" (now {cfg[k]!r})" if cfg[k] != d else "")
        rows.append((k, type_name(d), dv, exp.ranges.get(k, "(not stated: the constructors check it)")))
    if cfg:
        w = [min(max(len(r[i]) for r in rows), 40) for i in range(3)]
        for r in rows:
            lines.append("  " + "  ".join(c.ljust(w[i]) for i, c in enumerate(r[:3])) + "  " + r[3])
    lines += ["", f"write it as an experiment file: jaxbandits show {exp.name} --toml > {exp.name}.toml"]
    return "\n".join(lines)


# ----------------------------------------------------------------------------- core experiments
def _build_quickstart(cfg):
    env = E.conversions(cfg["theta"], D.geometric(mean=cfg["delay_mean"]))
    ch = C.conversions(window=cfg["window"])
    pols = {"UCB1": P.ucb1(), "KL-UCB": P.kl_ucb(), "Thompson": P.thompson(), "random": P.uniform_random()}
    return env, ch, pols


QUICKSTART = Experiment(
    "quickstart",
    "Conversions with geometric delays seen through a censored window: UCB1, KL-UCB, Thompson, random",
    _build_quickstart,
    {"theta": [0.5, 0.4, 0.3, 0.2], "delay_mean": 50.0, "window": 200},
    horizon=10000, runs=1000,
    ranges={"theta": "2 to 2**20 conversion rates, each in [0, 1]",
            "delay_mean": "mean of the geometric delay law, in [0, 2**30]",
            "window": "censoring window m (conversions later than m rounds are never seen), integer >= 0"})


def _build_classic(cfg):
    K = V.integer("n_arms", cfg["n_arms"], lo=2)
    env = E.bernoulli(np.linspace(cfg["low"], cfg["high"], K))
    pols = {"UCB1": P.ucb1(), "KL-UCB": P.kl_ucb(), "Thompson": P.thompson(), "Exp3": P.exp3()}
    return env, C.attributed(), pols


CLASSIC_BERNOULLI = Experiment(
    "classic-bernoulli",
    "K=10 Bernoulli arms, means linspace(0.1, 0.9), no delay: UCB1, KL-UCB, Thompson, Exp3",
    _build_classic, {"n_arms": 10, "low": 0.1, "high": 0.9}, horizon=10000, runs=200,
    ranges={"n_arms": "integer in [2, 2**20]", "low": "lowest arm mean, in [0, 1]", "high": "highest arm mean, in [0, 1]"})


def _build_delayed(cfg):
    K = V.integer("n_arms", cfg["n_arms"], lo=2)
    env = E.bernoulli(np.linspace(cfg["low"], cfg["high"], K), delay=D.uniform(0, int(cfg["max_delay"])))
    pols = {"UCB1": P.ucb1(), "KL-UCB": P.kl_ucb(), "Thompson": P.thompson(), "Exp3": P.exp3()}
    return env, C.attributed(), pols


CLASSIC_DELAYED = Experiment(
    "classic-delayed",
    "classic-bernoulli with uniform delays on {0..max_delay}: the cost of waiting for feedback",
    _build_delayed, {"n_arms": 10, "low": 0.1, "high": 0.9, "max_delay": 200}, horizon=10000, runs=200,
    ranges={"n_arms": "integer in [2, 2**20]", "low": "lowest arm mean, in [0, 1]", "high": "highest arm mean, in [0, 1]",
            "max_delay": "delays uniform on {0..max_delay}, an integer in [0, 2**30]"})

