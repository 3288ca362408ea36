"""The vectors of recent memories, in RAM: what the worker's warm-tier searches read.

sqlite-vec scans vectors one by one: ~3.5 ms for the 7,000 vectors of a busy project's week, and a
prompt needs several searches (the prompt's candidates, then the neighbours of what the gate took,
for newer values) and dozens of single vectors (episodes, follow-ups); a shared PostgreSQL answers
each of those with a round trip. numpy does the same scan in ~0.2 ms and a single vector in a
dictionary lookup.

Memories created within `days` are held in float32 (the warm window and a margin: a week of heavy use
is ~15 MB); a search reaching further back (an explicit reference to the past, `recall search`)
goes to the backend's index, unless RAM holds every vector: in a store of at most WHOLE_UP_TO memories
(~31 MB of vectors), in a young one (no memory older than the window), or where the backend keeps an int8
archive of the older ones (SQLite, up to its capabilities().archive_up_to memories). Each vector's kind is kept beside
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
from collections.abc import Iterable
from typing import Any, Protocol

import numpy as np

from ..timeparse import DAY


class VectorFeed(Protocol):
    """What a backend offers a RAM copy to follow it: its vectors since a moment, those of some memories,
    and a log of which memories' vectors changed (sqlite/vectors.py, postgres/feed.py)."""

    def last_change(self) -> Any: ...  # a token that changes whenever a vector may have changed

    def changes_since(self, token: Any) -> tuple | None: ...  # (the new token, changed ids), or None: reload

    def rows_of(self, memory_ids: list[int]) -> list[tuple]: ...  # (id, project, created_at, vector, kind)

    def rows_since(self, since: float) -> list[tuple]: ...

    def has_vector_before(self, moment: float) -> bool: ...

    def count_memories(self, most: int) -> int: ...  # memories here, counted up to `most` (cheap on a big store)


# A store this small is held whole, whatever its memories' age: an all-time search (`recall search`) then reads RAM
# as the prompt's does (10k memories: sqlite-vec scans them in ~7 ms, numpy in under 1 ms; 20k vectors are ~31 MB).
WHOLE_UP_TO = 20_000
# A bigger one keeps its window in float32 and, where the backend asks for it (SQLite: storage/ram.py), every older
# vector in int8, a quarter of the size (one scale per vector, |error| of a cosine <= 0.002): all-time searches and the
# newer-value checks of old memories read RAM instead of scanning sqlite-vec. At 100k memories a search's vector step
# took 77 ms and its newer-value checks 45 ms more; the int8 archive is read in ~7 ms and holds ~40 MB.
SYNC_SECONDS = 0.05  # a search sees vectors written elsewhere this fresh (the worker's own: at once)
RELOAD_AFTER = DAY  # the window slides: reload (dropping what aged out) this often
RELOAD_BATCH = 4096  # vectors a reload puts in at a time
CHUNK = 8192  # int8 rows turned into floats at a time (a product over all of them at once would copy them all)
# Past this many int8 rows a search first keeps, for each query, the PREFILTER rows whose signs agree with it most (a
# Hamming distance over 48 bytes a vector: ~2 ms at 100k, where turning every row into floats took ~9), and only those
# are multiplied. Measured on 10,000 real vectors, the best 120 by the full product were found 99.6 % of the time with
# 2,000 kept (and on the 100k bench store as often as without it).
PREFILTER_FROM, PREFILTER = 40_000, 4_000


class VectorTable:
    """Vectors with what a search filters on (memory id, creation time, project, kind, alive), one row each, in
    float32 or, `quantized`, in int8 with a scale per row."""

    ARRAYS = ("matrix", "scales", "signs", "ids", "created", "project_codes", "kind_codes", "alive")

    def __init__(self, dim: int, quantized: bool, capacity: int = 64):
        self.dim, self.quantized = dim, quantized
        self.matrix = np.zeros((capacity, dim), dtype=np.int8 if quantized else np.float32)
        self.scales = np.ones(capacity, dtype=np.float32)
        self.signs = np.zeros((capacity if quantized else 0, -(-dim // 64)), dtype=np.uint64)  # int8 rows' sign bits
        self.ids = np.zeros(capacity, dtype=np.int64)
        self.created = np.zeros(capacity, dtype=np.float64)
        self.project_codes = np.zeros(capacity, dtype=np.int32)
        self.kind_codes = np.zeros(capacity, dtype=np.int32)
        self.alive = np.zeros(capacity, dtype=bool)
        self.size = 0
        self.row_of: dict[int, int] = {}

    def put(self, memory_id: int, vector: np.ndarray | bytes, created_at: float, project_code: int, kind_code: int) -> None:
        row = self.row_of.get(memory_id)
        if row is None:
            if self.size == len(self.ids):
                self._grow()
            row, self.size = self.size, self.size + 1
            self.row_of[memory_id] = row
        self._fill(slice(row, row + 1), [memory_id], np.asarray(vector, dtype=np.float32)[None, :], [created_at],
                   [project_code], [kind_code])

    def put_many(self, ids: list[int], vectors: np.ndarray, created: list[float], project_codes: list[int],
                 kind_codes: list[int]) -> None:
        """Rows for memories not held yet (a reload), in one go: the same rows as put would make one by one (and, for
        a memory held already or twice in `ids`, put it is)."""
        if len(set(ids)) < len(ids) or any(memory_id in self.row_of for memory_id in ids):
            for k, memory_id in enumerate(ids):
                self.put(memory_id, vectors[k], created[k], project_codes[k], kind_codes[k])
            return
        n = len(ids)
        while self.size + n > len(self.ids):
            self._grow()
        self._fill(slice(self.size, self.size + n), ids, vectors, created, project_codes, kind_codes)
        self.row_of.update(zip(ids, range(self.size, self.size + n)))
        self.size += n

    def _fill(self, rows: slice, ids, vectors, created, project_codes, kind_codes) -> None:
        if self.quantized:
            scales = np.abs(vectors).max(axis=1).astype(np.float64) / 127.0  # one scale a row, 1 for a zero vector
            scales[scales == 0] = 1.0
            scales = scales.astype(np.float32)
            self.matrix[rows] = np.round(vectors / scales[:, None]).astype(np.int8)
            self.scales[rows] = scales
            self.signs[rows] = sign_bits(vectors)
        else:
            self.matrix[rows] = vectors
        self.ids[rows] = ids
        self.created[rows] = created
        self.project_codes[rows] = project_codes
        self.kind_codes[rows] = kind_codes
        self.alive[rows] = True

    def drop(self, memory_id: int) -> bool:
        row = self.row_of.pop(memory_id, None)
        if row is not None:
            self.alive[row] = False
        return row is not None

    def get(self, memory_id: int) -> bytes | None:
        """A float32 row's vector (an int8 one is only near it: the backend answers for those)."""
        row = self.row_of.get(memory_id)
        return None if row is None or self.quantized else self.matrix[row].tobytes()

    def _grow(self) -> None:
        capacity = len(self.ids) * 2
        for name in self.ARRAYS:
            old = getattr(self, name)
            if not len(old) and name == "signs":
                continue  # a float32 table keeps no sign bits
            new = np.zeros((capacity,) + old.shape[1:], dtype=old.dtype)
            new[: len(old)] = old
            setattr(self, name, new)

    def similarities(self, queries: np.ndarray, project_code: int | None, since: float | None, until: float | None,
                     kind_codes: list[int] | None) -> tuple[np.ndarray, np.ndarray]:
        """(memory ids, their cosine similarity to each query: rows x queries) of the live rows that pass the filters.
        Reading the matrix is the cost (~1 ms for 7,000 float32 vectors): every filter that leaves rows out before
        the product pays."""
        n = self.size
        mask = self.alive[:n].copy()
        if project_code is not None:
            mask &= self.project_codes[:n] == project_code
        if since is not None:
            mask &= self.created[:n] >= since
        if until is not None:
            mask &= self.created[:n] <= until
        if kind_codes is not None:  # a comparison per kind: np.isin sorts, 20x slower for the two or three asked
            kinds = self.kind_codes[:n]
            wanted = np.zeros(n, dtype=bool)
            for code in kind_codes:
                wanted |= kinds == code
            mask &= wanted
        rows = np.flatnonzero(mask)
        if not len(rows):
            return self.ids[:0], np.zeros((0, queries.shape[1]), dtype=np.float32)
        if not self.quantized:
            # A few rows are gathered first, most rows are not.
            found = self.matrix[rows] @ queries if len(rows) * 4 < n else (self.matrix[:n] @ queries)[rows]
            return self.ids[rows], found
        if len(rows) > PREFILTER_FROM and hasattr(np, "bitwise_count"):  # numpy 2.0+
            rows = self._closest_signs(rows, queries)
        found = np.empty((len(rows), queries.shape[1]), dtype=np.float32)
        for start in range(0, len(rows), CHUNK):
            part = rows[start:start + CHUNK]
            found[start:start + len(part)] = (self.matrix[part].astype(np.float32) @ queries) * self.scales[part, None]
        return self.ids[rows], found

    def _closest_signs(self, rows, queries):
        """Of these rows, those among the PREFILTER closest to some query by their sign bits."""
        signs = self.signs[rows]
        kept = [np.argpartition(np.bitwise_count(signs ^ sign_bits(query)).sum(axis=1, dtype=np.int32), PREFILTER)
                [:PREFILTER] for query in queries.T]
        return rows[np.unique(np.concatenate(kept))]

    def nbytes(self) -> int:
        return sum(getattr(self, name).nbytes for name in self.ARRAYS)


def sign_bits(vectors: np.ndarray) -> np.ndarray:
    """A vector's signs, 64 to a word (the last one padded with zeros); of a matrix, each row's."""
    packed = np.packbits(vectors > 0, axis=-1)
    padding = [(0, 0)] * (packed.ndim - 1) + [(0, -packed.shape[-1] % 8)]
    return np.ascontiguousarray(np.pad(packed, padding)).view(np.uint64)


class RecentVectors:
    def __init__(self, days: float, dim: int, whole_up_to: int = WHOLE_UP_TO, archive_up_to: int = 0):
        self.days = days
        self.dim = dim
        self.whole_up_to = whole_up_to
        self.archive_up_to = archive_up_to  # a store of more memories keeps only its window (0: never an archive)
        self.lock = threading.RLock()
        self.loaded = False
        self.start = 0.0  # vectors of memories created from here on are all held in float32
        self.complete = False  # ...and every older one is in the int8 archive, if any: RAM holds every vector
        self.loaded_at = 0.0
        self.seq = None  # the feed's token of the last change applied
        self.synced_at = 0.0
        self._clear(64, archive=False)

    def _clear(self, capacity: int, archive: bool) -> None:
        self.window = VectorTable(self.dim, quantized=False, capacity=capacity)
        self.archive = VectorTable(self.dim, quantized=True) if archive else None
        self.codes: dict[str, int] = {}  # project -> code
        self.kinds: dict[str | None, int] = {}  # kind -> code

    @property
    def row_of(self) -> dict[int, int]:
        """memory id -> row of the vectors held in float32 (the window)."""
        return self.window.row_of

    # --- keeping up with the database --------------------------------------------------------------

    def fresh(self) -> bool:
        """Synced within SYNC_SECONDS (a search may read it without asking the database)."""
        return self.loaded and time.monotonic() - self.synced_at < SYNC_SECONDS

    def sync(self, index: VectorFeed, *, force: bool = False) -> None:
        """Apply the vector writes logged since the last sync (everything, the first time). The window slides (a
        reload, RELOAD_AFTER) only when `force`d, as the worker's background thread does after writing vectors:
        a search never waits for one (a big store's reload reads every vector, ~1.2 s at 100k)."""
        if not force and self.fresh():
            return
        now = time.monotonic()
        if not self.loaded or (force and time.time() - self.loaded_at > RELOAD_AFTER):
            self._reload(index)
            return
        with self.lock:
            self.synced_at = now
            if index.last_change() == self.seq:
                return
            changes = index.changes_since(self.seq)
            if changes is None:  # the log was cut short (the index was rebuilt): read it all again
                self._reload(index)
                return
            self.seq, changed = changes
            changed = list(dict.fromkeys(changed))
            for memory_id in changed:
                self._drop(memory_id)
            self._put_many(list(index.rows_of(changed)))

    def _reload(self, index: VectorFeed) -> None:
        """Read every vector the copy holds into new tables, then swap them in: searches go on meanwhile with the old
        ones, and what was written during the read is applied by the next sync (from the token taken first)."""
        seq = index.last_change()
        loaded_at = time.time()
        start = loaded_at - self.days * DAY
        most = max(self.whole_up_to, self.archive_up_to)
        size = index.count_memories(most + 1) if most else 0
        if self.whole_up_to and size <= self.whole_up_to:
            start = 0.0  # a small store: every vector, in float32
        fresh = RecentVectors(self.days, self.dim, self.whole_up_to, self.archive_up_to)
        fresh.start = start
        fresh._clear(64, archive=self.archive_up_to > 0 and start > 0 and size <= self.archive_up_to)
        fresh.complete = fresh.archive is not None or not index.has_vector_before(start)
        batch = []
        for row in index.rows_since(0.0 if fresh.archive is not None else start):  # as they come: no list of all
            batch.append(row)
            if len(batch) == RELOAD_BATCH:
                fresh._put_many(batch)
                batch = []
        fresh._put_many(batch)
        with self.lock:
            self.window, self.archive, self.codes, self.kinds = fresh.window, fresh.archive, fresh.codes, fresh.kinds
            self.start, self.complete, self.loaded_at = start, fresh.complete, loaded_at
            self.seq, self.synced_at, self.loaded = seq, time.monotonic(), True

    def _put_many(self, rows: list[tuple]) -> None:
        """Put rows of (memory id, project, created_at, embedding, kind) into the window or the archive by their age, a
        table's rows in one go (a reload reads every vector: one by one that took 4-6 s at 100k)."""
        tables: dict[int, tuple[VectorTable, list]] = {}
        for memory_id, project, created_at, embedding, kind in rows:
            if len(embedding) != self.dim * 4:
                continue
            table = self.window if created_at >= self.start else self.archive
            if table is None:
                self.complete = False  # e.g. an import of old transcripts
                continue
            codes = (self.codes.setdefault(project, len(self.codes) + 1),
                     self.kinds.setdefault(kind, len(self.kinds) + 1))
            tables.setdefault(id(table), (table, []))[1].append((memory_id, created_at, embedding, *codes))
        for table, held in tables.values():
            ids, created, embeddings, project_codes, kind_codes = zip(*held)
            vectors = np.frombuffer(b"".join(embeddings), dtype=np.float32).reshape(len(ids), self.dim)
            table.put_many(list(ids), vectors, list(created), list(project_codes), list(kind_codes))

    def _drop(self, memory_id: int) -> None:
        if not self.window.drop(memory_id) and self.archive is not None:
            self.archive.drop(memory_id)

    # --- reading -----------------------------------------------------------------------------------

    def covers(self, since: float | None) -> bool:
        """Does RAM hold every vector a search from `since` on (None: all time) needs?"""
        return self.loaded and (self.complete or (since is not None and since >= self.start))

    def get(self, memory_id: int) -> bytes | None:
        """A vector of the window (one of the int8 archive only approximates its vector: the backend has it)."""
        with self.lock:
            return self.window.get(memory_id)

    def nearest(self, vector: bytes, k: int, project: str | None, since: float | None,
                until: float | None) -> dict[int, float]:
        """memory id -> cosine similarity of the k nearest (the vectors are unit length)."""
        return self.nearest_each([vector], k, project, since, until)[0]

    def nearest_each(self, vectors: list[bytes], k: int, project: str | None, since: float | None,
                     until: float | None, kinds: tuple[str, ...] | None = None) -> list[dict[int, float]]:
        """`nearest` for several query vectors at once (one pass over the window, and over the archive when the
        search reaches before the window), of these kinds only if given."""
        queries = np.stack([np.frombuffer(v, dtype=np.float32) for v in vectors], axis=1)
        with self.lock:
            project_code = None if project is None else self.codes.get(project, -1)
            kind_codes = None if kinds is None else [self.kinds[kind] for kind in kinds if kind in self.kinds]
            ids, similarity = self.window.similarities(queries, project_code, since, until, kind_codes)
            if self.archive is not None and (since is None or since < self.start):
                old_ids, old = self.archive.similarities(queries, project_code, since, until, kind_codes)
                ids, similarity = np.concatenate([ids, old_ids]), np.concatenate([similarity, old])
        found = []
        for column in similarity.T:
            best = np.argpartition(-column, k - 1)[:k] if len(column) > k else np.arange(len(column))
            found.append({int(ids[i]): float(column[i]) for i in best})
        return found

    def drop(self, memory_ids: Iterable[int]) -> None:
        """Forget these vectors now (this process deleted their memories)."""
        with self.lock:
            for memory_id in memory_ids:
                self._drop(memory_id)

    def nbytes(self) -> int:
        return self.window.nbytes() + (self.archive.nbytes() if self.archive is not None else 0)
