"""Memories in and out: capture exactly once, and every way core code reads rows back.

Written once for both backends (storage/database.py runs the same SQL on each). Two things differ
and come from the backend's Dialect (database.py): how a new memory gets its id (`new_memory_id`: ids are never
reused) and who owns it (`owner`, `mine`: in PostgreSQL the connecting role, never a value the client chooses).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Sequence

from ...shared.projects import GLOBAL_PROJECT
from ...shared.text import one_line
from ..records import Memory, MemoryDraft
from ..trust import trust_of
from . import tombstones
from .base import CONVERSATION_KINDS, MEMORY_COLUMNS, TURN_SEPARATOR, Recorded, Row, marks
from .contract import StoreContract


class Memories(StoreContract):
    # --- capture --------------------------------------------------------------------------------

    def record(self, event_id: str, draft: MemoryDraft | None, received_at: float | None = None, *,
               restoring: bool = False) -> Recorded:
        """Store one event exactly once (by `event_id`) and the memory it produced, if any. `restoring`: the memory
        is read back from a file (an import, a transcript's recovery), and a forgotten one stays forgotten
        (storage/tombstones.py)."""
        return self.record_many([(event_id, draft, received_at)], restoring=restoring)[0]

    def record_many(self, items: Sequence[tuple[str, MemoryDraft | None, float | None]], *,
                    restoring: bool = False) -> list[Recorded]:
        """Store many events in one transaction (imports and spool batches)."""
        with self.db.write():
            return [self._record_one(event_id, draft, received_at or time.time(), restoring)
                    for event_id, draft, received_at in items]

    def _record_one(self, event_id: str, draft: MemoryDraft | None, received_at: float, restoring: bool) -> Recorded:
        db = self.db
        # One round trip for both ledgers (a server is a round trip away): seen before? forgotten?
        seen, memory_id, forgotten = db.row(
            "SELECT EXISTS (SELECT 1 FROM events WHERE event_id = ?), (SELECT memory_id FROM events WHERE event_id = ?), "
            "EXISTS (SELECT 1 FROM forgotten WHERE event_id = ?)", (event_id, event_id, event_id))
        if seen:
            return Recorded(memory_id, False, True)
        if draft is None or forgotten or (restoring and tombstones.buried(db, draft)):
            db.run("INSERT INTO events(event_id, memory_id, received_at) VALUES (?, NULL, ?)", (event_id, received_at))
            return Recorded(None, False, False)
        # An answer is the same memory only for the same question: eleven "Done." replies to eleven
        # prompts are eleven turns.
        digest = tombstones.memory_digest(draft.kind, draft.text, str(draft.meta.get("prompt", "")))
        existing = db.one(f"SELECT id FROM memories WHERE project = ? AND kind = ? AND content_hash = ? "
                          f"AND {self.db.dialect.mine}", (draft.project, draft.kind, digest))
        if existing:
            memory_id, created = existing[0], False
            db.run(f"UPDATE memories SET seen_count = seen_count + 1, "
                   f"last_accessed = {db.dialect.greatest}(coalesce(last_accessed, 0), ?), "
                   f"importance = {db.dialect.greatest}(importance, ?) WHERE id = ?",
                   (draft.created_at, draft.importance, memory_id))
        else:
            neighbours = self._previous_turns(draft)
            cfg = self.config.context
            before = TURN_SEPARATOR.join(one_line(text, cfg.max_turn_chars)
                                         for _, text, _ in reversed(neighbours[: cfg.turns_before]))
            if draft.visibility != "private":
                before = ""  # a team memory is its text alone (sharing.py)
            memory_id = db.value(
                "INSERT INTO memories(id, project, session_id, kind, text, created_at, importance, content_hash, meta, "
                f"context_before, agent, trust, visibility, owner) VALUES ({db.dialect.new_memory_id}, ?, ?, ?, ?, ?, ?, "
                f"?, ?, ?, ?, ?, ?, {db.dialect.owner}) RETURNING id",
                (draft.project, draft.session_id, draft.kind, draft.text, draft.created_at, draft.importance,
                 digest, json.dumps(draft.meta, ensure_ascii=False), before, draft.agent,
                 trust_of(draft.kind, draft.agent), draft.visibility))
            created = True
            if draft.kind in CONVERSATION_KINDS:  # this turn is the "after" context of the turns before it
                updates = []
                for previous_id, _, after in neighbours[: cfg.turns_after]:
                    turns = after.split(TURN_SEPARATOR) if after else []
                    if len(turns) < cfg.turns_after:
                        turns.append(one_line(draft.text, cfg.max_turn_chars))
                        updates.append((TURN_SEPARATOR.join(turns), previous_id))
                # A shared memory keeps its text alone (sharing.py): no neighbour joins its context.
                db.many("UPDATE memories SET context_after = ? WHERE id = ? AND visibility = 'private'", updates)
        for old in draft.supersedes:
            if old != memory_id:
                db.run("UPDATE memories SET superseded_by = ? WHERE id = ? AND project = ?",
                       (memory_id, old, draft.project))
        db.run("INSERT INTO events(event_id, memory_id, received_at) VALUES (?, ?, ?)",
               (event_id, memory_id, received_at))
        return Recorded(memory_id, created, False)

    def _previous_turns(self, draft: MemoryDraft) -> list[tuple[int, str, str]]:
        """The latest conversational memories of the draft's session, newest first:
        (id, text, context_after)."""
        cfg = self.config.context
        wanted = max(cfg.turns_before, cfg.turns_after)
        if not draft.session_id or wanted == 0:
            return []
        return self.db.all(
            "SELECT id, text, context_after FROM memories WHERE session_id = ? AND project = ? "
            f"AND kind IN ({marks(CONVERSATION_KINDS)}) AND created_at <= ? "
            "ORDER BY created_at DESC, id DESC LIMIT ?",
            (draft.session_id, draft.project, *CONVERSATION_KINDS, draft.created_at, wanted),
        )

    def has_event(self, event_id: str) -> bool:
        return self.db.one("SELECT 1 FROM events WHERE event_id = ?", (event_id,)) is not None

    # --- reading --------------------------------------------------------------------------------

    def get(self, ids: list[int]) -> list[Memory]:
        """These memories, in the order asked (missing ones left out)."""
        if not ids:
            return []
        where, args = self.db.dialect.in_list("id", ids)
        rows = self._rows(f"SELECT {MEMORY_COLUMNS} FROM memories WHERE {where}", args)
        by_id = {r.id: r for r in rows}
        return [by_id[i].memory() for i in ids if i in by_id]

    def memory_row(self, memory_id: int) -> Row | None:
        rows = self._rows(f"SELECT {MEMORY_COLUMNS} FROM memories WHERE id = ?", (memory_id,))
        return rows[0] if rows else None

    def sessions_of(self, ids: Iterable[int]) -> dict[int, str]:
        """memory id -> its session (superseded memories included: they are still part of their conversation)."""
        ids = list(ids)
        if not ids:
            return {}
        where, args = self.db.dialect.in_list("id", ids)
        return dict(self.db.all(f"SELECT id, session_id FROM memories WHERE {where}", args))

    def live_rows(self, ids: Iterable[int]) -> list[Row]:
        """The rows of these memories that are not superseded (in no particular order)."""
        ids = list(ids)
        if not ids:
            return []
        where, args = self.db.dialect.in_list("id", ids)
        return self._rows(f"SELECT {MEMORY_COLUMNS} FROM memories WHERE {where} AND superseded_by IS NULL", args)

    def turn_prompt(self, session_id: str, prompt_id: str | None) -> Memory | None:
        """The prompt memory that opened the current turn of a session (for the Stop summary)."""
        rows = []
        if prompt_id:
            rows = self._rows(
                f"SELECT {MEMORY_COLUMNS} FROM memories WHERE session_id = ? AND kind = 'prompt' "
                f"AND {self.db.dialect.json_text('meta', 'prompt_id')} = ? ORDER BY created_at DESC LIMIT 1",
                (session_id, prompt_id))
        if not rows:
            rows = self._rows(
                f"SELECT {MEMORY_COLUMNS} FROM memories WHERE session_id = ? AND kind = 'prompt' "
                "AND superseded_by IS NULL ORDER BY created_at DESC, id DESC LIMIT 1", (session_id,))
        return rows[0].memory() if rows else None

    def earlier_in_session(self, session_id: str, project: str, kind: str, since: float, until: float,
                           limit: int) -> list[str]:
        """The texts of a session's memories of `kind` created in [since, until], the newest first."""
        return [r[0] for r in self.db.all(
            "SELECT text FROM memories WHERE session_id = ? AND project = ? AND kind = ? AND created_at BETWEEN ? AND ? "
            "ORDER BY created_at DESC, id DESC LIMIT ?", (session_id, project, kind, since, until, limit))]

    def answered(self, prompt: Memory) -> bool:
        """Has an answer (an exchange) been stored in the prompt's session since the prompt?"""
        return self.db.value("SELECT 1 FROM memories WHERE session_id = ? AND kind = 'exchange' AND created_at >= ? "
                             "LIMIT 1", (prompt.session_id, prompt.created_at.timestamp() - 0.001)) is not None

    def stored_tool_calls(self, session_id: str, tool_use_ids: list[str]) -> set[str]:
        """Which of these tool calls (by Claude Code's tool_use_id) of a session are stored."""
        ids = [i for i in tool_use_ids if i]
        if not ids:
            return set()
        key = self.db.dialect.json_text("meta", "tool_use_id")
        return {r[0] for r in self.db.all(f"SELECT {key} FROM memories WHERE session_id = ? AND kind IN "
                                          f"('tool', 'error') AND {key} IN ({marks(ids)})", (session_id, *ids))}

    def timeline(self, memory_id: int, before: int = 5, after: int = 5) -> list[Memory]:
        """The memory with its neighbours in time: same session when it has one, else same project."""
        anchor_row = self.memory_row(memory_id)
        if anchor_row is None:
            return []
        anchor = anchor_row.memory()
        scope, value = ("session_id", anchor.session_id) if anchor.session_id else ("project", anchor.project)
        at = anchor_row.created_at  # the stored float: a datetime round trip may not compare equal
        earlier = self._rows(
            f"SELECT {MEMORY_COLUMNS} FROM memories WHERE {scope} = ? AND project = ? AND "
            "(created_at < ? OR (created_at = ? AND id < ?)) ORDER BY created_at DESC, id DESC LIMIT ?",
            (value, anchor.project, at, at, memory_id, before))
        later = self._rows(
            f"SELECT {MEMORY_COLUMNS} FROM memories WHERE {scope} = ? AND project = ? AND "
            "(created_at > ? OR (created_at = ? AND id > ?)) ORDER BY created_at, id LIMIT ?",
            (value, anchor.project, at, at, memory_id, after))
        return [r.memory() for r in reversed(earlier)] + [anchor] + [r.memory() for r in later]

    def recent(self, project: str, kinds: tuple[str, ...], since: float, limit: int,
               exclude_session: str | None = None, only_session: str | None = None) -> list[Memory]:
        """Newest live memories of a project (the hot tier's source)."""
        sql = (f"SELECT {MEMORY_COLUMNS} FROM memories WHERE project = ? AND created_at >= ? "
               f"AND superseded_by IS NULL AND kind IN ({marks(kinds)})")
        args: list = [project, since, *kinds]
        if exclude_session:
            sql += " AND session_id != ?"
            args.append(exclude_session)
        if only_session:
            sql += " AND session_id = ?"
            args.append(only_session)
        sql += " ORDER BY created_at DESC, id DESC LIMIT ?"
        args.append(limit)
        return [r.memory() for r in self._rows(sql, args)]

    def conversation(self, memory: Memory, before: int, after: int, span: float) -> list[Memory]:
        """The prompts and answers of a memory's session next to it, in order (turns are rebuilt from
        these): up to `before` of them before it and `after` from it on (itself included), within
        `span` seconds of it."""
        return self.conversations([memory], before, after, span)[memory.id]

    def conversations(self, memories: list[Memory], before: int, after: int,
                      span: float) -> dict[int, list[Memory]]:
        """`conversation` of each of these memories, read in one statement (a server is a round trip away;
        the gate reads a dozen at once). Kept for the rest of a request (Store.request_scope), with each
        turn's vector where it lives in the row: whether a short prompt follows up the turn before it is
        decided by meaning (turns.py)."""
        cache = self._request_cache("conversation")
        found: dict[int, list[Memory]] = {}
        unread: dict[int, Memory] = {}
        for memory in memories:
            if cache is not None and (memory.id, before, after, span) in cache:
                found[memory.id] = cache[(memory.id, before, after, span)]
            else:
                unread.setdefault(memory.id, memory)
        wanted = list(unread.values())
        if not wanted:
            return found
        rows = [((r[0], r[1], r[2]), Row(*r[3:])) for r in self._conversation_rows(wanted, before, after, span)]
        # A turn near several candidates is one object (neighbouring candidates share most of their turns).
        built = self._request_cache("turn")
        if built is None:
            built = {}
        for n, memory in enumerate(wanted):
            mine = sorted(((side, r) for (k, side, _), r in rows if k == n), key=lambda e: (e[1].created_at, e[1].id))
            found[memory.id] = [built[r.id] if r.id in built else built.setdefault(r.id, r.memory())
                                for side in (0, 1) for s, r in mine if s == side]
            if cache is not None:
                cache[(memory.id, before, after, span)] = found[memory.id]
        return found

    def select_memories(self, *, ids: list[int] | None = None, project: str | None = None,
                        session_id: str | None = None, before: float | None = None,
                        match: str | None = None, kind: str | None = None, since: float | None = None,
                        newest: int | None = None, mine: bool = False) -> list[Memory]:
        """The memories that meet every given condition (what `recall forget` would delete), oldest
        first, or only the `newest` N of them, newest first (browsing). `match`: the text (or an
        exchange's question) contains it, case-insensitively; `mine`: only this role's own."""
        where, args = [], []
        for condition, value in (("kind = ?", kind), ("created_at >= ?", since), ("project = ?", project),
                                 ("session_id = ?", session_id), ("created_at < ?", before)):
            if value is not None:
                where.append(condition)
                args.append(value)
        if ids is not None:
            where.append(f"id IN ({marks(ids)})")
            args += list(ids)
        if match is not None:
            pattern = "%" + match.lower().replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
            where.append("(lower(text) LIKE ? ESCAPE '\\' OR lower(meta) LIKE ? ESCAPE '\\')")
            args += [pattern, pattern]
        if mine:
            where.append(f"{self.db.dialect.mine}")
        sql = f"SELECT {MEMORY_COLUMNS} FROM memories" + (" WHERE " + " AND ".join(where) if where else "")
        if newest is not None:
            return [row.memory() for row in self._rows(sql + " ORDER BY created_at DESC, id DESC LIMIT ?",
                                                       [*args, newest])]
        return [row.memory() for row in self._rows(sql + " ORDER BY id", args)]

    def usage_rows(self) -> list[tuple[str, float, float | None, int]]:
        """(kind, created_at, last_accessed, uses) of every live memory (for the strength figures)."""
        return self.db.all("SELECT kind, created_at, last_accessed, access_count + seen_count - 1 "
                           "FROM memories WHERE superseded_by IS NULL")

    # --- changing what is kept --------------------------------------------------------------------

    def set_pinned(self, memory_ids: list[int], pinned: bool) -> list[int]:
        """Pin or unpin; returns the ids that exist (and this role may change)."""
        if not memory_ids:
            return []
        with self.db.write():
            found = [r[0] for r in self.db.all(
                f"SELECT id FROM memories WHERE id IN ({marks(memory_ids)}) AND {self.db.dialect.mine}", memory_ids)]
            self.db.many("UPDATE memories SET pinned = ? WHERE id = ?", [(int(pinned), i) for i in found])
        return found

    def pinned_ids(self, project: str | None) -> list[int]:
        sql, args = "SELECT id FROM memories WHERE pinned = 1 AND superseded_by IS NULL", []
        if project is not None:
            sql += " AND project IN (?, ?)"
            args += [project, GLOBAL_PROJECT]
        return [r[0] for r in self.db.all(sql, args)]

    def touch(self, memory_ids: list[int], at: float | None = None) -> None:
        """Count memories as used (reinforcement for the RFM priority)."""
        if not memory_ids:
            return
        at = at or time.time()
        with self.db.write():
            self.db.many("UPDATE memories SET access_count = access_count + 1, last_accessed = ? WHERE id = ?",
                         [(at, m) for m in memory_ids])

    def supersede(self, older: list[int], newer: int, kind: str) -> None:
        """Mark live memories of `kind` as replaced by `newer` (they stay readable, not searched)."""
        if older:
            self.db.run(f"UPDATE memories SET superseded_by = ? WHERE id IN ({marks(older)}) "
                        "AND kind = ? AND superseded_by IS NULL", (newer, *older, kind))
