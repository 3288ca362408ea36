"""The embedded backend: one SQLite file in the data dir (apsw, WAL), FTS5 for words, sqlite-vec for
vectors. The default: nothing to set up, nothing leaves the machine.

apsw rather than the stdlib `sqlite3`: many Python builds (macOS among them) cannot load extensions
through `sqlite3`, and sqlite-vec is an extension. apsw bundles a recent SQLite with FTS5 on every OS.
"""

from __future__ import annotations

from ....shared.logs import JsonLog
from ....shared.paths import DataPaths
from ...config import Config
from ..database import SQLITE, Database
from ..store import Store
from ..term_frequency import TermFrequencies
from . import connection, schema
from .embeddings import SqliteEmbeddings
from .health import SqliteHealth
from .search import SqliteSearch
from .vectors import VectorIndex

# A new memory's id: above every id in use and every id ever deleted (schema.m002: ids are never reused).
NEXT_MEMORY_ID = ("(SELECT max(coalesce((SELECT max(id) FROM memories), 0), "
                  "coalesce((SELECT last_id FROM id_watermark WHERE name = 'memories'), 0)) + 1)")


def _sql_literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


class SqliteStore(SqliteSearch, SqliteEmbeddings, SqliteHealth, Store):
    backend = "sqlite"
    NEW_MEMORY_ID = NEXT_MEMORY_ID
    DAMAGE = connection.DAMAGE  # errors that mean the file is no sound database (the worker moves it aside)

    def __init__(self, paths: DataPaths, config: Config):
        self.paths = paths
        self.config = config
        self.log = JsonLog(paths.log_file, "store")
        conn = schema.open_database(paths.db)
        self.read_only = conn.readonly("main")  # a data dir that cannot be written: searched, never written
        self.db = Database(conn, SQLITE, lambda: connection.write_transaction(conn))
        self.owner = schema.local_user()
        self.OWNER = _sql_literal(self.owner)
        self.vector_error = connection.load_vec(conn)
        self.vectors = VectorIndex(conn) if self.vector_error is None else None
        self.recent_vectors = None
        self.term_frequencies = TermFrequencies()
        self.paths_seen: set = set()
        self._first_ids: dict = {}  # (project, hour) -> the first id of a time window from then (SqliteSearch)

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
