"""Plots of results: regret curves with confidence bands, pull shares, ratios and paired
comparisons, in one style (:data:`STYLE`, one colour per policy label across panels and figures).
Every figure is written atomically (a temporary file in the same folder, flushed, then renamed
into place).

``figure_*`` functions build and return a matplotlib figure (to inspect or adjust); ``plot_*``
functions build one and save it with :func:`save_figure`."""
from __future__ import annotations

import contextlib
import os
import textwrap
from typing import Dict, Iterable, List, Optional

import numpy as np

from ..core.fileio import atomic_write
from .labels import REFERENCE_LABELS, check_metric, is_reference, select_labels, short_labels

#: matplotlib settings shared by every figure of jaxbandits.
STYLE = {
    "figure.dpi": 110, "savefig.dpi": 110, "font.size": 8.5, "axes.titlesize": 9, "axes.labelsize": 8.5,
    "legend.fontsize": 7, "legend.framealpha": 0.85, "xtick.labelsize": 7.5, "ytick.labelsize": 7.5,
    "axes.grid": True, "grid.alpha": 0.3, "axes.spines.top": False, "axes.spines.right": False,
    "lines.linewidth": 1.6,
}
_REF_COLOR = "0.55"


def save_figure(fig, path):
    """Save ``fig`` at ``path`` atomically and close it; a path without an extension gets
    matplotlib's default format's (as ``savefig`` does). Returns the path written.

    Args:
        fig: a matplotlib figure.
        path: the file to write (str or path-like).

    Returns:
        The path written, a str.

    Examples:
        >>> from jaxbandits.report.plotting import load_pyplot, save_figure
        >>> import os, shutil, tempfile
        >>> folder = tempfile.mkdtemp()
        >>> fig = load_pyplot().figure()
        >>> os.path.basename(save_figure(fig, os.path.join(folder, "empty")))
        'empty.png'
        >>> shutil.rmtree(folder)
    """
    import matplotlib
    import matplotlib.pyplot as plt

    path = os.fspath(path)
    if not os.path.splitext(path)[1]:
        path = f"{path}.{matplotlib.rcParams['savefig.format']}"
    try:
        atomic_write(path, fig.savefig)
    finally:
        plt.close(fig)
    return path


def load_pyplot():
    """``matplotlib.pyplot`` on the Agg backend (files, no window), imported on first use.

    Returns:
        The ``matplotlib.pyplot`` module.

    Examples:
        >>> from jaxbandits.report.plotting import load_pyplot
        >>> load_pyplot().__name__
        'matplotlib.pyplot'
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


@contextlib.contextmanager
def style():
    """The jaxbandits style (:data:`STYLE`) on the Agg backend, for the duration of the block.

    Returns:
        A context manager yielding ``matplotlib.pyplot``.

    Examples:
        >>> from jaxbandits.report.plotting import style
        >>> with style() as plt:
        ...     print(plt.rcParams["figure.dpi"])
        110.0
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    with plt.rc_context(STYLE):
        yield plt


def _ylabel(metric):
    return {"regret": "cumulative pseudo-regret R(t)", "expected_regret": "cumulative expected regret",
            "delayed_regret": "delayed regret L(t)", "fixed_regret": "regret against the fixed best arm"}.get(
        metric, metric)


def colors(short: Iterable[str]) -> Dict[str, object]:
    """One colour per label within a panel (``short``, in order of appearance), so a policy has
    the same colour in every panel and every figure of the same results.

    Args:
        short: the labels within a panel (repeats are ignored).

    Returns:
        ``{label: RGBA colour}`` from matplotlib's ``tab10`` (``tab20`` beyond 10 labels).

    Examples:
        >>> from jaxbandits.report.plotting import colors
        >>> c = colors(["UCB1", "TS", "UCB1"])
        >>> list(c), len(c["UCB1"])
        (['UCB1', 'TS'], 4)
    """
    import matplotlib

    short = list(dict.fromkeys(short))
    cmap = matplotlib.colormaps["tab10" if len(short) <= 10 else "tab20"]
    return {s: cmap(i % cmap.N) for i, s in enumerate(short)}


def overrides(results) -> Optional[dict]:
    """The settings of ``results`` that differ from its experiment's defaults (``{}``: defaults), or
    None when the experiment is not registered in this session (then the caption lists the whole
    config).

    Args:
        results: a :class:`jaxbandits.Results`.

    Returns:
        ``{key: value}`` of the changed settings, or None.

    Examples:
        >>> import numpy as np
        >>> from jaxbandits import Results
        >>> from jaxbandits.report.plotting import overrides
        >>> c = {"regret": np.zeros((1, 1)), "pulls": np.zeros((1, 5), int)}
        >>> cfg = {"n_arms": 5, "low": 0.1, "high": 0.9}
        >>> overrides(Results("classic-bernoulli", cfg, 0, 1, 10, np.array([10]), {"UCB1": c}))
        {'n_arms': 5}
        >>> overrides(Results("not-registered", cfg, 0, 1, 10, np.array([10]), {"UCB1": c})) is None
        True
    """
    try:
        from .. import experiments

        defaults = experiments.get(results.experiment).config
    except Exception:  # an experiment of another session or package: show the whole config
        return None
    from ..core.fileio import json_normal

    cfg, dflt = json_normal(results.config), json_normal(defaults)
    return {k: v for k, v in cfg.items() if k not in DESCRIPTIVE_KEYS and (k not in dflt or dflt[k] != v)}


def _fmt(v):
    if isinstance(v, float):
        return f"{v:g}"
    if isinstance(v, list):
        return "[" + ", ".join(_fmt(x) for x in v) + "]"
    return str(v)


#: Keys of a run's config that describe it rather than set it (experiments.describe_run).
DESCRIPTIVE_KEYS = ("channels", "description", "overrides", "delays")


def caption(results, extra: str = "") -> str:
    """The caption of a figure of ``results``: the experiment's description, the settings changed
    from its defaults or its file (``--set``), in words; seed, runs and horizon, what the bands are
    (``extra``).

    Args:
        results: a :class:`jaxbandits.Results`.
        extra: words appended (what the bands are; ``""``: none).

    Returns:
        The caption, a str.

    Examples:
        >>> import numpy as np
        >>> from jaxbandits import Results
        >>> curves = {"Random": {"regret": np.array([[5.0, 9, 14], [6, 10, 15], [4, 8, 13]]), "pulls": np.full((3, 2), 5)},
        ...           "UCB1": {"regret": np.array([[3.0, 4, 5], [4, 5, 5], [3, 4, 6]]), "pulls": np.array([[2, 8]] * 3)}}
        >>> r = Results("demo", {"n_arms": 2}, 0, 3, 30, np.array([10, 20, 30]), curves)
        >>> from jaxbandits.report.plotting import caption
        >>> caption(r, "bands: 95% t intervals")
        'config: n_arms=2 · seed 0, 3 runs × 30 rounds · bands: 95% t intervals'
    """
    cfg = results.config or {}
    if isinstance(cfg.get("overrides"), dict):  # a run that recorded its description (experiments.run)
        ov = cfg["overrides"]
        settings = ("settings changed: " + ", ".join(f"{k} set to {_fmt(v)}" for k, v in ov.items())
                    if ov else "default settings")
        if cfg.get("description"):
            settings = f"{cfg['description']} · {settings}"
        return f"{settings} · seed {results.seed}, {results.runs} runs × {results.horizon} rounds" + \
            (f" · {extra}" if extra else "")
    ov = overrides(results)
    if ov is None:
        cfg = {k: v for k, v in cfg.items() if k not in DESCRIPTIVE_KEYS}
        settings = "config: " + (", ".join(f"{k}={_fmt(v)}" for k, v in cfg.items()) or "(none)")
    else:
        settings = ("overrides: " + ", ".join(f"{k}={_fmt(v)}" for k, v in ov.items())) if ov else "default settings"
    return f"{settings} · seed {results.seed}, {results.runs} runs × {results.horizon} rounds" + \
        (f" · {extra}" if extra else "")


def _setting(results) -> str:
    """The delay law and the channel of a one-setting run, for its title: `` · geometric delays, mean
    50 · conversions(window=200)`` (empty when there are several: the panels name theirs)."""
    cfg = results.config or {}
    laws, chans = list(cfg.get("delays") or ()), list(cfg.get("channels") or ())
    if len(laws) > 1 or len(chans) > 1 or not (laws or chans):
        return ""
    return "".join(f" · {w}" for w in laws + chans)


def _grid(n_panels, layout):
    if layout and int(layout[0]) * int(layout[1]) >= n_panels:
        return int(layout[0]), int(layout[1])
    cols = min(n_panels, 3)
    return -(-n_panels // cols), cols


def _finish(fig, title, cap, width_in):
    """Title on top, the wrapped caption at the bottom, panels between them."""
    lines = textwrap.wrap(cap, width=max(40, int(width_in * 17))) if cap else []
    h = fig.get_figheight()
    bottom = (0.12 + 0.13 * len(lines)) / h if lines else 0.0
    top = 1.0  # tight_layout leaves room for the suptitle itself
    if lines:
        fig.text(0.01, 0.08 / h, "\n".join(lines), fontsize=6.8, color="0.3", va="bottom", ha="left")
    if title:
        fig.suptitle("\n".join(textwrap.wrap(title, width=max(30, int(width_in * 12)))), fontsize=10,
                     y=1 - 0.06 / h, va="top")
    fig.tight_layout(rect=(0, bottom, 1, top))


def _bands(results, lab, metric, bands):
    """``(mean, lo, hi, what)``: the bands to draw (``lo``/``hi`` None for none)."""
    m, se = results.mean_se(lab, metric)
    if bands is None or bands == "none" or bands is False:
        return m, None, None, ""
    if bands == "ci":
        lo, hi = results.interval(lab, metric)
        return m, np.where(np.isfinite(lo), lo, m), np.where(np.isfinite(hi), hi, m), "95% CI (t over runs)"
    if bands == "se":
        bands = 1.0
    if isinstance(bands, bool) or not isinstance(bands, (int, float)) or not bands > 0:
        raise ValueError(f"bands must be 'ci', 'se', 'none' or a positive number of standard errors, got {bands!r}")
    return m, m - bands * se, m + bands * se, f"± {bands:g} s.e."


def _ylim(ax, arrays, logy):
    """y-limits that fit ``arrays`` (the curves that matter: references excluded)."""
    vals = np.concatenate([np.ravel(a) for a in arrays]) if arrays else np.zeros(0)
    vals = vals[np.isfinite(vals)]
    if logy:
        vals = vals[vals > 0]
    if not len(vals):
        return
    lo, hi = float(vals.min()), float(vals.max())
    if logy:
        ax.set_ylim(lo / 1.6, hi * 1.6)
    else:
        pad = 0.06 * (hi - lo) if hi > lo else max(abs(hi), 1.0) * 0.1
        ax.set_ylim(min(0.0, lo - pad) if lo >= 0 else lo - pad, hi + pad)


def _pulls_axis(ax, results, labs, refs, sh):
    """Stacked horizontal bars: each policy's mean share of pulls per arm at the horizon."""
    import matplotlib

    shares = []
    for lab in labs:
        p = results.mean_pulls(lab)  # every run has played the same number of rounds
        tot = p.sum()
        shares.append(p / (tot if tot > 0 else 1))
    K = max(len(s) for s in shares)
    cmap = matplotlib.colormaps["viridis"]
    y = np.arange(len(labs))[::-1]
    left = np.zeros(len(labs))
    for k in range(K):
        w = np.array([s[k] if k < len(s) else 0.0 for s in shares])
        ax.barh(y, w, left=left, height=0.7, color=cmap(k / max(K - 1, 1)), edgecolor="white", linewidth=0.4,
                label=f"arm {k}" if K <= 8 else None)
        left += w
    ax.set_yticks(y, [sh[l] + (" (ref.)" if l in refs else "") for l in labs])
    ax.set_xlim(0, 1)
    ax.set_xlabel("share of pulls per arm at the horizon (mean over runs)")
    ax.grid(axis="y", visible=False)
    if K <= 8:
        ax.legend(fontsize=6.5, ncol=min(K, 8), loc="lower center", bbox_to_anchor=(0.5, 1.0), frameon=False,
                  handlelength=1.0, columnspacing=0.8)
    else:
        ax.set_title(f"{K} arms: arm 0 dark to arm {K - 1} light", fontsize=7)
    ax.set_label("pulls")


def figure_regret(results, metric=None, logx=False, logy=False, title=None, bands="ci", only=None,
                  exclude=None, references=None, pulls=False, show_caption=True):
    """The figure of ``plot_regret`` (returned, not saved). See :func:`plot_regret`.

    Args:
        results: a :class:`jaxbandits.Results`.
        metric: the recorded curve (None: the experiment's).
        logx: log scale of the rounds.
        logy: log scale of the regret.
        title: the title (None: the experiment's name and setting).
        bands: ``"ci"``, ``"se"``, a number of standard errors, or ``"none"``.
        only: labels to draw (None: all).
        exclude: labels to leave out.
        references: labels drawn as reference curves (None: the uniform-random policy).
        pulls: also draw the shares of pulls at the horizon.
        show_caption: add the caption (:func:`caption`).

    Returns:
        The matplotlib figure.

    Raises:
        ValueError: ``metric`` is not recorded, or ``only`` / ``exclude`` / ``references`` name
            no policy.

    Examples:
        >>> import numpy as np
        >>> from jaxbandits import Results
        >>> curves = {"Random": {"regret": np.array([[5.0, 9, 14], [6, 10, 15], [4, 8, 13]]), "pulls": np.full((3, 2), 5)},
        ...           "UCB1": {"regret": np.array([[3.0, 4, 5], [4, 5, 5], [3, 4, 6]]), "pulls": np.array([[2, 8]] * 3)}}
        >>> r = Results("demo", {"n_arms": 2}, 0, 3, 30, np.array([10, 20, 30]), curves)
        >>> from jaxbandits.report.plotting import figure_regret, load_pyplot
        >>> fig = figure_regret(r)
        >>> len(fig.axes)
        1
        >>> load_pyplot().close(fig)
    """
    sh = short_labels(results)
    labels = select_labels(list(results.curves), only, exclude, short=sh)
    metric = check_metric(results, metric, labels)
    if references is not None:
        select_labels(list(results.curves), references, None, "reference", short=sh)  # unknown names are an error
    isref = lambda l: is_reference(l, references, sh[l])
    panel_of = (lambda l: results.panels.get(l, "")) if results.panels else (lambda l: "")
    panels = list(dict.fromkeys(panel_of(l) for l in labels))
    n_all = len({panel_of(l) for l in results.curves})
    rows, cols = _grid(len(panels), results.layout if len(panels) == n_all else None)
    single = len(panels) == 1
    w, h = (6.4, 4.2) if single else (4.3, 3.5)
    col = colors(sh[l] for l in results.curves if not isref(l))
    what = ""
    with style() as plt:
        hr = [3.0, 0.35 + 0.22 * max(len([l for l in labels if panel_of(l) == p]) for p in panels)] if pulls else [1]
        fig = plt.figure(figsize=(w * cols, (sum(hr) / hr[0]) * h * rows + 0.45))
        gs = fig.add_gridspec(rows * len(hr), cols, height_ratios=hr * rows)
        axes = []
        for i, pn in enumerate(panels):
            r, c = divmod(i, cols)
            ax = fig.add_subplot(gs[r * len(hr), c])
            ax.set_label(f"regret: {pn}" if pn else "regret")
            axes.append(ax)
            t = np.asarray(results.t)
            labs = [l for l in labels if panel_of(l) == pn]
            refs = [l for l in labs if isref(l)]
            fit = []
            for lab in labs:
                m, lo, hi, what = _bands(results, lab, metric, bands)
                fin = f"{m[-1]:.1f}" + (f" [{lo[-1]:.1f}, {hi[-1]:.1f}]" if lo is not None else "")
                if lab in refs:
                    ax.plot(t, m, color=_REF_COLOR, lw=0.9, ls="--", zorder=1, label=f"{sh[lab]} (ref.) {fin}")
                    continue
                ax.plot(t, m, color=col[sh[lab]], zorder=3, label=f"{sh[lab]}  {fin}")
                if lo is not None:
                    ax.fill_between(t, lo, hi, color=col[sh[lab]], alpha=0.2, lw=0, zorder=2)
                fit += [m] + ([lo, hi] if lo is not None else [])
            for name, cc in results.log_lines.get(pn, {}).items():
                ax.plot(t, cc * np.log(np.maximum(t, 1)), color="k", ls=":", lw=0.9, label=name, zorder=1)
            if logx:
                ax.set_xscale("log")
            if logy:
                ax.set_yscale("log", nonpositive="mask")
            if fit:  # references (and c log t lines) do not set the scale
                _ylim(ax, fit, logy)
            if pn:
                ax.set_title(pn)
            ax.set_xlabel("round t")
            if c == 0:
                ax.set_ylabel(_ylabel(metric))
            ax.legend(loc="best")
            if pulls:
                pax = fig.add_subplot(gs[r * len(hr) + 1, c])
                _pulls_axis(pax, results, labs, refs, sh)
                pax.set_label(f"pulls: {pn}" if pn else "pulls")
        head = title or f"{results.experiment}: {results.runs} runs × {results.horizon} rounds" + _setting(results)
        parts = ["lines: mean over runs" + (f", bands: {what}" if what else "")]
        if any(isref(l) for l in labels):
            parts.append("dashed grey: reference policies (not used for the y-limits)")
        cap = caption(results, "; ".join(parts)) if show_caption else ""
        _finish(fig, head, cap, w * cols)
    return fig


def plot_regret(results, path, metric=None, logx=False, title=None, bands="ci", *, logy=False, only=None,
                exclude=None, references=None, pulls=False, show_caption=True):
    """Mean regret curves of ``results`` (a :class:`jaxbandits.Results`) with confidence bands, one
    subplot per panel of a multi-panel experiment (with its ``c log t`` reference lines, dotted),
    saved at ``path``.

    * ``metric``: the recorded curve (default the experiment's);
    * ``logx`` / ``logy``: log scales, on every panel;
    * ``bands``: ``"ci"`` (95% t interval of the mean over runs, as in ``summary.json``), ``"se"``
      (± 1 standard error), a number of standard errors, or ``"none"``;
    * ``only`` / ``exclude``: labels (or labels within a panel, such as ``"UCB1"``) to draw or leave
      out; panels left empty are dropped;
    * ``references``: labels drawn thin, dashed and grey, whose values do not set the y-limits
      (default: the uniform-random policy, :data:`REFERENCE_LABELS`); ``[]`` for none;
    * ``pulls``: under each panel, the share of pulls of each arm per policy at the horizon;
    * ``show_caption``: the caption names the settings that differ from the experiment's defaults,
      seed, runs and horizon, and what the bands are.

    Returns the path written.

    Args:
        results: a :class:`jaxbandits.Results`.
        path: the file to write.
        metric: the recorded curve (None: the experiment's).
        logx: log scale of the rounds.
        title: the title (None: the experiment's name and setting).
        bands: ``"ci"``, ``"se"``, a number of standard errors, or ``"none"``.
        logy: log scale of the regret.
        only: labels to draw (None: all).
        exclude: labels to leave out.
        references: labels drawn as reference curves (None: the uniform-random policy).
        pulls: also draw the shares of pulls at the horizon.
        show_caption: add the caption.

    Returns:
        The path written, a str.

    Raises:
        ValueError: as :func:`figure_regret`.

    Examples:
        >>> import numpy as np
        >>> from jaxbandits import Results
        >>> curves = {"Random": {"regret": np.array([[5.0, 9, 14], [6, 10, 15], [4, 8, 13]]), "pulls": np.full((3, 2), 5)},
        ...           "UCB1": {"regret": np.array([[3.0, 4, 5], [4, 5, 5], [3, 4, 6]]), "pulls": np.array([[2, 8]] * 3)}}
        >>> r = Results("demo", {"n_arms": 2}, 0, 3, 30, np.array([10, 20, 30]), curves)
        >>> import os, shutil, tempfile
        >>> folder = tempfile.mkdtemp()
        >>> from jaxbandits.report.plotting import plot_regret
        >>> os.path.basename(plot_regret(r, os.path.join(folder, "regret.png"), bands="se"))
        'regret.png'
        >>> shutil.rmtree(folder)
    """
    return save_figure(figure_regret(results, metric, logx, logy, title, bands, only, exclude, references,
                                     pulls, show_caption), path)


def figure_ratio(results, reference: str, t0: int = 100, logx=False, logy=False):
    """The figure of :func:`plot_ratio` (returned, not saved).

    Args:
        results: a :class:`jaxbandits.Results`.
        reference: the label (within each panel) whose mean regret divides.
        t0: the first round drawn.
        logx: log scale of the rounds.
        logy: log scale of the ratio.

    Returns:
        The matplotlib figure.

    Examples:
        >>> import numpy as np
        >>> from jaxbandits import Results
        >>> curves = {"Random": {"regret": np.array([[5.0, 9, 14], [6, 10, 15], [4, 8, 13]]), "pulls": np.full((3, 2), 5)},
        ...           "UCB1": {"regret": np.array([[3.0, 4, 5], [4, 5, 5], [3, 4, 6]]), "pulls": np.array([[2, 8]] * 3)}}
        >>> r = Results("demo", {"n_arms": 2}, 0, 3, 30, np.array([10, 20, 30]), curves)
        >>> from jaxbandits.report.plotting import figure_ratio, load_pyplot
        >>> fig = figure_ratio(r, "Random", t0=10)
        >>> len(fig.axes)
        1
        >>> load_pyplot().close(fig)
    """
    panels = list(dict.fromkeys(results.panels.values())) if results.panels else [""]
    rows, cols = _grid(len(panels), results.layout)
    sh = short_labels(results)
    col = colors(sh[l] for l in results.curves if sh[l] != reference)
    t = np.asarray(results.t)
    keep = t >= t0
    with style() as plt:
        fig, axes = plt.subplots(rows, cols, figsize=(4.3 * cols, 3.4 * rows + 0.45), squeeze=False)
        for ax, pn in zip(axes.ravel(), panels):
            labs = [l for l in results.curves if (results.panels.get(l, "") if results.panels else "") == pn]
            ref = [l for l in labs if sh[l] == reference]
            if not ref:
                continue
            r_ref = results.mean_se(ref[0])[0]
            for lab in labs:
                if lab == ref[0]:
                    continue
                m = results.mean_se(lab)[0]
                ax.plot(t[keep], m[keep] / np.maximum(r_ref[keep], 1e-9), color=col[sh[lab]],
                        label=f"{sh[lab]} / {reference}")
            ax.axhline(1.0, color=_REF_COLOR, lw=0.8, ls="--")
            if logx:
                ax.set_xscale("log")
            if logy:
                ax.set_yscale("log")
            if pn:
                ax.set_title(pn)
            ax.set_xlabel("round t")
            ax.legend()
        for ax in axes.ravel()[len(panels):]:
            ax.set_visible(False)
        axes[0, 0].set_ylabel("ratio of mean regrets")
        _finish(fig, f"{results.experiment}: {results.runs} runs × {results.horizon} rounds",
                caption(results, f"mean regret over mean regret of {reference}, t >= {t0}"), 4.3 * cols)
    return fig


def plot_ratio(results, path, reference: str, t0: int = 100, logx=False, logy=False):
    """Per panel, ``mean R_t(policy) / mean R_t(reference)`` for ``t >= t0`` (Pike-Burke et al.
    Fig. 3: ratios of averaged regrets). Returns the path written.

    Args:
        results: a :class:`jaxbandits.Results`.
        path: the file to write.
        reference: the label (within each panel) whose mean regret divides.
        t0: the first round drawn.
        logx: log scale of the rounds.
        logy: log scale of the ratio.

    Returns:
        The path written, a str.

    Examples:
        >>> import numpy as np
        >>> from jaxbandits import Results
        >>> curves = {"Random": {"regret": np.array([[5.0, 9, 14], [6, 10, 15], [4, 8, 13]]), "pulls": np.full((3, 2), 5)},
        ...           "UCB1": {"regret": np.array([[3.0, 4, 5], [4, 5, 5], [3, 4, 6]]), "pulls": np.array([[2, 8]] * 3)}}
        >>> r = Results("demo", {"n_arms": 2}, 0, 3, 30, np.array([10, 20, 30]), curves)
        >>> import os, shutil, tempfile
        >>> folder = tempfile.mkdtemp()
        >>> from jaxbandits.report.plotting import plot_ratio
        >>> os.path.basename(plot_ratio(r, os.path.join(folder, "ratio.png"), "Random", t0=10))
        'ratio.png'
        >>> shutil.rmtree(folder)
    """
    return save_figure(figure_ratio(results, reference, t0, logx, logy), path)


def figure_compare(comparison, results=None, logx=False, logy=False, only=None, exclude=None, references=None):
    """The figure of :func:`plot_compare` (returned, not saved).

    Args:
        comparison: a :class:`jaxbandits.report.compare.Comparison`.
        results: the compared :class:`jaxbandits.Results` (for the caption and layout; None: none).
        logx: log scale of the rounds.
        logy: symmetric log scale of the differences.
        only: labels to draw (None: all).
        exclude: labels to leave out.
        references: labels drawn as reference curves (None: the uniform-random policy).

    Returns:
        The matplotlib figure.

    Raises:
        ValueError: ``only`` / ``exclude`` name no policy compared.

    Examples:
        >>> import numpy as np
        >>> from jaxbandits import Results
        >>> curves = {"Random": {"regret": np.array([[5.0, 9, 14], [6, 10, 15], [4, 8, 13]]), "pulls": np.full((3, 2), 5)},
        ...           "UCB1": {"regret": np.array([[3.0, 4, 5], [4, 5, 5], [3, 4, 6]]), "pulls": np.array([[2, 8]] * 3)}}
        >>> r = Results("demo", {"n_arms": 2}, 0, 3, 30, np.array([10, 20, 30]), curves)
        >>> from jaxbandits.report.compare import compare
        >>> from jaxbandits.report.plotting import figure_compare, load_pyplot
        >>> fig = figure_compare(compare(r, "Random"), r)
        >>> len(fig.axes)
        1
        >>> load_pyplot().close(fig)
    """
    sh = {l: comparison.short.get(l, l) for l in list(comparison.diffs) + list(comparison.baselines.values())}
    labels = select_labels(list(comparison.diffs), only, exclude, short=sh)
    isref = lambda l: is_reference(l, references, sh[l])
    by_panel: Dict[str, List[str]] = {}
    for lab in labels:
        base = comparison.diffs[lab]["baseline"]
        pn = next((p for p, b in comparison.baselines.items() if b == base), "")
        by_panel.setdefault(pn, []).append(lab)
    panels = list(by_panel)
    layout = getattr(results, "layout", None) if results is not None and len(panels) == len(comparison.baselines) else None
    rows, cols = _grid(len(panels), layout)
    single = len(panels) == 1
    w, h = (6.4, 4.2) if single else (4.3, 3.5)
    order = list(results.curves) if results is not None else list(comparison.baselines.values()) + labels
    col = colors(comparison.short.get(l, l) for l in order if not is_reference(l, references, comparison.short.get(l, l)))
    t = np.asarray(comparison.t)
    pct = f"{100 * comparison.level:g}%"
    with style() as plt:
        fig, axes = plt.subplots(rows, cols, figsize=(w * cols, h * rows + 0.45), squeeze=False)
        for ax, pn in zip(axes.ravel(), panels):
            base = comparison.baselines[pn]
            fit = [np.zeros(1)]
            for lab in by_panel[pn]:
                d = comparison.diffs[lab]
                m, lo, hi = (np.asarray(d[k], np.float64) for k in ("mean", "lo", "hi"))
                fin = f"{m[-1]:+.1f} [{lo[-1]:+.1f}, {hi[-1]:+.1f}]"
                if isref(lab):
                    ax.plot(t, m, color=_REF_COLOR, lw=0.9, ls="--", zorder=1, label=f"{sh[lab]} (ref.) {fin}")
                    continue
                ax.plot(t, m, color=col[sh[lab]], zorder=3, label=f"{sh[lab]}  {fin}")
                ax.fill_between(t, lo, hi, color=col[sh[lab]], alpha=0.2, lw=0, zorder=2)
                fit += [lo, hi]
            ax.axhline(0.0, color="k", lw=0.8, ls="-", zorder=1, label=f"{sh[base]} (baseline)")
            if logx:
                ax.set_xscale("log")
            if logy:
                ax.set_yscale("symlog", linthresh=1.0)
            elif len(fit) > 1:  # reference policies do not set the scale
                _ylim(ax, fit, False)
            if pn:
                ax.set_title(pn)
            ax.set_xlabel("round t")
            if ax.get_subplotspec().is_first_col():
                ax.set_ylabel(f"Δ {_ylabel(comparison.metric)}\n(policy − baseline)")
            ax.legend(loc="best")
            ax.set_label(f"compare: {pn}" if pn else "compare")
        for ax in axes.ravel()[len(panels):]:
            ax.set_visible(False)
        how = ("paired t interval over runs" if comparison.method == "t"
               else f"paired percentile bootstrap over runs, {comparison.n_boot} resamples")
        extra = f"mean paired difference, bands: {pct} CI ({how}); below 0: less regret than the baseline"
        if any(isref(l) for l in labels):
            extra += "; dashed grey: reference policies (not used for the y-limits)"
        cap = caption(results, extra) if results is not None else extra
        _finish(fig, f"{comparison.experiment}: paired differences of regret, {comparison.runs} runs", cap, w * cols)
    return fig


def plot_compare(comparison, path, results=None, logx=False, logy=False, only=None, exclude=None, references=None):
    """The paired differences of a :class:`jaxbandits.report.compare.Comparison` with their confidence
    bands, one subplot per panel, a dashed zero line for the baseline; ``results`` (the compared
    :class:`jaxbandits.Results`) adds the settings to the caption; ``logy`` is a symmetric log scale
    (differences change sign); ``references`` as in :func:`plot_regret` (default: the uniform-random
    policy, drawn thin and grey, outside the y-limits). Returns the path written.

    Args:
        comparison: a :class:`jaxbandits.report.compare.Comparison`.
        path: the file to write.
        results: the compared :class:`jaxbandits.Results` (None: no settings in the caption).
        logx: log scale of the rounds.
        logy: symmetric log scale of the differences.
        only: labels to draw (None: all).
        exclude: labels to leave out.
        references: labels drawn as reference curves (None: the uniform-random policy).

    Returns:
        The path written, a str.

    Raises:
        ValueError: as :func:`figure_compare`.

    Examples:
        >>> import numpy as np
        >>> from jaxbandits import Results
        >>> curves = {"Random": {"regret": np.array([[5.0, 9, 14], [6, 10, 15], [4, 8, 13]]), "pulls": np.full((3, 2), 5)},
        ...           "UCB1": {"regret": np.array([[3.0, 4, 5], [4, 5, 5], [3, 4, 6]]), "pulls": np.array([[2, 8]] * 3)}}
        >>> r = Results("demo", {"n_arms": 2}, 0, 3, 30, np.array([10, 20, 30]), curves)
        >>> import os, shutil, tempfile
        >>> folder = tempfile.mkdtemp()
        >>> from jaxbandits.report.compare import compare
        >>> from jaxbandits.report.plotting import plot_compare
        >>> os.path.basename(plot_compare(compare(r, "Random"), os.path.join(folder, "compare.png"), r))
        'compare.png'
        >>> shutil.rmtree(folder)
    """
    return save_figure(figure_compare(comparison, results, logx, logy, only, exclude, references), path)


def results_figures(results) -> dict:
    """The figures of a :class:`jaxbandits.Results` that :meth:`~jaxbandits.experiments.results.Results.save` writes with
    ``plot=True``: ``{file name: (key, writer(path))}``: ``regret.png`` (key ``plot``), ``ratio.png``
    (``plot_ratio``, for results with a ``ratio_to``), and ``delayed_regret.png`` / ``fixed_regret.png``
    (``plot_delayed`` / ``plot_fixed``) when every policy records that metric.

    Args:
        results: a :class:`jaxbandits.Results`.

    Returns:
        ``{file name: (key, writer)}``, each writer a function of the path that draws and saves.

    Examples:
        >>> import numpy as np
        >>> from jaxbandits import Results
        >>> curves = {"Random": {"regret": np.array([[5.0, 9, 14], [6, 10, 15], [4, 8, 13]]), "pulls": np.full((3, 2), 5)},
        ...           "UCB1": {"regret": np.array([[3.0, 4, 5], [4, 5, 5], [3, 4, 6]]), "pulls": np.array([[2, 8]] * 3)}}
        >>> r = Results("demo", {"n_arms": 2}, 0, 3, 30, np.array([10, 20, 30]), curves)
        >>> from jaxbandits.report.plotting import results_figures
        >>> {name: key for name, (key, _) in results_figures(r).items()}
        {'regret.png': 'plot'}
    """
    out = {"regret.png": ("plot", lambda p: plot_regret(results, p))}
    if results.ratio_to:
        out["ratio.png"] = ("plot_ratio", lambda p: plot_ratio(results, p, results.ratio_to))
    for metric, key in (("delayed_regret", "plot_delayed"), ("fixed_regret", "plot_fixed")):
        if all(metric in c for c in results.curves.values()):
            out[f"{metric}.png"] = (key, lambda p, metric=metric: plot_regret(results, p, metric=metric))
    return out
