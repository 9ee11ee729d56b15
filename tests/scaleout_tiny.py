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
    if NAME not in X._SESSION:
        X.register(TINY)


def _die_after_saves(n: int):
    """Test hook: this process is killed (SIGKILL, as a lost machine) right after its n-th checkpoint save."""
    import os
    import signal

    from jaxbandits.engine import checkpoint as K

    save, calls = K.Checkpoint.save, {"n": 0}

    def dying(self, *a, **k):
        save(self, *a, **k)
        calls["n"] += 1
        if calls["n"] == n:
            os.kill(os.getpid(), signal.SIGKILL)

    K.Checkpoint.save = dying


def _die_after_units(n: int):
    """Test hook: this process is killed (SIGKILL) right after it saved its n-th unit of a sweep."""
    import os
    import signal

    from jaxbandits.engine import checkpoint as K

    put, calls = K.CallCache.put_bytes, {"n": 0}

    def dying(self, *a, **k):
        put(self, *a, **k)
        if self.folder is not None:
            calls["n"] += 1
            if calls["n"] == n:
                os.kill(os.getpid(), signal.SIGKILL)

    K.CallCache.put_bytes = dying


if __name__ == "__main__":
    import os

    if os.environ.get("SCALEOUT_TINY_DIE_AFTER_SAVES"):
        _die_after_saves(int(os.environ["SCALEOUT_TINY_DIE_AFTER_SAVES"]))
    if os.environ.get("SCALEOUT_TINY_DIE_AFTER_UNITS"):
        _die_after_units(int(os.environ["SCALEOUT_TINY_DIE_AFTER_UNITS"]))
    register()
    from jaxbandits.cli import main

    sys.exit(main())
