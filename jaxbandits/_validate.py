"""Input checks run on the host, before anything is traced or compiled.

Every public constructor calls these, so bad input fails with a ``ValueError`` or ``TypeError``
that names the parameter and the allowed range. Values that are JAX tracers (a constructor called
inside ``vmap`` over a hyper-parameter grid) cannot be inspected and are passed through; the grid
itself is checked by :func:`jaxbandits.simulate.simulate_grid` before tracing.
"""
from __future__ import annotations

import numbers

import jax
import numpy as np


def is_concrete(x) -> bool:
    return not isinstance(x, jax.core.Tracer)


def _arr(name, x):
    if isinstance(x, (str, bytes)) or x is None:
        raise TypeError(f"{name} must be a number or an array of numbers, got {x!r}")
    try:
        a = np.asarray(x, dtype=np.float64)
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
    rng = f"{'(' if lo_open else '['}{'-inf' if lo is None else lo}, {'inf' if hi is None else hi}{')' if hi_open else ']'}"
    if lo is not None and ((a <= lo).any() if lo_open else (a < lo).any()):
        raise ValueError(f"{name} must lie in {rng}, got {x!r}")
    if hi is not None and ((a >= hi).any() if hi_open else (a > hi).any()):
        raise ValueError(f"{name} must lie in {rng}, got {x!r}")
    return x


def positive(name, x, **kw):
    return real(name, x, lo=0.0, lo_open=True, **kw)


def nonneg(name, x, **kw):
    return real(name, x, lo=0.0, **kw)


def prob(name, x):
    return real(name, x, lo=0.0, hi=1.0)


def integer(name, x, *, lo=None, hi=None):
    """A Python/numpy integer (not bool) in [lo, hi]; returns int."""
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


def int_array(name, x, *, lo=None, ndim=None):
    if not is_concrete(x):
        return x
    a = _arr(name, x)
    if ndim is not None and a.ndim != ndim:
        raise ValueError(f"{name} must have {ndim} dimension(s), got shape {a.shape}")
    if not np.isfinite(a).all() or (a != np.round(a)).any():
        raise ValueError(f"{name} must hold finite integers, got {x!r}")
    if lo is not None and (a < lo).any():
        raise ValueError(f"{name} must be >= {lo} everywhere, got min {a.min()}")
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
