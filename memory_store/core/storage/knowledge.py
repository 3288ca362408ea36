"""The observations of core/knowledge/, kept with the memories they were read from: a part of its own.

`KnowledgeTable` (one per store: `store.knowledge`) is the narrow storage the knowledge engine reads
(core/knowledge/current.py `Observations`) and the background work writes, instead of more methods on `Store`.
Written once for both backends; the full-text lookup of an observation's words is each backend's (`words`).

- Every row belongs to the memory it was read from (ON DELETE CASCADE: forgetting the memory deletes it) and is read
  with it: a teammate reads the observations of a memory shared with the team, labelled with its owner, and nothing
  of a private one (on PostgreSQL the policies say so).
- The worker reads a memory's observations in the background (`knowledge_queue`, filled on insert; core/jobs.py
  `learn_pending`) and writes them at once, replacing what an earlier reading wrote (`replace`): `recall reindex`
  and an upgrade read every memory again, a share or a forget the memories it touched.
- Nothing here decides what is current: that is read by core/knowledge/current.py.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from ..records import Knowledge, KnowledgeDraft
from .base import marks

if TYPE_CHECKING:
    from .database import Database

COLUMNS = ("k.id, k.project, k.kind, k.subject, k.name, k.value, k.text, k.thing, k.file, k.context, k.modality, "
           "k.source, k.source_id, k.session_id, k.created_at, m.owner, m.visibility")
FROM = "knowledge k JOIN memories m ON m.id = k.source_id"
READ_LIMIT = 400  # observations read at once by one lookup
KINDS = ("fact", "procedure", "decision")
# The words of an observation a lookup matches: backend-specific (an FTS5 table; a tsvector column).
Words = Callable[[str, Sequence[str], Sequence[str], int], list[int]]


def knowledge_of(row: tuple) -> Knowledge:
    (item_id, project, kind, subject, name, value, text, thing, file, context, modality, source, source_id, session_id,
     created_at, owner, visibility) = row
    return Knowledge(id=item_id, project=project, kind=kind, subject=subject, name=name, value=value, text=text,
                     thing=thing, file=file, context=context, modality=modality, source=source, source_id=source_id,
                     session_id=session_id, created_at=created_at, owner=owner or "", team=visibility == "team")


def leaf_of(name: str) -> str:
    return name.rsplit(".", 1)[-1] if name else ""


class KnowledgeTable:
    def __init__(self, db: Database, words: Words) -> None:
        self.db = db
        self._words = words

    # --- what a memory teaches: written by the background work --------------------------------------------------

    def replace(self, memory_id: int, project: str, session_id: str, created_at: float,
                items: Sequence[KnowledgeDraft]) -> None:
        """The observations read from one memory, in place of any earlier reading of it."""
        with self.db.write():
            self.db.run("DELETE FROM knowledge WHERE source_id = ?", (memory_id,))
            self.db.many("INSERT INTO knowledge(project, kind, subject, name, leaf, value, text, thing, file, context, "
                         "modality, source, source_id, session_id, created_at) "
                         "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                         [(project, item.kind, item.subject, item.name, leaf_of(item.name), item.value, item.text,
                           item.thing, item.file, item.context, item.modality, item.source, memory_id, session_id,
                           created_at - item.earlier) for item in items])

    def queued(self, limit: int) -> list[int]:
        """Memories (this role's) waiting to be read, the oldest first: a turn's tool calls before its answer."""
        return [r[0] for r in self.db.all(f"SELECT q.memory_id FROM knowledge_queue q WHERE {self.db.dialect.mine} "
                                          "ORDER BY q.memory_id LIMIT ?", (limit,))]

    def read(self, memory_ids: Sequence[int]) -> None:
        """These memories' observations are written."""
        if memory_ids:
            self.db.run(f"DELETE FROM knowledge_queue WHERE memory_id IN ({marks(memory_ids)})", list(memory_ids))

    def requeue(self, memory_ids: Sequence[int] | None = None) -> int:
        """Read these memories (None: every memory of this role) again; returns how many wait."""
        mine = self.db.dialect.mine
        with self.db.write():
            if memory_ids is None:
                self.db.run(f"INSERT INTO knowledge_queue(memory_id) SELECT id FROM memories WHERE {mine} "
                            "ON CONFLICT DO NOTHING")
            elif memory_ids:
                self.db.run(f"INSERT INTO knowledge_queue(memory_id) SELECT id FROM memories WHERE id IN "
                            f"({marks(memory_ids)}) AND {mine} ON CONFLICT DO NOTHING", list(memory_ids))
        return self.pending()

    def reread(self, memory_ids: Sequence[int]) -> None:
        """These memories changed (shared, unshared): what was read from them goes at once, and they are read again."""
        if memory_ids:
            with self.db.write():
                self.db.run(f"DELETE FROM knowledge WHERE source_id IN ({marks(memory_ids)})", list(memory_ids))
                self.requeue(memory_ids)

    def read_with(self, reading: int) -> None:
        """Memories are read this way from now on (core/knowledge/extract.py READING): when it is not how they were
        read, every memory of this role is read again (what an improved reading finds reaches old memories)."""
        mine = self.db.dialect.mine
        if self.db.value(f"SELECT version FROM knowledge_reading WHERE {mine}") == reading:
            return
        with self.db.write():
            if self.db.value(f"SELECT version FROM knowledge_reading WHERE {mine}") == reading:
                return  # another process did it meanwhile
            self.requeue()
            self.db.run(f"DELETE FROM knowledge_reading WHERE {mine}")
            self.db.run("INSERT INTO knowledge_reading(version) VALUES (?)", (reading,))

    def pending(self) -> int:
        return int(self.db.value(f"SELECT count(*) FROM knowledge_queue WHERE {self.db.dialect.mine}", (), 0))

    # --- reading (core/knowledge/current.py Observations, and the surfaces) ---------------------------------------

    def _select(self, where: str, args: Sequence, order: str = "k.created_at DESC, k.id DESC", limit: int = READ_LIMIT
                ) -> list[Knowledge]:
        # The newest first: past the limit, what goes is the oldest history, never what is current (the engine
        # orders what it reads itself).
        return [knowledge_of(r) for r in self.db.all(f"SELECT {COLUMNS} FROM {FROM} WHERE {where} ORDER BY {order} "
                                                     "LIMIT ?", [*args, limit])]

    def about(self, project: str, subject_list: Sequence[str]) -> list[Knowledge]:
        if not subject_list:
            return []
        return self._select(f"k.project = ? AND k.subject IN ({marks(subject_list)})", [project, *subject_list])

    def named(self, project: str, leaves: Sequence[str]) -> list[Knowledge]:
        leaves = [leaf for leaf in leaves if leaf]
        if not leaves:
            return []
        return self._select(f"k.project = ? AND k.leaf IN ({marks(leaves)})", [project, *leaves])

    def worded(self, project: str, terms: Sequence[str], kinds: Sequence[str], limit: int) -> list[Knowledge]:
        return self.items(self._words(project, terms, kinds, limit))

    def items(self, ids: Sequence[int]) -> list[Knowledge]:
        """These observations, in the order asked."""
        if not ids:
            return []
        rows = {k.id: k for k in self._select(f"k.id IN ({marks(ids)})", list(ids), limit=len(ids))}
        return [rows[i] for i in ids if i in rows]

    def of_memories(self, memory_ids: Sequence[int]) -> list[Knowledge]:
        """What these memories taught."""
        if not memory_ids:
            return []
        return self._select(f"k.source_id IN ({marks(memory_ids)})", list(memory_ids))

    def listed(self, project: str, kinds: Sequence[str] | None = None, limit: int = 1000,
               since: float | None = None) -> list[Knowledge]:
        """The project's observations of these kinds, newest first (from `since` on)."""
        kinds = list(kinds or KINDS)
        where = f"k.project = ? AND k.kind IN ({marks(kinds)})" + (" AND k.created_at >= ?" if since else "")
        return self._select(where, [project, *kinds, *([since] if since else [])], "k.created_at DESC, k.id DESC",
                            limit)

    def candidates(self, project: str, terms: Sequence[str], kinds: Sequence[str], limit: int
                   ) -> list[tuple[Knowledge, bytes | None]]:
        """The observations whose words best match `terms`, with their vectors (None until embedded)."""
        ids = self._words(project, terms, kinds, limit)
        if not ids:
            return []
        vectors = dict(self.db.all(f"SELECT id, embedding FROM knowledge WHERE id IN ({marks(ids)})", ids))
        return [(item, vectors.get(item.id)) for item in self.items(ids)]

    def counts(self) -> dict[str, int]:
        """kind -> how many observations, over every project."""
        return {kind: int(n) for kind, n in self.db.all("SELECT kind, count(*) FROM knowledge GROUP BY kind")}

    # --- vectors (the worker's background rounds) ------------------------------------------------------------------

    def to_embed(self, limit: int) -> list[tuple[int, str]]:
        """Observations without a vector yet: (id, the text their vector is made of)."""
        rows = self.db.all(f"SELECT id, kind, text, value, thing, context FROM knowledge k WHERE embedding IS NULL AND "
                           f"{self.db.dialect.mine} ORDER BY id LIMIT ?", (limit,))
        return [(item_id, embedding_text(kind, text, value, thing, context))
                for item_id, kind, text, value, thing, context in rows]

    def set_vectors(self, rows: Sequence[tuple[int, bytes]]) -> None:
        with self.db.write():
            self.db.many("UPDATE knowledge SET embedding = ? WHERE id = ?", [(vector, item_id) for item_id, vector in rows])

    def vectors_pending(self) -> int:
        return int(self.db.value(f"SELECT count(*) FROM knowledge k WHERE embedding IS NULL AND {self.db.dialect.mine}",
                                 (), 0))

    # --- what moves and forgets change ------------------------------------------------------------------------------

    def move(self, memory_ids: Sequence[int], project: str) -> None:
        """Observations follow the memories they came from into another project (storage/places.py)."""
        if memory_ids:
            self.db.run(f"UPDATE knowledge SET project = ? WHERE source_id IN ({marks(memory_ids)})",
                        [project, *memory_ids])

    def forget_session_context(self, session_id: str, project: str) -> None:
        """A session lost a memory: what its observations say they were for (a prompt) or came after (an error) may
        quote it. They go, and its memories are read again without it."""
        ids = [r[0] for r in self.db.all(f"SELECT id FROM memories WHERE session_id = ? AND project = ? AND "
                                         f"{self.db.dialect.mine}", (session_id, project))]
        if ids:
            self.db.run(f"DELETE FROM knowledge WHERE source_id IN ({marks(ids)})", ids)
            self.requeue(ids)


def embedding_text(kind: str, text: str, value: str, thing: str, context: str) -> str:
    """What an item's vector is made of: what it says (a command run: the command, not the failures before it), what
    kind of value it is, and what it was for."""
    said = value if kind == "procedure" and text.startswith("`") else text
    return " ".join(part for part in (said, f"({thing})" if thing else "", f"— {context}" if context else "") if part)
