"""recall's memory store: capture Claude Code events, recall them when they help.

Layers, each a folder (a module imports only from layers listed above it):

    shared/    standard library only: wire protocol, data-dir paths, spool, redaction, logs
    hook/      runs inside every hook process (standard library only) and the first-install bootstrap
    core/      the memory engine: events and memories, capture, SQLite store, embeddings, search
    api/       `Recall`, the one Python API over the core, and the worker's background rounds
    worker/    the long-lived process that serves hooks, and the client that calls it
    shells/    the `recall` CLI
    devtools/  demo, hook runner, benchmarks (not used at run time)

This file imports nothing but the version: the hook client imports the package and must start in a
few milliseconds. The public API is loaded on first use.
"""

from .version import __version__

__all__ = ["open_recall", "Recall", "Hit", "Memory", "Config", "__version__"]


def __getattr__(name):  # PEP 562: lazy public API, keeps the hook path stdlib-only
    if name in ("open_recall", "Recall"):
        from . import api

        return getattr(api, name)
    if name in ("Hit", "Memory"):
        from .core import records

        return getattr(records, name)
    if name == "Config":
        from .core.config import Config

        return Config
    raise AttributeError(name)
