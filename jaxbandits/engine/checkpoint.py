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
from typing import Any, Callable, List, Optional, Tuple

import jax
import jax.numpy as jnp
import numpy as np

__all__ = ["Checkpoint", "Interrupted", "graceful_stop"]


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
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


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
        """Raise a clear error when the saved checkpoint is of another simulation."""
        with open(os.path.join(self.folder, "fingerprint.json")) as f:
            saved = json.load(f)
        diff = sorted(k for k in set(saved) | set(self.fingerprint) if saved.get(k) != self.fingerprint.get(k))
        if diff:
            k = diff[0]
            raise ValueError(f"the checkpoint in {self.folder} is of another run: {k} was {saved.get(k)!r}, "
                             f"now {self.fingerprint.get(k)!r} (resume with the same settings, or start afresh)")

    def load(self, template) -> Tuple[int, Any, List[Any]]:
        """``(next chunk, state, [records of each chunk done])``; ``template`` is the state's
        structure (arrays or shape structs; keys where the state has keys)."""
        self.check()
        with np.load(os.path.join(self.folder, "state.npz")) as z:
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
            with np.load(os.path.join(self.folder, f"records-{i}.npz")) as z:
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
    Outside the main thread it installs nothing (the callable always says no)."""
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
class CallCache:
    """Completed simulations of a sweep (an experiment that loops over settings, one ``simulate``
    per setting), each saved whole under the hash of its fingerprint; a resumed sweep replays the
    saved ones (the same arrays, so the same bits) and runs the rest. Active inside
    :func:`sweep_checkpoints`."""

    def __init__(self, folder: str):
        self.folder = os.path.abspath(folder)

    def _path(self, fingerprint: dict) -> str:
        import hashlib

        h = hashlib.sha256(json.dumps(fingerprint, sort_keys=True, default=str).encode()).hexdigest()[:24]
        return os.path.join(self.folder, f"call-{h}.npz")

    def get(self, fingerprint: dict):
        """The saved ``{label: SimOutput}`` of this call, or None."""
        from .recording import SimOutput

        p = self._path(fingerprint)
        if not os.path.exists(p):
            return None
        with np.load(p, allow_pickle=False) as z:
            meta = json.loads(str(z["meta"]))
            out = {}
            for i, (lab, m) in enumerate(meta.items()):
                arrs = {f: z[f"o{i}_{f}"] for f in m["arrays"]}
                out[lab] = SimOutput(**arrs, width=m["width"], timing=m["timing"],
                                     **{f: None for f in ("delayed_regret", "arm_totals") if f not in arrs})
        return out

    def put(self, fingerprint: dict, outs: dict):
        os.makedirs(self.folder, exist_ok=True)
        arrays, meta = {}, {}
        for i, (lab, o) in enumerate(outs.items()):
            names = [f for f in ("t", "regret", "expected_regret", "reward", "pulls", "lost_to_W",
                                 "delayed_regret", "arm_totals") if getattr(o, f) is not None]
            meta[lab] = {"arrays": names, "width": int(o.width), "timing": o.timing}
            arrays.update({f"o{i}_{f}": np.asarray(getattr(o, f)) for f in names})
        _atomic(self._path(fingerprint), lambda f: np.savez(f, meta=json.dumps(meta, default=float), **arrays))

    def remove(self):
        if os.path.isdir(self.folder):
            for name in os.listdir(self.folder):
                if name.startswith(("call-", ".tmp-")):
                    with contextlib.suppress(OSError):
                        os.unlink(os.path.join(self.folder, name))
            with contextlib.suppress(OSError):
                os.rmdir(self.folder)


_SWEEP: "contextvars.ContextVar[Optional[Tuple[CallCache, Callable[[], bool]]]]"
import contextvars  # noqa: E402

_SWEEP = contextvars.ContextVar("jaxbandits_sweep_checkpoints", default=None)


@contextlib.contextmanager
def sweep_checkpoints(folder: str, stop: Callable[[], bool] = lambda: False):
    """Within the block, every ``simulate`` / ``simulate_grid`` call is saved whole in ``folder``
    when it completes and replayed from there when the same call comes again (a resumed sweep);
    ``stop()`` is asked before each call (:class:`Interrupted` when it says so)."""
    tok = _SWEEP.set((CallCache(folder), stop))
    try:
        yield _SWEEP.get()[0]
    finally:
        _SWEEP.reset(tok)


def active_sweep():
    return _SWEEP.get()
