"""The hardware-pace anchors of the GPU check (docs/benchmarks.md, "On a GPU"): UCB1 written as
plainly and as fast as we know, outside the library, for the library's fused kernels to be
measured against in the same process.

* :func:`cuda_ucb1`: a CUDA C kernel through CuPy, one thread per run, every arm's statistics
  in registers, the same threefry-2x32 (20 rounds) words as the library's fused path (world key
  per run, counter ``(t, 0)``: the reward uniform and the tie uniform), float32 regret recorded
  at the record points. CuPy is on the GPU machine's image; elsewhere the row reports why not.
* :func:`pallas_ucb1`: a minimal Pallas kernel in the lanes layout (runs on lanes, arms
  unrolled), written without the library: the layout's own ceiling in Triton.

Both take the world key words of every run (``ke0, ke1``, as ``jaxbandits.engine.fused.path.run_keys_words``
gives them), the arm means and the record rounds, and return the regret records ``[R, runs]``.
"""
from __future__ import annotations

import functools

import numpy as np

_CUDA = r"""
#define ROTL(x, r) (((x) << (r)) | ((x) >> (32 - (r))))
#define MIX(r) { x0 += x1; x1 = ROTL(x1, r) ^ x0; }
__device__ __forceinline__ void threefry(unsigned k0, unsigned k1, unsigned c0, unsigned c1,
                                         unsigned &o0, unsigned &o1) {
    unsigned k2 = k0 ^ k1 ^ 0x1BD11BDAu;
    unsigned x0 = c0 + k0, x1 = c1 + k1;
    MIX(13) MIX(15) MIX(26) MIX(6)  x0 += k1; x1 += k2 + 1u;
    MIX(17) MIX(29) MIX(16) MIX(24) x0 += k2; x1 += k0 + 2u;
    MIX(13) MIX(15) MIX(26) MIX(6)  x0 += k0; x1 += k1 + 3u;
    MIX(17) MIX(29) MIX(16) MIX(24) x0 += k1; x1 += k2 + 4u;
    MIX(13) MIX(15) MIX(26) MIX(6)  x0 += k2; x1 += k0 + 5u;
    o0 = x0; o1 = x1;
}
__device__ __forceinline__ float unif(unsigned w) { return ((float)(w >> 9) + 0.5f) * (1.0f / 8388608.0f); }

extern "C" __global__ void ucb1(const unsigned *ke0, const unsigned *ke1, const float *mu_in, const int *rec,
                                int n, int T, int R, float *out) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= n) return;
    unsigned k0 = ke0[r], k1 = ke1[r];
    float mu[KARMS], cnt[KARMS], sum[KARMS];
    float best = -1e30f;
#pragma unroll
    for (int k = 0; k < KARMS; ++k) { mu[k] = mu_in[k]; cnt[k] = 0.f; sum[k] = 0.f; best = fmaxf(best, mu[k]); }
    float reg = 0.f, comp = 0.f;
    int i = 0, next = rec[0];
    for (int t = 0; t < T; ++t) {
        unsigned w0, w1;
        threefry(k0, k1, (unsigned)t, 0u, w0, w1);
        float u = unif(w0), v = unif(w1);
        float lt = logf((float)t + 1.0f);
        float idx[KARMS], m = -__int_as_float(0x7f800000);
#pragma unroll
        for (int k = 0; k < KARMS; ++k) {
            float nn = fmaxf(cnt[k], 1.0f);
            idx[k] = cnt[k] > 0.f ? sum[k] / nn + sqrtf(2.0f * lt / nn) : __int_as_float(0x7f800000);
            m = fmaxf(m, idx[k]);
        }
        int c = 0;
#pragma unroll
        for (int k = 0; k < KARMS; ++k) c += idx[k] >= m;
        int j = (int)floorf(v * (float)c), seen = 0, a = 0;
        bool found = false;
#pragma unroll
        for (int k = 0; k < KARMS; ++k) {
            seen += idx[k] >= m;
            if (!found && idx[k] >= m && seen > j) { a = k; found = true; }
        }
        float mua = 0.f;
#pragma unroll
        for (int k = 0; k < KARMS; ++k) mua = (a == k) ? mu[k] : mua;
        float x = u < mua ? 1.f : 0.f;
#pragma unroll
        for (int k = 0; k < KARMS; ++k) { cnt[k] += (a == k); sum[k] += (a == k) ? x : 0.f; }
        float y = (best - mua) - comp, s2 = reg + y;
        comp = (s2 - reg) - y; reg = s2;
        if (t == next) { out[(size_t)i * n + r] = reg; ++i; next = i < R ? rec[i] : -1; }
    }
}
"""


def cuda_ucb1(ke0, ke1, mu, rec, T, block=128, fast_math=False):
    """``(run(), compile_s)``: ``run()`` launches the CUDA anchor on CuPy arrays and returns the
    ``[R, n]`` regret records (synchronised). ``fast_math``: NVRTC's ``--use_fast_math``
    (approximate ``logf``, ``sqrtf`` and division: other bits, the arithmetic ceiling). Raises
    ImportError without CuPy."""
    import time

    import cupy as cp

    K = len(mu)
    t0 = time.perf_counter()
    opts = ("-std=c++17",) + (("--use_fast_math",) if fast_math else ())
    kern = cp.RawKernel(_CUDA.replace("KARMS", str(K)), "ucb1", options=opts)
    kern.compile()
    compile_s = time.perf_counter() - t0
    n, R = int(ke0.shape[0]), int(len(rec))
    k0 = cp.asarray(np.asarray(ke0), cp.uint32)
    k1 = cp.asarray(np.asarray(ke1), cp.uint32)
    m = cp.asarray(np.asarray(mu, np.float32))
    rc = cp.asarray(np.asarray(rec, np.int32))
    out = cp.zeros((R, n), cp.float32)

    def run():
        kern(((n + block - 1) // block,), (block,), (k0, k1, m, rc, np.int32(n), np.int32(T), np.int32(R), out))
        cp.cuda.Device().synchronize()
        return out

    return run, compile_s


def pallas_ucb1(n_pad, K, R, block=128, num_warps=4, interpret=False):
    """The minimal lanes-layout Pallas UCB1: ``f(mu[K], rec[R], ke0[n], ke1[n]) -> regret [R, n]``."""
    import jax
    import jax.numpy as jnp
    from jax import lax
    from jax.experimental import pallas as pl

    if n_pad % block:
        raise ValueError(f"pallas_ucb1 runs whole blocks: n_pad={n_pad} is not a multiple of block={block}")
    F, U = jnp.float32, jnp.uint32

    def threefry(k0, k1, c0, c1):
        rot = ((13, 15, 26, 6), (17, 29, 16, 24))
        ks = (k0, k1, k0 ^ k1 ^ U(0x1BD11BDA))
        x0, x1 = c0 + ks[0], c1 + ks[1]
        for i in range(5):
            for r in rot[i % 2]:
                x0 = x0 + x1
                x1 = ((x1 << U(r)) | (x1 >> U(32 - r))) ^ x0
            x0 = x0 + ks[(i + 1) % 3]
            x1 = x1 + ks[(i + 2) % 3] + U(i + 1)
        return x0, x1

    unif = lambda w: ((w >> U(9)).astype(F) + F(0.5)) * F(2.0**-23)

    def kernel(mu_ref, rec_ref, k0_ref, k1_ref, out_ref):
        k0, k1 = k0_ref[...], k1_ref[...]
        mu = [mu_ref[pl.ds(k, 1)][0] for k in range(K)]
        best = functools.reduce(jnp.maximum, mu)
        z = jnp.zeros((block,), F)

        def rnd(t, st):
            n, s, reg, comp = st
            w0, w1 = threefry(k0, k1, t.astype(U), U(0))
            u, v = unif(w0), unif(w1)
            lt = jnp.log(t.astype(F) + F(1.0))
            idx = [jnp.where(n[k] > 0, s[k] / jnp.maximum(n[k], 1.0) + jnp.sqrt(2.0 * lt / jnp.maximum(n[k], 1.0)),
                             jnp.inf) for k in range(K)]
            m = functools.reduce(jnp.maximum, idx)
            c = functools.reduce(lambda x, y: x + y, [(x >= m).astype(jnp.int32) for x in idx])
            j = jnp.floor(v * c.astype(F)).astype(jnp.int32)
            a, seen = jnp.zeros((block,), jnp.int32), jnp.zeros((block,), jnp.int32)
            done = jnp.zeros((block,), bool)
            for k in range(K):
                tie = idx[k] >= m
                seen = seen + tie.astype(jnp.int32)
                hit = tie & (seen > j) & ~done
                a, done = jnp.where(hit, k, a), done | hit
            mua = functools.reduce(lambda acc, k: jnp.where(a == k, mu[k], acc), range(K), z)
            x = (u < mua).astype(F)
            n = [n[k] + (a == k).astype(F) for k in range(K)]
            s = [s[k] + jnp.where(a == k, x, 0.0) for k in range(K)]
            y = (best - mua) - comp
            s2 = reg + y
            return n, s, s2, (s2 - reg) - y

        def seg(i, carry):
            st, lo = carry
            hi = rec_ref[pl.ds(i, 1)][0] + 1
            st = lax.fori_loop(lo, hi, rnd, st)
            out_ref[pl.ds(i, 1), :] = st[2][None, :]
            return st, hi

        lax.fori_loop(0, R, seg, (([z] * K, [z] * K, z, z), jnp.int32(0)))

    kw = {}
    if not interpret:
        from jax.experimental.pallas import triton as pltriton

        kw["compiler_params"] = pltriton.CompilerParams(num_warps=num_warps, num_stages=1)
    runs = pl.BlockSpec((block,), lambda i: (i,))
    return jax.jit(pl.pallas_call(
        kernel, grid=(n_pad // block,),
        in_specs=[pl.BlockSpec((K,), lambda i: (0,)), pl.BlockSpec((R,), lambda i: (0,)), runs, runs],
        out_specs=pl.BlockSpec((R, block), lambda i: (0, i)),
        out_shape=jax.ShapeDtypeStruct((R, n_pad), F), interpret=interpret, name="anchor_pallas_ucb1", **kw))
