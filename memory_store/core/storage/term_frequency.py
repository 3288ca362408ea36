"""How many memories hold a word: on a big store, a lexical match must hold one of the prompt's rarer words.

A word held by a large share of a project's memories ("deploy" in a deploy-heavy project, "uploads" after
a week of upload work) matches thousands of rows, and FTS5 scores every one of them with BM25, although
such a word barely moves a score (its IDF is near zero) and the dense search still reads the whole prompt.
search.candidates therefore asks FTS5 for the memories holding one of the other words, scored by all of
them (sqlite/search.py fts_expression). On the latency bench's store (7,300 memories) that cuts the lexical
search from 3.4 to 2.3 ms a prompt, the asked-about memory still injected for 30 of 30 questions.

This is a speed measure, so it applies from `MIN_MEMORIES` on. When every word of a query is common, the answer is
empty: SQLite then searches all time for the memories holding all of them first (BM25 ranks those first anyway, and they are
far fewer: 100k memories, three words held by 16-26 % of them, 5.6 ms instead of 26), and those holding any only
when too few hold all. Forced onto LoCoMo's small conversations it costs a little recall (R@5 0.727 -> 0.710,
R@10 0.804 -> 0.801): below the threshold nothing changes. Counts come from the index itself (a one-word
MATCH: 20-300 µs); a common word's count is kept for a few minutes: its share of a project changes slowly.
"""

from __future__ import annotations

import time
from collections.abc import Callable

MIN_MEMORIES = 2000  # below this the whole lexical search takes well under a millisecond
COUNTS_TTL_SECONDS = 300.0
KEEP_COUNTS_FROM = 50  # a word that many memories hold is nobody's secret; counting it on a server costs ms
# The worker counts the common words of each big project ahead of the prompts that will ask (Store.count_common_words):
# a common word's count in one project of several costs 0.3-2.3 ms (SQLite joins its matches with their rows), and the
# latency bench's questions met 2-3 new ones each (4.7 of a prompt's 7 ms of word search). Refreshed this often, so the
# counts never expire under a running worker.
WARM_EVERY_SECONDS = 240.0
# ...but counted again only once this share of the project's memories came or went since the last count (until then
# the counts are re-dated): a word's count moves by at most that much, so only a word within it of the bar could change
# sides, and this is a speed measure. A full count at 100k memories takes one core ~8 s, and prompts slow meanwhile.
RECOUNT_AFTER_CHANGE = 0.01


class TermFrequencies:
    """Per-process cache of how many memories a project holds and which words most of them hold.

    Only words many memories hold are kept (a rare word's count is quick to take again): such a word is not
    one memory's secret, so nothing a user forgets lingers here; `clear` on forget."""

    def __init__(self, ttl: float = COUNTS_TTL_SECONDS):
        self.ttl = ttl
        self._counts: dict[tuple, tuple[float, int]] = {}  # (project, common word or None) -> (when, count)
        # project -> (its memories, the newest memory id, the counts) at the worker's last full count
        self._taken: dict[str | None, tuple[int, int, dict[str | None, int]]] = {}

    def selective(self, count_of: Callable[[str | None, str | None], int], terms: list[str], share: float,
                  project: str | None, now: float | None = None,
                  key_of: Callable[[str], str] | None = None) -> list[str]:
        """`terms` without those held by more than `share` of the memories a search of `project` reads
        (its own and the global ones; every project's for None). All of them when `share` is 0, that part
        of the store is small, or there is one term; none (an empty list) when every one is common.
        `count_of(project, term)` asks the backend's text index:
        memories of `project` (and global ones; all for None) holding `term` (all of them for None). `key_of(term)`: what
        a count is remembered under (the index's own token, so that "uploads" and "upload" share one count)."""
        if share <= 0 or len(terms) < 2:
            return terms
        now = time.monotonic() if now is None else now
        total = self._cached(project, None, now)
        if total is None:
            total = count_of(project, None)
            self._remember(project, None, now, total)
        if total < MIN_MEMORIES:
            return terms
        limit = share * total
        kept = []
        for term in terms:
            key = key_of(term) if key_of is not None else term
            count = self._cached(project, key, now)
            if count is None:
                count = count_of(None, term)  # every project's: no join, and enough for a rare word
                if count > limit and project is not None:
                    count = count_of(project, term)
                if count > limit or count >= KEEP_COUNTS_FROM:
                    self._remember(project, key, now, count)
            if count <= limit:
                kept.append(term)
        return kept

    def remember(self, project: str | None, counts: dict[str | None, int], now: float | None = None) -> None:
        """Counts taken ahead of time (key -> memories of `project` holding it; None -> all of its memories)."""
        now = time.monotonic() if now is None else now
        for key, count in counts.items():
            if key is None or count >= KEEP_COUNTS_FROM:
                self._remember(project, key, now, count)

    def taken(self, project: str | None, memories: int, newest: int, counts: dict[str | None, int],
              now: float | None = None) -> None:
        """A full count of `project`'s common words (store.count_common_words), when it held `memories` memories,
        the newest with id `newest`."""
        self._taken[project] = (memories, newest, counts)
        self.remember(project, counts, now)

    def last_taken(self, project: str | None) -> tuple[int, int, dict[str | None, int]] | None:
        return self._taken.get(project)

    def still_current(self, project: str | None, memories: int, added: int, now: float | None = None) -> bool:
        """True, and the last full count of `project` re-dated, when it holds `memories` memories now, `added` of them
        since that count, and fewer than RECOUNT_AFTER_CHANGE of them came or went."""
        last = self._taken.get(project)
        if last is None:
            return False
        removed = last[0] + added - memories
        if added + abs(removed) > RECOUNT_AFTER_CHANGE * memories:
            return False
        self.remember(project, last[2], now)
        return True

    def clear(self) -> None:
        self._counts.clear()
        self._taken.clear()

    def _cached(self, project: str | None, term: str | None, now: float) -> int | None:
        cached = self._counts.get((project, term))
        return None if cached is None or now - cached[0] > self.ttl else cached[1]

    def _remember(self, project: str | None, term: str | None, now: float, count: int) -> None:
        if len(self._counts) > 10_000:  # many projects and years of words: start again
            self._counts.clear()
        self._counts[(project, term)] = (now, count)

