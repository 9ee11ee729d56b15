"""Prints, as one JSON line, the static work per round (``jaxbandits.engine.fused.lowering.round_work``)
of the lanes kernels at K = 10 and of the minimal Pallas anchor (``benchmarks/anchors.py``), each
lowered for CUDA on this machine (run by tests/test_fused.py with the CUDA plugin on the path)."""
import json
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

import jaxbandits as jb  # noqa: E402
from anchors import pallas_ucb1  # noqa: E402
from jaxbandits.engine.fused import lanes  # noqa: E402
from jaxbandits.engine.fused.lowering import round_work  # noqa: E402
from jaxbandits.engine.fused.path import kernel_spec  # noqa: E402
from jaxbandits.policies import classic  # noqa: E402

K, T, R, n = 10, 10_000, 200, 1024
S = jax.ShapeDtypeStruct
lower = lambda f, args: jax.jit(f).trace(*args).lower(lowering_platforms=("cuda",)).as_text()
out = {}
env = jb.envs.bernoulli(np.linspace(0.1, 0.9, K))
for pol in (classic.ucb1(), classic.kl_ucb(), classic.thompson(), classic.gaussian_thompson(), classic.uniform_random()):
    ks, _ = kernel_spec(env, jb.channels.attributed(), pol, T, R, block=128, interpret=False)
    args = (S((ks.k_pad,), jnp.float32), S((ks.r_pad,), jnp.int32)) + (S((n,), jnp.uint32),) * 4
    out[pol.name] = round_work(lower(lanes.build(ks, n), args))
# Thompson at the launch the fused path uses on a GPU (jaxbandits.engine.fused.path.GPU_LAUNCH)
from jaxbandits.engine.fused.path import GPU_LAUNCH  # noqa: E402

b, w = GPU_LAUNCH["thompson"]
ks, _ = kernel_spec(env, jb.channels.attributed(), classic.thompson(), T, R, block=b, interpret=False, num_warps=w)
args = (S((ks.k_pad,), jnp.float32), S((ks.r_pad,), jnp.int32)) + (S((n,), jnp.uint32),) * 4
out["Thompson 32x1"] = round_work(lower(lanes.build(ks, n), args))
# the calendar kernels: DelayedUCB / DelayedKLUCB, geometric delays, m = 1000
from jaxbandits.policies import conversions as CV  # noqa: E402

law = jb.delays.geometric(mean=100.0)
cenv = jb.envs.conversions(np.linspace(0.1, 0.5, K), law)
for name, pol in (("d-ucb", CV.delayed_ucb(law, 1000)), ("d-klucb", CV.delayed_klucb(law, 1000))):
    ks, tau = kernel_spec(cenv, jb.channels.conversions(window=1000), pol, T, R, block=128, interpret=False)
    args = (S((ks.k_pad,), jnp.float32), S((ks.r_pad,), jnp.int32), S(tau.shape, jnp.float32)) + (S((n,), jnp.uint32),) * 4
    out[name] = round_work(lower(lanes.build_delayed(ks, n), args))
args = (S((K,), jnp.float32), S((R,), jnp.int32), S((n,), jnp.uint32), S((n,), jnp.uint32))
out["anchor UCB1"] = round_work(lower(pallas_ucb1(n, K, R), args))
print(json.dumps(out))
