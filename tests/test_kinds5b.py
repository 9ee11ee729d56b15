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

    def __init__(self, grow=0.0):
        self.calls, self.grow = [], grow  # grow: the finals of the k-th call are raised by grow k^2

    def simulate(self, env, channel, policies, horizon, key, n_runs=1, **kw):
        up = self.grow * len(self.calls) ** 2
        self.calls.append(("sim", env, channel, policies, horizon, n_runs))
        if isinstance(policies, dict):
            return {lab: _Out(n_runs, 10.0 * (i + 1) + up) for i, lab in enumerate(policies)}
        return _Out(n_runs, 7.0 + up)

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


def test_every_field_of_the_bounds_study_and_example8_is_its_formula():
    """thune2019-bounds (K = 3, T = 2^6, delays 0 and 8, 5 runs) and thune2019-example8 (T = 2^5,
    2^6), their simulations stood in (finals ``10 + run`` for DEW, ``20 + run`` for Skipper): every
    policy's parameters against their formulas (DEW's ``eta``, ``d_max``; Skipper's ``beta``), every
    calendar's width, and every extra field of the bounds study: ``DEW / sqrt((eKT/2+D) lnK)`` the
    mean DEW final over ``sqrt((e K T / 2 + D) ln K)``, ``eta_thm1``, ``beta_cor4``, ``truncated``
    (``eta > 1/(4 e d)``), and each bound (Theorem 1's, Corollary 4's) written out."""
    K, runs = 3, 5
    exp = X.get("thune2019-bounds")
    sw = _Recorder()
    res = exp.runner({**exp.config, "log2_T": 6, "delays": [0, 8], "n_arms": K}, runs, 1, None, sw)
    T = 64
    sims = [c for c in sw.calls if c[0] == "sim" and isinstance(c[3], dict)]
    assert len(sims) == 2
    dew_mean = np.mean(10.0 + np.arange(runs))
    for i, (d, (_, env, ch, pols, T_, n)) in enumerate(zip([0, 8], sims)):
        D = float(T * d)
        eta, b4 = _eta(K, T, D), _beta4(K, T, D)
        assert (T_, n, ch.width) == (T, runs, d + 1)
        assert pols["DEW-Thm1"].eta == pytest.approx(eta, rel=1e-12) and pols["DEW-Thm1"].d_max == d
        assert pols["Skipper-Cor4"].beta == pytest.approx(b4, rel=1e-12)
        ex = res.extra
        assert ex["DEW / sqrt((eKT/2+D) lnK)"][i] == pytest.approx(
            dew_mean / math.sqrt((_e * K * T / 2 + D) * math.log(K)), rel=1e-12)
        assert ex["eta_thm1"][i] == pytest.approx(eta, rel=1e-12)
        assert ex["beta_cor4"][i] == pytest.approx(b4, rel=1e-12)
        assert ex["truncated"][i] == (d > 0 and eta > 1 / (4 * _e * d))
        lnk = math.log(K)
        assert res.bounds["DEW-Thm1"][i] == pytest.approx(
            max(lnk / eta, 4 * _e * d * lnk) + eta * (_e * K * T / 2 + D), rel=1e-12)
        assert res.bounds["Skipper-Cor4"][i] == pytest.approx(2 * math.sqrt((_e * K * T / 2 + (1 + 4 * _e) * D) * lnk),
                                                              rel=1e-12)
        np.testing.assert_array_equal(res.finals["DEW-Thm1"][i], 10.0 + np.arange(runs))
    assert ex["truncated"] == [False, True]  # both sides of the truncation occur

    exp = X.get("thune2019-example8")
    sw = _Recorder()
    res = exp.runner({**exp.config, "log2_T": [5, 6], "n_arms": K}, 2, 1, None, sw)
    sims = [c for c in sw.calls if c[0] == "sim" and isinstance(c[3], dict)]
    for i, (T, (_, env, ch, pols, T_, n)) in enumerate(zip([32, 64], sims)):
        n_late = math.ceil(math.sqrt(K * T / math.log(K))) - 1
        D = float(sum(T - 1 - j for j in range(n_late)))
        assert T_ == T and res.extra["D"][i] == D
        dew = pols["DEW-Thm1 (d_max=T-1)"]
        assert dew.eta == pytest.approx(_eta(K, T, D), rel=1e-12) and dew.d_max == T - 1
        assert pols["untruncated DEW (ref.)"].eta == pytest.approx(math.sqrt(math.log(K) / (_e * K * T / 2)), rel=1e-12)
        assert pols["Skipper-Cor4 (OT)"].beta == pytest.approx(_beta4(K, T, D), rel=1e-12)
        assert res.extra["beta_cor4"][i] == pytest.approx(_beta4(K, T, D), rel=1e-12)


# ------------------------------------------------ an uneven size: the smallest delay grids of pikeburke2018-appF
def test_every_delay_grid_of_appF_below_two_points_is_refused_and_the_smallest_ones_fit_apart():
    """pikeburke2018-appF's fits need two distinct ``E[tau]``: a one-point grid (and a repeated
    point) is refused naming ``delays``; two points and three uneven ones (``[25, 0, 5]``: the first
    not the smallest), their simulations stood in with finals growing over the calls, give every
    policy's ``slope`` and ``paired_slope`` (the least-squares slope of the mean paired difference
    against the first point's finals) computed apart in closed form, and ``r2``."""
    exp = X.get("pikeburke2018-appF")
    for bad in ([5], [5, 5]):
        with pytest.raises(ValueError, match=r"delays: at least 2 distinct"):
            exp.runner({**exp.config, "delays": bad}, 3, 0, 40, _Recorder())
    for es in ([0, 5], [25, 0, 5]):
        sw = _Recorder(grow=1.5)
        res = exp.runner({**exp.config, "delays": es, "families": ["unif", "const"]}, 3, 0, 40, sw)
        x = np.asarray(es, np.float64)
        assert len(res.extra["fit"]) == 6
        for lab, fit in res.extra["fit"].items():
            F = np.stack(res.finals[lab]).astype(np.float64)  # [points, runs]
            m, pd = F.mean(1), (F - F[0]).mean(1)
            xc = x - x.mean()
            slope = lambda y: float(np.sum(xc * (y - y.mean())) / np.sum(xc**2))
            assert fit["slope"] == pytest.approx(slope(m), rel=1e-9, abs=1e-9), lab
            assert fit["paired_slope"] == pytest.approx(slope(pd), rel=1e-9, abs=1e-9), lab
            pred = m.mean() + slope(m) * xc
            r2 = 1 - np.sum((m - pred) ** 2) / max(np.sum((m - m.mean()) ** 2), 1e-12)
            assert fit["r2"] == pytest.approx(r2, rel=1e-9, abs=1e-9), lab
            assert abs(fit["slope"]) > 0.01, (lab, fit)  # the finals do move with E[tau]


# ------------------------------------------------ an uneven size: an empty law list for the off-policy study
def test_every_summary_of_the_off_policy_study_with_no_law_row_says_zero_logs(tmp_path):
    """An empty law list (refused by ``run`` naming ``laws``; the runner itself, as a part holding
    no law would, returns no row): ``summary.json`` says ``runs`` 0 and no law, ``table.md`` has its
    header alone and says ``0 simulated logs per law.``; the runs of one law row are its own."""
    from jaxbandits.reproductions import ope as ROPE

    exp = X.get("ope-bias-coverage")
    with pytest.raises(ValueError, match="config key 'laws' must be a non-empty list"):
        X.run("ope-bias-coverage", runs=3, overrides={"laws": []})
    res = exp.runner({**exp.config, "laws": []}, 3, 0, None)
    s = res.summary()
    assert (s["runs"], s["laws"], s["seed"], s["config"]["laws"]) == (0, [], 0, [])
    assert res.table().endswith("|---|---|---|---|---|---|---|\n\n0 simulated logs per law.\n")
    row = {"law": "geometric", "truth": 0.5, "runs": 7, "estimators": {}}
    assert ROPE.BiasCoverage({}, 0, [row]).summary()["runs"] == 7


# ------------------------------------------------ the smallest size run once with warnings as errors
def test_every_summary_at_one_run_is_exact_with_warnings_as_errors(monkeypatch):
    """The smallest size, one run (one log), with warnings as errors: the off-policy study's row
    (its estimates stood in: ``mean`` the one value, ``bias`` against the truth, ``coverage_95``
    0 or 1, ``mcse``, ``sd`` and ``bias_over_mcse`` NaN: no spread from one value), a results
    summary, a comparison (no interval: None) and a sweep's summary (s.e. 0), each without a
    warning (NumPy warns on a standard deviation of one value)."""
    import types

    from jaxbandits import ope

    est = [types.SimpleNamespace(name="a", value=0.7, lo=0.1, hi=0.9),
           types.SimpleNamespace(name="b", value=0.2, lo=0.3, hi=0.4)]
    monkeypatch.setattr(ope, "true_value", lambda *a, **k: 0.5)
    monkeypatch.setattr(ope, "simulate_log", lambda *a, **k: None)
    monkeypatch.setattr(ope, "evaluate", lambda *a, **k: types.SimpleNamespace(estimates=est))
    t = np.array([10, 20])
    c = {"Random": {"regret": np.array([[3.0, 5.0]]), "pulls": np.array([[10, 10]])},
         "UCB1": {"regret": np.array([[1.0, 2.0]]), "pulls": np.array([[5, 15]])}}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        exp = X.get("ope-bias-coverage")
        [row] = exp.runner(dict(exp.config, laws=["geometric"]), 1, 0, None).laws
        r = Results("d", {}, 0, 1, 20, t, c)
        s = r.summary()
        cp = compare(r, "Random").to_dict()
        sw = SweepResults("s", {}, 0, 1, "T", [8.0, 16.0], finals={"A": [np.array([1.0]), np.array([2.0])]},
                          bounds={"A": [np.nan, np.nan]}).summary()
    assert row["runs"] == 1 and row["truth"] == 0.5
    for e in est:
        got = row["estimators"][e.name]
        assert got["mean"] == e.value and got["bias"] == pytest.approx(e.value - 0.5, rel=1e-15)
        assert got["coverage_95"] == float(e.lo <= 0.5 <= e.hi)
        assert all(math.isnan(got[k]) for k in ("mcse", "sd", "bias_over_mcse")), got
    assert s["policies"]["UCB1"]["final_regret_mean"] == 2.0 and s["policies"]["UCB1"]["final_regret_se"] == 0.0
    assert s["policies"]["UCB1"]["final_regret_ci95"] == [None, None]
    p = cp["policies"]["UCB1"]
    assert (p["diff_mean"], p["diff_lo"], p["final_diff_ci"]) == ([-2.0, -3.0], [None, None], [None, None])
    assert sw["policies"]["A"]["regret_mean"] == [1.0, 2.0] and sw["policies"]["A"]["regret_se"] == [0.0, 0.0]


# ------------------------------------------------ a stated default pinned: every runner experiment's file
def test_every_runner_experiment_loaded_back_from_show_toml_is_the_registered_one(tmp_path):
    """Every registered experiment with a runner of its own, written by ``jaxbandits show NAME
    --toml`` and loaded back: the same runner, runs, config, ignored options and horizon keys; one
    that ignores the horizon states horizon 1 (what a runner file states: the file has none), the
    others their own. The off-policy study's file then runs (no law row: no log simulated)."""
    from jaxbandits.apps.cli import main
    from jaxbandits.experiments.files.loading import experiment
    from jaxbandits.experiments.specs import resolve_config

    seen = set()
    for name, exp in X.load_all().items():
        if exp.runner is None:
            continue
        f = tmp_path / f"{name}.toml"
        assert main(["show", name, "--toml", "--output", str(f)]) == 0
        back = experiment(str(f))
        assert back.runner is exp.runner and back.runs == exp.runs, name
        assert (back.ignores, back.horizon_keys) == (tuple(exp.ignores), tuple(exp.horizon_keys)), name
        assert resolve_config(back, None) == resolve_config(exp, None), name
        if "horizon" in exp.ignores:
            assert exp.horizon == back.horizon == 1, (name, exp.horizon, back.horizon)
        seen.add(name)
        if name == "ope-bias-coverage":
            res = back.runner({**resolve_config(back, None), "laws": []}, back.runs, 0, None)
            assert res.summary()["runs"] == 0 and res.summary()["config"]["window"] == exp.config["window"]
    assert {"ope-bias-coverage", "bayes-fit-recovery", "thune2019-bounds", "pikeburke2018-appF"} <= seen, seen
