"""Paper reproductions: each module registers its named experiments."""
from . import thune2019, vernade2017  # noqa: F401
