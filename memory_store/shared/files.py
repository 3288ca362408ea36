"""Files written safely: private directories, atomic replacement, bounded append-only logs,
process-lifetime locks. Standard library only, and only `os` at import time (the hook's fast path
appends its log line without `os`, and comes here for what is unusual: a missing directory, a log to rotate).
"""

import os

from .wire import MAX_LOG_BYTES, PRIVATE_DIR, PRIVATE_FILE


def ensure_private_dir(path) -> None:
    """Create `path` (and parents) readable by the owner only. A directory that exists is only ever closed to
    others (group and other bits dropped, as a fresh `mkdir` under the usual umask leaves them), never opened:
    one its owner made read-only stays read-only."""
    try:
        os.makedirs(path, mode=PRIVATE_DIR)
    except FileExistsError:
        try:
            mode = os.stat(path).st_mode & 0o7777
            if mode & 0o077:
                os.chmod(path, mode & 0o700)
        except OSError:
            pass
        return
    try:
        os.chmod(path, PRIVATE_DIR)  # makedirs honours the umask
    except OSError:
        pass


def atomic_write(path, data: bytes | str, *, sync: bool = False) -> None:
    """Replace `path` with `data` so that a reader sees the old or the new content, never half of it:
    write a private temp file beside it, then rename it into place. `sync` also flushes it to disk
    first (for data that must survive a power cut, e.g. a spooled event)."""
    path = os.fspath(path)
    if isinstance(data, str):
        data = data.encode("utf-8")
    tmp = f"{path}.{os.getpid()}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, PRIVATE_FILE)
    try:
        os.write(fd, data)
        if sync:
            os.fsync(fd)
    except BaseException:
        os.close(fd)
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    os.close(fd)
    os.replace(tmp, path)


def append_line(path: str, data: bytes, max_bytes: int = MAX_LOG_BYTES) -> None:
    """Append `data` with a single write on an O_APPEND descriptor (concurrent writers never
    interleave), creating the file 0600 and its directory 0700 if needed, but not the directory above that
    (a data dir its user deleted is not made again by a process's last log line: FileNotFoundError); past
    `max_bytes` the file is moved to `<path>.1` (one generation kept)."""
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT
    try:
        fd = os.open(path, flags, PRIVATE_FILE)
    except FileNotFoundError:
        folder = os.path.dirname(path)
        if not os.path.isdir(os.path.dirname(folder)):
            raise
        ensure_private_dir(folder)
        fd = os.open(path, flags, PRIVATE_FILE)
    try:
        os.write(fd, data)
        full = os.fstat(fd).st_size > max_bytes
    finally:
        os.close(fd)
    if full:
        rotate(path)


def rotate(path: str) -> None:
    """An append-only log grown past its bound becomes `<path>.1` (one generation kept)."""
    os.replace(path, path + ".1")


def read_text(path, default: str = "") -> str:
    """A small file's text, or `default` when it is missing or unreadable."""
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read()
    except (OSError, ValueError):
        return default


def acquire_lock(path):
    """Take an exclusive, non-blocking lock on `path`; returns the open handle (keep it alive,
    close it to release) or None if another process holds the lock. The OS releases it when the
    holder exits, however it exits (SIGKILL included), so a crash never leaves a stale lock."""
    ensure_private_dir(os.path.dirname(os.fspath(path)))
    handle = open(path, "a+b")
    try:
        if os.name == "nt":
            import msvcrt

            handle.seek(0)
            msvcrt.locking(handle.fileno(), msvcrt.LK_NBLCK, 1)  # type: ignore[attr-defined]  # Windows only
        else:
            import fcntl

            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        handle.close()
        return None
    return handle
