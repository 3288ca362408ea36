"""Forgetting outside the database: the copies of a forgotten text in the data dir's other files.

`Store.forget` removes a memory from every table (and zeroes its bytes); the same words can
also sit in a spool file (an event quarantined as unreadable, or one written while the worker was
busy) and in a log line (an error message that quoted a payload). Both are scanned for the
forgotten texts' distinctive pieces: a spool file that holds one is deleted, a log line that holds
one is dropped (the rest of the log stays).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path

from ..shared.paths import DataPaths
from ..shared.text import one_line

PREFIX_CHARS = 40  # a text's opening words identify it in a log line that quotes it
# Tokens that identify a text on their own: identifiers with a digit or inner capital, long words.
_DISTINCTIVE = re.compile(r"[\w.\-/@:+=]{6,}")


def needles(texts: list[str]) -> set[str]:
    """The pieces of `texts` whose presence in a file means the file holds (part of) one of them."""
    found: set[str] = set()
    for text in texts:
        opening = one_line(text, PREFIX_CHARS).rstrip("…").strip()
        if len(opening) >= 12:
            found.add(opening)
        for token in _DISTINCTIVE.findall(text):
            token = token.strip(".:/-=")
            if len(token) >= 16 or (len(token) >= 6 and (re.search(r"\d", token) or re.search(r"[a-z][A-Z]", token))):
                found.add(token)
    return found


def _encodings(needle: str) -> tuple[bytes, ...]:
    """A needle as it appears in a file: raw UTF-8, or inside JSON (escaped)."""
    escaped = json.dumps(needle)[1:-1].encode("ascii")
    raw = needle.encode("utf-8")
    return (raw,) if escaped == raw else (raw, escaped)


def scrub_files(paths: DataPaths, texts: list[str], extra: Sequence[str] = ()) -> dict[str, int]:
    """Delete spool files and drop log lines holding any needle of `texts` (or any `extra`
    string, verbatim). Returns {"spool_files": n, "log_lines": n}."""
    patterns = [encoded for needle in needles(texts) | {e for e in extra if e} for encoded in _encodings(needle)]
    report = {"spool_files": 0, "log_lines": 0}
    if not patterns:
        return report
    for path in _files(paths.spool):
        try:
            data = path.read_bytes()
        except OSError:
            continue
        if any(p in data or p.lower() in data.lower() for p in patterns):
            path.unlink(missing_ok=True)
            report["spool_files"] += 1
    for path in _files(paths.log_file.parent):
        report["log_lines"] += _drop_lines(path, patterns)
    return report


def clear_files(paths: DataPaths) -> dict[str, int]:
    """`recall purge`: every spool file deleted and every log emptied."""
    report = {"spool_files": 0, "log_files": 0}
    for path in _files(paths.spool):
        path.unlink(missing_ok=True)
        report["spool_files"] += 1
    for path in _files(paths.log_file.parent):
        with open(path, "r+b") as handle:
            handle.truncate(0)
        report["log_files"] += 1
    return report


def _files(folder: Path) -> list[Path]:
    try:
        return [p for p in folder.iterdir() if p.is_file()]
    except FileNotFoundError:
        return []


def _drop_lines(path: Path, patterns: list[bytes]) -> int:
    """Rewrite a log in place without the lines holding a pattern (in place: a process that has it
    open for appending keeps writing to the same file)."""
    try:
        with open(path, "r+b") as handle:
            lines = handle.read().splitlines(keepends=True)
            kept = [line for line in lines if not any(p in line or p.lower() in line.lower() for p in patterns)]
            if len(kept) == len(lines):
                return 0
            handle.seek(0)
            handle.write(b"".join(kept))
            handle.truncate()
    except OSError:
        return 0
    return len(lines) - len(kept)
