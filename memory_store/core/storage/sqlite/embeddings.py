"""The embedding queue and the vector table of the SQLite backend (sqlite-vec, vectors.py)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..base import marks
from .state import SqliteState

if TYPE_CHECKING:
    from ...embedding.embed import Embedder


class SqliteEmbeddings(SqliteState):
    def model_mismatch(self, embedder: Embedder | None) -> str | None:
        return None  # a file re-embeds for any model (reindex); only a team's database fixes one

    def vectors_ready(self) -> bool:
        """Vectors can be stored here (sqlite-vec loaded)."""
        return self.vectors is not None

    def dense_ready(self, embedder: Embedder | None) -> bool:
        """Vectors can be searched: extension loaded and the index holds this model's vectors."""
        return bool(self.vectors and embedder and self.vectors.matches(embedder.name, embedder.dim))

    def vector_model(self) -> str | None:
        """The model whose vectors the index holds (None: no index yet)."""
        return (self.vectors.info() or (None,))[0] if self.vectors else None

    def vector_count(self) -> int:
        return self.vectors.count() if self.vectors and self.vectors.exists() else 0

    def pending_embeddings(self) -> int:
        return self.db.value("SELECT count(*) FROM embed_queue", default=0)

    def unembedded_ids(self, most: int) -> list[int]:
        return [memory_id for (memory_id,) in self.db.all("SELECT memory_id FROM embed_queue LIMIT ?", (most,))]

    def ensure_vector_index(self, model: str, dim: int) -> None:
        """Create the vector table for a model if there is none (a different model needs reindex);
        a table of an older layout is rebuilt."""
        if not self.vectors:
            return
        with self.db.write():
            if self.vectors.previous_table_to_copy():
                copied = self.vectors.copy_previous_table()
                self.log.info("vector_index_copied", vectors=copied, reason="smaller chunks per partition")
            if not self.vectors.exists():
                self.vectors.create(model, dim)
            elif not self.vectors.current():
                self.log.info("vector_index_rebuilt", reason="older table layout")
                self.vectors.create(*(self.vectors.info() or (model, dim)))

    def reset_vector_index(self, model: str, dim: int) -> None:
        """Drop every vector and queue every memory for embedding with `model`."""
        with self.db.write():
            self._vector_index().create(model, dim)
            self.db.run("UPDATE knowledge SET embedding = NULL")  # another model's vectors: made again
    def embedding_batch(self, size: int) -> list[tuple[int, str, float, str]]:
        """The next queued memories to embed: (id, project, created_at, text). Superseded memories are
        never searched, so they leave the queue instead."""
        with self.db.lock:
            self.db.run("DELETE FROM embed_queue WHERE memory_id IN (SELECT q.memory_id FROM embed_queue q "
                        "JOIN memories m ON m.id = q.memory_id WHERE m.superseded_by IS NOT NULL)")
            return self.db.all("SELECT m.id, m.project, m.created_at, m.text FROM embed_queue q "
                               "JOIN memories m ON m.id = q.memory_id ORDER BY q.memory_id LIMIT ?", (size,))

    def save_embeddings(self, rows: list[tuple[int, str, float, bytes]], done_ids: list[int], model: str,
                        supersede: Callable[[list], Any] | None = None) -> list[tuple[int, str, float, bytes]]:
        """Store vectors (id, project, created_at, vector) of `model` for memories that still exist, take
        `done_ids` off the queue, and, in the same transaction, let `supersede(added)` mark older
        near-duplicates. Returns the rows actually added."""
        with self.db.write():
            ids = [r[0] for r in rows]
            still_there = {r[0] for r in self.db.all(f"SELECT id FROM memories WHERE id IN ({marks(ids)})", ids)} \
                if ids else set()
            added = [r for r in rows if r[0] in still_there]
            self._vector_index().add(added)
            self.db.many("DELETE FROM embed_queue WHERE memory_id = ?", [(i,) for i in done_ids])
            if supersede is not None:
                supersede(added)
        return added
