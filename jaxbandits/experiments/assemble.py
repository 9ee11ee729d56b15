"""The results of an experiment from its simulator outputs: one function for a run done whole
(:mod:`jaxbandits.experiments.runner`) and for merged parts (:mod:`jaxbandits.parts`), so both
compute the same numbers."""
from __future__ import annotations

from ..results import Results


def assemble_results(name, full_cfg, seed, runs, horizon, outs, metric, timing, panel_of, lines, checkpoints, layout,
              ratio_to) -> Results:
    """The results of an experiment from its outputs ``{label: SimOutput}``: one function for a run
    done whole and for merged parts (:mod:`jaxbandits.parts`), so both compute the same numbers."""
    res = Results.from_sim(name, full_cfg, seed, runs, horizon, outs, metric=metric, timing=timing)
    res.panels = panel_of if any(panel_of.values()) else {}
    res.log_lines = lines if any(lines.values()) else {}
    res.checkpoints = list(checkpoints)
    res.layout = layout
    res.ratio_to = ratio_to
    return res


def collect_panel(o, p, outs, panel_of, lines, timing):
    """Add one panel's outputs to the experiment's."""
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
