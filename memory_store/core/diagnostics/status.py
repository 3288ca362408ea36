"""`recall status`: recall's own state at a glance, without opening the store (it may be what is wrong).

What runs (the worker: pid, uptime, memory, its model, its last error), what is switched off (`recall pause`,
RECALL_DISABLE), whether the data dir can be written, what waits (events in the spool, memories without a
vector), and which settings of config.json were not used.
"""

from __future__ import annotations

import json
import os
import time

from ...shared import pause, spool, worker_client
from ...shared.database_url import database_url, masked
from ...shared.logs import worker_out_tail
from ...shared.paths import DataPaths
from ..config import Config, config_problems


def writable(path: str | os.PathLike[str]) -> str | None:
    """None when files can be created in `path`, else why not."""
    probe = os.path.join(os.fspath(path), f".recall-write-check-{os.getpid()}")
    try:
        fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileNotFoundError:
        return "it does not exist"
    except OSError as exc:
        return exc.strerror or str(exc)
    os.close(fd)
    os.unlink(probe)
    return None


def collect(paths: DataPaths, config: Config, now: float | None = None) -> dict:
    now = time.time() if now is None else now
    health = worker_client.health(paths)
    if health:
        worker = {"running": True, "pid": health.get("pid"), "uptime_s": health.get("uptime"),
                  "rss_mb": health.get("rss_mb"), "model": health.get("model"), "version": health.get("version"),
                  "last_error": health.get("last_error"), "storage": health.get("storage")}
    else:
        failed = {}
        try:
            failed = json.loads(paths.worker_failed.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            pass
        worker = {"running": False, "last_error": worker_out_tail(paths) or None,
                  "failed_at": failed.get("at") if isinstance(failed, dict) else None}
    state = pause.read_state(str(paths.home))
    paused = None
    if pause.disabled_by_env():
        paused = {"everything": True, "until": None, "by": "RECALL_DISABLE"}
    elif state:
        paused = {"everything": state["all"] is not False, "until": state["all"] or None,
                  "projects": state["projects"]}
    url = database_url(config.storage.url)
    return {
        "data_dir": {"path": str(paths.home), "writable": writable(paths.home) is None,
                     "problem": writable(paths.home)},
        "store": {"backend": "postgres" if url else "sqlite", "location": masked(url) if url else str(paths.db)},
        "worker": worker,
        "paused": paused,
        "spool": {"waiting": len(spool.pending(paths.spool)),
                  "unreadable": len(list(paths.spool.glob("*.bad"))) if paths.spool.is_dir() else 0},
        "embeddings_waiting": health.get("pending") if health else None,
        "config_problems": [str(p) for p in config_problems(config)],
        "at": now,
    }
