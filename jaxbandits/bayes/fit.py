"""Offline fitting of the conversion models to a conversion log: NUTS (the reference) or SVI,
returning ArviZ ``InferenceData`` with named dims (``arm`` with the arm labels), full
``sample_stats``, ``observed_data`` / ``constant_data`` (the compressed log), posterior delay curves
and, when asked, the pointwise log-likelihood per play (float64, for ``az.loo``/``az.compare``).

The likelihood is evaluated on the log's distinct rows with counts (:func:`compress_rows`): exact,
and O(distinct rows) instead of O(plays). Chains run vectorised (one program for all chains).
Logs: see :mod:`jaxbandits.delaymodels.logs` (CSV, Parquet, DataFrames, timestamps, arm labels).
"""
from __future__ import annotations

import functools
import json
import math
import warnings
from typing import Optional

import jax
import jax.numpy as jnp
import numpy as np

from ..core import validate as V
from ..delaymodels.families import Family, delay_law, family, family_of
from ..delaymodels.logs import ConversionLog, conversion_log, from_table, load_log, read_log, warn_empty_arms, write_log
from ..delaymodels.model import WeightedRows, compress_rows, conversion_model

__all__ = ["ConversionLog", "conversion_log", "from_table", "load_log", "read_log", "write_log", "fit", "diagnostics",
           "delay_cdf_grid", "delay_laws", "compress_log", "AUTO_DISTINCT", "AUTO_RESOLUTION"]

AUTO_DISTINCT = 20_000  # resolution="auto": exact while the log has at most this many distinct rows
AUTO_RESOLUTION = 1e-2  # ... else times on a geometric grid of ratio exp(0.01) (each moves by < 0.5%)
_LL_AUTO_BYTES = 64 * 2**20  # log_likelihood="auto": per-play log-likelihood while it takes <= 64 MiB


def compress_log(log: ConversionLog, window=None, discrete=False, per_arm_delay=False, resolution="auto"):
    """The log's distinct rows with counts (see :func:`jaxbandits.delaymodels.model.compress_rows`).

    Args:
        log: the :class:`~jaxbandits.delaymodels.logs.ConversionLog`.
        window: the conversion window, or None.
        discrete: integer delays.
        per_arm_delay: keep seen delays apart by arm.
        resolution: None (exact), a positive number (relative grid step for continuous times) or
            ``"auto"`` (exact up to ``AUTO_DISTINCT`` distinct rows, else ``AUTO_RESOLUTION``).

    Returns:
        ``(WeightedRows, (seen_index, unseen_index), resolution_used)``.

    Examples:
        >>> import numpy as np
        >>> from jaxbandits import bayes
        >>> log = bayes.conversion_log(arm=["a", "b", "a"], play_time=[0.0, 1.0, 2.0],
        ...                            conversion_time=[3.0, np.nan, np.nan], cutoff=10.0)
        >>> wr, index, resolution = bayes.compress_log(log)
        >>> wr.n_conv.tolist(), resolution
        ([1.0, 0.0], None)
    """
    arm, seen, delay, age = log.arrays(window, discrete)
    if resolution is not None and resolution != "auto":
        if discrete:
            raise ValueError("resolution applies to continuous times; discrete logs are compressed exactly")
        if not (isinstance(resolution, (int, float)) and 0 < resolution <= 0.1):
            raise ValueError(f"resolution must be None, 'auto' or a number in (0, 0.1], got {resolution!r}")
    res = None if resolution == "auto" else resolution
    wr, inv = compress_rows(arm, seen, delay, age, log.n_arms, per_arm_delay, res)
    if resolution == "auto" and not discrete and wr.delay.shape[0] + wr.age.shape[0] > AUTO_DISTINCT:
        res = AUTO_RESOLUTION
        wr, inv = compress_rows(arm, seen, delay, age, log.n_arms, per_arm_delay, res)
    return wr, inv, res


def delay_cdf_grid(fam, theta, ages, discrete):
    """The delay CDF ``F(a)`` on a grid of ages for every posterior draw.

    Args:
        fam: the delay family or its name.
        theta: the delay parameters, a dict of arrays ``[S]`` (or ``[S, K]``: per arm).
        ages: f[G], the ages.
        discrete: integer delays.

    Returns:
        ``[S, G]`` (or ``[S, K, G]``).

    Examples:
        >>> import numpy as np
        >>> from jaxbandits import bayes
        >>> F = bayes.delay_cdf_grid("exponential", {"delay_mean": np.array([5.0, 10.0])},
        ...                          np.array([0.0, 5.0]), False)
        >>> np.asarray(F, float).round(3).tolist()
        [[0.0, 0.632], [0.0, 0.393]]
    """
    fam = family(fam)
    ages = jnp.asarray(ages, jnp.float32)
    th = fam.with_grid_axis({k: jnp.asarray(v) for k, v in theta.items()})
    ls = fam.log_surv(ages, th) if discrete else fam.log_surv_c(ages, th)
    return 1.0 - jnp.exp(ls)


def _dims(fam, per_arm_delay, hierarchical=False):
    dims = {"p": ["arm"], "pending_conversions": ["arm"]}
    for k in fam.params:
        dims[k] = (["arm"] if per_arm_delay else []) + list(fam.event_dims.get(k, ()))
    dims["delay_mean_implied"] = ["arm"] if per_arm_delay else []
    if hierarchical:  # the standardised per-arm offsets; the population's mu and sd are scalars
        dims.update({f"{q}_z": ["arm"] for q in ("p",) + tuple(fam.params)})
    return dims


def per_draw(fn, draws: dict, chunk=256):
    """``fn`` (jitted, on a dict of ``[chunk, ...]`` draws) over all draws in equal chunks (the last
    one padded), so memory stays O(chunk x distinct rows)."""
    S = next(iter(draws.values())).shape[0]
    outs = []
    for i in range(0, S, chunk):
        part = {k: v[i:i + chunk] for k, v in draws.items()}
        n = next(iter(part.values())).shape[0]
        if n < chunk:
            part = {k: np.concatenate([v, np.repeat(v[-1:], chunk - n, 0)]) for k, v in part.items()}
        out = fn(part)
        outs.append(jax.tree.map(lambda x: np.asarray(x)[:n], out))
    return jax.tree.map(lambda *x: np.concatenate(x), *outs)


def _release_freed_memory():
    """Hand freed heap pages back to the system (glibc ``malloc_trim``; a no-op elsewhere), so the
    per-play arrays of a big log do not add to the peak memory of the compilation that follows."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass


def start_values(fam, wr, plays, K, per_arm_delay, prior_mean):
    """Starting values from the data (the seen rates, the seen delays' mean / median), not from
    prior draws: drawing Beta variates (what ``init_to_median`` does) costs a gamma-sampler compile
    of about 2 s. Each chain jitters them (see :func:`init_near`)."""
    n_conv = np.asarray(wr.n_conv, np.float64)
    p0 = np.clip((n_conv + 1) / (np.asarray(plays, np.float64) + 2), 1e-3, 0.9)
    cnt, d = np.asarray(wr.delay_count, np.float64), np.asarray(wr.delay, np.float64)
    mean_d = float(np.sum(cnt * d) / cnt.sum()) if cnt.sum() > 0 else float(prior_mean)
    mean_d = max(mean_d, 1.0)
    shape = (K,) if per_arm_delay else ()
    return {"p": p0.astype(np.float32), **fam.init_values(mean_d, shape)}


def init_near(values, radius=0.5, real=()):
    """A NumPyro init strategy: ``values`` jittered per chain in the unconstrained space (uniform
    within ``+-radius`` on the log / logit scale, or added for the unbounded sites ``real``;
    simplexes re-normalised)."""
    from numpyro.infer import init_to_median

    def strategy(site=None):
        if site is None or site["type"] != "sample" or site["is_observed"] or site["name"] not in values:
            return init_to_median(site=site)
        v = jnp.asarray(values[site["name"]])
        u = jax.random.uniform(site["kwargs"]["rng_key"], v.shape, minval=-radius, maxval=radius)
        if site["name"] in real:
            return v + u
        if site["name"] == "p":
            return jax.nn.sigmoid(jnp.log(v) - jnp.log1p(-v) + u)
        if site["name"] == "delay_w":
            w = v * jnp.exp(u)
            return w / jnp.sum(w, -1, keepdims=True)
        return v * jnp.exp(u)

    return strategy


def _hier_init_values(fam, wr, plays, K, prior_mean):
    """Starting values of the hierarchical model: the population at the pooled rate and mean seen
    delay, small spreads, every arm's offset at the (clipped) logit of its own seen rate."""
    flat = start_values(fam, wr, plays, K, False, prior_mean)
    p_k = np.clip((np.asarray(wr.n_conv, np.float64) + 1) / (np.asarray(plays, np.float64) + 2), 1e-3, 0.9)
    p_all = float(np.clip((np.sum(wr.n_conv) + 1) / (np.sum(plays) + 2), 1e-3, 0.9))
    mu = math.log(p_all / (1 - p_all))
    out = {"p_mu": np.float32(mu), "p_sd": np.float32(0.5),
           "p_z": np.clip((np.log(p_k / (1 - p_k)) - mu) / 0.5, -2, 2).astype(np.float32)}
    for q in fam.params:
        out.update({f"{q}_mu": np.float32(math.log(float(flat[q]))), f"{q}_sd": np.float32(0.2),
                    f"{q}_z": np.zeros(K, np.float32)})
    real = ("p_mu", "p_z") + tuple(f"{q}_{s}" for q in fam.params for s in ("mu", "z"))
    return out, real


def to_idata(mcmc, coords, dims):
    """InferenceData from the sampler's draws and extra fields, named as ArviZ expects (what
    ``az.from_numpyro`` does, without re-running the model on the data: for a big log that trace
    costs seconds). sample_stats: ``lp`` (log density = -potential energy), ``energy``,
    ``diverging``, ``acceptance_rate``, ``step_size``, ``n_steps`` and ``tree_depth``."""
    import arviz as az

    post = {k: np.asarray(v) for k, v in mcmc.get_samples(group_by_chain=True).items()}
    ex = {k: np.asarray(v) for k, v in mcmc.get_extra_fields(group_by_chain=True).items()}
    stats = {"lp": -ex["potential_energy"], "energy": ex["energy"], "diverging": ex["diverging"],
             "acceptance_rate": ex["accept_prob"], "step_size": ex["adapt_state.step_size"], "n_steps": ex["num_steps"],
             "tree_depth": (np.floor(np.log2(np.maximum(ex["num_steps"], 1))) + 1).astype(np.int64)}
    import numpyro

    return az.from_dict(posterior=post, sample_stats=stats, coords=coords, dims={k: v for k, v in dims.items() if k in post},
                        attrs={"inference_library": "numpyro", "inference_library_version": numpyro.__version__})


def fit(log: ConversionLog, model: str = "exponential", method: str = "nuts", *, window=None, discrete=False,
        per_arm_delay=False, priors=None, prior_mean=None, edges=None, num_warmup=500, num_samples=1000,
        num_chains=4, seed=0, svi_steps=5000, svi_lr=0.01, grid=None, resolution="auto", log_likelihood=False,
        chain_method="vectorized", progress_bar=False, hierarchical=False):
    """Fit the joint conversion model to a log.

    The likelihood runs on the log's distinct rows with counts. Posterior extras: ``delay_cdf`` on
    an age grid (per arm with ``per_arm_delay``) and ``pending_conversions`` per arm (expected
    conversions still to come among unseen plays: ``sum p S(a) / (1 - p F(a))``). Arms with no rows
    are warned about and listed in ``attrs["empty_arms"]`` (their posterior is the prior).

    Args:
        log: the :class:`~jaxbandits.delaymodels.logs.ConversionLog`.
        model: the delay family's name.
        method: ``"nuts"`` (reference; full sample_stats) or ``"svi"`` (full-rank Gaussian guide,
            Adam).
        window: the conversion window, or None.
        discrete: integer delays.
        per_arm_delay: one delay law per arm.
        priors: overrides of the priors' entries (docs/bayes.md).
        prior_mean: the delay prior's mean.
        edges: the histogram family's bin edges.
        num_warmup: NUTS adaptation steps.
        num_samples: draws per chain.
        num_chains: chains.
        seed: the seed.
        svi_steps: SVI steps.
        svi_lr: SVI's Adam learning rate.
        grid: the age grid of ``delay_cdf``.
        resolution: (continuous times only) None = exact, a number = relative grid step (each delay
            and age moves by a factor within ``exp(+-resolution/2)``), ``"auto"`` = exact up to
            ``AUTO_DISTINCT`` distinct rows, else ``AUTO_RESOLUTION`` (recorded in the attributes).
        log_likelihood: the pointwise log-likelihood per play (float64, dim ``row``) for
            ``az.loo``/``az.compare``: False, True, or ``"auto"`` (only while it takes <= 64 MiB).
        chain_method: ``"vectorized"``, ``"sequential"`` or ``"parallel"`` (one device per chain).
        progress_bar: NumPyro's progress bar.
        hierarchical: partial pooling across arms (:func:`~jaxbandits.bayes.hierarchical_model`;
            NUTS only; implies ``per_arm_delay``; families with log-normal parameters). Its priors
            add ``p_mu_loc``, ``p_mu_scale``, ``p_pool_scale`` and ``delay_pool_scale``.

    Returns:
        ``arviz.InferenceData``.

    Raises:
        ValueError: an unknown model or method, or options that exclude each other.

    Examples:
        >>> from jaxbandits import bayes
        >>> log = bayes.synthetic_log([0.2, 0.4], 2000, 500.0, 600.0)
        >>> idata = bayes.fit(log, "exponential", num_samples=200)  # doctest: +SKIP
        >>> bayes.diagnostics(idata)["r_hat_max"] < 1.05  # doctest: +SKIP
        True
    """
    import arviz as az
    from numpyro.infer import MCMC, NUTS, SVI, Trace_ELBO, init_to_median
    from numpyro.infer.autoguide import AutoMultivariateNormal
    from numpyro.optim import Adam

    if not isinstance(log, ConversionLog):
        raise TypeError(f"log must be a ConversionLog (see conversion_log / load_log), got {type(log).__name__}")
    fam = family(model, edges)
    if method not in ("nuts", "svi"):
        raise ValueError(f"method must be 'nuts' or 'svi', got {method!r}")
    if fam.discrete_only and not discrete:
        raise ValueError("the histogram model needs discrete=True (integer times)")
    if window is not None and not (isinstance(window, (int, float)) and not isinstance(window, bool)
                                   and 0 < window <= V.F32_MAX):
        raise ValueError(f"window must be a positive finite number (at most {V.F32_MAX:.8g}) or None, got {window!r}")
    if chain_method not in ("vectorized", "sequential", "parallel"):
        raise ValueError(f"chain_method must be 'vectorized', 'sequential' or 'parallel', got {chain_method!r}")
    if log_likelihood not in (True, False, "auto"):
        raise ValueError(f"log_likelihood must be True, False or 'auto', got {log_likelihood!r}")
    if hierarchical not in (True, False):
        raise ValueError(f"hierarchical must be True or False, got {hierarchical!r}")
    if hierarchical:
        from ..delaymodels.hierarchical import hierarchical_priors

        if method != "nuts":
            raise ValueError(f"hierarchical=True fits with method='nuts' only, got method={method!r}")
        fam.log_normal_hyper(hierarchical_priors(fam, priors, 1.0))  # the family and the priors, checked now
        per_arm_delay = True
    V.seed("seed", seed)
    for name, v in (("num_warmup", num_warmup), ("num_samples", num_samples), ("num_chains", num_chains)):
        if not isinstance(v, (int, np.integer)) or v < (0 if name == "num_warmup" else 1):
            raise ValueError(f"{name} must be an integer >= {0 if name == 'num_warmup' else 1}, got {v!r}")
    wr, (inv_d, inv_a), res = compress_log(log, window, discrete, per_arm_delay, resolution)
    empty = warn_empty_arms(log)
    K = log.n_arms
    _release_freed_memory()  # the per-play temporaries of the compression, before XLA compiles
    if prior_mean is None:
        prior_mean = float(window) / 4 if window is not None else max(float(np.median(log.cutoff - log.play_time)) / 4, 1.0)
    kw = dict(n_arms=K, fam=fam, discrete=discrete, per_arm_delay=per_arm_delay, priors=priors, prior_mean=prior_mean)
    key = V.seed_key(seed)
    labels = list(log.arm_labels)
    coords = {"arm": labels, **fam.coords()}
    dims = _dims(fam, per_arm_delay, hierarchical)
    attrs = {"model": fam.name, "method": method, "window": "none" if window is None else float(window),
             "discrete": int(discrete), "per_arm_delay": int(per_arm_delay), "prior_mean": prior_mean,
             "priors": str(priors or {}), "n_rows": len(log), "n_arms": K,
             "n_distinct_rows": int(wr.delay.shape[0] + wr.age.shape[0]),
             "resolution": "exact" if res is None else float(res), "empty_arms": json.dumps([str(x) for x in empty]),
             "arm_labels": json.dumps([str(x) for x in labels]), "hierarchical": int(hierarchical)}
    if log.time_unit is not None:
        attrs.update(time_unit=log.time_unit, time_origin=str(log.origin))
    model_fn = functools.partial(conversion_model, **kw)  # static options bound; only the data are jitted
    if hierarchical:
        from ..delaymodels.hierarchical import hierarchical_model

        model_fn = functools.partial(hierarchical_model, n_arms=K, fam=fam, discrete=discrete, priors=priors,
                                     prior_mean=prior_mean)
    if method == "nuts":
        if hierarchical:
            values, real = _hier_init_values(fam, wr, log.plays_per_arm, K, prior_mean)
            init = init_near(values, real=real)
        else:
            init = init_near(start_values(fam, wr, log.plays_per_arm, K, per_arm_delay, prior_mean))
        mcmc = MCMC(NUTS(model_fn, init_strategy=init), num_warmup=num_warmup, num_samples=num_samples,
                    num_chains=num_chains, chain_method=chain_method, progress_bar=progress_bar, jit_model_args=True)
        with warnings.catch_warnings():  # "not enough devices for parallel chains" is numpyro's own fallback
            warnings.filterwarnings("ignore", message=".*There are not enough devices.*")
            mcmc.run(key, wr, extra_fields=("potential_energy", "energy", "num_steps", "accept_prob", "diverging",
                                            "adapt_state.step_size"))
        idata = to_idata(mcmc, coords, dims)
    else:
        guide = AutoMultivariateNormal(model_fn, init_loc_fn=init_to_median, init_scale=0.05)
        svi = SVI(model_fn, guide, Adam(svi_lr), Trace_ELBO())
        r = svi.run(key, svi_steps, wr, progress_bar=progress_bar)
        draws = guide.sample_posterior(V.seed_key((seed + 1) % 2**64), r.params, sample_shape=(num_samples,))
        post = {k: np.asarray(v)[None] for k, v in draws.items()}
        idata = az.from_dict(posterior=post, coords=coords, dims=dims)
        attrs["final_elbo_loss"] = float(r.losses[-1])
    post = idata.posterior
    C, S = post.sizes["chain"], post.sizes["draw"]
    theta = {k: post[k].values.reshape((-1,) + post[k].shape[2:]) for k in fam.params}
    p_draws = post["p"].values.reshape(-1, K)
    max_age = float(np.max(log.cutoff - log.play_time))
    if window is not None:
        max_age = min(max_age, float(window))
    ages = np.asarray(grid if grid is not None else np.unique(np.round(np.geomspace(1, max(max_age, 2), 60))))
    cdf = np.asarray(delay_cdf_grid(fam, theta, ages, discrete))  # [S, (K,) G]
    cdims = ("chain", "draw", "arm", "age") if per_arm_delay else ("chain", "draw", "age")
    idata.posterior["delay_cdf"] = (cdims, cdf.reshape((C, S) + cdf.shape[1:]))
    idata.posterior = idata.posterior.assign_coords(age=ages)

    # per distinct row, chunked over draws: pending conversions per arm; the pointwise log-likelihood
    from ..delaymodels.model import pointwise_weighted

    def per_chunk(d, want_ll):
        p = jnp.asarray(d["p"])
        th = {k: jnp.asarray(d[k]) for k in fam.params}

        def one(pi, thi):
            log_f, unseen = pointwise_weighted(wr, pi, thi, fam, discrete, per_arm_delay)
            tha = {k: (v[wr.age_arm] if per_arm_delay else v) for k, v in thi.items()}
            ls = fam.log_surv(wr.age, tha) if discrete else fam.log_surv_c(wr.age, tha)
            pa = jnp.clip(pi, 1e-7, 1 - 1e-7)[wr.age_arm]
            w = wr.age_count * jnp.exp(jnp.log(pa) + ls - unseen)  # p S(a) / (1 - p F(a)), counted
            pend = jax.ops.segment_sum(w, wr.age_arm, num_segments=K)
            return (pend, log_f, unseen) if want_ll else (pend,)

        return jax.vmap(one)(p, th)

    n_ll = len(log) * C * S * 8
    want_ll = bool(log_likelihood is True or (log_likelihood == "auto" and n_ll <= _LL_AUTO_BYTES))
    outs = per_draw(jax.jit(functools.partial(per_chunk, want_ll=want_ll)), {"p": p_draws, **theta})
    idata.posterior["pending_conversions"] = (("chain", "draw", "arm"), outs[0].reshape(C, S, K))
    if want_ll:
        log_f, unseen = outs[1].astype(np.float64), outs[2].astype(np.float64)
        arm, seen, _, _ = log.arrays(window, discrete)
        ll = np.empty((C * S, len(log)), np.float64)
        sidx, uidx = np.flatnonzero(seen), np.flatnonzero(~seen)
        ll[:, sidx] = np.log(np.clip(p_draws, 1e-7, 1 - 1e-7)).astype(np.float32).astype(np.float64)[:, arm[sidx]] + log_f[:, inv_d]
        ll[:, uidx] = unseen[:, inv_a]
        idata.add_groups(log_likelihood={"obs": ll.reshape(C, S, -1)}, dims={"obs": ["row"]})
    # the compressed log: observations and the constants (arms, ages) they go with
    obs = {"n_conv": np.asarray(wr.n_conv, np.int64), "seen_delay": np.asarray(wr.delay, np.float64),
           "seen_count": np.asarray(wr.delay_count, np.int64), "unseen_count": np.asarray(wr.age_count, np.int64)}
    const = {"plays": log.plays_per_arm.astype(np.int64), "seen_arm": np.asarray(wr.delay_arm, np.int64),
             "unseen_arm": np.asarray(wr.age_arm, np.int64), "unseen_age": np.asarray(wr.age, np.float64)}
    import xarray as xr

    odims = {"n_conv": ["arm"], "seen_delay": ["seen_row"], "seen_count": ["seen_row"], "unseen_count": ["unseen_row"]}
    cdims_ = {"plays": ["arm"], "seen_arm": ["seen_row"], "unseen_arm": ["unseen_row"], "unseen_age": ["unseen_row"]}
    idata.add_groups(observed_data=xr.Dataset({k: (odims[k], v) for k, v in obs.items()}, coords={"arm": labels}),
                     constant_data=xr.Dataset({k: (cdims_[k], v) for k, v in const.items()}, coords={"arm": labels}))
    idata.posterior.attrs.update(attrs)
    return idata


def diagnostics(idata) -> dict:
    """The worst r_hat, the smallest bulk/tail ESS over the model parameters, and the divergences.

    Args:
        idata: the ``arviz.InferenceData`` of :func:`fit`.

    Returns:
        A dict: ``r_hat_max``, ``ess_bulk_min``, ``ess_tail_min`` and (NUTS) ``divergences``.

    Examples:
        >>> from jaxbandits import bayes
        >>> bayes.diagnostics(idata)  # doctest: +SKIP
    """
    import arviz as az

    names = [v for v in idata.posterior.data_vars if v not in ("delay_cdf", "pending_conversions", "delay_mean_implied")]
    s = az.summary(idata, var_names=names, kind="diagnostics")
    out = {"r_hat_max": float(s["r_hat"].max()), "ess_bulk_min": float(s["ess_bulk"].min()),
           "ess_tail_min": float(s["ess_tail"].min())}
    if "sample_stats" in idata.groups() and "diverging" in idata.sample_stats:
        out["divergences"] = int(idata.sample_stats["diverging"].values.sum())
    return out


def delay_laws(idata, draws: Optional[int] = None, seed: int = 0):
    """The fitted delay law(s) of a :func:`fit` result, for a simulation (:func:`delay_law` of
    the posterior's parameters).

    ``draws=None``: the law at the posterior mean of each delay parameter; an int ``n``: a list of
    ``n`` laws at posterior draws picked at random (``seed``), for a simulation that averages over the
    posterior. A model with one law per arm gives a tuple of laws (one per arm, for
    :func:`jaxbandits.envs.conversions_arm_delays`) in place of each law.

    Args:
        idata: a :func:`fit` result (an ``arviz.InferenceData`` whose posterior holds the delay
            parameters and the ``model`` attribute).
        draws: ``None`` (the default) for the law at the posterior mean, or the number of
            posterior draws to take laws at, an integer in ``[1, chains x draws]``.
        seed: the seed of the draws picked (``draws`` an integer).

    Returns:
        A :mod:`jaxbandits.core.delays` law (``draws=None``) or a list of ``draws`` laws; with one law
        per arm, a tuple of laws (one per arm) in place of each law.

    Raises:
        ValueError: ``draws`` is neither ``None`` nor an integer in ``[1, chains x draws]``.

    Example:
        >>> import arviz as az
        >>> import numpy as np
        >>> idata = az.from_dict(posterior={"p": np.full((1, 4), 0.1), "delay_mean": [[18.0, 20.0, 22.0, 20.0]]})
        >>> idata.posterior.attrs["model"] = "exponential"  # as fit() writes it
        >>> delay_laws(idata)  # at the posterior mean of delay_mean
        Exponential(scale=Array(20., dtype=float32))
        >>> len(delay_laws(idata, draws=3))
        3
        >>> from jaxbandits import bayes
        >>> law = delay_laws(bayes.fit(log, model="weibull"))  # doctest: +SKIP
    """
    fam = family_of(idata)
    post = idata.posterior
    vals = {k: post[k].values.reshape((-1,) + post[k].shape[2:]) for k in fam.params}
    n_all = next(iter(vals.values())).shape[0]
    per_arm = "arm" in post[fam.params[0]].dims

    def law_at(th):
        if per_arm:
            K = next(iter(th.values())).shape[0]
            return tuple(delay_law(fam, {k: v[a] for k, v in th.items()}) for a in range(K))
        return delay_law(fam, th)

    if draws is None:
        return law_at({k: v.mean(0) for k, v in vals.items()})
    if not isinstance(draws, (int, np.integer)) or isinstance(draws, bool) or not 1 <= draws <= n_all:
        raise ValueError(f"draws must be None or an integer in [1, {n_all}] (the posterior's draws), got {draws!r}")
    idx = np.random.default_rng(seed).choice(n_all, size=int(draws), replace=False)
    return [law_at({k: v[i] for k, v in vals.items()}) for i in idx]
