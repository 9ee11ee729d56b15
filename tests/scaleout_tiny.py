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


if __name__ == "__main__":
    register()
    from jaxbandits.cli import main

    sys.exit(main())
