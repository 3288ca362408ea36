"""How many memories hold a word: on a big store, a lexical match must hold one of the prompt's rarer words.

A word held by a large share of a project's memories ("deploy" in a deploy-heavy project, "uploads" after
a week of upload work) matches thousands of rows, and FTS5 scores every one of them with BM25, although
such a word barely moves a score (its IDF is near zero) and the dense search still reads the whole prompt.
search.candidates therefore asks FTS5 for the memories holding one of the other words, scored by all of
them (ranking.fts_expression). On the latency bench's store (7,300 memories) that halves the lexical
search (3.4 -> 2.1 ms a prompt, the same memories injected).

This is a speed measure, so it applies from `MIN_MEMORIES` on, and a prompt whose words are all common
keeps them all. Forced onto LoCoMo's small conversations it costs a little recall (R@5 0.727 -> 0.710,
R@10 0.804 -> 0.801): below the threshold nothing changes. Counts come from the index itself (a one-word
MATCH: 20-300 µs) and are kept for a few minutes: a word's share of a project changes slowly.
"""

from __future__ import annotations

import time

from ..shared.projects import GLOBAL_PROJECT
from .ranking import fts_phrase

MIN_MEMORIES = 2000  # below this the whole lexical search takes well under a millisecond
COUNTS_TTL_SECONDS = 300.0


class TermFrequencies:
    """Per-process cache of how many memories a project holds, and how many of them hold each word."""

    def __init__(self, ttl: float = COUNTS_TTL_SECONDS):
        self.ttl = ttl
        self._counts: dict[tuple, tuple[float, int]] = {}  # (project, word or None) -> (when counted, count)

    def selective(self, conn, terms: list[str], share: float, project: str | None,
                  now: float | None = None) -> list[str]:
        """`terms` without those held by more than `share` of the memories a search of `project` reads
        (its own and the global ones; every project's for None). All of them when `share` is 0, that part
        of the store is small, or none would be left."""
        if share <= 0 or len(terms) < 2:
            return terms
        now = time.monotonic() if now is None else now
        total = self._count(conn, project, None, now)
        if total < MIN_MEMORIES:
            return terms
        kept = [t for t in terms if self._count(conn, project, t, now) <= share * total]
        return kept or terms

    def clear(self) -> None:
        self._counts.clear()

    def _count(self, conn, project: str | None, term: str | None, now: float) -> int:
        key = (project, term)
        cached = self._counts.get(key)
        if cached is None or now - cached[0] > self.ttl:
            if len(self._counts) > 20_000:  # a long-lived worker sees many words: forget them all at once
                self._counts.clear()
            cached = self._counts[key] = (now, _counted(conn, project, term))
        return cached[1]


def _counted(conn, project: str | None, term: str | None) -> int:
    """Memories of `project` (and global ones; all for None), holding `term` if one is given."""
    if term is None:
        sql, args = "SELECT count(*) FROM memories", []
        if project is not None:
            sql, args = sql + " WHERE project IN (?, ?)", [project, GLOBAL_PROJECT]
    else:
        sql = "SELECT count(*) FROM memories_fts"
        args = [fts_phrase(term)]
        if project is not None:
            sql += " CROSS JOIN memories ON memories.id = memories_fts.rowid"
        sql += " WHERE memories_fts MATCH ?"
        if project is not None:
            sql += " AND memories.project IN (?, ?)"
            args.extend((project, GLOBAL_PROJECT))
    return conn.execute(sql, args).fetchone()[0]
