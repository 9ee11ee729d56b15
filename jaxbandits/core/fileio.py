"""Internal: not public API (the library's file writing; its errors, ``FolderInUseError``,
``ResultsExistError`` and ``OutputFolderError``, are what users catch: docs/results.md).

Output folders that lose nothing: atomic files, one writer at a time, no stale or foreign files.

* :func:`atomic_write` writes one file: to a temporary name in the same folder, flushed to disk
  (``fsync``), then renamed into place (``os.replace``), so a reader or a crash sees the old file
  or the new one, never a truncated one. Every file jaxbandits writes goes through it.
* :func:`output_folder` holds an output folder for the duration of a run: it creates the folder
  (a clear :class:`OutputFolderError` if it cannot: a file in the way, no permission), takes an
  OS lock on ``.jaxbandits.lock`` in it (a second run into the same folder fails at once with
  :class:`FolderInUseError`), finishes a save that a crash interrupted, and refuses a folder that
  holds the results of another experiment (:class:`ResultsExistError`) unless ``force``.
* :func:`save_files` saves a set of files (``results.nc``, ``summary.json``, ``table.md``, plots)
  as one unit: all are written under temporary names first; a journal (the manifest
  ``.jaxbandits.json``, itself written atomically) then records the set and its SHA-256 sums, the
  files are renamed into place, and the previous results' files that the new set does not
  contain are removed. A crash before the journal leaves the old results whole; a crash after it
  is rolled forward by the next :func:`output_folder` or ``Results.load`` of that folder, so the
  folder holds the old results or the new ones, never a mix. Only files listed in a manifest
  (or, in a folder saved before manifests existed, the names jaxbandits writes) are removed:
  never a user's own files.

The lock is ``fcntl.flock`` (``msvcrt.locking`` on Windows): a standard-library call, no new
dependency, and the kernel releases it when the process ends however it ends (``kill -9``
included), so no stale lock is ever left to clean by hand.
"""
from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import re
import secrets
import shutil
import threading
from typing import Callable, Dict, Iterable, Optional

__all__ = ["OutputFolderError", "FolderInUseError", "ResultsExistError", "atomic_write", "write_text",
           "disk_full", "disk_full_error",
           "check_writable", "output_folder", "save_files", "add_file", "recover", "file_sha256", "LOCK_NAME",
           "MANIFEST_NAME"]

#: The lock file in an output folder (held with an OS lock while a run writes there).
LOCK_NAME = ".jaxbandits.lock"
#: The manifest: which results the folder holds, their files and checksums (and the save journal).
MANIFEST_NAME = ".jaxbandits.json"
#: Temporary files: ``.tmp-PID-RANDOM-NAME`` (the name last, so the extension is kept).
TMP_PREFIX = ".tmp-"
_TMP_RE = re.compile(r"^\.tmp-(\d+)-[0-9a-f]{8}-")
#: Files that jaxbandits writes into an output folder: in a folder saved before manifests existed,
#: these (and only these) are the previous results' files.
KNOWN_FILES = ("results.nc", "summary.json", "table.md", "regret.png", "ratio.png", "delayed_regret.png",
               "fixed_regret.png", "recovery.png", "posterior.nc", "summary.md", "posterior_p.png",
               "delay_cdf.png", "trace.png")
_FORMAT = 1
_replace = os.replace  # one name for every rename (the fault tests interpose here)


class OutputFolderError(OSError):
    """The output folder cannot be used. ``path`` is the folder, ``reason`` what is wrong."""

    def __init__(self, path, reason):
        super().__init__(f"output folder {os.fspath(path)!r}: {reason}")
        self.path, self.reason = os.fspath(path), reason


class FolderInUseError(OutputFolderError):
    """Another process (or thread) is running into the same output folder."""


class ResultsExistError(OutputFolderError, FileExistsError):
    """The output folder holds the results of another experiment (pass ``force=True`` / ``--force``)."""


# ----------------------------------------------------------------------------- single files
def _fsync_path(path):
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_dir(d):
    """Make a rename in ``d`` durable (where directories can be opened: not on Windows)."""
    try:
        fd = os.open(d, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _tmp_path(path):
    d, base = os.path.split(os.fspath(path))
    return os.path.join(d, f"{TMP_PREFIX}{os.getpid()}-{secrets.token_hex(4)}-{base}")


def atomic_write(path, writer: Callable[[str], object]) -> str:
    """Write the file ``path`` atomically: ``writer(tmp)`` writes the content at a temporary path
    in the same folder (same extension), which is then flushed to disk and renamed onto ``path``.
    On any error (or interruption) the temporary file is removed and ``path`` is untouched.
    Returns ``path``."""
    path = os.fspath(path)
    tmp = _tmp_path(path)
    try:
        writer(tmp)
        _fsync_path(tmp)
        _replace(tmp, path)
    except BaseException as e:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if disk_full(e, path):
            raise disk_full_error(path, e) from None
        raise
    _fsync_dir(os.path.dirname(os.path.abspath(path)))
    return path


def disk_full_error(path, e: BaseException) -> OSError:
    """The one error of a file that a full disk stopped writing: ``OSError(ENOSPC)`` naming the file
    and the cause (the caller has removed its temporary file; the previous file, if any, is intact)."""
    return OSError(errno.ENOSPC, f"{os.fspath(path)}: no space left on the device while writing it "
                   f"({type(e).__name__}: {' '.join(str(e).split())}); nothing was replaced and its temporary "
                   f"file was removed{FREE_SPACE}")


FREE_SPACE = ": free space and run again"  # the end of disk_full_error's message (a caller may say more)


def disk_full(e: BaseException, path) -> bool:
    """Whether a writer's failure is a full disk: ENOSPC/EDQUOT, or (libraries such as h5py wrap
    it in their own errors) any error while the folder's file system has under 1 MiB free."""
    if isinstance(e, OSError) and e.errno in (errno.ENOSPC, errno.EDQUOT):
        return True
    if not isinstance(e, Exception):
        return False
    try:
        return shutil.disk_usage(os.path.dirname(os.path.abspath(path))).free < 2**20
    except OSError:
        return False


def text_writer(text: str, encoding="utf-8"):
    """A writer (for :func:`atomic_write` / :func:`save_files`) of ``text``."""

    def write(p):
        with open(p, "w", encoding=encoding) as fh:
            fh.write(text)

    return write


def json_writer(obj, **kw):
    """A writer of ``obj`` as JSON (``indent=1`` unless given)."""
    return text_writer(json.dumps(obj, **{"indent": 1, **kw}))


def write_text(path, text: str) -> str:
    """Write ``text`` to ``path`` atomically."""
    return atomic_write(path, text_writer(text))


def file_sha256(path) -> str:
    """The hex SHA-256 of a file's content (read in blocks)."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


sha256_file = file_sha256


# ----------------------------------------------------------------------------- the folder
def check_writable(out) -> str:
    """Raise :class:`OutputFolderError` if results cannot be written to the folder ``out`` (a file
    in the way, no permission to create it or to write in it); creates nothing. Returns the
    absolute path."""
    path = os.path.abspath(os.fspath(out))
    p = path
    while not os.path.lexists(p):
        parent = os.path.dirname(p)
        if parent == p:
            break
        p = parent
    if not os.path.isdir(p):
        where = "it is a file" if p == path else f"{p!r} is a file"
        raise OutputFolderError(out, f"{where}, not a folder: choose another output folder")
    if not os.access(p, os.W_OK | os.X_OK):
        where = "no permission to write in it" if p == path else f"no permission to create it in {p!r}"
        raise OutputFolderError(out, f"{where}: choose a folder you can write to")
    return path


def _makedirs(out, path):
    """Create ``path`` (and parents) with clear errors; return the topmost folder created, or None."""
    top, p = None, path
    while not os.path.lexists(p):
        top, p = p, os.path.dirname(p)
    try:
        os.makedirs(path, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        bad, q = path, path
        while q != os.path.dirname(q):
            if os.path.lexists(q) and not os.path.isdir(q):
                bad = q
                break
            q = os.path.dirname(q)
        where = "it is a file" if bad == path else f"{bad!r} is a file"
        raise OutputFolderError(out, f"{where}, not a folder: choose another output folder") from None
    except PermissionError:
        raise OutputFolderError(out, "no permission to create it: choose a folder you can write to") from None
    except OSError as e:
        raise OutputFolderError(out, f"cannot create it ({e.strerror or e})") from None
    return top


try:  # POSIX
    import fcntl

    def _try_lock(fd):
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except (BlockingIOError, PermissionError):
            return False
except ImportError:  # pragma: no cover - Windows
    import msvcrt

    def _try_lock(fd):
        try:
            os.lseek(fd, 0, os.SEEK_SET)
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
            return True
        except OSError:
            return False


class _Hold:
    def __init__(self, path, shown, fd, identity, force, created):
        self.path, self.shown, self.fd, self.identity, self.force = path, shown, fd, identity, force
        self.created, self.thread, self.depth = created, threading.get_ident(), 1


_HELD: Dict[str, _Hold] = {}
_GUARD = threading.Lock()


def _read_pid(fd):
    try:
        os.lseek(fd, 0, os.SEEK_SET)
        s = os.read(fd, 64).decode("ascii", "replace").strip()
        return int(s) if s.isdigit() else None
    except OSError:
        return None


def _in_use(out, lock_path, pid):
    who = f"pid {pid}" if pid else "another process"
    return FolderInUseError(out, f"in use by another jaxbandits run ({who}, lock {lock_path}); "
                                 "wait for it to end or choose another output folder")


def _lock(out, path):
    lock_path = os.path.join(path, LOCK_NAME)
    while True:
        try:
            fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
        except PermissionError:
            raise OutputFolderError(out, "no permission to write in it: choose a folder you can write to") from None
        except OSError as e:
            raise OutputFolderError(out, f"cannot write in it ({e.strerror or e})") from None
        if not _try_lock(fd):
            pid = _read_pid(fd)
            os.close(fd)
            raise _in_use(out, lock_path, pid)
        try:  # the lock file may have been removed and made anew between open and lock: lock that one
            same = os.path.samestat(os.fstat(fd), os.stat(lock_path))
        except OSError:
            same = False
        if same:
            break
        os.close(fd)
    with contextlib.suppress(OSError):
        os.ftruncate(fd, 0)
        os.lseek(fd, 0, os.SEEK_SET)
        os.write(fd, f"{os.getpid()}\n".encode())
    return fd


@contextlib.contextmanager
def output_folder(out, identity: Optional[dict] = None, *, force: bool = False):
    """Hold the output folder ``out`` (created if needed) for the block: an exclusive OS lock, an
    interrupted save finished (see :func:`recover`), and, given ``identity`` (``{"experiment":
    name, "config": {...}}``), a check that the folder holds no other experiment's results
    (:class:`ResultsExistError` unless ``force``). Re-entrant within a thread (the outer hold's
    identity and ``force`` then apply). If the block fails and the folder was created here and
    holds nothing else, it is removed again. Yields the absolute path."""
    path = os.path.realpath(os.path.abspath(os.fspath(out)))
    with _GUARD:
        h = _HELD.get(path)
        if h is not None:
            if h.thread != threading.get_ident():
                raise _in_use(out, os.path.join(path, LOCK_NAME), os.getpid())
            h.depth += 1
    if h is not None:
        try:
            yield path
        finally:
            h.depth -= 1
        return
    created = _makedirs(out, path)
    try:
        fd = _lock(out, path)
    except BaseException:
        _remove_created(path, created, None)
        raise
    h = _Hold(path, out, fd, json_normal(identity) if identity is not None else None, force, created)
    with _GUARD:
        _HELD[path] = h
    ok = False
    try:
        recover(path, _locked=True)
        if identity is not None:
            _check_identity(out, path, h.identity, force)
        yield path
        ok = True
    finally:
        with _GUARD:
            _HELD.pop(path, None)
        _remove_created(path, None if ok else created, fd)


def _remove_created(path, created, fd):
    """Release the lock; if ``created`` (the top folder made by this hold) holds nothing but the
    lock file, remove the lock file and the folders made."""
    try:
        if created is not None and set(os.listdir(path)) <= {LOCK_NAME}:
            with contextlib.suppress(OSError):
                os.unlink(os.path.join(path, LOCK_NAME))
            p = path
            while True:
                os.rmdir(p)
                if p == created:
                    break
                p = os.path.dirname(p)
    except OSError:
        pass
    finally:
        if fd is not None:
            os.close(fd)


def json_normal(x):
    """JSON-normal form (tuples -> lists, numpy scalars and arrays -> numbers and lists)."""
    def default(o):
        if hasattr(o, "tolist"):
            return o.tolist()
        return str(o)

    return json.loads(json.dumps(x, default=default))


def read_json(p):
    try:
        with open(p, encoding="utf-8") as fh:
            return json.load(fh)
    except (OSError, ValueError):
        return None


def _previous(path):
    """``(found, identity, files)`` of the results in ``path``: from the manifest, else from a
    ``summary.json`` of an earlier version (identity None when it names no experiment); without
    either, ``(False, None, set())``."""
    m = read_json(os.path.join(path, MANIFEST_NAME))
    if isinstance(m, dict) and "files" in m:
        return True, m.get("identity"), set(m.get("files", {}))
    s = read_json(os.path.join(path, "summary.json"))
    if os.path.exists(os.path.join(path, "summary.json")):
        ident = ({"experiment": s["experiment"], "config": s.get("config") or {}}
                 if isinstance(s, dict) and isinstance(s.get("experiment"), str) else None)
        return True, ident, {f for f in KNOWN_FILES if os.path.lexists(os.path.join(path, f))}
    return False, None, set()


#: config keys that a run's size sets rather than what it runs (a rerun may change them).
_SIZE_KEYS = ("horizon", "channels")


def _difference(old, new):
    """None if ``new`` is the same experiment with the same settings as ``old`` (runs, horizon
    and seed may differ), else a short description of the difference."""
    if not isinstance(old, dict) or not isinstance(old.get("experiment"), str):
        return "results it cannot identify"
    if old["experiment"] != new.get("experiment"):
        return f"the results of experiment {old['experiment']!r}"
    if old.get("part") != new.get("part"):  # a part (jaxbandits run --part I/N) is not the whole run's results
        what = lambda x: "the whole run's results" if x is None else f"part {x}"
        return f"{what(old.get('part'))} of {old['experiment']!r}, not {what(new.get('part'))}"
    co, cn = old.get("config") or {}, new.get("config") or {}
    diff = [k for k in sorted(set(co) & set(cn)) if k not in _SIZE_KEYS and co[k] != cn[k]]
    if diff:
        k = diff[0]
        more = f" (and {len(diff) - 1} more setting(s))" if len(diff) > 1 else ""
        return (f"results of {old['experiment']!r} with other settings: {k}={co[k]!r} there, "
                f"{k}={cn[k]!r} now{more}")
    return None


def _check_identity(out, path, identity, force):
    found, old, _ = _previous(path)
    if not found or force:
        return
    diff = _difference(old, identity)
    if diff is not None:
        raise ResultsExistError(out, f"holds {diff}; pass --force (force=True) to replace them "
                                     "(their files are removed), or choose another output folder")


def _write_manifest(path, m):
    atomic_write(os.path.join(path, MANIFEST_NAME), json_writer(m))


def _commit(path, m):
    """Rename the staged files of the journal ``m`` into place, remove the previous results'
    files it lists, and mark the manifest complete. Idempotent: a crash here is finished by the
    next call."""
    for name, tmp in m.get("staged", {}).items():
        src = os.path.join(path, tmp)
        if os.path.exists(src):
            _replace(src, os.path.join(path, name))
    _fsync_dir(path)
    for name in m.get("remove", []):
        if name not in m["files"] and os.path.basename(name) == name:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(os.path.join(path, name))
    m = {k: v for k, v in m.items() if k not in ("staged", "remove")}
    m["state"] = "complete"
    _write_manifest(path, m)


def _pid_alive(pid):
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # exists but not ours (PermissionError), or no such call
        return True
    return True


def recover(out, *, _locked=False) -> bool:
    """Finish a save of ``out`` that a crash interrupted after its journal was written (roll
    forward to the new results) and remove temporary files left by dead processes. Takes the
    folder's lock unless the caller holds it (:class:`FolderInUseError` if another process does).
    Returns True if a save was finished."""
    path = os.path.realpath(os.path.abspath(os.fspath(out)))
    if not _locked:
        m = read_json(os.path.join(path, MANIFEST_NAME))
        if not (isinstance(m, dict) and m.get("state") == "committing"):
            return False
        with output_folder(out):  # recovers under the lock
            return True
    done = False
    m = read_json(os.path.join(path, MANIFEST_NAME))
    if isinstance(m, dict) and m.get("state") == "committing":
        _commit(path, m)
        done = True
    for name in os.listdir(path):
        t = _TMP_RE.match(name)
        if t and not _pid_alive(int(t.group(1))):
            with contextlib.suppress(OSError):
                os.unlink(os.path.join(path, name))
    return done


def save_files(out, files: Dict[str, Callable[[str], object]], identity: Optional[dict] = None, *,
               force: bool = False) -> Dict[str, str]:
    """Save the files ``{name: writer}`` into the folder ``out`` as one unit (see the module
    docstring): each ``writer(tmp)`` writes its file at a temporary path; the set then replaces the
    folder's previous results, whose other files are removed. Runs under :func:`output_folder`
    (``identity`` and ``force`` as there; inside an outer hold, the outer's apply). Returns
    ``{name: path}``."""
    for name in files:
        if os.path.basename(name) != name or name in (LOCK_NAME, MANIFEST_NAME) or name.startswith(TMP_PREFIX):
            raise ValueError(f"save_files: {name!r} is not a plain file name")
    with output_folder(out, identity, force=force) as path:
        h = _HELD[path]
        staged = {}
        try:
            for name, writer in files.items():
                staged[name] = tmp = _tmp_path(os.path.join(path, name))
                writer(tmp)
                _fsync_path(tmp)
            sums = {name: sha256_file(tmp) for name, tmp in staged.items()}
        except BaseException as e:
            for tmp in staged.values():
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
            if name in staged and disk_full(e, staged[name]):  # the file being written when the disk filled
                raise disk_full_error(os.path.join(path, name), e) from None
            raise
        _, _, before = _previous(path)
        ident = h.identity if h.identity is not None else json_normal(identity)
        m = {"format": _FORMAT, "writer": "jaxbandits", "identity": ident, "state": "committing",
             "files": sums, "staged": {n: os.path.basename(t) for n, t in staged.items()},
             "remove": sorted(before - set(files))}
        _write_manifest(path, m)  # the journal: from here on the new results win
        _commit(path, m)
    return {name: os.path.join(os.fspath(out), name) for name in files}


def add_file(out, name: str, writer: Callable[[str], object]) -> str:
    """Write (or replace) one file of the results in ``out`` atomically, under the folder's lock,
    and record it in the manifest (e.g. ``jaxbandits plot``'s new ``regret.png``)."""
    with output_folder(out) as path:
        p = atomic_write(os.path.join(path, name), writer)
        m = read_json(os.path.join(path, MANIFEST_NAME))
        if isinstance(m, dict) and m.get("state") == "complete":
            m.setdefault("files", {})[name] = sha256_file(p)
            _write_manifest(path, m)
    return os.path.join(os.fspath(out), name)


def files_of(out) -> Iterable[str]:
    """The names of the files of the results held in ``out`` (per its manifest, or the names
    jaxbandits writes for a folder saved before manifests)."""
    return sorted(_previous(os.path.abspath(os.fspath(out)))[2])
