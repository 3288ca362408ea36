"""Talking to a running worker from full-Python callers (CLI, demo, benchmarks): health, wait, stop."""

from __future__ import annotations

import time

from . import transport
from .paths import DataPaths


def health(paths: DataPaths, timeout: float = 1.0) -> dict | None:
    """The worker's health answer, or None when no worker answers."""
    try:
        return transport.request(paths, {"op": "health"}, timeout=timeout)
    except transport.WorkerUnavailable:
        return None


def wait_until_embedded(paths: DataPaths, seconds: float = 30) -> dict | None:
    """Block until the worker has its model (or knows it cannot load one) and an empty embedding
    queue; returns its last health answer (None if it never answered)."""
    deadline = time.monotonic() + seconds
    last = None
    while time.monotonic() < deadline:
        last = health(paths) or last
        if last and last.get("model") != "loading" and last.get("pending") == 0:
            return last
        time.sleep(0.1)
    return last


def stop_worker(paths: DataPaths, seconds: float = 10) -> bool:
    """Ask the worker to exit and wait until it has; False if none was running."""
    try:
        transport.request(paths, {"op": "shutdown"}, timeout=2.0)
    except transport.WorkerUnavailable:
        return False
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and health(paths, timeout=0.5):
        time.sleep(0.1)
    return True
