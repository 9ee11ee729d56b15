"""docs/conventions.md §8: where a seed may be left out, it is 0, in every function and command that
takes one (a default drifting to None or to a clock would make a repeated command give other numbers)."""
import importlib
import inspect

import pytest

import jaxbandits
from jaxbandits.apps import cli

SEEDED = [
    "jaxbandits.experiments.runner:run", "jaxbandits.bayes.fit:delay_laws", "jaxbandits.bayes.contextual:fit_contextual",
    "jaxbandits.bayes.ppc:ppc_curves", "jaxbandits.bayes.ppc:plot_ppc", "jaxbandits.bayes.synth:synthetic_log",
    "jaxbandits.bayes.calibration:sbc", "jaxbandits.delaymodels.warm:policy_prior", "jaxbandits.report.compare:compare",
    "jaxbandits.core.intervals:bootstrap_interval", "jaxbandits.core.intervals:interval",
    "jaxbandits.envs.adversarial:synthetic_labels",
]


def _walk_seed_functions():
    """Every public function of the package with a ``seed`` parameter (found, not listed by hand)."""
    seen = {}
    for name in sorted(m for m in _modules()):
        mod = importlib.import_module(name)
        for attr, obj in vars(mod).items():
            if attr.startswith("_") or not inspect.isfunction(obj) or obj.__module__ != name:
                continue
            if "seed" in inspect.signature(obj).parameters:
                seen[f"{name}:{attr}"] = obj
    return seen


def _modules():
    import pkgutil
    for m in pkgutil.walk_packages(jaxbandits.__path__, "jaxbandits."):
        if ".__main__" in m.name or m.name.startswith("jaxbandits.moved"):
            continue
        leaf = m.name.rsplit(".", 1)[-1]
        if not leaf.startswith("_"):
            yield m.name


def test_every_public_seed_parameter_defaults_to_zero():
    found = _walk_seed_functions()
    assert set(SEEDED) <= set(found), sorted(set(SEEDED) - set(found))
    bad = {k: inspect.signature(f).parameters["seed"].default for k, f in found.items()
           if inspect.signature(f).parameters["seed"].default not in (0, inspect.Parameter.empty)}
    assert not bad, f"seed defaults other than 0: {bad}"


@pytest.mark.parametrize("argv", [["run", "quickstart"], ["fit", "log.csv"], ["evaluate", "log.db", "--policy", "ucb1"],
                                  ["serve", "--policy", "ucb1"]])
def test_every_commands_seed_is_zero_when_left_out(argv):
    a = cli.parser().parse_args(argv)
    # run and serve keep None to tell "left out" from "0 given" (the file's or the config's seed wins), then use 0
    assert a.seed in (0, None), (argv[0], a.seed)
