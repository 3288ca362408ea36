"""The values a text states, and whether a newer text gives another value for the same thing.

A value is a number with what it measures ("15 minutes", "every 2 seconds", "€60") or a named setting ("lr: 2e-4",
"hold_ttl_minutes = 8", "set @limit to 8"). A newer text changes an older one when it gives the same setting
another value, or the same unit another value with words around it in common ("hold the table … 15 minutes" /
"releases its table after 8 minutes"), and the two share at least MIN_SHARED_WORDS content words. What an edit of
a file states is what it wrote there (`stated`): an Edit sets values as much as an answer does.

Pure text, no store: retrieval/versions.py finds the newer statements of a shown memory with it, and
storage/knowledge.py decides with it which earlier fact a new one replaces.
"""

from __future__ import annotations

import re
from functools import lru_cache

from ..records import Hit, Memory
from ..terms import STOPWORDS, normalize_term, words

MIN_SHARED_WORDS = 2
STATEMENT_KINDS = ("prompt", "exchange")  # what states values in words (a tool's output does not)
FILE_WRITES = ("Edit ", "MultiEdit ", "Write ")  # tool memories that set values: what they wrote into a file
CONTEXT_WORDS = 6  # the words on each side of a value that say what it is about

_NUMBER = r"\d[\d.,_]*(?:e-?\d+)?"
_UNIT_AFTER = re.compile(rf"(?<![\w.])({_NUMBER})\s?(%|[a-zA-Z]{{2,14}}\b)")
_CURRENCY = re.compile(rf"([$€£¥])\s?({_NUMBER})")
# (starts only at a word's start: a match tried inside a 20,000-character token took seconds)
_SETTING = re.compile(rf"(?<![\w.@-])(@?[A-Za-z][\w.-]*)[\"']?\s*(?::|=>|=|\bto\b|\bis\b)\s*[\"'`]?"
                      rf"({_NUMBER}|[A-Za-z][\w.-]*-[\w.-]+)")
_NOT_UNITS = frozenset("""
a an and or the to of in on at by for with from per than then so as is are was were it its this that these
those more less about around over under times x
""".split())
_UNIT_WORDS = frozenset("min sec ms kb mb gb tb px fps hz".split())
_EDIT = re.compile(r"`([^`]*)` → `([^`]*)`")  # an Edit memory's change (capture._render_tool)


# A prompt compares the same texts many times over: subject() and values() are memoized, for one
# prefer_current call only (cleared at its end: no memory's text outlives the request in RAM).
@lru_cache(maxsize=4096)
def subject(text: str) -> frozenset[str]:
    return frozenset(normalize_term(w) for w in set(words(text))
                     if len(w) > 2 and w not in STOPWORDS and not any(map(str.isdigit, w)))


@lru_cache(maxsize=4096)
def _values(text: str) -> tuple:
    return tuple(values(text).items())


def values(text: str) -> dict[tuple[str, str], tuple[str, frozenset[str]]]:
    """The values a text states: (what it measures, value) -> (how the text writes it, the content words
    around it). A unit ("minutes") says little alone: the words around a value tell which minutes."""
    found: dict[tuple[str, str], tuple[str, frozenset[str]]] = {}

    def add(key: str, value: str, match: re.Match) -> None:
        before = words(text[max(0, match.start() - 80):match.start()])[-CONTEXT_WORDS:]
        after = words(text[match.end():match.end() + 80])[:CONTEXT_WORDS]
        found.setdefault((key, value), (match.group(0), subject(" ".join(before + after)) - {key}))

    for match in _UNIT_AFTER.finditer(text):
        if match.group(2).lower() not in _NOT_UNITS:
            add(normalize_term(match.group(2).lower()), match.group(1).rstrip(".,"), match)
    for match in _CURRENCY.finditer(text):
        add(match.group(1), match.group(2).rstrip(".,"), match)
    for match in _SETTING.finditer(text):
        value = match.group(2).rstrip(".,")
        if any(ch.isdigit() for ch in value) or "-" in value:
            add(match.group(1).lower().lstrip("@"), value, match)
    return found


def _is_setting(key: str) -> bool:
    """A named setting (hold_ttl_minutes, lr, limit) rather than a unit (minutes, %, €)."""
    if re.search(r"[_.]", key):
        return True
    return key.isalpha() and len(key) <= 3 and key not in _UNIT_WORDS


_UNIT_SUFFIX = re.compile(r"[_.\-]?(?:ms|millis|milliseconds|s|sec|secs|seconds|m|min|mins|minutes|h|hr|hrs|hours|d|days|"
                          r"kb|mb|gb|bytes|pct|percent)$", re.IGNORECASE)


def _without_unit(key: str) -> str:
    """A setting's name without the unit it ends in (`hold_ttl_minutes` → `hold_ttl`)."""
    return _UNIT_SUFFIX.sub("", key.lower())


def _name_parts(key: str) -> frozenset[str]:
    """The words of a setting's name (`payment_gateway_timeout`: payment, gateway, timeout), light-stemmed."""
    return frozenset(normalize_term(part) for part in re.split(r"[_.\-]+", key) if len(part) > 2 and part not in STOPWORDS)


def _same_measure(key: str, context: frozenset[str], other_key: str, other_context: frozenset[str]) -> bool:
    """Do two values measure the same thing? The same setting, or the same unit with words around it in common,
    or a setting named in code and the same setting in words ("PAYMENT_GATEWAY_TIMEOUT = 45" / "the payment
    gateway timeout to 30 seconds": every word of the name stands next to the other value)."""
    if key == other_key:
        return _is_setting(key) or bool(context & other_context)
    if _is_setting(key) and _is_setting(other_key) and _without_unit(key) == _without_unit(other_key) != key:
        return True  # the same setting measured in another unit (`preview_ttl_hours` → `preview_ttl_minutes`)
    for name, near in ((key, other_context | {normalize_term(other_key)}), (other_key, context | {normalize_term(key)})):
        parts = _name_parts(_without_unit(name))
        if len(parts) >= 2 and parts <= near:
            return True
    return False


def _changes(newer_text: str, older_text: str) -> list[tuple[str, str, list[str]]]:
    """(measure, how the older text wrote its value, how the newer text writes its values for that measure) for
    each value the newer text gives differently."""
    new = dict(_values(newer_text))
    found = []
    for (key, value), (raw, context) in sorted(_values(older_text)):
        if (key, value) in new:
            continue
        same = [(new_key, new_value, new_raw) for (new_key, new_value), (new_raw, new_context) in sorted(new.items())
                if _same_measure(key, context, new_key, new_context)]
        if same and not any(new_value == value for _, new_value, _ in same):
            found.append((key, raw, [new_raw for _, _, new_raw in same]))
    return found


def changed(newer_text: str, older_text: str) -> list[str]:
    """How the older text wrote each value that the newer text gives differently."""
    return [raw for _, raw, _ in _changes(newer_text, older_text)]


def new_values(newer_text: str, older_text: str) -> list[str]:
    """How the newer text writes each value it gives differently from the older one."""
    return list(dict.fromkeys(raw for _, _, now in _changes(newer_text, older_text) for raw in now))


def changed_measures(newer_text: str, older_text: str) -> set[str]:
    return {key for key, _, _ in _changes(newer_text, older_text)}


def replaces(newer_text: str, older_text: str) -> bool:
    """Does `newer_text` give another value for something `older_text` states, on the same subject?"""
    if len(subject(newer_text) & subject(older_text)) < MIN_SHARED_WORDS:
        return False
    return bool(_changes(newer_text, older_text))


def stated(memory: Memory | Hit) -> str:
    """What a memory says holds from then on: for an edit of a file, the text it put there (the new side of
    each `old` → `new`); for anything else, its text."""
    if memory.kind == "tool" and memory.text.startswith(("Edit ", "MultiEdit ")):
        return " ".join(match.group(2) for match in _EDIT.finditer(memory.text)) or memory.text
    return memory.text


def as_stated(text: str) -> str:
    """A shown text with each edit's `old` → `new` replaced by its new side: the values it still states."""
    return _EDIT.sub(lambda match: f"`{match.group(2)}`", text)


def states_values(memory: Memory | Hit) -> bool:
    """Can this memory state a value that holds (a prompt or an answer, or an edit or write of a file)?"""
    if memory.kind in STATEMENT_KINDS:
        return not (memory.kind == "prompt" and memory.text.rstrip().endswith("?"))  # a question states none
    return memory.kind == "tool" and memory.text.startswith(FILE_WRITES)


def setting_names(text: str) -> list[str]:
    """The named settings a text gives values for (`payment_gateway_timeout = 30`, `hold.ttl: 8`)."""
    return sorted({key for (key, _), _ in _values(text) if _is_setting(key) and re.search(r"[_.]", key)})


def forget_texts() -> None:
    """Empty the memos of subject() and values(): no memory's text outlives the request or the event in RAM."""
    subject.cache_clear()
    _values.cache_clear()
