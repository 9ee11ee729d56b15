"""Which policies of a :class:`jaxbandits.Results` a report shows: labels within a panel, the
panels, the policies chosen by ``only`` / ``exclude``, the reference curves and the metric checked
against what was recorded. No statistics and no figures: both :mod:`jaxbandits.report.compare` and
:mod:`jaxbandits.report.plotting` choose their policies here.
"""
from __future__ import annotations

from typing import Dict, List, Optional

#: Labels (within a panel, any case) drawn as reference curves by default: a uniform-random policy.
REFERENCE_LABELS = ("random", "uniform random", "uniform-random", "uniform")


def short_labels(results) -> Dict[str, str]:
    """``{label: label within its panel}``: a multi-panel experiment labels its policies
    ``"panel: policy"`` (``"d=10: UCB1"`` is ``"UCB1"`` of panel ``"d=10"``; a panel name may itself
    contain ``": "``); without panels a label is its own.

    Args:
        results: a :class:`jaxbandits.Results`.

    Returns:
        A dict from each label of ``results.curves`` to its label within its panel.

    Examples:
        >>> import numpy as np
        >>> from jaxbandits import Results
        >>> c = {"regret": np.zeros((2, 3)), "pulls": np.zeros((2, 2), int)}
        >>> panels = {"d=1: UCB1": "d=1", "d=1: Random": "d=1", "d=2: UCB1": "d=2"}
        >>> r = Results("demo", {}, 0, 2, 30, np.array([10, 20, 30]), dict.fromkeys(panels, c), panels=panels)
        >>> from jaxbandits.report.labels import short_labels
        >>> short_labels(r)
        {'d=1: UCB1': 'UCB1', 'd=1: Random': 'Random', 'd=2: UCB1': 'UCB1'}
    """
    out = {}
    for lab in results.curves:
        p = results.panels.get(lab, "") if results.panels else ""
        out[lab] = lab[len(p) + 2:] if p and lab.startswith(p + ": ") else lab
    return out


def panels_of(results) -> Dict[str, List[str]]:
    """``{panel name: [labels]}`` in the results' order (one unnamed panel without panels).

    Args:
        results: a :class:`jaxbandits.Results`.

    Returns:
        A dict from each panel name (``""`` without panels) to its labels, in order.

    Examples:
        >>> import numpy as np
        >>> from jaxbandits import Results
        >>> c = {"regret": np.zeros((2, 3)), "pulls": np.zeros((2, 2), int)}
        >>> panels = {"d=1: UCB1": "d=1", "d=1: Random": "d=1", "d=2: UCB1": "d=2"}
        >>> r = Results("demo", {}, 0, 2, 30, np.array([10, 20, 30]), dict.fromkeys(panels, c), panels=panels)
        >>> from jaxbandits.report.labels import panels_of
        >>> panels_of(r)
        {'d=1': ['d=1: UCB1', 'd=1: Random'], 'd=2': ['d=2: UCB1']}
    """
    out: Dict[str, List[str]] = {}
    for lab in results.curves:
        out.setdefault(results.panels.get(lab, "") if results.panels else "", []).append(lab)
    return out


def check_metric(results, metric=None, labels=None) -> str:
    """``metric`` (default the experiment's) if every policy of ``labels`` (default all) records it,
    else a ``ValueError`` naming it and the curves recorded.

    Args:
        results: a :class:`jaxbandits.Results`.
        metric: the metric's name (None: ``results.metric``).
        labels: the policies that must record it (None: all).

    Returns:
        The metric's name.

    Raises:
        ValueError: a policy of ``labels`` does not record ``metric``.

    Examples:
        >>> import numpy as np
        >>> from jaxbandits import Results
        >>> c = {"regret": np.zeros((2, 3)), "pulls": np.zeros((2, 2), int)}
        >>> panels = {"d=1: UCB1": "d=1", "d=1: Random": "d=1", "d=2: UCB1": "d=2"}
        >>> r = Results("demo", {}, 0, 2, 30, np.array([10, 20, 30]), dict.fromkeys(panels, c), panels=panels)
        >>> from jaxbandits.report.labels import check_metric
        >>> check_metric(r)
        'regret'
        >>> check_metric(r, "reward", ["d=2: UCB1"])
        Traceback (most recent call last):
        ...
        ValueError: metric 'reward' is not recorded for d=2: UCB1; recorded for every policy: regret
    """
    metric = metric or results.metric
    labels = list(results.curves) if labels is None else list(labels)
    missing = [lab for lab in labels if metric not in results.curves[lab]]
    if missing:
        have = sorted(set.intersection(*(set(results.curves[l]) - {"pulls"} for l in labels)))
        raise ValueError(f"metric {metric!r} is not recorded for {', '.join(missing)}; recorded for every "
                         f"policy: {', '.join(have)}")
    return metric


def select_labels(labels: List[str], only, exclude, what="only", short: Optional[Dict[str, str]] = None) -> List[str]:
    """Labels kept by ``only`` / ``exclude`` (each a label or a label within its panel, ``short``);
    unknown names are an error naming the option and the labels there are.

    Args:
        labels: the labels, in order.
        only: a label or a list of them to keep (None: all).
        exclude: a label or a list of them to drop (None: none).
        what: the option's name in error messages (``only``'s).
        short: ``{label: label within its panel}`` (None: each label its own).

    Returns:
        The kept labels, in ``labels``' order.

    Raises:
        ValueError: a name is no policy, or nothing is left.

    Examples:
        >>> from jaxbandits.report.labels import select_labels
        >>> select_labels(["a", "b", "c"], None, "b")
        ['a', 'c']
        >>> select_labels(["d=1: UCB", "d=1: TS"], "UCB", None, short={"d=1: UCB": "UCB", "d=1: TS": "TS"})
        ['d=1: UCB']
        >>> select_labels(["a", "b"], "z", None)
        Traceback (most recent call last):
        ...
        ValueError: only: no policy 'z'; policies: a, b
    """
    sh = short or {l: l for l in labels}

    def norm(x, name):
        if x is None:
            return []
        x = [x] if isinstance(x, str) else list(x)
        known = set(labels) | {sh[l] for l in labels}
        bad = [v for v in x if v not in known]
        if bad:
            raise ValueError(f"{name}: no policy {', '.join(map(repr, bad))}; policies: "
                             + ", ".join(dict.fromkeys(sh[l] for l in labels)))
        return x

    keep = norm(only, what)
    drop = norm(exclude, "exclude")
    hit = lambda l, names: l in names or sh[l] in names
    out = [l for l in labels if (not keep or hit(l, keep)) and not hit(l, drop)]
    if not out:
        raise ValueError("only/exclude leave no policy; policies: " + ", ".join(dict.fromkeys(sh[l] for l in labels)))
    return out


def is_reference(label: str, references=None, within: Optional[str] = None) -> bool:
    """Whether ``label`` (``within``: its label within its panel) is drawn as a reference curve:
    named in ``references`` (labels or labels within a panel), or, when ``references`` is None, a
    uniform-random policy (:data:`REFERENCE_LABELS`).

    Args:
        label: the policy's label.
        references: a label or a list of labels (None: the uniform-random policies).
        within: the label within its panel (None: ``label``).

    Returns:
        True if the policy is drawn as a reference curve.

    Examples:
        >>> from jaxbandits.report.labels import is_reference
        >>> is_reference("Random"), is_reference("UCB1"), is_reference("UCB1", references=["UCB1"])
        (True, False, True)
    """
    within = label if within is None else within
    if references is None:
        return within.lower() in REFERENCE_LABELS
    refs = [references] if isinstance(references, str) else list(references)
    return label in refs or within in refs
