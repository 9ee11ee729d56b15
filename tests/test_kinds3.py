"""Checks of the *kinds* that random mutants showed missing, third part (docs/contributing.md,
"Mutation testing"; the first two parts are tests/test_kinds.py and tests/test_kinds2.py): each
test is a kind of check applied to every case it covers, not a test aimed at one mutated line.

* every bound at the bound: every range a policy constructor's docstring states, tried at the
  bound and one step outside;
* stated defaults and settings read from the pages that state them (every reproduction's
  checkpoints and grids, every default a docs call writes, sibling functions' defaults, the
  Poisson table's length and the tail it claims);
* an estimate against an independent computation (auto_chunk against the bytes of a real chunk's
  record arrays; where every NUTS fit starts, from the log's own counts; a sweep's calendar widths
  against the delays they hold; the fused lowering report's unpadded bytes from its padded ones,
  at run counts the block does not divide);
* error messages read whole (every slot of a file whose kind returns the wrong thing; where an
  error says "given by --set" and where it does not);
* every derived key distinct (an SVI fit's keys across seeds);
* a figure's data read back (the PPC figure's band and curves from its artists);
* every documented form run once (each ``--policy`` target the docs' ``evaluate`` lines write);
* every execution path run once end to end (an experiment on the fused path, interpreted; a grid
  of runs on two forced host devices at uneven run counts: both slow).
"""
import ast
import importlib
import importlib.util
import inspect
import json
import math
import os
import pathlib
import re
import shlex
import subprocess
import sys
import textwrap
import types

import jax
import matplotlib.figure
import numpy as np
import numpyro.infer
import numpyro.infer.autoguide
import pytest
import scipy.stats as S

import jaxbandits
import jaxbandits.engine.loop as LOOP
import jaxbandits.experiments as X
from jaxbandits import bayes, channels as C, envs, ope
from jaxbandits.apps import cli
from jaxbandits.bayes import ppc
from jaxbandits.core import delays as D
from jaxbandits.core.values import is_policy
from jaxbandits.engine import memory as MEM, reduce as RD
from jaxbandits.experiments import files as F
from jaxbandits.experiments.sweeping import CallCache, Sweep
from jaxbandits.ope import command as OPECMD
from jaxbandits.policies import adversarial, anonymous, bayes as PB, classic, composite, conversions, explore, linear

ROOT = pathlib.Path(__file__).parents[1]
FIT = importlib.import_module("jaxbandits.bayes.fit")  # the module (the package's ``fit`` is the function)
POLICY_MODULES = (adversarial, anonymous, PB, classic, composite, conversions, explore, linear)


# ------------------------------------------------------------------------- every bound at the bound
_NUM = r"(-?[\d.]+(?:e[+-]?\d+)?)"


def _stated_ranges(doc):
    """(parameter, lo, lo_open, hi, hi_open, integer) for every ``Args:`` line of a docstring that
    states one range of its parameter: ``>= a``, ``> a``, ``|x| <= b``, ``[a, b]``, ``(a, b]``..."""
    for name, text in re.findall(r"^    (\w+): (.*)$", doc, re.M):
        if re.search(r"\bwith\b|\bor\b", text):  # conditional or alternative forms: not one range
            continue
        integer = "integer" in text
        spans = re.findall(r"``([^`]*)``", text)
        got = []
        for s in spans:
            if m := re.fullmatch(rf"(?:\w+ )?(>=|>) {_NUM}", s):
                got.append((float(m[2]), m[1] == ">", None, False))
            elif m := re.fullmatch(rf"\|\w+\| <= {_NUM}", s):
                got.append((-float(m[1]), False, float(m[1]), False))
            elif m := re.fullmatch(rf"([\[(]){_NUM}, {_NUM}([\])])", s):
                got.append((float(m[2]), m[1] == "(", float(m[3]), m[4] == ")"))
        if len(got) == 1:
            yield (name, *got[0], integer)


def _policy_constructors():
    for mod in POLICY_MODULES:
        for n, f in vars(mod).items():
            if not n.startswith("_") and inspect.isfunction(f) and f.__module__ == mod.__name__:
                yield f"{mod.__name__}.{n}", f


def _outside(b, below, integer):
    if integer:
        return int(b) - 1 if below else int(b) + 1
    step = max(abs(b), 1.0) * 1e-6
    return b - step if below else b + step


def test_every_stated_policy_range_is_refused_one_step_outside_and_accepted_at_the_bound():
    """Every bound at the bound, every policy constructor: each range its docstring states for a
    parameter (``an integer >= 1``, ``> 0``, ``|prior_mean| <= 1e30``, ``in [0, 1]``, ``(0, 1]``)
    is the one it checks: a closed end is accepted and one step past it (1 for an integer, 1e-6
    relative for a real) refused with a ValueError naming the parameter; an open end is refused
    and one step inside accepted. Constructors that need other arguments are left out."""
    checked = set()
    for qn, f in _policy_constructors():
        sig = inspect.signature(f)
        if any(p.default is inspect.Parameter.empty and p.kind is not p.VAR_KEYWORD
               for p in sig.parameters.values()):
            continue  # needs arguments a range check cannot choose
        try:
            f()
        except (TypeError, ValueError):
            continue  # its defaults alone are not a policy (e.g. a law to be given)
        for name, lo, lo_open, hi, hi_open, integer in _stated_ranges(inspect.getdoc(f) or ""):
            if name not in sig.parameters:
                continue
            d = sig.parameters[name].default
            integer = integer or (isinstance(d, int) and not isinstance(d, bool))  # an int default: counted
            ends = [(lo, lo_open, True)] + ([(hi, hi_open, False)] if hi is not None else [])
            for b, is_open, lower in ends:
                bound = int(b) if integer else b
                out = _outside(b, lower, integer)
                inside = _outside(b, not lower, integer)
                refused, accepted = ([bound], [inside]) if is_open else ([out], [bound])
                for v in refused:
                    with pytest.raises(ValueError, match=rf"\b{name}\b"):
                        f(**{name: v})
                for v in accepted:
                    try:
                        f(**{name: v})
                    except Exception as e:  # noqa: BLE001 - report which end was refused
                        pytest.fail(f"{qn}({name}={v!r}) refused at its stated bound: {e}")
                checked.add(f"{qn}:{name}")
    assert {"jaxbandits.policies.bayes.beta_ts:window", "jaxbandits.policies.classic.gaussian_thompson:prior_mean",
            "jaxbandits.policies.bayes.delay_model_ts:window"} <= checked, sorted(checked)
    assert len(checked) >= 20, sorted(checked)


# --------------------------------------------------------------- stated settings, read from pages
def _stated_checkpoints(section):
    """Every checkpoint sequence a page section states: ``R(a) / R(b) / ...`` in its text, a table
    header of ``R(a)`` cells, or a ``| policy | a | b | ... |`` header of round numbers."""
    for m in re.finditer(r"R\((\d+)\)\**(?:\s*/\s*\**R\(\d+\)\**)+", section):
        yield tuple(int(t) for t in re.findall(r"R\((\d+)\)", m[0]))
    for row in re.findall(r"^\|(.*)\|\s*$", section, re.M):
        cells = [c.strip() for c in row.split("|")]
        rs = [int(m[1]) for c in cells if (m := re.fullmatch(r"R\((\d+)\)", c))]
        if len(rs) >= 3:
            yield tuple(rs)
        if cells[0] in ("policy", "panel: policy"):
            ns = [int(c) for c in cells[1:] if c.isdigit()]
            if len(ns) >= 3:
                yield tuple(ns)


def test_every_reproductions_stated_checkpoints_are_its_registered_ones():
    """Stated settings pinned, every reproduction page: each checkpoint sequence a section of
    docs/reproductions/*.md reports (``R(500) / R(1000) / ...``, a table of ``R(t)`` columns or of
    round columns) is the registered checkpoints of the figure its heading names (``Figure 3``,
    ``Fig. 3(a)``), or of one of the paper's experiments where the heading names none; and
    App. F's ``E[tau]`` columns are pikeburke2018-appF's delay grid."""
    exps = X.load_all()
    mapped = unmapped = 0
    for page in sorted((ROOT / "docs" / "reproductions").glob("*.md")):
        stem = page.stem
        ours = {n: e for n, e in exps.items() if n.startswith(stem + "-")}
        for section in re.split(r"^## ", page.read_text(), flags=re.M)[1:]:
            head = section.splitlines()[0]
            fig = re.search(r"\b(?:Figure|Fig\.) (\d+)(?: ?\((\w)\))?", head)
            for cps in _stated_checkpoints(section):
                if fig:
                    name = f"{stem}-fig{fig[1]}{fig[2] or ''}"
                    assert tuple(exps[name].checkpoints) == cps, (page.name, head, cps, exps[name].checkpoints)
                    mapped += 1
                else:
                    assert any(tuple(e.checkpoints) == cps for e in ours.values()), (page.name, head, cps)
                    unmapped += 1
    assert mapped >= 5 and unmapped >= 1, (mapped, unmapped)
    appf = (ROOT / "docs" / "reproductions" / "pikeburke2018.md").read_text().split("## Appendix F")[1]
    grid = re.search(r"^\| E\[τ\] \|(.*)\|\s*$", appf, re.M)[1]
    stated = [int(c) for c in grid.split("|") if c.strip().isdigit()]
    assert exps["pikeburke2018-appF"].config["delays"] == stated and len(stated) == 6


def _literal(node):
    """A literal keyword value; of alternatives written ``"naive" | "closed"``, the first."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return _literal(node.left)
    return ast.literal_eval(node)


def _doc_calls():
    """(page, callable, keywords) for every call ``Alias.func(k=literal, ...)`` (keywords only) in
    the python blocks of docs/, the alias resolved through the block's jaxbandits imports."""
    for page in sorted((ROOT / "docs").rglob("*.md")):
        for block in re.findall(r"```python\n(.*?)```", page.read_text(), re.S):
            try:
                tree = ast.parse(block)
            except SyntaxError:
                continue
            alias = {}
            for n in ast.walk(tree):
                if isinstance(n, ast.ImportFrom) and (n.module or "").startswith("jaxbandits"):
                    alias.update({a.asname or a.name: (n.module, a.name) for a in n.names})
            for n in ast.walk(tree):
                if not (isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
                        and isinstance(n.func.value, ast.Name) and n.func.value.id in alias
                        and not n.args and n.keywords):
                    continue
                mod, nm = alias[n.func.value.id]
                owner = getattr(importlib.import_module(mod), nm, None)
                if owner is None:  # a submodule not imported yet
                    owner = importlib.import_module(f"{mod}.{nm}")
                try:
                    kws = {k.arg: _literal(k.value) for k in n.keywords}
                except ValueError:
                    continue  # a keyword given a name, not a literal: an example, not a signature
                yield page.relative_to(ROOT), getattr(owner, n.func.attr), kws


def test_every_default_a_docs_call_writes_is_the_signatures():
    """Stated defaults pinned against the pages that state them: every call the docs' python
    blocks write with keyword literals (``PB.delay_model_ts(window=255, model="exponential", ...)``,
    ``PB.beta_ts(mode="naive" | "closed", window=255)``, ``W.ars_ucb(alpha=4.0, f="k^2")``) gives
    each parameter that has a default its default (a parameter without one, e.g. a law's ``mean``
    whose default ``None`` means "required", takes any value)."""
    checked = set()
    for page, f, kws in _doc_calls():
        sig = inspect.signature(f)
        for k, v in kws.items():
            p = sig.parameters[k]  # a keyword the function lacks would be a wrong page too
            if p.default is inspect.Parameter.empty or p.default is None:
                continue
            assert v == p.default, (str(page), f.__qualname__, k, v, p.default)
            checked.add(f"{f.__qualname__}:{k}")
    assert {"delay_model_ts:window", "beta_ts:window", "delay_model_ts:refresh", "ars_ucb:alpha"} <= checked, checked
    assert len(checked) >= 12, sorted(checked)


def test_sibling_plot_and_figure_functions_share_their_defaults():
    """Stated defaults agree between siblings: every ``plot_X`` (which writes a file) and its
    ``figure_X`` (which returns the figure) in the same module give every parameter they share the
    same default (``t0`` of the ratio figure, ``bands``, ``logx``...)."""
    pairs = 0
    for m in ("jaxbandits.report.plotting", "jaxbandits.bayes.ppc", "jaxbandits.bayes.report"):
        mod = importlib.import_module(m)
        for n, plot in vars(mod).items():
            fig = getattr(mod, "figure_" + n[len("plot_"):], None) if n.startswith("plot_") else None
            if fig is None:
                continue
            a, b = inspect.signature(plot).parameters, inspect.signature(fig).parameters
            shared = set(a) & set(b)
            assert {k: a[k].default for k in shared} == {k: b[k].default for k in shared}, (m, n)
            pairs += 1
    assert pairs >= 3, pairs


# ------------------------------------------------------------- against an independent computation
@pytest.mark.slow  # a simulation's compile: 16 s on the shared 2-core machine
def test_auto_chunk_counts_the_bytes_of_a_real_chunks_records(monkeypatch):
    """An estimate against an independent computation: the bytes per record point and run of the
    record arrays a real chunk returns (every field, a delayed channel so that every field is
    there, two policies on three arms) are what :func:`auto_chunk` counts, so its chunks are the
    rounds that fit ``CHUNK_RECORD_BYTES``, exactly; for uneven sizes (runs, horizons, record
    points that divide nothing)."""
    seen = []
    real = LOOP.compiled

    def spy(name, *a, **k):
        exe, dt = real(name, *a, **k)
        if name != "chunk":
            return exe, dt

        def run(*x):
            out = exe(*x)
            seen.append(out[1])
            return out
        return run, dt
    monkeypatch.setattr(LOOP, "compiled", spy)
    K, S, runs = 3, 2, 3
    pols = {"a": classic.ucb1(), "b": classic.ucb1(alpha=1.0)}
    jaxbandits.simulate(envs.bernoulli([0.2, 0.5, 0.6]), C.conversions(window=2), pols, 6, 0, n_runs=runs,
                        keep="none", record=S)
    per_point = sum(leaf.nbytes for leaf in jax.tree.leaves(seen[-1]))
    lead = {leaf.shape[:2] for leaf in jax.tree.leaves(seen[-1])}
    assert len(lead) == 1
    n_rec, runs_pad = lead.pop()
    per_point //= n_rec * runs_pad  # bytes of all policies' records per record point and run
    for n_runs, T, R in [(10**6, 10_000, 200), (333_333, 77_777, 97), (5 * 10**5, 131_071, 1000)]:
        total = per_point * n_runs * R
        want = None if total <= RD.CHUNK_RECORD_BYTES else max(1, T * RD.CHUNK_RECORD_BYTES // total)
        assert MEM.auto_chunk([K] * len(pols), n_runs, T, R) == want, (n_runs, T, R, per_point)


# ------------------------------------------------------------------------ error messages read whole
_FILE = """\
horizon = 100
runs = 2
world = {kind = "envs.bernoulli", means = [0.5, 0.4]}
channel = {kind = "channels.attributed"}

[policies]
UCB1 = {kind = "classic.ucb1"}
"""
_WORLD = '{kind = "envs.bernoulli", means = [0.5, 0.4]}'
_CHANNEL = '{kind = "channels.attributed"}'


def _load(path, text, sets=None):
    path.write_text(text)
    exp = F.experiment(str(path), sets)
    exp.build(dict(exp.config))


@pytest.mark.parametrize("line, key, old, new, got, want", [
    (3, "world", _WORLD, _CHANNEL, "Attributed", "a world (a jaxbandits.World)"),
    (4, "channel", "channel = " + _CHANNEL, "channel = " + _WORLD, "BanditEnv",
     "a channel (a jaxbandits.channels.Channel)"),
    (7, "policies.UCB1", '{kind = "classic.ucb1"}', _CHANNEL, "Attributed", "a policy (a jaxbandits.Policy)"),
])
def test_every_slot_whose_kind_returns_the_wrong_thing_is_refused_read_whole(tmp_path, line, key, old, new, got, want):
    """An error message read whole, every slot of an experiment file (world, channel, a policy):
    a kind that returns another component is refused with the file, the line and the key of that
    slot, the kind and what it returned: nothing else, nothing missing."""
    f = tmp_path / "e.toml"
    text = _FILE.replace(old, new, 1)
    kind = re.search(r'kind = "([\w.]+)"', new)[1]
    with pytest.raises(F.FileError) as e:
        _load(f, text)
    assert str(e.value) == f"{f}, line {line}, key {key}: {kind} returned a {got}, not {want}"


def test_given_by_set_is_said_exactly_of_the_keys_set_gave(tmp_path):
    """An error message read whole, both ways: an error at a key says "(given by --set)" when
    ``--set`` gave that key (or a key inside it), and not when ``--set`` gave other keys only."""
    f = tmp_path / "e.toml"
    bad_h = _FILE.replace("horizon = 100", "horizon = 0")
    plain = f"{f}, line 1, key horizon: must lie in [1, 16777216], got 0"
    for sets in (None, {"runs": 3}, {"world.means": [0.5, 0.4]}, {"policies.UCB1.alpha": 2.0}):
        with pytest.raises(F.FileError) as e:
            _load(f, bad_h, sets)
        assert str(e.value) == plain, sets
    with pytest.raises(F.FileError) as e:
        _load(f, bad_h, {"horizon": 0, "runs": 3})
    assert str(e.value) == plain.replace("key horizon:", "key horizon (given by --set):")


class _Recording(Sweep):
    """A sweep that computes no unit (each simulation gives zeros of its form) and records every
    grid simulation's grid, channel and horizon."""

    def __init__(self):
        super().__init__(CallCache(None))
        self.calls = []

    def unit(self, fingerprint, compute, *, placeholder=lambda: None, **kwargs):
        return placeholder()

    def simulate_grid(self, build, grid, channel, horizon, *a, **k):
        self.calls.append((build, grid, channel, horizon))
        return super().simulate_grid(build, grid, channel, horizon, *a, **k)


def test_heavy_tail_calendars_hold_exactly_their_delays_and_the_widest_is_reported():
    """A width against an independent computation, every swept horizon and delay model: the
    calendar of each untruncated-delay policy (DEW's two forms) is the least that holds every delay
    of its runs, ``min(T, max delay + 1)`` (a delay of ``T`` never arrives), read from the delays
    the grid passes; and the width the result reports is the widest calendar of all its runs."""
    exp = X.get("thune2019-heavy-tail")
    cfg = dict(exp.config, log2_T=[3, 4, 5])
    sweep = _Recording()
    res = exp.runner(cfg, 3, 7, None, sweep)
    dew = 0
    for build, grid, ch, T in sweep.calls:
        _, pol = build(**{k: np.asarray(v)[0] for k, v in grid.items()})
        if type(pol).__name__ == "DEW":
            assert ch.width == min(T, int(np.max(grid["delays"])) + 1), (T, ch.width, int(np.max(grid["delays"])))
            dew += 1
    assert dew == 2 * 2 * 3, dew  # two DEW forms, two models, three horizons
    assert res.width == max(ch.width for _, _, ch, _ in sweep.calls)


class _Started(Exception):
    pass


def _logit(p):
    return np.log(p / (1 - p))


@pytest.mark.parametrize("hierarchical", [False, True])
def test_every_nuts_fit_starts_where_its_docstring_says_from_the_logs_counts(monkeypatch, hierarchical):
    """Starting values against an independent computation from the log's own rows (conversions
    seen and plays per arm, counted with numpy): each arm's rate ``clip((S_k + 1) / (N_k + 2),
    1e-3, 0.9)``; the hierarchical model's population mean the logit of the pooled rate so
    clipped, spread 0.5, each arm's offset the clipped logit offset ``clip((logit p_k - mu) / 0.5,
    -2, 2)``; arms at both clips (a rate near 0 and one near 1) included."""
    log = bayes.synthetic_log([0.002, 0.3, 0.97, 0.6], 400, 200.0, 260.0, mean=5.0, seed=3)
    seen = []

    def stop(values, **kw):
        seen.append(values)
        raise _Started
    monkeypatch.setattr(FIT, "init_near", stop)
    with pytest.raises(_Started):
        bayes.fit(log, hierarchical=hierarchical, num_warmup=1, num_samples=1, num_chains=1)
    v = seen[0]
    S = np.bincount(log.arm[~np.isnan(log.conversion_time)], minlength=4).astype(float)
    N = np.bincount(log.arm, minlength=4).astype(float)
    p_k = np.clip((S + 1) / (N + 2), 1e-3, 0.9)
    assert p_k.min() < 0.01 and p_k.max() == 0.9  # both clips reached
    if not hierarchical:
        np.testing.assert_allclose(v["p"], p_k, rtol=1e-6)
        return
    mu = _logit(np.clip((S.sum() + 1) / (N.sum() + 2), 1e-3, 0.9))
    np.testing.assert_allclose([v["p_mu"], v["p_sd"]], [mu, 0.5], rtol=1e-6)
    np.testing.assert_allclose(v["p_z"], np.clip((_logit(p_k) - mu) / 0.5, -2, 2), rtol=1e-5, atol=1e-6)


# -------------------------------------------------------------------------- every derived key distinct
def test_every_key_an_svi_fit_derives_is_distinct_across_seeds(monkeypatch):
    """Every derived key distinct: the keys an SVI fit derives from its seed (the fit's and the
    posterior draws') are distinct within a fit, and each kind distinct across seeds of both
    parities and the largest seed (no two seeds share a draw key). The optimisation and the draws
    are stood in (each fit stops at its draws): only the keys are read."""
    real = FIT.V.seed_key
    keys = []

    def spy(x, *a, **k):
        key = real(x, *a, **k)
        keys.append(tuple(np.asarray(jax.random.key_data(key)).ravel().tolist()))
        return key

    def draws(self, key, *a, **k):
        raise _Started
    monkeypatch.setattr(FIT.V, "seed_key", spy)
    monkeypatch.setattr(numpyro.infer.SVI, "run", lambda self, *a, **k: types.SimpleNamespace(params={}, losses=[0.0]))
    monkeypatch.setattr(numpyro.infer.autoguide.AutoMultivariateNormal, "sample_posterior", draws)
    log = bayes.synthetic_log([0.2, 0.5], 60, 50.0, 60.0, mean=5.0, seed=1)
    seeds = [0, 1, 2, 3, 64, 2**32, 2**64 - 1]
    per = []
    for sd in seeds:
        keys.clear()
        with pytest.raises(_Started):
            bayes.fit(log, method="svi", seed=sd)
        assert len(keys) == 2 and len(set(keys)) == 2, (sd, keys)  # the fit's key, the draws' key
        per.append(keys[:])
    for i in range(2):
        assert len({k[i] for k in per}) == len(seeds), (i, per)


# ------------------------------------------------------------------ every documented form run once
def _documented_commands(word):
    """Every ``jaxbandits WORD ...`` command line in the docs' code blocks (continuations joined)."""
    for page in sorted((ROOT / "docs").rglob("*.md")):
        for block in re.findall(r"```\w*\n(.*?)```", page.read_text(), re.S):
            for line in block.replace("\\\n", " ").splitlines():
                line = line.split("  #")[0].strip()
                if line.startswith(f"jaxbandits {word} "):
                    yield page.relative_to(ROOT), shlex.split(line)[1:]


def test_every_documented_evaluate_policy_form_gives_its_target():
    """Every documented form run once: each ``--policy`` target that an ``evaluate`` command line of
    the docs writes (``arm:LABEL``, ``probs:...``, ``uniform``, a library policy's kind such as
    ``conversions.delayed_klucb`` with the line's ``--delay``), parsed by the command's own parser,
    gives a target: a fixed law of the log's arms summing to 1, or a policy (replayed)."""
    log = ope.decision_log(arm=["green", "red", "blue", "red"], time=[0, 1, 2, 3], propensity=[1 / 3] * 4,
                           conversion_time=[float("nan"), 2.5, float("nan"), float("nan")], end=5,
                           arms=["green", "red", "blue"])
    forms = set()
    for page, argv in _documented_commands("evaluate"):
        args = cli.parser().parse_args(argv)
        delay = OPECMD.parse_delay(args.delay) if getattr(args, "delay", None) else None
        for spec in args.policy:
            t = OPECMD.parse_policy(spec, log, delay)
            if t.policy is None:
                assert t.probs.shape == (3,) and abs(t.probs.sum() - 1) < 1e-12, (str(page), spec)
            else:
                assert is_policy(t.policy) and t.channel is not None, (str(page), spec)
            forms.add(re.split(r"[:\s]", spec)[0])
    assert {"arm", "probs", "uniform", "conversions.delayed_klucb"} <= forms, forms


# ---------------------------------------------------------------------- a figure's data read back
def test_the_ppc_figures_band_and_curves_read_back_from_its_artists(monkeypatch, tmp_path):
    """A figure's data read back: the posterior predictive figure, drawn from given curves (two
    arms, uneven ages), holds in each panel the data's curve at (ages, observed), the replicated
    curves at (ages, each draw), and a 5-95% band whose vertices at each age are that age's 5% and
    95% percentiles of the draws (step ``post``: the band may also hold the previous age's value)."""
    figs = []
    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", lambda self, *a, **k: figs.append(self))
    rng = np.random.default_rng(5)
    ages = np.array([1.0, 2.0, 3.0, 5.0, 8.0, 13.0])
    rep = np.sort(rng.uniform(0, 0.4, (7, 2, ages.size)), axis=-1)
    obs = np.sort(rng.uniform(0, 0.4, (2, ages.size)), axis=-1)
    log = bayes.conversion_log([0, 1, 0, 1], [0.0, 0.3, 0.1, 0.2], [np.nan] * 4, [20.0] * 4, 2)
    curves = {"ages": ages, "observed": obs, "replicated": rep, "plays": 4, "draws": np.arange(7)}
    ppc.plot_ppc(None, log, tmp_path / "ppc.png", curves=curves)
    axes = figs[0].axes
    for k in range(2):
        ax = axes[k]
        lines = [(np.asarray(ln.get_xdata(), float), np.asarray(ln.get_ydata(), float)) for ln in ax.lines]
        assert len(lines) == 8  # 7 draws, the data
        for (x, y), want in zip(lines, list(rep[:, k]) + [obs[k]]):
            np.testing.assert_array_equal(x, ages)
            np.testing.assert_array_equal(y, want)
        (band,) = ax.collections
        v = np.concatenate([p.vertices for p in band.get_paths()])
        lo, hi = np.percentile(rep[:, k], [5, 95], axis=0)
        assert set(np.round(v[:, 0], 9)) == set(ages), (k, v[:, 0])
        for i, a in enumerate(ages):
            ys = v[v[:, 0] == a, 1]
            assert np.isclose(ys, lo[i]).any() and np.isclose(ys, hi[i]).any(), (k, a, ys, lo[i], hi[i])


# ------------------------------------------------------------- a law's fields as its docstring states
def test_the_poisson_table_is_the_length_its_docstring_states_and_holds_its_claimed_mass():
    """A stated setting pinned, every field of the law: the table length written in
    :func:`poisson`'s docstring (``lam + A sqrt(lam) + B``, read from it) is the law's
    ``table_len`` for means across the range, the bound ``MAX_POISSON_MEAN`` included, and a
    traced mean gets the length of that largest mean; the mass past the table is below the 1e-12
    the docstring claims (scipy)."""
    a, b = map(float, re.search(r"``lam \+ (\d+) sqrt\(lam\) \+ (\d+)``", D.poisson.__doc__).groups())
    want = lambda lam: math.ceil(lam + a * math.sqrt(lam) + b)
    for lam in (1e-3, 0.3, 1.0, 4.0, 37.5, 250.0, D.MAX_POISSON_MEAN):
        n = D.poisson(lam).table_len
        assert n == want(lam), (lam, n, want(lam))
        assert S.poisson.sf(n - 1, lam) < 1e-12, lam
    lens = []
    jax.jit(lambda lam: lens.append(D.poisson(lam).table_len) or lam)(4.0)
    assert lens == [want(D.MAX_POISSON_MEAN)]


# ------------------------------------------------------------ every execution path run once end to end
def _find(d, key):
    if isinstance(d, dict):
        if key in d:
            return d[key]
        for v in d.values():
            if (r := _find(v, key)) is not None:
                return r
    return None


@pytest.mark.slow  # the kernels' compile through Pallas' interpreter: about 10 s here
def test_an_experiment_runs_on_the_fused_path_end_to_end_and_says_so(tmp_path, capsys):
    """Every execution path run once end to end: a registered experiment that the fused path
    covers (quickstart), run by the command line with ``--path fused`` (Pallas' interpreter on a
    CPU), exits 0, writes its summary, and the summary says each panel ran fused."""
    out = tmp_path / "q"
    rc = cli.main(["run", "quickstart", "--path", "fused", "--runs", "2", "--horizon", "64", "--out", str(out),
                   "--no-progress"])
    assert rc == 0, capsys.readouterr().err
    summary = json.loads((out / "summary.json").read_text())
    paths = _find(summary, "paths")
    assert paths and all(v.startswith("fused") for v in paths.values()), paths  # "fused (interpreted)" here


_GRID_ON_DEVICES = textwrap.dedent("""
    import os, json
    os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=2"
    import jax, numpy as np
    assert jax.device_count() == 2
    from jaxbandits import channels as C, envs as E, simulate_grid
    from jaxbandits.policies import classic as P
    env = E.bernoulli([0.2, 0.5, 0.3])
    build = lambda alpha: (env, P.ucb1(alpha=alpha))
    grid = {"alpha": np.array([1.0, 2.0, 0.5])}
    out = {}
    for n_runs in (5, 16):
        a = simulate_grid(build, grid, C.attributed(), 40, jax.random.key(1), n_runs, shard=True, record=4)
        b = simulate_grid(build, grid, C.attributed(), 40, jax.random.key(1), n_runs, shard=False, record=4)
        out[n_runs] = [a.timing["devices"], list(a.pulls.shape), bool(np.array_equal(a.pulls, b.pulls)),
                       bool(np.array_equal(a.regret, b.regret))]
    print(json.dumps(out))
""")


@pytest.mark.slow  # a fresh process compiling a grid on two devices: about 20 s here
def test_a_grid_of_runs_on_several_devices_equals_one_device_at_uneven_sizes():
    """Every execution path on several devices (two forced host devices, a fresh process): a grid
    of runs sharded over the devices holds every run of every grid point and equals the one-device
    grid bit for bit, for run counts that the devices divide and do not (5 and 16 over 2)."""
    env = dict(os.environ)
    env.pop("XLA_FLAGS", None)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    out = subprocess.run([sys.executable, "-c", _GRID_ON_DEVICES], capture_output=True, text=True, env=env, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    res = json.loads(out.stdout.strip().splitlines()[-1])
    for n_runs, (dev, shape, same_pulls, same_regret) in res.items():
        assert dev == 2 and shape[:2] == [3, int(n_runs)] and same_pulls and same_regret, (n_runs, res)


def _cuda_plugin_dir():
    """Where jax-cuda12-plugin is (as .ci/run installs it; '' when importable here), or None."""
    d = os.environ.get("JAXBANDITS_CUDA_PLUGIN_DIR") or os.path.join(sys.prefix, "cuda-plugin")
    if os.path.isdir(os.path.join(d, "jax_plugins", "xla_cuda12")):
        return d
    if importlib.util.find_spec("jax_plugins") is not None and importlib.util.find_spec("jax_plugins.xla_cuda12"):
        return ""
    return None


def test_the_lowering_reports_unpadded_records_are_its_padded_records_without_the_padded_runs():
    """An estimate against an independent computation, at uneven sizes: for every kernel of the
    memory report (lowered for CUDA on this CPU; 10**6 and 10**5 runs, which the block of 128 runs
    does not divide), ``records_unpadded`` is the lowered program's own record bytes with the
    padded runs taken out (``records * runs / n_pad``; the lanes layout pads no arm)."""
    d = _cuda_plugin_dir()
    if d is None:
        pytest.skip("jax-cuda12-plugin is not installed: the CUDA lowering report is NOT checked (install it as "
                    ".ci/run does)")
    env = dict(os.environ, JAX_PLATFORMS="cpu",
               PYTHONPATH=os.pathsep.join(p for p in (str(ROOT), d, os.environ.get("PYTHONPATH", "")) if p))
    r = subprocess.run([sys.executable, "-m", "jaxbandits.engine.fused.lowering", "--memory"], capture_output=True,
                       text=True, env=env, cwd=ROOT, timeout=600)
    recs = [json.loads(line) for line in r.stdout.splitlines() if line.startswith("{")]
    assert len(recs) >= 4 and all(x["ok"] for x in recs), r.stderr[-3000:]
    for x in recs:
        n = x["shape"]["runs"]
        n_pad = -(-n // 128) * 128
        assert n_pad != n  # an uneven size
        b = x["bytes"]
        assert b["records_unpadded"] * n_pad == b["records"] * n, (x["kernel"], b, n, n_pad)
