import numpy as np


def actions_of(out):
    """Per-round actions from pulls recorded at every round (record=1): [runs, T]."""
    p = np.asarray(out.pulls)
    first = p[..., :1, :]
    d = np.concatenate([first, np.diff(p, axis=-2)], axis=-2)
    assert (d.sum(-1) == 1).all()
    return d.argmax(-1)


def final_carry(env, channel, policy, T, n_runs=1, key=0):
    """Run one simulation through the simulator's internals and return its final carry (policy
    state, calendar, ...) as numpy arrays (PRNG keys are kept as keys): what tests inspect."""
    import importlib

    import jax
    import jax.numpy as jnp

    S = importlib.import_module("jaxbandits.simulate")
    prob = S._make_problem(lambda _p: (env, policy), env, policy, channel, T, None, n_runs, False)
    c = S._run({"p": prob}, None, jax.random.key(key), n_runs, None, False, False)[0]["p"]
    keep = lambda a: a if jnp.issubdtype(a.dtype, jax.dtypes.prng_key) else np.asarray(a)
    return jax.tree.map(keep, c)


def final_state(env, channel, policy, T, n_runs=1, key=0):
    """The policy's final state after a simulation (see :func:`final_carry`)."""
    return final_carry(env, channel, policy, T, n_runs, key).pol_state


def reward_uniforms(T, key=0, run=0):
    """The REWARD-stream uniforms u_t of one run, from the simulator's own key scheme: a test can
    rebuild the realised rewards ``1{u_t < mean}`` of the actions it recorded."""
    import importlib

    import jax
    import jax.numpy as jnp

    from jaxbandits.mathlib import uniform

    S = importlib.import_module("jaxbandits.simulate")
    keys = S._run_keys(jax.random.key(key), run)[0]
    return np.asarray(jax.vmap(lambda t: uniform(jax.random.fold_in(keys.reward, t)))(jnp.arange(T)), np.float64)
