"""Checks of the *kinds* that random mutants showed missing, second part (docs/contributing.md,
"Mutation testing"; the first part is tests/test_kinds.py): each test is a kind of check applied
to every case it covers, not a test aimed at one mutated line.

* an estimate against an independent computation (the bytes of a state from numpy, a count of
  pending decisions from its definition, a replay re-done row by row on the host, a width against
  the schedule it bounds, paired moments against float64 sums);
* the whole distribution (every random action set's law, every simulator's stated delay means);
* stated defaults and settings read from the docs and docstrings that state them (every public
  seed, the SBC signature, a reproduction's settings, every label's numbers);
* every bound at the bound (memory exactly enough, a ring filled and past, every stated integer
  range of a sweep, the histogram cap, the PPC's default grid);
* every registered item in the fast suite (every runner's bookkeeping with its units stood in) and
  every exit path of a command;
* uneven sizes of a packed layout (the fused calendar at nine arms: slow).
"""
import dataclasses
import importlib
import inspect
import math
import pathlib
import pkgutil
import re

import arviz as az
import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.stats as S

import jaxbandits
import jaxbandits.experiments.distributed as DIST
import jaxbandits.engine.memory as MEM
import jaxbandits.experiments as X
from helpers import tiny_runner_configs
from jaxbandits import bayes
from jaxbandits.apps import cli
from jaxbandits import channels as C
from jaxbandits.core import delays as D
from jaxbandits import envs, online, ope
from jaxbandits.bayes import calibration as CAL
from jaxbandits.bayes import ppc
from jaxbandits.engine.stats import Stats
from jaxbandits.engine.fused import path as FP
from jaxbandits.policies import adversarial as A
from jaxbandits.policies import classic
from jaxbandits.policies import conversions as CV
from jaxbandits.reproductions import wang2021
from jaxbandits.experiments.results import Results
from jaxbandits.experiments.sweeping import CallCache, Sweep
from jaxbandits.report.sweeps import SweepResults
from jaxbandits.core.types import Arrivals, Context, ProblemSpec


# ----------------------------------------------------------------- online learner: memory, pending
def _nbytes(tree):
    """The bytes of a built state, from numpy (a key counted by its key data)."""
    n = 0
    for leaf in jax.tree.leaves(tree):
        if jnp.issubdtype(leaf.dtype, jax.dtypes.prng_key):
            leaf = jax.random.key_data(leaf)
        n += np.asarray(leaf).nbytes
    return n


def test_the_learners_memory_check_refuses_exactly_past_the_bytes_of_its_state(monkeypatch):
    """An estimate against an independent computation, at the bound: the learner is let through
    with exactly the bytes its built state holds (numpy ``nbytes`` of every leaf) available, and
    refused with one byte less, the message giving that need; for several policies and ring sizes."""
    cases = [(classic.ucb1(), C.attributed(), 3, 5), (classic.ucb1(), C.conversions(window=6), 3, None)]
    for pol, ch, K, H in cases:
        monkeypatch.setattr(MEM, "available_memory", lambda: None)  # unknown: no check
        st = online.init(pol, ch, K, 0, max_pending=H)
        need = _nbytes(st)
        monkeypatch.setattr(MEM, "available_memory", lambda: need)
        online.init(pol, ch, K, 0, max_pending=H)
        monkeypatch.setattr(MEM, "available_memory", lambda: need - 1)
        with pytest.raises(ValueError, match=rf"needs {need / 2**30:.1f} GiB \(a pending ring of {st.config.pending} slots"):
            online.init(pol, ch, K, 0, max_pending=H)


def test_the_learners_pending_count_follows_its_definition_through_a_ring_filled_and_past():
    """A count against its definition, every round of a ring filled and then left behind (idle
    rounds from ``advance``): ``stats()['pending']`` is the number of decisions made in the last
    ``H`` rounds (the ring's slots), none given feedback."""
    H = 3
    st = online.init(classic.ucb1(), C.attributed(), 3, 0, max_pending=H)
    made, seen = [], []
    for step in range(9):
        if step < 5 or step == 6:
            st, ids, _ = online.decide(st, 1)
            made += [int(i) for i in np.asarray(ids)]
        else:
            st = online.advance(st, int(st.t) + 2)
        s = online.stats(st)
        want = sum(1 for d in made if s["round"] - d < H)
        assert s["pending"] == want, (step, s, made)
        seen.append(want)
    assert 0 in seen and H in seen and 1 in seen  # empty, full and part-full rings all checked


# ----------------------------------------------------------------------------- replay, row by row
def _replay_by_hand(log, pol, seed, window):
    """Replay (docs/ope.md) re-done on the host, one row at a time: the policy initialised with
    ``fold_in(key, 0)``, acting at row ``j`` with ``fold_in(fold_in(key, 1), j)``, the acceptance
    coins ``uniform(fold_in(key, 2), [N]) < min propensity / propensity``; an accepted row's
    outcome delivered at the first row at or after its conversion (a conversion seen within the
    window) or the first row after its window closed (a zero, if the log was read after that)."""
    N, t = len(log), log.time
    key = jax.random.key(seed)
    k_init, k_act, k_acc = (jax.random.fold_in(key, i) for i in range(3))
    st = pol.init(ProblemSpec(log.n_arms, N, None, C.attributed().feedback), k_init)
    coins = np.asarray(jax.random.uniform(k_acc, (N,))) < (log.propensity.min() / log.propensity).astype(np.float32)
    y = log.observed(window)
    due, acc = {}, np.zeros(N, bool)
    act, update, payload = jax.jit(pol.act), jax.jit(pol.update), jax.jit(pol.payload)
    for j in range(N):
        a, memo = act(st, Context(jnp.int32(j), None, None, jnp.int32(-1)), jax.random.fold_in(k_act, j))
        acc[j] = int(a) == int(log.arm[j]) and coins[j]
        if acc[j]:
            later = np.flatnonzero(t >= log.conversion_time[j]) if y[j] else np.flatnonzero(t > t[j] + window)
            row = max(j, int(later[0])) if later.size and (y[j] or t[j] + window < log.end[j]) else N
            if row < N:
                due[row] = due.get(row, 0) + np.asarray(payload(memo, jnp.float32(y[j]), jnp.int32(row - j)))
        P = np.asarray(payload(memo, jnp.float32(1), jnp.int32(0))).shape[0]
        got = jnp.asarray(due.pop(j, np.zeros(P)), jnp.float32)
        memo = jax.tree.map(lambda m: m if acc[j] else jnp.zeros_like(m), memo)
        st = update(st, Arrivals(jnp.int32(j), jnp.int32(a if acc[j] else -1), memo, got, None))
    return acc


def test_replay_accepts_the_rows_of_a_replay_done_by_hand_with_its_documented_keys():
    """An independent computation of replay's accepted rows (its keys, coins and delivery rows),
    for a random policy (Thompson sampling: its draws read the act keys), on an
    uneven log (several decisions per time unit, conversions and zeros delivered)."""
    rng = np.random.default_rng(0)  # a log built in numpy (ope.simulate_log compiles a simulation)
    N, logging, rates = 48, np.array([0.6, 0.4]), np.array([0.3, 0.7])
    arm = (rng.random(N) < logging[1]).astype(int)
    t = np.floor(np.arange(N) * 30.0 / N)
    ct = np.where(rng.random(N) < rates[arm], t + rng.geometric(1 / 3.0, N) - 1, np.nan)
    ct = np.where(ct <= t[-1], ct, np.nan)  # read at the last decision
    log = ope.decision_log(arm, t, logging[arm], ct, t[-1], n_arms=2)
    assert len(np.unique(log.time)) < len(log) and 0 < log.observed(4.0).sum() < len(log)
    for pol in (classic.thompson(),):
        (_,), acc = ope.replay(log, pol, C.attributed(), 3, window=4.0)
        want = _replay_by_hand(log, pol, 3, 4.0)
        assert 5 < want.sum() and np.array_equal(acc, want), (pol.name, acc.astype(int), want.astype(int))


# ------------------------------------------------------------------ simulators: their whole laws
def _within(x, mean, k=4.0):
    """The sample mean of ``x`` within ``k`` standard errors of ``mean``."""
    se = x.std(ddof=1) / math.sqrt(x.size)
    return abs(x.mean() - mean) <= k * se


def test_every_synthetic_log_simulator_draws_delays_of_its_stated_mean():
    """Monte Carlo unbiasedness of every simulator's stated delay law: the delays of
    ``synthetic_log`` (exponential, Weibull at shapes below and above 1, log-normal: its median) and
    of ``synthetic_contextual_log`` (exponential, Weibull), each arm's or segment's own mean,
    within 4 standard errors (every play converts, nothing is cut: rates 1, a far cutoff)."""
    n, far = 20000, 1e12
    means = np.array([5.0, 40.0])
    for delay, kw in [("exponential", {}), ("weibull", {"shape": 0.7}), ("weibull", {"shape": 2.5}),
                      ("lognormal", {"sigma": 0.8})]:
        log = bayes.synthetic_log([1.0, 1.0], n, 100.0, far, delay=delay, arm_means=means, seed=1, **kw)
        d = log.conversion_time - log.play_time
        assert not np.isnan(d).any()
        for a, m in enumerate(means):
            da = d[log.arm == a]
            if delay == "lognormal":  # the median: half the delays below it
                p = (da < m).mean()
                assert abs(p - 0.5) <= 4 * math.sqrt(0.25 / da.size), (delay, a, p)
            else:
                assert _within(da, m), (delay, kw, a, da.mean(), m)
    for delay, kw in [("exponential", {}), ("weibull", {"shape": 0.7}), ("weibull", {"shape": 2.5})]:
        log, _, seg = bayes.synthetic_contextual_log(n, [40.0, 40.0], [0.0], means, 100.0, far, delay=delay, seed=2,
                                                     **kw)
        d = log.conversion_time - log.play_time
        assert not np.isnan(d).any()
        for s, m in enumerate(means):
            assert _within(d[seg == s], m), (delay, kw, s, d[seg == s].mean(), m)


def test_every_random_action_set_draws_its_whole_law():
    """The whole distribution of each random action set of the linear world, at a small size:
    binary actions are uniform on the non-zero vectors of {0,1}^d independently per action
    (zero vectors redrawn 4 times, then e_0: exact probabilities), so the pair of actions at K = 2,
    d = 2 takes each of its 9 values with its exact probability (chi-square); uniform entries are
    U(0, 1) and Gaussian ones N(0, 1) (Kolmogorov-Smirnov over all entries)."""
    n = 6000
    w = envs.linear(np.ones(2) / 2, n_actions=2, action_set="binary")
    x = np.asarray(jax.jit(jax.vmap(lambda k: w.context(None, 0, k)[0]))(jax.random.split(jax.random.key(5), n)))
    code = (x[:, :, 0] * 2 + x[:, :, 1]).astype(int)  # each action: 1 (01), 2 (10) or 3 (11)
    assert set(np.unique(code)) <= {1, 2, 3}
    z = 2.0**-10  # a row zero after 5 draws: it becomes e_0 (code 2)
    p1 = {1: (1 - z) / 3, 2: (1 - z) / 3 + z, 3: (1 - z) / 3}
    obs = np.array([np.sum((code[:, 0] == a) & (code[:, 1] == b)) for a in (1, 2, 3) for b in (1, 2, 3)])
    exp = np.array([n * p1[a] * p1[b] for a in (1, 2, 3) for b in (1, 2, 3)])
    assert S.chisquare(obs, exp).pvalue > 1e-4, obs
    for kind, cdf in (("uniform", "uniform"), ("gaussian", "norm")):  # one round of 1000 actions
        v = np.asarray(envs.linear(np.ones(2) / 2, n_actions=1000, action_set=kind).context(None, 0, jax.random.key(6))[0])
        assert S.kstest(v.ravel(), cdf).pvalue > 1e-4, kind


# -------------------------------------------------------------------- a calendar width at its bound
def test_doubling_width_holds_every_epoch_reachable_where_each_term_of_its_bound_leads():
    """A bound against the schedule it bounds, at uneven sizes where each term of
    ``max(T^2, (e K T / 2 + T beta) ln K)`` leads (K = 2 and T long: T^2; K much larger than T:
    the arms' term): the epochs :func:`doubling_epochs` reaches within T rounds (zero delays: every
    round counts; delays of every size) process delays below ``beta_m = 2^(m/2) / (4 e ln K)``, so
    the width ``ceil(beta_M) + 1`` of the largest holds them, and it is that of the first epoch M
    meeting the bound (found here by a vectorised search)."""
    rng = np.random.default_rng(0)
    for K, T in [(2, 4096), (7, 300), (1000, 50), (64, 8), (3, 2)]:
        lnk = math.log(K)
        beta = lambda m: 2.0 ** (np.asarray(m) / 2) / (4 * math.e * lnk)
        ms = np.arange(200)
        M = int(ms[2.0**ms >= np.maximum(float(T) ** 2, (math.e * K * T / 2 + T * beta(ms)) * lnk)][0])
        w = A.doubling_width(K, T)
        assert w == math.ceil(beta(M)) + 1, (K, T, w, M)
        for d in (np.zeros(T, np.int64), rng.integers(0, 2 * w, T)):
            ep, _ = A.doubling_epochs(d, K)
            assert math.ceil(beta(ep.max())) + 1 <= w, (K, T, ep.max(), w)


# ------------------------------------------------------------------------------ stated defaults
def _public_callables():
    """Every public function and method of the library's public modules, with its qualified name."""
    for m in pkgutil.walk_packages(jaxbandits.__path__, "jaxbandits."):
        if any(p.startswith("_") for p in m.name.split(".")[1:]):
            continue
        mod = importlib.import_module(m.name)
        for n, f in vars(mod).items():
            if n.startswith("_") or getattr(f, "__module__", None) != mod.__name__:
                continue
            objs = [(n, f)]
            if inspect.isclass(f):
                objs = [(f"{n}.{a}", v) for a, v in vars(f).items() if not a.startswith("_") and callable(v)]
            for qn, o in objs:
                try:
                    yield f"{mod.__name__}.{qn}", inspect.signature(o)
                except (TypeError, ValueError):
                    continue


def test_every_public_seed_defaults_to_zero():
    """Every stated default, every public function: a ``seed`` (or ``key`` given as a seed) left
    out is seed 0 (conventions, "Seeds": one seed in, same seed same result), in every module."""
    seen = {}
    for name, sig in _public_callables():
        for pn in ("seed", "key"):
            p = sig.parameters.get(pn)
            if p is not None and p.default is not inspect.Parameter.empty and p.default is not None:
                seen[f"{name}:{pn}"] = p.default
    assert len(seen) >= 15 and "jaxbandits.bayes.fit.delay_laws:seed" in seen, sorted(seen)
    assert {k: v for k, v in seen.items() if v != 0} == {}


def test_every_sbc_default_is_the_one_its_page_states():
    """Every stated default of the SBC functions: ``sbc``'s signature as docs/sbc.md writes it
    (parsed from the page), and the bins of every rank test (``rank_uniformity`` and each
    ``SBCResult`` method) the page's 10 equal bins."""
    page = (pathlib.Path(__file__).parents[1] / "docs" / "sbc.md").read_text()
    call = re.search(r"`(?:B\.)?sbc\(model, (.*?)\)`", page, re.S).group(1)
    stated = dict(kv.split("=") for kv in re.sub(r"\s+", " ", call).split(", "))
    sig = inspect.signature(CAL.sbc)
    assert len(stated) >= 12
    for k, v in stated.items():
        assert sig.parameters[k.strip()].default == eval(v), (k, v, sig.parameters[k.strip()].default)
    assert "binned in 10 equal bins" in page
    for f in (CAL.rank_uniformity, CAL.SBCResult.pvalues, CAL.SBCResult.passes, CAL.SBCResult.summary,
              CAL.SBCResult.plot):
        assert inspect.signature(f).parameters["n_bins"].default == 10, f.__qualname__


# --------------------------------------------------------------- stated settings and labels
def _built_panels(exp):
    built = exp.build(dict(exp.config))
    if isinstance(built, (list, tuple)) and built and isinstance(built[0], X.Panel):
        return list(built)
    env, ch, pols = built
    return [X.Panel(exp.name, env, ch, pols)]


def test_every_labels_stated_numbers_are_its_policys_parameters():
    """Every label of every registered experiment's panels (but bayes-ts-warm-start's, whose build
    fits a posterior: minutes): each ``name=value`` it states equals
    the field of its policy value so named (``a`` for ``alpha``: a field's first letters), and a
    stated ``+-N%`` is the policy's ``d`` that far from the panel's ``d`` (rounded)."""
    checked = pct = 0
    for name, exp in X.load_all().items():
        if exp.build is None or name == "bayes-ts-warm-start":  # its build fits a posterior (minutes)
            continue
        for panel in _built_panels(exp):
            for lab, pol in panel.policies.items():
                if not dataclasses.is_dataclass(pol):
                    continue
                fields = {f.name: getattr(pol, f.name) for f in dataclasses.fields(pol)}
                for k, v in re.findall(r"\b(\w+)=([\w.^]+)", lab):
                    match = [f for f in fields if f == k] or [f for f in fields if f.startswith(k)]
                    if len(match) != 1:
                        continue
                    got = fields[match[0]]
                    want = type(got)(v) if isinstance(got, (int, float)) and not isinstance(got, bool) else v
                    assert got == want, (name, panel.name, lab, match[0], got)
                    checked += 1
                for sign, n in re.findall(r"([+-])(\d+)%", lab):
                    d0 = int(re.search(r"\bd=(\d+)", panel.name).group(1))
                    assert fields["d"] == round(d0 * (1 + int(sign + n) / 100)), (name, panel.name, lab)
                    pct += 1
    assert checked >= 60 and pct >= 4, (checked, pct)  # 64 and 4 when written


def test_wang2021_settings_are_those_its_module_and_page_state():
    """Stated reproduction settings pinned: the alpha grid, the f set, T and the runs that the
    module docstring states (the paper gives none: ours), and Fig. 5's delays d that
    docs/reproductions/wang2021.md states, are its experiments' defaults."""
    doc = re.sub(r"\s+", " ", wang2021.__doc__)
    alphas = [int(a) for a in re.search(r"alpha in \{([^}]*)\}", doc).group(1).split(", ")]
    fs = [f.strip() for f in re.search(r"f in \{([^}]*)\}", doc).group(1).split(",")]
    runs = re.search(r"T = 1e5, (\d+) runs \(Figs. 2-4\) and (\d+) runs \(Fig. 5\)", doc)
    assert (alphas, fs) == ([2, 4, 6, 8], ["k", "k^2", "k^3", "2^k"])
    for fig in ("fig2", "fig3", "fig4"):
        e = X.get(f"wang2021-{fig}")
        assert (e.config["alphas"], e.config["fs"], e.horizon, e.runs) == (alphas, fs, 10**5, int(runs.group(1))), fig
    page = re.sub(r"\s+", " ", (pathlib.Path(__file__).parents[1] / "docs" / "reproductions" / "wang2021.md").read_text())
    ds = [int(d) for d in re.search(r"oblivious delays z ~ U\{\d+\.\.\d+\} \(d = (\d+)\) and U\{\d+\.\.\d+\} \(d = (\d+)\)",
                                    page).groups()]
    e5 = X.get("wang2021-fig5")
    assert (e5.config["ds"], e5.horizon, e5.runs) == (ds, 10**5, int(runs.group(2)))


# ------------------------------------------------------------------------ results: the two forms
def test_paired_moments_follow_every_case_of_the_two_forms():
    """Every case of a documented rule (docs/results.md, "The two forms"): results holding the
    curves of 2 of 4 runs and statistics over all 4 give a pair's moments from the statistics
    (against a float64 sum over the 4 runs) when the pair was recorded for that metric; a pair of
    policies not paired (other panels), or a metric not paired, falls back to the curves, which are
    too few: the clear error, never a KeyError."""
    rng = np.random.default_rng(0)
    runs, R = 4, 3
    x = {lab: rng.random((runs, R)) for lab in "ABC"}

    def mom(v):
        m = v.mean(0)
        return m[None], ((v - m) ** 2).sum(0)[None]

    def stats(lab, paired_with):
        return Stats(runs, np.array([float(runs)]), {"regret": mom(x[lab]), "reward": mom(-x[lab])},
                     {o: {"regret": mom(x[lab] - x[o])} for o in paired_with}, {"regret": x[lab][:, -1]})

    curves = {lab: {"regret": x[lab][:2], "reward": -x[lab][:2], "pulls": np.ones((2, R, 2))} for lab in "ABC"}
    r = Results("demo", {}, 0, runs, 30, np.array([10, 20, 30]), curves,
                stats={"A": stats("A", "B"), "B": stats("B", "A"), "C": stats("C", "")})
    assert not r.per_run
    n, m, m2 = r.moments("A", other="B")
    d = x["A"] - x["B"]
    assert n == runs and np.allclose(m, d.mean(0)) and np.allclose(m2, ((d - d.mean(0)) ** 2).sum(0))
    for kw in ({"other": "C"}, {"metric": "reward", "other": "B"}):
        with pytest.raises(ValueError, match="the results hold the curves of 2 of 4 runs and no statistics"):
            r.moments("A", **kw)


# ------------------------------------------------------------------ stated ranges at their bounds
class _Stop(Exception):
    """Raised by :class:`_StopSweep` at a runner's first simulation: every check passed."""


class _StopSweep:
    """A sweep that stops at the first simulation (the runner's checks come before it)."""

    def simulate(self, *args, **kwargs):
        raise _Stop

    simulate_grid = simulate


def _stated_integer_ranges(heavy):
    """``(experiment, key, lo, hi, top)`` of every ``integer(s) in [lo, hi]`` stated in a registered
    sweep's ranges; ``top``: whether the top bound is tried (not when it sizes arrays, the horizon
    keys and the arms, unless ``heavy``)."""
    pat = re.compile(r"\bintegers? in \[(\d+(?:\*\*\d+)?), (\d+(?:\*\*\d+)?)\]")
    for name, exp in X.load_all().items():
        if exp.runner is None:
            continue
        for k, words in exp.ranges.items():
            m = pat.search(words)
            if m:
                lo, hi = (int(eval(g)) for g in m.groups())
                yield exp, k, lo, hi, heavy or not (k in exp.horizon_keys or k in ("horizon", "n_arms"))


def _check_stated_ranges(heavy):
    tried = 0
    for exp, k, lo, hi, top in _stated_integer_ranges(heavy):
        for v, ok in ((lo, True), (lo - 1, False)) + (((hi, True), (hi + 1, False)) if top else ()):
            cfg = dict(exp.config)
            cfg[k] = [v] if isinstance(cfg[k], list) else v
            if ok:
                with pytest.raises(_Stop):
                    exp.runner(cfg, 1, 0, None, _StopSweep())
            else:
                with pytest.raises(ValueError, match=rf"^{k} must be {'>=' if v < lo else '<='}"):
                    exp.runner(cfg, 1, 0, None, _StopSweep())
            tried += 1
    return tried


def test_every_stated_integer_range_of_a_sweep_is_its_check_at_both_bounds():
    """Every stated range tried at the bound: each ``integers in [lo, hi]`` that a registered
    sweep states (``jaxbandits show NAME``) is accepted at ``lo`` and ``hi`` (the runner reaches its
    first simulation, stopped there) and refused at ``lo - 1`` and ``hi + 1`` with the parameter
    named; the top bounds that size arrays (horizons, arms) are tried in the slow test below."""
    assert _check_stated_ranges(False) >= 18  # 18 when written


@pytest.mark.slow
def test_every_stated_integer_range_of_a_sweep_is_its_check_at_both_bounds_arrays_included():
    """As above, with the top bounds that build arrays of 2**24 rounds or 2**20 arms (about 20 s)."""
    assert _check_stated_ranges(True) >= 32  # 32 when written


# ----------------------------------------------------------- every runner's bookkeeping, fast
class _Placeholders(Sweep):
    """A sweep that computes no unit: each simulation gives zeros of its form (what a part of a
    split sweep reads for a unit another part computes), each fit or law unit nothing."""

    def __init__(self):
        super().__init__(CallCache(None))

    def unit(self, fingerprint, compute, *, placeholder=lambda: None, **kwargs):
        return placeholder()




def test_every_registered_runner_gives_a_well_formed_result_of_its_experiment():
    """Every registered sweep runs its own bookkeeping in the fast suite (no unit computed: zeros
    of each simulation's form): the result names its experiment, holds the config and seed it was
    given, and each swept series (finals, bounds, extras) has one entry per swept value."""
    seen = 0
    for name, exp, cfg in tiny_runner_configs():
        res = exp.runner(dict(cfg), 2, 7, None, _Placeholders())
        assert (res.experiment, res.seed) == (name, 7) and isinstance(res.config, dict), (name, res.experiment)
        assert {k: res.config[k] for k in cfg} == cfg, name
        if isinstance(res, SweepResults):
            n = len(res.x)
            assert n >= 2 and res.finals, (name, res.x)
            for lab, f in res.finals.items():
                assert all(a is not None and a.shape == (2,) for a in f), (name, lab)  # every swept value, each run
            for k, v in res.extra.items():
                assert not isinstance(v, list) or len(v) == n, (name, k, v)
        seen += 1
    assert seen >= 6


# ------------------------------------------------------------------------ exit codes of every path
def test_every_process_of_a_distributed_run_exits_zero_and_only_process_0_reports(tmp_path, monkeypatch, capsys):
    """Exit codes of every path of ``jaxbandits run`` that a run reaches (the run itself stood in):
    each process of a distributed run exits 0, process 0 after writing the report and the others
    without (docs/cluster.md: process 0 writes); a part exits 0 with its line."""
    reports = []
    monkeypatch.setattr(DIST, "initialize", lambda *a: None)
    monkeypatch.setattr(X, "run", lambda *a, **k: Results("quickstart", {}, 0, 2, 8, np.array([8]),
                                                            {"p": {"regret": np.zeros((2, 1))}}))
    monkeypatch.setattr(cli, "report_result", lambda res, out, cache: reports.append(res) or 0)
    base = ["run", "quickstart", "--no-progress", "--no-compile-cache", "--single-device"]
    for pid in (0, 1, 2):
        monkeypatch.setattr(DIST, "process_index", lambda: pid)
        rc = cli.main(base + ["--out", str(tmp_path / "d"), "--distributed", "--coordinator", "localhost:1",
                              "--num-processes", "3", "--process-id", str(pid)])
        assert rc == 0 and len(reports) == 1, (pid, rc, reports)
    assert cli.main(base + ["--out", str(tmp_path / "p"), "--part", "1/2"]) == 0 and len(reports) == 1
    assert "part 1/2" in capsys.readouterr().out


# ---------------------------------------------------------------------- a default grid at its bound
def test_the_ppc_default_age_grid_spans_the_logs_ages_at_every_size():
    """Every bound at the bound: the default age grid of :func:`ppc_curves` runs from 1 to the
    log's largest age rounded (past it by half a round at most), with two ages at least (1 and 2)
    when every age is below 2; checked on logs whose largest age is 0.7, 1.4, 1.6, 2.6 and 37.2 (a
    posterior of 20 draws stood in: the grid reads only the log), each curve one value per age."""
    rng = np.random.default_rng(0)
    idata = az.from_dict(posterior={"p": rng.uniform(0.1, 0.3, (1, 20, 2)), "delay_mean": rng.uniform(5, 10, (1, 20))})
    idata.posterior.attrs.update({"model": "exponential", "window": "none", "discrete": 0})
    for top in (0.7, 1.4, 1.6, 2.6, 37.2):
        log = bayes.conversion_log([0, 1, 0, 1], [0.0, 0.3, 0.1, 0.2], [np.nan] * 4, [top] * 4, 2)
        c = ppc.ppc_curves(idata, log, n_draws=3)
        ages = c["ages"]
        assert ages[0] == 1 and ages[-1] == max(round(top), 2) and ages[-1] - max(top, 2) <= 0.5, (top, ages)
        assert np.all(np.diff(ages) > 0) and c["observed"].shape == (2, ages.size)
        assert c["replicated"].shape == (3, 2, ages.size)


def test_histogram_laws_refuse_one_entry_past_their_stated_cap():
    """Every bound at the bound (``MAX_HISTOGRAM = 2**24`` as docs and docstrings state it): a pmf
    of 2**24 + 1 entries and a sample of 2**24 rounds are refused, naming the cap, before any table
    is built (the acceptance at the cap itself builds 2**24-entry tables: the slow test below)."""
    L = 2**24
    with pytest.raises(ValueError, match=r"at most MAX_HISTOGRAM = 2\*\*24 = 16777216 entries, got 16777217"):
        D.histogram(np.broadcast_to(np.float32(1.0), (L + 1,)))  # a view: nothing allocated
    with pytest.raises(ValueError, match=r"samples must be < MAX_HISTOGRAM = 2\*\*24 = 16777216"):
        D.from_samples(np.array([0, L]))
    assert D.MAX_HISTOGRAM == L


@pytest.mark.slow
def test_histogram_laws_accept_their_stated_cap():
    """The other side of the bound (about 10 s): a pmf of 2**24 entries and samples up to
    2**24 - 1 give laws of that length."""
    L = 2**24
    pmf = np.zeros(L, np.float32)
    pmf[[0, L - 1]] = 1.0
    law = D.histogram(pmf)
    assert law.support_max == L - 1 and float(law.cdf(jnp.asarray(L - 2))) == pytest.approx(0.5)
    assert D.from_samples(np.array([0, L - 1])).support_max == L - 1


# -------------------------------------------------------------- the fused calendar at uneven sizes
@pytest.mark.slow
def test_fused_kernel_replays_the_scan_at_uneven_packed_sizes_with_a_tau_table_law():
    """Uneven sizes of a packed layout, and the early rounds of a tau-table law: nine arms (two full
    calendar words of four arms and a third with one), a Weibull law (its Ñ summed from the
    tau table, over lags before round 0 in the first rounds) and a window larger than the arms.
    Fed the scan path's uniforms, the fused kernel takes the scan's actions in nearly every run
    (the tau-table sum adds in another order than the scan's product: a near tie may resolve the
    other way, as tests/test_fused.py allows; here every run agreed when written) and its rewards where it does. Slow: about 35 s
    (an interpret-mode kernel on the CPU)."""
    law = D.weibull(0.7, 6.0)
    theta = [0.6, 0.55, 0.5, 0.45, 0.4, 0.35, 0.3, 0.25, 0.2]  # arm 0, played first, the best
    env, ch = envs.conversions(theta, law), C.conversions(window=15)
    key, N, T = jax.random.key(11), 32, 120
    scan = jaxbandits.simulate(env, ch, CV.delayed_ucb(law, 15), T, key, N, record=10, path="scan", keep="all")
    rep = FP.simulate_fused(env, ch, CV.delayed_ucb(law, 15), T, key, N, record=10, keep="all",
                            replay=FP.scan_uniforms(key, N, T))
    same = (rep.pulls == scan.pulls).all(axis=(1, 2))
    assert same.mean() >= 0.9, same.mean()  # 1.0 when written
    np.testing.assert_array_equal(rep.reward[same], scan.reward[same])
    assert (rep.pulls[:, -1, 8] > 0).all()  # the arm alone in the third word is played
