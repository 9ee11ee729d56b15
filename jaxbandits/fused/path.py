"""Which simulations the fused kernels cover, and running them (docs/fused.md).

:func:`unsupported` lists, in words, everything that keeps a simulation off the fused path (an
empty list: it is covered); :func:`simulate_fused` runs a covered one and returns the same
:class:`~jaxbandits.engine.recording.SimOutput` as the scan path.
"""
from __future__ import annotations

import collections
import time
from typing import Dict, List

import jax
import jax.numpy as jnp
import numpy as np

from .. import channels as C
from .. import delays as D
from ..engine.recording import SimOutput, record_points
from ..types import Policy
from ._registry import spec_of

__all__ = ["unsupported", "simulate_fused", "CLASSIC", "DELAYED", "run_keys_words"]

CLASSIC = ("ucb1", "kl_ucb", "thompson", "gaussian_ts")
DELAYED = ("delayed_ucb", "delayed_klucb")
#: runs per program on a GPU (one warp group per block of runs)
GPU_BLOCK = 128


def _world_kind(env):
    """("bernoulli", law) for the library's Bernoulli / conversions worlds, else None."""
    from ..envs.stochastic import BanditEnv

    if type(env) is not BanditEnv or env.noise != "bernoulli":
        return None
    return env.delay


def _no_delay(law):
    return isinstance(law, D.Fixed) and int(law.support_max) == 0


def unsupported(env, channel, policies, *, chunk=None, shard=None, resume=False, grid=False) -> List[str]:
    """Everything that keeps this simulation off the fused path, as sentences (empty: covered)."""
    why = []
    if grid:
        why.append("grids of hyper-parameters (simulate_grid) run on the scan path")
    if resume:
        why.append("resume=True continues a scan-path checkpoint")
    if shard not in (None, False, 1):
        why.append(f"shard={shard!r}: the fused path runs on one device")
    law = _world_kind(env)
    if law is None:
        why.append(f"the world {type(env).__name__} (the fused kernels cover the library's Bernoulli and "
                   "conversions worlds: envs.bernoulli, envs.conversions)")
    pols = {policies.name: policies} if isinstance(policies, Policy) else dict(policies)
    for lab, pol in pols.items():
        sp = spec_of(pol) if isinstance(pol, Policy) else None
        if sp is None:
            why.append(f"policy {lab!r} ({getattr(pol, 'name', type(pol).__name__)}) has no fused kernel "
                       "(covered: UCB1, KL-UCB, Thompson, Gaussian-TS)")
            continue
        if sp.kind in CLASSIC:
            if type(channel) is not C.Attributed:
                why.append(f"policy {lab!r} ({pol.name}) runs fused only on the attributed channel, not {channel}")
            elif law is not None and not _no_delay(law):
                why.append(f"policy {lab!r} ({pol.name}) runs fused only without delay (delay law fixed(0)), "
                           f"got {type(law).__name__}")
            if sp.kind == "thompson" and sp.get("sampler") != "mt":
                why.append(f"policy {lab!r}: Thompson with sampler={sp.get('sampler')!r} (fused: 'mt' only)")
        else:
            why.append(f"policy {lab!r} ({pol.name}): kind {sp.kind!r} has no fused kernel yet")
    if channel.width is not None:
        why.append(f"an explicit calendar width ({channel})")
    return why


def run_keys_words(key, run_ids):
    """Per-run words of the world key ``k_env`` and the policy key ``k_pol`` (conventions §8:
    ``k_run = fold_in(key, r)``, ``k_env = fold_in(k_run, 0)``, ``k_pol = fold_in(k_run, 1)``):
    four ``uint32[n]`` arrays ``(env0, env1, pol0, pol1)``."""
    def one(r):
        k_run = jax.random.fold_in(key, r)
        ke = jax.random.key_data(jax.random.fold_in(k_run, 0)).astype(jnp.uint32)
        kp = jax.random.key_data(jax.random.fold_in(k_run, 1)).astype(jnp.uint32)
        return ke[0], ke[1], kp[0], kp[1]

    return jax.vmap(one)(run_ids)


_CACHE: "collections.OrderedDict" = collections.OrderedDict()


def _program(ks, n_pad):
    """The jitted program of one kernel (cached by its static description and the runs)."""
    from . import kernels as Kn

    k = (ks, n_pad)
    if k not in _CACHE:
        call = Kn.build(ks, n_pad)

        def prog(mu, rec, key, run_ids):
            w = run_keys_words(key, run_ids)
            return call(mu, rec, *w)

        _CACHE[k] = jax.jit(prog)
        while len(_CACHE) > 32:
            _CACHE.popitem(last=False)
    _CACHE.move_to_end(k)
    return _CACHE[k]


def kernel_spec(env, channel, pol, horizon, n_rec, *, block, interpret):
    from . import kernels as Kn

    sp = spec_of(pol)
    K = env.n_arms
    return Kn.KernelSpec(sp.kind, sp.params, K, max(Kn.next_pow2(K), 2), n_rec, Kn.next_pow2(n_rec), block,
                         ("bernoulli",), interpret)


def simulate_fused(env, channel, policies, horizon, key, n_runs=1, *, record=None, first_run=0,
                   interpret=None, block=None) -> Dict[str, SimOutput] | SimOutput:
    """Run a covered simulation on the fused kernels (checked inputs: see ``jaxbandits.simulate``).

    ``interpret`` (default: not on a GPU) runs the kernels through Pallas' interpreter;
    ``block`` runs per program (default 128 on a GPU, 8 interpreted)."""
    from . import kernels as Kn

    single = isinstance(policies, Policy)
    pols = {policies.name: policies} if single else dict(policies)
    if interpret is None:
        interpret = jax.default_backend() != "gpu"
    if block is None:
        block = GPU_BLOCK if not interpret else 8
    block = Kn.next_pow2(block)
    record_at = record_points(horizon, record)
    R = len(record_at)
    n_pad = -(-n_runs // block) * block
    run_ids = jnp.arange(n_pad, dtype=jnp.int32) + jnp.int32(first_run)
    outs, compile_s, run_s = {}, 0.0, 0.0
    mu = None
    for lab, pol in pols.items():
        ks = kernel_spec(env, channel, pol, horizon, R, block=block, interpret=interpret)
        if mu is None:
            mu = jnp.zeros((ks.k_pad,), jnp.float32).at[: ks.n_arms].set(jnp.asarray(env.means_, jnp.float32))
            rec = jnp.full((ks.r_pad,), horizon - 1, jnp.int32).at[:R].set(jnp.asarray(record_at, jnp.int32))
        prog = _program(ks, n_pad)
        t0 = time.perf_counter()
        exe = prog.lower(mu, rec, key, run_ids).compile()
        compile_s += time.perf_counter() - t0
        t0 = time.perf_counter()
        regret, reward, pulls = jax.device_get(exe(mu, rec, key, run_ids))
        run_s += time.perf_counter() - t0
        regret = regret[:n_runs, :R]
        pulls = pulls[:n_runs].reshape(n_runs, ks.r_pad, ks.k_pad)[:, :R, : ks.n_arms]
        outs[lab] = dict(regret=regret, reward=reward[:n_runs, :R], pulls=pulls)
    timing = {"compile_s": compile_s, "run_s": run_s, "devices": 1, "policies_in_program": 1,
              "path": "fused" + (" (interpreted)" if interpret else "")}
    timing["run_steps_per_s"] = n_runs * horizon * len(pols) / max(run_s, 1e-12)
    res = {}
    for lab, o in outs.items():
        res[lab] = SimOutput(t=record_at.astype(np.int64) + 1, regret=o["regret"], expected_regret=o["regret"],
                             reward=o["reward"], pulls=o["pulls"], lost_to_W=np.zeros((n_runs,), np.int32),
                             width=1, timing=dict(timing), delayed_regret=None, arm_totals=None)
    return res[next(iter(res))] if single else res
