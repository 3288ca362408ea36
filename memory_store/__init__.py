"""recall's memory store: capture Claude Code events, recall them when they help.

The package is imported by two very different callers: the hook client, which
must start in a few milliseconds with the standard library alone, and the
worker/CLI, which load SQLite extensions and an embedding model. So this file
stays empty of imports; ``open_store`` and friends are loaded on first use.
"""

__version__ = "0.1.0"

__all__ = ["open_store", "Store", "Hit", "Config", "__version__"]


def __getattr__(name):  # PEP 562: lazy public API, keeps the hook path stdlib-only
    if name in ("open_store", "Store"):
        from . import store

        return getattr(store, name)
    if name == "Hit":
        from .models import Hit

        return Hit
    if name == "Config":
        from .config import Config

        return Config
    raise AttributeError(name)
