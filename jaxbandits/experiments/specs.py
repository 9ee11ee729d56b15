"""What an experiment is: :class:`Experiment` (a config and a ``build(config)`` that turns it into
a world, a channel and policies, or into :class:`Panel` s), the checks of ``--set`` overrides
against the config's kinds (:func:`resolve_config`), and the words that describe one
(:func:`show`, :func:`describe_run`). No running and no registry: the experiment files
(:mod:`jaxbandits.experiments.files`) and the runner build on this.
"""
from __future__ import annotations

import ast
import dataclasses
from typing import Callable, Optional

import numpy as np

from ..core import validate as V


@dataclasses.dataclass(frozen=True)
class Panel:
    """One panel of a figure: a world, a channel and the policies compared on it (one compiled
    program), plus reference lines ``{label: coefficient c}`` drawn as ``c log t``.

    Attributes:
        name: the panel's name (its policies are labelled ``"name: policy"``; ``""``: no prefix).
        env: the world (an environment of :mod:`jaxbandits.envs`).
        channel: the feedback channel (:mod:`jaxbandits.channels`).
        policies: ``{label: policy}``.
        log_lines: ``{line label: c}``, reference lines ``c log t`` drawn in the panel.
    """

    name: str
    env: object
    channel: object
    policies: dict
    log_lines: dict = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True)
class Experiment:
    """A named experiment: a config of defaults and a ``build(config)`` that turns it into
    ``(env, channel, {label: policy})`` or a list of :class:`Panel`, with the run's settings
    (docs/experiments.md). Registered by :func:`~jaxbandits.experiments.registry.register` (or listed in
    :data:`jaxbandits.experiments.BUILTIN`, or an entry point) and run by
    :func:`~jaxbandits.experiments.runner.run`.

    Attributes:
        name: the experiment's name (``jaxbandits run NAME``).
        description: one line saying what it compares.
        build: ``config -> (env, channel, {label: policy})`` or ``config -> [Panel, ...]``.
        config: the defaults; every key may be overridden (``--set key=value``, ``overrides``).
        horizon: the default number of rounds.
        runs: the default number of runs.
        record: the record points (None: about 200 evenly spaced; a tuple whose second entry is
            ``n``: n points spaced evenly in log t; see docs/simulate.md).
        metric: the metric reported (default ``"regret"``).
        chunk: the default rounds per chunk (None: the runner's default).
        keep: the per-run curves kept: ``"all"``, ``"none"``, N (None: the default rule).
        checkpoints: the rounds at which the summary and table report R(t).
        layout: ``(rows, cols)`` of the figure's panels (None: the default).
        runner: a sweep's own loop ``(config, runs, seed, horizon, sweep) -> SweepResults``
            (None: a simulation).
        ratio_to: a policy label: the curves are also drawn as ratios to its mean regret.
        ignores: the run options it does not use (``"horizon"``, ``"chunk"``): giving one is an error.
        horizon_keys: the config keys that a horizon given to ``run`` replaces.
        ranges: ``{config key: its allowed values, in words}`` (``jaxbandits show NAME``).
        source: read from a file: the words naming it to ``jaxbandits run`` (None: not).

    Examples:
        >>> import dataclasses
        >>> from jaxbandits.experiments import get
        >>> e = get("classic-bernoulli")
        >>> e.horizon, e.runs, e.config
        (10000, 200, {'n_arms': 10, 'low': 0.1, 'high': 0.9})
        >>> dataclasses.replace(e, name="mine", runs=10).runs
        10
    """

    name: str
    description: str
    build: Callable  # config -> (env, channel, {label: policy}) or [Panel, ...]
    config: dict  # defaults; every key may be overridden by --set key=value
    horizon: int
    runs: int
    record: object = None
    metric: str = "regret"
    chunk: Optional[int] = None
    keep: object = None  # per-run curves kept: "all", "none", N; None: the default rule (docs/simulate.md)
    checkpoints: tuple = ()  # rounds at which summary/table report R(t) (and L(T) at T)
    layout: Optional[tuple] = None  # (rows, cols) of the figure's panels
    # sweeps: (config, runs, seed, horizon, sweep) -> SweepResults (jaxbandits.experiments.sweeping)
    runner: Optional[Callable] = None
    ratio_to: Optional[str] = None  # plot each panel's curves as ratios to this policy's mean regret
    ignores: tuple = ()  # run options the experiment does not use ("horizon", "chunk"): giving one is an error
    horizon_keys: tuple = ()  # config keys that a horizon given to run() replaces (both at once: an error)
    ranges: dict = dataclasses.field(default_factory=dict)  # config key -> its allowed values, in words (show NAME)
    source: Optional[tuple] = None  # read from a file: the words naming it to `jaxbandits run` (FILE.toml, --set ...)


def parse_set(items) -> dict:
    """``["key=value", ...]`` -> dict; values are Python literals (numbers, lists, True, None) or
    plain strings.

    Args:
        items: the ``"key=value"`` strings (None: none).

    Returns:
        ``{key: value}``.

    Raises:
        ValueError: an item is not ``key=value`` or its key is not an identifier.

    Examples:
        >>> from jaxbandits.experiments import parse_set
        >>> parse_set(["n_arms=5", "low=0.2", "name=abc", "xs=[1, 2]"])
        {'n_arms': 5, 'low': 0.2, 'name': 'abc', 'xs': [1, 2]}
        >>> parse_set(["n_arms"])
        Traceback (most recent call last):
        ...
        ValueError: --set expects key=value, got 'n_arms'
    """
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


def _kind(v) -> str:
    if v is None:
        return "None"
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, (int, np.integer)):
        return "int"
    if isinstance(v, (float, np.floating)):
        return "float"
    if isinstance(v, str):
        return "str"
    if isinstance(v, (list, tuple)):
        return "list"
    if isinstance(v, dict):
        return "dict"
    return type(v).__name__


_KIND_NAMES = {"int": "an integer", "float": "a number", "str": "a string", "bool": "True or False",
               "list": "a list", "dict": "a dict", "None": "None"}


def _check_value(key, default, value):
    """An override must have the shape of the default: the same kind (an int where a float is
    expected is fine, a float where an int is, is not), a non-empty list where the default is one,
    list entries of the kinds the default's entries have; numbers finite and float32-representable
    (integers within int64). Ranges are the constructors' business (they name their parameter)."""
    kd, kv = _kind(default), _kind(value)
    if kd == "None":
        allowed = None
    elif kd == "float":
        allowed = {"float", "int"}
    else:
        allowed = {kd}
    if allowed is not None and kv not in allowed:
        raise ValueError(f"config key {key!r} must be {_KIND_NAMES.get(kd, kd)} like its default {default!r}, got {value!r}")
    if kv == "float":
        x = float(value)
        if not np.isfinite(x) or abs(x) > V.F32_MAX:
            raise ValueError(f"config key {key!r} must be a finite float32-representable number "
                             f"(|x| <= {V.F32_MAX:.8g}), got {value!r}")
    if kv == "int" and not -(2**63) <= int(value) < 2**63:
        raise ValueError(f"config key {key!r} must be an integer within int64, got {value!r}")
    if kv == "list" and kd == "list":
        if len(default) > 0 and len(value) == 0:
            raise ValueError(f"config key {key!r} must be a non-empty list like its default {list(default)!r}, got []")
        subs = list(default)
        kinds = {_kind(d) for d in subs}
        if "float" in kinds:
            kinds.add("int")
        for i, v in enumerate(value):
            kv_i = _kind(v)
            if subs and kv_i not in kinds:
                want = " or ".join(_KIND_NAMES.get(k, k) for k in sorted(kinds - {"int"} if "float" in kinds else kinds))
                raise ValueError(f"config key {key!r}: entry {i} must be {want} like the default's entries "
                                 f"{list(default)!r}, got {v!r}")
            same = ([d for d in subs if _kind(d) == kv_i]
                    or [d for d in subs if kv_i == "int" and _kind(d) == "float"])
            if same:  # check the entry against the default's entries of its kind
                _check_value(f"{key}[{i}]", _widest(same), v)
            elif kv_i in ("float", "int", "list"):
                _check_value(f"{key}[{i}]", None, v)
    if kv == "list" and kd == "None":
        for i, v in enumerate(value):
            _check_value(f"{key}[{i}]", None, v)


def _widest(entries):
    """Among default entries of one kind, the one to check an override entry against: for lists,
    one that holds every kind the entries hold (the union of their entries)."""
    if len(entries) == 1 or _kind(entries[0]) != "list":
        return entries[0]
    merged = []
    for e in entries:
        merged.extend(e)
    return merged


def resolve_config(exp: Experiment, overrides: Optional[dict]) -> dict:
    """The experiment's config with ``overrides`` applied. Every override names a known key and has
    the kind of its default (a number, a non-empty list of numbers, a string, ...): errors name the
    key before anything is built or compiled.

    Args:
        exp: the :class:`Experiment`.
        overrides: ``{key: value}`` (None: none).

    Returns:
        The config, a new dict.

    Raises:
        ValueError: a key is unknown or a value is not of its default's kind (or not finite).
        TypeError: ``overrides`` is not a dict.

    Examples:
        >>> from jaxbandits.experiments import get, resolve_config
        >>> e = get("classic-bernoulli")
        >>> resolve_config(e, {"n_arms": 5})
        {'n_arms': 5, 'low': 0.1, 'high': 0.9}
        >>> resolve_config(e, {"n_arms": 2.5})
        Traceback (most recent call last):
        ...
        ValueError: config key 'n_arms' must be an integer like its default 10, got 2.5
    """
    cfg = dict(exp.config)
    if overrides is not None and not isinstance(overrides, dict):
        raise TypeError(f"overrides must be a dict {{key: value}}, got {type(overrides).__name__}")
    for k, v in (overrides or {}).items():
        if k not in cfg:
            raise ValueError(f"unknown config key {k!r} for experiment {exp.name!r}; keys: {', '.join(sorted(cfg))}")
        _check_value(k, cfg[k], v)
        cfg[k] = v
    return cfg


def type_name(v) -> str:
    """The type of a config value in words: ``int``, ``float``, ``str``, ``list[float]``,
    ``list[list[int]]``, ``list[str | int]``...

    Args:
        v: a config value.

    Returns:
        Its type, a str.

    Examples:
        >>> from jaxbandits.experiments import type_name
        >>> type_name(3), type_name([0.1, 2]), type_name([[1]])
        ('int', 'list[float | int]', 'list[list[int]]')
    """
    k = _kind(v)
    if k != "list":
        return k
    subs = sorted({type_name(x) for x in v})
    return f"list[{' | '.join(subs)}]" if subs else "list"


def show(exp: Experiment, overrides: Optional[dict] = None) -> str:
    """What ``jaxbandits show NAME`` prints: the description, the run settings, and every key
    ``--set`` accepts with its type, default (and value, if ``overrides`` changes it) and allowed
    values (:attr:`Experiment.ranges`).

    Args:
        exp: the :class:`Experiment`.
        overrides: ``{key: value}`` changing the config (None: none).

    Returns:
        The text, a str of several lines.

    Raises:
        ValueError: an override is unknown or of the wrong kind (:func:`resolve_config`).

    Examples:
        >>> from jaxbandits.experiments import get, show
        >>> print(show(get("classic-bernoulli"), {"n_arms": 5}))  # doctest: +ELLIPSIS
        classic-bernoulli: K=10 Bernoulli arms, means linspace(0.1, 0.9), no delay: UCB1, KL-UCB, Thompson, Exp3
        <BLANKLINE>
        horizon 10000, 200 runs, about 200 evenly spaced record points
        <BLANKLINE>
        settable keys (--set KEY=VALUE):
          key     type   default       allowed
          n_arms  int    10 (now 5)    integer in [2, 2**20]
        ...
    """
    cfg = resolve_config(exp, overrides)
    lines = [f"{exp.name}: {exp.description}", ""]
    if exp.runner is not None:
        lines.append(f"a loop of its own (over settings or replications), {exp.runs} runs by default"
                     + ("" if "horizon" in exp.ignores else
                        "; --horizon T runs it at T alone" + (f" (instead of {', '.join(exp.horizon_keys)})"
                                                               if exp.horizon_keys else "")))
    else:
        rec = exp.record
        rec = ("about 200 evenly spaced record points" if rec is None else
               f"{rec[1]} record points spaced evenly in log t" if isinstance(rec, tuple) else f"record {rec!r}")
        lines.append(f"horizon {exp.horizon}, {exp.runs} runs, {rec}"
                     + (f", R(t) reported at t = {', '.join(map(str, exp.checkpoints))}" if exp.checkpoints else ""))
    if exp.ignores:
        lines.append(f"run options it does not use: {', '.join('--' + o for o in exp.ignores)}")
    lines += ["", "settable keys (--set KEY=VALUE):" if cfg else "no settable key"]
    rows = [("key", "type", "default", "allowed")]
    for k, d in exp.config.items():
        dv = repr(d) + (f" (now {cfg[k]!r})" if cfg[k] != d else "")
        rows.append((k, type_name(d), dv, exp.ranges.get(k, "(not stated: the constructors check it)")))
    if cfg:
        w = [min(max(len(r[i]) for r in rows), 40) for i in range(3)]
        for r in rows:
            lines.append("  " + "  ".join(c.ljust(w[i]) for i, c in enumerate(r[:3])) + "  " + r[3])
    lines += ["", f"write it as an experiment file: jaxbandits show {exp.name} --toml > {exp.name}.toml"]
    return "\n".join(lines)


def delay_words(law) -> Optional[str]:
    """A delay law in words for a figure's title: ``geometric delays, mean 50``.

    Args:
        law: a delay law (:mod:`jaxbandits.core.delays`), or None.

    Returns:
        The words (without the mean for a law that has none), or None for None.

    Examples:
        >>> from jaxbandits import delays
        >>> from jaxbandits.experiments import delay_words
        >>> delay_words(delays.geometric(mean=50.0))
        'geometric delays, mean 50'
        >>> delay_words(None) is None
        True
    """
    if law is None:
        return None
    name = type(law).__name__.lower()
    try:
        return f"{name} delays, mean {float(law.mean):.4g}"
    except Exception:  # a law of the user's without a mean
        return f"{name} delays"


def describe_run(exp, panels, overrides) -> dict:
    """What the figures say of a run besides its numbers (plotting.caption, plotting.figure_regret):
    the experiment's ``description``, the settings changed from its defaults or its file (``--set``),
    and the delay laws of its worlds in words.

    Args:
        exp: the :class:`Experiment`.
        panels: the run's panels (:class:`Panel`; their worlds' ``delay`` is described).
        overrides: the config overrides (None: none).

    Returns:
        ``{"description": str, "overrides": dict, "delays": [str, ...]}``.

    Examples:
        >>> from jaxbandits.experiments import Panel, describe_run, get
        >>> e = get("classic-bernoulli")
        >>> env, channel, policies = e.build(e.config)
        >>> d = describe_run(e, [Panel("", env, channel, policies)], {"n_arms": 5})
        >>> d["overrides"], d["delays"]
        ({'n_arms': 5}, ['fixed delays, mean 0'])
    """
    changed = {str(k): v for k, v in (overrides or {}).items()}
    src = list(exp.source or ())[1:]  # an experiment file's own --set words: "--set", "key=value", ...
    for flag, kv in zip(src[::2], src[1::2]):
        if flag == "--set" and "=" in kv:
            k, v = kv.split("=", 1)
            changed[k] = v
    laws = sorted({w for w in (delay_words(getattr(p.env, "delay", None)) for p in panels) if w})
    return {"description": exp.description, "overrides": changed, "delays": laws}
