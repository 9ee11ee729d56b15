"""The core layer (docs/architecture.md): what every other layer builds on, importing nothing above it.

* :mod:`~jaxbandits.core.types`: ``Policy``, ``Needs``, ``Feedback``, ``ProblemSpec``, ``Context``,
  ``Arrivals``, ``Outcome``, ``Play``, ``Delivery``, ``NEVER``;
* :mod:`~jaxbandits.core.values`: policies as values (``PolicyValue``, ``policy_value``, ``policy_digest``);
* :mod:`~jaxbandits.core.mathlib`: KL divergences and inverses, widths, exponential weights, sampling;
* :mod:`~jaxbandits.core.ring`: the ring-buffer / sliding-window primitive;
* :mod:`~jaxbandits.core.delays`: delay laws; :mod:`~jaxbandits.core.profiles`: Wang et al.'s lag profiles;
* :mod:`~jaxbandits.core.intervals`: t and bootstrap intervals of a mean over runs;
* internal (not public API, but shared by the whole package, hence names without an underscore):
  ``validate`` (host-side input checks), ``pytree`` (frozen dataclasses as pytrees), ``fileio``
  (atomic writes, locks, manifests).

Importing this package imports none of its modules (``from jaxbandits.core import delays`` imports
the one asked for). The package's attributes ``jaxbandits.delays``, ``jaxbandits.mathlib`` and
``jaxbandits.ring`` are these same module objects.
"""
