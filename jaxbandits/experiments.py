"""The registry of named experiments: a config (world, channel, delay law, policies and their
parameters, horizon, runs) and a ``build(config)`` that turns it into objects.

Paper reproductions register themselves from their own modules; ``experiments/`` holds the
scripts and notes that use them.
"""
from __future__ import annotations

import ast
import dataclasses
from typing import Callable, Dict, Optional

import jax
import numpy as np

from . import _validate as V
from . import channels as C
from . import delays as D
from . import envs as E
from .policies import classic as P
from .results import Results
from .simulate import simulate


@dataclasses.dataclass(frozen=True)
class Panel:
    """One panel of a figure: a world, a channel and the policies compared on it (one compiled
    program), plus reference lines ``{label: coefficient c}`` drawn as ``c log t``."""

    name: str
    env: object
    channel: object
    policies: dict
    log_lines: dict = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True)
class Experiment:
    name: str
    description: str
    build: Callable  # config -> (env, channel, {label: policy}) or [Panel, ...]
    config: dict  # defaults; every key may be overridden by --set key=value
    horizon: int
    runs: int
    record: object = None
    metric: str = "regret"
    chunk: Optional[int] = None
    checkpoints: tuple = ()  # rounds at which summary/table report R(t) (and L(T) at T)
    layout: Optional[tuple] = None  # (rows, cols) of the figure's panels
    runner: Optional[Callable] = None  # sweeps: (config, runs, seed, horizon) -> SweepResults
    ratio_to: Optional[str] = None  # plot each panel's curves as ratios to this policy's mean regret


REGISTRY: Dict[str, Experiment] = {}


def register(exp: Experiment) -> Experiment:
    if exp.name in REGISTRY:
        raise ValueError(f"experiment {exp.name!r} is already registered")
    REGISTRY[exp.name] = exp
    return exp


def get(name: str) -> Experiment:
    if name not in REGISTRY:
        raise ValueError(f"unknown experiment {name!r}; registered: {', '.join(sorted(REGISTRY))}")
    return REGISTRY[name]


def parse_set(items) -> dict:
    """``["key=value", ...]`` -> dict; values are Python literals (numbers, lists, True, None) or
    plain strings."""
    out = {}
    for it in items or []:
        if not isinstance(it, str) or "=" not in it:
            raise ValueError(f"--set expects key=value, got {it!r}")
        k, v = it.split("=", 1)
        k = k.strip()
        if not k.isidentifier():
            raise ValueError(f"--set key must be an identifier, got {k!r}")
        try:
            out[k] = ast.literal_eval(v.strip())
        except (ValueError, SyntaxError):
            out[k] = v.strip()
    return out


def resolve_config(exp: Experiment, overrides: Optional[dict]) -> dict:
    cfg = dict(exp.config)
    for k, v in (overrides or {}).items():
        if k not in cfg:
            raise ValueError(f"unknown config key {k!r} for experiment {exp.name!r}; keys: {', '.join(sorted(cfg))}")
        cfg[k] = v
    return cfg


def run(name: str, runs: Optional[int] = None, horizon: Optional[int] = None, seed: int = 0,
        overrides: Optional[dict] = None, out: Optional[str] = None, progress: bool = False,
        chunk: Optional[int] = None) -> Results:
    """Run a registered experiment (all its policies in one compiled program); save to ``out``."""
    exp = get(name)
    runs = exp.runs if runs is None else V.integer("runs", runs, lo=1)
    horizon = exp.horizon if horizon is None else V.integer("horizon", horizon, lo=1)
    seed = V.integer("seed", seed, lo=0)
    cfg = resolve_config(exp, overrides)
    if exp.runner is not None:  # a sweep (regret against T, d, ...): its own loop over settings
        res = exp.runner(cfg, runs, seed, None if horizon == exp.horizon else horizon)
        if out is not None:
            res.save(out)
        return res
    built = exp.build(cfg)
    panels = built if isinstance(built, list) else [Panel("", *built)]
    ch = chunk if chunk is not None else exp.chunk
    if ch is None and progress:
        ch = max(1, horizon // 20)
    checkpoints = tuple(c for c in exp.checkpoints if c <= horizon)
    record = exp.record
    if checkpoints:  # make sure every checkpoint is a record point
        from .simulate import record_points

        record = np.union1d(record_points(horizon, record), np.asarray(checkpoints) - 1)
    outs, panel_of, lines, timing = {}, {}, {}, {"compile_s": 0.0, "run_s": 0.0, "devices": 1}
    for p in panels:
        o = simulate(p.env, p.channel, p.policies, horizon, jax.random.key(seed), runs, record=record,
                     chunk=ch, progress=progress)
        for lab, x in o.items():
            key = f"{p.name}: {lab}" if p.name else lab
            outs[key], panel_of[key] = x, p.name
            tm = x.timing
        timing["compile_s"] += tm["compile_s"]
        timing["run_s"] += tm["run_s"]
        timing["devices"] = tm["devices"]
        lines[p.name] = dict(p.log_lines)
    steps = runs * horizon * len(outs)
    timing["run_steps_per_s"] = steps / max(timing["run_s"], 1e-12)
    full_cfg = {"channels": sorted({str(p.channel) for p in panels}), **cfg}
    res = Results.from_sim(name, full_cfg, seed, runs, horizon, outs, metric=exp.metric, timing=timing)
    res.panels = panel_of if any(panel_of.values()) else {}
    res.log_lines = lines if any(lines.values()) else {}
    res.checkpoints = list(checkpoints)
    res.layout = exp.layout
    res.ratio_to = exp.ratio_to
    if out is not None:
        res.save(out)
    return res


# ----------------------------------------------------------------------------- core experiments
def _build_quickstart(cfg):
    env = E.conversions(cfg["theta"], D.geometric(mean=cfg["delay_mean"]))
    ch = C.conversions(window=cfg["window"])
    pols = {"UCB1": P.ucb1(), "KL-UCB": P.kl_ucb(), "Thompson": P.thompson(), "random": P.uniform_random()}
    return env, ch, pols


register(Experiment(
    "quickstart",
    "Conversions with geometric delays seen through a censored window: UCB1, KL-UCB, Thompson, random",
    _build_quickstart,
    {"theta": [0.5, 0.4, 0.3, 0.2], "delay_mean": 50.0, "window": 200},
    horizon=10000, runs=1000))


def _build_classic(cfg):
    K = V.integer("n_arms", cfg["n_arms"], lo=2)
    env = E.bernoulli(np.linspace(cfg["low"], cfg["high"], K))
    pols = {"UCB1": P.ucb1(), "KL-UCB": P.kl_ucb(), "Thompson": P.thompson(), "Exp3": P.exp3()}
    return env, C.attributed(), pols


register(Experiment(
    "classic-bernoulli",
    "K=10 Bernoulli arms, means linspace(0.1, 0.9), no delay: UCB1, KL-UCB, Thompson, Exp3",
    _build_classic, {"n_arms": 10, "low": 0.1, "high": 0.9}, horizon=10000, runs=200))


def _build_delayed(cfg):
    K = V.integer("n_arms", cfg["n_arms"], lo=2)
    env = E.bernoulli(np.linspace(cfg["low"], cfg["high"], K), delay=D.uniform(0, int(cfg["max_delay"])))
    pols = {"UCB1": P.ucb1(), "KL-UCB": P.kl_ucb(), "Thompson": P.thompson(), "Exp3": P.exp3()}
    return env, C.attributed(), pols


register(Experiment(
    "classic-delayed",
    "classic-bernoulli with uniform delays on {0..max_delay}: the cost of waiting for feedback",
    _build_delayed, {"n_arms": 10, "low": 0.1, "high": 0.9, "max_delay": 200}, horizon=10000, runs=200))


from . import reproductions  # noqa: E402,F401  (registers the paper experiments)
