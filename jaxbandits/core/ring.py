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
    """The slot of index ``i``: ``i mod H``.

    Args:
        buf: the ring, an array of leading length ``H``.
        i: the index (a round, or a round plus a lag).

    Returns:
        The slot.

    Examples:
        >>> import jax.numpy as jnp
        >>> from jaxbandits import ring
        >>> int(ring.slot(jnp.zeros(4), 5))
        1
    """
    return i % buf.shape[0]


def put(buf, i, value):
    """Write ``value`` at index ``i`` (overwrites).

    Args:
        buf: the ring.
        i: the index.
        value: the value (shaped as one slot).

    Returns:
        The new ring.

    Examples:
        >>> import jax.numpy as jnp
        >>> from jaxbandits import ring
        >>> ring.put(jnp.zeros(4), 5, 7.0).tolist()
        [0.0, 7.0, 0.0, 0.0]
    """
    return buf.at[i % buf.shape[0]].set(value)


def clear(buf, i):
    """Zero the slot of index ``i``.

    Args:
        buf: the ring.
        i: the index.

    Returns:
        The new ring.

    Examples:
        >>> import jax.numpy as jnp
        >>> from jaxbandits import ring
        >>> ring.clear(jnp.ones(4), 6).tolist()
        [1.0, 1.0, 0.0, 1.0]
    """
    return buf.at[i % buf.shape[0]].set(0)


def add(buf, i, value, ok=True):
    """Add ``value`` at index ``i`` if ``ok`` (else nothing: the write is dropped, never aliased).

    Args:
        buf: the ring.
        i: the index.
        value: the value to add.
        ok: whether to add (a bool, traced or not).

    Returns:
        The new ring.

    Examples:
        >>> import jax.numpy as jnp
        >>> from jaxbandits import ring
        >>> buf = jnp.zeros(4)
        >>> ring.add(buf, 5, 1.0).tolist(), ring.add(buf, 5, 1.0, ok=False).tolist()
        ([0.0, 1.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0])
    """
    H = buf.shape[0]
    return buf.at[jnp.where(ok, i % H, H)].add(value, mode="drop")


def get(buf, i):
    """Read the slot of index ``i``.

    Args:
        buf: the ring.
        i: the index.

    Returns:
        The slot's value.

    Examples:
        >>> import jax.numpy as jnp
        >>> from jaxbandits import ring
        >>> float(ring.get(jnp.array([10.0, 11.0, 12.0, 13.0]), 6))
        12.0
    """
    return buf[i % buf.shape[0]]


def window(buf, t):
    """The last ``H`` values in age order (one gather).

    Args:
        buf: the ring of length ``H``.
        t: the latest index written.

    Returns:
        ``(out, valid)``: ``out[a]`` is the value of index ``t - a``, ``valid[a] = a <= t``
        (indices before 0 were never written).

    Examples:
        >>> import jax.numpy as jnp
        >>> from jaxbandits import ring
        >>> out, valid = ring.window(jnp.array([10.0, 11.0, 12.0, 13.0]), 1)
        >>> out.tolist(), valid.tolist()
        ([11.0, 10.0, 13.0, 12.0], [True, True, False, False])
    """
    H = buf.shape[0]
    a = jnp.arange(H)
    return buf[(t - a) % H], a <= t


def ages(t, H):
    """The age of the value in each slot at index ``t``.

    Args:
        t: the latest index written.
        H: the ring's length.

    Returns:
        ``(age, live)``: ``age[j]``, the value in slot ``j`` was written ``age`` steps ago;
        ``live[j]``, the slot has been written (``j <= t``, or the ring has wrapped).

    Examples:
        >>> from jaxbandits import ring
        >>> age, live = ring.ages(1, 4)
        >>> age.tolist(), live.tolist()
        ([1, 0, 0, 0], [True, True, False, False])
    """
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
    delayed regret ``L(t)`` are both this window (of pulls and of gaps).

    Args:
        o: the discounted sum so far.
        w: the plain sum so far.
        new: the entry entering now.
        old: the entry leaving now (0 while the window is not full).
        log_rho: ``log rho`` of the geometric law.
        m: the window.

    Returns:
        ``(o, w)``, updated.

    Examples:
        >>> import math
        >>> from jaxbandits import ring
        >>> o, w = ring.discounted_window(0.0, 0.0, 1.0, 0.0, math.log(0.5), 3)  # one entry, age 0
        >>> float(ring.discounted_value(0.0, w, o, math.log(0.5), 3))  # tau_0 = 1 - 0.5
        0.5
    """
    rho = jnp.exp(log_rho)
    o = rho * o - jnp.exp((m + 1) * log_rho) * old + rho * new
    w = w - old + new
    return o, w


def discounted_value(closed, w, o, log_rho, m):
    """``tau_m closed + w - o``: the window's weighted sum plus the closed entries at ``tau_m``.

    Args:
        closed: the sum of the entries older than the window.
        w: the window's plain sum.
        o: the window's discounted sum.
        log_rho: ``log rho`` of the geometric law.
        m: the window.

    Returns:
        The weighted sum.

    Examples:
        >>> import math
        >>> from jaxbandits import ring
        >>> round(float(ring.discounted_value(2.0, 0.0, 0.0, math.log(0.5), 1)), 3)  # tau_1 = 0.75
        1.5
    """
    tau_m = -jnp.expm1((m + 1) * log_rho)
    return tau_m * closed + w - o


def discounted_total(o, new, log_rho):
    """The uncensored window (``m = inf``): ``o <- rho (o + new)``.

    Then ``sum_s tau_{t-s} x_s = total - o``.

    Args:
        o: the discounted sum so far.
        new: the entry entering now.
        log_rho: ``log rho`` of the geometric law.

    Returns:
        The new ``o``.

    Examples:
        >>> import math
        >>> from jaxbandits import ring
        >>> float(ring.discounted_total(0.0, 1.0, math.log(0.5)))
        0.5
    """
    return jnp.exp(log_rho) * (o + new)
