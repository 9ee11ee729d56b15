"""The apps layer (docs/architecture.md), on top: the command line (:mod:`~jaxbandits.apps.cli`, the
``jaxbandits`` command), the web service (:mod:`~jaxbandits.apps.serve`) and its live page
(:mod:`~jaxbandits.apps.dashboard`). Importing this package imports none of them.
"""
