"""Off-policy evaluation (jaxbandits.ope, docs/ope.md): textbook formulas on a hand-computed log,
delay-aware unbiasedness and interval coverage on simulated logs with a known value, the
delay-ignorant bias, replay, logging (propensities, exploration floor, the serving database) and
the errors."""
import math

import numpy as np
import pytest

from jaxbandits import channels as C
from jaxbandits import delays as D
from jaxbandits import ope

# ----------------------------------------------------------------------------- a hand-computed log
# 6 decisions, 2 arms; all old enough (end = 100, no delay law): the textbook estimators.
ARM = [0, 1, 0, 1, 1, 0]
PROP = [0.5, 0.5, 0.25, 0.75, 0.75, 0.25]
CONV = [1.0, np.nan, np.nan, 5.0, 6.0, np.nan]  # decisions 0, 3, 4 convert
TIME = [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
TARGET = [0.2, 0.8]


def _hand_log(end=100.0):
    return ope.decision_log(ARM, TIME, PROP, CONV, end, n_arms=2)


def test_textbook_formulas_on_a_hand_computed_log():
    rep = ope.evaluate(_hand_log(), TARGET)
    # w = pi(a)/mu: 0.4, 1.6, 0.8, 16/15, 16/15, 0.8; y = 1, 0, 0, 1, 1, 0
    w = [0.4, 1.6, 0.8, 16 / 15, 16 / 15, 0.8]
    ips = (0.4 + 16 / 15 + 16 / 15) / 6
    snips = (0.4 + 32 / 15) / sum(w)
    r0, r1 = 1 / 3, 2 / 3  # the per-arm means
    dm = 0.2 * r0 + 0.8 * r1
    q = dm
    dr = q + (0.4 * (1 - r0) + 1.6 * (0 - r1) + 0.8 * (0 - r0) + 16 / 15 * (1 - r1) * 2 + 0.8 * (0 - r0)) / 6
    for name, want in (("ips", ips), ("snips", snips), ("dm", dm), ("dr", dr)):
        e = rep.get(name, False)
        assert e.value == pytest.approx(want, rel=1e-12), name
        assert e.n == 6
    e = rep.get("ips", False)
    z = np.array([0.4, 0, 0, 16 / 15, 16 / 15, 0])
    assert e.se == pytest.approx(z.std(ddof=1) / math.sqrt(6), rel=1e-12)
    assert e.ess == pytest.approx(sum(w) ** 2 / sum(x * x for x in w), rel=1e-12)
    assert (e.lo, e.hi) == pytest.approx((ips - 1.959963984540054 * e.se, ips + 1.959963984540054 * e.se))
    # every decision matured (G = 1): the delay-aware forms are the textbook ones
    rep2 = ope.evaluate(_hand_log(), TARGET, delay=D.geometric(mean=0.5), window=20)
    for name in ope.ESTIMATORS:
        assert rep2.get(name, True).value == pytest.approx(rep2.get(name, False).value, rel=1e-5)


def test_delay_aware_weight_is_one_over_seen_probability():
    # one arm, a geometric law: a decision of age c counts 1 / (F(c) / F(m))
    law = D.geometric(0.8)  # P(D <= n) = 1 - 0.8^(n+1)
    F = lambda n: 1 - 0.8 ** (n + 1)
    log = ope.decision_log([0, 0, 0], [0.0, 7.0, 9.0], [1.0, 1.0, 1.0], [3.0, 8.0, np.nan], 10.0, n_arms=1)
    m = 5
    G = ope.seen_probability(log, law, window=m)
    assert G == pytest.approx([1.0, F(3) / F(5), F(1) / F(5)], rel=1e-5)
    rep = ope.evaluate(log, [1.0], delay=law, window=m, estimators=(ope.IPS,))
    assert rep.get("ips", True).value == pytest.approx((1 + F(5) / F(3)) / 3, rel=1e-5)
    assert rep.get("ips", False).value == pytest.approx(2 / 3)


def _study(law, reps, n=1500, span=300, seed0=0):
    rates, target, m = [0.3, 0.5], [0.2, 0.8], 100
    truth = ope.true_value(target, rates, law, m)
    vals, cov = {}, {}
    for r in range(reps):
        log = ope.simulate_log(seed0 + r, n, rates, law, [0.5, 0.5], span=span)
        rep = ope.evaluate(log, target, window=m, delay=law)
        for e in rep.estimates:
            vals.setdefault(e.name, []).append(e.value)
            cov.setdefault(e.name, []).append(e.lo <= truth <= e.hi)
    return truth, {k: np.array(v) for k, v in vals.items()}, {k: float(np.mean(v)) for k, v in cov.items()}


LAWS = {"geometric": D.geometric(mean=20.0), "log-normal": D.log_normal(3.0, 1.0), "pareto": D.pareto(1.5, 5.0)}


@pytest.mark.parametrize("law", list(LAWS.values()), ids=list(LAWS))
def test_delay_aware_unbiased_and_covers_ignorant_biased(law):
    """Reduced study (60 logs per law; docs/ope.md has the 500-log table): the delay-aware mean is
    within 4 Monte Carlo standard errors of the truth, its 95% intervals cover at least 85% of the
    time (binomial: 60 draws of p = 0.95 fall below 0.85 with probability < 0.2%); the
    delay-ignorant mean lies more than 4 standard errors below the truth."""
    truth, vals, cov = _study(law, 60)
    for est in ope.ESTIMATORS:
        v = vals[f"{est.name} (delay-aware)"]
        se = v.std(ddof=1) / math.sqrt(v.size)
        assert abs(v.mean() - truth) < 4 * se, (est, v.mean(), truth, se)
        assert cov[f"{est.name} (delay-aware)"] >= 0.85, (est, cov)
        vi = vals[f"{est.name} (delay-ignorant)"]
        assert vi.mean() + 4 * vi.std(ddof=1) / math.sqrt(vi.size) < truth, (est, vi.mean(), truth)


@pytest.mark.slow
@pytest.mark.parametrize("law", list(LAWS.values()), ids=list(LAWS))
def test_delay_aware_unbiased_and_nominal_coverage_500(law):
    """500 logs per law: delay-aware bias within 4 Monte Carlo standard errors and 95% coverage
    in [0.92, 0.975] (0.95 -3.1/+2.6 binomial standard deviations at 500 draws, sd 0.0097; the normal
    intervals under-cover slightly with skewed weights at 1500 decisions: the experiment ope-bias-coverage
    measured 0.926 to 0.948)."""
    truth, vals, cov = _study(law, 500, seed0=10_000)
    for est in ope.ESTIMATORS:
        v = vals[f"{est.name} (delay-aware)"]
        assert abs(v.mean() - truth) < 4 * v.std(ddof=1) / math.sqrt(v.size), est
        assert 0.92 <= cov[f"{est.name} (delay-aware)"] <= 0.975, (est, cov)
        vi = vals[f"{est.name} (delay-ignorant)"]
        assert vi.mean() + 4 * vi.std(ddof=1) / math.sqrt(vi.size) < truth, est  # biased low
        assert cov[f"{est} (delay-ignorant)"] < cov[f"{est.name} (delay-aware)"] - 0.03, (est, cov)


def test_posterior_draws_carry_the_delay_models_uncertainty():
    log = ope.simulate_log(3, 2000, [0.3, 0.5], D.geometric(mean=20.0), [0.5, 0.5], span=300)
    draws = [D.geometric(mean=m) for m in (14.0, 17.0, 20.0, 23.0, 26.0)]
    rep = ope.evaluate(log, [0.2, 0.8], window=100, delay_draws=draws, estimators=(ope.IPS,))
    one = [ope.evaluate(log, [0.2, 0.8], window=100, delay=d, estimators=(ope.IPS,), ignorant=False).estimates[0]
           for d in draws]
    e = rep.get("ips", True)
    v = np.array([o.value for o in one])
    assert e.value == pytest.approx(v.mean(), rel=1e-12)
    assert e.se_delay == pytest.approx(v.std(ddof=1), rel=1e-9)
    assert e.se == pytest.approx(math.sqrt(np.mean([o.se ** 2 for o in one]) + v.var(ddof=1)), rel=1e-9)
    assert rep.draws == 5 and e.se_delay > 0.2 * e.se  # the spread of the law's draws widens the interval


# ----------------------------------------------------------------------------- assumptions that fail
def test_target_arm_never_logged_is_named():
    log = ope.decision_log(["a", "a", "b"], [0.0, 1.0, 2.0], [1.0, 1.0, 1.0], [np.nan] * 3, 5.0, arms=["a", "b", "c"])
    with pytest.raises(ValueError, match=r"arm 'c'.*never played"):
        ope.evaluate(log, [0.0, 0.5, 0.5])
    ope.evaluate(log, [0.5, 0.5, 0.0])  # arms the target does not play may be missing


def test_zero_propensity_is_named():
    with pytest.raises(ValueError, match=r"row 1, column 'propensity'.*arm 1.*\(0, 1\], got 0.0"):
        ope.decision_log([0, 1], [0.0, 1.0], [1.0, 0.0], [np.nan, np.nan], 2.0, n_arms=2)
    log = ope.decision_log([0, 1], [0.0, 1.0], [1.0, 1.0], [np.nan] * 2, 2.0, n_arms=2,
                           probs=[[1.0, 0.0], [0.0, 1.0]])
    with pytest.raises(ValueError, match=r"gives arm 1 probability 0.5 at row 0, where the logging policy gave it "
                                         r"probability 0"):
        ope.evaluate(log, np.array([[0.5, 0.5], [0.5, 0.5]]))


def test_csv_log_with_propensity(tmp_path):
    p = tmp_path / "log.csv"
    p.write_text("arm,play_time,conversion_time,cutoff,propensity\n"
                 + "".join(f"{'xy'[a]},{t},{'' if np.isnan(c) else c},100,{q}\n"
                           for a, t, c, q in zip(ARM, TIME, CONV, PROP)))
    log = ope.load(str(p))
    assert log.arm_labels == ("x", "y")
    assert ope.evaluate(log, TARGET).get("ips", False).value == pytest.approx(ope.evaluate(_hand_log(), TARGET)
                                                                             .get("ips", False).value)
    pytest.importorskip("pyarrow")
    import pandas as pd

    pq = tmp_path / "log.parquet"
    pd.read_csv(p).to_parquet(pq)
    assert np.array_equal(ope.load(str(pq)).propensity, log.propensity)
    p.write_text("arm,play_time,conversion_time,cutoff,propensity\nx,0,,10,0.5\ny,1,,10,1.5\n")
    with pytest.raises(ValueError, match=r"log.csv: row 2 \(line 3\), column 'propensity'.*'y'"):
        ope.load(str(p))


# ----------------------------------------------------------------------------- replay
def test_replay_of_a_fixed_target_is_unbiased_and_of_an_adaptive_one_runs():
    from jaxbandits.policies import classic
    from jaxbandits.policies import conversions as PC

    law = D.geometric(mean=5.0)
    rates = [0.3, 0.5]
    log = ope.simulate_log(1, 20_000, rates, law, [0.7, 0.3], span=4000)
    m = 30
    # a fixed law as a library policy (uniform_random): rejection sampling with the logging law
    # (0.7, 0.3) accepts rows with probability 0.3 / propensity, so the accepted rows are a
    # uniform-logging sample and the estimate is unbiased for the uniform law's value
    truth = ope.true_value([0.5, 0.5], rates, law, m)
    (aware, ign), acc = ope.replay(log, classic.uniform_random(), C.attributed(), 2, window=m, delay=law)
    assert abs(aware.value - truth) < 4 * aware.se, (aware, truth)
    assert ign.value < aware.value  # the ignorant replay counts pending conversions as failures
    # accepted: a row of arm a agrees with the target w.p. 1/2 and passes the coin w.p. 0.3/mu_a:
    # 0.7 * 0.5 * 0.3/0.7 + 0.3 * 0.5 * 1 = 0.3 of the rows
    assert abs(acc.sum() - 0.3 * len(log)) < 5 * math.sqrt(len(log) * 0.3 * 0.7)
    # an adaptive target: delayed UCB, whose value approaches the best arm's
    best = ope.true_value([0.0, 1.0], rates, law, m)
    (aware, ign), acc = ope.replay(log, PC.delayed_ucb(law), C.conversions(), 0, window=m, delay=law)
    assert aware.aware and not ign.aware
    assert acc.shape == (len(log),) and 0 < acc.sum() < len(log)
    assert abs(aware.value - best) < 0.03
    (est,), acc = ope.replay(log, classic.ucb1(), C.attributed(), 1, window=m)
    assert not est.aware and est.n == int(acc.sum())


# ----------------------------------------------------------------------------- logging
def test_logged_propensities_exact_mc_and_explore():
    import jax

    from jaxbandits import online
    from jaxbandits.policies import classic
    from jaxbandits.policies import conversions as PC
    from jaxbandits.policies.explore import explore

    # same decisions with or without propensities
    a = online.Learner(classic.thompson(), C.attributed(), 3, key=4)
    b = online.Learner(classic.thompson(), C.attributed(), 3, key=4)
    ids, arms, p = a.decide(8, propensity=32)
    assert b.decide(8) == (ids, arms)
    assert all(0 < x <= 1 for x in p)
    # Exp3 declares its law: exact
    lr = online.Learner(classic.exp3(), C.attributed(), 3, key=0, horizon=100)
    _, _, p = lr.decide(3, propensity=1)
    assert p == pytest.approx([1 / 3] * 3, abs=1e-6)
    # exploration floor over a round robin start (arm t for t < K): the base is deterministic, so
    # the law is exact, 1 - eps + eps/K for its arm (the uniform part is explore's own draw)
    pol = explore(PC.delayed_ucb(D.geometric(mean=5.0)), 0.1)
    lr = online.Learner(pol, C.conversions(window=50), ["a", "b", "c"], key=0)
    _, arms, p = lr.decide(3, propensity=1)
    assert arms == ["a", "b", "c"] and p == pytest.approx([0.9 + 0.1 / 3] * 3)
    _, _, p = lr.decide(20, propensity=1)
    assert set(np.round(p, 5)) <= {round(0.9 + 0.1 / 3, 5), round(0.1 / 3, 5)}
    del jax


def test_serving_database_is_read_and_version_1_is_upgraded(tmp_path):
    import sqlite3

    from jaxbandits.apps import serve

    db = str(tmp_path / "s.db")
    cfg = serve.load_config(None, arms=["x", "y"], policy={"name": "delayed_ucb", "delay": {"law": "geometric",
                                                                                            "mean": 3.0},
                                                           "explore": 0.2},
                            channel={"kind": "conversions", "window": 20})
    sv = serve.Service(cfg, db)
    out = sv.decide(6)
    sv.feedback([{"id": out["ids"][1]}, {"id": out["ids"][4]}])
    sv.advance(10)
    sv.close()
    log = ope.load(db)
    assert len(log) == 6 and log.arm_labels == ("x", "y")
    assert [log.arm_labels[a] for a in log.arm] == out["arms"]
    assert log.propensity[:2] == pytest.approx([0.9, 0.9])  # the round robin start, exactly: 1 - eps + eps/K
    assert log.propensity_samples == 256  # explore over a policy without a declared law: Monte Carlo
    assert (~np.isnan(log.conversion_time)).sum() == 2 and float(log.end[0]) == 10.0
    # a version-1 database (decisions without propensities) is upgraded in place on open; its
    # earlier decisions cannot be evaluated and the error says why
    con = sqlite3.connect(db)
    con.execute("UPDATE meta SET value='1' WHERE key='format_version'")
    con.execute("UPDATE events SET body = json_remove(body, '$.propensity') WHERE kind = 'decide'")
    con.commit()
    con.close()
    sv = serve.Service(cfg, db)
    sv.close()
    con = sqlite3.connect(db)
    assert dict(con.execute("SELECT key, value FROM meta").fetchall())["format_version"] == "2"
    con.close()
    with pytest.raises(ValueError, match="format version 2"):
        ope.load(db)


# ----------------------------------------------------------------------------- the command
def test_evaluate_command_writes_table_summary_and_plot(tmp_path, capsys):
    import json

    from jaxbandits.apps.cli import main

    p = tmp_path / "log.csv"
    p.write_text("arm,play_time,conversion_time,cutoff,propensity\n"
                 + "".join(f"{'xy'[a]},{t},{'' if np.isnan(c) else c},100,{q}\n"
                           for a, t, c, q in zip(ARM, TIME, CONV, PROP)))
    out = tmp_path / "res"
    rc = main(["evaluate", str(p), "--policy", "probs:0.2,0.8", "--delay", "geometric:mean=0.5", "--window", "20",
               "--out", str(out)])
    assert rc == 0
    text = capsys.readouterr().out
    assert "| probs:0.2,0.8 | ips (delay-aware) |" in text and "ESS" in text
    s = json.loads((out / "summary.json").read_text())
    ests = {e["name"]: e for e in s["targets"]["probs:0.2,0.8"]["estimates"]}
    assert ests["ips (delay-ignorant)"]["value"] == pytest.approx((0.4 + 32 / 15) / 6)
    assert (out / "evaluate.png").stat().st_size > 0
    # a fitted delay model (a jaxbandits fit folder's posterior.nc): the interval carries its draws
    import arviz as az

    idata = az.from_dict(posterior={"delay_mean": np.array([[0.5, 1.0, 3.0, 6.0]])})
    idata.posterior.attrs["model"] = "exponential"
    fit = tmp_path / "fit"
    fit.mkdir()
    idata.to_netcdf(str(fit / "posterior.nc"))
    p.write_text("arm,play_time,conversion_time,cutoff,propensity\n"
                 + "".join(f"{'xy'[a]},{t},{'' if np.isnan(c) else c},6,{q}\n"
                           for a, t, c, q in zip(ARM, TIME, CONV, PROP)))
    rc = main(["evaluate", str(p), "--policy", "arm:y", "--window", "20", "--delay-model", str(fit), "--draws", "4",
               "--out", str(tmp_path / "r3")])
    assert rc == 0
    s = json.loads((tmp_path / "r3" / "summary.json").read_text())
    aware = {e["estimator"]: e for e in s["targets"]["arm:y"]["estimates"] if e["aware"]}
    assert s["settings"]["draws"] == 4 and aware["ips"]["se_delay"] > 0
    capsys.readouterr()
    rc = main(["evaluate", str(p), "--policy", "arm:z", "--out", str(tmp_path / "r2")])
    assert rc == 2
    assert "unknown arm 'z'; the log's arms are ['x', 'y']" in capsys.readouterr().err


def test_target_as_a_function_of_contexts():
    ctx = np.arange(12, dtype=np.float32).reshape(6, 2)
    log = ope.decision_log(ARM, TIME, PROP, CONV, 100.0, n_arms=2, context=ctx)
    seen = []

    def target(c):
        seen.append(c)
        return np.tile(TARGET, (c.shape[0], 1))

    rep = ope.evaluate(log, target)
    assert seen[0] is log.context
    assert rep.get("dr", False).value == pytest.approx(ope.evaluate(_hand_log(), TARGET).get("dr", False).value)
    with pytest.raises(ValueError, match="the log has none"):
        ope.evaluate(_hand_log(), target)
    with pytest.raises(ValueError, match=r"context must have shape \(6, d\) or \(6, 2, d\)"):
        ope.decision_log(ARM, TIME, PROP, CONV, 100.0, n_arms=2, context=np.zeros((5, 2)))


@pytest.mark.parametrize("call, pattern", [
    (lambda log: ope.evaluate(log, TARGET, window=-1), r"window must be a number >= 0"),
    (lambda log: ope.evaluate(log, TARGET, min_seen=0), r"min_seen must lie in \(0, 1\]"),
    (lambda log: ope.evaluate(log, TARGET, level=1.0), r"level must lie in \(0, 1\)"),
    (lambda log: ope.evaluate(log, TARGET, estimators=("ips",)), r"estimators must be a non-empty sequence of "
     r"jaxbandits.ope estimators \(ope.IPS, ope.SNIPS, ope.DM, ope.DR\), got \['ips'\]"),
    (lambda log: ope.evaluate(log, [0.5, 0.6]), r"target: probabilities must sum to 1"),
    (lambda log: ope.evaluate(log, [1.0]), r"target must be the target policy's probabilities of the 2 arms"),
    (lambda log: ope.evaluate(log, TARGET, delay=D.geometric(0.5), delay_draws=[D.geometric(0.5)] * 2),
     r"give delay \(one law\) or delay_draws"),
])
def test_bad_arguments_are_named(call, pattern):
    with pytest.raises(ValueError, match=pattern):
        call(_hand_log())


def test_bad_exploration_floor_is_named():
    from jaxbandits.apps import serve
    from jaxbandits.policies import classic
    from jaxbandits.policies.explore import explore

    with pytest.raises(ValueError, match=r"eps must lie in \[0.0, 1.0\]"):
        explore(classic.ucb1(), 1.5)
    with pytest.raises(ValueError, match=r"config key 'policy.explore' must be a number in \[0, 1\]"):
        serve.load_config(None, arms=["a", "b"], policy={"name": "ucb1", "explore": 2}, channel={"kind": "attributed"})


def test_explore_law_is_exact_for_policies_that_ignore_or_honour_the_mask():
    # explore's arms follow eps/K + (1 - eps) p and its logged law says so, for bases that read the
    # context's arm mask and for ones that did not (beta_ts, delay_model_ts, exp3 ignored it: the
    # "explored" arm was then the base's own choice and the logged law was eps + (1 - eps) p[a])
    import jax
    import jax.numpy as jnp

    from jaxbandits.policies import bayes, classic
    from jaxbandits.policies import conversions as PC
    from jaxbandits.policies.explore import explore
    from jaxbandits.core.types import Context, ProblemSpec

    K, eps, n = 3, 0.3, 2000
    spec = ProblemSpec(K, 1000, feedback=C.conversions(50).feedback)
    keys = jax.vmap(lambda i: jax.random.fold_in(jax.random.PRNGKey(7), i))(jnp.arange(n))

    def skewed_beta(st):  # arm 0 converted 20 of 20 plays, the others 0 of 20: p ~ (1, 0, 0)
        return st._replace(plays=jnp.full((K,), 20.0), conv=jnp.array([20.0, 0.0, 0.0]))

    cases = [(bayes.beta_ts(window=50), skewed_beta),
             (bayes.delay_model_ts(window=50, engine="laplace"), lambda s: s),
             (classic.exp3(), lambda s: s._replace(cum_loss=jnp.array([0.0, 400.0, 800.0]))),
             (PC.delayed_ucb(D.geometric(mean=5.0), window=50), lambda s: s)]  # honours the mask
    for base, prep in cases:
        pol = explore(base, eps, samples=16)
        st = pol.init(spec, jax.random.PRNGKey(0))
        st = st._replace(base=prep(st.base))
        ctx = Context(jnp.asarray(5, jnp.int32))
        mctx = Context(jnp.asarray(5, jnp.int32), mask=jnp.array([True, False, True]))  # arm 1 ruled out

        @jax.jit
        def draw(k):
            arms, memo = pol.act(st, ctx, k)
            arms_m, memo_m = pol.act(st, mctx, k)
            return arms, memo.probs, base.act(st.base, ctx, k)[0], arms_m, memo_m.probs

        arms, probs, base_arms, arms_m, probs_m = jax.vmap(draw)(keys)
        freq = np.bincount(np.asarray(arms), minlength=K) / n
        p = np.bincount(np.asarray(base_arms), minlength=K) / n  # the base's law, empirically
        want = eps / K + (1 - eps) * p
        assert freq == pytest.approx(want, abs=0.03), (base.name, freq, want)
        logged = np.asarray(probs).mean(0)  # the law each decision logs, averaged
        assert logged == pytest.approx(want, abs=0.03), (base.name, logged, want)
        a = np.asarray(arms)
        assert np.asarray(probs)[np.arange(n), a].mean() == pytest.approx(float((freq ** 2).sum()), abs=0.03)
        # the mask: arm 1 is never played and the uniform part spreads over arms 0 and 2
        assert not np.any(np.asarray(arms_m) == 1), base.name
        assert np.all(np.asarray(probs_m)[:, 1] == 0.0), base.name


def test_dropping_recent_rows_depends_on_time_alone_with_per_arm_laws():
    # one slow arm (geometric, mean 60) and one fast (mean 2), min_seen = 0.8: dropping by each row's
    # own arm's G left out about half the slow arm's rows and almost none of the fast arm's, biasing
    # IPS low and SNIPS high (measured over 120 logs: -0.0147 and +0.0161, about 5.7 standard errors;
    # dropping by time alone: +0.0017 and +0.0022, under 1 standard error)
    laws = [D.geometric(mean=60.0), D.geometric(mean=2.0)]
    rates, target = [0.3, 0.6], [0.8, 0.2]
    truth = ope.true_value(target, rates, laws)
    vals = []
    for s in range(120):
        log = ope.simulate_log(s, 400, rates, laws, [0.5, 0.5])
        rep = ope.evaluate(log, target, delay=laws, min_seen=0.8, estimators=(ope.IPS, ope.SNIPS), ignorant=False)
        vals.append([rep.get("ips", True).value, rep.get("snips", True).value])
        keep = ope.old_enough(log, laws, None, 0.8)
        # the rows kept are the oldest ones, whatever their arm
        assert keep.sum() == len(log) - rep.dropped and keep[: keep.sum()].all()
    v = np.array(vals)
    se = v.std(0, ddof=1) / math.sqrt(len(v))
    assert (np.abs(v.mean(0) - truth) < 4 * se).all(), (v.mean(0) - truth, se)


def test_an_arm_left_without_rows_after_dropping_is_named():
    # arm 1 is played only in the last 3 rounds: every one of its rows is too recent for a delay of
    # mean 100 (P(seen) < 0.05), so the delay-aware estimators have no row of it; IPS, SNIPS and DR
    # returned a number (as if arm 1 never converted), now each raises naming the arm
    log = ope.decision_log(["a"] * 10 + ["b"] * 3, list(range(13)), [0.5] * 13, [np.nan] * 13, 12.0, arms=["a", "b"])
    for est in ope.ESTIMATORS:
        with pytest.raises(ValueError, match="the target plays arm 'b' .*no decision of it is old enough"):
            ope.evaluate(log, [0.5, 0.5], delay=D.geometric(mean=100.0), estimators=(est,), ignorant=False)
        # delay-ignorant: every row counts, a number
        assert math.isfinite(ope.evaluate(log, [0.5, 0.5], estimators=(est,)).estimates[0].value)


def test_serve_labels_explore_over_a_declared_law_exact(tmp_path, monkeypatch):
    # the serve table has no memo_probs policy today: add Exp3 for the test. explore over it logs an
    # exact law (propensity_samples 0, no Monte Carlo warning from ope); over a policy without a
    # declared law the log is Monte Carlo (test_serving_database_is_read_and_version_1_is_upgraded)
    import warnings

    from jaxbandits.apps import serve
    from jaxbandits.policies import classic

    table = serve.policy_table()
    monkeypatch.setattr(serve.config, "policy_table", lambda: {**table, "exp3": classic.exp3})
    monkeypatch.setattr(serve.config, "POLICIES", serve.POLICIES + ("exp3",))
    for name, exact in (("exp3", True),):
        cfg = serve.load_config(None, arms=["x", "y"], policy={"name": name, "explore": 0.2, "propensity_samples": 8},
                                channel={"kind": "attributed"})
        db = str(tmp_path / f"{name}.db")
        sv = serve.Service(cfg, db)
        out = sv.decide(20)
        sv.feedback([{"id": out["ids"][1], "reward": 1.0}])
        sv.advance(25)
        sv.close()
        log = ope.load(db)
        assert log.propensity_samples == (0 if exact else 8)
        assert cfg.propensity_exact() is exact
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            ope.evaluate(log, [0.5, 0.5])
        assert any("Monte Carlo" in str(x.message) for x in w) is not exact


def test_an_exploration_floor_passes_the_posterior_through():
    # explore keeps its base's posterior (on the base's state): what the dashboard's posterior panel
    # draws (it reads Policy.posterior); it was dropped
    import jax

    from jaxbandits.policies import bayes
    from jaxbandits.policies.explore import explore
    from jaxbandits.core.types import ProblemSpec

    base = bayes.delay_model_ts(window=30, engine="laplace")
    pol = explore(base, 0.1)
    assert pol.posterior is not None
    st = pol.init(ProblemSpec(n_arms=2, horizon=100), jax.random.key(0))
    got, want = pol.posterior(st), base.posterior(st.base)
    assert all(np.array_equal(np.asarray(g), np.asarray(w)) for g, w in zip(got, want))
    assert explore(bayes.beta_ts(window=30), 0.1).posterior is None  # none to pass


def test_evaluate_output_identity_holds_no_machine_path(tmp_path, monkeypatch, capsys):
    # the output folder's identity names the log by file name and content hash: rerunning from
    # another folder (another spelling of the path) is the same run; it stored the absolute path
    import hashlib
    import json

    from jaxbandits.apps.cli import main

    d = tmp_path / "logs"
    d.mkdir()
    p = d / "log.csv"
    p.write_text("arm,play_time,conversion_time,cutoff,propensity\n"
                 + "".join(f"{'xy'[a]},{t},{'' if np.isnan(c) else c},100,{q}\n"
                           for a, t, c, q in zip(ARM, TIME, CONV, PROP)))
    out = tmp_path / "res"
    args = ["--policy", "probs:0.2,0.8", "--no-plot", "--out", str(out)]
    monkeypatch.chdir(d)
    assert main(["evaluate", "log.csv", *args]) == 0
    text = (out / ".jaxbandits.json").read_text()
    assert str(tmp_path) not in text
    cfg = json.loads(text)["identity"]["config"]
    assert cfg["log"] == "log.csv" and cfg["log_sha256"] == hashlib.sha256(p.read_bytes()).hexdigest()
    monkeypatch.chdir(tmp_path)
    assert main(["evaluate", str(p), *args]) == 0  # the same run: no --force needed
    capsys.readouterr()
