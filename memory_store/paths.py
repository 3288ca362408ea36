"""Where recall keeps its files. Standard library only: the hook client uses it.

Layout of the data directory (0700):

    recall.db (+ -wal, -shm)   the store
    spool/                     events captured while no worker could take them
    logs/recall.log            structured JSON log lines (hooks, worker, CLI)
    runtime/                   worker socket/lock/pid, the chosen Python, bootstrap state
    venv/                      the bootstrapped environment (first install only)
    config.json                optional user settings (see memory_store.config)
"""

from __future__ import annotations

import hashlib
import os
import sys
import tempfile
from pathlib import Path

APP_NAME = "recall"
PLUGIN_DATA_DIRNAME = "recall-recall"  # <plugin>-<marketplace>, as Claude Code names it


def platform_data_dir() -> Path:
    """The per-user data directory of this OS (what platformdirs would answer)."""
    home = Path.home()
    if sys.platform == "win32":
        base = os.environ.get("LOCALAPPDATA") or str(home / "AppData" / "Local")
        return Path(base) / APP_NAME
    if sys.platform == "darwin":
        return home / "Library" / "Application Support" / APP_NAME
    base = os.environ.get("XDG_DATA_HOME") or str(home / ".local" / "share")
    return Path(base) / APP_NAME


def installed_plugin_data_dir() -> Path:
    """Where Claude Code keeps this plugin's data once installed from the `recall` marketplace."""
    config_dir = os.environ.get("CLAUDE_CONFIG_DIR") or str(Path.home() / ".claude")
    return Path(config_dir) / "plugins" / "data" / PLUGIN_DATA_DIRNAME


def resolve_home(explicit: str | os.PathLike | None = None) -> Path:
    """The data directory: explicit argument, $RECALL_HOME, $CLAUDE_PLUGIN_DATA, the installed
    plugin's data dir when it exists (so `recall` typed in a terminal sees what the hooks stored),
    else the platform user-data dir."""
    for candidate in (explicit, os.environ.get("RECALL_HOME"), os.environ.get("CLAUDE_PLUGIN_DATA")):
        if candidate:
            return Path(candidate).expanduser().absolute()
    installed = installed_plugin_data_dir()
    if installed.is_dir():
        return installed
    return platform_data_dir()


def ensure_private_dir(path: Path) -> Path:
    """Create `path` (and parents) readable by the owner only."""
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    try:
        os.chmod(path, 0o700)
    except OSError:
        pass
    return path


class DataPaths:
    """Every file recall uses inside one data directory."""

    def __init__(self, home: str | os.PathLike | None = None):
        self.home = resolve_home(home)

    @property
    def db(self) -> Path:
        return self.home / "recall.db"

    @property
    def config(self) -> Path:
        return self.home / "config.json"

    @property
    def spool(self) -> Path:
        return self.home / "spool"

    @property
    def logs(self) -> Path:
        return self.home / "logs"

    @property
    def log_file(self) -> Path:
        return self.logs / "recall.log"

    @property
    def runtime(self) -> Path:
        return self.home / "runtime"

    @property
    def venv(self) -> Path:
        return self.home / "venv"

    @property
    def runtime_info(self) -> Path:
        """JSON: which Python runs the worker, for which plugin version."""
        return self.runtime / "python.json"

    @property
    def hook_python(self) -> Path:
        """One line: the absolute interpreter the launcher should use (skips version-manager shims)."""
        return self.runtime / "hook-python"

    @property
    def bootstrap_lock(self) -> Path:
        return self.runtime / "bootstrap.lock"

    @property
    def bootstrap_log(self) -> Path:
        return self.logs / "bootstrap.log"

    @property
    def bootstrap_notice(self) -> Path:
        """Exists once the user has been told about the first-install bootstrap."""
        return self.runtime / "bootstrap.notified"

    @property
    def worker_lock(self) -> Path:
        return self.runtime / "worker.lock"

    @property
    def worker_pid(self) -> Path:
        return self.runtime / "worker.pid"

    @property
    def worker_starting(self) -> Path:
        """Marker left by whoever last asked for a worker, so parallel hooks spawn one, not ten."""
        return self.runtime / "worker.starting"

    @property
    def worker_endpoint(self) -> Path:
        """Windows only: `port token` of the loopback TCP listener (0600)."""
        return self.runtime / "worker.endpoint"

    @property
    def worker_socket(self) -> Path:
        """The worker's Unix socket. sun_path is limited to ~104 bytes, so long data-dir paths
        fall back to a short per-user directory in the temp dir, keyed by the data dir."""
        path = self.runtime / "worker.sock"
        if len(os.fsencode(str(path))) < 100:
            return path
        digest = hashlib.sha256(os.fsencode(str(self.home))).hexdigest()[:16]
        uid = os.getuid() if hasattr(os, "getuid") else 0
        return Path(tempfile.gettempdir()) / f"recall-{uid}" / f"{digest}.sock"
