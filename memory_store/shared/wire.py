"""The names and numbers every recall process must agree on, importable without `os`.

A hook's fast path (hook/client.py) reads these on every event, and importing `os` alone costs a hook ~1.5 ms, so
this module imports nothing but what `os` wraps, built into the interpreter: the protocol's version and success
header, where the worker's socket, the log and the pause file live inside a data dir, the size limits, and the
environment variables a hook reads (`getenv`). paths.py, protocol.py, files.py and pause.py take their values from
here.
"""

try:
    import posix as _system  # no import cost: built in
except ImportError:  # Windows
    import nt as _system  # type: ignore[no-redef]  # the same interface, on Windows
_BYTES_ENVIRON = _system.__name__ == "posix"  # posix.environ holds bytes, nt.environ str

PROTOCOL_VERSION = 1
OK_PREFIX = b'{"ok":true,"body":'  # the worker's canonical success header (protocol.ok_header)
MAX_HEADER_BYTES = 1 << 20
MAX_BODY_BYTES = 64 * 1024 * 1024

APP_NAME = "recall"

# Inside a data dir (paths.py has the whole layout).
RUNTIME_DIR = "runtime"
SOCKET_NAME = "worker.sock"
ENDPOINT_NAME = "worker.endpoint"  # Windows: the worker's loopback port and token
LOGS_DIR = "logs"
LOG_NAME = "recall.log"
PAUSE_FILE = "paused.json"  # `recall pause` (pause.py); hooks look for it on every event
MAX_SOCKET_PATH = 100  # sun_path holds ~104-108 bytes depending on the OS

PRIVATE_FILE = 0o600
PRIVATE_DIR = 0o700
MAX_LOG_BYTES = 5_000_000  # an append-only log is rotated to <name>.1 beyond this

HOME_ENV = ("RECALL_HOME", "CLAUDE_PLUGIN_DATA")  # the data dir, the first one set (paths.resolve_home)
DATABASE_URL_ENV = "RECALL_DATABASE_URL"  # a shared database (database_url.py); wins over config.json
DISABLE_ENV = "RECALL_DISABLE"  # RECALL_DISABLE=1: no capture, no injection for that process tree
NOT_DISABLED = ("", "0", "false", "no", "off")

# The coding agents whose hooks call recall. A hook command names its agent after the event (`hooks/run Stop codex`);
# Claude Code's plugin names none. Each memory records the one it came from (core/router.py).
CLAUDE_CODE = "claude-code"
CODEX = "codex"
CLIENTS = (CLAUDE_CODE, CODEX)
CLIENT_NAMES = {CLAUDE_CODE: "Claude Code", CODEX: "Codex"}  # as the user reads them


def getenv(name: str) -> str:
    """An environment variable as `os.environ` would give it ('' when unset)."""
    value = _system.environ.get(name.encode() if _BYTES_ENVIRON else name, "")  # type: ignore[arg-type]  # bytes keys on POSIX
    return value.decode("utf-8", "surrogateescape") if isinstance(value, bytes) else value


def disabled(value: str | None) -> bool:
    """Does this value of RECALL_DISABLE switch recall off?"""
    return (value or "").strip().lower() not in NOT_DISABLED


def fnv1a64(data: bytes) -> str:
    """A stable 64-bit name for a path or a URL, computed without importing hashlib (~2 ms on a hook)."""
    value = 0xCBF29CE484222325
    for byte in data:
        value = ((value ^ byte) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return f"{value:016x}"


def database_fingerprint(url: str) -> str:
    """A short fingerprint of a database URL ('' for none): hooks send it, never the URL (it may hold a password), and
    a worker started for another one hands over to a new worker (paths.database_env_fingerprint)."""
    url = url.strip()
    return fnv1a64(url.encode("utf-8", "replace")) if url else ""


def socket_file(home: str, runtime_dir: str, uid: int) -> str:
    """POSIX: the worker's socket for the data dir `home` (an absolute path): in its runtime/ when that path fits the
    OS's limit, else in a private per-user directory with a short path, named after the data dir: $XDG_RUNTIME_DIR/recall
    (`runtime_dir`) if that is short, else /tmp/recall-<uid> (not $TMPDIR, which may be long). The worker makes and
    checks that directory (worker/transport.py)."""
    path = home.rstrip("/") + "/" + RUNTIME_DIR + "/" + SOCKET_NAME
    if len(path.encode("utf-8", "surrogateescape")) < MAX_SOCKET_PATH:
        return path
    if runtime_dir and len(runtime_dir) < 40 and runtime_dir.startswith("/"):
        folder = runtime_dir.rstrip("/") + "/" + APP_NAME
    else:
        folder = f"/tmp/{APP_NAME}-{uid}"
    return folder + "/" + fnv1a64(home.encode("utf-8", "surrogateescape")) + ".sock"
