"""The hook side of recall: what runs inside every Claude Code hook process.

Standard library only, and on the fast path only what the interpreter has built in (`posix`, or `nt` on Windows,
`_socket`, `time`, `sys`) and recall's lean modules (shared/wire.py, shared/protocol.py, hook/timing.py): a hook
pays for every import on every event, and `os` alone costs ~1.5 ms of a ~10 ms hook. The client passes its stdin
to the long-lived worker untouched and prints the worker's answer untouched; it never parses JSON unless
something goes wrong. Anything unusual (a data dir to create or to close, a relative RECALL_HOME, a pause, no
worker, a log to rotate) is handed to the modules that import `os`, which behave exactly as before.

    stdin ─► worker (stores the event, maybe returns context) ─► stdout        ~2-20 ms
          └► no answer in time: spool file (redacted) + start a worker, print nothing

The client never exits non-zero and prints one JSON object or nothing (PreCompact excepted: Claude Code
reads that hook's stdout as plain-text instructions for the summary, core/injection/compaction.py). RECALL_DISABLE=1
and `recall pause` (shared/pause.py) are checked before anything is sent or stored.
"""

import sys
import time

try:
    import posix as _os  # what `os` wraps, built into the interpreter: no import cost
except ImportError:  # Windows
    import nt as _os  # type: ignore[no-redef]  # the same interface, on Windows
POSIX = _os.__name__ == "posix"  # paths are plain on POSIX

from ..shared import protocol, wire
from ..version import __version__
from .timing import ANSWER_DEADLINE, ANSWER_ONLY, DEFAULT_ANSWER_DEADLINE

MAX_STDIN_BYTES = 32 * 1024 * 1024  # beyond this a payload is refused (logged)


def safe_name(value: str) -> str:
    """An event name fit to be written into JSON by hand (letters only)."""
    return "".join(c for c in value if c.isalpha())[:40] or "unknown"


def data_dir() -> str:
    """paths.resolve_home(), without `os` in the usual case: RECALL_HOME or CLAUDE_PLUGIN_DATA already an absolute,
    normal POSIX path (as Claude Code sets it), which abspath(expanduser()) would leave as it is."""
    for name in wire.HOME_ENV:
        value = wire.getenv(name)
        if value:
            if POSIX and value.startswith("/") and (value == "/" or not value.endswith("/")) \
                    and "//" not in value and "/./" not in value and "/../" not in value \
                    and not value.endswith(("/.", "/..")):
                return value
            break
    from ..shared.paths import resolve_home

    return resolve_home()


def ensure_data_dir(home: str) -> None:
    """files.ensure_private_dir(home), which a stat answers in the usual case: the directory is there, closed to
    others."""
    try:
        mode = _os.stat(home).st_mode
        if mode & 0o170000 == 0o040000 and not mode & 0o077:  # a directory, nothing for group and others
            return
    except OSError:
        pass
    from ..shared.files import ensure_private_dir

    ensure_private_dir(home)


def client_of(argv: list[str]) -> str:
    """The agent a hook command names after the event (`hooks/run Stop codex`): Claude Code's plugin names none."""
    return argv[1] if len(argv) > 1 and argv[1] in wire.CLIENTS else wire.CLAUDE_CODE


def client_field(client: str) -> str:
    """The `"client"` member of a hook's header and log line: none for Claude Code, whose lines stay as they were."""
    return "" if client == wire.CLAUDE_CODE else f',"client":"{safe_name(client)}"'


def fast_log(home: str, event: str, route: str, ms: float, client: str = wire.CLAUDE_CODE) -> None:
    """The per-hook timing line (`recall stats` reads these; `recall status` the last of another agent), formatted
    without importing json, written with one O_APPEND write (files.append_line does the rest: a missing directory,
    a log to rotate)."""
    line = (f'{{"ts":{time.time():.3f},"level":"info","component":"hook","event":"hook",'
            f'"hook":"{safe_name(event)}","route":"{safe_name(route)}","ms":{ms:.2f}{client_field(client)}}}\n').encode("ascii")
    path = home + "/" + wire.LOGS_DIR + "/" + wire.LOG_NAME
    try:
        fd = _os.open(path, _os.O_WRONLY | _os.O_APPEND, wire.PRIVATE_FILE) if POSIX else -1
    except OSError:
        fd = -1
    if fd < 0:
        from ..shared.files import append_line
        from ..shared.paths import log_file

        append_line(log_file(home), line)
        return
    try:
        _os.write(fd, line)
        full = _os.fstat(fd).st_size > wire.MAX_LOG_BYTES
    finally:
        _os.close(fd)
    if full:
        from ..shared.files import rotate

        rotate(path)


def hook_header(event: str, event_id: str, received_at: float, size: int, client: str = wire.CLAUDE_CODE) -> bytes:
    # CLAUDE_PID (the Claude Code process of this session): the worker stays while that process lives.
    claude_pid = wire.getenv("CLAUDE_PID")
    session = f',"claude_pid":{int(claude_pid)}' if claude_pid.isdigit() and len(claude_pid) < 10 else ""
    database = wire.database_fingerprint(wire.getenv(wire.DATABASE_URL_ENV))  # the shared database this session names
    return (f'{{"v":{protocol.PROTOCOL_VERSION},"op":"hook","event":"{safe_name(event)}",'
            f'"event_id":"{event_id}","received_at":{received_at:.6f},"client_version":"{__version__}",'
            f'"db":"{database}"{session}{client_field(client)},"body":{size}}}').encode("ascii")


def run(event: str, raw: bytes, home: str, client: str = wire.CLAUDE_CODE) -> tuple[bytes, str]:
    """Deliver one hook event; returns (what to print, the route it took)."""
    event_id = _os.urandom(16).hex()
    received_at = time.time()
    header = hook_header(event, event_id, received_at, len(raw), client)
    deadline = ANSWER_DEADLINE.get(event, DEFAULT_ANSWER_DEADLINE)
    try:
        answer, body = protocol.exchange(home, header, raw, deadline)
        if answer.startswith(protocol.OK_PREFIX):
            return body, "worker"
        return _worker_refused(answer, event, event_id, received_at, raw, home, client)
    except protocol.WorkerTimeout:
        busy = True  # alive but slow (e.g. a huge import): do not start another one
    except protocol.WorkerUnavailable:
        busy = False
    from .fallback import recover

    return recover(home, event, event_id, received_at, raw, header, busy, client)


def _worker_refused(answer: bytes, event, event_id, received_at, raw, home, client) -> tuple[bytes, str]:
    """The worker answered but did not store the event: rejected input is dropped (the worker
    logged why); any other error (e.g. a full disk) falls back to the spool."""
    from ..shared.payload import parse_payload
    from .fallback import recover, spool_event

    if answer.startswith(b'{"ok":false,"rejected":true'):
        return b"", "rejected"
    if answer.startswith(b'{"ok":false') and event in ANSWER_ONLY:  # nothing to keep, and nothing to answer
        return b"", "failed"
    if answer.startswith(b'{"ok":false'):
        spool_event(home, event, event_id, received_at, parse_payload(raw),
                    reason=answer[:300].decode("utf-8", "replace"), client=client)
        return b"", "spool"
    return recover(home, event, event_id, received_at, raw, None, busy=False, client=client)


def paused(home: str, raw: bytes) -> tuple[str, float | None] | None:
    """(what is paused, until when: None for "until resumed") when `recall pause` is in effect for this event's
    project (or for all); None otherwise. Without a pause file (the usual case) that is one failed stat."""
    try:
        _os.stat(home + "/" + wire.PAUSE_FILE)
    except FileNotFoundError:
        return None
    except OSError:
        pass
    from ..shared import pause

    state = pause.read_state(home)
    if state is None:
        return None
    if state["all"] is not False:
        return "every project", state["all"]
    from ..shared.payload import parse_payload
    from ..shared.projects import locate

    try:
        cwd = parse_payload(raw).get("cwd")
    except Exception:
        return None
    if not isinstance(cwd, str):
        return None
    project, root = locate(cwd)  # paused by its name, or by its path (a pause made before it had a remote)
    for name in (project, root):
        if pause.is_paused(state, name):
            return name, state["projects"][name]
    return None


def session_notice(text: str) -> bytes:
    """A SessionStart systemMessage (shown to the user once per session, never to the model)."""
    import json

    return json.dumps({"systemMessage": text}).encode("utf-8")


def paused_notice(what: str, until: float | None) -> bytes:
    when = "until `recall resume`" if until is None else \
        "until " + time.strftime("%Y-%m-%d %H:%M", time.localtime(until)) + " (or `recall resume`)"
    return session_notice(f"recall is paused for {what} {when}: nothing is captured or recalled.")


def export_home(home: str) -> None:
    """SessionStart: let the Bash tool's `recall` find this data dir (Claude Code sources the lines of
    CLAUDE_ENV_FILE before each Bash command)."""
    import os

    env_file = os.environ.get("CLAUDE_ENV_FILE")
    if not env_file or os.environ.get("RECALL_HOME"):
        return
    line = "export RECALL_HOME='" + home.replace("'", "'\\''") + "'\n"
    try:
        with open(env_file, "a+", encoding="utf-8") as handle:
            handle.seek(0)
            if line not in handle.read():
                handle.write(line)
    except OSError:
        pass


def read_stdin(stream) -> bytes:
    raw = stream.read(MAX_STDIN_BYTES + 1)
    if len(raw) > MAX_STDIN_BYTES:
        raise ValueError(f"payload larger than {MAX_STDIN_BYTES} bytes")
    return raw


def main(argv: list[str] | None = None, stdin=None, stdout=None) -> int:
    start = time.perf_counter()
    argv = sys.argv[1:] if argv is None else argv
    event = safe_name(argv[0]) if argv else "unknown"
    client = client_of(argv)
    if wire.disabled(wire.getenv(wire.DISABLE_ENV)):  # RECALL_DISABLE=1: not even a log line
        return 0
    _os.umask(0o077)
    home = data_dir()
    output, route = b"", "none"
    try:
        ensure_data_dir(home)
        raw = read_stdin(stdin or sys.stdin.buffer)
        pause_state = paused(home, raw)
        if pause_state:
            output, route = (paused_notice(*pause_state) if event == "SessionStart" else b""), "paused"
        else:
            output, route = run(event, raw, home, client)
        if event == "SessionStart" and client == wire.CLAUDE_CODE:
            export_home(home)
    except Exception as exc:  # a hook never breaks Claude Code: log, print nothing (but the reason, once), exit 0
        try:
            from ..shared.logs import JsonLog
            from ..shared.paths import log_file

            JsonLog(log_file(home), "hook").error("hook_failed", hook=event, error=f"{type(exc).__name__}: {exc}")
        except Exception:
            pass
        output, route = b"", "error"
        if event == "SessionStart" and isinstance(exc, OSError):  # e.g. a data dir made read-only
            output = session_notice(f"recall cannot write its data dir {home} ({exc.strerror or exc}): nothing is "
                                    "captured until it can (`recall status`).")
    if output.strip():
        try:
            out = stdout or sys.stdout.buffer
            out.write(output if output.endswith(b"\n") else output + b"\n")
            out.flush()
        except (OSError, ValueError):
            pass
    try:
        fast_log(home, event, route, (time.perf_counter() - start) * 1000, client)
    except OSError:
        pass
    return 0


def run_as_process() -> None:
    """main() as a hook's whole process (hooks/hook.py, `python -m memory_store.hook`): whatever happens, exit 0."""
    try:
        main()
    except BaseException as exc:  # noqa: BLE001 - last line of defence, exit 0 whatever happens
        if not isinstance(exc, (SystemExit, KeyboardInterrupt)):
            sys.stderr.write(f"recall: hook failed: {exc}\n")
    # Everything is written (the client writes its log line with one write); skipping the
    # interpreter's teardown saves ~1.5 ms per hook.
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        _os._exit(0)
