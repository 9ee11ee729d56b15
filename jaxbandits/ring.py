"""The one ring-buffer / sliding-window primitive (docs/architecture.md, "The calendar").

A ring of length ``H`` stores the value of index ``i`` (a round, or a round plus a lag) at slot
``i mod H``. Every ring of the library (the channels' calendar and reveal ages, the delayed-regret
window, the policies' windows of recent plays) goes through these functions, in one order: *all
writes first* (clear the slot read last round, insert this round's value), *then the reads*. On
XLA:CPU a round that reads a carried buffer at a dynamic index and then writes into it makes XLA
copy the whole buffer every round (a 2000 x 1000 float buffer: 1.8e6 run-steps/s read-then-write,
5.9e8 write-then-read).
"""
from __future__ import annotations

import jax.numpy as jnp


def slot(buf, i):
    """The slot of index ``i``: ``i mod H``."""
    return i % buf.shape[0]


def put(buf, i, value):
    """Write ``value`` at index ``i`` (overwrites)."""
    return buf.at[i % buf.shape[0]].set(value)


def clear(buf, i):
    """Zero the slot of index ``i``."""
    return buf.at[i % buf.shape[0]].set(0)


def add(buf, i, value, ok=True):
    """Add ``value`` at index ``i`` if ``ok`` (else nothing: the write is dropped, never aliased)."""
    H = buf.shape[0]
    return buf.at[jnp.where(ok, i % H, H)].add(value, mode="drop")


def get(buf, i):
    """Read the slot of index ``i``."""
    return buf[i % buf.shape[0]]


def window(buf, t):
    """The last ``H`` values in age order: ``out[a]`` is the value of index ``t - a`` (one gather),
    with ``valid[a] = a <= t`` (indices before 0 were never written)."""
    H = buf.shape[0]
    a = jnp.arange(H)
    return buf[(t - a) % H], a <= t


def ages(t, H):
    """``age[j]`` of the value in slot ``j`` at index ``t`` (the slot written ``age`` steps ago),
    and ``live[j]``: the slot has been written (``j <= t``, or the ring has wrapped)."""
    j = jnp.arange(H)
    age = (t - j) % H
    return jnp.where(j <= t, age, 0), (j <= t) | (t >= H)


__all__ = ["slot", "put", "clear", "add", "get", "window", "ages"]


# ----------------------------------------------------------------------------- tau-weighted windows
def discounted_window(o, w, new, old, log_rho, m):
    """One round of the geometric-CDF-weighted sliding window of the last ``m + 1`` entries.

    With ``tau_a = 1 - rho^(a + 1)`` (a zero-based geometric CDF) and entries ``x_s`` entering at
    round ``s``: ``w`` is the plain sum of the entries in the window, ``o = sum rho^(age + 1) x_s``
    over it; ``new`` enters now and ``old`` (the entry of round ``t - m - 1``, read from a ring)
    leaves. Then ``sum_{s in window} tau_{t-s} x_s + tau_m closed`` is :func:`discounted_value`.
    Vernade et al. (2017): the expected number of revealed conversions ``Ñ`` (DelayedUCB) and the
    delayed regret ``L(t)`` are both this window (of pulls and of gaps)."""
    rho = jnp.exp(log_rho)
    o = rho * o - jnp.exp((m + 1) * log_rho) * old + rho * new
    w = w - old + new
    return o, w


def discounted_value(closed, w, o, log_rho, m):
    """``tau_m closed + w - o``: the window's weighted sum plus the closed entries at ``tau_m``."""
    tau_m = -jnp.expm1((m + 1) * log_rho)
    return tau_m * closed + w - o


def discounted_total(o, new, log_rho):
    """Uncensored (``m = inf``): ``o <- rho (o + new)``, and ``sum_s tau_{t-s} x_s = total - o``."""
    return jnp.exp(log_rho) * (o + new)
