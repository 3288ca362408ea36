"""The hook side of recall: what runs inside every Claude Code hook process.

Standard library only, and little of it: a hook pays for each import on every event.
The client reads the payload, hands it to the long-lived worker over a local socket and
prints what the worker answers. When no worker answers in time it spools the event to
disk (redacted) and asks for a worker to start; nothing is lost and the user never
waits long. The client never exits non-zero and prints one JSON object or nothing.

Flow of one hook:
    stdin -> envelope {event_id, received_at, payload}
          -> worker  (stores it, maybe returns context)       ~2-20 ms
          -> else spool file + start worker/bootstrap          ~1 ms, no context
"""

from __future__ import annotations

import json
import os
import sys
import time

from . import __version__, spool, transport
from .logs import JsonLog
from .paths import DataPaths, ensure_private_dir

# Transport limits of the hook process (the worker's tunables live in config.py).
MAX_STDIN_BYTES = 32 * 1024 * 1024  # beyond this the payload is logged as rejected
MAX_STRING_CHARS = 64_000  # longer strings are cut before they leave the hook (capture trims far more)
MAX_LIST_ITEMS = 1_000
MAX_DEPTH = 40
# How long a hook waits for the worker's answer before falling back to the spool (seconds).
ANSWER_DEADLINE = {"SessionStart": 3.0, "UserPromptSubmit": 3.0, "SessionEnd": 0.5}
DEFAULT_ANSWER_DEADLINE = 1.5
# Events whose context is worth waiting for a starting worker (seconds; lexical search is up
# within ~0.3 s of a spawn, the model loads later in the background).
START_WAIT = {"SessionStart": 2.5, "UserPromptSubmit": 1.5}
SPAWN_GUARD_SECONDS = 20  # one spawn per this interval, however many hooks run in parallel
BOOTSTRAP_RETRY_SECONDS = 3600  # after a failed bootstrap, try again this much later

PLUGIN_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _now_ms(start: float) -> float:
    return round((time.perf_counter() - start) * 1000, 2)


def new_event_id() -> str:
    return os.urandom(16).hex()


def read_payload(stream) -> dict:
    """Parse hook stdin. Invalid UTF-8 is repaired, anything that is not one JSON object is refused."""
    raw = stream.read(MAX_STDIN_BYTES + 1)
    if len(raw) > MAX_STDIN_BYTES:
        raise ValueError(f"payload larger than {MAX_STDIN_BYTES} bytes")
    if not raw.strip():
        raise ValueError("empty payload")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        text = raw.decode("utf-8", "replace")
    payload = json.loads(text)
    if not isinstance(payload, dict):
        raise ValueError(f"payload is a JSON {type(payload).__name__}, not an object")
    return payload


def pretrim(value, depth: int = 0):
    """Bound the size of a payload before it is sent or spooled: long strings cut, long lists
    shortened, deep nesting flattened. Capture keeps far less than these limits."""
    if isinstance(value, str):
        return value if len(value) <= MAX_STRING_CHARS else value[:MAX_STRING_CHARS] + "…[cut]"
    if depth >= MAX_DEPTH:
        return "…[nested too deep]"
    if isinstance(value, dict):
        return {str(k)[:200]: pretrim(v, depth + 1) for k, v in list(value.items())[:MAX_LIST_ITEMS]}
    if isinstance(value, list):
        return [pretrim(v, depth + 1) for v in value[:MAX_LIST_ITEMS]]
    return value


# --- runtime: which Python runs the worker ------------------------------------------------------


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


def bootstrap_state(paths: DataPaths) -> dict:
    try:
        state = json.loads((paths.runtime / "bootstrap.json").read_text(encoding="utf-8"))
        return state if isinstance(state, dict) else {}
    except (OSError, ValueError):
        return {}


def _claim_spawn(paths: DataPaths) -> bool:
    """True for the one hook (per SPAWN_GUARD_SECONDS) that should start the worker."""
    marker = paths.worker_starting
    try:
        fd = os.open(marker, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        try:
            if time.time() - marker.stat().st_mtime < SPAWN_GUARD_SECONDS:
                return False
            os.unlink(marker)
            fd = os.open(marker, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except OSError:
            return False
    os.write(fd, str(os.getpid()).encode())
    os.close(fd)
    return True


def detached(argv: list[str], env: dict, log_path) -> None:
    """Start a process that outlives this hook (and Claude Code): own session, no inherited pipes."""
    import subprocess

    ensure_private_dir(log_path.parent)
    with open(log_path, "ab") as log_file:
        kwargs: dict = {"stdin": subprocess.DEVNULL, "stdout": log_file, "stderr": log_file, "close_fds": True,
                        "env": env, "cwd": str(log_path.parent)}
        if os.name == "nt":
            kwargs["creationflags"] = 0x00000008 | 0x00000200 | 0x08000000  # DETACHED, NEW_GROUP, NO_WINDOW
        else:
            kwargs["start_new_session"] = True
        subprocess.Popen(argv, **kwargs)


def child_env(paths: DataPaths) -> dict:
    env = dict(os.environ)
    env["RECALL_HOME"] = str(paths.home)
    env["PYTHONPATH"] = PLUGIN_ROOT  # the worker runs this plugin's code, with the runtime's dependencies
    env.pop("PYTHONHOME", None)
    return env


def start_worker(paths: DataPaths, log: JsonLog) -> tuple[str, bool]:
    """Ask for a worker without waiting for it. Returns (what was done, whether a worker can
    come up soon): 'worker' (spawned), 'bootstrap' (first install or upgrade started), 'pending'
    (someone else is on it) or 'failed' (bootstrap failed recently; see logs/bootstrap.log)."""
    ensure_private_dir(paths.runtime)
    python = worker_python(paths, log)
    if python is None:
        state = bootstrap_state(paths)
        if state.get("state") == "failed" and time.time() - float(state.get("at", 0)) < BOOTSTRAP_RETRY_SECONDS:
            return "failed", False
    if not _claim_spawn(paths):
        return "pending", python is not None
    env = child_env(paths)
    if python is not None:
        argv = [python, "-m", "memory_store.worker", "--home", str(paths.home)]
        what = "worker"
    else:
        argv = [sys.executable, "-I", os.path.join(PLUGIN_ROOT, "memory_store", "bootstrap.py"),
                "--home", str(paths.home), "--root", PLUGIN_ROOT]
        what = "bootstrap"
    try:
        detached(argv, env, paths.logs / ("worker.out" if what == "worker" else "bootstrap.out"))
    except OSError as exc:
        log.error("spawn_failed", what=what, error=str(exc))
        return "failed", False
    log.info("spawned", what=what)
    return what, python is not None


def wait_for_worker(paths: DataPaths, seconds: float) -> bool:
    """Poll until the worker answers a health check or `seconds` pass."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            transport.request(paths, {"op": "health"}, timeout=max(0.05, deadline - time.monotonic()))
            return True
        except transport.WorkerUnavailable:
            time.sleep(0.03)
    return False


# --- the hook ----------------------------------------------------------------------------------


def deliver(paths: DataPaths, envelope: dict, event: str, log: JsonLog) -> tuple[dict, str]:
    """Get the event stored; returns (hook output, route taken)."""
    message = {"op": "hook", "envelope": envelope, "client_version": __version__}
    deadline = ANSWER_DEADLINE.get(event, DEFAULT_ANSWER_DEADLINE)
    started = None
    try:
        return _answer(transport.request(paths, message, deadline), log), "worker"
    except transport.WorkerUnavailable as exc:
        log.info("worker_unavailable", hook=event, reason=str(exc))
        if isinstance(exc.__cause__, TimeoutError):  # the worker is alive but busy: do not spawn another
            started = "busy"
    if started is None:
        started, coming = start_worker(paths, log)
        wait = START_WAIT.get(event, 0.0)
        if coming and wait and wait_for_worker(paths, wait):
            try:
                return _answer(transport.request(paths, message, deadline), log), "worker-after-start"
            except transport.WorkerUnavailable:
                pass
    from .redact import clean_tree  # only the spool path pays for compiling the secret patterns

    spool.write(paths.spool, clean_tree(envelope))
    output: dict = {}
    if event == "SessionStart":
        output = first_run_notice(paths, started)
    return output, "spool"


def _answer(answer: dict, log: JsonLog) -> dict:
    if not answer.get("ok"):
        if answer.get("rejected"):  # bad input: logged by the worker, dropped, never spooled
            log.warning("event_rejected", reason=answer.get("error"))
            return {}
        raise transport.WorkerUnavailable(f"worker error: {answer.get('error')}")
    output = answer.get("output")
    return output if isinstance(output, dict) else {}


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
    if marker.exists():
        return {}
    try:
        ensure_private_dir(paths.runtime)
        marker.write_text(str(time.time()), encoding="ascii")
    except OSError:
        return {}
    return {"systemMessage": text}


def export_home(paths: DataPaths) -> None:
    """SessionStart: let the Bash tool's `recall` find this data dir (CLAUDE_ENV_FILE lines are
    sourced before each Bash command)."""
    env_file = os.environ.get("CLAUDE_ENV_FILE")
    if not env_file or os.environ.get("RECALL_HOME"):
        return
    line = "export RECALL_HOME='" + str(paths.home).replace("'", "'\\''") + "'\n"
    try:
        with open(env_file, "a+", encoding="utf-8") as handle:
            handle.seek(0)
            if line not in handle.read():
                handle.write(line)
    except OSError:
        pass


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


def main(argv: list[str] | None = None, stdin=None, stdout=None) -> int:
    start = time.perf_counter()
    argv = sys.argv[1:] if argv is None else argv
    stdin = stdin or sys.stdin.buffer
    stdout = stdout or sys.stdout
    os.umask(0o077)
    event = argv[0] if argv else "unknown"
    paths = DataPaths()
    log = JsonLog(paths.log_file, "hook")
    output: dict = {}
    route = "none"
    try:
        ensure_private_dir(paths.home)
        payload = read_payload(stdin)
        named = payload.get("hook_event_name")
        if isinstance(named, str) and named != event:
            if argv:
                log.warning("event_mismatch", argv=event, payload=named[:64])
            event = named[:64]
        envelope = {"event_id": new_event_id(), "received_at": time.time(), "payload": pretrim(payload)}
        output, route = deliver(paths, envelope, event, log)
        if event == "SessionStart":
            export_home(paths)
        remember_interpreter(paths)
    except Exception as exc:  # a hook never breaks Claude Code: log, answer nothing, exit 0
        log.error("hook_failed", hook=event, error=f"{type(exc).__name__}: {exc}")
        output = {}
    if output:
        try:
            stdout.write(json.dumps(output, ensure_ascii=False) + "\n")
            stdout.flush()
        except (OSError, ValueError):
            pass
    log.info("hook", hook=event, route=route, ms=_now_ms(start))
    return 0
