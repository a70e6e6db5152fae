"""The package version (the User-Agent says it)."""

__version__ = "1.0.0"
