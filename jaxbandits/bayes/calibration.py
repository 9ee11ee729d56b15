"""Simulation-based calibration (SBC) of the conversion models (docs/sbc.md).

For each of ``n_reps`` replications: draw the parameters from the model's own prior (NumPyro's
``Predictive`` on :func:`~jaxbandits.bayes.conversion_model`), simulate a log from them with the
family's numpy sampler (:meth:`~jaxbandits.delaymodels.families.Family.draw`, independent of the model's log
densities), fit it with NUTS, and record the rank of each true parameter among ``n_draws``
thinned posterior draws. If the simulator, the likelihood and the sampler agree, every rank is
uniform on ``{0, ..., n_draws}`` (Talts et al. 2018). Uniformity is tested per parameter with a
chi-square test on ``n_bins`` equal bins of ranks; a family passes when every p-value is above
``level / n_parameters`` (Bonferroni: family-wise level ``level``).

All replications run as one program: NumPyro's functional NUTS kernels
(``numpyro.infer.hmc.hmc``, ``potential_fn_gen`` from ``initialize_model(dynamic_args=True)``)
under ``vmap`` over the replications, each with its own data, warm-up adaptation and key. Each
log has the same number of plays, stored as distinct rows with 0/1 counts
(:class:`~jaxbandits.bayes.WeightedRows`, padding rows with count 0), so shapes are static.
"""
from __future__ import annotations

import dataclasses
import functools
import math
from typing import Optional

import jax
import jax.numpy as jnp
from jax.flatten_util import ravel_pytree
import numpy as np

from ..core import validate as V
from ..delaymodels.families import family
from ..delaymodels.model import WeightedRows, conversion_model

__all__ = ["SBCResult", "sbc", "simulate_rows", "rank_uniformity"]


@dataclasses.dataclass
class SBCResult:
    """Ranks of each scalar parameter (``ranks[name]``: int array ``[n_reps]`` in ``0..n_draws``).

    Attributes:
        model: the delay family's name.
        n_draws: the posterior draws each rank is out of.
        ranks: ``{name: int[n_reps]}``, the rank of each scalar parameter's true value among its
            draws, in ``0..n_draws``.
        truth: ``{name: [n_reps]}``, the prior draws.
        divergences: [n_reps], divergent transitions after warm-up.
        accept: [n_reps], mean acceptance probability after warm-up.
        config: the settings of the run.
    """

    model: str
    n_draws: int
    ranks: dict
    truth: dict
    divergences: np.ndarray  # [n_reps] divergent transitions after warm-up
    accept: np.ndarray  # [n_reps] mean acceptance probability after warm-up
    config: dict

    def pvalues(self, n_bins: int = 10) -> dict:
        """Chi-square p-value of each parameter's binned ranks (``n_bins`` equal bins)."""
        return {k: rank_uniformity(v, self.n_draws, n_bins) for k, v in self.ranks.items()}

    def passes(self, level: float = 0.01, n_bins: int = 10) -> bool:
        """Every parameter's p-value above ``level / n_parameters`` (family-wise ``level``)."""
        pv = self.pvalues(n_bins)
        return min(pv.values()) > level / len(pv)

    def summary(self, level: float = 0.01, n_bins: int = 10) -> dict:
        pv = self.pvalues(n_bins)
        return {"model": self.model, "n_reps": int(self.divergences.size), "n_draws": self.n_draws, "n_bins": n_bins,
                "level": level, "bonferroni_threshold": level / len(pv), "pvalues": pv, "passes": self.passes(level, n_bins),
                "divergences_total": int(self.divergences.sum()), "accept_mean": float(self.accept.mean()),
                "config": self.config}

    def plot(self, path, n_bins: int = 10, level: float = 0.01):
        """Rank histograms, one panel per parameter, with the band that holds each bin's count with
        probability 0.99 under uniformity (binomial quantiles)."""
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from scipy import stats

        names = list(self.ranks)
        R = self.divergences.size
        ncol = min(len(names), 4)
        nrow = math.ceil(len(names) / ncol)
        fig, axes = plt.subplots(nrow, ncol, figsize=(2.6 * ncol, 2.2 * nrow + 0.4), dpi=100, squeeze=False)
        pv = self.pvalues(n_bins)
        lo, hi = stats.binom.ppf([0.005, 0.995], R, 1.0 / n_bins)
        for ax, n in zip(axes.ravel(), names):
            counts = _bin_counts(self.ranks[n], self.n_draws, n_bins)
            ax.axhspan(lo, hi, color="0.85", zorder=0)
            ax.axhline(R / n_bins, color="0.4", lw=0.8)
            ax.bar(np.arange(n_bins), counts, width=0.9, color="C0")
            ax.set_title(f"{n}  (p = {pv[n]:.2f})", fontsize=8)
            ax.set_xticks([]), ax.tick_params(labelsize=7)
        for ax in axes.ravel()[len(names):]:
            ax.axis("off")
        fig.suptitle(f"SBC, {self.model}: {R} prior draws, ranks among {self.n_draws} posterior draws, "
                     f"{n_bins} bins (grey: 99% band per bin)", fontsize=8)
        fig.tight_layout()
        from ..report.plotting import save_figure

        return save_figure(fig, path)  # atomically: a temporary file renamed into place, removed on failure


def _bin_counts(ranks, n_draws, n_bins):
    """Counts of ranks in ``n_bins`` equal bins of ``{0..n_draws}`` (``n_draws + 1`` divisible by
    ``n_bins``)."""
    return np.bincount(np.asarray(ranks) * n_bins // (n_draws + 1), minlength=n_bins)


def rank_uniformity(ranks, n_draws: int, n_bins: int = 10) -> float:
    """The chi-square p-value of uniform ranks on ``{0..n_draws}`` binned in ``n_bins`` equal bins.

    Args:
        ranks: int[n_reps], the ranks.
        n_draws: the posterior draws each rank is out of.
        n_bins: the bins.

    Returns:
        The p-value, a float.

    Examples:
        >>> import numpy as np
        >>> from jaxbandits.bayes.calibration import rank_uniformity
        >>> rank_uniformity(np.arange(100), 99)  # exactly uniform ranks
        1.0
    """
    from scipy import stats

    if (n_draws + 1) % n_bins:
        raise ValueError(f"n_bins={n_bins} must divide n_draws + 1 = {n_draws + 1}")
    return float(stats.chisquare(_bin_counts(ranks, n_draws, n_bins)).pvalue)


def simulate_rows(rng, fam, p, th, n_arms, n_plays, span, discrete, delay_scale=1.0) -> WeightedRows:
    """One simulated log, as fixed-size :class:`~jaxbandits.delaymodels.model.WeightedRows`.

    One delay law ``th`` shared by the arms; ``n_plays`` plays (arms uniform, play times uniform on
    ``[0, span)``, observed at ``span``). Seen row ``i`` has count 1 when play ``i``'s conversion
    was seen, unseen row ``i`` count 1 when not (the other count 0; padding rows sit at time 1,
    where every log density is finite).

    Args:
        rng: a ``numpy.random.Generator``.
        fam: the delay family (:func:`jaxbandits.bayes.family`).
        p: f[K], the conversion probabilities.
        th: the delay parameters, a dict by name.
        n_arms: the number of arms.
        n_plays: the number of plays.
        span: the time span.
        discrete: integer times.
        delay_scale: multiplies the simulated delays (1: the model; anything else is a
            misspecified simulator, which SBC must detect).

    Returns:
        The :class:`~jaxbandits.delaymodels.model.WeightedRows` (``n_plays`` seen and unseen rows).

    Examples:
        >>> import numpy as np
        >>> from jaxbandits import bayes
        >>> from jaxbandits.bayes import calibration
        >>> wr = calibration.simulate_rows(np.random.default_rng(0), bayes.family("exponential"),
        ...                                np.array([0.3, 0.5]), {"delay_mean": 20.0}, 2, 50, 100.0, False)
        >>> float(wr.delay_count.sum() + wr.age_count.sum())
        50.0
    """
    arm = rng.integers(0, n_arms, n_plays)
    play = rng.random(n_plays) * span
    if discrete:
        play = np.floor(play)
    age = span - play
    d = fam.draw(rng, th, n_plays) * delay_scale
    if discrete:
        d = np.floor(d)
    seen = (rng.random(n_plays) < p[arm]) & (d <= age)
    f32, i32 = (lambda x: np.asarray(x, np.float32)), (lambda x: np.asarray(x, np.int32))
    return WeightedRows(f32(np.bincount(arm[seen], minlength=n_arms)), f32(np.where(seen, d, 1.0)),
                        i32(np.zeros(n_plays)), f32(seen), f32(np.where(seen, 1.0, age)), i32(arm), f32(~seen))


def _flat_params(draws: dict, names) -> dict:
    """Scalar parameters ``name`` or ``name[i]`` from ``{site: [..., (dims)]}`` (leading axis kept)."""
    out = {}
    for n in names:
        v = np.asarray(draws[n])
        if v.ndim == 1:
            out[n] = v
        else:
            flat = v.reshape(v.shape[0], -1)
            for i in range(flat.shape[1]):
                out[f"{n}[{i}]"] = flat[:, i]
    return out


def sbc(model="exponential", n_reps: int = 200, *, n_arms: int = 2, n_plays: int = 200, span: float = 200.0,
        discrete: Optional[bool] = None, n_draws: int = 99, thin: int = 5, num_warmup: int = 300,
        max_tree_depth: int = 7, priors: Optional[dict] = None, prior_mean: float = 30.0, edges=None,
        delay_scale: float = 1.0, seed: int = 0) -> SBCResult:
    """Simulation-based calibration of the joint model with delay family ``model`` (shared law).

    ``n_reps`` prior draws, each a log of ``n_plays`` plays over ``[0, span)`` observed at
    ``span``; NUTS with ``num_warmup`` adaptation steps then ``n_draws`` draws kept every ``thin``
    steps.

    Args:
        model: the delay family's name.
        n_reps: the replications.
        n_arms: the arms of each simulated log.
        n_plays: the plays of each simulated log.
        span: their time span.
        discrete: integer delays; default the family's own (True for geometric and histogram).
        n_draws: the posterior draws ranked against each prior draw.
        thin: the thinning of the chain.
        num_warmup: NUTS adaptation steps.
        max_tree_depth: NUTS's tree depth.
        priors: overrides of the priors' entries.
        prior_mean: the delay prior's mean.
        edges: the histogram family's bin edges.
        delay_scale: ``!= 1`` simulates with delays scaled by it (a misspecified simulator: a check
            that the test has power).
        seed: the seed.

    Returns:
        The :class:`SBCResult` (the ranks of each scalar parameter).

    Examples:
        >>> from jaxbandits.bayes.calibration import rank_uniformity, sbc
        >>> res = sbc("exponential", n_reps=100)  # doctest: +SKIP
        >>> {k: rank_uniformity(r, 99) for k, r in res.ranks.items()}  # doctest: +SKIP
    """
    from numpyro.infer import Predictive

    fam = family(model, edges)
    R = V.integer("n_reps", n_reps, lo=2)
    L = V.integer("n_draws", n_draws, lo=1)
    V.integer("thin", thin, lo=1)
    V.integer("num_warmup", num_warmup, lo=1)
    V.integer("n_plays", n_plays, lo=1)
    K = V.integer("n_arms", n_arms, lo=1)
    V.positive("span", span)
    V.positive("delay_scale", delay_scale)
    if discrete is None:
        discrete = fam.integer_times or fam.discrete_only
    if fam.discrete_only and not discrete:
        raise ValueError(f"the {fam.name} family is discrete only: discrete must be True")
    rng = np.random.default_rng(V.seed("seed", seed))
    key = V.seed_key(seed)
    model_fn = functools.partial(conversion_model, n_arms=K, fam=fam, discrete=bool(discrete), priors=priors,
                                 prior_mean=prior_mean)
    dummy = simulate_rows(np.random.default_rng(0), fam, np.zeros(K), fam.init_values(prior_mean, ()), K, n_plays, span,
                          discrete)  # fixes the shapes only
    k_prior, k_run = jax.random.split(key)
    names = ("p",) + tuple(fam.params)
    prior = Predictive(model_fn, num_samples=R, return_sites=list(names))(k_prior, dummy)
    prior = {k: np.asarray(v, np.float64) for k, v in prior.items()}
    rows = [simulate_rows(rng, fam, prior["p"][r], {k: prior[k][r] for k in fam.params}, K, n_plays, span, discrete,
                          delay_scale) for r in range(R)]
    data = jax.tree.map(lambda *x: jnp.asarray(np.stack(x)), *rows)

    run, post_fn = _runner(fam, K, int(n_plays), bool(discrete), tuple(sorted((priors or {}).items())),
                           float(prior_mean), L, int(thin), int(num_warmup), int(max_tree_depth))
    zs, div, acc = run(data, jax.random.split(k_run, R))
    post = post_fn(zs)
    post = {k: np.asarray(post[k], np.float64) for k in names}  # [R, L, ...]
    truth = _flat_params(prior, names)
    ranks = {}
    for n in names:
        v = post[n].reshape(R, L, -1)
        t = prior[n].reshape(R, 1, -1)
        r = np.sum(v < t, axis=1)  # [R, dims]
        for i in range(r.shape[1]):
            ranks[n if prior[n].ndim == 1 else f"{n}[{i}]"] = r[:, i].astype(np.int64)
    cfg = dict(model=fam.name, n_reps=R, n_arms=K, n_plays=int(n_plays), span=float(span), discrete=bool(discrete),
               n_draws=L, thin=int(thin), num_warmup=int(num_warmup), max_tree_depth=int(max_tree_depth),
               priors=dict(priors or {}), prior_mean=float(prior_mean), delay_scale=float(delay_scale), seed=int(seed))
    return SBCResult(fam.name, L, ranks, truth, np.asarray(div), np.asarray(acc), cfg)



@functools.lru_cache(maxsize=8)
def _runner(fam, K, n_plays, discrete, priors, prior_mean, L, thin, num_warmup, max_tree_depth):
    """The compiled SBC program for one configuration (kept, so that calls with the same shapes,
    e.g. a misspecified simulator after the right one, do not compile again): ``run(data [R, ...],
    keys [R]) -> (z draws [R, L, ...], divergences [R], mean acceptance [R])`` and
    ``post(z) -> constrained draws``. Each replication starts from the prior medians jittered by
    +-0.5 in the unconstrained space."""
    from numpyro import handlers
    from numpyro.distributions.transforms import biject_to
    from numpyro.infer.hmc import hmc
    from numpyro.infer.util import potential_energy

    model_fn = functools.partial(conversion_model, n_arms=K, fam=fam, discrete=discrete, priors=dict(priors) or None,
                                 prior_mean=prior_mean)
    dummy = simulate_rows(np.random.default_rng(0), fam, np.zeros(K), fam.init_values(prior_mean, ()), K, n_plays,
                          100.0, discrete)
    start = {"p": np.full(K, 0.5, np.float32), **fam.init_values(prior_mean, ())}
    tr = handlers.trace(handlers.substitute(model_fn, data=start)).get_trace(dummy)  # the latent sites, no sampling
    to_c = {n: biject_to(s["fn"].support) for n, s in tr.items() if s["type"] == "sample" and not s["is_observed"]}
    locs = fam.unconstrained_locs(prior_mean)
    base = {n: jnp.full(jnp.shape(t.inv(tr[n]["value"])), locs.get(n, 0.0), jnp.float32) for n, t in to_c.items()}
    base_flat, unravel = ravel_pytree(base)
    gen = lambda d: (lambda z: potential_energy(model_fn, (d,), {}, z))
    init_kernel, sample_kernel = hmc(potential_fn_gen=gen, algo="NUTS")
    constrain = lambda z: {n: t(z[n]) for n, t in to_c.items()}

    def one(d, k):
        ki, kr = jax.random.split(k)
        z = unravel(base_flat + jax.random.uniform(ki, base_flat.shape, minval=-0.5, maxval=0.5))
        st = init_kernel(z, num_warmup, model_args=(d,), rng_key=kr, max_tree_depth=max_tree_depth)

        def step(s, _):  # one scan over warm-up and sampling: one copy of the NUTS kernel to compile
            s = sample_kernel(s, model_args=(d,))
            return s, (s.z, s.diverging, s.accept_prob)

        _, (zs, div, acc) = jax.lax.scan(step, st, None, length=num_warmup + L * thin)
        keep = slice(num_warmup + thin - 1, None, thin)  # every thin-th draw after warm-up
        after = slice(num_warmup, None)
        return jax.tree.map(lambda x: x[keep], zs), jnp.sum(div[after]), jnp.mean(acc[after])

    return jax.jit(jax.vmap(one)), jax.jit(jax.vmap(jax.vmap(constrain)))
