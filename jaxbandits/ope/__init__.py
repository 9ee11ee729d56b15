"""Off-policy evaluation on delayed, censored logs (docs/ope.md): would that policy have done
better on last week's traffic?

* :mod:`~jaxbandits.ope.log`: the decision log (arrays, CSV/Parquet, the serving database);
* :mod:`~jaxbandits.ope.estimators`: IPS, SNIPS, direct method, doubly robust, delay-aware and
  delay-ignorant, with intervals (and the delay model's uncertainty from posterior draws);
* :mod:`~jaxbandits.ope.rejection`: replay (rejection sampling) of any library policy over a log;
* :mod:`~jaxbandits.ope.simulate`: logs of a world whose target value is known.
"""
from .estimators import DM, DR, ESTIMATORS, IPS, SNIPS, Estimate, Estimator, Report, dm, dr, evaluate, ips, old_enough, seen_probability, snips, target_probs
from .log import DecisionLog, decision_log, load, read_serve_db
from .rejection import ReplayResult, replay
from .simulate import simulate_log, true_value

__all__ = ["DecisionLog", "decision_log", "load", "read_serve_db", "Estimate", "Report", "evaluate", "ips", "snips",
           "dm", "dr", "seen_probability", "old_enough", "target_probs", "ESTIMATORS", "Estimator", "IPS", "SNIPS", "DM", "DR", "simulate_log", "true_value", "replay", "ReplayResult"]
