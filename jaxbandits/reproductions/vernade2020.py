"""Vernade et al. (2020), Figures 1 and 3: d = 5, K = 10 fresh actions per round
(binary {0,1}^5 normalised: the paper's text, the primary table; uniform [0,1]^5 normalised: the
authors' code, the second table), theta = 1/sqrt(5) in every coordinate, delta = 0.1, lam = 1.
Geometric delays with p = 1/mu on {1, 2, ...} (the zero-based law shifted by one)."""
from __future__ import annotations

import numpy as np

from .. import channels as C
from ..core import delays as D
from .. import envs as E
from ..experiments.specs import Experiment, Panel
from ..policies import classic as P
from ..policies import linear as L

THETA = list(np.full(5, 1 / np.sqrt(5)))


def _policies(m):
    return {"OTFLinUCB (ref. code)": L.otf_linucb(m), "OTFLinTS (ref. code)": L.otf_lints(m),
            "OTFLinUCB (paper)": L.otf_linucb(m, variant="paper"),
            "OTFLinTS (paper)": L.otf_lints(m, variant="paper", bias_mode="exact"),
            "random": P.uniform_random()}


def _fig1(cfg):
    panels = []
    for arms in cfg["action_sets"]:
        for m, mu in cfg["settings"]:
            env = E.linear(THETA, n_actions=10, action_set=arms, normalize=True, delay=D.shift(D.geometric(1 - 1 / mu), 1))
            panels.append(Panel(f"{arms}: m={m}, mu={mu}", env, C.conversions(window=int(m)), _policies(int(m))))
    return panels


def _fig3(cfg):
    m = int(cfg["window"])
    panels = []
    for arms in cfg["action_sets"]:
        env = E.linear(THETA, n_actions=10, action_set=arms, normalize=True, delay=D.criteo_like())
        pols = _policies(m)
        pols["OTFLinUCB without bias (not in paper)"] = L.otf_linucb(m, bias=False)
        pols["LinUCB-wait (not in paper)"] = L.linucb_wait(m)
        panels.append(Panel(f"{arms}: m={m}, Criteo-like delays", env, C.conversions(window=m), pols))
        panels.append(Panel(f"{arms}: m={m}, Criteo-like delays", env, C.conversions(window=None),
                            {"LinUCB ignoring delays (not in paper)": L.linucb_ignore_delays()}))
    return panels


FIG1 = Experiment("vernade2020-fig1",
                  "Vernade et al. 2020 Fig. 1: OTFLinUCB vs OTFLinTS, geometric delays, (m, mu) in "
                  "{(100,100), (500,100), (100,500)}; binary and uniform action sets",
                  _fig1, {"settings": [[100, 100], [500, 100], [100, 500]], "action_sets": ["binary", "uniform"]},
                  horizon=3000, runs=50, layout=(2, 3), checkpoints=(500, 1000, 2000, 3000),
                  ranges={"settings": "pairs [m, mu]: window m an integer >= 1, mean delay mu > 1 "
                                      "(geometric p = 1/mu, shifted to {1, 2, ...})",
                          "action_sets": "a non-empty list of 'binary' and/or 'uniform'"})
FIG3 = Experiment("vernade2020-fig3",
                  "Vernade et al. 2020 Fig. 3: heavy-tailed (Criteo-like) delays, T = 1e4, m = 2000",
                  _fig3, {"window": 2000, "action_sets": ["binary", "uniform"]}, horizon=10_000, runs=20,
                  layout=(1, 2), checkpoints=(1000, 2000, 5000, 10_000),
                  ranges={"window": "window m, an integer >= 1",
                          "action_sets": "a non-empty list of 'binary' and/or 'uniform'"})
