"""The worker's connection to a shared PostgreSQL: bounded waits, a backoff, one clear error.

A hook must never wait on the network. The worker gives up on the server within CONNECT_TIMEOUT
(unreachable host) or TCP_USER_TIMEOUT_MS (a connection whose peer vanished mid-query); after a
failure it does not try again for a backoff that starts at BACKOFF_START and doubles up to
BACKOFF_MAX, raising StorageUnavailable at once meanwhile. The worker answers such a hook by
spooling the event; it lands, exactly once, when the server is back (the events ledger).

psycopg is imported on first connect: a data dir without a database URL never loads it, and one
whose Python lacks it gets StorageUnavailable with what to install instead of a crash.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ....shared.database_url import masked
from ..base import StorageUnavailable
from ..database import POSTGRES, Database, to_format_style

CONNECT_TIMEOUT = 1  # seconds (libpq's connect_timeout)
TCP_USER_TIMEOUT_MS = 1000  # unacknowledged data on an open connection: the server is gone
STATEMENT_TIMEOUT_MS = 10_000  # a statement the server is slow on: give up, spool, try later
BACKOFF_START = 2.0
BACKOFF_MAX = 30.0
SCHEMA = "recall"
def driver_missing() -> str:
    """What to do when psycopg is missing from recall's Python: install recall's `postgres` extra from recall's own
    folder (never by a package name: a PyPI name is anyone's), or let the plugin do it."""
    python = sys.executable
    root = Path(__file__).resolve().parents[4]  # the plugin folder or checkout that holds pyproject.toml
    if (root / "pyproject.toml").is_file():
        how = f"{python} -m pip install '{root}[postgres]'"
    else:  # installed as a wheel: the extra's own requirements, as recall's metadata names them
        how = f"{python} -m pip install " + " ".join(f"'{r}'" for r in postgres_requirements())
    return (f"the PostgreSQL driver is not installed in recall's Python: {how} (the Claude Code plugin installs it "
            "by itself at its next start once RECALL_DATABASE_URL or storage.url is set)")


def postgres_requirements() -> list[str]:
    """The requirements of recall's `postgres` extra, read from the installed package's metadata."""
    from importlib import metadata

    for name in metadata.packages_distributions().get("memory_store", []):
        return [r.split(";")[0].strip() for r in metadata.requires(name) or [] if 'extra == "postgres"' in r]
    return ["psycopg[binary]", "pgvector"]


def connect(url: str, *, statement_timeout_ms: int | None = STATEMENT_TIMEOUT_MS, autocommit: bool = True) -> Any:
    """A psycopg connection to `url` with recall's settings: its schema first on the search path, bounded
    waits, HNSW searches that keep scanning until they found what a filter leaves (pgvector's
    iterative scan). Raises StorageUnavailable (password masked) when the server cannot be reached."""
    try:
        import psycopg
    except ImportError as exc:
        raise StorageUnavailable(driver_missing()) from exc
    options = f"-c search_path={SCHEMA},public -c hnsw.iterative_scan=relaxed_order -c hnsw.ef_search=100"
    if statement_timeout_ms:
        options += f" -c statement_timeout={int(statement_timeout_ms)}"
    try:
        return psycopg.connect(url, autocommit=autocommit, connect_timeout=CONNECT_TIMEOUT, options=options,
                               application_name="recall", tcp_user_timeout=TCP_USER_TIMEOUT_MS,
                               keepalives=1, keepalives_idle=5, keepalives_interval=2, keepalives_count=2)
    except psycopg.Error as exc:
        raise StorageUnavailable(f"cannot reach the database at {masked(url)}: {first_line(exc)}") from None


def first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


class PgDatabase(Database):
    """`Database` over a psycopg connection that is opened on first use and again after a failure, once
    the backoff has passed. `on_connect(conn)` readies a new connection (types, checks); it may raise
    StorageUnavailable too (e.g. the schema is missing)."""

    def __init__(self, url: str, on_connect=None):
        self.url = url
        self.dialect = POSTGRES
        self.lock = threading.RLock()
        self._sql = to_format_style
        self._connection = None
        self._on_connect = on_connect
        self._down_until = 0.0
        self._backoff = BACKOFF_START
        self.last_error: str | None = None

    @property
    def conn(self) -> Any:
        with self.lock:
            connection = self._connection
            if connection is not None and not connection.closed and not connection.broken:
                return connection
            self._connection = None
            if time.monotonic() < self._down_until:
                raise StorageUnavailable(self.last_error or "the database is unavailable")
            connection = None
            try:
                connection = connect(self.url)
                if self._on_connect is not None:
                    self._on_connect(connection)
            except StorageUnavailable as exc:
                if connection is not None:
                    connection.close()
                self._failed(str(exc))
                raise
            self._connection, self._backoff, self.last_error = connection, BACKOFF_START, None
            return connection

    def _failed(self, message: str) -> None:
        self.last_error = message
        self._down_until = time.monotonic() + self._backoff
        self._backoff = min(BACKOFF_MAX, self._backoff * 2)

    def _lost(self, exc: BaseException) -> StorageUnavailable:
        """The connection failed under us: drop it, back off, and say so without the password."""
        connection, self._connection = self._connection, None
        if connection is not None:
            try:
                connection.close()
            except Exception:
                pass
        self._failed(f"lost the database at {masked(self.url)}: {first_line(exc)}")
        return StorageUnavailable(self.last_error)

    def _execute(self, sql: str, args=(), *, native: bool = False):
        conn = self.conn
        try:
            return conn.execute(sql if native else self._sql(sql), tuple(args),
                                prepare=False if _unprepared(sql) else None)
        except _lost_connection() as exc:
            raise self._lost(exc) from None

    def native(self, sql: str, args: Sequence[Any] = ()) -> list[tuple]:
        """Rows of a statement written in psycopg's own placeholders (`%b`: a parameter sent in binary form,
        which an array of vectors needs: its text form costs ~0.7 ms to write)."""
        with self.lock:
            return [tuple(r) for r in self._execute(sql, args, native=True).fetchall()]

    def many(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        rows = [tuple(r) for r in rows]
        if not rows:
            return
        with self.lock:
            conn = self.conn
            try:
                with conn.cursor() as cursor:
                    cursor.executemany(self._sql(sql), rows)
            except _lost_connection() as exc:
                raise self._lost(exc) from None

    @contextmanager
    def write(self) -> Iterator[PgDatabase]:
        """A transaction; inside another one, part of it (no savepoint: a round trip each)."""
        with self.lock:
            conn = self.conn
            if conn.info.transaction_status != 0:  # not idle: already in a transaction
                yield self
                return
            try:
                with conn.transaction():
                    yield self
            except _lost_connection() as exc:
                raise self._lost(exc) from None

    def close(self) -> None:
        with self.lock:
            if self._connection is not None:
                self._connection.close()
                self._connection = None


def _lost_connection() -> tuple:
    """psycopg's errors that mean the server is gone or not answering (psycopg is loaded by then)."""
    import psycopg

    return psycopg.OperationalError, psycopg.InterfaceError


def _unprepared(sql: str) -> bool:
    """Statements whose plan must follow their parameters (a vector search on a filter) are never
    prepared: psycopg prepares a statement after five runs and keeps its first plan."""
    return "<=>" in sql
