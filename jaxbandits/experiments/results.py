"""Results of an experiment: per-policy regret curves (mean and standard error over runs, per-run
finals), configuration, versions and timing; saved as netCDF (xarray) plus ``summary.json``.

``summary.json`` is a contract read by later work and outside tools::

    {experiment, config, seed, runs, horizon, metric, width, lost_to_W,
     policies: {label: {final_regret_mean, final_regret_se, t, regret_mean, regret_se, ...}},
     timing: {compile_s, run_s, run_steps_per_s, ...}, versions: {...}}
"""
from __future__ import annotations

import json
import os
import platform
from dataclasses import dataclass, field
from typing import Dict

import numpy as np

from ..core.intervals import t_interval, t_interval_moments

def versions() -> dict:
    """The versions and settings a result was computed with (the ``versions`` entry of
    ``summary.json``): jaxbandits, JAX, NumPy and Python, JAX's default backend and the two JAX
    settings that change the random draws (``x64``, ``threefry_partitionable``).

    Returns:
        A dict of str to str or bool.

    Examples:
        >>> from jaxbandits.experiments.results import versions
        >>> sorted(versions())
        ['backend', 'jax', 'jaxbandits', 'numpy', 'python', 'threefry_partitionable', 'x64']
    """
    import jax

    from ..version import __version__

    return {"jaxbandits": __version__, "jax": jax.__version__, "numpy": np.__version__,
            "python": platform.python_version(), "backend": jax.default_backend(),
            "x64": bool(jax.config.jax_enable_x64),
            "threefry_partitionable": bool(jax.config.jax_threefry_partitionable)}


#: The figures :meth:`Results.save` draws with ``plot=True``: a function of the results giving
#: ``{file name: (key of save's answer, writer(path))}``. Figures belong to the report layer above
#: results (:func:`jaxbandits.report.plotting.results_figures`); the package wires that function in when it
#: is imported (``jaxbandits/__init__.py``), so this module never imports the plots above it.
FIGURES = None


@dataclass
class Results:
    """The results of an experiment: per-policy curves over runs at the record points ``t``, the
    statistics over all runs reduced on the device, configuration, versions and timing
    (docs/results.md). Made by :func:`~jaxbandits.experiments.runner.run`
    (:meth:`~jaxbandits.experiments.results.Results.from_sim`), read back with
    :meth:`~jaxbandits.experiments.results.Results.load`, written with
    :meth:`~jaxbandits.experiments.results.Results.save`. Either form: every run's curves held (the
    per-run form, :attr:`~jaxbandits.experiments.results.Results.per_run`), or the curves of the
    first :attr:`~jaxbandits.experiments.results.Results.kept` runs (possibly none) and ``stats``
    over all runs; every method gives the same numbers from either.

    Attributes:
        experiment: the experiment's name.
        config: the configuration it ran with.
        seed: the seed of the run.
        runs: the number of runs.
        horizon: the number of rounds.
        t: the record points (rounds completed), an int array of length ``R``.
        curves: ``{label: {metric: array [kept, R], "pulls": array [kept, K]}}`` (``regret``,
            ``expected_regret``, ``reward``, optionally ``delayed_regret`` / ``fixed_regret``).
        metric: the experiment's metric (default ``"regret"``).
        width: the channel's window width (0 without one).
        lost_to_W: ``{label: feedback lost beyond the window}``.
        timing: compile and run times (``compile_s``, ``run_s``, ``run_steps_per_s``...).
        versions: :func:`versions` at the run.
        panels: ``{label: panel name}`` of a multi-panel experiment (empty: one panel).
        log_lines: ``{panel: {line label: c}}``, reference lines ``c log t`` drawn in the figures.
        checkpoints: the rounds reported in :meth:`~jaxbandits.experiments.results.Results.table`.
        layout: the figure's layout of the panels (None: the default).
        ratio_to: a policy label: the figures also draw ``ratio.png`` against it (None: not).
        stats: ``{label: jaxbandits.engine.stats.Stats}`` over all runs (empty: computed from
            ``curves``).

    Examples:
        >>> import numpy as np
        >>> from jaxbandits import Results
        >>> c = {"regret": np.array([[1.0, 2.0], [3.0, 4.0]]), "pulls": np.array([[5, 15], [10, 10]])}
        >>> r = Results("demo", {}, 0, 2, 20, np.array([10, 20]), {"UCB1": c})
        >>> r.per_run, r.kept
        (True, 2)
        >>> m, se = r.mean_se("UCB1")
        >>> m.tolist(), se.tolist()
        ([2.0, 3.0], [1.0, 1.0])
        >>> r.mean_pulls("UCB1").tolist()
        [7.5, 12.5]
    """

    experiment: str
    config: dict
    seed: int
    runs: int
    horizon: int
    t: np.ndarray  # rounds completed at each record point
    curves: Dict[str, Dict[str, np.ndarray]]  # label -> {regret [runs, R], expected_regret, reward, pulls [runs, K]}
    metric: str = "regret"
    width: int = 0
    lost_to_W: Dict[str, int] = field(default_factory=dict)
    timing: dict = field(default_factory=dict)
    versions: dict = field(default_factory=versions)
    panels: Dict[str, str] = field(default_factory=dict)  # label -> panel name (multi-panel figures)
    log_lines: Dict[str, dict] = field(default_factory=dict)  # panel -> {line label: c} drawn as c log t
    checkpoints: list = field(default_factory=list)  # rounds reported in the table
    layout: object = None
    ratio_to: object = None  # a policy label: also plot ratio.png (mean regret / its mean regret)
    #: label -> statistics over all runs (jaxbandits.engine.stats.Stats), reduced on the device;
    #: empty for results without them (grids, files of earlier versions): then computed from curves
    stats: dict = field(default_factory=dict)

    @classmethod
    def from_sim(cls, experiment, config, seed, runs, horizon, outs, metric="regret", timing=None):
        """The results of a simulation's outputs ``{label: SimOutput}`` (the per-run curves, or the
        statistics of the reduced form).

        Args:
            experiment: the experiment's name.
            config: its config.
            seed: the seed.
            runs: the number of runs.
            horizon: the number of rounds.
            outs: ``{label: SimOutput}``.
            metric: the experiment's metric.
            timing: the run's timing (None: ``{}``).

        Returns:
            The :class:`~jaxbandits.experiments.results.Results`.

        Raises:
            ValueError: ``outs`` is empty (the message names the config's empty lists).
        """
        if not outs:
            empty = sorted(k for k, v in (config or {}).items()
                           if isinstance(v, (list, tuple)) and len(v) == 0 and k != "channels")
            raise ValueError(f"experiment {experiment!r} has nothing to run: "
                             + (f"the config list(s) {', '.join(empty)} are empty; give at least one value"
                                if empty else "its build returned no policy"))
        first = next(iter(outs.values()))
        stats = {lab: o.stats for lab, o in outs.items()} if all(o.stats is not None for o in outs.values()) else {}
        curves = {}
        for lab, o in outs.items():
            R = len(o.t)
            if o.regret is None:  # the reduced form: no run's curves (the metrics recorded: those of the stats)
                K = o.stats.moments["pulls"][0].shape[-1]
                e = np.zeros((0, R), np.float32)
                curves[lab] = {k: e for k in o.stats.metrics()}
                curves[lab]["pulls"] = np.zeros((0, K), np.int32)
                continue
            curves[lab] = {"regret": o.regret, "expected_regret": o.expected_regret, "reward": o.reward,
                           "pulls": o.pulls[..., -1, :]}
            if o.delayed_regret is not None:
                curves[lab]["delayed_regret"] = o.delayed_regret
            if o.fixed_regret is not None:  # adversarial: against the fixed i* of each run
                curves[lab]["fixed_regret"] = o.fixed_regret
        return cls(experiment, dict(config), int(seed), int(runs), int(horizon), first.t, curves, metric,
                   int(max(o.width for o in outs.values())), {lab: int(np.sum(o.lost_to_W)) for lab, o in outs.items()},
                   dict(timing or first.timing), stats=stats)

    # ------------------------------------------------------------------ statistics
    def _stats_of(self, label, metric):
        """The statistics of ``metric`` of ``label`` when the results hold them and not every run's
        curves, else ``None``. The per-run form (every run's curves held) computes its numbers from
        the per-run arrays in float64 numpy, as results always were (the same bits as before the
        statistics existed); the reduced form (or the curves of a first few runs) from the
        statistics (docs/results.md, "The two forms")."""
        if self.per_run:
            return None
        st = self.stats.get(label) if self.stats else None
        return st if st is not None and metric in st.moments else None

    @property
    def per_run(self) -> bool:
        """Whether the results hold every run's curves (the per-run form)."""
        return self.kept == self.runs

    @property
    def kept(self) -> int:
        """The number of runs whose curves the results hold (``runs`` in the per-run form)."""
        return int(np.shape(next(iter(self.curves.values()))["regret"])[0])

    def moments(self, label, metric=None, other=None):
        """``(n, mean, m2)`` over runs at every record point, float64: of ``metric`` (default the
        experiment's) of ``label``, or of the paired difference ``label - other``."""
        metric = metric or self.metric
        st = self._stats_of(label, metric)
        if st is not None and (other is None or (other in st.paired and metric in st.paired[other])):
            return st.combined(metric, other)
        x = np.asarray(self.curves[label][metric], np.float64)
        if other is not None:
            x = x - np.asarray(self.curves[other][metric], np.float64)
        if x.shape[0] < self.runs:
            raise ValueError(f"the results hold the curves of {x.shape[0]} of {self.runs} runs and no statistics of "
                             f"{metric!r}: rerun with keep='all'")
        m = x.mean(0)
        return x.shape[0], m, ((x - m) ** 2).sum(0)

    def mean_se(self, label, metric=None):
        """``(mean, se)`` of ``metric`` (default the experiment's) of ``label`` over runs at every
        record point, float64; ``se`` is 0 for one run.

        Args:
            label: the policy's label.
            metric: the recorded curve (None: the experiment's metric).

        Returns:
            Two arrays of length ``R``.
        """
        metric = metric or self.metric
        if self._stats_of(label, metric) is None:
            x = np.asarray(self.curves[label][metric], np.float64)
            n = x.shape[0]
            return x.mean(0), (x.std(0, ddof=1) / np.sqrt(n) if n > 1 else np.zeros(x.shape[1:]))
        return self.stats[label].mean_se(metric)

    def interval(self, label, metric=None, level=0.95):
        """``(lo, hi)``: the ``level`` Student t interval of the mean regret over runs at every record
        point (:func:`jaxbandits.core.intervals.t_interval`; NaN for one run)."""
        metric = metric or self.metric
        if self._stats_of(label, metric) is None:
            _, lo, hi = t_interval(self.curves[label][metric], axis=0, level=level)
            return lo, hi
        _, lo, hi = t_interval_moments(*self.moments(label, metric), level=level)
        return lo, hi

    def final_runs(self, label, metric=None) -> np.ndarray:
        """Every run's value of ``metric`` at the last record point, ``[runs]`` (either form)."""
        metric = metric or self.metric
        st = None if self.per_run else (self.stats.get(label) if self.stats else None)
        if st is not None and metric in st.final:
            return np.asarray(st.final[metric])
        return np.asarray(self.curves[label][metric])[:, -1]

    def mean_pulls(self, label) -> np.ndarray:
        """Mean pulls of every arm over runs at the horizon, float64 ``[K]``."""
        st = None if self.per_run else (self.stats.get(label) if self.stats else None)
        if st is not None:
            return st.combined("pulls")[1][-1]
        return np.asarray(self.curves[label]["pulls"], np.float64).mean(0)

    def summary(self) -> dict:
        """The contents of ``summary.json`` (the module docstring lists its keys): per policy the
        mean, standard error and 95% t interval of the metric at every record point and at the
        checkpoints, every run's final value and the mean pulls.

        Returns:
            A dict of plain JSON values.
        """
        pol = {}
        for lab in self.curves:
            m, se = self.mean_se(lab)
            fin = self.final_runs(lab)
            pulls = self.mean_pulls(lab)
            lo, hi = self.interval(lab)
            pol[lab] = {"final_regret_mean": float(m[-1]), "final_regret_se": float(se[-1]),
                        "t": [int(x) for x in self.t], "regret_mean": [float(x) for x in m],
                        "regret_se": [float(x) for x in se],
                        "final_regret_runs": [float(x) for x in fin],
                        "mean_pulls": [float(x) for x in pulls], "lost_to_W": self.lost_to_W.get(lab, 0),
                        # 95% t intervals of the mean over runs (docs/compare.md); null for one run
                        "final_regret_ci95": [_finite(lo[-1]), _finite(hi[-1])],
                        "regret_ci95_lo": [_finite(x) for x in lo], "regret_ci95_hi": [_finite(x) for x in hi]}
            if "delayed_regret" in self.curves[lab]:
                lm, lse = self.mean_se(lab, "delayed_regret")
                pol[lab].update(final_delayed_regret_mean=float(lm[-1]), final_delayed_regret_se=float(lse[-1]))
            if "fixed_regret" in self.curves[lab]:
                fm, fse = self.mean_se(lab, "fixed_regret")
                pol[lab].update(final_fixed_regret_mean=float(fm[-1]), final_fixed_regret_se=float(fse[-1]))
            if self.panels:
                pol[lab]["panel"] = self.panels.get(lab, "")
            if self.checkpoints:
                idx = [int(np.searchsorted(self.t, c)) for c in self.checkpoints]
                pol[lab]["checkpoints"] = {str(c): {"mean": float(m[i]), "se": float(se[i]),
                                                    "ci95": [_finite(lo[i]), _finite(hi[i])]}
                                           for c, i in zip(self.checkpoints, idx)}
        return {"experiment": self.experiment, "config": jsonable(self.config), "seed": self.seed,
                "runs": self.runs, "horizon": self.horizon, "metric": self.metric, "width": self.width,
                "lost_to_W": int(sum(self.lost_to_W.values())), "policies": pol,
                "timing": jsonable(self.timing), "versions": self.versions,
                **({"log_lines": jsonable(self.log_lines)} if self.log_lines else {})}

    def table(self) -> str:
        """Markdown table of the mean regret (+- s.e.) at the checkpoints, and L(T) where tracked."""
        cps = self.checkpoints or [int(self.t[-1])]
        has_l = any("delayed_regret" in c for c in self.curves.values())
        head = "| policy | " + " | ".join(f"R({c})" for c in cps) + (" | L(T) |" if has_l else " |")
        rows = [head, "|" + "---|" * (len(cps) + 1 + has_l)]
        for lab in self.curves:
            m, se = self.mean_se(lab)
            cells = [f"{m[int(np.searchsorted(self.t, c))]:.1f} ± {se[int(np.searchsorted(self.t, c))]:.1f}" for c in cps]
            if has_l:
                if "delayed_regret" in self.curves[lab]:
                    lm, lse = self.mean_se(lab, "delayed_regret")
                    cells.append(f"{lm[-1]:.1f} ± {lse[-1]:.1f}")
                else:
                    cells.append("")
            rows.append(f"| {lab} | " + " | ".join(cells) + " |")
        note = ["", f"R(t): the mean {self.metric} after t rounds, ± its standard error over the runs."]
        if has_l:
            note.append(f"L(T): the delayed regret at the horizon T = {self.horizon} (Vernade et al. 2017), "
                        "Σ_s Δ_(A_s) τ_min(T−s, m): each play's gap weighted by the probability that its "
                        "conversion has been seen by T (docs/simulate.md).")
        return "\n".join(rows + note) + "\n"

    def to_xarray(self):
        """The results as an ``xarray.Dataset`` (what ``results.nc`` holds): the kept runs' curves
        by policy, run and record point, the statistics over all runs, and the settings as attributes.

        Returns:
            An ``xarray.Dataset``.
        """
        import xarray as xr

        labs = list(self.curves)
        K = max(np.asarray(self.curves[l]["pulls"]).shape[-1] for l in labs)

        def pad(a):  # panels may differ in their number of arms: pad pulls with zeros
            a = np.asarray(a)
            return np.concatenate([a, np.zeros(a.shape[:-1] + (K - a.shape[-1],), a.dtype)], -1)

        st = lambda k: np.stack([pad(self.curves[l][k]) if k == "pulls" else np.asarray(self.curves[l][k])
                                 for l in labs])
        data = {}
        kept = self.kept
        rd = "run" if kept == self.runs else "kept_run"  # the runs whose curves are held
        # regret always; the others where every policy has them (a Results built by hand, as in the
        # class's example, may hold regret and pulls alone: load() reads whichever were written)
        data["regret"] = (("policy", rd, "t"), st("regret"))
        for opt in ("expected_regret", "reward", "delayed_regret", "fixed_regret"):
            if all(opt in self.curves[l] for l in labs):
                data[opt] = (("policy", rd, "t"), st(opt))
        data["final_pulls"] = (("policy", rd, "arm"), st("pulls"))
        if self.stats:  # statistics over all runs (docs/results.md): combined moments, paired differences, finals
            R = len(self.t)
            mets = [k for k in self.stats[labs[0]].metrics() if all(k in self.stats[l].moments for l in labs)]
            data["count"] = (("policy",), np.array([self.stats[l].n for l in labs], np.int64))
            for k in mets + ["pulls"]:
                ms = [self.stats[l].combined(k) for l in labs]
                if k == "pulls":
                    data["pulls_mean"] = (("policy", "t", "arm"), np.stack([pad(m) for _, m, _ in ms]))
                    continue
                data[f"{k}_mean"] = (("policy", "t"), np.stack([m for _, m, _ in ms]))
                data[f"{k}_m2"] = (("policy", "t"), np.stack([M for _, _, M in ms]))
                dm, dM = np.full((len(labs), len(labs), R), np.nan), np.full((len(labs), len(labs), R), np.nan)
                for i, a in enumerate(labs):
                    for j, b in enumerate(labs):
                        if b in self.stats[a].paired and k in self.stats[a].paired[b]:
                            _, dm[i, j], dM[i, j] = self.stats[a].combined(k, b)
                data[f"diff_{k}_mean"] = (("policy", "other", "t"), dm)
                data[f"diff_{k}_m2"] = (("policy", "other", "t"), dM)
            for k in mets + ["lost_to_W"]:
                if all(k in self.stats[l].final for l in labs):
                    data[f"final_{k}"] = (("policy", "run"), np.stack([self.stats[l].final[k] for l in labs]))
        ds = xr.Dataset(
            {**data, "lost_to_W": (("policy",), np.array([self.lost_to_W.get(l, 0) for l in labs], np.int32))},
            coords={"policy": labs, "run": np.arange(self.runs), "t": self.t.astype(np.int32),
                    "arm": np.arange(K), **({"kept_run": np.arange(kept)} if rd == "kept_run" else {}),
                    **({"other": labs} if self.stats else {})},
            attrs={"experiment": self.experiment, "config": json.dumps(jsonable(self.config)),
                   "seed": self.seed, "horizon": self.horizon, "metric": self.metric, "width": self.width,
                   "timing": json.dumps(jsonable(self.timing)), "versions": json.dumps(self.versions),
                   "panels": json.dumps(self.panels), "log_lines": json.dumps(jsonable(self.log_lines)),
                   "checkpoints": json.dumps(list(self.checkpoints)), "layout": json.dumps(self.layout),
                   "description": "Cumulative regret at t rounds completed: per policy and run (the runs kept), "
                                  "and statistics over all runs: X_mean, X_m2 (second central moment), "
                                  "diff_X_mean/m2 of policy - other per run, final_X per run (jaxbandits)."})
        return ds

    def identity(self) -> dict:
        """What the results are of (experiment and settings): an output folder holding results of
        another identity is not overwritten without ``force`` (see :mod:`jaxbandits.core.fileio`)."""
        return {"experiment": self.experiment, "config": jsonable(self.config)}

    def save(self, out_dir, plot=True, force=False) -> dict:
        """Write ``results.nc``, ``summary.json``, ``table.md`` and (``plot``) ``regret.png`` (and the
        experiment's other plots) into ``out_dir``, as one unit: each file is written under a
        temporary name, flushed and renamed into place, and files of the folder's previous results
        that this set does not contain are removed (a user's own files never are). A folder that
        holds the results of another experiment (or of other settings) is refused with
        :class:`jaxbandits.core.fileio.ResultsExistError` unless ``force=True``; one that another run is
        writing, with :class:`jaxbandits.core.fileio.FolderInUseError`."""
        from ..core import fileio

        summary = self.summary()
        files = {"results.nc": lambda p: self.to_xarray().to_netcdf(p, engine="h5netcdf"),
                 "summary.json": fileio.json_writer(summary),
                 "table.md": fileio.text_writer(f"{self.experiment}: {self.runs} runs, mean ± s.e.\n\n" + self.table())}
        keys = {"results.nc": "results", "summary.json": "summary", "table.md": "table"}
        if plot:
            if FIGURES is None:
                raise RuntimeError("Results.save(plot=True) needs the report layer's figures (jaxbandits.report.plotting); "
                                   "import jaxbandits (which provides them) or pass plot=False")
            for name, (key, writer) in FIGURES(self).items():
                files[name] = writer
                keys[name] = key
        written = fileio.save_files(out_dir, files, self.identity(), force=force)
        return {keys[name]: path for name, path in written.items()}

    @classmethod
    def load(cls, out_dir) -> "Results":
        """The results saved in ``out_dir`` (its ``results.nc``), after finishing a save that a
        crash interrupted.

        Args:
            out_dir: a results folder written by :meth:`~jaxbandits.experiments.results.Results.save`.

        Returns:
            The :class:`~jaxbandits.experiments.results.Results`.

        Raises:
            FileNotFoundError: the folder or its ``results.nc`` does not exist.
            ValueError: the file is damaged, of another version, or holds no regret curves.
        """
        import xarray as xr

        from ..core import fileio

        path = os.path.join(out_dir, "results.nc")
        if not os.path.isdir(out_dir):
            raise FileNotFoundError(f"results folder {os.fspath(out_dir)!r} does not exist")
        fileio.recover(out_dir)  # a save that a crash interrupted is finished first
        if not os.path.isfile(path):
            raise FileNotFoundError(f"results folder {os.fspath(out_dir)!r} holds no results.nc: "
                                    "not a folder written by jaxbandits run")
        try:
            ds = xr.load_dataset(path, engine="h5netcdf")
        except (OSError, ValueError, KeyError) as e:  # h5py's and xarray's messages name no file
            raise ValueError(f"{path}: not a readable results file (damaged or truncated: {e}); run the "
                             "experiment again into this folder with --force, or restore the file") from None
        if "regret" not in ds or "final_pulls" not in ds:
            raise ValueError(f"{path} holds no regret curves (a sweep's or another program's results): "
                             "Results.load reads the results of experiments that record regret against t")
        try:
            return cls._from_dataset(ds)
        except (KeyError, AttributeError, ValueError, TypeError, IndexError) as e:  # an edited or foreign file
            what = (f"it lacks {e.args[0]!r}" if isinstance(e, KeyError) and e.args
                    else " ".join(f"{type(e).__name__}: {e}".split()))
            raise ValueError(f"{path}: not a results file of this version ({what}); run the experiment again into "
                             "this folder with --force, or restore the file") from None

    @classmethod
    def _from_dataset(cls, ds) -> "Results":
        """The results held in the dataset of a ``results.nc``."""
        labs = [str(x) for x in ds.policy.values]
        keys = [k for k in ("regret", "expected_regret", "reward", "delayed_regret", "fixed_regret") if k in ds]
        curves = {l: {k: ds[k].sel(policy=l).values for k in keys} for l in labs}
        for l in labs:
            curves[l]["pulls"] = ds["final_pulls"].sel(policy=l).values
        stats = {}
        if "count" in ds:  # the statistics, as one block each (combined: the same numbers)
            from ..engine.stats import Stats

            for i, l in enumerate(labs):
                mom = {k[:-5]: (ds[k].values[i][None], ds[k[:-5] + "_m2"].values[i][None])
                       for k in ds.data_vars if k.endswith("_mean") and not k.startswith("diff_") and k != "pulls_mean"}
                mom["pulls"] = (ds["pulls_mean"].values[i][None], np.zeros_like(ds["pulls_mean"].values[i][None]))
                paired = {}
                for k in ds.data_vars:
                    if k.startswith("diff_") and k.endswith("_mean"):
                        met = k[5:-5]
                        for j, o in enumerate(labs):
                            m = ds[k].values[i, j]
                            if not np.all(np.isnan(m)):
                                paired.setdefault(o, {})[met] = (m[None], ds[f"diff_{met}_m2"].values[i, j][None])
                final = {k[6:]: ds[k].values[i] for k in ds.data_vars if k.startswith("final_") and k != "final_pulls"}
                stats[l] = Stats(0, np.array([float(ds["count"].values[i])]), mom, paired, final)
        a = ds.attrs
        return cls(a["experiment"], json.loads(a["config"]), int(a["seed"]), int(ds.sizes["run"]), int(a["horizon"]),
                   ds.t.values, curves, a["metric"], int(a["width"]),
                   {l: int(v) for l, v in zip(labs, ds.lost_to_W.values)}, json.loads(a["timing"]),
                   json.loads(a["versions"]), json.loads(a.get("panels", "{}")),
                   json.loads(a.get("log_lines", "{}")), json.loads(a.get("checkpoints", "[]")),
                   json.loads(a.get("layout", "null")), stats=stats)


def _finite(x):
    """A float for JSON, ``None`` for NaN (an interval of one run)."""
    x = float(x)
    return x if np.isfinite(x) else None


def jsonable(x):
    """``x`` as plain JSON values: dicts (keys as str), lists (from lists, tuples and arrays),
    Python numbers (from NumPy scalars), str, bool and None; any other object as its ``str``.

    Args:
        x: a value (a configuration, timing, log lines...).

    Returns:
        The value ``json.dumps`` writes.

    Examples:
        >>> import numpy as np
        >>> from jaxbandits.experiments.results import jsonable
        >>> jsonable({1: (np.int64(2), np.arange(2)), "a": np.float32(0.5), "b": None})
        {'1': [2, [0, 1]], 'a': 0.5, 'b': None}
    """
    if isinstance(x, dict):
        return {str(k): jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [jsonable(v) for v in x]
    if isinstance(x, np.ndarray):
        return x.tolist()
    if isinstance(x, (np.integer,)):
        return int(x)
    if isinstance(x, (np.floating,)):
        return float(x)
    if isinstance(x, (str, int, float, bool)) or x is None:
        return x
    return str(x)
