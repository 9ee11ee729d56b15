"""Plot options change what is drawn (checked on the matplotlib objects, not on pixels): policies
chosen with only/exclude, log scales on every panel, reference curves thin and grey outside the
y-limits, confidence bands, the pull-share panel, the caption naming the overrides."""
import matplotlib
import numpy as np
import pytest

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from jaxbandits import Results  # noqa: E402
from jaxbandits.apps.cli import main  # noqa: E402
from jaxbandits.report.compare import compare  # noqa: E402
from jaxbandits.report.plotting import figure_compare, figure_regret  # noqa: E402


def _results(panels=False, experiment="quickstart", config=None, panel_names=("d=10", "d=50")):
    rng = np.random.default_rng(0)
    t = np.array([1, 10, 100, 1000])
    runs, K = 16, 4
    labs = ["UCB1", "KL-UCB", "random"]
    names = [f"{p}: {l}" for p in panel_names for l in labs] if panels else labs
    curves = {}
    for i, lab in enumerate(names):
        scale = 200.0 if lab.endswith("random") else 10.0 * (i % 3 + 1)
        x = np.abs(rng.normal(scale, scale / 10, size=(runs, 4))) * np.log1p(t)
        curves[lab] = {"regret": x.astype(np.float32), "expected_regret": x.astype(np.float32),
                       "reward": np.zeros((runs, 4), np.float32),
                       "pulls": rng.multinomial(1000, [0.7, 0.1, 0.1, 0.1], size=runs).astype(np.int32)}
    cfg = config if config is not None else {"delay_mean": 50.0, "theta": [0.5, 0.4, 0.3, 0.2], "window": 20}
    return Results(experiment, {"channels": ["conversions"], **cfg}, 3, runs, 1000, t, curves,
                   panels={l: l.rsplit(": ", 1)[0] for l in names} if panels else {}, layout=(1, 2) if panels else None)


def _regret_axes(fig):
    return [ax for ax in fig.axes if ax.get_label().startswith("regret")]


def _curves(ax):
    """Labels of the policy lines drawn in ``ax`` (not the reference lines of c log t)."""
    return [ln.get_label().split()[0] for ln in ax.get_lines()]


@pytest.fixture(autouse=True)
def _close():
    yield
    plt.close("all")


def test_default_figure_draws_every_policy_with_bands_and_random_as_reference():
    res = _results()
    fig = figure_regret(res)
    (ax,) = _regret_axes(fig)
    assert _curves(ax) == ["UCB1", "KL-UCB", "random"]
    ref = [ln for ln in ax.get_lines() if ln.get_label().startswith("random")][0]
    pol = [ln for ln in ax.get_lines() if ln.get_label().startswith("UCB1")][0]
    assert ref.get_linewidth() < pol.get_linewidth() and ref.get_linestyle() == "--"
    assert matplotlib.colors.to_rgb(ref.get_color()) == (0.55, 0.55, 0.55)
    # the y-limits fit the other policies' bands: random (mean ~200 log 1001) is far above them
    top = ax.get_ylim()[1]
    non_ref_max = max(res.interval(l)[1].max() for l in ("UCB1", "KL-UCB"))
    assert non_ref_max <= top < 1.2 * non_ref_max < res.mean_se("random")[0][-1]
    # one band (a PolyCollection from fill_between) per non-reference policy: the 95% t interval
    bands = ax.collections
    assert len(bands) == 2
    lo, hi = res.interval("UCB1")
    ys = bands[0].get_paths()[0].vertices[:, 1]
    assert np.isclose(ys.max(), hi.max(), rtol=1e-6) and np.isclose(ys.min(), lo.min(), rtol=1e-6)
    assert ax.get_xscale() == "linear" and ax.get_yscale() == "linear"
    # no reference: random sets the limits like any policy
    ax2 = _regret_axes(figure_regret(res, references=[]))[0]
    assert ax2.get_ylim()[1] >= res.interval("random")[1].max()
    assert len(figure_regret(res, bands="none").axes[0].collections) == 0


def test_only_and_exclude_choose_the_policies():
    res = _results()
    assert _curves(_regret_axes(figure_regret(res, only=["KL-UCB"]))[0]) == ["KL-UCB"]
    assert _curves(_regret_axes(figure_regret(res, exclude=["random", "UCB1"]))[0]) == ["KL-UCB"]
    with pytest.raises(ValueError, match="only: no policy 'PPO'; policies: UCB1, KL-UCB, random"):
        figure_regret(res, only=["PPO"])
    with pytest.raises(ValueError, match="leave no policy"):
        figure_regret(res, only=["UCB1"], exclude=["UCB1"])


def test_log_scales_apply_to_every_panel_and_panels_follow_the_selection():
    """The bug of old: ``--logx`` was ignored on multi-panel figures."""
    res = _results(panels=True)
    fig = figure_regret(res, logx=True, logy=True)
    axes = _regret_axes(fig)
    assert [ax.get_title() for ax in axes] == ["d=10", "d=50"]
    assert all(ax.get_xscale() == "log" and ax.get_yscale() == "log" for ax in axes)
    assert all(_curves(ax) == ["UCB1", "KL-UCB", "random"] for ax in axes)
    assert all(ax.get_ylim()[0] > 0 for ax in axes)
    # a full label picks one panel's curve; a short label every panel's; empty panels are dropped
    assert [_curves(ax) for ax in _regret_axes(figure_regret(res, only=["d=50: UCB1"]))] == [["UCB1"]]
    assert [_curves(ax) for ax in _regret_axes(figure_regret(res, only=["UCB1"]))] == [["UCB1"], ["UCB1"]]
    # one colour per policy across panels
    a, b = _regret_axes(figure_regret(res))
    assert [ln.get_color() for ln in a.get_lines()[:2]] == [ln.get_color() for ln in b.get_lines()[:2]]


def test_pulls_panel_shows_each_policys_share_of_pulls():
    res = _results()
    fig = figure_regret(res, pulls=True)
    (pax,) = [ax for ax in fig.axes if ax.get_label() == "pulls"]
    assert [t.get_text() for t in pax.get_yticklabels()] == ["UCB1", "KL-UCB", "random (ref.)"]
    # K = 4 stacked segments per policy; each policy's widths sum to 1, arm 0's width is its mean share
    bars = pax.patches
    assert len(bars) == 4 * 3
    widths = np.array([b.get_width() for b in bars]).reshape(4, 3)
    np.testing.assert_allclose(widths.sum(0), 1.0, rtol=1e-6)
    p = res.curves["UCB1"]["pulls"]
    np.testing.assert_allclose(widths[0, 0], (p[:, 0] / p.sum(1)).mean(), rtol=1e-6)
    assert not [ax for ax in figure_regret(res).axes if ax.get_label() == "pulls"]


def test_title_and_caption_carry_the_overrides():
    res = _results()  # quickstart with window=20 (default 200) and its other defaults
    fig = figure_regret(res)
    texts = " ".join(t.get_text() for t in fig.texts)
    assert "overrides: window=20" in texts and "theta" not in texts and "seed 3, 16 runs × 1000 rounds" in texts
    assert "quickstart: 16 runs × 1000 rounds" in fig._suptitle.get_text()
    defaults = _results(config={"delay_mean": 50.0, "theta": [0.5, 0.4, 0.3, 0.2], "window": 200})
    assert "default settings" in " ".join(t.get_text() for t in figure_regret(defaults).texts)
    other = _results(experiment="not-registered", config={"arms": 3})
    assert "config: arms=3" in " ".join(t.get_text() for t in figure_regret(other).texts)


def test_compare_figure_has_one_band_per_policy_and_a_zero_line():
    res = _results(panels=True)
    cmp = compare(res, baseline="random")
    fig = figure_compare(cmp, res, logx=True)
    axes = [ax for ax in fig.axes if ax.get_label().startswith("compare")]
    assert len(axes) == 2 and all(ax.get_xscale() == "log" for ax in axes)
    for ax in axes:
        assert [ln.get_label().split()[0] for ln in ax.get_lines()] == ["UCB1", "KL-UCB", "random"]
        assert ax.get_lines()[-1].get_ydata()[0] == 0  # the baseline's zero line
        assert len(ax.collections) == 2
    # against UCB1, random is a reference: no band, and its difference (far above) sets no limit
    cmp = compare(res, baseline="UCB1")
    for ax in [ax for ax in figure_compare(cmp, res).axes if ax.get_label().startswith("compare")]:
        assert [ln.get_label().split()[:2] for ln in ax.get_lines()][1:] == [["random", "(ref.)"],
                                                                              ["UCB1", "(baseline)"]]
        assert len(ax.collections) == 1
        top = ax.get_ylim()[1]
        assert top < max(np.max(cmp.diffs[l]["mean"]) for l in cmp.diffs if l.endswith("random"))


def test_cli_plot_options(tmp_path, capsys):
    res = _results(panels=True)
    d = tmp_path / "r"
    res.save(str(d), plot=False)
    assert main(["plot", str(d), "--logx", "--logy", "--only", "UCB1", "--pulls", "--output", "ucb.png"]) == 0
    assert (d / "ucb.png").stat().st_size > 1000
    assert main(["plot", str(d), "--only", "PPO"]) == 2
    assert "jaxbandits: error: --only: no policy 'PPO'" in capsys.readouterr().err
    assert main(["plot", str(d), "--reference", "nope"]) == 2
    assert "--reference: no policy 'nope'" in capsys.readouterr().err
    assert main(["plot", str(d), "--output", "../x.png"]) == 2
    assert "--output must be a file name" in capsys.readouterr().err
    assert not (tmp_path / "x.png").exists()


def test_panel_names_with_colons():
    """A panel name may contain ": " (vernade2020-fig1's "binary: m=100, mu=100"): a policy's
    label within its panel is what follows the panel name, so legends, colours, references,
    --only and compare's baseline all see "UCB1" and "random"."""
    res = _results(panels=True, panel_names=("binary: m=100", "uniform: m=100"))
    axes = _regret_axes(figure_regret(res))
    assert [ax.get_title() for ax in axes] == ["binary: m=100", "uniform: m=100"]
    for ax in axes:
        assert _curves(ax) == ["UCB1", "KL-UCB", "random"]
        assert ax.get_lines()[2].get_label().startswith("random (ref.)") and len(ax.collections) == 2
    assert [ln.get_color() for ln in axes[0].get_lines()[:2]] == [ln.get_color() for ln in axes[1].get_lines()[:2]]
    assert [_curves(ax) for ax in _regret_axes(figure_regret(res, only=["KL-UCB"]))] == [["KL-UCB"], ["KL-UCB"]]
    cmp = compare(res, baseline="random")
    assert cmp.baselines == {"binary: m=100": "binary: m=100: random", "uniform: m=100": "uniform: m=100: random"}
    assert "| binary: m=100: UCB1 | random |" in cmp.table()
