"""Pike-Burke, Agrawal, Szepesvari and Grunewalder (2018), *Bandits with Delayed, Aggregated
Anonymous Feedback* (ICML): ODAAF, ODAAF-B, ODAAF-V (Algorithm 1: phased elimination on the
anonymous channel, which shows only the sum ``X_t`` of the rewards arriving at round t), and the
baseline QPM-D (Joulani et al. 2013) with UCB1 as base, on the attributed channel.

The schedules ``n_m`` are reconstructed (the text we worked from lost the paper's formulas;
conventions §11):
``n_m = (1/D_m^2) (sqrt(2 L_m) + sqrt(2 L_m + (8/3) D_m L_m + 2 D_m c_m))^2`` with
``D_m = 2^-m``, ``L_m = log(T D_m^2)`` and the corruption budget ``c_m`` of each variant:
ODAAF ``3 m E[tau]`` (eq. 2, no bridge), ODAAF-B ``max(n'_m, m min(d, n_m^ODAAF/m))`` with
``c'_m = 2 E[tau]`` (eq. 4.2, bridge), ODAAF-V ``2 (E[tau] + 2 V(tau))`` (eq. 6, bridge).
"""
from __future__ import annotations

import math
from typing import Any, NamedTuple, Optional

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from ..core import validate as V
from ..core import mathlib as M
from ..core.types import Needs, Policy, ProblemSpec, one_hot
from ..core.values import policy_value

__all__ = ["schedule", "odaaf", "odaaf_b", "odaaf_v", "odaaf_naive", "qpmd", "ODAAFState", "QPMDState",
           "phase_timeline"]

_F = jnp.float32


# ----------------------------------------------------------------------------- schedules (host, float64)
def _n_exact(T, m, c):
    dm = 2.0**-m
    L = math.log(T * dm * dm)
    if L <= 0:
        return None  # guard (conventions §9): T D_m^2 <= 1, the phase never completes
    return (math.sqrt(2 * L) + math.sqrt(2 * L + (8 / 3) * dm * L + 2 * dm * c)) ** 2 / (dm * dm)


def schedule(kind: str, horizon: int, mean_delay: float = 0.0, bound: Optional[float] = None,
             variance: Optional[float] = None, n_phases: Optional[int] = None) -> np.ndarray:
    """The phase lengths ``n_table[m]`` of the ODAAF family (Pike-Burke et al. 2018).

    ``n_table[m]`` for ``m = 0..M`` (``n_table[0] = 0``), integerised by ``ceil``, clipped at
    ``T + 1`` (the sentinel of a phase that never completes, also used once ``T D_m^2 <= 1``).

    Args:
        kind: ``"odaaf"`` (eq. 2), ``"odaaf_b"`` (eq. 4.2, needs ``bound``), ``"odaaf_v"``
            (eq. 6, needs ``variance``) or ``"naive"`` (App. B, needs ``bound``).
        horizon: the horizon ``T``.
        mean_delay: the expected delay, ``>= 0``.
        bound: the delays' support bound ``d``.
        variance: the delays' variance.
        n_phases: the number of phases ``M`` (default ``ceil(log2(T) / 2) + 2``).

    Returns:
        An int64 numpy array ``[M + 1]``, non-decreasing.

    Raises:
        ValueError: an unknown ``kind``, or ``horizon`` or ``mean_delay`` out of range.

    Examples:
        >>> from jaxbandits.policies import anonymous
        >>> anonymous.schedule("odaaf", 1000, mean_delay=5.0)[:4].tolist()
        [0, 332, 1001, 1001]
    """
    V.choice("kind", kind, ("odaaf", "odaaf_b", "odaaf_v", "naive"))
    T = V.horizon("horizon", horizon)
    V.nonneg("mean_delay", mean_delay)
    M_ = n_phases or int(math.ceil(0.5 * math.log2(max(T, 2)))) + 2
    out = [0]
    for m in range(1, M_ + 1):
        if kind == "odaaf":
            n = _n_exact(T, m, 3 * m * mean_delay)
        elif kind == "odaaf_v":
            n = _n_exact(T, m, 2 * (mean_delay + 2 * variance))
        elif kind == "odaaf_b":
            n1 = _n_exact(T, m, 2 * mean_delay)
            n2 = _n_exact(T, m, 3 * m * mean_delay)
            n = None if n1 is None else max(n1, m * min(bound, n2 / m))
        else:  # App. B: (1/D^2)(sqrt(L/2) + sqrt(L/2 + 2 D m d))^2
            dm = 2.0**-m
            L = math.log(T * dm * dm)
            n = None if L <= 0 else (math.sqrt(L / 2) + math.sqrt(L / 2 + 2 * dm * m * bound)) ** 2 / (dm * dm)
        out.append(T + 1 if n is None else min(int(math.ceil(n)), T + 1))
    tab = np.array(out, np.int64)
    for m in range(1, len(tab)):  # keep it non-decreasing after the sentinel
        tab[m] = max(tab[m], tab[m - 1]) if tab[m - 1] > T else tab[m]
    return tab


def phase_timeline(n_table, K: int, use_bridge: bool, phases: int):
    """The rounds (1-based counts) at which Step 1 of each phase ends, with all K arms active.

    ``K n_m``, plus ``n_{m-1}`` with bridges (the bridges of phases 1..m-1 have total length
    ``n_{m-1}``).

    Args:
        n_table: the phase lengths (:func:`schedule`).
        K: the number of arms.
        use_bridge: whether the policy has bridge periods.
        phases: the number of phases to list.

    Returns:
        A list of ints, one per phase.

    Examples:
        >>> from jaxbandits.policies import anonymous
        >>> tab = anonymous.schedule("odaaf", 1000, mean_delay=5.0)
        >>> [int(r) for r in anonymous.phase_timeline(tab, 3, False, 3)]
        [996, 3003, 3003]
    """
    n = np.asarray(n_table, np.int64)
    return [int(K * n[m] + (n[m - 1] if use_bridge else 0)) for m in range(1, phases + 1)]


# ----------------------------------------------------------------------------- ODAAF family
class ODAAFState(NamedTuple):
    """Algorithm 1's machine (Pike-Burke et al. 2018, Alg. 1). Deterministic: the key is unused.

    Attributes:
        arm: i32, arm to play next.
        m: i32, current phase, 1-based.
        bridge: bool, in the bridge period (Step 4).
        left: i32, rounds left in the current block or bridge, the next one included.
        active: bool[K], S_m.
        obs_sum: f32[K], sum of X_t over T_j(m), all phases (never reset).
        obs_cnt: f32[K], |T_j(m)|.
        elim_phase: i32[K], phase at which j was eliminated (0: active).
        n_table: i32[M+1], the schedule (computed on the host at init).
    """

    arm: Any  # i32 arm to play next
    m: Any  # i32 current phase, 1-based
    bridge: Any  # bool in the bridge period (Step 4)
    left: Any  # i32 rounds left in the current block or bridge, the next one included
    active: Any  # bool[K] S_m
    obs_sum: Any  # f32[K] sum of X_t over T_j(m), all phases (never reset)
    obs_cnt: Any  # f32[K] |T_j(m)|
    elim_phase: Any  # i32[K] phase at which j was eliminated (0: active)
    n_table: Any  # i32[M+1] the schedule (computed on the host at init)


class ODAAFMemo(NamedTuple):
    arm: Any


def _odaaf(kind, mean_delay, bound, variance, use_bridge, bridge_rule, name, bridge_len="block") -> Policy:
    def init(spec: ProblemSpec, key):
        K, T = spec.n_arms, spec.horizon
        tab = schedule(kind, T, mean_delay, bound, variance)
        tab = jnp.asarray(np.minimum(tab, 2**30), jnp.int32)
        return ODAAFState(jnp.asarray(0, jnp.int32), jnp.asarray(1, jnp.int32), jnp.asarray(False),
                          tab[1] - tab[0], jnp.ones((K,), bool), jnp.zeros((K,), _F), jnp.zeros((K,), _F),
                          jnp.zeros((K,), jnp.int32), tab)

    def act(state, ctx, key):
        return state.arm, ODAAFMemo(state.arm)

    def update(st: ODAAFState, arr):
        K = st.active.shape[0]
        idx = jnp.arange(K)
        x = arr.payload[0]
        a = st.arm
        tab = st.n_table
        mmax = tab.shape[0] - 1
        nu = lambda m: tab[jnp.minimum(m, mmax)] - tab[jnp.minimum(m - 1, mmax)]
        play = ~st.bridge
        e = one_hot(a, K) * play
        obs_sum, obs_cnt = st.obs_sum + e * x, st.obs_cnt + e  # bridge observations are discarded
        left = st.left - 1
        done = left == 0
        nxt_mask = st.active & (idx > a)
        has_next = jnp.any(nxt_mask)
        nxt = jnp.argmax(nxt_mask).astype(jnp.int32)
        # end of Step 1 of phase m: eliminate (strict), shrink the tolerance
        end_step1 = play & done & ~has_next
        xbar = obs_sum / jnp.maximum(obs_cnt, 1.0)
        best = jnp.max(jnp.where(st.active, xbar, -jnp.inf))
        out = st.active & (xbar + jnp.ldexp(1.0, -st.m) < best)
        active = jnp.where(end_step1, st.active & ~out, st.active)
        elim = jnp.where(end_step1 & out, st.m, st.elim_phase)
        first = jnp.argmax(active).astype(jnp.int32)
        if bridge_rule == "best":
            b_arm = jnp.argmax(jnp.where(active, xbar, -jnp.inf)).astype(jnp.int32)
        else:
            b_arm = first
        m_new = jnp.where(end_step1, st.m + 1, st.m)
        # transitions
        arm = a
        new_left = left
        bridge = st.bridge
        # within Step 1, next arm of the phase
        go_next = play & done & has_next
        arm = jnp.where(go_next, nxt, arm)
        new_left = jnp.where(go_next, nu(st.m), new_left)
        if use_bridge:  # bridge of nu_m rounds ("block", the default) or a fixed length
            arm = jnp.where(end_step1, b_arm, arm)
            blen = nu(st.m) if bridge_len == "block" else jnp.asarray(bridge_len, jnp.int32)
            new_left = jnp.where(end_step1, blen, new_left)
            bridge = jnp.where(end_step1, True, bridge)
            end_bridge = st.bridge & done
            arm = jnp.where(end_bridge, first, arm)
            new_left = jnp.where(end_bridge, nu(st.m), new_left)
            bridge = jnp.where(end_bridge, False, bridge)
        else:
            arm = jnp.where(end_step1, first, arm)
            new_left = jnp.where(end_step1, nu(m_new), new_left)
        new_left = jnp.maximum(new_left, 1)
        return ODAAFState(arm, m_new, bridge, new_left, active, obs_sum, obs_cnt, elim, tab)

    return Policy(init, act, update, None, Needs(attributed=False), name)


def _bridge_rule(rule):
    return V.choice("bridge_rule", rule, ("best", "first_next"))


def _bridge_len(length):
    return "block" if length == "block" else V.integer("bridge_len", length, lo=1)


@policy_value("ODAAF")
def odaaf(mean_delay: float, use_bridge: bool = False, bridge_rule: str = "best", bridge_len="block",
          name: str = "ODAAF") -> Policy:
    """ODAAF (Pike-Burke et al. 2018): known expected delay, schedule eq. (2), no bridge.

    As in the paper's experiments; ``use_bridge=True`` is an ablation. It uses the anonymous
    aggregate feedback (no attribution).

    Args:
        mean_delay: the expected delay, ``>= 0``.
        use_bridge: add the bridge period between phases.
        bridge_rule: ``"best"`` (the empirical leader) or ``"first_next"``.
        bridge_len: ``"block"`` (``nu_m``, the default) or a number of rounds ``>= 1``.
        name: the display name.

    Returns:
        The policy, a frozen value (``ODAAF(...)``).

    Raises:
        ValueError: a parameter out of its range.

    Examples:
        >>> from jaxbandits.policies import anonymous
        >>> anonymous.odaaf(mean_delay=5.0)
        ODAAF(mean_delay=5.0)
    """
    V.nonneg("mean_delay", mean_delay)
    return _odaaf("odaaf", mean_delay, None, None, use_bridge, _bridge_rule(bridge_rule), name, _bridge_len(bridge_len))


@policy_value("ODAAFB")
def odaaf_b(mean_delay: float, bound: float, bridge_rule: str = "best", bridge_len="block",
            name: str = "ODAAF-B") -> Policy:
    """ODAAF-B: known expected delay and support bound ``d`` (eq. 4.2), with the bridge period.

    Args:
        mean_delay: the expected delay, ``>= 0``.
        bound: the delays' support bound, ``>= 0``.
        bridge_rule: ``"best"`` or ``"first_next"``.
        bridge_len: ``"block"`` or a number of rounds ``>= 1``.
        name: the display name.

    Returns:
        The policy, a frozen value (``ODAAFB(...)``).

    Raises:
        ValueError: a parameter out of its range.

    Examples:
        >>> from jaxbandits.policies import anonymous
        >>> anonymous.odaaf_b(5.0, bound=20.0)
        ODAAFB(mean_delay=5.0, bound=20.0)
    """
    V.nonneg("mean_delay", mean_delay)
    V.nonneg("bound", bound)
    return _odaaf("odaaf_b", mean_delay, bound, None, True, _bridge_rule(bridge_rule), name, _bridge_len(bridge_len))


@policy_value("ODAAFV")
def odaaf_v(mean_delay: float, variance: float, bridge_rule: str = "best", bridge_len="block",
            name: str = "ODAAF-V") -> Policy:
    """ODAAF-V: known expected delay and variance (eq. 6), with the bridge period.

    Args:
        mean_delay: the expected delay, ``>= 0``.
        variance: the delays' variance, ``>= 0``.
        bridge_rule: ``"best"`` or ``"first_next"``.
        bridge_len: ``"block"`` or a number of rounds ``>= 1``.
        name: the display name.

    Returns:
        The policy, a frozen value (``ODAAFV(...)``).

    Raises:
        ValueError: a parameter out of its range.

    Examples:
        >>> from jaxbandits.policies import anonymous
        >>> anonymous.odaaf_v(5.0, variance=4.0)
        ODAAFV(mean_delay=5.0, variance=4.0)
    """
    V.nonneg("mean_delay", mean_delay)
    V.nonneg("variance", variance)
    return _odaaf("odaaf_v", mean_delay, None, variance, True, _bridge_rule(bridge_rule), name, _bridge_len(bridge_len))


@policy_value("ODAAFNaive")
def odaaf_naive(bound: float, use_bridge: bool = False, name: str = "ODAAF-naive") -> Policy:
    """Improved UCB with App. B's naive widths for delays bounded by ``d`` (not in the experiments).

    Args:
        bound: the delays' support bound, ``>= 0``.
        use_bridge: add the bridge period between phases.
        name: the display name.

    Returns:
        The policy, a frozen value (``ODAAFNaive(...)``).

    Raises:
        ValueError: ``bound`` negative.

    Examples:
        >>> from jaxbandits.policies import anonymous
        >>> anonymous.odaaf_naive(20.0)
        ODAAFNaive(bound=20.0)
    """
    V.nonneg("bound", bound)
    return _odaaf("naive", 0.0, bound, None, use_bridge, "best", name)


# ----------------------------------------------------------------------------- QPM-D
class QPMDState(NamedTuple):
    """QPM-D (Joulani et al. 2013, Alg. 2) around an index base (UCB1 by default).

    Attributes:
        arm: i32, J: the base's recommendation, played until its queue has something.
        fed_cnt: f32[K], base counts n_j (rewards fed).
        fed_sum: f32[K], base sums.
        q_cnt: f32[K], queued (arrived, not yet fed) rewards per arm.
        q_sum: f32[K], their sum.
        key: key for the draws without replacement from the queues (conventions §5.2: update has no
            key).
    """

    arm: Any  # i32 J: the base's recommendation, played until its queue has something
    fed_cnt: Any  # f32[K] base counts n_j (rewards fed)
    fed_sum: Any  # f32[K] base sums
    q_cnt: Any  # f32[K] queued (arrived, not yet fed) rewards per arm
    q_sum: Any  # f32[K] their sum
    key: Any  # key for the draws without replacement from the queues (conventions §5.2: update has no key)


class QPMDMemo(NamedTuple):
    onehot: Any


@policy_value("QPMD")
def qpmd(base: str = "ucb1", name: Optional[str] = None) -> Policy:
    """QPM-D (Joulani et al. 2013): a base index policy fed from per-arm queues of arrived rewards.

    The base (``"ucb1"``: Auer et al. with ``ln n``, n = rewards fed; ``"kl-ucb"``) is fed from the
    queue of the arm it recommends, as many times as it can, and the learner plays its
    recommendation while that queue is empty. Ties go to the lowest index (conventions §10).

    Queues are kept as (count, sum) per arm and a fed value is drawn **without replacement** from
    its arm's queue (conventions §6): for Bernoulli rewards this has the law of
    the FIFO (values are i.i.d. per arm and availability does not depend on them); for other
    rewards it is an approximation. Payload ``[e_A, e_A r]``.

    Args:
        base: ``"ucb1"`` or ``"kl-ucb"``.
        name: the display name (default ``"QPM-D"``, ``"QPM-D(kl-ucb)"``).

    Returns:
        The policy, a frozen value (``QPMD(...)``).

    Raises:
        ValueError: an unknown ``base``.

    Examples:
        >>> from jaxbandits.policies import anonymous
        >>> anonymous.qpmd().name, anonymous.qpmd("kl-ucb").name
        ('QPM-D', 'QPM-D(kl-ucb)')
    """
    V.choice("base", base, ("ucb1", "kl-ucb"))
    from .classic import kl_ucb_index, ucb1_index  # the classic indices (sums, n, t)

    index = {"ucb1": ucb1_index, "kl-ucb": kl_ucb_index}[base]  # its log runs on n = the rewards fed so far

    def init(spec: ProblemSpec, key):
        K = spec.n_arms
        z = jnp.zeros((K,), _F)
        return QPMDState(jnp.asarray(0, jnp.int32), z, z, z, z, key)

    def act(st, ctx, key):
        return st.arm, QPMDMemo(one_hot(st.arm, st.fed_cnt.shape[0]))

    def payload(memo, reward, delay):
        return jnp.concatenate([memo.onehot, memo.onehot * reward])

    def update(st: QPMDState, arr):
        K = st.fed_cnt.shape[0]
        q_cnt = st.q_cnt + arr.payload[:K]
        q_sum = st.q_sum + arr.payload[K:]

        def recommend(fc, fs):
            u = index(fs, fc, jnp.sum(fc))
            return jnp.argmax(u).astype(jnp.int32)  # lowest index among ties (first n_j = 0 too)

        def cond(c):
            J, fc, fs, qc, qs, k = c
            return qc[J] > 0

        def body(c):
            J, fc, fs, qc, qs, k = c
            k, sub = jax.random.split(k)
            v = (M.uniform(sub) * qc[J] < qs[J]).astype(_F)  # one of the queued values, w/o replacement
            e = one_hot(J, K)
            fc, fs, qc, qs = fc + e, fs + e * v, qc - e, qs - e * v
            return recommend(fc, fs), fc, fs, qc, qs, k

        J, fc, fs, qc, qs, k = lax.while_loop(cond, body, (st.arm, st.fed_cnt, st.fed_sum, q_cnt, q_sum, st.key))
        return QPMDState(J, fc, fs, qc, qs, k)

    return Policy(init, act, update, payload, Needs(attributed=True, zeros_observed=True),
                  name or ("QPM-D" if base == "ucb1" else f"QPM-D({base})"))
