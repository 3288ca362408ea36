"""Current values: when a newer statement gives another value for something an injected memory says,
the newer one is injected too, marked current, saying what it replaced and when.

A value is a number with what it measures ("15 minutes", "every 2 seconds", "€60") or a named
setting ("lr: 2e-4", "hold_ttl_minutes = 8", "set @limit to 8"). A newer text changes an older one
when it gives the same setting another value, or the same unit another value with words around it
in common ("hold the table … 15 minutes" / "releases its table after 8 minutes"), and the two share
at least MIN_SHARED_WORDS content words. The newer statement is looked for among the prompt's other
candidates and among the nearest neighbours, in vector space, of what was taken, created after it.
"""

from __future__ import annotations

import re
from functools import lru_cache

from .ranking import STOPWORDS, answer_terms, normalize_term, words
from .embed import dot

SAME_SUBJECT_COSINE = 0.35  # a looser bar than "the same text": the value words decide
MIN_SHARED_WORDS = 2
MIN_QUERY_SIMILARITY = 0.2  # the newer statement must still be about the question
NEIGHBOURS = 6
STATEMENT_KINDS = ("prompt", "exchange")  # what can state a newer value (a tool's output does not)
MAX_NEWER = 2  # newer statements shown with one taken memory
CONTEXT_WORDS = 6  # the words on each side of a value that say what it is about

_NUMBER = r"\d[\d.,_]*(?:e-?\d+)?"
_UNIT_AFTER = re.compile(rf"(?<![\w.])({_NUMBER})\s?(%|[a-zA-Z]{{2,14}}\b)")
_CURRENCY = re.compile(rf"([$€£¥])\s?({_NUMBER})")
_SETTING = re.compile(rf"(@?[A-Za-z][\w.-]*)\s*(?::|=|\bto\b|\bis\b)\s*[\"'`]?({_NUMBER}|[A-Za-z][\w.-]*-[\w.-]+)")
_NOT_UNITS = frozenset("""
a an and or the to of in on at by for with from per than then so as is are was were it its this that these
those more less about around over under times x
""".split())
_UNIT_WORDS = frozenset("min sec ms kb mb gb tb px fps hz".split())


# A prompt compares the same texts many times over: subject() and values() are memoized, for one
# prefer_current call only (cleared at its end: no memory's text outlives the request in RAM).
@lru_cache(maxsize=4096)
def subject(text: str) -> frozenset[str]:
    return frozenset(normalize_term(w) for w in words(text)
                     if w not in STOPWORDS and not any(ch.isdigit() for ch in w) and len(w) > 2)


@lru_cache(maxsize=4096)
def _values(text: str) -> tuple:
    return tuple(values(text).items())


def values(text: str) -> dict[tuple[str, str], tuple[str, frozenset[str]]]:
    """The values a text states: (what it measures, value) -> (how the text writes it, the content words
    around it). A unit ("minutes") says little alone: the words around a value tell which minutes."""
    found: dict[tuple[str, str], tuple[str, set[str]]] = {}

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


def _changes(newer_text: str, older_text: str) -> list[tuple[str, str]]:
    """(measure, how the older text wrote its value) for each value the newer text gives differently."""
    new = dict(_values(newer_text))
    found = []
    for (key, value), (raw, context) in sorted(_values(older_text)):
        if (key, value) in new:
            continue
        if any(new_key == key and (_is_setting(key) or context & new_context)
               for (new_key, _), (_, new_context) in new.items()):
            found.append((key, raw))
    return found


def changed(newer_text: str, older_text: str) -> list[str]:
    """How the older text wrote each value that the newer text gives differently."""
    return [raw for _, raw in _changes(newer_text, older_text)]


def changed_measures(newer_text: str, older_text: str) -> set[str]:
    return {key for key, _ in _changes(newer_text, older_text)}


def replaces(newer_text: str, older_text: str) -> bool:
    """Does `newer_text` give another value for something `older_text` states, on the same subject?"""
    if len(subject(newer_text) & subject(older_text)) < MIN_SHARED_WORDS:
        return False
    return bool(_changes(newer_text, older_text))


def prefer_current(store, decision, found, now: float) -> None:
    """For each taken candidate, find the newest statements that give another value for something its
    excerpt says (the newest per changed measure, at most MAX_NEWER, the closest to the question first);
    they are attached to the candidate (`newer`) and shown with it, marked current."""
    if found.vector is None or not store.vectors_ready():
        return
    try:
        _prefer_current(store, decision, found)
    finally:
        subject.cache_clear()
        _values.cache_clear()


def _prefer_current(store, decision, found) -> None:
    terms = answer_terms(found.query)
    limit = store.config.inject.max_item_chars
    for candidate in decision.taken:
        shown = candidate.episode.excerpt(terms, limit, decision.intent.wants)
        latest: dict[str, tuple] = {}  # measure -> (created_at, similarity to the question, memory)
        for other, similarity in _newer_statements(store, candidate, decision, found):
            if other.id in candidate.episode.ids() or not replaces(other.text, shown):
                continue
            for key in changed_measures(other.text, shown):
                if key not in latest or latest[key][0] < other.created_at:
                    latest[key] = (other.created_at, similarity, other)
        chosen = {entry[2].id: entry for entry in latest.values()}
        candidate.newer = [entry[2] for entry in sorted(chosen.values(), key=lambda e: -e[1])[:MAX_NEWER]]
        for memory in candidate.newer:
            candidate.why += f"; #{memory.id} is newer and gives another value for the same subject"


def _newer_statements(store, candidate, decision, found):
    """(memory, similarity to the question) of memories of the same project created after the
    candidate's episode, close to it in meaning and still about the question."""
    since = candidate.episode.created_at
    own = list(store.vectors_of(candidate.episode.ids()).values())
    if not own:
        return
    pool = [c.memory.id for c in decision.candidates if c.memory.created_at.timestamp() > since]
    for neighbours in store.nearest_each(own, NEIGHBOURS, candidate.memory.project, since + 1e-6, None,
                                         kinds=STATEMENT_KINDS):
        pool.extend(neighbours)
    close = []  # (memory id, similarity to the question): the vectors are read at once, the rows once
    vectors = store.vectors_of(pool)
    for memory_id in dict.fromkeys(pool):
        vector = vectors.get(memory_id)
        if vector is None:
            continue
        similarity = dot(vector, found.vector)
        if similarity < MIN_QUERY_SIMILARITY or max(dot(vector, mine) for mine in own) < SAME_SUBJECT_COSINE:
            continue
        close.append((memory_id, similarity))
    memories = {memory.id: memory for memory in store.get([memory_id for memory_id, _ in close])}
    for memory_id, similarity in close:
        memory = memories.get(memory_id)
        if memory is None or memory.superseded_by or memory.kind not in STATEMENT_KINDS:
            continue
        if memory.kind == "prompt" and memory.text.rstrip().endswith("?"):
            continue  # a question states no value
        yield memory, similarity
