"""Simulator hygiene: vmap equals a loop of single runs, same key same bits, chunked equals
unchunked, sharded equals unsharded, grids, common random numbers, recording."""
import json
import os
import subprocess
import sys
import textwrap

import jax
import numpy as np
import pytest

from jaxbandits import channels as C
from jaxbandits import delays as D
from jaxbandits import envs as E
from jaxbandits.policies import classic as P
from jaxbandits.engine import record_points, simulate, simulate_grid

ENV = E.bernoulli([0.2, 0.5, 0.45, 0.3], delay=D.geometric(mean=5.0))
POLS = {"ucb": P.ucb1(), "kl": P.kl_ucb(), "ts": P.thompson(), "exp3": P.exp3()}


def _arrays(o):
    return [o.regret, o.expected_regret, o.reward, o.pulls, o.lost_to_W]


def test_vmap_equals_loop_of_single_runs():
    batch = simulate(ENV, C.attributed(), POLS, 300, jax.random.key(4), 5, record=7)
    for r in range(5):
        single = simulate(ENV, C.attributed(), POLS, 300, jax.random.key(4), 1, record=7, first_run=r)
        for lab in POLS:
            np.testing.assert_array_equal(single[lab].pulls[0], batch[lab].pulls[r])
            np.testing.assert_allclose(single[lab].regret[0], batch[lab].regret[r], rtol=1e-6)


def test_same_key_same_bits_and_chunked_equals_unchunked():
    pols = {k: v for k, v in POLS.items() if k != "exp3"}  # Exp3 does not accept censored conversions
    a = simulate(ENV, C.conversions(window=30), pols, 1000, jax.random.key(9), 6)
    b = simulate(ENV, C.conversions(window=30), pols, 1000, jax.random.key(9), 6)
    c = simulate(ENV, C.conversions(window=30), pols, 1000, jax.random.key(9), 6, chunk=300, progress=False)
    for lab in pols:
        for x, y, z in zip(_arrays(a[lab]), _arrays(b[lab]), _arrays(c[lab])):
            np.testing.assert_array_equal(x, y)
            np.testing.assert_array_equal(x, z)
    d = simulate(ENV, C.conversions(window=30), pols, 1000, jax.random.key(10), 6)
    assert not np.array_equal(a["ucb"].regret, d["ucb"].regret)


def test_common_random_numbers():
    """Every policy faces the same world draws: the random policy's realised reward sequence is
    a function of the reward uniforms only, so two equal policies give equal results, and the
    delay law does not change the rewards of a fixed action sequence."""
    o = simulate(ENV, C.attributed(), {"a": P.uniform_random(), "b": P.uniform_random()}, 200, jax.random.key(0), 3)
    np.testing.assert_array_equal(o["a"].reward, o["b"].reward)
    env2 = E.bernoulli([0.2, 0.5, 0.45, 0.3], delay=D.fixed(0))
    o2 = simulate(env2, C.attributed(), P.uniform_random(), 200, jax.random.key(0), 3)
    np.testing.assert_array_equal(o["a"].reward, o2.reward)


def test_random_policy_expected_regret_is_exact():
    mu = np.array([0.2, 0.5, 0.45, 0.3])
    o = simulate(ENV, C.attributed(), P.uniform_random(), 1000, jax.random.key(0), 4)
    np.testing.assert_allclose(o.expected_regret[:, -1], 1000 * (mu.max() - mu.mean()), rtol=1e-5)
    # pseudo-regret: unbiased for the same quantity
    assert abs(o.regret[:, -1].mean() - 1000 * (mu.max() - mu.mean())) < 40


def test_grid_runs_every_point_with_same_draws():
    def build(alpha):
        return ENV, P.ucb1(alpha=alpha)

    g = simulate_grid(build, {"alpha": [0.5, 2.0, 2.0]}, C.attributed(), 500, jax.random.key(1), 4)
    assert g.regret.shape == (3, 4, g.t.shape[0])
    np.testing.assert_array_equal(g.regret[1], g.regret[2])
    single = simulate(ENV, C.attributed(), P.ucb1(alpha=0.5), 500, jax.random.key(1), 4)
    np.testing.assert_allclose(g.regret[0], single.regret, rtol=1e-6)
    with pytest.raises(ValueError, match="alpha"):
        simulate_grid(build, {"alpha": [1.0, -1.0]}, C.attributed(), 10, jax.random.key(1), 2)


def test_record_points():
    np.testing.assert_array_equal(record_points(10, 3), [2, 5, 8, 9])
    r = record_points(1000, ("log", 10))
    assert r[0] == 0 and r[-1] == 999 and np.all(np.diff(r) > 0)
    o = simulate(ENV, C.attributed(), P.ucb1(), 100, jax.random.key(0), 2, record=("log", 5))
    np.testing.assert_array_equal(o.t, record_points(100, ("log", 5)) + 1)
    o1 = simulate(ENV, C.attributed(), P.ucb1(), 100, jax.random.key(0), 2, record=1)
    idx = record_points(100, ("log", 5))
    np.testing.assert_array_equal(o.regret, o1.regret[:, idx])


SHARD_SCRIPT = textwrap.dedent("""
    import os, json, sys
    os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=4"
    import jax, numpy as np
    assert jax.device_count() == 4
    from jaxbandits import channels as C, delays as D, envs as E
    from jaxbandits.policies import classic as P
    from jaxbandits.engine import simulate
    env = E.bernoulli([0.2, 0.5, 0.45, 0.3], delay=D.geometric(mean=5.0))
    pols = {"ucb": P.ucb1(), "ts": P.thompson()}
    a = simulate(env, C.attributed(), pols, 400, jax.random.key(3), 10, shard=True, chunk=150)
    b = simulate(env, C.attributed(), pols, 400, jax.random.key(3), 10, shard=False)
    ok = all(np.array_equal(a[k].pulls, b[k].pulls) and np.array_equal(a[k].regret, b[k].regret) for k in pols)
    print(json.dumps({"ok": bool(ok), "devices": a["ucb"].timing["devices"]}))
""")


def test_sharded_equals_unsharded():
    env = dict(os.environ)
    env.pop("XLA_FLAGS", None)
    out = subprocess.run([sys.executable, "-c", SHARD_SCRIPT], capture_output=True, text=True, env=env, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    res = json.loads(out.stdout.strip().splitlines()[-1])
    assert res == {"ok": True, "devices": 4}


def test_no_nan_and_linear_world_runs():
    """Linear world with delays: every record finite, LinUCB/LinTS beat random, and the recorded
    pseudo-regret is sum_t max_a <theta, x_{t,a}> - <theta, x_{t,A_t}> over each round's fresh
    action set (the policies' own formulas are pinned by tests/reference/test_classic_ref.py)."""
    from conftest import actions_of
    from reference_tools import Streams

    theta = np.array([0.3, 0.1, 0.2, 0.05, 0.15])
    env = E.linear(theta, n_actions=8, action_set="binary", delay=D.geometric(mean=3.0))
    T = 400
    o = simulate(env, C.attributed(), {"linucb": P.linucb(), "lints": P.lints(), "rnd": P.uniform_random()}, T,
                 jax.random.key(0), 3, record=1)
    for lab, x in o.items():
        assert np.isfinite(x.regret).all() and np.isfinite(x.expected_regret).all() and np.isfinite(x.reward).all()
    assert o["linucb"].regret[:, -1].mean() < 0.5 * o["rnd"].regret[:, -1].mean()
    assert o["lints"].regret[:, -1].mean() < 0.5 * o["rnd"].regret[:, -1].mean()
    s = Streams(T, 0, 0)
    X = np.asarray(jax.vmap(lambda k, t: env.context(env.setup(s.setup_key), t, k)[0])(s.ctx_keys, np.arange(T)),
                   np.float64)
    means = np.clip(X @ theta, 0, 1)  # [T, K]
    for lab in ("linucb", "lints"):
        a = actions_of(o[lab])[0]
        gaps = means.max(1) - means[np.arange(T), a]
        np.testing.assert_allclose(o[lab].regret[0], np.cumsum(gaps), rtol=1e-5, atol=1e-4)


def test_adversarial_regret_against_best_arm():
    rng = np.random.default_rng(0)
    T = 500
    losses = (rng.random((T, 3)) < [0.6, 0.3, 0.5]).astype(float)
    o = simulate(E.oblivious(losses, np.zeros(T, int)), C.attributed(), P.uniform_random(), T, jax.random.key(0), 2,
                 record=1)
    G = np.cumsum(1 - losses, 0)
    expected = G.max(1) - np.cumsum((1 - losses).mean(1))
    np.testing.assert_allclose(o.expected_regret[0], expected, atol=1e-3)


@pytest.mark.parametrize("law", [D.geometric(0.95), D.uniform(0, 30), D.poisson(8.0)], ids=lambda l: type(l).__name__)
@pytest.mark.parametrize("m", [None, 0, 1, 17])
def test_delayed_regret_equals_direct_sum(law, m):
    """L(t) = sum_s Delta_{A_s} tau_{min(t-s, m)} (Vernade et al. 2017, eqs. 1 and 3), tracked in
    the scan, equals the direct sum over the recorded actions."""
    from conftest import actions_of

    theta = np.array([0.3, 0.2, 0.25])
    T = 300
    o = simulate(E.conversions(theta, law), C.conversions(window=m), P.ucb1(), T, jax.random.key(0), 2, record=1)
    gaps = theta.max() - theta[actions_of(o)]
    tau = np.asarray(law.cdf(np.arange(T + 1)), np.float64)
    for t in [0, 5, 40, 150, T - 1]:
        age = t - np.arange(t + 1)
        w = tau[np.minimum(age, m) if m is not None else age]
        np.testing.assert_allclose(o.delayed_regret[:, t], (gaps[:, : t + 1] * w).sum(1), atol=1e-4)
    assert np.all(o.delayed_regret <= o.regret + 1e-4)
