"""Bitwise check of a change that must not change results: save the outputs of a handful of
``simulate`` / ``simulate_grid`` configurations (per-run curves, statistics, final values) before
the change, compare them with ``np.array_equal`` after it.

    python tools/bitwise_outputs.py save /tmp/before.npz     # on the old code
    python tools/bitwise_outputs.py compare /tmp/before.npz  # on the new code

Configurations: UCB1 (attributed channel), KL-UCB with delays in chunks, three policies with
their paired statistics and ``keep=5``, DelayedKLUCB on conversions (``L(t)`` tracked) whole and
in the reduced form by chunks, Exp3 on an adversarial world, a grid of UCB1's ``alpha``.
"""
import sys

import jax
import numpy as np

import jaxbandits as jb
from jaxbandits.policies import classic, conversions


def flat(x, pre, out):
    """Every array of ``x`` (SimOutput, Stats, dicts, tuples) into ``out``, named by its path."""
    if x is None:
        return
    if isinstance(x, dict):
        for k, v in x.items():
            flat(v, f"{pre}/{k}", out)
    elif hasattr(x, "_fields"):
        for k in x._fields:
            flat(getattr(x, k), f"{pre}.{k}", out)
    elif isinstance(x, (tuple, list)):
        for i, v in enumerate(x):
            flat(v, f"{pre}[{i}]", out)
    elif isinstance(x, (np.ndarray, np.generic, int, float)):
        out[pre] = np.asarray(x)


def outputs():
    mu = np.linspace(0.1, 0.9, 5).astype(np.float32)
    law = jb.delays.geometric(mean=20.0)
    key = jax.random.key(3)
    att = jb.channels.attributed()
    conv = jb.channels.conversions(window=50)
    cfgs = {
        "ucb1": lambda: jb.simulate(jb.envs.bernoulli(mu), att, classic.ucb1(), 300, key, 37, path="scan"),
        "klucb_chunk": lambda: jb.simulate(jb.envs.bernoulli(mu, delay=law), att, classic.kl_ucb(), 300, key, 20,
                                           chunk=70, path="scan", record=7),
        "pair": lambda: jb.simulate(jb.envs.bernoulli(mu), att, {"u": classic.ucb1(), "k": classic.kl_ucb(),
                                                                 "t": classic.thompson()}, 200, key, 70,
                                    path="scan", keep=5, stats_block=4),
        "dklucb": lambda: jb.simulate(jb.envs.conversions(mu, law), conv, conversions.delayed_klucb(law, 50), 400,
                                      key, 33, path="scan"),
        "dklucb_none": lambda: jb.simulate(jb.envs.conversions(mu, law), conv, conversions.delayed_klucb(law, 50),
                                           400, key, 33, path="scan", keep="none", chunk=128),
        "exp3_adv": lambda: jb.simulate(jb.envs.adversarial.bernoulli_losses(4, 0.2, horizon=300), att,
                                        classic.exp3(), 300, key, 9, path="scan"),
        "grid": lambda: jb.simulate_grid(lambda alpha: (jb.envs.bernoulli(mu), classic.ucb1(alpha=alpha)),
                                         {"alpha": np.array([0.5, 2.0])}, att, 150, key, 6),
    }
    res = {}
    for name, f in cfgs.items():
        d = {}
        flat(f(), "", d)
        res.update({f"{name}{k}": v for k, v in d.items() if ".timing" not in k})
    return res


def main(argv):
    if len(argv) != 2 or argv[0] not in ("save", "compare"):
        sys.exit("usage: python tools/bitwise_outputs.py save|compare FILE.npz")
    mode, path = argv
    res = outputs()
    if mode == "save":
        np.savez(path, **res)
        print("saved", len(res), "arrays")
        return
    ref = np.load(path)
    bad = []
    for k in sorted(set(ref.files) | set(res)):
        if k not in ref.files or k not in res:
            bad.append(("missing", k))
            continue
        a, b = ref[k], res[k]
        if a.shape != b.shape or a.dtype != b.dtype or not np.array_equal(a, b, equal_nan=a.dtype.kind == "f"):
            bad.append(("differs", k))
    print(f"compared {len(set(ref.files) | set(res))} arrays: "
          + ("all bitwise equal" if not bad else f"{len(bad)} differ: {bad[:10]}"))
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main(sys.argv[1:])
