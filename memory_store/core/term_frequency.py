"""How many memories hold a word: the lexical search of a big store leaves out the words most of it holds.

A word held by a large share of the memories ("deploy" in a deploy-heavy project, "uploads" after a week
of upload work) matches thousands of rows, and FTS5 scores every one of them with BM25, although such a
word barely moves a score (its IDF is near zero) and the dense search still reads the whole prompt. On the
latency bench's store (7,300 memories) the two or three most common words of a prompt made most of its
matches and about half of its lexical search time.

This is a speed measure only, so it applies from `MIN_MEMORIES` on; a prompt keeps every word when all of
them are common (nothing else would find anything). Counts come from the index itself (a one-word MATCH:
20-90 µs) and are kept for a few minutes: a word's share of a store changes slowly.
"""

from __future__ import annotations

import time

from .ranking import fts_phrase

MIN_MEMORIES = 2000  # below this the whole lexical search takes well under a millisecond
COUNTS_TTL_SECONDS = 300.0


class TermFrequencies:
    """Per-process cache of the memories count and of how many memories hold each word."""

    def __init__(self, ttl: float = COUNTS_TTL_SECONDS):
        self.ttl = ttl
        self._holding: dict[str, tuple[float, int]] = {}  # word -> (when counted, memories holding it)
        self._total: tuple[float, int] | None = None

    def selective(self, conn, terms: list[str], share: float, now: float | None = None) -> list[str]:
        """`terms` without those held by more than `share` of the memories (all of them when `share` is 0,
        the store is small, or none would be left)."""
        if share <= 0 or len(terms) < 2:
            return terms
        now = time.monotonic() if now is None else now
        total = self._count_memories(conn, now)
        if total < MIN_MEMORIES:
            return terms
        limit = share * total
        kept = [t for t in terms if self._holding_count(conn, t, now) <= limit]
        return kept or terms

    def clear(self) -> None:
        self._holding.clear()
        self._total = None

    def _count_memories(self, conn, now: float) -> int:
        if self._total is None or now - self._total[0] > self.ttl:
            self._total = (now, conn.execute("SELECT count(*) FROM memories").fetchone()[0])
        return self._total[1]

    def _holding_count(self, conn, term: str, now: float) -> int:
        cached = self._holding.get(term)
        if cached is None or now - cached[0] > self.ttl:
            if len(self._holding) > 20_000:  # a long-lived worker sees many words; forget them all at once
                self._holding.clear()
            count = conn.execute("SELECT count(*) FROM memories_fts WHERE memories_fts MATCH ?",
                                 (fts_phrase(term),)).fetchone()[0]
            cached = self._holding[term] = (now, count)
        return cached[1]

