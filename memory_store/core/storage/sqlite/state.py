"""What the SQLite backend's parts (search.py, embeddings.py, health.py) share beyond the contract: the
sqlite-vec index and the time windows' first ids, both set by SqliteStore.__init__."""

from __future__ import annotations

from ..contract import StoreContract
from .vectors import VectorIndex


class SqliteState(StoreContract):
    vectors: VectorIndex | None  # None when sqlite-vec could not be loaded (vector_error says why)
    _first_ids: dict[tuple[str | None, float], int]  # (project, hour) -> the first id of a time window from then

    def _vector_index(self) -> VectorIndex:
        """The sqlite-vec index, for what runs only where vectors_ready() (the extension loaded)."""
        if self.vectors is None:
            raise RuntimeError(f"no vector index here: {self.vector_error}")
        return self.vectors
