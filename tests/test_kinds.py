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
from jaxbandits.values import is_policy


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

    theta = [0.5, 0.4, 0.3, 0.5 - 1e-3 * 0]  # a tie with the best counts as best (no term)
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

    from jaxbandits import _io
    from jaxbandits.results import Results

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
        with pytest.raises(_io.OutputFolderError) as e:
            res.save(str(out), plot=False)
    err = e.value
    assert err.path == os.fspath(out) and err.reason.startswith(reason)
    assert str(err) == f"output folder {os.fspath(out)!r}: {err.reason}"
