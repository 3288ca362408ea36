"""Process-lifetime exclusive locks. Standard library only.

An OS file lock (flock / msvcrt.locking) is released by the kernel when its holder exits,
however it exits (SIGKILL included), so a crashed worker or bootstrap never leaves a
stale lock behind.
"""

from __future__ import annotations

import os
from pathlib import Path

from .paths import ensure_private_dir


def acquire_lock(path: Path):
    """Take an exclusive, non-blocking lock on `path`; returns the open handle (keep it alive,
    close it to release) or None if another process holds the lock."""
    ensure_private_dir(path.parent)
    handle = open(path, "a+b")
    try:
        if os.name == "nt":
            import msvcrt

            handle.seek(0)
            msvcrt.locking(handle.fileno(), msvcrt.LK_NBLCK, 1)
        else:
            import fcntl

            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        handle.close()
        return None
    return handle
