"""Tools for the reference tests: a policy re-implemented in plain numpy float64 is fed the same
world draws as the simulator, rebuilt here from the PRNG rule of conventions §8 (not from the
simulator's code), and must take the same actions."""
import numpy as np

from conftest import actions_of


class Streams:
    """The random streams of one run (conventions §8): ``u[t]`` the reward uniform,
    ``v[t]`` the delay uniform (float64 copies of the float32 draws), ``act_keys[t]`` the key
    ``act`` receives, ``act_u[t]`` the first uniform of that key (what ties and inverse-CDF draws
    use), ``ctx_keys`` / ``world_keys`` the context and world keys, ``init_key`` the policy's."""

    def __init__(self, T, key=0, run=0):
        import jax
        import jax.numpy as jnp

        from jaxbandits.core.mathlib import uniform

        fold = jax.random.fold_in
        k_run = fold(jax.random.key(key), run)
        k_env, k_pol = fold(k_run, 0), fold(k_run, 1)
        ts = jnp.arange(T)
        per_round = lambda k: jax.vmap(lambda t: fold(k, t))(ts)
        unif = lambda ks: np.asarray(jax.vmap(uniform)(ks), np.float64)
        self.setup_key = fold(k_env, 0)
        self.u = unif(per_round(fold(k_env, 1)))
        self.v = unif(per_round(fold(k_env, 2)))
        self.ctx_keys = per_round(fold(k_env, 3))
        self.world_keys = per_round(fold(k_env, 4))
        self.init_key = fold(k_pol, 0)
        self.act_keys = per_round(fold(k_pol, 1))
        self.act_u = unif(self.act_keys)


def argmax_tie_np(values, u, mask=None):
    """Reference of the tie rule (conventions §10): among the indices attaining the maximum,
    take the ``floor(u * count)``-th (0-based)."""
    values = np.asarray(values, np.float64)
    if mask is not None:
        values = np.where(mask, values, -np.inf)
    ties = np.flatnonzero(values >= values.max())
    return int(ties[min(int(np.floor(u * len(ties))), len(ties) - 1)])


def inverse_cdf_np(probs, u):
    """Reference of the inverse-CDF draw from ``probs`` with one uniform ``u``."""
    c = np.cumsum(np.asarray(probs, np.float64))
    return int(min(np.sum(c < u * c[-1]), len(c) - 1))


def play(env, channel, policy, T, n_runs=1, key=0):
    """The simulator's actions, ``[runs, T]`` (int), recorded at every round; for a
    ``{label: policy}`` dict (one compiled program), a dict of them."""
    import jax

    from jaxbandits.engine import simulate

    out = simulate(env, channel, policy, T, jax.random.key(key), n_runs, record=1)
    if isinstance(out, dict):
        return {k: actions_of(o) for k, o in out.items()}
    return actions_of(out)


def f32(x):
    """``x`` rounded to float32, as float64: the value the library holds."""
    return np.asarray(np.asarray(x, np.float32), np.float64)


def world_delays(law, s, T):
    """The world's delay of each round, ``d_t = F^-1(v_t)`` from the delay uniforms of ``s``
    (:class:`Streams`), or a sequence law's own entries (docs/conventions.md)."""
    import jax.numpy as jnp

    from jaxbandits import delays as D

    if isinstance(law, D.Sequence):
        return np.asarray(law.delays, np.int64)[:T]
    return np.asarray(law.ppf(jnp.asarray(s.v, jnp.float32)), np.int64)


def first_mismatch(a, b):
    """Index of the first round where two action sequences differ, or None."""
    a, b = np.asarray(a), np.asarray(b)
    bad = np.flatnonzero(a != b)
    return None if bad.size == 0 else int(bad[0])
