"""A tiny experiment for the scale-out tests (tests/test_scaleout.py), registered when imported;
run as a script it is the ``jaxbandits`` command with that experiment known (the processes of a
distributed test run it)."""
import sys

from jaxbandits import channels as C
from jaxbandits import delays as D
from jaxbandits import envs as E
from jaxbandits import experiments as X
from jaxbandits.policies import classic as P

NAME = "scaleout-tiny"


def _build(cfg):
    """One named panel, two policies: the merge also carries panels, log lines and checkpoints."""
    bern = E.bernoulli(cfg["means"], delay=D.uniform(0, int(cfg["max_delay"])))
    return [X.Panel("delayed", bern, C.attributed(), {"UCB1": P.ucb1(), "random": P.uniform_random()},
                    log_lines={"c=2": 2.0})]


TINY = X.Experiment(NAME, "two arms, delays, UCB1 and random (scale-out tests)", _build,
                    {"means": [0.6, 0.4], "max_delay": 6}, horizon=120, runs=6, checkpoints=(60, 120))


def register():
    if NAME not in X.registry._SESSION:
        X.register(TINY)


def after_nth_call(cls, name, n, action, counts=lambda self: True):
    """``(original, wrapped)`` for the method ``cls.name``: ``wrapped`` calls the original, then,
    right after its ``n``-th call (counting the calls where ``counts(self)``), ``action()``. Tests
    install it to lose a machine at a chosen point (KeyboardInterrupt in process, SIGKILL in a
    child)."""
    original, calls = getattr(cls, name), {"n": 0}

    def wrapped(self, *a, **k):
        out = original(self, *a, **k)
        if counts(self):
            calls["n"] += 1
            if calls["n"] == n:
                action()
        return out

    return original, wrapped


def interrupt():
    raise KeyboardInterrupt


def _sigkill():
    import os
    import signal

    os.kill(os.getpid(), signal.SIGKILL)


def lose_process_0(cli_args, hook: dict, timeout: float = 240) -> int:
    """A node lost in a distributed job: two processes of this script (``cli_args`` + ``--distributed``
    on 127.0.0.1, one CPU device each), process 0 with the environment ``hook`` (a SIGKILL hook
    above) and the other killed once process 0 is gone. Returns process 0's exit status."""
    import os
    import subprocess

    from jaxbandits.experiments.distributed import free_port

    here = os.path.abspath(__file__)
    root = os.path.dirname(os.path.dirname(here))
    port = free_port()
    base = dict(os.environ, JAX_PLATFORMS="cpu", XLA_FLAGS="--xla_force_host_platform_device_count=1",
                PYTHONPATH=os.pathsep.join([root, os.environ.get("PYTHONPATH", "")]))
    procs = [subprocess.Popen([sys.executable, here, *cli_args, "--distributed", "--coordinator", f"127.0.0.1:{port}",
                               "--num-processes", "2", "--process-id", str(i)],
                              env=dict(base, **(hook if i == 0 else {})), stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL) for i in range(2)]
    try:
        procs[0].wait(timeout=timeout)
    finally:
        for q in procs:
            q.kill()
            q.wait()
    return procs[0].returncode


if __name__ == "__main__":
    import os

    from jaxbandits.engine import checkpoint as K

    if os.environ.get("SCALEOUT_TINY_DIE_AFTER_SAVES"):  # killed right after the n-th checkpoint save
        K.Checkpoint.save = after_nth_call(K.Checkpoint, "save", int(os.environ["SCALEOUT_TINY_DIE_AFTER_SAVES"]),
                                           _sigkill)[1]
    if os.environ.get("SCALEOUT_TINY_DIE_AFTER_UNITS"):  # killed right after the n-th sweep unit saved to a folder
        K.CallCache.put_bytes = after_nth_call(K.CallCache, "put_bytes", int(os.environ["SCALEOUT_TINY_DIE_AFTER_UNITS"]),
                                               _sigkill, counts=lambda self: self.folder is not None)[1]
    register()
    from jaxbandits.apps.cli import main

    sys.exit(main())
