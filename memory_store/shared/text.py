"""Cutting text to a budget, the same way everywhere. Standard library only."""

from __future__ import annotations

import re

ELLIPSIS = "…"
# Half of a UTF-16 pair with no other half: what Node writes into JSON when it cuts a string inside an emoji
# ("\ud83d"). Python reads it into a str that no UTF-8 encoder, tokenizer or database takes.
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def well_formed(text: str) -> str:
    """`text` with each lone surrogate replaced by U+FFFD, as a UTF-8 decoder does with a broken byte."""
    return _LONE_SURROGATE.sub("\ufffd", text)


def cap(text: str, limit: int, marker: str = ELLIPSIS) -> str:
    """`text` cut to at most `limit` characters, ending with `marker` when something was cut."""
    if len(text) <= limit:
        return text
    return text[: max(0, limit - len(marker))].rstrip() + marker


# Where a reader expects a cut, strongest first, with the share of the budget a cut there must keep: a sentence's
# end may give up a fifth of it, a clause's a tenth (what is cut is often what was asked about).
_BOUNDARIES = ((". ", 0.8), ("! ", 0.8), ("? ", 0.8), ("; ", 0.9), (": ", 0.9), (", ", 0.9), (" — ", 0.9),
               (" – ", 0.9), (" - ", 0.9))


def cap_readable(text: str, limit: int, marker: str = ELLIPSIS) -> str:
    """`text` cut to at most `limit` characters where a reader expects a cut: after a sentence or a clause when
    one ends near the budget's end, else between words (never inside one), ending with `marker`."""
    if len(text) <= limit:
        return text
    room = max(0, limit - len(marker))
    head = text[:room]
    for boundary, keep in _BOUNDARIES:
        at = head.rfind(boundary)
        if at >= room * keep:
            return head[:at + 1].rstrip(" ,;:—–-") + marker
    if not text[room:room + 1].isspace() and " " in head:
        head = head[: head.rfind(" ")]
    return head.rstrip(" ,;:—–-") + marker


def cap_middle(text: str, limit: int, marker: str = " … ") -> str:
    """Keep the head and the tail (where commands print their errors and summaries, and where a long prompt
    asks its question), cut between words."""
    if len(text) <= limit:
        return text
    head = limit // 3
    tail = limit - head - len(marker)
    start, end = text[:head], text[-tail:]
    if " " in start.strip() and not text[head:head + 1].isspace():
        start = start[: start.rstrip().rfind(" ")]  # not in the middle of a word
    if " " in end.strip() and not text[-tail - 1:-tail].isspace():
        end = end[end.find(" ") + 1:]
    return start.rstrip() + marker + end.lstrip()


def one_line(text: str, limit: int) -> str:
    """Whitespace runs (newlines included) collapsed to one space, then cut where a reader expects it."""
    return cap_readable(" ".join(text.split()), limit)


def age(seconds: float) -> str:
    """How long ago, as a person says it: "just now", "5m ago", "3h ago", "12d ago"."""
    seconds = max(0, seconds)
    if seconds < 90:
        return "just now"
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{int(seconds // size)}{unit} ago"
    return "just now"


def plural(count: int, word: str, many: str | None = None) -> str:
    return f"{count} {word if count == 1 else (many or word + 's')}"


MISSING_FILE_MARK = "(file since moved or removed)"


def mark_missing_files(text: str, missing: list[str]) -> str:
    """`text` with MISSING_FILE_MARK right after each missing path's first mention (core/retrieval/code_paths.py)."""
    for path in missing:
        at = text.find(path)
        end = at + len(path)
        if at >= 0 and not text.startswith(MISSING_FILE_MARK, end + 1):
            text = f"{text[:end]} {MISSING_FILE_MARK}{text[end:]}"
    return text
