"""Thune, Cesa-Bianchi and Seldin (2019), *Nonstochastic Multiarmed Bandits with Unrestricted
Delays* (NeurIPS): DEW (Algorithm 1), Skipper (Algorithm 2, a wrapper), and the doubling scheme
for delays revealed at action time (Section 4); their tunings (Theorem 1, Corollary 4) and every
regret bound as a host-side function (float64).

Losses are ``l = 1 - r``. DEW keeps normalised log-probabilities; a play attaches
``(e_A, log p_A, probs)`` to its memo and its payload is the importance-weighted loss
``e_A l exp(-log p_A)``, so the probability **at play time** weights it whenever it arrives
(Algorithm 1), and any number of arrivals in one round simply add (conventions §5.3).
"""
from __future__ import annotations

import math
from typing import Any, NamedTuple, Optional

import jax
import jax.numpy as jnp
import numpy as np

from ..core import validate as V
from ..core import mathlib as M
from ..core.types import Needs, Policy, ProblemSpec, one_hot
from ..core.values import is_policy, policy_value

__all__ = ["dew", "skipper", "skipper_dew", "doubling", "DEWState", "SkipperState", "DoublingState",
           "thm1_eta", "thm1_bound", "thm3_bound", "cor4_beta", "cor4_bound", "oracle_bound", "oracle_beta",
           "thm6_bound", "cor7_bound", "skipped_stats", "doubling_width", "doubling_epochs"]

_F = jnp.float32
_E = math.e
_CLAMP = 1e30  # conventions §9: eta * l_hat is clamped (binds with probability below ~e^-87 per round)
_ATTR = Needs(attributed=True, zeros_observed=True)  # every loss, attributed to its play


class DEWState(NamedTuple):
    """The state of DEW.

    Attributes:
        logp: f32[K], normalised log-probabilities (``logsumexp = 0``).
        eta: f32, the rate ``eta' = min(eta, 1/(4e d_max))`` (Theorem 1's truncation).
    """
    logp: Any  # f32[K] normalised log-probabilities (logsumexp = 0)
    eta: Any  # f32 eta' = min(eta, 1/(4e d_max)) (Thm 1 truncation)


class DEWMemo(NamedTuple):
    onehot: Any  # e_A
    log_p_a: Any  # log p_s^{A_s} at play time (importance weight)
    probs: Any  # p_s (expected-regret metric)


def _truncate(eta, d_max):
    """``min(eta, 1/(4e d_max))``; no truncation for ``d_max`` None or 0 (works on traced values)."""
    if d_max is None:
        return eta
    return jnp.where(jnp.asarray(d_max) > 0, jnp.minimum(eta, 1.0 / (4 * _E * jnp.maximum(d_max, 1e-30))), eta)


def _exp_weights_step(logp, eta, g):
    """log p <- log p - min(eta g, clamp), renormalised (one batch of arrivals, commutative)."""
    return M.log_normalize(logp - jnp.minimum(eta * g, _CLAMP))


def _draw(logp, key):
    p = jnp.exp(logp)
    a = M.sample_from_probs(p, M.uniform(key))
    return a, DEWMemo(one_hot(a, logp.shape[0]), logp[a], p)


def _iw_loss(memo, reward):
    return memo.onehot * (1.0 - reward) * jnp.exp(-memo.log_p_a)


@policy_value("DEW")
def dew(eta: float, d_max: Optional[float] = None, name: str = "DEW") -> Policy:
    """DEW (Thune et al. 2019, Algorithm 1): exponential weights on importance-weighted losses.

    One update per arriving feedback, at the rate ``eta' = min(eta, 1/(4e d_max))``. Feedback with
    delay above ``d_max`` would void the guarantee of Theorem 1: it is dropped, i.e. bare DEW
    behaves as Skipper(d_max + 1). Needs ``K >= 2`` arms.

    Args:
        eta: the learning rate, ``> 0`` (Theorem 1's tuning: :func:`thm1_eta`).
        d_max: the largest delay used, ``>= 0``, or ``None`` for no truncation.
        name: the display name.

    Returns:
        The policy, a frozen value (``DEW(...)``).

    Raises:
        ValueError: ``eta`` not positive or ``d_max`` negative (and, when the run starts, fewer
            than two arms).

    Examples:
        >>> from jaxbandits.policies import adversarial
        >>> adversarial.dew(eta=0.05)
        DEW(eta=0.05)
    """
    V.positive("eta", eta)
    if d_max is not None:
        V.nonneg("d_max", d_max)
    eta_t = _truncate(eta, d_max)

    def init(spec: ProblemSpec, key):
        K = spec.n_arms
        if K < 2:
            raise ValueError(f"DEW needs K >= 2 arms (ln K > 0), got {K}")
        return DEWState(jnp.full((K,), -math.log(K), _F), jnp.asarray(eta_t, _F))

    def act(state, ctx, key):
        return _draw(state.logp, key)

    def payload(memo, reward, delay):
        keep = True if d_max is None else (delay <= d_max)
        return _iw_loss(memo, reward) * keep

    def update(state, arr):
        return state._replace(logp=_exp_weights_step(state.logp, state.eta, arr.payload))

    return Policy(init, act, update, payload, _ATTR, name, memo_probs=True)


# ----------------------------------------------------------------------------- Skipper
class SkipperState(NamedTuple):
    """The state of Skipper.

    Attributes:
        base: the wrapped policy's state.
        skipped: f32, arrivals discarded because their delay was ``>= beta``.
    """
    base: Any  # the wrapped policy's state
    skipped: Any  # f32 arrivals discarded because their delay was >= beta (OT: seen on arrival)


@policy_value("Skipper")
def skipper(beta: float, base: Policy, count_skipped: bool = True, name: Optional[str] = None) -> Policy:
    """Skipper(beta, base) (Thune et al. 2019, Algorithm 2), a wrapper as in optax.

    Feedback whose delay is ``>= beta`` is discarded (the inequality is not strict, Alg. 2),
    everything else goes to ``base`` unchanged.

    Args:
        beta: the skipping threshold (``inf`` skips nothing).
        base: the wrapped policy; it must use attributed feedback (a payload function).
        count_skipped: add one payload lane counting the discarded arrivals (they must fit in the
            calendar to be counted; with ``False`` a width of ``ceil(beta)`` is exact).
        name: the display name (default ``"Skipper(beta, base)"``).

    Returns:
        The policy, a frozen value that holds ``base`` as a field.

    Raises:
        TypeError: ``base`` is not a policy.
        ValueError: ``beta`` not a number, or ``base`` without attributed feedback.

    Examples:
        >>> from jaxbandits.policies import adversarial
        >>> pol = adversarial.skipper(10.0, adversarial.dew(0.05))
        >>> pol
        Skipper(beta=10.0, base=DEW(eta=0.05))
        >>> pol.name
        'Skipper(10, DEW)'
    """
    V.real("beta", beta, allow_inf=True)
    if not is_policy(base):
        raise TypeError(f"base must be a Policy, got {type(base).__name__}")
    if base.payload is None:
        raise ValueError("skipper needs a base policy with attributed feedback (a payload function)")

    def init(spec, key):
        return SkipperState(base.init(spec, key), jnp.zeros((), _F))

    def act(state, ctx, key):
        return base.act(state.base, ctx, key)

    def payload(memo, reward, delay):
        keep = jnp.asarray(delay) < beta
        bp = base.payload(memo, reward, delay) * keep
        if not count_skipped:
            return bp
        return jnp.concatenate([bp, (~keep).astype(_F)[None]])

    def update(state, arr):
        if not count_skipped:
            return state._replace(base=base.update(state.base, arr))
        inner = arr._replace(payload=arr.payload[:-1])
        return SkipperState(base.update(state.base, inner), state.skipped + arr.payload[-1])

    label = f"Skipper({float(beta):g}, {base.name})" if V.is_concrete(beta) else f"Skipper({base.name})"
    needs = base.needs._replace(attributed=True, zeros_observed=True)
    return Policy(init, act, update, payload, needs, name or label, base.max_hold, base.reveal_window,
                  base.memo_hold, base.memo_probs, honours_mask=base.honours_mask)


@policy_value("SkipperDEW")
def skipper_dew(beta: float, eta: Optional[float] = None, count_skipped: bool = True,
                name: Optional[str] = None) -> Policy:
    """``Skipper(beta, DEW(eta, beta))``: DEW with ``d_max = beta``.

    The default ``eta = 1/(4e beta)`` is Corollary 4's choice: the truncation is then inactive.

    Args:
        beta: the skipping threshold, ``> 0`` (Corollary 4's tuning: :func:`cor4_beta`).
        eta: DEW's learning rate, or ``None`` for ``1/(4e beta)``.
        count_skipped: add one payload lane counting the discarded arrivals.
        name: the display name (default ``"Skipper-DEW(beta=...)"``).

    Returns:
        The policy, a frozen value (``SkipperDEW(...)``).

    Raises:
        ValueError: ``beta`` not positive.

    Examples:
        >>> from jaxbandits.policies import adversarial
        >>> adversarial.skipper_dew(10.0).name
        'Skipper-DEW(beta=10)'
    """
    V.positive("beta", beta)
    eta = 1.0 / (4 * _E * beta) if eta is None else eta
    label = f"Skipper-DEW(beta={float(beta):.3g})" if V.is_concrete(beta) else "Skipper-DEW"
    return skipper(beta, dew(eta, d_max=beta), count_skipped, name or label)


# ----------------------------------------------------------------------------- Doubling
class DoublingState(NamedTuple):
    """The state of the doubling scheme.

    Attributes:
        logp: f32[K], the current epoch's DEW log-probabilities.
        m: i32, the epoch index (``omega_m = 2^m``).
        sigma: f32, the rounds of the epoch so far (skipped ones included).
        n_skip: f32, ``|S^m_{beta_m}|``: rounds of the epoch with ``d_t >= beta_m``.
        dsum: f32, ``D^m_{beta_m}``: the sum of ``d_t`` over the epoch's rounds that are not skipped.
        restarts: i32, the number of epoch switches (several may happen in one round).
    """
    logp: Any  # f32[K] the current epoch's DEW
    m: Any  # i32 epoch index (omega_m = 2^m)
    sigma: Any  # f32 rounds of the epoch so far (skipped ones included)
    n_skip: Any  # f32 |S^m_{beta_m}|: rounds of the epoch with d_t >= beta_m
    dsum: Any  # f32 D^m_{beta_m}: sum of d_t over the epoch's rounds that are not skipped
    restarts: Any  # i32 number of epoch switches (several may happen in one round)


class DoublingMemo(NamedTuple):
    onehot: Any
    log_p_a: Any
    probs: Any
    m: Any  # epoch that owns this round (after any restart at it)
    sigma: Any
    n_skip: Any
    dsum: Any
    jumps: Any  # i32 epoch increments made at this round (0: same epoch)
    skip: Any  # bool d_t >= beta_m: no feedback is kept


def _beta_m(m, lnk):
    return jnp.exp2(m.astype(_F) / 2.0) / (4 * _E * lnk)  # eq. (5)


@policy_value("Doubling")
def doubling(m0: int = 0, lanes: int = 48, name: str = "Doubling") -> Policy:
    """The doubling scheme of Thune et al. (2019, Section 4) for delays revealed at action time.

    Epochs ``m``, ``omega_m = 2^m``, ``beta_m = sqrt(omega_m)/(4e ln K)``,
    ``eta_m = ln K / sqrt(omega_m)``; stay while
    ``max(|S^m|^2, (e K sigma(m)/2 + D^m) ln K) <= omega_m`` (eq. 6), tested with round t
    included; the round that breaks it opens the next epoch and is tested again (several empty
    epochs in one round are possible). A restart resets the weights and drops every pending
    feedback of earlier epochs: payloads are lane-structured by epoch (``one_hot(m mod lanes)``)
    and ``update`` reads the current epoch's lane only (conventions §5.3). Knows neither T nor D.

    Args:
        m0: the first epoch, an integer in ``[0, 40]``.
        lanes: the payload lanes (epochs told apart), an integer in ``[2, 256]``.
        name: the display name.

    Returns:
        The policy, a frozen value (``Doubling(...)``); it needs the delay at action time
        (:func:`doubling_width` gives a calendar width that holds its feedback).

    Raises:
        ValueError: ``m0`` or ``lanes`` out of range (and, when the run starts, fewer than two arms).

    Examples:
        >>> from jaxbandits.policies import adversarial
        >>> adversarial.doubling(m0=2)
        Doubling(m0=2)
    """
    m0 = V.integer("m0", m0, lo=0, hi=40)
    lanes = V.integer("lanes", lanes, lo=2, hi=256)

    def init(spec: ProblemSpec, key):
        K = spec.n_arms
        if K < 2:
            raise ValueError(f"doubling needs K >= 2 arms, got {K}")
        z = jnp.zeros((), _F)
        return DoublingState(jnp.full((K,), -math.log(K), _F), jnp.asarray(m0, jnp.int32), z, z, z,
                             jnp.zeros((), jnp.int32))

    def act(state: DoublingState, ctx, key):
        K = state.logp.shape[0]
        lnk = math.log(K)
        d = ctx.delay_now.astype(_F)

        def tentative(m, sigma, n_skip, dsum):
            skip = d >= _beta_m(m, lnk)
            s2, n2 = sigma + 1.0, n_skip + skip
            d2 = dsum + jnp.where(skip, 0.0, d)
            ok = jnp.maximum(n2 * n2, (_E * K * s2 / 2.0 + d2) * lnk) <= jnp.exp2(m.astype(_F))
            return ok, skip, s2, n2, d2

        def cond(c):
            return ~tentative(*c)[0]

        def body(c):  # open the next epoch with round t as its first round, and test again
            m = c[0] + 1
            z = jnp.zeros((), _F)
            return (m, z, z, z)

        m, sigma, n_skip, dsum = jax.lax.while_loop(cond, body, (state.m, state.sigma, state.n_skip, state.dsum))
        _, skip, s2, n2, d2 = tentative(m, sigma, n_skip, dsum)
        jumps = m - state.m
        logp = jnp.where(jumps > 0, -lnk, state.logp)  # a fresh DEW: uniform weights
        a, dm = _draw(logp, key)
        return a, DoublingMemo(dm.onehot, dm.log_p_a, dm.probs, m, s2, n2, d2, jumps, skip)

    def payload(memo, reward, delay):
        val = _iw_loss(memo, reward) * (~memo.skip)
        return (one_hot(memo.m % lanes, lanes)[:, None] * val[None, :]).ravel()

    def update(state: DoublingState, arr):
        memo = arr.memo
        K = state.logp.shape[0]
        lnk = math.log(K)
        logp = jnp.where(memo.jumps > 0, -lnk, state.logp)
        g = arr.payload.reshape(lanes, K)[memo.m % lanes]  # earlier epochs' feedback is discarded
        eta = lnk / jnp.exp2(memo.m.astype(_F) / 2.0)
        return DoublingState(_exp_weights_step(logp, eta, g), memo.m, memo.sigma, memo.n_skip, memo.dsum,
                             state.restarts + memo.jumps)

    return Policy(init, act, update, payload, _ATTR._replace(delay_at_action=True), name, memo_probs=True)


# ----------------------------------------------------------------------------- tunings and bounds (host, float64)
def thm1_eta(K: int, T: int, D: float) -> float:
    """Theorem 1's rate ``sqrt(ln K / (e K T / 2 + D))`` (Thune et al. 2019).

    Args:
        K: the number of arms.
        T: the horizon.
        D: the total delay.

    Returns:
        The learning rate, a float.

    Examples:
        >>> from jaxbandits.policies import adversarial
        >>> round(adversarial.thm1_eta(2, 1000, 500.0), 5)
        0.01468
    """
    return math.sqrt(math.log(K) / (_E * K * T / 2 + D))


def thm1_bound(K: int, T: int, D: float, d_max: float, eta: float) -> float:
    """Theorem 1's regret bound (max form): ``max(ln K / eta, 4e d_max ln K) + eta (e K T / 2 + D)``.

    Args:
        K: the number of arms.
        T: the horizon.
        D: the total delay.
        d_max: the largest delay.
        eta: the learning rate.

    Returns:
        The bound, a float.

    Examples:
        >>> from jaxbandits.policies import adversarial
        >>> round(adversarial.thm1_bound(2, 1000, 500.0, 10.0, 0.02), 3)
        139.732
    """
    lnk = math.log(K)
    return max(lnk / eta, 4 * _E * d_max * lnk) + eta * (_E * K * T / 2 + D)


def thm3_bound(K: int, T: int, n_skipped: float, D_beta: float, beta: float, eta: float) -> float:
    """Theorem 3's bound: ``|S_beta| + max(ln K / eta, 4e beta ln K) + eta (e K T / 2 + D_beta)``.

    Args:
        K: the number of arms.
        T: the horizon.
        n_skipped: ``|S_beta|``, the rounds skipped (:func:`skipped_stats`).
        D_beta: the total delay of the rounds kept.
        beta: the skipping threshold.
        eta: the learning rate.

    Returns:
        The bound, a float.

    Examples:
        >>> from jaxbandits.policies import adversarial
        >>> round(adversarial.thm3_bound(2, 1000, 3, 400.0, 10.0, 0.02), 3)
        140.732
    """
    lnk = math.log(K)
    return n_skipped + max(lnk / eta, 4 * _E * beta * lnk) + eta * (_E * K * T / 2 + D_beta)


def cor4_beta(K: int, T: int, D: float) -> float:
    """Corollary 4's threshold ``sqrt((e K T / 2 + (1 + 4e) D) / (16 e^2 ln K))``.

    The exact minimiser of Theorem 3's bound at ``eta = 1/(4e beta)`` with ``|S_beta| <= D/beta``
    and ``D_beta <= D``, which gives Corollary 4's bound.

    Args:
        K: the number of arms.
        T: the horizon.
        D: the total delay.

    Returns:
        The threshold ``beta``, a float.

    Examples:
        >>> from jaxbandits.policies import adversarial
        >>> round(adversarial.cor4_beta(2, 1000, 500.0), 3)
        10.277
    """
    return math.sqrt((_E * K * T / 2 + (1 + 4 * _E) * D) / (16 * _E**2 * math.log(K)))


def cor4_bound(K: int, T: int, D: float) -> float:
    """Corollary 4's bound ``2 sqrt((e K T / 2 + (1 + 4e) D) ln K)``.

    Args:
        K: the number of arms.
        T: the horizon.
        D: the total delay.

    Returns:
        The bound, a float.

    Examples:
        >>> from jaxbandits.policies import adversarial
        >>> round(adversarial.cor4_bound(2, 1000, 500.0), 3)
        154.907
    """
    return 2 * math.sqrt((_E * K * T / 2 + (1 + 4 * _E) * D) * math.log(K))


def skipped_stats(delays, beta: float):
    """``(|S_beta|, D_beta)`` of a delay sequence.

    Args:
        delays: int[T], the delay sequence.
        beta: the skipping threshold.

    Returns:
        ``(n_skipped, D_beta)``: the number of rounds with ``d >= beta``, and the total delay of
        the others (int64 arithmetic).

    Examples:
        >>> from jaxbandits.policies import adversarial
        >>> [int(v) for v in adversarial.skipped_stats([0, 3, 1, 0, 7, 2, 0, 1], 3.0)]
        [2, 4]
    """
    d = np.asarray(delays, np.int64)
    skip = d >= beta
    return int(skip.sum()), int(d[~skip].sum())


def _oracle(delays, K, T, kterm):
    d = np.sort(np.asarray(delays, np.float64))
    lnk = math.log(K)
    c = 16 * _E**2 * lnk
    vals = np.unique(d)
    prefix = np.concatenate([[0.0], np.cumsum(d)])
    best, arg = math.inf, None
    lo = 0.0
    for v in list(vals[vals > 0]) + [math.inf]:  # beta in (lo, v]: S = #{d >= v}, D_beta = sum d < v
        n_less = np.searchsorted(d, v, side="left") if np.isfinite(v) else d.size
        S = d.size - n_less
        X = kterm + prefix[n_less]
        b = min(max(math.sqrt(X / c), lo + 1e-12), v)
        f = S + 4 * _E * b * lnk + X / (4 * _E * b)
        if f < best:
            best, arg = f, b
        lo = v
    return best, arg


def oracle_bound(delays, K: int, T: int, kterm: Optional[float] = None) -> float:
    """``min_beta |S_beta| + 4e beta ln K + (kterm + D_beta)/(4e beta)``, exactly.

    The bound is piecewise convex in beta between consecutive delay values, and minimised on each
    piece.

    Args:
        delays: int[T], the delay sequence.
        K: the number of arms.
        T: the horizon.
        kterm: the constant term, default ``e K T / 2``.

    Returns:
        The minimum, a float.

    Examples:
        >>> from jaxbandits.policies import adversarial
        >>> round(float(adversarial.oracle_bound([0, 3, 1, 0, 7, 2, 0, 1], 2, 8)), 3)
        12.721
    """
    return _oracle(delays, K, T, _E * K * T / 2 if kterm is None else kterm)[0]


def oracle_beta(delays, K: int, T: int) -> float:
    """The minimising ``beta*`` of :func:`oracle_bound` (hindsight tuning; not an algorithm).

    Args:
        delays: int[T], the delay sequence.
        K: the number of arms.
        T: the horizon.

    Returns:
        ``beta*``, a float.

    Examples:
        >>> from jaxbandits.policies import adversarial
        >>> round(float(adversarial.oracle_beta([0, 3, 1, 0, 7, 2, 0, 1], 2, 8)), 3)
        1.0
    """
    return _oracle(delays, K, T, _E * K * T / 2)[1]


def thm6_bound(delays, K: int, T: int, printed: bool = False) -> float:
    """Theorem 6's bound for Doubling: ``15 min_beta {...} + 10 e^2 K ln K + 5``.

    With ``e K T / 2`` in the minimised term (the derivation's, conservative).

    Args:
        delays: int[T], the delay sequence.
        K: the number of arms.
        T: the horizon.
        printed: use the paper's printed ``K T`` instead of ``e K T / 2``.

    Returns:
        The bound, a float.

    Examples:
        >>> from jaxbandits.policies import adversarial
        >>> round(float(adversarial.thm6_bound([0, 3, 1, 0, 7, 2, 0, 1], 2, 8)), 2)
        298.24
    """
    kterm = K * T if printed else _E * K * T / 2
    return 15 * oracle_bound(delays, K, T, kterm) + 10 * _E**2 * K * math.log(K) + 5


def cor7_bound(K: int, T: int, D: float) -> float:
    """Corollary 7's bound for Doubling: ``30 sqrt((e K T / 2 + (1 + 4e) D) ln K) + 10 e^2 K ln K + 5``.

    Args:
        K: the number of arms.
        T: the horizon.
        D: the total delay.

    Returns:
        The bound, a float.

    Examples:
        >>> from jaxbandits.policies import adversarial
        >>> round(adversarial.cor7_bound(2, 1000, 500.0), 2)
        2431.05
    """
    return 30 * math.sqrt((_E * K * T / 2 + (1 + 4 * _E) * D) * math.log(K)) + 10 * _E**2 * K * math.log(K) + 5


def doubling_epochs(delays, K: int, m0: int = 0):
    """The epoch of every round of the doubling scheme on a delay sequence.

    The host reference (float64) of the in-scan loop of :func:`doubling`.

    Args:
        delays: int[T], the delays, known at action time.
        K: the number of arms.
        m0: the first epoch.

    Returns:
        ``(epoch, jumps)``, int arrays ``[T]``: the epoch of each round and the number of epoch
        increments made at it.

    Examples:
        >>> from jaxbandits.policies import adversarial
        >>> epoch, jumps = adversarial.doubling_epochs([0, 3, 1, 0, 7, 2, 0, 1], 2)
        >>> epoch.tolist(), jumps.tolist()
        ([1, 2, 2, 3, 3, 3, 3, 4], [1, 1, 0, 1, 0, 0, 0, 1])
    """
    lnk = math.log(K)
    m, sigma, n_skip, dsum = m0, 0.0, 0.0, 0.0
    ep, jumps = [], []
    for d in np.asarray(delays, np.float64):
        j = 0
        while True:
            beta = 2 ** (m / 2) / (4 * _E * lnk)
            skip = d >= beta
            s2, n2, d2 = sigma + 1, n_skip + skip, dsum + (0.0 if skip else d)
            if max(n2 * n2, (_E * K * s2 / 2 + d2) * lnk) <= 2.0**m:
                break
            m, sigma, n_skip, dsum, j = m + 1, 0.0, 0.0, 0.0, j + 1
        sigma, n_skip, dsum = s2, n2, d2
        ep.append(m)
        jumps.append(j)
    return np.array(ep), np.array(jumps)


def doubling_width(K: int, T: int) -> int:
    """A calendar width that holds every feedback Doubling can process within ``T`` rounds.

    ``ceil(beta_M) + 1`` for the largest epoch ``M`` reachable (processed delays are ``< beta_m``,
    and ``omega`` never needs to exceed ``max(T^2, (e K T / 2 + T beta) ln K)``).

    Args:
        K: the number of arms.
        T: the horizon.

    Returns:
        The width, an int.

    Examples:
        >>> from jaxbandits.policies import adversarial
        >>> adversarial.doubling_width(2, 1000)
        137
    """
    lnk = math.log(K)
    m = 0
    while True:
        beta = 2 ** (m / 2) / (4 * _E * lnk)
        if 2.0**m >= max(float(T) ** 2, (_E * K * T / 2 + T * beta) * lnk):
            return int(math.ceil(beta)) + 1
        m += 1
