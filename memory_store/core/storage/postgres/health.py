"""What `recall doctor` asks of the shared database, and what forgetting removes there besides the rows.

A deleted row leaves every role's view at once; its bytes leave the table's pages when PostgreSQL
vacuums them (autovacuum), and the server's WAL and backups are its administrator's to keep or purge.
"""

from __future__ import annotations

from ..base import marks
from . import schema
from .state import PgState


class PgHealth(PgState):
    def _forget_derived(self, ids: list[int]) -> None:
        pass  # vectors and words live in the memory's own row

    def _delete_receipts_of(self, ids: list[int]) -> None:
        self.db.run(f"DELETE FROM injection_receipts WHERE prompt_memory_id IN ({marks(ids)}) OR EXISTS "
                    "(SELECT 1 FROM jsonb_array_elements(items::jsonb) e WHERE (e ->> 'id')::bigint "
                    f"IN ({marks(ids)}))", ids + ids)

    def _after_forget(self) -> None:
        self._stats_cache.clear()

    def _after_purge(self) -> None:
        pass

    def _moved_to_project(self, ids: list[int], project: str) -> None:
        pass  # vectors live in the memory's own row; a trigger logs the change for the RAM copies

    def set_damaged_aside(self, error: str) -> str | None:
        return None  # a server's damage is its administrator's to repair: nothing is moved

    def checkpoint(self) -> bool:
        return True  # the server's business

    def integrity_problems(self) -> list[str]:
        return []  # the server keeps its own pages sound; `recall doctor` checks what recall derives

    def schema_status(self) -> tuple[int, int]:
        settings = schema.settings_of(self.db.conn) or {}
        return int(settings.get("schema_version", 0)), len(schema.MIGRATIONS)

    def text_index_problem(self) -> str | None:
        missing = self.db.value("SELECT count(*) FROM memories WHERE fts = ''::tsvector AND text <> ''", default=0)
        return f"{missing} memories have no full-text entry" if missing else None

    def vector_extension(self) -> tuple[bool, str]:
        version = self.db.value("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
        server = self.db.value("SHOW server_version")
        return (True, f"pgvector {version} on PostgreSQL {server}") if version else (False, "pgvector is missing")

    def vector_consistency(self) -> dict | None:
        model = self.team()[0]
        unembedded = [r[0] for r in self.db.all(
            f"SELECT id FROM memories WHERE embedding IS NULL AND {self.db.dialect.mine} ORDER BY id")]
        other_model = self.db.value("SELECT count(*) FROM memories WHERE embedding IS NOT NULL "
                                    "AND embedding_model IS DISTINCT FROM ?", (model,), default=0)
        return {"model": model, "vectors": self.vector_count(), "queued": self.pending_embeddings(),
                "orphans": [], "missing": [], "unembedded": unembedded, "other_model": other_model}

    def rebuild_derived(self) -> list[str]:
        with self.db.write():
            self.db.run(f"UPDATE memories SET text = text WHERE {self.db.dialect.mine}")  # the trigger re-indexes each row
        return ["rebuilt the full-text entries of your memories"]

    def size_bytes(self) -> int:
        return int(self.db.value("SELECT sum(pg_total_relation_size(c.oid)) FROM pg_class c JOIN pg_namespace n "
                                 "ON n.oid = c.relnamespace WHERE n.nspname = 'recall' AND c.relkind = 'r'",
                                 default=0))
