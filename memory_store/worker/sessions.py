"""The Claude Code processes a worker serves, so that it never exits under an open session.

Every hook names its session's Claude Code process (CLAUDE_PID, sent in the request header). The worker
stays while one of them runs, whatever the time since the last request, and its idle timeout counts from
when the last one ended: a prompt after a long pause in an open session never pays the model load again.
A process is recognised by its pid and its start time (Linux: /proc/PID/stat), so a pid the system hands to
another program later does not keep the worker alive; where the start time cannot be read, a session silent
for SILENT_LIMIT no longer counts.
"""

from __future__ import annotations

import os
import time

SILENT_LIMIT = 24 * 3600.0  # seconds: a session not heard from this long is taken as gone (pid only)
MAX_TRACKED = 256  # more live sessions than this on one machine: the oldest are forgotten


def started_at(pid: int) -> str:
    """The process's start time as the kernel states it ('' where it cannot be read)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            stat = handle.read().decode("ascii", "replace")
    except OSError:
        return ""
    # The command name (field 2) may hold spaces and parentheses: fields are counted after its last ')'.
    fields = stat[stat.rfind(")") + 2:].split()
    return fields[19] if len(fields) > 19 else ""


def running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process, alive
    except OSError:
        return False
    return True


class OpenSessions:
    """pid -> (its start time, when it was last heard from), for the Claude Code processes seen in requests."""

    def __init__(self) -> None:
        self._seen: dict[int, tuple[str, float]] = {}
        self.last_open = time.monotonic()  # when a served session was last known to be open

    def heard_from(self, pid) -> None:
        if not isinstance(pid, int) or pid <= 1 or pid == os.getpid():
            return
        known = self._seen.get(pid)
        self._seen[pid] = (known[0] if known else started_at(pid), time.monotonic())
        if len(self._seen) > MAX_TRACKED:
            del self._seen[min(self._seen, key=lambda p: self._seen[p][1])]

    def any_open(self) -> bool:
        """Is a served session still open? Forgets the ones that ended; notes the time while one is open."""
        now = time.monotonic()
        for pid, (start, heard) in list(self._seen.items()):
            same = running(pid) and (started_at(pid) == start if start else now - heard < SILENT_LIMIT)
            if not same:
                del self._seen[pid]
        if self._seen:
            self.last_open = now
        return bool(self._seen)

    def __len__(self) -> int:
        return len(self._seen)
