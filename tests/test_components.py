"""The engine's components from a user's side: a channel and a world written here, outside the
package, from the documented protocols alone; the public round in a user's own ``lax.scan``;
compile once; device memory = records + state."""
import dataclasses
from typing import Optional

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

import jaxbandits as jb
from jaxbandits import channels as C
from jaxbandits import delays as D
from jaxbandits import engine
from jaxbandits import envs as E
from jaxbandits.core.mathlib import kahan_add
from jaxbandits.policies import adversarial as A
from jaxbandits.policies import anonymous as AN
from jaxbandits.policies import bayes as PB
from jaxbandits.policies import classic as P
from jaxbandits.policies import composite as W
from jaxbandits.policies import conversions as V
from jaxbandits.policies import linear as L
from jaxbandits.core.types import NEVER, Delivery, Feedback
from conftest import actions_of


# ----------------------------------------------------------------------------- a user's channel
@dataclasses.dataclass(frozen=True)
class BatchedPostbacks(C.Channel):
    """Conversions reported in batches every ``batch`` rounds, as ad postbacks often are: a
    conversion of the play of round ``s`` with delay ``d`` is reported at the end of its batch,
    round ``(floor((s + d) / B) + 1) B - 1``; only positive outcomes are reported, and the policy
    sees the reporting lag, never the exact conversion time."""

    batch: int = 10
    width: Optional[int] = None
    feedback = Feedback(attributed=True, zeros_observed=False)

    def resolve_width(self, world, horizon, payload_size, n_runs, max_hold=0):
        return self.width or min(horizon, world.max_delay + self.batch)

    def init(self, spec):
        return C.calendar_init(spec.width, spec.payload_size)

    def round(self, spec, cal, play):
        t, out = play.t, play.outcome
        B = self.batch
        report = (t + jnp.minimum(out.delay, NEVER)) // B * B + B - 1
        lag = report - t
        ok = (out.reward > 0) & (out.delay < NEVER) & (report <= spec.horizon - 1)
        cal, got = C.calendar_round(cal, t, play.payload(jnp.float32(1.0), lag), lag, ok)
        return cal, Delivery(got)

    def lost(self, cal):
        return cal.lost


LAW = D.geometric(mean=6.0)
ACCEPTED = {  # every library policy whose needs the batched channel meets (K-armed worlds)
    "random": lambda: P.uniform_random(),
    "UCB1": lambda: P.ucb1(),
    "KL-UCB": lambda: P.kl_ucb(),
    "Thompson": lambda: P.thompson(),
    "Gaussian TS": lambda: P.gaussian_thompson(),
    "DelayedUCB": lambda: V.delayed_ucb(LAW, None),
    "DelayedKLUCB": lambda: V.delayed_klucb(LAW, None),
    "DelayedUCB online": lambda: V.delayed_ucb(None, None, online=True),
}
REFUSED = {  # policy -> the feedback property it names
    "Exp3": (lambda: P.exp3(), "zeros_observed"),
    "DEW": (lambda: A.dew(0.1), "zeros_observed"),
    "Skipper-DEW": (lambda: A.skipper_dew(5.0, 0.1), "zeros_observed"),
    "Doubling": (lambda: A.doubling(), "zeros_observed"),
    "ODAAF": (lambda: AN.odaaf(6.0), "attributed"),
    "QPM-D": (lambda: AN.qpmd(), "zeros_observed"),
    "ARS-UCB": (lambda: W.ars_ucb(), "attributed"),
    "ARS-EXP3": (lambda: W.ars_exp3(), "attributed"),
    "Discarding-UCB": (lambda: V.discarding_ucb(LAW, 20), "window"),
    "DelayedUCB m=20": (lambda: V.delayed_ucb(LAW, 20), "window"),
    "OTFLinUCB": (lambda: L.otf_linucb(20), "window"),
    "Beta TS": (lambda: PB.beta_ts(window=20), "reveal_ages"),
}


def _batched_worlds(T, B, seed=0):
    """Two worlds with the same rewards whose delays differ only inside each batch (what the
    channel hides), and a third whose delays cross batch boundaries (what it shows)."""
    rng = np.random.default_rng(seed)
    s = np.arange(T)
    d1 = rng.integers(0, 3 * B, T)
    report = (s + d1) // B
    lo, hi = np.maximum(report * B - s, 0), report * B + B - 1 - s
    d2 = rng.integers(lo, hi + 1)
    assert np.all((s + d2) // B == report) and np.any(d2 != d1)
    d3 = d1 + B
    theta = [0.55, 0.45, 0.35]
    return [E.conversions(theta, D.sequence(d)) for d in (d1, d2, d3)]


def test_user_channel_runs_with_every_policy_whose_needs_it_meets_and_hides_what_it_hides():
    T, B, runs = 400, 10, 3
    ch = BatchedPostbacks(batch=B)
    w1, w2, w3 = _batched_worlds(T, B)
    pols = {lab: f() for lab, f in ACCEPTED.items()}
    o1 = jb.simulate(w1, ch, pols, T, jax.random.key(0), runs, record=1)
    o2 = jb.simulate(w2, ch, pols, T, jax.random.key(0), runs, record=1)
    o3 = jb.simulate(w3, ch, pols, T, jax.random.key(0), runs, record=1)
    changed = 0
    for lab in pols:
        a1, a2, a3 = actions_of(o1[lab]), actions_of(o2[lab]), actions_of(o3[lab])
        np.testing.assert_array_equal(a1, a2, err_msg=lab)  # delays inside a batch are hidden
        assert np.isfinite(o1[lab].regret).all() and o1[lab].lost_to_W.sum() == 0
        changed += (a1 != a3).any()
    assert changed >= len(pols) - 2  # batch-crossing delays are seen: the test can fail
    # conversions do arrive only at batch ends: a recorder sees nothing elsewhere
    from helpers import recorder

    st = jb.simulate(w1, ch, recorder(T, 3), T, jax.random.key(0), 1)
    assert st.regret.shape == (1, 200)


def test_user_channel_deliveries_at_batch_ends_exactly():
    """What arrives, round by round, against a numpy recount of the batched reports."""
    from conftest import final_state, reward_uniforms
    from helpers import recorder

    T, B, K = 120, 7, 3
    w1 = _batched_worlds(T, B, seed=1)[0]
    log = final_state(w1, BatchedPostbacks(batch=B), recorder(T, K), T).log[0]
    u = reward_uniforms(T)
    d = np.asarray(w1.delay.delays)
    ref = np.zeros((T, T))
    for s in range(T):
        r = float(u[s] < [0.55, 0.45, 0.35][s % K])
        rep = ((s + d[s]) // B + 1) * B - 1
        if r > 0 and rep <= T - 1:
            ref[rep, s] = 2.0  # the recorder's payload: reward 1 (a conversion) + 1
    np.testing.assert_array_equal(log, ref)
    assert (log.sum(1)[np.arange(T) % B != B - 1] == 0).all()


@pytest.mark.parametrize("lab", sorted(REFUSED))
def test_user_channel_refused_with_the_missing_property_named(lab):
    make, prop = REFUSED[lab]
    env = E.linear(np.ones(3) / 3, n_actions=4) if lab == "OTFLinUCB" else E.conversions([0.5, 0.4], LAW)
    with pytest.raises(ValueError, match=f"cannot run on the channel.*{prop}"):
        jb.simulate(env, BatchedPostbacks(), make(), 50, jax.random.key(0))


# ----------------------------------------------------------------------------- a user's world
class Seasonal(jb.World):
    """Arm 0's mean swings with a period; arm 1 is steady. Written from the World protocol only."""

    def __init__(self, amp, period):
        self.n_arms = 2
        self.amp, self.period = amp, period
        self.delay = D.fixed(2)

    def means(self, state, t, features):
        m0 = 0.5 + self.amp * jnp.sin(2 * jnp.pi * t / self.period)
        return jnp.stack([m0, jnp.float32(0.5)]).astype(jnp.float32)

    def outcome(self, state, t, action, u, v, features, key):
        mu = self.means(state, t, features)
        return jb.Outcome(reward=(u < mu[action]).astype(jnp.float32), delay=self.delay_at(state, t, v)), state


def test_user_world_regret_matches_an_exact_computation():
    T, amp, per = 240, 0.3, 24
    world = Seasonal(amp, per)
    out = jb.simulate(world, C.attributed(), {"UCB1": P.ucb1(), "random": P.uniform_random()}, T,
                      jax.random.key(3), 4, record=1)
    t = np.arange(T)
    m0 = 0.5 + amp * np.sin(2 * np.pi * t / per)
    mu = np.stack([m0, np.full(T, 0.5)], 1)
    gaps = mu.max(1)[:, None] - mu  # [T, 2]
    acts = actions_of(out["UCB1"])
    ref = np.cumsum(gaps[t, acts], axis=1)
    np.testing.assert_allclose(out["UCB1"].regret, ref, rtol=2e-6, atol=2e-5)
    # the uniform policy's expected regret is exact and independent of its draws: sum_t mean(gap_t)
    np.testing.assert_allclose(out["random"].expected_regret, np.broadcast_to(np.cumsum(gaps.mean(1)), (4, T)),
                               rtol=2e-6, atol=2e-5)
    assert out["UCB1"].width == 3  # calendar sized from the world's max_delay (2) + 1


def test_world_protocol_errors_are_clear():
    class NoArms(jb.World):
        pass

    with pytest.raises(ValueError, match="n_arms"):
        jb.simulate(NoArms(), C.attributed(), P.ucb1(), 10, jax.random.key(0))
    with pytest.raises(TypeError, match="World"):
        jb.simulate(object(), C.attributed(), P.ucb1(), 10, jax.random.key(0))


# ----------------------------------------------------------------------------- the public round
CASES = {
    "conversions": (lambda: E.conversions([0.6, 0.5, 0.3], D.geometric(mean=8.0)), lambda: C.conversions(window=30),
                    {"TS": lambda: P.thompson(), "DKLUCB": lambda: V.delayed_klucb(D.geometric(mean=8.0), 30)}),
    "composite": (lambda: E.composite([0.7, 0.4, 0.2], profile=[0.5, 0.3, 0.2]), lambda: C.composite(),
                  {"ARS-EXP3": lambda: W.ars_exp3()}),
    "adversarial": (lambda: E.bernoulli_losses(3, 0.2, delays=D.fixed(3), horizon=300), lambda: C.attributed(),
                    {"DEW": lambda: A.dew(0.2)}),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_public_round_in_a_users_scan_is_bitwise_simulate(case):
    make_env, make_ch, pols = CASES[case]
    env, ch = make_env(), make_ch()
    T, runs, key = 300, 3, jax.random.key(11)
    for lab, mk in pols.items():
        pol = mk()
        sim = jb.simulate(env, ch, pol, T, key, runs, record=1)
        prob = engine.problem(env, ch, pol, T)

        def one_run(r):
            def body(c, t):
                state, rew, rew_c, n_best = c
                state, step = engine.round(prob, state, t)
                rew, rew_c = kahan_add(rew, rew_c, step.reward)
                return (state, rew, rew_c, n_best + (step.action == 0)), step.action

            z = jnp.zeros((), jnp.float32)
            (_, rew, _, n0), acts = lax.scan(body, (engine.init(prob, key, r), z, z, 0), jnp.arange(T))
            return acts, rew, n0

        acts, rew, n0 = jax.jit(jax.vmap(one_run))(jnp.arange(runs))
        np.testing.assert_array_equal(np.asarray(acts), actions_of(sim), err_msg=lab)
        np.testing.assert_array_equal(np.asarray(rew), sim.reward[:, -1], err_msg=lab)  # bitwise
        np.testing.assert_array_equal(np.asarray(n0), sim.pulls[:, -1, 0])  # a metric of one's own


# ----------------------------------------------------------------------------- compile once
def test_second_identical_simulate_compiles_nothing():
    import jax.monitoring as mon

    env = E.conversions([0.5, 0.4, 0.3], D.geometric(mean=10.0))
    ch = C.conversions(window=40)
    pols = {"UCB1": P.ucb1(), "DKLUCB": V.delayed_klucb(D.geometric(mean=10.0), 40)}
    events = []
    mon.register_event_duration_secs_listener(
        lambda name, dur, **kw: events.append(name) if name == "/jax/core/compile/backend_compile_duration" else None)
    first = jb.simulate(env, ch, pols, 500, jax.random.key(1), 8, chunk=100)
    n_first = len(events)
    second = jb.simulate(env, ch, pols, 500, jax.random.key(2), 8, chunk=100)  # another seed: same program
    assert n_first >= 2 and len(events) == n_first, events[n_first:]
    assert second["UCB1"].timing["compile_s"] == 0.0 < first["UCB1"].timing["compile_s"]
    assert not np.array_equal(first["UCB1"].regret, second["UCB1"].regret)


def test_chunks_padded_to_one_program_and_chunked_equals_whole():
    env = E.conversions([0.5, 0.4, 0.3], D.geometric(mean=10.0))
    ch = C.conversions(window=40)
    pol = V.delayed_ucb(D.geometric(mean=10.0), 40)
    whole = jb.simulate(env, ch, pol, 700, jax.random.key(5), 4, record=("log", 30))
    parts = jb.simulate(env, ch, pol, 700, jax.random.key(5), 4, record=("log", 30), chunk=90)
    for f in ("regret", "expected_regret", "reward", "pulls", "delayed_regret", "lost_to_W"):
        np.testing.assert_array_equal(getattr(whole, f), getattr(parts, f), err_msg=f)


# ----------------------------------------------------------------------------- memory
def test_device_memory_is_records_plus_state():
    """1e5 runs, 200 record points (K=10, T=1e4): the compiled program's memory analysis (no run)."""
    from jaxbandits.engine import memory

    env = E.bernoulli(np.linspace(0.1, 0.9, 10))
    n = 100_000
    prob = engine.problem(env, C.attributed(), P.ucb1(), 10_000, n_runs=n)
    mem = memory.program_memory({"UCB1": prob}, n, engine.record_points(10_000))
    R = 200
    assert mem["records"] == n * R * (3 + 10 + 1) * 4  # regret, expected regret, reward, pulls[K], lost
    assert mem["device"] <= 1.5 * (mem["records"] + mem["state"]), mem
    assert mem["state"] < 0.1 * mem["records"]  # the carry holds no record
