"""Internal: not public API.

The library's version (a leaf module: read by saved files' metadata without importing the package)."""
__version__ = "0.1.0"
