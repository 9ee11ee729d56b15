"""Experiment files: an experiment written as TOML, run with ``jaxbandits run FILE.toml``, and the
registered experiments written out in that form (``jaxbandits show NAME --toml``).

A file takes one of three forms (docs/experiment-files.md)::

    # declarative: the world, the channel and the policies as {kind = "...", parameters} entries
    horizon = 10000
    runs = 200
    world = {kind = "envs.conversions", theta = [0.5, 0.4], delay = {kind = "delays.geometric", mean = 50.0}}
    channel = {kind = "channels.conversions", window = 200}
    [policies]
    UCB1 = {kind = "classic.ucb1"}
    "KL-UCB" = {kind = "classic.kl_ucb"}

or ``[[panels]]`` (each with its ``name``, ``world``, ``channel``, ``policies``, ``log_lines``), or
a Python function with a config: ``build = "package.module:function"`` (returns what an
:class:`~jaxbandits.experiments.Experiment`'s build returns) or ``runner = "package.module:function"``
(a sweep: a loop of its own), each with a ``[config]`` table.

A ``kind`` is a public constructor of the library named through a short table
(:data:`~jaxbandits.experiments.files.kinds.KINDS`: ``delays.geometric``, ``envs.conversions``,
``channels.conversions``, ``profiles.interval``, ``classic.kl_ucb``,
``conversions.delayed_klucb``, ...) or any ``package.module:function`` (a policy, a world or a
channel of one's own). A table with a ``kind`` is a call; every other value is passed as it is
(lists, numbers, strings, tables without ``kind``).

Everything is checked before anything compiles: the file against the schema
(:data:`~jaxbandits.experiments.files.schema.FILE_KEYS`), every ``kind`` and its parameters
against the constructor's signature, then every constructor is called on the host (they check
their ranges and name their parameter). Errors name the file, the key and its line.

The modules, by concern (this package re-exports their public names):

* :mod:`~jaxbandits.experiments.files.kinds`: what a ``kind`` names, and the check of its parameters;
* :mod:`~jaxbandits.experiments.files.scanner`: the line of every key of a TOML text (``tomllib``
  gives no positions), for the messages;
* :mod:`~jaxbandits.experiments.files.tomlwriter`: TOML text with ``{kind = ...}`` entries inline;
* :mod:`~jaxbandits.experiments.files.schema`: the keys of a file and their checks, the errors;
* :mod:`~jaxbandits.experiments.files.reading`: :func:`read`: parse, ``--set``, check;
* :mod:`~jaxbandits.experiments.files.loading`: :func:`experiment`: a file as an experiment, its
  objects built once on the host; what ``show FILE.toml`` prints;
* :mod:`~jaxbandits.experiments.files.writing`: :func:`to_toml`: a registered experiment as a file.
"""
from .kinds import KINDS, check_params, import_ref, resolve_kind, signature
from .loading import build_panels, experiment, settable_keys, show_file
from .reading import parse_sets, read
from .scanner import key_lines, line_of, toml_error
from .schema import FILE_KEYS, PANEL_KEYS, FileContext, FileError, check, get_path
from .tomlwriter import NotExpressible, dotted, dumps, toml_key, toml_value
from .writing import describe, to_toml

__all__ = ["KINDS", "FILE_KEYS", "PANEL_KEYS", "FileError", "NotExpressible", "FileContext", "resolve_kind",
           "check_params", "import_ref", "signature", "dumps", "toml_value", "toml_key", "dotted", "key_lines",
           "line_of", "toml_error", "check", "get_path", "parse_sets", "read", "build_panels", "experiment",
           "settable_keys", "show_file", "describe", "to_toml"]
