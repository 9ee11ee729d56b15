"""A ``simulate`` or ``simulate_grid`` call's arguments checked and resolved on the host, nothing
compiled: :class:`Prepared` and :class:`PreparedGrid`, the problems they run and the sizes they
fix (what runs a call, and what names it: :func:`jaxbandits.engine.fingerprint.unit_fingerprint`).
"""
from __future__ import annotations

from typing import Any, Callable, Dict, Mapping, NamedTuple, Optional

import jax.numpy as jnp
import numpy as np

from ..core.values import FieldGrid
from . import round as R
from .checks import check_common, check_run_args, check_stats_block, policies_dict
from .memory import auto_chunk
from .recording import record_points
from .reduce import resolve_keep


class Prepared(NamedTuple):
    """A ``simulate`` call's arguments, checked and resolved on the host (nothing compiled): what
    runs it, and what names it (:func:`~jaxbandits.engine.fingerprint.unit_fingerprint`).

    Attributes:
        single: one policy was given (not a dict): ``simulate`` returns its ``SimOutput`` alone.
        problems: ``{label: Problem}``.
        horizon: the number of rounds.
        key: the experiment's key (a seed turned into a key).
        n_runs: the runs of the call.
        first_run: the global index of its first run.
        record_at: the record rounds.
        chunk: the chunk given, or the reduced form's automatic one.
        keep: the runs whose curves are kept (:func:`resolve_keep`).
        stats_block: the statistics' block size (None: the default).
    """

    single: bool  # one policy given (not a dict): simulate returns its SimOutput alone
    problems: Dict[str, R.Problem]
    horizon: int
    key: Any
    n_runs: int
    first_run: int
    record_at: np.ndarray
    chunk: Optional[int]  # the chunk given, or the reduced form's automatic one
    keep: int  # runs whose curves are kept (resolve_keep)
    stats_block: Optional[int]


def prepare(env, channel, policies, horizon: int, key, n_runs: int = 1, *, record=None,
            chunk: Optional[int] = None, first_run: int = 0, delayed_regret: Optional[bool] = None,
            keep=None, stats_block: Optional[int] = None) -> Prepared:
    """Every host check of :func:`~jaxbandits.engine.driver.simulate`'s arguments, in its order, and
    the sizes they fix: a :class:`Prepared` (no compile, no device work).

    Args:
        env: the world.
        channel: the channel.
        policies: a policy or a ``{label: policy}`` dict.
        horizon: the number of rounds, an integer in ``[1, 2**24]``.
        key: a ``jax.random.key`` or an integer seed.
        n_runs: the runs, an integer ``>= 1``.
        record: the record points (:func:`~jaxbandits.engine.recording.record_points`).
        chunk: rounds per compiled chunk (None: automatic in the reduced form, else one chunk).
        first_run: the global index of the first run, ``>= 0``.
        delayed_regret: track ``L(t)`` (None: for censoring channels).
        keep: the per-run curves kept (:func:`resolve_keep`).
        stats_block: the statistics' block size, a power of two (None: the default).

    Returns:
        The :class:`Prepared` call.

    Raises:
        TypeError: a component or argument of the wrong type.
        ValueError: an argument out of range, or a policy the channel cannot serve.

    Examples:
        >>> import jax
        >>> import jaxbandits as jb
        >>> from jaxbandits import channels, delays, envs
        >>> from jaxbandits.policies import classic
        >>> world = envs.bernoulli([0.3, 0.6], delay=delays.geometric(mean=5.0))
        >>> from jaxbandits.engine import prepare
        >>> p = prepare.prepare(world, channels.attributed(), classic.ucb1(), 1000, 0, n_runs=8, record=250)
        >>> p.single, list(p.problems), p.record_at.tolist(), p.keep
        (True, ['UCB1'], [249, 499, 749, 999], 8)
    """
    horizon, n_runs, key = check_common(horizon, n_runs, key)
    first_run = check_run_args(n_runs, first_run, chunk)
    record_at = record_points(horizon, record)
    single, pols = policies_dict(policies)
    problems = {lab: R.problem(env, channel, pol, horizon, n_runs=n_runs, delayed_regret=delayed_regret, label=lab)
                for lab, pol in pols.items()}
    keep_n = resolve_keep(keep, [p.spec.n_arms for p in problems.values()], n_runs, len(record_at),
                          any(p.world.adversarial for p in problems.values()))
    if chunk is None and keep_n < n_runs:  # the reduced form: a chunk's records bound the device memory
        chunk = auto_chunk([p.spec.n_arms for p in problems.values()], n_runs, horizon, len(record_at))
    stats_block = check_stats_block(stats_block)
    return Prepared(single, problems, horizon, key, n_runs, first_run, record_at, chunk, keep_n, stats_block)


class PreparedGrid(NamedTuple):
    """A ``simulate_grid`` call's arguments, checked and resolved on the host.

    Attributes:
        label: the policy's name (of the first grid point).
        problem: the :class:`~jaxbandits.engine.round.Problem`, its components built from the
            parameters inside the program.
        params: ``{name: jnp array [G, ...]}``.
        n_grid: ``G``, the number of grid points.
        horizon: the number of rounds.
        key: the experiment's key.
        n_runs: the runs of each grid point.
        record_at: the record rounds.
    """

    label: str
    problem: R.Problem
    params: Dict[str, Any]  # name -> jnp array [G, ...]
    n_grid: int
    horizon: int
    key: Any
    n_runs: int
    record_at: np.ndarray


def prepare_grid(build: Callable, grid: Mapping[str, Any], channel, horizon: int, key, n_runs: int = 1, *,
                 record=None, chunk=None) -> PreparedGrid:
    """Every host check of :func:`~jaxbandits.engine.driver.simulate_grid`'s arguments (every grid
    point built once on the host) and the problem it runs: a :class:`PreparedGrid`.

    Args:
        build: ``build(**params) -> (env, policy)``, or a pair ``(env, policy value)`` (a grid
            over the policy's fields, :class:`~jaxbandits.core.values.FieldGrid`).
        grid: ``{name: array [G, ...]}``, one common leading length ``G``.
        channel: the channel.
        horizon: the number of rounds.
        key: a ``jax.random.key`` or an integer seed.
        n_runs: the runs of each grid point, ``>= 1``.
        record: the record points.
        chunk: rounds per compiled chunk (None: one chunk).

    Returns:
        The :class:`PreparedGrid`.

    Raises:
        ValueError: an empty grid, arrays of different leading lengths, or a bad argument (also
            from the constructors, run on every grid point).

    Examples:
        >>> from jaxbandits import channels, envs
        >>> from jaxbandits.engine import prepare
        >>> from jaxbandits.policies import classic
        >>> build = lambda alpha: (envs.bernoulli([0.3, 0.6]), classic.ucb1(alpha=alpha))
        >>> g = prepare.prepare_grid(build, {"alpha": [0.5, 1.0, 2.0]}, channels.attributed(), 500, 0)
        >>> g.n_grid, g.label
        (3, 'UCB1')
    """
    if isinstance(build, tuple):  # (world, policy value): a grid over the policy's fields
        if len(build) != 2:
            raise ValueError(f"build must be a function or a pair (world, policy), got a tuple of {len(build)}")
        build = FieldGrid(build[0], build[1], tuple(grid))
    horizon, n_runs, key = check_common(horizon, n_runs, key)
    check_run_args(n_runs, 0, chunk)
    record_at = record_points(horizon, record)
    if not grid:
        raise ValueError("grid must map at least one parameter name to an array of values")
    arrs = {k: np.asarray(v) for k, v in grid.items()}
    sizes = {k: a.shape[0] if a.ndim >= 1 else -1 for k, a in arrs.items()}
    if len(set(sizes.values())) != 1 or -1 in sizes.values():
        raise ValueError(f"grid values must be arrays with one common leading length, got sizes {sizes}")
    G = next(iter(sizes.values()))
    first = None
    for g in range(G):
        env, pol = build(**{k: (a[g].item() if a.ndim == 1 else a[g]) for k, a in arrs.items()})
        R.check_pair(channel, pol, pol.name)
        first = first or (env, pol)
    env, pol = first
    params = {k: jnp.asarray(a) for k, a in arrs.items()}
    prob = R.problem(env, channel, pol, horizon, n_runs=n_runs, build=_Splat(build))
    return PreparedGrid(pol.name, prob, params, G, horizon, key, n_runs, record_at)


class _Splat:
    """``build(**params)`` as ``f(params)``, equal for the same ``build`` (so programs are reused)."""

    __slots__ = ("build",)

    def __init__(self, build):
        self.build = build

    def __call__(self, params):
        return self.build(**params)

    def __hash__(self):
        return hash(("splat", self.build if isinstance(self.build, FieldGrid) else id(self.build)))

    def __eq__(self, other):
        if not isinstance(other, _Splat):
            return False
        if isinstance(self.build, FieldGrid):  # a grid over a policy's fields: by value
            return self.build == other.build
        return other.build is self.build
