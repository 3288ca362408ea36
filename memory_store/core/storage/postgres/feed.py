"""The change feed a worker's RAM copy of recent vectors follows on a shared server (recent_vectors.py).

Every write that changes what a vector search may return (a vector stored or dropped, a memory shared,
unshared, renamed or deleted) appends the memory's id to `vector_changes` by trigger (schema.py), with
the id of the transaction that wrote it. Sequence numbers alone would not do: two writers' transactions
commit in any order, so a reader that has seen change 11 may not yet see change 10. The reader keeps
instead the oldest transaction still running when it last read (`pg_snapshot_xmin`): every change of an
older transaction was visible then; changes of that one and later ones are read again on the next sync
(applying one twice is harmless). Row-level security decides what the copy may hold: a change to a
memory this role cannot read drops it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .search import from_vector_send

if TYPE_CHECKING:
    from .state import PgState

KEEP_CHANGES = 200_000  # older log rows are dropped now and then; a reader that far behind reloads


class PgVectorFeed:
    def __init__(self, store: PgState):
        self.store = store  # a PostgresStore (its connection, its team model)
        self._horizon = None  # pg_snapshot_xmin at the last read (xid8 as text)

    def _rows(self, where: str, args) -> list[tuple]:
        model = self.store.team()[0]
        if not model:
            return []
        rows = self.store.db.all(f"SELECT id, project, created_at, vector_send(embedding), kind FROM memories "
                                 f"WHERE {where} AND embedding IS NOT NULL AND embedding_model = ?", (*args, model))
        return [(memory_id, project, created_at, from_vector_send(raw), kind)
                for memory_id, project, created_at, raw, kind in rows]

    def last_change(self) -> tuple:
        """(the newest change, the oldest running transaction): equal tokens, nothing new committed."""
        return self.store.db.row("SELECT (SELECT max(seq) FROM vector_changes), "
                                 "pg_snapshot_xmin(pg_current_snapshot())::text")

    def changes_since(self, token: Any) -> tuple | None:
        if token is None or self._horizon is None:
            return None
        newest, horizon = self.store.db.one("SELECT (SELECT max(seq) FROM vector_changes), "
                                            "pg_snapshot_xmin(pg_current_snapshot())::text")
        oldest = self.store.db.value("SELECT min(seq) FROM vector_changes")
        if oldest is not None and token[0] is not None and oldest > token[0] + 1:
            return None  # the log was trimmed past what this reader saw: reload
        ids = [r[0] for r in self.store.db.all("SELECT memory_id FROM vector_changes WHERE xid >= ?::xid8",
                                               (self._horizon,))]
        self._horizon = horizon
        if newest is not None and newest % 1000 < len(ids):  # now and then, trim what no reader needs
            self.store.db.run("DELETE FROM vector_changes WHERE seq <= ?", (newest - KEEP_CHANGES,))
        return (newest, horizon), ids

    def rows_of(self, memory_ids: list[int]) -> list[tuple]:
        if not memory_ids:
            return []
        return self._rows(f"id IN ({','.join('?' * len(memory_ids))})", list(memory_ids))

    def rows_since(self, since: float) -> list[tuple]:
        token = self.last_change()
        self._horizon = token[1]
        return self._rows("created_at >= ?", (float(since),))

    def has_vector_before(self, moment: float) -> bool:
        return self.store.db.one("SELECT 1 FROM memories WHERE created_at < ? LIMIT 1", (float(moment),)) is not None

    def count_memories(self, most: int) -> int:
        return self.store.db.value("SELECT count(*) FROM (SELECT 1 FROM memories LIMIT ?) AS counted", (int(most),))
