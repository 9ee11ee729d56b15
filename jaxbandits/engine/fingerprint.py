"""What names a simulation: the fingerprint a checkpoint must match to be resumed, and the one that
names a simulation as a unit of a sweep (:func:`unit_fingerprint`: the same without the devices and
the chunks).
"""
from __future__ import annotations

from typing import Dict, Optional

import jax
import jax.numpy as jnp
import numpy as np

from ..core.values import policy_digest
from . import round as R
from .devices import n_devices
from .programs import Plan

__all__ = ["POLICY_IDS", "WORLD_IDS", "checkpoint_fingerprint", "unit_fingerprint", "world_digest"]

#: how a fingerprint names its policies: library policies by value (``v:`` and the digest of their
#: fields), a user's Policy NamedTuple by its name and functions' names (``u:``, values.user_policy_id).
#: Checkpoints written before named them otherwise: none (by a digest of their code and closures),
#: "values" (user policies still by a digest of their code): refused, naming the version.
POLICY_IDS = "values+names"

#: how a fingerprint names its world: by its tree's structure (its type, its delay law's type and
#: every static field) and its arrays' dtypes, shapes and bytes. Checkpoints written before named
#: it by its arrays' bytes alone (no ``world_ids``), so worlds that differ only in a static field or
#: in a delay law's type with the same parameters (``exponential(0.2)`` and ``poisson(0.2)``)
#: shared one: refused, naming the version.
WORLD_IDS = "structure+arrays"


def world_digest(world) -> str:
    """A world's name in a fingerprint: sha256 of its tree's structure (the world's type, its delay
    law's type, every static field: ``jax.tree.structure``) and of each array's dtype, shape and
    bytes (:data:`WORLD_IDS`). Two worlds get one digest only if they are equal as values.

    Args:
        world: a world (any pytree: its structure and arrays are what is hashed).

    Returns:
        ``str``, 16 hex digits.

    Examples:
        >>> from jaxbandits import delays, envs
        >>> from jaxbandits.engine.fingerprint import world_digest
        >>> a = envs.bernoulli([0.3, 0.6], delay=delays.exponential(0.2))
        >>> b = envs.bernoulli([0.3, 0.6], delay=delays.poisson(0.2))
        >>> world_digest(a) == world_digest(b), world_digest(a) == world_digest(envs.bernoulli([0.3, 0.6], delay=delays.exponential(0.2)))
        (False, True)
    """
    import hashlib

    leaves, tree = jax.tree.flatten(world)
    h = hashlib.sha256(str(tree).encode())
    for a in leaves:
        a = np.asarray(jax.random.key_data(a) if isinstance(a, jax.Array)
                       and jnp.issubdtype(a.dtype, jax.dtypes.prng_key) else a)
        h.update(f"|{a.dtype.str}{a.shape}|".encode() + a.tobytes())
    return h.hexdigest()[:16]


def checkpoint_fingerprint(plan: Plan, key, n_runs, record_at, chunk, first_run, extra=None) -> dict:
    """What a checkpoint must match to be resumed: the components as far as they can be named,
    every size, the key, the record points and chunks, and the versions that change the bits.

    Args:
        plan: the :class:`~jaxbandits.engine.programs.Plan` of the simulation's programs.
        key: the experiment's key.
        n_runs: the runs of the call.
        record_at: the record rounds.
        chunk: rounds per compiled chunk (None: one chunk).
        first_run: the global index of the first run.
        extra: more JSON-serialisable fields (None: none).

    Returns:
        A JSON-serialisable ``dict``: per label the policy (by its digest), channel, world (by
        :func:`world_digest`) and sizes; digests of the key and record points; the runs, chunk,
        devices, grid flag, the versions of JAX and jaxbandits, x64, :data:`POLICY_IDS`,
        :data:`WORLD_IDS`, and ``extra``.

    Example:
        >>> import jax
        >>> from jaxbandits import channels, envs
        >>> from jaxbandits.engine import problem, record_points
        >>> from jaxbandits.engine.fingerprint import checkpoint_fingerprint
        >>> from jaxbandits.engine.programs import Plan
        >>> from jaxbandits.policies import classic
        >>> prob = problem(envs.bernoulli([0.3, 0.6]), channels.attributed(), classic.ucb1(), 200)
        >>> fp = checkpoint_fingerprint(Plan((("ucb1", prob),), 1, False), jax.random.key(0), 4,
        ...                             record_points(200, 100), None, 0)
        >>> fp["n_runs"], fp["devices"], fp["policy_ids"]
        (4, 1, 'values+names')
    """
    import hashlib

    from ..version import __version__

    def digest(tree):
        h = hashlib.sha256()
        for a in jax.tree.leaves(tree):
            a = jax.random.key_data(a) if isinstance(a, jax.Array) and jnp.issubdtype(a.dtype, jax.dtypes.prng_key) else a
            h.update(np.asarray(a).tobytes())
        return h.hexdigest()[:16]

    probs = {lab: f"{p.policy.name} {policy_digest(p.policy)} | {p.channel} | {type(p.world).__name__} "
                  f"{world_digest(p.world)} | W={p.width} "
                  f"P={p.payload_size} H={p.cspec.reveal} T={p.horizon} dl={p.dl_mode},{p.dl_len}"
             for lab, p in plan.problems}
    return {"problems": probs, "key": digest(key), "n_runs": int(n_runs), "first_run": int(first_run),
            "record_at": digest(np.asarray(record_at)), "chunk": chunk, "devices": plan.n_dev,
            "gridded": plan.gridded, "jax": jax.__version__, "jaxbandits": __version__,
            "x64": bool(jax.config.jax_enable_x64), "policy_ids": POLICY_IDS, "world_ids": WORLD_IDS,
            **(extra or {})}


def unit_fingerprint(problems: Dict[str, R.Problem], grid_params, key, n_runs, record_at, first_run=0, shard=None,
                     extra: Optional[dict] = None) -> dict:
    """What names a simulation as a unit of a sweep (:class:`jaxbandits.experiments.sweeping.Sweep`): the
    checkpoint fingerprint of its program without the devices and the chunks (what a unit
    computes depends on neither: tested), plus its grid and ``extra``.

    Args:
        problems: ``{label: Problem}``.
        grid_params: a grid's parameters (None: no grid).
        key: the experiment's key.
        n_runs: the runs.
        record_at: the record rounds.
        first_run: the global index of the first run.
        shard: as :func:`~jaxbandits.engine.driver.simulate`'s.
        extra: more JSON-serialisable fields (None: none).

    Returns:
        A JSON-serialisable ``dict``: the components (each policy by its digest), sizes, key, runs,
        record points, grid and ``extra``.

    Examples:
        >>> import jax
        >>> import jaxbandits as jb
        >>> from jaxbandits import channels, delays, envs
        >>> from jaxbandits.policies import classic
        >>> world = envs.bernoulli([0.3, 0.6], delay=delays.geometric(mean=5.0))
        >>> from jaxbandits.engine import fingerprint, problem, record_points
        >>> probs = {"ucb1": problem(world, channels.attributed(), classic.ucb1(), 200)}
        >>> fp = fingerprint.unit_fingerprint(probs, None, jax.random.key(0), 4, record_points(200, 100))
        >>> "devices" in fp, "chunk" in fp
        (False, False)
    """
    plan = Plan(tuple(problems.items()), n_devices(shard, n_runs), grid_params is not None)
    fp = checkpoint_fingerprint(plan, key, n_runs, record_at, None, first_run,
                      {"grid": None if grid_params is None else {k: np.asarray(v).tolist() for k, v in grid_params.items()},
                       **(extra or {})})
    fp.pop("devices"), fp.pop("chunk")
    return fp
