"""Vernade et al. (2017) policies: DelayedKLUCB and DelayedUCB, censored, geometric delays
(rho = 0.998), K = 3, m = 1000, T = 1e4, 1000 runs: run-steps/s and compile time of the library's
generic simulator, against a hand-fused scan of the same DelayedKLUCB (calendar, ring and O(K)
recursions written by hand, writes before reads) on the same device count.

    python benchmarks/conversions.py [--devices N] [--runs 1000]
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from _child import run_child  # noqa: E402

CHILD = r"""
import json, os, sys, time
cfg = json.loads(sys.argv[1])
os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + f" --xla_force_host_platform_device_count={cfg['devices']}").strip()
import jax, jax.numpy as jnp, numpy as np
from jax import lax
from jaxbandits import channels as C, delays as D, envs as E, mathlib as M
from jaxbandits.policies import conversions as V
from jaxbandits.engine import simulate
T, m, N = cfg["T"], cfg["m"], cfg["runs"]
law = D.geometric(0.998); theta = jnp.array([0.1, 0.05, 0.03]); K = 3
if cfg["what"] != "fused":
    pol = {"DelayedKLUCB": V.delayed_klucb(law, m), "DelayedUCB": V.delayed_ucb(law, m)}[cfg["what"]]
    env = E.conversions(theta, law)
    runs = [simulate(env, C.conversions(window=m), pol, T, jax.random.key(s), N, delayed_regret=False) for s in (0, 1)]
    o = runs[0]
    print(json.dumps({**cfg, "compile_s": o.timing["compile_s"], "run_s": min(r.timing["run_s"] for r in runs),
                      "regret": float(o.final("regret").mean())}))
    raise SystemExit
lr = float(np.log(0.998)); rho = float(np.exp(lr)); tau_m = float(-np.expm1((m + 1) * lr)); W = m + 1
def run_one(r):
    kr = jax.random.fold_in(jax.random.key(0), r)
    def step(c, t):
        cal, n, s, o, w, nc, ring, leave, reg = c
        u = M.uniform(jax.random.fold_in(kr, 2 * t)); v = M.uniform(jax.random.fold_in(kr, 2 * t + 1))
        beta = jnp.log(t + 1.0)
        ok = (n * 0 + 1) > 0
        th = s / jnp.where(nt_of(o, w, nc) > 0, nt_of(o, w, nc), 1.0)
        idx = M.poisson_kl_ucb(th, nt_of(o, w, nc), beta, 1.0, 8)
        a = jnp.where(t < K, t % K, M.argmax_random_tie(idx, M.uniform(jax.random.fold_in(kr, 3 * T + t))))
        x = u < theta[a]; d = law.ppf(v)
        cal = cal.at[(t - 1) % W].set(0.0)
        ea = (jnp.arange(K) == a).astype(jnp.float32)
        cal = cal.at[jnp.where(x & (d <= m) & (d <= T - 1 - t), (t + d) % W, W)].add(ea, mode="drop")
        conv = cal[t % W]
        e_old = (jnp.arange(K) == leave).astype(jnp.float32)
        o = rho * o - np.exp((m + 1) * lr) * e_old + rho * ea; w = w - e_old + ea; nc = nc + e_old
        ring = ring.at[t % m].set(a); leave = ring[(t + 1) % m]
        return (cal, n + ea, s + conv, o, w, nc, ring, leave, reg + theta.max() - theta[a]), None
    z = jnp.zeros(K)
    c0 = (jnp.zeros((W, K)), z, z, z, z, z, jnp.full((m,), -1, jnp.int32), jnp.int32(-1), jnp.float32(0))
    return lax.scan(step, c0, jnp.arange(T))[0][-1]
def nt_of(o, w, nc): return tau_m * nc + w - o
f = jax.jit(jax.vmap(run_one))
if cfg["devices"] > 1:
    mesh = jax.sharding.Mesh(np.array(jax.devices()), ("r",))
    spec = jax.sharding.PartitionSpec("r")
    f = jax.jit(jax.shard_map(jax.vmap(run_one), mesh=mesh, in_specs=spec, out_specs=spec, check_vma=False))
ids = jnp.arange(N)
t0 = time.perf_counter(); c = f.lower(ids).compile(); comp = time.perf_counter() - t0
c(ids).block_until_ready(); t0 = time.perf_counter(); out = c(ids).block_until_ready(); rs = time.perf_counter() - t0
print(json.dumps({**cfg, "compile_s": comp, "run_s": rs, "regret": float(out.mean())}))
"""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=1000)
    ap.add_argument("--devices", type=int, nargs="+", default=[1, len(os.sched_getaffinity(0))])
    ap.add_argument("--out", default="benchmarks/results/conversions.json")
    a = ap.parse_args()
    rows = []
    print(f"{'what':14s} {'dev':>4s} {'run-steps/s':>12s} {'compile s':>10s} {'R(T)':>7s}")
    for dev in dict.fromkeys(a.devices):
        for what in ("DelayedKLUCB", "DelayedUCB", "fused"):
            cfg = {"what": what, "devices": dev, "runs": a.runs, "T": 10_000, "m": 1000}
            row = run_child(CHILD, cfg)
            rows.append(row)
            label = "hand-fused KL" if what == "fused" else what
            print(f"{label:14s} {dev:4d} {row['run_steps_per_s']:12.3e} {row['compile_s']:10.2f} {row['regret']:7.1f}", flush=True)
    os.makedirs(os.path.dirname(a.out), exist_ok=True)
    with open(a.out, "w") as f:
        json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
