"""Wang, Wang and Huang (2021), *Adaptive Algorithms for Multi-armed Bandit with Composite and
Anonymous Feedback* (AAAI): ARS-UCB (Algorithm 1), ARS-EXP3 (Algorithm 2), ARS-CLW (Algorithm 3,
App. C), the baseline CLW (Cesa-Bianchi, Gentile and Mansour 2018) and generalized ODAAF (Garg and
Akash 2019) built from the ODAAF code.

The learner sees only ``y_t``, the sum of the partial rewards of *all* past pulls landing at round
``t`` (composite channel; a one-point split is the anonymous channel). The paper's *slot* is our
round; its ARS/CLW *rounds* are **blocks** here (conventions §1). Host-side tables (block sizes,
phase constants) are computed in float64 and carried in the state as small int/float arrays.
"""
from __future__ import annotations

import dataclasses
import math
from typing import Any, NamedTuple, Optional

import jax
import jax.numpy as jnp
import numpy as np

from ..core import validate as V
from ..core import mathlib as M
from ..core import ring as R
from ..core.types import Needs, Policy, ProblemSpec, one_hot
from ..core.values import policy_value
from . import anonymous as _anon

__all__ = ["BlockSize", "f_poly", "f_exp2", "f_const", "block_size", "ars_ucb", "ars_exp3", "ars_clw", "clw",
           "generalized_odaaf", "exp3_block_table", "ars_exp3_gamma", "clw_phase_table", "h_default",
           "update_round_probability", "coin_forward_step", "ARSUCBState", "ARSEXP3State", "CLWState",
           "thm1_log_coefficient"]

_F = jnp.float32
_I = jnp.int32
_BIG = 2**30
_ANON = Needs(attributed=False)  # anonymous sums (the anonymous or the composite channel)


# ----------------------------------------------------------------------------- block sizes f(k)
@dataclasses.dataclass(frozen=True)
class BlockSize:
    """ARS-UCB's block-size function ``f(k)`` (k = 1, 2, ...; Algorithm 1): ``poly``
    ``ceil(c k^p)``, ``exp2`` ``2^(k+c)`` with ``f(1) = 2^(2+c)``, ``const`` ``c`` (tests).

    Attributes:
        kind: ``"poly"``, ``"exp2"`` or ``"const"``.
        c: the coefficient (poly), the shift (exp2) or the constant (const).
        p: the power (poly).
    """

    kind: str
    c: float = 1.0
    p: float = 1.0

    def __call__(self, k):
        """``f(k)`` for int32 ``k >= 1`` inside a trace (clamped below 2^30)."""
        k = jnp.asarray(k, _I)
        if self.kind == "const":
            return jnp.full(k.shape, int(self.c), _I)
        if self.kind == "exp2":
            e = jnp.where(k == 1, 2, k) + int(self.c)
            return jnp.left_shift(jnp.asarray(1, _I), jnp.minimum(e, 29)).astype(_I)
        if float(self.p).is_integer() and float(self.c).is_integer():  # exact integer powers
            c, p = int(self.c), int(self.p)
            kmax = int((_BIG / c) ** (1.0 / p))  # c kmax^p <= 2^30: no int32 overflow
            kk = jnp.minimum(k, kmax)
            v = jnp.full(k.shape, c, _I)
            for _ in range(p):
                v = v * kk
            return jnp.where(k > kmax, _BIG, v).astype(_I)
        return jnp.minimum(jnp.ceil(self.c * k.astype(_F) ** self.p), float(_BIG)).astype(_I)

    def host(self, k: int) -> int:
        """``f(k)`` on the host, an exact Python int.

        Args:
            k: the block index, ``>= 1``.

        Returns:
            The block size.
        """
        if self.kind == "const":
            return int(self.c)
        if self.kind == "exp2":
            return 2 ** ((2 if k == 1 else k) + int(self.c))
        return int(math.ceil(self.c * k**self.p - 1e-12))

    @property
    def label(self) -> str:
        """The function's display label (``"k^2"``, ``"2^k"``, ``"3"``)."""
        if self.kind == "const":
            return f"{int(self.c)}"
        if self.kind == "exp2":
            return "2^k" if self.c == 0 else f"2^(k+{self.c:g})"
        c = "" if self.c == 1 else f"{self.c:g}"
        return f"{c}k" if self.p == 1 else f"{c}k^{self.p:g}"


def f_poly(c: float = 1, p: float = 2) -> BlockSize:
    """The block size ``f(k) = ceil(c k^p)`` (the paper's ``c k^beta`` with integers ``c, beta >= 1``).

    Args:
        c: the coefficient, ``>= 1``.
        p: the power, ``>= 1``.

    Returns:
        The :class:`BlockSize`.

    Raises:
        ValueError: ``c`` or ``p`` below 1.

    Examples:
        >>> from jaxbandits.policies import composite
        >>> f = composite.f_poly(c=1, p=2)
        >>> f.label, [f.host(k) for k in (1, 2, 3)]
        ('k^2', [1, 4, 9])
    """
    V.real("c", c, lo=1.0)
    V.real("p", p, lo=1.0)
    return BlockSize("poly", float(c), float(p))


def f_exp2(c: int = 0) -> BlockSize:
    """The block size ``f(k) = 2^(k+c)``, with the special value ``f(1) = 2^(2+c)`` so ``F(k) = f(k+1)``.

    Args:
        c: the shift, an integer in ``[0, 20]``.

    Returns:
        The :class:`BlockSize`.

    Raises:
        ValueError: ``c`` out of range.

    Examples:
        >>> from jaxbandits.policies import composite
        >>> [composite.f_exp2().host(k) for k in (1, 2, 3)]
        [4, 4, 8]
    """
    return BlockSize("exp2", float(V.integer("c", c, lo=0, hi=20)))


def f_const(c: int = 1) -> BlockSize:
    """The block size ``f(k) = c`` (not increasing: for tests and the no-delay reduction to clipped UCB).

    Args:
        c: the constant, an integer ``>= 1``.

    Returns:
        The :class:`BlockSize`.

    Raises:
        ValueError: ``c`` below 1.

    Examples:
        >>> from jaxbandits.policies import composite
        >>> composite.f_const(3).host(7)
        3
    """
    return BlockSize("const", float(V.integer("c", c, lo=1)))


def block_size(f) -> BlockSize:
    """A :class:`BlockSize` from itself or a label.

    Args:
        f: a :class:`BlockSize`, or one of ``"k"``, ``"k^2"``, ``"k^3"``, ``"2^k"``, ``"const"``.

    Returns:
        The :class:`BlockSize`.

    Raises:
        ValueError: an unknown label.

    Examples:
        >>> from jaxbandits.policies import composite
        >>> composite.block_size("2^k") == composite.f_exp2()
        True
    """
    if isinstance(f, BlockSize):
        return f
    table = {"k": f_poly(1, 1), "k^2": f_poly(1, 2), "k^3": f_poly(1, 3), "2^k": f_exp2(0), "const": f_const(1)}
    if f not in table:
        raise ValueError(f"f must be a BlockSize or one of {sorted(table)}, got {f!r}")
    return table[f]


# ----------------------------------------------------------------------------- ARS-UCB (Algorithm 1)
class ARSUCBState(NamedTuple):
    """The state of ARS-UCB.

    Attributes:
        arm: i32, the arm ``a(t)`` of the current block.
        left: i32, the slots left in the current block, this one included.
        n: f32[N], ``N_i``: the slots in which arm ``i`` was played.
        m: f32[N], ``M_i``: the sum of the observations received while ``i`` was played.
        m_c: f32[N], the Kahan compensation of ``M`` (conventions §9).
        k: i32[N], ``K_i``: the index of ``i``'s next block (1 before its first).
        alpha: f32, the exploration constant.
    """
    arm: Any  # i32 a(t): the arm of the current block
    left: Any  # i32 slots left in the current block, this one included
    n: Any  # f32[N] N_i: slots in which i was played
    m: Any  # f32[N] M_i: sum of the observations received while i was played (spill-in included)
    m_c: Any  # f32[N] Kahan compensation of M (conventions §9)
    k: Any  # i32[N] K_i: index of i's next block (1 before its first)
    alpha: Any  # f32


class ArmMemo(NamedTuple):
    arm: Any


def _ars_ucb_decide(n, m, k, alpha, t_paper, f: BlockSize):
    """Alg. 1 line 4-6: ``u_i = min{M_i/N_i + sqrt(alpha log t / N_i), 1}`` (1 if unplayed),
    ``a in argmax u`` with ties to the smallest ``N_i`` then the lowest index; play ``f(K_a)``."""
    nn = jnp.maximum(n, 1.0)
    u = jnp.where(n > 0, jnp.minimum(m / nn + jnp.sqrt(alpha * jnp.log(t_paper) / nn), 1.0), 1.0)
    cand = u == jnp.max(u)  # exact comparison (conventions §9, §10)
    a = jnp.argmin(jnp.where(cand, n, jnp.inf)).astype(_I)
    return a, jnp.maximum(f(k[a]), 1), k.at[a].add(1)


@policy_value("ARSUCB")
def ars_ucb(alpha: float = 4.0, f="k^2", name: Optional[str] = None) -> Policy:
    """ARS-UCB (Wang et al. 2021, Algorithm 1) for anonymous, composite and delayed rewards.

    Play the arm of largest clipped UCB for ``f(K_a)`` consecutive slots, ``K_a`` its own block
    count; ``M_a`` sums every ``y`` received meanwhile. Anytime, no knowledge of the delays.
    Theorem 1 needs ``alpha > 4`` (the experiments use 4): not enforced (conventions §9).

    Args:
        alpha: the exploration constant, ``> 0``.
        f: the block size, a :class:`BlockSize` or a label (:func:`block_size`).
        name: the display name (default ``"ARS-UCB(a=..., f=...)"``).

    Returns:
        The policy, a frozen value (``ARSUCB(...)``).

    Raises:
        ValueError: ``alpha`` not positive or an unknown ``f``.

    Examples:
        >>> from jaxbandits.policies import composite
        >>> composite.ars_ucb().name
        'ARS-UCB(a=4, f=k^2)'
    """
    V.positive("alpha", alpha)
    f = block_size(f)

    def init(spec: ProblemSpec, key):
        K = spec.n_arms
        z = jnp.zeros((K,), _F)
        a, left, k = _ars_ucb_decide(z, z, jnp.ones((K,), _I), jnp.asarray(alpha, _F), jnp.asarray(1.0, _F), f)
        return ARSUCBState(a, left, z, z, z, k, jnp.asarray(alpha, _F))

    def act(st, ctx, key):
        return st.arm, ArmMemo(st.arm)

    def update(st: ARSUCBState, arr):
        K = st.n.shape[0]
        e = one_hot(st.arm, K)
        n = st.n + e
        m, m_c = M.kahan_add(st.m, st.m_c, e * arr.payload[0])
        left = st.left - 1
        t_paper = (arr.t + 1).astype(_F)  # slots elapsed (conventions §1)
        a, blen, k = _ars_ucb_decide(n, m, st.k, st.alpha, t_paper, f)
        done = left == 0
        return ARSUCBState(jnp.where(done, a, st.arm), jnp.where(done, blen, left), n, m, m_c,
                           jnp.where(done, k, st.k), st.alpha)

    return Policy(init, act, update, None, _ANON, name or f"ARS-UCB(a={alpha:g}, f={f.label})")


def thm1_log_coefficient(means, alpha: float = 4.0) -> float:
    """Wang et al. (2021), Theorem 1's ``sum_{i>=2} 8 alpha / Delta_i``: the coefficient of ``log T``.

    Args:
        means: the arms' means.
        alpha: ARS-UCB's exploration constant.

    Returns:
        The coefficient, a float.

    Examples:
        >>> from jaxbandits.policies import composite
        >>> round(composite.thm1_log_coefficient([0.5, 0.4, 0.3]), 6)
        480.0
    """
    s = np.sort(np.asarray(means, np.float64))[::-1]
    gaps = s[0] - s[1:]
    return float(np.sum(8 * alpha / gaps[gaps > 0]))


# ----------------------------------------------------------------------------- ARS-EXP3 (Algorithm 2)
def exp3_block_table(horizon: int, beta: float = 0.5):
    """ARS-EXP3's block sizes ``g(k) = ceil(k^beta)`` over a horizon.

    One rounding everywhere (conventions §9); ``K = max{k : G(k) <= T}`` and the leftover
    ``T - G(K) < g(K+1)``.

    Args:
        horizon: the horizon ``T``.
        beta: the block growth, in ``[0, 1]``.

    Returns:
        ``(table, K)``: ``table = [g(1), ..., g(K), leftover]`` (int64) and ``K``.

    Raises:
        ValueError: ``horizon`` or ``beta`` out of range.

    Examples:
        >>> from jaxbandits.policies import composite
        >>> table, K = composite.exp3_block_table(20)
        >>> table.tolist(), K
        ([1, 2, 2, 2, 3, 3, 3, 3, 1], 8)
    """
    T = V.horizon("horizon", horizon)
    V.real("beta", beta, lo=0.0, hi=1.0)
    g, tot, k = [], 0, 1
    while True:
        gk = int(math.ceil(k**beta - 1e-12))
        if tot + gk > T:
            break
        g.append(gk)
        tot += gk
        k += 1
    return np.array(g + [T - tot], np.int64), len(g)


def ars_exp3_gamma(n_arms: int, horizon: int, beta: float = 0.5) -> float:
    """Wang et al. (2021), Theorem 2's exploration rate.

    ``gamma = min{1, sqrt(N log N / ((e - 1) ((beta + 1) T)^(1/(beta+1))))}`` (0 if ``N = 1``).

    Args:
        n_arms: the number of arms ``N``, ``>= 1``.
        horizon: the horizon ``T``.
        beta: the block growth.

    Returns:
        ``gamma``, a float.

    Examples:
        >>> from jaxbandits.policies import composite
        >>> round(composite.ars_exp3_gamma(5, 10000), 4)
        0.0877
    """
    N = V.integer("n_arms", n_arms, lo=1)
    if N == 1:
        return 0.0
    Kc = ((beta + 1) * horizon) ** (1 / (beta + 1))
    return float(min(1.0, math.sqrt(N * math.log(N) / ((math.e - 1) * Kc))))


class ARSEXP3State(NamedTuple):
    """The state of ARS-EXP3.

    Attributes:
        w: f32[N], the weights (``p ~ exp(w_i / g(K))``), shifted so that ``max w = 0``.
        arm: i32, the block's arm ``a(k)``.
        p_arm: f32, ``p_{a(k)}(k)`` at the draw.
        k: i32, the current block (1-based; ``K + 1`` is the leftover).
        left: i32, the slots left in the block (0: draw a new block at the next act).
        z: f32, ``Z(k)``: the observations summed over the block.
        gamma: f32, the exploration rate.
        gK: f32, ``g(K)``.
        table: i32[K + 1], ``g(1..K)`` and the leftover.
        n_updates: i32, the weight updates made.
    """
    w: Any  # f32[N] weights w_i (p ~ exp(w_i / g(K))), shifted so that max w = 0
    arm: Any  # i32 a(k)
    p_arm: Any  # f32 p_{a(k)}(k) at the draw
    k: Any  # i32 current block (1-based; K+1 = the leftover)
    left: Any  # i32 slots left in the block (0: draw a new block at the next act)
    z: Any  # f32 Z(k): observations summed over the block
    gamma: Any  # f32
    gK: Any  # f32 g(K), the temperature (the last full block's size)
    table: Any  # i32[K+1] g(1..K), leftover
    n_updates: Any  # i32


class DrawMemo(NamedTuple):
    arm: Any  # i32
    p_arm: Any  # f32 probability of the arm under the law it was drawn from
    new: Any  # bool a block starts (this round's action was drawn)
    probs: Any  # f32[N] the law of this round's action given the past (point mass inside a block)


def _exp3_probs(w, gamma, scale):
    """``p = (1 - gamma) softmax(w / scale) + gamma / N`` (log-sum-exp; conventions §9)."""
    return (1.0 - gamma) * jax.nn.softmax(w / scale) + gamma / w.shape[0]


def _draw_block(state_arm, state_p, new, probs, key):
    a_new = M.sample_from_probs(probs, M.uniform(key))
    a = jnp.where(new, a_new, state_arm).astype(_I)
    p_a = jnp.where(new, probs[a_new], state_p)
    law = jnp.where(new, probs, one_hot(a, probs.shape[0]))
    return DrawMemo(a, p_a, new, law)


@policy_value("ARSEXP3")
def ars_exp3(beta: float = 0.5, gamma: Optional[float] = None, name: Optional[str] = None) -> Policy:
    """ARS-EXP3 (Wang et al. 2021, Algorithm 2) for adversarial composite, anonymous rewards.

    Block ``k`` lasts ``g(k) = ceil(k^beta)`` slots, its arm drawn from
    ``p = (1-gamma) softmax(w / g(K)) + gamma/N`` at its start; at its end
    ``w_a += gamma min(Z(k), g(k)) / (N p_a)``. ``T`` must be known (``K``, ``g(K)``, ``gamma``
    of Theorem 2 unless given). The leftover slots after block ``K`` play one more draw, no update.

    Args:
        beta: the block growth, in ``(0, 1]``.
        gamma: the exploration rate, in ``[0, 1]``, or ``None`` for Theorem 2's
            (:func:`ars_exp3_gamma`).
        name: the display name (default ``"ARS-EXP3(b=...)"``).

    Returns:
        The policy, a frozen value (``ARSEXP3(...)``).

    Raises:
        ValueError: a parameter out of its range.

    Examples:
        >>> from jaxbandits.policies import composite
        >>> composite.ars_exp3(beta=0.5).name
        'ARS-EXP3(b=0.5)'
    """
    V.real("beta", beta, lo=0.0, hi=1.0, lo_open=True)
    if gamma is not None:
        V.real("gamma", gamma, lo=0.0, hi=1.0)

    def init(spec: ProblemSpec, key):
        N, T = spec.n_arms, spec.horizon
        tab, K = exp3_block_table(T, beta)
        gam = ars_exp3_gamma(N, T, beta) if gamma is None else gamma
        gK = float(tab[K - 1]) if K >= 1 else 1.0
        return ARSEXP3State(jnp.zeros((N,), _F), jnp.asarray(0, _I), jnp.asarray(1.0, _F), jnp.asarray(1, _I),
                            jnp.asarray(0, _I), jnp.asarray(0.0, _F), jnp.asarray(gam, _F), jnp.asarray(gK, _F),
                            jnp.asarray(np.minimum(tab, _BIG), _I), jnp.asarray(0, _I))

    def act(st, ctx, key):
        memo = _draw_block(st.arm, st.p_arm, st.left == 0, _exp3_probs(st.w, st.gamma, st.gK), key)
        return memo.arm, memo

    def update(st: ARSEXP3State, arr):
        mm = arr.memo
        n_full = st.table.shape[0] - 1  # K
        k = st.k
        blen = jnp.maximum(st.table[jnp.clip(k - 1, 0, n_full)], 1)
        left = jnp.where(mm.new, blen, st.left) - 1
        z = jnp.where(mm.new, 0.0, st.z) + arr.payload[0]
        end = left == 0
        full = end & (k <= n_full)
        N = st.w.shape[0]
        z_clip = jnp.minimum(z, blen.astype(_F))  # Z'(k) = min{Z(k), g(k)}, the actual block length (conventions §9)
        w = st.w + full * one_hot(mm.arm, N) * st.gamma * z_clip / (N * mm.p_arm)
        w = w - jnp.max(w)  # softmax is shift-invariant: keep the weights bounded
        return ARSEXP3State(w, mm.arm, mm.p_arm, k + end.astype(_I), left, z, st.gamma, st.gK, st.table,
                            st.n_updates + full.astype(_I))

    return Policy(init, act, update, None, _ANON, name or f"ARS-EXP3(b={beta:g})", memo_probs=True)


# ----------------------------------------------------------------------------- ARS-CLW and CLW
def h_default(T: int) -> int:
    """The default guess of ``d`` from a phase's end time, ``max(1, ceil(T^(1/3)))``.

    Our choice: Algorithm 3 only asks for an increasing ``h`` with ``h(T) < T``.

    Args:
        T: the phase's end time.

    Returns:
        The guess, an int.

    Examples:
        >>> from jaxbandits.policies import composite
        >>> composite.h_default(1000)
        10
    """
    r = int(round(T ** (1 / 3)))
    return max(1, r if r**3 >= T and (r - 1) ** 3 < T else int(math.ceil(T ** (1 / 3))))


def clw_phase_table(n_arms: int, horizon: int, d=None, first_end: int = 1024, h=h_default, params: str = "wang"):
    """The per-phase constants ``(end, d, q, rate)`` of ARS-CLW and CLW (float64 on the host).

    ARS-CLW (``d=None``): phase ``k`` ends at ``T^(k) = first_end 2^(k-1)``, ``d^(k) = h(T^(k))``,
    ``gamma^(k) = min(1, sqrt(2 d N log N / (T^(k) + d)))``, ``q = 1/(2d)`` (Alg. 3 lines 3-6).
    CLW (``d`` given): one phase over the horizon. ``params="colt"``: the COLT original,
    ``q = 1/(2(2d-1))`` and the loss-Exp3 rate ``eta = 4 sqrt(d ln K / ((4K+1) T))``.

    Args:
        n_arms: the number of arms.
        horizon: the horizon.
        d: CLW's known delay bound, or ``None`` for ARS-CLW's phases.
        first_end: ARS-CLW's first phase end.
        h: ARS-CLW's guess of ``d`` from a phase end.
        params: ``"wang"`` or ``"colt"``.

    Returns:
        ``(ends, ds, qs, rates)``, numpy arrays with one entry per phase.

    Examples:
        >>> from jaxbandits.policies import composite
        >>> ends, ds, qs, rates = composite.clw_phase_table(5, 5000)
        >>> ends.tolist(), ds.tolist()
        ([1024, 2048, 4096, 8192], [11, 13, 16, 21])
    """
    N, T = n_arms, horizon
    if d is not None:
        ends, ds = [T], [int(d)]
    else:
        ends, ds, e = [], [], int(first_end)
        while True:
            ends.append(e)
            ds.append(int(h(e)))
            if e >= T:
                break
            e *= 2
    qs, rates = [], []
    for e, dk in zip(ends, ds):
        if params == "colt":
            qs.append(1.0 / (2 * (2 * dk - 1)) if dk > 1 else 0.5)
            rates.append(4 * math.sqrt(dk * math.log(N) / ((4 * N + 1) * e)) if N > 1 else 0.0)
        else:
            qs.append(1.0 / (2 * dk))
            rates.append(min(1.0, math.sqrt(2 * dk * N * math.log(N) / (e + dk))) if N > 1 else 0.0)
    return np.array(ends, np.int64), np.array(ds, np.int64), np.array(qs), np.array(rates)


def update_round_probability(q: float, d: int) -> float:
    """``P(t in U) = q (1 - q)^(2d - 1)`` under the forward coin rule (Algorithm 3, App. C).

    Args:
        q: the coin's success probability.
        d: the delay bound.

    Returns:
        The probability that a round is an update round, a float.

    Examples:
        >>> from jaxbandits.policies import composite
        >>> round(composite.update_round_probability(0.1, 5), 5)
        0.03874
    """
    return q * (1 - q) ** (2 * d - 1)


def coin_forward_step(t, next_one, next_next, d, gap):
    """One slot of the forward coin rule as a renewal process (Algorithm 3, App. C).

    ``t in U`` iff ``B_t = 1`` and ``B_{t+1} = ... = B_{t+2d-1} = 0``, i.e. ``t`` is a success and
    the next one is ``>= 2d`` later.

    Args:
        t: the slot.
        next_one: the next coin success ``>= t``.
        next_next: the success after it.
        d: the delay bound.
        gap: a fresh Geometric(q) on {1, 2, ...}, used only when ``t`` is a success.

    Returns:
        ``(in_U, next_one, next_next)``, the updated renewal state.

    Examples:
        >>> from jaxbandits.policies import composite
        >>> [int(v) for v in composite.coin_forward_step(5, 5, 20, 4, 3)]
        [1, 20, 23]
    """
    hit = t == next_one
    in_u = hit & (next_next - next_one >= 2 * d)
    return in_u, jnp.where(hit, next_next, next_one), jnp.where(hit, next_next + gap, next_next)


def _geometric(u, q):
    """Geometric(q) on {1, 2, ...} from a uniform ``u`` in (0, 1)."""
    return (1 + jnp.floor(jnp.log(u) / jnp.log1p(-q))).astype(_I)


class CLWState(NamedTuple):
    """The state of CLW and ARS-CLW.

    Attributes:
        logw: f32[N], the Exp3 log-weights (reset at every phase).
        arm: i32, the arm played.
        p_arm: f32, its probability at the draw.
        draw: bool, the next round draws a new arm (``t - 1`` in ``U``, or a phase start).
        phase: i32, the current phase index (0-based into the tables).
        next_one: i32, the forward rule's next coin success ``>= t``.
        next_next: i32, the success after it.
        last_u: i32, the backward rule's last update round.
        zbuf: f32[D_MAX], the last observations, slot ``t mod D_MAX``.
        key: the coin randomness (conventions §5.2: a key kept in the state).
        ends: i32[P], the phase ends ``T^(k)``.
        ds: i32[P], the phase guesses ``d^(k)``.
        qs: f32[P], the coin probabilities.
        rates: f32[P], ``gamma^(k)`` (wang) or ``eta`` (colt).
        n_updates: i32, the weight updates made.
    """
    logw: Any  # f32[N] Exp3 log-weights (reset at every phase)
    arm: Any  # i32
    p_arm: Any  # f32
    draw: Any  # bool: the next round draws a new arm (t-1 in U, or a phase start)
    phase: Any  # i32 current phase index (0-based into the tables)
    next_one: Any  # i32 forward rule: the next coin success >= t
    next_next: Any  # i32 the success after it
    last_u: Any  # i32 backward rule: the last update round
    zbuf: Any  # f32[D_MAX] the last observations, slot t mod D_MAX
    key: Any  # coin randomness (conventions §5.2: a key kept in the state)
    ends: Any  # i32[P] T^(k)
    ds: Any  # i32[P] d^(k)
    qs: Any  # f32[P]
    rates: Any  # f32[P] gamma^(k) (wang) or eta (colt)
    n_updates: Any  # i32


def _clw(d, first_end, h, round_rule, params, name) -> Policy:
    V.choice("round_rule", round_rule, ("wang_forward", "original"))
    V.choice("clw_params", params, ("wang", "colt"))

    def tables(spec):
        return clw_phase_table(spec.n_arms, spec.horizon, d, first_end, h, params)

    def probs_of(st):
        p = jax.nn.softmax(st.logw)
        if params == "colt":
            return p
        g = st.rates[st.phase]
        return (1.0 - g) * p + g / st.logw.shape[0]

    def restart(t0, q, key):
        """Coins of a fresh phase starting at round ``t0``."""
        u1 = M.uniform(jax.random.fold_in(key, 2 * t0))
        u2 = M.uniform(jax.random.fold_in(key, 2 * t0 + 1))
        n1 = t0 + _geometric(u1, q) - 1
        return n1, n1 + _geometric(u2, q)

    def init(spec: ProblemSpec, key):
        if spec.n_arms < 2:
            raise ValueError(f"{name} needs n_arms >= 2 (log N > 0), got {spec.n_arms}")
        ends, ds, qs, rates = tables(spec)
        D_MAX = int(ds.max())
        n1, n2 = restart(jnp.asarray(0, _I), jnp.asarray(qs[0], _F), key)
        return CLWState(jnp.zeros((spec.n_arms,), _F), jnp.asarray(0, _I), jnp.asarray(1.0, _F), jnp.asarray(True),
                        jnp.asarray(0, _I), n1, n2, jnp.asarray(-_BIG, _I), jnp.zeros((D_MAX,), _F), key,
                        jnp.asarray(np.minimum(ends, _BIG), _I), jnp.asarray(ds, _I), jnp.asarray(qs, _F),
                        jnp.asarray(rates, _F), jnp.asarray(0, _I))

    def act(st, ctx, key):
        memo = _draw_block(st.arm, st.p_arm, st.draw, probs_of(st), key)
        return memo.arm, memo

    def update(st: CLWState, arr):
        mm, t, y = arr.memo, arr.t, arr.payload[0]
        N, D_MAX = st.logw.shape[0], st.zbuf.shape[0]
        ph = st.phase
        dk, q, rate = st.ds[ph], st.qs[ph], st.rates[ph]
        # the window (1/(2d)) sum_{tau = t-d+1}^{t} Z(tau): write this round first, then one read
        zbuf = R.put(st.zbuf, t, y)
        age = (t - jnp.arange(D_MAX)) % D_MAX
        win = jnp.sum(jnp.where((age < dk) & (age <= t), zbuf, 0.0))
        # the round-ending test
        if round_rule == "wang_forward":
            gap = _geometric(M.uniform(jax.random.fold_in(st.key, 2 * t + 1)), q)
            in_u, n1, n2 = coin_forward_step(t, st.next_one, st.next_next, dk, gap)
            last_u = st.last_u
        else:  # COLT: B_t = 1 and no update round in t-2d+1 .. t-1
            coin = M.uniform(jax.random.fold_in(st.key, 2 * t + 1)) < q
            in_u = coin & (t - st.last_u >= 2 * dk)
            n1, n2 = st.next_one, st.next_next
            last_u = jnp.where(in_u, t, st.last_u)
        e = one_hot(mm.arm, N) * in_u
        if params == "colt":  # loss-Exp3 (no mixing) on the average composite loss of the window
            loss = (dk.astype(_F) - win) / (2.0 * dk)
            logw = M.log_normalize(st.logw - e * rate * loss / mm.p_arm)
        else:  # reward-Exp3 in ARS-EXP3's form (our choice: the paper does not give CLW's Exp3)
            logw = st.logw + e * rate * (win / (2.0 * dk)) / (N * mm.p_arm)
            logw = logw - jnp.max(logw)
        # phase change at the end of T^(k) (ARS-CLW): restart Exp3 and the coins
        new_phase = (t + 1 == st.ends[ph]) & (ph + 1 < st.ends.shape[0])
        ph2 = ph + new_phase.astype(_I)
        r1, r2 = restart(t + 1, st.qs[ph2], st.key)
        logw = jnp.where(new_phase, 0.0, logw)
        n1, n2 = jnp.where(new_phase, r1, n1), jnp.where(new_phase, r2, n2)
        last_u = jnp.where(new_phase, -_BIG, last_u)
        return CLWState(logw, mm.arm, mm.p_arm, in_u | new_phase, ph2, n1, n2, last_u, zbuf, st.key,
                        st.ends, st.ds, st.qs, st.rates, st.n_updates + in_u.astype(_I))

    return Policy(init, act, update, None, _ANON, name, memo_probs=True)


@policy_value("ARSCLW")
def ars_clw(first_end: int = 1024, h=h_default, round_rule: str = "wang_forward", name: str = "ARS-CLW") -> Policy:
    """ARS-CLW (Wang et al. 2021, Algorithm 3, App. C): CLW restarted on doubling phases.

    Phase ``k`` ends at ``T^(k) = first_end 2^(k-1)``, with the guess ``d^(k) = h(T^(k))`` (default
    ``max(1, ceil(T^(1/3)))``, our choice).

    Args:
        first_end: the first phase's end ``T^(1)``, an integer ``>= 1``.
        h: a function ``T -> int``, the guess of ``d`` (default :func:`h_default`).
        round_rule: ``"wang_forward"`` or ``"original"`` (see :func:`clw`).
        name: the display name.

    Returns:
        The policy, a frozen value (``ARSCLW(...)``); it needs at least two arms.

    Raises:
        TypeError: ``h`` is not callable.
        ValueError: a parameter out of its range.

    Examples:
        >>> from jaxbandits.policies import composite
        >>> composite.ars_clw(first_end=512)
        ARSCLW(first_end=512)
    """
    first_end = V.integer("first_end", first_end, lo=1)
    if not callable(h):
        raise TypeError(f"h must be a function T -> int, got {type(h).__name__}")
    return _clw(None, first_end, h, round_rule, "wang", name)


@policy_value("CLW")
def clw(d: int, round_rule: str = "wang_forward", clw_params: str = "wang", name: Optional[str] = None) -> Policy:
    """CLW (Cesa-Bianchi, Gentile and Mansour 2018) with known ``d``, in Wang et al. 2021's form.

    One ARS-CLW phase over the whole horizon, ``q = 1/(2d)``,
    ``gamma = min(1, sqrt(2dN log N/(T+d)))``, the forward coin rule and the ``(1/(2d))``-scaled
    window of the last ``d`` observations.

    Args:
        d: the known delay bound, an integer ``>= 1``.
        round_rule: ``"wang_forward"`` or ``"original"`` (the COLT backward test).
        clw_params: ``"wang"`` or ``"colt"`` (the COLT constants: ``q = 1/(2(2d-1))``,
            loss-Exp3 with ``eta``).
        name: the display name (default ``"CLW(d=...)"``).

    Returns:
        The policy, a frozen value (``CLW(...)``).

    Raises:
        ValueError: a parameter out of its range.

    Examples:
        >>> from jaxbandits.policies import composite
        >>> composite.clw(10).name
        'CLW(d=10)'
    """
    d = V.integer("d", d, lo=1, hi=V.MAX_HORIZON)
    return _clw(d, None, None, round_rule, clw_params, name or f"CLW(d={d})")


# ----------------------------------------------------------------------------- generalized ODAAF
@policy_value("GeneralizedODAAF")
def generalized_odaaf(d: int, mean_lag: Optional[float] = None, bridge_rule: str = "best",
                      name: Optional[str] = None) -> Policy:
    """Generalized ODAAF (Garg and Akash 2019) as built here.

    Our choice (Wang et al. 2021 do not give its schedule): the ODAAF machine with ODAAF-B's
    schedule, delay bound ``d`` (the reward-interval size) and ``E[tau] = d`` (only ``d`` is
    known), or ``E[tau] = mean_lag`` (the true mean lag; favourable to the baseline).

    Args:
        d: the delay bound, an integer ``>= 0``.
        mean_lag: the mean lag ``E[tau]``, ``>= 0``, or ``None`` for ``d``.
        bridge_rule: ``"best"`` or ``"first_next"``.
        name: the display name (default ``"gen. ODAAF(d=...)"``).

    Returns:
        The policy, a frozen value (``GeneralizedODAAF(...)``).

    Raises:
        ValueError: a parameter out of its range.

    Examples:
        >>> from jaxbandits.policies import composite
        >>> composite.generalized_odaaf(10).name
        'gen. ODAAF(d=10)'
    """
    d = V.integer("d", d, lo=0, hi=V.MAX_HORIZON)
    e = float(d) if mean_lag is None else V.nonneg("mean_lag", mean_lag)
    return _anon.odaaf_b(e, float(d), bridge_rule=bridge_rule, name=name or f"gen. ODAAF(d={d})")
