"""An experiment split into parts (``jaxbandits run NAME --part i/n``) and the parts merged
(``jaxbandits merge DIR... --out OUT``) into results bitwise identical to one run (docs/cluster.md).

Part ``i`` of ``n`` runs the global runs ``[floor(i N / n), floor((i + 1) N / n))`` of the ``N``
runs (``simulate(..., first_run=...)``: run ``r`` is keyed by ``fold_in(key, r)``, so a part's runs
are those runs of the whole, docs/conventions.md §8) and writes a *part folder*:

    part.json   what the part is of (experiment, config, seed, runs, horizon, record points,
                versions), which part, and what the merged results need (metric, panels, ...)
    part.npz    the per-run records of each policy, as the simulator returns them

both written as one unit with the manifest and checksums of :mod:`jaxbandits.core.fileio`. The merge
checks that the parts are of one run (same experiment, config, seed, runs, horizon, record points
and the versions that change the bits), that every part ``0 .. n-1`` is there exactly once and
that each file matches its checksum; it then concatenates the per-run records in the layout the
simulator itself returns them in, and builds the results with the same code as a whole run
(means and standard errors over runs are computed there, from the merged per-run arrays, by the
same numpy reductions on arrays of the same memory layout: the same bits).
"""
from __future__ import annotations

import ast
import json
import os
import re
from typing import Dict, List, Sequence, Tuple

import numpy as np

from ..core import fileio

__all__ = ["parse_part", "run_range", "save_part", "save_sweep_part", "load_part", "merge", "MergeError", "PART_FORMAT"]

PART_FORMAT = "jaxbandits-part/1"
#: the arrays of a SimOutput that a part keeps (those that exist)
FIELDS = ("regret", "expected_regret", "reward", "pulls", "lost_to_W", "delayed_regret", "arm_totals")
#: the version entries that change the bits of a run: parts must agree on them
BIT_VERSIONS = ("jaxbandits", "jax", "backend", "x64", "threefry_partitionable")


class MergeError(ValueError):
    """Parts that cannot be merged (of different runs, missing, duplicated, damaged)."""


def parse_part(part) -> Tuple[int, int]:
    """``"i/n"`` or ``(i, n)`` -> ``(i, n)`` with ``0 <= i < n``.

    Args:
        part: ``"I/N"`` (the command line's ``--part``) or a pair of integers ``(I, N)``.

    Returns:
        ``(i, n)``, integers with ``n >= 1`` and ``0 <= i < n``.

    Raises:
        ValueError: a string not of the form ``I/N``, or ``i``, ``n`` out of range.
        TypeError: neither a string nor a pair of integers.

    Examples:
        >>> from jaxbandits.experiments.parts import parse_part
        >>> parse_part("1/3"), parse_part((0, 2))
        ((1, 3), (0, 2))
    """
    if isinstance(part, str):
        m = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", part)
        if not m:
            raise ValueError(f"--part must be I/N (part I of N, 0 <= I < N), got {part!r}")
        i, n = int(m.group(1)), int(m.group(2))
    elif isinstance(part, (tuple, list)) and len(part) == 2 and all(
            isinstance(x, (int, np.integer)) and not isinstance(x, bool) for x in part):
        i, n = int(part[0]), int(part[1])
    else:
        raise TypeError(f"part must be 'I/N' or a pair (I, N) of integers, got {part!r}")
    if n < 1 or not 0 <= i < n:
        raise ValueError(f"--part I/N needs N >= 1 and 0 <= I < N, got {i}/{n}")
    return i, n


def run_range(runs: int, i: int, n: int) -> Tuple[int, int]:
    """``(first run, number of runs)`` of part ``i`` of ``n`` of ``runs`` runs: parts split the
    blocks of the statistics (:func:`jaxbandits.engine.stats.block_size`), ``[floor(i nb / n),
    floor((i + 1) nb / n))`` of the ``nb`` blocks, so each part reduces whole blocks and the merge
    combines the blocks the whole run combines (1001 runs in 3 parts: 336, 336 and 329 runs).

    Args:
        runs: the whole run's number of runs ``N``.
        i: the part, ``0 <= i < n``.
        n: the number of parts, at most the number of blocks.

    Returns:
        ``(first run, number of runs)`` of part ``i``.

    Raises:
        ValueError: more parts than blocks (some part would get no run).

    Examples:
        >>> from jaxbandits.experiments.parts import run_range
        >>> [run_range(1001, i, 3) for i in range(3)]
        [(0, 336), (336, 336), (672, 329)]
    """
    from ..engine.stats import block_size

    B = block_size(runs)
    nb = -(-runs // B)
    if n > nb:
        raise ValueError(f"--part {i}/{n}: {n} parts of {runs} runs ({nb} blocks of {B} runs) leave some part without "
                         f"a run; give at most {nb} parts (or more --runs)")
    a, b = (i * nb) // n * B, min(((i + 1) * nb) // n * B, runs)
    return a, b - a


def whole_width_channel(panel, horizon: int, runs: int, runs_here: int):
    """The channel a part must use so that its calendar width ``W`` is the one the whole run
    resolves: the default width depends on the number of runs (calendars within 2 GiB,
    docs/conventions.md §3), so a part of fewer runs could otherwise get a wider calendar than the
    whole, and other bits where the whole loses records to ``W``."""
    import dataclasses

    from ..engine.round import problem

    ch = panel.channel
    if getattr(ch, "width", None) is not None or runs_here == runs:
        return ch
    widths = {}
    for lab, pol in panel.policies.items():
        whole = problem(panel.env, ch, pol, horizon, n_runs=runs, label=lab).cspec.width
        here = problem(panel.env, ch, pol, horizon, n_runs=runs_here, label=lab).cspec.width
        widths[lab] = (whole, here)
    if all(w == h for w, h in widths.values()):
        return ch
    if len({w for w, _ in widths.values()}) == 1 and dataclasses.is_dataclass(ch):
        return dataclasses.replace(ch, width=next(iter(widths.values()))[0])
    raise ValueError(f"--part: the policies of panel {panel.name!r} get different calendar widths in the whole run "
                     f"({ {k: w for k, (w, _) in widths.items()} }); a part cannot reproduce them: give the "
                     "channel an explicit width in the config, or run whole")


# ----------------------------------------------------------------------------- writing a part
def save_part(out, meta: dict, outs: Dict[str, object]) -> dict:
    """Write the part folder ``out``: ``part.json`` (``meta``) and ``part.npz`` (the records of
    ``outs``, ``{label: SimOutput}``), as one unit (:func:`jaxbandits.core.fileio.save_files`).

    Args:
        out: the part folder (created; refused if it holds other results).
        meta: what the part is of: at least ``experiment``, ``config``, ``part`` and ``parts``
            (the command line adds what the merge needs: seed, runs, horizon, versions, ...).
        outs: ``{label: SimOutput}``, the part's results.

    Returns:
        ``{file name: path}`` of the files written.

    Examples:
        >>> import os, tempfile
        >>> import numpy as np
        >>> from jaxbandits.engine.recording import SimOutput
        >>> from jaxbandits.experiments.parts import load_part, save_part
        >>> out = SimOutput(t=np.array([50, 100]), regret=np.ones((2, 2), np.float32), expected_regret=None,
        ...                 reward=None, pulls=None, lost_to_W=np.zeros(2, np.int32), width=8, timing={})
        >>> folder = os.path.join(tempfile.mkdtemp(), "part0")
        >>> meta = {"experiment": "demo", "config": {}, "part": 0, "parts": 2}
        >>> sorted(save_part(folder, meta, {"ucb1": out}))
        ['part.json', 'part.npz']
        >>> load_part(folder)["fields"]
        {'ucb1': ['regret', 'lost_to_W']}
        >>> import shutil; shutil.rmtree(os.path.dirname(folder))
    """
    arrays, fields = {}, {}
    for j, (lab, o) in enumerate(outs.items()):
        fields[lab] = [f for f in FIELDS if getattr(o, f) is not None]
        for f in fields[lab]:
            arrays[f"p{j}_{f}"] = np.asarray(getattr(o, f))
        arrays[f"p{j}_t"] = np.asarray(o.t)
        if o.stats is not None:  # the block statistics: the merge combines the blocks of every part in order
            arrays.update(o.stats.to_flat(f"p{j}_stats/"))
    meta = dict(meta, format=PART_FORMAT, labels=list(outs), fields=fields,
                widths={lab: int(o.width) for lab, o in outs.items()})

    def write_npz(p):
        with open(p, "wb") as fh:
            np.savez(fh, **arrays)

    identity = {"experiment": meta["experiment"], "config": meta["config"], "part": f"{meta['part']}/{meta['parts']}"}
    return fileio.save_files(out, {"part.json": fileio.json_writer(fileio.json_normal(meta)), "part.npz": write_npz}, identity)


def save_sweep_part(out, meta: dict, ctx) -> dict:
    """Write the part folder of a split sweep: ``part.json`` (``meta``, the sweep's units in the
    order it asked for them and which part owns each) and ``part.npz`` (the bytes of each unit this
    part owns, as :class:`jaxbandits.engine.checkpoint.CallCache` saves them), as one unit.

    Args:
        out: the part folder.
        meta: what the part is of (as :func:`save_part`'s).
        ctx: the :class:`jaxbandits.experiments.sweeping.Sweep` the part ran (its ``units`` and ``cache``).

    Returns:
        ``{file name: path}`` of the files written.

    Raises:
        RuntimeError: a unit this part owns is not in the cache (a defect: it cannot happen).

    Examples:
        >>> import os, tempfile
        >>> from jaxbandits.experiments.parts import load_part, save_sweep_part
        >>> from jaxbandits.experiments.sweeping import SweepShare, sweep_checkpoints
        >>> with sweep_checkpoints(None, share=SweepShare(0, 2)) as sweep:  # part 0 of 2
        ...     a = sweep.unit({"replication": 0}, lambda: [1], kind="json")
        ...     b = sweep.unit({"replication": 1}, lambda: [2], kind="json")  # part 1's: a placeholder
        >>> folder = os.path.join(tempfile.mkdtemp(), "part0")
        >>> meta = {"experiment": "demo", "config": {}, "part": 0, "parts": 2}
        >>> _ = save_sweep_part(folder, meta, sweep)
        >>> [owner for _, _, owner in load_part(folder)["units"]]
        [0, 1]
        >>> import shutil; shutil.rmtree(os.path.dirname(folder))
    """
    mine = {uid: kind for uid, kind, owner in ctx.units if owner == meta["part"]}
    arrays = {}
    for uid, kind in mine.items():
        data = ctx.cache.get_bytes(uid, kind)
        if data is None:  # cannot happen: this part computed or replayed every unit it owns
            raise RuntimeError(f"part {meta['part']}: unit {uid} was not saved")
        arrays[f"u_{uid}"] = np.frombuffer(data, np.uint8)
    meta = dict(meta, format=PART_FORMAT, kind="sweep", units=[[u, k, o] for u, k, o in ctx.units])

    def write_npz(p):
        with open(p, "wb") as fh:
            np.savez(fh, **arrays)

    identity = {"experiment": meta["experiment"], "config": meta["config"], "part": f"{meta['part']}/{meta['parts']}"}
    return fileio.save_files(out, {"part.json": fileio.json_writer(fileio.json_normal(meta)), "part.npz": write_npz}, identity)


# ----------------------------------------------------------------------------- reading and merging
def _short(d) -> str:
    return os.fspath(d)


def load_part(folder) -> dict:
    """``part.json`` of a part folder, checked to be a finished part whose files match the
    manifest's checksums (a clear :class:`MergeError` otherwise).

    Args:
        folder: a part folder (``jaxbandits run NAME --part I/N --out DIR``).

    Returns:
        The part's ``part.json`` as a ``dict`` (``_folder`` added).

    Raises:
        MergeError: the folder is missing, holds no finished part (an interrupted one, a whole
            run's results), a part of another format, or a file that does not match its checksum.

    Examples:
        >>> import os, tempfile
        >>> import numpy as np
        >>> from jaxbandits.engine.recording import SimOutput
        >>> from jaxbandits.experiments.parts import load_part, save_part
        >>> out = SimOutput(t=np.array([50, 100]), regret=np.ones((2, 2), np.float32), expected_regret=None,
        ...                 reward=None, pulls=None, lost_to_W=np.zeros(2, np.int32), width=8, timing={})
        >>> folder = os.path.join(tempfile.mkdtemp(), "part0")
        >>> meta = {"experiment": "demo", "config": {}, "part": 0, "parts": 2}
        >>> sorted(save_part(folder, meta, {"ucb1": out}))
        ['part.json', 'part.npz']
        >>> meta = load_part(folder)
        >>> meta["format"], meta["labels"]
        ('jaxbandits-part/1', ['ucb1'])
        >>> import shutil; shutil.rmtree(os.path.dirname(folder))
    """
    d = _short(folder)
    if not os.path.isdir(folder):
        raise MergeError(f"merge: {d!r} does not exist (a part folder of jaxbandits run --part I/N)")
    fileio.recover(folder)
    pj = os.path.join(folder, "part.json")
    if not os.path.isfile(pj):
        s = fileio.read_json(os.path.join(folder, "summary.json"))
        if isinstance(s, dict) and s.get("partial"):
            raise MergeError(f"merge: {d!r} holds an interrupted part (it did not finish): resume it with: "
                             f"{s.get('resume')}")
        if os.path.isdir(os.path.join(folder, ".checkpoint")):
            raise MergeError(f"merge: {d!r} holds an unfinished part (a checkpoint, no part.json): rerun that part "
                             "with --resume")
        what = "a whole run's results" if os.path.isfile(os.path.join(folder, "results.nc")) else "no part.json"
        raise MergeError(f"merge: {d!r} is not a part folder ({what}): give the folders written by "
                         "jaxbandits run NAME --part I/N --out DIR")
    meta = fileio.read_json(pj)
    if not isinstance(meta, dict) or meta.get("format") != PART_FORMAT:
        raise MergeError(f"merge: {pj} is not a part description of this version ({PART_FORMAT})")
    man = fileio.read_json(os.path.join(folder, fileio.MANIFEST_NAME))
    sums = man.get("files", {}) if isinstance(man, dict) else {}
    for name in ("part.json", "part.npz"):
        p = os.path.join(folder, name)
        if not os.path.isfile(p):
            raise MergeError(f"merge: {d!r} lacks {name}")
        if name not in sums or fileio.sha256_file(p) != sums[name]:
            raise MergeError(f"merge: {p} does not match the checksum of its manifest (a damaged or edited file): "
                             "rerun that part")
    meta["_folder"] = d
    return meta


def _check_same(metas: List[dict]):
    """Every part is of the same run as the first; name the first difference."""
    ref = metas[0]
    keys = ("experiment", "kind", "config", "seed", "runs", "horizon", "parts", "t", "labels", "metric", "units")
    for m in metas[1:]:
        for k in keys:
            if m.get(k) != ref.get(k):
                if k == "kind":
                    what = lambda x: "a sweep's" if x.get("kind") == "sweep" else "a run's"
                    raise MergeError(f"merge: {m['_folder']!r} is {what(m)} part and {ref['_folder']!r} {what(ref)} "
                                     "part: merge only the parts of one run")
                if k == "config" and isinstance(m.get(k), dict) and isinstance(ref.get(k), dict):
                    a, b = m[k], ref[k]
                    diff = "; ".join(f"{key}={_show(a.get(key))} there, {_show(b.get(key))} here"
                                     for key in sorted(set(a) | set(b)) if a.get(key) != b.get(key))
                    detail = f"its config differs ({diff})"
                else:
                    detail = f"{k} is {_show(m.get(k))} there and {_show(ref.get(k))} here"
                raise MergeError(f"merge: {m['_folder']!r} is a part of another run than {ref['_folder']!r}: "
                                 f"{detail}; merge only the parts "
                                 "of one run (same experiment, --set, --seed, --runs, --horizon and number of parts)")
        for k in BIT_VERSIONS:
            a, b = m["versions"].get(k), ref["versions"].get(k)
            if a != b:
                raise MergeError(f"merge: {m['_folder']!r} was computed with {k} {a!r} and {ref['_folder']!r} with "
                                 f"{b!r}: parts of one run must come from the same versions (their bits differ "
                                 "otherwise); rerun the odd parts")


def _show(v) -> str:
    s = json.dumps(v, sort_keys=True)
    return s if len(s) <= 80 else s[:77] + "..."


def _order(metas: List[dict]) -> List[dict]:
    """The parts in order 0 .. n-1; duplicates and missing parts are errors naming them."""
    n = metas[0]["parts"]
    seen: Dict[int, str] = {}
    for m in metas:
        i = m["part"]
        if i in seen:
            raise MergeError(f"merge: part {i}/{n} is given twice ({seen[i]!r} and {m['_folder']!r}); give each part once")
        seen[i] = m["_folder"]
    missing = [i for i in range(n) if i not in seen]
    if missing:
        have = ", ".join(f"{i}/{n}" for i in sorted(seen))
        raise MergeError(f"merge: part(s) {', '.join(f'{i}/{n}' for i in missing)} missing (given: {have}); "
                         f"run them with --part I/{n} and merge all {n}")
    ordered = sorted(metas, key=lambda m: m["part"])
    if metas[0].get("kind") == "sweep":  # a sweep's parts split its units, not its runs
        return ordered
    expect = 0
    for m in ordered:  # the run ranges tile 0 .. runs - 1
        if m["first_run"] != expect:
            raise MergeError(f"merge: {m['_folder']!r} starts at run {m['first_run']}, expected {expect}")
        expect += m["n_runs"]
    if expect != metas[0]["runs"]:
        raise MergeError(f"merge: the parts hold {expect} runs, the run has {metas[0]['runs']}")
    return ordered


def merged_outputs(metas: List[dict]) -> Dict[str, object]:
    """``{label: SimOutput}`` of the whole run from the ordered parts' records, in the simulator's
    own layout (``[R, runs, ...]`` concatenated, then runs moved first: the same view as the
    driver returns), so every later numpy reduction over runs adds in the same order."""
    from ..engine.recording import SimOutput

    ref = metas[0]
    loaded = []
    for m in metas:
        with np.load(os.path.join(m["_folder"], "part.npz"), allow_pickle=False) as z:
            loaded.append({k: z[k] for k in z.files})
    from ..engine.stats import Stats

    outs = {}
    n_all = sum(m["n_runs"] for m in metas)
    for j, lab in enumerate(ref["labels"]):
        arrs = {}
        # a part past the kept runs (keep=N, the first N runs) holds no curves: the curves are those
        # of the parts that hold them, in order (a prefix of the parts, as the kept runs are a prefix)
        have = [[f"p{j}_{f}" in z for z in loaded] for f in FIELDS]
        for f, h in zip(FIELDS, have):
            if not any(h):
                continue
            if False in h and True in h[h.index(False):]:
                raise MergeError(f"merge: the parts of {lab!r} hold {f!r} out of run order (part "
                                 f"{h.index(False)} lacks it, a later one has it): rerun the parts with one --keep")
            ps = [z[f"p{j}_{f}"] for z, hz in zip(loaded, h) if hz]
            if ps[0].ndim >= 2:  # [runs kept, R, ...]: the driver's [R, runs, ...] buffer, viewed runs first
                arrs[f] = np.moveaxis(np.concatenate([np.moveaxis(p, 0, 1) for p in ps], axis=1), 0, 1)
            else:
                arrs[f] = np.concatenate(ps, axis=0)
        st = None
        if f"p{j}_stats/block" in loaded[0]:
            st = Stats.concat([Stats.from_flat(z, f"p{j}_stats/") for z in loaded])
        timing = merged_timing(metas)
        outs[lab] = SimOutput(t=loaded[0][f"p{j}_t"], width=int(ref["widths"][lab]), timing=timing,
                              **{f: arrs.get(f) for f in FIELDS}, stats=st, runs=n_all)
    return outs


def merged_timing(metas: List[dict]) -> dict:
    """Timing of the merged run: compile and run seconds summed over the parts (device time)."""
    t = {"compile_s": float(sum(m["timing"]["compile_s"] for m in metas)),
         "run_s": float(sum(m["timing"]["run_s"] for m in metas)),
         "devices": int(max(m["timing"].get("devices", 1) for m in metas)), "parts": len(metas)}
    return t


def merge(dirs: Sequence, out, *, force: bool = False, plot: bool = True):
    """Merge the part folders ``dirs`` into the results folder ``out`` (``results.nc``,
    ``summary.json``, ...): bitwise those of the run done whole (timing aside). Refuses parts of
    different runs or versions, missing or duplicated parts, damaged files
    (:class:`MergeError`), and an ``out`` holding other results (as ``run``; ``force``).

    Args:
        dirs: the part folders, every part ``0 .. n-1`` exactly once, in any order.
        out: the results folder to write (not one of the parts).
        force: overwrite results of another run in ``out``.
        plot: draw the figures.

    Returns:
        The merged :class:`jaxbandits.experiments.results.Results` (for a split sweep: what its runner returns,
        rebuilt from the parts' units), also saved in ``out``.

    Raises:
        MergeError: no parts, parts of different runs or versions, a part missing or given twice,
            a damaged file, or ``out`` among the parts.

    Examples:
        >>> from jaxbandits.experiments.parts import merge
        >>> res = merge(["part0", "part1"], "merged")  # doctest: +SKIP
        >>> res.runs  # doctest: +SKIP
        1000
    """
    from .assemble import assemble_results

    if not dirs:
        raise MergeError("merge: give the part folders to merge (jaxbandits merge DIR... --out OUT)")
    fileio.check_writable(out)
    real = lambda d: os.path.realpath(os.fspath(d))
    if real(out) in {real(d) for d in dirs}:
        raise MergeError(f"merge: --out {os.fspath(out)!r} is one of the parts: write the results to another folder")
    metas = [load_part(d) for d in dirs]
    _check_same(metas)
    metas = _order(metas)
    ref = metas[0]
    identity = {"experiment": ref["experiment"], "config": ref["config"]}
    if ref.get("kind") == "sweep":
        return _merge_sweep(metas, out, identity, force=force, plot=plot)
    with fileio.output_folder(out, identity, force=force):
        outs = merged_outputs(metas)
        timing = merged_timing(metas)
        steps = ref["runs"] * ref["horizon"] * len(outs)
        timing["run_steps_per_s"] = steps / max(timing["run_s"], 1e-12)
        res = assemble_results(ref["experiment"], ref["full_config"], ref["seed"], ref["runs"], ref["horizon"], outs,
                        ref["metric"], timing, ref["panel_of"], ref["log_lines"], ref["checkpoints"],
                        None if ref["layout"] is None else tuple(ref["layout"]), ref["ratio_to"])
        res.versions = dict(ref["versions"])
        res.save(out, plot=plot)
    return res


def _sweep_experiment(ref: dict):
    """The experiment a sweep's parts are of: by name, or re-read from its file."""
    from . import registry as X

    if ref.get("source"):
        from . import files as expfile

        path, *rest = ref["source"]
        sets = {}
        for i in range(0, len(rest) - 1, 2):
            if rest[i] == "--set":
                k, _, v = rest[i + 1].partition("=")
                try:  # written as repr(value)
                    sets[k] = ast.literal_eval(v)
                except (ValueError, SyntaxError):
                    sets[k] = v
        if not os.path.isfile(path):
            raise MergeError(f"merge: the parts are of the experiment file {path!r}, which is not there: merge from "
                             "the folder the parts were run from")
        return expfile.experiment(path, sets or None)
    try:
        return X.get(ref["experiment"])
    except (KeyError, ValueError) as e:
        raise MergeError(f"merge: the parts are of experiment {ref['experiment']!r}, not known here ({e}): merge "
                         "where it is registered") from None


def _merge_sweep(metas: List[dict], out, identity: dict, *, force: bool = False, plot: bool = True):
    """The parts of a split sweep: every unit the sweep asks for, from the part that owns it; then
    the sweep's own code runs again over them (replaying, computing nothing), so its results are
    those of the sweep run whole, bit for bit."""
    from ..engine.checkpoint import MissingUnit
    from .sweeping import call_runner, sweep_checkpoints

    ref = metas[0]
    exp = _sweep_experiment(ref)
    with sweep_checkpoints(None, replay_only=True) as ctx:
        for m in metas:
            with np.load(os.path.join(m["_folder"], "part.npz"), allow_pickle=False) as z:
                held = {k[2:]: z[k] for k in z.files}
            for uid, kind, owner in m["units"]:
                if owner != m["part"]:
                    continue
                if uid not in held:
                    raise MergeError(f"merge: {m['_folder']!r} lacks unit {uid} that its part owns: rerun that part")
                ctx.cache.put_bytes(uid, kind, held[uid].tobytes())
        with fileio.output_folder(out, identity, force=force):
            try:
                res = call_runner(exp.runner, ref["config"], ref["runs"], ref["seed"], ref["horizon"], ctx)
            except MissingUnit as e:
                raise MergeError(f"merge: {e}: the parts are not of this code (written by jaxbandits "
                                 f"{ref['versions'].get('jaxbandits')}; parts written before policies were values name "
                                 "their units differently): rerun them with this version") from None
            if hasattr(res, "versions"):
                res.versions = dict(ref["versions"])
            res.save(out, plot=plot)
    return res
