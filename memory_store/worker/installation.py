"""Is the Claude Code plugin this worker serves still installed?

`claude plugin uninstall recall@recall --keep-data` keeps the data dir, so a worker that waits for its data dir to go
(server.watch) stayed for its whole idle timeout after an uninstall (194 MB, still there minutes later). Claude Code
lists what is installed in `~/.claude/plugins/installed_plugins.json` ({"plugins": {"recall@recall": [...]}}) and
gives each plugin the data dir `~/.claude/plugins/data/<its id, each character outside [A-Za-z0-9_-] a '-'>`: a
worker whose data dir is such a folder, and whose id that file no longer lists, serves an uninstalled plugin.
A data dir anywhere else (RECALL_HOME, Codex) is never judged.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

INSTALLED_FILE = "installed_plugins.json"


def data_dir_name(plugin_id: str) -> str:
    """The data dir Claude Code gives a plugin: `recall@recall` -> `recall-recall`."""
    return re.sub(r"[^A-Za-z0-9_-]", "-", plugin_id)


class PluginInstall:
    """Reads the installed-plugins file again only when it changed."""

    def __init__(self, home: Path) -> None:
        self.name = home.name
        self.file = home.parent.parent / INSTALLED_FILE if home.parent.name == "data" else None
        self._stamp: tuple[int, int] | None = None
        self._removed = False

    def removed(self) -> bool:
        """True once the file lists no plugin whose data dir this is (False where it cannot tell)."""
        if self.file is None:
            return False
        try:
            stat = self.file.stat()
        except OSError:
            return False  # no file: not a Claude Code plugin data dir, or Claude Code is rewriting it
        stamp = (stat.st_mtime_ns, stat.st_size)
        if stamp != self._stamp:
            self._stamp = stamp
            self._removed = self._lists_none(self.file)
        return self._removed

    def _lists_none(self, file: Path) -> bool:
        try:
            plugins = json.loads(file.read_text(encoding="utf-8")).get("plugins")
        except (OSError, ValueError, AttributeError):
            return False  # half written or another format: judge again when it changes
        if not isinstance(plugins, dict):
            return False
        return all(data_dir_name(str(plugin_id)) != self.name for plugin_id in plugins)
