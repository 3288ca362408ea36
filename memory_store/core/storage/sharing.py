"""Private and team memories: what sharing a memory changes in the store.

A shared memory is its text alone: its neighbouring turns (the context columns, indexed for matching)
and its meta (an answer's question, files, ids) are moved to `private_parts`, a table only the owner
can read, and the row keeps what its readers may see. `unshare` puts them back. What was read from it
(its knowledge and ties) is read again from what it now holds: a teammate reads a shared rule, never the
question it answered. Everything captured
starts private; only the owner may share, unshare or forget (in PostgreSQL the policies enforce it).
Which text may be shared (the secret scan, the question) is core's business (api.Recall.share).

Written once for both backends (storage/database.py).
"""

from __future__ import annotations

import json

from ..records import Memory
from .base import MEMORY_COLUMNS, marks
from .contract import StoreContract

SHARED_META_KEYS = ("source",)  # what a shared memory's meta keeps: where a note came from, nothing private


class Sharing(StoreContract):
    def own_memories(self, ids: list[int]) -> list[Memory]:
        """Those of these memories that this role owns (in the order asked)."""
        if not ids:
            return []
        rows = {r.id: r for r in self._rows(f"SELECT {MEMORY_COLUMNS} FROM memories WHERE id IN ({marks(ids)}) "
                                            f"AND {self.db.dialect.mine}", list(ids))}
        return [rows[i].memory() for i in ids if i in rows]

    def share(self, ids: list[int]) -> list[int]:
        """Make these own private memories team memories; returns the ids changed."""
        changed = []
        with self.db.write():
            for memory_id, meta, before, after in self.db.all(
                    f"SELECT id, meta, context_before, context_after FROM memories WHERE id IN ({marks(ids)}) "
                    f"AND visibility = 'private' AND {self.db.dialect.mine}", list(ids)) if ids else []:
                self.db.run("INSERT INTO private_parts(memory_id, meta, context_before, context_after) "
                            "VALUES (?, ?, ?, ?) ON CONFLICT(memory_id) DO UPDATE SET meta = excluded.meta, "
                            "context_before = excluded.context_before, context_after = excluded.context_after",
                            (memory_id, meta, before, after))
                kept = {k: v for k, v in json.loads(meta or "{}").items() if k in SHARED_META_KEYS}
                self.db.run("UPDATE memories SET visibility = 'team', meta = ?, context_before = '', "
                            "context_after = '' WHERE id = ?", (json.dumps(kept, ensure_ascii=False), memory_id))
                changed.append(memory_id)
            # What was read from them held their private parts (what they were for, the turn's files): read again.
            self.knowledge.reread(changed)
            self.ties.clear(changed)
        return changed

    def unshare(self, ids: list[int]) -> list[int]:
        """Make these own team memories private again, with what they held before; returns the ids changed."""
        changed = []
        with self.db.write():
            for memory_id, session_id, project in self.db.all(
                    f"SELECT id, session_id, project FROM memories WHERE id IN ({marks(ids)}) "
                    f"AND visibility = 'team' AND {self.db.dialect.mine}", list(ids)) if ids else []:
                parts = self.db.one("SELECT meta, context_before, context_after FROM private_parts WHERE memory_id = ?",
                                    (memory_id,))
                meta, before, after = parts if parts else (None, "", "")
                sql = "UPDATE memories SET visibility = 'private', context_before = ?, context_after = ?"
                args: list = [before, after]
                if meta is not None:
                    sql += ", meta = ?"
                    args.append(meta)
                self.db.run(sql + " WHERE id = ?", (*args, memory_id))
                self.db.run("DELETE FROM private_parts WHERE memory_id = ?", (memory_id,))
                if session_id:
                    self._rebuild_context(session_id, project)
                changed.append(memory_id)
            self.knowledge.reread(changed)
            self.ties.clear(changed)
        return changed
