"""One database connection with recall's habits, whichever the backend.

Statements are written once, with `?` placeholders and the SQL both SQLite and PostgreSQL
understand (`INSERT ... ON CONFLICT`, `RETURNING`, `IN (?, ?)`); `Database` runs them on an apsw
connection as they are and on a psycopg one with `%s` placeholders. The few spellings that differ
(the larger of two values, a field of the JSON meta) come from `Dialect`. One lock serialises the
connection, so one Store can serve many threads.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Dialect:
    name: str  # "sqlite" or "postgres"
    greatest: str  # function taking the larger of its arguments
    least: str
    # Tables that several database roles share are keyed by their owner too (events, sessions, ...):
    # the start of those keys, for ON CONFLICT targets.
    owner_key: str
    new_memory_id: str  # a new memory's id
    owner: str  # the owner of what this connection writes
    mine: str  # condition: the row is this connection's own (always, in a file of one user)

    def in_list(self, column: str, values: Iterable[Any]) -> tuple[str, list]:
        """`column IN (...)` with its arguments: one array argument on a server (binding hundreds of
        parameters one by one costs it more than the query)."""
        values = list(values)
        if self.name == "sqlite":
            return f"{column} IN ({','.join('?' * len(values))})", values
        return f"{column} = ANY(?)", [values]

    def json_text(self, column: str, key: str) -> str:
        """A top-level text field of a JSON column (meta)."""
        if self.name == "sqlite":
            return f"json_extract({column}, '$.{key}')"
        return f"(({column})::jsonb ->> '{key}')"


# A new SQLite memory's id: above every id in use and every id ever deleted (sqlite/schema.m002: ids are never
# reused).
NEXT_SQLITE_MEMORY_ID = ("(SELECT max(coalesce((SELECT max(id) FROM memories), 0), "
                         "coalesce((SELECT last_id FROM id_watermark WHERE name = 'memories'), 0)) + 1)")

# SQLite's owner is the local user's name, filled in per store (SqliteStore: dataclasses.replace).
SQLITE = Dialect("sqlite", greatest="max", least="min", owner_key="", new_memory_id=NEXT_SQLITE_MEMORY_ID,
                 owner="''", mine="1 = 1")
POSTGRES = Dialect("postgres", greatest="greatest", least="least", owner_key="owner, ", new_memory_id="DEFAULT",
                   owner="current_user", mine="owner = current_user")


@functools.lru_cache(maxsize=1024)
def to_format_style(sql: str) -> str:
    """`?` placeholders as psycopg's `%s` (a literal `%` doubled). recall's SQL puts no `?` in literals."""
    return sql.replace("%", "%%").replace("?", "%s")


class Database:
    """A connection and its lock. `begin` is the backend's write transaction (a context manager)."""

    def __init__(self, conn: Any, dialect: Dialect, begin: Callable[[], Any]):
        self.conn = conn
        self.dialect = dialect
        self.lock = threading.RLock()
        self._begin = begin
        self._sql = (lambda sql: sql) if dialect.name == "sqlite" else to_format_style

    def _execute(self, sql: str, args=()):
        return self.conn.execute(self._sql(sql), tuple(args))

    def run(self, sql: str, args: Sequence[Any] = ()) -> None:
        with self.lock:
            self._execute(sql, args)

    def many(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        rows = [tuple(r) for r in rows]
        if not rows:
            return
        with self.lock:
            if self.dialect.name == "sqlite":
                self.conn.executemany(sql, rows)
            else:
                with self.conn.cursor() as cursor:
                    cursor.executemany(self._sql(sql), rows)

    def all(self, sql: str, args: Sequence[Any] = ()) -> list[tuple]:
        with self.lock:
            return [tuple(r) for r in self._execute(sql, args).fetchall()]

    def one(self, sql: str, args: Sequence[Any] = ()) -> tuple | None:
        with self.lock:
            row = self._execute(sql, args).fetchone()
        return tuple(row) if row is not None else None

    def row(self, sql: str, args: Sequence[Any] = ()) -> tuple:
        """The row a statement always returns (an aggregate, a PRAGMA, EXISTS ...)."""
        found = self.one(sql, args)
        if found is None:
            raise LookupError(f"no row from {sql[:60]!r}")
        return found

    def value(self, sql: str, args: Sequence[Any] = (), default: Any = None) -> Any:
        row = self.one(sql, args)
        return default if row is None or row[0] is None else row[0]

    @contextmanager
    def write(self) -> Iterator[Database]:
        """A write transaction, holding the lock throughout; inside another one, part of it."""
        with self.lock:
            if not self.conn.getautocommit():
                yield self
                return
            with self._begin():
                yield self

    def close(self) -> None:
        with self.lock:
            self.conn.close()
