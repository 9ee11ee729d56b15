"""Where named experiments are found, and nothing is registered by importing a module for its
side effects:

* :data:`BUILTIN`, an explicit table ``{name: "module:attribute"}`` of the experiments that ship
  with jaxbandits (the core ones and the paper reproductions in ``jaxbandits/reproductions/``). A
  module is imported only when one of its experiments is asked for.
* Python entry points in the group :data:`ENTRY_POINT_GROUP`, for experiments that live in a
  user's own package.
* :func:`register`, for an experiment defined in the current session (a notebook, a script).

A name defined in two places is an error naming both.
"""
from __future__ import annotations

import importlib
from importlib import metadata
from typing import Dict, List, Tuple

from .specs import Experiment


#: The experiments that ship with jaxbandits: name -> "module:attribute", imported on first use.
BUILTIN: Dict[str, str] = {
    "quickstart": "jaxbandits.experiments:QUICKSTART",
    "classic-bernoulli": "jaxbandits.experiments:CLASSIC_BERNOULLI",
    "classic-delayed": "jaxbandits.experiments:CLASSIC_DELAYED",
    "vernade2017-fig1": "jaxbandits.reproductions.vernade2017:FIG1",
    "vernade2017-fig2": "jaxbandits.reproductions.vernade2017:FIG2",
    "vernade2017-fig3": "jaxbandits.reproductions.vernade2017:FIG3",
    "thune2019-example8": "jaxbandits.reproductions.thune2019:EXAMPLE8",
    "thune2019-heavy-tail": "jaxbandits.reproductions.thune2019:HEAVY_TAIL",
    "thune2019-bounds": "jaxbandits.reproductions.thune2019:BOUNDS",
    "pikeburke2018-fig3a": "jaxbandits.reproductions.pikeburke2018:FIG3A",
    "pikeburke2018-fig3b": "jaxbandits.reproductions.pikeburke2018:FIG3B",
    "pikeburke2018-appF": "jaxbandits.reproductions.pikeburke2018:APP_F",
    "vernade2020-fig1": "jaxbandits.reproductions.vernade2020:FIG1",
    "vernade2020-fig3": "jaxbandits.reproductions.vernade2020:FIG3",
    "bayes-fit-recovery": "jaxbandits.reproductions.bayes:FIT_RECOVERY",
    "bayes-ts-shared-delay": "jaxbandits.reproductions.bayes:TS_SHARED_DELAY",
    "bayes-ts-arm-delays": "jaxbandits.reproductions.bayes:TS_ARM_DELAYS",
    "bayes-ts-warm-start": "jaxbandits.reproductions.bayes:TS_WARM_START",
    "wang2021-fig2": "jaxbandits.reproductions.wang2021:FIG2",
    "wang2021-fig3": "jaxbandits.reproductions.wang2021:FIG3",
    "wang2021-fig4": "jaxbandits.reproductions.wang2021:FIG4",
    "wang2021-fig5": "jaxbandits.reproductions.wang2021:FIG5",
    "ope-bias-coverage": "jaxbandits.reproductions.ope:BIAS_COVERAGE",
}


#: The entry-point group in which other packages declare their experiments.
ENTRY_POINT_GROUP = "jaxbandits.experiments"


_SESSION: Dict[str, Experiment] = {}  # register()ed in this process


def _entry_points() -> list:
    return list(metadata.entry_points(group=ENTRY_POINT_GROUP))


def _table() -> Dict[str, Tuple[str, object]]:
    """name -> (where it is defined, what to load), over the three sources; imports nothing."""
    table: Dict[str, Tuple[str, object]] = {}

    def add(name, where, target):
        if name in table:
            raise ValueError(f"experiment name {name!r} is defined twice: by {table[name][0]} and by {where}; "
                             f"rename one of them")
        table[name] = (where, target)

    for name, ref in BUILTIN.items():
        add(name, f"jaxbandits ({ref})", ref)
    for ep in _entry_points():
        dist = getattr(getattr(ep, "dist", None), "name", None)
        add(ep.name, f"the entry point {ep.name} = {ep.value!r} (group {ENTRY_POINT_GROUP!r}"
                     + (f", package {dist})" if dist else ")"), ep)
    for name, exp in _SESSION.items():
        add(name, "jaxbandits.experiments.register()", exp)
    return table


def _load(name: str, where: str, target) -> Experiment:
    if isinstance(target, str):  # "module:attribute"
        module, _, attr = target.partition(":")
        obj = importlib.import_module(module)
        for part in attr.split("."):
            obj = getattr(obj, part)
    elif isinstance(target, Experiment):
        obj = target
    else:  # an entry point
        obj = target.load()
    if not isinstance(obj, Experiment):
        raise TypeError(f"experiment {name!r}: {where} must name a jaxbandits.experiments.Experiment, "
                        f"got {type(obj).__name__}")
    if obj.name != name:
        raise ValueError(f"experiment {name!r}: {where} names an Experiment called {obj.name!r}; "
                         f"the two names must agree")
    return obj


def names() -> List[str]:
    """The names of every experiment (built in, entry points, registered), sorted; imports no
    experiment module.

    Returns:
        The names, a sorted list of str.

    Raises:
        ValueError: a name is defined in two places.

    Examples:
        >>> from jaxbandits.experiments import names
        >>> "quickstart" in names(), names() == sorted(names())
        (True, True)
    """
    return sorted(_table())


def get(name: str) -> Experiment:
    """The experiment called ``name``; imports the module that defines it (only that one).

    Args:
        name: the experiment's name (:func:`names`).

    Returns:
        The :class:`~jaxbandits.experiments.Experiment`.

    Raises:
        ValueError: no experiment has that name (the message lists those there are), or the
            object found is named otherwise.
        TypeError: what the name points to is not an Experiment.

    Examples:
        >>> from jaxbandits.experiments import get
        >>> get("quickstart").horizon
        10000
        >>> get("nope")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        ValueError: unknown experiment 'nope'; registered: ...
    """
    table = _table()
    if name not in table:
        raise ValueError(f"unknown experiment {name!r}; registered: {', '.join(sorted(table))}")
    return _load(name, *table[name])


def load_all() -> Dict[str, Experiment]:
    """Every experiment, by name (sorted); imports every module that defines one.

    Returns:
        ``{name: Experiment}``, sorted by name.

    Raises:
        ValueError: a name is defined twice or names an Experiment called otherwise.
        TypeError: a name points to something that is not an Experiment.

    Examples:
        >>> from jaxbandits.experiments import load_all, names
        >>> list(load_all()) == names()  # doctest: +SKIP
        True
    """
    return {name: _load(name, *src) for name, src in sorted(_table().items())}


def register(exp: Experiment, *, replace: bool = False) -> Experiment:
    """Make ``exp`` available by its name in this process (``get``, ``run``, ``names``). A name
    already used by a built-in or entry-point experiment is an error; one registered earlier in
    this session is an error unless ``replace=True``.

    Args:
        exp: the :class:`~jaxbandits.experiments.Experiment`.
        replace: replace an experiment of that name registered earlier in this session.

    Returns:
        ``exp``.

    Raises:
        TypeError: ``exp`` is not an Experiment.
        ValueError: its name is empty or already used.

    Examples:
        >>> import dataclasses
        >>> from jaxbandits.experiments import get, names, register, unregister
        >>> mine = register(dataclasses.replace(get("classic-bernoulli"), name="my-exp", runs=10))
        >>> get("my-exp").runs, "my-exp" in names()
        (10, True)
        >>> unregister("my-exp")
    """
    if not isinstance(exp, Experiment):
        raise TypeError(f"register expects a jaxbandits.experiments.Experiment, got {type(exp).__name__}")
    if not isinstance(exp.name, str) or not exp.name:
        raise ValueError(f"an experiment's name must be a non-empty string, got {exp.name!r}")
    if not (replace and exp.name in _SESSION):
        table = _table()
        if exp.name in table:
            raise ValueError(f"experiment name {exp.name!r} is already defined by {table[exp.name][0]}"
                             + ("; pass replace=True to replace it" if exp.name in _SESSION else "; choose another name"))
    _SESSION[exp.name] = exp
    return exp


def unregister(name: str) -> None:
    """Remove an experiment added by :func:`register` in this session.

    Args:
        name: the experiment's name.

    Returns:
        None.

    Raises:
        ValueError: ``name`` was not added by :func:`register` in this session.

    Examples:
        >>> import dataclasses
        >>> from jaxbandits.experiments import get, names, register, unregister
        >>> _ = register(dataclasses.replace(get("classic-bernoulli"), name="my-exp"))
        >>> unregister("my-exp")
        >>> "my-exp" in names()
        False
        >>> unregister("my-exp")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        ValueError: experiment 'my-exp' was not added by register(); registered in this session: ...
    """
    if name not in _SESSION:
        raise ValueError(f"experiment {name!r} was not added by register(); registered in this session: "
                         f"{', '.join(sorted(_SESSION)) or 'none'}")
    del _SESSION[name]
