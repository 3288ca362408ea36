"""The hook's slow path, taken when the worker did not answer. Standard library only.

The event is spooled (parsed, trimmed and redacted first: nothing unredacted touches disk),
a worker is requested (or, on a first install, the bootstrap that builds its Python), and
for SessionStart and UserPromptSubmit the hook waits briefly for a starting worker, since
their context is worth ~0.3 s once per idle period. Nothing here runs when a worker answers.
"""

from __future__ import annotations

import json
import os
import sys
import time

from . import __version__, spool, transport
from .bootstrap import child_env, detached
from .hook_client import ANSWER_DEADLINE, BOOTSTRAP_RETRY_SECONDS, PLUGIN_ROOT, SPAWN_GUARD_SECONDS, START_WAIT
from .logs import JsonLog
from .paths import DataPaths, ensure_private_dir, log_file
from .payload import BadPayload, parse_payload

BOOTSTRAP_STALE_SECONDS = 1800  # a 'running' bootstrap older than this died without saying so


def recover(home: str, event: str, event_id: str, received_at: float, raw: bytes, header: bytes | None,
            busy: bool) -> tuple[bytes, str]:
    log = JsonLog(log_file(home), "hook")
    paths = DataPaths(home)
    started, coming = ("busy", False) if busy else start_worker(paths, log)
    log.info("worker_unavailable", hook=event, action=started)
    deadline = time.monotonic() + START_WAIT.get(event, 0.0)
    while header is not None and coming and time.monotonic() < deadline:
        status = wait_for_worker(paths, deadline - time.monotonic())
        if status == "died":  # the worker we waited for failed at start: one more try, same deadline
            started, coming = start_worker(paths, log)
            continue
        if status == "up":
            try:
                answer, body = transport.exchange(home, header, raw, ANSWER_DEADLINE.get(event, 1.5))
                if answer.startswith(transport.OK_PREFIX):
                    return body, "workerafterstart"
            except transport.WorkerUnavailable:
                pass
        break
    if not spool_event(home, event, event_id, received_at, raw):
        return b"", "rejected"
    remember_interpreter(paths)
    if event == "SessionStart":
        notice = first_run_notice(paths, started)
        if notice:
            return json.dumps(notice).encode("utf-8"), "spool"
    return b"", "spool"


def spool_event(home: str, event: str, event_id: str, received_at: float, raw: bytes, reason: str = "") -> bool:
    """Store the event in the spool, redacted. False if the payload is unusable (logged, dropped)."""
    from .redact import clean_payload

    log = JsonLog(log_file(home), "hook")
    try:
        payload = parse_payload(raw)
    except BadPayload as exc:
        log.error("hook_failed", hook=event, error=f"bad payload: {exc}")
        return False
    spool.write(DataPaths(home).spool, {"event_id": event_id, "received_at": received_at,
                                        "payload": clean_payload(payload)})
    if reason:
        log.warning("spooled", hook=event, reason=reason)
    return True


# --- the worker's Python ---------------------------------------------------------------------


def read_runtime(paths: DataPaths) -> dict | None:
    """The worker runtime recorded for this plugin version, if its Python still exists."""
    try:
        info = json.loads(paths.runtime_info.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(info, dict) or info.get("version") != __version__:
        return None
    python = info.get("python")
    if not isinstance(python, str) or not os.path.exists(python):
        return None
    return info


def bootstrap_state(paths: DataPaths) -> dict:
    try:
        state = json.loads((paths.runtime / "bootstrap.json").read_text(encoding="utf-8"))
        return state if isinstance(state, dict) else {}
    except (OSError, ValueError):
        return {}


def worker_python(paths: DataPaths, log: JsonLog) -> str | None:
    """The Python that runs the worker: $RECALL_PYTHON, the recorded runtime, or this very
    interpreter if it has recall's dependencies (e.g. after `pip install .`; checked once, in a
    ~60 ms subprocess, then recorded). None: the bootstrap has to build one."""
    explicit = os.environ.get("RECALL_PYTHON")
    if explicit and os.path.exists(explicit):
        return explicit
    runtime = read_runtime(paths)
    if runtime is not None:
        return runtime["python"]
    if bootstrap_state(paths).get("state") == "running":
        return None  # an install is under way; do not probe on every hook meanwhile
    from .bootstrap import has_dependencies, write_runtime

    if has_dependencies(sys.executable, PLUGIN_ROOT):
        write_runtime(paths, sys.executable, PLUGIN_ROOT)
        log.info("runtime_found", python=sys.executable)
        return sys.executable
    return None


def _alive(pid: int) -> bool:
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


def _claim_spawn(paths: DataPaths) -> bool:
    """True for the one hook that should start the worker. The marker holds the pid of what was
    started: while that process lives (up to SPAWN_GUARD_SECONDS) nobody starts another; a worker
    that died at once (broken Python) does not block the next attempt."""
    marker = paths.worker_starting
    try:
        fd = os.open(marker, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        try:
            pid = int(marker.read_text(encoding="ascii") or 0)
            if pid and _alive(pid) and time.time() - marker.stat().st_mtime < SPAWN_GUARD_SECONDS:
                return False
            os.unlink(marker)
            fd = os.open(marker, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except (OSError, ValueError):
            return False
    os.write(fd, str(os.getpid()).encode())
    os.close(fd)
    return True


def _note_spawned(paths: DataPaths, pid: int) -> None:
    try:
        tmp = paths.worker_starting.with_name(f"worker.starting.{os.getpid()}")
        tmp.write_text(str(pid), encoding="ascii")
        os.replace(tmp, paths.worker_starting)
    except OSError:
        pass


def start_worker(paths: DataPaths, log: JsonLog) -> tuple[str, bool]:
    """Ask for a worker without waiting for it. Returns (what was done, whether a worker can come
    up soon): 'worker' (spawned), 'bootstrap' (first install or upgrade started), 'pending'
    (someone else is on it) or 'failed' (bootstrap failed recently; see logs/bootstrap.log)."""
    ensure_private_dir(paths.runtime)
    python = worker_python(paths, log)
    if python is None:
        state = bootstrap_state(paths)
        age = time.time() - float(state.get("at", 0))
        if state.get("state") == "failed" and age < BOOTSTRAP_RETRY_SECONDS:
            return "failed", False
        if state.get("state") == "running" and age < BOOTSTRAP_STALE_SECONDS:
            return "pending", False  # an install is under way (it holds a lock; a respawn would just exit)
    if not _claim_spawn(paths):
        return "pending", python is not None
    env = child_env(paths, PLUGIN_ROOT)
    if python is not None:
        argv = [python, "-m", "memory_store.worker", "--home", str(paths.home)]
        what = "worker"
    else:
        argv = [sys.executable, "-I", os.path.join(PLUGIN_ROOT, "memory_store", "bootstrap.py"),
                "--home", str(paths.home), "--root", PLUGIN_ROOT]
        what = "bootstrap"
    try:
        _note_spawned(paths, detached(argv, env, paths.logs / ("worker.out" if what == "worker" else "bootstrap.out")))
    except OSError as exc:
        log.error("spawn_failed", what=what, error=str(exc))
        return "failed", False
    log.info("spawned", what=what)
    return what, python is not None


def wait_for_worker(paths: DataPaths, seconds: float) -> str:
    """Poll until the worker answers ('up'), the process started for it exits ('died') or
    `seconds` pass ('timeout')."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            transport.request(paths, {"op": "health"}, timeout=max(0.05, deadline - time.monotonic()))
            return "up"
        except transport.WorkerUnavailable:
            pass
        try:
            pid = int(paths.worker_starting.read_text(encoding="ascii") or 0)
        except (OSError, ValueError):
            pid = 0
        if pid and not _alive(pid):
            return "died"
        time.sleep(0.03)
    return "timeout"


# --- things said or written once ----------------------------------------------------------------


def first_run_notice(paths: DataPaths, started: str) -> dict:
    """Tell the user, once, that recall is setting itself up (or that setup failed)."""
    state = bootstrap_state(paths)
    if started == "bootstrap" or state.get("state") == "running":
        key, text = "running", (
            "recall: first-run setup has started in the background (a private Python environment, about a "
            "minute). Sessions are captured meanwhile; recalled context starts once setup is done."
        )
    elif started == "failed" or state.get("state") == "failed":
        key, text = "failed", (
            f"recall: setup failed and will be retried later; events are kept meanwhile. "
            f"Details: {paths.bootstrap_log}"
        )
    else:
        return {}
    marker = paths.runtime / f"notified-{key}"
    try:
        ensure_private_dir(paths.runtime)
        fd = os.open(marker, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)  # one winner among parallel hooks
    except OSError:  # FileExistsError: someone told the user already
        return {}
    os.write(fd, str(time.time()).encode("ascii"))
    os.close(fd)
    return {"systemMessage": text}


def remember_interpreter(paths: DataPaths) -> None:
    """Record this interpreter for the launcher: an absolute path skips version-manager shims."""
    try:
        current = paths.hook_python.read_text(encoding="utf-8").strip()
    except OSError:
        current = ""
    if current != sys.executable and sys.executable:
        try:
            ensure_private_dir(paths.runtime)
            tmp = paths.hook_python.with_name(f"hook-python.{os.getpid()}")
            tmp.write_text(sys.executable + "\n", encoding="utf-8")
            os.replace(tmp, paths.hook_python)
        except OSError:
            pass
