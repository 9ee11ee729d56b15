"""The ``jaxbandits`` command: ``list``, ``run NAME``, ``plot DIR``, ``fit LOG.csv|LOG.parquet``."""
from __future__ import annotations

import argparse
import contextlib
import os
import sys
import traceback

#: Environment variable naming the folder of the persistent compilation cache of ``jaxbandits run``.
CACHE_ENV = "JAXBANDITS_CACHE_DIR"


def _use_all_cores():
    """On CPU, expose one XLA host device per core so the runs axis shards across cores
    (``simulate`` shards over all local devices). Must run before JAX starts its backend."""
    flags = os.environ.get("XLA_FLAGS", "")
    if "xla_force_host_platform_device_count" not in flags:
        n = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
        os.environ["XLA_FLAGS"] = (flags + f" --xla_force_host_platform_device_count={max(1, n)}").strip()


def compile_cache_dir() -> str:
    """Where ``jaxbandits run`` keeps compiled programs: ``$JAXBANDITS_CACHE_DIR`` if set, else
    JAX's own ``jax_compilation_cache_dir`` if the user configured one (``JAX_COMPILATION_CACHE_DIR``),
    else ``$XDG_CACHE_HOME/jaxbandits/jax`` (``~/.cache/jaxbandits/jax`` without XDG_CACHE_HOME)."""
    d = os.environ.get(CACHE_ENV)
    if not d:
        import jax

        d = jax.config.jax_compilation_cache_dir
    if not d:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        d = os.path.join(base, "jaxbandits", "jax")
    return os.path.abspath(os.path.expanduser(d))


_CACHE_KEYS = ("jax_enable_compilation_cache", "jax_compilation_cache_dir",
               "jax_persistent_cache_min_compile_time_secs", "jax_persistent_cache_min_entry_size_bytes")


@contextlib.contextmanager
def compile_cache(enabled: bool = True):
    """JAX's persistent compilation cache on (at :func:`compile_cache_dir`, every program cached,
    however small or quick to compile) or off, for the duration of the block; yields the folder or
    None. JAX's settings are restored on exit, so calling :func:`main` in a process of one's own
    leaves no trace. The folder is trusted: whoever can write to it can run code in this process."""
    import jax
    from jax.experimental.compilation_cache import compilation_cache as cc

    old = {k: getattr(jax.config, k) for k in _CACHE_KEYS}
    d = compile_cache_dir() if enabled else None
    if d is not None:
        try:
            os.makedirs(d, exist_ok=True)
        except OSError as e:
            print(f"jaxbandits: warning: no compilation cache ({e}); set {CACHE_ENV} or pass --no-compile-cache",
                  file=sys.stderr)
            d = None
    if d is not None:
        jax.config.update("jax_enable_compilation_cache", True)
        jax.config.update("jax_compilation_cache_dir", d)
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
        jax.config.update("jax_persistent_cache_min_entry_size_bytes", -1)  # -1: no size floor
    else:
        jax.config.update("jax_enable_compilation_cache", False)
    cc.reset_cache()  # JAX decides once per process whether it uses the cache: decide again now
    try:
        yield d
    finally:
        for k, v in old.items():
            jax.config.update(k, v)
        cc.reset_cache()


class _UsageError(Exception):
    """A command line that argparse rejects (reported in the one error format, exit 2)."""

    def __init__(self, prog, message):
        super().__init__(message)
        self.prog = prog


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # argparse would print its usage block and exit: report like any error
        raise _UsageError(self.prog, message)


def _parser():
    p = _Parser(prog="jaxbandits", description="Bandits with delayed feedback, in JAX.")
    p.add_argument("--debug", action="store_true", help="show the Python traceback of an error")
    sub = p.add_subparsers(dest="cmd", required=True, parser_class=_Parser)
    common = dict(default=argparse.SUPPRESS, action="store_true", help="show the Python traceback of an error")
    ls = sub.add_parser("list", help="list the registered experiments")
    ls.add_argument("--debug", **common)
    r = sub.add_parser("run", help="run a registered experiment")
    r.add_argument("name")
    r.add_argument("--runs", type=int, default=None)
    r.add_argument("--horizon", type=int, default=None)
    r.add_argument("--seed", type=int, default=0)
    r.add_argument("--out", default=None, help="output folder (default results/NAME)")
    r.add_argument("--force", action="store_true",
                   help="replace the results of another experiment (or other settings) in --out, removing their files")
    r.add_argument("--set", dest="sets", action="append", default=[], metavar="KEY=VALUE",
                   help="override a config entry (repeatable)")
    r.add_argument("--no-progress", action="store_true")
    r.add_argument("--chunk", type=int, default=None,
                   help="rounds per chunk (checkpoint, progress and Ctrl-C stop at chunk ends; default T/20)")
    r.add_argument("--resume", action="store_true",
                   help="continue the interrupted run in --out from its checkpoint (bitwise as if never stopped)")
    r.add_argument("--single-device", action="store_true", help="do not shard runs across CPU cores")
    r.add_argument("--no-compile-cache", action="store_true",
                   help=f"do not use the persistent compilation cache (${CACHE_ENV}, default ~/.cache/jaxbandits/jax)")
    r.add_argument("--debug", **common)
    pl = sub.add_parser("plot", help="re-plot a results folder")
    pl.add_argument("dir")
    pl.add_argument("--logx", action="store_true")
    pl.add_argument("--debug", **common)
    f = sub.add_parser("fit", help="fit a Bayesian conversion-and-delay model to a conversion log (CSV or Parquet)")
    f.add_argument("log", help="CSV or Parquet with columns arm, play_time, conversion_time (empty: none), cutoff")
    f.add_argument("--model", default="exponential",
                   help="delay family: exponential, geometric, weibull, lognormal, histogram")
    f.add_argument("--method", default="nuts", choices=["nuts", "svi"])
    f.add_argument("--out", default=None, help="output folder (default results/fit-MODEL)")
    f.add_argument("--force", action="store_true",
                   help="replace another fit (or an experiment's results) in --out, removing their files")
    f.add_argument("--cutoff", default=None,
                   help="observation cutoff (number or timestamp) if the log has no cutoff column")
    f.add_argument("--window", type=float, default=None, help="censoring window m (default: none)")
    f.add_argument("--discrete", action="store_true", help="integer rounds, floored delays")
    f.add_argument("--per-arm-delay", action="store_true", help="one delay law per arm")
    f.add_argument("--hierarchical", action="store_true",
                   help="partial pooling: per-arm rates and delay laws drawn from an inferred population law")
    f.add_argument("--chains", type=int, default=4)
    f.add_argument("--warmup", type=int, default=500)
    f.add_argument("--samples", type=int, default=1000)
    f.add_argument("--seed", type=int, default=0)
    f.add_argument("--time-unit", default=None, help="unit of durations when the times are timestamps: ms s min h D W")
    f.add_argument("--rounds", action="store_true", help="timestamps floored to integer rounds of --time-unit")
    f.add_argument("--column", dest="columns", action="append", default=[], metavar="FIELD=NAME",
                   help="the log's column NAME holds FIELD (arm, play_time, conversion_time, cutoff); repeatable")
    f.add_argument("--resolution", default="auto",
                   help="continuous times: 'exact', 'auto' (default) or a relative grid step such as 0.01")
    f.add_argument("--log-likelihood", action="store_true", help="store the pointwise log-likelihood (for LOO)")
    f.add_argument("--no-progress", action="store_true", help="no progress bar")
    f.add_argument("--debug", **common)
    return p


def _one_line(text) -> str:
    return " ".join(str(text).split())


def format_error(e: BaseException) -> str:
    """The one error format of the command line: ``jaxbandits: error: ...`` naming the parameter
    (or file and row) and the allowed values, on one line; a second line for a usage error (where
    to read the usage) or an unexpected one (how to see its traceback)."""
    from ._io import OutputFolderError

    if isinstance(e, _UsageError):
        cmd = e.prog.split(" ", 1)[1] + " " if " " in e.prog else ""
        return f"{e.prog}: error: {_one_line(e)}\n(see: jaxbandits {cmd}--help)"
    if isinstance(e, OutputFolderError):
        return f"jaxbandits: error: --out {e.path!r}: {_one_line(e.reason)}"
    if isinstance(e, (ValueError, TypeError, OSError, ImportError)):
        msg = _one_line(e)
        if isinstance(e, OSError) and e.filename is not None and str(e.filename) not in msg:
            msg = f"{e.filename}: {msg}"
        return f"jaxbandits: error: {msg or type(e).__name__}"
    return (f"jaxbandits: error: unexpected {type(e).__name__}: {_one_line(e) or '(no message)'}\n"
            "(run again with --debug for the traceback, and please report it)")


def main(argv=None):
    """The ``jaxbandits`` command. Returns the exit status: 0, 2 for any error (printed in one or
    two lines to stderr, no traceback unless ``--debug``), 130 when interrupted (Ctrl-C)."""
    argv = sys.argv[1:] if argv is None else [str(x) for x in argv]
    debug = "--debug" in argv
    try:
        return _main(argv)
    except KeyboardInterrupt:
        if debug:
            traceback.print_exc()
        print("jaxbandits: interrupted", file=sys.stderr)
        return 130
    except Exception as e:  # every error: one format, exit 2
        if debug:
            traceback.print_exc()
        print(format_error(e), file=sys.stderr)
        return 2


def _main(argv):
    a = _parser().parse_args(argv)
    if a.cmd == "fit":
        return _fit(a)
    if a.cmd == "list":
        from . import experiments as X

        bad = 0
        for name in X.names():
            try:
                print(f"{name:24s} {X.get(name).description}")
            except Exception as e:  # a user's experiment that does not load: say so, list the others
                bad += 1
                print(f"{name:24s} (could not be loaded: {type(e).__name__}: {_one_line(e)})")
        return 0 if not bad else 1
    if a.cmd == "plot":
        return _plot(a)
    from ._io import check_writable

    if a.runs is not None and a.runs < 1:
        raise ValueError(f"--runs must be >= 1, got {a.runs}")
    if a.horizon is not None and a.horizon < 1:
        raise ValueError(f"--horizon must be >= 1, got {a.horizon}")
    if a.seed < 0:
        raise ValueError(f"--seed must be >= 0, got {a.seed}")
    out = a.out or os.path.join("results", a.name)
    check_writable(out)  # before anything is imported or compiled
    if not a.single_device:
        _use_all_cores()
    from . import experiments as X
    from .engine.checkpoint import Interrupted

    overrides = X.parse_set(a.sets)
    with compile_cache(not a.no_compile_cache) as cache:
        try:
            res = X.run(a.name, runs=a.runs, horizon=a.horizon, seed=a.seed, overrides=overrides, out=out,
                        progress=not a.no_progress, chunk=a.chunk, resume=a.resume, force=a.force)
        except Interrupted as e:
            print(f"jaxbandits: {e}; partial results marked in {os.path.join(out, 'summary.json')}\n"
                  f"resume with: {e.resume_command}", file=sys.stderr)
            return 130
    s = res.summary()
    if "policies" not in s:  # a study with its own table (e.g. bayes-fit-recovery)
        print(f"{res.experiment}: {res.runs} replications\n" + res.table())
        print(f"wrote {out}")
        return 0
    print(f"{res.experiment}: {res.runs} runs x {res.horizon} rounds, metric {res.metric}, W={res.width}, "
          f"lost_to_W={s['lost_to_W']}")
    for lab, v in s["policies"].items():
        print(f"  {lab:12s} final regret {v['final_regret_mean']:10.2f} ± {v['final_regret_se']:.2f}")
    t = s["timing"]
    print(f"  compile {t['compile_s']:.1f} s, run {t['run_s']:.1f} s, {t['run_steps_per_s']:.3g} run-steps/s "
          f"on {t['devices']} device(s)" + (f"; compilation cache {cache}" if cache else ""))
    print(f"wrote {out}/summary.json, {out}/results.nc, {out}/regret.png")
    return 0


def _plot(a):
    from ._io import add_file
    from .plotting import plot_regret
    from .results import Results

    d = a.dir
    if not os.path.isdir(d):
        raise FileNotFoundError(f"plot: results folder {d!r} does not exist")
    summary = os.path.join(d, "summary.json")
    if os.path.isfile(summary) and not os.path.isfile(os.path.join(d, "results.nc")):
        raise ValueError(f"plot: {d!r} holds no results.nc (a Bayesian fit's or a study's folder?): "
                         "plot re-draws the regret curves of jaxbandits run")
    res = Results.load(d)
    print(add_file(d, "regret.png", lambda p: plot_regret(res, p, logx=a.logx)))
    return 0


def _fit(a):
    import warnings

    from ._io import check_writable, output_folder

    for name in ("chains", "warmup", "samples"):
        if getattr(a, name) < (0 if name == "warmup" else 1):
            raise ValueError(f"--{name} must be >= {0 if name == 'warmup' else 1}, got {getattr(a, name)}")
    if a.seed < 0:
        raise ValueError(f"--seed must be >= 0, got {a.seed}")
    columns = {}
    for kv in a.columns:
        if "=" not in kv:
            raise ValueError(f"--column takes FIELD=NAME, got {kv!r}")
        k, v = kv.split("=", 1)
        columns[k.strip()] = v.strip()
    res = a.resolution
    if res not in ("auto", "exact"):
        try:
            res = float(res)
        except ValueError:
            raise ValueError(f"--resolution must be 'exact', 'auto' or a number, got {res!r}") from None
    res = None if res == "exact" else res
    cutoff = a.cutoff
    if cutoff is not None:
        try:
            cutoff = float(cutoff)
        except ValueError:
            pass  # a timestamp
    if not os.path.isfile(a.log):
        raise FileNotFoundError(f"{a.log}: no such file (the conversion log, CSV or Parquet)")
    out = a.out or os.path.join("results", f"fit-{a.model}")
    check_writable(out)  # before the log is read or anything compiled

    from . import bayes as B
    from .bayes.report import fit_identity, save_fit

    with output_folder(out, fit_identity(a.model, a.method, a.window, a.discrete, a.per_arm_delay, a.hierarchical),
                       force=a.force):
        log = B.load_log(a.log, cutoff=cutoff, time_unit=a.time_unit, rounds=a.rounds, columns=columns)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # empty arms are printed below
            idata = B.fit(log, a.model, a.method, window=a.window, discrete=a.discrete, per_arm_delay=a.per_arm_delay,
                          num_chains=a.chains, num_warmup=a.warmup, num_samples=a.samples, seed=a.seed, resolution=res,
                          log_likelihood=bool(a.log_likelihood), progress_bar=not a.no_progress,
                          hierarchical=a.hierarchical)
        if log.empty_arms:
            print(f"jaxbandits: warning: arm(s) {list(log.empty_arms)} have no rows: their posterior is the prior",
                  file=sys.stderr)
        paths = save_fit(idata, log, out)
    with open(paths["summary"]) as fh:
        print(fh.read())
    print("wrote " + ", ".join(paths.values()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
