"""The worker process's life: its data dir, its lock (one worker per data dir), its pid file, SIGTERM, and a status
for the shell (`python -m memory_store.worker --home DIR`: worker/__main__.py). What it serves is worker/server.py."""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
import traceback

from ..shared.files import acquire_lock, ensure_private_dir
from ..shared.logs import JsonLog
from ..shared.paths import DataPaths
from .server import Worker


def run(home: str | None = None) -> int:
    os.umask(0o077)
    paths = DataPaths(home)
    try:
        ensure_private_dir(paths.home)
        ensure_private_dir(paths.runtime)
        lock = acquire_lock(paths.worker_lock)
    except OSError as exc:  # e.g. a data dir made read-only
        print(f"recall worker: cannot use the data dir {paths.home}: {exc.strerror or exc}", file=sys.stderr)
        return 1
    log = JsonLog(paths.log_file, "worker")
    if lock is None:
        return 0  # another worker serves this data dir
    paths.worker_pid.write_text(str(os.getpid()), encoding="ascii")
    try:
        worker = Worker(paths)
    except Exception as exc:
        log.error("worker_crashed", error=f"{type(exc).__name__}: {exc}", trace=traceback.format_exc(limit=5))
        print(f"recall worker: {type(exc).__name__}: {exc}", file=sys.stderr)
        traceback.print_exc(limit=5, file=sys.stderr)
        lock.close()
        return 1
    signal.signal(signal.SIGTERM, lambda *_: threading.Thread(target=worker.stop, daemon=True).start())
    try:
        worker.serve()
    except Exception as exc:
        log.error("worker_crashed", error=f"{type(exc).__name__}: {exc}", trace=traceback.format_exc(limit=5))
        # Also on stderr: logs/worker.out is where hooks and `recall worker start` send the user to look.
        print(f"recall worker: {type(exc).__name__}: {exc}", file=sys.stderr)
        traceback.print_exc(limit=5, file=sys.stderr)
        return 1
    finally:
        lock.close()
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m memory_store.worker")
    parser.add_argument("--home", default=None)
    args = parser.parse_args(argv)
    return run(args.home)
