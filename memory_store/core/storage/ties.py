"""What memories are tied to (core/capture/ties.py), kept with them and looked up by exact key.

Stored with the memory in the same transaction (Memories._record_one). An answer is also tied to every file its turn
touched: the pitfall it states is about the files being changed while it was found, even when it names none.
Written once for both backends.
"""

from __future__ import annotations

from ..records import MemoryDraft
from .base import marks
from .contract import StoreContract

TURN_KINDS = ("exchange",)  # memories that take on the files of their turn's tool calls


class Ties(StoreContract):
    def _keep_ties(self, memory_id: int, draft: MemoryDraft) -> None:
        rows = {tie.key: (tie.size, tie.mtime) for tie in draft.ties}
        if draft.kind in TURN_KINDS and draft.session_id:
            for (key,) in self.db.all(
                    "SELECT DISTINCT t.key FROM ties t JOIN memories m ON m.id = t.memory_id WHERE m.session_id = ? "
                    "AND m.project = ? AND m.kind IN ('tool', 'error') AND t.key LIKE 'file:%' AND m.created_at >= "
                    "coalesce((SELECT max(created_at) FROM memories WHERE session_id = ? AND project = ? AND "
                    "kind = 'prompt' AND created_at <= ?), 0) AND m.created_at <= ?",
                    (draft.session_id, draft.project, draft.session_id, draft.project, draft.created_at,
                     draft.created_at)):
                rows.setdefault(key, (None, None))
        self.db.many("INSERT INTO ties(memory_id, project, key, created_at, size, mtime) VALUES (?, ?, ?, ?, ?, ?) "
                     "ON CONFLICT DO NOTHING",
                     [(memory_id, draft.project, key, draft.created_at, size, mtime)
                      for key, (size, mtime) in rows.items()])

    def tied_to(self, project: str, keys: list[str], limit: int = 200) -> list[tuple[int, str, float]]:
        """(memory id, key, created_at) of the project's memories tied to any of `keys`, newest first."""
        if not keys:
            return []
        return [(int(m), k, float(at)) for m, k, at in self.db.all(
            f"SELECT memory_id, key, created_at FROM ties WHERE project = ? AND key IN ({marks(keys)}) "
            "ORDER BY created_at DESC LIMIT ?", [project, *keys, limit])]

    def file_touched(self, project: str, key: str) -> tuple[float, int | None, float | None] | None:
        """(when, size, mtime) of the latest tool call that changed this file, as recall saw it; None if none did."""
        row = self.db.one("SELECT created_at, size, mtime FROM ties WHERE project = ? AND key = ? AND mtime IS NOT "
                          "NULL ORDER BY created_at DESC LIMIT 1", (project, key))
        return (float(row[0]), row[1], row[2]) if row else None

    def _move_ties(self, ids: list[int], project: str) -> None:
        if ids:
            self.db.run(f"UPDATE ties SET project = ? WHERE memory_id IN ({marks(ids)})", [project, *ids])
