"""Vernade, Carpentier, Lattimore, Zappella, Ermis and Brueckner (2020), *Linear Bandits with
Stochastic Delayed Feedback* (ICML): OTFLinUCB (Algorithm 1) and OTFLinTS (Algorithm 2) on the
censored-conversions channel with window m.

    V_t = lam I + sum_{s<t} A_s A_s^T        (every play, at once: negatives never arrive)
    B_t = sum of A_s over conversions that arrived within the window (payload x_A)
    theta_hat = V_t^-1 B_t                   (estimates tau_m theta, eq. 2)
    f_{t,delta} = sqrt(lam) + sqrt(2 log(1/delta) + d log((d lam + t)/(d lam)))     (Theorem 1)
    bias_t = sum over the last m actions of ||A_s||_{V_t^-1}   ("exact") or ||A_s||_{V_s^-1} ("stored")

``variant="paper"`` uses these formulas; ``variant="reference_code"`` (the default)
uses the authors' code's width, which squares the norms and drops the factor 2, and is the one that
reproduces the paper's figures (the printed width explores forever at these horizons, worse than
uniform random). V^-1 is kept by Sherman-Morrison, symmetrised each update. The ring of the last
m actions is written in ``update`` and read right after (conventions §12); the bias sums are
carried to ``act`` as scalars.
"""
from __future__ import annotations

import math
from typing import Any, NamedTuple, Optional

import jax.numpy as jnp

from ..core import validate as V
from ..core import mathlib as M
from ..core import ring as R
from ..core.types import Needs, Policy, ProblemSpec
from ..core.values import policy_value


def _conv(m):
    """Censored conversions with exactly the window ``m`` the policy was built for."""
    return Needs(attributed=True, zeros_observed=False, window=m)

__all__ = ["otf_linucb", "otf_lints", "linucb_wait", "linucb_ignore_delays", "OTFState", "f_width", "theorem2_bound"]

_F = jnp.float32


def f_width(t1, d: int, lam: float, delta: float, include_sqrt_lam: bool = True):
    """``f_{t,delta}`` of Vernade et al. (2020), Theorem 1, at the 1-based decision index ``t1``.

    Args:
        t1: the 1-based decision index (a scalar or array).
        d: the dimension.
        lam: the ridge regularisation.
        delta: the confidence level.
        include_sqrt_lam: add the ``sqrt(lam)`` term.

    Returns:
        f32, the width.

    Examples:
        >>> from jaxbandits.policies import linear
        >>> round(float(linear.f_width(100, 5, 1.0, 0.1)), 3)
        5.453
    """
    base = jnp.sqrt(2 * math.log(1 / delta) + d * jnp.log((d * lam + t1) / (d * lam)))
    return base + (math.sqrt(lam) if include_sqrt_lam else 0.0)


def theorem2_bound(T: int, d: int, m: int, tau_m: float, lam: float = 1.0, delta: float = 0.1):
    """Vernade et al. (2020), Theorem 2's regret bound, in its two terms.

    ``(4 f_T / tau_m) sqrt(2 d T log((d lam + T)/(d lam)))`` and ``(4 m d / tau_m) log(...)``.

    Args:
        T: the horizon.
        d: the dimension.
        m: the censoring window.
        tau_m: the delay CDF at the window.
        lam: the ridge regularisation.
        delta: the confidence level.

    Returns:
        The two terms, host floats.

    Examples:
        >>> from jaxbandits.policies import linear
        >>> [round(float(x)) for x in linear.theorem2_bound(10000, 5, 100, 0.5)]
        [52506, 30406]
    """
    lg = math.log((d * lam + T) / (d * lam))
    f = float(f_width(T, d, lam, delta))
    return 4 * f / tau_m * math.sqrt(2 * d * T * lg), 4 * m * d / tau_m * lg


class OTFState(NamedTuple):
    """The state of OTFLinUCB / OTFLinTS.

    Attributes:
        vinv: f32[d, d], ``V_t^-1`` (Sherman-Morrison updates).
        leave_n: f32, the stored norm of the action that leaves the ring at the next update.
        b: f32[d], the sum of ``x_s`` over the counted conversions.
        ring: f32[m, d], the last ``m`` played actions (zeros: empty), slot ``s mod m``.
        ring_n: f32[m], the stored ``||A_s||_{V_s^-1}`` (squared for the reference-code variant).
        bias_exact: f32, ``sum_{ring} ||A_s||_{V_t^-1}`` after the last update (read by act).
        bias_stored: f32, the sum of ``ring_n``.
        c: f32, the reference-code TS's ``sigma0 + sum b'_s`` over the window.
        t: i32, the completed rounds.
    """
    vinv: Any  # f32[d, d] V_t^-1 (Sherman-Morrison)
    leave_n: Any  # f32 stored norm of the action that leaves the ring at the next update
    b: Any  # f32[d] sum of x_s over counted conversions
    ring: Any  # f32[m, d] the last m played actions (zeros: empty), slot s mod m
    ring_n: Any  # f32[m] stored ||A_s||_{V_s^-1} (squared for the reference-code variant)
    bias_exact: Any  # f32 sum_{ring} ||A_s||_{V_t^-1} after the last update (read by act)
    bias_stored: Any  # f32 sum of ring_n
    c: Any  # f32 reference-code TS: sigma0 + sum of b'_s over the window
    t: Any  # i32 completed rounds


class OTFMemo(NamedTuple):
    x: Any  # f32[d] the played action


def _init(lam, m_window, ts_ref_sigma0=None):
    def init(spec: ProblemSpec, key):
        if spec.dim is None:
            raise ValueError("OTFLin policies need a linear world (features)")
        d = spec.dim
        m = max(min(m_window, spec.horizon), 1) if m_window else 1
        reg = lam if ts_ref_sigma0 is None else ts_ref_sigma0**2
        z = jnp.zeros((), _F)
        c0 = z if ts_ref_sigma0 is None else jnp.asarray(ts_ref_sigma0, _F)
        return OTFState(jnp.eye(d, dtype=_F) / reg, z, jnp.zeros((d,), _F), jnp.zeros((m, d), _F),
                        jnp.zeros((m,), _F), z, z, c0, jnp.zeros((), jnp.int32))

    return init


def _payload(memo, reward, delay):
    return memo.x  # B += x_s for every conversion that arrives within the window


def _update(m_window, stored_kind, ts_ref_sigma0=None, need_exact=True):
    """``need_exact``: also recompute the exact bias (an O(m d^2) pass over the ring) for the next
    decision; the stored bias is a running sum (the norm that leaves is read after the write)."""

    def update(st: OTFState, arr):
        a = arr.memo.x
        b = st.b + arr.payload  # arrivals first (an age-m arrival still has its ring slot)
        q = jnp.maximum(a @ st.vinv @ a, 0.0)  # ||a||^2_{V_s^-1}, V_s before adding a
        u = st.vinv @ a
        vinv = st.vinv - jnp.outer(u, u) / (1.0 + q)
        vinv = 0.5 * (vinv + vinv.T)
        c = st.c
        if stored_kind == "norm":
            stored = jnp.sqrt(q)
        elif stored_kind == "sq":
            stored = q
        else:  # reference-code TS: b'_s = a^T (c_s V'_{s+1})^-1 a, after adding a
            stored = jnp.maximum(a @ vinv @ a, 0.0) / jnp.maximum(c, 1e-12)
        leave_n = st.leave_n
        if m_window:
            ring = R.put(st.ring, arr.t, a)  # write ...
            ring_n = R.put(st.ring_n, arr.t, stored)
            bias_stored = st.bias_stored - st.leave_n + stored
            leave_n = R.get(ring_n, arr.t + 1)  # ... then read what leaves next round
            if need_exact:
                qs = jnp.einsum("md,de,me->m", ring, vinv, ring)
                bias_exact = jnp.sum(jnp.sqrt(jnp.maximum(qs, 0.0)))
            else:
                bias_exact = st.bias_exact
        else:
            ring, ring_n, bias_exact, bias_stored = st.ring, st.ring_n, st.bias_exact, st.bias_stored
        if ts_ref_sigma0 is not None:
            c = ts_ref_sigma0 + bias_stored
        return OTFState(vinv, leave_n, b, ring, ring_n, bias_exact, bias_stored, c, st.t + 1)

    return update


def _check(window, lam, delta, variant, bias_mode):
    window = V.integer("window", window, lo=0, hi=V.MAX_HORIZON)
    V.positive("lam", lam)
    V.real("delta", delta, lo=0.0, hi=1.0, lo_open=True, hi_open=True)
    V.choice("variant", variant, ("paper", "reference_code"))
    V.choice("bias_mode", bias_mode, ("exact", "stored"))
    return window


@policy_value("OTFLinUCB")
def otf_linucb(window: int, lam: float = 1.0, delta: float = 0.1, variant: str = "reference_code",
               bias_mode: str = "exact", width_scale: float = 1.0, bias: bool = True,
               include_sqrt_lam: bool = True, name: Optional[str] = None) -> Policy:
    """OTFLinUCB (Vernade et al. 2020): LinUCB on censored, delayed conversions, with a bias term.

    ``variant="paper"``: ``U(a) = <a, theta_hat> + (2 f + bias) ||a||_{V^-1}`` with the exact
    (``V_t``) or stored (``V_s``) bias; ``"reference_code"``: ``<a, theta_hat> +
    (sqrt(beta'_t + lam) + sum b_s) ||a||^2_{V^-1}``, ``b_s = ||A_s||^2_{V_s^-1}``,
    ``beta'_t = 2 log(1/delta) + d log(1 + n/(lam d))`` (the authors' code).

    Args:
        window: the censoring window ``m`` of the conversions channel, an integer ``>= 0``.
        lam: the ridge regularisation, ``> 0``.
        delta: the confidence level, in ``(0, 1)``.
        variant: ``"paper"`` or ``"reference_code"``.
        bias_mode: ``"exact"`` or ``"stored"`` (the paper variant's bias).
        width_scale: a multiplier of the width, ``> 0``.
        bias: ``False`` drops the bias term (the baseline "OTFLinUCB without the bias term", not
            from the paper).
        include_sqrt_lam: include ``sqrt(lam) S`` in ``f`` (:func:`f_width`).
        name: the display name (default ``"OTFLinUCB"``).

    Returns:
        The policy, a frozen value (``OTFLinUCB(...)``); it needs a linear world and the
        conversions channel with this ``window``.

    Raises:
        ValueError: a parameter out of its range.

    Examples:
        >>> from jaxbandits.policies import linear
        >>> linear.otf_linucb(window=50)
        OTFLinUCB(window=50)
    """
    window = _check(window, lam, delta, variant, bias_mode)
    V.positive("width_scale", width_scale)

    def act(st: OTFState, ctx, key):
        x = ctx.features
        d = x.shape[-1]
        theta = st.vinv @ st.b
        qa = jnp.maximum(jnp.einsum("kd,de,ke->k", x, st.vinv, x), 0.0)
        if variant == "paper":
            f = f_width(st.t + 1.0, d, lam, delta, include_sqrt_lam)
            bias_t = (st.bias_exact if bias_mode == "exact" else st.bias_stored) if bias else 0.0
            u = x @ theta + width_scale * (2.0 * f + bias_t) * jnp.sqrt(qa)
        else:
            beta_p = 2 * math.log(1 / delta) + d * jnp.log1p(st.t / (lam * d))
            bias_t = st.bias_stored if bias else 0.0
            root = jnp.sqrt(beta_p + (lam if bias else math.sqrt(lam)))
            u = x @ theta + width_scale * (root + bias_t) * qa
        a = M.argmax_random_tie(u, M.uniform(key), ctx.mask)
        return a, OTFMemo(x[a])

    kind = "sq" if variant == "reference_code" else "norm"
    nm = name or ("OTFLinUCB" if bias else "OTFLinUCB-nobias")
    exact = variant == "paper" and bias_mode == "exact" and bias
    return Policy(_init(lam, window), act, _update(window, kind, need_exact=exact), _payload,
                  _conv(window), nm, honours_mask=True)


@policy_value("OTFLinTS")
def otf_lints(window: int, lam: float = 1.0, delta: float = 0.1, variant: str = "reference_code",
              bias_mode: str = "stored", scale: str = "paper", sigma0: float = 0.5,
              name: Optional[str] = None) -> Policy:
    """OTFLinTS (Vernade et al. 2020): linear Thompson sampling on censored, delayed conversions.

    ``variant="paper"``: ``theta ~ N(theta_hat, beta V^-1)``, ``beta = 1 + bias/f``
    (Algorithm 2's stored norms by default); ``scale="conservative"``: covariance
    ``(f + bias)^2 V^-1`` (the paper's "more conservative choice", our reading).
    ``"reference_code"``: ``V' = sigma0^2 I + sum A A^T`` and ``theta ~ N(V'^-1 B, c_t V'^-1)`` with
    ``c_t = sigma0 + sum b'_s`` (the authors' code).

    Args:
        window: the censoring window ``m``, an integer ``>= 0``.
        lam: the ridge regularisation, ``> 0``.
        delta: the confidence level, in ``(0, 1)``.
        variant: ``"paper"`` or ``"reference_code"``.
        bias_mode: ``"exact"`` or ``"stored"``.
        scale: ``"paper"`` or ``"conservative"``.
        sigma0: the reference code's prior scale, ``> 0``.
        name: the display name (default ``"OTFLinTS"``).

    Returns:
        The policy, a frozen value (``OTFLinTS(...)``).

    Raises:
        ValueError: a parameter out of its range.

    Examples:
        >>> from jaxbandits.policies import linear
        >>> linear.otf_lints(window=50, variant="paper")
        OTFLinTS(window=50, variant='paper')
    """
    window = _check(window, lam, delta, variant, bias_mode)
    V.choice("scale", scale, ("paper", "conservative"))
    V.positive("sigma0", sigma0)
    ref = variant == "reference_code"

    def act(st: OTFState, ctx, key):
        x = ctx.features
        d = x.shape[-1]
        theta = st.vinv @ st.b
        if ref:
            cov_scale = st.c
        else:
            f = f_width(st.t + 1.0, d, lam, delta)
            bias_t = st.bias_exact if bias_mode == "exact" else st.bias_stored
            cov_scale = 1.0 + bias_t / f if scale == "paper" else (f + bias_t) ** 2
        chol = jnp.linalg.cholesky(st.vinv + 1e-7 * jnp.eye(d, dtype=_F))
        z = M.normals(key, d, offset=1)
        th = theta + jnp.sqrt(cov_scale) * (chol @ z)
        u = x @ th
        a = M.argmax_random_tie(u, M.uniform(key), ctx.mask)
        return a, OTFMemo(x[a])

    return Policy(_init(lam, window, sigma0 if ref else None), act,
                  _update(window, "ts_ref" if ref else "norm", sigma0 if ref else None,
                          need_exact=(not ref and bias_mode == "exact")), _payload,
                  _conv(window), name or "OTFLinTS", honours_mask=True)


# ----------------------------------------------------------------------------- baselines (not in the paper)
class WaitState(NamedTuple):
    vinv: Any  # f32[d, d] (lam I + sum over closed actions)^-1
    b: Any  # f32[d] conversions of closed actions
    ring: Any  # f32[m, d] last m actions
    leave: Any  # f32[d] the action that closes at the next update (zeros: none)
    t: Any


class HoldMemo(NamedTuple):
    x: Any
    hold: Any


@policy_value("LinUCBWait")
def linucb_wait(window: int, lam: float = 1.0, delta: float = 0.1, name: str = "LinUCB-wait") -> Policy:
    """LinUCB that waits for each action's window to close (a baseline, not from Vernade et al. 2020).

    V and B over closed actions only (age ``>= m``), unbiased for ``tau_m theta``, width ``2 f``, no
    bias term. Each conversion is delivered when its action closes (``hold = m``), so B needs no
    per-slot flags.

    Args:
        window: the censoring window ``m``, an integer ``>= 1``.
        lam: the ridge regularisation, ``> 0``.
        delta: the confidence level, in ``(0, 1)``.
        name: the display name.

    Returns:
        The policy, a frozen value (``LinUCBWait(...)``).

    Raises:
        ValueError: a parameter out of its range.

    Examples:
        >>> from jaxbandits.policies import linear
        >>> linear.linucb_wait(window=50).name
        'LinUCB-wait'
    """
    window = V.integer("window", window, lo=1, hi=V.MAX_HORIZON)
    V.positive("lam", lam)

    def init(spec: ProblemSpec, key):
        if spec.dim is None:
            raise ValueError(f"{name} needs a linear world (features)")
        d = spec.dim
        m = min(window, spec.horizon)
        return WaitState(jnp.eye(d, dtype=_F) / lam, jnp.zeros((d,), _F), jnp.zeros((m, d), _F),
                         jnp.zeros((d,), _F), jnp.zeros((), jnp.int32))

    def act(st: WaitState, ctx, key):
        x = ctx.features
        d = x.shape[-1]
        f = f_width(st.t + 1.0, d, lam, delta)
        qa = jnp.maximum(jnp.einsum("kd,de,ke->k", x, st.vinv, x), 0.0)
        u = x @ (st.vinv @ st.b) + 2.0 * f * jnp.sqrt(qa)
        a = M.argmax_random_tie(u, M.uniform(key), ctx.mask)
        return a, HoldMemo(x[a], jnp.asarray(window, jnp.int32))

    def update(st: WaitState, arr):
        old = st.leave  # the action of round t - m closes now (zeros before m rounds)
        q = old @ st.vinv @ old
        u = st.vinv @ old
        vinv = st.vinv - jnp.outer(u, u) / (1.0 + q)
        ring = R.put(st.ring, arr.t, arr.memo.x)
        return WaitState(0.5 * (vinv + vinv.T), st.b + arr.payload, ring, R.get(ring, arr.t + 1), st.t + 1)

    return Policy(init, act, update, _payload, _conv(window), name, max_hold=window, memo_hold=True,
                  honours_mask=True)


@policy_value("LinUCBIgnoreDelays")
def linucb_ignore_delays(lam: float = 1.0, delta: float = 0.1, name: str = "LinUCB-ignore-delays") -> Policy:
    """LinUCB that ignores delays (a baseline, not from Vernade et al. 2020).

    V over every played action, B over every conversion received so far (run it on the
    uncensored channel, ``conversions(window=None)``), OFUL width f, no bias term.

    Args:
        lam: the ridge regularisation, ``> 0``.
        delta: the confidence level, in ``(0, 1)``.
        name: the display name.

    Returns:
        The policy, a frozen value (``LinUCBIgnoreDelays(...)``).

    Raises:
        ValueError: a parameter out of its range.

    Examples:
        >>> from jaxbandits.policies import linear
        >>> linear.linucb_ignore_delays()
        LinUCBIgnoreDelays()
    """
    V.positive("lam", lam)
    V.real("delta", delta, lo=0.0, hi=1.0, lo_open=True, hi_open=True)

    def init(spec: ProblemSpec, key):
        if spec.dim is None:
            raise ValueError(f"{name} needs a linear world (features)")
        d = spec.dim
        z = jnp.zeros((), _F)
        return OTFState(jnp.eye(d, dtype=_F) / lam, z, jnp.zeros((d,), _F), jnp.zeros((1, d), _F), jnp.zeros((1,), _F),
                        z, z, z, jnp.zeros((), jnp.int32))

    def act(st: OTFState, ctx, key):
        x = ctx.features
        f = f_width(st.t + 1.0, x.shape[-1], lam, delta)
        qa = jnp.maximum(jnp.einsum("kd,de,ke->k", x, st.vinv, x), 0.0)
        u = x @ (st.vinv @ st.b) + f * jnp.sqrt(qa)
        a = M.argmax_random_tie(u, M.uniform(key), ctx.mask)
        return a, OTFMemo(x[a])

    return Policy(init, act, _update(0, "norm"), _payload, Needs(attributed=True, zeros_observed=False), name,
                  honours_mask=True)
