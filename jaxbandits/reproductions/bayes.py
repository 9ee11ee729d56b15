"""Experiments of the Bayesian delay models (docs/bayes.md, *Experiments*):

* ``bayes-fit-recovery``: offline NUTS fits on simulated logs; how often the posterior intervals
  cover the true rates and delay parameters.
* ``bayes-ts-shared-delay``: one geometric delay law for every arm: delay-model TS (HMC, Laplace,
  refresh every 1 or 10 rounds) against naive Beta TS, Beta TS on closed plays, DelayedKLUCB (which
  is given the delay CDF) and the oracle TS that knows the law.
* ``bayes-ts-arm-delays``: the best arm converts a little more often but much more slowly; per-arm
  delay-model TS against the same baselines and the per-arm oracle.
* ``bayes-ts-warm-start``: a past campaign's log is fitted offline; delay-model TS warm-started
  from that fit (:func:`jaxbandits.bayes.policy_prior`) against the cold-started one, on worlds
  drawn from the fitted posterior.

Arms are listed worst first (the best arm is not arm 0, conventions §10) and every TS breaks ties at
random.
"""
from __future__ import annotations

import math

import numpy as np

from .. import channels as C
from ..core import delays as D
from .. import envs as E
from ..experiments.specs import Experiment, Panel
from ..policies import bayes as PB
from ..policies import conversions as PC


def _exp_mean(geom_mean):
    """The exponential mean whose floor has the zero-based geometric law of mean ``geom_mean``."""
    return 1.0 / math.log1p(1.0 / geom_mean)


def _shared(cfg):
    law = D.geometric(mean=cfg["delay_mean"])
    env = E.conversions(cfg["theta"], law)
    M_ = int(cfg["window"])
    pm = float(cfg["prior_mean"])
    pols = {"DelayModel TS (HMC)": PB.delay_model_ts(M_, prior_mean=pm),
            "DelayModel TS (HMC, k=10)": PB.delay_model_ts(M_, refresh=10, prior_mean=pm),
            "DelayModel TS (Laplace)": PB.delay_model_ts(M_, engine="laplace", prior_mean=pm),
            "Oracle TS (HMC)": PB.delay_model_ts(M_, fixed_delay={"delay_mean": _exp_mean(cfg["delay_mean"])}),
            "Beta TS (naive)": PB.beta_ts("naive", M_), "Beta TS (closed)": PB.beta_ts("closed", M_),
            "DelayedKLUCB (knows tau)": PC.delayed_klucb(law)}
    return env, C.conversions(), pols


def _arm_delays(cfg):
    laws = [D.geometric(mean=m) for m in cfg["delay_means"]]
    env = E.conversions_arm_delays(cfg["theta"], laws)
    M_ = int(cfg["window"])
    pm = float(cfg["prior_mean"])
    fixed = {"delay_mean": np.array([_exp_mean(m) for m in cfg["delay_means"]], np.float32)}
    pols = {"DelayModel TS per-arm (HMC)": PB.delay_model_ts(M_, per_arm_delay=True, prior_mean=pm),
            "DelayModel TS shared law (HMC)": PB.delay_model_ts(M_, prior_mean=pm),
            "Oracle TS per-arm (HMC)": PB.delay_model_ts(M_, per_arm_delay=True, fixed_delay=fixed),
            "Beta TS (naive)": PB.beta_ts("naive", M_), "Beta TS (closed)": PB.beta_ts("closed", M_)}
    return env, C.conversions(), pols


TS_SHARED_DELAY = Experiment("bayes-ts-shared-delay",
                             "Bayesian delay-model TS vs naive/closed Beta TS, DelayedKLUCB and the oracle, one geometric delay law",
                             _shared, {"theta": [0.05, 0.07, 0.10], "delay_mean": 50.0, "window": 255, "prior_mean": 30.0},
                             horizon=10_000, runs=100, record=("log", 60), checkpoints=(2000, 10_000),
                             ranges={"theta": "2 to 2**20 conversion rates, each in [0, 1]",
                                     "delay_mean": "mean of the geometric delay law, a number > 0",
                                     "window": "reveal window H of the TS policies, an integer >= 1",
                                     "prior_mean": "prior median of the delay mean, a number > 0"})
TS_ARM_DELAYS = Experiment("bayes-ts-arm-delays",
                           "Per-arm delay laws: the best arm converts a little more often but much more slowly",
                           _arm_delays, {"theta": [0.06, 0.08, 0.10], "delay_means": [10.0, 10.0, 300.0], "window": 1023,
                                         "prior_mean": 60.0},
                           horizon=10_000, runs=50, record=("log", 60), checkpoints=(2000, 5000, 10_000),
                           ranges={"theta": "2 to 2**20 conversion rates, each in [0, 1]",
                                   "delay_means": "one geometric delay mean per arm, numbers > 0",
                                   "window": "reveal window H of the TS policies, an integer >= 1",
                                   "prior_mean": "prior median of the delay mean, a number > 0"})


# ----------------------------------------------------------------------------- fit recovery
class FitRecovery:
    """Coverage of posterior intervals over simulated logs (a small calibration study)."""

    def __init__(self, name, config, seed, rows):
        self.experiment, self.config, self.seed, self.rows = name, config, seed, rows
        self.runs = len(rows)

    def summary(self):
        out = {"experiment": self.experiment, "config": self.config, "seed": self.seed, "runs": self.runs,
               "replications": self.rows}
        cov = {}
        for r in self.rows:
            for name, v in r["covered"].items():
                cov.setdefault(name, []).append(v)
        out["coverage_90"] = {k: float(np.mean(v)) for k, v in cov.items()}
        out["coverage_90_all"] = float(np.mean([x for v in cov.values() for x in v]))
        out["r_hat_max"] = float(max(r["r_hat_max"] for r in self.rows))
        out["divergences"] = int(sum(r["divergences"] for r in self.rows))
        return out

    def table(self):
        s = self.summary()
        lines = ["| parameter | 90% interval coverage |", "|---|---|"]
        lines += [f"| {k} | {v:.2f} |" for k, v in s["coverage_90"].items()]
        lines.append(f"| all | {s['coverage_90_all']:.2f} |")
        return "\n".join(lines) + f"\n\nmax r_hat {s['r_hat_max']:.3f}, divergences {s['divergences']}\n"

    def save(self, out_dir, plot=True, force=False):
        """``summary.json``, ``table.md`` and (``plot``) ``recovery.png``, as one unit and
        atomically (see :meth:`jaxbandits.experiments.results.Results.save`)."""
        from ..core.fileio import json_writer, save_files, text_writer

        files = {"summary.json": json_writer(self.summary()), "table.md": text_writer(self.table())}
        if plot:
            files["recovery.png"] = self._plot
        ident = {"experiment": self.experiment, "config": self.config}
        return {"summary": save_files(out_dir, files, ident, force=force)["summary.json"]}

    def _plot(self, path):
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        names = list(self.rows[0]["truth"])
        fig, axes = plt.subplots(1, len(names), figsize=(3.2 * len(names), 3.2), dpi=110, squeeze=False)
        for ax, n in zip(axes[0], names):
            tr = np.array([r["truth"][n] for r in self.rows])
            lo = np.array([r["lo"][n] for r in self.rows])
            hi = np.array([r["hi"][n] for r in self.rows])
            mid = np.array([r["mean"][n] for r in self.rows])
            ax.errorbar(tr, mid, yerr=[mid - lo, hi - mid], fmt="o", ms=3, lw=0.8)
            a, b = min(tr.min(), lo.min()), max(tr.max(), hi.max())
            ax.plot([a, b], [a, b], "k--", lw=0.8)
            ax.set_title(n, fontsize=9), ax.set_xlabel("truth"), ax.set_ylabel("posterior mean, 90% interval")
        fig.tight_layout()
        fig.savefig(path)
        plt.close(fig)


_RECOVERY_FIT = {"num_chains": 2, "num_warmup": 400, "num_samples": 500}


def _fit_versions() -> dict:
    """What changes a fit's numbers besides its inputs (a saved fit of other versions is not replayed)."""
    from importlib import metadata

    from ..experiments.results import versions

    v = {k: versions().get(k) for k in ("jaxbandits", "jax", "backend", "x64")}
    v["numpyro"] = metadata.version("numpyro")
    return v


def _recover_one(B, cfg, seed, r, p, mean, shape):
    """One replication of bayes-fit-recovery: simulate a log from the drawn truth, fit it, and report
    the 90% intervals against the truth (a JSON row)."""
    K = len(p)
    log = B.synthetic_log(p, int(cfg["n_plays"]), span=cfg["span"], cutoff=cfg["span"], delay=cfg["model"],
                          mean=mean, shape=shape, seed=seed * 1000 + r)
    idata = B.fit(log, cfg["model"], **_RECOVERY_FIT, seed=r, priors={"delay_mean_scale": cfg["prior_scale"]},
                  prior_mean=cfg["prior_mean"])
    post = idata.posterior
    truth = {f"p[{k}]": float(p[k]) for k in range(K)}
    truth["delay_mean"] = mean
    if cfg["model"] == "weibull":
        truth["delay_shape"] = shape
    draws = {f"p[{k}]": post["p"].values[..., k].ravel() for k in range(K)}
    draws["delay_mean"] = post["delay_mean"].values.ravel()
    if cfg["model"] == "weibull":
        draws["delay_shape"] = post["delay_shape"].values.ravel()
    lo = {n: float(np.percentile(v, 5)) for n, v in draws.items()}
    hi = {n: float(np.percentile(v, 95)) for n, v in draws.items()}
    dg = B.diagnostics(idata)
    return {"truth": truth, "mean": {n: float(v.mean()) for n, v in draws.items()}, "lo": lo, "hi": hi,
            "covered": {n: bool(lo[n] <= truth[n] <= hi[n]) for n in truth},
            "r_hat_max": float(dg["r_hat_max"]), "divergences": int(dg.get("divergences", 0))}


def _fit_recovery(cfg, runs, seed, horizon, sweep=None):
    if horizon is not None:
        raise ValueError("horizon (--horizon) does not apply to bayes-fit-recovery: each replication fits a log of "
                         f"n_plays plays (now {cfg['n_plays']}; change it with --set n_plays=N); leave horizon unset")
    from .. import bayes as B
    from ..experiments.sweeping import DIRECT

    sweep = DIRECT if sweep is None else sweep

    rng = np.random.default_rng(seed)
    rows = []
    for r in range(runs):  # the truths are drawn in order (one stream); each fit is a unit of the study
        K = int(cfg["n_arms"])
        p = rng.uniform(cfg["p_low"], cfg["p_high"], K)
        mean = float(np.exp(math.log(cfg["prior_mean"]) + cfg["prior_scale"] * rng.standard_normal()))
        shape = float(np.exp(0.5 * rng.standard_normal())) if cfg["model"] == "weibull" else 1.0
        fp = {"unit": "bayes-fit-recovery", "config": {k: cfg[k] for k in sorted(cfg)}, "seed": seed, "replication": r,
              "p": p.tolist(), "mean": mean, "shape": shape, "fit": _RECOVERY_FIT, "versions": _fit_versions()}
        row = sweep.unit(fp, lambda: _recover_one(B, cfg, seed, r, p, mean, shape), cost=float(cfg["n_plays"]),
                          kind="json", what="fit")
        if row is not None:  # None: a fit another part of a split study computes
            rows.append(row)
    return FitRecovery("bayes-fit-recovery", dict(cfg), seed, rows)


FIT_RECOVERY = Experiment("bayes-fit-recovery",
                          "Offline NUTS on simulated logs (truth drawn from the prior): 90% interval coverage of p and the delay law",
                          None, {"model": "weibull", "n_arms": 3, "p_low": 0.02, "p_high": 0.2, "n_plays": 3000, "span": 300.0,
                                 "prior_mean": 30.0, "prior_scale": 0.5},
                          horizon=1, runs=40, runner=_fit_recovery, ignores=("horizon",),
                          ranges={"model": "delay family: 'exponential', 'weibull' or 'lognormal'",
                                  "n_arms": "an integer >= 1", "p_low": "lowest true rate, in [0, 1]",
                                  "p_high": "highest true rate, in [0, 1] (rates drawn uniformly between p_low and p_high)",
                                  "n_plays": "plays per log, an integer >= 1",
                                  "span": "rounds the plays span (and the cutoff), a number > 0",
                                  "prior_mean": "prior median of the delay mean, a number > 0",
                                  "prior_scale": "prior log-scale of the delay mean, a number > 0"})



# ----------------------------------------------------------------------------- warm start from a fit
def _past_campaign_fit(cfg):
    """The past campaign: a simulated log (integer rounds, Weibull delays) fitted offline with the
    Weibull model (NUTS). Returns ``(idata, log)``."""
    from .. import bayes as B

    log = B.synthetic_log(cfg["past_theta"], int(cfg["past_plays"]), span=float(cfg["past_span"]),
                          cutoff=float(cfg["past_span"]), delay="weibull", mean=float(cfg["delay_mean"]),
                          shape=float(cfg["delay_shape"]), discrete=True, seed=int(cfg["fit_seed"]))
    idata = B.fit(log, "weibull", discrete=True, num_chains=2, num_warmup=300, num_samples=500,
                  seed=int(cfg["fit_seed"]), prior_mean=float(cfg["prior_mean"]))
    return idata, log


def _warm_start(cfg):
    """Warm- vs cold-started delay-model TS on worlds drawn from the past campaign's posterior:
    one panel per world (a posterior draw of the rates and the Weibull law)."""
    from .. import bayes as B

    idata, _ = _past_campaign_fit(cfg)
    M_ = int(cfg["window"])
    pm = float(cfg["prior_mean"])
    post = idata.posterior
    p_all = post["p"].values.reshape(-1, post.sizes["arm"])
    laws = B.delay_laws(idata, draws=int(cfg["n_worlds"]), seed=int(cfg["fit_seed"]) + 1)
    idx = np.random.default_rng(int(cfg["fit_seed"]) + 1).choice(p_all.shape[0], size=int(cfg["n_worlds"]), replace=False)
    warm = B.policy_prior(idata, strength=float(cfg["strength"]))
    panels = []
    for i, (j, law) in enumerate(zip(idx, laws)):  # delay_laws picks the same draws (same seed, same choice)
        theta = [float(x) for x in p_all[j]]
        pols = {"Cold TS (default prior)": PB.delay_model_ts(M_, "weibull", prior_mean=pm),
                "Warm TS (fitted prior)": PB.delay_model_ts(M_, "weibull", prior_mean=pm, warm_start=warm)}
        name = f"world {i}: p = " + " / ".join(f"{x:.3f}" for x in theta)
        panels.append(Panel(name, E.conversions(theta, law), C.conversions(), pols))
    return panels


TS_WARM_START = Experiment("bayes-ts-warm-start",
                           "Delay-model TS warm-started from a past campaign's fit vs cold-started, on worlds drawn "
                           "from that posterior",
                           _warm_start, {"past_theta": [0.04, 0.06, 0.08], "past_plays": 6000, "past_span": 3000,
                                         "delay_mean": 60.0, "delay_shape": 1.5, "window": 255, "prior_mean": 30.0,
                                         "strength": 1.0, "n_worlds": 2, "fit_seed": 0},
                           horizon=2000, runs=40, record=("log", 40), checkpoints=(200, 500, 2000),
                           ranges={"past_theta": "the past campaign's conversion rates, 2 to 2**20 values in [0, 1]",
                                   "past_plays": "plays in the past campaign's log, an integer >= 1",
                                   "past_span": "rounds the past plays span (and the cutoff), a number > 0",
                                   "delay_mean": "mean of the past campaign's Weibull delays, a number > 0",
                                   "delay_shape": "shape of those Weibull delays, a number > 0",
                                   "window": "censoring window M of the policies, an integer >= 1",
                                   "prior_mean": "prior median of the delay mean, a number > 0",
                                   "strength": "weight of the fitted prior (power prior), a number > 0",
                                   "n_worlds": "worlds drawn from the posterior (one panel each), an integer >= 1",
                                   "fit_seed": "seed of the past log and its fit, an integer >= 0"})
