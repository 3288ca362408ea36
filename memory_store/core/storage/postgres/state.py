"""What the PostgreSQL backend's parts (search.py, embeddings.py, health.py) share beyond the contract: the
server's connection, the team's embedding model and the statistics cache, all set by PostgresStore.__init__."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..contract import StoreContract
from .connection import PgDatabase

if TYPE_CHECKING:
    from ..recent_vectors import VectorFeed  # numpy: only the worker loads it


class PgState(StoreContract):
    db: PgDatabase
    url: str
    team_model: str | None  # fixed by `recall team init`, read on connecting
    team_dim: int | None
    _stats_cache: dict
    feed: VectorFeed  # feed.py: the log the worker's RAM copy of recent vectors follows

    def team(self) -> tuple[str | None, int | None]:
        """(model, dimension) of the team's vectors, fixed by `recall team init` (connects if need be)."""
        _ = self.db.conn
        return self.team_model, self.team_dim
