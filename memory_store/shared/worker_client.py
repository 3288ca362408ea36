"""Calls to a running worker from full-Python callers (the API, the CLI, the demo, benchmarks) and from the hook's
slow path (is a worker up?): health, search, drain the embedding queue, wait, stop. Every call returns None (or False)
when no worker answers: callers then do the work in-process."""

from __future__ import annotations

import time

from . import protocol
from .paths import DataPaths


def health(paths: DataPaths, timeout: float = 1.0) -> dict | None:
    """The worker's health answer, or None when no worker answers."""
    try:
        return protocol.request(paths, {"op": "health"}, timeout=timeout)
    except protocol.WorkerUnavailable:
        return None


def search(paths: DataPaths, query: str, limit: int, project: str | None, place: str | None = None,
           shown: str | None = None, timeout: float = 5.0, touch: bool = False) -> list[dict] | None:
    """Hits (as JSON objects) from the worker, which holds the model; None if no worker answers.
    `place`: the project's local root (the worker notes where the project lives); `shown`: as a person is
    shown them, "relevant" or "all"; `touch`: the hits count as used (api.Recall.search)."""
    try:
        answer = protocol.request(paths, {"op": "search", "query": query, "limit": limit, "project": project,
                                          "place": place, "shown": shown, "touch": touch}, timeout=timeout)
    except protocol.WorkerUnavailable:
        return None
    return answer.get("hits") if answer.get("ok") else None


def drain(paths: DataPaths) -> bool:
    """Ask a worker whose model is ready to embed its queue now; False if there is no such worker."""
    try:
        answer = protocol.request(paths, {"op": "drain"}, timeout=2.0)
    except protocol.WorkerUnavailable:
        return False
    return bool(answer.get("ok")) and answer.get("model") == "ready"


def wait_until_embedded(paths: DataPaths, seconds: float = 30, poll: float = 0.1,
                        prepared: bool = False) -> dict | None:
    """Block until the worker has its model (or knows it cannot load one) and an empty embedding
    queue (and, if `prepared`, its first background round done: the steady state a bench measures); returns its
    last health answer (None if it never answered)."""
    deadline = time.monotonic() + seconds
    last = None
    while time.monotonic() < deadline:
        last = health(paths) or last
        if last and last.get("model") != "loading" and last.get("pending") == 0 and (
                last.get("prepared", True) or not prepared):
            return last
        time.sleep(poll)
    return last


def stop_worker(paths: DataPaths, seconds: float = 10) -> bool:
    """Ask the worker to exit and wait until it has (it stops answering, then removes its pid file last, once its
    store is closed and its last log line written); False if none was running."""
    try:
        protocol.request(paths, {"op": "shutdown"}, timeout=2.0)
    except protocol.WorkerUnavailable:
        return False
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and (health(paths, timeout=0.5) or paths.worker_pid.exists()):
        time.sleep(0.05)
    return True
