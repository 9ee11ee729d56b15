"""The core experiments that ship with jaxbandits (named in :data:`jaxbandits.experiments.BUILTIN`
as ``jaxbandits.experiments:NAME``)."""
from __future__ import annotations

import numpy as np

from ..core import validate as V
from .. import channels as C
from ..core import delays as D
from .. import envs as E
from ..policies import classic as P
from .specs import Experiment


def _build_quickstart(cfg):
    env = E.conversions(cfg["theta"], D.geometric(mean=cfg["delay_mean"]))
    ch = C.conversions(window=cfg["window"])
    pols = {"UCB1": P.ucb1(), "KL-UCB": P.kl_ucb(), "Thompson": P.thompson(), "random": P.uniform_random()}
    return env, ch, pols


QUICKSTART = Experiment(
    "quickstart",
    "Conversions with geometric delays seen through a censored window: UCB1, KL-UCB, Thompson, random",
    _build_quickstart,
    {"theta": [0.5, 0.4, 0.3, 0.2], "delay_mean": 50.0, "window": 200},
    horizon=10000, runs=1000,
    ranges={"theta": "2 to 2**20 conversion rates, each in [0, 1]",
            "delay_mean": "mean of the geometric delay law, in [0, 2**30]",
            "window": "censoring window m (conversions later than m rounds are never seen), integer >= 0"})


def _build_classic(cfg):
    K = V.integer("n_arms", cfg["n_arms"], lo=2)
    env = E.bernoulli(np.linspace(cfg["low"], cfg["high"], K))
    pols = {"UCB1": P.ucb1(), "KL-UCB": P.kl_ucb(), "Thompson": P.thompson(), "Exp3": P.exp3()}
    return env, C.attributed(), pols


CLASSIC_BERNOULLI = Experiment(
    "classic-bernoulli",
    "K=10 Bernoulli arms, means linspace(0.1, 0.9), no delay: UCB1, KL-UCB, Thompson, Exp3",
    _build_classic, {"n_arms": 10, "low": 0.1, "high": 0.9}, horizon=10000, runs=200,
    ranges={"n_arms": "integer in [2, 2**20]", "low": "lowest arm mean, in [0, 1]", "high": "highest arm mean, in [0, 1]"})


def _build_delayed(cfg):
    K = V.integer("n_arms", cfg["n_arms"], lo=2)
    env = E.bernoulli(np.linspace(cfg["low"], cfg["high"], K), delay=D.uniform(0, int(cfg["max_delay"])))
    pols = {"UCB1": P.ucb1(), "KL-UCB": P.kl_ucb(), "Thompson": P.thompson(), "Exp3": P.exp3()}
    return env, C.attributed(), pols


CLASSIC_DELAYED = Experiment(
    "classic-delayed",
    "classic-bernoulli with uniform delays on {0..max_delay}: the cost of waiting for feedback",
    _build_delayed, {"n_arms": 10, "low": 0.1, "high": 0.9, "max_delay": 200}, horizon=10000, runs=200,
    ranges={"n_arms": "integer in [2, 2**20]", "low": "lowest arm mean, in [0, 1]", "high": "highest arm mean, in [0, 1]",
            "max_delay": "delays uniform on {0..max_delay}, an integer in [0, 2**30]"})
