"""What memories are tied to (core/capture/ties.py), kept with them and looked up by exact key: a part of its own.

`TieTable` (one per store: `store.ties`). A memory's ties are read from it in the background with its observations
(core/jobs.py `learn_pending`) and written at once (`replace`), again on `recall reindex`; a file's size and mtime
when a tool call changed it is kept across readings. An answer is also tied to every file its turn touched: the
pitfall it states is about the files being changed while it was found, even when it names none. A tie is read with
its memory: a teammate's shared memory is found by its ties too. Written once for both backends.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..records import Tie
from .base import marks

if TYPE_CHECKING:
    from .database import Database

TURN_KINDS = ("exchange",)  # memories that take on the files of their turn's tool calls


class TieTable:
    def __init__(self, db: Database) -> None:
        self.db = db

    def replace(self, memory_id: int, project: str, session_id: str, kind: str, created_at: float,
                ties: Sequence[Tie]) -> None:
        """A memory's ties, in place of any earlier reading of it (a file's state, when this reading has none, kept)."""
        with self.db.write():
            kept = {key: (size, mtime) for key, size, mtime in self.db.all(
                "SELECT key, size, mtime FROM ties WHERE memory_id = ? AND mtime IS NOT NULL", (memory_id,))}
            rows = {tie.key: (tie.size, tie.mtime) if tie.mtime is not None else kept.get(tie.key, (None, None))
                    for tie in ties}
            if kind in TURN_KINDS and session_id:
                for (key,) in self.db.all(
                        "SELECT DISTINCT t.key FROM ties t JOIN memories m ON m.id = t.memory_id WHERE m.session_id = ? "
                        "AND m.project = ? AND m.kind IN ('tool', 'error') AND t.key LIKE 'file:%' AND m.created_at >= "
                        "coalesce((SELECT max(created_at) FROM memories WHERE session_id = ? AND project = ? AND "
                        "kind = 'prompt' AND created_at <= ?), 0) AND m.created_at <= ?",
                        (session_id, project, session_id, project, created_at, created_at)):
                    rows.setdefault(key, (None, None))
            self.db.run("DELETE FROM ties WHERE memory_id = ?", (memory_id,))
            self.db.many("INSERT INTO ties(memory_id, project, key, created_at, size, mtime) VALUES (?, ?, ?, ?, ?, ?)",
                         [(memory_id, project, key, created_at, size, mtime) for key, (size, mtime) in rows.items()])

    def tied_to(self, project: str, keys: Sequence[str], limit: int = 200) -> list[tuple[int, str, float]]:
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

    def clear(self, memory_ids: Sequence[int]) -> None:
        """These memories' ties go (they are read again: storage/knowledge.py reread)."""
        if memory_ids:
            self.db.run(f"DELETE FROM ties WHERE memory_id IN ({marks(memory_ids)})", list(memory_ids))

    def move(self, memory_ids: Sequence[int], project: str) -> None:
        if memory_ids:
            self.db.run(f"UPDATE ties SET project = ? WHERE memory_id IN ({marks(memory_ids)})", [project, *memory_ids])
