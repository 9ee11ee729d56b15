"""Bayesian delayed-conversion models in NumPyro (docs/bayes.md): the conversion
rate of each arm and the delay law inferred jointly, with the exact right-censored likelihood.

    log = bayes.read_log("experiments/data/example_log.csv")
    idata = bayes.fit(log, model="weibull", method="nuts")   # arviz.InferenceData

The package re-exports its fits and, from :mod:`jaxbandits.delaymodels` (the components the
delay-model policies use: families, the censored-conversion model, logs, priors, warm starts), the
models' names. Its report layer, which draws
figures, is imported from its own modules (docs/architecture.md: a package's ``__init__`` imports
nothing above its layer): posterior predictive checks from :mod:`jaxbandits.bayes.ppc`
(``ppc_curves``, ``km_seen_curve``, ``plot_ppc``), simulation-based calibration from
:mod:`jaxbandits.bayes.calibration` (``sbc``, ``SBCResult``, ``rank_uniformity``) and a fit's
folder from :mod:`jaxbandits.bayes.report`.
"""
from ..delaymodels.families import (DEFAULT_EDGES, FAMILIES, Exponential, Family, Geometric, Histogram, LogNormal,
                                    Weibull, delay_law, family)
from ..delaymodels.hierarchical import HIER_DEFAULTS, hierarchical_model, hierarchical_priors
from ..delaymodels.model import (CensoredConversion, RingStats, Rows, SuffStats, WeightedRows, compress, compress_rows,
                                 conversion_model, loglik_ring, loglik_rows, loglik_suffstats, loglik_weighted,
                                 pointwise_weighted, unseen_log_term)
from ..delaymodels.warm import WarmStart, policy_prior
from .contextual import CONTEXT_DEFAULTS, ContextRows, contextual_model, fit_contextual, synthetic_contextual_log
from .fit import (AUTO_DISTINCT, AUTO_RESOLUTION, ConversionLog, compress_log, conversion_log, delay_cdf_grid, delay_laws,
                  diagnostics, fit, from_table, load_log, read_log, write_log)
from .synth import synthetic_log

__all__ = ["delay_law", "delay_laws", "Family", "Exponential", "Geometric", "Weibull", "LogNormal", "Histogram", "FAMILIES",
           "family", "DEFAULT_EDGES", "ConversionLog", "conversion_log", "from_table", "read_log", "load_log",
           "compress_log", "AUTO_DISTINCT", "AUTO_RESOLUTION", "WeightedRows", "compress_rows", "loglik_weighted", "pointwise_weighted",
           "write_log", "fit", "diagnostics", "delay_cdf_grid", "Rows", "SuffStats", "CensoredConversion",
           "conversion_model", "RingStats", "loglik_ring", "loglik_rows", "loglik_suffstats", "compress", "unseen_log_term", "synthetic_log",
           "hierarchical_model", "hierarchical_priors", "HIER_DEFAULTS", "ContextRows", "contextual_model", "fit_contextual",
           "synthetic_contextual_log", "CONTEXT_DEFAULTS", "WarmStart", "policy_prior"]

#: the report layer's names this package used to re-export, and the module each lives in
_MOVED = {"ppc_curves": "ppc", "km_seen_curve": "ppc", "plot_ppc": "ppc",
          "sbc": "calibration", "SBCResult": "calibration", "rank_uniformity": "calibration"}


def __getattr__(name):
    if name in _MOVED:
        where = f"{__name__}.{_MOVED[name]}"
        raise AttributeError(f"{name} is no longer re-exported by {__name__} (it is the report layer's): "
                             f"import it from {where} (from {where} import {name})")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
