"""Wang, Wang and Huang (2021), Figs. 2-5: the paper's claims (its Sec. 4; small scale by default; the full
reproduction behind docs/reproductions/wang2021.md under ``pytest -m slow``)."""
import jax
import numpy as np
import pytest

from jaxbandits import channels as C
from jaxbandits import delays as D
from jaxbandits import envs as E
from jaxbandits import experiments as X
from jaxbandits.core import profiles as Pr
from jaxbandits.policies import anonymous as A
from jaxbandits.policies import composite as W
from jaxbandits.reproductions import wang2021 as R
from jaxbandits.engine import simulate


def _at(o, t):
    r = o.regret.mean(0)
    return float(r[np.searchsorted(o.t, t)])


def test_registered_experiments_build():
    n = {"wang2021-fig2": 4, "wang2021-fig3": 6, "wang2021-fig4": 4, "wang2021-fig5": 4}
    for name, k in n.items():
        exp = X.get(name)
        panels = exp.build(dict(exp.config))
        assert len(panels) == k
    fig4 = X.get("wang2021-fig4").build(dict(X.get("wang2021-fig4").config))
    assert "L=4096 tail=1.5e-04" in fig4[3].name  # the truncation is stated where the curve is drawn
    ob, cp = R.streams(X.get("wang2021-fig5").config)
    ob2, _ = R.streams(X.get("wang2021-fig5").config)
    np.testing.assert_array_equal(ob, ob2)  # one fixed stream ("dataset")
    assert np.bincount(ob).argmax() == 0 and np.bincount(cp).argmax() == 5  # Zipf head; Saturday


def test_fig5a_mechanism_small():
    """Fig. 5(a) regression: under the non-oblivious rule CLW's regret keeps its slope (linear) while
    ARS-EXP3's slope decays, and CLW ends above (T = 3e4, 8 runs; full scale under -m slow)."""
    T = 30000
    lab = E.synthetic_labels(E.zipf_probs(10), T, 2021)
    env = E.label_stream(lab, adaptive_d=10)
    o = simulate(env, C.anonymous(), {"exp3": W.ars_exp3(), "clw": W.clw(10)}, T, jax.random.key(0), 8,
                 record=("log", 60))
    slope = lambda x, a, b: (_at(x, b) - _at(x, a)) / (b - a)
    ratio = {k: slope(v, T // 2, T) / slope(v, T // 4, T // 2) for k, v in o.items()}
    assert _at(o["clw"], T) > 1.08 * _at(o["exp3"], T)
    assert ratio["clw"] > ratio["exp3"] + 0.04, ratio


@pytest.mark.parametrize("panel", ["z~U{0..60}", "interval(30,40)", "lin-inc(d=50)"])
def test_ars_ucb_below_benchmark_reduced(panel):
    """Claim 2 (ARS-UCB below the ODAAF benchmark in every panel of Figs. 2-3), a fast slice of the
    slow test: alpha = 4, f = k^2 at T = 2e4 (4 runs) in three panels not covered by
    test_composite.py (which has U{10..30}): Fig. 2's U{0..60} against ODAAF-V (mean 30, variance
    310) and Fig. 3's bounded interval (30, 40) and linearly increasing d = 50 against generalized
    ODAAF. ARS-UCB must be below 0.7 x the benchmark (measured: 0.51, 0.21, 0.19). The benchmark is
    itself below uniform play (0.4 T = 8000, asserted), so this excludes every ARS-UCB with
    near-linear regret (an index that does not concentrate: a wrong sign or count in M/N, a
    clip that never binds on the right side) and one at benchmark level (a block schedule that
    stops growing with the ODAAF-like over-exploration it is claimed to avoid). It does not exclude
    per-slot UCB on the aggregated feedback (f = 1: 1286 / 1745 / 2291 here): that one is pinned by
    tests/reference/test_adversarial_ref.py. At T = 1e4 ODAAF-V is still below ARS-UCB on U{0..60}
    (348 vs 829: its elimination phases have not yet paid), hence T = 2e4."""
    T, R = 20000, 4
    means = np.linspace(0.9, 0.1, 9)
    if panel.startswith("z~"):
        env, bench = E.composite(means, delay=D.uniform(0, 60)), A.odaaf_v(30.0, 310.0)
    elif panel.startswith("interval"):
        env, bench = E.composite(means, profile=Pr.interval(30, 40)), W.generalized_odaaf(40)
    else:
        env, bench = E.composite(means, profile=Pr.linear_increasing(50)), W.generalized_odaaf(50)
    o = simulate(env, C.composite(), {"ars": W.ars_ucb(4.0, "k^2"), "bench": bench}, T, jax.random.key(0), R)
    fin = {k: float(v.regret[:, -1].mean()) for k, v in o.items()}
    assert fin["bench"] < 0.4 * T and fin["ars"] < 0.7 * fin["bench"], fin


@pytest.mark.slow
def test_full_reproduction_claims():
    """The numbers of docs/reproductions/wang2021.md (T = 1e5; 50 runs, 20 for Fig. 5)."""
    T = 100_000
    res = {f: X.run(f"wang2021-{f}") for f in ("fig2", "fig3", "fig4", "fig5")}

    def panels(r):
        out = {}
        for lab, p in r.panels.items():
            out.setdefault(p, []).append(lab)
        return out

    def final(r, lab):
        return float(np.asarray(r.curves[lab]["regret"])[:, -1].mean())

    def at(r, lab, t):
        return float(r.mean_se(lab)[0][np.searchsorted(r.t, t)])

    # claim 2: every ARS-UCB setting below the ODAAF benchmark in every panel of Figs. 2-3
    for f in ("fig2", "fig3"):
        for p, labs in panels(res[f]).items():
            bench = min(final(res[f], x) for x in labs if "ODAAF" in x)
            assert max(final(res[f], x) for x in labs if "ARS-UCB" in x) < bench, p
    # claim 1: constant increments per doubling for alpha = 4, k^2, except the linearly increasing profiles
    for f in ("fig2", "fig3", "fig4"):
        for p, labs in panels(res[f]).items():
            lab = next(x for x in labs if x.endswith("ARS-UCB a=4") or x.endswith("ARS-UCB f=k^2"))
            inc = np.diff([at(res[f], lab, c) for c in (T // 8, T // 4, T // 2, T)])
            if "lin-inc" in p:
                assert inc[-1] > inc[0], p  # documented: not logarithmic yet at T = 1e5
            else:
                assert inc[-1] < 1.5 * inc[0], (p, inc)
    # claim 4: CLW near-linear, ARS-EXP3 decaying slope, under the non-oblivious rule
    r = res["fig5"]
    for p, labs in panels(r).items():
        if "Outbrain" in p:
            s = {x: (at(r, x, T) - at(r, x, T // 2)) / (at(r, x, T // 2) - at(r, x, T // 4)) / 2 for x in labs}
            exp3 = next(x for x in labs if "ARS-EXP3" in x)
            clw = next(x for x in labs if "CLW" in x)
            assert s[clw] > 0.85 and s[exp3] < 0.8 and final(r, clw) > 1.1 * final(r, exp3), (p, s)
        else:  # claim 5 as measured: all within a few percent, ARS-EXP3 not worse than CLW(d)
            vals = {x: final(r, x) for x in labs}
            exp3 = next(x for x in labs if "ARS-EXP3" in x)
            assert max(vals.values()) < 1.1 * min(vals.values())
            assert vals[exp3] <= min(vals.values()) * 1.01
