"""The spool: events captured while no worker could store them. Standard library only.

Each event is one file, written under a temporary name, flushed, then renamed into place,
so a reader never sees half an event and a killed writer leaves at most a `.tmp` file.
The worker ingests spool files in name (time) order and deletes each one only after the
database transaction that stored it has committed; the event id makes a retried ingest
a no-op, so every spooled event lands exactly once.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from .files import atomic_write, ensure_private_dir

SUFFIX = ".json"
STALE_TMP_SECONDS = 3600  # a .tmp file older than this belongs to a writer that was killed


def write(spool_dir: Path, record: dict) -> Path:
    """Durably store one event record; returns its path. Raises OSError (disk full, read-only)."""
    ensure_private_dir(spool_dir)
    final = spool_dir / f"{time.time_ns():020d}-{os.getpid()}-{os.urandom(4).hex()}{SUFFIX}"
    atomic_write(final, json.dumps(record, ensure_ascii=False).encode("utf-8", "replace"), sync=True)
    return final


def pending(spool_dir: Path) -> list[Path]:
    """Spooled events, oldest first."""
    try:
        entries = sorted(p for p in spool_dir.iterdir() if p.name.endswith(SUFFIX))
    except FileNotFoundError:
        return []
    return entries


def read(path: Path) -> dict | None:
    """The record in one spool file, or None if it is unreadable (it is then kept aside)."""
    try:
        record = json.loads(path.read_bytes())
    except FileNotFoundError:
        return None
    except (OSError, ValueError):
        quarantine(path)
        return None
    if not isinstance(record, dict):
        quarantine(path)
        return None
    return record


def quarantine(path: Path) -> None:
    """Move an unreadable spool file out of the way, without deleting anyone's data."""
    try:
        os.replace(path, path.with_name(path.name + ".bad"))
    except OSError:
        pass


def remove(path: Path) -> None:
    try:
        path.unlink()
    except FileNotFoundError:
        pass


def sweep_stale_tmp(spool_dir: Path) -> None:
    """Delete temp files of writers killed mid-write (their hook never returned 0)."""
    cutoff = time.time() - STALE_TMP_SECONDS
    try:
        for path in spool_dir.glob("*.tmp"):
            try:
                if path.stat().st_mtime < cutoff:
                    path.unlink()
            except OSError:
                pass
    except OSError:
        pass
