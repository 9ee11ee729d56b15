"""The results of an experiment from its simulator outputs: one function for a run done whole
(:mod:`jaxbandits.experiments.runner`) and for merged parts (:mod:`jaxbandits.experiments.parts`), so both
compute the same numbers."""
from __future__ import annotations

from .results import Results


def assemble_results(name, full_cfg, seed, runs, horizon, outs, metric, timing, panel_of, lines, checkpoints, layout,
              ratio_to) -> Results:
    """The results of an experiment from its outputs ``{label: SimOutput}``: one function for a run
    done whole and for merged parts (:mod:`jaxbandits.experiments.parts`), so both compute the same numbers.

    Args:
        name: the experiment's name.
        full_cfg: the config it ran with.
        seed: the seed.
        runs: the number of runs.
        horizon: the number of rounds.
        outs: ``{label: SimOutput}`` over every panel (:func:`collect_panel`).
        metric: the experiment's metric.
        timing: the run's timing.
        panel_of: ``{label: panel name}`` (all ``""``: no panels).
        lines: ``{panel: {line label: c}}`` (all empty: none).
        checkpoints: the rounds reported in the table.
        layout: the figure's layout (None: the default).
        ratio_to: the policy the curves are also drawn as ratios to (None: none).

    Returns:
        The :class:`jaxbandits.Results`.

    Raises:
        ValueError: ``outs`` is empty (the message names the empty config lists).

    Examples:
        >>> import numpy as np
        >>> from jaxbandits.engine.recording import SimOutput
        >>> from jaxbandits.experiments import Panel, assemble_results, collect_panel
        >>> o = SimOutput(t=np.array([50, 100]), regret=np.ones((2, 2)), expected_regret=np.ones((2, 2)),
        ...               reward=np.ones((2, 2)), pulls=np.ones((2, 3), np.int32), lost_to_W=np.zeros(2, np.int32),
        ...               width=8, timing={"compile_s": 1.0, "run_s": 2.0, "devices": 1})
        >>> outs, panel_of, lines, timing = {}, {}, {}, {"compile_s": 0.0, "run_s": 0.0}
        >>> collect_panel({"UCB1": o}, Panel("d=2", None, None, {}, {"c": 1.5}), outs, panel_of, lines, timing)
        >>> r = assemble_results("demo", {}, 0, 2, 100, outs, "regret", timing, panel_of, lines, [100], None, None)
        >>> r.panels, r.checkpoints, r.mean_se("d=2: UCB1")[0].tolist()
        ({'d=2: UCB1': 'd=2'}, [100], [1.0, 1.0])
    """
    res = Results.from_sim(name, full_cfg, seed, runs, horizon, outs, metric=metric, timing=timing)
    res.panels = panel_of if any(panel_of.values()) else {}
    res.log_lines = lines if any(lines.values()) else {}
    res.checkpoints = list(checkpoints)
    res.layout = layout
    res.ratio_to = ratio_to
    return res


def collect_panel(o, p, outs, panel_of, lines, timing):
    """Add one panel's outputs to the experiment's: each label prefixed by the panel's name
    (``"panel: label"``, also in the paired statistics), its panel and reference lines recorded,
    and its compile and run times added to ``timing``.

    Args:
        o: the panel's outputs ``{label: SimOutput}``.
        p: the :class:`~jaxbandits.experiments.Panel`.
        outs: the experiment's outputs, updated in place.
        panel_of: ``{label: panel name}``, updated in place.
        lines: ``{panel: {line label: c}}``, updated in place.
        timing: the experiment's timing (``compile_s`` and ``run_s`` present), updated in place.

    Returns:
        None.

    Examples:
        >>> import numpy as np
        >>> from jaxbandits.engine.recording import SimOutput
        >>> from jaxbandits.experiments import Panel, assemble_results, collect_panel
        >>> o = SimOutput(t=np.array([50, 100]), regret=np.ones((2, 2)), expected_regret=np.ones((2, 2)),
        ...               reward=np.ones((2, 2)), pulls=np.ones((2, 3), np.int32), lost_to_W=np.zeros(2, np.int32),
        ...               width=8, timing={"compile_s": 1.0, "run_s": 2.0, "devices": 1})
        >>> outs, panel_of, lines, timing = {}, {}, {}, {"compile_s": 0.0, "run_s": 0.0}
        >>> collect_panel({"UCB1": o}, Panel("d=2", None, None, {}, {"c": 1.5}), outs, panel_of, lines, timing)
        >>> list(outs), panel_of, lines, timing
        (['d=2: UCB1'], {'d=2: UCB1': 'd=2'}, {'d=2': {'c': 1.5}}, {'compile_s': 1.0, 'run_s': 2.0, 'devices': 1})
    """
    tm = {}
    name = (lambda lab: f"{p.name}: {lab}") if p.name else (lambda lab: lab)
    for lab, x in o.items():
        key = name(lab)
        if x.stats is not None and p.name:  # the paired statistics name the other policies as the results do
            x = x._replace(stats=x.stats._replace(paired={name(k): v for k, v in x.stats.paired.items()}))
        outs[key], panel_of[key] = x, p.name
        tm = x.timing
    timing["compile_s"] += tm["compile_s"]
    timing["run_s"] += tm["run_s"]
    timing["devices"] = tm["devices"]
    if "processes" in tm:  # a distributed run
        timing["processes"] = tm["processes"]
    if "path" in tm:  # a panel that ran on the fused path (docs/fused.md) says so
        timing.setdefault("paths", {})[p.name or "all"] = tm["path"]
    lines[p.name] = dict(p.log_lines)
