import numpy as np


def actions_of(out):
    """Per-round actions from pulls recorded at every round (record=1): [runs, T]."""
    p = np.asarray(out.pulls)
    first = p[..., :1, :]
    d = np.concatenate([first, np.diff(p, axis=-2)], axis=-2)
    assert (d.sum(-1) == 1).all()
    return d.argmax(-1)


def run_many(problems, T, n_runs=1, key=0, record=None):
    """``{label: (env, channel, policy)}`` run in ONE compiled program by the engine's driver:
    ``{label: (final run state, records)}`` as numpy (PRNG keys kept as keys; padded runs cut), so
    tests can inspect a policy's state (``state.policy``) and the channel's (``state.channel``)."""
    import jax
    import jax.numpy as jnp

    from jaxbandits.engine import loop, problem, record_points

    probs = {lab: problem(e, ch, pol, T, n_runs=n_runs, delayed_regret=False, label=lab)
             for lab, (e, ch, pol) in problems.items()}
    carries, col, _ = loop.run_problems(probs, None, jax.random.key(key), n_runs, record_points(T, record),
                                        shard=False)
    recs = col.recs
    keep = lambda a: a if jnp.issubdtype(a.dtype, jax.dtypes.prng_key) else np.asarray(a)[:n_runs]
    return {lab: (jax.tree.map(keep, carries[lab].state), recs[lab]) for lab in problems}


def final_carry(env, channel, policy, T, n_runs=1, key=0):
    """The final run state (world, policy and channel states) of one simulation: what tests inspect."""
    return run_many({"p": (env, channel, policy)}, T, n_runs, key)["p"][0]


def final_state(env, channel, policy, T, n_runs=1, key=0):
    """The policy's final state after a simulation (see :func:`final_carry`)."""
    return final_carry(env, channel, policy, T, n_runs, key).policy


def reward_uniforms(T, key=0, run=0):
    """The REWARD-stream uniforms u_t of one run, from the simulator's own key scheme: a test can
    rebuild the realised rewards ``1{u_t < mean}`` of the actions it recorded."""
    import jax
    import jax.numpy as jnp

    from jaxbandits.engine import run_keys
    from jaxbandits.core.mathlib import uniform

    keys = run_keys(jax.random.key(key), run)[0]
    return np.asarray(jax.vmap(lambda t: uniform(jax.random.fold_in(keys.reward, t)))(jnp.arange(T)), np.float64)


# ----------------------------------------------------------------------------- coverage map
# `tools/random_mutants.py --map` runs the default suite under coverage with one context per test.
# Compiled programs are cached across tests (JAX's trace cache, the engine's and the fused path's
# caches), so a test that reuses another's program would not record the lines it depends on; with
# JAXBANDITS_FRESH_TRACES=1 every test starts with no program cached and traces what it runs.
import os as _os

if _os.environ.get("JAXBANDITS_FRESH_TRACES"):
    import pytest as _pytest

    @_pytest.fixture(autouse=True)
    def _fresh_traces():
        import jax

        from jaxbandits import engine
        from jaxbandits.engine.fused import path

        jax.clear_caches()
        engine.clear_cache()
        path.clear_cache()
        yield
