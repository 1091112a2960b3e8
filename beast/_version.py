"""beast's version: the one source (pyproject reads it, caches key on it)."""
__version__ = "0.1.0"
