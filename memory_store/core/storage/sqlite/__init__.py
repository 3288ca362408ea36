"""The embedded backend: one SQLite file in the data dir (apsw, WAL), FTS5 for words, sqlite-vec for
vectors. The default: nothing to set up, nothing leaves the machine.

apsw rather than the stdlib `sqlite3`: many Python builds (macOS among them) cannot load extensions
through `sqlite3`, and sqlite-vec is an extension. apsw bundles a recent SQLite with FTS5 on every OS.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

import apsw

from ....shared.paths import DataPaths
from ...config import Config
from ..base import Capabilities
from ..database import SQLITE, Database
from ..store import Store
from . import connection, schema
from .embeddings import SqliteEmbeddings
from .health import SqliteHealth
from .search import SqliteSearch
from .vectors import VectorIndex

if TYPE_CHECKING:
    from ...records import Memory

CAPABILITIES = Capabilities(
    shared=False, engine=f"apsw {apsw.apsw_version()}, SQLite {apsw.sqlite_lib_version()}",
    # In process a read costs per memory, not per statement: only the candidate judged next (4 at once read 13
    # memories' turns for the 9 a prompt on the latency bench judged).
    conversations_at_once=1,
    archive_up_to=250_000,  # sqlite-vec scans its table for an all-time search (search.py)
    damage=connection.DAMAGE)  # the file is no sound database: the worker moves it aside


def _sql_literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


class SqliteStore(SqliteSearch, SqliteEmbeddings, SqliteHealth, Store):
    backend = "sqlite"

    def __init__(self, paths: DataPaths, config: Config):
        conn = schema.open_database(paths.db)
        owner = schema.local_user()
        dialect = replace(SQLITE, owner=_sql_literal(owner))
        super().__init__(paths, config, Database(conn, dialect, lambda: connection.write_transaction(conn)), owner)
        self.read_only = conn.readonly("main")  # a data dir that cannot be written: searched, never written
        self.vector_error = connection.load_vec(conn)
        self.vectors = VectorIndex(conn) if self.vector_error is None else None
        self._first_ids: dict = {}  # (project, hour) -> the first id of a time window from then (SqliteSearch)

    def capabilities(self) -> Capabilities:
        return CAPABILITIES

    def is_mine(self, memory: Memory) -> bool:
        return True  # a file of one user

    def close(self) -> None:
        self.db.close()

    def set_damaged_aside(self, error: str) -> str | None:
        """The file turned out damaged while running: move it aside (a new one is made on the next open);
        returns where it went, or None when it is sound after all."""
        try:
            damaged = bool(self.integrity_problems())
        except connection.DAMAGE:
            damaged = True
        return str(connection.move_aside(self.paths.db, error)) if damaged else None
