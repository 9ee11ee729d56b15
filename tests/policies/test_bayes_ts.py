"""The in-scan delay-model Thompson policy (spec `bayes_delay_models.md` §4, tests T2, T3, T9) and
the reveal ages of the conversions channel (conventions R3c)."""
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.flatten_util import ravel_pytree
from numpyro.infer.util import potential_energy

from jaxbandits import bayes as B
from jaxbandits import channels as C
from jaxbandits import delays as D
from jaxbandits import envs as E
from jaxbandits.policies import bayes as PB
from jaxbandits.simulate import simulate
from jaxbandits.types import Policy
from tests.conftest import actions_of, final_state


def _simulated_rounds(T, K, p, mean, seed):
    rng = np.random.default_rng(seed)
    arm = rng.integers(0, K, T)
    conv = rng.random(T) < np.asarray(p)[arm]
    d = np.floor(rng.exponential(mean, T)).astype(int)
    return arm, conv, d


def _drive(arm, conv, d, K, M, upto, per_arm=False):
    """Feed ring_update round by round with the reveal ages of a one-play-per-round log."""
    W = M + 1
    rs = PB._empty_stats(K, W, per_arm)
    for t in range(upto):
        rev = np.zeros(W, bool)
        for a in range(min(W, t + 1)):
            s = t - a
            rev[a] = conv[s] and d[s] == a
        rs = PB.ring_update(rs, t, int(arm[t]), jnp.asarray(rev))
    return rs


@pytest.mark.parametrize("per_arm", [False, True])
def test_ring_statistics_equal_the_per_row_likelihood(per_arm):
    """T2: the ring statistics after round t give exactly the per-row log-likelihood of the log
    observed at the end of round t (window M), at several rounds (delay 0, delay M and evictions),
    for a shared delay law and for one law per arm (histogram [K, M+1])."""
    K, M, T = 3, 15, 120
    arm, conv, d = _simulated_rounds(T, K, [0.5, 0.3, 0.2], 6.0, 0)
    d[5], conv[5] = 0, True  # a delay-0 conversion
    d[7], conv[7] = M, True  # a delay-M conversion
    p = jnp.asarray([0.4, 0.35, 0.25])
    th = {"delay_mean": jnp.asarray([7.0, 3.0, 12.0]) if per_arm else jnp.float32(7.0)}
    for upto in (10, 16, 17, 60, 120):
        rs = _drive(arm, conv, d, K, M, upto, per_arm)
        t = upto - 1
        play = np.arange(upto)
        ct = np.where(conv[:upto] & (play + d[:upto] <= t), play + d[:upto], np.nan)
        log = B.conversion_log(arm[:upto], play, ct, t, K)
        ref = float(B.loglik_rows(log.rows(window=M, discrete=True), p, th, "exponential", discrete=True,
                                  per_arm_delay=per_arm))
        got = float(B.loglik_ring(rs, p, th, "exponential", per_arm_delay=per_arm))
        assert got == pytest.approx(ref, rel=1e-5), upto
        assert float(rs.n_closed.sum() + rs.ring_pend.sum() + rs.n_conv.sum()) == upto


def test_in_scan_engine_agrees_with_offline_nuts():
    """T3: the in-scan HMC refresh run on fixed data targets the offline NUTS posterior (means within
    0.2 posterior sd, sds within 15%); Laplace means within 0.3 sd."""
    K, M, T = 3, 255, 600
    arm, conv, d = _simulated_rounds(T, K, [0.10, 0.07, 0.05], 50.0, 3)
    rs = _drive(arm, conv, d, K, M, T)
    kw = dict(n_arms=K, fam="exponential", discrete=True, per_arm_delay=False, priors=None, prior_mean=30.0,
              fixed_delay=None)
    z0, unravel = ravel_pytree(PB.unconstrained_init("exponential", K, False, 30.0, None))
    pot = lambda z: potential_energy(B.conversion_model, (rs,), kw, unravel(z))
    eng0 = PB.Engine(z0, z0, jnp.ones(4), jnp.eye(4), jnp.zeros(()), jnp.zeros((), jnp.int32))

    def chain(engine, n):
        def body(e, k):
            e = PB.refresh_step(pot, e, k, engine)
            return e, e.z if engine == "hmc" else e.mode + e.vec @ (jax.random.normal(k, (4,)) / jnp.sqrt(e.lam))
        return jax.jit(lambda e: jax.lax.scan(body, e, jax.random.split(jax.random.key(0), n)))(eng0)

    eng, zs = chain("hmc", 3000)
    assert float(eng.accept) / 3000 > 0.8
    u = jax.vmap(unravel)(zs[500:])
    hmc = np.column_stack([np.asarray(jax.nn.sigmoid(u["p"])), np.exp(np.asarray(u["delay_mean"]))])
    _, zl = chain("laplace", 3000)
    ul = jax.vmap(unravel)(zl[500:])
    lap = np.column_stack([np.asarray(jax.nn.sigmoid(ul["p"])), np.exp(np.asarray(ul["delay_mean"]))])
    play = np.arange(T)
    ct = np.where(conv & (play + d <= T - 1), play + d, np.nan)
    log = B.conversion_log(arm, play, ct, T - 1, K)
    idata = B.fit(log, "exponential", discrete=True, window=M, prior_mean=30.0, num_chains=2, num_samples=1500)
    nuts = np.column_stack([idata.posterior["p"].values.reshape(-1, K), idata.posterior["delay_mean"].values.ravel()])
    m, s = nuts.mean(0), nuts.std(0)
    assert np.all(np.abs(hmc.mean(0) - m) < 0.2 * s), (hmc.mean(0), m, s)
    assert np.all(np.abs(hmc.std(0) / s - 1) < 0.15), (hmc.std(0), s)
    assert np.all(np.abs(lap.mean(0) - m) < 0.3 * s), (lap.mean(0), m, s)


class _Rev(NamedTuple):
    log: Any


def _rev_recorder(T, H):
    def init(spec, key):
        return _Rev(jnp.zeros((T, H), bool))

    def act(st, ctx, key):
        return (ctx.t % 2).astype(jnp.int32), ()

    def update(st, arr):
        return _Rev(st.log.at[arr.t].set(arr.rev_age))

    return Policy(init, act, update, lambda m, r, d: jnp.ones((1,), jnp.float32), frozenset({"conversions"}),
                  "rev", reveal_window=H)


def test_reveal_ages_flag_exactly_the_revealed_plays():
    """R3c: rev_age[a] at round t is 1 iff the play of round t-a converts with delay a <= window."""
    T, H, m = 80, 12, 9
    d = np.random.default_rng(1).integers(0, 15, T)
    env = E.conversions([0.6, 0.9], D.sequence(d))
    log = final_state(env, C.conversions(window=m), _rev_recorder(T, H), T).log[0]
    from tests.conftest import reward_uniforms

    u = reward_uniforms(T)
    X = u < np.where(np.arange(T) % 2 == 0, np.float32(0.6), np.float32(0.9))
    ref = np.zeros((T, H), bool)
    for s in range(T):
        if X[s] and d[s] <= m and d[s] < H and s + d[s] < T:
            ref[s + d[s], d[s]] = True
    np.testing.assert_array_equal(log, ref)


def test_policies_run_under_vmap_without_nan_and_are_reproducible():
    env = E.conversions([0.05, 0.1, 0.08], D.geometric(mean=20.0))
    pols = {"hmc": PB.delay_model_ts(63, prior_mean=15.0), "lap": PB.delay_model_ts(63, engine="laplace", refresh=5),
            "oracle": PB.delay_model_ts(63, fixed_delay={"delay_mean": 20.0}),
            "weibull": PB.delay_model_ts(63, model="weibull", per_arm_delay=True),
            "naive": PB.beta_ts("naive", 63), "closed": PB.beta_ts("closed", 63)}
    o1 = simulate(env, C.conversions(), pols, 400, jax.random.key(0), 4, record=1)
    o2 = simulate(env, C.conversions(), pols, 400, jax.random.key(0), 4, record=1)
    for k in pols:
        assert np.isfinite(o1[k].regret).all()
        np.testing.assert_array_equal(o1[k].regret, o2[k].regret)
    st = final_state(env, C.conversions(), pols["hmc"], 400, n_runs=2)
    assert (st.eng.n_refresh == 400).all() and (st.eng.accept > 0.5 * 400).all()
    st = final_state(env, C.conversions(), pols["lap"], 400, n_runs=2)
    assert (st.eng.n_refresh == 80).all()  # refresh every 5 rounds


def test_hidden_outcomes_do_not_change_actions():
    """T9: change the conversions of plays that are never revealed (delays past the horizon):
    actions must not change; change a revealed one: they must."""
    T = 300
    d = np.full(T, 10)
    d_hidden = d.copy()
    d_hidden[T - 5:] = 10_000  # the last plays' conversions would arrive after T anyway
    pol = PB.delay_model_ts(31, prior_mean=10.0)
    run = lambda dd, th=(0.3, 0.5): actions_of(simulate(E.conversions(list(th), D.sequence(dd)), C.conversions(), pol,
                                                        T, jax.random.key(2), record=1))[0]
    a = run(d)
    np.testing.assert_array_equal(a, run(d_hidden))
    assert (a != run(d, (0.5, 0.3))).any()


@pytest.mark.parametrize("bad, word", [
    (lambda: PB.delay_model_ts(0), "window"), (lambda: PB.delay_model_ts(10, engine="svi"), "engine"),
    (lambda: PB.delay_model_ts(10, refresh=0), "refresh"), (lambda: PB.delay_model_ts(10, model="histogram"), "histogram"),
    (lambda: PB.delay_model_ts(10, model="weibull", fixed_delay={"delay_mean": 3.0}), "delay_shape"),
    (lambda: PB.beta_ts("fifo"), "mode"),
])
def test_bad_arguments(bad, word):
    with pytest.raises(ValueError, match=word):
        bad()


def test_window_and_channel_checked():
    env = E.conversions([0.1, 0.2], D.geometric(mean=5.0))
    with pytest.raises(ValueError, match="window M=63"):
        simulate(env, C.conversions(window=20), PB.delay_model_ts(63), 10, jax.random.key(0))
    with pytest.raises(ValueError, match="conversions"):
        simulate(env, C.attributed(), PB.delay_model_ts(63), 10, jax.random.key(0))


def test_registered_bayes_experiments_build():
    from jaxbandits import experiments as X

    for name in ("bayes-ts-shared-delay", "bayes-ts-arm-delays"):
        exp = X.get(name)
        env, ch, pols = exp.build(dict(exp.config))
        assert ch.kind == "conversions" and len(pols) >= 5
    assert X.get("bayes-fit-recovery").runner is not None


def test_per_arm_model_beats_naive_when_the_best_arm_is_slow():
    """bayes-ts-arm-delays at a small scale (T = 2000, 16 runs): per-arm joint inference has less
    regret than naive Beta TS, paired (full scale in docs/bayes.md)."""
    from jaxbandits import experiments as X

    exp = X.get("bayes-ts-arm-delays")
    env, ch, pols = exp.build(dict(exp.config))
    keep = {k: pols[k] for k in ("DelayModel TS per-arm (HMC)", "Beta TS (naive)")}
    o = simulate(env, ch, keep, 2000, jax.random.key(0), 16)
    diff = o["Beta TS (naive)"].regret[:, -1] - o["DelayModel TS per-arm (HMC)"].regret[:, -1]
    assert diff.mean() > 2 * diff.std(ddof=1) / np.sqrt(16), diff
