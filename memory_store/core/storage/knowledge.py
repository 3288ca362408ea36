"""Facts, procedures and decisions beside the memories they were read from (core/knowledge/).

Each item is stored with its memory, in the same transaction (Memories._record_one), and belongs to it: forgetting
the memory deletes the item (ON DELETE CASCADE). A newer item about the same thing marks the older one
`superseded_by`, so the current value is one query away and the older ones are its history:

- the same subject (a file and a setting's name, `src/app.ts:timeout`; an exported variable): always;
- a value stated in words, or a setting and the same setting in words: when the newer text gives another value for
  what the older one measures (knowledge/values.replaces), among the older items that share its rarest words;
- a procedure: the same command run again (its newest run is the one kept).

Written once for both backends; the full-text lookup is each backend's (`_knowledge_matches`).
"""

from __future__ import annotations

import re

from ..knowledge import extract, values
from ..records import Knowledge, KnowledgeDraft, MemoryDraft
from ..terms import STOPWORDS, words
from .base import marks
from .contract import StoreContract

KNOWLEDGE_COLUMNS = ("id, project, kind, subject, value, text, thing, file, context, source_id, session_id, created_at, "
                     "superseded_by")
MAX_CHAIN = 20  # steps walked along what replaced what
SUPERSEDE_TERMS = 10  # the longest words of a new fact its earlier versions are looked up by
SUPERSEDE_LOOKUP = 12  # earlier items compared with a new statement of a value (the best matches of its words)
FAILURE_LOOKBACK_SECONDS = 1800.0  # a command's failures this long before it worked are its procedure's notes
MAX_NOTE_CHARS = 160
NOTE_OPENING = " (worked after: "  # a procedure's note: the failure it came after (capture's redacted error text)
_FAILED_COMMAND = re.compile(r"^\w+ (?:failed|interrupted): `([^`]*)`")  # an error memory (capture.tool_failure)


def knowledge_of(row: tuple) -> Knowledge:
    (item_id, project, kind, subject, value, text, thing, file, context, source_id, session_id, created_at,
     superseded_by) = row
    return Knowledge(id=item_id, project=project, kind=kind, subject=subject, value=value, text=text, thing=thing,
                     file=file, context=context, source_id=source_id, session_id=session_id, created_at=created_at,
                     superseded_by=superseded_by)


class KnowledgeItems(StoreContract):
    # --- writing (inside Memories._record_one's transaction) ---------------------------------------

    def _keep_knowledge(self, memory_id: int, draft: MemoryDraft) -> None:
        """Store what a new memory teaches, and mark what it replaces."""
        for item in draft.knowledge:
            if item.kind == "procedure" and draft.kind == "tool":  # a command that ran (a how-to said in words has
                item = self._with_failures(item, draft)  # its own words)
            if self._already_known(draft.project, item):
                continue
            new_id = self.db.value(
                "INSERT INTO knowledge(project, kind, subject, value, text, thing, file, context, source_id, session_id, "
                "created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
                (draft.project, item.kind, item.subject, item.value, item.text, item.thing, item.file, item.context,
                 memory_id, draft.session_id, draft.created_at))
            older = self._replaced_by(draft.project, item, new_id)
            if older:
                self.db.run(f"UPDATE knowledge SET superseded_by = ? WHERE id IN ({marks(older)})", [new_id, *older])

    def _already_known(self, project: str, item: KnowledgeDraft) -> bool:
        """The same text is already current (a command run again, a value said again): nothing new."""
        return self.db.one("SELECT 1 FROM knowledge WHERE project = ? AND kind = ? AND subject = ? AND text = ? "
                           "AND superseded_by IS NULL", (project, item.kind, item.subject, item.text)) is not None

    def _replaced_by(self, project: str, item: KnowledgeDraft, new_id: int) -> list[int]:
        """The current items of the project this new one replaces (see the module docstring)."""
        if item.kind == "decision":
            return []
        if item.kind == "procedure":
            return [r[0] for r in self.db.all(
                "SELECT id FROM knowledge WHERE project = ? AND kind = 'procedure' AND value = ? AND id != ? "
                "AND superseded_by IS NULL", (project, item.value, new_id))]
        older = []
        if item.subject:
            older = [r[0] for r in self.db.all(
                "SELECT id FROM knowledge WHERE project = ? AND kind = 'fact' AND subject = ? AND id != ? "
                "AND superseded_by IS NULL", (project, item.subject, new_id))]
        terms = sorted((w for w in dict.fromkeys(words(f"{item.text} {item.thing}")) if w not in STOPWORDS and len(w) > 2),
                       key=len, reverse=True)[:SUPERSEDE_TERMS]  # one bounded query per new fact, at any size
        for other_id in self._knowledge_matches(project, terms, ["fact"], SUPERSEDE_LOOKUP):
            if other_id == new_id or other_id in older:
                continue
            row = self.db.one("SELECT text, superseded_by, file FROM knowledge WHERE id = ?", (other_id,))
            if row is None or row[1] is not None or (item.file and row[2] and item.file != row[2]):
                continue  # replaced already, or a setting of another file (`port` of the api and of the web app)
            if values.replaces(values.as_stated(item.text), row[0]):
                older.append(other_id)
        values.forget_texts()
        return older + self._said_with(older, new_id)

    def _said_with(self, older: list[int], new_id: int) -> list[int]:
        """The other current facts of the memories the replaced facts came from that state one of their values
        ("preview_link_ttl_hours = 24" and, in the same answer, "within those 24 hours anyone can open it"): the
        value changed for them too."""
        if not older:
            return []
        replaced = self.db.all(f"SELECT source_id, value FROM knowledge WHERE id IN ({marks(older)})", older)
        gone = {(source_id, v) for source_id, value in replaced for v in _values_of(value)}
        sources = sorted({source_id for source_id, _ in gone})
        if not sources:
            return []
        siblings = self.db.all(f"SELECT id, source_id, value FROM knowledge WHERE source_id IN ({marks(sources)}) "
                               "AND kind = 'fact' AND superseded_by IS NULL AND id != ?", [*sources, new_id])
        return [item_id for item_id, source_id, value in siblings if item_id not in older
                and any((source_id, v) in gone for v in _values_of(value))]

    def _with_failures(self, item: KnowledgeDraft, draft: MemoryDraft) -> KnowledgeDraft:
        """A command that worked after the same program failed in this session: the failures are its notes, and
        what the turn asked is its goal when the call said none."""
        if not draft.session_id:
            return item
        programs = extract.programs_in(item.value)
        failed = [text for (text,) in self.db.all(
            "SELECT text FROM memories WHERE session_id = ? AND project = ? AND kind = 'error' AND created_at "
            "BETWEEN ? AND ? ORDER BY created_at DESC LIMIT 3",
            (draft.session_id, draft.project, draft.created_at - FAILURE_LOOKBACK_SECONDS, draft.created_at))
            if (command := _FAILED_COMMAND.match(text)) and extract.programs_in(command.group(1)) & programs]
        update: dict = {}
        if failed:
            note = " ".join(failed[0].split())[:MAX_NOTE_CHARS]
            update["text"] = f"{item.text}{NOTE_OPENING}{note})"
        if not item.context:
            asked = self.db.value("SELECT text FROM memories WHERE session_id = ? AND project = ? AND kind = 'prompt' "
                                  "AND created_at <= ? ORDER BY created_at DESC LIMIT 1",
                                  (draft.session_id, draft.project, draft.created_at), "")
            update["context"] = str(asked)[:300]
        return item.model_copy(update=update) if update else item

    # --- reading ------------------------------------------------------------------------------

    def knowledge(self, project: str, kinds: list[str] | None = None, *, current: bool = True,
                  limit: int = 1000) -> list[Knowledge]:
        """The project's items, newest first (`current`: only those nothing replaced)."""
        kinds = kinds or ["fact", "procedure", "decision"]
        sql = (f"SELECT {KNOWLEDGE_COLUMNS} FROM knowledge WHERE project = ? AND kind IN ({marks(kinds)})"
               + (" AND superseded_by IS NULL" if current else "") + " ORDER BY created_at DESC, id DESC LIMIT ?")
        return [knowledge_of(r) for r in self.db.all(sql, [project, *kinds, limit])]

    def knowledge_counts(self) -> dict[str, dict[str, int]]:
        """kind -> {"current": n, "replaced": n} over every project."""
        found: dict[str, dict[str, int]] = {}
        for kind, replaced, count in self.db.all("SELECT kind, superseded_by IS NOT NULL, count(*) FROM knowledge "
                                                 "GROUP BY kind, superseded_by IS NOT NULL"):
            found.setdefault(kind, {"current": 0, "replaced": 0})["replaced" if replaced else "current"] = int(count)
        return found

    def knowledge_items(self, ids: list[int]) -> list[Knowledge]:
        """These items, in the order asked."""
        if not ids:
            return []
        rows = {r[0]: r for r in self.db.all(f"SELECT {KNOWLEDGE_COLUMNS} FROM knowledge WHERE id IN ({marks(ids)})",
                                             ids)}
        return [knowledge_of(rows[i]) for i in ids if i in rows]

    def replaced(self, item_ids: list[int]) -> dict[int, list[Knowledge]]:
        """For each item, the earlier items it replaced, directly or through others, newest first."""
        found: dict[int, list[Knowledge]] = {}
        for item_id in item_ids:
            chain: list[Knowledge] = []
            frontier = [item_id]
            seen = {item_id}
            while frontier and len(chain) < MAX_CHAIN:
                rows = self.db.all(f"SELECT {KNOWLEDGE_COLUMNS} FROM knowledge WHERE superseded_by IN "
                                   f"({marks(frontier)})", frontier)
                earlier = [knowledge_of(r) for r in rows if r[0] not in seen]
                seen.update(k.id for k in earlier)
                chain.extend(earlier)
                frontier = [k.id for k in earlier]
            found[item_id] = sorted(chain, key=lambda k: -k.created_at)
        return found

    def replacing_sources(self, memory_ids: list[int]) -> dict[int, int]:
        """For facts these memories stated that a newer fact replaced: memory id -> the memory the current fact comes
        from (the newest in its chain)."""
        if not memory_ids:
            return {}
        found: dict[int, int] = {}
        for source_id, newer_id in self.db.all(f"SELECT source_id, superseded_by FROM knowledge WHERE source_id IN "
                                               f"({marks(memory_ids)}) AND superseded_by IS NOT NULL", memory_ids):
            seen = {newer_id}
            for _ in range(MAX_CHAIN):  # the newest of a chain, a few steps away in practice
                row = self.db.one("SELECT superseded_by, source_id FROM knowledge WHERE id = ?", (newer_id,))
                if row is None:
                    break
                if row[0] is None or row[0] in seen:
                    found[source_id] = row[1]
                    break
                newer_id = row[0]
                seen.add(newer_id)
        return found

    def knowledge_candidates(self, project: str, terms: list[str], kinds: list[str], limit: int
                             ) -> list[tuple[Knowledge, bytes | None]]:
        """The current items whose words best match `terms`, with their vectors (None until embedded)."""
        ids = self._knowledge_matches(project, terms, kinds, limit)
        if not ids:
            return []
        rows = {r[0]: r for r in self.db.all(f"SELECT {KNOWLEDGE_COLUMNS}, embedding FROM knowledge WHERE id IN "
                                             f"({marks(ids)}) AND superseded_by IS NULL", ids)}
        return [(knowledge_of(rows[i][:-1]), rows[i][-1]) for i in ids if i in rows]

    # --- vectors (the worker's background rounds) ------------------------------------------------

    def knowledge_to_embed(self, limit: int) -> list[tuple[int, str]]:
        """Items without a vector yet: (id, the text their vector is made of)."""
        rows = self.db.all("SELECT id, kind, text, value, thing, context FROM knowledge WHERE embedding IS NULL "
                           f"AND {self.db.dialect.mine} ORDER BY id LIMIT ?", (limit,))
        return [(item_id, embedding_text(kind, text, value, thing, context))
                for item_id, kind, text, value, thing, context in rows]

    def set_knowledge_vectors(self, rows: list[tuple[int, bytes]]) -> None:
        with self.db.write():
            self.db.many("UPDATE knowledge SET embedding = ? WHERE id = ?", [(vector, item_id) for item_id, vector in rows])

    def knowledge_pending(self) -> int:
        return int(self.db.value(f"SELECT count(*) FROM knowledge WHERE embedding IS NULL AND {self.db.dialect.mine}",
                                 (), 0))

    # --- forgetting and moving --------------------------------------------------------------------

    def _forget_knowledge_context(self, session_id: str, project: str) -> None:
        """What a session's items were for (`context`) may quote a forgotten prompt, and a procedure's note a forgotten
        error: both go."""
        self.db.run("UPDATE knowledge SET context = '' WHERE session_id = ? AND project = ? AND context != ''",
                    (session_id, project))
        for item_id, text in self.db.all("SELECT id, text FROM knowledge WHERE session_id = ? AND project = ? AND "
                                         "kind = 'procedure' AND text LIKE ?", (session_id, project, f"%{NOTE_OPENING}%")):
            self.db.run("UPDATE knowledge SET text = ? WHERE id = ?", (text.split(NOTE_OPENING)[0], item_id))

    def _move_knowledge(self, ids: list[int], project: str) -> None:
        """Items follow the memories they came from into another project (storage/places.py)."""
        if ids:
            self.db.run(f"UPDATE knowledge SET project = ? WHERE source_id IN ({marks(ids)})", [project, *ids])


def _values_of(value: str) -> set[str]:
    """The bare values of an item's `value` ("attempt=8, email_job_options=8" → {"8"}; "24" → {"24"})."""
    found = {part.split("=", 1)[-1].strip() for part in value.split(", ") if part.strip()}
    return {v for v in found if len(v) >= 2}  # a lone digit is in too many sentences to tie them


def embedding_text(kind: str, text: str, value: str, thing: str, context: str) -> str:
    """What an item's vector is made of: what it says (a command run: the command, not the failures before it), what
    kind of value it is, and what it was for."""
    said = value if kind == "procedure" and text.startswith("`") else text
    return " ".join(part for part in (said, f"({thing})" if thing else "", f"— {context}" if context else "") if part)
