"""The report layers (docs/architecture.md), above the experiments: statistics with no plotting
(:mod:`~jaxbandits.report.labels`: which policies a report shows), then plots and comparisons
(:mod:`~jaxbandits.report.plotting`, :mod:`~jaxbandits.report.compare`,
:mod:`~jaxbandits.report.sweeps`). Importing this package imports none of them (nor matplotlib).
"""
