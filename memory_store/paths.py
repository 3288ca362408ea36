"""Where recall keeps its files. Standard library only: the hook client uses it.

Layout of the data directory (0700):

    recall.db (+ -wal, -shm)   the store
    spool/                     events captured while no worker could take them
    logs/recall.log            structured JSON log lines (hooks, worker, CLI)
    runtime/                   worker socket/lock/pid, the chosen Python, bootstrap state
    venv/                      the bootstrapped environment (first install only)
    config.json                optional user settings (see memory_store.config)

The module-level functions work on plain strings and import nothing but `os`: a hook pays
for every import on every event (pathlib alone costs ~3 ms). `DataPaths` offers the same
locations as `pathlib.Path` objects to everything else.
"""

from __future__ import annotations

import os
import sys

APP_NAME = "recall"
PLUGIN_DATA_DIRNAME = "recall-recall"  # <plugin>-<marketplace>, as Claude Code names it
MAX_SOCKET_PATH = 100  # sun_path holds ~104-108 bytes depending on the OS
MAX_LOG_BYTES = 5_000_000  # logs/recall.log is rotated to recall.log.1 beyond this


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
    for candidate in (explicit, os.environ.get("RECALL_HOME"), os.environ.get("CLAUDE_PLUGIN_DATA")):
        if candidate:
            return os.path.abspath(os.path.expanduser(os.fspath(candidate)))
    installed = installed_plugin_data_dir()
    if os.path.isdir(installed):
        return installed
    return platform_data_dir()


def socket_path(home: str) -> str:
    """The worker's Unix socket. Long data-dir paths fall back to a short per-user directory in
    the temp dir, keyed by a hash of the data dir."""
    path = os.path.join(home, "runtime", "worker.sock")
    if len(os.fsencode(path)) < MAX_SOCKET_PATH:
        return path
    import hashlib
    import tempfile

    digest = hashlib.sha256(os.fsencode(home)).hexdigest()[:16]
    uid = os.getuid() if hasattr(os, "getuid") else 0
    return os.path.join(tempfile.gettempdir(), f"recall-{uid}", f"{digest}.sock")


def log_file(home: str) -> str:
    return os.path.join(home, "logs", "recall.log")


def ensure_private_dir(path) -> None:
    """Create `path` (and parents) readable by the owner only."""
    os.makedirs(path, mode=0o700, exist_ok=True)
    try:
        os.chmod(path, 0o700)
    except OSError:
        pass


class DataPaths:
    """Every file recall uses inside one data directory, as pathlib.Path objects."""

    def __init__(self, home: str | os.PathLike | None = None):
        from pathlib import Path

        self.home = Path(resolve_home(home))

    @property
    def db(self):
        return self.home / "recall.db"

    @property
    def config(self):
        return self.home / "config.json"

    @property
    def spool(self):
        return self.home / "spool"

    @property
    def logs(self):
        return self.home / "logs"

    @property
    def log_file(self):
        return self.logs / "recall.log"

    @property
    def runtime(self):
        return self.home / "runtime"

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
    def worker_endpoint(self):
        """Windows only: `port token` of the loopback TCP listener (0600)."""
        return self.runtime / "worker.endpoint"

    @property
    def worker_socket(self):
        from pathlib import Path

        return Path(socket_path(str(self.home)))
