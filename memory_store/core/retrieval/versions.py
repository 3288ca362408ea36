"""Current values: when a newer statement gives another value for something an injected memory says,
the newer one is injected too, marked current, saying what it replaced and when.

What a value is and when a newer text gives another one for the same thing: knowledge/values.py. The newer
statement is looked for among the prompt's other candidates, among the nearest neighbours, in vector space, of
what was taken, created after it, and, for a named setting, among every later memory that names it: a value
changed in passing, inside an answer about a larger change, is far in meaning from where it was first set.

The same notion serves every place a memory is shown: the prompt's injection (`prefer_current`), and the
SessionStart brief, search results and compaction's key facts (`newer_versions`). Where the newer value is
shown too, the older one is left out; where the older one is shown alone, it says so first (inject.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..embedding.embed import similarities
from ..knowledge.values import (
    STATEMENT_KINDS,
    _values,
    as_stated,
    changed_measures,
    forget_texts,
    new_values,
    replaces,
    setting_names,
    stated,
    states_values,
)
from ..records import Hit, Memory

if TYPE_CHECKING:
    from ..storage import Store

SAME_SUBJECT_COSINE = 0.35  # a looser bar than "the same text": the value words decide
MIN_QUERY_SIMILARITY = 0.2  # the newer statement must still be about the question
NEIGHBOURS = 6
MAX_NEWER = 2  # newer statements shown with one taken memory
LOOKUP_WORDS = 12  # of those, how many look up later statements by their words

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
            candidate.newer += _replaced_in_knowledge(store, candidate.episode.ids(), shown, candidate.newer)
            for memory in candidate.newer:
                candidate.why += f"; #{memory.id} is newer and gives another value for the same subject"
    finally:
        forget_texts()


def _replaced_in_knowledge(store: Store, own_ids: set[int], shown: str, newer: list) -> list:
    """The memories of the current facts that replaced a fact these memories stated (storage/knowledge.py knows the
    chain, however the newer one was worded), when they give another value for what `shown` says."""
    sources = set(store.replacing_sources(sorted(own_ids)).values()) - own_ids - {memory.id for memory in newer}
    if not sources or len(newer) >= MAX_NEWER:
        return []
    return [memory for memory in store.get(sorted(sources))
            if not memory.superseded_by and replaces(stated(memory), shown)][:MAX_NEWER - len(newer)]


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
        forget_texts()
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
