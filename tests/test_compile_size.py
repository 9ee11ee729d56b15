"""The scan path's programs do not grow with the number of runs.

A zero-size leaf of the state or the records (an empty reveal ring, an untracked L(t), a policy's
empty history) returned by a program vmapped over runs became a literal constant of shape
``[runs, 0]`` or ``[segments, runs, 0]`` in the compiled program, printed and fingerprinted row by
row: at 1e6 runs and 200 record points 800 MB of program text and a 12.6 s compile on a CPU
(38 s for the simulation program on an H200). The driver now strips those leaves at the program
boundary (docs/architecture.md, "Compile time")."""
import functools
import importlib

import jax
import jax.numpy as jnp
import numpy as np

from jaxbandits import channels as C
from jaxbandits import delays as D
from jaxbandits import envs as E
from jaxbandits.engine import programs as PG
from jaxbandits.engine.recording import record_points, segment_plan
from jaxbandits.policies import classic as P
from jaxbandits.policies import conversions as CV

R = importlib.import_module("jaxbandits.engine.round")
MU = np.linspace(0.1, 0.9, 4).astype(np.float32)
LAW = D.geometric(mean=5.0)


def _problems():
    return {
        "ucb1": (E.bernoulli(MU), C.attributed(), P.ucb1()),
        "klucb_delayed": (E.bernoulli(MU, delay=LAW), C.attributed(), P.kl_ucb()),
        "dklucb": (E.conversions(MU, LAW), C.conversions(window=20), CV.delayed_klucb(LAW, 20)),
        "exp3_adversarial": (E.adversarial.bernoulli_losses(4, 0.2, horizon=50), C.attributed(), P.exp3()),
    }


def _plan(env, ch, pol, T, n):
    prob = R.problem(env, ch, pol, T, n_runs=n)
    return PG.Plan((("p", prob),), 1, False)


def _shapes(plan, n, T):
    ids = jax.ShapeDtypeStruct((n,), jnp.int32)
    carries = jax.eval_shape(lambda r: PG.init_program(plan, jax.random.key(0), r, None), ids)
    lo = jax.ShapeDtypeStruct(segment_plan(T, record_points(T, 5)).chunks[0][0].shape, jnp.int32)
    return carries, lo


def test_programs_return_no_zero_size_arrays():
    """Every leaf the init and chunk programs return holds data (the components do have zero-size
    leaves: the driver strips them), and the whole state comes back with them."""
    T, n = 50, 8
    for name, (env, ch, pol) in _problems().items():
        plan = _plan(env, ch, pol, T, n)
        carries, lo = _shapes(plan, n, T)
        out = jax.eval_shape(lambda c, a, b, plan=plan: PG.chunk_program(plan, c, None, a, b), carries, lo, lo)
        for tree, what in ((carries, "init"), (out, "chunk")):
            empty = [jax.tree_util.keystr(p) for p, x in jax.tree_util.tree_flatten_with_path(tree)[0]
                     if 0 in x.shape]
            assert not empty, (name, what, empty)
    # the stripped leaves exist (else this test checks nothing): a channel's empty ring, L(t)'s
    plan = _plan(*_problems()["ucb1"], T, n)
    full = jax.eval_shape(lambda: PG._run_template(plan.problems[0][1], None))
    assert any(0 in x.shape for x in jax.tree.leaves(full))


def test_compiled_chunk_program_does_not_grow_with_runs():
    """The compiled simulation program's text at 4096 runs is within 5% of its text at 16 runs
    (before the leaves were stripped it grew by about 6 characters per run and segment)."""
    T = 200
    env, ch, pol = _problems()["ucb1"]
    sizes = []
    for n in (16, 4096):
        plan = _plan(env, ch, pol, T, n)
        carries, lo = _shapes(plan, n, T)
        exe = jax.jit(functools.partial(PG.chunk_program, plan)).lower(carries, None, lo, lo).compile()
        sizes.append(len(exe.as_text()))
    assert sizes[1] < 1.05 * sizes[0], sizes
