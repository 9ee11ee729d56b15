"""Policies, one module per family (classic baselines here; the paper families in their modules)."""
from . import classic
from .classic import (exp3, gaussian_thompson, kl_ucb, lints, linucb, thompson, ucb1,
                      uniform_random)

__all__ = ["classic", "uniform_random", "ucb1", "kl_ucb", "thompson", "gaussian_thompson", "exp3",
           "linucb", "lints"]
from . import conversions  # noqa: E402
from .conversions import delayed_klucb, delayed_ucb, discarding_klucb, discarding_ucb  # noqa: E402

__all__ += ["conversions", "delayed_ucb", "delayed_klucb", "discarding_ucb", "discarding_klucb"]
from . import adversarial  # noqa: E402
from .adversarial import dew, doubling, skipper, skipper_dew  # noqa: E402

__all__ += ["adversarial", "dew", "skipper", "skipper_dew", "doubling"]
from . import anonymous  # noqa: E402
from .anonymous import odaaf, odaaf_b, odaaf_naive, odaaf_v, qpmd  # noqa: E402

__all__ += ["anonymous", "odaaf", "odaaf_b", "odaaf_v", "odaaf_naive", "qpmd"]
from . import linear  # noqa: E402
from .linear import otf_linucb, otf_lints  # noqa: E402

__all__ += ["linear", "otf_linucb", "otf_lints"]
