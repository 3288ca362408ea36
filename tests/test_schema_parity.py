"""Both migration chains build the same shared tables: SQLite's list of migrations (sqlite/schema.py) and
PostgreSQL's (postgres/schema.py), run for real, agree on every table they share and its columns. What only
one backend has is named here with the reason, so a column added to one chain alone fails this test."""

from __future__ import annotations

from memory_store.core.storage.postgres.schema import OWNED_TABLES
from memory_store.core.storage.sqlite import connection
from memory_store.core.storage.sqlite import schema as sqlite_schema

SQLITE_ONLY = {
    "embed_queue",  # PostgreSQL finds what awaits embedding by `embedding IS NULL` in the row
    "id_watermark",  # ids never reused: a sequence does that on PostgreSQL
    "vector_index",  # sqlite-vec's table and model; PostgreSQL keeps the vector in the row
    "memories_fts",  # FTS5; PostgreSQL's tsvector lives in the row (memories.fts)
    "knowledge_fts",  # the same for knowledge (knowledge.fts)
    "sqlite_sequence",  # AUTOINCREMENT's own bookkeeping
}
POSTGRES_ONLY = {"settings"}  # the team's schema version and embedding model (recall team init)
POSTGRES_ONLY_COLUMNS = {
    **{table: {"owner"} for table in OWNED_TABLES},  # rows belong to database roles (row-level security)
    "memories": {"embedding", "embedding_model", "fts", "doc_len"},  # vector and words in the row
    "knowledge": {"owner", "fts"},  # each row its owner's (row-level security); its words in the row
    "ties": {"owner"},
    "knowledge_queue": {"owner"},
    "knowledge_reading": {"owner"},
    "tombstones": {"owner"},
    "tombstone_key": {"owner"},
    "vector_changes": {"xid"},  # the feed's transaction id (RAM copies follow committed changes only)
}


def sqlite_columns(path) -> dict[str, set[str]]:
    conn = connection.connect(path)
    try:
        sqlite_schema.migrate(conn)
        names = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' "
                                            "AND name NOT GLOB '*_fts_*'")]  # FTS5's shadow tables
        return {t: {r[1] for r in conn.execute(f"PRAGMA table_info('{t}')")} for t in names}
    finally:
        conn.close()


def postgres_columns(team_database) -> dict[str, set[str]]:
    with team_database.server.connect(team_database.name) as conn:
        rows = conn.execute("SELECT table_name, column_name FROM information_schema.columns "
                            "WHERE table_schema = 'recall'").fetchall()
    found: dict[str, set[str]] = {}
    for table, column in rows:
        found.setdefault(table, set()).add(column)
    return found


def test_both_migration_chains_build_the_same_shared_tables(tmp_path, team_database):
    lite, pg = sqlite_columns(tmp_path / "recall.db"), postgres_columns(team_database)
    assert set(lite) - set(pg) == SQLITE_ONLY
    assert set(pg) - set(lite) == POSTGRES_ONLY
    shared = set(lite) & set(pg)
    assert {"memories", "events", "sessions", "injections"} <= shared
    for table in sorted(shared):
        assert lite[table] - pg[table] == set(), f"{table}: columns only SQLite's migrations make"
        assert pg[table] - lite[table] == POSTGRES_ONLY_COLUMNS.get(table, set()), \
            f"{table}: columns only PostgreSQL's migrations make"
