"""Cost of Beta draws inside a vmapped scan on CPU: jax.random.beta vs the exact
Marsaglia-Tsang sampler of jaxbandits.core.mathlib (K = 10 arms, 1000 runs, 2000 rounds)."""
import json
import time

import jax
import jax.numpy as jnp

from jaxbandits import mathlib as M

N, T, K = 1000, 2000, 10


def bench(name, draw):
    def body(c, t):
        k = jax.random.fold_in(jax.random.fold_in(jax.random.key(0), c[1]), t)
        a = 1.0 + jnp.arange(K, dtype=jnp.float32) + c[0][:K] * 0
        b = 3.0 + jnp.arange(K, dtype=jnp.float32)[::-1]
        return (c[0] + draw(k, a, b), c[1]), None

    f = jax.jit(jax.vmap(lambda c0, r: jax.lax.scan(body, (c0, r), jnp.arange(T))[0][0]))
    c0, r = jnp.zeros((N, K)), jnp.arange(N)
    f(c0, r).block_until_ready()
    t0 = time.perf_counter()
    f(c0, r).block_until_ready()
    dt = time.perf_counter() - t0
    return {"sampler": name, "run_steps_per_s": N * T / dt, "beta_draws_per_s": N * T * K / dt}


def main():
    base = bench("normal (reference cost)", lambda k, a, b: jax.random.normal(k, (K,)))
    rows = [base, bench("jax.random.beta", jax.random.beta), bench("mathlib.beta_sample", M.beta_sample)]
    for r in rows:
        print(f"{r['sampler']:26s} {r['run_steps_per_s']:10.3e} run-steps/s  {r['beta_draws_per_s']:10.3e} draws/s")
    print(json.dumps(rows))


if __name__ == "__main__":
    main()
