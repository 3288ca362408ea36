"""The store: every SQL statement recall runs, over one SQLite connection.

`Store` knows tables, not models or ranking: capture writes through `record`, search reads
candidates and rows through `lexical_candidates`, `nearest` and `live_rows`, the background
jobs drain the embedding queue through `embedding_batch` / `save_embeddings`, and `recall
doctor` asks for its checks here. One instance serialises its connection with a lock, so it
can serve many threads; the worker gives its embedding thread a Store of its own.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import apsw

from ..shared.logs import JsonLog
from ..shared.paths import DataPaths
from ..shared.text import one_line
from . import db
from .config import Config
from ..shared.projects import GLOBAL_PROJECT
from .records import Hit, Memory, MemoryDraft, to_datetime
from .term_frequency import TermFrequencies
from .trust import trust_of
from .vectors import VectorIndex

if TYPE_CHECKING:
    from .recent_vectors import RecentVectors  # numpy: only the worker loads it

MEMORY_COLUMNS = (
    "id, project, session_id, kind, text, created_at, importance, seen_count, access_count, "
    "last_accessed, superseded_by, meta, pinned, agent, trust"
)
CONVERSATION_KINDS = ("prompt", "exchange")  # the turns of a conversation: each other's context
TURN_SEPARATOR = "\n\x1e "  # between neighbouring turns in the context columns
# A new memory's id: above every id in use and every id ever deleted (db.m002: ids are never reused).
NEXT_MEMORY_ID = ("(SELECT max(coalesce((SELECT max(id) FROM memories), 0), "
                  "coalesce((SELECT last_id FROM id_watermark WHERE name = 'memories'), 0)) + 1)")


def content_hash(text: str) -> str:
    """Identity of a memory's content for deduplication (case and spacing do not matter)."""
    return hashlib.sha1(" ".join(text.lower().split()).encode("utf-8")).hexdigest()


@dataclass
class Recorded:
    """What storing one event did."""

    memory_id: int | None
    created: bool  # a new memory row (False: deduplicated into an existing one, or none)
    duplicate_event: bool  # this event id was stored before: nothing changed


@dataclass
class Row:
    """One memories row, as search and ranking read it."""

    id: int
    project: str
    session_id: str
    kind: str
    text: str
    created_at: float
    importance: float
    seen_count: int
    access_count: int
    last_accessed: float | None
    superseded_by: int | None
    meta: str
    pinned: int = 0
    agent: str = ""
    trust: float = 1.0

    def memory(self) -> Memory:
        # model_construct: a stored row is valid already, and validating it costs a prompt ~2 ms
        # (a gate builds a few hundred of these).
        return Memory.model_construct(
            id=self.id, text=self.text, created_at=to_datetime(self.created_at), session_id=self.session_id,
            project=self.project, kind=self.kind, importance=self.importance, seen_count=self.seen_count,
            access_count=self.access_count, superseded_by=self.superseded_by, meta=json.loads(self.meta or "{}"),
            pinned=bool(self.pinned), agent=self.agent, trust=self.trust,
        )

    def hit(self, score: float, similarity: float | None = None) -> Hit:
        return Hit(
            id=self.id, text=self.text, score=round(score, 6), created_at=to_datetime(self.created_at),
            similarity=None if similarity is None else round(similarity, 4),
            session_id=self.session_id, project=self.project, kind=self.kind, meta=json.loads(self.meta or "{}"),
            agent=self.agent, trust=self.trust,
        )


def _marks(values) -> str:
    return ",".join("?" * len(values))


class Store:
    def __init__(self, paths: DataPaths, config: Config):
        self.paths = paths
        self.config = config
        self.log = JsonLog(paths.log_file, "store")
        self.lock = threading.RLock()
        self.conn = db.open_database(paths.db)
        self.vector_error = db.load_vec(self.conn)
        self.vectors = VectorIndex(self.conn) if self.vector_error is None else None
        self.recent_vectors: RecentVectors | None = None  # set by keep_recent_vectors
        self.term_frequencies = TermFrequencies()

    # --- lifecycle ----------------------------------------------------------------------------

    def close(self) -> None:
        with self.lock:
            self.conn.close()

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # --- capture --------------------------------------------------------------------------------

    def record(self, event_id: str, draft: MemoryDraft | None, received_at: float | None = None) -> Recorded:
        """Store one event exactly once (by `event_id`) and the memory it produced, if any."""
        return self.record_many([(event_id, draft, received_at)])[0]

    def record_many(self, items: list[tuple[str, MemoryDraft | None, float | None]]) -> list[Recorded]:
        """Store many events in one transaction (imports and spool batches)."""
        results = []
        with self.lock, db.write_transaction(self.conn):
            for event_id, draft, received_at in items:
                results.append(self._record_locked(event_id, draft, received_at or time.time()))
        return results

    def _record_locked(self, event_id: str, draft: MemoryDraft | None, received_at: float) -> Recorded:
        conn = self.conn
        known = conn.execute("SELECT memory_id FROM events WHERE event_id = ?", (event_id,)).fetchone()
        if known is not None:
            return Recorded(known[0], False, True)
        if draft is None or conn.execute("SELECT 1 FROM forgotten WHERE event_id = ?", (event_id,)).fetchone():
            conn.execute("INSERT INTO events(event_id, memory_id, received_at) VALUES (?, NULL, ?)",
                         (event_id, received_at))
            return Recorded(None, False, False)
        # An answer is the same memory only for the same question: eleven "Done." replies to eleven
        # prompts are eleven turns.
        digest = content_hash(draft.text if draft.kind != "exchange" else f"{draft.meta.get('prompt', '')}\n{draft.text}")
        existing = conn.execute(
            "SELECT id FROM memories WHERE project = ? AND kind = ? AND content_hash = ?",
            (draft.project, draft.kind, digest),
        ).fetchone()
        if existing:
            memory_id, created = existing[0], False
            conn.execute(
                "UPDATE memories SET seen_count = seen_count + 1, last_accessed = max(coalesce(last_accessed, 0), ?),"
                " importance = max(importance, ?) WHERE id = ?",
                (draft.created_at, draft.importance, memory_id),
            )
        else:
            neighbours = self._previous_turns(draft)
            cfg = self.config.context
            before = TURN_SEPARATOR.join(one_line(text, cfg.max_turn_chars)
                                         for _, text, _ in reversed(neighbours[: cfg.turns_before]))
            conn.execute(
                "INSERT INTO memories(id, project, session_id, kind, text, created_at, importance, content_hash, meta, "
                f"context_before, agent, trust) VALUES ({NEXT_MEMORY_ID}, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (draft.project, draft.session_id, draft.kind, draft.text, draft.created_at, draft.importance,
                 digest, json.dumps(draft.meta, ensure_ascii=False), before, draft.agent,
                 trust_of(draft.kind, draft.agent)),
            )
            memory_id, created = conn.last_insert_rowid(), True
            if draft.kind in CONVERSATION_KINDS:  # this turn is the "after" context of the turns before it
                for previous_id, _, after in neighbours[: cfg.turns_after]:
                    turns = after.split(TURN_SEPARATOR) if after else []
                    if len(turns) < cfg.turns_after:
                        turns.append(one_line(draft.text, cfg.max_turn_chars))
                        conn.execute("UPDATE memories SET context_after = ? WHERE id = ?",
                                     (TURN_SEPARATOR.join(turns), previous_id))
        for old in draft.supersedes:
            if old != memory_id:
                conn.execute("UPDATE memories SET superseded_by = ? WHERE id = ? AND project = ?",
                             (memory_id, old, draft.project))
        conn.execute("INSERT INTO events(event_id, memory_id, received_at) VALUES (?, ?, ?)",
                     (event_id, memory_id, received_at))
        return Recorded(memory_id, created, False)

    def _previous_turns(self, draft: MemoryDraft) -> list[tuple[int, str, str]]:
        """The latest conversational memories of the draft's session, newest first:
        (id, text, context_after)."""
        cfg = self.config.context
        wanted = max(cfg.turns_before, cfg.turns_after)
        if not draft.session_id or wanted == 0:
            return []
        return self.conn.execute(
            "SELECT id, text, context_after FROM memories WHERE session_id = ? AND project = ? "
            f"AND kind IN ({_marks(CONVERSATION_KINDS)}) AND created_at <= ? "
            "ORDER BY created_at DESC, id DESC LIMIT ?",
            (draft.session_id, draft.project, *CONVERSATION_KINDS, draft.created_at, wanted),
        ).fetchall()

    def has_event(self, event_id: str) -> bool:
        with self.lock:
            return self.conn.execute("SELECT 1 FROM events WHERE event_id = ?", (event_id,)).fetchone() is not None

    # --- sessions -------------------------------------------------------------------------------

    def open_session(self, session_id: str, project: str, at: float, transcript_path: str | None) -> None:
        with self.lock, db.write_transaction(self.conn):
            self.conn.execute(
                "INSERT INTO sessions(session_id, project, started_at, transcript_path) VALUES (?, ?, ?, ?) "
                "ON CONFLICT(session_id) DO UPDATE SET ended_at = NULL, end_reason = NULL",
                (session_id, project, at, transcript_path),
            )

    def close_session(self, session_id: str, project: str, at: float, reason: str) -> None:
        with self.lock, db.write_transaction(self.conn):
            self.conn.execute(
                "INSERT INTO sessions(session_id, project, started_at, ended_at, end_reason) VALUES (?, ?, ?, ?, ?) "
                "ON CONFLICT(session_id) DO UPDATE SET ended_at = excluded.ended_at, end_reason = excluded.end_reason",
                (session_id, project, at, at, reason),
            )

    def import_session(self, session_id: str, project: str, started: float, ended: float,
                       transcript_path: str) -> None:
        """Record (or widen) an imported session's time span."""
        with self.lock, db.write_transaction(self.conn):
            self.conn.execute(
                "INSERT INTO sessions(session_id, project, started_at, ended_at, end_reason, transcript_path) "
                "VALUES (?, ?, ?, ?, 'imported', ?) ON CONFLICT(session_id) DO UPDATE SET "
                "started_at = min(started_at, excluded.started_at), "
                "ended_at = max(coalesce(ended_at, 0), excluded.ended_at)",
                (session_id, project, started, ended, transcript_path),
            )

    def imported_size(self, path: str) -> int | None:
        with self.lock:
            row = self.conn.execute("SELECT size FROM imported_files WHERE path = ?", (path,)).fetchone()
        return row[0] if row else None

    def mark_imported(self, path: str, size: int, entries: int) -> None:
        with self.lock, db.write_transaction(self.conn):
            self.conn.execute(
                "INSERT OR REPLACE INTO imported_files(path, size, entries, imported_at) VALUES (?, ?, ?, ?)",
                (path, size, entries, time.time()),
            )

    def turn_prompt(self, session_id: str, prompt_id: str | None) -> Memory | None:
        """The prompt memory that opened the current turn of a session (for the Stop summary)."""
        with self.lock:
            row = None
            if prompt_id:
                row = self.conn.execute(
                    f"SELECT {MEMORY_COLUMNS} FROM memories WHERE session_id = ? AND kind = 'prompt' "
                    "AND json_extract(meta, '$.prompt_id') = ? ORDER BY created_at DESC LIMIT 1",
                    (session_id, prompt_id),
                ).fetchone()
            if row is None:
                row = self.conn.execute(
                    f"SELECT {MEMORY_COLUMNS} FROM memories WHERE session_id = ? AND kind = 'prompt' "
                    "AND superseded_by IS NULL ORDER BY created_at DESC, id DESC LIMIT 1",
                    (session_id,),
                ).fetchone()
        return Row(*row).memory() if row else None

    # --- injection bookkeeping ------------------------------------------------------------------

    def injected_ids(self, session_id: str, hook: str | None = None) -> set[int]:
        """What recall injected into a session (by one hook only, if given)."""
        sql, args = "SELECT memory_id FROM injections WHERE session_id = ?", [session_id]
        if hook:
            sql += " AND hook = ?"
            args.append(hook)
        with self.lock:
            return {r[0] for r in self.conn.execute(sql, args)}

    def mark_injected(self, session_id: str, memory_ids: list[int], hook: str, at: float | None = None) -> None:
        if not memory_ids:
            return
        at = at or time.time()
        with self.lock, db.write_transaction(self.conn):
            self.conn.executemany(
                "INSERT OR REPLACE INTO injections(session_id, memory_id, injected_at, hook) VALUES (?, ?, ?, ?)",
                [(session_id, m, at, hook) for m in memory_ids],
            )
            self.conn.executemany(
                "UPDATE memories SET access_count = access_count + 1, last_accessed = ? WHERE id = ?",
                [(at, m) for m in memory_ids],
            )

    def add_receipt(self, session_id: str, project: str, hook: str, at: float, prompt_memory_id: int | None,
                    items: list[tuple[int, str]]) -> None:
        """Keep what an injection held and why (`recall injections`)."""
        if not items:
            return
        with self.lock, db.write_transaction(self.conn):
            self.conn.execute(
                "INSERT INTO injection_receipts(session_id, project, hook, injected_at, prompt_memory_id, items) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (session_id, project, hook, at, prompt_memory_id,
                 json.dumps([{"id": i, "why": why} for i, why in items], ensure_ascii=False)))

    def receipts(self, session_id: str | None = None, limit: int = 20) -> list[dict]:
        """The latest injections, newest first: when, into which session and prompt, which memories and why."""
        sql = ("SELECT r.id, r.session_id, r.project, r.hook, r.injected_at, r.items, p.text FROM injection_receipts r "
               "LEFT JOIN memories p ON p.id = r.prompt_memory_id")
        args: list = []
        if session_id:
            sql += " WHERE r.session_id = ?"
            args.append(session_id)
        sql += " ORDER BY r.injected_at DESC, r.id DESC LIMIT ?"
        args.append(limit)
        with self.lock:
            rows = self.conn.execute(sql, args).fetchall()
        return [{"receipt": rid, "session_id": sid, "project": project, "hook": hook, "injected_at": at,
                 "prompt": prompt, "memories": json.loads(items)}
                for rid, sid, project, hook, at, items, prompt in rows]

    def set_pinned(self, memory_ids: list[int], pinned: bool) -> list[int]:
        """Pin or unpin; returns the ids that exist."""
        with self.lock, db.write_transaction(self.conn):
            found = [r[0] for r in self.conn.execute(
                f"SELECT id FROM memories WHERE id IN ({_marks(memory_ids)})", memory_ids)] if memory_ids else []
            self.conn.executemany("UPDATE memories SET pinned = ? WHERE id = ?", [(int(pinned), i) for i in found])
        return found

    def pinned_ids(self, project: str | None) -> list[int]:
        sql, args = "SELECT id FROM memories WHERE pinned = 1 AND superseded_by IS NULL", []
        if project is not None:
            sql += " AND project IN (?, ?)"
            args += [project, GLOBAL_PROJECT]
        with self.lock:
            return [r[0] for r in self.conn.execute(sql, args)]

    def prune_candidates(self, before: float, limit: int) -> list[Memory]:
        """The next memories a pruning round looks at: those after the cursor, in id order, up to the first
        one still younger than `before` (ids grow with time; each round goes on where the last stopped)."""
        with self.lock:
            cursor = self.conn.execute("SELECT last_memory_id FROM prune_cursor WHERE id = 1").fetchone()[0]
        rows = self._rows(f"SELECT {MEMORY_COLUMNS} FROM memories WHERE id > ? ORDER BY id LIMIT ?", (cursor, limit))
        ready = []
        for row in rows:
            if row.created_at >= before:
                break
            ready.append(row.memory())
        return ready

    def advance_prune_cursor(self, memory_id: int) -> None:
        with self.lock, db.write_transaction(self.conn):
            self.conn.execute("UPDATE prune_cursor SET last_memory_id = max(last_memory_id, ?) WHERE id = 1",
                              (memory_id,))

    def count_pruned(self, kinds: list[str], at: float) -> None:
        with self.lock, db.write_transaction(self.conn):
            for kind in kinds:
                self.conn.execute("INSERT INTO pruned(kind, count, last_at) VALUES (?, 1, ?) ON CONFLICT(kind) "
                                  "DO UPDATE SET count = count + 1, last_at = excluded.last_at", (kind, at))

    def pruned_counts(self) -> dict[str, int]:
        with self.lock:
            return dict(self.conn.execute("SELECT kind, count FROM pruned ORDER BY kind").fetchall())

    def usage_rows(self) -> list[tuple[str, float, float | None, int]]:
        """(kind, created_at, last_accessed, uses) of every live memory (for the strength figures)."""
        with self.lock:
            return self.conn.execute("SELECT kind, created_at, last_accessed, access_count + seen_count - 1 "
                                     "FROM memories WHERE superseded_by IS NULL").fetchall()

    def projects(self) -> list[dict]:
        """Each project with its memory count and last activity, most recent first."""
        with self.lock:
            rows = self.conn.execute(
                "SELECT project, count(*), max(created_at), sum(pinned) FROM memories GROUP BY project "
                "ORDER BY max(created_at) DESC").fetchall()
        return [{"project": p, "memories": n, "last_activity": last, "pinned": pinned or 0}
                for p, n, last, pinned in rows]

    def reset_injections(self, session_id: str) -> None:
        """After compaction the context no longer holds what was injected: allow it again."""
        with self.lock, db.write_transaction(self.conn):
            self.conn.execute("DELETE FROM injections WHERE session_id = ?", (session_id,))

    # --- reading --------------------------------------------------------------------------------

    def _rows(self, sql: str, args=()) -> list[Row]:
        with self.lock:
            return [Row(*r) for r in self.conn.execute(sql, args)]

    def get(self, ids: list[int]) -> list[Memory]:
        if not ids:
            return []
        rows = self._rows(f"SELECT {MEMORY_COLUMNS} FROM memories WHERE id IN ({_marks(ids)})", list(ids))
        by_id = {r.id: r for r in rows}
        return [by_id[i].memory() for i in ids if i in by_id]

    def timeline(self, memory_id: int, before: int = 5, after: int = 5) -> list[Memory]:
        """The memory with its neighbours in time: same session when it has one, else same project."""
        rows = self._rows(f"SELECT {MEMORY_COLUMNS} FROM memories WHERE id = ?", (memory_id,))
        if not rows:
            return []
        anchor_row = rows[0]
        anchor = anchor_row.memory()
        scope, value = ("session_id", anchor.session_id) if anchor.session_id else ("project", anchor.project)
        at = anchor_row.created_at  # the stored float: a datetime round trip may not compare equal
        earlier = self._rows(
            f"SELECT {MEMORY_COLUMNS} FROM memories WHERE {scope} = ? AND project = ? AND "
            "(created_at < ? OR (created_at = ? AND id < ?)) ORDER BY created_at DESC, id DESC LIMIT ?",
            (value, anchor.project, at, at, memory_id, before),
        )
        later = self._rows(
            f"SELECT {MEMORY_COLUMNS} FROM memories WHERE {scope} = ? AND project = ? AND "
            "(created_at > ? OR (created_at = ? AND id > ?)) ORDER BY created_at, id LIMIT ?",
            (value, anchor.project, at, at, memory_id, after),
        )
        return [r.memory() for r in reversed(earlier)] + [anchor] + [r.memory() for r in later]

    def recent(self, project: str, kinds: tuple[str, ...], since: float, limit: int,
               exclude_session: str | None = None, only_session: str | None = None) -> list[Memory]:
        """Newest live memories of a project (the hot tier's source)."""
        sql = (f"SELECT {MEMORY_COLUMNS} FROM memories WHERE project = ? AND created_at >= ? "
               f"AND superseded_by IS NULL AND kind IN ({_marks(kinds)})")
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
        at = memory.created_at.timestamp()
        common = (f"SELECT {MEMORY_COLUMNS} FROM memories WHERE session_id = ? AND project = ? "
                  f"AND kind IN ({_marks(CONVERSATION_KINDS)}) AND created_at BETWEEN ? AND ? ")
        args = (memory.session_id, memory.project, *CONVERSATION_KINDS, at - span, at + span, at, at, memory.id)
        earlier = self._rows(common + "AND (created_at < ? OR (created_at = ? AND id < ?)) "
                             "ORDER BY created_at DESC, id DESC LIMIT ?", (*args, before))
        later = self._rows(common + "AND (created_at > ? OR (created_at = ? AND id >= ?)) "
                           "ORDER BY created_at, id LIMIT ?", (*args, after))
        return [r.memory() for r in reversed(earlier)] + [r.memory() for r in later]

    # --- search support -------------------------------------------------------------------------

    def selective_terms(self, terms: list[str], project: str | None) -> list[str]:
        """The query terms a lexical match in `project` must hold one of: all of them, except on a big
        project, where the words most of its memories hold are not enough (term_frequency.py)."""
        with self.lock:
            return self.term_frequencies.selective(self.conn, terms, self.config.ranking.common_term_share, project)

    def lexical_candidates(self, expression: str, n: int, project: str | None, since: float | None,
                           until: float | None) -> dict[int, float]:
        """memory id -> BM25 score (positive, higher is better) of the n best FTS5 matches of a MATCH
        expression among live memories."""
        weights = ", ".join(str(float(w)) for w in self.config.ranking.fts_column_weights)
        # CROSS JOIN pins the FTS index as the outer loop: with a plain JOIN SQLite walked the
        # project's rows and probed the index once per row (400 ms instead of 3 ms at 10k memories).
        sql = (f"SELECT memories.id, -bm25(memories_fts, {weights}) FROM memories_fts "
               "CROSS JOIN memories ON memories.id = memories_fts.rowid "
               "WHERE memories_fts MATCH ? AND memories.superseded_by IS NULL")
        args: list = [expression]
        if project is not None:
            sql += " AND memories.project IN (?, ?)"
            args.extend((project, GLOBAL_PROJECT))
        with self.lock:
            if since is not None:
                # Ids grow with time (live capture), so a time window is also a rowid range, which FTS5
                # applies inside the index instead of scoring every older match first.
                first = self.conn.execute(
                    "SELECT min(id) FROM memories WHERE project IN (?, ?) AND created_at >= ?" if project is not None
                    else "SELECT min(id) FROM memories WHERE created_at >= ?",
                    (project, GLOBAL_PROJECT, since) if project is not None else (since,),
                ).fetchone()[0]
                if first is None:
                    return {}
                sql += " AND memories_fts.rowid >= ? AND memories.created_at >= ?"
                args.extend((first, since))
            if until is not None:
                sql += " AND memories.created_at <= ?"
                args.append(until)
            sql += f" ORDER BY bm25(memories_fts, {weights}) LIMIT ?"
            args.append(n)
            return {memory_id: score for memory_id, score in self.conn.execute(sql, args)}

    def dense_ready(self, embedder) -> bool:
        """Vectors can be searched: extension loaded and the index holds this model's vectors."""
        return bool(self.vectors and embedder and self.vectors.matches(embedder.name, embedder.dim))

    def nearest(self, vector: bytes, n: int, project: str | None, since: float | None,
                until: float | None) -> dict[int, float]:
        """memory id -> cosine similarity of the n nearest vectors."""
        with self.lock:
            recent = self._synced_recent_vectors()
            if recent is not None and recent.covers(since):
                found = recent.nearest(vector, n, project, since, until)
            else:
                found = self.vectors.nearest(vector, n, project, since, until)
            if project is not None and project != GLOBAL_PROJECT:  # the user's global memories join every project
                if self.has_global():
                    found.update(self.vectors.nearest(vector, n, GLOBAL_PROJECT, None, None))
            return found

    def has_global(self) -> bool:
        with self.lock:
            return self.conn.execute("SELECT 1 FROM memories WHERE project = ? LIMIT 1", (GLOBAL_PROJECT,)).fetchone() \
                is not None

    def nearest_each(self, vectors: list[bytes], n: int, project: str | None, since: float | None,
                     until: float | None, kinds: tuple[str, ...] | None = None) -> list[dict[int, float]]:
        """`nearest` for several vectors; of these kinds only when the vectors are in RAM (sqlite-vec
        cannot filter by kind: the caller checks the kinds of what it gets)."""
        with self.lock:
            recent = self._synced_recent_vectors()
            if recent is not None and recent.covers(since):
                return recent.nearest_each(vectors, n, project, since, until, kinds)
            return [self.vectors.nearest(v, n, project, since, until) for v in vectors]

    def keep_recent_vectors(self, recent: RecentVectors) -> None:
        """Search recent vectors in RAM (the worker does: see recent_vectors.py); loads them now."""
        with self.lock:
            recent.sync(self.vectors, force=True)
        self.recent_vectors = recent

    def sync_recent_vectors(self) -> None:
        """Bring the RAM copy up to date now (after this process wrote vectors)."""
        if self.recent_vectors is not None and self.vectors:
            with self.lock:
                self.recent_vectors.sync(self.vectors, force=True)

    def _synced_recent_vectors(self) -> RecentVectors | None:
        recent = self.recent_vectors
        if recent is None or not recent.loaded:
            return None
        try:
            recent.sync(self.vectors)
        except apsw.SQLError:  # the vector table is being rebuilt
            return None
        return recent

    def vector_of(self, memory_id: int) -> bytes | None:
        """A memory's stored embedding; None when it has none yet (or there is no vector table yet)."""
        if not self.vectors:
            return None
        with self.lock:
            recent = self._synced_recent_vectors()
            if recent is not None:
                found = recent.get(memory_id)
                if found is not None:
                    return found
            try:
                return self.vectors.get(memory_id)
            except apsw.SQLError:  # the table is created with the first embedding
                return None

    def live_rows(self, ids) -> list[Row]:
        """The rows of these memories that are not superseded (in no particular order)."""
        ids = list(ids)
        if not ids:
            return []
        return self._rows(f"SELECT {MEMORY_COLUMNS} FROM memories WHERE id IN ({_marks(ids)}) "
                          "AND superseded_by IS NULL", ids)

    def indexed_texts(self, project: str) -> list[tuple[str, str, str]]:
        """(text, context_before, context_after) of a project's live memories: what FTS5 indexes
        (for the rank-bm25 comparison of `recall bench locomo`)."""
        with self.lock:
            return self.conn.execute(
                "SELECT text, context_before, context_after FROM memories WHERE project = ? "
                "AND superseded_by IS NULL", (project,)).fetchall()

    def touch(self, memory_ids: list[int], at: float | None = None) -> None:
        """Count memories as used (reinforcement for the RFM priority)."""
        if not memory_ids:
            return
        at = at or time.time()
        with self.lock, db.write_transaction(self.conn):
            self.conn.executemany(
                "UPDATE memories SET access_count = access_count + 1, last_accessed = ? WHERE id = ?",
                [(at, m) for m in memory_ids],
            )

    # --- embeddings and supersession --------------------------------------------------------------

    def pending_embeddings(self) -> int:
        with self.lock:
            return self.conn.execute("SELECT count(*) FROM embed_queue").fetchone()[0]

    def ensure_vector_index(self, model: str, dim: int) -> None:
        """Create the vector table for a model if there is none (a different model needs reindex);
        a table of an older layout is rebuilt."""
        if not self.vectors:
            return
        with self.lock, db.write_transaction(self.conn):
            if self.vectors.previous_table_to_copy():
                copied = self.vectors.copy_previous_table()
                self.log.info("vector_index_copied", vectors=copied, reason="smaller chunks per partition")
            if not self.vectors.exists():
                self.vectors.create(model, dim)
            elif not self.vectors.current():
                self.log.info("vector_index_rebuilt", reason="older table layout")
                self.vectors.create(*(self.vectors.info() or (model, dim)))

    def reset_vector_index(self, model: str, dim: int) -> None:
        """Drop every vector and queue every memory for embedding with `model`."""
        with self.lock, db.write_transaction(self.conn):
            self.vectors.create(model, dim)

    def embedding_batch(self, size: int) -> list[tuple[int, str, float, str]]:
        """The next queued memories to embed: (id, project, created_at, text). Superseded memories are
        never searched, so they leave the queue instead."""
        with self.lock:
            self.conn.execute(
                "DELETE FROM embed_queue WHERE memory_id IN (SELECT q.memory_id FROM embed_queue q "
                "JOIN memories m ON m.id = q.memory_id WHERE m.superseded_by IS NOT NULL)"
            )
            return self.conn.execute(
                "SELECT m.id, m.project, m.created_at, m.text FROM embed_queue q JOIN memories m ON m.id = q.memory_id "
                "ORDER BY q.memory_id LIMIT ?",
                (size,),
            ).fetchall()

    def save_embeddings(self, rows: list[tuple[int, str, float, bytes]], done_ids: list[int],
                        supersede=None) -> list[tuple[int, str, float, bytes]]:
        """Store vectors (id, project, created_at, vector) of memories that still exist, take `done_ids`
        off the queue, and, in the same transaction, let `supersede(added)` mark older near-duplicates.
        Returns the rows actually added."""
        with self.lock, db.write_transaction(self.conn):
            ids = [r[0] for r in rows]
            still_there = {r[0] for r in self.conn.execute(
                f"SELECT id FROM memories WHERE id IN ({_marks(ids)})", ids)} if ids else set()
            added = [r for r in rows if r[0] in still_there]
            self.vectors.add(added)
            self.conn.executemany("DELETE FROM embed_queue WHERE memory_id = ?", [(i,) for i in done_ids])
            if supersede is not None:
                supersede(added)
        return added

    def memory_row(self, memory_id: int) -> Row | None:
        rows = self._rows(f"SELECT {MEMORY_COLUMNS} FROM memories WHERE id = ?", (memory_id,))
        return rows[0] if rows else None

    def supersede(self, older: list[int], newer: int, kind: str) -> None:
        """Mark live memories of `kind` as replaced by `newer` (they stay readable, not searched)."""
        if older:
            self.conn.execute(
                f"UPDATE memories SET superseded_by = ? WHERE id IN ({_marks(older)}) "
                "AND kind = ? AND superseded_by IS NULL",
                (newer, *older, kind),
            )

    # --- forgetting -----------------------------------------------------------------------------

    def select_memories(self, *, ids: list[int] | None = None, project: str | None = None,
                        session_id: str | None = None, before: float | None = None,
                        match: str | None = None, kind: str | None = None, since: float | None = None,
                        newest: int | None = None) -> list[Memory]:
        """The memories that meet every given condition (what `recall forget` would delete), oldest
        first, or only the `newest` N of them, newest first (browsing). `match`: the text (or an
        exchange's question) contains it, case-insensitively."""
        where, args = [], []
        for condition, value in (("kind = ?", kind), ("created_at >= ?", since), ("project = ?", project),
                                 ("session_id = ?", session_id), ("created_at < ?", before)):
            if value is not None:
                where.append(condition)
                args.append(value)
        if ids is not None:
            where.append(f"id IN ({_marks(ids)})")
            args += list(ids)
        if match is not None:
            pattern = "%" + match.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
            where.append("(text LIKE ? ESCAPE '\\' OR meta LIKE ? ESCAPE '\\')")
            args += [pattern, pattern]
        sql = f"SELECT {MEMORY_COLUMNS} FROM memories" + (" WHERE " + " AND ".join(where) if where else "")
        if newest is not None:
            return [row.memory() for row in self._rows(sql + " ORDER BY created_at DESC, id DESC LIMIT ?",
                                                       [*args, newest])]
        return [row.memory() for row in self._rows(sql + " ORDER BY id", args)]

    def forget(self, memory_ids: list[int]) -> list[Memory]:
        """Delete memories for good and return them: their rows, vectors and index entries, and every
        copy of their text in other memories (neighbours' context columns, an exchange's question).
        The full-text index is merged afterwards (FTS5 'optimize': no stale copy of the text survives in an
        older segment) and secure_delete zeroes every freed page, so no byte stays in the file; the WAL is
        checkpointed and truncated after. Re-imports will not restore them (the `forgotten` ledger keeps event ids)."""
        if not memory_ids:
            return []
        marks = _marks(memory_ids)
        now = time.time()
        with self.lock:
            with db.write_transaction(self.conn):
                gone = [row.memory() for row in self._rows(
                    f"SELECT {MEMORY_COLUMNS} FROM memories WHERE id IN ({marks})", list(memory_ids))]
                ids = [m.id for m in gone]
                if not ids:
                    return []
                marks = _marks(ids)
                self.conn.execute(
                    f"INSERT OR IGNORE INTO forgotten(event_id, forgotten_at) SELECT event_id, ? FROM events "
                    f"WHERE memory_id IN ({marks})", [now, *ids])
                if self.vectors and self.vectors.exists():
                    self.vectors.delete(ids)
                self.conn.execute(f"DELETE FROM memories WHERE id IN ({marks})", ids)
                # Receipts of injections that held a forgotten memory, or answered a forgotten prompt.
                self.conn.execute(
                    f"DELETE FROM injection_receipts WHERE prompt_memory_id IN ({marks}) OR EXISTS "
                    f"(SELECT 1 FROM json_each(injection_receipts.items) WHERE json_extract(value, '$.id') IN ({marks}))",
                    ids + ids)
                self.term_frequencies.clear()
                texts = [m.text for m in gone]
                for session_id, project in {(m.session_id, m.project) for m in gone if m.session_id}:
                    self._rebuild_context(session_id, project)
                    self._drop_quoted_questions(session_id, project, texts)
                self.conn.execute("INSERT INTO memories_fts(memories_fts) VALUES ('optimize')")
            self.checkpoint()
        return gone

    def _rebuild_context(self, session_id: str, project: str) -> None:
        """Recompute the context columns of a session's memories from the turns that remain
        (as _record_locked builds them: up to `turns_before` earlier turns, `turns_after` later ones)."""
        cfg = self.config.context
        rows = self.conn.execute(
            "SELECT id, kind, text, context_before, context_after FROM memories WHERE session_id = ? AND project = ? "
            "ORDER BY created_at, id", (session_id, project)).fetchall()
        turns = [(i, one_line(text, cfg.max_turn_chars)) for i, (_, kind, text, _, _) in enumerate(rows)
                 if kind in CONVERSATION_KINDS]
        for position, (memory_id, kind, _text, before, after) in enumerate(rows):
            earlier = [t for i, t in turns if i < position][-cfg.turns_before:] if cfg.turns_before else []
            later = ([t for i, t in turns if i > position][: cfg.turns_after]
                     if kind in CONVERSATION_KINDS and cfg.turns_after else [])
            new_before, new_after = TURN_SEPARATOR.join(earlier), TURN_SEPARATOR.join(later)
            if (new_before, new_after) != (before, after):
                self.conn.execute("UPDATE memories SET context_before = ?, context_after = ? WHERE id = ?",
                                  (new_before, new_after, memory_id))

    def _drop_quoted_questions(self, session_id: str, project: str, texts: list[str]) -> None:
        """An exchange keeps a preview of its prompt in meta["prompt"]: drop it when that prompt is forgotten."""
        for memory_id, meta_json in self.conn.execute(
                "SELECT id, meta FROM memories WHERE session_id = ? AND project = ? AND kind = 'exchange'",
                (session_id, project)).fetchall():
            meta = json.loads(meta_json or "{}")
            quoted = str(meta.get("prompt") or "").rstrip("…").strip()
            if quoted and any(quoted in text for text in texts):
                meta.pop("prompt")
                self.conn.execute("UPDATE memories SET meta = ? WHERE id = ?",
                                  (json.dumps(meta, ensure_ascii=False), memory_id))

    def purge(self) -> dict[str, int]:
        """Delete every memory of every project; returns how many per project."""
        with self.lock:
            with db.write_transaction(self.conn):
                counts = dict(self.conn.execute("SELECT project, count(*) FROM memories GROUP BY project").fetchall())
                self.conn.execute("INSERT OR IGNORE INTO forgotten(event_id, forgotten_at) "
                                  "SELECT event_id, ? FROM events WHERE memory_id IS NOT NULL", (time.time(),))
                if self.vectors and self.vectors.exists():
                    self.vectors.delete([row[0] for row in self.conn.execute("SELECT id FROM memories")])
                self.conn.execute("DELETE FROM memories")
                self.conn.execute("DELETE FROM injection_receipts")
                self.conn.execute("INSERT INTO memories_fts(memories_fts) VALUES ('rebuild')")
            self.checkpoint()
        return counts

    def checkpoint(self) -> bool:
        """Copy the WAL into the database and truncate it; False when a reader kept it from finishing
        (another process in the middle of a read: the WAL is then truncated on a later checkpoint)."""
        with self.lock:
            busy, _log, _copied = self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        return busy == 0

    # --- health (recall doctor) -------------------------------------------------------------------

    def integrity_problems(self) -> list[str]:
        """SQLite's integrity_check: [] when the file is sound."""
        with self.lock:
            result = [r[0] for r in self.conn.execute("PRAGMA integrity_check")]
        return [] if result == ["ok"] else result

    def schema_version(self) -> int:
        with self.lock:
            return db.schema_version(self.conn)

    def fts_problem(self) -> str | None:
        """None when the full-text index matches the memories, else what FTS5 reported."""
        with self.lock:
            try:
                self.conn.execute("INSERT INTO memories_fts(memories_fts, rank) VALUES ('integrity-check', 1)")
            except Exception as exc:  # apsw.CorruptError and friends
                return str(exc)
        return None

    def vec_version(self) -> str | None:
        if self.vector_error:
            return None
        with self.lock:
            return self.conn.execute("SELECT vec_version()").fetchone()[0]

    def vector_consistency(self) -> dict | None:
        """How the vector index stands against the memories (None without an index): its model, the
        vectors of deleted memories, and live memories neither embedded nor queued."""
        if not (self.vectors and self.vectors.exists()):
            return None
        with self.lock:
            vector_ids = self.vectors.ids()
            memory_ids = {r[0] for r in self.conn.execute("SELECT id FROM memories")}
            queued = {r[0] for r in self.conn.execute("SELECT memory_id FROM embed_queue")}
            live = {r[0] for r in self.conn.execute("SELECT id FROM memories WHERE superseded_by IS NULL")}
            return {"model": (self.vectors.info() or (None,))[0], "vectors": len(vector_ids), "queued": len(queued),
                    "orphans": sorted(vector_ids - memory_ids), "missing": sorted(live - vector_ids - queued),
                    "unembedded": sorted(memory_ids - vector_ids)}

    def rebuild_derived(self) -> list[str]:
        """Rebuild what is derived from the memories table: the FTS index, and the vector index's
        orphans and gaps (gaps go back on the embedding queue). Never deletes a memory."""
        done = []
        consistency = self.vector_consistency()
        with self.lock, db.write_transaction(self.conn):
            self.conn.execute("INSERT INTO memories_fts(memories_fts) VALUES ('rebuild')")
            done.append("rebuilt the full-text index")
            if consistency is not None:
                self.vectors.delete(consistency["orphans"])
                self.conn.executemany("INSERT OR IGNORE INTO embed_queue(memory_id) VALUES (?)",
                                      [(i,) for i in consistency["unembedded"]])
                done.append(f"removed {len(consistency['orphans'])} orphaned vectors, queued "
                            f"{len(consistency['unembedded'])} memories for embedding")
        return done

    # --- numbers --------------------------------------------------------------------------------

    def counts(self) -> dict:
        with self.lock:
            c = self.conn
            by_kind = dict(c.execute("SELECT kind, count(*) FROM memories GROUP BY kind").fetchall())
            return {
                "memories": sum(by_kind.values()),
                "by_kind": by_kind,
                "projects": c.execute("SELECT count(DISTINCT project) FROM memories").fetchone()[0],
                "sessions": c.execute("SELECT count(*) FROM sessions").fetchone()[0],
                "events": c.execute("SELECT count(*) FROM events").fetchone()[0],
                "superseded": c.execute("SELECT count(*) FROM memories WHERE superseded_by IS NOT NULL").fetchone()[0],
                "pending_embeddings": c.execute("SELECT count(*) FROM embed_queue").fetchone()[0],
                "vectors": self.vectors.count() if self.vectors and self.vectors.exists() else 0,
                "vector_model": (self.vectors.info() or (None,))[0] if self.vectors else None,
                "oldest": c.execute("SELECT min(created_at) FROM memories").fetchone()[0],
                "newest": c.execute("SELECT max(created_at) FROM memories").fetchone()[0],
            }

    def db_bytes(self) -> int:
        total = 0
        for suffix in ("", "-wal", "-shm"):
            try:
                total += Path(str(self.paths.db) + suffix).stat().st_size
            except FileNotFoundError:
                pass
        return total
