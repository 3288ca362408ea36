"""Cutting text to a budget, the same way everywhere. Standard library only."""

from __future__ import annotations

ELLIPSIS = "…"


def cap(text: str, limit: int, marker: str = ELLIPSIS) -> str:
    """`text` cut to at most `limit` characters, ending with `marker` when something was cut."""
    if len(text) <= limit:
        return text
    return text[: max(0, limit - len(marker))].rstrip() + marker


def cap_middle(text: str, limit: int) -> str:
    """Keep the head and the tail (where commands print their errors and summaries)."""
    if len(text) <= limit:
        return text
    head = limit // 3
    tail = limit - head - 3
    return text[:head].rstrip() + " … " + text[-tail:].lstrip()


def one_line(text: str, limit: int) -> str:
    """Whitespace runs (newlines included) collapsed to one space, then capped."""
    return cap(" ".join(text.split()), limit)
