"""Checks of the *kinds* that random mutants showed missing, fourth part (a) (docs/contributing.md,
"Mutation testing"; the earlier parts are tests/test_kinds.py, tests/test_kinds2.py and
tests/test_kinds3.py): each test is a kind of check applied to every case it covers, not a test
aimed at one mutated line.

* every bound at the bound: every range ``online.decide`` states, every range a delay profile's
  constructor states, ``serve --port`` at both ends, every synthetic log simulator at its
  smallest play count;
* stated defaults and settings read from the pages that state them (every horizon sweep a page
  states; the delay prior's default mean of both fits; a sweep unit's id, which names its file);
* an output format parsed back (every markdown table :meth:`Results.table` writes, with and
  without ``L(T)`` and checkpoints);
* error messages read whole (ids of every dtype in a wrong shape; a config with several unknown
  keys; a distributed sweep whose processes ask for different units);
* a warning's reported location (the Monte Carlo propensity warning points at its caller).
"""
import hashlib
import importlib
import inspect
import json
import pathlib
import re
import sys
import types
import warnings

import numpy as np
import pytest

import jaxbandits.experiments as X
from jaxbandits import Results, bayes, channels as C, online, ope
from jaxbandits.apps import cli, serve
from jaxbandits.bayes import contextual as CTX
from jaxbandits.core import profiles as Pr
from jaxbandits.engine.checkpoint import CallCache
from jaxbandits.experiments import distributed as DIST
from jaxbandits.policies import classic

ROOT = pathlib.Path(__file__).parents[1]
PURE = importlib.import_module("jaxbandits.online.pure")
FIT = importlib.import_module("jaxbandits.bayes.fit")  # the module (the package's ``fit`` is the function)


# ------------------------------------------------------------------------- every bound at the bound
def _args(doc):
    """``{parameter: its Args line(s)}`` of a Google-style docstring."""
    body = doc.split("Args:")[1].split("\n\n")[0] if "Args:" in doc else ""
    out, cur = {}, None
    for line in body.splitlines():
        if m := re.match(r"^    (\w+): (.*)$", line):
            cur = m[1]
            out[cur] = m[2]
        elif cur and line.startswith("        "):
            out[cur] += " " + line.strip()
    return out


def test_every_range_online_decide_states_is_its_check_at_the_bound(monkeypatch):
    """Every bound at the bound, ``online.decide``: each range its docstring states (``n``:
    ``>= 1``; ``propensity``: ``0 <= S <= 2^16``) is accepted at the bound and refused one step
    outside with a ValueError naming the parameter (the decisions themselves stubbed: only the
    checks run, nothing compiles)."""
    ranges = {}
    for name, text in _args(inspect.getdoc(online.decide)).items():
        for s in re.findall(r"``([^`]*)``", text):
            s = s.replace("^", "**")
            if m := re.fullmatch(r">= (\d+)", s):
                ranges[name] = (int(m[1]), None)
            elif m := re.fullmatch(r"([\d*]+) <= \w+ <= ([\d*]+)", s):
                ranges[name] = (eval(m[1]), eval(m[2]))  # noqa: S307 - digits and ** only (the fullmatch)
    assert ranges == {"n": (1, None), "propensity": (0, 2**16)}, ranges
    seen = []

    def stub(state, contexts, masks, delays, n, samples):
        seen.append((n, samples))
        z = np.zeros(n, np.int32)
        return state, (z, z, np.zeros(n, np.float32))
    monkeypatch.setattr(PURE, "decide_batch", stub)
    st = online.init(classic.ucb1(), C.attributed(), 2, 0)
    base = {"n": 1, "propensity": 0}
    for name, (lo, hi) in ranges.items():
        for v, ok in [(lo, True), (lo - 1, False)] + ([(hi, True), (hi + 1, False)] if hi is not None else []):
            kw = {**base, name: v}
            if ok:
                online.decide(st, kw["n"], propensity=kw["propensity"])
                assert seen[-1] == (kw["n"], kw["propensity"]), (name, v, seen[-1])
            else:
                with pytest.raises(ValueError, match=rf"\b{name}\b"):
                    online.decide(st, kw["n"], propensity=kw["propensity"])


_PROFILE_BASE = {"interval": {"d_min": 0, "d_max": Pr.MAX_LEN - 1}, "linear_decreasing": {"d": 1},
                 "linear_increasing": {"d": 1},
                 "discounted": {"gamma": 0.5, "tol": 0.999},  # tol 0.999: a gamma near 1 within MAX_LEN lags
                 "polynomial": {"gamma": 2.0, "max_len": 8}}


def _profile_ranges(f, base):
    """(parameter, lo, lo_open, hi, hi_open, integer) for every ``in [a, b]`` / ``(a, b)`` / ``> a``
    its docstring states, the ends evaluated with ``MAX_LEN`` and the other arguments of ``base``."""
    env = {"MAX_LEN": Pr.MAX_LEN, **base}
    for name, text in _args(inspect.getdoc(f)).items():
        integer = "integer" in text
        for s in re.findall(r"``([^`]*)``", text):
            if m := re.fullmatch(r"([\[(])([^,]+), ([^\])]+)([\])])", s):
                yield name, eval(m[2], {}, env), m[1] == "(", eval(m[3], {}, env), m[4] == ")", integer  # noqa: S307
            elif m := re.fullmatch(r"> (-?[\d.]+)", s):
                yield name, float(m[1]), True, None, False, integer


def test_every_range_a_delay_profile_states_is_its_check_at_the_bound():
    """Every bound at the bound, every delay-profile constructor of ``core.profiles``: each range
    its docstring states (``an integer in [2, MAX_LEN]``, ``in (0, 1)``, ``[d_min + 1, MAX_LEN -
    1]``, ``> 1``) accepts a closed end and refuses one step past it (1 for an integer, 1e-6
    relative for a real), and refuses an open end and accepts one step inside, with a ValueError
    naming the parameter; the other arguments held at a valid base."""
    checked = set()
    for fname, base in _PROFILE_BASE.items():
        f = getattr(Pr, fname)
        for name, lo, lo_open, hi, hi_open, integer in _profile_ranges(f, base):
            ends = [(lo, lo_open, True)] + ([(hi, hi_open, False)] if hi is not None else [])
            for b, is_open, lower in ends:
                step = 1 if integer else max(abs(b), 1.0) * 1e-6
                out, inside = (b - step, b + step) if lower else (b + step, b - step)
                refused, accepted = (b, inside) if is_open else (out, b)
                with pytest.raises(ValueError, match=rf"\b{name}\b"):
                    f(**{**base, name: refused})
                try:
                    f(**{**base, name: accepted})
                except ValueError as e:
                    pytest.fail(f"{fname}({name}={accepted!r}) refused at its stated bound: {e}")
                checked.add(f"{fname}:{name}")
    assert {"polynomial:max_len", "polynomial:tol", "polynomial:gamma", "discounted:tol", "discounted:gamma",
            "interval:d_min", "interval:d_max", "linear_decreasing:d", "linear_increasing:d"} <= checked, checked


@pytest.mark.parametrize("port, ok", [(1, True), (65535, True), (0, False), (65536, False)])
def test_serve_port_is_accepted_at_both_ends_and_refused_one_past(monkeypatch, capsys, tmp_path, port, ok):
    """Every bound at the bound, ``jaxbandits serve --port``: ``1..65535`` (its message) accepts
    1 and 65535 (the server reached, stubbed) and refuses 0 and 65536 with exit 2 and the message
    read whole, before anything starts."""
    started = []
    monkeypatch.setattr(serve, "run", lambda config, db, **kw: started.append(kw["port"]) or 0)
    rc = cli.main(["serve", "--db", str(tmp_path / "s.db"), "--arms", "a,b", "--policy", "ucb1",
                   "--channel", "attributed", "--port", str(port)])
    err = capsys.readouterr().err
    if ok:
        assert (rc, started) == (0, [port]), err
    else:
        assert rc == 2 and started == [] and f"--port must be in 1..65535, got {port}" in err, err


def test_every_synthetic_log_simulator_accepts_its_smallest_play_count():
    """Every bound at the bound, the synthetic log simulators: ``n_plays = 1`` gives a log of one
    row, ``n_plays = 0`` is refused with a ValueError naming ``n_plays`` (``synthetic_log`` and
    ``synthetic_contextual_log``)."""
    sims = {"synthetic_log": lambda n: bayes.synthetic_log([0.5, 0.5], n, 10.0, 20.0, seed=1),
            "synthetic_contextual_log": lambda n: bayes.synthetic_contextual_log(n, [0.0, 0.0], [0.0], [5.0], 10.0,
                                                                                 20.0, seed=1)[0]}
    for name, sim in sims.items():
        assert len(sim(1).arm) == 1, name
        with pytest.raises(ValueError, match=r"\bn_plays\b"):
            sim(0)


def _res(delayed=False, checkpoints=None):
    t = np.array([10, 20, 30])
    rng = np.random.default_rng(0)
    curves = {}
    for lab in ("A", "B"):
        c = {"regret": np.cumsum(rng.random((3, 3)), axis=1), "pulls": np.ones((3, 2))}
        if delayed and lab == "A":
            c["delayed_regret"] = np.cumsum(rng.random((3, 3)), axis=1)
        curves[lab] = c
    return Results("x", {}, 0, 3, 30, t, curves, checkpoints=checkpoints)


# --------------------------------------------------------------- stated settings, read from pages
def test_every_horizon_sweep_a_page_states_is_the_registered_grid():
    """Stated settings pinned: every ``T = 2^a..2^b`` (a sweep) or ``T = 2^a`` a line of docs/
    states next to a registered experiment's name (``docs/cli.md``'s table, the reproduction
    pages' commands) is that experiment's default ``log2_T``: every horizon from ``2^a`` to
    ``2^b`` once, in order."""
    names = sorted(X.names(), key=len, reverse=True)  # the longest first: a name is not a prefix's
    checked = set()
    for page in sorted((ROOT / "docs").rglob("*.md")):
        for line in page.read_text().splitlines():
            m = re.search(r"\bT = 2\^(\d+)(?:\.\.2\^(\d+))?(?![\d.])", line)
            name = next((n for n in names if re.search(rf"(?<![\w-]){re.escape(n)}(?![\w-])", line)), None)
            if not (m and name):
                continue
            cfg = X.get(name).config  # only the modules of the experiments named (not every one)
            if "log2_T" not in cfg:
                continue
            want = list(range(int(m[1]), int(m[2]) + 1)) if m[2] else int(m[1])
            assert cfg["log2_T"] == want, (str(page.relative_to(ROOT)), line, cfg["log2_T"])
            checked.add(name)
    assert {"thune2019-example8", "thune2019-heavy-tail", "thune2019-bounds"} <= checked, checked


def test_the_delay_prior_default_mean_is_the_one_bayes_md_states_in_both_fits(monkeypatch):
    """A stated default pinned, in both fits (siblings agree): docs/bayes.md states the delay
    prior's mean ``mu0`` defaults to a quarter of the median observation age (or ``window/4``);
    ``bayes.fit`` and ``bayes.fit_contextual`` start from that mean, computed here from the log's
    own rows (the fits stopped before anything compiles)."""
    page = re.sub(r"\s+", " ", (ROOT / "docs" / "bayes.md").read_text())
    assert "`mu0` defaults to a quarter of the median observation age (or `window/4`)" in page

    class _Stop(Exception):
        pass
    seen = []

    def flat(fam, wr, plays, K, per_arm_delay, prior_mean):
        seen.append(prior_mean)
        raise _Stop

    def ctx(fam, priors, prior_mean):
        seen.append(prior_mean)
        raise _Stop
    monkeypatch.setattr(FIT, "start_values", flat)
    if "arviz" not in sys.modules:  # its import (about 10 s here) stood in: the fits stop before they use it
        monkeypatch.setitem(sys.modules, "arviz", types.ModuleType("arviz"))
    monkeypatch.setattr(CTX, "contextual_priors", ctx)
    log = bayes.synthetic_log([0.3, 0.5], 200, 300.0, 340.0, mean=5.0, seed=2)
    age = np.median(np.asarray(log.cutoff - log.play_time, np.float64))
    assert age / 4 > 1.0  # the floor of 1 is not what is read
    for window, want in [(None, age / 4), (40, 10.0)]:
        for fit in (lambda: bayes.fit(log, window=window, num_warmup=1, num_samples=1, num_chains=1),
                    lambda: bayes.fit_contextual(log, np.zeros((len(log.arm), 1)), window=window, num_warmup=1,
                                                 num_samples=1, num_chains=1)):
            seen.clear()
            with pytest.raises(_Stop):
                fit()
            assert seen == [pytest.approx(want)], (window, seen, want)


def test_a_sweep_units_id_and_file_are_the_stated_hash_of_its_fingerprint():
    """A stated setting pinned: a sweep unit's id, which names its file (``call-<id>.npz`` /
    ``.json``) and so decides whether a folder written by another version is resumed, is the first
    24 hex digits of the SHA-256 of its fingerprint as sorted-key JSON, computed here with hashlib
    for fingerprints of several kinds (nested, non-JSON values written as ``str``)."""
    fps = [{}, {"seed": 0}, {"b": [1, 2], "a": {"y": 1.5, "x": None}}, {"law": pathlib.PurePosixPath("p")}]
    ids = set()
    for fp in fps:
        want = hashlib.sha256(json.dumps(fp, sort_keys=True, default=str).encode()).hexdigest()[:24]
        uid = CallCache.unit_id(fp)
        assert uid == want and re.fullmatch(r"[0-9a-f]{24}", uid), (fp, uid, want)
        assert CallCache(None).file_name(uid) == f"call-{want}.npz"
        assert CallCache(None).file_name(uid, "json") == f"call-{want}.json"
        ids.add(uid)
    assert len(ids) == len(fps)


# ------------------------------------------------------------------------ an output format parsed back
@pytest.mark.parametrize("delayed", [False, True])
@pytest.mark.parametrize("checkpoints", [None, [10, 30], [10, 20, 30]])
def test_every_results_table_parses_back_as_a_well_formed_markdown_table(delayed, checkpoints):
    """An output format parsed back: the markdown table :meth:`Results.table` writes (with and
    without ``L(T)``, with and without checkpoints) is a table: a header, a separator row of
    ``---`` cells, then one row per policy, every row with the header's number of cells; the
    header's cells are ``policy``, ``R(c)`` per checkpoint (the horizon without any) and ``L(T)``
    where tracked; each policy row's cells read back as ``mean ± se`` of its curves."""
    res = _res(delayed, checkpoints)
    lines = res.table().splitlines()
    rows = [ln for ln in lines if ln.startswith("|")]
    assert lines[:len(rows)] == rows  # the table first, then its notes
    cells = [[c.strip() for c in ln.strip().strip("|").split("|")] for ln in rows]
    cps = checkpoints or [30]
    assert cells[0] == ["policy"] + [f"R({c})" for c in cps] + (["L(T)"] if delayed else [])
    assert all(re.fullmatch(r"-{3,}", c) for c in cells[1]) and len(cells[1]) == len(cells[0]), rows[1]
    assert [r[0] for r in cells[2:]] == ["A", "B"]
    for lab, r in zip("AB", cells[2:]):
        assert len(r) == len(cells[0]), (rows, r)
        m, se = res.mean_se(lab)
        for c, cell in zip(cps, r[1:]):
            i = int(np.searchsorted(res.t, c))
            assert cell == f"{m[i]:.1f} ± {se[i]:.1f}", (cell, c)


# ------------------------------------------------------------------------------ error messages read whole
@pytest.mark.parametrize("dtype", ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "object"])
def test_decision_ids_of_every_integer_dtype_read_back_and_a_wrong_shape_is_refused_whole(dtype):
    """Error messages read whole, every dtype path of ``online.decision_ids``: ids of every integer
    dtype (signed, unsigned, Python ints) read back as the same int64 values in 1-d, and a 2-d
    array of that dtype is refused with ``ids must be a 1-d list of decision ids, got shape
    (2, 2)``."""
    a = np.array([[0, 1], [2, 3]], dtype=dtype)
    assert online.decision_ids(a.ravel()).tolist() == [0, 1, 2, 3]
    assert online.decision_ids(a.ravel()).dtype == np.int64
    with pytest.raises(ValueError, match=re.escape("ids must be a 1-d list of decision ids, got shape (2, 2)")):
        online.decision_ids(a)


@pytest.mark.parametrize("keys", [["zeta", "beta_x"], ["beta_x", "zeta"], ["window_x", "seeds", "arm"]])
def test_a_serve_config_with_several_unknown_keys_names_the_first_in_order_read_whole(keys):
    """Error messages read whole, with several unknown keys: a serve config naming several
    unknown keys (at its top level, in its policy table, in its channel table) is refused naming
    the first in sorted order (whatever order they are given in) with its path, and every allowed
    key; none of the other unknown keys is named."""
    first = sorted(keys)[0]
    extra = {k: 1 for k in keys}
    for where, kw in [("", extra), ("policy.", {"policy": {"name": "ucb1", **extra}}),
                      ("channel.", {"channel": {"kind": "attributed", **extra}})]:
        kw = {"policy": {"name": "ucb1"}, "channel": {"kind": "attributed"}, **kw}
        with pytest.raises(ValueError) as e:
            serve.load_config(None, arms=["a", "b"], **kw)
        msg = str(e.value)
        assert msg.startswith(f"config key {where}{first}: unknown key {first!r} in "), (keys, msg)
        assert "; allowed: " in msg and all(f"{k!r}" not in msg for k in keys if k != first), msg


@pytest.mark.parametrize("units, odd", [([0, 1, 0], [1]), ([0, 0, 1], [2]), ([0, 1, 1], [1, 2]),
                                        ([0, 1, 2, 0], [1, 2])])
def test_a_distributed_sweeps_unit_mismatch_names_every_process_unlike_process_0(monkeypatch, units, odd):
    """Error messages read whole, with several processes: when processes of a distributed sweep ask
    for different units, the error names exactly the processes whose units differ from process 0's
    (the exchange between processes stood in by the hashes each would send)."""
    monkeypatch.setattr(DIST, "process_index", lambda: 0)
    monkeypatch.setattr(DIST, "process_count", lambda: len(units))

    def exchange(mine):
        return [mine if u == 0 else hashlib.sha256(str(u).encode()).digest() for u in units]
    monkeypatch.setattr(DIST, "bytes_all", exchange)

    def runner(config, runs, seed, horizon, sweep):
        return sweep.unit({"seed": seed}, lambda: {"runs": runs}, kind="json")
    with pytest.raises(RuntimeError) as e:
        DIST.run_sweep_global(runner, {}, 2, 0, None)
    assert str(e.value).startswith(f"distributed sweep: process(es) {odd} asked for other units than process 0 ("), \
        str(e.value)


# ------------------------------------------------------------------------------- a warning's location
def test_the_monte_carlo_propensity_warning_points_at_its_caller():
    """A warning's reported location: ``ope.evaluate`` on a log of Monte Carlo propensities warns
    that the weights are slightly biased, and the warning points at the line that called
    ``evaluate`` (this file), not at the library's own code."""
    log = ope.decision_log([0, 1, 0, 1], [0.0, 1.0, 2.0, 3.0], [0.5, 0.5, 0.5, 0.5], [1.0, np.nan, np.nan, 4.0],
                           100.0, n_arms=2, propensity_samples=64)
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        line = inspect.currentframe().f_lineno + 1
        ope.evaluate(log, [0.5, 0.5])
    mc = [w for w in got if "Monte Carlo estimates (64 samples each)" in str(w.message)]
    assert len(mc) == 1, [str(w.message) for w in got]
    assert (pathlib.Path(mc[0].filename).resolve(), mc[0].lineno) == (pathlib.Path(__file__).resolve(), line)
