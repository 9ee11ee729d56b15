"""Checks of the *kinds* that the second random sample of mutants showed missing, part (c)
(docs/contributing.md, "Mutation testing"; earlier parts are tests/test_kinds*.py): each test is a
kind of check applied to every case it covers, not a test aimed at one mutated line.

* every bound at the bound: ``num_warmup`` of ``sbc`` and of both fits at 0 / 1 (validation only:
  nothing is sampled), the prior scale's floor of ``policy_prior`` (both paths), SNIPS's weight sum
  just above 0 and at 0, a one-row log for every estimator, a conversion of an id past every
  logged decision of a serving database;
* a stated default pinned: ``SBCResult.pvalues()`` against ``pvalues(10)`` and ``summary()``;
* error messages read whole: ``rank_uniformity``'s bins, a ragged CSV log (its row and line);
* every field of a fingerprint: each site's starting point and jitter rule of the hierarchical fit;
* a shape bound: every call of the per-draw function gets exactly ``[chunk, ...]``;
* the whole distribution / independent computations: the synthetic contextual log's conversion
  frequency against ``sigmoid(alpha + X beta)``, ``old_enough`` against ``min_a G_a(c)`` with
  per-arm geometric laws written out, each family's unconstrained prior locs mapped back, each
  family's starting law against the seen delays' mean;
* every documented form run once: a per-arm log-normal prior entry next to a scalar one;
* a log with zero delays compressed on a grid with warnings as errors.
"""
import importlib
import math
import json
import sqlite3
import sys
import warnings

import numpy as np
import pytest

from jaxbandits import bayes, ope
from jaxbandits.bayes import calibration as CAL
from jaxbandits.bayes import contextual as CTX
from jaxbandits.core import delays as D
from jaxbandits.delaymodels import families as FAM
from jaxbandits.delaymodels import warm as WARM
from jaxbandits.delaymodels.logs import load_log
from jaxbandits.delaymodels.model import compress_rows

FIT = importlib.import_module("jaxbandits.bayes.fit")  # the module (the package's ``fit`` is the function)


class _Stop(Exception):
    """Raised by a stand-in once validation has passed: nothing compiles or samples."""


# ------------------------------------------------------------------------- every bound at the bound
def _tiny_log():
    return bayes.synthetic_log([0.3, 0.5], 60, 50.0, 80.0, mean=5.0, seed=1)


def test_every_num_warmup_bound_of_sbc_and_both_fits(monkeypatch):
    """``num_warmup``: ``sbc`` states ``>= 1`` (0 refused, 1 accepted), both fits state ``>= 0``
    (-1 refused, 0 accepted). Accepted means the validation passed: a stand-in for what runs next
    stops the call before anything compiles."""
    import numpyro.infer

    # sbc: the first thing after its checks is the dummy log of simulate_rows
    def stop(*a, **k):
        raise _Stop

    monkeypatch.setattr(CAL, "simulate_rows", stop)
    with pytest.raises(ValueError, match=r"^num_warmup must be >= 1, got 0$"):
        CAL.sbc("exponential", n_reps=2, num_warmup=0)
    with pytest.raises(_Stop):
        CAL.sbc("exponential", n_reps=2, num_warmup=1)

    seen = []

    class StopMCMC:
        def __init__(self, kernel, *, num_warmup, **kw):
            seen.append(num_warmup)
            raise _Stop

    monkeypatch.setattr(numpyro.infer, "MCMC", StopMCMC)
    log = _tiny_log()
    X = np.zeros((len(log), 1))
    for run in (lambda w: bayes.fit(log, num_warmup=w), lambda w: CTX.fit_contextual(log, X, num_warmup=w)):
        with pytest.raises(ValueError, match=r"^num_warmup must be an integer >= 0, got -1$"):
            run(-1)
        for w in (0, 1):
            with pytest.raises(_Stop):
                run(w)
    assert seen == [0, 1, 0, 1]


def _hier_idata(model, q_mu, q_sd, hierarchical=True):
    """An InferenceData as ``fit`` writes it (the sites ``policy_prior`` reads), 1 chain."""
    import arviz as az

    fam = FAM.family(model)
    S = len(q_mu)
    if hierarchical:
        post = {"p_mu": np.linspace(-1.0, -0.5, S)[None], "p_sd": np.full((1, S), 0.3)}
        for q in fam.params:
            post[f"{q}_mu"] = np.asarray(q_mu, np.float64)[None]
            post[f"{q}_sd"] = np.full((1, S), q_sd)
        post["p"] = np.tile(np.linspace(0.2, 0.4, S)[:, None], (1, 2))[None]
        for q in fam.params:
            post[q] = np.exp(np.tile(np.asarray(q_mu)[:, None], (1, 2)))[None]
        dims = {"p": ["arm"], **{q: ["arm"] for q in fam.params}}
    else:
        post = {"p": np.tile(np.linspace(0.2, 0.4, S)[:, None], (1, 2))[None]}
        for q in fam.params:
            post[q] = np.exp(np.asarray(q_mu, np.float64))[None]
        dims = {"p": ["arm"]}
    idata = az.from_dict(posterior=post, dims=dims)
    idata.posterior.attrs.update(model=model, hierarchical=int(hierarchical))
    return idata


@pytest.mark.parametrize("model", ["exponential", "lognormal"])
def test_every_prior_scale_floor_of_policy_prior_at_and_off_the_floor(model):
    """Every bound at the bound, ``policy_prior``'s floor of each delay parameter's prior scale,
    ``max(spread of log q, 1e-3) / sqrt(strength)``: reached (every draw of log q equal: spread 0;
    spread 4e-4) and not reached (spread 0.3, the scale is the spread), on both paths (new arms of
    a hierarchical fit, whose population draws are ``q_mu`` exactly when ``q_sd = 0``; the fitted
    arms of a flat fit)."""
    fam = FAM.family(model)
    s = 0.25
    base = math.log(12.0)
    for spread in (0.0, 4e-4, 0.3):
        q_mu = base + spread * np.array([-1.0, 1.0, -1.0, 1.0])  # std exactly ``spread``
        want = max(spread, 1e-3) / math.sqrt(s)
        ws = WARM.policy_prior(_hier_idata(model, q_mu, 0.0), strength=s, new_arms=3)
        flat = WARM.policy_prior(_hier_idata(model, q_mu, 0.0, hierarchical=False), strength=s)
        for q in fam.params:
            assert ws.priors[f"{q}_scale"] == pytest.approx(want, rel=1e-9), (q, spread)
            assert ws.priors[f"{q}_loc"] == pytest.approx(12.0, rel=1e-9)
            assert float(flat.priors[f"{q}_scale"]) == pytest.approx(want, rel=1e-9), (q, spread)


def _decision_log(arms, props, conv, end=10.0, n_arms=2):
    return ope.decision_log(arms, np.arange(len(arms), dtype=np.float64), props, conv, end, n_arms=n_arms)


def test_every_snips_weight_sum_at_its_bound():
    """SNIPS divides by the weights' sum ``sum pi(a_i) / p_i``: a sum just above 0 (per-decision
    targets giving the logged arms 1e-6) is accepted and gives ``sum w y / sum w`` exactly; a sum of
    1 (one decision, target = logging) too; a sum of 0 is refused with its message."""
    log = _decision_log([0, 1], [1.0, 1.0], [1.0, np.nan])
    eps = 1e-6
    pi = np.array([[eps, 1 - eps], [1 - eps, eps]])
    est = ope.evaluate(log, pi, estimators=(ope.SNIPS,)).get("snips", False)
    w, y = np.array([eps, eps]), np.array([1.0, 0.0])
    assert est.value == pytest.approx(float(w @ y / w.sum()), rel=1e-12)
    one = _decision_log([0], [1.0], [1.0], n_arms=1)
    assert ope.evaluate(one, [1.0], estimators=(ope.SNIPS,)).get("snips", False).value == 1.0
    with pytest.raises(ValueError, match=r"^snips: the target gives probability 0 to every logged decision "
                                         r"\(sum of weights 0\)$"):
        ope.evaluate(log, np.array([[0.0, 1.0], [1.0, 0.0]]), estimators=(ope.SNIPS,))


def test_every_estimator_on_a_one_row_log_has_no_nan():
    """An uneven size at its bound: a log of ONE row (and of two). IPS and DR have no sample
    variance from one row: their se is inf and the interval (-inf, inf), never NaN, and no NumPy
    warning is raised; SNIPS and DM are finite. With two rows IPS's and DR's se are the
    ``std(ddof=1) / sqrt(2)`` of their terms, written out."""
    one = _decision_log([0], [0.5], [3.0], n_arms=1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        rep = ope.evaluate(one, [1.0])
    for e in rep.estimates:
        assert not any(math.isnan(x) for x in (e.value, e.lo, e.hi, e.se)), e
        if e.estimator in ("ips", "dr"):
            assert e.se == math.inf and (e.lo, e.hi) == (-math.inf, math.inf), e
    assert rep.get("ips", False).value == 2.0
    two = _decision_log([0, 0], [0.5, 0.5], [3.0, np.nan], n_arms=1)
    rep2 = ope.evaluate(two, [1.0])
    z = np.array([2.0, 0.0])  # w y, w = 2
    assert rep2.get("ips", False).se == pytest.approx(float(z.std(ddof=1) / math.sqrt(2)), rel=1e-12)
    r = 0.5  # DM's rate of arm 0; DR's terms r + w (y - r)
    zd = r + 2.0 * (np.array([1.0, 0.0]) - r)
    assert rep2.get("dr", False).se == pytest.approx(float(zd.std(ddof=1) / math.sqrt(2)), rel=1e-12)


def _serve_db(path, decisions, conversions):
    """A serving database in the on-disk format ``read_serve_db`` reads (meta + events)."""
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT)")
    db.execute("CREATE TABLE events (seq INTEGER PRIMARY KEY, kind TEXT, body TEXT)")
    db.executemany("INSERT INTO meta VALUES (?, ?)", [("format", "jaxbandits.serve"), ("format_version", "2"),
                                                      ("config", json.dumps({"arms": ["a", "b"]}))])
    seq = 0
    for ids, arms in decisions:
        seq += 1
        db.execute("INSERT INTO events VALUES (?, ?, ?)",
                   (seq, "decide", json.dumps({"ids": ids, "arms": arms, "propensity": [0.5] * len(ids)})))
    for rnd, ids in conversions:
        seq += 1
        db.execute("INSERT INTO events VALUES (?, ?, ?)",
                   (seq, "feedback", json.dumps({"round": rnd, "ids": ids, "codes": ["accepted"] * len(ids)})))
    db.commit()
    db.close()


def test_every_conversion_id_bound_of_a_serving_database(tmp_path):
    """Conversions of ids at and past both ends of the logged decisions: the first id and the last
    id are attributed (their first round), an id before the first, between two, and past the last
    logged decision (e.g. one logged without propensities, or by another process) are dropped,
    never an IndexError."""
    p = str(tmp_path / "serve.db")
    _serve_db(p, [([3, 5], ["a", "b"]), ([7, 9], ["b", "a"])], [(12, [3, 9, 99]), (14, [1, 6, 9, 100])])
    log = ope.read_serve_db(p)
    assert log.time.tolist() == [3.0, 5.0, 7.0, 9.0]
    assert np.array_equal(log.conversion_time, [12.0, np.nan, np.nan, 12.0], equal_nan=True)
    assert log.arm.tolist() == [0, 1, 1, 0]


# ------------------------------------------------------------------------- a stated default pinned
def test_sbc_result_pvalues_default_is_the_stated_ten_bins():
    """``SBCResult.pvalues()`` without ``n_bins`` bins in 10 (its signature's default, the one
    ``passes`` and ``summary`` use): equal to ``pvalues(10)``, to ``summary()["pvalues"]`` and to
    an independent chi-square of the ranks in 10 equal bins of ``{0..n_draws}``; not to 11 bins."""
    from scipy import stats

    rng = np.random.default_rng(5)
    n_draws = 109  # 110 = 10 x 11: both bin counts divide it
    ranks = {"p": rng.integers(0, n_draws + 1, 60), "delay_mean": (np.arange(60) * 7) % (n_draws + 1)}
    res = CAL.SBCResult("exponential", n_draws, ranks, {}, np.zeros(60), np.ones(60), {})
    want = {k: float(stats.chisquare(np.bincount(v // 11, minlength=10)).pvalue) for k, v in ranks.items()}
    assert res.pvalues() == res.pvalues(10) == res.summary()["pvalues"]
    assert res.pvalues() == pytest.approx(want, rel=1e-12)
    assert res.pvalues() != res.pvalues(11)


# ------------------------------------------------------------------------- error messages read whole
@pytest.mark.parametrize("n_draws,n_bins", [(99, 7), (98, 10), (0, 2)])
def test_rank_uniformity_bins_message_read_whole(n_draws, n_bins):
    with pytest.raises(ValueError) as e:
        CAL.rank_uniformity(np.zeros(5, np.int64), n_draws, n_bins)
    assert str(e.value) == f"n_bins={n_bins} must divide n_draws + 1 = {n_draws + 1}"


@pytest.mark.parametrize("bad", [0, 2])
def test_ragged_csv_log_message_read_whole(tmp_path, bad, monkeypatch):
    """A CSV log with a short row read by the csv module (the reader without pandas, which is
    optional): the message names the row (1 = the first data row) and the line of the file (the
    header is line 1), read whole; the named line is the short one."""
    monkeypatch.setitem(sys.modules, "pandas", None)  # ``import pandas`` raises ImportError
    rows = ["0,1.0,3.0", "1,2.0,", "0,4.0,6.0"]
    rows[bad] = "0,1.0"
    p = tmp_path / "log.csv"
    p.write_text("arm,play_time,conversion_time\n" + "\n".join(rows) + "\n")
    with pytest.raises(ValueError) as e:
        load_log(str(p), cutoff=10.0)
    assert str(e.value) == f"{p}: row {bad + 1} (line {bad + 2}) has 2 fields, the header has 3"
    assert p.read_text().splitlines()[bad + 2 - 1] == "0,1.0"


# ------------------------------------------------------------------------- every field of a fingerprint
def test_every_site_of_the_hierarchical_fit_starts_by_its_own_rule(monkeypatch):
    """Every site of the hierarchical model, for every family it takes: the sites NUTS starts
    ``init_near`` at are exactly the model's latent sites, and the ones it jitters additively
    (``real``) are exactly those with unbounded support (an identity bijection); applied to each
    site, the jitter moves every coordinate by at most the radius in the unconstrained space and
    moves it (no coordinate stuck: ``0 x exp(u)`` would stay 0)."""
    import jax
    import numpyro
    from numpyro.distributions.transforms import IdentityTransform, IndependentTransform, biject_to

    def _identity(t):
        while isinstance(t, IndependentTransform):
            t = t.base_transform
        return isinstance(t, IdentityTransform)

    from jaxbandits.delaymodels.hierarchical import hierarchical_model

    got = {}

    def capture(values, radius=0.5, real=()):
        got["v"], got["real"] = values, tuple(real)
        raise _Stop

    init_near = FIT.init_near
    monkeypatch.setattr(FIT, "init_near", capture)
    log = _tiny_log()
    tried = 0
    for name in ("exponential", "weibull", "lognormal"):
        fam = FAM.family(name)
        with pytest.raises(_Stop):
            bayes.fit(log, name, hierarchical=True, num_warmup=0, num_samples=1, num_chains=1)
        values, real = got.pop("v"), got.pop("real")
        wr = bayes.compress_log(log, None, False, True)[0]
        model = numpyro.handlers.substitute(hierarchical_model, data=values)  # the sites at their starts: no draws
        tr = numpyro.handlers.trace(numpyro.handlers.seed(model, 0)).get_trace(
            wr, n_arms=log.n_arms, fam=fam, discrete=False, priors=None, prior_mean=5.0)
        latent = {n: s for n, s in tr.items() if s["type"] == "sample" and not s["is_observed"]}
        assert set(values) == set(latent), name
        unbounded = {n for n, s in latent.items() if _identity(biject_to(s["fn"].support))}
        assert set(real) == unbounded, name
        strategy = init_near(values, real=real)
        for n, s in latent.items():
            t = biject_to(s["fn"].support)
            for seed in (1, 2):
                site = {"type": "sample", "is_observed": False, "name": n,
                        "kwargs": {"rng_key": jax.random.PRNGKey(seed)}, "fn": s["fn"]}
                u = np.asarray(t.inv(strategy(site))) - np.asarray(t.inv(np.asarray(values[n])))
                assert np.all(np.abs(u) <= 0.5 + 1e-5), (name, n, u)
                assert np.all(np.abs(u) > 0), (name, n, u)
        tried += 1
    assert tried == 3


# ------------------------------------------------------------------------- a shape bound
@pytest.mark.parametrize("S,chunk", [(6, 4), (7, 4), (4, 4), (1, 4), (9, 4)])
def test_every_call_of_the_per_draw_function_gets_exactly_a_chunk(S, chunk):
    """``fit``'s per-draw extras run ``fn`` on equal chunks, the last padded with its last draw: every
    call gets exactly ``[chunk, ...]`` (one compilation, memory O(chunk x rows)), and the result is
    ``fn`` of every draw in order, uneven sizes included (last chunks of 1, 2, 3 and 4 draws)."""
    shapes = []

    def fn(part):
        shapes.append({k: v.shape for k, v in part.items()})
        return {"s": part["a"].sum(-1) + part["b"]}

    a = np.arange(S * 3, dtype=np.float64).reshape(S, 3)
    b = np.arange(S, dtype=np.float64) * 10
    out = FIT.per_draw(fn, {"a": a, "b": b}, chunk=chunk)
    assert shapes == [{"a": (chunk, 3), "b": (chunk,)}] * math.ceil(S / chunk)
    assert np.array_equal(out["s"], a.sum(-1) + b)


# ------------------------------------------------------------------------- the whole distribution
def test_synthetic_contextual_log_converts_at_sigmoid_of_alpha_plus_x_beta():
    """Every play of ``synthetic_contextual_log`` converts with probability
    ``sigmoid(alpha[arm] + x . beta)``: with every conversion seen (a far cutoff), the conversions of
    each band of that probability (below 1/2, above 1/2, and in all) are within 4 binomial se of its
    sum, and those of alpha = beta = 0 (p = 1/2 exactly) likewise."""
    alpha, beta = np.array([0.4, -0.6]), np.array([0.9, -0.3])
    log, X, seg = CTX.synthetic_contextual_log(3000, alpha, beta, [1.0], 10.0, 1e4, seed=3)
    arm, seen, _, _ = log.arrays(None, False)
    p = 1 / (1 + np.exp(-(alpha[arm] + X @ beta)))
    for band in (p < 0.5, p >= 0.5, np.ones_like(p, bool)):
        n, e, sd = seen[band].sum(), p[band].sum(), math.sqrt(float(np.sum(p[band] * (1 - p[band]))))
        assert abs(n - e) < 4 * sd, (n, e, sd)
    log0, _, _ = CTX.synthetic_contextual_log(2000, [0.0], [0.0], [1.0], 10.0, 1e4, seed=4)
    seen0 = log0.arrays(None, False)[1]
    assert abs(seen0.sum() - 1000) < 4 * math.sqrt(500)


# ------------------------------------------------------------------------- independent computations
def test_old_enough_is_min_over_arms_of_each_arms_seen_probability():
    """``old_enough`` keeps a row when ``min_a G_a(c) >= min_seen`` (by age alone): with one
    geometric law per arm (``G(c) = 1 - rho^(c + 1)``, ``rho = mu / (1 + mu)``, written out), the
    kept rows are exactly those, for both orders of the laws, two levels and a window."""
    ages = np.arange(0, 160, dtype=np.float64)
    N = ages.size
    end = 200.0
    log = ope.decision_log(np.arange(N) % 2, end - ages, np.full(N, 0.5), np.full(N, np.nan), end, n_arms=2)
    G = lambda mu, c: 1 - (mu / (1 + mu)) ** (np.floor(c) + 1)
    for means in ((60.0, 2.0), (2.0, 60.0)):
        laws = [D.geometric(mean=m) for m in means]
        for min_seen in (0.8, 0.3):
            want = np.minimum(G(means[0], ages), G(means[1], ages)) >= min_seen
            assert np.array_equal(ope.old_enough(log, laws, None, min_seen), want), (means, min_seen)
        W = 50
        Gw = lambda mu, c: np.minimum(G(mu, np.minimum(c, W)) / G(mu, W), 1.0)
        want = np.minimum(Gw(means[0], ages), Gw(means[1], ages)) >= 0.8
        assert np.array_equal(ope.old_enough(log, laws, W, 0.8), want), means


def test_every_family_s_unconstrained_locs_map_back_to_its_prior_median():
    """Every registered family's ``unconstrained_locs`` (where SBC and the policy start): each loc,
    mapped back by the site's bijection, is its prior's median, computed independently: ``loc`` of
    a log-normal entry (``exp(log loc)``), equal weights for the symmetric Dirichlet."""
    import numpyro
    import numpyro.distributions as dist
    from numpyro.distributions.transforms import biject_to

    pm = 7.0
    for name, fam in FAM.FAMILIES.items():
        pri = fam.default_priors(pm)
        start = numpyro.handlers.substitute(fam.sample, data=fam.init_values(pm, ()))  # no draws
        tr = numpyro.handlers.trace(numpyro.handlers.seed(start, 0)).get_trace(pri)
        locs = fam.unconstrained_locs(pm)
        assert set(locs) == set(fam.params), name
        for q, loc in locs.items():
            d = tr[q]["fn"]
            t = biject_to(d.support)
            z = np.full(np.shape(t.inv(tr[q]["value"])), loc, np.float32)
            x = np.asarray(t(z), np.float64)
            if isinstance(d, dist.Dirichlet):
                B = d.concentration.shape[-1]
                assert np.allclose(np.asarray(d.concentration), d.concentration[0])
                want = np.full(B, 1 / B)
            else:
                assert isinstance(d, dist.LogNormal), (name, q)
                want = pri[f"{q}_loc"]
            np.testing.assert_allclose(x, want, rtol=1e-5, err_msg=f"{name}.{q}")


def test_every_family_starts_at_a_law_near_the_seen_delays_mean():
    """Every family's starting values from a log (``start_values``, where NUTS starts): the seen
    delays' mean computed independently from the log; a ``delay_mean`` parameter is that mean, and
    the starting law's mean is within a factor 1.5 of it (families whose start depends on it)."""
    log = bayes.synthetic_log([0.3, 0.5], 400, 100.0, 400.0, mean=20.0, seed=2)
    arm, seen, delay, _ = log.arrays(None, False)
    m = float(np.mean(delay[seen]))
    wr = bayes.compress_log(log, None, False, False, None)[0]
    for name in ("exponential", "geometric", "weibull", "lognormal"):
        fam = FAM.family(name)
        sv = FIT.start_values(fam, wr, log.plays_per_arm, log.n_arms, False, 5.0)
        if "delay_mean" in sv:
            assert float(sv["delay_mean"]) == pytest.approx(m, rel=1e-5), name
        th = {k: np.asarray(v, np.float64) for k, v in sv.items() if k != "p"}
        mean = float(fam.mean(th))
        assert m / 1.5 < mean < 1.5 * m, (name, mean, m)


# ------------------------------------------------------------------------- every documented form run once
def test_every_form_of_a_log_normal_prior_entry_per_arm_or_scalar():
    """A log-normal prior's ``loc`` and ``scale`` each a scalar or one per arm (docs/bayes.md; a warm
    start gives both per arm, a user may give one): every combination, for every family with
    log-normal entries, gives a per-arm law whose median and scale are those entries."""
    import numpyro
    import numpyro.distributions as dist

    K = 2
    for name in ("exponential", "weibull", "lognormal"):
        fam = FAM.family(name)
        base = fam.default_priors(10.0)
        for q in fam.params:
            for loc in (10.0, np.array([10.0, 20.0])):
                for scale in (1.5, np.array([0.5, 1.5])):
                    pri = dict(base, **{f"{q}_loc": loc, f"{q}_scale": scale})
                    start = numpyro.handlers.substitute(fam.sample, data=fam.init_values(10.0, (K,)))  # no draws
                    tr = numpyro.handlers.trace(numpyro.handlers.seed(start, 0)).get_trace(pri, n_laws=K)
                    d = tr[q]["fn"]
                    assert d.shape() == (K,), (name, q)
                    while not isinstance(d, dist.LogNormal):
                        d = d.base_dist
                    np.testing.assert_allclose(np.broadcast_to(np.exp(np.asarray(d.loc)), (K,)),
                                               np.broadcast_to(loc, (K,)), rtol=1e-5)
                    np.testing.assert_allclose(np.broadcast_to(np.asarray(d.scale), (K,)),
                                               np.broadcast_to(scale, (K,)), rtol=1e-6)


# ------------------------------------------------------------------------- zero delays on a grid
def test_a_log_with_zero_delays_and_ages_compresses_on_a_grid_without_warnings():
    """Delays and ages of 0 (integer times, a conversion in its own round, a play at the cutoff)
    compressed with a resolution, warnings as errors: zeros stay zero and every positive value moves
    onto the grid ``exp(r j)`` by a factor within ``exp(+-r/2)``."""
    r = 0.1
    arm = np.array([0, 1, 0, 1, 0, 1])
    seen = np.array([True, True, True, False, False, False])
    delay = np.array([0.0, 3.0, 0.0, 0.0, 0.0, 0.0])
    age = np.array([9.0, 9.0, 9.0, 0.0, 5.0, 0.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        wr, _ = compress_rows(arm, seen, delay, age, 2, resolution=r)
    dl = np.asarray(wr.delay, np.float64)[np.asarray(wr.delay_count) > 0]
    ag = np.asarray(wr.age, np.float64)[np.asarray(wr.age_count) > 0]
    assert 0.0 in dl and 0.0 in ag
    for x, orig in ((dl[dl > 0], 3.0), (ag[ag > 0], 5.0)):
        assert x.size == 1
        j = math.log(float(x[0])) / r
        assert abs(j - round(j)) < 1e-3 and math.exp(-r / 2) - 1e-6 <= x[0] / orig <= math.exp(r / 2) + 1e-6
