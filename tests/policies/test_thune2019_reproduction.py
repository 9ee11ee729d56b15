"""Thune et al. (2019) experiments (docs/reproductions/thune2019.md) against our acceptance criteria
and the indicative numbers of an independent float64 numpy reference (20 seeds, conventions §11;
agreement expected within a few standard errors, s.e. about 3% of the mean)."""
import jax
import numpy as np
import pytest

from jaxbandits import channels as C
from jaxbandits import envs as E
from jaxbandits import experiments as X
from jaxbandits.policies import adversarial as A
from jaxbandits.engine import simulate

# E1 (K=2, Delta=0.25): T -> (Cor4, Doubling, oracle, DEW-Thm1, untruncated DEW)
E1 = {2**12: (468, 190, 101, 511, 105), 2**14: (1787, 424, 217, 2033, 202), 2**16: (6705, 880, 409, 8126, 416),
      2**17: (12919, 1230, 590, 16343, 585)}
LABELS = ("Skipper-Cor4 (OT)", "Doubling (AT)", "oracle Skipper", "DEW-Thm1 (d_max=T-1)", "untruncated DEW (ref.)")


def _near(ours_m, ours_se, ref, what):
    tol = 4 * np.hypot(ours_se, 0.03 * ref)
    assert abs(ours_m - ref) <= tol, f"{what}: {ours_m:.0f} ± {ours_se:.0f} vs {ref}"


def _uniform_regret(res, T):
    """Expected regret of uniform play on Bern(K, Delta): Delta T (K - 1)/K. A bound above it cannot
    catch a bad policy, so bound checks are made only where the bound is below it."""
    K, gap = res.config["n_arms"], res.config["gap"]
    return gap * T * (K - 1) / K


def _check_e1(res):
    """Indicative numbers (4 s.e. incl. the reference's 3%), and every run under its bound wherever the
    bound is below uniform play's regret (at 2^12 / 2^13 that is the oracle bound only: Cor 4's
    3795, DEW-Thm1's >= 4e (T-1) ln 2 and Doubling's Thm 6 >= 15 x oracle are above T/8)."""
    n_checked = 0
    for lab in LABELS:
        m, se = res.mean_se(lab)
        for i, T in enumerate(res.x):
            if T in E1:
                _near(m[i], se[i], E1[T][LABELS.index(lab)], f"{lab} T={T}")
            b = res.bounds[lab][i]
            if np.isfinite(b) and b < _uniform_regret(res, T):
                assert np.all(res.finals[lab][i] <= b), (lab, T)
                n_checked += 1
    assert n_checked >= len(res.x)  # at least the oracle's, at every T


def test_example8_reduced():
    """E1 at T = 2^12, 2^13 (20 runs): the indicative numbers, the ordering oracle < Doubling < Cor4,
    and a fast slice of the slope claim (the slow test asks slope < 0.6 / > 0.7 over 2^14..2^17):
    over this one doubling slope(Doubling) < 0.75 and slope(Skipper-Cor4) > 0.8 (reference: 0.58 and
    0.97 over 2^12..2^14). This excludes a Doubling that does not skip (Example 8's never-arriving
    delays then enter D^m, the epoch jumps to omega ~ T^1.5 ln K and eta_m ~ T^-3/4: near-linear,
    like DEW-Thm1's 0.99) and a Cor4 threshold that does not grow with D (e.g. beta* of the oracle,
    slope 0.5)."""
    res = X.run("thune2019-example8", overrides={"log2_T": [12, 13]})
    _check_e1(res)
    m = {lab: res.mean_se(lab)[0] for lab in LABELS}
    assert np.all(m["Doubling (AT)"] < m["Skipper-Cor4 (OT)"])
    assert np.all(m["oracle Skipper"] < m["Doubling (AT)"])
    slope = {lab: res.slope(lab) for lab in LABELS}
    assert slope["Doubling (AT)"] < 0.75 and slope["Skipper-Cor4 (OT)"] > 0.8, slope


def test_heavy_tail_contaminated_reduced():
    """E2's contaminated model (d_t = 0, or never with probability T^-1/2), a fast slice of the slow
    test's claims: Skipper-Cor4 / Doubling grows from T = 2^11 to 2^13 and slope(Doubling) < 0.7
    (reference: ratio 2.33 -> 4.05 over 2^12..2^14, slope 0.55; Cor4 0.95). One delay sequence per T
    (numpy seed), 10 runs, both policies in one program on the action-time channel (Skipper ignores
    the revealed delay). Excludes a Doubling that does not skip (the never-arriving rounds enter
    D^m: omega_m ~ T^2 at the first one, then a rate ~ 1/T, linear regret, ratio falling) and one
    whose restarts keep the weights or old feedback."""
    K, gap, R = 2, 0.25, 10
    out = {}
    for T in (2**11, 2**13):
        rng = np.random.default_rng([T, 1])
        d = np.where(rng.random(T) < T**-0.5, T, 0).astype(np.int64)
        env = E.bernoulli_losses(K, gap, delays=d)
        pols = {"cor4": A.skipper_dew(A.cor4_beta(K, T, float(d.sum())), count_skipped=False), "dbl": A.doubling()}
        o = simulate(env, C.action_time(width=A.doubling_width(K, T)), pols, T, jax.random.key(0), R)
        out[T] = {k: float(v.expected_regret[:, -1].mean()) for k, v in o.items()}
    r = {T: v["cor4"] / v["dbl"] for T, v in out.items()}
    slope_dbl = np.log(out[2**13]["dbl"] / out[2**11]["dbl"]) / np.log(4)
    assert r[2**13] > 1.2 * r[2**11] and slope_dbl < 0.7, (out, r, slope_dbl)


@pytest.mark.slow  # CI time; the contaminated slice stays in the default suite
def test_heavy_tail_pareto_reduced():
    """E2's Pareto(1.5) model (d = floor(U^(-2/3)) - 1, capped at T), a fast slice of the slow
    test's claims at T = 2^11 and 2^13 with 8 runs: DEW-Thm1 / Skipper-Cor4 grows with T (measured
    1.70 -> 2.77; the full experiment of docs/reproductions/thune2019.md: it grows over 2^12..2^16) and Doubling's regret grows sub-linearly
    (slope measured 0.72 over 2^11..2^13; the full test asks < 0.65 at 2^12..2^16) while staying below
    DEW-Thm1. Excludes a DEW-Thm1 that does not cut its rate to 1/(4e d_max) (it is then the
    untruncated DEW, 155 at 2^13, and the ratio falls below 1). It does not separate a Skipper that
    never skips or a Doubling that never skips (Pareto(1.5)'s delays are long but finite): those
    are pinned by tests/reference/test_adversarial_ref.py and, for Doubling, by the contaminated
    slice above."""
    res = X.run("thune2019-heavy-tail", runs=8, overrides={"log2_T": [11, 13], "models": ["pareto"]})
    m = lambda lab: res.mean_se(lab)[0]
    r = m("pareto: DEW-Thm1") / m("pareto: Skipper-Cor4")
    slope_dbl = np.log(m("pareto: Doubling")[1] / m("pareto: Doubling")[0]) / np.log(4)
    assert r[1] > 1.3 * r[0], r
    assert slope_dbl < 0.8, slope_dbl
    assert m("pareto: Doubling")[1] < 0.6 * m("pareto: DEW-Thm1")[1]


@pytest.mark.slow  # CI time; every-run bound compliance is also in test_adversarial
def test_bounds_reduced():
    """E3 at T = 2^13, d in {0, 16, 64}: every run under its bound where the bound is below uniform
    play's regret Delta T / 2 = 1024 (DEW-Thm1 at d = 0, 16: 248, 652; Cor4 at d = 0: 248; the others,
    Doubling's Thm 6 >= 3835 included, are above it and would pass for uniform play: they are
    covered by test_adversarial.py::test_bound_compliance_every_run on a table where they bind, or
    by its reference comparison), and DEW's regret / sqrt((eKT/2 + D) ln K) flat in d."""
    res = X.run("thune2019-bounds", overrides={"log2_T": 13, "delays": [0, 16, 64]})
    T = res.horizon
    checked = []
    for lab in res.finals:
        for i in range(len(res.x)):
            if res.bounds[lab][i] < _uniform_regret(res, T):
                assert np.all(res.finals[lab][i] <= res.bounds[lab][i]), (lab, res.x[i])
                checked.append((lab, res.x[i]))
    assert len(checked) >= 3, checked
    ratio = np.array(res.extra["DEW / sqrt((eKT/2+D) lnK)"])
    assert np.all((ratio > 0.8) & (ratio < 1.2))  # flat in d while learning (reference: 1.03, 1.02, 1.00)


@pytest.mark.slow
def test_example8_full():
    """E1 acceptance: slope(Doubling) < 0.6 and slope(Cor4) > 0.7 at the largest T; numbers as E1."""
    res = X.run("thune2019-example8")
    _check_e1(res)
    assert res.slope("Doubling (AT)") < 0.6
    assert res.slope("Skipper-Cor4 (OT)") > 0.7


@pytest.mark.slow
def test_heavy_tail_full():
    """E2 acceptance: Pareto 1.5: DEW-Thm1 / Skipper-Cor4 grows with T; contaminated: Skipper-Cor4 /
    Doubling grows with T; slope(Doubling) < 0.65 in both; every run under its own bound where < T."""
    res = X.run("thune2019-heavy-tail")
    mp = lambda lab: res.mean_se(lab)[0]
    r1 = mp("pareto: DEW-Thm1") / mp("pareto: Skipper-Cor4")
    r2 = mp("contaminated: Skipper-Cor4") / mp("contaminated: Doubling")
    assert r1[-1] > r1[0] and r2[-1] > r2[0]
    assert res.slope("pareto: Doubling") < 0.65 and res.slope("contaminated: Doubling") < 0.65
    for lab, over in res.extra.items():
        if lab.endswith("runs over their own bound"):
            assert sum(over) == 0, lab


@pytest.mark.slow
def test_bounds_full():
    """E3 at T = 2^15: every run under its bound where the bound is below uniform play's regret."""
    res = X.run("thune2019-bounds")
    for lab in res.finals:
        for i in range(len(res.x)):
            if res.bounds[lab][i] < _uniform_regret(res, res.horizon):
                assert np.all(res.finals[lab][i] <= res.bounds[lab][i])
