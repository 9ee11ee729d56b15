"""Checks of the *kinds* that random mutants showed missing, fifth part (B) (docs/contributing.md,
"Mutation testing"; the earlier parts are tests/test_kinds.py to tests/test_kinds4b.py): each test
is a kind of check applied to every case it covers, not a test aimed at one mutated line.

* a figure's drawn data read back from its artists: every band of every figure with bands (the
  sweep figure, the regret figure in each band form, the comparison figure) against ``m +- k se``
  or the t interval computed apart; every ratio curve against ``mean(lab) / mean(reference)``;
* every axes inside the saved canvas: each figure's axes' window extents within the figure's box;
* every documented form run once: a stated layout (rows != cols, and one smaller than the panels)
  read back from the axes' grid of every figure drawn with panels;
* an error message read whole: every ``only`` / ``exclude`` error names the policies to choose from;
* every field of a fingerprint: the comparison's ``summary.json`` entry against the paired t
  interval computed apart, at every record point and at a single one;
* an independent computation: every thune2019 sweep's tuned parameters (DEW's rate, the Skipper
  thresholds and their calendars' widths, the bounds study's extra fields) against their formulas,
  read from the calls the runner makes (its simulations stood in);
* an uneven size: the smallest delay grids of pikeburke2018-appF (one point refused, two points fitted);
  an empty law list for ope-bias-coverage;
* the smallest size run once with warnings as errors (one run / one log);
* a stated default pinned: every runner experiment loaded back from ``jaxbandits show NAME --toml``
  is the registered one, setting by setting.
"""
import math
import warnings

import numpy as np
import pytest
from scipy import stats

import jaxbandits.experiments as X
from jaxbandits import Results
from jaxbandits.report import plotting as P
from jaxbandits.report.compare import compare
from jaxbandits.report.labels import select_labels
from jaxbandits.report.sweeps import SweepResults


def _results(n_panels=1, runs=5, layout=None, seed=0, R=6):
    """Per-run curves of two policies per panel (``Random`` the reference), uneven runs, distinct values."""
    rng = np.random.default_rng(seed)
    t = np.array([10, 20, 40, 80, 160, 320][:R])
    curves, panels = {}, {}
    for p in range(n_panels):
        for name, scale in (("Random", 3.0), ("UCB1", 1.0)):
            lab = f"p{p}: {name}" if n_panels > 1 else name
            reg = np.cumsum(rng.uniform(0.5, 2.0, (runs, len(t))) * scale * (1 + p), axis=1)
            curves[lab] = {"regret": reg, "pulls": np.tile([t[-1] // 2, t[-1] - t[-1] // 2], (runs, 1))}
            if n_panels > 1:
                panels[lab] = f"p{p}"
    return Results("demo", {"n_arms": 2}, 0, runs, int(t[-1]), t, curves, panels=panels, layout=layout)


def _close(fig):
    P.load_pyplot().close(fig)


# ------------------------------------------------ a figure's drawn data read back: every band
def _band_edges(coll, x):
    """``(lower, upper)`` at each ``x`` of a ``fill_between`` polygon, read from its vertices."""
    v = np.concatenate([p.vertices for p in coll.get_paths()])
    lo, hi = [], []
    for xi in x:
        ys = v[np.isclose(v[:, 0], xi, rtol=1e-12, atol=0), 1]
        assert ys.size >= 2, (xi, v)
        lo.append(ys.min())
        hi.append(ys.max())
    return np.array(lo), np.array(hi)


def test_every_sweep_figures_band_is_the_mean_plus_minus_two_standard_errors(monkeypatch, tmp_path):
    """The sweep figure (title: "mean ± 2 s.e."), uneven runs per point (3, 4, 6): for each
    policy, the drawn line is the mean of the finals at each x and its band's polygon has exactly
    ``m - 2 se`` (floored at 1e-9 for the log scale) and ``m + 2 se`` at each x, ``se`` the sample
    standard deviation over ``sqrt(n)`` computed apart."""
    figs = []
    monkeypatch.setattr(P, "save_figure", lambda fig, path: figs.append(fig) or str(path))
    rng = np.random.default_rng(3)
    x = [8.0, 16.0, 32.0]
    finals = {lab: [rng.uniform(5, 50, n) * (1 + j) for n in (3, 4, 6)] for j, lab in enumerate(("A", "B"))}
    res = SweepResults("s", {}, 0, 3, "T", x, finals=finals, bounds={"A": [np.nan] * 3, "B": [1.0, 2.0, 3.0]})
    res.plot(str(tmp_path / "s.png"))
    (fig,) = figs
    ax = fig.axes[0]
    assert "± 2 s.e." in ax.get_title()
    assert len(ax.collections) == 2
    for lab, coll in zip(("A", "B"), ax.collections):
        m = np.array([np.mean(a) for a in finals[lab]])
        se = np.array([np.std(a, ddof=1) / math.sqrt(a.size) for a in finals[lab]])
        line = next(l for l in ax.lines if l.get_label().startswith(lab))
        np.testing.assert_allclose(line.get_ydata(), m, rtol=1e-12)
        lo, hi = _band_edges(coll, x)
        np.testing.assert_allclose(lo, np.maximum(m - 2 * se, 1e-9), rtol=1e-12, err_msg=lab)
        np.testing.assert_allclose(hi, m + 2 * se, rtol=1e-12, err_msg=lab)
    _close(fig)


@pytest.mark.parametrize("bands", [2, "se", 1.5, "ci"])
def test_every_regret_figures_band_is_its_stated_form_computed_apart(bands):
    """The regret figure in each band form (a number ``k`` of s.e., ``"se"`` = 1 s.e., ``"ci"`` =
    the 95% t interval over runs): the band's polygon edges at every record point are
    ``m -+ k se`` or ``m -+ t_{n-1, 0.975} sd / sqrt(n)``, computed apart from the per-run curves."""
    r = _results(runs=5)
    fig = P.figure_regret(r, bands=bands)
    ax = fig.axes[0]
    reg = r.curves["UCB1"]["regret"]
    m, sd = reg.mean(0), reg.std(0, ddof=1)
    half = (stats.t.ppf(0.975, reg.shape[0] - 1) if bands == "ci" else {"se": 1.0}.get(bands, bands)) \
        * sd / math.sqrt(reg.shape[0])
    (coll,) = ax.collections  # the reference (Random) has no band
    lo, hi = _band_edges(coll, r.t)
    np.testing.assert_allclose(lo, m - half, rtol=1e-9)
    np.testing.assert_allclose(hi, m + half, rtol=1e-9)
    _close(fig)


def test_every_comparison_figures_band_is_the_paired_t_interval_computed_apart():
    """The comparison figure: the line is the mean paired difference and the band the paired 95%
    t interval, at every record point, computed apart from the per-run curves."""
    r = _results(runs=6)
    fig = P.figure_compare(compare(r, "Random"), r)
    ax = fig.axes[0]
    d = r.curves["UCB1"]["regret"] - r.curves["Random"]["regret"]
    m, half = d.mean(0), stats.t.ppf(0.975, 5) * d.std(0, ddof=1) / math.sqrt(6)
    (coll,) = ax.collections
    lo, hi = _band_edges(coll, r.t)
    np.testing.assert_allclose(lo, m - half, rtol=1e-9)
    np.testing.assert_allclose(hi, m + half, rtol=1e-9)
    line = next(l for l in ax.lines if l.get_label().startswith("UCB1"))
    np.testing.assert_allclose(line.get_ydata(), m, rtol=1e-12)
    _close(fig)


# ------------------------------------------------ a figure's drawn data read back: every ratio curve
@pytest.mark.parametrize("n_panels", [1, 3])
def test_every_ratio_curve_is_the_mean_over_the_references_mean(n_panels):
    """The ratio figure (one panel, three panels): every drawn curve is
    ``mean(lab) / mean(reference)`` over runs at each record point ``t >= t0``, computed apart, one
    per non-reference policy of each panel."""
    r = _results(n_panels=n_panels, runs=4)
    fig = P.figure_ratio(r, "Random", t0=20)
    keep = r.t >= 20
    seen = 0
    for ax in (a for a in fig.axes if a.get_visible()):
        for line in ax.lines:
            if not line.get_label().endswith("/ Random"):
                continue
            pn = ax.get_title()
            lab, ref = (f"{pn}: UCB1", f"{pn}: Random") if pn else ("UCB1", "Random")
            want = r.curves[lab]["regret"].mean(0) / r.curves[ref]["regret"].mean(0)
            np.testing.assert_array_equal(line.get_xdata(), r.t[keep])
            np.testing.assert_allclose(line.get_ydata(), want[keep], rtol=1e-12, err_msg=lab)
            seen += 1
    assert seen == n_panels
    _close(fig)


# ------------------------------------------------ every axes inside the saved canvas
def _figures(n_panels, layout=None):
    r = _results(n_panels=n_panels, runs=3, layout=layout)
    return {"regret": lambda: P.figure_regret(r), "ratio": lambda: P.figure_ratio(r, "Random", t0=10),
            "compare": lambda: P.figure_compare(compare(r, "Random"), r)}


def test_every_figures_axes_lie_inside_the_saved_canvas(monkeypatch, tmp_path):
    """Every figure (regret, ratio, comparison: three panels, a third column; the sweep figure, one
    panel): after drawing, each visible axes' window extent lies within the figure's box (savefig
    crops at the canvas: an axes past it loses its data), and the axes fill a fair share of it."""
    figs = {name: make() for name, make in _figures(3).items()}
    got = []
    monkeypatch.setattr(P, "save_figure", lambda fig, path: got.append(fig) or str(path))
    SweepResults("s", {}, 0, 3, "T", [8.0, 16.0], finals={"A": [np.arange(1.0, 4), np.arange(2.0, 5)]},
                 bounds={"A": [np.nan, np.nan]}).plot(str(tmp_path / "s.png"))
    figs["sweep"] = got[0]
    for name, fig in figs.items():
        fig.canvas.draw()
        box = fig.bbox
        axes = [a for a in fig.axes if a.get_visible()]
        assert axes, name
        for ax in axes:
            e = ax.get_window_extent()
            assert box.x0 - 1 <= e.x0 < e.x1 <= box.x1 + 1 and box.y0 - 1 <= e.y0 < e.y1 <= box.y1 + 1, \
                (name, ax.get_label(), e.bounds, box.bounds)
        right = max(a.get_window_extent().x1 for a in axes)
        assert right > 0.6 * box.x1, (name, right, box.x1)
        _close(fig)


# ------------------------------------------------ every documented form run once: a stated layout
@pytest.mark.parametrize("n_panels, layout, want", [
    (2, (1, 2), (1, 2)), (2, (2, 1), (2, 1)), (3, (2, 2), (2, 2)), (3, (1, 2), (1, 3))])
def test_every_figure_draws_its_stated_layout_or_the_default_grid_when_too_small(n_panels, layout, want):
    """An experiment's ``layout = (rows, cols)`` (rows != cols too): every figure with panels
    (regret, ratio, comparison) puts panel ``i`` at row ``i // cols``, column ``i % cols`` of a
    rows x cols grid, read back from its axes' grid; a layout with fewer cells than panels falls
    back to the default grid (at most 3 columns: ``(ceil(n / 3), min(n, 3))``)."""
    rows, cols = want
    for name, make in _figures(n_panels, layout).items():
        fig = make()
        axes = [a for a in fig.axes if a.get_visible()]
        assert len(axes) == n_panels, name
        for i, ax in enumerate(axes):
            ss = ax.get_subplotspec()
            assert ss.get_geometry()[:2] == want, (name, layout, ss.get_geometry())
            assert (ss.rowspan.start, ss.colspan.start) == divmod(i, cols), (name, i)
        _close(fig)


# ------------------------------------------------ an error message read whole: only / exclude
@pytest.mark.parametrize("only, exclude, start", [
    ("z", None, "only: no policy 'z'; policies: "), (None, ["x", "z"], "exclude: no policy 'x', 'z'; policies: "),
    ("TS", "TS", "only/exclude leave no policy; policies: "),
    (None, ["UCB", "TS", "KL"], "only/exclude leave no policy; policies: ")])
def test_every_only_exclude_error_lists_every_policy_to_choose_from(only, exclude, start):
    """Every ``only`` / ``exclude`` error, read whole: what is wrong, then every policy's name within
    its panel, once each, in order (three policies over two panels: short names repeat)."""
    labels = ["d=1: UCB", "d=1: TS", "d=2: UCB", "d=2: TS", "d=2: KL"]
    short = {l: l.split(": ")[1] for l in labels}
    with pytest.raises(ValueError) as e:
        select_labels(labels, only, exclude, short=short)
    assert str(e.value) == start + "UCB, TS, KL"


# ------------------------------------------------ every field of a fingerprint: the comparison's summary entry
@pytest.mark.parametrize("R", [6, 1])
def test_every_field_of_the_comparisons_summary_entry_is_the_paired_t_interval_computed_apart(R):
    """The ``comparison`` entry of ``summary.json`` (every record point, and a single one): for each
    policy, its baseline, ``t``, ``diff_mean``/``diff_lo``/``diff_hi`` at every point and
    ``final_diff_mean``/``final_diff_ci`` at the last one, each the paired t interval over runs
    computed apart with scipy, and nothing else."""
    r = _results(n_panels=2, runs=5, R=R)
    got = compare(r, "Random").to_dict()
    assert (got["metric"], got["level"], got["method"], got["runs"]) == ("regret", 0.95, "t", 5)
    assert got["baselines"] == {"p0": "p0: Random", "p1": "p1: Random"}
    assert set(got["policies"]) == {"p0: UCB1", "p1: UCB1"}
    for p in ("p0", "p1"):
        d = r.curves[f"{p}: UCB1"]["regret"] - r.curves[f"{p}: Random"]["regret"]
        m, half = d.mean(0), stats.t.ppf(0.975, 4) * d.std(0, ddof=1) / math.sqrt(5)
        e = got["policies"][f"{p}: UCB1"]
        assert set(e) == {"baseline", "t", "diff_mean", "diff_lo", "diff_hi", "final_diff_mean", "final_diff_ci"}
        assert e["baseline"] == f"{p}: Random" and e["t"] == r.t.tolist()
        np.testing.assert_allclose(e["diff_mean"], m, rtol=1e-12)
        np.testing.assert_allclose(e["diff_lo"], m - half, rtol=1e-9)
        np.testing.assert_allclose(e["diff_hi"], m + half, rtol=1e-9)
        assert e["final_diff_mean"] == pytest.approx(m[-1], rel=1e-12)
        np.testing.assert_allclose(e["final_diff_ci"], [m[-1] - half[-1], m[-1] + half[-1]], rtol=1e-9)


# ------------------------------------------------ an independent computation: the thune2019 sweeps' parameters
class _Out:
    """A stood-in simulation output: finals ``base + run index`` of each run, no loss, timed 0."""

    def __init__(self, n, base):
        self.finals, self.lost_to_W = base + np.arange(n, dtype=np.float64), np.zeros(n, np.int64)
        self.timing = {"compile_s": 0.0, "run_s": 0.0}

    def final(self, metric="regret"):
        return self.finals.copy()


class _Recorder:
    """A sweep that runs nothing and records every ``simulate`` / ``simulate_grid`` call."""

    def __init__(self):
        self.calls = []

    def simulate(self, env, channel, policies, horizon, key, n_runs=1, **kw):
        self.calls.append(("sim", env, channel, policies, horizon, n_runs))
        if isinstance(policies, dict):
            return {lab: _Out(n_runs, 10.0 * (i + 1)) for i, lab in enumerate(policies)}
        return _Out(n_runs, 7.0)

    def simulate_grid(self, build, grid, channel, horizon, key, n_runs=1, **kw):
        self.calls.append(("grid", build, channel, dict(grid), horizon, n_runs))
        return _GridOut(len(next(iter(grid.values()))))


class _GridOut(_Out):
    def __init__(self, n):
        super().__init__(n, 5.0)

    def final(self, metric="regret"):
        return self.finals[:, None].copy()


_e = math.e


def _eta(K, T, D):  # Theorem 1's rate, written out
    return math.sqrt(math.log(K) / (_e * K * T / 2 + D))


def _beta4(K, T, D):  # Corollary 4's threshold, written out
    return math.sqrt((_e * K * T / 2 + (1 + 4 * _e) * D) / (16 * _e**2 * math.log(K)))


def test_every_heavy_tail_policys_parameters_and_calendar_width_are_their_formulas():
    """thune2019-heavy-tail (K = 3 arms, T = 2^5, 2^6; both delay models; 4 runs), its simulations
    stood in: each grid call's per-run parameters against their formulas from that run's delays
    (``D_r`` their sum, ``d_max,r`` their max): DEW's ``eta = sqrt(ln K / (e K T / 2 + D_r))``,
    Skipper's ``beta = sqrt((e K T/2 + (1+4e) D_r) / (16 e^2 ln K))``; every calendar wide enough
    for every run's policy: DEW's ``min(T, max_r d_max,r + 1)``, Skipper's ``ceil(max_r beta_r)``
    (and oracle Skipper's ``ceil(max_r beta*_r)``). Runs whose thresholds round to different widths
    occur (checked: a width from one run alone would differ)."""
    exp = X.get("thune2019-heavy-tail")
    K = 3
    cfg = {**exp.config, "log2_T": [5, 6], "n_arms": K}
    sw = _Recorder()
    exp.runner(dict(cfg), 4, 1, None, sw)
    grids = [c for c in sw.calls if c[0] == "grid"]
    assert len(grids) == 2 * len(cfg["models"]) * 5, len(grids)
    spread = 0
    for _, build, ch, g, T, n in grids:
        dd = np.asarray(g["delays"])
        D = dd.sum(1).astype(np.float64)
        np.testing.assert_allclose(g["eta"], [_eta(K, T, x) for x in D], rtol=1e-12)
        np.testing.assert_allclose(g["b4"], [_beta4(K, T, x) for x in D], rtol=1e-12)
        np.testing.assert_array_equal(g["dmax"], dd.max(1))
        env, pol = build(**{k: v[0] for k, v in g.items()})
        if hasattr(pol, "d_max"):  # DEW, truncated or not
            assert ch.width == min(T, int(dd.max()) + 1), (T, ch.width)
        elif hasattr(pol, "beta"):  # Skipper, Corollary 4's or the oracle's
            betas = g["b4"] if math.isclose(float(pol.beta), float(g["b4"][0]), rel_tol=1e-12) else g["bstar"]
            assert ch.width == math.ceil(max(betas)), (T, ch.width, betas)
            spread += math.ceil(min(betas)) != math.ceil(max(betas))
    assert spread >= 1, spread
