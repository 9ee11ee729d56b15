"""Compile time of the scan path, program by program, beside a plain ``vmap(lax.scan)``.

For UCB1 and KL-UCB (Bernoulli arms, attributed channel) and DelayedKLUCB (conversions, geometric
delays, censoring window m), K arms, ``--runs`` x ``--horizon``, about 200 record points, one
fresh ``jaxbandits.simulate(..., path="scan")`` call (the default ``keep`` rule, or ``--keep``)
and its second, warm call; then the plain scan of :mod:`limits` (``naive_classic``,
``naive_delayed_klucb``) compiled and run twice. It prints and writes to JSON:

* the library's compile seconds per program (``timing["compile_s_by_program"]``: lowering and
  compiling of the init, simulation (chunk) and statistics-reduction programs), and every XLA
  compilation the call triggered (``jax_log_compiles``: the programs above and any small eager one);
* the size of each compiled program (lines and characters of its optimised HLO text);
* the warm call's engine seconds and the plain scan's compile and run seconds.

Each row is caught on its own: a failure prints its error and the script goes on. Sized to take
well under a minute on one GPU at ``--runs 100000 --horizon 1000``::

    python benchmarks/compile_time.py                              # 1000 runs x 1000 rounds
    python benchmarks/compile_time.py --runs 100000 --horizon 1000 # e.g. on a GPU
"""
from __future__ import annotations

import argparse
import json
import logging
import os
import re
import sys
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

ALGOS = ("UCB1", "KL-UCB", "DelayedKLUCB")
_XLA = re.compile(r"Finished XLA compilation of (\S+) in ([0-9.eE+-]+) sec")


class _Compiles(logging.Handler):
    """Collects ``(program, seconds)`` of every XLA compilation JAX logs."""

    def __init__(self):
        super().__init__(logging.DEBUG)
        self.seen = []

    def emit(self, record):
        m = _XLA.search(record.getMessage())
        if m:
            self.seen.append((m.group(1), float(m.group(2))))


def _hlo_sizes():
    """Lines and characters of the optimised HLO of the programs the driver holds."""
    from jaxbandits.engine import programs as D
    from jaxbandits.engine import reduce as RD

    out = {}
    progs = [(str(k[0]), e) for k, e in D._COMPILED.items()] + [("reduce", e) for e in RD.programs()]
    for name, exe in progs:
        try:
            text = exe.as_text()
            out.setdefault(name, []).append({"lines": len(text.splitlines()), "chars": len(text)})
        except Exception as e:  # not every backend gives the text
            out.setdefault(name, []).append({"error": repr(e)})
    return out


def library_row(algo, a, runs, key, handler):
    import jax

    import jaxbandits as jb
    import limits as L
    from jaxbandits.engine import programs as D

    if algo == "DelayedKLUCB":
        env, _, pol = L.delayed_setup(a.arms, a.delay_mean, a.window)
        ch = jb.channels.conversions(window=a.window)  # the default width (limits.py's m + 1 is refused past 2 GiB)
    else:
        env, ch, pol = L.classic_setup(algo, a.arms)
    D.clear_cache()
    handler.seen.clear()
    kw = dict(record=L.record_stride(a.horizon, a.records), path="scan", keep=a.keep)
    t0 = time.perf_counter()
    out = jb.simulate(env, ch, pol, a.horizon, key, runs, **kw)
    wall = time.perf_counter() - t0
    first = out.timing
    xla = list(handler.seen)
    sizes = _hlo_sizes()
    t0 = time.perf_counter()
    again = jb.simulate(env, ch, pol, a.horizon, key, runs, **kw).timing
    wall2 = time.perf_counter() - t0
    D.clear_cache()
    del jax
    return {"compile_s": first["compile_s"], "compile_s_by_program": first.get("compile_s_by_program"),
            "xla_compiles": [{"program": p, "s": s} for p, s in xla],
            "xla_compile_s_total": sum(s for _, s in xla), "first_call_wall_s": wall, "hlo": sizes,
            "warm_compile_s": again["compile_s"], "warm_run_s": again["run_s"], "warm_wall_s": wall2,
            "warm_run_steps_per_s": runs * a.horizon / max(again["run_s"], 1e-12)}


def plain_row(algo, a, runs, key):
    import jax
    import jax.numpy as jnp

    import limits as L

    stride = L.record_stride(a.horizon, a.records)
    if algo == "DelayedKLUCB":
        run = L.naive_delayed_klucb(a.arms, a.horizon, stride, key, a.delay_mean, a.window)
    else:
        run = L.naive_classic(algo, a.arms, a.horizon, stride, key)
    ids = jnp.arange(runs, dtype=jnp.int32)
    t0 = time.perf_counter()
    lowered = jax.jit(jax.vmap(run)).lower(ids)
    exe = lowered.compile()
    compile_s = time.perf_counter() - t0
    text = exe.as_text()
    jax.block_until_ready(exe(ids))
    t0 = time.perf_counter()
    jax.block_until_ready(exe(ids))
    run_s = time.perf_counter() - t0
    return {"compile_s": compile_s, "hlo": {"lines": len(text.splitlines()), "chars": len(text)}, "run_s": run_s,
            "run_steps_per_s": runs * a.horizon / max(run_s, 1e-12)}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=1000)
    ap.add_argument("--delayed-runs", type=int, default=None, help="runs of the DelayedKLUCB row (default --runs)")
    ap.add_argument("--horizon", type=int, default=1000)
    ap.add_argument("--arms", type=int, default=10)
    ap.add_argument("--records", type=int, default=200, help="record points (stride T // records)")
    ap.add_argument("--delay-mean", type=float, default=100.0)
    ap.add_argument("--window", type=int, default=1000)
    ap.add_argument("--keep", default=None, help="simulate's keep: 'all', 'none' or a number (default: its rule)")
    ap.add_argument("--algos", nargs="+", default=list(ALGOS), choices=ALGOS)
    ap.add_argument("--out", default=None, help="default: benchmarks/results/compile-time-<platform>.json")
    a = ap.parse_args(argv)
    for name in ("runs", "horizon", "records", "window"):
        if getattr(a, name) < 1:
            ap.error(f"--{name} must be >= 1, got {getattr(a, name)}")
    if a.arms < 2:
        ap.error(f"--arms must be >= 2, got {a.arms}")
    if a.keep is not None and a.keep not in ("all", "none"):
        try:
            a.keep = int(a.keep)
        except ValueError:
            ap.error(f"--keep must be 'all', 'none' or a number of runs, got {a.keep!r}")
    import jax

    handler = _Compiles()
    logger = logging.getLogger("jax")
    logger.addHandler(handler)
    logger.setLevel(min(logger.level or logging.WARNING, logging.WARNING))
    jax.config.update("jax_log_compiles", True)
    logging.getLogger("jax").propagate = False  # the log lines are collected, not printed
    dev = jax.devices()[0]
    key = jax.random.key(0)
    print(f"{dev.platform} ({dev.device_kind}), jax {jax.__version__}; K={a.arms}, T={a.horizon}, "
          f"{a.records} record points, keep={a.keep!r}", flush=True)
    rows = []
    t_all = time.perf_counter()
    for algo in a.algos:
        runs = (a.delayed_runs or a.runs) if algo == "DelayedKLUCB" else a.runs
        row = {"algo": algo, "runs": runs}
        for what, fn in (("library", lambda: library_row(algo, a, runs, key, handler)),
                         ("plain_scan", lambda: plain_row(algo, a, runs, key))):
            try:
                row[what] = fn()
            except Exception as e:  # one row's failure is printed; the others still run
                row[what] = {"error": repr(e)}
                traceback.print_exc()
        rows.append(row)
        lib, pl = row["library"], row["plain_scan"]
        if "error" not in lib:
            by = lib["compile_s_by_program"] or {}
            progs = ", ".join(f"{k} {v:.2f}" for k, v in by.items())
            print(f"{algo:13s} {runs:8d} runs  library compile {lib['compile_s']:6.2f} s ({progs}; XLA alone "
                  f"{lib['xla_compile_s_total']:.2f} s in {len(lib['xla_compiles'])} programs), warm run "
                  f"{lib['warm_run_s']:.3f} s = {lib['warm_run_steps_per_s']:.3g} run-steps/s", flush=True)
            for name, sz in lib["hlo"].items():
                print(f"{'':13s}   HLO {name}: " + ", ".join(f"{s.get('lines')} lines / {s.get('chars')} chars" for s in sz))
        else:
            print(f"{algo:13s} library: {lib['error']}", flush=True)
        if "error" not in pl:
            print(f"{'':13s}   plain scan compile {pl['compile_s']:6.2f} s, HLO {pl['hlo']['lines']} lines / "
                  f"{pl['hlo']['chars']} chars, run {pl['run_s']:.3f} s = {pl['run_steps_per_s']:.3g} run-steps/s"
                  + (f"; library/plain speed {lib['warm_run_steps_per_s'] / pl['run_steps_per_s']:.2f}x"
                     if "error" not in lib else ""), flush=True)
        else:
            print(f"{'':13s}   plain scan: {pl['error']}", flush=True)
    total = time.perf_counter() - t_all
    print(f"total {total:.1f} s")
    res = {"platform": dev.platform, "device_kind": dev.device_kind, "jax": jax.__version__, "horizon": a.horizon,
           "arms": a.arms, "records": a.records, "keep": a.keep, "delay_mean": a.delay_mean, "window": a.window,
           "total_s": total, "rows": rows}
    out = a.out or os.path.join(os.path.dirname(os.path.abspath(__file__)), "results",
                                f"compile-time-{dev.platform}.json")
    try:
        os.makedirs(os.path.dirname(out) or ".", exist_ok=True)
        with open(out, "w") as f:
            json.dump(res, f, indent=1)
        print(f"wrote {out}")
    except (OSError, TypeError, ValueError) as e:  # never fail hard: the numbers are printed above
        print(f"could not write {out}: {e!r}")
        print(json.dumps(res, default=str))


if __name__ == "__main__":
    main()
