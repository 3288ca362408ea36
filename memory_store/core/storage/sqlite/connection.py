"""Connections to the SQLite file: recall's settings (WAL, busy timeout, secure delete), sqlite-vec, write
transactions, a read-only data dir, and a damaged file moved aside. The schema and its migrations: schema.py."""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import apsw

from ....shared.files import atomic_write
from ....shared.paths import DB_RECOVERY_NOTE

BUSY_TIMEOUT_MS = 10_000  # many hooks write at once; waiting beats "database is locked"


def vec_extension_path() -> str | None:
    """Path of sqlite-vec's loadable `vec0`, without importing sqlite_vec (which imports numpy)."""
    spec = importlib.util.find_spec("sqlite_vec")
    if spec is None or not spec.origin:
        return None
    return os.path.join(os.path.dirname(spec.origin), "vec0")


def load_vec(conn: apsw.Connection) -> str | None:
    """Load sqlite-vec into `conn`; return None on success or the reason it is unavailable."""
    path = vec_extension_path()
    if path is None:
        return "the sqlite-vec package is not installed"
    try:
        conn.enable_load_extension(True)
        conn.load_extension(path)
        conn.enable_load_extension(False)
    except (apsw.Error, AttributeError) as exc:
        return f"sqlite-vec failed to load from {path}: {exc}"
    return None


class ReadOnlyDataDir(Exception):
    """The data dir (or the database in it) cannot be written: recall reads it, captures nothing."""


def connect(path: Path, *, readonly: bool = False) -> apsw.Connection:
    """Open the database with recall's settings (WAL, busy timeout, foreign keys). `readonly`: as an immutable
    file (no lock, no WAL file to create), for a data dir that cannot be written."""
    if readonly:
        try:  # a WAL reader needs the -wal and -shm files to exist already
            conn = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READONLY)
            conn.execute("SELECT count(*) FROM sqlite_master").fetchall()
        except apsw.Error:  # then the file alone, as it was at the last checkpoint
            conn = apsw.Connection(f"file:{path}?immutable=1", flags=apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_URI)
        return conn
    flags = apsw.SQLITE_OPEN_READWRITE | apsw.SQLITE_OPEN_CREATE
    if not path.exists():
        # Create the file 0600 before SQLite does (it would honour the umask).
        fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
        os.close(fd)
    conn = apsw.Connection(str(path), flags=flags)
    conn.set_busy_timeout(BUSY_TIMEOUT_MS)
    if not readonly:
        conn.execute("PRAGMA journal_mode=WAL")
    # NORMAL in WAL mode: a commit survives any process crash (SIGKILL included); only a
    # power loss can drop the last transactions.
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute("PRAGMA foreign_keys=ON")
    # Forgetting means every byte is gone: deleted content is overwritten with zeros, not left
    # in free pages (store.forget also checkpoints the WAL).
    conn.execute("PRAGMA secure_delete=ON")
    return conn


DAMAGE = (apsw.NotADBError, apsw.CorruptError)  # the file is not (or no longer) a sound database


def writable(path: Path) -> bool:
    """Can the database at `path` be written (the file, and its folder for the WAL and a new file)?"""
    folder = os.fspath(path.parent)
    if not os.access(folder, os.W_OK | os.X_OK):
        return False
    if path.exists() and not os.access(path, os.W_OK):
        return False
    try:  # os.access does not know a read-only file system (and root passes every mode check)
        probe = os.path.join(folder, f".recall-write-check-{os.getpid()}")
        os.close(os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
        os.unlink(probe)
    except OSError:
        return False
    return True


def move_aside(path: Path, error: str) -> Path:
    """Rename a damaged database (and its -wal/-shm) out of the way; returns the new name."""
    import json
    import time

    stamp = time.strftime("%Y%m%d-%H%M%S")
    target = path.with_name(f"{path.name}.corrupt-{stamp}")
    for suffix in ("", "-wal", "-shm"):
        try:
            os.replace(f"{path}{suffix}", f"{target}{suffix}")
        except FileNotFoundError:
            pass
    note = {"moved_to": str(target), "at": time.time(), "error": error, "told": False}
    atomic_write(path.parent / DB_RECOVERY_NOTE, json.dumps(note))
    return target


@contextmanager
def write_transaction(conn: apsw.Connection) -> Iterator[apsw.Connection]:
    """BEGIN IMMEDIATE … COMMIT. Taking the write lock up front (instead of upgrading a read
    transaction) lets the busy timeout do its job; a deferred upgrade fails with BUSY at once
    when another process committed in between."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield conn
    except BaseException:
        if not conn.getautocommit():
            conn.execute("ROLLBACK")
        raise
    else:
        conn.execute("COMMIT")
