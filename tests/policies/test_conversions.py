"""Vernade, Cappe and Perchet (2017): statistics, index formulas, recursions, unbiasedness and
behaviour of DelayedUCB, DelayedKLUCB and Discarding.

Reference numbers (a worked example, index test vectors, regret cells) were computed independently
in float64, by hand or by an independent numpy simulation (conventions §11).
"""
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxbandits import channels as C
from jaxbandits import delays as D
from jaxbandits import envs as E
from jaxbandits import mathlib as M
from jaxbandits.policies import conversions as V
from jaxbandits.engine import simulate

from conftest import final_state

THETA_L = np.array([0.1, 0.05, 0.03])
THETA_H = np.array([0.5, 0.4, 0.3])
LAW = D.geometric(0.998)


def fixed_actions(policy, seq):
    """The policy's own update (its statistics), but actions from a fixed sequence."""
    seq = jnp.asarray(seq, jnp.int32)

    def act(state, ctx, key):
        _, memo = policy.act(state, ctx, key)
        a = seq[ctx.t]
        return a, memo._replace(onehot=jnp.zeros_like(memo.onehot).at[a].set(1.0))

    return policy._replace(act=act)


# ------------------------------------------------------------------------- statistics
def test_worked_example_n_tilde():
    # worked example: rho = 0.5, arms [0,1,0,0,2,0,1] at rounds 1..7, after t = 7
    law = D.geometric(0.5)
    seq = [0, 1, 0, 0, 2, 0, 1]
    env = E.conversions([0.2, 0.2, 0.2], law)
    for window, expect in [(None, (3.6484375, 1.484375, 0.875)), (3, (3.5625, 1.4375, 0.875))]:
        table_law = D.histogram(np.diff(np.asarray(law.cdf_table(60)), prepend=0.0))  # same law, table path
        for pol in [V.delayed_klucb(law, window), V.delayed_klucb(table_law, window)]:
            st = final_state(env, C.conversions(window=window), fixed_actions(pol, seq), 7, 1)
            np.testing.assert_allclose(st.n_tilde[0], expect, rtol=1e-6)
        tau = np.asarray(law.cdf_table(10), np.float64)
        np.testing.assert_allclose(V.n_tilde_direct(seq, tau, 6, window, 3), expect, rtol=1e-12)


@pytest.mark.parametrize("law", [D.geometric(0.98), D.uniform(0, 300), D.poisson(40.0)], ids=lambda l: type(l).__name__)
@pytest.mark.parametrize("window", [None, 200, 1])
def test_recursions_equal_direct_sums(law, window):
    """The O(K) geometric recursions and the ring/table paths equal the direct sums (float32)."""
    rng = np.random.default_rng(0)
    T = 3000
    seq = rng.integers(0, 3, T)
    env = E.conversions([0.2, 0.3, 0.1], law)
    st = final_state(env, C.conversions(window=window), fixed_actions(V.delayed_ucb(law, window), seq), T, 1)
    tau = np.asarray(law.cdf(np.arange(T + 1)), np.float64)
    ref = V.n_tilde_direct(seq, tau, T - 1, window, 3)
    np.testing.assert_allclose(st.n_tilde[0], ref, rtol=2e-4, atol=2e-3)
    np.testing.assert_array_equal(st.n[0], np.bincount(seq, minlength=3))


@pytest.mark.parametrize("window", [None, 20])
@pytest.mark.parametrize("law", [D.geometric(0.9), D.uniform(0, 40)], ids=lambda l: type(l).__name__)
def test_unbiasedness_monte_carlo(window, law):
    """E[S_k(T) | actions] = theta_k Ñ_k(T) (K=2, T=60, m=20, rho=0.9, theta=(0.3, 0.6))."""
    rng = np.random.default_rng(1)
    T, R = 60, 200_000
    seq = rng.integers(0, 2, T)
    theta = np.array([0.3, 0.6])
    env = E.conversions(theta, law)
    st = final_state(env, C.conversions(window=window), fixed_actions(V.delayed_klucb(law, window), seq), T, R, key=5)
    s = st.s
    mean, se = s.mean(0), s.std(0) / np.sqrt(R)
    tau = np.asarray(law.cdf(np.arange(T + 1)), np.float64)
    expect = theta * V.n_tilde_direct(seq, tau, T - 1, window, 2)
    assert np.all(np.abs(mean - expect) < 4 * se), (mean, expect, se)
    np.testing.assert_allclose(st.n_tilde[0], V.n_tilde_direct(seq, tau, T - 1, window, 2), rtol=1e-5)


# ------------------------------------------------------------------------- indices
def test_index_vectors_float64():
    with jax.enable_x64(True):
        for s_, n, nt, t, u in [(3, 40, 25, 200, 0.5317598277), (0, 5, 0.02, 10, 119.9631478047),
                                (50, 1000, 865, 5000, 0.1332461545)]:
            got = float(V.delayed_ucb_index(jnp.float64(s_), jnp.float64(n), jnp.float64(nt), jnp.log(jnp.float64(t))))
            assert abs(got - u) < 1e-9, (got, u)
        vec = [(0, 10, math.log(100), 0.4605170186, 0.4605170186), (0.05, 100, math.log(1000), 0.1843063753, 0.1843063753),
               (0.1, 50, math.log(500), 0.3493956334, 0.3493956334), (0.1, 2000, math.log(10000), 0.1334932224, 0.1334932224),
               (0.5, 1000, math.log(5000), 0.5980519837, 0.5980519837), (0.3, 5, math.log(20), 1.0, 1.3504752709),
               (0.02, 0.5, math.log(10), 1.0, 4.7345082032), (1.5, 3, 2.0, 1.5, 3.3894867816)]
        for p, nt, b, u_cap, u_unc in vec:
            args = (jnp.float64(p), jnp.float64(nt), jnp.float64(b))
            assert abs(float(M.poisson_kl_ucb(*args)) - u_cap) < 1e-9
            assert abs(float(M.poisson_kl_ucb(*args, cap=None)) - u_unc) < 1e-9
    assert float(M.poisson_kl_ucb(jnp.float32(0.1), jnp.float32(0.0), jnp.float32(2.0))) == np.inf


def test_index_properties_and_newton_vs_bisection():
    p, nt, b = np.meshgrid(np.linspace(0, 1.2, 25), np.geomspace(0.01, 5000, 25), np.geomspace(0.1, 12, 8))
    p, nt, b = (jnp.asarray(x.ravel(), jnp.float32) for x in (p, nt, b))
    u = M.poisson_kl_ucb(p, nt, b)
    ref = M.poisson_kl_ucb_bisect(p, nt, b)
    assert float(jnp.max(jnp.abs(u - ref))) < 2e-5
    assert bool(jnp.all(u >= jnp.minimum(p, 1.0)))
    inside = u < 1.0
    assert bool(jnp.all(jnp.where(inside, nt * M.kl_poisson(p, u) <= b * (1 + 1e-4) + 1e-5, True)))
    # monotone: non-decreasing in beta, non-increasing in Ñ
    assert bool(jnp.all(M.poisson_kl_ucb(p, nt, b * 1.5) >= u - 1e-6))
    assert bool(jnp.all(M.poisson_kl_ucb(p, nt * 1.5, b) <= u + 1e-6))
    s, n = jnp.float32(3.0), jnp.float32(40.0)
    assert float(V.delayed_ucb_index(s, n, jnp.float32(20.0), 5.0)) > float(V.delayed_ucb_index(s, n, jnp.float32(30.0), 5.0))


def test_lemma8_inequality():
    """(1 - q) d(p, q) <= d_Pois(p, q) <= d(p, q) for 0 < p < q < 1 (Lemma 8)."""
    g = np.linspace(0.005, 0.995, 120)
    p, q = np.meshgrid(g, g)
    keep = p < q
    p, q = jnp.asarray(p[keep]), jnp.asarray(q[keep])
    d, dp = M.kl_bernoulli(p, q), M.kl_poisson(p, q)
    assert bool(jnp.all((1 - q) * d <= dp * (1 + 1e-5) + 1e-7))
    assert bool(jnp.all(dp <= d * (1 + 1e-5) + 1e-7))


def test_scaling_invariance():
    """App. D: tau -> tau / tau_m multiplies the UCB index and the uncapped KL index by tau_m."""
    tau_m = 0.8652056
    s, n, nt, b = jnp.float32(7.0), jnp.float32(120.0), jnp.float32(90.0), jnp.float32(math.log(3000))
    u = V.delayed_ucb_index(s, n, nt, b)
    np.testing.assert_allclose(V.delayed_ucb_index(s, n, nt / tau_m, b), tau_m * u, rtol=1e-6)
    k = V.delayed_klucb_index(s, nt, b, cap=None)
    np.testing.assert_allclose(V.delayed_klucb_index(s, nt / tau_m, b, cap=None), tau_m * k, rtol=1e-5)


# ------------------------------------------------------------------------- behaviour
def test_discarding_blind_phase():
    """With random ties Discarding plays uniformly until ~m + K: R(1000) = 40.0 +- 0.2
    on theta_L (200 runs)."""
    env = E.conversions(THETA_L, LAW)
    o = simulate(env, C.conversions(window=1000), {"u": V.discarding_ucb(LAW, 1000), "k": V.discarding_klucb(LAW, 1000)},
                 1000, jax.random.key(0), 200)
    for x in o.values():
        assert abs(x.regret[:, -1].mean() - 40.0) < 0.6
        assert x.width == 1000 and x.lost_to_W.sum() == 0  # min(m + 1, T): exact


def test_hygiene_no_nan_vmap_loop_replay():
    env = E.conversions(THETA_L, D.geometric(0.99))
    pols = {"d-ucb": V.delayed_ucb(D.geometric(0.99), 100), "d-kl": V.delayed_klucb(D.geometric(0.99), 100),
            "disc": V.discarding_klucb(D.geometric(0.99), 100),
            "online": V.delayed_klucb(window=100, online=True)}
    ch = C.conversions(window=100)
    a = simulate(env, ch, pols, 800, jax.random.key(1), 4)
    b = simulate(env, ch, pols, 800, jax.random.key(1), 4)
    for lab in pols:
        assert np.isfinite(a[lab].regret).all() and np.isfinite(a[lab].delayed_regret).all()
        np.testing.assert_array_equal(a[lab].pulls, b[lab].pulls)
        one = simulate(env, ch, pols[lab], 800, jax.random.key(1), 1, first_run=2)
        np.testing.assert_array_equal(one.pulls[0], a[lab].pulls[2])
    for lab in ("d-kl", "online"):
        st = final_state(env, ch, pols[lab], 800, 3)
        assert np.isfinite(st.n_tilde).all()


def test_random_ties_do_not_favour_arm_order():
    """Reversed arm order gives the same regret law (conventions §10)."""
    out = {}
    for name, th in [("fwd", THETA_L), ("rev", THETA_L[::-1].copy())]:
        o = simulate(E.conversions(th, LAW), C.conversions(window=1000), V.discarding_klucb(LAW, 1000), 2000,
                     jax.random.key(3), 200)
        out[name] = o.regret[:, -1]
    se = np.hypot(out["fwd"].std(), out["rev"].std()) / np.sqrt(200)
    assert abs(out["fwd"].mean() - out["rev"].mean()) < 4 * se


def test_information_hiding_zero_and_late_conversions():
    """Delays of zero outcomes and of conversions after the window are invisible to every policy
    of the family (their actions do not change)."""
    from conftest import actions_of

    rng = np.random.default_rng(4)
    T, m = 600, 30
    R = (rng.random((T, 3)) < [0.3, 0.5, 0.4]).astype(float)
    d = rng.integers(0, 3 * m, T)
    law = D.geometric(0.95)
    pols = {"d-ucb": V.delayed_ucb(law, m), "d-kl": V.delayed_klucb(law, m), "disc": V.discarding_ucb(law, m),
            "online": V.delayed_klucb(window=m, online=True)}
    ch = C.conversions(window=m)
    for lab, pol in pols.items():
        acts = actions_of(simulate(E.oblivious(1 - R, d), ch, pol, T, jax.random.key(0), record=1))[0]
        r = R[np.arange(T), acts]
        d2 = d.copy()
        d2[r == 0] = rng.integers(0, 3 * m, (r == 0).sum())
        late = (r == 1) & (d > m)
        d2[late] = rng.choice([m + 1, 4 * m, D.NEVER], late.sum())
        acts2 = actions_of(simulate(E.oblivious(1 - R, d2), ch, pol, T, jax.random.key(0), record=1))[0]
        np.testing.assert_array_equal(acts, acts2, err_msg=lab)


@pytest.mark.parametrize("bad,match", [
    (lambda: V.delayed_ucb(LAW, window=-1), "window"), (lambda: V.delayed_klucb(LAW, eps=-0.1), "eps"),
    (lambda: V.delayed_klucb("geometric"), "delay"), (lambda: V.delayed_klucb(LAW, cap=0.0), "cap"),
    (lambda: V.discarding_ucb(LAW, 10, bonus="x"), "bonus"), (lambda: V.delayed_ucb(window=0, online=True), "window"),
])
def test_bad_input(bad, match):
    with pytest.raises((ValueError, TypeError), match=match):
        bad()


def test_window_must_match_channel():
    with pytest.raises(ValueError, match="window"):
        simulate(E.conversions(THETA_L, LAW), C.conversions(window=50), V.delayed_ucb(LAW, 100), 10, jax.random.key(0))
    with pytest.raises(ValueError, match="cannot run on the channel"):
        simulate(E.conversions(THETA_L, LAW), C.attributed(), V.delayed_ucb(LAW, 100), 10, jax.random.key(0))
