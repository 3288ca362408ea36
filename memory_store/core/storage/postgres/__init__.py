"""The shared backend: a PostgreSQL with pgvector that several machines and teammates point at
(`storage.url` / RECALL_DATABASE_URL). Words through PostgreSQL's full-text search scored as BM25,
vectors through pgvector, and rows owned by database roles under row-level security (schema.py).

Only the worker (and a `recall` command run by hand) holds a connection; the hook client never
touches the network. A server that is down costs a hook nothing: StorageUnavailable, and the event
waits in the local spool (connection.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ....shared.database_url import masked
from ....shared.paths import DataPaths
from ...config import Config
from ..base import Capabilities, StorageUnavailable
from ..store import Store
from . import schema
from .connection import SCHEMA, PgDatabase, first_line
from .embeddings import PgEmbeddings
from .feed import PgVectorFeed
from .health import PgHealth
from .search import PgSearch

if TYPE_CHECKING:
    from ...records import Memory

# A read is a round trip to the server: the gate reads several candidates' turns at once. pgvector's index
# answers an all-time search fast: RAM keeps only the recent vectors.
CAPABILITIES = Capabilities(shared=True, engine="", conversations_at_once=4, archive_up_to=0, damage=())


class PostgresStore(PgSearch, PgEmbeddings, PgHealth, Store):
    backend = "postgres"

    def __init__(self, paths: DataPaths, config: Config, url: str):
        self.url = url  # before the connection: _ready reads it (PgDatabase connects on first use)
        super().__init__(paths, config, PgDatabase(url, on_connect=self._ready))  # the role: known once connected
        self.team_model: str | None = None
        self.team_dim: int | None = None
        self._stats_cache: dict = {}
        self.feed = PgVectorFeed(self)  # what the worker's RAM copy of recent vectors follows

    def capabilities(self) -> Capabilities:
        return CAPABILITIES

    def _ready(self, conn) -> None:
        """A new connection: the vector type known to the driver, the schema there and current."""
        try:
            from pgvector.psycopg import register_vector
        except ImportError:
            from .connection import driver_missing

            raise StorageUnavailable(driver_missing()) from None
        where = masked(self.url)
        settings = schema.settings_of(conn)
        if settings is None:
            raise StorageUnavailable(f"the database at {where} has no recall schema yet: run `recall team init` "
                                     "there once, as a role that may create the pgvector extension")
        version, latest = int(settings.get("schema_version", 0)), len(schema.MIGRATIONS)
        if version < latest:
            raise StorageUnavailable(f"the recall schema at {where} is version {version}, this recall needs {latest}: "
                                     "its administrator runs `recall team init` to upgrade it")
        if version > latest:
            raise StorageUnavailable(f"the recall schema at {where} is version {version}, newer than this recall "
                                     f"({latest}): upgrade recall")
        extension_schema = conn.execute("SELECT n.nspname FROM pg_extension e JOIN pg_namespace n "
                                        "ON n.oid = e.extnamespace WHERE e.extname = 'vector'").fetchone()
        if extension_schema is None:
            raise StorageUnavailable(f"the database at {where} lacks the pgvector extension: run `recall team init`")
        from psycopg import sql

        conn.execute(sql.SQL("SET search_path = {}, {}, public").format(
            sql.Identifier(SCHEMA), sql.Identifier(extension_schema[0])))
        try:
            register_vector(conn)
        except Exception as exc:
            raise StorageUnavailable(f"cannot use pgvector at {where}: {first_line(exc)}") from None
        self.owner = conn.execute("SELECT current_user").fetchone()[0]
        self.team_model, self.team_dim = settings.get("embedding_model"), int(settings.get("embedding_dim", 0))

    def connect(self) -> PostgresStore:
        """Connect now (instead of on first use); raises StorageUnavailable with the reason."""
        _ = self.db.conn
        return self

    def is_mine(self, memory: Memory) -> bool:
        _ = self.db.conn  # the role is known once connected
        return memory.owner == self.owner

    def close(self) -> None:
        self.db.close()

    def location(self) -> str:
        return masked(self.url)
