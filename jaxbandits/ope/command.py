"""``jaxbandits evaluate LOG --policy ...``: off-policy estimates of target policies on a log
(docs/ope.md, *The command*). The command line's parser lives in :mod:`jaxbandits.apps.cli`; this
module reads the log, builds the targets and the delay law, evaluates and writes the results."""
from __future__ import annotations

import inspect
import json
import os
from typing import List

import numpy as np

from .estimators import ESTIMATORS, evaluate
from .log import DecisionLog

__all__ = ["parse_policy", "parse_delay", "delay_from_fit", "run_evaluate", "STATIC_FORMS"]

STATIC_FORMS = "arm:LABEL (always that arm), uniform, probs:P1,P2,... (a fixed law over the arms)"


def parse_delay(text: str):
    """A delay law from its command-line text: ``LAW`` or ``LAW:key=value,key=value``.

    Args:
        text: e.g. ``geometric:mean=20`` or ``log_normal:mu=3,sigma=1`` (a :mod:`jaxbandits.core.delays`
            law and its parameters).

    Returns:
        The delay law.

    Raises:
        ValueError: an unknown law or bad parameters.

    Examples:
        >>> from jaxbandits.ope import command
        >>> command.parse_delay("fixed:d=3").mean
        3.0
    """
    from ..core import delays as D
    DELAY_LAWS = D.DELAY_LAWS

    law, _, rest = text.partition(":")
    law = law.strip()
    if law not in DELAY_LAWS:
        raise ValueError(f"--delay: unknown law {law!r}; one of {list(DELAY_LAWS)}, e.g. geometric:mean=20")
    kw = {}
    for kv in filter(None, (x.strip() for x in rest.split(","))):
        if "=" not in kv:
            raise ValueError(f"--delay takes LAW:key=value,... (e.g. geometric:mean=20), got {text!r}")
        k, v = kv.split("=", 1)
        try:
            kw[k.strip()] = json.loads(v)
        except ValueError:
            raise ValueError(f"--delay: the value of {k.strip()!r} must be a number (or JSON), got {v!r} "
                             f"in {text!r}, e.g. geometric:mean=20") from None
    return D.delay_law({"law": law, **kw}, where=f"--delay {text!r}")


def delay_from_fit(path: str, draws: int, seed: int = 0):
    """The delay laws of a ``jaxbandits fit`` output.

    Args:
        path: a ``jaxbandits fit`` folder, or its ``posterior.nc``.
        draws: the number of posterior draws.
        seed: the draws' seed.

    Returns:
        ``(law at the posterior mean, [draws laws])``.

    Raises:
        FileNotFoundError: no ``posterior.nc``.
        ValueError: an unreadable file, or one without a fitted delay law.

    Examples:
        >>> from jaxbandits.ope import command
        >>> law, draws = command.delay_from_fit("fit_out", draws=200)  # doctest: +SKIP
    """
    import arviz as az

    from ..bayes import delay_laws

    nc = os.path.join(path, "posterior.nc") if os.path.isdir(path) else path
    if not os.path.isfile(nc):
        raise FileNotFoundError(f"--delay-model {path}: no posterior.nc (the output folder of jaxbandits fit)")
    try:
        idata = az.from_netcdf(nc)
    except (OSError, ValueError, KeyError) as e:  # h5py's and xarray's messages name no file
        raise ValueError(f"{nc}: not a readable posterior file (damaged or truncated: {' '.join(str(e).split())}); "
                         "run jaxbandits fit again, or restore the file") from None
    try:
        return delay_laws(idata), list(delay_laws(idata, draws=draws, seed=seed))
    except (KeyError, AttributeError, ValueError) as e:  # a posterior.nc of another model, or edited
        what = f"{e.args[0]!r} is missing" if isinstance(e, KeyError) and e.args else ' '.join(str(e).split())
        raise ValueError(f"{nc}: holds no fitted delay law ({what}): give the output folder of jaxbandits fit "
                         "(a delay model)") from None


class Target:
    """A target of the command: a fixed law (``probs``, for IPS/SNIPS/DM/DR) or a library policy
    (``policy``, adaptive: replay)."""

    def __init__(self, label, probs=None, policy=None, channel=None):
        self.label, self.probs, self.policy, self.channel = label, probs, policy, channel


def parse_policy(spec: str, log: DecisionLog, delay=None) -> Target:
    """A target of ``jaxbandits evaluate`` from its command-line text.

    ``arm:LABEL``, ``uniform``, ``probs:P1,...`` (fixed laws), or a policy named as in experiment
    files (``classic.ucb1``, ``conversions.delayed_klucb``, ``package.module:function``) with
    parameters ``KIND key=value ...`` (values as JSON; a ``delay`` parameter left out is the
    evaluation's delay law).

    Args:
        spec: the text.
        log: the :class:`~jaxbandits.ope.log.DecisionLog` (its arms).
        delay: the evaluation's delay law.

    Returns:
        The ``Target``: a fixed law (``probs``) or a policy (``policy``, replayed).

    Raises:
        ValueError: an unknown form, arm or policy, or bad parameters.

    Examples:
        >>> from jaxbandits import ope
        >>> from jaxbandits.ope import command
        >>> log = ope.decision_log(arm=[0, 1], time=[0, 1], propensity=[0.5, 0.5],
        ...                        conversion_time=[float("nan")] * 2, end=3)
        >>> command.parse_policy("uniform", log).probs.tolist()
        [0.5, 0.5]
    """
    from .. import channels as C
    from ..experiments.files import resolve_kind
    from ..core.values import is_policy

    s = spec.strip()
    K = log.n_arms
    labels = [str(x) for x in log.arm_labels]
    if s == "uniform":
        return Target(s, probs=np.full(K, 1.0 / K))
    if s.startswith("arm:"):
        lab = s[4:].strip()
        if lab not in labels:
            raise ValueError(f"--policy {spec!r}: unknown arm {lab!r}; the log's arms are {labels}")
        p = np.zeros(K)
        p[labels.index(lab)] = 1.0
        return Target(s, probs=p)
    if s.startswith("probs:"):
        try:
            p = np.array([float(x) for x in s[6:].split(",")])
        except ValueError:
            raise ValueError(f"--policy {spec!r}: probs takes {K} numbers separated by commas") from None
        if p.shape != (K,) or (p < 0).any() or abs(p.sum() - 1) > 1e-6:
            raise ValueError(f"--policy {spec!r}: probs must be {K} probabilities (one per arm {labels}) summing to 1")
        return Target(s, probs=p)
    kind, *params = s.split()
    try:
        fn = resolve_kind(kind)
    except ValueError as e:
        raise ValueError(f"--policy {spec!r}: {e}; or a fixed law: {STATIC_FORMS}") from None
    kw = {}
    for kv in params:
        if "=" not in kv:
            raise ValueError(f"--policy {spec!r}: parameters are key=value, got {kv!r}")
        k, v = kv.split("=", 1)
        try:
            kw[k] = json.loads(v)
        except ValueError:
            kw[k] = v
    sig = inspect.signature(fn)
    if "delay" in sig.parameters and "delay" not in kw and delay is not None:
        kw["delay"] = delay  # the evaluation's delay law
    try:
        pol = fn(**kw)
    except TypeError as e:
        raise ValueError(f"--policy {spec!r}: {e}") from None
    if not is_policy(pol):
        raise ValueError(f"--policy {spec!r} names a {type(pol).__name__}, not a policy")
    ch = C.conversions() if pol.needs.zeros_observed is False else C.attributed()
    return Target(s, policy=pol, channel=ch)


def run_evaluate(log: DecisionLog, specs: List[str], *, window=None, delay=None, delay_draws=None, level=0.95,
                 min_seen=0.05, seed=0) -> dict:
    """Evaluate every target of ``specs`` (what ``jaxbandits evaluate`` prints).

    Args:
        log: the :class:`~jaxbandits.ope.log.DecisionLog`.
        specs: the targets' texts (:func:`parse_policy`).
        window: the conversion window.
        delay: the delay law (replay, a policy's ``delay`` parameter, and the estimators unless
            ``delay_draws`` are given: then the estimators run over the draws).
        delay_draws: posterior draws of the delay law.
        level: the intervals' confidence level.
        min_seen: see :func:`jaxbandits.ope.evaluate`.
        seed: replay's seed.

    Returns:
        ``{label: {"kind": ..., "target": ..., "report": ..., "estimates": [Estimate, ...]}}``.

    Examples:
        >>> from jaxbandits import ope
        >>> from jaxbandits.ope import command
        >>> log = ope.decision_log(arm=[0, 1], time=[0, 1], propensity=[0.5, 0.5],
        ...                        conversion_time=[float("nan"), 2.0], end=3)
        >>> out = command.run_evaluate(log, ["uniform", "arm:1"])
        >>> list(out), out["arm:1"]["estimates"][0].estimator
        (['uniform', 'arm:1'], 'ips')
    """
    from .rejection import replay

    if not specs:
        raise ValueError(f"give at least one --policy: {STATIC_FORMS}, or a library policy such as classic.ucb1")
    point = delay
    out = {}
    for spec in specs:
        t = parse_policy(spec, log, point)
        if t.probs is not None:
            rep = evaluate(log, t.probs, window=window, delay=None if delay_draws else delay, delay_draws=delay_draws,
                           level=level, min_seen=min_seen, estimators=ESTIMATORS)
            out[t.label] = {"kind": "fixed law", "target": t.probs.tolist(), "report": rep,
                            "estimates": list(rep.estimates)}
        else:
            ests, acc = replay(log, t.policy, t.channel, seed, window=window, delay=point, level=level,
                               min_seen=min_seen)
            out[t.label] = {"kind": f"policy {t.policy.name} (replay)", "estimates": list(ests),
                            "accepted": int(acc.sum())}
    return out


def table(results: dict, level: float) -> str:
    lines = [f"| target | estimator | estimate | {level:.0%} interval | ESS | rows |", "|---|---|---|---|---|---|"]
    for label, r in results.items():
        for e in r["estimates"]:
            lines.append(f"| {label} | {e.name} | {e.value:.6g} | [{e.lo:.6g}, {e.hi:.6g}] | {e.ess:.1f} | {e.n} |")
    return "\n".join(lines) + "\n"


def summary(results: dict, log: DecisionLog, args: dict) -> dict:
    return {"log": {"decisions": len(log), "arms": [str(a) for a in log.arm_labels],
                    "propensity_samples": log.propensity_samples},
            "settings": args,
            "targets": {label: {k: v for k, v in r.items() if k not in ("estimates", "report")}
                        | {"estimates": [e.to_json() for e in r["estimates"]]}
                        | ({"dropped_recent": r["report"].dropped} if "report" in r else {})
                        for label, r in results.items()}}


def plot(results: dict, path: str, level: float):
    """A forest plot: each target's estimates with their intervals (delay-aware filled, ignorant open)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [(label, e) for label, r in results.items() for e in r["estimates"]]
    fig, ax = plt.subplots(figsize=(7.0, 0.32 * len(rows) + 1.2), dpi=110)
    for i, (label, e) in enumerate(rows):
        y = len(rows) - 1 - i
        ax.errorbar(e.value, y, xerr=[[e.value - e.lo], [e.hi - e.value]], fmt="o" if e.aware else "o",
                    mfc="C0" if e.aware else "white", color="C0" if e.aware else "C3", ms=5, capsize=3)
    ax.set_yticks(range(len(rows)), [f"{label}: {e.name}" for label, e in reversed(rows)], fontsize=8)
    ax.set_xlabel(f"conversion rate per decision ({level:.0%} interval)")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def main(a) -> int:
    """The ``jaxbandits evaluate`` command (its arguments: :func:`jaxbandits.apps.cli`'s parser)."""
    from ..core.fileio import check_writable, file_sha256, json_writer, save_files, text_writer
    from .log import load

    if a.window is not None and a.window < 0:
        raise ValueError(f"--window must be >= 0 (the conversion window m, in the log's time unit), got {a.window}")
    if not 0 < a.level < 1:
        raise ValueError(f"--level must lie in (0, 1), got {a.level}")
    if a.draws < 2:
        raise ValueError(f"--draws must be >= 2, got {a.draws}")
    if a.delay and a.delay_model:
        raise ValueError("give --delay (a law) or --delay-model (a fit's folder), not both")
    if not os.path.exists(a.log):
        raise FileNotFoundError(f"{a.log}: no such file (a CSV/Parquet decision log or a serving database)")
    out = a.out or os.path.join("results", "evaluate-" + os.path.splitext(os.path.basename(a.log))[0])
    check_writable(out)
    delay, draws = None, None
    if a.delay:
        delay = parse_delay(a.delay)
    elif a.delay_model:
        delay, draws = delay_from_fit(a.delay_model, a.draws, a.seed)
    end = a.end
    if end is not None:
        try:
            end = float(end)
        except ValueError:
            pass
    log = load(a.log, end=end, time_unit=a.time_unit)
    import warnings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = run_evaluate(log, a.policy, window=a.window, delay=delay, delay_draws=draws,
                           level=a.level, min_seen=a.min_seen, seed=a.seed)
    notes = sorted({str(w.message) for w in caught})
    text = table(res, a.level)
    args = {"window": a.window, "delay": a.delay, "delay_model": a.delay_model, "draws": a.draws if draws else 0,
            "level": a.level, "min_seen": a.min_seen, "seed": a.seed, "policies": list(a.policy)}
    files = {"summary.json": json_writer(summary(res, log, args) | {"warnings": notes}),
             "table.md": text_writer(text)}
    if not a.no_plot:
        files["evaluate.png"] = lambda p: plot(res, p, a.level)
    # the log by name and content (never a machine path): the same log from another folder is the same run
    ident = {"log": os.path.basename(a.log), "log_sha256": file_sha256(a.log), **args}
    written = save_files(out, files, {"experiment": "evaluate", "config": ident}, force=a.force)
    print(text)
    for n in notes:
        print(f"jaxbandits: warning: {n}")
    print("wrote " + ", ".join(written[k] for k in files))
    return 0
