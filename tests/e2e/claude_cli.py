"""Helpers to install and run the real Claude Code CLI offline for end-to-end tests.

Public API:
    CLAUDE_CODE_VERSION
    ClaudeUnavailable                 (raised when node/npm are missing or the install fails)
    ensure_claude(cache_dir=None) -> Path
    claude_env(home, mock_url, extra=None) -> dict
    run_claude(claude, args, env, cwd, timeout=120) -> subprocess.CompletedProcess
    parse_debug_hooks(debug_file) -> list[dict]

Pair with ``mock_anthropic.MockAnthropic`` (a loopback Messages API).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import time
from pathlib import Path

CLAUDE_CODE_VERSION = "2.1.337"  # the newest release: its `plugin validate --strict` is the one that must pass
CLAUDE_CODE_PACKAGE = "@anthropic-ai/claude-code"
FAKE_API_KEY = "sk-ant-api03-fake-for-tests"

__all__ = [
    "CLAUDE_CODE_VERSION",
    "CLAUDE_CODE_PACKAGE",
    "FAKE_API_KEY",
    "ClaudeUnavailable",
    "ensure_claude",
    "claude_env",
    "run_claude",
    "parse_debug_hooks",
]


class ClaudeUnavailable(RuntimeError):
    """The Claude Code CLI cannot be provided (node/npm missing, install failed)."""


# --------------------------------------------------------------------------- install


def default_cache_dir() -> Path:
    env = os.environ.get("RECALL_CLAUDE_CACHE")
    if env:
        return Path(env).expanduser()
    return Path.home() / ".cache" / "recall-tests" / f"claude-code-{CLAUDE_CODE_VERSION}"


def _bin_path(cache_dir: Path) -> Path:
    name = "claude.cmd" if os.name == "nt" else "claude"
    return cache_dir / "node_modules" / ".bin" / name


def _reports_version(claude: Path) -> bool:
    if not claude.exists():
        return False
    try:
        out = subprocess.run(
            [str(claude), "--version"],
            capture_output=True,
            text=True,
            timeout=60,
            stdin=subprocess.DEVNULL,
            env=_version_env(),
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return out.returncode == 0 and CLAUDE_CODE_VERSION in out.stdout


def _version_env() -> dict:
    env = dict(os.environ)
    env.update(
        DISABLE_AUTOUPDATER="1",
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
        DISABLE_TELEMETRY="1",
    )
    return env


@contextlib.contextmanager
def _file_lock(path: Path, timeout: float = 900.0):
    """Exclusive inter-process lock on ``path`` (flock on POSIX, msvcrt on Windows)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fh = open(path, "a+")
    try:
        deadline = time.monotonic() + timeout
        if os.name == "nt":  # pragma: no cover - windows only
            import msvcrt

            while True:
                try:
                    fh.seek(0)
                    msvcrt.locking(fh.fileno(), msvcrt.LK_NBLCK, 1)
                    break
                except OSError:
                    if time.monotonic() > deadline:
                        raise ClaudeUnavailable(
                            f"timed out waiting for install lock {path}"
                        ) from None
                    time.sleep(0.5)
            try:
                yield
            finally:
                fh.seek(0)
                msvcrt.locking(fh.fileno(), msvcrt.LK_UNLCK, 1)
        else:
            import fcntl

            while True:
                try:
                    fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() > deadline:
                        raise ClaudeUnavailable(
                            f"timed out waiting for install lock {path}"
                        ) from None
                    time.sleep(0.5)
            try:
                yield
            finally:
                fcntl.flock(fh.fileno(), fcntl.LOCK_UN)
    finally:
        fh.close()


def ensure_claude(cache_dir: Path | None = None) -> Path:
    """Install the pinned Claude Code CLI once (npm) and return the ``claude`` binary path.

    Cache dir: ``cache_dir`` argument, else ``$RECALL_CLAUDE_CACHE``, else
    ``~/.cache/recall-tests/claude-code-<version>``. Safe to call from parallel
    processes (file lock). Raises ``ClaudeUnavailable`` if node/npm are missing or
    the install does not yield a working binary of the pinned version.
    """
    cache_dir = Path(cache_dir).expanduser() if cache_dir else default_cache_dir()
    claude = _bin_path(cache_dir)
    if _reports_version(claude):
        return claude

    node = shutil.which("node")
    npm = shutil.which("npm")
    if not node or not npm:
        missing = ", ".join(n for n, p in (("node", node), ("npm", npm)) if not p)
        raise ClaudeUnavailable(
            f"cannot install {CLAUDE_CODE_PACKAGE}@{CLAUDE_CODE_VERSION}: "
            f"{missing} not found on PATH"
        )

    cache_dir.mkdir(parents=True, exist_ok=True)
    with _file_lock(cache_dir.parent / f".{cache_dir.name}.lock"):
        if _reports_version(claude):  # another process installed it meanwhile
            return claude
        # Start clean: a half-finished or wrong-version install is discarded.
        shutil.rmtree(cache_dir / "node_modules", ignore_errors=True)
        pkg_json = cache_dir / "package.json"
        if not pkg_json.exists():
            pkg_json.write_text('{"name": "recall-tests-claude-code", "private": true}\n')
        cmd = [
            npm,
            "install",
            "--prefix",
            str(cache_dir),
            "--no-audit",
            "--no-fund",
            "--no-save",
            "--loglevel=error",
            f"{CLAUDE_CODE_PACKAGE}@{CLAUDE_CODE_VERSION}",
        ]
        try:
            proc = subprocess.run(
                cmd,
                cwd=str(cache_dir),
                capture_output=True,
                text=True,
                timeout=900,
                stdin=subprocess.DEVNULL,
            )
        except (OSError, subprocess.SubprocessError) as exc:
            raise ClaudeUnavailable(f"npm install failed to run: {exc}") from exc
        if proc.returncode != 0:
            raise ClaudeUnavailable(
                f"npm install {CLAUDE_CODE_PACKAGE}@{CLAUDE_CODE_VERSION} failed "
                f"(exit {proc.returncode}):\n{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}"
            )
        if not _reports_version(claude):
            raise ClaudeUnavailable(
                f"installed {CLAUDE_CODE_PACKAGE} but {claude} does not report "
                f"version {CLAUDE_CODE_VERSION}"
            )
    return claude


# --------------------------------------------------------------------------- run


def claude_env(home: Path, mock_url: str, extra: dict | None = None) -> dict:
    """Environment for an offline, non-interactive ``claude`` run against ``mock_url``.

    Starts from a minimal copy of the current environment (PATH, locale, temp dir, ...)
    rather than all of it, so a developer's real ``ANTHROPIC_*``/``CLAUDE_*`` settings
    (or being run from inside Claude Code) never leak into a test.
    """
    home = Path(home)
    keep = (
        "PATH",
        "LANG",
        "LC_ALL",
        "LC_CTYPE",
        "TMPDIR",
        "TEMP",
        "TMP",
        "TZ",
        "TERM",
        "SYSTEMROOT",
        "SystemRoot",
        "COMSPEC",
        "PATHEXT",
        "WINDIR",
        "MOCK_ANTHROPIC_DEBUG",
    )
    env = {k: os.environ[k] for k in keep if k in os.environ}
    env.setdefault("PATH", os.defpath)
    env.update(
        {
            "HOME": str(home),
            "USERPROFILE": str(home),
            "XDG_CONFIG_HOME": str(home / ".config"),
            "XDG_CACHE_HOME": str(home / ".cache"),
            "XDG_DATA_HOME": str(home / ".local" / "share"),
            "XDG_STATE_HOME": str(home / ".local" / "state"),
            "ANTHROPIC_BASE_URL": mock_url,
            "ANTHROPIC_API_KEY": FAKE_API_KEY,
            "DISABLE_AUTOUPDATER": "1",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_TELEMETRY": "1",
            "DISABLE_ERROR_REPORTING": "1",
            "DISABLE_BUG_COMMAND": "1",
            "CLAUDE_CODE_DISABLE_FEEDBACK_SURVEY": "1",
            "CLAUDE_CODE_DISABLE_TERMINAL_TITLE": "1",
            "CLAUDE_CODE_DISABLE_OFFICIAL_MARKETPLACE_AUTOINSTALL": "1",
            "CLAUDE_CODE_IDE_SKIP_AUTO_INSTALL": "1",
            "NO_COLOR": "1",
            "FORCE_COLOR": "0",
        }
    )
    if extra:
        env.update({k: str(v) for k, v in extra.items()})
    return env


def run_claude(
    claude: Path,
    args: list[str],
    env: dict,
    cwd: Path,
    timeout: float = 120,
) -> subprocess.CompletedProcess:
    """Run ``claude <args>`` (text mode, stdout/stderr captured, stdin closed).

    The CLI runs in its own process group (POSIX); on timeout the whole group (the CLI
    and its hook processes) is killed and ``subprocess.TimeoutExpired`` is raised with
    the output captured so far.
    """
    cmd = [str(claude), *[str(a) for a in args]]
    popen_kw: dict = {}
    if os.name == "posix":
        popen_kw["start_new_session"] = True
    with subprocess.Popen(
        cmd,
        env=env,
        cwd=str(cwd),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        encoding="utf-8",
        errors="replace",
        **popen_kw,
    ) as proc:
        try:
            stdout, stderr = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            _kill_tree(proc)
            stdout, stderr = proc.communicate()
            raise subprocess.TimeoutExpired(cmd, timeout, output=stdout, stderr=stderr) from None
        except BaseException:
            _kill_tree(proc)
            raise
    return subprocess.CompletedProcess(cmd, proc.returncode, stdout, stderr)


def _kill_tree(proc: subprocess.Popen) -> None:
    if os.name == "posix":
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # the group this run_claude created
        except (ProcessLookupError, PermissionError):
            pass
    try:
        proc.kill()
    except ProcessLookupError:
        pass


# --------------------------------------------------------------------------- debug log
#
# ``claude --debug-file LOG`` (2.1.330) writes one record per line:
#     2026-11-22T03:28:31.804Z [DEBUG] <message>
# A message that contains newlines is written as a JSON string literal ("...\n...").
# Hook executions appear in two shapes:
#  * normal events (SessionStart, UserPromptSubmit, PostToolUse, Stop, ...):
#     Hooks: <Event>[:<query>] [<command>] (plugin <name>@<marketplace>) <outcome> (<N>ms)
#    outcome = "finished with status N" | "timed out after Nms" | "cancelled"
#            | "moved to the background" | "not run" | "failed to start";
#    the "(plugin ...)" part is absent for settings hooks.
#  * SessionEnd (run outside the main loop), without plugin or duration, command unexpanded:
#     SessionEnd:other [<command>] completed with status N
#     SessionEnd:other [<command>] cancelled
# Related lines, attached best-effort to the nearest matching execution:
#     [ERROR] Hook command failed to spawn (<hook name>): <error>          (before the line)
#     [ERROR] "Hook <hook name> (<Event>) error: status code N\nstderr:\n..."
#     [DEBUG] "Hook <hook name> (<Event>) success:\n<stdout>"
#     Hook output does not start with {, treating as plain text          (-> output "text")
#     Hook output is several JSON documents, treating as plain text     (-> output "text")
#     Hook output starts with { but is not a JSON object, ...           (-> output "invalid_json")
#     Successfully parsed and validated hook JSON output                (-> output "json")
#     hook JSON output failed validation                                (-> output "invalid_json")
#     Hook <hook name> (<command>) provided additionalContext (N chars)

_LOG_LINE_RE = re.compile(
    r"^(?P<ts>\d{4}-\d{2}-\d{2}T[0-9:.]+Z?)\s+\[(?P<level>[A-Z]+)\]\s?(?P<msg>.*)$"
)
_OUTCOME = (
    r"(?P<outcome>finished with status (?P<status>-?\d+)|timed out after (?P<timeout_ms>\d+)ms"
    r"|cancelled|moved to the background|not run|failed to start)"
)
_HOOK_RE = re.compile(
    r"^Hooks: (?P<name>[A-Z][A-Za-z]*(?::[^\[]*?)?) \[(?P<command>.*)\]"
    r"(?: \(plugin (?P<plugin>[^()]*)\))? " + _OUTCOME + r" \((?P<duration_ms>\d+)ms\)$",
    re.S,
)
_OUTSIDE_RE = re.compile(
    r"^(?P<name>[A-Z][A-Za-z]*(?::[^\[]*?)?) \[(?P<command>.*)\] "
    r"(?P<outcome>completed with status (?P<status>-?\d+)|cancelled)$",
    re.S,
)
_SPAWN_FAIL_RE = re.compile(
    r"^Hook command failed to spawn \((?P<name>[^)]*)\): (?P<err>.*)$", re.S
)
_RESULT_RE = re.compile(
    r"^Hook (?P<name>[A-Z][A-Za-z]*(?::\S*)?) \((?P<event>[A-Za-z]+)\) "
    r"(?P<kind>error|success|cancelled):\n?(?P<text>.*)$",
    re.S,
)
_CONTEXT_RE = re.compile(
    r"^Hook (?P<name>[A-Z][A-Za-z]*(?::\S*)?) \(.*\) provided additionalContext \((?P<n>\d+) chars"
)
_OUTPUT_NOTES = (
    ("Successfully parsed and validated hook JSON output", "json"),
    ("Hook output does not start with {", "text"),
    ("Hook output is several JSON documents", "text"),
    ("Hook output starts with { but is not a JSON object", "invalid_json"),
    ("hook JSON output failed validation", "invalid_json"),
)
_OUTCOME_KEYS = {
    "finished": "finished",
    "completed": "finished",
    "timed": "timed_out",
    "cancelled": "cancelled",
    "moved": "background",
    "not": "not_run",
    "failed": "failed_to_start",
}


def _log_records(text: str):
    """Yield (line_no, timestamp, level, message) with JSON-string messages decoded and
    continuation lines (not starting with a timestamp) folded into the previous record."""
    current = None
    for no, line in enumerate(text.splitlines(), 1):
        m = _LOG_LINE_RE.match(line)
        if m:
            if current is not None:
                yield current
            current = [no, m.group("ts"), m.group("level"), m.group("msg")]
        elif current is not None:
            current[3] += "\n" + line
    if current is not None:
        yield current


def _decode(msg: str) -> str:
    msg = msg.rstrip("\r")
    if len(msg) >= 2 and msg[0] == '"' and msg[-1] == '"':
        try:
            decoded = json.loads(msg)
        except ValueError:
            return msg
        if isinstance(decoded, str):
            return decoded
    return msg


def parse_debug_hooks(debug_file: Path) -> list[dict]:
    """Hook executions found in a ``--debug-file`` log, in log order.

    Each dict has:
      event        "SessionStart", "PostToolUse", ... (hook name before ":")
      hook_name    as logged, e.g. "SessionStart:startup", "PostToolUse:Bash", "Stop"
      query        the matcher query after ":" ("startup", "Bash", "other") or None
      command      the command as logged (exec form: command and args joined by spaces;
                   SessionEnd lines show it before ${CLAUDE_PLUGIN_ROOT} expansion)
      plugin       "name@marketplace" ("x@inline" for --plugin-dir) or None
      outcome      "finished" | "timed_out" | "cancelled" | "background" | "not_run"
                   | "failed_to_start"
      status       exit status (int) or None when the hook did not finish
      duration_ms  int or None (SessionEnd lines carry no duration)
      errored      True unless it finished with status 0 (or was backgrounded / not run)
      blocking     True for exit status 2
      output       "json" | "text" | "invalid_json" | None  (how Claude Code read stdout)
      stdout       stdout text when logged as "success" (best effort) else None
      errors       list of related error messages (spawn failure, "error: status code ...")
      additional_context_chars  int or None
      timestamp, line  where the record is in the log
    Missing file -> []. Unrecognised lines are ignored.
    """
    try:
        text = Path(debug_file).read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return []
    hooks: list[dict] = []
    pending_errors: dict[str, list[str]] = {}

    def last(name: str | None = None, pred=None):
        for h in reversed(hooks):
            if (name is None or h["hook_name"] == name or h["event"] == name) and (
                pred is None or pred(h)
            ):
                return h
        return None

    for line_no, ts, _level, raw in _log_records(text):
        msg = _decode(raw)
        m = _HOOK_RE.match(msg) if msg.startswith("Hooks: ") else _OUTSIDE_RE.match(msg)
        if m:
            name = m.group("name")
            outcome = _OUTCOME_KEYS.get(m.group("outcome").split(" ", 1)[0], m.group("outcome"))
            status = int(m.group("status")) if m.group("status") is not None else None
            gd = m.groupdict()
            event, _, query = name.partition(":")
            hooks.append(
                {
                    "event": event,
                    "hook_name": name,
                    "query": query or None,
                    "command": m.group("command"),
                    "plugin": gd.get("plugin"),
                    "outcome": outcome,
                    "status": status,
                    "duration_ms": int(gd["duration_ms"]) if gd.get("duration_ms") else None,
                    "errored": not (
                        (outcome == "finished" and status == 0)
                        or outcome in ("background", "not_run")
                    ),
                    "blocking": status == 2,
                    "output": None,
                    "stdout": None,
                    "errors": pending_errors.pop(name, []),
                    "additional_context_chars": None,
                    "timestamp": ts,
                    "line": line_no,
                }
            )
            continue
        m = _SPAWN_FAIL_RE.match(msg)
        if m:
            pending_errors.setdefault(m.group("name"), []).append(msg)
            continue
        m = _RESULT_RE.match(msg)
        if m:
            name, kind = m.group("name"), m.group("kind")
            if kind == "success":
                h = last(name, lambda h: h["stdout"] is None and not h["errored"])
                if h is not None:
                    h["stdout"] = m.group("text")
            else:
                h = last(name, lambda h: h["errored"])
                if h is not None:
                    h["errors"].append(msg)
            continue
        m = _CONTEXT_RE.match(msg)
        if m:
            h = last(m.group("name"), lambda h: h["additional_context_chars"] is None)
            if h is not None:
                h["additional_context_chars"] = int(m.group("n"))
            continue
        for prefix, kind in _OUTPUT_NOTES:
            if msg.startswith(prefix):
                h = last(None, lambda h: h["output"] is None and h["outcome"] == "finished")
                if h is not None:
                    h["output"] = kind
                break
    return hooks
