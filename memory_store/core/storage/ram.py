"""Vectors for search: the worker's RAM copy of recent ones (recent_vectors.py) in front of the backend's
index (sqlite-vec, or pgvector on a server).

A search whose time window RAM covers (the warm tier) reads RAM; anything older asks the index. Single
vectors come from RAM when there, else from the index (read once per request: Store.request_scope). Each
backend supplies its index search, its vectors by id and the change feed RAM follows (`_vector_feed`).
Written once for both backends.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import TYPE_CHECKING

from ...shared.projects import GLOBAL_PROJECT
from .contract import StoreContract

if TYPE_CHECKING:
    from .recent_vectors import RecentVectors  # numpy: only the worker loads it

GLOBAL_CHECK_SECONDS = 30.0  # how long "there are global memories" is believed before asking again


class RamVectors(StoreContract):
    """Searches by meaning: RAM's recent vectors first, the backend's index (`_index_nearest`) behind them."""

    # --- searching ----------------------------------------------------------------------------------

    def nearest(self, vector: bytes, n: int, project: str | None, since: float | None,
                until: float | None) -> dict[int, float]:
        """memory id -> cosine similarity of the n nearest vectors (the project's and the global ones)."""
        # A search's vectors are read on the embedding's thread while its words are searched on the request's
        # (search.candidates): a RAM copy synced just before (`catch_up_vectors`) is read without the connection's
        # lock, which the word search holds; the RAM copy has a lock of its own.
        recent = self.recent_vectors
        if recent is None or not recent.fresh():
            with self.db.lock:
                recent = self._synced_recent_vectors()
        if recent is None or not recent.covers(since):
            return self._index_nearest([vector], n, project, since, until)[0]
        found = recent.nearest(vector, n, project, since, until)
        if project is not None and project != GLOBAL_PROJECT and self._has_global():
            found.update(self._index_nearest([vector], n, GLOBAL_PROJECT, None, None)[0])
        return found

    def catch_up_vectors(self) -> None:
        """Apply what other processes wrote to the RAM copy, if it is due (so that `nearest` need not)."""
        if self.recent_vectors is not None:
            with self.db.lock:
                self._synced_recent_vectors()

    def nearest_each(self, vectors: list[bytes], n: int, project: str | None, since: float | None,
                     until: float | None, kinds: tuple[str, ...] | None = None) -> list[dict[int, float]]:
        """`nearest` for several vectors, of these kinds where the search can filter by kind (the caller checks
        the kinds of what it gets)."""
        with self.db.lock:
            recent = self._synced_recent_vectors()
            if recent is not None and recent.covers(since):
                return recent.nearest_each(vectors, n, project, since, until, kinds)
        return self._index_nearest(vectors, n, project, since, until, kinds)

    def _has_global(self) -> bool:
        checked = self._global_checked
        now = time.monotonic()
        if checked is None or now - checked[0] > GLOBAL_CHECK_SECONDS:
            checked = (now, self.db.one("SELECT 1 FROM memories WHERE project = ? LIMIT 1", (GLOBAL_PROJECT,))
                       is not None)
            self._global_checked = checked
        return checked[1]

    def vector_of(self, memory_id: int) -> bytes | None:
        """A memory's stored embedding; None when it has none yet."""
        return self.vectors_of([memory_id]).get(memory_id)

    def vectors_of(self, memory_ids: Iterable[int]) -> dict[int, bytes]:
        """The stored embeddings of those of these memories that have one."""
        ids = list(dict.fromkeys(memory_ids))
        found: dict[int, bytes] = {}
        with self.db.lock:
            recent = self._synced_recent_vectors()
            if recent is not None:
                for memory_id in ids:
                    vector = recent.get(memory_id)
                    if vector is not None:
                        found[memory_id] = vector
        missing = [i for i in ids if i not in found]
        if missing:
            found.update(self._index_vectors(missing))
        return found

    # --- the RAM copy -------------------------------------------------------------------------------

    def recent_vectors_cache(self, days: float, dim: int) -> RecentVectors | None:
        """A RAM copy of the vectors of the last `days`, loaded now and searched by this store from now on;
        None without vectors here."""
        if self._vector_feed() is None:
            return None
        from .recent_vectors import RecentVectors

        recent = RecentVectors(days, dim, archive_up_to=self.capabilities().archive_up_to)
        self.keep_recent_vectors(recent)
        return recent

    def keep_recent_vectors(self, recent: RecentVectors) -> None:
        """Search through `recent` (shared with another store of this process)."""
        feed = self._vector_feed()
        if feed is None:
            return  # no vectors here
        with self.db.lock:
            recent.sync(feed, force=True)
        self.recent_vectors = recent

    def sync_recent_vectors(self) -> None:
        """Bring the RAM copy up to date now (after this process wrote vectors)."""
        feed = self._vector_feed()
        if self.recent_vectors is not None and feed is not None:
            with self.db.lock:
                self.recent_vectors.sync(feed, force=True)

    def _synced_recent_vectors(self) -> RecentVectors | None:
        recent = self.recent_vectors
        feed = self._vector_feed()
        if recent is None or not recent.loaded or feed is None:
            return None
        try:
            recent.sync(feed)
        except self._stale_feed_errors():  # the vector table is being rebuilt
            return None
        return recent
