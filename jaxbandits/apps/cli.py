"""The ``jaxbandits`` command: ``list``, ``run NAME``, ``merge DIR...``, ``plot DIR``, ``compare DIR``, ``fit LOG.csv|LOG.parquet``, ``evaluate LOG``."""
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
    else ``$XDG_CACHE_HOME/jaxbandits/jax`` (``~/.cache/jaxbandits/jax`` without XDG_CACHE_HOME).

    Returns:
        str: the folder, an absolute path (``~`` expanded; it need not exist yet).

    Example:
        >>> import os
        >>> from unittest import mock
        >>> with mock.patch.dict(os.environ, {"JAXBANDITS_CACHE_DIR": "/tmp/my-cache"}):
        ...     compile_cache_dir()
        '/tmp/my-cache'
    """
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
    leaves no trace. The folder is trusted: whoever can write to it can run code in this process.
    A folder that cannot be made is reported on stderr and the block runs without the cache.

    Args:
        enabled: ``True`` (the default) turns the cache on at :func:`compile_cache_dir` (made if
            missing); ``False`` turns it off (``jaxbandits run --no-compile-cache``).

    Yields:
        The cache folder (str), or ``None`` when the cache is off.

    Example:
        >>> with compile_cache(enabled=False) as folder:
        ...     print(folder)
        None
    """
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


def parser():
    """The ``jaxbandits`` command line's argument parser (every subcommand).

    A command line it rejects raises an error that :func:`format_error` reports in the one error
    format (argparse would print its usage block and exit).

    Returns:
        argparse.ArgumentParser: the parser; ``parse_args(argv)`` gives the namespace whose
        ``cmd`` is the subcommand (``None`` for a bare ``jaxbandits``).

    Example:
        >>> a = parser().parse_args(["run", "quickstart", "--runs", "8"])
        >>> a.cmd, a.name, a.runs
        ('run', 'quickstart', 8)
    """
    p = _Parser(prog="jaxbandits", description="Bandits with delayed feedback, in JAX.")
    p.add_argument("--debug", action="store_true", help="show the Python traceback of an error")
    from ..version import __version__

    p.add_argument("--version", action="version", version=f"jaxbandits {__version__}")
    sub = p.add_subparsers(dest="cmd", metavar="COMMAND", parser_class=_Parser,
                           title="commands (jaxbandits COMMAND --help for each)")
    common = dict(default=argparse.SUPPRESS, action="store_true", help="show the Python traceback of an error")
    ls = sub.add_parser("list", help="list the registered experiments")
    ls.add_argument("--debug", **common)
    r = sub.add_parser("run", help="run a registered experiment or an experiment file (FILE.toml)",
                       description="Run a registered experiment (jaxbandits list) or an experiment file FILE.toml "
                                   "(docs/experiment-files.md); jaxbandits show NAME lists its --set keys.")
    r.add_argument("name",
                   help="a registered experiment's name, or a path ending in .toml: an experiment file")
    r.add_argument("--runs", type=int, default=None, help="paired runs (default: the experiment's)")
    r.add_argument("--horizon", type=int, default=None,
                   help="rounds per run, at most 2**24 (default: the experiment's; a sweep then runs at this T alone)")
    r.add_argument("--seed", type=int, default=None,
                   help="seed in 0 .. 2**64-1 (default: the file's seed, else 0)")
    r.add_argument("--out", default=None, help="output folder (default results/NAME; a part: results/NAME-part-I-of-N)")
    r.add_argument("--force", action="store_true",
                   help="replace the results of another experiment (or other settings) in --out, removing their files")
    r.add_argument("--set", dest="sets", action="append", default=[], metavar="KEY=VALUE",
                   help="override a config entry (repeatable; jaxbandits show NAME lists the keys); for a file, "
                        "a dotted key of the file: world.delay.mean=20, policies.UCB1.alpha=1.5")
    r.add_argument("--no-progress", action="store_true", help="no progress bar")
    r.add_argument("--chunk", type=int, default=None,
                   help="rounds per chunk (checkpoint, progress and Ctrl-C stop at chunk ends; default T/20)")
    r.add_argument("--resume", action="store_true",
                   help="continue the interrupted run in --out from its checkpoint (bitwise as if never stopped)")
    r.add_argument("--single-device", action="store_true", help="do not shard runs across CPU cores")
    r.add_argument("--path", choices=["auto", "fused", "scan"], default="auto",
                   help="execution path (docs/fused.md): auto = the fused GPU kernels when the device is a GPU "
                        "and every policy of the experiment has one, else the scan; fused = force the kernels "
                        "(an error names what they do not cover; on a CPU they run interpreted, slowly); "
                        "scan = the engine's scan")
    r.add_argument("--keep", default=None, metavar="all|none|N",
                   help="per-run curves to keep: all, none (statistics only) or the first N runs (default: every "
                        "run's while they take at most 64 MiB, else none; docs/simulate.md)")
    r.add_argument("--no-compile-cache", action="store_true",
                   help=f"do not use the persistent compilation cache (${CACHE_ENV}, default ~/.cache/jaxbandits/jax)")
    r.add_argument("--part", default=None, metavar="I/N",
                   help="compute only part I of N of the runs (0 <= I < N; a sweep: of its simulations and fits) "
                        "into the part folder --out; combine the N parts with jaxbandits merge (bitwise the whole run)")
    r.add_argument("--distributed", action="store_true",
                   help="one run over many processes with jax.distributed: the runs shard over the devices of "
                        "all processes, process 0 writes --out; coordinator from --coordinator/--num-processes/"
                        "--process-id, else from the environment (SLURM, Kubernetes, ... as JAX detects it)")
    r.add_argument("--coordinator", default=None, metavar="HOST:PORT",
                   help="with --distributed: address of process 0's coordinator service")
    r.add_argument("--num-processes", type=int, default=None, metavar="N",
                   help="with --distributed: number of processes")
    r.add_argument("--process-id", type=int, default=None, metavar="I",
                   help="with --distributed: this process's id, 0 .. N-1")
    r.add_argument("--processes", type=int, default=None, metavar="N",
                   help="start N local processes (CPU devices, coordinator on 127.0.0.1) running this command "
                        "with --distributed, and wait for them")
    r.add_argument("--debug", **common)
    sh = sub.add_parser("show", help="describe an experiment: its settable keys, or (--toml) its experiment file",
                        description="Print an experiment's description and every key --set accepts, with its type, "
                                    "default and allowed values; --toml writes it as an experiment file instead.")
    sh.add_argument("name", help="a registered experiment's name, or an experiment file")
    sh.add_argument("--toml", action="store_true",
                    help="write the experiment as an experiment file (TOML) that jaxbandits run FILE.toml runs to the "
                         "same results")
    sh.add_argument("--set", dest="sets", action="append", default=[], metavar="KEY=VALUE",
                    help="override a config entry first (repeatable), as for run")
    sh.add_argument("--output", "-o", default=None, metavar="FILE.toml",
                    help="with --toml: write the file here (atomically) instead of to standard output")
    sh.add_argument("--debug", **common)
    m = sub.add_parser("merge", help="combine the part folders of jaxbandits run --part I/N into the whole run's results")
    m.add_argument("dirs", nargs="+", metavar="DIR", help="the part folders (all N parts, each once)")
    m.add_argument("--out", required=True, help="results folder to write")
    m.add_argument("--force", action="store_true",
                   help="replace the results of another experiment (or other settings) in --out, removing their files")
    m.add_argument("--no-plot", action="store_true", help="write no plot")
    m.add_argument("--debug", **common)
    pl = sub.add_parser("plot", help="re-plot a results folder")
    pl.add_argument("dir", help="a results folder written by jaxbandits run")
    pl.add_argument("--logx", action="store_true", help="log scale on the x-axis (rounds), every panel")
    pl.add_argument("--logy", action="store_true", help="log scale on the y-axis (regret), every panel")
    pl.add_argument("--only", action="append", default=None, metavar="LABEL",
                    help="plot only this policy (a label, or a label within a panel such as UCB1); repeatable")
    pl.add_argument("--exclude", action="append", default=None, metavar="LABEL",
                    help="leave this policy out; repeatable")
    pl.add_argument("--reference", action="append", default=None, metavar="LABEL",
                    help="draw this policy thin, dashed and grey, outside the y-limits (repeatable; "
                         "default: the uniform-random policy; --reference none: no reference curve)")
    pl.add_argument("--bands", default="ci", choices=["ci", "se", "none"],
                    help="bands around the mean: 95%% t confidence interval (default), 1 standard error, or none")
    pl.add_argument("--pulls", action="store_true", help="add a panel of each policy's share of pulls per arm")
    pl.add_argument("--metric", default=None,
                    help="curve to plot: regret, expected_regret, delayed_regret, fixed_regret (default: the experiment's)")
    pl.add_argument("--output", default="regret.png", metavar="NAME",
                    help="file name of the figure in DIR (default regret.png)")
    pl.add_argument("--debug", **common)
    cp = sub.add_parser("compare", help="paired differences of regret against a baseline policy, with confidence "
                                        "intervals (table, summary.json, compare.png)")
    cp.add_argument("dir", help="a results folder written by jaxbandits run")
    cp.add_argument("--baseline", default=None, metavar="LABEL",
                    help="the policy every other is compared with (within each panel; default: the first policy)")
    cp.add_argument("--level", type=float, default=0.95, help="confidence level in (0, 1) (default 0.95)")
    cp.add_argument("--method", default="t", choices=["t", "bootstrap"],
                    help="interval: paired t interval over runs (default) or percentile bootstrap over runs")
    cp.add_argument("--n-boot", type=int, default=2000, help="bootstrap resamples (--method bootstrap; default 2000)")
    cp.add_argument("--metric", default=None,
                    help="curve to compare: regret, expected_regret, delayed_regret, fixed_regret (default: the experiment's)")
    cp.add_argument("--only", action="append", default=None, metavar="LABEL",
                    help="compare only this policy with the baseline; repeatable")
    cp.add_argument("--exclude", action="append", default=None, metavar="LABEL",
                    help="leave this policy out of the comparison; repeatable")
    cp.add_argument("--logx", action="store_true", help="log scale on the x-axis of compare.png")
    cp.add_argument("--no-plot", action="store_true", help="do not draw compare.png")
    cp.add_argument("--debug", **common)
    f = sub.add_parser("fit", help="fit a Bayesian conversion-and-delay model to a conversion log (CSV or Parquet)")
    f.add_argument("log", help="CSV or Parquet with columns arm, play_time, conversion_time (empty: none), cutoff")
    f.add_argument("--model", default="exponential",
                   help="delay family: exponential, geometric, weibull, lognormal, histogram")
    f.add_argument("--method", default="nuts", choices=["nuts", "svi"],
                   help="NUTS (MCMC, default) or SVI (variational)")
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
    f.add_argument("--chains", type=int, default=4, help="MCMC chains, >= 1 (default 4)")
    f.add_argument("--warmup", type=int, default=500, help="warm-up iterations per chain, >= 0 (default 500)")
    f.add_argument("--samples", type=int, default=1000, help="posterior draws per chain, >= 1 (default 1000)")
    f.add_argument("--seed", type=int, default=0, help="seed, >= 0 (default 0)")
    f.add_argument("--time-unit", default=None, help="unit of durations when the times are timestamps: ms s min h D W")
    f.add_argument("--rounds", action="store_true", help="timestamps floored to integer rounds of --time-unit")
    f.add_argument("--column", dest="columns", action="append", default=[], metavar="FIELD=NAME",
                   help="the log's column NAME holds FIELD (arm, play_time, conversion_time, cutoff); repeatable")
    f.add_argument("--resolution", default="auto",
                   help="continuous times: 'exact', 'auto' (default) or a relative grid step such as 0.01")
    f.add_argument("--log-likelihood", action="store_true", help="store the pointwise log-likelihood (for LOO)")
    f.add_argument("--no-progress", action="store_true", help="no progress bar")
    f.add_argument("--debug", **common)
    _serve_parser(sub, common)
    _evaluate_parser(sub, common)
    return p


def _evaluate_parser(sub, common):
    e = sub.add_parser("evaluate", help="off-policy estimates of target policies on a log of decisions (docs/ope.md)")
    e.add_argument("log", help="CSV/Parquet decision log (columns arm, play_time, conversion_time, cutoff, "
                               "propensity) or the SQLite database of jaxbandits serve")
    e.add_argument("--policy", action="append", default=[], metavar="TARGET",
                   help="a target (repeatable): arm:LABEL, uniform, probs:P1,P2,... (IPS, SNIPS, DM, DR) or a "
                        "policy named as in experiment files, e.g. classic.ucb1 or 'classic.kl_ucb key=value' (replay)")
    e.add_argument("--window", type=float, default=None, help="conversion window m (log time units; default: none)")
    e.add_argument("--delay", default=None, metavar="LAW", help="delay law for the delay-aware estimators, e.g. "
                                                                "geometric:mean=20 or log_normal:mu=3,sigma=1")
    e.add_argument("--delay-model", default=None, metavar="FIT",
                   help="a jaxbandits fit folder: delay-aware estimates over its posterior draws")
    e.add_argument("--draws", type=int, default=200, help="posterior draws of --delay-model, >= 2 (default 200)")
    e.add_argument("--level", type=float, default=0.95, help="interval level in (0, 1) (default 0.95)")
    e.add_argument("--min-seen", type=float, default=0.05,
                   help="delay-aware: leave out decisions seen with probability below this (default 0.05)")
    e.add_argument("--end", default=None, help="when the log was read, if it has no cutoff column")
    e.add_argument("--time-unit", default=None, help="unit of durations when the times are timestamps: ms s min h D W")
    e.add_argument("--seed", type=int, default=0, help="seed of replay's acceptance coins, >= 0 (default 0)")
    e.add_argument("--out", default=None, help="output folder (default results/evaluate-LOGNAME)")
    e.add_argument("--force", action="store_true", help="replace other results in --out")
    e.add_argument("--no-plot", action="store_true", help="do not draw evaluate.png")
    e.add_argument("--debug", **common)


def _serve_parser(sub, common):
    s = sub.add_parser("serve", help="serve a policy over HTTP (POST /decide, /feedback; GET /stats), logged to SQLite")
    s.add_argument("config", nargs="?", default=None,
                   help="TOML or JSON config: arms, [policy], [channel], [clock], seed, max_batch (docs/online.md)")
    s.add_argument("--db", default="jaxbandits-serve.db",
                   help="SQLite database of the event log and snapshots (created, or recovered on restart)")
    s.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    s.add_argument("--port", type=int, default=8000, help="TCP port (default 8000)")
    s.add_argument("--arms", default=None, help="comma-separated arm names (overrides the config's arms)")
    s.add_argument("--policy", default=None, help="policy name, e.g. ucb1, delayed_klucb, delay_model_ts")
    s.add_argument("--param", dest="params", action="append", default=[], metavar="KEY=VALUE",
                   help="a policy parameter (repeatable): window=200, delay.law=geometric, delay.mean=20.0")
    s.add_argument("--channel", default=None, choices=["attributed", "conversions"], help="the feedback channel")
    s.add_argument("--window", type=int, default=None, help="the conversions channel's window m, in rounds")
    s.add_argument("--seed", type=int, default=None, help="the learner's seed (default 0)")
    s.add_argument("--origin", type=float, default=None,
                   help="clock: the timestamp of round 0 (seconds since the epoch, or your unit)")
    s.add_argument("--round-length", type=float, default=None,
                   help="clock: the length of a round in the timestamps' unit (default: one decision per round)")
    s.add_argument("--max-batch", type=int, default=None, help="most decisions or events per request (default 1000)")
    s.add_argument("--max-pending", type=int, default=None,
                   help="pending-decision slots without a window (default 4096)")
    s.add_argument("--horizon", type=int, default=None, help="horizon the policy may plan for (default none)")
    s.add_argument("--snapshot-every", type=int, default=None,
                   help="logged requests between two state snapshots (default 1000)")
    s.add_argument("--max-advance", type=int, default=None,
                   help="most rounds one request may move the clock (default 10000000)")
    s.add_argument("--log-level", default="warning", help="uvicorn's log level (default warning)")
    s.add_argument("--debug", **common)


def _one_line(text) -> str:
    return " ".join(str(text).split())


def format_error(e: BaseException) -> str:
    """The one error format of the command line: ``jaxbandits: error: ...`` naming the parameter
    (or file and row) and the allowed values, on one line; a second line for a usage error (where
    to read the usage) or an unexpected one (how to see its traceback).

    Args:
        e: the exception the command met: a usage error of :func:`parser`, an output folder's
            error, a ``ValueError`` / ``TypeError`` / ``OSError`` / ``ImportError`` of bad input,
            or any other (reported as unexpected).

    Returns:
        str: the message, one line (two for a usage error or an unexpected one), no traceback.

    Example:
        >>> print(format_error(ValueError("runs must be >= 1, got 0")))
        jaxbandits: error: runs must be >= 1, got 0
        >>> try:
        ...     parser().parse_args(["run"])
        ... except Exception as e:
        ...     print(format_error(e))
        jaxbandits run: error: the following arguments are required: name
        (see: jaxbandits run --help)
    """
    from ..core.fileio import OutputFolderError

    if isinstance(e, _UsageError):
        cmd = e.prog.split(" ", 1)[1] + " " if " " in e.prog else ""
        return f"{e.prog}: error: {_one_line(e)}\n(see: jaxbandits {cmd}--help)"
    if isinstance(e, OutputFolderError):
        return f"jaxbandits: error: --out {e.path!r}: {_one_line(e.reason)}"
    if isinstance(e, (ValueError, TypeError, OSError, ImportError)):
        msg = _one_line(e.strerror if isinstance(e, OSError) and e.errno and e.strerror else e)  # no "[Errno N]"
        if isinstance(e, OSError) and e.filename is not None and str(e.filename) not in msg:
            msg = f"{e.filename}: {msg}"
        return f"jaxbandits: error: {msg or type(e).__name__}"
    return (f"jaxbandits: error: unexpected {type(e).__name__}: {_one_line(e) or '(no message)'}\n"
            "(run again with --debug for the traceback, and please report it)")


def main(argv=None):
    """The ``jaxbandits`` command (``list``, ``show``, ``run``, ``merge``, ``plot``, ``compare``,
    ``fit``, ``evaluate``, ``serve``; docs/cli.md), callable from Python.

    Every error is printed in :func:`format_error`'s format to stderr (no traceback unless
    ``--debug``); nothing is raised, except the ``SystemExit`` of ``--help`` and ``--version``.

    Args:
        argv: the arguments after ``jaxbandits`` (each converted with ``str``); ``None`` (the
            default) reads ``sys.argv[1:]``.

    Returns:
        int: the exit status: 0 on success, 2 for any error, 130 when interrupted (Ctrl-C).

    Example:
        >>> status = main(["list"])  # doctest: +ELLIPSIS
        bayes-fit-recovery ...
        quickstart               Conversions with geometric delays seen through a censored window: ...
        >>> status
        0
        >>> main(["run", "no-such-experiment"])  # stderr: jaxbandits: error: unknown experiment ...
        2
        >>> import tempfile
        >>> main(["run", "quickstart", "--runs", "8", "--out", tempfile.mkdtemp()])  # doctest: +SKIP
        0
    """
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
    p = parser()
    a = p.parse_args(argv)
    if a.cmd is None:  # a bare `jaxbandits`: the commands
        p.print_help()
        return 0
    if a.cmd == "fit":
        return _fit(a)
    if a.cmd == "serve":
        return _serve(a)
    if a.cmd == "evaluate":
        from ..ope.command import main as evaluate_main

        return evaluate_main(a)
    if a.cmd == "list":
        from .. import experiments as X

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
    if a.cmd == "show":
        return _show(a)
    if a.cmd == "compare":
        return _compare(a)
    if a.cmd == "merge":
        return _merge(a)
    from ..core.fileio import check_writable

    if a.runs is not None and a.runs < 1:
        raise ValueError(f"--runs must be >= 1, got {a.runs}")
    if a.horizon is not None and a.horizon < 1:
        raise ValueError(f"--horizon must be >= 1, got {a.horizon}")
    if a.seed is not None and a.seed < 0:
        raise ValueError(f"--seed must be >= 0, got {a.seed}")
    _check_scale_out_options(a)
    if a.processes is not None:  # the launched processes read the file themselves
        from ..experiments.distributed import launch_local

        return launch_local(_without_processes(argv), a.processes)
    if not a.single_device:
        _use_all_cores()  # before JAX starts its backend (reading a file builds its objects)
    if a.distributed:
        from ..experiments.distributed import initialize

        initialize(a.coordinator, a.num_processes, a.process_id)
    target, seed, overrides = a.name, a.seed, None
    if is_file(a.name):  # an experiment file: read and checked (and its objects built) before anything compiles
        target, overrides, file_seed = _file_experiment(a.name, a.sets)
        seed = file_seed if seed is None else seed
        name = target.name
    else:
        name = a.name
    seed = 0 if seed is None else seed
    default = name if a.part is None else f"{name}-part-{a.part.strip().replace('/', '-of-')}"
    out = a.out or os.path.join("results", default)
    check_writable(out)  # before anything is compiled (or, for a registered experiment, imported)
    from .. import experiments as X
    from ..engine.checkpoint import Interrupted

    if not is_file(a.name):
        overrides = X.parse_set(a.sets)
    with compile_cache(not a.no_compile_cache) as cache, _notes(X.ShortHorizon):
        try:
            res = X.run(target, runs=a.runs, horizon=a.horizon, seed=seed, overrides=overrides, out=out,
                        progress=not a.no_progress, chunk=a.chunk, resume=a.resume, force=a.force,
                        part=a.part, distributed=a.distributed, path=a.path, keep=a.keep)
        except Interrupted as e:
            print(f"jaxbandits: {e}; partial results marked in {os.path.join(out, 'summary.json')}\n"
                  f"resume with: {e.resume_command}", file=sys.stderr)
            return 130
    if a.distributed:
        from ..experiments.distributed import process_index

        if process_index() != 0:  # process 0 reports and writes
            return 0
    if a.part is not None:
        what = ("its share of the sweep's simulations and fits" if res is None
                else f"{res.runs} runs x {res.horizon} rounds")
        print(f"{name}: part {a.part} ({what}) written to {out}; "
              f"combine all parts with: jaxbandits merge DIR... --out OUT")
        return 0
    return report_result(res, out, cache)


@contextlib.contextmanager
def _notes(*kinds):
    """Warnings of ``kinds`` printed as one line each, ``jaxbandits: note: ...`` (others as Python prints them)."""
    import warnings

    with warnings.catch_warnings():
        shown = warnings.showwarning

        def show(message, category, *args, **kw):
            if issubclass(category, kinds):
                print(f"jaxbandits: note: {_one_line(message)}", file=sys.stderr)
            else:
                shown(message, category, *args, **kw)

        warnings.showwarning = show
        for k in kinds:
            warnings.simplefilter("always", k)
        yield


def _check_scale_out_options(a):
    """The options of parts and distributed runs, checked before JAX starts."""
    if a.processes is not None:
        if a.processes < 1:
            raise ValueError(f"--processes must be >= 1, got {a.processes}")
        if a.distributed or a.coordinator or a.num_processes is not None or a.process_id is not None:
            raise ValueError("--processes starts the processes itself: leave out --distributed, --coordinator, "
                             "--num-processes and --process-id")
    elif not a.distributed:
        for opt, v in (("--coordinator", a.coordinator), ("--num-processes", a.num_processes),
                       ("--process-id", a.process_id)):
            if v is not None:
                raise ValueError(f"{opt} applies to a --distributed run only; add --distributed or leave it out")
    if a.part is not None and (a.distributed or a.processes is not None):
        raise ValueError("--part and --distributed/--processes are exclusive: run parts as separate jobs")


def _without_processes(argv):
    out, skip = [], False
    for x in argv:
        if skip:
            skip = False
            continue
        if x == "--processes":
            skip = True
            continue
        if x.startswith("--processes="):
            continue
        out.append(x)
    return out


def _merge(a):
    from ..experiments.parts import merge

    res = merge(a.dirs, a.out, force=a.force, plot=not a.no_plot)
    return report_result(res, a.out, None)


def report_result(res, out, cache):
    """Print a finished run's summary and the files it wrote (what ``jaxbandits run`` ends with).

    Args:
        res: the run's result (``Results``, ``SweepResults`` or a study's own result).
        out: the folder it was saved to, or None.
        cache: the compiled-program cache of the run, or None.

    Returns:
        The command's exit code, 0.

    Example:
        >>> from jaxbandits import experiments as X  # doctest: +SKIP
        >>> report_result(X.run("quickstart", runs=2), None, None)  # doctest: +SKIP
        0
    """
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
          f"on {t['devices']} device(s)" + (f" of {t['processes']} processes" if t.get("processes", 1) > 1 else "")
          + (f" ({t['parts']} parts)" if "parts" in t else "") + (f"; compilation cache {cache}" if cache else ""))
    print("wrote " + ", ".join(f"{out}/{name}" for name in _written(out)))
    return 0


def _written(out) -> list:
    """The files the results folder ``out`` holds, as its manifest lists them (docs/results.md)."""
    from ..core import fileio

    man = fileio.read_json(os.path.join(out, fileio.MANIFEST_NAME))
    files = list((man or {}).get("files", {})) if isinstance(man, dict) else []
    first = ("summary.json", "results.nc")
    return [f for f in first if f in files] + sorted(f for f in files if f not in first)


def is_file(name: str) -> bool:
    """Whether ``run`` and ``show`` read ``name`` as an experiment file: it ends in ``.toml``.

    Args:
        name: the ``NAME`` argument of ``jaxbandits run`` or ``show``.

    Returns:
        bool: ``True`` for an experiment file (``.toml``, any case), ``False`` for a registered
        experiment's name.

    Example:
        >>> is_file("my_experiment.TOML"), is_file("quickstart")
        (True, False)
    """
    return str(name).lower().endswith(".toml")


def _file_experiment(path, sets):
    """``(Experiment, overrides, seed)`` of an experiment file: ``--set`` changes the dotted keys of
    a declarative file, the [config] keys of a build/runner file (as for a registered experiment)."""
    from ..experiments import files as F
    from .. import experiments as X

    doc, ctx = F.read(path)
    if "build" in doc or "runner" in doc:
        return F.experiment(path, doc_ctx=(doc, ctx)), X.parse_set(sets), doc.get("seed")
    sets = F.parse_sets(sets)
    if sets:
        doc, ctx = F.read(path, sets)
    return F.experiment(path, sets, doc_ctx=(doc, ctx)), None, doc.get("seed")


def _show(a):
    from .. import experiments as X

    if a.output is not None and not a.toml:
        raise ValueError("--output writes the file of --toml: give --toml too")
    if is_file(a.name):
        if a.toml:
            raise ValueError(f"{a.name} is already an experiment file: show --toml writes a registered experiment's")
        from ..experiments import files as F

        exp, overrides, _ = _file_experiment(a.name, a.sets)
        print(F.show_file(exp, a.name, overrides if overrides is not None else F.parse_sets(a.sets)))
        return 0
    exp = X.get(a.name)
    overrides = X.parse_set(a.sets)
    if a.toml:
        from ..experiments import files as F

        text = F.to_toml(exp, overrides)
        if a.output is None:
            sys.stdout.write(text)
        else:
            from ..core.fileio import write_text

            print(f"wrote {write_text(a.output, text)}", file=sys.stderr)
        return 0
    X.resolve_config(exp, overrides)  # bad --set values: an error naming the key
    print(X.show(exp))
    return 0


def _plot(a):
    from ..core.fileio import add_file
    from ..report.plotting import figure_regret, save_figure
    from ..experiments.results import Results

    d = a.dir
    if not os.path.isdir(d):
        raise FileNotFoundError(f"plot: results folder {d!r} does not exist")
    summary = os.path.join(d, "summary.json")
    if os.path.isfile(summary) and not os.path.isfile(os.path.join(d, "results.nc")):
        raise ValueError(f"plot: {d!r} holds no results.nc (a Bayesian fit's or a study's folder?): "
                         "plot re-draws the regret curves of jaxbandits run")
    name = a.output
    if os.path.basename(name) != name or not name.lower().endswith((".png", ".pdf", ".svg")) \
            or name.startswith(".") or name in ("results.nc", "summary.json", "table.md"):
        raise ValueError(f"--output must be a file name (no folder) ending in .png, .pdf or .svg, got {name!r}")
    res = Results.load(d)
    refs = a.reference
    if refs is not None and [r.lower() for r in refs] == ["none"]:
        refs = []
    with _options_named("only", "exclude", "reference", "metric"):  # errors before anything is written
        fig = figure_regret(res, metric=a.metric, logx=a.logx, logy=a.logy, bands=a.bands, only=a.only,
                            exclude=a.exclude, references=refs, pulls=a.pulls)
    print(add_file(d, name, lambda p: save_figure(fig, p)))
    return 0


@contextlib.contextmanager
def _options_named(*names):
    """A ``ValueError`` of the Python API that starts with an argument's name names the option."""
    try:
        yield
    except ValueError as e:
        msg = str(e)
        if any(msg.startswith((n + " ", n + ":")) for n in names):
            raise ValueError("--" + msg) from None
        raise


def _results_folder(d, cmd):
    from ..experiments.results import Results

    if not os.path.isdir(d):
        raise FileNotFoundError(f"{cmd}: results folder {d!r} does not exist")
    if os.path.isfile(os.path.join(d, "summary.json")) and not os.path.isfile(os.path.join(d, "results.nc")):
        raise ValueError(f"{cmd}: {d!r} holds no results.nc (a Bayesian fit's or a study's folder?): "
                         f"{cmd} reads the regret curves of jaxbandits run")
    return Results.load(d)


def _compare(a):
    from ..report.compare import compare, save_comparison

    if a.n_boot < 10:
        raise ValueError(f"--n-boot must be >= 10, got {a.n_boot}")
    if not 0 < a.level < 1:
        raise ValueError(f"--level must be in (0, 1), e.g. 0.95, got {a.level}")
    res = _results_folder(a.dir, "compare")
    with _options_named("baseline", "metric", "only", "exclude"):
        cmp = compare(res, baseline=a.baseline, level=a.level, method=a.method, metric=a.metric, n_boot=a.n_boot,
                      only=a.only, exclude=a.exclude)
    if not cmp.diffs:
        raise ValueError(f"--baseline: {cmp.experiment!r} has no other policy to compare with the baseline")
    print(f"{cmp.experiment}: {cmp.runs} runs, paired difference of {cmp.metric} against the baseline, "
          f"mean [{100 * cmp.level:g}% CI, {'t' if cmp.method == 't' else 'bootstrap'}]\n")
    print(cmp.table())
    for path in save_comparison(a.dir, cmp, res, plot=not a.no_plot, logx=a.logx):
        print(f"wrote {path}")
    return 0


def _fit(a):
    import warnings

    from ..core.fileio import check_writable, output_folder

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

    from .. import bayes as B
    from ..bayes.report import fit_identity, save_fit

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


def _serve(a):
    """``jaxbandits serve``: a policy over HTTP with an SQLite log (docs/online.md)."""
    from . import serve

    if not 1 <= a.port <= 65535:
        raise ValueError(f"--port must be in 1..65535, got {a.port}")
    config = serve.config_from_args(a)  # checked before anything compiles
    with compile_cache(True):  # a restart reuses the compiled programs
        return serve.run(config, a.db, host=a.host, port=a.port, log_level=a.log_level)


if __name__ == "__main__":
    sys.exit(main())
