"""Test policies that expose exactly what a channel delivers."""
from typing import Any, NamedTuple

import jax.numpy as jnp

from jaxbandits.core.types import Needs, Policy

ALL = Needs()  # runs on every channel


class RecState(NamedTuple):
    log: Any  # f32[T, P]: what arrived at each round
    dnow: Any  # i32[T]: context.delay_now at each round


class RecMemo(NamedTuple):
    t: Any


def recorder(T, K):
    """Plays arm t mod K; its payload puts ``r + 1`` in the lane of the round of origin, so every
    record (zero rewards included) is visible exactly; logs every arrival."""

    def init(spec, key):
        P = T if spec.feedback.attributed else 1
        return RecState(jnp.zeros((T, P), jnp.float32), jnp.zeros((T,), jnp.int32))

    def act(state, ctx, key):
        return (ctx.t % K).astype(jnp.int32), RecMemo(ctx.t)

    def payload(memo, r, d):
        return jnp.zeros((T,), jnp.float32).at[memo.t].set(r + 1.0)

    def update(state, arr):
        return RecState(state.log.at[arr.t].set(arr.payload), state.dnow)

    return Policy(init, act, update, payload, ALL, "recorder")


class ReactState(NamedTuple):
    cum: Any


def reactive(K):
    """Acts on the running sum of everything it receives: any change in what arrives changes
    its later actions (with high probability), so it detects leaks."""

    def init(spec, key):
        return ReactState(jnp.zeros((), jnp.float32))

    def act(state, ctx, key):
        a = jnp.floor(jnp.abs(jnp.sin(state.cum * 12.9898 + 0.5)) * 43758.5453) % K
        return a.astype(jnp.int32), RecMemo(ctx.t)

    def payload(memo, r, d):  # depends on the round of origin: attribution is visible when given
        return jnp.stack([r * (memo.t % 7 + 1.0), 1.0])

    def update(state, arr):
        return ReactState(state.cum + jnp.sum(arr.payload * jnp.arange(1, arr.payload.shape[0] + 1)))

    return Policy(init, act, update, payload, ALL, "reactive")


_TINY_SWEEP = {"log2_T": [3, 4], "delays": [0, 2], "horizon": 64}


def tiny_runner_configs():
    """Every registered experiment with a runner (the sweeps and studies), as ``(name, experiment,
    config)`` with its horizon-like settings cut to a few rounds (``log2_T`` [3, 4], ``delays``
    [0, 2], ``horizon`` 64; a scalar setting given as a list takes the list's last value), so that a
    test can run its bookkeeping in the fast suite."""
    import jaxbandits.experiments as X

    for name, exp in X.load_all().items():
        if exp.runner is None:
            continue
        cfg = dict(exp.config)
        for k, v in _TINY_SWEEP.items():
            if k in cfg:
                cfg[k] = v if isinstance(cfg[k], list) else v[-1] if isinstance(v, list) else v
        yield name, exp, cfg
