"""Structured JSON logs, one object per line. Standard library only.

Hooks, the worker and the CLI all append to `logs/recall.log` in the data dir. Each line
is written with a single `write()` on an O_APPEND descriptor, so concurrent processes
never interleave. Messages are redacted like stored text: a log must not leak what the
database may not hold. `recall stats` reads the `hook` lines back for latency percentiles.
"""

from __future__ import annotations

import json
import re
import sys
import time
from pathlib import Path

from .files import append_line
from .text import cap

MAX_FIELD_CHARS = 2_000  # a log line is a note, not a copy of the payload
WORKER_OUT_TAIL = 600  # characters of logs/worker.out shown when the worker is down


# Short identifier-like strings (event names, routes) cannot hold a secret worth the cost of
# compiling the redaction patterns, which a hook process would otherwise pay on every event.
_PLAIN = re.compile(r"[A-Z]?[a-z]+(?:[A-Z][a-z]+)*|[a-z_\-]+")  # CamelCase or lowercase words


_UNWRITABLE: set[str] = set()  # log files this process could not write (told once)


def _shorten(value):
    if isinstance(value, str):
        if len(value) > 40 or not _PLAIN.fullmatch(value):
            from .redact import clean

            value = clean(value)
        return cap(value, MAX_FIELD_CHARS)
    if isinstance(value, (int, float, bool)) or value is None:
        return value
    return _shorten(str(value))


class JsonLog:
    """Append-only JSON-lines logger bound to one file (and optionally stderr)."""

    def __init__(self, path: Path | str | None, component: str, echo_stderr: bool = False):
        self.path = Path(path) if path is not None else None
        self.component = component
        self.echo_stderr = echo_stderr

    def write(self, level: str, event: str, **fields) -> None:
        record = {"ts": round(time.time(), 3), "level": level, "component": self.component, "event": event}
        record.update({k: _shorten(v) for k, v in fields.items()})
        line = json.dumps(record, ensure_ascii=False) + "\n"
        if self.echo_stderr:
            try:
                sys.stderr.write(line)
            except (OSError, ValueError):
                pass
        if self.path is None:
            return
        try:
            append_line(str(self.path), line.encode("utf-8", "replace"))
        except OSError as exc:  # disk full, read-only dir: logging must never break the caller
            if not self.echo_stderr and str(self.path) not in _UNWRITABLE:
                _UNWRITABLE.add(str(self.path))  # said once per process, not once per line
                try:
                    sys.stderr.write(f"recall: cannot write log {self.path}: {exc.strerror or exc}\n")
                except (OSError, ValueError):
                    pass

    def info(self, event: str, **fields) -> None:
        self.write("info", event, **fields)

    def warning(self, event: str, **fields) -> None:
        self.write("warning", event, **fields)

    def error(self, event: str, **fields) -> None:
        self.write("error", event, **fields)


def read_records(path: Path, event: str | None = None):
    """Yield parsed log records (both the live file and its rotated predecessor)."""
    for candidate in (path.with_name(path.name + ".1"), path):
        try:
            handle = open(candidate, encoding="utf-8", errors="replace")
        except FileNotFoundError:
            continue
        with handle:
            for line in handle:
                try:
                    record = json.loads(line)
                except ValueError:
                    continue
                if isinstance(record, dict) and (event is None or record.get("event") == event):
                    yield record


def worker_out_tail(paths) -> str:
    """The end of logs/worker.out (DataPaths `paths`): what the worker printed when it last failed to start."""
    try:
        with open(paths.logs / "worker.out", "rb") as handle:
            handle.seek(0, 2)
            handle.seek(max(0, handle.tell() - WORKER_OUT_TAIL))
            return handle.read().decode("utf-8", "replace").strip()
    except OSError:
        return ""
