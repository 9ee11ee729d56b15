"""Checks of the *kinds* that random mutants showed missing (docs/contributing.md, "Mutation
testing"): each test here is a kind of check, applied to every case it covers, not a test aimed at
one mutated line.

* every registered experiment builds well-formed panels (the types of every field, at its defaults);
* closed-form constants against an independent computation, at parameters where terms differ;
* error messages read whole (the folder and the reason each in its place).
"""
import math

import numpy as np
import pytest

import jaxbandits.experiments as X
from jaxbandits.channels import Channel
from jaxbandits.envs import World
from jaxbandits.core.values import is_policy


def _panels(exp):
    built = exp.build(dict(exp.config))
    if isinstance(built, (list, tuple)) and built and isinstance(built[0], X.Panel):
        return list(built)
    env, ch, pols = built
    return [X.Panel(exp.name, env, ch, pols)]


def test_every_registered_experiment_builds_well_formed_panels():
    """Every experiment of the table (sweeps excepted: they have no panels), at its defaults: each
    panel has a string name (panels sharing one share a subplot), a World, a Channel, policies {str: policy value} and reference
    lines {str: finite float}. No program is compiled."""
    seen = 0
    for name, exp in X.load_all().items():
        if exp.build is None:  # a sweep (runner)
            continue
        panels = _panels(exp)
        assert panels, name
        names = [p.name for p in panels]
        assert all(isinstance(n, str) and n for n in names), (name, names)  # shared: one subplot
        for p in panels:
            assert isinstance(p.env, World), (name, p.name, type(p.env))
            assert isinstance(p.channel, Channel), (name, p.name, type(p.channel))
            assert isinstance(p.policies, dict) and p.policies, (name, p.name)
            for lab, pol in p.policies.items():
                assert isinstance(lab, str) and lab and is_policy(pol), (name, p.name, lab)
            for lab, c in p.log_lines.items():
                assert isinstance(lab, str) and isinstance(c, float) and math.isfinite(c), (name, p.name, lab, c)
        seen += 1
    assert seen >= 10


def _kl(p, q):
    return p * math.log(p / q) + (1 - p) * math.log((1 - p) / (1 - q))


@pytest.mark.parametrize("tau_m", [1.0, 0.37])
def test_vernade_lower_bound_constants_against_the_theorems(tau_m):
    """Theorem 3 (censored): C = sum_k tau_m Delta_k / kl(tau_m theta_k, tau_m theta*); Theorem 9's
    DelayedUCB slope sum_k 1 / (2 tau_m Delta_k): written out term by term here, at a tau_m != 1
    where multiplying and dividing by tau_m differ."""
    from jaxbandits.policies import conversions as P

    theta = [0.5, 0.4, 0.3, 0.5]  # a tie with the best counts as best (no term)
    best = max(theta)
    subs = [x for x in theta if x < best]
    want = sum(tau_m * (best - x) / _kl(tau_m * x, tau_m * best) for x in subs)
    assert P.lower_bound_constant(theta, tau_m) == pytest.approx(want, rel=1e-12)
    want_ucb = sum(1.0 / (2.0 * tau_m * (best - x)) for x in subs)
    assert P.ucb_slope_constant(theta, tau_m) == pytest.approx(want_ucb, rel=1e-12)
    want_pois = sum((best - x) / (x * math.log(x / best) + best - x) for x in subs)
    assert P.poisson_kl_slope_constant(theta) == pytest.approx(want_pois, rel=1e-12)


@pytest.mark.parametrize("fail, exc, reason", [
    ("makedirs", PermissionError(13, "Permission denied"), "no permission to create it"),
    ("makedirs", OSError(28, "No space left on device"), "cannot create it (No space left on device)"),
    ("open", PermissionError(13, "Permission denied"), "no permission to write in it"),
    ("open", OSError(28, "No space left on device"), "cannot write in it (No space left on device)"),
])
def test_output_folder_errors_read_whole(tmp_path, monkeypatch, fail, exc, reason):
    """Each way the OS refuses an output folder gives an OutputFolderError whose ``path`` is the
    folder, whose ``reason`` is the reason, and whose message is exactly ``output folder 'PATH':
    REASON...`` (not only some words of it somewhere)."""
    import os

    from jaxbandits.core import fileio
    from jaxbandits.experiments.results import Results

    out = tmp_path / ("new" if fail == "makedirs" else "there")
    if fail == "open":
        out.mkdir()

    def refuse(*a, **k):
        raise exc

    c = {"regret": np.ones((2, 3)), "expected_regret": np.ones((2, 3)), "reward": np.zeros((2, 3)),
         "pulls": np.ones((2, 2), np.int32)}
    res = Results("exp", {"x": 1}, 0, 2, 3, np.arange(1, 4), {"A": c}, timing={}, versions={})
    with monkeypatch.context() as m:
        m.setattr(os, fail, refuse)
        with pytest.raises(fileio.OutputFolderError) as e:
            res.save(str(out), plot=False)
    err = e.value
    assert err.path == os.fspath(out) and err.reason.startswith(reason)
    assert str(err) == f"output folder {os.fspath(out)!r}: {err.reason}"


# --- kinds shown missing by the first random sample (seed 1) ---------------------------------------


def test_max_proposals_is_the_smallest_cap_by_an_independent_tail():
    """Independent computation, every bound at the bound: the rejections before the q-th acceptance
    are negative binomial (scipy's ``nbinom``); the cap ``q + f`` is the smallest with
    ``P(F > f) < tail``, so ``P(F > f - 1) >= tail``."""
    from scipy.stats import nbinom

    from jaxbandits.engine.fused.rng import max_proposals

    for q in (1, 3, 17, 64):
        for p_reject, tail in ((0.05, 1e-18), (0.05, 1e-6), (0.2, 1e-9)):
            f = max_proposals(q, p_reject, tail) - q
            assert nbinom.sf(f, q, 1 - p_reject) < tail * (1 + 1e-6), (q, p_reject, tail, f)
            assert f == 0 or nbinom.sf(f - 1, q, 1 - p_reject) >= tail * (1 - 1e-6), (q, p_reject, tail, f)


def test_every_fused_delay_law_has_the_whole_distribution_of_its_law():
    """The whole distribution, every law: the fused kernels' inverse CDF (the law's own
    ``ppf_float``, on the law as the kernel holds it) at a fine grid of uniforms gives, for every n,
    the fraction ``law.cdf(n)`` (to the grid's step), at parameters where terms differ (a uniform
    law not starting at 0), and the scan path's ``ppf`` at every uniform."""
    import jax.numpy as jnp

    import jaxbandits.core.delays as D
    from jaxbandits.engine.fused.path import kernel_law

    N = 20000
    v = (jnp.arange(N, dtype=jnp.float32) + 0.5) / N
    laws = [D.fixed(3), D.uniform(3, 11), D.uniform(0, 5), D.geometric(0.7), D.exponential(4.0),
            D.weibull(1.5, 6.0), D.log_normal(1.0, 0.8), D.pareto(1.7, 3.0)]
    ns = np.arange(0, 30)
    for law in laws:
        d = np.asarray(kernel_law(law).ppf_float(v))
        np.testing.assert_array_equal(np.minimum(d, D.NEVER), np.asarray(law.ppf(v)), err_msg=repr(law))
        got = (d[None, :] <= ns[:, None]).mean(axis=1)
        want = np.asarray(law.cdf(jnp.asarray(ns)), np.float64)
        assert np.abs(got - want).max() <= 2.0 / N + 1e-5, (law, got, want)


def test_uniforms_and_words_concatenate_by_their_counter():
    """A law in the fast suite: the default counter is the first (0), so ``n`` draws are the first
    ``a`` followed by ``n - a`` at offset ``a`` (an uneven split)."""
    import jax

    from jaxbandits import mathlib

    key = jax.random.key(7)
    for fn in (mathlib.uniforms, mathlib.words):
        whole = np.asarray(fn(key, 10))
        parts = np.concatenate([np.asarray(fn(key, 3)), np.asarray(fn(key, 7, offset=3))])
        np.testing.assert_array_equal(whole, parts, err_msg=fn.__name__)
        np.testing.assert_array_equal(whole, np.asarray(fn(key, 10, offset=0)), err_msg=fn.__name__)


def test_kl_ucb_indexes_read_the_mean_clipped_to_the_unit_interval():
    """Every bound at and beyond the bound: an empirical mean outside [0, 1] (a rounding) gives the
    index of the nearest end, for every KL-UCB index of mathlib."""
    import jax.numpy as jnp

    from jaxbandits import mathlib

    bound = jnp.asarray([0.3, 0.3, 0.05, 0.05], jnp.float32)
    out = jnp.asarray([-0.25, 1.5, -1e-3, 1.0 + 1e-3], jnp.float32)
    ends = jnp.clip(out, 0.0, 1.0)
    for fn in (mathlib.kl_ucb_bernoulli, mathlib.kl_ucb_bernoulli_bisect):
        got, want = np.asarray(fn(out, bound)), np.asarray(fn(ends, bound))
        np.testing.assert_array_equal(got, want, err_msg=fn.__name__)
        assert np.all((want >= 0) & (want <= 1)), (fn.__name__, want)


def test_n_tilde_direct_against_its_definition_with_arms_inferred():
    """Independent computation at an uneven case: actions that never play arm 0, the arm count
    inferred (``n_arms=None``: the largest arm + 1) or given, window or not, against the sum
    ``sum_{s <= t} tau[min(t - s, m)] 1{a_s = k}`` written out."""
    from jaxbandits.policies import conversions as P

    acts = [2, 1, 2, 2, 1, 3, 1]
    tau = [0.1, 0.35, 0.6, 0.8, 0.9, 0.97, 1.0, 1.0]
    for t in (0, 3, 6):
        for window in (None, 2):
            K = max(acts[: t + 1]) + 1
            want = [sum(tau[min(t - s, window) if window is not None else t - s]
                        for s in range(t + 1) if acts[s] == k) for k in range(K)]
            got = P.n_tilde_direct(acts, tau, t, window=window)
            np.testing.assert_allclose(got, want, rtol=1e-12, err_msg=str((t, window)))
            np.testing.assert_allclose(P.n_tilde_direct(acts, tau, t, window=window, n_arms=5)[:K], want, rtol=1e-12)


@pytest.mark.parametrize("key", ["", "a.", ".a", "a..b", "world..mean", " . "])
def test_every_bad_set_key_is_refused_read_whole(key):
    """Bad input, every malformed dotted key (empty, empty parts at either end or inside): refused
    with the whole message."""
    from jaxbandits.experiments.files import parse_sets

    with pytest.raises(ValueError) as e:
        parse_sets([f"{key}=1"])
    assert str(e.value) == f"--set key must be a dotted key of the file (world.delay.mean), got {key.strip()!r}"


def test_unknown_parameter_messages_read_whole():
    """Error messages read whole: the unknown name, the close match, and every parameter (or 'none')."""
    from jaxbandits.experiments.files import check_params

    def two(alpha=0.5, beta=1):
        pass

    def nothing():
        pass

    assert check_params("policy 'x'", two, {"alpah": 1}) == [
        ("alpah", "policy 'x' has no parameter 'alpah' (did you mean 'alpha'?); its parameters: alpha, beta")]
    assert check_params("policy 'x'", two, {"zzz": 1, "alpha": 2}) == [
        ("zzz", "policy 'x' has no parameter 'zzz'; its parameters: alpha, beta")]
    assert check_params("law 'y'", nothing, {"zzz": 1}) == [("zzz", "law 'y' has no parameter 'zzz'; its parameters: none")]


def test_key_lines_of_every_kind_of_value_against_the_document_built_line_by_line():
    """Independent computation: a TOML document written line by line (so each key's line is known)
    with the values that end at a boundary (empty multi-line strings, contents starting or ending
    with quotes, brackets inside strings, multi-line arrays); tomllib reads the same keys."""
    import tomllib

    from jaxbandits.experiments.files import key_lines

    values = ['""""""', "''''''", '"""""x"""', "'''''x'''", '"""x"""""', '""" [ """', '"[" ', "'{'",
              '"""\nline [\n"""', "'''\n'' x\n'''", "[1,\n 2, [3,\n 4]]", '{ a = "}" }', '"a\\"b"', "1 # ["]
    lines, want, n = [], {}, 1
    for i, v in enumerate(values):
        lines.append(f"k{i} = {v}")
        want[(f"k{i}",)] = n
        n += 1 + v.count("\n")
    lines.append("[t]")
    want[("t",)] = n
    lines.append("z = 1")
    want[("t", "z")] = n + 1
    text = "\n".join(lines) + "\n"
    doc = tomllib.loads(text)
    assert set(doc) == {f"k{i}" for i in range(len(values))} | {"t"}
    got = key_lines(text)
    assert {k: got.get(k) for k in want} == want


@pytest.mark.parametrize("flags, clock", [
    (["--round-length", "2.5"], {"round_length": 2.5}),
    (["--origin", "100"], {"origin": 100.0}),
    (["--origin", "7", "--round-length", "3"], {"origin": 7.0, "round_length": 3.0}),
])
def test_serve_flags_give_the_clock_of_the_same_config_file(flags, clock):
    """Every default at its source: a clock flag given alone takes the other field's default from
    the config's own defaults (as a config file with only that field does)."""
    from jaxbandits.apps import cli, serve

    a = cli.parser().parse_args(["serve", "--arms", "a,b", "--policy", "ucb1", "--channel", "attributed"] + flags)
    got = serve.config_from_args(a)._clock()
    want = serve.load_config(arms=["a", "b"], policy={"name": "ucb1"}, channel={"kind": "attributed"}, clock=clock)._clock()
    assert (got.origin, got.round_length) == (want.origin, want.round_length)


def test_thune_heavy_tail_delays_have_their_whole_laws():
    """The whole distribution: the Pareto delays ``floor(U^(-1/alpha)) - 1`` have
    ``P(d >= k) = (k + 1)^-alpha`` for every k below the cap T (and d = T beyond); the contaminated
    ones are T with probability T^-1/2, else 0."""
    from jaxbandits.reproductions import thune2019

    T, runs, alpha = 64, 4000, 1.3
    d = thune2019._heavy_delays("pareto", T, runs, 3, alpha).ravel()
    assert d.min() >= 0 and d.max() <= T
    n = d.size
    for k in (0, 1, 2, 5, 10, 30, T):
        p = (k + 1.0) ** -alpha
        assert abs((d >= k).mean() - p) <= 5 * math.sqrt(p * (1 - p) / n) + 1e-12, k
    c = thune2019._heavy_delays("contaminated", T, runs, 3, alpha).ravel()
    assert set(np.unique(c)) <= {0, T}
    p = T**-0.5
    assert abs((c == T).mean() - p) <= 5 * math.sqrt(p * (1 - p) / c.size)


def _subplots(exp):
    return list(dict.fromkeys(p.name for p in _panels(exp)))


def test_every_registered_experiment_reports_at_its_horizon_on_a_tight_layout():
    """Every registered item, every bound at the bound: checkpoints increase and the last is the
    horizon; a layout holds every subplot with no empty row or column."""
    seen = 0
    for name, exp in X.load_all().items():
        if exp.checkpoints:
            c = list(exp.checkpoints)
            assert c == sorted(set(c)) and c[0] >= 1 and c[-1] == exp.horizon, (name, c, exp.horizon)
        if exp.layout is not None and exp.build is not None:
            rows, cols = exp.layout
            n = len(_subplots(exp))
            assert rows * cols >= n > max((rows - 1) * cols, rows * (cols - 1)), (name, exp.layout, n)
            seen += 1
    assert seen >= 8


def test_shown_values_are_cut_at_80_characters_at_the_bound():
    """Every bound at the bound: a value whose JSON is 80 characters is shown whole; 81 is cut to 77
    and '...' (80 in all)."""
    from jaxbandits.experiments.parts import _show

    for n in (2, 79, 80, 81, 200):
        v = "x" * (n - 2)  # JSON adds the quotes
        s = _show(v)
        assert s == (f'"{v}"' if n <= 80 else f'"{v}"'[:77] + "..."), n
        assert len(s) == min(n, 80)


def test_integer_config_values_are_int64_at_both_bounds():
    """Every bound at the bound: an integer config value is accepted from -2^63 to 2^63 - 1 and
    refused just outside, with the whole message."""
    from jaxbandits.experiments.specs import _check_value

    for ok in (-(2**63), -1, 0, 2**62, 2**63 - 1):
        _check_value("k", 1, ok)
    for bad in (-(2**63) - 1, 2**63, 2**64):
        with pytest.raises(ValueError) as e:
            _check_value("k", 1, bad)
        assert str(e.value) == f"config key 'k' must be an integer within int64, got {bad!r}"


def test_every_label_count_gets_distinct_colours_up_to_twenty():
    """Every size at the bound: up to 20 labels in a panel each get their own colour (10: the first
    palette; 11 to 20: the larger one), the same for a label in every call."""
    from jaxbandits.report.plotting import colors

    for n in (1, 9, 10, 11, 12, 19, 20):
        labels = [f"p{i}" for i in range(n)]
        c = colors(labels)
        assert len({tuple(x) for x in c.values()}) == n, n
        assert colors(labels) == c


def test_every_delay_family_gives_init_values_of_the_asked_shape():
    """Every registered item: each delay family's initial values, one array of the asked shape per
    parameter, finite and positive (where the sampler starts)."""
    from jaxbandits.delaymodels.families import FAMILIES

    for name, fam in FAMILIES.items():
        for shape in ((), (3,)):
            v = fam.init_values(8.0, shape)
            assert set(fam.params) <= set(v), (name, v)
            for k in fam.params:
                a = np.asarray(v[k])
                assert a.shape[: len(shape)] == shape and np.all(np.isfinite(a)) and np.all(a > 0), (name, k, a)


def test_every_policy_that_logs_its_law_logs_a_law_under_a_mask():
    """A law in the fast suite, every policy that declares ``memo_probs`` and reads the mask (the
    adversarial and composite ones do not read it): under a mask, the logged law sums to 1, is 0 on
    the ruled-out arms, and the action is one it allows."""
    import jax
    import jax.numpy as jnp

    from jaxbandits.policies import classic
    from jaxbandits.core.types import Context, ProblemSpec

    K = 4
    mask = jnp.array([True, False, True, True])
    pols = [classic.uniform_random(), classic.exp3(), classic.exp3(gamma=0.2), classic.exp3(eta=5.0)]
    for pol in pols:
        assert pol.memo_probs, pol.name
        st = pol.init(ProblemSpec(n_arms=K, horizon=100), jax.random.key(0))
        for s in range(3):
            a, memo = pol.act(st, Context(jnp.asarray(0, jnp.int32), mask=mask), jax.random.key(s))
            p = np.asarray(memo.probs, np.float64)
            assert p.sum() == pytest.approx(1.0, abs=1e-6) and p[1] == 0.0 and bool(mask[int(a)]), (pol.name, p, a)


def test_compile_cache_dir_follows_each_documented_source_in_turn(tmp_path, monkeypatch):
    """Every case of a documented rule: $JAXBANDITS_CACHE_DIR, else JAX's configured folder, else
    $XDG_CACHE_HOME/jaxbandits/jax, else ~/.cache/jaxbandits/jax."""
    import jax

    from jaxbandits.apps import cli

    before = jax.config.jax_compilation_cache_dir
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    try:
        jax.config.update("jax_compilation_cache_dir", None)
        monkeypatch.delenv(cli.CACHE_ENV, raising=False)
        monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
        assert cli.compile_cache_dir() == str(tmp_path / "home" / ".cache" / "jaxbandits" / "jax")
        monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
        assert cli.compile_cache_dir() == str(tmp_path / "xdg" / "jaxbandits" / "jax")
        jax.config.update("jax_compilation_cache_dir", str(tmp_path / "jaxdir"))
        assert cli.compile_cache_dir() == str(tmp_path / "jaxdir")
        monkeypatch.setenv(cli.CACHE_ENV, str(tmp_path / "mine"))
        assert cli.compile_cache_dir() == str(tmp_path / "mine")
    finally:
        jax.config.update("jax_compilation_cache_dir", before)


def test_serve_param_flags_give_the_policy_table_of_the_same_config_file():
    """Every CLI flag against its config-file form: ``--param KEY=VALUE`` (values read as JSON)
    gives the policy table a file would."""
    from jaxbandits.apps import cli, serve

    a = cli.parser().parse_args(["serve", "--arms", "a,b", "--policy", "ucb1", "--channel", "attributed",
                                 "--param", "alpha=2.5", "--param", "propensity_samples=64"])
    got = serve.config_from_args(a).policy
    assert got == {"name": "ucb1", "alpha": 2.5, "propensity_samples": 64}
    want = serve.load_config(arms=["a", "b"], policy={"name": "ucb1", "alpha": 2.5, "propensity_samples": 64},
                             channel={"kind": "attributed"})
    assert serve.config_from_args(a) == want


@pytest.mark.parametrize("make, inside, outside", [
    ("poisson", [(1e-6,), (0.5,), (1.0,)], [(0.0,), (-1.0,)]),
    ("exponential", [(1e-6,), (0.5,)], [(0.0,)]),
    ("uniform", [(0, 0), (3, 3)], [(-1, 2), (3, 2)]),
    ("pareto", [(1e-3, 1.0), (0.5, 1e-3)], [(0.0, 1.0), (1.0, 0.0)]),
])
def test_delay_laws_accept_every_parameter_just_inside_an_open_bound(make, inside, outside):
    """Every bound at the bound: each law is built just inside its parameters' ranges (small
    positive means, a point uniform) and refused at or past the bound, naming the parameter."""
    import jaxbandits.core.delays as D

    for args in inside:
        getattr(D, make)(*args)
    for args in outside:
        with pytest.raises(ValueError):
            getattr(D, make)(*args)
