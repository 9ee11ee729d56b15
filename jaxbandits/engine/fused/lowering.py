"""Internal: not public API (a contributor's tool, run as ``python -m jaxbandits.engine.fused.lowering``).

Lower every fused kernel for CUDA without a GPU (docs/fused.md, "How it is tested").

    JAX_PLATFORMS=cpu PYTHONPATH=<dir with jax-cuda12-plugin> python -m jaxbandits.engine.fused.lowering [--all]

needs ``jax-cuda12-plugin`` and ``jax-cuda12-pjrt`` of the installed jaxlib's version (installed
without their dependencies: nothing CUDA is loaded, the plugin only registers the platform) and
prints one JSON line per kernel and shape: ``{"kernel", "shape", "ok", "triton", "error"}``.
``ok`` means ``jax.jit(f).trace(...).lower(lowering_platforms=("cuda",))`` succeeded and
``triton`` that the lowered module holds a Triton kernel (``xla.gpu.triton``). This catches what
Pallas cannot lower to Triton (unsupported primitives, block shapes, dtypes); it compiles no PTX
and measures no speed. Each line also gives ``ops`` (the StableHLO operations of the lowered
module: one Triton ``custom_call``, nothing else, so XLA allocates no buffer but the kernel's
arguments and results) and ``bytes`` (those arguments and results: the device memory of the fused
path, records plus state).

    ... python -m jaxbandits.engine.fused.lowering --memory

prints the same accounting at the sizes of ``benchmarks/limits.py`` on a GPU (1e6 runs, K = 10,
T = 1e4, 200 record points; DelayedKLUCB m = 1000 at 1e5 runs), next to the records the scan path
returns for them.
"""
from __future__ import annotations

import json
import sys


def cases(full: bool = False):
    """``(name, env, channel, policy, horizon, records, runs)`` for every fused kernel; ``full``
    adds more shapes (arms, windows, record counts, runs)."""
    import numpy as np

    from ... import channels, envs
    from ...core import delays
    from ...policies import classic
    from ...policies import conversions as CV

    shapes = [(3, 1000, 11, 256)] + ([(10, 10_000, 201, 1024), (17, 500, 500, 128), (2, 1, 1, 128)] if full else [])
    for K, T, R, n in shapes:
        env = envs.bernoulli(np.linspace(0.1, 0.9, K))
        for pol in (classic.ucb1(), classic.kl_ucb(), classic.thompson(), classic.gaussian_thompson()):
            yield pol.name, env, channels.attributed(), pol, T, R, n
    laws = [("geometric", delays.geometric(mean=50.0)), ("weibull", delays.weibull(0.7, 30.0))]
    if full:
        laws += [("fixed", delays.fixed(5)), ("uniform", delays.uniform(0, 40)),
                 ("exponential", delays.exponential(20.0)), ("log_normal", delays.log_normal(2.0, 1.0)),
                 ("pareto", delays.pareto(1.5, 3.0))]
    dshapes = [(3, 1000, 11, 256, 40)] + ([(10, 10_000, 201, 1024, 1000), (5, 300, 300, 128, 7)] if full else [])
    for K, T, R, n, m in dshapes:
        for lname, law in laws:
            env = envs.conversions(np.linspace(0.1, 0.5, K), law)
            pols = [CV.delayed_ucb(law, m), CV.delayed_klucb(law, m)]
            if lname == "geometric" or full:  # the classic policies on the conversions channel
                pols += [classic.ucb1(), classic.kl_ucb(), classic.thompson(), classic.gaussian_thompson()]
            for pol in pols:
                yield f"{pol.name}/{lname}/m={m}", env, channels.conversions(window=m), pol, T, R, n


def memory_cases():
    """The configurations of ``benchmarks/limits.py`` on a GPU."""
    import numpy as np

    from ... import channels, envs
    from ...core import delays
    from ...policies import classic
    from ...policies import conversions as CV

    env = envs.bernoulli(np.linspace(0.1, 0.9, 10))
    for pol in (classic.ucb1(), classic.kl_ucb(), classic.thompson()):
        yield pol.name, env, channels.attributed(), pol, 10_000, 200, 1_000_000
    law = delays.geometric(mean=100.0)
    yield ("DelayedKLUCB/m=1000", envs.conversions(np.linspace(0.1, 0.5, 10), law),
           channels.conversions(window=1000), CV.delayed_klucb(law, 1000), 10_000, 200, 100_000)


def _bytes(structs) -> int:
    import numpy as np

    return int(sum(int(np.prod(x.shape)) * np.dtype(x.dtype).itemsize for x in structs))


def lower_all(full: bool = False, memory: bool = False):
    import re

    import jax
    import jax.numpy as jnp

    from . import kernels as Kn
    from .path import kernel_spec

    S = jax.ShapeDtypeStruct
    for name, env, ch, pol, T, R, n in (memory_cases() if memory else cases(full)):
        ks, tau = kernel_spec(env, ch, pol, T, R, block=128, interpret=False)
        n_pad = -(-n // ks.block) * ks.block
        runs = (S((n_pad,), jnp.uint32),) * 4
        from . import lanes

        if ks.world[0] == "conversions":
            f, args = lanes.build_delayed(ks, n_pad), (S((ks.k_pad,), jnp.float32), S((ks.r_pad,), jnp.int32),
                                                    S(tau.shape, jnp.float32)) + runs
        else:
            f, args = lanes.build(ks, n_pad), (S((ks.k_pad,), jnp.float32), S((ks.r_pad,), jnp.int32)) + runs
        rec = {"kernel": name, "shape": {"K": env.n_arms, "T": T, "records": R, "runs": n}}
        try:
            text = jax.jit(f).trace(*args).lower(lowering_platforms=("cuda",)).as_text()
            rec.update(ok=True, triton="xla.gpu.triton" in text, error=None)
            if rec["triton"]:
                rec["work"] = round_work(text)
            outs = jax.eval_shape(f, *args)
            n_rec = 3 if ks.world[0] != "conversions" else 4  # regret, reward, pulls (+ L(t))
            rec.update(ops=sorted(set(re.findall(r"= stablehlo\.(\w+)", text))),
                       bytes={"arguments": _bytes(args), "records": _bytes(outs[:n_rec]),
                              "work_space": _bytes(outs[n_rec:]),  # lost_to_W counts, ring, calendar
                              # the same records without the padding of runs and arm lanes (4 bytes each)
                              "records_unpadded": n * R * 4 * (n_rec - 1 + env.n_arms)})
        except Exception as e:  # report every kernel, not just the first failure
            rec.update(ok=False, triton=False, error=f"{type(e).__name__}: {str(e)[:2000]}")
        yield rec


# ----------------------------------------------------------------------------- every library policy
#: why an algorithm of the library has no fused kernel (docs/fused.md, "What runs where")
NO_KERNEL_WHY = {
    "exponential weights": "exponential weights over all arms with importance-weighted losses and an "
                           "inverse-CDF draw: elementwise per arm, it would lower, but no lanes kernel is written yet",
    "schedules": "phases, blocks or per-arm queues of rewards (schedules decided from tables and counters that "
                 "change shape with the phase): the scan path",
    "linear": "a d x d design matrix, its Cholesky factor and triangular solves every round: the scan path",
    "bayes": "a posterior refreshed by Newton/HMC steps over a window every round: the scan path",
    "discarding": "the calendar kernel with N~ = tau_m N^closed would do; not written yet",
    "wrapper": "a wrapper around another policy (its law is read from the base policy's draws): the scan path",
    "sampler": "Thompson with sampler='jax' (jax.random.beta): the fused kernels draw Marsaglia-Tsang gammas",
}


def library_policies():
    """``(family, name, env, channel, policy)`` for every algorithm of the library's policies, each in
    the world and channel it is built for (families: ``"fused"`` or a key of :data:`NO_KERNEL_WHY`)."""
    import numpy as np

    from ... import channels, envs
    from ...core import delays
    from ...policies import adversarial as A
    from ...policies import anonymous as AN
    from ...policies import bayes as BY
    from ...policies import classic as C
    from ...policies import composite as CO
    from ...policies import conversions as CV
    from ...policies import explore as E
    from ...policies import linear as L

    means = np.array([0.2, 0.5, 0.7])
    law = delays.geometric(mean=20.0)
    bern, att = envs.bernoulli(means), channels.attributed()
    conv_env, conv = envs.conversions(means, law), channels.conversions(window=50)
    delayed = envs.bernoulli(means, delays.fixed(3))
    lin = envs.linear(np.array([0.3, 0.1, 0.2]), n_actions=5)
    rows = [("fused", "UCB1", bern, att, C.ucb1()), ("fused", "KL-UCB", bern, att, C.kl_ucb()),
            ("fused", "Thompson", bern, att, C.thompson()), ("fused", "Gaussian-TS", bern, att, C.gaussian_thompson()),
            ("fused", "uniform random", bern, att, C.uniform_random()),
            ("fused", "DelayedUCB", conv_env, conv, CV.delayed_ucb(law, 50)),
            ("fused", "DelayedKLUCB", conv_env, conv, CV.delayed_klucb(law, 50)),
            ("sampler", "Thompson (sampler='jax')", bern, att, C.thompson(sampler="jax")),
            ("exponential weights", "Exp3", delayed, att, C.exp3(eta=0.1)),
            ("exponential weights", "DEW", delayed, att, A.dew(0.1, 3.0)),
            ("exponential weights", "Skipper(DEW)", delayed, att, A.skipper_dew(5.0)),
            ("exponential weights", "Doubling", delayed, channels.action_time(), A.doubling()),
            ("exponential weights", "ARS-EXP3", delayed, channels.composite(), CO.ars_exp3()),
            ("wrapper", "Skipper(UCB1)", delayed, att, A.skipper(5.0, C.ucb1())),
            ("wrapper", "explore(UCB1)", bern, att, E.explore(C.ucb1(), 0.05)),
            ("schedules", "ODAAF", delayed, channels.anonymous(), AN.odaaf(3.0)),
            ("schedules", "ODAAF-B", delayed, channels.anonymous(), AN.odaaf_b(3.0, 5.0)),
            ("schedules", "ODAAF-V", delayed, channels.anonymous(), AN.odaaf_v(3.0, 1.0)),
            ("schedules", "ODAAF-naive", delayed, channels.anonymous(), AN.odaaf_naive(5.0)),
            ("schedules", "QPM-D", delayed, att, AN.qpmd()),
            ("schedules", "ARS-UCB", delayed, channels.composite(), CO.ars_ucb()),
            ("schedules", "CLW", delayed, channels.composite(), CO.clw(5)),
            ("schedules", "ARS-CLW", delayed, channels.composite(), CO.ars_clw()),
            ("schedules", "generalized ODAAF", delayed, channels.composite(), CO.generalized_odaaf(5)),
            ("discarding", "Discarding-UCB", conv_env, conv, CV.discarding_ucb(law, 50)),
            ("discarding", "Discarding-KLUCB", conv_env, conv, CV.discarding_klucb(law, 50)),
            ("linear", "LinUCB", lin, att, C.linucb()), ("linear", "LinTS", lin, att, C.lints()),
            ("linear", "OTFLinUCB", lin, conv, L.otf_linucb(50)), ("linear", "OTFLinTS", lin, conv, L.otf_lints(50)),
            ("linear", "LinUCB-wait", lin, conv, L.linucb_wait(50)),
            ("bayes", "delay-model TS", conv_env, conv, BY.delay_model_ts(window=50)),
            ("bayes", "Beta TS (naive)", conv_env, conv, BY.beta_ts(window=50))]
    return rows


def policy_coverage():
    """One dict per library algorithm: ``{"policy", "fused", "reasons", "why"}``: whether the fused
    path covers it in its own world and channel, :func:`jaxbandits.engine.fused.unsupported`'s reasons when
    it does not, and the family's explanation (:data:`NO_KERNEL_WHY`)."""
    from .path import unsupported

    out = []
    for fam, name, env, ch, pol in library_policies():
        why = unsupported(env, ch, pol)
        out.append({"policy": name, "family": fam, "fused": not why, "reasons": why,
                    "why": NO_KERNEL_WHY.get(fam, "")})
    return out


# ----------------------------------------------------------------------------- work per round
#: operations that cost nothing per lane at run time (constants, broadcasts of scalars)
FREE_OPS = ("arith.constant", "tt.splat")


def _triton_module_bytes(lowered_text: str) -> bytes:
    """The serialized Triton module (MLIR bytecode) that Pallas put in the lowered program's
    ``xla.gpu.triton`` custom call (its ``ir`` attribute, printed with escapes)."""
    import re

    m = re.search(r'ir = "((?:[^"\\]|\\.)*)"', lowered_text)
    if m is None:
        raise ValueError("no Triton module in the lowered program")
    s, out, i = m.group(1), bytearray(), 0
    while i < len(s):
        if s[i] == "\\":
            h = s[i + 1:i + 3]
            if re.fullmatch(r"[0-9A-Fa-f]{2}", h):
                out.append(int(h, 16))
                i += 3
                continue
            out.append(ord(s[i + 1]))
            i += 2
            continue
        out += s[i].encode("latin1")
        i += 1
    return bytes(out)


def loop_work(lowered_text: str) -> dict:
    """The static work of a lowered fused kernel: its Triton module parsed back (MLIR bytecode,
    through jaxlib's MLIR bindings) and the operations counted by loop nest, ``{"for/for": {op:
    count}, ...}`` (``"for/for"``: the body of the rounds loop inside the record-segment loop;
    ``"for/for/while"``: the body of a sampler's proposal loop inside a round). A loop's count
    leaves out the loops nested in it."""
    import collections

    from jax.interpreters import mlir as jm
    from jaxlib.mlir import ir

    ctx = jm.make_ir_context()
    ctx.allow_unregistered_dialects = True
    acc = collections.defaultdict(collections.Counter)
    with ctx:
        mod = ir.Module.parse(_triton_module_bytes(lowered_text))

        def walk(op, path):
            for reg in op.regions:
                for blk in reg.blocks:
                    for o in blk.operations:
                        name = o.operation.name
                        acc[path][name] += 1
                        walk(o, path + "/" + name.split(".")[1] if name in ("scf.for", "scf.while") else path)

        walk(mod.operation, "")
    return {k.lstrip("/"): dict(v) for k, v in acc.items()}


def round_work(lowered_text: str) -> dict:
    """``{"round_ops", "round_transcendental", "round_memory", "inner_loop_ops"}``: operations
    per round of a fused kernel (the body of its rounds loop, :func:`loop_work`'s ``"for/for"``,
    without :data:`FREE_OPS`), of which transcendental (``math.*`` and libdevice calls) and memory
    (``tt.load``/``tt.store``), and the operations of one pass of the loops nested in a round
    (proposal loops, calendar rows), 0 without any."""
    w = loop_work(lowered_text)
    body = w.get("for/for", {})
    inner = sum(n for k, c in w.items() if k.startswith("for/for/") for op, n in c.items() if op not in FREE_OPS)
    return {"round_ops": sum(n for op, n in body.items() if op not in FREE_OPS),
            "round_transcendental": sum(n for op, n in body.items()
                                        if op.startswith("math.") or op == "tt.extern_elementwise"),
            "round_memory": sum(n for op, n in body.items() if op in ("tt.load", "tt.store")),
            "inner_loop_ops": inner}


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    bad = 0
    if "--coverage" in argv:
        for rec in policy_coverage():
            print(json.dumps(rec), flush=True)
        return 0
    for rec in lower_all(full="--all" in argv, memory="--memory" in argv):
        print(json.dumps(rec), flush=True)
        bad += not (rec["ok"] and rec["triton"])
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
