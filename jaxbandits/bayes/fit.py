"""Offline fitting of the conversion models to a conversion log (spec §3): NUTS (the reference)
or SVI, returning ArviZ ``InferenceData`` with diagnostics, the pointwise log-likelihood (float64,
for ``az.loo``/``az.compare``) and posterior delay curves.

A log has one row per play: ``arm``, ``play_time``, ``conversion_time`` (NaN / empty when no
conversion has been seen) and the observation ``cutoff`` (per row or one number).
"""
from __future__ import annotations

import csv
import functools
import dataclasses
import math
from typing import Optional

import jax
import jax.numpy as jnp
import numpy as np

from .families import family
from .model import Rows, conversion_model

__all__ = ["ConversionLog", "conversion_log", "from_table", "read_log", "write_log", "fit", "diagnostics", "delay_cdf_grid"]


@dataclasses.dataclass(frozen=True)
class ConversionLog:
    arm: np.ndarray  # i64[N]
    play_time: np.ndarray  # f64[N]
    conversion_time: np.ndarray  # f64[N], NaN = none seen
    cutoff: np.ndarray  # f64[N]
    n_arms: int

    def __len__(self):
        return int(self.arm.shape[0])

    def rows(self, window=None, discrete=False) -> Rows:
        """Model rows: a conversion after the cutoff or with delay above ``window`` is **not seen**
        (future information is not trusted); ages are capped at ``window``."""
        delay = self.conversion_time - self.play_time
        seen = ~np.isnan(self.conversion_time) & (self.conversion_time <= self.cutoff)
        age = self.cutoff - self.play_time
        if window is not None:
            seen &= delay <= window
            age = np.minimum(age, window)
        delay = np.where(seen, delay, 0.0)
        if discrete:
            for name, x in (("play_time", self.play_time), ("conversion_time", self.conversion_time[seen]),
                            ("cutoff", self.cutoff)):
                if np.any(x != np.round(x)):
                    raise ValueError(f"discrete=True needs integer times; {name} has non-integer values")
        return Rows(jnp.asarray(self.arm, jnp.int32), jnp.asarray(seen, jnp.float32),
                    jnp.asarray(delay, jnp.float32), jnp.asarray(age, jnp.float32))


def conversion_log(arm, play_time, conversion_time, cutoff, n_arms: Optional[int] = None) -> ConversionLog:
    """Validate a log given as arrays. Raises ``ValueError`` naming the problem: negative times,
    a conversion before its play, an unknown arm, a cutoff before a play."""
    arm_a = np.asarray(arm)
    if arm_a.ndim != 1 or arm_a.size == 0:
        raise ValueError(f"arm must be a non-empty 1-d array, got shape {arm_a.shape}")
    if not np.issubdtype(arm_a.dtype, np.integer):
        if not np.issubdtype(arm_a.dtype, np.floating) or np.any(arm_a != np.round(arm_a)):
            raise ValueError("arm must hold integer arm indices")
    arm_a = arm_a.astype(np.int64)
    N = arm_a.size
    pt = np.asarray(play_time, np.float64)
    ct = np.asarray(conversion_time, np.float64)
    co = np.broadcast_to(np.asarray(cutoff, np.float64), (N,)).copy()
    for name, x in (("play_time", pt), ("conversion_time", ct)):
        if x.shape != (N,):
            raise ValueError(f"{name} must have shape ({N},) like arm, got {x.shape}")
    if not np.isfinite(pt).all() or not np.isfinite(co).all():
        raise ValueError("play_time and cutoff must be finite numbers")
    K = int(arm_a.max()) + 1 if n_arms is None else int(n_arms)
    if arm_a.min() < 0 or arm_a.max() >= K:
        bad = int(arm_a[(arm_a < 0) | (arm_a >= K)][0])
        raise ValueError(f"unknown arm {bad}: arms must lie in [0, {K - 1}]")
    if (pt < 0).any():
        raise ValueError(f"negative play_time at row {int(np.argmax(pt < 0))}")
    has = ~np.isnan(ct)
    if (ct[has] < 0).any():
        raise ValueError("negative conversion_time")
    if (ct[has] < pt[has]).any():
        i = int(np.flatnonzero(has)[np.argmax(ct[has] < pt[has])])
        raise ValueError(f"conversion before its play at row {i}: conversion_time {ct[i]} < play_time {pt[i]}")
    if (co < pt).any():
        i = int(np.argmax(co < pt))
        raise ValueError(f"cutoff before the play at row {i}: cutoff {co[i]} < play_time {pt[i]}")
    return ConversionLog(arm_a, pt, ct, co, K)


def read_log(path, cutoff=None, n_arms=None) -> ConversionLog:
    """Read a CSV log with columns ``arm, play_time, conversion_time`` (empty = none) and
    ``cutoff`` (or give ``cutoff`` as a number)."""
    with open(path, newline="") as fh:
        rd = csv.DictReader(fh)
        cols = set(rd.fieldnames or [])
        need = {"arm", "play_time", "conversion_time"} | (set() if cutoff is not None else {"cutoff"})
        if not need <= cols:
            raise ValueError(f"{path}: missing column(s) {sorted(need - cols)}; found {sorted(cols)}")
        arm, pt, ct, co = [], [], [], []
        for i, r in enumerate(rd):
            try:
                arm.append(float(r["arm"]))
                pt.append(float(r["play_time"]))
                v = (r["conversion_time"] or "").strip()
                ct.append(float(v) if v and v.lower() != "nan" else math.nan)
                co.append(float(r["cutoff"]) if cutoff is None else float(cutoff))
            except ValueError as e:
                raise ValueError(f"{path}: row {i + 1}: {e}") from None
    return conversion_log(np.asarray(arm), pt, ct, co, n_arms)


def from_table(table, cutoff=None, n_arms=None) -> ConversionLog:
    """A log from a pandas DataFrame (or any mapping of columns): ``arm, play_time,
    conversion_time`` (NaN / None = none seen) and ``cutoff`` (or give ``cutoff``)."""
    cols = set(table.columns) if hasattr(table, "columns") else set(table)
    need = {"arm", "play_time", "conversion_time"} | (set() if cutoff is not None else {"cutoff"})
    if not need <= cols:
        raise ValueError(f"table: missing column(s) {sorted(need - cols)}; found {sorted(cols)}")
    col = lambda c: np.asarray(table[c], dtype=np.float64)
    return conversion_log(col("arm"), col("play_time"), col("conversion_time"),
                          col("cutoff") if cutoff is None else cutoff, n_arms)


def write_log(path, log: ConversionLog):
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["arm", "play_time", "conversion_time", "cutoff"])
        for a, p, c, k in zip(log.arm, log.play_time, log.conversion_time, log.cutoff):
            w.writerow([int(a), f"{p:g}", "" if math.isnan(c) else f"{c:g}", f"{k:g}"])


def delay_cdf_grid(fam, theta, ages, discrete):
    """``F(a)`` on a grid for every posterior draw (theta entries ``[S]`` or ``[S, K]``)."""
    fam = family(fam)
    ages = jnp.asarray(ages, jnp.float32)
    th = {k: jnp.asarray(v)[..., None] if fam.name != "histogram" else jnp.asarray(v)[..., None, :]
          for k, v in theta.items()}
    ls = fam.log_surv(ages, th) if discrete else fam.log_surv_c(ages, th)
    return 1.0 - jnp.exp(ls)


def fit(log: ConversionLog, model: str = "exponential", method: str = "nuts", *, window=None, discrete=False,
        per_arm_delay=False, priors=None, prior_mean=None, edges=None, num_warmup=500, num_samples=1000,
        num_chains=4, seed=0, svi_steps=5000, svi_lr=0.01, grid=None):
    """Fit the joint model to ``log``; returns ``arviz.InferenceData``.

    ``model``: the delay family; ``method``: ``"nuts"`` (reference; sample_stats and a float64
    log_likelihood group for LOO) or ``"svi"`` (full-rank Gaussian guide, Adam). Posterior extras:
    ``delay_cdf`` on an age grid (per arm with ``per_arm_delay``) and ``pending_conversions`` per arm
    (expected conversions still to come among unseen plays: ``sum p S(a) / (1 - p F(a))``)."""
    import arviz as az
    from numpyro.infer import MCMC, NUTS, SVI, Trace_ELBO, init_to_median
    from numpyro.infer.autoguide import AutoMultivariateNormal
    from numpyro.optim import Adam

    if not isinstance(log, ConversionLog):
        raise TypeError(f"log must be a ConversionLog (see conversion_log / read_log), got {type(log).__name__}")
    fam = family(model, edges)
    if method not in ("nuts", "svi"):
        raise ValueError(f"method must be 'nuts' or 'svi', got {method!r}")
    if fam.discrete_only and not discrete:
        raise ValueError("the histogram model needs discrete=True (integer times)")
    if window is not None and not (isinstance(window, (int, float)) and window > 0):
        raise ValueError(f"window must be a positive number or None, got {window!r}")
    rows = log.rows(window, discrete)
    K = log.n_arms
    if prior_mean is None:
        prior_mean = float(window) / 4 if window is not None else max(float(np.median(log.cutoff - log.play_time)) / 4, 1.0)
    kw = dict(n_arms=K, fam=fam, discrete=discrete, per_arm_delay=per_arm_delay, priors=priors, prior_mean=prior_mean)
    key = jax.random.key(seed)
    attrs = {"model": fam.name, "method": method, "window": "none" if window is None else float(window),
             "discrete": int(discrete), "per_arm_delay": int(per_arm_delay), "prior_mean": prior_mean,
             "priors": str(priors or {}), "n_rows": len(log), "n_arms": K}
    if method == "nuts":
        model_fn = functools.partial(conversion_model, **kw)  # static options bound; only the data are jitted
        mcmc = MCMC(NUTS(model_fn, init_strategy=init_to_median), num_warmup=num_warmup, num_samples=num_samples, num_chains=num_chains,
                    chain_method="sequential", progress_bar=False, jit_model_args=True)
        mcmc.run(key, rows)
        idata = az.from_numpyro(mcmc)
        if "log_likelihood" in idata.groups():  # PSIS needs float64 (spec §8.2 pitfall)
            idata.log_likelihood["obs"] = idata.log_likelihood["obs"].astype("float64")
    else:
        guide = AutoMultivariateNormal(conversion_model, init_loc_fn=init_to_median, init_scale=0.05)
        svi = SVI(conversion_model, guide, Adam(svi_lr), Trace_ELBO())
        res = svi.run(key, svi_steps, rows, progress_bar=False, **kw)
        draws = guide.sample_posterior(jax.random.key(seed + 1), res.params, sample_shape=(num_samples,))
        post = {k: np.asarray(v)[None] for k, v in draws.items()}
        idata = az.from_dict(posterior=post)
        attrs["final_elbo_loss"] = float(res.losses[-1])
    post = idata.posterior
    theta = {k: post[k].values.reshape((-1,) + post[k].shape[2:]) for k in fam.params}
    ages = np.asarray(grid if grid is not None else np.unique(np.round(np.geomspace(1, max(float(rows.age.max()), 2), 60))))
    cdf = np.asarray(delay_cdf_grid(fam, theta, ages, discrete))  # [S, (K,) G]
    C, S = post.sizes["chain"], post.sizes["draw"]
    dims = ("chain", "draw", "arm", "age") if per_arm_delay else ("chain", "draw", "age")
    idata.posterior["delay_cdf"] = (dims, cdf.reshape((C, S) + cdf.shape[1:]))
    idata.posterior = idata.posterior.assign_coords(age=ages)
    # expected conversions still to come, per arm
    p = post["p"].values.reshape(-1, K)
    unseen = np.asarray(rows.converted) == 0
    arm_u, age_u = np.asarray(rows.arm)[unseen], np.asarray(rows.age)[unseen]
    th_rows = {k: (v[:, arm_u] if per_arm_delay else v[:, None]) for k, v in theta.items()}
    if fam.name == "histogram":
        th_rows = {"delay_w": theta["delay_w"][:, arm_u] if per_arm_delay else theta["delay_w"][:, None, :]}
    ls = np.asarray(fam.log_surv(age_u, th_rows) if discrete else fam.log_surv_c(age_u, th_rows))
    pu = p[:, arm_u]
    s = np.exp(ls)
    w = pu * s / np.maximum(1 - pu * (1 - s), 1e-30)
    pend = np.stack([w[:, arm_u == k].sum(1) for k in range(K)], -1)
    idata.posterior["pending_conversions"] = (("chain", "draw", "p_dim_0"), pend.reshape(C, S, K))
    idata.posterior.attrs.update(attrs)
    return idata


def diagnostics(idata) -> dict:
    """Worst r_hat, smallest bulk/tail ESS over the model parameters, and the divergences."""
    import arviz as az

    names = [v for v in idata.posterior.data_vars if v not in ("delay_cdf", "pending_conversions", "delay_mean_implied")]
    s = az.summary(idata, var_names=names, kind="diagnostics")
    out = {"r_hat_max": float(s["r_hat"].max()), "ess_bulk_min": float(s["ess_bulk"].min()),
           "ess_tail_min": float(s["ess_tail"].min())}
    if "sample_stats" in idata.groups() and "diverging" in idata.sample_stats:
        out["divergences"] = int(idata.sample_stats["diverging"].values.sum())
    return out
