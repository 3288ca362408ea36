"""The SQLite schema and its migrations, and opening the file at the current schema (connection.py has the
connection settings).

Migrations are an ordered list of functions; `PRAGMA user_version` is the number applied.
Each migration and its version bump run in one transaction, so a crash mid-migration
leaves the previous version intact.
"""

from __future__ import annotations

import getpass
import os
from pathlib import Path

import apsw

from .connection import DAMAGE, ReadOnlyDataDir, connect, move_aside, writable, write_transaction


def open_database(path: Path) -> apsw.Connection:
    """connect() and migrate(); a damaged file is moved aside (`recall.db.corrupt-<time>`, with its
    WAL) and a new database created, so capture goes on. The move is recorded in DB_RECOVERY_NOTE for
    `recall doctor` and the next SessionStart to report."""
    inode = _inode(path)
    if not writable(path):
        if not path.exists():
            raise ReadOnlyDataDir(f"{path.parent} is read-only and holds no database yet")
        conn = connect(path, readonly=True)
        if schema_version(conn) != len(MIGRATIONS):
            raise ReadOnlyDataDir(f"{path.parent} is read-only and its database needs an upgrade (schema "
                                  f"{schema_version(conn)} of {len(MIGRATIONS)}): make it writable once")
        return conn
    try:
        conn = connect(path)
        migrate(conn)
        return conn
    except DAMAGE as exc:
        error = f"{type(exc).__name__}: {exc}"
    if _inode(path) == inode:  # not already replaced by another process that saw the same damage
        move_aside(path, error)
    conn = connect(path)
    migrate(conn)
    return conn


def _inode(path: Path) -> int | None:
    try:
        return os.stat(path).st_ino
    except OSError:
        return None


# How memories_fts splits and stems words: search.py counts a word's memories with the same tokenizer.
FTS_TOKENIZE = "porter unicode61 remove_diacritics 2"


# --- migrations -------------------------------------------------------------------------


def external_fts(table: str, columns: tuple[str, ...]) -> str:
    """An FTS5 index of these columns of `table` (an external-content index: the rows stay in the table), kept in
    step by triggers on insert, delete and update of those columns."""
    listed = ", ".join(columns)
    new = ", ".join(f"new.{c}" for c in columns)
    old = ", ".join(f"old.{c}" for c in columns)
    fts = f"{table}_fts"
    return f"""
        CREATE VIRTUAL TABLE {fts} USING fts5(
            {listed}, content='{table}', content_rowid='id', tokenize='{FTS_TOKENIZE}'
        );
        CREATE TRIGGER {fts}_insert AFTER INSERT ON {table} BEGIN
            INSERT INTO {fts}(rowid, {listed}) VALUES (new.id, {new});
        END;
        CREATE TRIGGER {fts}_delete AFTER DELETE ON {table} BEGIN
            INSERT INTO {fts}({fts}, rowid, {listed}) VALUES ('delete', old.id, {old});
        END;
        CREATE TRIGGER {fts}_update AFTER UPDATE OF {listed} ON {table} BEGIN
            INSERT INTO {fts}({fts}, rowid, {listed}) VALUES ('delete', old.id, {old});
            INSERT INTO {fts}(rowid, {listed}) VALUES (new.id, {new});
        END;"""


def m001_initial(conn: apsw.Connection) -> None:
    conn.execute(
        f"""
        CREATE TABLE memories (
            id INTEGER PRIMARY KEY,
            project TEXT NOT NULL,
            session_id TEXT NOT NULL DEFAULT '',
            kind TEXT NOT NULL,
            text TEXT NOT NULL,
            created_at REAL NOT NULL,
            importance REAL NOT NULL DEFAULT 0.3,
            seen_count INTEGER NOT NULL DEFAULT 1,
            access_count INTEGER NOT NULL DEFAULT 0,
            last_accessed REAL,
            superseded_by INTEGER REFERENCES memories(id) ON DELETE SET NULL,
            content_hash TEXT NOT NULL,
            meta TEXT NOT NULL DEFAULT '{{}}',
            -- Neighbouring turns of the conversation (up to two before, two after), indexed for
            -- matching but never shown: a reply like "Yes, it was amazing!" is found by what it
            -- answers. See search.py for the measured effect.
            context_before TEXT NOT NULL DEFAULT '',
            context_after TEXT NOT NULL DEFAULT ''
        );
        CREATE INDEX memories_project_time ON memories(project, created_at);
        CREATE INDEX memories_session_time ON memories(session_id, created_at);
        CREATE INDEX memories_time ON memories(created_at);
        CREATE UNIQUE INDEX memories_dedup ON memories(project, kind, content_hash);

        -- Every captured event, by the id its producer gave it: the exactly-once ledger for
        -- spool ingestion, retries and re-imports. memory_id is NULL for events that make
        -- no memory (SessionStart, skipped tools).
        CREATE TABLE events (
            event_id TEXT PRIMARY KEY,
            memory_id INTEGER REFERENCES memories(id) ON DELETE SET NULL,
            received_at REAL NOT NULL
        ) WITHOUT ROWID;
        CREATE INDEX events_memory ON events(memory_id);

        {external_fts("memories", ("text", "context_before", "context_after"))}

        -- Memories waiting for an embedding (filled by trigger, drained by the worker).
        CREATE TABLE embed_queue (memory_id INTEGER PRIMARY KEY REFERENCES memories(id) ON DELETE CASCADE);
        CREATE TRIGGER memories_embed_enqueue AFTER INSERT ON memories BEGIN
            INSERT OR IGNORE INTO embed_queue(memory_id) VALUES (new.id);
        END;

        CREATE TABLE sessions (
            session_id TEXT PRIMARY KEY,
            project TEXT NOT NULL,
            started_at REAL NOT NULL,
            ended_at REAL,
            end_reason TEXT,
            transcript_path TEXT
        );

        -- What recall already put into a session's context, so it never repeats itself.
        CREATE TABLE injections (
            session_id TEXT NOT NULL,
            memory_id INTEGER NOT NULL REFERENCES memories(id) ON DELETE CASCADE,
            injected_at REAL NOT NULL,
            hook TEXT NOT NULL,
            PRIMARY KEY (session_id, memory_id)
        ) WITHOUT ROWID;

        -- Event ids of forgotten memories: a re-import must not bring them back.
        CREATE TABLE forgotten (event_id TEXT PRIMARY KEY, forgotten_at REAL NOT NULL) WITHOUT ROWID;

        -- Transcript files already imported, with their size when read (skip unchanged files).
        CREATE TABLE imported_files (path TEXT PRIMARY KEY, size INTEGER NOT NULL, entries INTEGER NOT NULL,
                                     imported_at REAL NOT NULL);

        -- Which embedding model the vector table holds (one model at a time, never mixed).
        CREATE TABLE vector_index (
            id INTEGER PRIMARY KEY CHECK (id = 1),
            model TEXT NOT NULL,
            dim INTEGER NOT NULL,
            created_at REAL NOT NULL
        );
        """
    )


def m002_forget_for_good(conn: apsw.Connection) -> None:
    """Ids are never reused: `recall forget 36 37` typed again from shell history must not delete
    newer memories that took those ids. SQLite hands out max(id) + 1, so the highest id ever
    deleted is kept and new memories start above it (storage/sqlite NEXT_MEMORY_ID). And the full-text
    index removes a deleted row's terms from its segments at once (FTS5 'secure-delete'), instead
    of leaving them until the next merge."""
    conn.execute(
        """
        CREATE TABLE id_watermark (name TEXT PRIMARY KEY, last_id INTEGER NOT NULL) WITHOUT ROWID;
        INSERT INTO id_watermark(name, last_id) SELECT 'memories', coalesce(max(id), 0) FROM memories;
        CREATE TRIGGER memories_id_watermark AFTER DELETE ON memories BEGIN
            UPDATE id_watermark SET last_id = max(last_id, old.id) WHERE name = 'memories';
        END;
        INSERT INTO memories_fts(memories_fts, rank) VALUES ('secure-delete', 1);
        """
    )


def m003_vector_changes(conn: apsw.Connection) -> None:
    """A log of which memories' vectors changed (added, replaced, deleted; memory_id 0: all of them), so
    the worker's in-memory copy of recent vectors (core/recent_vectors.py) catches up with what other
    processes wrote (an import, a forget) by reading a few rows instead of reloading everything."""
    conn.execute(
        """
        CREATE TABLE vector_changes (seq INTEGER PRIMARY KEY AUTOINCREMENT, memory_id INTEGER NOT NULL);
        INSERT INTO vector_changes(memory_id) VALUES (0);
        """
    )


def m004_pins_and_receipts(conn: apsw.Connection) -> None:
    """Pinned memories (`recall pin`: always a candidate, first among equals) and a receipt for every
    injection (`recall injections`): which prompt, which memories, and the gate's reasons. Receipts are
    kept when compaction clears `injections` (that table only stops repeats within a session)."""
    conn.execute(
        """
        ALTER TABLE memories ADD COLUMN pinned INTEGER NOT NULL DEFAULT 0;
        CREATE TABLE injection_receipts (
            id INTEGER PRIMARY KEY,
            session_id TEXT NOT NULL,
            project TEXT NOT NULL,
            hook TEXT NOT NULL,
            injected_at REAL NOT NULL,
            prompt_memory_id INTEGER,  -- the prompt as stored (NULL: not kept, e.g. <private>)
            items TEXT NOT NULL  -- JSON: [{"id": memory id, "why": the gate's reason}, ...]
        );
        CREATE INDEX injection_receipts_session ON injection_receipts(session_id, injected_at);
        -- Every prompt asks for the pinned memories: a few rows, found without reading the table.
        CREATE INDEX memories_pinned ON memories(project) WHERE pinned = 1;
        """
    )


def m005_sources(conn: apsw.Connection) -> None:
    """Who said it: `agent` names the subagent a memory comes from ('' for the main conversation), `trust`
    weighs its source (the user's own words above the main assistant's conclusions, above a subagent's
    output, above raw tool output: core/trust.py)."""
    conn.execute(
        """
        ALTER TABLE memories ADD COLUMN agent TEXT NOT NULL DEFAULT '';
        ALTER TABLE memories ADD COLUMN trust REAL NOT NULL DEFAULT 1.0;
        UPDATE memories SET trust = CASE kind WHEN 'exchange' THEN 0.8 WHEN 'response' THEN 0.8
            WHEN 'tool' THEN 0.4 WHEN 'error' THEN 0.4 ELSE 1.0 END;
        """
    )


def m006_pruned(conn: apsw.Connection) -> None:
    """How many trivial memories the forgetting curve pruned, by kind (core/retrieval/strength.py; `recall stats`)."""
    conn.execute(
        """
        CREATE TABLE pruned (kind TEXT PRIMARY KEY, count INTEGER NOT NULL, last_at REAL NOT NULL);
        -- Memories up to this id have been looked at by the pruning rounds (each round goes on from here).
        CREATE TABLE prune_cursor (id INTEGER PRIMARY KEY CHECK (id = 1), last_memory_id INTEGER NOT NULL);
        INSERT INTO prune_cursor(id, last_memory_id) VALUES (1, 0);
        """
    )


def m007_fts_merge_on_forget(conn: apsw.Connection) -> None:
    """FTS5 'secure-delete' made every write that updates indexed text (a turn's neighbours' context, at
    each prompt and answer) rewrite index segments in place: `recall import` ran at ~230 entries a second
    instead of ~1,900. It is off again; `forget` instead merges the whole index ('optimize'), which
    drops every stale copy of a forgotten text, and secure_delete zeroes the pages it frees."""
    conn.execute("INSERT INTO memories_fts(memories_fts, rank) VALUES ('secure-delete', 0)")


def m008_owner_and_visibility(conn: apsw.Connection) -> None:
    """Who a memory belongs to and who may see it: `private` (everything captured) or `team` (shared on
    purpose, `recall share`). In a file of one user every row is that user's; the columns make a memory
    the same thing in both backends (in PostgreSQL the owner is the database role)."""
    conn.execute(
        """
        ALTER TABLE memories ADD COLUMN owner TEXT NOT NULL DEFAULT '';
        ALTER TABLE memories ADD COLUMN visibility TEXT NOT NULL DEFAULT 'private'
            CHECK (visibility IN ('private', 'team'));
        """
    )
    conn.execute("UPDATE memories SET owner = ?", (local_user(),))


def m009_project_paths_and_sharing(conn: apsw.Connection) -> None:
    """Where each project lives (a project is its repository's remote now, shared/projects.py: one
    project, a path per clone and machine), and what a shared memory held privately before it was
    shared (its context and meta stay its owner's; `recall unshare` puts them back)."""
    conn.execute(
        """
        CREATE TABLE project_paths (
            project TEXT NOT NULL, host TEXT NOT NULL, path TEXT NOT NULL,
            first_seen REAL NOT NULL, last_seen REAL NOT NULL,
            PRIMARY KEY (project, host, path)
        ) WITHOUT ROWID;
        CREATE TABLE private_parts (
            memory_id INTEGER PRIMARY KEY REFERENCES memories(id) ON DELETE CASCADE,
            meta TEXT NOT NULL, context_before TEXT NOT NULL, context_after TEXT NOT NULL
        );
        """
    )


def m010_knowledge(conn: apsw.Connection) -> None:
    """Facts, procedures and decisions read from the memories (core/knowledge/): each row belongs to the memory it
    came from and goes with it when that memory is forgotten (ON DELETE CASCADE, and secure_delete zeroes it). A
    newer item about the same thing marks the older one `superseded_by`; the older one stays, as its history."""
    conn.execute(
        f"""
        CREATE TABLE knowledge (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            project TEXT NOT NULL,
            kind TEXT NOT NULL CHECK (kind IN ('fact', 'procedure', 'decision')),
            subject TEXT NOT NULL,
            value TEXT NOT NULL,
            text TEXT NOT NULL,
            thing TEXT NOT NULL DEFAULT '',
            file TEXT NOT NULL DEFAULT '',
            context TEXT NOT NULL DEFAULT '',
            source_id INTEGER NOT NULL REFERENCES memories(id) ON DELETE CASCADE,
            session_id TEXT NOT NULL DEFAULT '',
            created_at REAL NOT NULL,
            superseded_by INTEGER REFERENCES knowledge(id) ON DELETE SET NULL,
            embedding BLOB
        );
        CREATE INDEX knowledge_current ON knowledge(project, kind, subject) WHERE superseded_by IS NULL;
        CREATE INDEX knowledge_source ON knowledge(source_id);
        CREATE INDEX knowledge_superseded ON knowledge(superseded_by);
        CREATE INDEX knowledge_unembedded ON knowledge(id) WHERE embedding IS NULL;
        {external_fts("knowledge", ("text", "thing", "context"))}
        INSERT INTO knowledge_fts(knowledge_fts, rank) VALUES ('secure-delete', 0);
        """
    )


def m011_ties(conn: apsw.Connection) -> None:
    """What each memory is tied to (core/capture/ties.py): a file, a command, an error signature, looked up by its
    exact key when Claude is about to act (core/injection/actions.py); a file's size and mtime when it was touched.
    A tie goes with its memory (ON DELETE CASCADE)."""
    conn.execute(
        """
        CREATE TABLE ties (
            memory_id INTEGER NOT NULL REFERENCES memories(id) ON DELETE CASCADE,
            project TEXT NOT NULL,
            key TEXT NOT NULL,
            created_at REAL NOT NULL,
            size INTEGER,
            mtime REAL,
            PRIMARY KEY (memory_id, key)
        ) WITHOUT ROWID;
        CREATE INDEX ties_key ON ties(project, key, created_at);
        """
    )


def m012_tombstones(conn: apsw.Connection) -> None:
    """What stays of a forgotten memory (storage/tombstones.py): a keyed hash of its content, never the content, so
    that an import of the transcript it came from does not bring it back; and the store's random key."""
    conn.execute(
        """
        CREATE TABLE tombstones (digest TEXT PRIMARY KEY, forgotten_at REAL NOT NULL) WITHOUT ROWID;
        CREATE TABLE tombstone_key (key BLOB NOT NULL);
        """
    )


def m013_observations(conn: apsw.Connection) -> None:
    """Knowledge as observations, not verdicts (core/knowledge/): each row says what a memory stated or did about a
    subject (scoped: a file and a key path, a setting's name, a command), how (its modality) and from what source;
    nothing marks it replaced, what is current is computed when read (core/knowledge/current.py). Rows are read
    from the memories in the background (`knowledge_queue`, filled on insert); this migration queues every memory,
    so knowledge and ties are read again from what is stored, memories kept before 0.2 included."""
    conn.execute(
        f"""
        DROP TRIGGER IF EXISTS knowledge_fts_insert;
        DROP TRIGGER IF EXISTS knowledge_fts_delete;
        DROP TRIGGER IF EXISTS knowledge_fts_update;
        DROP TABLE IF EXISTS knowledge_fts;
        DROP TABLE IF EXISTS knowledge;
        CREATE TABLE knowledge (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            project TEXT NOT NULL,
            kind TEXT NOT NULL CHECK (kind IN ('fact', 'procedure', 'decision')),
            subject TEXT NOT NULL,
            name TEXT NOT NULL DEFAULT '',
            leaf TEXT NOT NULL DEFAULT '',
            value TEXT NOT NULL,
            text TEXT NOT NULL,
            thing TEXT NOT NULL DEFAULT '',
            file TEXT NOT NULL DEFAULT '',
            context TEXT NOT NULL DEFAULT '',
            modality TEXT NOT NULL CHECK (modality IN ('set', 'stated', 'proposed', 'asked', 'negated', 'revoked')),
            source TEXT NOT NULL DEFAULT '',
            source_id INTEGER NOT NULL REFERENCES memories(id) ON DELETE CASCADE,
            session_id TEXT NOT NULL DEFAULT '',
            created_at REAL NOT NULL,
            embedding BLOB
        );
        CREATE INDEX knowledge_subject ON knowledge(project, subject, created_at);
        CREATE INDEX knowledge_leaf ON knowledge(project, leaf) WHERE leaf != '';
        CREATE INDEX knowledge_source ON knowledge(source_id);
        CREATE INDEX knowledge_unembedded ON knowledge(id) WHERE embedding IS NULL;
        {external_fts("knowledge", ("text", "thing", "context"))}
        INSERT INTO knowledge_fts(knowledge_fts, rank) VALUES ('secure-delete', 0);
        CREATE TABLE knowledge_queue (memory_id INTEGER PRIMARY KEY REFERENCES memories(id) ON DELETE CASCADE);
        CREATE TRIGGER memories_knowledge_enqueue AFTER INSERT ON memories BEGIN
            INSERT OR IGNORE INTO knowledge_queue(memory_id) VALUES (new.id);
        END;
        INSERT INTO knowledge_queue(memory_id) SELECT id FROM memories;
        -- How the queued memories are read (core/knowledge/extract.py READING): a newer reading reads them all again.
        CREATE TABLE knowledge_reading (version INTEGER NOT NULL);
        """
    )


MIGRATIONS = [m001_initial, m002_forget_for_good, m003_vector_changes, m004_pins_and_receipts, m005_sources,
              m006_pruned, m007_fts_merge_on_forget, m008_owner_and_visibility, m009_project_paths_and_sharing,
              m010_knowledge, m011_ties, m012_tombstones,
              m013_observations]


def local_user() -> str:
    """Who owns what a data dir holds: the OS user (a shared database names its roles instead)."""
    try:
        return getpass.getuser()
    except Exception:  # no user name in the environment or the password database
        return ""


def schema_version(conn: apsw.Connection) -> int:
    return int(conn.execute("PRAGMA user_version").fetchone()[0])  # type: ignore[index]  # a PRAGMA always answers


def migrate(conn: apsw.Connection) -> int:
    """Apply pending migrations; returns the resulting schema version."""
    version = schema_version(conn)
    if version > len(MIGRATIONS):
        raise RuntimeError(
            f"database schema version {version} is newer than this recall ({len(MIGRATIONS)}); upgrade recall"
        )
    for number in range(version, len(MIGRATIONS)):
        with write_transaction(conn):  # the migration and its version bump, atomically
            if schema_version(conn) > number:  # another process migrated meanwhile
                continue
            MIGRATIONS[number](conn)
            conn.execute(f"PRAGMA user_version = {number + 1}")
    return schema_version(conn)
