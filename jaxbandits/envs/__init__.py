"""Worlds: stochastic, conversions, linear, oblivious adversarial and composite."""
from .adversarial import ObliviousEnv, bernoulli_losses, oblivious, switching
from .composite import CompositeEnv, composite
from .linear import LinearEnv, linear
from .stochastic import BanditEnv, bernoulli, conversions, gaussian

__all__ = ["BanditEnv", "bernoulli", "gaussian", "conversions", "LinearEnv", "linear",
           "ObliviousEnv", "oblivious", "switching", "bernoulli_losses", "CompositeEnv", "composite"]
