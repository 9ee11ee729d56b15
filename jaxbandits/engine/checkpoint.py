"""Checkpoints at chunk boundaries, and a graceful stop on SIGINT / SIGTERM (docs/results.md).

A simulation that runs in chunks can save, after every chunk, what the next chunk needs: the
carried state of every run (the run keys' position included: they are part of the state) and the
records written so far. Files in the checkpoint folder::

    fingerprint.json     what was run (components, sizes, key, chunks, versions): a resume must match
    records-<i>.npz      the records of chunk i (written once)
    state.npz            the carried state after the last saved chunk and its index (replaced atomically)

Every file is written to a temporary name in the folder, flushed and renamed into place, so a
``kill -9`` at any moment loses at most the chunk in flight. The state is a flat list of arrays
(PRNG keys as their key data); its structure is rebuilt from the program itself on resume, so a
resumed run continues bit for bit where the saved one stopped.

Why not orbax: it would add tensorstore to a CPU-only install for what is, here, one ``.npz``
file per chunk; ``numpy.savez`` plus an atomic rename is all the guarantee this needs.
"""
from __future__ import annotations

import contextlib
import json
import os
import signal
import tempfile
import threading
import zipfile
from typing import Any, Callable, List, Optional, Tuple

import jax
import jax.numpy as jnp
import numpy as np

__all__ = ["Checkpoint", "Interrupted", "graceful_stop", "SweepShare", "CallCache", "MissingUnit", "unit_bytes",
           "unit_value", "reading_saved"]


class Interrupted(Exception):
    """A stop was requested: the simulation stopped at a chunk boundary, its work checkpointed."""

    def __init__(self, rounds_done: int, horizon: int, folder: Optional[str], what: Optional[str] = None):
        self.rounds_done, self.horizon, self.folder = rounds_done, horizon, folder
        where = f"; checkpoint in {folder}" if folder else ""
        super().__init__(f"stopped {what or f'after {rounds_done} of {horizon} rounds'}{where}")


def _atomic(path: str, write: Callable[[Any], None]):
    d = os.path.dirname(path) or "."
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=os.path.basename(path), dir=d)
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException as e:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        from ..core.fileio import disk_full, disk_full_error

        if disk_full(e, path):  # one error naming the file (numpy's and the OS's name none)
            raise disk_full_error(path, e) from None
        raise


@contextlib.contextmanager
def reading_saved(path):
    """Errors while reading a checkpoint file as one ValueError naming the file (and the missing
    key): a damaged or truncated checkpoint cannot be resumed, only started afresh.

    Args:
        path: the file being read (named in the error).

    Yields:
        Nothing: a context manager around the reads.

    Raises:
        ValueError: an ``OSError``, ``ValueError``, ``KeyError``, ``EOFError`` or
            ``zipfile.BadZipFile`` inside the block, reworded to name the file and what it lacks.

    Examples:
        >>> from jaxbandits.engine.checkpoint import reading_saved
        >>> with reading_saved("state.npz"):
        ...     {}["arrays"]
        Traceback (most recent call last):
        ValueError: state.npz: not a readable checkpoint file (damaged or truncated: it lacks the key 'arrays'); ...
    """
    try:
        yield
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as e:
        key = str(e.args[0]).split(" is not a file")[0] if isinstance(e, KeyError) and e.args else None  # numpy's words
        what = f"it lacks the key {key!r}" if key is not None else f"{type(e).__name__}: {e}"
        raise ValueError(f"{path}: not a readable checkpoint file (damaged or truncated: {' '.join(what.split())}); "
                         "it cannot be resumed: start afresh (jaxbandits run ... --force, or remove the checkpoint "
                         "folder)") from None


def _is_key(a) -> bool:
    return isinstance(a, jax.Array) and jnp.issubdtype(a.dtype, jax.dtypes.prng_key)


class Checkpoint:
    """The checkpoint folder of one simulation (see the module docstring)."""

    def __init__(self, folder: str, fingerprint: Optional[dict] = None, extra: Optional[dict] = None):
        """``fingerprint``: what a resume must match (``None``: the simulator computes it from the
        program, adding ``extra``, e.g. an experiment's name and config)."""
        self.folder = os.path.abspath(folder)
        self.extra = dict(extra or {})
        self.fingerprint = None if fingerprint is None else self._norm(fingerprint)

    @staticmethod
    def _norm(d):
        return json.loads(json.dumps(d, default=str, sort_keys=True))

    # -- reading ------------------------------------------------------------------------------
    def exists(self) -> bool:
        return os.path.exists(os.path.join(self.folder, "state.npz"))

    def check(self):
        """Raise a clear error when the saved checkpoint is of another simulation (or damaged)."""
        fp = os.path.join(self.folder, "fingerprint.json")
        with reading_saved(fp):
            with open(fp, encoding="utf-8") as f:
                saved = json.load(f)
            if not isinstance(saved, dict):
                raise ValueError(f"not an object but a {type(saved).__name__}")
        diff = sorted(k for k in set(saved) | set(self.fingerprint) if saved.get(k) != self.fingerprint.get(k))
        if diff and "policy_ids" in diff:
            was = ("before policies were values (it names them by a digest of their code, which this version no "
                   "longer computes)" if saved.get("policy_ids") is None else
                   f"naming its policies as {saved.get('policy_ids')!r}, this version as "
                   f"{self.fingerprint.get('policy_ids')!r} (a user's Policy NamedTuple by its name, no longer by "
                   "a digest of its code)")
            raise ValueError(f"the checkpoint in {self.folder} was written by jaxbandits {saved.get('jaxbandits')} "
                             f"{was}: it cannot be resumed; start afresh (delete the folder) or finish it with "
                             "that version")
        if diff and "world_ids" in diff:
            raise ValueError(f"the checkpoint in {self.folder} was written by jaxbandits {saved.get('jaxbandits')}, "
                             f"which named a world by its arrays alone (worlds differing only in a delay law's type "
                             f"or a static field shared one name; this version names it by "
                             f"{self.fingerprint.get('world_ids')!r}): it cannot be resumed; start afresh (delete "
                             "the folder) or finish it with that version")
        if diff:
            k = diff[0]
            raise ValueError(f"the checkpoint in {self.folder} is of another run: {k} was {saved.get(k)!r}, "
                             f"now {self.fingerprint.get(k)!r} (resume with the same settings, or start afresh)")

    def load(self, template) -> Tuple[int, Any, List[Any]]:
        """``(next chunk, state, [records of each chunk done])``; ``template`` is the state's
        structure (arrays or shape structs; keys where the state has keys)."""
        self.check()
        sp = os.path.join(self.folder, "state.npz")
        with reading_saved(sp), np.load(sp, allow_pickle=False) as z:
            nxt = int(z["next_chunk"])
            flat = [z[f"a{i}"] for i in range(int(z["n"]))]
            impls = json.loads(str(z["impls"]))
        leaves, tree = jax.tree.flatten(template)
        if len(leaves) != len(flat):
            raise ValueError(f"the checkpoint in {self.folder} does not match this program's state")
        out = []
        for i, (t, a) in enumerate(zip(leaves, flat)):
            if impls[i]:
                a = jax.random.wrap_key_data(jnp.asarray(a), impl=impls[i])
            out.append(a)
        parts = []
        for i in range(nxt):
            rp = os.path.join(self.folder, f"records-{i}.npz")
            with reading_saved(rp), np.load(rp, allow_pickle=False) as z:
                parts.append([z[f"a{j}"] for j in range(int(z["n"]))])
        return nxt, jax.tree.unflatten(tree, out), parts

    # -- writing ------------------------------------------------------------------------------
    def save(self, next_chunk: int, state, new_records: List[np.ndarray]):
        """Save the records of chunk ``next_chunk - 1`` and the state after it."""
        os.makedirs(self.folder, exist_ok=True)
        fp = os.path.join(self.folder, "fingerprint.json")
        if next_chunk == 1 or not os.path.exists(fp):
            _atomic(fp, lambda f: f.write(json.dumps(self.fingerprint, indent=1, sort_keys=True).encode()))
        recs = {f"a{j}": np.asarray(a) for j, a in enumerate(new_records)}
        _atomic(os.path.join(self.folder, f"records-{next_chunk - 1}.npz"),
                lambda f: np.savez(f, n=len(new_records), **recs))
        leaves = jax.tree.leaves(state)
        impls = [str(jax.random.key_impl(a)) if _is_key(a) else "" for a in leaves]
        arrs = {f"a{i}": np.asarray(jax.random.key_data(a) if _is_key(a) else a) for i, a in enumerate(leaves)}
        _atomic(os.path.join(self.folder, "state.npz"),
                lambda f: np.savez(f, next_chunk=next_chunk, n=len(leaves), impls=json.dumps(impls), **arrs))

    def remove(self):
        """Delete the checkpoint (after the results are safely written)."""
        if not os.path.isdir(self.folder):
            return
        for name in os.listdir(self.folder):
            if name == "fingerprint.json" or name == "state.npz" or name.startswith(("records-", ".tmp-")):
                with contextlib.suppress(OSError):
                    os.unlink(os.path.join(self.folder, name))
        with contextlib.suppress(OSError):
            os.rmdir(self.folder)


@contextlib.contextmanager
def graceful_stop(message: Optional[str] = None):
    """Within the block, SIGINT (Ctrl-C) and SIGTERM request a stop instead of killing: yields a
    callable that says whether one was requested. A second SIGINT raises KeyboardInterrupt at once.
    Outside the main thread it installs nothing (the callable always says no).

    Args:
        message: printed to stderr when a stop is requested (None: nothing).

    Yields:
        A callable ``stop_requested() -> bool``; the previous handlers are restored on exit.

    Examples:
        >>> from jaxbandits.engine.checkpoint import graceful_stop
        >>> with graceful_stop("stopping at the next chunk") as stop_requested:
        ...     stop_requested()
        False
    """
    flag = {"stop": False}
    if threading.current_thread() is not threading.main_thread():
        yield lambda: False
        return

    def handler(signum, frame):
        if flag["stop"] and signum == signal.SIGINT:
            raise KeyboardInterrupt
        flag["stop"] = True
        if message:
            import sys

            print(message, file=sys.stderr, flush=True)

    old = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    for s in old:
        signal.signal(s, handler)
    try:
        yield lambda: flag["stop"]
    finally:
        for s, h in old.items():
            signal.signal(s, h)


# ----------------------------------------------------------------------------- sweeps
class MissingUnit(LookupError):
    """A replay of a sweep (a merge of its parts) needed a unit that no part holds."""


def unit_bytes(kind: str, value) -> bytes:
    """One unit's result as bytes: ``sim`` (``{label: SimOutput}``) as an ``.npz``, ``json`` as UTF-8.

    Args:
        kind: ``"sim"`` or ``"json"``.
        value: ``{label: SimOutput}`` (``sim``) or a JSON-serialisable value (``json``).

    Returns:
        The bytes :func:`unit_value` reads back (the same arrays, so the same bits).

    Examples:
        >>> from jaxbandits.engine.checkpoint import unit_bytes
        >>> unit_bytes("json", {"mean": 0.5})
        b'{"mean": 0.5}'
    """
    import io

    if kind == "json":
        return json.dumps(value).encode()  # key order kept: a replayed value is the computed one
    arrays, meta = {}, {}
    for i, (lab, o) in enumerate(value.items()):
        names = [f for f in ("t", "regret", "expected_regret", "reward", "pulls", "lost_to_W",
                             "delayed_regret", "arm_totals") if getattr(o, f) is not None]
        meta[lab] = {"arrays": names, "width": int(o.width), "timing": o.timing, "runs": o.runs,
                     "stats": o.stats is not None}
        arrays.update({f"o{i}_{f}": np.asarray(getattr(o, f)) for f in names})
        if o.stats is not None:
            arrays.update(o.stats.to_flat(f"o{i}_stats/"))
    buf = io.BytesIO()
    np.savez(buf, meta=json.dumps(meta, default=float), **arrays)
    return buf.getvalue()


def unit_value(kind: str, data: bytes):
    """Inverse of :func:`unit_bytes`.

    Args:
        kind: ``"sim"`` or ``"json"``, as written.
        data: the bytes :func:`unit_bytes` returned.

    Returns:
        The value: ``{label: SimOutput}`` (``sim``, its statistics included) or the JSON value.

    Examples:
        >>> import numpy as np
        >>> from jaxbandits.engine.checkpoint import unit_bytes, unit_value
        >>> from jaxbandits.engine.recording import SimOutput
        >>> out = SimOutput(t=np.array([50, 100]), regret=np.ones((2, 2), np.float32), expected_regret=None,
        ...                 reward=None, pulls=None, lost_to_W=np.zeros(2, np.int32), width=8, timing={})
        >>> back = unit_value("sim", unit_bytes("sim", {"ucb1": out}))["ucb1"]
        >>> back.regret.tolist(), back.width, back.reward
        ([[1.0, 1.0], [1.0, 1.0]], 8, None)
    """
    import io

    from .recording import SimOutput
    from .stats import Stats

    if kind == "json":
        return json.loads(data.decode())
    with np.load(io.BytesIO(data), allow_pickle=False) as z:
        meta = json.loads(str(z["meta"]))
        flat = {k: z[k] for k in z.files}
        out = {}
        for i, (lab, m) in enumerate(meta.items()):
            arrs = {f: flat[f"o{i}_{f}"] for f in m["arrays"]}
            st = Stats.from_flat(flat, f"o{i}_stats/") if m.get("stats") else None
            out[lab] = SimOutput(**arrs, width=m["width"], timing=m["timing"], stats=st, runs=m.get("runs"),
                                 **{f: None for f in ("regret", "expected_regret", "reward", "pulls", "delayed_regret",
                                                      "arm_totals") if f not in arrs})
    return out


_EXT = {"sim": "npz", "json": "json"}


class CallCache:
    """Completed units of a sweep (an experiment that loops over settings: one ``simulate`` per
    setting, or one fit per replication), each saved whole under the hash of its fingerprint; a
    resumed sweep replays the saved ones (the same arrays, so the same bits) and runs the rest.
    What a :class:`jaxbandits.experiments.sweeping.Sweep` saves to. ``folder=None`` keeps them in memory."""

    def __init__(self, folder: Optional[str]):
        self.folder = None if folder is None else os.path.abspath(folder)
        self.memory = {}

    @staticmethod
    def unit_id(fingerprint: dict) -> str:
        import hashlib

        return hashlib.sha256(json.dumps(fingerprint, sort_keys=True, default=str).encode()).hexdigest()[:24]

    def file_name(self, uid: str, kind: str = "sim") -> str:
        return f"call-{uid}.{_EXT[kind]}"

    def get_bytes(self, uid: str, kind: str):
        if self.folder is None:
            return self.memory.get(uid)
        p = os.path.join(self.folder, self.file_name(uid, kind))
        if not os.path.exists(p):
            return None
        with open(p, "rb") as fh:
            return fh.read()

    def put_bytes(self, uid: str, kind: str, data: bytes):
        if self.folder is None:
            self.memory[uid] = data
            return
        os.makedirs(self.folder, exist_ok=True)
        _atomic(os.path.join(self.folder, self.file_name(uid, kind)), lambda f: f.write(data))

    def remove(self):
        self.memory.clear()
        if self.folder is not None and os.path.isdir(self.folder):
            for name in os.listdir(self.folder):
                if name.startswith(("call-", ".tmp-")):
                    with contextlib.suppress(OSError):
                        os.unlink(os.path.join(self.folder, name))
            with contextlib.suppress(OSError):
                os.rmdir(self.folder)


class SweepShare:
    """Which units of a sweep one part (or one process of a distributed run) computes, when the
    sweep is split ``count`` ways: each unit, in the order the sweep asks for them, goes to the
    share with the least work so far (its cost: run-steps), ties to the lowest index. Every part
    runs the same sweep code and sees the same units in the same order, so every part computes the
    same assignment without talking to the others (docs/cluster.md)."""

    def __init__(self, index: int, count: int):
        self.index, self.count = int(index), int(count)
        self.loads = [0.0] * self.count

    def owner(self, cost: float) -> int:
        j = min(range(self.count), key=lambda p: (self.loads[p], p))
        self.loads[j] += float(cost)
        return j
