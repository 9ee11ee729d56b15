"""Checks of the *kinds* that random mutants showed missing, fourth part (B) (docs/contributing.md,
"Mutation testing"; the earlier parts are tests/test_kinds.py, tests/test_kinds2.py and
tests/test_kinds3.py): each test is a kind of check applied to every case it covers, not a test
aimed at one mutated line.

* an independent computation: every CLW update against its window written out from the formula
  (rounds before ``d`` included); every binary action row replayed by hand from its five draws;
  every derived series of the dashboard from the raw samples; every sweep runner's run-steps
  counted from the simulations it asked for, and the fused path's from its runs, rounds and
  policies; the fit's delay-CDF age grid from the log's ages; where the contextual fit starts,
  from the log's counts (which runs the contextual fit in the fast suite up to its sampler);
* every field of a fingerprint: every summary field of the off-policy study against its definition
  from the estimates; every channel's initial state, field by field and byte by byte;
* an uneven size: every profiles list of a length other than the default, one panel per entry
  (longer lists refused);
* every documented form run once: a sweep defined by an experiment file, split in parts and merged;
* parts that differ only in what the merge does not check: the merge records the first part's.
"""
import json
import math
import types

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxbandits.experiments as X
from helpers import tiny_runner_configs
from jaxbandits import envs, online, ope
from jaxbandits import channels as C
from jaxbandits.apps import dashboard
from jaxbandits.core.types import Arrivals, ProblemSpec
from jaxbandits.experiments.sweeping import CallCache, Sweep
from jaxbandits.policies import composite
from jaxbandits.report.sweeps import SweepResults
from jaxbandits.reproductions import wang2021


# ------------------------------------------------------------ an independent computation: CLW's window
def test_every_clw_update_reads_the_window_of_its_formula_from_round_zero():
    """CLW in both round rules and both sets of constants (the forward rule with Wang's, COLT's
    backward rule with COLT's loss-Exp3), driven by hand with observations ``Z(t)`` all non-zero:
    at every round the change of the played arm's log-weight against every other arm's is the one
    of its formula with the window ``sum_{tau = max(0, t-d+1)}^{t} Z(tau)`` written out in float64
    (Wang: ``+ rate window / (2d N p)``; COLT: ``- rate (d - window) / (2d p)``), and zero on the
    other rounds. Update rounds before ``d`` (whose window starts at round 0) occur in every form
    (checked). Both forms are compiled as one program (one compile)."""
    d, T, n_keys, N = 3, 10, 64, 3
    y = np.random.default_rng(0).uniform(0.2, 1.0, (n_keys, T)).astype(np.float32)
    spec = ProblemSpec(n_arms=N, horizon=T)
    forms = (("wang_forward", "wang"), ("original", "colt"))

    def drive(pol, key, ys):
        st0 = pol.init(spec, key)

        def step(st, inp):
            t, yt, k = inp
            a, memo = pol.act(st, None, k)
            st2 = pol.update(st, Arrivals(t, a, memo, yt[None]))
            return st2, (st.logw, st2.logw, memo.arm, memo.p_arm, st2.n_updates - st.n_updates)

        ks = jax.random.split(jax.random.fold_in(key, 1), T)
        return jax.lax.scan(step, st0, (jnp.arange(T), ys, ks))[1], st0.rates[0], st0.ds[0]

    pols = [composite.clw(d, round_rule=rule, clw_params=params) for rule, params in forms]
    keys = jax.random.split(jax.random.key(7), n_keys)
    both = jax.jit(lambda keys, ys: [jax.vmap(lambda k, y_: drive(pol, k, y_))(keys, ys) for pol in pols])
    for (rule, params), ((old, new, arm, p, upd), rate, dk) in zip(forms, jax.device_get(both(keys, jnp.asarray(y)))):
        assert (dk == d).all()
        r_, t_ = np.meshgrid(np.arange(n_keys), np.arange(T), indexing="ij")
        own = lambda w: w[r_, t_, arm][..., None]
        got = (own(new) - new) - (own(old) - old)  # [keys, T, N]: 0 at the played arm itself
        win = np.array([[np.sum(y[r, max(0, t - d + 1):t + 1], dtype=np.float64) for t in range(T)]
                        for r in range(n_keys)])
        rate_ = rate[:, None]
        step = (rate_ * win / (2 * d * N * p) if params == "wang" else -rate_ * (d - win) / (2 * d * p))
        want = np.where((upd[..., None] > 0) & (np.arange(N) != arm[..., None]), step[..., None], 0.0)
        np.testing.assert_allclose(got, want, atol=2e-5, err_msg=f"{rule} {params}")
        early = int(np.sum(upd[:, :d]))
        assert early >= 3, (rule, params, early)


# ---------------------------------------------------- an independent computation: binary actions by hand
def test_every_binary_action_row_is_its_first_non_zero_draw_of_five_replayed_by_hand():
    """The binary action set (docstring: all-zero rows redrawn, four fresh draws, then ``e_0``),
    replayed by hand for one round of 8192 actions at ``d = 2``: the key split in five, each a
    Bernoulli(1/2) draw of the whole ``[K, d]`` array; each row is its first non-zero draw among
    the five, else ``e_0``. Rows that needed the fifth draw, and got one other than ``e_0``, are
    among them (checked: where a shorter redraw would differ)."""
    K, d = 8192, 2
    key = jax.random.key(11)
    w = envs.linear(np.ones(d) / d, n_actions=K, action_set="binary")
    x = np.asarray(jax.jit(lambda k: w.context(None, 0, k)[0])(key))
    draws = [np.asarray(jax.random.bernoulli(k, 0.5, (K, d)), np.float32) for k in jax.random.split(key, 5)]
    want = np.tile(np.eye(d, dtype=np.float32)[0], (K, 1))
    done = np.zeros(K, bool)
    for x_i in draws:
        take = ~done & x_i.any(1)
        want[take] = x_i[take]
        done |= take
    np.testing.assert_array_equal(x, want)
    fifth = ~np.any([x_i.any(1) for x_i in draws[:4]], axis=0) & draws[4].any(1) & (draws[4][:, 1] > 0)
    assert fifth.sum() >= 3, fifth.sum()


# ---------------------------------------------------- every field of a fingerprint: channel init states
@pytest.mark.parametrize("make, reveal", [(C.attributed, 0), (C.action_time, 0), (C.anonymous, 0),
                                          (lambda: C.conversions(window=5), 4), (C.composite, 0)])
def test_every_channels_initial_state_has_the_fields_and_bytes_its_docstring_states(make, reveal):
    """Every field of a fingerprint: each library channel's initial state (``CalendarState``):
    ``cal.buf`` f32[W, P] of zeros (``P = 1`` for the composite channel: one sum per round),
    ``cal.lost`` an i32 scalar 0, ``due`` i32[H] (``H`` the length of the channel's reveal ring, 0 without one)
    filled with ``NEVER``, and nothing else: its bytes are exactly ``4 (W P + 1 + H)``."""
    from jaxbandits.core.delays import NEVER

    ch = make()
    W, P = 7, 3
    st = ch.init(C.ChannelSpec(horizon=50, width=W, payload_size=P, reveal=reveal))
    P_rec = 1 if isinstance(ch, C.Composite) else P
    assert isinstance(st, C.CalendarState) and isinstance(st.cal, C.Calendar)
    assert (st.cal.buf.shape, st.cal.buf.dtype) == ((W, P_rec), jnp.float32) and not np.asarray(st.cal.buf).any()
    assert (st.cal.lost.shape, st.cal.lost.dtype, int(st.cal.lost)) == ((), jnp.int32, 0)
    assert (st.due.shape, st.due.dtype) == ((reveal,), jnp.int32) and (np.asarray(st.due) == NEVER).all()
    assert sum(np.asarray(v).nbytes for v in jax.tree.leaves(st)) == 4 * (W * P_rec + 1 + reveal)


# ------------------------------------------- an independent computation: the dashboard's derived series
def test_every_derived_series_of_the_dashboard_from_the_raw_samples():
    """The dashboard's ``/series`` (``Monitor.series``) on samples written by hand (three arms,
    uneven periods, a period with no new decision): each arm's share of the decisions of a period
    is its new decisions over all new decisions (written out with fractions; the shares of a period
    sum to 1; None where nothing was decided), decisions per second the new decisions over the
    seconds (0 in a period without any), and every copied series the samples' own values."""
    from fractions import Fraction

    arms = ["a", "b", "c"]
    svc = types.SimpleNamespace(policy=types.SimpleNamespace(posterior=None),
                                config=types.SimpleNamespace(channel={"kind": "attributed"}, policy={}),
                                learner=types.SimpleNamespace(arms=arms))
    mon = dashboard.Monitor(svc, capacity=64, period=1.0, clock=lambda: 0.0)
    t = [0.0, 1.0, 3.0, 3.5, 6.0]
    dec = [[0, 0, 0], [3, 5, 2], [3, 5, 2], [10, 6, 2], [11, 6, 9]]
    mon.samples = [{"t": t[i], "round": sum(dec[i]), "decisions": dec[i], "estimate": [0.1 * i] * 3,
                    "counters": {c: i for c in online.CODES}, "pending": i, "expected": 0.5 * i, "requests": 2 * i,
                    "p50": None, "p99": None, "max": None} for i in range(len(t))]
    s = mon.series()
    for i in range(1, len(t)):
        new = [dec[i][k] - dec[i - 1][k] for k in range(3)]
        if sum(new) == 0:
            assert all(s["share"][a][i] is None for a in arms) and s["decisions_per_s"][i] == 0.0, (i, s)
            continue
        want = [Fraction(n, sum(new)) for n in new]
        got = [s["share"][a][i] for a in arms]
        assert got == pytest.approx([float(w) for w in want], rel=1e-12), (i, got)
        assert sum(got) == pytest.approx(1.0, rel=1e-12)
        assert s["decisions_per_s"][i] == pytest.approx(sum(new) / (t[i] - t[i - 1]), rel=1e-12)
    assert all(s["share"][a][0] is None for a in arms) and s["decisions_per_s"][0] is None
    assert s["t"] == t and s["decisions"] == {a: [x[k] for x in dec] for k, a in enumerate(arms)}
    assert s["requests"] == [2 * i for i in range(len(t))] and s["pending"] == list(range(len(t)))


# ------------------------------------------- an independent computation: every sweep's run-steps
class _Counting(Sweep):
    """A sweep that computes no unit (zeros of each simulation's form, each timed 0.25 s) and counts
    the run-steps of the simulations asked for: runs x rounds x policies (x grid points)."""

    def __init__(self):
        super().__init__(CallCache(None))
        self.steps, self.calls = 0, 0

    def unit(self, fingerprint, compute, *, placeholder=lambda: None, **kwargs):
        out = placeholder()
        if isinstance(out, dict):
            for o in out.values():
                o.timing["run_s"] = 0.25
        return out

    def simulate(self, env, channel, policies, horizon, key, n_runs=1, **kw):
        self.steps += n_runs * horizon * (len(policies) if isinstance(policies, dict) else 1)
        self.calls += 1
        return super().simulate(env, channel, policies, horizon, key, n_runs, **kw)

    def simulate_grid(self, build, grid, channel, horizon, key, n_runs=1, **kw):
        self.steps += n_runs * horizon * len(next(iter(grid.values())))
        self.calls += 1
        return super().simulate_grid(build, grid, channel, horizon, key, n_runs, **kw)




def test_every_sweep_runner_counts_the_run_steps_of_the_simulations_it_asked_for():
    """Every registered sweep whose result reports a speed (``SweepResults``: the thune2019 and
    pikeburke2018 sweeps), run with its simulations stood in (zeros, each call timed 0.25 s): the
    run-steps it counts are those of the simulations it asked for, counted apart (runs x rounds x
    policies of each call, x grid points), each call's time counted once, and the summary's
    ``run_steps_per_s`` is their ratio."""
    seen = 0
    for name, exp, cfg in tiny_runner_configs():
        sw = _Counting()
        res = exp.runner(dict(cfg), 3, 7, None, sw)
        if not isinstance(res, SweepResults):
            continue
        assert sw.calls >= 2 and res.timing["run_steps"] == sw.steps, (name, res.timing, sw.steps)
        assert res.timing["run_s"] == pytest.approx(0.25 * sw.calls), (name, res.timing, sw.calls)
        assert res.summary()["timing"]["run_steps_per_s"] == pytest.approx(sw.steps / (0.25 * sw.calls)), name
        seen += 1
    assert seen >= 4, seen


# ----------------------------------------------------- an uneven size: a profiles list of another length
def test_every_profiles_list_shorter_than_the_default_gives_one_panel_per_entry():
    """An uneven size: the Fig. 3 and Fig. 4 builds given a profiles list of odd length below the
    default (1 and 5 entries of Fig. 3's six; 1 and 3 of Fig. 4's four): one panel per entry, in
    order, varying alpha, then f, alternately."""
    f3 = [["interval", 3, 5], ["lin-dec", 4, 0], ["lin-inc", 4, 0], ["interval", 0, 2], ["lin-dec", 6, 0]]
    f4 = [["discounted", 0.5], ["polynomial", 3.0], ["discounted", 0.6]]
    for exp, profs in ((wang2021.FIG3, f3), (wang2021.FIG4, f4)):
        for n in (1, len(profs)):
            panels = exp.build({**exp.config, "profiles": profs[:n]})
            assert len(panels) == n, (exp.name, n, [p.name for p in panels])
            assert [p.name.endswith("vary " + ("alpha", "f")[i % 2]) for i, p in enumerate(panels)] == [True] * n


@pytest.mark.parametrize("which, extra, most", [("fig3", [["interval", 3, 5], ["lin-dec", 4, 0]], 6),
                                                ("fig4", [["discounted", 0.5]], 4)])
def test_every_profiles_list_longer_than_the_figure_is_refused_naming_profiles(which, extra, most):
    """An uneven size: a profiles list longer than the figure's panels (Fig. 3: eight entries of
    six; Fig. 4: five of four) is refused naming ``profiles`` and the range (the entries past the
    panels were once dropped silently)."""
    exp = {"fig3": wang2021.FIG3, "fig4": wang2021.FIG4}[which]
    profs = list(exp.config["profiles"]) + extra
    with pytest.raises(ValueError, match=f"profiles: 1 to {most} entries .one panel each., got {len(profs)}"):
        exp.build({**exp.config, "profiles": profs})


# --------------------------------------------- every field of a fingerprint: the off-policy study's summary
def test_every_field_of_the_ope_studys_summary_against_its_definition_from_the_estimates(monkeypatch):
    """Every field of a fingerprint: the ``ope-bias-coverage`` study at a tiny size (two laws,
    three logs each: an uneven count, where a divisor of ``n`` and of ``n - 1`` differ), every
    estimate its ``evaluate`` calls return recorded: each estimator's row holds exactly ``mean``,
    ``bias`` (mean - truth), ``mcse`` (the sample standard deviation over ``sqrt(n)``),
    ``bias_over_mcse``, ``coverage_95`` (the share of intervals holding the truth) and ``sd`` (the
    sample standard deviation, ``n - 1``), each recomputed from the recorded estimates with
    :mod:`statistics`; the law's truth is ``ope.true_value`` of its config."""
    import statistics

    from jaxbandits.core import delays as D
    from jaxbandits.reproductions import ope as ROPE

    real, reports = ope.evaluate, []

    def spy(*a, **k):
        reports.append(real(*a, **k))
        return reports[-1]
    monkeypatch.setattr(ope, "evaluate", spy)
    exp = X.get("ope-bias-coverage")
    cfg = {**exp.config, "laws": ["geometric", "pareto"], "n_decisions": 80, "span": 60.0}
    res = exp.runner(dict(cfg), 3, 5, None)
    assert len(reports) == 6 and [L["law"] for L in res.laws] == cfg["laws"]
    for j, L in enumerate(res.laws):
        fn, kw = ROPE.LAWS[L["law"]]
        truth = ope.true_value(cfg["target"], cfg["rates"], getattr(D, fn)(**kw), cfg["window"])
        assert L["truth"] == truth and L["runs"] == 3
        names = [e.name for e in reports[3 * j].estimates]
        assert list(L["estimators"]) == names
        for i, name in enumerate(names):
            es = [rep.estimates[i] for rep in reports[3 * j:3 * j + 3]]
            v = [e.value for e in es]
            mean, sd = statistics.fmean(v), statistics.stdev(v)
            want = {"mean": mean, "bias": mean - truth, "mcse": sd / math.sqrt(3),
                    "bias_over_mcse": (mean - truth) / (sd / math.sqrt(3)),
                    "coverage_95": sum(e.lo <= truth <= e.hi for e in es) / 3, "sd": sd}
            got = L["estimators"][name]
            assert sorted(got) == sorted(want), (name, sorted(got))
            for k in want:
                assert got[k] == pytest.approx(want[k], rel=1e-9, abs=1e-15), (L["law"], name, k, got[k], want[k])


# ------------------------------------------------ an independent computation: the fit's delay-CDF grid
class _Stop(Exception):
    pass


def test_the_fits_delay_cdf_age_grid_spans_the_logs_ages_at_every_size(monkeypatch):
    """An independent computation of where a fit reads its delay CDF (``idata.posterior``'s
    ``delay_cdf`` ages): from 1 to the log's largest age (its cutoff less its play time, capped by
    the window when one is given) rounded, and at least to 2; strictly increasing, at most 60 ages.
    Logs whose largest age is 0.7, 1.6, 37.2 and 500 (the last with a window of 90); the SVI fit's
    optimisation and draws stood in (the grid reads only the log)."""
    import numpyro.infer
    import numpyro.infer.autoguide

    from jaxbandits import bayes

    fit_mod = __import__("importlib").import_module("jaxbandits.bayes.fit")
    seen = []

    def spy(fam, theta, ages, discrete):
        seen.append(np.asarray(ages))
        raise _Stop
    monkeypatch.setattr(fit_mod, "delay_cdf_grid", spy)
    monkeypatch.setattr(numpyro.infer.SVI, "run", lambda self, *a, **k: types.SimpleNamespace(params={}, losses=[0.0]))
    monkeypatch.setattr(numpyro.infer.autoguide.AutoMultivariateNormal, "sample_posterior",
                        lambda self, key, params, sample_shape=(): {"p": np.full(sample_shape + (2,), 0.2),
                                                                     "delay_mean": np.full(sample_shape, 5.0)})
    for top, window in ((0.7, None), (1.6, None), (37.2, None), (500.0, 90)):
        log = bayes.conversion_log([0, 1, 0, 1], [0.0, 0.3, 0.1, 0.2], [np.nan] * 4, [top] * 4, 2)
        with pytest.raises(_Stop):
            bayes.fit(log, method="svi", window=window, num_samples=4)
        ages = seen.pop()
        end = max(min(top, window or math.inf), 2.0)
        assert ages[0] == 1 and ages[-1] == round(end) and ages.size <= 60, (top, window, ages)
        assert np.all(np.diff(ages) > 0), ages


# ------------------------------------------- every documented form run once: a file's sweep in parts
_SWEEP_MODULE = '''
from jaxbandits.core.fileio import json_writer, save_files


class Values:
    """The result of the tiny sweep (what the command line reads of a study: summary, table, runs),
    its units' values saved as summary.json."""

    def __init__(self, config, runs, seed, values):
        self.experiment, self.config, self.runs, self.seed, self.values = "tinysweep", config, runs, seed, values

    def summary(self):
        return {"experiment": self.experiment, "config": self.config, "seed": self.seed, "values": self.values}

    def table(self):
        return str(self.values)

    def save(self, out, plot=True, force=False):
        save_files(out, {"summary.json": json_writer(self.summary())},
                   {"experiment": self.experiment, "config": self.config}, force=force)


def run(config, runs, seed, horizon, sweep):
    vals = [sweep.unit({"tiny": i, "seed": seed, "scale": config["scale"]},
                       lambda i=i: {"v": i * config["scale"] + seed, "runs": runs}, cost=1.0 + i, kind="json",
                       what="value") for i in range(config["n"])]
    return Values(config, runs, seed, vals)
'''


def test_a_sweep_defined_by_an_experiment_file_split_in_parts_and_merged_is_the_whole_run(tmp_path, monkeypatch):
    """Every documented form run once (docs/experiment-files.md, ``runner = "package.module:function"``
    a sweep, split by ``--part``; docs/cluster.md, merge): a sweep defined by an experiment file,
    with a ``--set`` override, run whole and in two parts (each part computing some of its units)
    by the command line, then merged from the parts given out of order: the merged summary is the
    whole run's."""
    from jaxbandits.apps import cli

    (tmp_path / "tinysweep_mod.py").write_text(_SWEEP_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "sweep.toml").write_text('name = "tinysweep"\nrunner = "tinysweep_mod:run"\nruns = 2\n\n'
                                         '[config]\nn = 5\nscale = 2\n')
    args = ["run", "sweep.toml", "--set", "scale=3", "--seed", "4", "--no-progress"]
    assert cli.main([*args, "--out", "whole"]) == 0
    for i in range(2):
        assert cli.main([*args, "--part", f"{i}/2", "--out", f"p{i}"]) == 0
    owners = {o for m in ("p0", "p1") for _, _, o in json.loads((tmp_path / m / "part.json").read_text())["units"]}
    assert owners == {0, 1}
    assert cli.main(["merge", "p1", "p0", "--out", "merged"]) == 0
    whole, merged = (json.loads((tmp_path / d / "summary.json").read_text()) for d in ("whole", "merged"))
    assert merged == whole and whole["config"]["scale"] == 3
    assert [v["v"] for v in whole["values"]] == [3 * i + 4 for i in range(5)]


# ------------------------------------- parts that differ only in what the merge does not check
def test_parts_differing_only_in_what_the_merge_does_not_check_merge_to_the_first_parts_record(tmp_path, monkeypatch,
                                                                                               capsys):
    """Parts that differ only in what the merge does not check (the versions of what does not change
    the bits: NumPy, Python; docs/cluster.md lists what it refuses): ``quickstart`` run in two parts
    by the command line (its simulations stood in: zeros of their form), part 1's record edited to
    name other NumPy and Python versions (and re-signed); the merge, given the parts out of order,
    succeeds and its results record part 0's versions (the first part's: the merge's convention, as
    for every other field it takes from one part), not part 1's."""
    from jaxbandits.apps import cli
    from jaxbandits.core import fileio
    from jaxbandits.engine import prepare as PR
    from jaxbandits.experiments import runner
    from jaxbandits.experiments.sweeping import placeholder_outputs

    def zeros(env, channel, policies, horizon, key, n_runs=1, *, record=None, chunk=None, first_run=0, keep=None,
              stats_block=None, **kw):
        p = PR.prepare(env, channel, policies, horizon, key, n_runs, record=record, chunk=chunk, first_run=first_run,
                       keep=keep, stats_block=stats_block)
        outs = placeholder_outputs(p.problems, p.n_runs, p.record_at, keep=p.keep)
        return outs if isinstance(policies, dict) else next(iter(outs.values()))
    monkeypatch.setattr(runner, "simulate", zeros)
    monkeypatch.chdir(tmp_path)
    args = ["run", "quickstart", "--runs", "5", "--horizon", "32", "--seed", "3", "--no-progress"]
    for i in range(2):
        assert cli.main([*args, "--part", f"{i}/2", "--out", f"p{i}"]) == 0
    p0 = json.loads((tmp_path / "p0" / "part.json").read_text())
    pj = tmp_path / "p1" / "part.json"
    meta = json.loads(pj.read_text())
    assert meta["versions"] == p0["versions"]
    meta["versions"].update(numpy="0.0.1-other", python="2.0.0-other")
    pj.write_text(json.dumps(meta))
    man = tmp_path / "p1" / fileio.MANIFEST_NAME
    m = json.loads(man.read_text())
    m["files"]["part.json"] = fileio.sha256_file(str(pj))
    man.write_text(json.dumps(m))
    capsys.readouterr()
    assert cli.main(["merge", "p1", "p0", "--out", "merged", "--no-plot"]) == 0, capsys.readouterr().err
    s = json.loads((tmp_path / "merged" / "summary.json").read_text())
    assert s["versions"] == p0["versions"] and s["runs"] == 5


# ---------------------------------------- an independent computation: where the contextual fit starts
def test_the_contextual_fit_starts_from_the_logs_counts_with_every_covariate_at_zero(monkeypatch):
    """The contextual fit in the fast suite up to its sampler (NUTS' start stood in: the fit stops
    there; a real tiny fit costs about 10 s of CPU and is left to the slow tests): its starting
    values against an independent computation from the log's own rows, counted with numpy: each
    arm's intercept the logit of ``clip((S_k + 1) / (N_k + 2), 1e-3, 0.9)``, every covariate's
    coefficient 0, every segment's delay mean the mean seen delay; two covariates, three segments."""
    from jaxbandits import bayes

    fit_mod = __import__("importlib").import_module("jaxbandits.bayes.fit")
    seen = []

    def stop(values, **kw):
        seen.append((values, kw))
        raise _Stop
    monkeypatch.setattr(fit_mod, "init_near", stop)
    log, X, _ = bayes.synthetic_contextual_log(300, [0.5, -1.0], [0.5, -0.3], [10.0, 30.0], 100.0, 120.0, seed=3)
    seg = np.arange(len(log)) % 3
    with pytest.raises(_Stop):
        bayes.fit_contextual(log, X, seg, num_chains=1, num_warmup=1, num_samples=1)
    v, kw = seen[0]
    ok = ~np.isnan(log.conversion_time)
    S = np.bincount(log.arm[ok], minlength=2).astype(float)
    N = np.bincount(log.arm, minlength=2).astype(float)
    rate = np.clip((S + 1) / (N + 2), 1e-3, 0.9)
    np.testing.assert_allclose(v["alpha"], np.log(rate / (1 - rate)), rtol=1e-6)
    np.testing.assert_array_equal(v["beta"], np.zeros(2))
    md = float(np.mean(log.conversion_time[ok] - log.play_time[ok]))
    np.testing.assert_allclose(v["delay_mean"], np.full(3, md), rtol=1e-5)
    assert set(kw.get("real", ())) == {"alpha", "beta"}


# ------------------------------------------ an independent computation: the fused path's speed
def test_the_fused_paths_speed_is_its_run_steps_over_its_run_time(monkeypatch):
    """An independent computation of the speed the fused path reports: ``run_steps_per_s`` times
    ``run_s`` is the run-steps simulated, runs x rounds x policies, counted apart (3 runs: fewer
    than a kernel block; 24 rounds; two policies in one call). The kernels are stood in (zeros of
    their outputs' shapes: the speed does not read their numbers; the real kernels run through
    Pallas' interpreter in tests/test_limits.py and the slow tests), the compiled-kernel caches
    emptied for the test and restored after."""
    import collections

    from jaxbandits.engine.fused import path as FP
    from jaxbandits.policies import classic

    def program(ks, n_pad):
        R, K = ks.r_pad, ks.n_arms
        return jax.jit(lambda mu, rec, tau, words, *rep: (jnp.zeros((R, n_pad), jnp.float32),
                                                            jnp.zeros((R, n_pad), jnp.float32),
                                                            jnp.zeros((R * K, n_pad), jnp.int32)))
    monkeypatch.setattr(FP, "kernel_program", program)
    monkeypatch.setattr(FP, "COMPILED", collections.OrderedDict())
    out = FP.simulate_fused(envs.bernoulli([0.3, 0.6]), C.attributed(),
                            {"UCB1": classic.ucb1(), "UCB1 (a=1)": classic.ucb1(alpha=1.0)}, 24, jax.random.key(0), 3,
                            interpret=True)
    assert list(out) == ["UCB1", "UCB1 (a=1)"]
    for o in out.values():
        t = o.timing
        assert t["path"].startswith("fused") and t["run_s"] > 0
        assert t["run_steps_per_s"] * t["run_s"] == pytest.approx(3 * 24 * 2, rel=1e-9), t
