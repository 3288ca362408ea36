"""Current values: when a newer statement gives another value for something an injected memory says,
the newer one is injected too, marked current, saying what it replaced and when.

A value is a number with what it measures ("15 minutes", "every 2 seconds", "€60") or a named
setting ("lr: 2e-4", "hold_ttl_minutes = 8", "set @limit to 8"). A newer text changes an older one
when it gives the same setting another value, or the same unit another value with words around it
in common ("hold the table … 15 minutes" / "releases its table after 8 minutes"), and the two share
at least MIN_SHARED_WORDS content words. The newer statement is looked for among the prompt's other
candidates, among the nearest neighbours, in vector space, of what was taken, created after it, and, for
a named setting, among every later memory that names it: a value changed in passing, inside an answer
about a larger change, is far in meaning from where it was first set. What an edit of a file states is
what it wrote there (`stated`): an Edit sets values as much as an answer does.

The same notion serves every place a memory is shown: the prompt's injection (`prefer_current`), and the
SessionStart brief, search results and compaction's key facts (`newer_versions`). Where the newer value is
shown too, the older one is left out; where the older one is shown alone, it says so first (inject.py).
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from ..embedding.embed import similarities
from ..records import Hit, Memory
from ..terms import STOPWORDS, normalize_term, words

if TYPE_CHECKING:
    from ..storage import Store

SAME_SUBJECT_COSINE = 0.35  # a looser bar than "the same text": the value words decide
MIN_SHARED_WORDS = 2
MIN_QUERY_SIMILARITY = 0.2  # the newer statement must still be about the question
NEIGHBOURS = 6
STATEMENT_KINDS = ("prompt", "exchange")  # what states values in words (a tool's output does not)
FILE_WRITES = ("Edit ", "MultiEdit ", "Write ")  # tool memories that set values: what they wrote into a file
MAX_NEWER = 2  # newer statements shown with one taken memory
CONTEXT_WORDS = 6  # the words on each side of a value that say what it is about
LOOKUP_WORDS = 12  # of those, how many look up later statements by their words

_NUMBER = r"\d[\d.,_]*(?:e-?\d+)?"
_UNIT_AFTER = re.compile(rf"(?<![\w.])({_NUMBER})\s?(%|[a-zA-Z]{{2,14}}\b)")
_CURRENCY = re.compile(rf"([$€£¥])\s?({_NUMBER})")
_SETTING = re.compile(rf"(@?[A-Za-z][\w.-]*)\s*(?::|=|\bto\b|\bis\b)\s*[\"'`]?({_NUMBER}|[A-Za-z][\w.-]*-[\w.-]+)")
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


def _name_parts(key: str) -> frozenset[str]:
    """The words of a setting's name (`payment_gateway_timeout`: payment, gateway, timeout), light-stemmed."""
    return frozenset(normalize_term(part) for part in re.split(r"[_.\-]+", key) if len(part) > 2 and part not in STOPWORDS)


def _same_measure(key: str, context: frozenset[str], other_key: str, other_context: frozenset[str]) -> bool:
    """Do two values measure the same thing? The same setting, or the same unit with words around it in common,
    or a setting named in code and the same setting in words ("PAYMENT_GATEWAY_TIMEOUT = 45" / "the payment
    gateway timeout to 30 seconds": every word of the name stands next to the other value)."""
    if key == other_key:
        return _is_setting(key) or bool(context & other_context)
    for name, near in ((key, other_context | {normalize_term(other_key)}), (other_key, context | {normalize_term(key)})):
        parts = _name_parts(name)
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


def prefer_current(store: Store, decision: Any, found: Any, now: float) -> None:
    """For each taken candidate, find the newest statements that give another value for something its
    excerpt says (the newest per changed measure, at most MAX_NEWER, the closest to the question first);
    they are attached to the candidate (`newer`) and shown with it, marked current."""
    if found.vector is None or not store.vectors_ready():
        return
    try:
        terms = decision.terms
        limit = store.config.inject.max_item_chars
        for candidate in decision.taken:
            shown = as_stated(candidate.episode.excerpt(terms, limit, decision.intent.wants))
            pool = decision.ranked
            candidate.newer = _current(store, shown, candidate.episode.ids(), candidate.memory.project,
                                       candidate.episode.created_at, pool, found.vector, by_words=False)
            for memory in candidate.newer:
                candidate.why += f"; #{memory.id} is newer and gives another value for the same subject"
    finally:
        subject.cache_clear()
        _values.cache_clear()


def newer_versions(store: Store, memories: list) -> dict[int, list]:
    """For memories shown without a question (the SessionStart brief, search results, compaction's key facts):
    memory id -> the later statements that give another value for a value it states (the newest per measure)."""
    if not store.vectors_ready():
        return {}
    found = {}
    try:
        for memory in memories:
            newer = _current(store, stated(memory), {memory.id}, memory.project, memory.created_at.timestamp(),
                             [], None, by_words=True)
            if newer:
                found[memory.id] = newer
    finally:
        subject.cache_clear()
        _values.cache_clear()
    return found


def _current(store: Store, shown: str, own_ids: set[int], project: str, since: float, pool: list, query,
             by_words: bool) -> list:
    """The newest statements (at most MAX_NEWER, the closest to the question first when there is one) that give
    another value for something `shown` says (`by_words`: see _later_statements)."""
    if not _values(shown):
        return []  # it states no value: nothing can have changed one
    latest: dict[str, tuple] = {}  # measure -> (created_at, similarity to the question, memory)
    for other, similarity in _later_statements(store, shown, own_ids, project, since, pool, query, by_words):
        if other.id in own_ids or not replaces(stated(other), shown):
            continue
        for key in changed_measures(stated(other), shown):
            if key not in latest or latest[key][0] < other.created_at:
                latest[key] = (other.created_at, similarity, other)
    chosen = {entry[2].id: entry for entry in latest.values()}
    return [entry[2] for entry in sorted(chosen.values(), key=lambda e: -e[1])[:MAX_NEWER]]


def _later_statements(store: Store, shown: str, own_ids: set[int], project: str, since: float, pool: list, query,
                      by_words: bool):
    """(memory, similarity to the question, or 0) of statements of the project made after `since` that may give
    another value for what `shown` says: the nearest in meaning to the shown memories, and for a named setting
    every later memory that names it (a value changed in passing, inside an answer about something larger, is
    far in meaning from where it was first set). `by_words`: also those sharing the most words with what
    stands around its values (one more full-text search: for what is shown without a question; a prompt's
    other candidates cover that ground on the prompt path)."""
    own = list(store.vectors_of(own_ids).values())
    if not own:
        return
    ids = [memory_id for memory_id, created_at in pool if created_at > since]
    for neighbours in store.nearest_each(own, NEIGHBOURS, project, since + 1e-6, None, kinds=STATEMENT_KINDS):
        ids.extend(neighbours)
    named: list[int] = []
    for name in setting_names(shown):
        named.extend(store.lexical_candidates([name], None, NEIGHBOURS, project, since + 1e-6, None))
    near_values = sorted({word for _, (_, context) in _values(shown) for word in context})
    if by_words and near_values:  # the words around its values: the same setting, named in words or in code
        words = near_values[:LOOKUP_WORDS]
        # In a big project a match must hold one of the rarer of them, as a search's own words (term_frequency.py):
        # words most memories hold matched tens of thousands of rows at 100k (15 ms a lookup). When every one is
        # that common, the words say nothing of a setting: the nearest in meaning and the named settings remain.
        required = store.selective_terms(words, project)
        if required:
            named.extend(store.lexical_candidates(words, required, NEIGHBOURS, project, since + 1e-6, None))
    vectors = store.vectors_of(ids + named)
    found = [memory_id for memory_id in dict.fromkeys(ids + named) if memory_id in vectors]
    # Their similarity to the question and to the closest of the shown memories, in two products.
    rows = [vectors[memory_id] for memory_id in found]
    to_query = similarities(rows, [query] if query is not None else [])
    to_shown = similarities(rows, own)
    close = []  # (memory id, similarity to the question): the vectors are read at once, the rows once
    for k, memory_id in enumerate(found):
        similarity = float(to_query[k, 0]) if query is not None else 0.0
        if memory_id not in named and (similarity < MIN_QUERY_SIMILARITY and query is not None
                                       or float(to_shown[k].max()) < SAME_SUBJECT_COSINE):
            continue
        close.append((memory_id, similarity))
    memories = {memory.id: memory for memory in store.get([memory_id for memory_id, _ in close])}
    for memory_id, similarity in close:
        memory = memories.get(memory_id)
        if memory is not None and not memory.superseded_by and memory.created_at.timestamp() > since \
                and states_values(memory):
            yield memory, similarity


def outdated_note(memory: Memory | Hit, newer: list[Memory]) -> str:
    """What an older memory shown alone says first: that a newer one gives another value, which, and when."""
    latest = max(newer, key=lambda m: m.created_at)
    stamp = latest.created_at.astimezone().strftime("%Y-%m-%d")
    now_value = ", ".join(new_values(stated(latest), stated(memory))[:2])
    return f"[outdated: #{latest.id} of {stamp} gives {now_value or 'another value'}]"
