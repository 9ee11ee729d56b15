"""Pike-Burke et al. (2018) Fig. 3 and App. F against specs/pikeburke2018_odaaf.md section 4.5/4.6
(reconstructed parameters: mu = (0.5, 0.6), T = 250 000; the ODAAF-family regrets there are
deterministic, Delta n_{m_e}, because elimination happens at phase 4 in every run)."""
import numpy as np
import pytest

from jaxbandits import experiments as X
from jaxbandits.policies import anonymous as A


def _final(res, lab):
    m, se = res.mean_se(lab)
    return m[-1], se[-1]


def _median_final(res, lab):
    return float(np.median(np.asarray(res.curves[lab]["regret"])[:, -1]))


def _expected(kind, T, e, **kw):
    """Delta n_4 at horizon T (the schedules depend on T through L_m = log(T D_m^2)), with the
    check that Step 1 of phase 4 ends before T, so that the elimination happens in the run."""
    tab = A.schedule(kind, T, e, **kw)
    assert A.phase_timeline(tab, 2, kind != "odaaf", 4)[-1] <= T
    return 0.1 * tab[4]


def test_fig3a_reduced():
    T = 60_000
    r = X.run("pikeburke2018-fig3a", runs=8, horizon=T, overrides={"mean_delays": [10]})
    assert abs(_median_final(r, "unif(0,20), E=10, d=20: ODAAF") - _expected("odaaf", T, 10)) < 0.05
    assert abs(_median_final(r, "unif(0,20), E=10, d=20: ODAAF-B") - _expected("odaaf_b", T, 10, bound=20)) < 0.05
    assert 50 < _final(r, "unif(0,20), E=10, d=20: QPM-D")[0] < 250


def test_fig3b_orderings_reduced():
    """Low variance (Poisson): ODAAF-V < ODAAF; exponential (V = E^2): ODAAF-V > ODAAF (spec 4.6.4)."""
    T = 90_000
    r = X.run("pikeburke2018-fig3b", runs=4, horizon=T, overrides={"mean_delays": [10]})
    f = lambda lab: _median_final(r, lab)
    assert abs(f("Poisson, E=10, V=10: ODAAF-V") - _expected("odaaf_v", T, 10, variance=10)) < 0.05
    assert f("Poisson, E=10, V=10: ODAAF-V") < f("Poisson, E=10, V=10: ODAAF")
    assert abs(f("exponential, E=10, V=100: ODAAF-V") - _expected("odaaf_v", T, 10, variance=100)) < 0.05
    assert f("exponential, E=10, V=100: ODAAF-V") > f("exponential, E=10, V=100: ODAAF")


@pytest.mark.slow
def test_fig3_full_acceptance():
    """Spec 4.6: ratios converge (variation below 25% of the final ratio over t >= T/2, or from
    the curve's last kink when that is later: exponential E = 20 ODAAF-V is still paying for its
    phase-4 block until t = 166 637, which is claim 4.3(5), "only just eliminated at T", and
    conflicts with a window starting at T/2); the orderings; exponential E = 20: ODAAF-V
    eliminates only at 215 314 > 0.8 T (regret 0.1 x 87997); QPM-D about 200 everywhere."""
    ra = X.run("pikeburke2018-fig3a")
    rb = X.run("pikeburke2018-fig3b")
    for r in (ra, rb):
        half = r.t >= r.t[-1] / 2
        for lab in r.curves:
            if lab.endswith("QPM-D"):
                m, se = _final(r, lab)
                assert abs(m - 204) < 4 * se + 15, lab
                continue
            q = r.mean_se(lab.rsplit(": ", 1)[0] + ": QPM-D")[0]
            mean = r.mean_se(lab)[0]
            settled = half & (r.t >= r.t[np.argmax(mean >= 0.995 * mean[-1])])
            ratio = mean[settled] / q[settled]
            assert (ratio.max() - ratio.min()) < 0.25 * ratio[-1], lab
    assert abs(_final(rb, "exponential, E=20, V=400: ODAAF-V")[0] - 8799.7) < 0.1
    for e, v in [(10, 10), (20, 20)]:
        assert _final(rb, f"Poisson, E={e}, V={v}: ODAAF-V")[0] < _final(rb, f"Poisson, E={e}, V={v}: ODAAF")[0]


@pytest.mark.slow
def test_appF_linear_in_mean_delay():
    """App. F: regret grows linearly in E[tau] for ODAAF (R^2 >= 0.9) and, on paired streams, for
    QPM-D (positive slope of the paired differences with constant delays)."""
    r = X.run("pikeburke2018-appF")
    fit = r.extra["fit"]
    assert fit["unif: ODAAF"]["r2"] >= 0.9 and fit["unif: ODAAF"]["slope"] > 0
    assert fit["const: ODAAF"]["r2"] >= 0.9
    assert fit["const: QPM-D"]["paired_slope"] > 0
