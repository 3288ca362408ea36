"""recall's version: one place, imported by the hook side, the worker and the packaging."""

__version__ = "0.2.0"
