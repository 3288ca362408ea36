"""Reading a hook payload: the same rules for the worker and the hook's spool path.
Standard library only."""

from __future__ import annotations

import json

from .text import cap_middle, well_formed

# Longer strings are cut before storage or spooling (capture keeps far less). The cut keeps the head and the tail:
# a pasted log asks its question on its last line, a command prints its error at the end.
MAX_STRING_CHARS = 64_000
MAX_LIST_ITEMS = 1_000
MAX_DEPTH = 40


class BadPayload(ValueError):
    """Not a usable hook payload: logged with this reason, then dropped."""


def parse_payload(raw: bytes) -> dict:
    """One JSON object, or BadPayload. Invalid UTF-8 is repaired rather than refused."""
    if not raw.strip():
        raise BadPayload("empty payload")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        text = raw.decode("utf-8", "replace")
    try:
        payload = json.loads(text)
    except RecursionError:
        raise BadPayload("payload nested too deeply") from None
    except ValueError as exc:
        raise BadPayload(f"not JSON: {exc}") from None
    if not isinstance(payload, dict):
        raise BadPayload(f"payload is a JSON {type(payload).__name__}, not an object")
    return pretrim(payload)


def pretrim(value, depth: int = 0):
    """Bound a payload's size: long strings cut, long lists shortened, deep nesting flattened; and make every string
    one that can be written down (no NUL, no lone surrogate)."""
    if isinstance(value, str):  # cut first: the rest then reads at most MAX_STRING_CHARS (a 13 MB Write: 2 x 13 MB)
        return well_formed(cap_middle(value, MAX_STRING_CHARS, " …[cut]… ").replace("\x00", ""))
    if depth >= MAX_DEPTH:
        return "…[nested too deep]"
    if isinstance(value, dict):
        return {well_formed(str(k)[:200]): pretrim(v, depth + 1) for k, v in list(value.items())[:MAX_LIST_ITEMS]}
    if isinstance(value, list):
        return [pretrim(v, depth + 1) for v in value[:MAX_LIST_ITEMS]]
    return value
