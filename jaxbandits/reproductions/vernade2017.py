"""Vernade, Cappe and Perchet (2017), Figures 1-3 (Sec. 7): K = 3, geometric delays
"with parameter 1/mu", mu = 500 (rho = 1 - 1/mu = 0.998: the paper's own formulas use it as the
survival ratio), window m = 1000, T = 1e4,
beta = log t (eps = 0), round-robin start, random ties."""
from __future__ import annotations

from ..core import validate as V
from .. import channels as C
from ..core import delays as D
from .. import envs as E
from ..experiments.specs import Experiment, Panel
from ..policies import conversions as P

THETA_H = [0.5, 0.4, 0.3]
THETA_L = [0.1, 0.05, 0.03]
CFG = {"mu": 500.0, "window": 1000, "eps": 0.0, "theta_H": THETA_H, "theta_L": THETA_L,
       "rho_from_mean": "paper"}
RANGES = {"mu": "delay parameter: > 1 with rho_from_mean='paper' (rho = 1 - 1/mu), in (0, 2**30] with 'exact' "
                "(mean mu)",
          "window": "censoring window m, an integer in [0, 2**24]",
          "eps": "exploration term beta = log t + eps log log t, a number >= 0",
          "theta_H": "2 to 2**20 conversion rates, each in [0, 1]",
          "theta_L": "2 to 2**20 conversion rates, each in [0, 1]",
          "rho_from_mean": "'paper' (rho = 1 - 1/mu, mean mu - 1) or 'exact' (mean mu)"}


def delay_law(cfg):
    """The geometric delay law of a Vernade et al. (2017) experiment's config.

    ``rho = 1 - 1/mu`` (the paper's "parameter 1/mu", mean ``mu - 1``; default) or
    ``rho = mu/(1+mu)`` (``rho_from_mean="exact"``, mean ``mu``).

    Args:
        cfg: the experiment's config: ``mu`` (``> 0``; ``> 1`` with ``"paper"``) and
            ``rho_from_mean`` (``"paper"`` or ``"exact"``).

    Returns:
        The :func:`jaxbandits.core.delays.geometric` law.

    Raises:
        ValueError: ``mu`` or ``rho_from_mean`` out of range.

    Examples:
        >>> from jaxbandits.reproductions import vernade2017
        >>> law = vernade2017.delay_law({"mu": 100.0, "rho_from_mean": "paper"})
        >>> round(float(law.mean), 4)
        99.0
    """
    mu = V.positive("mu", cfg["mu"])
    mode = V.choice("rho_from_mean", cfg["rho_from_mean"], ("paper", "exact"))
    if mode == "paper":
        if mu <= 1:
            raise ValueError(f"mu must be > 1 with rho_from_mean='paper', got {mu}")
        return D.geometric(1.0 - 1.0 / mu)
    return D.geometric(mean=mu)


def _params(cfg):
    """``(law, m, eps)``, every config value checked before anything is computed with them."""
    law = delay_law(cfg)
    m = V.integer("window", cfg["window"], lo=0, hi=V.MAX_HORIZON)
    eps = V.nonneg("eps", cfg["eps"])
    for tag in ("H", "L"):
        V.real(f"theta_{tag}", cfg[f"theta_{tag}"], lo=0.0, hi=1.0)
    return law, m, eps


def _tau_m(law, m):
    return float(law.cdf(m))


def _fig1(cfg):
    law, m, eps = _params(cfg)
    tm = _tau_m(law, m)
    panels = []
    for tag in ("H", "L"):
        th = cfg[f"theta_{tag}"]
        env = E.conversions(th, law)
        panels.append(Panel(f"theta_{tag} censored (m={m})", env, C.conversions(window=m),
                            {"d-ucb": P.delayed_ucb(law, m, eps), "d-klucb": P.delayed_klucb(law, m, eps)},
                            {"lower bound (Thm 3)": P.lower_bound_constant(th, tm)}))
        panels.append(Panel(f"theta_{tag} uncensored", env, C.conversions(window=None),
                            {"ud-ucb": P.delayed_ucb(law, None, eps), "ud-klucb": P.delayed_klucb(law, None, eps)},
                            {"lower bound (Thm 4)": P.lower_bound_constant(th)}))
    return panels


def _fig2(cfg):
    law, m, eps = _params(cfg)
    env = E.conversions(cfg["theta_L"], law)
    ch = C.conversions(window=m)
    lb = {"lower bound (Thm 3)": P.lower_bound_constant(cfg["theta_L"], _tau_m(law, m))}
    return [Panel("UCB", env, ch, {"d-ucb": P.delayed_ucb(law, m, eps), "Discarding-UCB": P.discarding_ucb(law, m, eps)}, lb),
            Panel("KLUCB", env, ch, {"d-klucb": P.delayed_klucb(law, m, eps),
                                     "Discarding-KLUCB": P.discarding_klucb(law, m, eps)}, lb)]


def _fig3(cfg):
    law, m, eps = _params(cfg)
    env = E.conversions(cfg["theta_L"], law)
    return [Panel(f"censored (m={m})", env, C.conversions(window=m),
                  {"d-klucb (known tau)": P.delayed_klucb(law, m, eps),
                   "d-klucb (online tau)": P.delayed_klucb(None, m, eps, online=True)}),
            Panel("uncensored", env, C.conversions(window=None),
                  {"ud-klucb (known rho)": P.delayed_klucb(law, None, eps),
                   "ud-klucb (online rho)": P.delayed_klucb(None, None, eps, online=True)})]


FIG1 = Experiment("vernade2017-fig1",
                  "Vernade et al. 2017 Fig. 1: DelayedUCB vs DelayedKLUCB, theta_H and theta_L, censored and not",
                  _fig1, dict(CFG), horizon=10_000, runs=100, checkpoints=(1000, 2000, 5000, 10000), layout=(1, 4), ranges=RANGES)
FIG2 = Experiment("vernade2017-fig2",
                  "Vernade et al. 2017 Fig. 2: Discarding vs delay-corrected UCB/KLUCB, theta_L, censored",
                  _fig2, dict(CFG), horizon=10_000, runs=200,
                  checkpoints=(250, 500, 1000, 1500, 2000, 3000, 4000, 5000, 8000, 10000), layout=(1, 2), ranges=RANGES)
FIG3 = Experiment("vernade2017-fig3",
                  "Vernade et al. 2017 Fig. 3 (App. D): DelayedKLUCB with known vs online-estimated delay CDF",
                  _fig3, dict(CFG), horizon=10_000, runs=100, checkpoints=(1000, 2000, 5000, 10000), layout=(1, 2), ranges=RANGES)
