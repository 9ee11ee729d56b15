"""Worlds: stochastic, conversions, linear, oblivious adversarial, click streams and composite."""
from .base import World
from .adversarial import (LabelStreamEnv, ObliviousEnv, bernoulli_losses, label_stream, oblivious, switching,
                          synthetic_labels, zipf_probs)
from .composite import CompositeEnv, composite
from .linear import LinearEnv, linear
from .stochastic import ArmDelayEnv, BanditEnv, bernoulli, conversions, conversions_arm_delays, gaussian

__all__ = ["World", "BanditEnv", "bernoulli", "gaussian", "conversions", "LinearEnv", "linear",
           "ObliviousEnv", "oblivious", "switching", "bernoulli_losses", "CompositeEnv", "composite",
           "LabelStreamEnv", "label_stream", "synthetic_labels", "zipf_probs", "ArmDelayEnv", "conversions_arm_delays"]
