"""Saving and loading a learner: one ``.npz`` file (no pickle) with the state's leaves and a JSON
header (format, format version, library version, policy name, channel, sizes, state layout);
:func:`load` refuses a file of another policy, channel, layout or incompatible version.
"""
from __future__ import annotations

import contextlib
import json
from typing import Optional

import jax
import jax.numpy as jnp
import numpy as np

from ..core.types import Policy
from ..core.values import is_policy
from .state import LearnerState, configure, initial_state

FORMAT = "jaxbandits.online"
FORMAT_VERSION = 2  # 2: the state's `play` flag (the clock)


def _version():
    from ..version import __version__

    return __version__


def _layout(state):
    leaves, treedef = jax.tree.flatten(state.tree_flatten()[0])  # the arrays, without the static config
    out = []
    for x in leaves:
        if jnp.issubdtype(x.dtype, jax.dtypes.prng_key):
            kd = jax.random.key_data(x)
            out.append({"key": str(jax.random.key_impl(x)), "shape": list(kd.shape), "dtype": str(kd.dtype)})
        else:
            out.append({"shape": list(x.shape), "dtype": str(x.dtype)})
    return leaves, treedef, out


def _header(state, extra=None):
    cfg = state.config
    spec = cfg.spec
    _, treedef, layout = _layout(state)
    h = {"format": FORMAT, "format_version": FORMAT_VERSION, "library_version": _version(),
         "policy": cfg.policy.name, "channel": str(cfg.channel), "n_arms": spec.n_arms, "horizon": spec.horizon,
         "dim": spec.dim, "max_pending": cfg.pending, "payload_size": cfg.payload_size, "reveal": cfg.reveal,
         "treedef": str(treedef), "leaves": layout}
    if extra:
        h["extra"] = extra
    return h


def _write(state: LearnerState, f, extra=None) -> None:
    leaves, _, _ = _layout(state)
    arrays = {}
    for i, x in enumerate(leaves):
        if jnp.issubdtype(x.dtype, jax.dtypes.prng_key):
            x = jax.random.key_data(x)
        arrays[f"leaf_{i}"] = np.asarray(x)
    head = json.dumps(_header(state, extra), sort_keys=True)
    arrays["header"] = np.frombuffer(head.encode(), np.uint8)
    np.savez(f, **arrays)


def save(state: LearnerState, path, extra: Optional[dict] = None) -> None:
    """Write the whole learner to one ``.npz`` file (numpy's format, no pickle): arrays
    ``leaf_0..leaf_{n-1}`` (the state's leaves; PRNG keys as their key data) and ``header``, a JSON
    document (format ``"jaxbandits.online"``, ``format_version``, ``library_version``, policy
    name, channel, sizes, the state's tree layout, and ``extra``: JSON-able data of the caller).
    The file is written atomically (a temporary file flushed to disk, then renamed).

    Args:
        state: the learner.
        path: the file to write (a ``.npz`` name).
        extra: JSON-able data of the caller, kept in the header (optional).

    Returns:
        None.

    Example:
        >>> import os, tempfile
        >>> from jaxbandits import channels, online
        >>> from jaxbandits.policies import classic
        >>> st = online.init(classic.ucb1(), channels.attributed(), 3, 0)
        >>> path = os.path.join(tempfile.mkdtemp(), "learner.npz")
        >>> save(st, path, extra={"site": "a"})
        >>> read_header(path)["extra"]
        {'site': 'a'}
    """
    from ..core.fileio import atomic_write

    def writer(tmp):
        with open(tmp, "wb") as f:
            _write(state, f, extra)

    atomic_write(path, writer)


def dumps(state: LearnerState, extra: Optional[dict] = None) -> bytes:
    """The bytes :func:`save` would write (for a database blob).

    Args:
        state: the learner.
        extra: JSON-able data of the caller, kept in the header (optional).

    Returns:
        bytes: the ``.npz`` file's contents.

    Example:
        >>> from jaxbandits import channels, online
        >>> from jaxbandits.policies import classic
        >>> st = online.init(classic.ucb1(), channels.attributed(), 3, 0)
        >>> blob = dumps(st)
        >>> blob[:2]  # a zip archive
        b'PK'
    """
    import io

    buf = io.BytesIO()
    _write(state, buf, extra)
    return buf.getvalue()


def loads(data: bytes, policy: Policy, channel, *, return_extra: bool = False):
    """:func:`load` from the bytes of :func:`dumps`.

    Args:
        data: the bytes of :func:`dumps`.
        policy: the policy the learner was saved with (its name must match).
        channel: the channel it was saved with (equal as text).
        return_extra: also return the caller's ``extra`` data.

    Returns:
        LearnerState, or ``(state, extra)`` with ``return_extra``.

    Raises:
        ValueError: damaged bytes, or a learner of another format version, library version,
            policy, channel or state layout (see :func:`load`).
        TypeError: ``policy`` is not a jaxbandits policy.

    Example:
        >>> from jaxbandits import channels, online
        >>> from jaxbandits.policies import classic
        >>> st = online.init(classic.ucb1(), channels.attributed(), 3, 0)
        >>> loads(dumps(st, extra={"n": 1}), classic.ucb1(), channels.attributed(), return_extra=True)
        (LearnerState(UCB1, attributed(), t=-1), {'n': 1})
    """
    import io

    return load(io.BytesIO(data), policy, channel, return_extra=return_extra)


@contextlib.contextmanager
def _open(path):
    """The saved learner's arrays; a damaged or truncated file is a ValueError naming it."""
    import zipfile

    try:
        if hasattr(path, "read"):
            path.seek(0)
            z = np.load(path, allow_pickle=False)
        else:
            z = np.load(str(path), allow_pickle=False)
        with z:
            yield z
    except FileNotFoundError:
        raise
    except (zipfile.BadZipFile, EOFError, OSError, KeyError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ValueError(f"{_name(path)}: not a readable saved jaxbandits learner (damaged or truncated file: "
                         f"{type(e).__name__}: {e})") from None


def read_header(path) -> dict:
    """The JSON header of a saved learner (no arrays are built).

    Args:
        path: the file (or a binary file object) written by :func:`save` / :func:`dumps`.

    Returns:
        dict: ``format``, ``format_version``, ``library_version``, ``policy``, ``channel``, the
        sizes (``n_arms``, ``horizon``, ``dim``, ``max_pending``, ``payload_size``,
        ``reveal``), the state's layout (``treedef``, ``leaves``) and ``extra`` if one was saved.

    Raises:
        ValueError: a damaged file, or one that is not a saved learner.

    Example:
        >>> import io
        >>> from jaxbandits import channels, online
        >>> from jaxbandits.policies import classic
        >>> st = online.init(classic.ucb1(), channels.attributed(), 3, 0)
        >>> h = read_header(io.BytesIO(dumps(st)))
        >>> h["format"], h["policy"], h["channel"], h["n_arms"], h["max_pending"]
        ('jaxbandits.online', 'UCB1', 'attributed()', 3, 4096)
    """
    with _open(path) as z:
        if "header" not in z.files:
            raise ValueError(f"{_name(path)}: not a saved jaxbandits learner (no header)")
        h = json.loads(bytes(z["header"]).decode())
    if not isinstance(h, dict) or h.get("format") != FORMAT:
        raise ValueError(f"{_name(path)}: not a saved jaxbandits learner (format "
                         f"{h.get('format') if isinstance(h, dict) else h!r})")
    missing = [k for k in _HEADER_KEYS if k not in h]
    if missing:
        raise ValueError(f"{_name(path)}: its header lacks the key {missing[0]!r} (a damaged or edited saved learner)")
    return h


#: the header keys :func:`load` reads
_HEADER_KEYS = ("format_version", "library_version", "policy", "channel", "n_arms", "horizon", "dim", "max_pending",
                "treedef", "leaves")


def _name(path):
    return "(bytes)" if hasattr(path, "read") else str(path)


def _compatible(a: str, b: str) -> bool:
    return a.split(".")[:2] == b.split(".")[:2]


def load(path, policy: Policy, channel, *, return_extra: bool = False):
    """The learner saved in ``path``, for ``policy`` on ``channel`` (the functions are yours; the
    file holds their state). Refuses, naming what differs: another format version, a library
    version of another major.minor, another policy name or channel, or another state layout.

    Args:
        path: the file (or a binary file object) written by :func:`save`.
        policy: the policy the learner was saved with (its name must match).
        channel: the channel it was saved with (equal as text).
        return_extra: also return the caller's ``extra`` data (``None`` if none was saved).

    Returns:
        LearnerState, or ``(state, extra)`` with ``return_extra``.

    Raises:
        ValueError: a damaged file, or a learner of another format version, library version,
            policy, channel or state layout, each named.
        TypeError: ``policy`` is not a jaxbandits policy.

    Example:
        >>> import os, tempfile
        >>> from jaxbandits import channels, online
        >>> from jaxbandits.policies import classic
        >>> st = online.init(classic.ucb1(), channels.attributed(), 3, 0)
        >>> path = os.path.join(tempfile.mkdtemp(), "learner.npz")
        >>> save(st, path)
        >>> load(path, classic.ucb1(), channels.attributed())
        LearnerState(UCB1, attributed(), t=-1)
        >>> load(path, classic.ucb1(), channels.conversions(window=5))
        Traceback (most recent call last):
        ...
        ValueError: ...: saved for channel attributed(), cannot load into conversions(window=5)
    """
    h = read_header(path)
    name = _name(path)
    if h["format_version"] != FORMAT_VERSION:
        raise ValueError(f"{name}: format version {h['format_version']}, this library reads version {FORMAT_VERSION}")
    if not _compatible(h["library_version"], _version()):
        raise ValueError(f"{name}: saved by jaxbandits {h['library_version']}, incompatible with this "
                         f"jaxbandits {_version()} (the major.minor versions differ)")
    if not is_policy(policy):
        raise TypeError(f"policy must be a jaxbandits Policy, got {type(policy).__name__}")
    if policy.name != h["policy"]:
        raise ValueError(f"{name}: saved for policy {h['policy']!r}, cannot load into {policy.name!r}")
    if str(channel) != h["channel"]:
        raise ValueError(f"{name}: saved for channel {h['channel']}, cannot load into {channel}")
    cfg = configure(policy, channel, h["n_arms"], h["horizon"], h["dim"], h["max_pending"])
    template = initial_state(cfg, jax.random.key(0))
    leaves, treedef, layout = _layout(template)
    if str(treedef) != h["treedef"] or layout != h["leaves"]:
        raise ValueError(f"{name}: the saved state's layout differs from {policy.name}'s state on {channel} "
                         f"(other parameters or another library version?): refusing to load")
    new = []
    with _open(path) as z:
        for i, (x, lay) in enumerate(zip(leaves, layout)):
            if f"leaf_{i}" not in z.files:
                raise ValueError(f"{name}: lacks the array 'leaf_{i}' of the saved state (a damaged or edited file)")
            a = z[f"leaf_{i}"]
            if "key" in lay:
                new.append(jax.random.wrap_key_data(jnp.asarray(a), impl=jax.random.key_impl(x)))
            else:
                new.append(jnp.asarray(a, x.dtype))
    state = LearnerState(cfg, *jax.tree.unflatten(treedef, new))
    return (state, h.get("extra")) if return_extra else state
