"""Results of a sweep: final regret against a swept quantity (the horizon T, a delay d, ...),
one point per setting, with per-run finals, bounds and log-log slopes.

``summary.json`` keeps the contract of :class:`jaxbandits.experiments.results.Results`: ``policies[label]``
has ``t`` (here: the swept values), ``regret_mean``, ``regret_se``, ``final_regret_mean`` (at the
last setting) and ``final_regret_se``; plus ``sweep`` (the swept variable), ``slope`` (least-squares
slope of log regret against log x over the last four settings) and ``bound`` (the theory bound at
each setting, where one applies).
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Dict, List

import numpy as np

from ..experiments.results import jsonable, versions


#: The axis label of a sweep's quantity, with its unit (the library's sweeps are over rounds).
SWEEP_AXES = {"T": "horizon T (rounds)", "d": "delay d (rounds)", "E[tau]": "mean delay E[tau] (rounds)"}


@dataclass
class SweepResults:
    """The final regret of each policy at each setting of a swept quantity (module docstring):
    per-run finals, bounds, slopes, saved as :class:`jaxbandits.experiments.results.Results` saves.

    Attributes:
        experiment: the experiment's name.
        config: its configuration.
        seed: the seed.
        runs: the runs at each setting.
        sweep: the name of the swept variable (``"T"``, ``"d"``, ``"E[tau]"``: :data:`SWEEP_AXES`).
        x: the swept values.
        finals: ``{label: [per-run finals at each x]}`` (:meth:`add`).
        bounds: ``{label: [bound at each x]}`` (nan: none).
        extra: per-x facts (``D``, ``beta``, ...).
        timing: ``compile_s``, ``run_s``, ``run_steps`` and ``devices`` summed over the settings.
        lost_to_W: the records the channels dropped, all settings.
        width: the calendar length.
        metric: the regret read at each setting (``"expected_regret"`` by default).
        versions: the library's and its dependencies' versions.

    Examples:
        >>> from jaxbandits.report.sweeps import SweepResults
        >>> res = SweepResults("demo", {}, seed=0, runs=3, sweep="T", x=[100, 1000])
        >>> res.add("ucb1", 0, [10.0, 12.0, 14.0])
        >>> res.add("ucb1", 1, [30.0, 30.0, 30.0])
        >>> res.mean_se("ucb1")[0].tolist()
        [12.0, 30.0]
    """

    experiment: str
    config: dict
    seed: int
    runs: int
    sweep: str  # name of the swept variable ("T", "d", ...)
    x: List[float]
    finals: Dict[str, List[np.ndarray]] = field(default_factory=dict)  # label -> per-x arrays of per-run finals
    bounds: Dict[str, List[float]] = field(default_factory=dict)  # label -> bound at each x (nan: none)
    extra: Dict[str, list] = field(default_factory=dict)  # per-x facts (D, beta, ...)
    timing: dict = field(default_factory=lambda: {"compile_s": 0.0, "run_s": 0.0, "run_steps": 0, "devices": 1})
    lost_to_W: int = 0
    width: int = 0
    metric: str = "expected_regret"
    versions: dict = field(default_factory=versions)

    @property
    def horizon(self):
        return int(self.config.get("horizon", max(self.x) if self.sweep == "T" else 0))

    def add(self, label, x_index, finals, bound=float("nan")):
        self.finals.setdefault(label, [None] * len(self.x))[x_index] = np.asarray(finals, np.float64)
        self.bounds.setdefault(label, [float("nan")] * len(self.x))[x_index] = float(bound)

    def add_timing(self, timing, steps):
        self.timing["compile_s"] += timing["compile_s"]
        self.timing["run_s"] += timing["run_s"]
        self.timing["run_steps"] += steps
        self.timing["devices"] = timing.get("devices", 1)

    def mean_se(self, label):
        f = self.finals[label]
        m = np.array([a.mean() for a in f])
        se = np.array([a.std(ddof=1) / np.sqrt(a.size) if a.size > 1 else 0.0 for a in f])
        return m, se

    def slope(self, label, last: int = 4):
        m, _ = self.mean_se(label)
        x = np.asarray(self.x, np.float64)[-last:]
        return float(np.polyfit(np.log(x), np.log(np.maximum(m[-last:], 1e-12)), 1)[0])

    def summary(self) -> dict:
        t = self.timing
        timing = {"compile_s": t["compile_s"], "run_s": t["run_s"],
                  "run_steps_per_s": t["run_steps"] / max(t["run_s"], 1e-12), "devices": t["devices"]}
        pol = {}
        for lab in self.finals:
            m, se = self.mean_se(lab)
            pol[lab] = {"final_regret_mean": float(m[-1]), "final_regret_se": float(se[-1]),
                        "t": [float(v) for v in self.x], "regret_mean": m.tolist(), "regret_se": se.tolist(),
                        "final_regret_runs": self.finals[lab][-1].tolist(), "bound": self.bounds[lab],
                        "slope": self.slope(lab) if len(self.x) >= 2 and self.sweep == "T" else None}
        return {"experiment": self.experiment, "config": jsonable(self.config), "seed": self.seed,
                "runs": self.runs, "horizon": self.horizon, "metric": self.metric, "sweep": self.sweep,
                "width": self.width, "lost_to_W": int(self.lost_to_W), "policies": pol,
                "extra": jsonable(self.extra), "timing": timing, "versions": self.versions}

    def table(self) -> str:
        labs = list(self.finals)
        head = f"| {self.sweep} | " + " | ".join(labs) + " |"
        rows = [head, "|---|" + "---|" * len(labs)]
        stats = {lab: self.mean_se(lab) for lab in labs}
        for i, x in enumerate(self.x):
            cells = []
            for lab in labs:
                m, se = stats[lab]
                b = self.bounds[lab][i]
                cells.append(f"{m[i]:.0f} ± {se[i]:.0f}" + ("" if np.isnan(b) else f" (bound {b:.0f})"))
            rows.append(f"| {x:g} | " + " | ".join(cells) + " |")
        if self.sweep == "T" and len(self.x) >= 2:
            rows.append("| slope (last 4) | " + " | ".join(f"{self.slope(l):.2f}" for l in labs) + " |")
        return "\n".join(rows) + "\n"

    def to_xarray(self):
        import xarray as xr

        labs = list(self.finals)
        arr = np.stack([np.stack(self.finals[l]) for l in labs])  # policy, x, run
        return xr.Dataset(
            {"final_regret": (("policy", self.sweep, "run"), arr),
             "bound": (("policy", self.sweep), np.array([self.bounds[l] for l in labs]))},
            coords={"policy": labs, self.sweep: np.asarray(self.x), "run": np.arange(arr.shape[-1])},
            attrs={"experiment": self.experiment, "config": json.dumps(jsonable(self.config)), "seed": self.seed,
                   "metric": self.metric, "extra": json.dumps(jsonable(self.extra)),
                   "timing": json.dumps(jsonable(self.timing)), "versions": json.dumps(self.versions)})

    def identity(self) -> dict:
        """What the results are of (see :meth:`jaxbandits.experiments.results.Results.identity`)."""
        return {"experiment": self.experiment, "config": jsonable(self.config)}

    def save(self, out_dir, plot=True, force=False) -> dict:
        """Write ``results.nc``, ``summary.json``, ``table.md`` and (``plot``) ``regret.png`` into
        ``out_dir`` as one unit, atomically, removing the files of the folder's previous results
        (as :meth:`jaxbandits.experiments.results.Results.save`, ``force`` included)."""
        from ..core import fileio

        files = {"results.nc": lambda p: self.to_xarray().to_netcdf(p, engine="h5netcdf"),
                 "summary.json": fileio.json_writer(self.summary()),
                 "table.md": fileio.text_writer(f"{self.experiment}: {self.runs} runs, mean ± s.e. of the final "
                                             f"{self.metric}\n\n" + self.table())}
        if plot:
            files["regret.png"] = self.plot
        keys = {"results.nc": "results", "summary.json": "summary", "table.md": "table", "regret.png": "plot"}
        written = fileio.save_files(out_dir, files, self.identity(), force=force)
        return {keys[name]: path for name, path in written.items()}

    def plot(self, path):
        """Final regret against the swept variable (log-log), ± 2 s.e. bands, bounds dotted, in the
        style of every jaxbandits figure (:func:`jaxbandits.report.plotting.style`)."""
        from .plotting import style

        with style():
            return self._plot(path)

    def _plot(self, path):
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(6.4, 4.4), dpi=120)
        x = np.asarray(self.x, np.float64)
        for lab in self.finals:
            m, se = self.mean_se(lab)
            sl = f", slope {self.slope(lab):.2f}" if self.sweep == "T" and len(x) >= 2 else ""
            line, = ax.plot(x, m, "o-", label=f"{lab}{sl}")
            ax.fill_between(x, np.maximum(m - 2 * se, 1e-9), m + 2 * se, alpha=0.2, color=line.get_color())
            b = np.asarray(self.bounds[lab])
            if np.isfinite(b).any():
                ax.plot(x, b, ":", color=line.get_color(), lw=1)
        ax.set_xscale("log", base=2 if self.sweep == "T" else 10)
        ax.set_yscale("log")
        ax.set_xlabel(SWEEP_AXES.get(self.sweep, self.sweep))
        ax.set_ylabel(f"final {self.metric.replace('_', ' ')}")
        ax.set_title(f"{self.experiment}: {self.runs} runs, mean ± 2 s.e.; dotted: bounds", fontsize=9)
        ax.grid(alpha=0.3, which="both")
        ax.legend(fontsize=7)
        fig.tight_layout()
        from .plotting import save_figure

        return save_figure(fig, path)
