"""The devices and processes a run spans: how many devices a call shards its runs over, the mesh
of the runs axis, and, for a run over the devices of several processes (``jaxbandits.experiments.distributed``),
placing a loaded state, gathering the state and the records, and keeping the processes in step.
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from ..core import validate as V

__all__ = ["n_devices", "mesh", "place", "place_global", "state_global", "agree_across_processes", "process_barrier",
           "gather_local", "gather_global"]


def n_devices(shard, n_runs):
    """The local devices a call shards its runs over, from ``simulate``'s ``shard``.

    Args:
        shard: None (all devices once there are at least 8 runs per device, else one), True (all),
            False (one) or a count in ``[1, local devices]``.
        n_runs: the runs of the call.

    Returns:
        The number of devices, ``>= 1``.

    Raises:
        ValueError: a count out of range (the message names ``shard`` and the range).

    Example:
        >>> from jaxbandits.engine.devices import n_devices
        >>> n_devices(False, 1000), n_devices(None, 1)
        (1, 1)
    """
    if shard is None:  # all devices, unless there are too few runs to be worth padding and splitting
        return jax.local_device_count() if n_runs >= 8 * jax.local_device_count() else 1
    if shard is True:
        return jax.local_device_count()
    if shard is False:
        return 1
    return V.integer("shard", shard, lo=1, hi=jax.local_device_count())


def mesh(n_dev):
    """The mesh of the first ``n_dev`` devices along one axis, ``"runs"``.

    Args:
        n_dev: the number of devices.

    Returns:
        A ``jax.sharding.Mesh``.

    Example:
        >>> from jaxbandits.engine.devices import mesh
        >>> mesh(1).axis_names
        ('runs',)
    """
    return jax.sharding.Mesh(np.array(jax.devices()[:n_dev]), ("runs",))


def place(tree, like):
    """Host arrays of a loaded state onto the devices, each as its fresh counterpart ``like`` is
    placed (the program was compiled for those shardings).

    Args:
        tree: the loaded state (host arrays).
        like: the fresh state of the same structure, on the devices.

    Returns:
        ``tree`` on the devices, each leaf with the sharding of its counterpart.

    Example:
        >>> import jax.numpy as jnp, numpy as np
        >>> from jaxbandits.engine.devices import place
        >>> place({"x": np.arange(3)}, {"x": jnp.zeros(3, jnp.int32)})["x"].tolist()
        [0, 1, 2]
    """
    return jax.tree.map(lambda a, t: jax.device_put(a, t.sharding), tree, like)


def place_global(tree, like):
    """:func:`place` for arrays sharded over the devices of several processes: every process holds
    the whole loaded state and places the blocks of its own devices.

    Args:
        tree: the loaded state, whole, on every process (host arrays; PRNG keys as keys).
        like: the fresh state of the same structure, sharded over the devices of every process.

    Returns:
        ``tree`` as global arrays, each with the sharding of its counterpart.

    Example:
        >>> import jax.numpy as jnp, numpy as np
        >>> from jaxbandits.engine.devices import place_global
        >>> place_global({"x": np.arange(3)}, {"x": jnp.zeros(3, jnp.int32)})["x"].tolist()
        [0, 1, 2]
    """
    def one(a, t):
        if _is_key_array(t):
            data = np.asarray(jax.random.key_data(a))
            arr = jax.make_array_from_callback(data.shape, t.sharding, lambda idx: data[idx])
            return jax.random.wrap_key_data(arr, impl=jax.random.key_impl(t))
        a = np.asarray(a)
        return jax.make_array_from_callback(a.shape, t.sharding, lambda idx: a[idx])

    return jax.tree.map(one, tree, like)


def _is_key_array(a) -> bool:
    return isinstance(a, jax.Array) and jnp.issubdtype(a.dtype, jax.dtypes.prng_key)


def state_global(tree):
    """The carried state of a run over several processes, whole, as host arrays on every process
    (PRNG keys gathered as their key data and wrapped again): what a checkpoint saves.

    Args:
        tree: the carried state, sharded over the devices of every process.

    Returns:
        The whole state on every process (``tree`` itself in a single process).

    Example:
        >>> import numpy as np
        >>> from jaxbandits.engine.devices import state_global
        >>> state_global({"x": np.arange(3)})["x"].tolist()  # one process: the tree itself
        [0, 1, 2]
    """
    if jax.process_count() == 1:
        return tree
    from jax.experimental import multihost_utils

    leaves, treedef = jax.tree.flatten(tree)
    data = [jax.random.key_data(a) if _is_key_array(a) else a for a in leaves]
    got = multihost_utils.process_allgather(data, tiled=True)
    out = [jax.random.wrap_key_data(np.asarray(g), impl=jax.random.key_impl(a)) if _is_key_array(a) else np.asarray(g)
           for a, g in zip(leaves, got)]
    return jax.tree.unflatten(treedef, out)


def agree_across_processes(values, what: str):
    """Every process of a distributed run holds the same integers ``values`` (else the same clear
    error on each): one collective that every process reaches.

    Args:
        values: integers (a scalar or a sequence) every process must hold alike.
        what: what they are, for the message.

    Returns:
        None (a single process returns at once).

    Raises:
        RuntimeError: the processes disagree (every process raises it, naming the values).

    Example:
        >>> from jaxbandits.engine.devices import agree_across_processes
        >>> agree_across_processes([1, 0, 3], "(checkpoint given, resume, chunk to start from)")
    """
    if jax.process_count() == 1:
        return
    from jax.experimental import multihost_utils

    mine = np.atleast_1d(np.asarray(values, np.int64))
    got = np.asarray(multihost_utils.process_allgather(mine)).reshape(jax.process_count(), -1)
    if (got != got[0]).any():
        raise RuntimeError(f"distributed run: the processes disagree on {what}: {got.tolist()} (every process must "
                           "run the same command with the same --out, on a file system they share)")


def process_barrier(name: str):
    """Every process of a distributed run waits here for the others.

    Args:
        name: the barrier's name (the same on every process).

    Returns:
        None (a single process returns at once).

    Example:
        >>> from jaxbandits.engine.devices import process_barrier
        >>> process_barrier("results written")
    """
    if jax.process_count() > 1:
        from jax.experimental import multihost_utils

        multihost_utils.sync_global_devices(name)


def gather_local(tree):
    """Every leaf of ``tree`` (on the local devices) as a numpy array.

    Args:
        tree: a pytree of device arrays.

    Returns:
        The same tree of numpy arrays.

    Example:
        >>> import jax.numpy as jnp
        >>> from jaxbandits.engine.devices import gather_local
        >>> type(gather_local({"x": jnp.zeros(2)})["x"]).__name__
        'ndarray'
    """
    return jax.device_get(tree)


def gather_global(tree):
    """Every leaf (an array sharded along the runs axis over the devices of every process) as a
    numpy array on every process.

    Args:
        tree: a pytree of arrays sharded along the runs axis.

    Returns:
        The same tree of numpy arrays, whole, on every process.

    Example:
        >>> import jax.numpy as jnp
        >>> from jaxbandits.engine.devices import gather_global
        >>> gather_global({"x": jnp.arange(3)})["x"].tolist()
        [0, 1, 2]
    """
    if jax.process_count() == 1:
        return jax.device_get(tree)
    from jax.experimental import multihost_utils

    return multihost_utils.process_allgather(tree, tiled=True)
