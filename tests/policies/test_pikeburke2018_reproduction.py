"""Pike-Burke et al. (2018) Fig. 3 and App. F against the reference numbers and acceptance criteria
of docs/reproductions/pikeburke2018.md (reconstructed parameters, conventions §11: mu = (0.5, 0.6),
T = 250 000; the ODAAF-family regrets there are deterministic, Delta n_{m_e}, because elimination
happens at phase 4 in every run)."""
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
    """Fig. 3(a) at the full horizon T = 250 000 for E = 10 with 6 runs (200 in the slow version).
    ODAAF and ODAAF-B pay exactly Delta n_4 (deterministic: 2157.4 and 1591.2; this excludes either
    run with the other's schedule, or with a bridge rule / block length off by one). The ratios to
    QPM-D at T (10.6 and 7.8) must be those values over a QPM-D regret within 3 of its
    s.e. + 5% of 204 (with 6 runs a band of about 30%: it excludes a QPM-D, or a feed mechanism,
    whose regret is off by more than that; test_anonymous.py pins QPM-D's value with 20 runs).
    Convergence: after the last kink, over t >= T/2, each ratio varies by less
    than 25% of its final value (a policy still paying for a block after T/2 fails)."""
    T = 250_000
    r = X.run("pikeburke2018-fig3a", runs=6, horizon=T, overrides={"mean_delays": [10]})
    lab = "unif(0,20), E=10, d=20: "
    assert abs(_median_final(r, lab + "ODAAF") - _expected("odaaf", T, 10)) < 0.05
    assert abs(_median_final(r, lab + "ODAAF-B") - _expected("odaaf_b", T, 10, bound=20)) < 0.05
    q_mean, q_se = _final(r, lab + "QPM-D")
    band = 3 * q_se + 0.05 * 204
    assert band < 0.35 * 204 and abs(q_mean - 204) < band, (q_mean, q_se)  # docs/reproductions/pikeburke2018.md
    for name, val in [("ODAAF", 2157.4), ("ODAAF-B", 1591.2)]:
        ratio = _final(r, lab + name)[0] / q_mean
        assert val / (204 + band) <= ratio <= val / (204 - band), (name, ratio)
        mean = r.mean_se(lab + name)[0]
        q = r.mean_se(lab + "QPM-D")[0]
        settled = (r.t >= T / 2) & (r.t >= r.t[np.argmax(mean >= 0.995 * mean[-1])])
        rr = mean[settled] / q[settled]
        assert settled.sum() >= 5 and rr.max() - rr.min() < 0.25 * rr[-1], (name, rr)


@pytest.mark.slow  # CI time; fig3a and appF slices stay in the default suite
def test_fig3b_orderings_reduced():
    """Low variance (Poisson): ODAAF-V < ODAAF; exponential (V = E^2): ODAAF-V > ODAAF (the paper's claim)."""
    T = 90_000
    r = X.run("pikeburke2018-fig3b", runs=4, horizon=T, overrides={"mean_delays": [10]})
    f = lambda lab: _median_final(r, lab)
    assert abs(f("Poisson, E=10, V=10: ODAAF-V") - _expected("odaaf_v", T, 10, variance=10)) < 0.05
    assert f("Poisson, E=10, V=10: ODAAF-V") < f("Poisson, E=10, V=10: ODAAF")
    assert abs(f("exponential, E=10, V=100: ODAAF-V") - _expected("odaaf_v", T, 10, variance=100)) < 0.05
    assert f("exponential, E=10, V=100: ODAAF-V") > f("exponential, E=10, V=100: ODAAF")


@pytest.mark.slow
def test_fig3_full_acceptance():
    """Acceptance: ratios converge (variation below 25% of the final ratio over t >= T/2, or from
    the curve's last kink when that is later: exponential E = 20 ODAAF-V is still paying for its
    phase-4 block until t = 166 637, which is the paper's claim 5 of Fig. 3(b), "only just eliminated at T", and
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


def test_appF_linear_in_mean_delay_reduced():
    """Fast slice of App. F (regret linear in E[tau]). ODAAF, unif(0, 2E), E in {0, 10, 20},
    T = 60 000, 3 runs (median): the suboptimal arm goes at phase 4 and R_T = Delta n_4(E), a
    linear fit has R^2 >= 0.9 and a slope of 55-75 per unit delay (64 from eq. (2)). Excluded: a
    schedule whose corruption budget ignores E (slope 0) or omits the factor m (c_m = 3E: slope
    about 16). QPM-D, constant delays E in {0, 50, 100, 200} on paired streams (one compiled grid),
    T = 20 000, 8 runs: the paired differences R_T(E) - R_T(0) grow (positive slope, above 2 s.e.):
    excluded, a delay-blind learner (identical runs, slope 0)."""
    import jax
    import jax.numpy as jnp

    from jaxbandits import channels as C
    from jaxbandits import delays as D
    from jaxbandits import envs as E
    from jaxbandits.engine import simulate, simulate_grid

    T = 60_000
    es = [0, 10, 20]
    finals = []
    for e in es:
        env = E.bernoulli([0.5, 0.6], delay=D.uniform(0, 2 * e))
        o = simulate(env, C.anonymous(), A.odaaf(float(e)), T, jax.random.key(0), 3, record=T)
        finals.append(float(np.median(o.regret[:, -1])))
        assert abs(finals[-1] - _expected("odaaf", T, e)) < 0.05, (e, finals[-1])
    slope, icept = np.polyfit(es, finals, 1)
    pred = slope * np.asarray(es) + icept
    r2 = 1 - np.sum((finals - pred) ** 2) / np.sum((finals - np.mean(finals)) ** 2)
    assert r2 >= 0.9 and 55 <= slope <= 75, (slope, r2, finals)

    grid = np.array([0, 50, 100, 200])
    build = lambda e: (E.bernoulli([0.5, 0.6], delay=D.Fixed(jnp.asarray(e, jnp.int32), support_max=200)), A.qpmd())
    o = simulate_grid(build, {"e": grid}, C.attributed(width=201), 20_000, jax.random.key(0), 8, record=20_000)
    rt = np.asarray(o.regret[..., -1], np.float64)  # [G, runs]
    diffs = rt - rt[0]
    slopes = np.array([np.polyfit(grid, diffs[:, j], 1)[0] for j in range(diffs.shape[1])])
    assert slopes.mean() > 2 * slopes.std(ddof=1) / np.sqrt(slopes.size) and slopes.mean() > 0, slopes
