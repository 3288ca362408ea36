"""Where recall keeps its files. Standard library only: the hook client uses it.

Layout of the data directory (0700):

    recall.db (+ -wal, -shm)   the store
    spool/                     events captured while no worker could take them
    logs/recall.log            structured JSON log lines (hooks, worker, CLI)
    runtime/                   worker lock/pid, the chosen Python, bootstrap state
    venv/                      the bootstrapped environment (first install only)
    config.json                optional user settings (see memory_store.core.config)

The worker's Unix socket lives in runtime/ when that path is short enough for the OS
(sun_path holds 104-108 bytes), else in a private per-user directory under /tmp (or
$XDG_RUNTIME_DIR), named after the data dir: a long $TMPDIR or data-dir path never sends
the hooks down the slow path.

The module-level functions work on plain strings and import nothing but `os`: a hook pays
for every import on every event (pathlib alone costs ~3 ms). `DataPaths` offers the same
locations as `pathlib.Path` objects to everything else.
"""

import os
import sys

from .wire import (
    APP_NAME,
    DATABASE_URL_ENV,
    ENDPOINT_NAME,
    HOME_ENV,
    LOG_NAME,
    LOGS_DIR,
    PAUSE_FILE,
    RUNTIME_DIR,
    SOCKET_NAME,
    database_fingerprint,
    socket_file,
)

PLUGIN_DATA_DIRNAME = "recall-recall"  # <plugin>-<marketplace>, as Claude Code names it


def platform_data_dir() -> str:
    """The per-user data directory of this OS (what platformdirs would answer)."""
    home = os.path.expanduser("~")
    if sys.platform == "win32":
        return os.path.join(os.environ.get("LOCALAPPDATA") or os.path.join(home, "AppData", "Local"), APP_NAME)
    if sys.platform == "darwin":
        return os.path.join(home, "Library", "Application Support", APP_NAME)
    return os.path.join(os.environ.get("XDG_DATA_HOME") or os.path.join(home, ".local", "share"), APP_NAME)


def installed_plugin_data_dir() -> str:
    """Where Claude Code keeps this plugin's data once installed from the `recall` marketplace."""
    config_dir = os.environ.get("CLAUDE_CONFIG_DIR") or os.path.join(os.path.expanduser("~"), ".claude")
    return os.path.join(config_dir, "plugins", "data", PLUGIN_DATA_DIRNAME)


def resolve_home(explicit: str | os.PathLike | None = None) -> str:
    """The data directory: explicit argument, $RECALL_HOME, $CLAUDE_PLUGIN_DATA, the installed
    plugin's data dir when it exists (so `recall` typed in a terminal sees what the hooks stored),
    else the platform user-data dir."""
    for candidate in (explicit, *(os.environ.get(name) for name in HOME_ENV)):
        if candidate:
            return os.path.abspath(os.path.expanduser(os.fspath(candidate)))
    installed = installed_plugin_data_dir()
    if os.path.isdir(installed):
        return installed
    return platform_data_dir()


def socket_path(home: str) -> str:
    """The worker's Unix socket (wire.socket_file: in the data dir when the path fits, else in a short private
    directory). Windows has none: hooks reach the worker over loopback TCP (protocol.py)."""
    if sys.platform == "win32":
        return os.path.join(home, RUNTIME_DIR, SOCKET_NAME)
    return socket_file(home, os.environ.get("XDG_RUNTIME_DIR", ""), os.getuid())


def private_dir_is_ours(path: str) -> bool:
    """True for a real directory (no symlink) owned by this user and closed to others: a socket in a
    shared place such as /tmp is only trusted inside such a directory."""
    import stat

    try:
        info = os.lstat(path)
    except OSError:
        return False
    owner_ok = not hasattr(os, "getuid") or info.st_uid == os.getuid()
    return stat.S_ISDIR(info.st_mode) and owner_ok and stat.S_IMODE(info.st_mode) & 0o077 == 0


def log_file(home: str) -> str:
    return os.path.join(home, LOGS_DIR, LOG_NAME)



def database_env_fingerprint() -> str:
    """A short fingerprint of RECALL_DATABASE_URL as this process sees it ('' when unset): the hook client
    sends it, and a worker started with another one hands over to a new worker (the store follows the
    session's environment). Never the URL itself: it may hold a password. (Here, not in database_url.py:
    the hook client imports nothing it does not need.)"""
    return database_fingerprint(os.environ.get(DATABASE_URL_ENV) or "")


DB_RECOVERY_NOTE = "db-recovered.json"


class DataPaths:
    """Every file recall uses inside one data directory, as pathlib.Path objects."""

    def __init__(self, home: str | os.PathLike | None = None):
        from pathlib import Path

        self.home = Path(resolve_home(home))

    @property
    def db(self):
        return self.home / "recall.db"

    @property
    def db_recovery_note(self):
        """Written when a damaged recall.db was moved aside (core.db.open_database)."""
        return self.home / DB_RECOVERY_NOTE

    @property
    def config(self):
        return self.home / "config.json"

    @property
    def pause_file(self):
        return self.home / PAUSE_FILE

    @property
    def spool(self):
        return self.home / "spool"

    @property
    def logs(self):
        return self.home / LOGS_DIR

    @property
    def log_file(self):
        return self.logs / LOG_NAME

    @property
    def runtime(self):
        return self.home / RUNTIME_DIR

    @property
    def venv(self):
        return self.home / "venv"

    @property
    def runtime_info(self):
        """JSON: which Python runs the worker, for which plugin version."""
        return self.runtime / "python.json"

    @property
    def hook_python(self):
        """One line: the absolute interpreter the launcher should use (skips version-manager shims)."""
        return self.runtime / "hook-python"

    @property
    def bootstrap_lock(self):
        return self.runtime / "bootstrap.lock"

    @property
    def bootstrap_state(self):
        """JSON: is a first-install bootstrap running, done or failed, and since when."""
        return self.runtime / "bootstrap.json"

    @property
    def bootstrap_log(self):
        return self.logs / "bootstrap.log"

    @property
    def worker_lock(self):
        return self.runtime / "worker.lock"

    @property
    def worker_pid(self):
        return self.runtime / "worker.pid"

    @property
    def worker_starting(self):
        """Marker left by whoever last asked for a worker, so parallel hooks spawn one, not ten."""
        return self.runtime / "worker.starting"

    @property
    def worker_failed(self):
        """JSON: the Python whose worker died at start, and when (hooks then stop waiting for it)."""
        return self.runtime / "worker.failed"

    @property
    def worker_endpoint(self):
        """Windows only: `port token` of the loopback TCP listener (0600)."""
        return self.runtime / ENDPOINT_NAME

    @property
    def worker_socket(self):
        from pathlib import Path

        return Path(socket_path(str(self.home)))
