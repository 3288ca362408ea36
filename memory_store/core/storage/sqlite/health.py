"""What `recall doctor` asks of the SQLite file, what `--repair` rebuilds, and how forgetting leaves no
byte of a text behind in it."""

from __future__ import annotations

from pathlib import Path

from ..base import marks
from . import schema
from .state import SqliteState


class SqliteHealth(SqliteState):
    # --- forgetting for good (storage/upkeep.py calls these) ---------------------------------------

    def _forget_derived(self, ids: list[int]) -> None:
        if ids and self.vectors and self.vectors.exists():
            self.vectors.delete(ids)

    def _moved_to_project(self, ids: list[int], project: str) -> None:
        """The vector table is partitioned by project: vectors follow their memories (storage/places.py)."""
        if not (self.vectors and self.vectors.exists()):
            return
        vectors = self.vectors
        rows = [(memory_id, project, created_at, vector)
                for memory_id, created_at in self.db.all(f"SELECT id, created_at FROM memories WHERE id IN "
                                                         f"({marks(ids)})", ids)
                if (vector := vectors.get(memory_id)) is not None]
        vectors.add(rows)

    def _delete_receipts_of(self, ids: list[int]) -> None:
        """Receipts of injections that held a forgotten memory, or answered a forgotten prompt."""
        self.db.run(f"DELETE FROM injection_receipts WHERE prompt_memory_id IN ({marks(ids)}) OR EXISTS "
                    f"(SELECT 1 FROM json_each(injection_receipts.items) WHERE json_extract(value, '$.id') "
                    f"IN ({marks(ids)}))", ids + ids)

    def _after_purge(self) -> None:
        self.db.run("INSERT INTO memories_fts(memories_fts) VALUES ('rebuild')")
        self.db.run("INSERT INTO knowledge_fts(knowledge_fts) VALUES ('rebuild')")

    def _after_forget(self) -> None:
        """Merge the full-text index (FTS5 'optimize': no stale copy of a text survives in an older segment;
        secure_delete zeroes every page freed), then copy the WAL into the file and truncate it."""
        with self.db.write():
            self.db.run("INSERT INTO memories_fts(memories_fts) VALUES ('optimize')")
            self.db.run("INSERT INTO knowledge_fts(knowledge_fts) VALUES ('optimize')")
        self.checkpoint()

    def checkpoint(self) -> bool:
        """Copy the WAL into the database and truncate it; False when a reader kept it from finishing
        (another process in the middle of a read: the WAL is then truncated on a later checkpoint)."""
        busy, _log, _copied = self.db.row("PRAGMA wal_checkpoint(TRUNCATE)")
        return busy == 0

    # --- health (recall doctor) -------------------------------------------------------------------

    def location(self) -> str:
        return str(self.paths.db)

    def integrity_problems(self) -> list[str]:
        """SQLite's integrity_check: [] when the file is sound."""
        result = [r[0] for r in self.db.all("PRAGMA integrity_check")]
        return [] if result == ["ok"] else result

    def schema_status(self) -> tuple[int, int]:
        """(the schema version of the file, the one this recall writes)."""
        with self.db.lock:
            return schema.schema_version(self.db.conn), len(schema.MIGRATIONS)

    def text_index_problem(self) -> str | None:
        """None when the full-text index matches the memories, else what FTS5 reported."""
        try:
            self.db.run("INSERT INTO memories_fts(memories_fts, rank) VALUES ('integrity-check', 1)")
        except Exception as exc:  # apsw.CorruptError and friends
            return str(exc)
        return None

    def vector_extension(self) -> tuple[bool, str]:
        """(usable, what it is or why not) of the vector search extension."""
        if self.vector_error:
            return False, self.vector_error
        return True, f"sqlite-vec {self.db.value('SELECT vec_version()')} loaded"

    def vector_consistency(self) -> dict | None:
        """How the vector index stands against the memories (None without an index): its model, the
        vectors of deleted memories, and live memories neither embedded nor queued."""
        if not (self.vectors and self.vectors.exists()):
            return None
        with self.db.lock:
            vector_ids = self.vectors.ids()
            memory_ids = {r[0] for r in self.db.all("SELECT id FROM memories")}
            queued = {r[0] for r in self.db.all("SELECT memory_id FROM embed_queue")}
            live = {r[0] for r in self.db.all("SELECT id FROM memories WHERE superseded_by IS NULL")}
            return {"model": self.vector_model(), "vectors": len(vector_ids), "queued": len(queued),
                    "orphans": sorted(vector_ids - memory_ids), "missing": sorted(live - vector_ids - queued),
                    "unembedded": sorted(memory_ids - vector_ids)}

    def rebuild_derived(self) -> list[str]:
        """Rebuild what is derived from the memories table: the FTS index, and the vector index's
        orphans and gaps (gaps go back on the embedding queue). Never deletes a memory."""
        done = []
        consistency = self.vector_consistency()
        with self.db.write():
            self.db.run("INSERT INTO memories_fts(memories_fts) VALUES ('rebuild')")
            done.append("rebuilt the full-text index")
            if consistency is not None:
                self._vector_index().delete(consistency["orphans"])
                self.db.many("INSERT INTO embed_queue(memory_id) VALUES (?) ON CONFLICT DO NOTHING",
                             [(i,) for i in consistency["unembedded"]])
                done.append(f"removed {len(consistency['orphans'])} orphaned vectors, queued "
                            f"{len(consistency['unembedded'])} memories for embedding")
        return done

    def size_bytes(self) -> int:
        """The database file with its WAL and shared-memory index."""
        total = 0
        for suffix in ("", "-wal", "-shm"):
            try:
                total += Path(str(self.paths.db) + suffix).stat().st_size
            except FileNotFoundError:
                pass
        return total
