"""The Bayesian delay models as components (docs/architecture.md, "Layers"): what the delay-model
policies (:mod:`jaxbandits.policies.bayes`) and the off-policy logs (:mod:`jaxbandits.ope.log`)
use, below the offline fits and their reports in :mod:`jaxbandits.bayes`.

* :mod:`~jaxbandits.delaymodels.families`: the families of delay laws (exponential, geometric,
  Weibull, log-normal, histogram) with their priors and likelihood terms;
* :mod:`~jaxbandits.delaymodels.model`: the censored-conversion model and its sufficient statistics;
* :mod:`~jaxbandits.delaymodels.hierarchical`: the hierarchical (partial pooling) priors;
* :mod:`~jaxbandits.delaymodels.logs`: conversion logs (:class:`~jaxbandits.delaymodels.logs.ConversionLog`),
  read, written and compressed;
* :mod:`~jaxbandits.delaymodels.warm`: warm starts of a policy's prior from a fitted posterior.

Users mostly reach them through :mod:`jaxbandits.bayes`, which re-exports their public names
(``bayes.family``, ``bayes.ConversionLog``, ...); their old paths ``jaxbandits.bayes.families``,
... keep importing (:mod:`jaxbandits.moved`).
"""
