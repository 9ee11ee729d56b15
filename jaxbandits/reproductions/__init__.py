"""Paper reproductions: each module registers its named experiments."""
from . import bayes, pikeburke2018, thune2019, vernade2017, vernade2020, wang2021  # noqa: F401
