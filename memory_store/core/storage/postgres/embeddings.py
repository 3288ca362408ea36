"""Embeddings in the shared database: each memory's vector in its own row, with the model that made it.

The team's model and dimension are fixed at `recall team init`: a worker configured with another model
stores no vector and searches none (lexical search goes on), and says why; vectors of two models are
never compared. A memory waiting for its vector is one whose `embedding` is NULL; each worker embeds
its own role's memories (it may change no others).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..base import marks
from .state import PgState

if TYPE_CHECKING:
    from ...embedding.embed import Embedder


class PgEmbeddings(PgState):
    def vectors_ready(self) -> bool:
        return True  # pgvector is part of the schema

    def dense_ready(self, embedder: Embedder | None) -> bool:
        model, dim = self.team()
        return bool(embedder and model == embedder.name and dim == embedder.dim)

    def model_mismatch(self, embedder: Embedder | None) -> str | None:
        """Why this worker's model cannot be used with the team's vectors (None: it can)."""
        model, dim = self.team()
        if embedder is None or (model == embedder.name and dim == embedder.dim):
            return None
        return (f"the team's database holds vectors of {model} ({dim} dimensions) and this recall is set to "
                f"{embedder.name} ({embedder.dim}): set embedding.model to {model} in config.json; until then "
                "search is lexical only")

    def vector_model(self) -> str | None:
        return self.team()[0]

    def vector_count(self) -> int:
        return self.db.value("SELECT count(*) FROM memories WHERE embedding IS NOT NULL", default=0)

    def pending_embeddings(self) -> int:
        return self.db.value(f"SELECT count(*) FROM memories WHERE embedding IS NULL AND superseded_by IS NULL "
                             f"AND {self.db.dialect.mine}", default=0)

    def ensure_vector_index(self, model: str, dim: int) -> None:
        """Nothing to create (the schema holds the index); a worker of another model is told once."""
        if model != self.team()[0] or dim != self.team_dim:
            self.log.warning("model_mismatch", team_model=self.team_model, team_dim=self.team_dim, model=model,
                             dim=dim)

    def reset_vector_index(self, model: str, dim: int) -> None:
        """Re-embed this role's memories (`recall reindex`); the team's model is the only one stored."""
        team_model, team_dim = self.team()
        if (model, dim) != (team_model, team_dim):
            raise ValueError(f"the team's database holds vectors of {team_model} ({team_dim} dimensions): "
                             f"{model} cannot be stored there")
        with self.db.write():
            self.db.run(f"UPDATE memories SET embedding = NULL, embedding_model = NULL WHERE {self.db.dialect.mine}")
            self.db.run(f"UPDATE knowledge SET embedding = NULL WHERE {self.db.dialect.mine}")

    def unembedded_ids(self, most: int) -> list[int]:
        return [memory_id for (memory_id,) in self.db.all(
            f"SELECT id FROM memories WHERE embedding IS NULL AND superseded_by IS NULL AND {self.db.dialect.mine} LIMIT ?",
            (most,))]

    def embedding_batch(self, size: int) -> list[tuple[int, str, float, str]]:
        return self.db.all(f"SELECT id, project, created_at, text FROM memories WHERE embedding IS NULL "
                           f"AND superseded_by IS NULL AND {self.db.dialect.mine} ORDER BY id LIMIT ?", (size,))

    def save_embeddings(self, rows: list[tuple[int, str, float, bytes]], done_ids: list[int], model: str,
                        supersede: Callable[[list], Any] | None = None) -> list[tuple[int, str, float, bytes]]:
        import numpy as np

        if model != self.team()[0]:
            return []
        with self.db.write():
            ids = [r[0] for r in rows]
            still_there = {r[0] for r in self.db.all(
                f"SELECT id FROM memories WHERE id IN ({marks(ids)}) AND {self.db.dialect.mine}", ids)} if ids else set()
            added = [r for r in rows if r[0] in still_there]
            self.db.many("UPDATE memories SET embedding = ?, embedding_model = ? WHERE id = ?",
                         [(np.frombuffer(vector, dtype=np.float32), model, memory_id)
                          for memory_id, _, _, vector in added])
            if supersede is not None:
                supersede(added)
        return added
