"""Which CPUs a thread runs on (Linux; elsewhere nothing is pinned and every function says so).

The worker keeps one CPU for the prompt's query embedding, and its request threads off it (worker/embedding.py).
"""

from __future__ import annotations

import os


def allowed() -> set[int]:
    """The CPUs this process may run on (empty where that cannot be known or set)."""
    if not hasattr(os, "sched_setaffinity"):
        return set()
    try:
        return set(os.sched_getaffinity(0))
    except OSError:
        return set()


def pin_thread(cpus: set[int]) -> None:
    """Run the calling thread on these CPUs only. Where the system refuses (a CPU taken from the process since, a
    platform without affinities), the thread stays as it was: pinning is for speed, never a reason to fail."""
    if not cpus or not hasattr(os, "sched_setaffinity"):
        return
    try:
        os.sched_setaffinity(0, cpus)  # 0: the calling thread (Linux sets a thread's mask, not the process's)
    except OSError:
        pass
