"""Starting the worker (or, on a first install, the bootstrap that builds its Python) once,
however many hooks ask at the same time. Standard library only.

`runtime/worker.starting` holds "<pid> <what> <python>" of the last process started. While that
process lives (up to SPAWN_GUARD_SECONDS) nobody starts another. If it is gone without a worker
having come up (a worker removes the marker once it listens), it died at start: that Python is
recorded in `runtime/worker.failed` and not tried again for WORKER_RETRY_SECONDS, so a broken
environment costs each hook nothing instead of a doomed spawn and a wait.
"""

from __future__ import annotations

import json
import os
import sys
import time

from ..shared import worker_client
from ..shared.files import atomic_write, ensure_private_dir
from ..shared.paths import DataPaths
from . import runtime
from .timing import (
    BOOTSTRAP_RETRY_SECONDS,
    BOOTSTRAP_STALE_SECONDS,
    HEALTH_CHECK_SECONDS,
    POLL_SECONDS,
    SPAWN_GUARD_SECONDS,
    WORKER_RETRY_SECONDS,
)


def worker_python(paths: DataPaths, log) -> str | None:
    """The Python that runs the worker: $RECALL_PYTHON, the recorded runtime (with the PostgreSQL driver
    when a database URL is set), or this very interpreter if it has recall's dependencies (e.g. after
    `pip install .`; checked once, in a ~60 ms subprocess, then recorded). None: the bootstrap has to
    build one."""
    explicit = os.environ.get("RECALL_PYTHON")
    if explicit and os.path.exists(explicit):
        return explicit  # the user's choice: a missing driver is reported by the worker, not installed here
    extras = runtime.extras_needed(paths)
    recorded = runtime.read_runtime(paths, extras=extras)
    if recorded is not None:
        return recorded["python"]
    if runtime.bootstrap_state(paths).get("state") == "running":
        return None  # an install is under way; do not probe on every hook meanwhile
    if runtime.has_dependencies(sys.executable, extras=extras):
        runtime.write_runtime(paths, sys.executable, runtime.PLUGIN_ROOT, extras)
        log.info("runtime_found", python=sys.executable)
        return sys.executable
    return None  # the bootstrap builds (or completes) one; a database URL set later adds its driver


def alive(pid: int) -> bool:
    if os.name == "nt":
        return True  # no cheap check: rely on the time guard alone
    try:
        if os.waitpid(pid, os.WNOHANG)[0] == pid:  # our own child, exited (reaped now, not a zombie)
            return False
    except ChildProcessError:
        pass  # not our child: ask the kernel
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def read_marker(paths: DataPaths) -> tuple[int, str, str]:
    """(pid, what, python) of the last process started; pid 0 when there is none."""
    try:
        pid, what, python = (paths.worker_starting.read_text(encoding="utf-8").split(" ", 2) + ["", ""])[:3]
        return int(pid or 0), what, python.strip()
    except (OSError, ValueError):
        return 0, "", ""


def recently_failed(paths: DataPaths, python: str) -> bool:
    record = runtime.read_json(paths.worker_failed)
    return record.get("python") == python and time.time() - float(record.get("at", 0)) < WORKER_RETRY_SECONDS


def worker_died(paths: DataPaths, log) -> None:
    """The worker started last exited without ever listening: note its Python as failing (it is not
    tried again for WORKER_RETRY_SECONDS) and clear the way for the next attempt."""
    _, _, python = read_marker(paths)
    log.error("worker_died_at_start", python=python,
              hint=f"see {paths.logs / 'worker.out'}; not retried for {WORKER_RETRY_SECONDS} s")
    try:
        atomic_write(paths.worker_failed, json.dumps({"python": python, "at": time.time()}))
    except OSError:
        pass
    _clear_marker(paths)


def claim_spawn(paths: DataPaths, log) -> bool:
    """True for the one hook that should start a process now."""
    marker = paths.worker_starting
    try:
        fd = os.open(marker, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        try:
            pid, what, python = read_marker(paths)
            age = time.time() - marker.stat().st_mtime
            if pid and alive(pid) and age < SPAWN_GUARD_SECONDS:
                return False
            if pid and what == "worker" and python and not alive(pid):
                worker_died(paths, log)
            else:
                os.unlink(marker)
            fd = os.open(marker, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except (OSError, ValueError):
            return False
    os.write(fd, f"{os.getpid()} claim -".encode())
    os.close(fd)
    return True


def start_worker(paths: DataPaths, log) -> tuple[str, bool]:
    """Ask for a worker without waiting for it. Returns (what was done, whether a worker can come up soon):
    'worker' (spawned), 'running' (one answers already: nothing started), 'bootstrap' (first install or upgrade
    started), 'pending' (someone else is on it), 'failed' (the bootstrap failed recently; see logs/bootstrap.log)
    or 'worker-failed' (this Python's worker died at start recently; see logs/worker.out)."""
    ensure_private_dir(paths.runtime)
    python = worker_python(paths, log)
    if python is None:
        state = runtime.bootstrap_state(paths)
        age = time.time() - float(state.get("at", 0))
        if state.get("state") == "failed" and age < BOOTSTRAP_RETRY_SECONDS:
            return "failed", False
        if state.get("state") == "running" and age < BOOTSTRAP_STALE_SECONDS:
            return "pending", False  # an install is under way (it holds a lock; a respawn would just exit)
    if not claim_spawn(paths, log):
        return "pending", python is not None
    if python is not None and worker_client.health(paths, HEALTH_CHECK_SECONDS) is not None:
        # A worker came up after this hook last tried it, and cleared its start marker, which let this claim
        # through: a second one would wait out the first and take over once it stops (a `recall worker stop`).
        _clear_marker(paths)
        return "running", True
    if python is not None and recently_failed(paths, python):
        _clear_marker(paths)
        return "worker-failed", False
    env = runtime.child_env(paths.home)
    if python is not None:
        argv = [python, "-m", "memory_store.worker", "--home", str(paths.home)]
        what = "worker"
    else:
        argv = [sys.executable, "-I", os.path.join(runtime.PLUGIN_ROOT, "memory_store", "hook", "bootstrap.py"),
                "--home", str(paths.home), "--root", runtime.PLUGIN_ROOT]
        what = "bootstrap"
    try:
        pid = runtime.detached(argv, env, paths.logs / ("worker.out" if what == "worker" else "bootstrap.out"))
    except OSError as exc:
        log.error("spawn_failed", what=what, error=str(exc))
        _clear_marker(paths)
        return "failed", False
    try:
        atomic_write(paths.worker_starting, f"{pid} {what} {python or sys.executable}")
    except OSError:
        pass
    log.info("spawned", what=what)
    return what, python is not None


def _clear_marker(paths: DataPaths) -> None:
    try:
        paths.worker_starting.unlink()
    except OSError:
        pass


def wait_for_worker(paths: DataPaths, seconds: float) -> str:
    """Poll until the worker answers ('up'), the process started for it exits ('died') or
    `seconds` pass ('timeout')."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if worker_client.health(paths, max(0.05, deadline - time.monotonic())) is not None:
            return "up"
        pid, what, _ = read_marker(paths)
        if pid and what == "worker" and not alive(pid):
            # It may have exited because another worker holds the lock and serves already.
            return "up" if worker_client.health(paths, 0.2) is not None else "died"
        time.sleep(POLL_SECONDS)
    return "timeout"
