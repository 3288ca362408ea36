"""Forgetting, pruning and the numbers: what leaves the store, and what `recall stats` and `recall
projects` count.

Written once for both backends (storage/database.py); what is backend-specific about removing text
for good (the vector table, the full-text index, the WAL) comes from the backend's
`_forget_derived`, `_delete_receipts_of` and `_after_forget`.
"""

from __future__ import annotations

import json
import time

from ...shared.text import one_line
from ..records import Memory
from . import tombstones
from .base import CONVERSATION_KINDS, MEMORY_COLUMNS, TURN_SEPARATOR, marks
from .contract import StoreContract


class Upkeep(StoreContract):
    # --- forgetting -----------------------------------------------------------------------------

    def forget(self, memory_ids: list[int]) -> list[Memory]:
        """Delete memories for good and return them: their rows, vectors and index entries, and every
        copy of their text in other memories (neighbours' context columns, an exchange's question).
        Only this role's own memories are deleted (a teammate's shared memory is theirs to forget).
        Nothing brings them back: a retried event is known by its id (the `forgotten` ledger), an import of the
        transcript they came from by their tombstones (storage/tombstones.py)."""
        if not memory_ids:
            return []
        with self.db.lock:
            with self.db.write():
                gone = [row.memory() for row in self._rows(
                    f"SELECT {MEMORY_COLUMNS} FROM memories WHERE id IN ({marks(memory_ids)}) AND {self.db.dialect.mine}",
                    list(memory_ids))]
                ids = [m.id for m in gone]
                if not ids:
                    return []
                self.db.run(f"INSERT INTO forgotten(event_id, forgotten_at) SELECT event_id, ? FROM events "
                            f"WHERE memory_id IN ({marks(ids)}) ON CONFLICT DO NOTHING", [time.time(), *ids])
                tombstones.bury(self.db, ids, time.time())
                self._forget_derived(ids)
                self.db.run(f"DELETE FROM memories WHERE id IN ({marks(ids)})", ids)
                if self.recent_vectors is not None:
                    self.recent_vectors.drop(ids)
                self._delete_receipts_of(ids)
                self.term_frequencies.clear()
                texts = [m.text for m in gone]
                for session_id, project in {(m.session_id, m.project) for m in gone if m.session_id}:
                    self._rebuild_context(session_id, project)
                    self._drop_quoted_questions(session_id, project, texts)
                    self.knowledge.forget_session_context(session_id, project)
            self._after_forget()
        return gone

    def _rebuild_context(self, session_id: str, project: str) -> None:
        """Recompute the context columns of a session's memories from the turns that remain
        (as Memories._record_one builds them: up to `turns_before` earlier turns, `turns_after` later ones).
        A shared memory keeps its text alone."""
        cfg = self.config.context
        rows = self.db.all(
            "SELECT id, kind, text, context_before, context_after, visibility FROM memories WHERE session_id = ? "
            "AND project = ? ORDER BY created_at, id", (session_id, project))
        turns = [(i, one_line(text, cfg.max_turn_chars)) for i, (_, kind, text, _, _, _) in enumerate(rows)
                 if kind in CONVERSATION_KINDS]
        for position, (memory_id, kind, _text, before, after, visibility) in enumerate(rows):
            if visibility != "private":
                continue
            earlier = [t for i, t in turns if i < position][-cfg.turns_before:] if cfg.turns_before else []
            later = ([t for i, t in turns if i > position][: cfg.turns_after]
                     if kind in CONVERSATION_KINDS and cfg.turns_after else [])
            new_before, new_after = TURN_SEPARATOR.join(earlier), TURN_SEPARATOR.join(later)
            if (new_before, new_after) != (before, after):
                self.db.run("UPDATE memories SET context_before = ?, context_after = ? WHERE id = ?",
                            (new_before, new_after, memory_id))

    def _drop_quoted_questions(self, session_id: str, project: str, texts: list[str]) -> None:
        """An exchange keeps a preview of its prompt in meta["prompt"]: drop it when that prompt is forgotten."""
        for memory_id, meta_json, text_of in self.db.all(
                "SELECT id, meta, text FROM memories WHERE session_id = ? AND project = ? AND kind = 'exchange'",
                (session_id, project)):
            meta = json.loads(meta_json or "{}")
            quoted = str(meta.get("prompt") or "")
            if quoted.strip() and any(_quotes(quoted, text) for text in texts):
                meta.pop("prompt")
                self.db.run("UPDATE memories SET meta = ? WHERE id = ?", (json.dumps(meta, ensure_ascii=False), memory_id))
                # Its identity without the question: an import of the same answer, which loses the forgotten quote
                # too (storage/tombstones.py), is this memory again, not a second one.
                self.db.run("UPDATE memories SET content_hash = ? WHERE id = ? AND NOT EXISTS (SELECT 1 FROM memories o "
                            "WHERE o.project = memories.project AND o.kind = 'exchange' AND o.content_hash = ?)",
                            (tombstones.memory_digest("exchange", text_of, ""), memory_id,
                             tombstones.memory_digest("exchange", text_of, "")))

    def purge(self) -> dict[str, int]:
        """Delete every memory of every project (this role's own); returns how many per project."""
        with self.db.lock:
            with self.db.write():
                counts = dict(self.db.all(
                    f"SELECT project, count(*) FROM memories WHERE {self.db.dialect.mine} GROUP BY project"))
                self.db.run("INSERT INTO forgotten(event_id, forgotten_at) SELECT event_id, ? FROM events "
                            "WHERE memory_id IS NOT NULL ON CONFLICT DO NOTHING", (time.time(),))
                ids = [r[0] for r in self.db.all(f"SELECT id FROM memories WHERE {self.db.dialect.mine}")]
                tombstones.bury(self.db, ids, time.time())
                self._forget_derived(ids)
                self.db.run(f"DELETE FROM memories WHERE {self.db.dialect.mine}")
                self.db.run("DELETE FROM injection_receipts")
                self._after_purge()
            self._after_forget()
        return counts

    # --- pruning (core/jobs.py) -----------------------------------------------------------------

    def prune_candidates(self, before: float, limit: int) -> list[Memory]:
        """The next memories a pruning round looks at: those after the cursor, in id order, up to the first
        one still younger than `before` (ids grow with time; each round goes on where the last stopped)."""
        cursor = self.db.value("SELECT last_memory_id FROM prune_cursor", default=0)
        rows = self._rows(f"SELECT {MEMORY_COLUMNS} FROM memories WHERE id > ? AND {self.db.dialect.mine} "
                          "ORDER BY id LIMIT ?", (cursor, limit))
        ready = []
        for row in rows:
            if row.created_at >= before:
                break
            ready.append(row.memory())
        return ready

    def advance_prune_cursor(self, memory_id: int) -> None:
        d = self.db.dialect
        with self.db.write():
            self.db.run(f"INSERT INTO prune_cursor(id, last_memory_id) VALUES (1, ?) ON CONFLICT({d.owner_key}id) "
                        f"DO UPDATE SET last_memory_id = {d.greatest}(prune_cursor.last_memory_id, "
                        "excluded.last_memory_id)", (memory_id,))

    def count_pruned(self, kinds: list[str], at: float) -> None:
        with self.db.write():
            for kind in kinds:
                self.db.run(f"INSERT INTO pruned(kind, count, last_at) VALUES (?, 1, ?) "
                            f"ON CONFLICT({self.db.dialect.owner_key}kind) "
                            "DO UPDATE SET count = pruned.count + 1, last_at = excluded.last_at", (kind, at))

    def pruned_counts(self) -> dict[str, int]:
        return dict(self.db.all("SELECT kind, count FROM pruned ORDER BY kind"))

    # --- numbers --------------------------------------------------------------------------------

    def counts(self) -> dict:
        by_kind = dict(self.db.all("SELECT kind, count(*) FROM memories GROUP BY kind"))
        value = self.db.value
        return {
            "memories": sum(by_kind.values()),
            "by_kind": by_kind,
            "projects": value("SELECT count(DISTINCT project) FROM memories", default=0),
            "sessions": value("SELECT count(*) FROM sessions", default=0),
            "events": value("SELECT count(*) FROM events", default=0),
            "superseded": value("SELECT count(*) FROM memories WHERE superseded_by IS NOT NULL", default=0),
            "pending_embeddings": self.pending_embeddings(),
            "vectors": self.vector_count(),
            "vector_model": self.vector_model(),
            "oldest": value("SELECT min(created_at) FROM memories"),
            "newest": value("SELECT max(created_at) FROM memories"),
        }

    def projects(self) -> list[dict]:
        """Each project with its memory count and last activity, most recent first."""
        rows = self.db.all("SELECT project, count(*), max(created_at), sum(pinned) FROM memories GROUP BY project "
                           "ORDER BY max(created_at) DESC")
        return [{"project": p, "memories": n, "last_activity": last, "pinned": int(pinned or 0)}
                for p, n, last, pinned in rows]


def _quotes(preview: str, text: str) -> bool:
    """Is `preview` a preview of `text`: the text itself, or its pieces in order where a long one was cut ("head …
    tail")?"""
    at = 0
    for piece in (part.strip() for part in preview.split("…")):
        if not piece:
            continue
        found = text.find(piece, at)
        if found < 0:
            return False
        at = found + len(piece)
    return at > 0
