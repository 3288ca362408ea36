"""The vectors of recent memories, in RAM: what the worker's warm-tier searches read.

sqlite-vec scans vectors one by one: ~3.5 ms for the 7,000 vectors of a busy project's week, and a
prompt needs several searches (the prompt's candidates, then the neighbours of what the gate took,
for newer values) and dozens of single vectors (episodes, follow-ups); a shared PostgreSQL answers
each of those with a round trip. numpy does the same scan in ~0.2 ms and a single vector in a
dictionary lookup.

Only memories created within `days` are held (the warm window and a margin: a week of heavy use
is ~15 MB); a search reaching further back (an explicit reference to the past, `recall search`)
goes to the backend's index, unless RAM holds every vector: in a store of at most WHOLE_UP_TO memories
(~31 MB of vectors), or a young one (no memory older than the window). Each vector's kind is kept beside
it, so a search for statements skips tool outputs before the product. The copy follows the database
through a log every vector write appends to (the backend's VectorFeed: sqlite/vectors.py,
postgres/feed.py): `sync` reads what was logged since the last sync, so vectors written by another
process (an import, a forget, a teammate) are picked up too, and a forgotten memory's vector leaves RAM
with its row. The worker's embedding thread syncs after each
batch; searches sync at most every SYNC_SECONDS.
"""

from __future__ import annotations

import threading
import time
from typing import Protocol

import numpy as np

from ..timeparse import DAY


class VectorFeed(Protocol):
    """What a backend offers a RAM copy to follow it: its vectors since a moment, those of some memories,
    and a log of which memories' vectors changed (sqlite/vectors.py, postgres/feed.py)."""

    def last_change(self): ...  # a token that changes whenever a vector may have changed

    def changes_since(self, token) -> tuple | None: ...  # (the new token, changed ids), or None: reload

    def rows_of(self, memory_ids: list[int]) -> list[tuple]: ...  # (id, project, created_at, vector, kind)

    def rows_since(self, since: float) -> list[tuple]: ...

    def has_vector_before(self, moment: float) -> bool: ...

    def count_memories(self, most: int) -> int: ...  # memories here, counted up to `most` (cheap on a big store)


# A store this small is held whole, whatever its memories' age: an all-time search (`recall search`) then reads RAM
# as the prompt's does (10k memories: sqlite-vec scans them in ~7 ms, numpy in under 1 ms; 20k vectors are ~31 MB).
WHOLE_UP_TO = 20_000
SYNC_SECONDS = 0.05  # a search sees vectors written elsewhere this fresh (the worker's own: at once)
RELOAD_AFTER = DAY  # the window slides: reload (dropping what aged out) this often
ARRAYS = ("matrix", "ids", "created", "project_codes", "kind_codes", "alive")  # one row per vector


class RecentVectors:
    def __init__(self, days: float, dim: int, whole_up_to: int = WHOLE_UP_TO):
        self.days = days
        self.dim = dim
        self.whole_up_to = whole_up_to
        self.lock = threading.RLock()
        self.loaded = False
        self.start = 0.0  # vectors of memories created from here on are all held
        self.complete = False  # ...and there is no older vector: RAM holds every one
        self.loaded_at = 0.0
        self.seq = None  # the feed's token of the last change applied
        self.synced_at = 0.0
        self._clear(64)

    def _clear(self, capacity: int) -> None:
        self.matrix = np.zeros((capacity, self.dim), dtype=np.float32)
        self.ids = np.zeros(capacity, dtype=np.int64)
        self.created = np.zeros(capacity, dtype=np.float64)
        self.project_codes = np.zeros(capacity, dtype=np.int32)
        self.kind_codes = np.zeros(capacity, dtype=np.int32)
        self.alive = np.zeros(capacity, dtype=bool)
        self.size = 0
        self.row_of: dict[int, int] = {}
        self.codes: dict[str, int] = {}  # project -> code
        self.kinds: dict[str | None, int] = {}  # kind -> code

    # --- keeping up with the database --------------------------------------------------------------

    def sync(self, index: VectorFeed, *, force: bool = False) -> None:
        """Apply the vector writes logged since the last sync (everything, the first time)."""
        now = time.monotonic()
        if not force and self.loaded and now - self.synced_at < SYNC_SECONDS:
            return
        with self.lock:
            self.synced_at = now
            if not self.loaded or time.time() - self.loaded_at > RELOAD_AFTER:
                self._reload(index)
                return
            if index.last_change() == self.seq:
                return
            changes = index.changes_since(self.seq)
            if changes is None:
                self._reload(index)
                return
            self.seq, changed = changes
            changed = list(dict.fromkeys(changed))
            for memory_id in changed:
                self._drop(memory_id)
            for row in index.rows_of(changed):
                self._put(*row)

    def _reload(self, index: VectorFeed) -> None:
        seq = index.last_change()
        self.loaded_at = time.time()
        self.start = self.loaded_at - self.days * DAY
        if self.whole_up_to and index.count_memories(self.whole_up_to + 1) <= self.whole_up_to:
            self.start = 0.0  # a small store: every vector
        rows = index.rows_since(self.start)
        self._clear(max(64, int(len(rows) * 1.25)))
        for row in rows:
            self._put(*row)
        self.complete = not index.has_vector_before(self.start)
        self.seq, self.loaded = seq, True

    def _put(self, memory_id: int, project: str, created_at: float, embedding: bytes, kind: str | None) -> None:
        if created_at < self.start:
            self.complete = False  # e.g. an import of old transcripts
            return
        if len(embedding) != self.dim * 4:
            return
        row = self.row_of.get(memory_id)
        if row is None:
            if self.size == len(self.ids):
                self._grow()
            row, self.size = self.size, self.size + 1
            self.row_of[memory_id] = row
        self.matrix[row] = np.frombuffer(embedding, dtype=np.float32)
        self.ids[row] = memory_id
        self.created[row] = created_at
        self.project_codes[row] = self.codes.setdefault(project, len(self.codes) + 1)
        self.kind_codes[row] = self.kinds.setdefault(kind, len(self.kinds) + 1)
        self.alive[row] = True

    def _drop(self, memory_id: int) -> None:
        row = self.row_of.pop(memory_id, None)
        if row is not None:
            self.alive[row] = False

    def _grow(self) -> None:
        capacity = len(self.ids) * 2
        for name in ARRAYS:
            old = getattr(self, name)
            new = np.zeros((capacity,) + old.shape[1:], dtype=old.dtype)
            new[: len(old)] = old
            setattr(self, name, new)

    # --- reading -----------------------------------------------------------------------------------

    def covers(self, since: float | None) -> bool:
        """Does RAM hold every vector a search from `since` on (None: all time) needs?"""
        return self.loaded and (self.complete or (since is not None and since >= self.start))

    def get(self, memory_id: int) -> bytes | None:
        with self.lock:
            row = self.row_of.get(memory_id)
            return None if row is None else self.matrix[row].tobytes()

    def nearest(self, vector: bytes, k: int, project: str | None, since: float | None,
                until: float | None) -> dict[int, float]:
        """memory id -> cosine similarity of the k nearest (the vectors are unit length)."""
        return self.nearest_each([vector], k, project, since, until)[0]

    def nearest_each(self, vectors: list[bytes], k: int, project: str | None, since: float | None,
                     until: float | None, kinds: tuple[str, ...] | None = None) -> list[dict[int, float]]:
        """`nearest` for several query vectors at once (one pass over the matrix), of these kinds only
        if given. Reading the matrix is the cost (~1 ms for 7,000 vectors): every filter that
        leaves rows out before the product pays."""
        queries = np.stack([np.frombuffer(v, dtype=np.float32) for v in vectors], axis=1)
        with self.lock:
            n = self.size
            mask = self.alive[:n].copy()
            if project is not None:
                mask &= self.project_codes[:n] == self.codes.get(project, -1)
            if since is not None:
                mask &= self.created[:n] >= since
            if until is not None:
                mask &= self.created[:n] <= until
            if kinds is not None:
                mask &= np.isin(self.kind_codes[:n], [self.kinds[kind] for kind in kinds if kind in self.kinds])
            rows = np.flatnonzero(mask)
            if not len(rows):
                return [{} for _ in vectors]
            # Reading the matrix is the cost: a few rows are gathered first, most rows are not.
            similarity = self.matrix[rows] @ queries if len(rows) * 4 < n else (self.matrix[:n] @ queries)[rows]
            ids = self.ids[rows]
        found = []
        for column in similarity.T:
            best = np.argpartition(-column, k - 1)[:k] if len(column) > k else np.arange(len(column))
            found.append({int(ids[i]): float(column[i]) for i in best})
        return found

    def drop(self, memory_ids) -> None:
        """Forget these vectors now (this process deleted their memories)."""
        with self.lock:
            for memory_id in memory_ids:
                self._drop(memory_id)

    def nbytes(self) -> int:
        return sum(getattr(self, name).nbytes for name in ARRAYS)
