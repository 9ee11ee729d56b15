"""Named experiments: a config (world, channel, delay law, policies and their parameters,
horizon, runs) and a ``build(config)`` that turns it into objects.

Experiments are found in three places, and nothing is registered by importing a module for its
side effects:

* :data:`BUILTIN`, an explicit table ``{name: "module:attribute"}`` of the experiments that ship
  with jaxbandits (the core ones below and the paper reproductions in
  ``jaxbandits/reproductions/``). A module is imported only when one of its experiments is asked
  for, so ``import jaxbandits.experiments`` imports no reproduction (nor NumPyro).
* Python entry points in the group ``jaxbandits.experiments`` (:data:`ENTRY_POINT_GROUP`), for
  experiments that live in a user's own package: ``[project.entry-points."jaxbandits.experiments"]``
  ``my-exp = "mypkg.experiments:MY_EXP"`` in its ``pyproject.toml``.
* :func:`register`, for an experiment defined in the current session (a notebook, a script).

A name defined in two places is an error naming both. ``experiments/`` holds the scripts and notes
that use the reproductions.

The package by concern: :mod:`~jaxbandits.experiments.specs` (what an experiment is, its config checks and words),
:mod:`~jaxbandits.experiments.registry` (where experiments are found), :mod:`~jaxbandits.experiments.builtin` (the core experiments),
:mod:`~jaxbandits.experiments.assemble` (results from outputs) and :mod:`~jaxbandits.experiments.runner` (:func:`run`): their
names are re-exported here (``jaxbandits.experiments.run``, ``.Experiment``, ``.get``... as before). The rest of
the experiments layer lives in the package too, imported from its modules (not re-exported):
:mod:`~jaxbandits.experiments.results`, :mod:`~jaxbandits.experiments.sweeping`, :mod:`~jaxbandits.experiments.parts`,
:mod:`~jaxbandits.experiments.distributed` and the experiment files, :mod:`~jaxbandits.experiments.files`.
"""
from __future__ import annotations

from .assemble import assemble_results, collect_panel
from .builtin import CLASSIC_BERNOULLI, CLASSIC_DELAYED, QUICKSTART
from .registry import BUILTIN, ENTRY_POINT_GROUP, get, load_all, names, register, unregister
from .runner import ShortHorizon, check_keep, resume_command, run
from .specs import Experiment, Panel, delay_words, describe_run, parse_set, resolve_config, show, type_name

__all__ = ["Experiment", "Panel", "BUILTIN", "ENTRY_POINT_GROUP", "names", "get", "load_all", "register", "unregister",
           "parse_set", "resolve_config", "run", "ShortHorizon", "check_keep", "show", "type_name", "delay_words",
           "describe_run", "assemble_results", "collect_panel", "resume_command", "QUICKSTART", "CLASSIC_BERNOULLI",
           "CLASSIC_DELAYED"]
