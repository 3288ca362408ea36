"""The Python API: one `Store` per data directory.

    from memory_store import open_store
    store = open_store("~/.local/share/recall")
    for hit in store.search("how do we rotate the API keys?", project="/home/me/app"):
        print(hit.id, hit.score, hit.text)

The CLI, the worker and the benchmarks are thin shells over this class. A Store owns one
SQLite connection and serialises its use with a lock, so one instance can serve many
threads; the worker gives its embedding thread a Store of its own.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from . import db
from .config import Config, load_config
from .logs import JsonLog
from .models import Hit, Memory, MemoryDraft, to_datetime
from .paths import DataPaths, ensure_private_dir
from .vectors import VectorIndex

_MEMORY_COLUMNS = (
    "id, project, session_id, kind, text, created_at, importance, seen_count, access_count, "
    "last_accessed, superseded_by, meta"
)


CONVERSATION_KINDS = ("prompt", "exchange")  # the turns of a conversation: each other's context
TURN_SEPARATOR = "\n\x1e "  # between neighbouring turns in the context columns
DEDUP_WINDOW_SECONDS = 30 * 86400  # near-duplicates are looked for this far back
_DIGITS = re.compile(r"\d+")


def content_hash(text: str) -> str:
    """Identity of a memory's content for deduplication (case and spacing do not matter)."""
    return hashlib.sha1(" ".join(text.lower().split()).encode("utf-8")).hexdigest()


def cap_turn(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit]


@dataclass
class Recorded:
    """What storing one event did."""

    memory_id: int | None
    created: bool  # a new memory row (False: deduplicated into an existing one, or none)
    duplicate_event: bool  # this event id was stored before: nothing changed


@dataclass
class _Row:
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

    def memory(self) -> Memory:
        return Memory(
            id=self.id, text=self.text, created_at=to_datetime(self.created_at), session_id=self.session_id,
            project=self.project, kind=self.kind, importance=self.importance, seen_count=self.seen_count,
            access_count=self.access_count, superseded_by=self.superseded_by, meta=json.loads(self.meta or "{}"),
        )

    def hit(self, score: float, similarity: float | None = None) -> Hit:
        return Hit(
            id=self.id, text=self.text, score=round(score, 6), created_at=to_datetime(self.created_at),
            similarity=None if similarity is None else round(similarity, 4),
            session_id=self.session_id, project=self.project, kind=self.kind, meta=json.loads(self.meta or "{}"),
        )


def open_store(home: str | os.PathLike | None = None, config: Config | None = None) -> "Store":
    """Open (creating and migrating if needed) the store in `home` (default: see paths.resolve_home)."""
    paths = DataPaths(home)
    ensure_private_dir(paths.home)
    store = Store(paths, config or load_config(paths.config))
    store.ingest_spool()  # events captured while no worker ran are part of the store
    return store


class Store:
    def __init__(self, paths: DataPaths, config: Config):
        self.paths = paths
        self.config = config
        self.log = JsonLog(paths.log_file, "store")
        self.lock = threading.RLock()
        self._spool_lock = threading.Lock()
        self.conn = db.connect(paths.db)
        db.migrate(self.conn)
        self.vector_error = db.load_vec(self.conn)
        self.vectors = VectorIndex(self.conn) if self.vector_error is None else None
        self._embedder = None
        self._embedder_error: str | None = None
        self._cross_encoder = None
        self._cross_encoder_error: str | None = None
        self.allow_model_load = True  # the worker turns this off and loads the model in the background

    # --- lifecycle ----------------------------------------------------------------------------

    def close(self) -> None:
        with self.lock:
            self.conn.close()

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # --- embeddings -----------------------------------------------------------------------------

    @property
    def embedder(self):
        """The embedding model, loaded on first use; None when it cannot load (lexical only)."""
        if self._embedder is None and self._embedder_error is None and self.allow_model_load:
            self.load_embedder()
        return self._embedder

    def load_embedder(self):
        from .embed import EmbeddingUnavailable, load_embedder

        try:
            self._embedder = load_embedder(self.config.embedding, self.paths.home / "models")
        except EmbeddingUnavailable as exc:
            self._embedder_error = str(exc)
            self.log.warning("embedding_unavailable", reason=str(exc))
        return self._embedder

    @property
    def cross_encoder(self):
        """The reranker when `rerank.enabled`, loaded on first use; None if off or it cannot load."""
        if not self.config.rerank.enabled:
            return None
        if self._cross_encoder is None and self._cross_encoder_error is None:
            from .embed import CrossEncoder, EmbeddingUnavailable

            try:
                self._cross_encoder = CrossEncoder(self.config.rerank, self.paths.home / "models")
            except EmbeddingUnavailable as exc:
                self._cross_encoder_error = str(exc)
                self.log.warning("reranker_unavailable", reason=str(exc))
        return self._cross_encoder

    def set_embedder(self, embedder) -> None:
        self._embedder = embedder

    @property
    def embedder_error(self) -> str | None:
        return self._embedder_error

    def dense_ready(self, embedder=None) -> bool:
        """Vectors can be searched: extension loaded and the index holds this model's vectors."""
        embedder = embedder or self._embedder
        return bool(self.vectors and embedder and self.vectors.matches(embedder.name, embedder.dim))

    def ensure_vector_index(self, embedder) -> None:
        """Create the vector table for `embedder` if there is none (a different model needs reindex)."""
        if not self.vectors:
            return
        with self.lock, db.write_transaction(self.conn):
            if not self.vectors.exists():
                self.vectors.create(embedder.name, embedder.dim)
            elif not self.vectors.current():
                self.log.info("vector_index_rebuilt", reason="older table layout")
                self.vectors.create(*(self.vectors.info() or (embedder.name, embedder.dim)))

    def pending_embeddings(self) -> int:
        with self.lock:
            return self.conn.execute("SELECT count(*) FROM embed_queue").fetchone()[0]

    def embed_pending(self, embedder=None, batch: int | None = None, max_batches: int | None = None,
                      progress=None) -> int:
        """Embed queued memories in batches; returns how many were embedded. The model runs outside
        the lock, so searches and captures are not held up by a long backfill."""
        embedder = embedder or self.embedder
        if not embedder or not self.vectors:
            return 0
        self.ensure_vector_index(embedder)
        if not self.vectors.matches(embedder.name, embedder.dim):
            return 0  # another model's index: `recall reindex` decides, never a silent mix
        batch = batch or self.config.worker.embed_batch
        done = 0
        batches = 0
        with self.lock:
            # Superseded memories are never searched: drop them from the queue instead.
            self.conn.execute(
                "DELETE FROM embed_queue WHERE memory_id IN (SELECT q.memory_id FROM embed_queue q "
                "JOIN memories m ON m.id = q.memory_id WHERE m.superseded_by IS NOT NULL)"
            )
        while max_batches is None or batches < max_batches:
            with self.lock:
                rows = self.conn.execute(
                    "SELECT m.id, m.project, m.created_at, m.text FROM embed_queue q JOIN memories m ON m.id = q.memory_id "
                    "ORDER BY q.memory_id LIMIT ?",
                    (batch,),
                ).fetchall()
            if not rows:
                break
            vectors = embedder.embed([r[3] for r in rows])
            with self.lock, db.write_transaction(self.conn):
                still_there = {
                    r[0] for r in self.conn.execute(
                        f"SELECT id FROM memories WHERE id IN ({','.join('?' * len(rows))})", [r[0] for r in rows]
                    )
                }
                added = [(r[0], r[1], r[2], v) for r, v in zip(rows, vectors) if r[0] in still_there]
                self.vectors.add(added)
                self.conn.executemany("DELETE FROM embed_queue WHERE memory_id = ?", [(r[0],) for r in rows])
                self._supersede_near_duplicates(added)
            done += len(rows)
            batches += 1
            if progress:
                progress(len(rows))
        return done

    def _supersede_near_duplicates(self, added: list[tuple[int, str, float, bytes]]) -> None:
        """A recent memory nearly identical (cosine >= ranking.dedup_similarity) to an older one of the
        same kind in the same project, from the month before it, supersedes that one: the newest
        wording of a repeated command, prompt or result is the one searched. The old one stays
        readable. (Each check is a vector search, so only memories of the last month are checked.)"""
        threshold = self.config.ranking.dedup_similarity
        if threshold >= 1:
            return
        recent = time.time() - DEDUP_WINDOW_SECONDS
        for memory_id, project, created_at, vector in added:
            if created_at < recent:
                continue  # imported history: exact duplicates are merged at capture, that is enough
            kind, text = self.conn.execute("SELECT kind, text FROM memories WHERE id = ?", (memory_id,)).fetchone()
            near = self.vectors.nearest(vector, 4, project, created_at - DEDUP_WINDOW_SECONDS, created_at)
            candidates = [i for i, similarity in near.items() if i < memory_id and similarity >= threshold]
            # Numbers are where near-identical sentences differ in fact ("port 8080" / "port 8443",
            # "note 1" / "note 2"): embeddings barely see them, so such pairs are both kept.
            numbers = _DIGITS.findall(text)
            older = [i for i in candidates if _DIGITS.findall(
                self.conn.execute("SELECT text FROM memories WHERE id = ?", (i,)).fetchone()[0]) == numbers]
            if older:
                self.conn.execute(
                    f"UPDATE memories SET superseded_by = ? WHERE id IN ({','.join('?' * len(older))}) "
                    "AND kind = ? AND superseded_by IS NULL",
                    (memory_id, *older, kind),
                )

    def reindex(self, embedder=None, progress=None) -> int:
        """Drop the vector index and re-embed every memory with the configured model."""
        embedder = embedder or self.embedder
        if not embedder or not self.vectors:
            raise RuntimeError(self.vector_error or self._embedder_error or "no embedding model")
        with self.lock, db.write_transaction(self.conn):
            self.vectors.create(embedder.name, embedder.dim)
        return self.embed_pending(embedder, progress=progress)

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
        digest = content_hash(draft.text)
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
            before = TURN_SEPARATOR.join(cap_turn(text, cfg.max_turn_chars)
                                         for _, text, _ in reversed(neighbours[: cfg.turns_before]))
            conn.execute(
                "INSERT INTO memories(project, session_id, kind, text, created_at, importance, content_hash, meta, "
                "context_before) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (draft.project, draft.session_id, draft.kind, draft.text, draft.created_at, draft.importance,
                 digest, json.dumps(draft.meta, ensure_ascii=False), before),
            )
            memory_id, created = conn.last_insert_rowid(), True
            if draft.kind in CONVERSATION_KINDS:  # this turn is the "after" context of the turns before it
                for previous_id, _, after in neighbours[: cfg.turns_after]:
                    turns = after.split(TURN_SEPARATOR) if after else []
                    if len(turns) < cfg.turns_after:
                        turns.append(cap_turn(draft.text, cfg.max_turn_chars))
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
            f"AND kind IN ({','.join('?' * len(CONVERSATION_KINDS))}) AND created_at <= ? "
            "ORDER BY created_at DESC, id DESC LIMIT ?",
            (draft.session_id, draft.project, *CONVERSATION_KINDS, draft.created_at, wanted),
        ).fetchall()

    def has_event(self, event_id: str) -> bool:
        with self.lock:
            return self.conn.execute("SELECT 1 FROM events WHERE event_id = ?", (event_id,)).fetchone() is not None

    def ingest_spool(self) -> int:
        """Store every spooled event (oldest first), deleting each file once its event is committed.
        Safe to run from several processes at once: event ids make a second ingest a no-op."""
        from . import spool
        from .events import BadEvent, handle_event

        if not spool.pending(self.paths.spool):
            return 0
        done = 0
        with self._spool_lock:
            for path in spool.pending(self.paths.spool):
                envelope = spool.read(path)
                if envelope is None:
                    continue
                try:
                    handle_event(self, envelope, respond=False)
                except BadEvent as exc:
                    self.log.error("spool_event_rejected", file=path.name, error=str(exc))
                    spool.quarantine(path)
                    continue
                spool.remove(path)
                done += 1
            spool.sweep_stale_tmp(self.paths.spool)
        if done:
            self.log.info("spool_ingested", events=done)
        return done

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
                    f"SELECT {_MEMORY_COLUMNS} FROM memories WHERE session_id = ? AND kind = 'prompt' "
                    "AND json_extract(meta, '$.prompt_id') = ? ORDER BY created_at DESC LIMIT 1",
                    (session_id, prompt_id),
                ).fetchone()
            if row is None:
                row = self.conn.execute(
                    f"SELECT {_MEMORY_COLUMNS} FROM memories WHERE session_id = ? AND kind = 'prompt' "
                    "AND superseded_by IS NULL ORDER BY created_at DESC, id DESC LIMIT 1",
                    (session_id,),
                ).fetchone()
        return _Row(*row).memory() if row else None

    # --- injection bookkeeping ------------------------------------------------------------------

    def injected_ids(self, session_id: str) -> set[int]:
        with self.lock:
            return {r[0] for r in self.conn.execute("SELECT memory_id FROM injections WHERE session_id = ?",
                                                   (session_id,))}

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

    def reset_injections(self, session_id: str) -> None:
        """After compaction the context no longer holds what was injected: allow it again."""
        with self.lock, db.write_transaction(self.conn):
            self.conn.execute("DELETE FROM injections WHERE session_id = ?", (session_id,))

    # --- reading --------------------------------------------------------------------------------

    def _rows(self, sql: str, args=()) -> list[_Row]:
        with self.lock:
            return [_Row(*r) for r in self.conn.execute(sql, args)]

    def get(self, ids: list[int]) -> list[Memory]:
        if not ids:
            return []
        rows = self._rows(f"SELECT {_MEMORY_COLUMNS} FROM memories WHERE id IN ({','.join('?' * len(ids))})",
                          list(ids))
        by_id = {r.id: r for r in rows}
        return [by_id[i].memory() for i in ids if i in by_id]

    def timeline(self, memory_id: int, before: int = 5, after: int = 5) -> list[Memory]:
        """The memory with its neighbours in time: same session when it has one, else same project."""
        rows = self._rows(f"SELECT {_MEMORY_COLUMNS} FROM memories WHERE id = ?", (memory_id,))
        if not rows:
            return []
        anchor_row = rows[0]
        anchor = anchor_row.memory()
        scope, value = ("session_id", anchor.session_id) if anchor.session_id else ("project", anchor.project)
        at = anchor_row.created_at  # the stored float: a datetime round trip may not compare equal
        earlier = self._rows(
            f"SELECT {_MEMORY_COLUMNS} FROM memories WHERE {scope} = ? AND project = ? AND "
            "(created_at < ? OR (created_at = ? AND id < ?)) ORDER BY created_at DESC, id DESC LIMIT ?",
            (value, anchor.project, at, at, memory_id, before),
        )
        later = self._rows(
            f"SELECT {_MEMORY_COLUMNS} FROM memories WHERE {scope} = ? AND project = ? AND "
            "(created_at > ? OR (created_at = ? AND id > ?)) ORDER BY created_at, id LIMIT ?",
            (value, anchor.project, at, at, memory_id, after),
        )
        return [r.memory() for r in reversed(earlier)] + [anchor] + [r.memory() for r in later]

    def recent(self, project: str, kinds: tuple[str, ...], since: float, limit: int,
               exclude_session: str | None = None, only_session: str | None = None) -> list[Memory]:
        """Newest live memories of a project (the hot tier's source)."""
        sql = (f"SELECT {_MEMORY_COLUMNS} FROM memories WHERE project = ? AND created_at >= ? "
               f"AND superseded_by IS NULL AND kind IN ({','.join('?' * len(kinds))})")
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

    # --- search ---------------------------------------------------------------------------------

    def search(
        self,
        query: str,
        limit: int = 10,
        project: str | None = None,
        *,
        since: float | None = None,
        until: float | None = None,
        exclude_ids: set[int] | frozenset[int] = frozenset(),
        exclude_session: str | None = None,
        fusion: str | None = None,
        touch: bool = True,
        now: float | None = None,
    ) -> list[Hit]:
        """Best memories for `query`, newest-aware and importance-aware. `project=None` searches all
        projects. `since`/`until` bound creation time (unix seconds); a relative time phrase in the
        query ("yesterday", "last week") narrows it too. `touch` counts the hits as used (RFM)."""
        from .search import run_search

        return run_search(self, query, limit, project, since=since, until=until, exclude_ids=exclude_ids,
                          exclude_session=exclude_session, fusion=fusion, touch=touch, now=now)

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

    # --- forgetting -----------------------------------------------------------------------------

    def forget(self, memory_ids: list[int]) -> int:
        """Delete memories for good (vectors and index entries too); re-imports will not restore them."""
        if not memory_ids:
            return 0
        marks = ",".join("?" * len(memory_ids))
        now = time.time()
        with self.lock, db.write_transaction(self.conn):
            self.conn.execute(
                f"INSERT OR IGNORE INTO forgotten(event_id, forgotten_at) SELECT event_id, ? FROM events "
                f"WHERE memory_id IN ({marks})",
                [now, *memory_ids],
            )
            if self.vectors and self.vectors.exists():
                self.vectors.delete(list(memory_ids))
            self.conn.execute(f"DELETE FROM memories WHERE id IN ({marks})", list(memory_ids))
            return self.conn.changes()

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


__all__ = ["open_store", "Store", "Recorded", "content_hash"]
