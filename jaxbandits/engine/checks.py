"""The host checks of a simulation's arguments, run before anything compiles
(docs/conventions.md §1, §8): the horizon, runs and key every path takes, the run indices and chunk
of the driver, the statistics' block size, and the policies (one, or a ``{label: policy}`` dict).
"""
from __future__ import annotations

from typing import Mapping

import jax
import jax.numpy as jnp
import numpy as np

from ..core import validate as V
from ..core.values import is_policy
from . import round as R
from .recording import record_points

__all__ = ["check_common", "check_run_args", "check_stats_block", "check_args", "policies_dict"]


def check_stats_block(stats_block):
    """``stats_block`` checked (``None``, or a power of two >= 1), as every path takes it.

    Args:
        stats_block: the statistics' block size given to ``simulate`` (None: the default).

    Returns:
        ``stats_block`` as an ``int``, or None.

    Raises:
        ValueError: not an integer ``>= 1``, or not a power of two.

    Example:
        >>> from jaxbandits.engine.checks import check_stats_block
        >>> check_stats_block(64), check_stats_block(None)
        (64, None)
    """
    if stats_block is not None:
        stats_block = V.integer("stats_block", stats_block, lo=1)
        if stats_block & (stats_block - 1):
            raise ValueError(f"stats_block must be a power of two, got {stats_block}")
    return stats_block


def check_run_args(n_runs, first_run, chunk):
    """Arguments of the driver checked before anything compiles: run indices fit int32, a chunk is
    a positive number of rounds.

    Args:
        n_runs: the runs (already checked by :func:`check_common`).
        first_run: the global index of the first run, ``>= 0``.
        chunk: rounds per compiled chunk, ``>= 1``, or None.

    Returns:
        ``first_run`` as an ``int``.

    Raises:
        ValueError: ``first_run`` negative, ``first_run + n_runs`` past ``2**31 - 1``, or a chunk
            below 1.

    Example:
        >>> from jaxbandits.engine.checks import check_run_args
        >>> check_run_args(100, 200, None)
        200
    """
    first_run = V.integer("first_run", first_run, lo=0)
    if first_run + n_runs > 2**31 - 1:
        raise ValueError(f"first_run + n_runs must be at most 2**31 - 1 (run indices are int32), got "
                         f"{first_run} + {n_runs}")
    if chunk is not None:
        V.integer("chunk", chunk, lo=1)
    return first_run


def check_common(horizon, n_runs, key):
    """Host checks of the arguments every simulation takes (docs/conventions.md §1, §8): the
    horizon (<= 2**24: float32 counts stay exact), the runs (run indices are int32) and the key
    (a PRNG key, or an int seed in 0 .. 2**64 - 1 mapped to a key).

    Args:
        horizon: the number of rounds, an integer in ``[1, 2**24]``.
        n_runs: the runs, an integer ``>= 1``.
        key: a ``jax.random.key(...)`` or an integer seed in ``[0, 2**64 - 1]``.

    Returns:
        ``(horizon, n_runs, key)``: integers and a PRNG key.

    Raises:
        TypeError: a key that is neither a PRNG key nor an integer.
        ValueError: an argument out of range (the message names it and the range), or an array
            of keys.

    Example:
        >>> from jaxbandits.engine.checks import check_common
        >>> horizon, n_runs, key = check_common(1000, 8, 0)
        >>> horizon, n_runs, key.shape
        (1000, 8, ())
    """
    horizon = V.horizon("horizon", horizon)
    n_runs = V.integer("n_runs", n_runs, lo=1)
    if isinstance(key, (int, np.integer)) and not isinstance(key, bool):
        key = V.seed_key(key, "key")
    elif not (isinstance(key, jax.Array) and jnp.issubdtype(key.dtype, jax.dtypes.prng_key)):
        raise TypeError(f"key must be a jax.random.key(...) or an int seed in [0, 2**64 - 1], got {type(key).__name__}")
    elif key.shape != ():
        raise ValueError(f"key must be a single PRNG key (shape ()), got shape {key.shape}")
    return horizon, n_runs, key


def check_args(env, channel, policies, horizon, key, n_runs, record, chunk, first_run, delayed_regret):
    """The scan path's host checks, in its order and with its messages, before anything compiles
    (the fused path runs them first, so a malformed call gets the same error on both paths).

    Args:
        env: the world.
        channel: the channel.
        policies: a policy or a ``{label: policy}`` dict.
        horizon: the number of rounds.
        key: a ``jax.random.key`` or an integer seed.
        n_runs: the runs.
        record: the record points (:func:`~jaxbandits.engine.recording.record_points`).
        chunk: rounds per compiled chunk, or None.
        first_run: the global index of the first run.
        delayed_regret: track ``L(t)`` (None: for censoring channels).

    Returns:
        ``(horizon, n_runs, key, first_run)``, checked.

    Raises:
        TypeError: a component or argument of the wrong type.
        ValueError: an argument out of range, or a policy the channel cannot serve.

    Example:
        >>> from jaxbandits import channels, envs
        >>> from jaxbandits.engine.checks import check_args
        >>> from jaxbandits.policies import classic
        >>> world = envs.bernoulli([0.3, 0.6])
        >>> check_args(world, channels.attributed(), classic.ucb1(), 100, 0, 4, None, None, 0, None)[:2]
        (100, 4)
    """
    horizon, n_runs, key = check_common(horizon, n_runs, key)
    first_run = check_run_args(n_runs, first_run, chunk)
    record_points(horizon, record)
    _, pols = policies_dict(policies)
    for lab, pol in pols.items():
        R.problem(env, channel, pol, horizon, n_runs=n_runs, delayed_regret=delayed_regret, label=lab)
    return horizon, n_runs, key, first_run


def policies_dict(policies):
    """``(single, {label: Policy})`` of one Policy (labelled by its name) or a non-empty
    ``{label: Policy}`` mapping; another type is a TypeError, an empty mapping a ValueError.

    Args:
        policies: a policy, or a ``{label: policy}`` dict.

    Returns:
        ``(single, {label: policy})``: ``single`` when one policy (not a dict) was given.

    Raises:
        TypeError: not a policy nor a mapping of policies.
        ValueError: an empty mapping.

    Example:
        >>> from jaxbandits.engine.checks import policies_dict
        >>> from jaxbandits.policies import classic
        >>> single, pols = policies_dict(classic.ucb1())
        >>> single, list(pols)
        (True, ['UCB1'])
    """
    if is_policy(policies):
        return True, {policies.name: policies}
    if not isinstance(policies, Mapping):
        raise TypeError("policies must be a Policy or a non-empty {label: Policy} dict, got "
                        f"{type(policies).__name__}" + (" (give a dict: {label: policy})"
                                                         if isinstance(policies, (list, tuple)) else ""))
    if not policies:
        raise ValueError("policies must be a Policy or a non-empty {label: Policy} dict, got an empty one")
    for lab, pol in policies.items():
        if not is_policy(pol):
            raise TypeError(f"policies[{lab!r}] must be a Policy (a policy constructor's result), got "
                            f"{type(pol).__name__}")
    return False, dict(policies)
