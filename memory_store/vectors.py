"""The vector index: sqlite-vec `vec0`, cosine distance, partitioned by project.

Measured on 100k vectors spread over 10 projects (2 cores): a KNN query scoped by a
`project` partition key takes ~6 ms, against ~40 ms for the same filter as a metadata
column; `created_at` is a metadata column, so the warm tier's time window narrows the
scan further (~3 ms). See `recall bench vectors`.

The table holds one model's vectors only. `vector_index` records which model and
dimension; a different configured model makes the index stale until `recall reindex`
rebuilds it (vectors of two models are never compared).
"""

from __future__ import annotations

import time

import apsw

TABLE = "memory_vectors"


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

    def matches(self, model: str, dim: int) -> bool:
        return self.exists() and self.info() == (model, dim)

    def create(self, model: str, dim: int) -> None:
        """(Re)create the table for `model`; every memory goes back on the embedding queue."""
        self.conn.execute(f"DROP TABLE IF EXISTS {TABLE}")
        self.conn.execute(
            f"CREATE VIRTUAL TABLE {TABLE} USING vec0("
            "memory_id INTEGER PRIMARY KEY, project TEXT PARTITION KEY, created_at FLOAT, "
            f"embedding FLOAT[{int(dim)}] distance_metric=cosine)"
        )
        self.conn.execute(
            "INSERT OR REPLACE INTO vector_index(id, model, dim, created_at) VALUES (1, ?, ?, ?)",
            (model, dim, time.time()),
        )
        self.conn.execute("INSERT OR IGNORE INTO embed_queue(memory_id) SELECT id FROM memories")

    def add(self, rows: list[tuple[int, str, float, bytes]]) -> None:
        """rows: (memory_id, project, created_at, embedding)."""
        for memory_id, project, created_at, embedding in rows:
            self.conn.execute(f"DELETE FROM {TABLE} WHERE memory_id = ?", (memory_id,))
            self.conn.execute(
                f"INSERT INTO {TABLE}(memory_id, project, created_at, embedding) VALUES (?, ?, ?, ?)",
                (memory_id, project, float(created_at), embedding),
            )

    def delete(self, memory_ids: list[int]) -> None:
        for memory_id in memory_ids:
            self.conn.execute(f"DELETE FROM {TABLE} WHERE memory_id = ?", (memory_id,))

    def get(self, memory_id: int) -> bytes | None:
        row = self.conn.execute(f"SELECT embedding FROM {TABLE} WHERE memory_id = ?", (memory_id,)).fetchone()
        return row[0] if row else None

    def count(self) -> int:
        return self.conn.execute(f"SELECT count(*) FROM {TABLE}").fetchone()[0]

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
            sql += " AND created_at >= ?"
            args.append(float(since))
        if until is not None:
            sql += " AND created_at <= ?"
            args.append(float(until))
        return {memory_id: 1.0 - distance for memory_id, distance in self.conn.execute(sql, args)}
