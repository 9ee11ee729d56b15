"""Classic baselines: uniform random, UCB1, KL-UCB, Beta-Bernoulli and Gaussian Thompson, Exp3,
LinUCB and LinTS.

Under delays they use whatever has arrived. On the censored-conversions channel zeros never
arrive, so the stochastic index policies count each play when it is made (they see their own
actions) and each conversion when it arrives: pending plays then act as failures, the naive
estimator that Vernade et al. (2017) correct. On the other channels they count arrivals.
"""
from __future__ import annotations

import math
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
from jax.scipy.linalg import cho_solve, solve_triangular

from ..core import validate as V
from ..core import mathlib as M
from ..core.types import Needs, Policy, ProblemSpec, one_hot
from ..core.values import policy_value

__all__ = ["uniform_random", "ucb1", "kl_ucb", "thompson", "gaussian_thompson", "exp3", "linucb",
           "lints", "IndexState", "LinState", "ucb1_index", "kl_ucb_index", "beta_posterior",
           "gaussian_posterior", "gaussian_index"]

_F = jnp.float32
#: attributed feedback (zeros observed or not: with zeros hidden, plays are counted at play time)
_STOCHASTIC = Needs(attributed=True)
#: every outcome, attributed: importance-weighted estimators need the zeros too
_FULL = Needs(attributed=True, zeros_observed=True)


# ----------------------------------------------------------------------------- uniform random
class RandomMemo(NamedTuple):
    probs: Any  # f32[K]: the law A_t was drawn from (read by the expected-regret metric)


@policy_value("UniformRandom", fused=("random", ()))
def uniform_random() -> Policy:
    """Uniformly random among the available actions; ignores all feedback.

    The baseline every other policy must beat (its regret grows linearly in the horizon). It
    reports its play-time law, so the expected-regret metric is exact for it.

    Returns:
        The policy, a frozen value (``UniformRandom()``).

    Examples:
        >>> from jaxbandits.policies import classic
        >>> classic.uniform_random()
        UniformRandom()
        >>> classic.uniform_random().needs.attributed is None  # any channel will do
        True
    """

    def init(spec: ProblemSpec, key):
        return jnp.zeros((spec.n_arms,), _F)  # only carries K

    def act(state, ctx, key):
        k = state.shape[0]
        mask = jnp.ones((k,), bool) if ctx.mask is None else ctx.mask
        p = mask.astype(_F) / jnp.sum(mask)
        return M.sample_from_probs(p, M.uniform(key)), RandomMemo(p)

    return Policy(init, act, lambda s, arr: s, lambda memo, r, d: jnp.zeros((1,), _F), Needs(),
                  "random", memo_probs=True, honours_mask=True)


# ----------------------------------------------------------------------------- index policies
class IndexState(NamedTuple):
    """Per-arm statistics of the stochastic index policies. The denominator of an arm's mean is
    its plays when the channel hides zero outcomes (conversions: a play without an arrival may be
    a zero), its arrivals otherwise; ``n_played`` is kept only in the first case (None otherwise,
    fixed by the channel's feedback properties when the policy starts). Arrivals and reward sums
    are one vector, the running sum of the payloads ``[e_A, e_A r]``, so an update is one add.

    Attributes:
        n_played: f32[K], plays made (known at once: the action is echoed); None if zeros are
            observed.
        arrived: f32[2K], [:K] records arrived per arm, [K:] the sum of their rewards.
    """

    n_played: Any  # f32[K] plays made (known at once: the action is echoed); None if zeros are observed
    arrived: Any  # f32[2K]: [:K] records arrived per arm, [K:] the sum of their rewards

    @property
    def n_arrived(self):
        """f32[..., K] records arrived per arm."""
        return self.arrived[..., : self.arrived.shape[-1] // 2]

    @property
    def sums(self):
        """f32[..., K] sum of the arrived rewards per arm."""
        return self.arrived[..., self.arrived.shape[-1] // 2:]


class IndexMemo(NamedTuple):
    onehot: Any  # f32[K], e_A


def _index_init(spec: ProblemSpec, key):
    K = spec.n_arms
    n_played = None if spec.feedback.zeros_observed else jnp.zeros((K,), _F)
    return IndexState(n_played, jnp.zeros((2 * K,), _F))


def _index_payload(memo, reward, delay):
    return jnp.concatenate([memo.onehot, memo.onehot * reward])  # [e_A, e_A r], P = 2K


def _index_update(state: IndexState, arr):
    n_played = state.n_played
    if n_played is not None:
        n_played = n_played + one_hot(arr.action, n_played.shape[0])
    return IndexState(n_played, state.arrived + arr.payload)


def counts(state: IndexState):
    """The denominator of the empirical mean: plays under censoring, arrivals otherwise."""
    return state.n_played if state.n_played is not None else state.n_arrived


def index_estimate(state: IndexState):
    """Each arm's empirical mean, sums / counts (NaN before its first count)."""
    n = counts(state)
    return jnp.where(n > 0, state.sums / jnp.maximum(n, 1.0), jnp.nan)


def _index_policy(name, index_fn) -> Policy:
    """Argmax of ``index_fn(state, t, key)``, ties broken at random by the key's first word (an
    index that draws from the key uses ``M.words``' counters, disjoint from that word)."""

    def act(state, ctx, key):
        idx = index_fn(state, ctx.t, key)
        a = M.argmax_random_tie(idx, M.uniform(key), ctx.mask)
        return a, IndexMemo(one_hot(a, idx.shape[0]))

    return Policy(_index_init, act, _index_update, _index_payload, _STOCHASTIC, name, estimate=index_estimate,
                  honours_mask=True)


def ucb1_index(sums, n, t, alpha: float = 2.0):
    """The UCB1 index ``sums / n + sqrt(alpha log(t) / n)`` of each arm.

    Args:
        sums: f32[K], each arm's sum of rewards.
        n: f32[K], each arm's count.
        t: the 1-based round (or whatever count the log runs on).
        alpha: the exploration constant.

    Returns:
        f32[K], the indices (``inf`` where ``n = 0``).

    Examples:
        >>> import numpy as np, jax.numpy as jnp
        >>> from jaxbandits.policies import classic
        >>> idx = classic.ucb1_index(jnp.array([3.0, 0.0]), jnp.array([4.0, 0.0]), 10)
        >>> print(np.asarray(idx, float).round(3))
        [1.823   inf]
    """
    mean = sums / jnp.maximum(n, 1.0)
    return mean + M.ucb1_width(n, t, alpha)


def kl_ucb_index(sums, n, t, c: float = 0.0, iters: int = 4):
    """The Bernoulli KL-UCB index of each arm.

    The largest ``q`` with ``n kl(sums / n, q) <= log(t) + c log log(t)``.

    Args:
        sums: f32[K], each arm's sum of rewards in ``[0, 1]``.
        n: f32[K], each arm's count.
        t: the 1-based round.
        c: the ``log log`` coefficient.
        iters: Newton steps (:func:`jaxbandits.core.mathlib.kl_ucb_bernoulli`).

    Returns:
        f32[K], the indices in ``[mean, 1]`` (``inf`` where ``n = 0``).

    Examples:
        >>> import numpy as np, jax.numpy as jnp
        >>> from jaxbandits.policies import classic
        >>> idx = classic.kl_ucb_index(jnp.array([5.0, 0.0]), jnp.array([10.0, 0.0]), 100)
        >>> print(np.asarray(idx, float).round(2))
        [0.89  inf]
    """
    mean = jnp.clip(sums / jnp.maximum(n, 1.0), 0.0, 1.0)
    bound = jnp.where(n > 0, M.kl_ucb_exploration(t, c) / jnp.maximum(n, 1.0), jnp.inf)
    return jnp.where(n > 0, M.kl_ucb_bernoulli(mean, bound, iters), jnp.inf)


def beta_posterior(sums, n, prior_a: float = 1.0, prior_b: float = 1.0):
    """The Beta-Bernoulli posterior ``Beta(prior_a + sums, prior_b + (n - sums)^+)`` of each arm.

    Args:
        sums: f32[K], each arm's number of successes.
        n: f32[K], each arm's count.
        prior_a: the prior's first parameter.
        prior_b: the prior's second parameter.

    Returns:
        ``(a, b)``, each f32[K]: the posterior's two parameters.

    Examples:
        >>> import jax.numpy as jnp
        >>> from jaxbandits.policies import classic
        >>> a, b = classic.beta_posterior(jnp.array([3.0]), jnp.array([5.0]))
        >>> a.tolist(), b.tolist()
        ([4.0], [3.0])
    """
    return prior_a + sums, prior_b + jnp.maximum(n - sums, 0.0)


def gaussian_posterior(sums, n, sigma: float = 1.0, prior_mean: float = 0.0, prior_var: float = 1e4):
    """The Gaussian posterior of each arm's mean under known noise and a Gaussian prior.

    Args:
        sums: f32[K], each arm's sum of rewards.
        n: f32[K], each arm's count.
        sigma: the known noise standard deviation.
        prior_mean: the prior mean.
        prior_var: the prior variance.

    Returns:
        ``(mean, precision)``, each f32[K].

    Examples:
        >>> import jax.numpy as jnp
        >>> from jaxbandits.policies import classic
        >>> mean, prec = classic.gaussian_posterior(jnp.array([2.0]), jnp.array([4.0]), prior_var=1.0)
        >>> mean.tolist(), prec.tolist()
        ([0.4000000059604645], [5.0])
    """
    prec = 1.0 / prior_var + n / sigma**2
    return (prior_mean / prior_var + sums / sigma**2) / prec, prec


def gaussian_index(mean, prec, z):
    """Gaussian Thompson's draw of an arm's mean: ``mean + z / sqrt(prec)``.

    Args:
        mean: f32[K], the posterior means.
        prec: f32[K], the posterior precisions.
        z: f32[K], standard normal draws.

    Returns:
        f32[K], the sampled means.

    Examples:
        >>> import jax.numpy as jnp
        >>> from jaxbandits.policies import classic
        >>> classic.gaussian_index(jnp.array([0.5]), jnp.array([4.0]), jnp.array([1.0])).tolist()
        [1.0]
    """
    return mean + z / jnp.sqrt(prec)


@policy_value("UCB1", fused=("ucb1", ("alpha",)))
def ucb1(alpha: float = 2.0) -> Policy:
    """UCB1 (Auer et al. 2002): ``mean + sqrt(alpha log(t+1) / n)``; alpha = 2 is the paper's.

    Args:
        alpha: the exploration constant, ``> 0`` (2 is the paper's).

    Returns:
        The policy, a frozen value (``UCB1(alpha=...)``) equal to any other UCB1 of the same
        ``alpha``, so it reuses the same compiled program.

    Raises:
        ValueError: ``alpha`` is not a positive number.

    Examples:
        >>> from jaxbandits.policies import classic
        >>> classic.ucb1(alpha=0.5)
        UCB1(alpha=0.5)
        >>> classic.ucb1() == classic.ucb1(alpha=2.0)
        True
    """
    V.positive("alpha", alpha)

    def index(state, t, key):
        return ucb1_index(state.sums, counts(state), t + 1, alpha)

    return _index_policy("UCB1", index)


@policy_value("KLUCB", fused=("kl_ucb", ("c", "iters")))
def kl_ucb(c: float = 0.0, iters: int = 4) -> Policy:
    """KL-UCB (Garivier and Cappe 2011) for Bernoulli rewards.

    The index is the largest ``q`` with ``n kl(mean, q) <= log(t+1) + c log log(t+1)``, by ``iters``
    monotone Newton steps (:func:`jaxbandits.core.mathlib.kl_ucb_bernoulli`).

    Args:
        c: the ``log log`` coefficient of the exploration term, ``>= 0`` (0 is the variant
            the paper's experiments use).
        iters: Newton steps of the index, an integer in ``[1, 64]``.

    Returns:
        The policy, a frozen value (``KLUCB(c=..., iters=...)``).

    Raises:
        ValueError: ``c`` is negative or ``iters`` out of range.

    Examples:
        >>> from jaxbandits.policies import classic
        >>> classic.kl_ucb(c=3.0)
        KLUCB(c=3.0)
    """
    V.nonneg("c", c)
    iters = V.integer("iters", iters, lo=1, hi=64)

    def index(state, t, key):
        return kl_ucb_index(state.sums, counts(state), t + 1, c, iters)

    return _index_policy("KL-UCB", index)


@policy_value("Thompson", fused=("thompson", ("prior_a", "prior_b", "sampler")))
def thompson(prior_a: float = 1.0, prior_b: float = 1.0, sampler: str = "mt") -> Policy:
    """Beta-Bernoulli Thompson sampling, prior ``Beta(prior_a, prior_b)``.

    ``sampler="mt"`` (default) draws Beta exactly from two Marsaglia-Tsang gammas
    (:func:`jaxbandits.core.mathlib.beta_sample`, needs both parameters >= 1); ``"jax"`` uses
    ``jax.random.beta`` (several times slower on CPU: benchmarks/beta_sampler.py).

    Args:
        prior_a: the prior's first parameter: ``>= 1`` with ``sampler="mt"``, ``> 0`` with ``"jax"``.
        prior_b: the prior's second parameter, same range.
        sampler: ``"mt"`` or ``"jax"``, the Beta sampler.

    Returns:
        The policy, a frozen value (``Thompson(...)``).

    Raises:
        ValueError: a prior parameter out of range, or an unknown ``sampler``.

    Examples:
        >>> from jaxbandits.policies import classic
        >>> classic.thompson(prior_a=2.0)
        Thompson(prior_a=2.0)
    """
    V.choice("sampler", sampler, ("mt", "jax"))
    lo = 1.0 if sampler == "mt" else 0.0
    V.real("prior_a", prior_a, lo=lo, lo_open=(sampler == "jax"))
    V.real("prior_b", prior_b, lo=lo, lo_open=(sampler == "jax"))

    def index(state, t, key):
        a, b = beta_posterior(state.sums, counts(state), prior_a, prior_b)
        if sampler == "mt":
            return M.beta_sample(key, a, b)
        return jax.random.beta(key, a, b)

    return _index_policy("Thompson", index)


@policy_value("GaussianThompson", fused=("gaussian_ts", ("sigma", "prior_mean", "prior_var")))
def gaussian_thompson(sigma: float = 1.0, prior_mean: float = 0.0, prior_var: float = 1e4) -> Policy:
    """Gaussian Thompson sampling with known noise ``sigma`` and prior ``N(prior_mean, prior_var)``.

    The ranges keep ``sigma^2`` and the precisions normal float32 numbers.

    Args:
        sigma: the reward noise's standard deviation, in ``[1e-15, 1e15]``.
        prior_mean: the prior mean of every arm, ``|prior_mean| <= 1e30``.
        prior_var: the prior variance, in ``[1e-30, 1e30]``.

    Returns:
        The policy, a frozen value (``GaussianThompson(...)``).

    Raises:
        ValueError: a parameter out of its range.

    Examples:
        >>> from jaxbandits.policies import classic
        >>> classic.gaussian_thompson(sigma=0.5)
        GaussianThompson(sigma=0.5)
    """
    V.real("sigma", sigma, lo=1e-15, hi=1e15)
    V.real("prior_mean", prior_mean, lo=-1e30, hi=1e30)
    V.real("prior_var", prior_var, lo=1e-30, hi=1e30)

    def index(state, t, key):
        mean, prec = gaussian_posterior(state.sums, counts(state), sigma, prior_mean, prior_var)
        return gaussian_index(mean, prec, M.normals(key, mean.shape[0]))

    return _index_policy("Gaussian-TS", index)


# ----------------------------------------------------------------------------- Exp3
class Exp3State(NamedTuple):
    cum_loss: Any  # f32[K] sum of arrived importance-weighted losses
    eta: Any  # f32 learning rate


class Exp3Memo(NamedTuple):
    onehot: Any  # e_A
    p_a: Any  # probability of the played arm at play time
    probs: Any  # f32[K] law of A_t


@policy_value("Exp3")
def exp3(eta: float | None = None, gamma: float = 0.0) -> Policy:
    """Exp3 on losses ``1 - r`` with importance weighting by the play-time probability.

    ``p ~ exp(-eta L_hat)``, mixed with ``gamma`` uniform exploration. It needs every outcome,
    attributed (zeros included).

    Args:
        eta: the learning rate, ``> 0``; ``None`` (default) takes ``sqrt(2 ln K / (K T))``, the
            known-horizon tuning, from the problem when the run starts.
        gamma: the uniform exploration mixed in, in ``[0, 1]``.

    Returns:
        The policy, a frozen value (``Exp3(...)``).

    Raises:
        ValueError: ``eta`` not positive or ``gamma`` outside ``[0, 1]``.

    Examples:
        >>> from jaxbandits.policies import classic
        >>> classic.exp3(eta=0.1)
        Exp3(eta=0.1)
        >>> classic.exp3().needs.zeros_observed
        True
    """
    if eta is not None:
        V.positive("eta", eta)
    V.real("gamma", gamma, lo=0.0, hi=1.0)

    def init(spec: ProblemSpec, key):
        K, T = spec.n_arms, spec.horizon
        e = math.sqrt(2 * math.log(K) / (K * T)) if eta is None else eta
        return Exp3State(jnp.zeros((K,), _F), jnp.asarray(e, _F))

    def act(state, ctx, key):
        p = M.exp_weights_probs(state.cum_loss, state.eta, gamma)
        if ctx.mask is not None:  # the law restricted to the allowed arms (uniform over them if it
            p = jnp.where(ctx.mask, p, 0.0)  # gives them no mass: weights underflowed to 0)
            s = jnp.sum(p)
            ok = jnp.asarray(ctx.mask, _F)
            p = jnp.where(s > 0, p / jnp.where(s > 0, s, 1.0), ok / jnp.maximum(jnp.sum(ok), 1.0))
        a = M.sample_from_probs(p, M.uniform(key))
        return a, Exp3Memo(one_hot(a, p.shape[0]), p[a], p)

    def payload(memo, reward, delay):
        return memo.onehot * (1.0 - reward) / memo.p_a

    def update(state, arr):
        return state._replace(cum_loss=state.cum_loss + arr.payload)

    return Policy(init, act, update, payload, _FULL, "Exp3", memo_probs=True, honours_mask=True)


# ----------------------------------------------------------------------------- linear
class LinState(NamedTuple):
    """The state of LinUCB and LinTS.

    Attributes:
        v_played: f32[d, d], ``lam I`` plus the sum over plays of ``x x^T``.
        v_arrived: f32[d, d], ``lam I`` plus the sum over arrivals of ``x x^T``.
        b: f32[d], the sum over arrivals of ``r x``.
        count_plays: bool, True on the conversions channel (the design matrix grows at play time).
        t_info: f32, the number of rows in the design matrix used (plays or arrivals).
    """
    v_played: Any  # f32[d, d] lam I + sum over plays of x x^T
    v_arrived: Any  # f32[d, d] lam I + sum over arrivals of x x^T
    b: Any  # f32[d] sum over arrivals of r x
    count_plays: Any  # bool: conversions channel, the design matrix grows at play time
    t_info: Any  # f32 number of rows in V (plays or arrivals)


class LinMemo(NamedTuple):
    x: Any  # f32[d] the played features


def _lin_init(lam):
    def init(spec: ProblemSpec, key):
        if spec.dim is None:
            raise ValueError("linear policies need a linear world (ProblemSpec.dim is None)")
        d = spec.dim
        eye = lam * jnp.eye(d, dtype=_F)
        return LinState(eye, eye, jnp.zeros((d,), _F), jnp.asarray(not spec.feedback.zeros_observed),
                        jnp.zeros((), _F))

    return init


def _lin_payload(memo, reward, delay):
    x = memo.x
    return jnp.concatenate([jnp.outer(x, x).ravel(), reward * x, jnp.ones((1,), _F)])  # [d^2 + d + 1]


def _lin_update(state: LinState, arr):
    d = state.b.shape[0]
    x = arr.memo.x
    p = arr.payload
    n_new = jnp.where(state.count_plays, 1.0, p[-1])
    return state._replace(v_played=state.v_played + jnp.outer(x, x),
                          v_arrived=state.v_arrived + p[: d * d].reshape(d, d),
                          b=state.b + p[d * d: d * d + d], t_info=state.t_info + n_new)


def _lin_solve(state: LinState):
    v = jnp.where(state.count_plays, state.v_played, state.v_arrived)
    chol = jnp.linalg.cholesky(v)
    theta = cho_solve((chol, True), state.b)
    return theta, chol


@policy_value("LinUCB")
def linucb(lam: float = 1.0, delta: float = 0.05, sigma: float = 0.5, s_norm: float = 1.0,
           scale: float = 1.0) -> Policy:
    """LinUCB / OFUL (Abbasi-Yadkori et al. 2011) for linear worlds.

    Plays the argmax of ``<theta_hat, x> + scale beta_t ||x||_{V^-1}``, ridge ``lam``, radius
    :func:`jaxbandits.core.mathlib.linucb_beta`.

    Args:
        lam: the ridge regularisation, ``> 0``.
        delta: the confidence level of the radius, in ``(0, 1)``.
        sigma: the noise's sub-Gaussian scale, ``> 0``.
        s_norm: the bound ``S`` on ``||theta||``, ``> 0``.
        scale: a multiplier of the radius, ``> 0`` (1 is the theory's).

    Returns:
        The policy, a frozen value (``LinUCB(...)``); it needs a linear world (context features).

    Raises:
        ValueError: a parameter out of its range.

    Examples:
        >>> from jaxbandits.policies import classic
        >>> classic.linucb(scale=0.1)
        LinUCB(scale=0.1)
    """
    for n_, v_ in (("lam", lam), ("sigma", sigma), ("s_norm", s_norm), ("scale", scale)):
        V.positive(n_, v_)
    V.real("delta", delta, lo=0.0, hi=1.0, lo_open=True, hi_open=True)

    def act(state, ctx, key):
        if ctx.features is None:
            raise ValueError("linucb needs a linear world (context features)")
        theta, chol = _lin_solve(state)
        x = ctx.features
        z = solve_triangular(chol, x.T, lower=True)  # ||x||_{V^-1} = ||L^-1 x||
        beta = M.linucb_beta(state.t_info, theta.shape[0], lam, sigma, s_norm, delta)
        idx = x @ theta + scale * beta * jnp.sqrt(jnp.sum(z * z, axis=0))
        a = M.argmax_random_tie(idx, M.uniform(key), ctx.mask)
        return a, LinMemo(x[a])

    return Policy(_lin_init(lam), act, _lin_update, _lin_payload, _STOCHASTIC, "LinUCB", honours_mask=True)


@policy_value("LinTS")
def lints(lam: float = 1.0, v: float = 0.5) -> Policy:
    """Linear Thompson sampling (Agrawal and Goyal 2013): ``theta ~ N(theta_hat, v^2 V^-1)``.

    Args:
        lam: the ridge regularisation, ``> 0``.
        v: the posterior's scale, ``> 0``.

    Returns:
        The policy, a frozen value (``LinTS(...)``); it needs a linear world (context features).

    Raises:
        ValueError: ``lam`` or ``v`` not positive.

    Examples:
        >>> from jaxbandits.policies import classic
        >>> classic.lints(v=0.1)
        LinTS(v=0.1)
    """
    V.positive("lam", lam)
    V.positive("v", v)

    def act(state, ctx, key):
        if ctx.features is None:
            raise ValueError("lints needs a linear world (context features)")
        theta, chol = _lin_solve(state)
        zeta = M.normals(key, theta.shape[0])
        theta_s = theta + v * solve_triangular(chol.T, zeta, lower=False)  # cov = v^2 V^-1
        idx = ctx.features @ theta_s
        a = M.argmax_random_tie(idx, M.uniform(key), ctx.mask)
        return a, LinMemo(ctx.features[a])

    return Policy(_lin_init(lam), act, _lin_update, _lin_payload, _STOCHASTIC, "LinTS", honours_mask=True)
