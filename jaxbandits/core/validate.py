"""Internal: not public API (the checks every public constructor runs).

Input checks run on the host, before anything is traced or compiled.

Every public constructor calls these, so bad input fails with a ``ValueError`` or ``TypeError``
that names the parameter and the allowed range. Values that are JAX tracers (a constructor called
inside ``vmap`` over a hyper-parameter grid) cannot be inspected and are passed through; the grid
itself is checked by :func:`jaxbandits.engine.simulate_grid` before tracing.

The ranges that follow from the engine's dtypes (docs/conventions.md §1, §3, §8, §9):

* reals are finite and float32-representable: ``|x| <= F32_MAX`` (a positive parameter also
  ``>= F32_TINY``, the smallest normal float32, so it does not flush to 0);
* integers fit int32 unless a smaller or larger range is stated;
* the horizon is at most :data:`MAX_HORIZON` ``= 2**24``: per-arm counts and sums of Bernoulli
  rewards are float32 and exact up to ``2**24``, so they are exact at every accepted horizon;
  round indices ``t < 2**24`` plus delays ``<= NEVER = 2**30`` fit int32;
* seeds are integers in ``0 .. 2**64 - 1`` (:func:`seed_key`).
"""
from __future__ import annotations

import numbers

import jax
import numpy as np

#: The largest finite float32 and the smallest normal one.
F32_MAX = float(np.finfo(np.float32).max)
F32_TINY = float(np.finfo(np.float32).tiny)
INT32_MAX = 2**31 - 1
#: The largest accepted horizon: float32 per-arm counts are exact up to 2**24 (conventions §1).
MAX_HORIZON = 2**24
#: The largest seed: seeds are 64-bit (conventions §8).
MAX_SEED = 2**64 - 1
#: The most arms (actions) of a world: every run keeps per-arm vectors.
MAX_ARMS = 2**20
#: Gaussian worlds: ``|mean| <= 1e30`` and ``sigma <= 1e30`` keep a reward (``|mean| + 5.6 sigma``)
#: and its sum over 2**24 rounds finite in float32.
MAX_GAUSSIAN = 1e30
_DEFAULT = object()


def is_concrete(x) -> bool:
    return not isinstance(x, jax.core.Tracer)


def _arr(name, x):
    if isinstance(x, (str, bytes)) or x is None:
        raise TypeError(f"{name} must be a number or an array of numbers, got {x!r}")
    try:
        a = np.asarray(x, dtype=np.float64)
    except OverflowError:
        raise ValueError(f"{name} must be float32-representable (|{name}| <= {F32_MAX:.8g}), got {x!r}") from None
    except (TypeError, ValueError) as e:
        raise TypeError(f"{name} must be a number or an array of numbers, got {x!r}") from e
    return a


def real(name, x, *, lo=None, hi=None, lo_open=False, hi_open=False, allow_inf=False):
    """Check a real scalar or array lies in [lo, hi] (open ends on request); return it unchanged."""
    if not is_concrete(x):
        return x
    a = _arr(name, x)
    if np.isnan(a).any():
        raise ValueError(f"{name} must not be NaN, got {x!r}")
    if not allow_inf and not np.isfinite(a).all():
        raise ValueError(f"{name} must be finite, got {x!r}")
    fin = a[np.isfinite(a)]
    if fin.size and np.abs(fin).max() > F32_MAX:
        raise ValueError(f"{name} must be float32-representable (|{name}| <= {F32_MAX:.8g}), got {x!r}")
    rng = f"{'(' if lo_open else '['}{'-inf' if lo is None else lo}, {'inf' if hi is None else hi}{')' if hi_open else ']'}"
    if lo is not None and ((a <= lo).any() if lo_open else (a < lo).any()):
        raise ValueError(f"{name} must lie in {rng}, got {x!r}")
    if hi is not None and ((a >= hi).any() if hi_open else (a > hi).any()):
        raise ValueError(f"{name} must lie in {rng}, got {x!r}")
    return x


def positive(name, x, **kw):
    """``x > 0``, and at least :data:`F32_TINY` (a smaller one is 0 or subnormal in float32)."""
    real(name, x, lo=0.0, lo_open=True, **kw)
    if is_concrete(x) and (_arr(name, x) < F32_TINY).any():
        raise ValueError(f"{name} must be >= {F32_TINY:.8g} (the smallest normal float32), got {x!r}")
    return x


def nonneg(name, x, **kw):
    return real(name, x, lo=0.0, **kw)


def prob(name, x):
    return real(name, x, lo=0.0, hi=1.0)


def integer(name, x, *, lo=None, hi=_DEFAULT):
    """A Python/numpy integer (not bool) in [lo, hi] (``hi`` defaults to int32's max; ``hi=None``:
    unbounded); returns int."""
    if hi is _DEFAULT:
        hi = INT32_MAX
    if isinstance(x, bool) or not isinstance(x, numbers.Integral):
        if isinstance(x, float) and float(x).is_integer() and np.isfinite(x):
            x = int(x)
        else:
            raise TypeError(f"{name} must be an integer, got {x!r}")
    x = int(x)
    if lo is not None and x < lo:
        raise ValueError(f"{name} must be >= {lo}, got {x}")
    if hi is not None and x > hi:
        raise ValueError(f"{name} must be <= {hi}, got {x}")
    return x


def int_array(name, x, *, lo=None, hi=None, ndim=None):
    if not is_concrete(x):
        return x
    a = _arr(name, x)
    if ndim is not None and a.ndim != ndim:
        raise ValueError(f"{name} must have {ndim} dimension(s), got shape {a.shape}")
    if not np.isfinite(a).all() or (a != np.round(a)).any():
        raise ValueError(f"{name} must hold finite integers, got {x!r}")
    if lo is not None and (a < lo).any():
        raise ValueError(f"{name} must be >= {lo} everywhere, got min {a.min()}")
    if hi is not None and (a > hi).any():
        raise ValueError(f"{name} must be <= {hi} everywhere, got max {a.max()}")
    return x


def shape(name, x, expected):
    if not is_concrete(x):
        return x
    a = np.shape(x)
    if tuple(a) != tuple(expected):
        raise ValueError(f"{name} must have shape {tuple(expected)}, got {tuple(a)}")
    return x


def choice(name, x, allowed):
    if x not in allowed:
        raise ValueError(f"{name} must be one of {sorted(allowed)}, got {x!r}")
    return x


def horizon(name, x):
    """A horizon: an integer in ``[1, MAX_HORIZON]`` (float32 counts are exact up to 2**24)."""
    x = integer(name, x, lo=1, hi=None)
    if x > MAX_HORIZON:
        raise ValueError(f"{name} must be <= 2**24 = {MAX_HORIZON} (per-arm counts are float32, exact up to "
                         f"2**24: docs/conventions.md §1), got {x}")
    return x


def seed(name, x):
    """A seed: an integer in ``0 .. 2**64 - 1``; returns int."""
    if isinstance(x, bool) or not isinstance(x, numbers.Integral):
        raise TypeError(f"{name} must be an integer seed in [0, 2**64 - 1], got {x!r}")
    x = int(x)
    if not 0 <= x <= MAX_SEED:
        raise ValueError(f"{name} must lie in [0, 2**64 - 1] = [0, {MAX_SEED}], got {x}")
    return x


def seed_key(x, name="seed"):
    """The PRNG key of a seed in ``0 .. 2**64 - 1`` (conventions §8): ``key(seed)`` below 2**32
    (unchanged), ``fold_in(key(seed mod 2**32), seed >> 32)`` above, so no two seeds share a key."""
    x = seed(name, x)
    if x < 2**32:
        return jax.random.key(x)
    return jax.random.fold_in(jax.random.key(x & 0xFFFFFFFF), x >> 32)
