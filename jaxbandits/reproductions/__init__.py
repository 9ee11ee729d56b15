"""Paper reproductions: each module registers its named experiments."""
from . import vernade2017  # noqa: F401
