"""Pike-Burke et al. (2018), Figure 3 and Appendix F, with reconstructed parameters (the text we
worked from lost every number of the experimental section; conventions §11): two Bernoulli arms
mu = (0.5, 0.6), T = 250 000, 200 replications, E[tau] in {10, 20}; the suboptimal arm first in
ODAAF's order; the bridge arm is the empirical leader; half-normal delays with mean E read as
sigma = E sqrt(pi/2).
"""
from __future__ import annotations

import math

import numpy as np

from ..core import validate as V
from .. import channels as C
from ..core import delays as D
from .. import envs as E
from ..experiments.specs import Experiment, Panel
from ..policies import anonymous as A
from ..experiments.sweeping import DIRECT, Sweep
from ..report.sweeps import SweepResults

CFG = {"means": [0.5, 0.6], "mean_delays": [10, 20]}
RANGES = {"means": "2 to 2**20 Bernoulli means, each in [0, 1]",
          "mean_delays": "E[tau] of each panel pair, integers >= 1 (uniform delays on {0..2E}; Poisson, exponential, "
                         "half-normal of mean E)"}


def _pair(name, env, odaaf_policies):
    """One panel needs two channels (ODAAF: anonymous; QPM-D: attributed): two panels' worth of
    programs, drawn as one panel."""
    return [Panel(name, env, C.anonymous(), odaaf_policies), Panel(name, env, C.attributed(), {"QPM-D": A.qpmd()})]


def _fig3a(cfg):
    panels = []
    for e in cfg["mean_delays"]:
        d = 2 * int(e)
        env = E.bernoulli(cfg["means"], delay=D.uniform(0, d))
        panels += _pair(f"unif(0,{d}), E={e}, d={d}", env, {"ODAAF": A.odaaf(float(e)), "ODAAF-B": A.odaaf_b(float(e), d)})
    return panels


def _fig3b(cfg):
    panels = []
    for e in cfg["mean_delays"]:
        e = float(e)
        sigma = e * math.sqrt(math.pi / 2)
        for lab, law, var in [("Poisson", D.poisson(e), e), ("exponential", D.exponential(e), e * e),
                              ("half-normal", D.half_normal(sigma), sigma**2 * (1 - 2 / math.pi))]:
            env = E.bernoulli(cfg["means"], delay=law)
            panels += _pair(f"{lab}, E={e:g}, V={var:.0f}", env, {"ODAAF": A.odaaf(e), "ODAAF-V": A.odaaf_v(e, var)})
    return panels


def _appF(cfg, runs, seed, horizon, sweep: Sweep = DIRECT):
    T = V.horizon("horizon", horizon or cfg["horizon"])
    es = list(cfg["delays"])
    if len(set(es)) < 2:  # the fits below are slopes in E[tau]
        raise ValueError(f"delays: at least 2 distinct E[tau] values (a slope needs two), got {es}")
    res = SweepResults("pikeburke2018-appF", {**cfg, "horizon": T}, seed, runs, "E[tau]", [float(e) for e in es],
                       metric="regret")
    key = V.seed_key(seed)  # the same reward streams for every E: paired differences
    for i, e in enumerate(es):
        for fam in cfg["families"]:
            law = D.uniform(0, 2 * int(e)) if fam == "unif" else D.fixed(int(e))
            env = E.bernoulli(cfg["means"], delay=law)
            oa = sweep.simulate(env, C.anonymous(), {"ODAAF": A.odaaf(float(e)),
                                                     "ODAAF-B": A.odaaf_b(float(e), law.support_max)}, T, key, runs)
            oq = sweep.simulate(env, C.attributed(), A.qpmd(), T, key, runs)
            for lab, o in [*oa.items(), ("QPM-D", oq)]:
                res.add(f"{fam}: {lab}", i, o.final("regret"))
                res.lost_to_W += int(np.sum(o.lost_to_W))
            res.add_timing(next(iter(oa.values())).timing, runs * T * 2)
            res.add_timing(oq.timing, runs * T)
    for lab in res.finals:  # linear fit of R_T against E[tau], and of the paired differences
        m = res.mean_se(lab)[0]
        x = np.asarray(res.x)
        slope, icept = np.polyfit(x, m, 1)
        pred = slope * x + icept
        r2 = 1 - np.sum((m - pred) ** 2) / max(np.sum((m - m.mean()) ** 2), 1e-12)
        diffs = np.stack(res.finals[lab]) - res.finals[lab][0][None, :]  # per replication, against E_0
        pslope = float(np.polyfit(x, diffs.mean(1), 1)[0])
        res.extra.setdefault("fit", {})[lab] = {"slope": float(slope), "r2": float(r2), "paired_slope": pslope}
    return res


FIG3A = Experiment("pikeburke2018-fig3a",
                   "Pike-Burke et al. 2018 Fig. 3(a): ODAAF and ODAAF-B over QPM-D, bounded (uniform) delays",
                   _fig3a, dict(CFG), horizon=250_000, runs=200, record=("log", 200), layout=(1, 2),
                   ratio_to="QPM-D", checkpoints=(25_000, 50_000, 125_000, 250_000), ranges=RANGES)
FIG3B = Experiment("pikeburke2018-fig3b",
                   "Pike-Burke et al. 2018 Fig. 3(b): ODAAF and ODAAF-V over QPM-D, Poisson/exponential/half-normal",
                   _fig3b, dict(CFG), horizon=250_000, runs=200, record=("log", 200), layout=(2, 3),
                   ratio_to="QPM-D", checkpoints=(25_000, 50_000, 125_000, 250_000), ranges=RANGES)
APP_F = Experiment("pikeburke2018-appF",
                   "Pike-Burke et al. 2018 App. F: regret of ODAAF, ODAAF-B and QPM-D against E[tau] (paired streams)",
                   None, {"means": [0.5, 0.6], "delays": [0, 5, 10, 25, 50, 100], "families": ["unif", "const"],
                          "horizon": 250_000}, horizon=250_000, runs=40, runner=_appF,
                   horizon_keys=("horizon",),
                   ranges={"means": RANGES["means"], "delays": "E[tau] values, integers >= 0, at least 2 distinct",
                           "families": "a non-empty list of 'unif' (uniform on {0..2E}) and/or 'const' (delay E)",
                           "horizon": "an integer in [1, 2**24]"})
