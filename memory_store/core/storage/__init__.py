"""Where memories are kept: one interface (`Store`, store.py), two backends.

- sqlite/    the default: one file in the data dir, FTS5 and sqlite-vec; nothing to set up.
- postgres/  a shared PostgreSQL with pgvector, for a team or several machines (`storage.url` in
             config.json or RECALL_DATABASE_URL); its rows belong to database roles, and row-level
             security keeps a role's private memories its own.

Core code opens a store with `open_store` and never sees which one it got.
"""

from __future__ import annotations

from ...shared.database_url import database_url
from ...shared.paths import DataPaths
from ..config import Config
from .base import Recorded, Row, StorageUnavailable
from .store import Store


def open_store(paths: DataPaths, config: Config) -> Store:
    """The store the configuration names: the SQLite file of the data dir, unless a database URL is set
    (RECALL_DATABASE_URL, else storage.url). A shared database is connected to on first use."""
    url = database_url(config.storage.url)
    if url:
        from .postgres import PostgresStore

        return PostgresStore(paths, config, url)
    from .sqlite import SqliteStore

    return SqliteStore(paths, config)


__all__ = ["Recorded", "Row", "Store", "StorageUnavailable", "open_store"]
