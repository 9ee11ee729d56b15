"""Wang, Wang and Huang (2021), Figures 2-5, with our reproduction defaults (the paper gives no T,
no run count, no alpha grid or f set; conventions §11): T = 1e5, 50 runs (Figs. 2-4) and 20 runs
(Fig. 5); nine arms s = (0.9, ..., 0.1) with Bernoulli totals; "vary alpha" panels fix f = k^2 and
take alpha in {2, 4, 6, 8}, "vary f" panels fix alpha = 4 and take f in {k, k^2, k^3, 2^k}.

Fig. 5 uses **synthetic click streams as stand-ins** for the Outbrain and Coupon logs (which
cannot be fetched here): i.i.d. Zipf(1.0) labels over 10 categories, and i.i.d. weekday labels
over 7 days with the weights ``coupon_weights`` (default ``COUPON_WEIGHTS``, a weekend peak); one fixed stream per setting (numpy seed
``stream_seed``), shared by every run and policy. Panel letters are inferred (the text we worked
from lost them), so panels are named by their setting.
"""
from __future__ import annotations

import numpy as np

from ..core import validate as V
from .. import channels as C
from .. import envs as E
from ..core import profiles as Pr
from ..experiments.specs import Experiment, Panel
from ..policies import anonymous as A
from ..policies import composite as W

MEANS = [0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3, 0.2, 0.1]
COUPON_WEIGHTS = [1.0, 1.0, 1.0, 1.0, 1.2, 2.0, 1.6]  # Mon..Sun (stand-in; stated, not measured)
CHECKPOINTS = (6250, 12500, 25000, 50000, 100000)
RANGES = {"means": "2 to 2**20 Bernoulli means of the totals, each in [0, 1]",
          "alphas": "ARS-UCB's alpha values of the 'vary alpha' panels, numbers > 0",
          "fs": "block sizes of the 'vary f' panels: 'k', 'k^2', 'k^3', '2^k' or 'const'",
          "alpha_f": "block size of the 'vary alpha' panels: 'k', 'k^2', 'k^3', '2^k' or 'const'",
          "f_alpha": "alpha of the 'vary f' panels, a number > 0",
          "delays": "pairs [lo, hi] of integers, 0 <= lo <= hi <= 2**30: lags uniform on {lo..hi}",
          "tol": "tail mass at which a profile is cut, in (0, 1)",
          "max_len": "most lags of a polynomial profile, an integer >= 1",
          "ds": "delays d of the panels, integers in [1, 2**24]",
          "beta": "ARS-EXP3's block exponent, in (0, 1]",
          "stream_length": "labels per synthetic stream, an integer in [1, 2**24]",
          "stream_seed": "numpy seed of the streams, an integer >= 0",
          "outbrain_categories": "categories of the Zipf stream, an integer in [2, 2**20]",
          "zipf_s": "Zipf exponent, a number",
          "coupon_weights": "weights of the weekday stream, at least 2 numbers >= 0"}
BASE = {"means": MEANS, "alphas": [2, 4, 6, 8], "fs": ["k", "k^2", "k^3", "2^k"], "alpha_f": "k^2", "f_alpha": 4}


def _ars_grid(cfg, vary):
    if vary == "alpha":
        return {f"ARS-UCB a={a:g}": W.ars_ucb(float(a), cfg["alpha_f"]) for a in cfg["alphas"]}
    return {f"ARS-UCB f={f}": W.ars_ucb(float(cfg["f_alpha"]), f) for f in cfg["fs"]}


def _fig2(cfg):
    panels = []
    for lo, hi in cfg["delays"]:
        law = Pr.random_delay(lo, hi)
        mean, var = float(law.mean), float(law.variance)
        env = E.composite(cfg["means"], delay=law)
        base = {"ODAAF-V": A.odaaf_v(mean, var), "ODAAF": A.odaaf(mean)}
        for vary in ("alpha", "f"):
            panels.append(Panel(f"z~U{{{lo}..{hi}}}, vary {vary}", env, C.composite(), {**_ars_grid(cfg, vary), **base}))
    return panels


def _panel_count(cfg, most):
    """The figure has ``most`` panels: a longer ``profiles`` list is refused, not cut short."""
    n = len(cfg["profiles"])
    if not 1 <= n <= most:
        raise ValueError(f"profiles: 1 to {most} entries (one panel each), got {n}")
    return n


def _fig3(cfg):
    panels = []
    _panel_count(cfg, 6)
    for (kind, a, b), vary in zip(cfg["profiles"], ["alpha", "f"] * 3):
        V.choice("profiles: kind", kind, ("interval", "lin-dec", "lin-inc"))
        if kind == "interval":
            prof, d = Pr.interval(a, b), b
        elif kind == "lin-dec":
            prof, d = Pr.linear_decreasing(a), a
        else:
            prof, d = Pr.linear_increasing(a), a
        env = E.composite(cfg["means"], profile=prof)
        pols = {**_ars_grid(cfg, vary), "gen. ODAAF": W.generalized_odaaf(d)}
        panels.append(Panel(f"{prof.name}, vary {vary}", env, C.composite(), pols))
    return panels


def fig4_profiles(cfg):
    """The lag profiles of Wang et al. (2021)'s Figure 4, from the experiment's config.

    Args:
        cfg: the experiment's config: ``profiles`` (pairs ``(kind, gamma)``, ``kind`` one of
            ``"discounted"``, ``"polynomial"``), ``tol`` and ``max_len``.

    Returns:
        A list of :class:`jaxbandits.core.profiles.Profile`.

    Raises:
        ValueError: an unknown kind or a parameter out of range.

    Examples:
        >>> from jaxbandits.reproductions import wang2021
        >>> cfg = {"profiles": [("discounted", 0.9), ("polynomial", 2.0)], "tol": 1e-6, "max_len": 4096}
        >>> [(p.name, p.length) for p in wang2021.fig4_profiles(cfg)]
        [('discounted(gamma=0.9)', 133), ('polynomial(gamma=2)', 4096)]
    """
    out = []
    for kind, g in cfg["profiles"]:
        V.choice("profiles: kind", kind, ("discounted", "polynomial"))
        if kind == "discounted":
            out.append(Pr.discounted(g, tol=cfg["tol"]))
        else:
            out.append(Pr.polynomial(g, tol=cfg["tol"], max_len=cfg["max_len"]))
    return out


def _fig4(cfg):
    panels = []
    _panel_count(cfg, 4)
    for prof, vary in zip(fig4_profiles(cfg), ["alpha", "f", "alpha", "f"]):
        env = E.composite(cfg["means"], profile=prof)
        panels.append(Panel(f"{prof.name} L={prof.length} tail={prof.tail_mass:.1e}, vary {vary}", env,
                            C.composite(), _ars_grid(cfg, vary)))
    return panels


def streams(cfg):
    """The two stand-in click streams of Wang et al. (2021)'s Figure 5: (Outbrain labels, Coupon labels).

    Args:
        cfg: the experiment's config: ``stream_length``, ``outbrain_categories``, ``zipf_s``,
            ``coupon_weights`` and ``stream_seed``.

    Returns:
        ``(outbrain, coupon)``, two int arrays of ``stream_length`` labels.

    Examples:
        >>> from jaxbandits.reproductions import wang2021
        >>> ob, cp = wang2021.streams({"stream_length": 5, "outbrain_categories": 10, "zipf_s": 1.0,
        ...                            "coupon_weights": [0.5, 0.5], "stream_seed": 0})
        >>> ob.tolist(), cp.tolist()
        ([3, 0, 0, 0, 5], [1, 1, 0, 1, 0])
    """
    n = int(cfg["stream_length"])
    ob = E.synthetic_labels(E.zipf_probs(cfg["outbrain_categories"], cfg["zipf_s"]), n, cfg["stream_seed"])
    cp = E.synthetic_labels(np.asarray(cfg["coupon_weights"], np.float64), n, cfg["stream_seed"] + 1)
    return ob, cp


def _fig5(cfg):
    ob, cp = streams(cfg)
    panels = []
    for d in cfg["ds"]:
        env = E.label_stream(ob, adaptive_d=d, streak_factor=3)
        panels.append(Panel(f"Outbrain stand-in, non-oblivious, d={d}", env, C.anonymous(),
                            {"ARS-EXP3": W.ars_exp3(cfg["beta"]), f"CLW (d={d})": W.clw(d)}))
    for d in cfg["ds"]:
        env = E.label_stream(cp, delay=Pr.random_delay(d // 2, d))
        lo, hi = int(round(0.9 * d)), int(round(1.1 * d))
        panels.append(Panel(f"Coupon stand-in, oblivious z~U{{{d // 2}..{d}}}, d={d}", env, C.anonymous(),
                            {"ARS-EXP3": W.ars_exp3(cfg["beta"]), f"CLW (d={d})": W.clw(d),
                             f"CLW (d={lo}, -10%)": W.clw(lo), f"CLW (d={hi}, +10%)": W.clw(hi)}))
    return panels


FIG2 = Experiment("wang2021-fig2",
                  "Wang et al. 2021 Fig. 2: ARS-UCB (vary alpha / f) vs ODAAF-V and ODAAF, random delays U{10..30}, U{0..60}",
                  _fig2, {**BASE, "delays": [[10, 30], [0, 60]]}, horizon=100_000, runs=50, record=("log", 120),
                  layout=(2, 2), checkpoints=CHECKPOINTS, ranges=RANGES)
FIG3 = Experiment("wang2021-fig3",
                  "Wang et al. 2021 Fig. 3: ARS-UCB vs generalized ODAAF, bounded-interval and linear profiles",
                  _fig3, {**BASE, "profiles": [["interval", 30, 40], ["interval", 10, 20], ["lin-dec", 100, 0],
                                               ["lin-dec", 50, 0], ["lin-inc", 100, 0], ["lin-inc", 50, 0]]},
                  horizon=100_000, runs=50, record=("log", 120), layout=(2, 3), checkpoints=CHECKPOINTS,
                  ranges={**RANGES, "profiles": "entries [kind, a, b]: 'interval' (lags in {a..b}, 0 <= a <= b), "
                                                "'lin-dec' or 'lin-inc' (length a >= 1; b unused); 1 to 6 entries"})
FIG4 = Experiment("wang2021-fig4",
                  "Wang et al. 2021 Fig. 4: ARS-UCB alone on infinite-support profiles (discounted, polynomial), truncated",
                  _fig4, {**BASE, "profiles": [["discounted", 0.8], ["discounted", 0.9], ["polynomial", 3.0],
                                               ["polynomial", 2.0]], "tol": 1e-6, "max_len": 4096},
                  horizon=100_000, runs=50, record=("log", 120), layout=(2, 2), checkpoints=CHECKPOINTS,
                  ranges={**RANGES, "profiles": "entries [kind, gamma]: 'discounted' (gamma in (0, 1)) or "
                                                "'polynomial' (gamma > 1); 1 to 4 entries"})
FIG5 = Experiment("wang2021-fig5",
                  "Wang et al. 2021 Fig. 5: ARS-EXP3 vs CLW on synthetic stand-ins for Outbrain (non-oblivious) and Coupon (oblivious)",
                  _fig5, {"ds": [10, 20], "beta": 0.5, "stream_length": 100_000, "stream_seed": 2021,
                          "outbrain_categories": 10, "zipf_s": 1.0, "coupon_weights": COUPON_WEIGHTS},
                  horizon=100_000, runs=20, record=("log", 120), layout=(2, 2), checkpoints=CHECKPOINTS,
                  ranges=RANGES)
