"""Thune, Cesa-Bianchi and Seldin (2019): the paper has no experiments; these are ours
(docs/reproductions/thune2019.md), with ``Bern(K, Delta)`` oblivious losses (arm 0 has mean loss
``0.5 - Delta``, the others 0.5, i.i.d. per arm and round) and the expected-loss regret against
the realised best arm.

* ``thune2019-example8``: Example 8's delays ``d_t = T - t`` for the first ``sqrt(KT/ln K)``
  rounds, swept over T: Skipper with Corollary 4's tuning (OT), Doubling (AT), the hindsight
  oracle Skipper, DEW with Theorem 1's tuning (truncated, d_max = T - 1), and untruncated DEW.
* ``thune2019-heavy-tail``: Pareto(1.5) delays and "contaminated" delays (0, or never with
  probability T^-1/2), each seed tuned with its own realised D, d_max and beta* (seeds are a
  vmapped grid axis, each with its own loss matrix and delay sequence drawn before the game).
* ``thune2019-bounds``: constant delays d at T = 2^15: every run under its bound, and
  regret / sqrt((eKT/2 + D) ln K).
"""
from __future__ import annotations

import math

import numpy as np

from ..core import validate as V
from .. import channels as C
from .. import envs as E
from ..experiments.specs import Experiment
from ..policies import adversarial as A
from ..experiments.sweeping import DIRECT, Sweep
from ..report.sweeps import SweepResults

_E = math.e
D_NEVER = 2**30


def example8_delays(T: int, K: int) -> np.ndarray:
    """The delays of Thune et al. (2019)'s Example 8 (0-indexed).

    ``d[i] = T - 1 - i`` for ``i < ceil(sqrt(KT/ln K)) - 1``, else 0: the first rounds' feedback
    arrives only at the end.

    Args:
        T: the horizon.
        K: the number of arms, ``>= 2``.

    Returns:
        int64[T], the delay sequence.

    Examples:
        >>> from jaxbandits.reproductions import thune2019
        >>> thune2019.example8_delays(10, 2).tolist()
        [9, 8, 7, 6, 5, 0, 0, 0, 0, 0]
    """
    n = math.ceil(math.sqrt(K * T / math.log(K))) - 1
    return np.where(np.arange(T) < n, T - 1 - np.arange(T), 0).astype(np.int64)


def _record(res, i, label, out, bound):
    res.add(label, i, out.final("expected_regret").ravel(), bound)
    res.lost_to_W += int(np.sum(out.lost_to_W))


def _time(res, out, runs, T):
    """Count one compiled program once (a dict of policies shares one timing)."""
    t = (next(iter(out.values())) if isinstance(out, dict) else out).timing
    n = len(out) if isinstance(out, dict) else 1
    res.add_timing(t, runs * T * n)


def _horizons(cfg, horizon):
    """The swept horizons ``2**log2_T`` (each checked before any array of that length is built),
    or the one ``horizon`` given."""
    ks = cfg["log2_T"] if isinstance(cfg["log2_T"], (list, tuple)) else [cfg["log2_T"]]
    return [2 ** V.integer("log2_T", k, lo=1, hi=24) for k in ks] if horizon is None else [V.horizon("horizon", horizon)]


def _example8(cfg, runs, seed, horizon, sweep: Sweep = DIRECT):
    K, gap = V.integer("n_arms", cfg["n_arms"], lo=2, hi=V.MAX_ARMS), float(V.real("gap", cfg["gap"], lo=0.0, hi=0.5))
    Ts = _horizons(cfg, horizon)
    res = SweepResults("thune2019-example8", dict(cfg), seed, runs, "T", Ts)
    key = V.seed_key(seed)
    for i, T in enumerate(Ts):
        d = example8_delays(T, K)
        Dt = float(d.sum())
        env = E.bernoulli_losses(K, gap, delays=d)
        b4, bstar = A.cor4_beta(K, T, Dt), A.oracle_beta(d, K, T)
        eta1 = A.thm1_eta(K, T, Dt)
        ot = sweep.simulate(env, C.attributed(), {
            "Skipper-Cor4 (OT)": A.skipper_dew(b4, count_skipped=False),
            "oracle Skipper": A.skipper_dew(bstar, count_skipped=False),
            "DEW-Thm1 (d_max=T-1)": A.dew(eta1, d_max=T - 1),
            "untruncated DEW (ref.)": A.dew(math.sqrt(math.log(K) / (_E * K * T / 2)))}, T, key, runs)
        at = sweep.simulate(env, C.action_time(width=A.doubling_width(K, T)), A.doubling(), T, key, runs)
        bounds = {"Skipper-Cor4 (OT)": A.cor4_bound(K, T, Dt), "oracle Skipper": A.oracle_bound(d, K, T),
                  "DEW-Thm1 (d_max=T-1)": A.thm1_bound(K, T, Dt, T - 1, eta1), "untruncated DEW (ref.)": float("nan")}
        for lab, o in ot.items():
            _record(res, i, lab, o, bounds[lab])
        _record(res, i, "Doubling (AT)", at, A.thm6_bound(d, K, T))
        _time(res, ot, runs, T)
        _time(res, at, runs, T)
        res.extra.setdefault("D", []).append(Dt)
        res.extra.setdefault("beta_cor4", []).append(b4)
        res.extra.setdefault("beta_star", []).append(bstar)
        res.width = max(res.width, T)
    return res


def _heavy_delays(model, T, runs, seed, alpha):
    rng = np.random.default_rng([seed, T, 0 if model == "pareto" else 1])
    if model == "pareto":  # d = floor(U^(-1/alpha)) - 1, capped at T ("never arrives")
        u = 1.0 - rng.random((runs, T))
        d = np.minimum(np.floor(u ** (-1.0 / alpha)) - 1, T)
    else:  # contaminated: 0, or T (never) with probability T^-1/2
        d = np.where(rng.random((runs, T)) < T**-0.5, T, 0)
    return d.astype(np.int64)


def _heavy_tail(cfg, runs, seed, horizon, sweep: Sweep = DIRECT):
    K, gap = V.integer("n_arms", cfg["n_arms"], lo=2, hi=V.MAX_ARMS), float(V.real("gap", cfg["gap"], lo=0.0, hi=0.5))
    alpha = float(V.positive("alpha", cfg["alpha"]))
    Ts = _horizons(cfg, horizon)
    models = list(cfg["models"])
    res = SweepResults("thune2019-heavy-tail", dict(cfg), seed, runs, "T", Ts)
    key = V.seed_key(seed)
    for i, T in enumerate(Ts):
        for model in models:
            dd = _heavy_delays(model, T, runs, seed, alpha)
            Ds = dd.sum(1).astype(np.float64)
            dmax = dd.max(1).astype(np.float64)
            eta1 = np.array([A.thm1_eta(K, T, D) for D in Ds])
            b4 = np.array([A.cor4_beta(K, T, D) for D in Ds])
            bstar = np.array([A.oracle_beta(r, K, T) for r in dd])
            grid = {"delays": dd, "salt": np.arange(runs), "eta": eta1, "dmax": dmax, "b4": b4, "bstar": bstar}
            W = int(min(T, dmax.max() + 1))

            def env_of(delays, salt):
                return E.bernoulli_losses(K, gap, delays=delays, salt=salt)

            algos = {
                "DEW-Thm1": (lambda delays, salt, eta, dmax, b4, bstar: (env_of(delays, salt), A.dew(eta, d_max=dmax)),
                             C.attributed(width=W), lambda r: A.thm1_bound(K, T, Ds[r], dmax[r], eta1[r])),
                "Skipper-Cor4": (lambda delays, salt, eta, dmax, b4, bstar:
                                 (env_of(delays, salt), A.skipper_dew(b4, count_skipped=False)),
                                 C.attributed(width=int(math.ceil(b4.max()))), lambda r: A.cor4_bound(K, T, Ds[r])),
                "Doubling": (lambda delays, salt, eta, dmax, b4, bstar: (env_of(delays, salt), A.doubling()),
                             C.action_time(width=A.doubling_width(K, T)), lambda r: A.thm6_bound(dd[r], K, T)),
                "oracle Skipper": (lambda delays, salt, eta, dmax, b4, bstar:
                                   (env_of(delays, salt), A.skipper_dew(bstar, count_skipped=False)),
                                   C.attributed(width=int(math.ceil(bstar.max()))),
                                   lambda r: A.oracle_bound(dd[r], K, T)),
                "untruncated DEW (ref.)": (lambda delays, salt, eta, dmax, b4, bstar: (env_of(delays, salt), A.dew(eta)),
                                           C.attributed(width=W), lambda r: float("nan")),
            }
            for name, (build, ch, bound) in algos.items():
                o = sweep.simulate_grid(build, grid, ch, T, key, 1)
                b = np.array([bound(r) for r in range(runs)])
                lab = f"{model}: {name}"
                res.add(lab, i, o.final("expected_regret")[:, 0], float(np.max(b)))
                res.add_timing(o.timing, runs * T)
                res.lost_to_W += int(np.sum(o.lost_to_W))
                res.extra.setdefault(f"{lab}: runs over their own bound", []).append(
                    int(np.sum(o.final("expected_regret")[:, 0] > b)))
            res.extra.setdefault(f"{model}: mean D", []).append(float(Ds.mean()))
            res.width = max(res.width, W, A.doubling_width(K, T))
            res.extra.setdefault(f"{model}: mean d_max", []).append(float(dmax.mean()))
    return res


def _bounds(cfg, runs, seed, horizon, sweep: Sweep = DIRECT):
    K, gap = V.integer("n_arms", cfg["n_arms"], lo=2, hi=V.MAX_ARMS), float(V.real("gap", cfg["gap"], lo=0.0, hi=0.5))
    T = _horizons(cfg, horizon)[0]
    ds = [V.integer("delays", d, lo=0, hi=D_NEVER) for d in cfg["delays"]]
    res = SweepResults("thune2019-bounds", {**cfg, "horizon": T}, seed, runs, "d", ds)
    key = V.seed_key(seed)
    for i, d in enumerate(ds):
        dl = np.full(T, int(d), np.int64)
        Dt = float(dl.sum())
        env = E.bernoulli_losses(K, gap, delays=dl)
        eta = A.thm1_eta(K, T, Dt)
        b4 = A.cor4_beta(K, T, Dt)
        ot = sweep.simulate(env, C.attributed(width=int(d) + 1), {"DEW-Thm1": A.dew(eta, d_max=int(d)),
                                                                 "Skipper-Cor4": A.skipper_dew(b4, count_skipped=False)},
                            T, key, runs)
        at = sweep.simulate(env, C.action_time(width=max(A.doubling_width(K, T), int(d) + 1)), A.doubling(), T, key, runs)
        _record(res, i, "DEW-Thm1", ot["DEW-Thm1"], A.thm1_bound(K, T, Dt, int(d), eta))
        _record(res, i, "Skipper-Cor4", ot["Skipper-Cor4"], A.cor4_bound(K, T, Dt))
        _record(res, i, "Doubling", at, A.thm6_bound(dl, K, T))
        _time(res, ot, runs, T)
        _time(res, at, runs, T)
        scale = math.sqrt((_E * K * T / 2 + Dt) * math.log(K))
        res.extra.setdefault("DEW / sqrt((eKT/2+D) lnK)", []).append(
            float(ot["DEW-Thm1"].final("expected_regret").mean() / scale))
        res.extra.setdefault("eta_thm1", []).append(eta)
        res.width = max(res.width, int(d) + 1, A.doubling_width(K, T))
        res.extra.setdefault("truncated", []).append(bool(eta > 1 / (4 * _E * d)) if d > 0 else False)
        res.extra.setdefault("beta_cor4", []).append(b4)
        res.extra.setdefault("runs over their bound", []).append({
            lab: int(np.sum(np.asarray(res.finals[lab][i]) > res.bounds[lab][i])) for lab in res.finals})
    return res


_RANGES = {"n_arms": "integer in [2, 2**20]", "gap": "Delta: arm 0's mean loss is 0.5 - Delta, in [0, 0.5]",
           "log2_T": "integers in [1, 24]: the horizons T = 2**log2_T"}
EXAMPLE8 = Experiment("thune2019-example8",
                      "Thune et al. 2019 Example 8 (d_t = T - t early): Cor4 vs Doubling vs oracle vs DEW, sweep over T",
                      None, {"n_arms": 2, "gap": 0.25, "log2_T": [12, 13, 14, 15, 16, 17]}, horizon=2**17, runs=20,
                      runner=_example8, horizon_keys=("log2_T",), ranges=_RANGES)
HEAVY_TAIL = Experiment("thune2019-heavy-tail",
                        "Thune et al. 2019: Pareto(1.5) and contaminated delays, DEW (rate cut) vs Skipper vs Doubling",
                        None, {"n_arms": 2, "gap": 0.25, "alpha": 1.5, "models": ["pareto", "contaminated"],
                               "log2_T": [12, 13, 14, 15, 16]}, horizon=2**16, runs=20, runner=_heavy_tail,
                        horizon_keys=("log2_T",),
                        ranges={**_RANGES, "alpha": "Pareto shape, a number > 0",
                                "models": "a non-empty list of 'pareto' and/or 'contaminated'"})
BOUNDS = Experiment("thune2019-bounds",
                    "Thune et al. 2019: constant delays, every run under its bound, regret ~ sqrt((KT + D) ln K)",
                    None, {"n_arms": 2, "gap": 0.25, "log2_T": 15, "delays": [0, 8, 32, 128, 256, 512, 1024]},
                    horizon=2**15, runs=20, runner=_bounds, horizon_keys=("log2_T",),
                    ranges={**_RANGES, "log2_T": "an integer in [1, 24]: the horizon T = 2**log2_T",
                            "delays": "constant delays d, integers in [0, 2**30]"})
