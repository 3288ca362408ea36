"""The vector index: sqlite-vec `vec0`, cosine distance, partitioned by project and week.

sqlite-vec searches by brute force, so what matters is how much of the table a query
must scan. Measured on 100k 384-dim vectors of one project spread over a year (2 cores):
project partition only 55 ms; plus a created_at metadata filter for the last 7 days
22 ms; plus a `week` partition key, the same window 0.4-1.4 ms. So the table has two
partition keys, `project` and `week` (unix days // 7): a windowed search (the warm tier,
"in July 2022") names its weeks; an all-time search scans the project.

vec0 allocates storage a chunk at a time in every partition: with its default of 1,024 vectors a chunk,
a year of weeks in a few projects cost ~1.5 MB per (project, week) however few memories it held (343 MB
for 2,000 memories in `recall bench size`). Chunks of CHUNK_SIZE vectors search as fast here and waste at
most ~100 KB a partition. A table of the previous layout is copied into this one (no re-embedding).

The table holds one model's vectors only. `vector_index` records which model and
dimension; a different configured model makes the index stale until `recall reindex`
rebuilds it (vectors of two models are never compared).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any, cast

import apsw

TABLE = "vectors"  # `memory_vectors` before chunks were sized (PREVIOUS_TABLE: copied over, then dropped)
PREVIOUS_TABLE = "memory_vectors"
CHUNK_SIZE = 64
CHANGES = "vector_changes"  # (seq, memory_id): every write below is logged there (0: the whole table)
CHANGES_KEPT = 200_000  # older log rows are dropped; a reader that far behind reloads everything
# What a RAM copy holds of each vector (recent_vectors.py): the vector, where and when, and its memory's kind.
ROWS_WITH_KIND = (f"SELECT v.memory_id, v.project, v.created_at, v.embedding, m.kind FROM {TABLE} v "
                  "LEFT JOIN memories m ON m.id = v.memory_id")
WEEK = 7 * 86400
MAX_WEEKS_PER_QUERY = 26  # a longer window scans the whole project instead


LAYOUT_MARK = "week integer partition key"  # what distinguishes the current table layout (and the previous one)


def week_of(timestamp: float) -> int:
    return int(timestamp // WEEK)


class VectorIndex:
    def __init__(self, conn: apsw.Connection):
        self.conn = conn

    def info(self) -> tuple[str, int] | None:
        row = self.conn.execute("SELECT model, dim FROM vector_index WHERE id = 1").fetchone()
        return (row[0], row[1]) if row else None

    def exists(self) -> bool:
        return bool(
            self.conn.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name=?", (TABLE,)).fetchone()
        )

    def current(self) -> bool:
        """The table exists with this version's layout (an older layout is rebuilt, not migrated:
        vectors are derived data, re-embedded from the memories)."""
        row = self.conn.execute("SELECT sql FROM sqlite_master WHERE type='table' AND name=?", (TABLE,)).fetchone()
        return row is not None and LAYOUT_MARK in row[0].lower()

    def matches(self, model: str, dim: int) -> bool:
        return self.current() and self.info() == (model, dim)

    def create(self, model: str, dim: int) -> None:
        """(Re)create the table for `model`; every memory goes back on the embedding queue."""
        self._create_table(dim)
        self.conn.execute(
            "INSERT OR REPLACE INTO vector_index(id, model, dim, created_at) VALUES (1, ?, ?, ?)",
            (model, dim, time.time()),
        )
        self.conn.execute("INSERT OR IGNORE INTO embed_queue(memory_id) SELECT id FROM memories")
        self._log_changes([0])

    def _create_table(self, dim: int, *, drop_previous: bool = True) -> None:
        for name in (TABLE, PREVIOUS_TABLE) if drop_previous else (TABLE,):
            self.conn.execute(f"DROP TABLE IF EXISTS {name}")
        self.conn.execute(
            f"CREATE VIRTUAL TABLE {TABLE} USING vec0("
            "memory_id INTEGER PRIMARY KEY, project TEXT PARTITION KEY, week INTEGER PARTITION KEY, created_at FLOAT, "
            f"embedding FLOAT[{int(dim)}] distance_metric=cosine, chunk_size={CHUNK_SIZE})"
        )

    def previous_table_to_copy(self) -> bool:
        """Is there a table of the previous layout (same vectors, default chunks) and none of this one?"""
        row = self.conn.execute("SELECT sql FROM sqlite_master WHERE type='table' AND name=?",
                                (PREVIOUS_TABLE,)).fetchone()
        return row is not None and LAYOUT_MARK in row[0].lower() and not self.exists()

    def copy_previous_table(self) -> int:
        """Move the vectors of the previous table into this layout (no re-embedding); returns how many."""
        info = self.info()
        dim = info[1] if info else int(_value(self.conn, f"SELECT vec_length(embedding) FROM {PREVIOUS_TABLE} LIMIT 1"))
        self._create_table(dim, drop_previous=False)
        self.conn.execute(f"INSERT INTO {TABLE}(memory_id, project, week, created_at, embedding) "
                          f"SELECT memory_id, project, week, created_at, embedding FROM {PREVIOUS_TABLE}")
        copied = self.count()
        self.conn.execute(f"DROP TABLE {PREVIOUS_TABLE}")
        self._log_changes([0])
        return copied

    def add(self, rows: list[tuple[int, str, float, bytes]]) -> None:
        """rows: (memory_id, project, created_at, embedding)."""
        for memory_id, project, created_at, embedding in rows:
            self.conn.execute(f"DELETE FROM {TABLE} WHERE memory_id = ?", (memory_id,))
            self.conn.execute(
                f"INSERT INTO {TABLE}(memory_id, project, week, created_at, embedding) VALUES (?, ?, ?, ?, ?)",
                (memory_id, project, week_of(created_at), float(created_at), embedding),
            )
        self._log_changes([row[0] for row in rows])

    def delete(self, memory_ids: list[int]) -> None:
        for memory_id in memory_ids:
            self.conn.execute(f"DELETE FROM {TABLE} WHERE memory_id = ?", (memory_id,))
        self._log_changes(memory_ids)

    def _log_changes(self, memory_ids: list[int]) -> None:
        if not memory_ids:
            return
        self.conn.executemany(f"INSERT INTO {CHANGES}(memory_id) VALUES (?)", [(i,) for i in memory_ids])
        last = self.conn.last_insert_rowid()
        if last % 1000 < len(memory_ids):  # now and then, drop what no reader needs any more
            self.conn.execute(f"DELETE FROM {CHANGES} WHERE seq <= ?", (last - CHANGES_KEPT,))

    def last_change(self) -> int:
        return int(_value(self.conn, f"SELECT coalesce(max(seq), 0) FROM {CHANGES}"))

    def changes_since(self, seq: int) -> tuple[int, list[int]] | None:
        """(the latest seq, the memory ids changed after `seq`), or None when the log no longer reaches
        back that far or the whole table changed (reload everything)."""
        rows = self.conn.execute(f"SELECT seq, memory_id FROM {CHANGES} WHERE seq > ? ORDER BY seq", (seq,)).fetchall()
        if not rows:
            return seq, []
        first = int(_value(self.conn, f"SELECT min(seq) FROM {CHANGES}"))
        if first > seq + 1 or any(memory_id == 0 for _, memory_id in rows):
            return None
        return cast(int, rows[-1][0]), [cast(int, memory_id) for _, memory_id in rows]

    def rows_of(self, memory_ids: list[int]) -> list[tuple[int, str, float, bytes, str | None]]:
        """(memory_id, project, created_at, embedding, kind) of those of these memories that have a vector."""
        found = []
        for memory_id in memory_ids:
            row = self.conn.execute(f"{ROWS_WITH_KIND} WHERE v.memory_id = ?", (memory_id,)).fetchone()
            if row:
                found.append(row)
        return found

    def rows_since(self, since: float) -> Iterator[tuple]:
        """(memory_id, project, created_at, embedding, kind) of every vector of a memory created after `since`, as the
        rows come (a whole store's are ~160 MB as one list at 100k memories)."""
        return self.conn.execute(f"{ROWS_WITH_KIND} WHERE v.created_at >= ?", (float(since),))

    def has_vector_before(self, moment: float) -> bool:
        """Might a vector of a memory created before `moment` exist? Asked of the memories' time index
        (a scan of vec0 took 110 ms at 100k): a memory without a vector only makes the answer cautious."""
        return self.conn.execute("SELECT 1 FROM memories WHERE created_at < ? LIMIT 1", (float(moment),)).fetchone() \
            is not None

    def count_memories(self, most: int) -> int:
        return int(_value(self.conn, "SELECT count(*) FROM (SELECT 1 FROM memories LIMIT ?)", (int(most),)))

    def get(self, memory_id: int) -> bytes | None:
        row = self.conn.execute(f"SELECT embedding FROM {TABLE} WHERE memory_id = ?", (memory_id,)).fetchone()
        return row[0] if row else None

    def count(self) -> int:
        return int(_value(self.conn, f"SELECT count(*) FROM {TABLE}"))

    def ids(self) -> set[int]:
        return {row[0] for row in self.conn.execute(f"SELECT memory_id FROM {TABLE}")}

    def nearest(
        self, embedding: bytes, k: int, project: str | None = None, since: float | None = None,
        until: float | None = None,
    ) -> dict[int, float]:
        """memory_id -> cosine similarity of the k nearest vectors (scoped when asked)."""
        sql = f"SELECT memory_id, distance FROM {TABLE} WHERE embedding MATCH ? AND k = ?"
        args: list = [embedding, int(k)]
        if project is not None:
            sql += " AND project = ?"
            args.append(project)
            if since is not None:
                first, last = week_of(since), week_of(until if until is not None else time.time() + WEEK)
                if last - first < MAX_WEEKS_PER_QUERY:
                    # k nearest per week partition; merged below
                    sql += f" AND week IN ({','.join(str(w) for w in range(first, last + 1))})"
        if since is not None:
            sql += " AND created_at >= ?"
            args.append(float(since))
        if until is not None:
            sql += " AND created_at <= ?"
            args.append(float(until))
        rows = sorted(self.conn.execute(sql, args), key=lambda row: row[1])[: int(k)]
        return {memory_id: 1.0 - distance for memory_id, distance in rows}


def _value(conn: apsw.Connection, sql: str, args: tuple = ()) -> Any:
    """The one value of a statement that always returns a row (an aggregate)."""
    row = conn.execute(sql, args).fetchone()
    if row is None:
        raise LookupError(f"no row from {sql[:60]!r}")
    return row[0]
