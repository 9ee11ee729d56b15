"""``jaxbandits serve``: a policy on live traffic over HTTP, with a durable SQLite log (docs/online.md).

Three parts, only the last needs the optional extra (``pip install 'jaxbandits[serve]'``:
FastAPI and uvicorn):

* :class:`ServeConfig`, read from a small TOML or JSON file (or built from command-line flags):
  the arms, the policy and its parameters, the channel and its window, the clock, the seed and
  the service's limits. Checked before anything compiles; an error names the key.
* :class:`Service`: the learner (:class:`jaxbandits.online.Learner`) and its SQLite database.
  Every request that changes the state is applied, appended to the ``events`` table and
  committed (WAL, ``synchronous=FULL``: on disk) before it is acknowledged; a snapshot of the
  whole state is written every ``snapshot_every`` events. On start the service loads the latest
  snapshot and replays the events after it: the learner's functions are deterministic, so a
  restart (even after ``kill -9``) recovers exactly the state the log implies. A request that
  fails validation, or whose commit fails, changes nothing (the state is an immutable pytree: the
  previous one is kept until the commit succeeds).
* :func:`create_app`: the FastAPI application: ``POST /decide``, ``POST /feedback``,
  ``POST /advance``, ``GET /stats``, ``GET /health``, and the dashboard (``GET /dashboard``,
  ``/series``, ``/estimates``, ``/config``: :mod:`jaxbandits.apps.dashboard`). A bad request gets a 4xx and one
  ``{"error": "..."}`` message naming the field.

The package by concern: :mod:`~jaxbandits.apps.serve.config` (the configuration),
:mod:`~jaxbandits.apps.serve.service` (the learner and its database) and
:mod:`~jaxbandits.apps.serve.http` (the FastAPI application); every name is re-exported here.
"""

from ...core.delays import DELAY_LAWS, delay_law  # re-exported: serve.DELAY_LAWS, serve.delay_law as before
from .config import (CHANNELS, DEFAULT_PROPENSITY_SAMPLES, LOGGING_KEYS, POLICIES, ConfigKeyError, ServeConfig,
                     config_from_args, load_config, policy_table)
from .http import create_app, request_models, run
from .service import DB_FORMAT, DB_FORMAT_VERSION, BadRequest, Service, replay_events

__all__ = ["ServeConfig", "Service", "BadRequest", "load_config", "create_app", "replay_events", "POLICIES",
           "DELAY_LAWS", "DB_FORMAT", "DB_FORMAT_VERSION", "delay_law"]
