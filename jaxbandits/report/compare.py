"""Paired comparisons of policies, with confidence intervals.

Every policy of an experiment faces the same world draws in run ``r`` (common random numbers,
docs/conventions.md §8), so the per-run differences ``D_r(t) = R_r^policy(t) - R_r^baseline(t)``
are independent across runs and identically distributed, and the comparison is paired: the
world's variability cancels in ``D_r`` instead of widening the interval. The estimand is the
expected difference ``E[R^policy(t) - R^baseline(t)]`` at each record point ``t``, in the setting of
the experiment (its world, channel, horizon and configuration).

Two interval methods (docs/compare.md):

* ``"t"`` (default): ``mean(D) +- t_{n-1, (1+level)/2} * sd(D) / sqrt(n)`` over the ``n`` runs, the
  paired Student t interval (exact for normal differences, asymptotically nominal otherwise; the
  regret at a record point is a sum over rounds, so its distribution is close to normal for all but
  the first rounds);
* ``"bootstrap"``: the percentile bootstrap of the mean over runs (resampling whole runs, so the
  pairing is kept), ``n_boot`` resamples drawn from ``seed``.

Multi-panel experiments are compared within each panel (panels are different worlds): the
baseline is looked up by its label within the panel (``"random"`` matches ``"d=10: random"``).
"""
from __future__ import annotations

import dataclasses
import os
from typing import Dict, List, Optional

import numpy as np

from ..core.intervals import METHODS, bootstrap_interval, check_level, interval, t_interval, t_interval_moments
from .labels import check_metric, panels_of, select_labels, short_labels

@dataclasses.dataclass
class Comparison:
    """Paired differences of regret against a baseline, per policy, at every record point.

    ``diffs[label]`` holds ``mean``, ``lo``, ``hi`` (arrays over record points ``t``) of
    ``R^label(t) - R^baseline(t)`` and the ``baseline`` label it is paired with; the baselines
    themselves have no entry. Negative differences: the policy has less regret than the baseline.
    Made by :func:`compare`.

    Attributes:
        experiment: the experiment's name.
        runs: the number of paired runs.
        t: the record points (rounds completed), an array of length ``R``.
        metric: the curve compared (``regret``, ``expected_regret``...).
        level: the intervals' confidence level.
        method: the interval method, ``"t"`` or ``"bootstrap"``.
        baselines: ``{panel name: baseline label}`` (panel ``""`` without panels).
        diffs: ``{label: {"baseline", "mean", "lo", "hi"}}``, the arrays over ``t``.
        checkpoints: the rounds shown in :meth:`~jaxbandits.report.compare.Comparison.table` (empty: about T/4, T/2, T).
        n_boot: the bootstrap's number of resamples (None for the t interval).
        short: ``{label: label within its panel}``.
    """

    experiment: str
    runs: int
    t: np.ndarray
    metric: str
    level: float
    method: str
    baselines: Dict[str, str]  # panel name ("" without panels) -> baseline label
    diffs: Dict[str, Dict[str, object]]
    checkpoints: list = dataclasses.field(default_factory=list)
    n_boot: Optional[int] = None
    short: Dict[str, str] = dataclasses.field(default_factory=dict)  # label -> label within its panel

    def at(self) -> List[int]:
        """The record points of the table: the experiment's checkpoints, else about T/4, T/2, T."""
        t = np.asarray(self.t)
        cps = [int(c) for c in self.checkpoints if t[0] <= int(c) <= t[-1]]
        if not cps:
            cps = [int(t[min(len(t) - 1, int(np.searchsorted(t, f * t[-1])))]) for f in (0.25, 0.5, 1.0)]
        return list(dict.fromkeys(cps))

    def table(self) -> str:
        """Markdown table: per policy, its baseline and ``difference [lo, hi]`` at :meth:`at`."""
        cps = self.at()
        pct = f"{100 * self.level:g}%"
        head = f"| policy | baseline | " + " | ".join(f"ΔR({c}) [{pct} CI]" for c in cps) + " |"
        rows = [head, "|" + "---|" * (len(cps) + 2)]
        t = np.asarray(self.t)
        for lab, d in self.diffs.items():
            cells = []
            for c in cps:
                i = int(np.searchsorted(t, c))
                cells.append(f"{d['mean'][i]:+.1f} [{d['lo'][i]:+.1f}, {d['hi'][i]:+.1f}]" if self.runs >= 2
                             else f"{d['mean'][i]:+.1f} [no interval: 1 run]")
            rows.append(f"| {lab} | {self.short.get(d['baseline'], d['baseline'])} | " + " | ".join(cells) + " |")
        if self.runs < 2:  # say why the intervals are missing
            rows += ["", f"No intervals (nan): they need at least 2 paired runs, and this comparison has {self.runs} "
                         "(run with --runs 2 or more)."]
        return "\n".join(rows) + "\n"

    def to_dict(self) -> dict:
        """The ``comparison`` entry of ``summary.json`` (NaN, for one run, becomes null)."""
        pol = {}
        for lab, d in self.diffs.items():
            pol[lab] = {"baseline": d["baseline"], "t": [int(x) for x in self.t],
                        "diff_mean": _floats(d["mean"]), "diff_lo": _floats(d["lo"]), "diff_hi": _floats(d["hi"]),
                        "final_diff_mean": _float(d["mean"][-1]),
                        "final_diff_ci": [_float(d["lo"][-1]), _float(d["hi"][-1])]}
        return {"metric": self.metric, "level": self.level, "method": self.method, "runs": self.runs,
                **({"n_boot": self.n_boot} if self.method == "bootstrap" else {}),
                "baselines": dict(self.baselines), "policies": pol}


def _float(x):
    x = float(x)
    return None if not np.isfinite(x) else x


def _floats(a):
    return [_float(x) for x in np.asarray(a)]


def compare(results, baseline: Optional[str] = None, level: float = 0.95, method: str = "t",
            metric: Optional[str] = None, n_boot: int = 2000, seed: int = 0, only=None, exclude=None) -> Comparison:
    """Compare every policy of ``results`` (a :class:`jaxbandits.Results`) with ``baseline``: the
    paired difference of regret ``R^policy(t) - R^baseline(t)`` per run, its mean and ``level``
    confidence interval at every record point (``method`` ``"t"`` or ``"bootstrap"``, see the module
    docstring).

    ``baseline`` is a policy label (in a multi-panel experiment, the label within each panel, such
    as ``"random"``, or a full label ``"panel: random"`` to compare within that panel only);
    ``None`` takes the first policy of each panel. ``metric`` is a recorded curve (default the
    experiment's metric: ``regret``, ``expected_regret``, ``delayed_regret``...). ``only`` /
    ``exclude`` (labels or labels within a panel) choose the policies compared with the baseline.
    Every argument is checked first, with an error naming it and what is allowed.

    Args:
        results: a :class:`jaxbandits.Results` (per-run curves, or the statistics reduced on the
            device: then the bootstrap has an interval at the last record point only).
        baseline: the baseline's label or label within each panel (None: each panel's first policy).
        level: the confidence level, in (0, 1).
        method: ``"t"`` or ``"bootstrap"``.
        metric: the recorded curve compared (None: the experiment's metric).
        n_boot: the bootstrap's number of resamples, an integer >= 10.
        seed: the bootstrap's seed.
        only: a label or labels to compare with the baseline (None: all).
        exclude: a label or labels not to compare.

    Returns:
        A :class:`Comparison`.

    Raises:
        ValueError: ``baseline`` is no policy, ``level`` / ``method`` / ``n_boot`` is out of
            range, ``metric`` is not recorded, or ``only`` / ``exclude`` name no policy.
        TypeError: ``baseline`` is not a string.

    Examples:
        >>> import numpy as np
        >>> from jaxbandits import Results
        >>> from jaxbandits.report.compare import compare
        >>> curves = {"Random": {"regret": np.array([[5.0, 9, 14], [6, 10, 15], [4, 8, 13]])},
        ...           "UCB1": {"regret": np.array([[3.0, 4, 5], [4, 5, 5], [3, 4, 6]])}}
        >>> r = Results("demo", {}, 0, 3, 30, np.array([10, 20, 30]), curves)
        >>> c = compare(r, baseline="Random")
        >>> c.baselines, list(c.diffs)
        ({'': 'Random'}, ['UCB1'])
        >>> np.round(c.diffs["UCB1"]["mean"], 3).tolist()
        [-1.667, -4.667, -8.667]
        >>> print(c.table())
        | policy | baseline | ΔR(10) [95% CI] | ΔR(20) [95% CI] | ΔR(30) [95% CI] |
        |---|---|---|---|---|
        | UCB1 | Random | -1.7 [-3.1, -0.2] | -4.7 [-6.1, -3.2] | -8.7 [-12.5, -4.9] |
        <BLANKLINE>
        >>> compare(r, baseline="TS")
        Traceback (most recent call last):
        ...
        ValueError: baseline 'TS' is not a policy of 'demo'; policies: Random, UCB1
    """
    sh = short_labels(results)
    chosen = set(select_labels(list(results.curves), only, exclude, short=sh))
    level = check_level(level)
    if method not in METHODS:
        raise ValueError(f"method must be one of {', '.join(map(repr, METHODS))}, got {method!r}")
    metric = check_metric(results, metric)
    panels = panels_of(results)
    if baseline is not None and not isinstance(baseline, str):
        raise TypeError(f"baseline must be a policy label (str), got {type(baseline).__name__}")
    baselines = {}
    for pn, labs in panels.items():
        if baseline is None:
            baselines[pn] = labs[0]
            continue
        hit = [l for l in labs if l == baseline or sh[l] == baseline]
        if hit:
            baselines[pn] = hit[0]
    if not baselines:
        raise ValueError(f"baseline {baseline!r} is not a policy of {results.experiment!r}; policies: "
                         + ", ".join(dict.fromkeys(sh.values())))
    diffs = {}
    whole = results.kept == results.runs  # every run's curves are held
    for pn, b in baselines.items():
        others = [l for l in panels[pn] if l != b and l in chosen]
        if not others:
            continue
        if whole:  # the per-run form: from the per-run arrays, as compare always did (the same bits)
            base = np.asarray(results.curves[b][metric], np.float64)
            d = np.stack([np.asarray(results.curves[l][metric], np.float64) - base for l in others])  # [P, n, R]
            m, lo, hi = interval(d, axis=1, level=level, method=method, n_boot=n_boot, seed=seed)
            for j, lab in enumerate(others):
                diffs[lab] = {"baseline": b, "mean": m[j], "lo": lo[j], "hi": hi[j]}
            continue
        for lab in others:  # from the paired moments reduced on the device (the same t interval)
            n, m, m2 = results.moments(lab, metric, other=b)
            if method == "t":
                m, lo, hi = t_interval_moments(n, m, m2, level)
            else:  # the bootstrap over each run's final values: the last record point only
                lo, hi = np.full(m.shape, np.nan), np.full(m.shape, np.nan)
                fd = results.final_runs(lab, metric).astype(np.float64) - results.final_runs(b, metric)
                _, lo[-1], hi[-1] = bootstrap_interval(fd, 0, level, n_boot, seed)
            diffs[lab] = {"baseline": b, "mean": m, "lo": lo, "hi": hi}
    return Comparison(results.experiment, int(results.runs), np.asarray(results.t), metric, level, method,
                      baselines, diffs, list(results.checkpoints or []),
                      int(n_boot) if method == "bootstrap" else None, sh)


def save_comparison(out, comparison: Comparison, results=None, plot: bool = True, logx: bool = False) -> List[str]:
    """Write ``comparison`` into the results folder ``out``: its ``summary.json`` gains (or has
    replaced) the entry ``comparison`` (:meth:`Comparison.to_dict`), every other key kept as it was;
    a ``summary.json`` written before intervals existed also gains each policy's 95% intervals
    (``final_regret_ci95``, ``regret_ci95_lo``, ``regret_ci95_hi``, from ``results``); and, with
    ``plot``, ``compare.png`` (:func:`jaxbandits.report.plotting.plot_compare`). Each file is written
    atomically, under the folder's lock, and recorded in its manifest. Returns the paths written.

    Args:
        out: the results folder (written by :meth:`~jaxbandits.experiments.results.Results.save`).
        comparison: the :class:`Comparison` to record.
        results: the folder's :class:`jaxbandits.Results` (for older summaries' intervals and the
            figure's curves; None: neither).
        plot: also write ``compare.png``.
        logx: the figure's rounds on a log scale.

    Returns:
        The paths written, a list of str.

    Raises:
        ValueError: ``out`` has no readable ``summary.json`` of a run, or its run was interrupted.

    Examples:
        >>> import tempfile
        >>> from jaxbandits.experiments import run
        >>> from jaxbandits.report.compare import compare, save_comparison
        >>> out = tempfile.mkdtemp()
        >>> r = run("classic-bernoulli", runs=4, horizon=200, out=out)  # doctest: +SKIP
        >>> [p.rsplit("/", 1)[-1] for p in save_comparison(out, compare(r), r)]  # doctest: +SKIP
        ['summary.json', 'compare.png']
    """
    import json

    from ..core import fileio

    written = []
    with fileio.output_folder(out) as path:
        sp = os.path.join(path, "summary.json")
        try:
            with open(sp, encoding="utf-8") as fh:
                doc = json.load(fh)
        except (OSError, ValueError) as e:
            raise ValueError(f"{sp}: cannot read the results' summary.json ({e})") from None
        if not isinstance(doc, dict) or not isinstance(doc.get("policies", {}), dict):
            raise ValueError(f"{sp}: not the summary.json of jaxbandits run (an object with the key 'policies'; "
                             "damaged or edited): run the experiment again with --force")
        if doc.get("partial"):
            raise ValueError(f"{sp}: the run in {out!r} was interrupted (partial): resume it first")
        if results is not None:
            fresh = results.summary()["policies"]
            for lab, entry in doc.get("policies", {}).items():
                for k in ("final_regret_ci95", "regret_ci95_lo", "regret_ci95_hi"):
                    if k not in entry and lab in fresh:
                        entry[k] = fresh[lab][k]
        doc["comparison"] = comparison.to_dict()
        written.append(fileio.add_file(out, "summary.json", fileio.json_writer(doc)))
        if plot:
            from .plotting import plot_compare

            written.append(fileio.add_file(out, "compare.png",
                                        lambda p: plot_compare(comparison, p, results=results, logx=logx)))
    return written
