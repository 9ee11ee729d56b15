"""Vernade, Cappe and Perchet (2017), *Stochastic Bandit Models for Delayed Conversions* (UAI).

Conversions arrive after a random delay with a known CDF ``tau`` (the same for every arm), are
seen only if they arrive within the window ``m`` (censored) and zeros are never seen. The policies
correct the pull counts by the probability that a conversion would already be visible:

    N_k(t)   = sum_{s<=t} 1{A_s = k}                                (sec. 5.1)
    S_k(t)   = conversions of arm k revealed by the end of round t   (each counted once)
    Ñ_k(t)   = sum_{s<=t} 1{A_s = k} tau_{min(t-s, m)}              (effective sample size)
    theta_k  = S_k / Ñ_k                                            (eq. 5; never clipped)

    DelayedUCB   U_k = theta_k + sqrt(beta N_k / 2) / Ñ_k                  (sec. 5.2)
    DelayedKLUCB U_k = max{q <= 1 : Ñ_k d_Pois(theta_k, q) <= beta}       (sec. 5.3)
    beta(t)      = (1 + eps) log t, t the 1-based round being decided      (conventions §1)

Rounds 1..K play each arm once; then argmax with uniformly random ties (conventions §10: the
paper lists the best arm first, so lowest-index ties would bias every result). ``eps`` defaults
to 0: the paper does not say which ``eps`` its experiments use.

``Ñ`` is kept in O(K) per round for geometric delays (``O <- rho (O + e_A)``, ``Ñ = N - O``: the
recursion of sec. 7 with its index set right, tested against the direct sum) and through a
ring of the last ``m`` arms and the table ``tau_0..tau_m`` otherwise (O(mK)); uncensored general
laws use a ring truncated where ``1 - tau_L <= 1e-6``. The ring is written first and read after
(conventions §12): ``update`` stores the arm, then recomputes ``Ñ`` and carries it to ``act``; the
arm that closes next round is read after the write and carried as a scalar.

Also: Discarding-UCB / -KLUCB (sec. 6) on closed pulls only, with conversions delivered when
their pull closes (``hold = m``, conventions §5.4); and the online delay-CDF heuristics of App. D.
"""
from __future__ import annotations

from typing import Any, NamedTuple, Optional

import jax.numpy as jnp

from ..core import validate as V
from ..core import delays as D
from ..core import mathlib as M
from ..core import ring as R
from ..core.ring import discounted_value, discounted_window
from ..core.types import Needs, Policy, ProblemSpec, one_hot
from ..core.values import policy_value

__all__ = ["delayed_ucb", "delayed_klucb", "discarding_ucb", "discarding_klucb", "DelayedState",
           "DiscardingState", "n_tilde_direct", "delayed_ucb_index", "delayed_klucb_index", "exploration",
           "round_robin"]

_F = jnp.float32


def _needs(m):
    """Censored conversions with exactly the window ``m`` the policy was built for."""
    return Needs(attributed=True, zeros_observed=False, window=m)


class DelayedState(NamedTuple):
    """State of DelayedUCB / DelayedKLUCB (every field is carried because ``update`` needs it).

    Attributes:
        n: f32[K], N_k: pulls.
        s: f32[K], S_k: revealed conversions.
        n_tilde: f32[K], Ñ_k after the last update (read by act: the ring is never read there).
        o: f32[K], geometric law: the sum over the window of ``1{A_s=k} rho^(t-s+1)`` (the
            recursion's invariant).
        w: f32[K], geometric censored: pulls in the window.
        nc: f32[K], censored: closed pulls N_k(t-m) (weight tau_m).
        ring: i32[H], the last H arms, slot s mod H, -1 = empty.
        leave: i32, arm of the pull that closes at the next update (-1: none).
        tau: f32[H+1], ``tau_0..tau_H`` (table paths).
        hist: f32[m+1], online censored: histogram of revealed delays.
        dsum: f32, online uncensored: sum of revealed delays.
        dcnt: f32, number of revealed delays.
    """

    n: Any  # f32[K] N_k: pulls
    s: Any  # f32[K] S_k: revealed conversions
    n_tilde: Any  # f32[K] Ñ_k after the last update (read by act: the ring is never read there)
    o: Any  # f32[K] geometric: sum over the window of 1{A_s=k} rho^(t-s+1) (invariant of the recursion)
    w: Any  # f32[K] geometric censored: pulls in the window
    nc: Any  # f32[K] censored: closed pulls N_k(t-m) (weight tau_m)
    ring: Any  # i32[H] the last H arms, slot s mod H, -1 = empty
    leave: Any  # i32 arm of the pull that closes at the next update (-1: none)
    tau: Any  # f32[H+1] tau_0..tau_H (table paths)
    hist: Any  # f32[m+1] online censored: histogram of revealed delays
    dsum: Any  # f32 online uncensored: sum of revealed delays
    dcnt: Any  # f32 number of revealed delays


class ConvMemo(NamedTuple):
    onehot: Any  # e_A


def n_tilde_direct(actions, tau, t, window=None, n_arms=None):
    """``Ñ_k(t) = sum_{s<=t} 1{A_s=k} tau_{min(t-s, m)}`` by a direct float64 sum.

    The reference the tests and docs check the policies' running ``Ñ`` against.

    Args:
        actions: int[T], the arms played.
        tau: float[m + 1] (or longer), the delay CDF ``tau_d = P(D <= d)``.
        t: the 0-based round at which ``Ñ`` is taken.
        window: the censoring window ``m``, or ``None``.
        n_arms: the number of arms (default: the largest arm played, plus one).

    Returns:
        A numpy float64 array ``[K]``.

    Examples:
        >>> from jaxbandits.policies import conversions
        >>> conversions.n_tilde_direct([0, 1, 0], [0.5, 1.0], 2, window=1, n_arms=2).tolist()
        [1.5, 1.0]
    """
    import numpy as np

    a = np.asarray(actions)[: t + 1]
    ages = t - np.arange(t + 1)
    if window is not None:
        ages = np.minimum(ages, window)
    w = np.asarray(tau, np.float64)[ages]
    K = n_arms or int(a.max()) + 1
    return np.array([(w * (a == k)).sum() for k in range(K)])


def _mode(delay, window, online):
    if online:
        return "online_cens" if window is not None else "online_geom"
    geo = D.geometric_log_rho(delay) is not None
    if window == 0:
        return "m0"
    if window is not None:
        return "geom_cens" if geo else "table_cens"
    return "geom_unc" if geo else "table_unc"


def delayed_ucb_index(s, n, n_tilde, beta):
    """The DelayedUCB index ``S/Ñ + sqrt(beta N / 2) / Ñ`` (Vernade et al. 2017, sec. 5.2).

    ``N`` is the true pull count: the bonus is UCB's inflated by ``sqrt(N/Ñ)``.

    Args:
        s: f32[K], the revealed conversions ``S``.
        n: f32[K], the pulls ``N``.
        n_tilde: f32[K], the expected revealed pulls ``Ñ``.
        beta: the exploration term (:func:`exploration`).

    Returns:
        f32[K], the indices (``+inf`` where ``Ñ = 0``).

    Examples:
        >>> import numpy as np, jax.numpy as jnp
        >>> from jaxbandits.policies import conversions
        >>> idx = conversions.delayed_ucb_index(jnp.array([2.0, 0.0]), jnp.array([8.0, 0.0]),
        ...                                     jnp.array([4.0, 0.0]), 2.0)
        >>> print(np.asarray(idx, float).round(4))
        [1.2071    inf]
    """
    ok = n_tilde > 0
    safe = jnp.where(ok, n_tilde, 1.0)
    return jnp.where(ok, s / safe + jnp.sqrt(beta * n / 2.0) / safe, jnp.inf)


def delayed_klucb_index(s, n_tilde, beta, cap=1.0, iters: int = 8):
    """The DelayedKLUCB index ``max{q <= cap : Ñ d_Pois(S/Ñ, q) <= beta}`` (Vernade et al. 2017, sec. 5.3).

    Args:
        s: f32[K], the revealed conversions ``S``.
        n_tilde: f32[K], the expected revealed pulls ``Ñ``.
        beta: the exploration term (:func:`exploration`).
        cap: the upper bound of the index, or ``None``.
        iters: Newton steps (:func:`jaxbandits.core.mathlib.poisson_kl_ucb`).

    Returns:
        f32[K], the indices.

    Examples:
        >>> import numpy as np, jax.numpy as jnp
        >>> from jaxbandits.policies import conversions
        >>> idx = conversions.delayed_klucb_index(jnp.array([2.0, 2.0]), jnp.array([10.0, 4.0]), 2.0)
        >>> print(np.asarray(idx, float).round(3))
        [0.629 1.   ]
    """
    theta = s / jnp.where(n_tilde > 0, n_tilde, 1.0)
    return M.poisson_kl_ucb(theta, n_tilde, beta, cap, iters)


def round_robin(t, K, mask=None):
    """Whether round ``t`` is in the initial round robin, which plays arm ``t`` at ``t < K``.

    Args:
        t: the 0-based round.
        K: the number of arms.
        mask: bool[K], the context's allowed arms, or ``None``: a round whose arm is ruled out is
            not a round-robin round.

    Returns:
        A bool scalar: play arm ``t % K`` this round.

    Examples:
        >>> from jaxbandits.policies import conversions
        >>> bool(conversions.round_robin(1, 3)), bool(conversions.round_robin(5, 3))
        (True, False)
    """
    rr = t < K
    return rr if mask is None else rr & jnp.asarray(mask, bool)[t % K]


def exploration(t, eps: float = 0.0):
    """The exploration term ``beta(t) = (1 + eps) log t`` at the 1-based round ``t + 1`` being decided.

    Args:
        t: the 0-based round.
        eps: the ``eps >= 0`` of ``(1 + eps)``.

    Returns:
        f32 scalar, ``(1 + eps) log(t + 1)``.

    Examples:
        >>> from jaxbandits.policies import conversions
        >>> round(float(conversions.exploration(9)), 4)
        2.3026
    """
    return (1.0 + eps) * jnp.log(jnp.maximum(jnp.asarray(t, _F) + 1.0, 1.0))


def _ring_n_tilde(ring, t, tau, closed_weight, nc, K):
    """``closed_weight * nc + sum_j tau[age_j] e_{ring[j]}``, ages ``(t - j) mod H`` after round t."""
    H = ring.shape[0]
    ages = (t - jnp.arange(H)) % H
    wts = tau[ages]
    oh = (ring[:, None] == jnp.arange(K)[None, :]).astype(_F)  # empty slots (-1) give zero rows
    return closed_weight * nc + wts @ oh


def _delayed(index: str, delay, window, eps, cap, iters, online, name) -> Policy:
    mode = _mode(delay, window, online)
    m = window

    def init(spec: ProblemSpec, key):
        K = spec.n_arms
        z = jnp.zeros((K,), _F)
        H = 0
        tau = jnp.zeros((1,), _F)
        if mode in ("geom_cens", "table_cens", "online_cens"):
            H = min(m, spec.horizon)
        elif mode == "table_unc":
            H = max(D.truncation_length(delay, spec.horizon), 1)
        if mode in ("table_cens", "table_unc", "m0"):
            tau = delay.cdf_table(H + 1)
        hist = jnp.zeros(((m + 1) if mode == "online_cens" else 0,), _F)
        return DelayedState(z, z, z, z, z, z, jnp.full((H,), -1, jnp.int32), jnp.asarray(-1, jnp.int32), tau,
                            hist, jnp.zeros((), _F), jnp.zeros((), _F))

    def act(state: DelayedState, ctx, key):
        K = state.n.shape[0]
        t = ctx.t
        beta = exploration(t, eps)
        if index == "ucb":  # theta = S / Ñ (eq. 5), never clipped
            u = delayed_ucb_index(state.s, state.n, state.n_tilde, beta)
        else:
            u = delayed_klucb_index(state.s, state.n_tilde, beta, cap, iters)
        a = jnp.where(round_robin(t, K, ctx.mask), t % K, M.argmax_random_tie(u, M.uniform(key), ctx.mask))
        return a.astype(jnp.int32), ConvMemo(one_hot(a, K))

    def payload(memo, reward, delay_):
        if mode == "online_geom":  # App. D: the revealed delay rides along
            return jnp.concatenate([memo.onehot, (delay_ * reward)[None].astype(_F)])
        if mode == "online_cens":
            return jnp.concatenate([memo.onehot, reward * one_hot(jnp.minimum(delay_, m), m + 1)])
        return memo.onehot

    def update(st: DelayedState, arr):
        K = st.n.shape[0]
        t = arr.t
        e_a = one_hot(arr.action, K)
        conv = arr.payload[:K]
        st = st._replace(n=st.n + e_a, s=st.s + conv)
        if mode == "m0":  # only same-round conversions are observable: Ñ = tau_0 N
            return st._replace(n_tilde=st.tau[0] * st.n)
        if mode in ("geom_unc", "online_geom"):
            if mode == "geom_unc":
                rho = jnp.exp(D.geometric_log_rho(delay))
                st2 = st
            else:  # mu_hat = running mean of revealed delays (gamma = 1), rho_hat = mu/(1+mu)
                st2 = st._replace(dsum=st.dsum + arr.payload[K], dcnt=st.dcnt + jnp.sum(conv))
                mu = st2.dsum / jnp.maximum(st2.dcnt, 1.0)
                rho = mu / (1.0 + mu)
            o = rho * (st2.o + e_a)  # O <- rho (O + e_A), then Ñ = N - O
            return st2._replace(o=o, n_tilde=st2.n - o)
        # censored ring (and uncensored truncated ring): pull t - H closes now
        H = st.ring.shape[0]
        old = st.leave
        e_old = (jnp.arange(K) == old).astype(_F)  # zero vector when old = -1
        nc = st.nc + e_old
        ring = R.put(st.ring, t, arr.action)  # write first ...
        leave = R.get(ring, t + 1)  # ... then read what closes next round
        if mode == "geom_cens":
            lr = D.geometric_log_rho(delay)
            o, w = discounted_window(st.o, st.w, e_a, e_old, lr, m)
            return st._replace(o=o, w=w, nc=nc, ring=ring, leave=leave,
                               n_tilde=discounted_value(nc, w, o, lr, m))
        if mode == "online_cens":  # tau_hat_d = cumsum(hist)_d / n_d estimates tau_d / tau_m
            hist = st.hist + arr.payload[K:]
            n_d = jnp.sum(hist)
            tau = jnp.where(n_d > 0, jnp.cumsum(hist) / jnp.maximum(n_d, 1.0), 1.0)
            nt = _ring_n_tilde(ring, t, tau, tau[m], nc, K)
            return st._replace(nc=nc, ring=ring, leave=leave, hist=hist, n_tilde=nt)
        nt = _ring_n_tilde(ring, t, st.tau, st.tau[H], nc, K)
        return st._replace(nc=nc, ring=ring, leave=leave, n_tilde=nt)

    def estimate(st: DelayedState):  # S / Ñ: the delay-corrected conversion rate (NaN before Ñ > 0)
        return jnp.where(st.n_tilde > 0, st.s / jnp.where(st.n_tilde > 0, st.n_tilde, 1.0), jnp.nan)

    return Policy(init, act, update, payload, _needs(m), name, estimate=estimate, honours_mask=True)


def _check(delay, window, eps, online):
    if window is not None:
        window = V.integer("window", window, lo=0, hi=V.MAX_HORIZON)
    V.nonneg("eps", eps)
    if not online and not isinstance(delay, D.DelayLaw):
        raise TypeError(f"delay must be a jaxbandits.core.delays law (the known CDF), got {type(delay).__name__}")
    if online and window == 0:
        raise ValueError("online delay estimation needs window >= 1 (window=0 reveals no delay information)")
    return window


@policy_value("DelayedUCB", fused=("delayed_ucb", ("delay", "window", "eps", "online")))
def delayed_ucb(delay=None, window: Optional[int] = None, eps: float = 0.0, online: bool = False,
                name: Optional[str] = None) -> Policy:
    """DelayedUCB of Vernade et al. (2017): UCB corrected for conversions still to come.

    ``d-ucb`` with a censoring window, ``ud-ucb`` without. The index is
    :func:`delayed_ucb_index` with the expected number of conversions the pulls could have
    revealed, ``Ñ``, computed from the delay law's CDF.

    Args:
        delay: the delay law (:mod:`jaxbandits.core.delays`) whose CDF the policy knows; not used
            (may be ``None``) with ``online=True``.
        window: the censoring window ``m`` of the conversions channel (an integer in
            ``[0, 2**31 - 2]``), or ``None`` for an uncensored channel.
        eps: the ``(1 + eps) log t`` exploration's ``eps``, ``>= 0``.
        online: estimate the delay CDF from the revealed delays (App. D) instead of knowing it;
            needs ``window >= 1``.
        name: the display name (default ``"d-ucb"`` / ``"ud-ucb"``, ``"-online"`` appended).

    Returns:
        The policy, a frozen value (``DelayedUCB(...)``); it needs the censored-conversions channel
        with exactly this ``window``.

    Raises:
        TypeError: ``delay`` is not a delay law (and ``online`` is False).
        ValueError: ``window`` or ``eps`` out of range, or ``online`` with ``window=0``.

    Examples:
        >>> from jaxbandits import delays
        >>> from jaxbandits.policies import conversions
        >>> pol = conversions.delayed_ucb(delays.geometric(mean=20.0), window=200)
        >>> pol.name, pol.needs.window
        ('d-ucb', 200)
        >>> conversions.delayed_ucb(online=True, window=100).name
        'd-ucb-online'
    """
    window = _check(delay, window, eps, online)
    nm = name or ("ud-ucb" if window is None else "d-ucb") + ("-online" if online else "")
    return _delayed("ucb", delay, window, eps, 1.0, 0, online, nm)


@policy_value("DelayedKLUCB", fused=("delayed_klucb", ("delay", "window", "eps", "cap", "iters", "online")))
def delayed_klucb(delay=None, window: Optional[int] = None, eps: float = 0.0, cap: Optional[float] = 1.0,
                  iters: int = 8, online: bool = False, name: Optional[str] = None) -> Policy:
    """DelayedKLUCB of Vernade et al. (2017), with the Poisson KL.

    ``d-klucb`` with a censoring window, ``ud-klucb`` without; the index is
    :func:`delayed_klucb_index`.

    Args:
        delay: the delay law (:mod:`jaxbandits.core.delays`) whose CDF the policy knows; not used
            with ``online=True``.
        window: the censoring window ``m`` (an integer ``>= 0``), or ``None`` for no censoring.
        eps: the ``(1 + eps) log t`` exploration's ``eps``, ``>= 0``.
        cap: the index's upper bound, ``> 0``, or ``None`` for the uncapped index.
        iters: Newton steps of the index, an integer in ``[1, 64]``.
        online: App. D's delay-agnostic variant (the CDF estimated from the revealed delays).
        name: the display name (default ``"d-klucb"`` / ``"ud-klucb"``).

    Returns:
        The policy, a frozen value (``DelayedKLUCB(...)``); it needs the censored-conversions
        channel with exactly this ``window``.

    Raises:
        TypeError: ``delay`` is not a delay law (and ``online`` is False).
        ValueError: a parameter out of its range.

    Examples:
        >>> from jaxbandits import delays
        >>> from jaxbandits.policies import conversions
        >>> pol = conversions.delayed_klucb(delays.geometric(mean=20.0), window=200)
        >>> pol.name, pol.window
        ('d-klucb', 200)
    """
    window = _check(delay, window, eps, online)
    if cap is not None:
        V.positive("cap", cap)
    iters = V.integer("iters", iters, lo=1, hi=64)
    nm = name or ("ud-klucb" if window is None else "d-klucb") + ("-online" if online else "")
    return _delayed("kl", delay, window, eps, cap, iters, online, nm)


# ----------------------------------------------------------------------------- Discarding
class DiscardingState(NamedTuple):
    """The state of Discarding-UCB / Discarding-KLUCB.

    Attributes:
        nc: f32[K], closed pulls ``N^c_k`` (pulls of age ``>= m``).
        sc: f32[K], conversions of the closed pulls ``S^c_k`` (delivered when their pull closes).
        ring: i32[m], the last ``m`` arms played.
        leave: i32, the arm of the pull that closes at the next update.
        tau_m: f32, the delay CDF at the window.
    """
    nc: Any  # f32[K] closed pulls N^c_k (pulls of age >= m)
    sc: Any  # f32[K] conversions of closed pulls S^c_k (delivered when their pull closes)
    ring: Any  # i32[m] last m arms
    leave: Any  # i32 arm of the pull that closes at the next update
    tau_m: Any  # f32


class HoldMemo(NamedTuple):
    onehot: Any
    hold: Any  # i32 = m: a conversion of this pull is delivered when the pull closes


def _discarding(index, delay, window, eps, bonus, cap, iters, name) -> Policy:
    m = window

    def init(spec: ProblemSpec, key):
        K = spec.n_arms
        z = jnp.zeros((K,), _F)
        return DiscardingState(z, z, jnp.full((min(m, spec.horizon),), -1, jnp.int32), jnp.asarray(-1, jnp.int32),
                               delay.cdf(m))

    def act(st: DiscardingState, ctx, key):
        K = st.nc.shape[0]
        t = ctx.t
        beta = exploration(t, eps)
        ok = st.nc > 0
        n_eff = st.tau_m * st.nc
        theta = st.sc / jnp.where(ok, n_eff, 1.0)  # S^c / (tau_m N^c): closed pulls' conversions only (sec. 6)
        if index == "ucb":
            denom = n_eff if bonus == "paper" else st.tau_m * n_eff  # sec. 6's bonus as printed, or tau_m^2
            u = jnp.where(ok, theta + jnp.sqrt(beta / (2.0 * jnp.where(ok, denom, 1.0))), jnp.inf)
        else:
            u = M.poisson_kl_ucb(theta, n_eff, beta, cap, iters)
        a = jnp.where(round_robin(t, K, ctx.mask), t % K, M.argmax_random_tie(u, M.uniform(key), ctx.mask))
        return a.astype(jnp.int32), HoldMemo(one_hot(a, K), jnp.asarray(m, jnp.int32))

    def payload(memo, reward, delay_):
        return memo.onehot

    def update(st: DiscardingState, arr):
        K = st.nc.shape[0]
        sc = st.sc + arr.payload  # conversions of the pull that closes now (hold = m)
        if m == 0:
            return st._replace(nc=st.nc + one_hot(arr.action, K), sc=sc)
        e_old = (jnp.arange(K) == st.leave).astype(_F)
        ring = R.put(st.ring, arr.t, arr.action)
        return st._replace(nc=st.nc + e_old, sc=sc, ring=ring, leave=R.get(ring, arr.t + 1))

    def estimate(st: DiscardingState):  # S^c / (tau_m N^c): closed pulls only (NaN before the first closes)
        n_eff = st.tau_m * st.nc
        return jnp.where(n_eff > 0, st.sc / jnp.where(n_eff > 0, n_eff, 1.0), jnp.nan)

    return Policy(init, act, update, payload, _needs(m), name, max_hold=m, memo_hold=True, estimate=estimate,
                  honours_mask=True)


@policy_value("DiscardingUCB")
def discarding_ucb(delay, window: int, eps: float = 0.0, bonus: str = "paper", name: Optional[str] = None) -> Policy:
    """Discarding-UCB (Vernade et al. 2017, sec. 6): UCB on closed pulls only.

    A pull is closed once it is ``window`` rounds old: its conversion, if any, has arrived. The
    bonus is ``sqrt(beta / (2 tau_m N^c))`` as printed; ``bonus="tau2"`` uses ``tau_m^2``, which is
    what DelayedUCB reduces to when every pull is closed.

    Args:
        delay: the delay law (:mod:`jaxbandits.core.delays`); its CDF at ``window`` is ``tau_m``.
        window: the censoring window ``m``, an integer ``>= 0``.
        eps: the ``(1 + eps) log t`` exploration's ``eps``, ``>= 0``.
        bonus: ``"paper"`` or ``"tau2"``.
        name: the display name (default ``"Discarding-UCB"``).

    Returns:
        The policy, a frozen value (``DiscardingUCB(...)``); it holds each pull's feedback for
        ``window`` rounds.

    Raises:
        TypeError: ``delay`` is not a delay law.
        ValueError: a parameter out of its range.

    Examples:
        >>> from jaxbandits import delays
        >>> from jaxbandits.policies import conversions
        >>> pol = conversions.discarding_ucb(delays.geometric(mean=20.0), window=50)
        >>> pol.name, pol.max_hold
        ('Discarding-UCB', 50)
    """
    window = V.integer("window", window, lo=0, hi=V.MAX_HORIZON)
    _check(delay, window, eps, False)
    V.choice("bonus", bonus, ("paper", "tau2"))
    return _discarding("ucb", delay, window, eps, bonus, 1.0, 0, name or "Discarding-UCB")


@policy_value("DiscardingKLUCB")
def discarding_klucb(delay, window: int, eps: float = 0.0, cap: Optional[float] = 1.0, iters: int = 8,
                     name: Optional[str] = None) -> Policy:
    """Discarding-KLUCB: DelayedKLUCB restricted to closed pulls (``Ñ = tau_m N^c``).

    Args:
        delay: the delay law (:mod:`jaxbandits.core.delays`); its CDF at ``window`` is ``tau_m``.
        window: the censoring window ``m``, an integer ``>= 0``.
        eps: the ``(1 + eps) log t`` exploration's ``eps``, ``>= 0``.
        cap: the index's upper bound, or ``None`` for none.
        iters: Newton steps of the index, an integer in ``[1, 64]``.
        name: the display name (default ``"Discarding-KLUCB"``).

    Returns:
        The policy, a frozen value (``DiscardingKLUCB(...)``).

    Raises:
        TypeError: ``delay`` is not a delay law.
        ValueError: a parameter out of its range.

    Examples:
        >>> from jaxbandits import delays
        >>> from jaxbandits.policies import conversions
        >>> conversions.discarding_klucb(delays.fixed(3), window=5).name
        'Discarding-KLUCB'
    """
    window = V.integer("window", window, lo=0, hi=V.MAX_HORIZON)
    _check(delay, window, eps, False)
    iters = V.integer("iters", iters, lo=1, hi=64)
    return _discarding("kl", delay, window, eps, "paper", cap, iters, name or "Discarding-KLUCB")


# ----------------------------------------------------------------------------- theory (Theorems 3, 4, 9)
def _kl_np(p, q):
    import numpy as np

    return p * np.log(p / q) + (1 - p) * np.log((1 - p) / (1 - q))


def lower_bound_constant(theta, tau_m: float = 1.0) -> float:
    """Asymptotic lower-bound slope ``C`` with ``L(T) >= C log T``: Theorem 3 (censored,
    ``sum_k tau_m Delta_k / d(tau_m theta_k, tau_m theta*)``) or, with ``tau_m = 1``, Theorem 4
    (uncensored, Lai and Robbins)."""
    import numpy as np

    th = np.asarray(theta, np.float64)
    best = th.max()
    sub = th[th < best]
    return float(np.sum(tau_m * (best - sub) / _kl_np(tau_m * sub, tau_m * best)))


def ucb_slope_constant(theta, tau_m: float = 1.0) -> float:
    """``sum_k 1 / (2 tau_m Delta_k)``: the leading constant of Theorem 9 (DelayedUCB, censored;
    ``tau_m = 1``: Corollary 10 with eps -> 0)."""
    import numpy as np

    th = np.asarray(theta, np.float64)
    d = th.max() - th[th < th.max()]
    return float(np.sum(1.0 / (2.0 * tau_m * d)))


def poisson_kl_slope_constant(theta) -> float:
    """``sum_k Delta_k / d_Pois(theta_k, theta*)``: the slope implied by DelayedKLUCB's Poisson index
    (the same with or without censoring, by scaling)."""
    import numpy as np

    th = np.asarray(theta, np.float64)
    best = th.max()
    sub = th[th < best]
    dp = sub * np.log(sub / best) + best - sub
    return float(np.sum((best - sub) / dp))
