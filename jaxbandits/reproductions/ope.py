"""``ope-bias-coverage`` (docs/ope.md, *Checked against the truth*): the bias and the 95% interval
coverage of the off-policy estimators, delay-aware and delay-ignorant, on logs simulated with a
known target value and read while many conversions are still pending, for several delay laws
(geometric, log-normal and Pareto: the last two long-tailed)."""
from __future__ import annotations

import math

import numpy as np

from ..experiments.specs import Experiment

LAWS = {
    "geometric": ("geometric", {"mean": 20.0}),
    "log-normal": ("log_normal", {"mu": 3.0, "sigma": 1.0}),
    "pareto": ("pareto", {"alpha": 1.5, "scale": 5.0}),
}


def _law(name):
    from ..core import delays as D

    if name not in LAWS:
        raise ValueError(f"ope-bias-coverage: laws must be among {list(LAWS)}, got {name!r}")
    fn, kw = LAWS[name]
    return getattr(D, fn)(**kw)


def _one_law(cfg, seed, name, runs):
    """All replications of one law: per estimator, the estimates and whether each interval covered."""
    from .. import ope

    law = _law(name)
    truth = ope.true_value(cfg["target"], cfg["rates"], law, cfg["window"])
    vals, cov = {}, {}
    for r in range(runs):
        log = ope.simulate_log(seed * 1_000_003 + r, int(cfg["n_decisions"]), cfg["rates"], law, cfg["logging"],
                               span=float(cfg["span"]))
        rep = ope.evaluate(log, cfg["target"], window=cfg["window"], delay=law, level=0.95)
        for e in rep.estimates:
            vals.setdefault(e.name, []).append(e.value)
            cov.setdefault(e.name, []).append(bool(e.lo <= truth <= e.hi))
    rows = {}
    for k, v in vals.items():
        v = np.asarray(v)
        mcse = float(v.std(ddof=1) / math.sqrt(v.size)) if v.size > 1 else float("nan")
        rows[k] = {"mean": float(v.mean()), "bias": float(v.mean() - truth), "mcse": mcse,
                   "bias_over_mcse": float((v.mean() - truth) / mcse) if mcse > 0 else float("nan"),
                   "coverage_95": float(np.mean(cov[k])), "sd": float(v.std(ddof=1)) if v.size > 1 else float("nan")}
    return {"law": name, "truth": truth, "runs": runs, "estimators": rows}


class BiasCoverage:
    """The study's result: ``summary.json``, ``table.md``, ``bias_coverage.png``."""

    def __init__(self, config, seed, laws):
        self.experiment, self.config, self.seed, self.laws = "ope-bias-coverage", config, seed, laws
        self.runs = laws[0]["runs"] if laws else 0

    def summary(self):
        return {"experiment": "ope-bias-coverage", "config": self.config, "seed": self.seed, "runs": self.runs,
                "laws": self.laws}

    def table(self):
        lines = ["| delay law | estimator | truth | mean | bias | bias / MC s.e. | 95% coverage |",
                 "|---|---|---|---|---|---|---|"]
        for L in self.laws:
            for k, r in L["estimators"].items():
                lines.append(f"| {L['law']} | {k} | {L['truth']:.4f} | {r['mean']:.4f} | {r['bias']:+.4f} | "
                             f"{r['bias_over_mcse']:+.1f} | {r['coverage_95']:.3f} |")
        return "\n".join(lines) + f"\n\n{self.runs} simulated logs per law.\n"

    def save(self, out_dir, plot=True, force=False):
        from ..core.fileio import json_writer, save_files, text_writer

        files = {"summary.json": json_writer(self.summary()), "table.md": text_writer(self.table())}
        if plot:
            files["bias_coverage.png"] = self._plot
        ident = {"experiment": "ope-bias-coverage", "config": self.config}
        return {"summary": save_files(out_dir, files, ident, force=force)["summary.json"]}

    def _plot(self, path):
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, axes = plt.subplots(1, 2, figsize=(10, 3.8), dpi=110)
        names = list(self.laws[0]["estimators"]) if self.laws else []
        width = 0.8 / max(len(self.laws), 1)
        for j, L in enumerate(self.laws):
            x = np.arange(len(names)) + j * width
            b = [L["estimators"][n]["bias"] for n in names]
            e = [1.96 * L["estimators"][n]["mcse"] for n in names]
            c = [L["estimators"][n]["coverage_95"] for n in names]
            axes[0].bar(x, b, width, yerr=e, label=L["law"])
            axes[1].bar(x, c, width, label=L["law"])
        for ax in axes:
            ax.set_xticks(np.arange(len(names)) + 0.4 - width / 2, names, rotation=60, ha="right", fontsize=7)
        axes[0].axhline(0, color="k", lw=0.8)
        axes[0].set_ylabel("bias (mean - truth), 95% MC interval")
        axes[1].axhline(0.95, color="k", ls="--", lw=0.8)
        axes[1].set_ylim(0, 1)
        axes[1].set_ylabel("95% interval coverage")
        axes[0].legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(path)
        plt.close(fig)


def _bias_coverage(cfg, runs, seed, horizon, sweep=None):
    if horizon is not None:
        raise ValueError("horizon (--horizon) does not apply to ope-bias-coverage: each log has n_decisions decisions "
                         f"(now {cfg['n_decisions']}; change it with --set n_decisions=N); leave horizon unset")
    from ..experiments.results import versions
    from ..experiments.sweeping import DIRECT

    sweep = DIRECT if sweep is None else sweep

    laws = list(cfg["laws"])
    for name in laws:
        _law(name)
    out = []
    for name in laws:  # one unit of the study per law
        fp = {"unit": "ope-bias-coverage", "config": {k: cfg[k] for k in sorted(cfg)}, "seed": seed, "law": name,
              "runs": runs, "versions": {k: versions().get(k) for k in ("jaxbandits", "jax")}}
        row = sweep.unit(fp, lambda: _one_law(cfg, seed, name, runs), cost=float(runs * cfg["n_decisions"]),
                          kind="json", what="law")
        if row is not None:
            out.append(row)
    return BiasCoverage(dict(cfg), seed, out)


BIAS_COVERAGE = Experiment(
    "ope-bias-coverage",
    "Off-policy estimators on logs read while conversions are pending: bias and 95% coverage, delay-aware vs ignorant",
    None, {"laws": list(LAWS), "rates": [0.3, 0.5], "logging": [0.5, 0.5], "target": [0.2, 0.8], "window": 100,
           "n_decisions": 1500, "span": 300.0},
    horizon=1, runs=500, runner=_bias_coverage, ignores=("horizon",),
    ranges={"laws": f"a list of delay laws among {list(LAWS)}", "rates": "per-arm conversion rates in [0, 1]",
            "logging": "the logging law over the arms (positive, summing to 1)",
            "target": "the target law over the arms (summing to 1)",
            "window": "conversion window m, an integer >= 0",
            "n_decisions": "decisions per log, an integer >= 2",
            "span": "rounds the decisions span (the log is read at the last one), a number > 0"})
