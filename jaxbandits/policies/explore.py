"""An exploration floor and the logging probability of a decision (docs/ope.md, *Logging*).

A deterministic policy's log supports no off-policy estimate: every decision had probability 1, so
no other policy's choices can be weighted. :func:`explore` mixes a policy with the uniform law:
with probability ``eps`` the decision is an arm ``u`` drawn uniformly among the allowed arms (the
context's arm mask, all ``K`` arms without one) by :func:`explore` itself, else the base policy's
own choice. The law is then ``eps * q + (1 - eps) * p`` by construction, whatever the base does
with the mask: ``q`` is uniform over the allowed arms, ``p`` the base's law (exact for a policy with
``memo_probs``, else a Monte Carlo estimate over ``samples`` draws of its randomness,
:func:`chosen_probability`). Its memo carries that law (``memo_probs``). When it explores, the base's
memo is the one of its act under the one-arm mask ``{u}``: a base that honours ``ctx.mask`` (the
serve policies, Exp3, the index and linear policies) then records the arm played; one that ignores
the mask (the adversarial, anonymous-feedback and composite policies) still gets ``u`` played and
logged exactly, but its own memo describes its unmasked choice.

:func:`chosen_probability` is what :func:`jaxbandits.online.decide` records with each decision
(``propensity=True``): ``memo.probs[a]`` for a policy with ``memo_probs`` (exact), else the fraction
of ``samples`` draws of the policy's act (the realised one and ``samples - 1`` with independent
keys, so it is never 0) that choose the same arm; deterministic policies get exactly 1.
"""
from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from ..core import validate as V
from ..core import mathlib as M
from ..core.types import Policy
from ..core.values import is_policy, policy_value

__all__ = ["explore", "chosen_probability", "ExploreMemo", "ExploreState", "MC_SALT"]

#: Folded into a decision's key for the Monte Carlo draws of its law (independent of its own draw).
MC_SALT = 0x0E57
_EXPLORE_SALT = 0x0E58


class ExploreState(NamedTuple):
    """The state of :func:`explore`.

    Attributes:
        base: the base policy's state.
        arms: bool[K] zeros: carries the number of arms as a static shape.
    """
    base: Any  # the base policy's state
    arms: Any  # bool[K], zeros: carries the number of arms as a static shape


class ExploreMemo(NamedTuple):
    """The memo of :func:`explore`.

    Attributes:
        base: the base policy's memo of the chosen arm.
        probs: f32[K], the law the decision was drawn from.
        hold: i32, the base memo's hold (``base.memo_hold``), else 0.
    """
    base: Any  # the base policy's memo of the chosen arm
    probs: Any  # f32[K] the law the decision was drawn from
    hold: Any  # i32: the base memo's hold (base.memo_hold), else 0


def _mc_law(policy: Policy, state, ctx, key, a_real, samples: int, K: int):
    """``f32[K]``: the realised arm and ``samples - 1`` independent draws of ``policy.act``, as frequencies."""
    base = M.fold_in(key, MC_SALT)
    keys = jax.vmap(lambda s: M.fold_in(base, s))(jnp.arange(samples - 1, dtype=jnp.int32))
    arms = jax.vmap(lambda k: policy.act(state, ctx, k)[0])(keys)
    counts = jnp.zeros((K,), jnp.float32).at[arms].add(1.0).at[a_real].add(1.0)
    return counts / samples


def chosen_probability(policy: Policy, state, ctx, key, a, memo, samples: int, n_arms: int):
    """The probability the policy gave arm ``a`` (chosen with ``key``).

    Exact from ``memo.probs`` for a policy with ``memo_probs``, else Monte Carlo over ``samples``
    draws (see the module).

    Args:
        policy: the policy that decided.
        state: its state at the decision.
        ctx: the decision's context.
        key: the decision's key.
        a: the arm chosen.
        memo: the decision's memo.
        samples: Monte Carlo draws for a policy without ``memo_probs``.
        n_arms: the number of arms.

    Returns:
        f32, the probability of ``a``.

    Examples:
        >>> import jax.numpy as jnp
        >>> from jaxbandits.policies import classic, explore
        >>> from jaxbandits.policies.classic import RandomMemo
        >>> memo = RandomMemo(probs=jnp.full(4, 0.25))  # uniform_random declares memo_probs
        >>> float(explore.chosen_probability(classic.uniform_random(), None, None, None, 1, memo, 1, 4))
        0.25
    """
    if policy.memo_probs:
        return jnp.asarray(memo.probs, jnp.float32)[a]
    return _mc_law(policy, state, ctx, key, a, samples, n_arms)[a]


@policy_value("Explore")
def explore(base: Policy, eps: float, samples: int = 256) -> Policy:
    """``base`` with an exploration floor: with probability ``eps`` a uniformly drawn arm.

    See the module: the decision's law is ``eps * q + (1 - eps) * p`` and its memo carries it, so
    its logs support off-policy estimates.

    Args:
        base: the policy to explore around.
        eps: the exploration probability, in ``[0, 1]``.
        samples: Monte Carlo draws of the base's law when it does not declare ``memo_probs`` (the
            logged probability is then exact in its ``eps`` part only), an integer in
            ``[1, 65536]``.

    Returns:
        The policy, a frozen value (``Explore(...)``) holding ``base`` as a field.

    Raises:
        TypeError: ``base`` is not a policy.
        ValueError: ``eps`` or ``samples`` out of range.

    Examples:
        >>> from jaxbandits.policies import classic, explore
        >>> pol = explore.explore(classic.ucb1(), eps=0.1)
        >>> pol, pol.name
        (Explore(base=UCB1(), eps=0.1), 'UCB1+explore(0.1)')
    """
    if not is_policy(base):
        raise TypeError(f"base must be a jaxbandits Policy, got {type(base).__name__}")
    eps = float(V.real("eps", eps, lo=0.0, hi=1.0))
    samples = V.integer("samples", samples, lo=1, hi=2**16)

    def init(spec, key):
        return ExploreState(base.init(spec, key), jnp.zeros((spec.n_arms,), bool))

    def act(st, ctx, key):
        state = st.base
        K = st.arms.shape[0]  # static
        a_b, m_b = base.act(state, ctx, key)
        kx = M.fold_in(key, _EXPLORE_SALT)
        go = M.uniform(M.fold_in(kx, 0)) < eps
        allowed = jnp.ones((K,), bool) if ctx.mask is None else jnp.asarray(ctx.mask, bool)
        n_ok = jnp.maximum(jnp.sum(allowed), 1)
        # the (j+1)-th allowed arm, j uniform in {0 .. n_ok-1}: without a mask, floor(U K)
        j = jnp.minimum(jnp.floor(M.uniform(M.fold_in(kx, 1)) * n_ok).astype(jnp.int32), n_ok - 1)
        u = jnp.argmax(allowed & (jnp.cumsum(allowed.astype(jnp.int32)) > j)).astype(jnp.int32)
        _, m_x = base.act(state, ctx._replace(mask=jnp.arange(K) == u), key)  # the base's memo for u
        a = jnp.where(go, u, a_b).astype(jnp.int32)
        memo = jax.tree.map(lambda x, y: jnp.where(go, x, y), m_x, m_b)
        q = allowed.astype(jnp.float32) / n_ok.astype(jnp.float32)
        if base.memo_probs:
            p = jnp.asarray(m_b.probs, jnp.float32)
        else:
            p = _mc_law(base, state, ctx, key, a_b, samples, K)
        probs = eps * q + (1.0 - eps) * p
        hold = jnp.asarray(memo.hold, jnp.int32) if base.memo_hold else jnp.zeros((), jnp.int32)
        return a, ExploreMemo(memo, probs, hold)

    def update(st, arr):
        return st._replace(base=base.update(st.base, arr._replace(memo=arr.memo.base)))

    estimate = None if base.estimate is None else (lambda st: base.estimate(st.base))
    payload = None if base.payload is None else (lambda memo, r, d: base.payload(memo.base, r, d))
    name = f"{base.name}+explore({eps:g})"
    posterior = None if base.posterior is None else (lambda st: base.posterior(st.base))
    return Policy(init, act, update, payload, base.needs, name, base.max_hold, base.reveal_window, base.memo_hold,
                  True, estimate, posterior, honours_mask=base.honours_mask)
