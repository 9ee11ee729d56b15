"""Thompson sampling with a Bayesian delay model, inside the scan (docs/bayes.md, *Thompson sampling
inside the scan*), and its cheap baselines.

``delay_model_ts`` keeps exact fixed-size sufficient statistics (conversions per arm, a histogram
of seen delays, closed plays per arm, and a ring of the last ``W = M + 1`` plays) and refreshes a
posterior sample every ``k`` rounds with a pure inference step built from the NumPyro model's own
potential (:func:`jaxbandits.bayes.conversion_model` on :class:`~jaxbandits.bayes.RingStats`):

* ``engine="hmc"`` (default): one Newton step tracks the posterior mode; the Hessian there (floored
  eigenvalues) is the dense mass matrix of one HMC transition (4 leapfrog steps of 0.6) of a chain
  carried in the state. The mass matrix depends only on the data and the previous mode, never on
  the chain's position (a z-dependent one froze an earlier prototype). Energies are recomputed for
  the new data at every refresh (no stale cache).
* ``engine="laplace"``: the same Newton-tracked mode; every round draws afresh from
  ``N(mode, H^-1)``.

It needs to know *which* play converted: it declares ``reveal_window = W`` and reads
``arrivals.rev_age`` (conventions §5.5) on the conversions channel.

Baselines (``beta_ts``): ``mode="naive"`` (pending plays counted as failures), ``"closed"`` (only
plays older than ``M`` and their conversions: unbiased for ``p F(M)``); the oracle is
``delay_model_ts(..., fixed_delay={...})``.
"""
from __future__ import annotations

from typing import Any, NamedTuple, Optional

import jax
import jax.numpy as jnp
from jax.flatten_util import ravel_pytree
from numpyro.infer.util import potential_energy

from ..core import validate as V
from ..core import mathlib as M
from ..delaymodels.families import family
from ..delaymodels.model import RingStats, conversion_model
from ..core.types import Needs, Policy, ProblemSpec, RatePosterior, one_hot
from ..core.values import policy_value

__all__ = ["delay_model_ts", "beta_ts", "DelayTSState", "BetaTSState", "ring_update", "refresh_step",
           "unconstrained_init"]

_F = jnp.float32
_CONV = Needs(attributed=True, zeros_observed=False, reveal_ages=True)  # which play converted


# ----------------------------------------------------------------------------- ring bookkeeping
def _reflect(x, t):
    """``y[j] = x[(t - j) mod W]`` along axis 0: maps a slot-indexed ring to age order and back (an involution).
    A dynamic slice of the reversed ring, twice: dense, unlike a W-element gather/scatter under
    ``vmap`` (the composite calendar measured ~100x slower with the scatter)."""
    W = x.shape[0]
    r = x[::-1]
    return jax.lax.dynamic_slice_in_dim(jnp.concatenate([r, r]), (W - 1 - t) % W, W, axis=0)


def ring_update(rs: RingStats, t, action, rev_age):
    """End of round ``t``: the window's statistics absorb this round.

    Evict the play of round ``t - W`` into the closed counts, insert this round's play, then absorb
    the reveals (delay-0 conversions of this play included).

    Args:
        rs: the :class:`~jaxbandits.delaymodels.model.RingStats` so far (window ``W``, ``K`` arms).
        t: the 0-based round.
        action: the arm played at ``t``.
        rev_age: i32[W], the conversions revealed at ``t``, by age of their play.

    Returns:
        The updated :class:`~jaxbandits.delaymodels.model.RingStats`.

    Examples:
        >>> import jax.numpy as jnp
        >>> from jaxbandits.delaymodels.model import RingStats
        >>> from jaxbandits.policies import bayes
        >>> rs = RingStats(n_conv=jnp.zeros(2), hist=jnp.zeros(3), n_closed=jnp.zeros(2),
        ...                ring_arm=jnp.zeros(3, jnp.int32), ring_pend=jnp.zeros(3), t=jnp.asarray(-1))
        >>> rs = bayes.ring_update(rs, 0, 1, jnp.array([1, 0, 0]))  # arm 1 converts at once
        >>> rs.n_conv.tolist(), rs.hist.tolist(), rs.ring_pend.tolist()
        ([0.0, 1.0], [1.0, 0.0, 0.0], [0.0, 0.0, 0.0])
    """
    W = rs.ring_arm.shape[0]
    K = rs.n_conv.shape[0]
    slot = t % W
    n_closed = rs.n_closed + one_hot(rs.ring_arm[slot], K) * rs.ring_pend[slot]
    ring_arm = rs.ring_arm.at[slot].set(action)
    ring_pend = rs.ring_pend.at[slot].set(1.0)
    rev = rev_age.astype(_F)  # by age a
    rev_slot = _reflect(rev, t)  # by slot
    arm_hot = (ring_arm[:, None] == jnp.arange(K)[None, :]).astype(_F)  # [W, K], by slot
    n_conv = rs.n_conv + rev_slot @ arm_hot
    if rs.hist.ndim == 2:  # per-arm: hist[k, a] += rev[a] 1{arm of the play of age a == k}
        hist = rs.hist + _reflect(arm_hot, t).T * rev[None, :]
    else:
        hist = rs.hist + rev
    ring_pend = ring_pend * (1.0 - rev_slot)
    return RingStats(n_conv, hist, n_closed, ring_arm, ring_pend, jnp.asarray(t, jnp.int32))


def _empty_stats(K, W, per_arm):
    hist = jnp.zeros((K, W) if per_arm else (W,), _F)
    return RingStats(jnp.zeros((K,), _F), hist, jnp.zeros((K,), _F), jnp.zeros((W,), jnp.int32),
                     jnp.zeros((W,), _F), jnp.asarray(-1, jnp.int32))


# ----------------------------------------------------------------------------- the engine
def unconstrained_init(fam, K, per_arm, prior_mean, fixed):
    """The prior medians in NumPyro's unconstrained space (logit p = 0, log of each scale).

    Args:
        fam: the delay family or its name.
        K: the number of arms.
        per_arm: one delay law per arm.
        prior_mean: the prior's delay mean.
        fixed: the known delay parameters (then no delay site), or ``None``.

    Returns:
        A dict of f32 arrays, one per site (``"p"`` and the family's parameters).

    Examples:
        >>> from jaxbandits.policies import bayes
        >>> z = bayes.unconstrained_init("exponential", 2, False, 10.0, None)
        >>> z["p"].tolist(), round(float(z["delay_mean"]), 4)
        ([0.0, 0.0], 2.3026)
    """
    fam = family(fam)
    shape = (K,) if per_arm else ()
    z = {"p": jnp.zeros((K,), _F)}
    if fixed is None:
        for name, loc in fam.unconstrained_locs(prior_mean).items():
            z[name] = jnp.full(shape, loc, _F)
    return z


@jax.custom_batching.custom_vmap
def _eigh(h):
    """``jnp.linalg.eigh(h)`` (eigenvalues, eigenvectors), the same bits; under ``vmap`` on CPU it
    decomposes one matrix at a time (``lax.map``), elsewhere one batched call.

    Why: jaxlib's CPU LAPACK kernels (0.10) split a large enough batch into chunks scheduled on the
    intra-op thread pool and block the calling pool thread until they are done. Runs sharded over
    host devices execute one program per device at once; when every pool thread sits in such a wait
    (two devices on two cores), no thread is left to run the chunks and the simulation hangs for
    ever. A call on one matrix runs on the calling thread, and LAPACK decomposes each matrix of a
    batch exactly as it does alone."""
    lam, vec = jnp.linalg.eigh(h)
    return lam, vec


@_eigh.def_vmap
def _eigh_vmap(axis_size, in_batched, h):
    del axis_size
    if not in_batched[0]:
        return _eigh(h), (False, False)
    out = jax.lax.platform_dependent(h, cpu=lambda x: jax.lax.map(_eigh, x),
                                     default=lambda x: tuple(jnp.linalg.eigh(x)))
    return out, (True, True)


class Engine(NamedTuple):
    """The sampler state of DelayModelTS.

    Attributes:
        z: f32[d], the chain state (unconstrained).
        mode: f32[d], the Newton-tracked posterior mode.
        lam: f32[d], the floored Hessian eigenvalues at the mode (mass matrix ``V diag(lam) V^T``).
        vec: f32[d, d], the Hessian's eigenvectors.
        accept: f32, the acceptances so far.
        n_refresh: i32, the refreshes so far.
    """
    z: Any  # f32[d] chain state (unconstrained)
    mode: Any  # f32[d] Newton-tracked posterior mode
    lam: Any  # f32[d] floored Hessian eigenvalues at the mode (mass matrix M = V diag(lam) V^T)
    vec: Any  # f32[d, d]
    accept: Any  # f32 acceptances so far
    n_refresh: Any  # i32


def numpyro_hmc_transition(potential, z, lam, vec, key, num_steps: int, step_size: float):
    """One HMC transition of ``z`` by NumPyro's functional kernels.

    ``numpyro.infer.hmc.hmc``, ``algo="HMC"``: ``num_steps`` leapfrog steps of ``step_size`` with
    the dense mass matrix ``M = V diag(lam) V^T`` (momentum ``V sqrt(lam) eps``, kinetic energy
    ``r^T M^-1 r / 2``), Metropolis accept, no adaptation (``num_warmup=0``). ``init_kernel``
    evaluates the potential and its gradient at ``z`` for the current data; its other outputs are
    replaced or unused (compiled away). A non-finite energy is rejected (NumPyro sets the energy
    error of a NaN to infinity).

    Args:
        potential: the negative log-posterior, a function of the unconstrained vector.
        z: f32[d], the chain state.
        lam: f32[d], the mass matrix's eigenvalues.
        vec: f32[d, d], its eigenvectors.
        key: a PRNG key.
        num_steps: leapfrog steps.
        step_size: the step size.

    Returns:
        ``(z', accepted)``: the new state and whether the proposal was accepted.
    """
    from numpyro.infer.hmc import hmc

    init_kernel, sample_kernel = hmc(potential_fn=potential, algo="HMC")
    minv = vec @ (vec.T / lam[:, None])
    st = init_kernel(z, 0, step_size=step_size, inverse_mass_matrix=minv, adapt_step_size=False,
                     adapt_mass_matrix=False, dense_mass=True, num_steps=num_steps, trajectory_length=None,
                     rng_key=key)
    st = st._replace(adapt_state=st.adapt_state._replace(mass_matrix_sqrt=vec * jnp.sqrt(lam)[None, :]))
    new = sample_kernel(st)
    return new.z, jnp.any(new.z != z)


def refresh_step(potential, eng: Engine, key, engine: str, num_steps: int = 4, step_size: float = 0.6,
                 floor: float = 1e-2, max_newton: float = 2.0, sampler: str = "builtin"):
    """One refresh of DelayModelTS's sampler on the current data.

    A damped Newton step on the mode (Hessian eigenvalues floored at ``floor``, the step scaled
    down to ``|step|_inf <= max_newton``; the Hessian there gives the mass matrix), then (``hmc``)
    one HMC transition of the chain (``sampler="numpyro"``: :func:`numpyro_hmc_transition`;
    ``"builtin"``: the same transition written out here). Non-finite results keep the old state.

    Args:
        potential: the negative log-posterior, a function of the unconstrained vector.
        eng: the :class:`Engine` so far.
        key: a PRNG key.
        engine: ``"hmc"`` or ``"laplace"`` (mode and mass matrix only).
        num_steps: HMC leapfrog steps.
        step_size: HMC step size.
        floor: the floor of the Hessian's eigenvalues.
        max_newton: the largest Newton step, in the sup norm.
        sampler: ``"builtin"`` or ``"numpyro"``.

    Returns:
        The new :class:`Engine`.

    Examples:
        >>> import jax, jax.numpy as jnp  # doctest: +SKIP
        >>> from jaxbandits.policies.bayes import Engine, refresh_step  # doctest: +SKIP
        >>> pot = lambda z: 0.5 * jnp.sum((z - 1.0) ** 2)  # doctest: +SKIP
        >>> eng = Engine(jnp.zeros(2), jnp.zeros(2), jnp.ones(2), jnp.eye(2), jnp.zeros(()),  # doctest: +SKIP
        ...              jnp.zeros((), jnp.int32))
        >>> new = refresh_step(pot, eng, jax.random.key(0), "laplace")  # doctest: +SKIP
        >>> new.mode.tolist(), int(new.n_refresh)  # doctest: +SKIP
        ([1.0, 1.0], 1)
    """
    g, Hm = jax.grad(potential)(eng.mode), jax.hessian(potential)(eng.mode)
    Hm = 0.5 * (Hm + Hm.T)
    lam, vec = _eigh(Hm)
    lam = jnp.maximum(lam, floor)
    step = -vec @ ((vec.T @ g) / lam)
    # |step|_inf <= max_newton by scaling the whole step: it stays along the Newton direction, a descent
    # direction of the potential (the floored Hessian is positive definite). Clamping each coordinate
    # apart can turn it uphill where a floored eigenvalue blows the step up, and the mode then cycles
    # between two points far from the posterior (docs/bayes.md). A step inside the box is unchanged.
    step = step * jnp.minimum(1.0, max_newton / jnp.max(jnp.abs(step)))
    mode = eng.mode + step
    ok = jnp.all(jnp.isfinite(mode)) & jnp.all(jnp.isfinite(lam)) & jnp.all(jnp.isfinite(vec))
    mode = jnp.where(ok, mode, eng.mode)
    lam = jnp.where(ok, lam, eng.lam)
    vec = jnp.where(ok, vec, eng.vec)
    if engine != "hmc":
        return Engine(eng.z, mode, lam, vec, eng.accept, eng.n_refresh + 1)
    if sampler == "numpyro":
        z, acc = numpyro_hmc_transition(potential, eng.z, lam, vec, key, num_steps, step_size)
        return Engine(z, mode, lam, vec, eng.accept + acc.astype(_F), eng.n_refresh + 1)
    k1, k2 = jax.random.split(key)
    d = eng.z.shape[0]
    r0 = vec @ (jnp.sqrt(lam) * jax.random.normal(k1, (d,), _F))
    kinetic = lambda r: 0.5 * jnp.sum((vec.T @ r) ** 2 / lam)
    minv = lambda r: vec @ ((vec.T @ r) / lam)
    u0, g0 = jax.value_and_grad(potential)(eng.z)  # energies for the new data (no stale cache)

    def leap(c, _):
        z, r, g = c
        r = r - 0.5 * step_size * g
        z = z + step_size * minv(r)
        g = jax.grad(potential)(z)
        r = r - 0.5 * step_size * g
        return (z, r, g), None

    (z1, r1, _), _ = jax.lax.scan(leap, (eng.z, r0, g0), None, length=num_steps)
    u1 = potential(z1)
    log_a = (u0 + kinetic(r0)) - (u1 + kinetic(r1))
    acc = jnp.isfinite(log_a) & jnp.all(jnp.isfinite(z1)) & (jnp.log(M.uniform(k2)) < log_a)
    z = jnp.where(acc, z1, eng.z)
    return Engine(z, mode, lam, vec, eng.accept + acc.astype(_F), eng.n_refresh + 1)


# ----------------------------------------------------------------------------- DelayModelTS
class DelayTSState(NamedTuple):
    """The state of DelayModelTS.

    Attributes:
        stats: the :class:`~jaxbandits.delaymodels.model.RingStats` of the data so far.
        eng: the sampler's :class:`Engine` (chain, tracked mode, mass matrix).
        key: the refresh randomness (conventions §5.2: a key kept in the state).
    """
    stats: RingStats
    eng: Engine
    key: Any  # refresh randomness (conventions §5.2: a key kept in the state)


class TSMemo(NamedTuple):
    arm: Any


@policy_value("DelayModelTS")
def delay_model_ts(window: int = 255, model: str = "exponential", engine: str = "hmc", refresh: int = 1,
                   per_arm_delay: bool = False, priors: Optional[dict] = None, prior_mean: Optional[float] = None,
                   fixed_delay: Optional[dict] = None, num_steps: int = 4, step_size: float = 0.6,
                   name: Optional[str] = None, warm_start=None, sampler: str = "numpyro") -> Policy:
    """Thompson sampling on the joint (rate, delay) posterior, refreshed every ``refresh`` rounds.

    ``window`` is the model's ``M`` (``<=`` the channel's ``m``; with an uncensored channel it is a
    declared truncation that ignores conversions later than ``M``). ``fixed_delay`` (e.g.
    ``{"delay_mean": 50.0}``) makes the oracle that knows the delay law. Acts on
    ``argmax p`` (shared law) or ``argmax p_k F_k(M)`` (per-arm laws), ties broken at random.

    ``warm_start`` (:func:`jaxbandits.bayes.policy_prior` of a past fit): its priors replace the
    defaults (``priors`` still override entries), and the chain and the tracked mode start at its
    ``z0`` with the eigen-decomposition of the prior's Hessian there as the mass matrix (what a
    refresh with no data computes), instead of the prior median and the identity.

    Args:
        window: the model's window ``M``, an integer ``>= 1`` (at most the channel's window).
        model: the delay family (``"exponential"``, ``"geometric"``, ...; docs/bayes.md lists the
            online ones).
        engine: ``"hmc"`` (a chain moved by one HMC transition per refresh) or ``"laplace"`` (a
            fresh draw from the Laplace approximation every round).
        refresh: the rounds between refreshes, an integer ``>= 1``.
        per_arm_delay: one delay law per arm instead of a shared one.
        priors: overrides of the priors' entries (per-arm lists of length ``K`` allowed).
        prior_mean: the prior's delay mean, ``> 0``.
        fixed_delay: the delay law's parameters, known (the oracle), or ``None``.
        num_steps: HMC leapfrog steps, ``>= 1``.
        step_size: HMC step size, ``> 0``.
        name: the display name (default ``"DelayModel TS (engine, k=refresh)"``).
        warm_start: a :func:`jaxbandits.bayes.policy_prior` result, or ``None``.
        sampler: ``"numpyro"`` or ``"builtin"``, the HMC transition's implementation.

    Returns:
        The policy, a frozen value (``DelayModelTS(...)``); it needs the conversions channel with
        reveal ages.

    Raises:
        TypeError: ``warm_start`` is not a :func:`~jaxbandits.bayes.policy_prior` result.
        ValueError: a parameter out of its range, a family that is offline only, or a
            ``warm_start`` that does not match the model.

    Examples:
        >>> from jaxbandits.policies import bayes
        >>> bayes.delay_model_ts(window=100, engine="laplace").name
        'DelayModel TS (laplace, k=1)'
    """
    M_ = V.integer("window", window, lo=1, hi=V.MAX_HORIZON)
    if warm_start is not None:
        from ..delaymodels.warm import WarmStart

        if not isinstance(warm_start, WarmStart):
            raise TypeError(f"warm_start must be a jaxbandits.bayes.policy_prior(...) result, got {type(warm_start).__name__}")
        if family(model).name != warm_start.model:
            raise ValueError(f"warm_start was fitted with the {warm_start.model} model, the policy has model={model!r}")
        if bool(per_arm_delay) != warm_start.per_arm_delay:
            raise ValueError(f"warm_start has per_arm_delay={warm_start.per_arm_delay} (as fitted); the policy has "
                             f"per_arm_delay={per_arm_delay}")
        if fixed_delay is not None:
            raise ValueError("warm_start and fixed_delay exclude each other (the oracle knows the delay law)")
        priors = {**warm_start.priors, **(priors or {})}
    fam = family(model)
    if not fam.in_scan:
        raise ValueError(f"delay_model_ts: the {fam.name} family is offline only here (use exponential, geometric, "
                         "weibull or lognormal)")
    V.choice("engine", engine, ("hmc", "laplace"))
    V.choice("sampler", sampler, ("builtin", "numpyro"))
    k_ref = V.integer("refresh", refresh, lo=1)
    V.integer("num_steps", num_steps, lo=1)
    V.positive("step_size", step_size)
    if fixed_delay is not None:
        missing = set(fam.params) - set(fixed_delay)
        if missing:
            raise ValueError(f"fixed_delay must give {sorted(fam.params)} for the {fam.name} model, missing {sorted(missing)}")
    W = M_ + 1
    pm = float(prior_mean) if prior_mean is not None else max(M_ / 4.0, 1.0)
    V.positive("prior_mean", pm)
    kw = dict(fam=fam, discrete=True, per_arm_delay=per_arm_delay, priors=priors, prior_mean=pm,
              fixed_delay=fixed_delay)
    if priors is not None:
        from ..delaymodels.model import resolve_priors

        resolve_priors(fam, priors, pm)  # unknown keys and bad values named now, before anything compiles

    def _unravel(K):
        z0 = unconstrained_init(fam, K, per_arm_delay, pm, fixed_delay)
        return ravel_pytree(z0)

    def _potential(rs, K):
        _, unravel = _unravel(K)
        return lambda z: potential_energy(conversion_model, (rs,), {"n_arms": K, **kw}, unravel(z))

    def _score(z, K):
        """``p`` (shared law) or ``p F(M)`` per arm (per-arm laws) from an unconstrained draw."""
        _, unravel = _unravel(K)
        u = unravel(z)
        p = jax.nn.sigmoid(u["p"])
        if not per_arm_delay or fixed_delay is not None:
            return p
        th = {n: jnp.exp(u[n]) for n in fam.params}
        return p * (1.0 - jnp.exp(fam.log_surv(jnp.asarray(float(M_)), th)))

    def init(spec: ProblemSpec, key):
        if spec.window is not None and spec.window < M_:
            raise ValueError(f"delay_model_ts: window M={M_} must be <= the channel's window m={spec.window}")
        K = spec.n_arms
        if warm_start is not None:
            return _warm_init(K, key)
        z0, _ = _unravel(K)
        d = z0.shape[0]
        eng = Engine(z0, z0, jnp.ones((d,), _F), jnp.eye(d, dtype=_F), jnp.zeros((), _F), jnp.zeros((), jnp.int32))
        return DelayTSState(_empty_stats(K, W, per_arm_delay), eng, key)

    def _warm_init(K, key):
        if K != warm_start.n_arms:
            raise ValueError(f"delay_model_ts: warm_start has {warm_start.n_arms} arms, the problem has {K}")
        for k, v in priors.items():
            if hasattr(v, "__len__") and len(v) != K:
                raise ValueError(f"delay_model_ts: prior {k!r} has {len(v)} entries, the problem has {K} arms")
        z0, _ = ravel_pytree({k: jnp.asarray(v, _F) for k, v in warm_start.z0.items()})
        empty = _empty_stats(K, W, per_arm_delay)

        @jax.jit  # one program, also when init runs outside a trace
        def mass(z):
            H = jax.hessian(_potential(empty, K))(z)
            lam, vec = _eigh(0.5 * (H + H.T))
            return jnp.maximum(lam, 1e-2), vec

        lam, vec = mass(z0)
        eng = Engine(z0, z0, lam, vec, jnp.zeros((), _F), jnp.zeros((), jnp.int32))
        return DelayTSState(empty, eng, key)

    def act(st: DelayTSState, ctx, key):
        K = st.stats.n_conv.shape[0]
        if engine == "hmc":
            z = st.eng.z
        else:  # Laplace: a fresh N(mode, H^-1) draw every round
            eps = jax.random.normal(key, st.eng.mode.shape, _F)
            z = st.eng.mode + st.eng.vec @ (eps / jnp.sqrt(st.eng.lam))
        s = _score(z, K)
        a = M.argmax_random_tie(s, M.uniform(jax.random.fold_in(key, 1)), ctx.mask)
        return a, TSMemo(a)

    def payload(memo, reward, delay):
        return jnp.ones((1,), _F)  # unused: the ring reads rev_age (conventions §5.5)

    def update(st: DelayTSState, arr):
        K = st.stats.n_conv.shape[0]
        rs = ring_update(st.stats, arr.t, arr.action, arr.rev_age)
        pot = _potential(rs, K)

        def do(eng):
            return refresh_step(pot, eng, jax.random.fold_in(st.key, arr.t), engine, num_steps, step_size,
                                sampler=sampler)

        eng = jax.lax.cond(arr.t % k_ref == k_ref - 1, do, lambda e: e, st.eng)
        return DelayTSState(rs, eng, st.key)

    label = name or ("Oracle TS" if fixed_delay is not None else f"DelayModel TS ({engine}, k={k_ref}"
                     + (", warm)" if warm_start is not None else ")"))
    def estimate(st: DelayTSState):  # p (or p F(M), per-arm laws) at the Newton-tracked posterior mode
        return _score(st.eng.mode, st.stats.n_conv.shape[0])

    def posterior(st: DelayTSState) -> RatePosterior:
        """The Laplace approximation the engine tracks: ``p`` at the Newton-tracked mode, and a
        95% interval from the (floored) Hessian of the last refresh, ``sigmoid(logit p +- 1.96 sd)``;
        the delay law of the mode's delay parameters (``fixed_delay`` for the oracle)."""
        K = st.stats.n_conv.shape[0]
        _, unravel = _unravel(K)
        mode = st.eng.mode
        ip = unravel(jnp.arange(mode.shape[0], dtype=_F))["p"].astype(jnp.int32)  # where logit p_k sits in z
        var = (st.eng.vec[ip] ** 2) @ (1.0 / st.eng.lam)  # diagonal of V diag(1/lam) V^T at the p entries
        u = unravel(mode)
        half = 1.96 * jnp.sqrt(var)
        if fixed_delay is not None:
            th = {n: jnp.asarray(fixed_delay[n], _F) for n in fam.params}
        else:
            th = {n: jnp.exp(u[n]) for n in fam.params}
        ages = jnp.arange(W, dtype=_F)
        if per_arm_delay and fixed_delay is None:
            pmf = jnp.exp(fam.log_pmf(ages[None, :], {n: v[:, None] for n, v in th.items()}))
        else:
            pmf = jnp.broadcast_to(jnp.exp(fam.log_pmf(ages, th)), (K, W))
        hist = st.stats.hist if st.stats.hist.ndim == 1 else st.stats.hist.sum(0)
        return RatePosterior(jax.nn.sigmoid(u["p"]), jax.nn.sigmoid(u["p"] - half), jax.nn.sigmoid(u["p"] + half),
                             pmf, hist)

    return Policy(init, act, update, payload, _CONV, label, reveal_window=W, estimate=estimate, posterior=posterior,
                  honours_mask=True)


# ----------------------------------------------------------------------------- Beta TS baselines
class BetaTSState(NamedTuple):
    """The state of Beta TS.

    Attributes:
        plays: f32[K], plays per arm.
        conv: f32[K], every conversion seen (any delay).
        closed_n: f32[K], plays older than ``M``.
        closed_s: f32[K], their conversions seen within ``M``.
        ring_arm: i32[W], the arm of each play in the window.
        ring_conv: f32[W], 1 once the play in the slot converted (within ``M``).
        ring_used: f32[W], 1 once the slot holds a play.
    """
    plays: Any  # f32[K]
    conv: Any  # f32[K] every conversion seen (any delay)
    closed_n: Any  # f32[K] plays older than M
    closed_s: Any  # f32[K] their conversions seen within M
    ring_arm: Any  # i32[W]
    ring_conv: Any  # f32[W] 1 once the play in the slot converted (within M)
    ring_used: Any  # f32[W] 1 once the slot holds a play


class BetaMemo(NamedTuple):
    arm: Any
    onehot: Any


@policy_value("BetaTS")
def beta_ts(mode: str = "naive", window: int = 255, name: Optional[str] = None) -> Policy:
    """Beta-Bernoulli Thompson sampling that ignores the delay law (docs/bayes.md).

    ``"naive"``: ``Beta(1 + S_k, 1 + N_k - S_k)`` with every seen conversion and every play (pending
    plays count as failures); ``"closed"``: only plays older than ``window`` and their conversions
    (unbiased for ``p F(M)``, the Discarding idea).

    Args:
        mode: ``"naive"`` or ``"closed"``.
        window: the window ``M``, an integer ``>= 1``.
        name: the display name (default ``"Beta TS (mode)"``).

    Returns:
        The policy, a frozen value (``BetaTS(...)``).

    Raises:
        ValueError: an unknown ``mode`` or ``window`` out of range.

    Examples:
        >>> from jaxbandits.policies import bayes
        >>> bayes.beta_ts("closed", window=100).name
        'Beta TS (closed)'
    """
    V.choice("mode", mode, ("naive", "closed"))
    M_ = V.integer("window", window, lo=1, hi=V.MAX_HORIZON)
    W = M_ + 1

    def init(spec: ProblemSpec, key):
        K = spec.n_arms
        z = jnp.zeros((K,), _F)
        return BetaTSState(z, z, z, z, jnp.zeros((W,), jnp.int32), jnp.zeros((W,), _F), jnp.zeros((W,), _F))

    def act(st, ctx, key):
        if mode == "naive":
            a, b = 1.0 + st.conv, 1.0 + jnp.maximum(st.plays - st.conv, 0.0)
        else:
            a, b = 1.0 + st.closed_s, 1.0 + jnp.maximum(st.closed_n - st.closed_s, 0.0)
        theta = M.beta_sample(key, a, b)
        arm = M.argmax_random_tie(theta, M.uniform(jax.random.fold_in(key, 7)), ctx.mask)
        return arm, BetaMemo(arm, one_hot(arm, a.shape[0]))

    def payload(memo, reward, delay):
        return memo.onehot  # every conversion the channel delivers, by arm

    def update(st: BetaTSState, arr):
        K = st.plays.shape[0]
        slot = arr.t % W
        e_old = one_hot(st.ring_arm[slot], K) * st.ring_used[slot]
        closed_n = st.closed_n + e_old
        closed_s = st.closed_s + e_old * st.ring_conv[slot]
        ring_arm = st.ring_arm.at[slot].set(arr.action)
        ring_used = st.ring_used.at[slot].set(1.0)
        ring_conv = st.ring_conv.at[slot].set(0.0) + _reflect(arr.rev_age.astype(_F), arr.t)
        conv = st.conv + arr.payload
        return BetaTSState(st.plays + one_hot(arr.action, K), conv, closed_n, closed_s, ring_arm, ring_conv, ring_used)

    return Policy(init, act, update, payload, _CONV, name or f"Beta TS ({mode})", reveal_window=W, honours_mask=True)
