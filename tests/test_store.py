"""What is particular to the SQLite backend: its schema and migrations, WAL and locking, file permissions, the
vector table's layouts and the per-process word counts (the rest of the storage contract, on both backends:
test_storage_contract.py)."""

from __future__ import annotations

import os
import stat
import time

import apsw
import pytest

from memory_store import open_recall
from memory_store.core.records import MemoryDraft
from memory_store.core.storage.sqlite import connection
from memory_store.core.storage.sqlite import schema as db
from memory_store.shared.paths import DataPaths


def draft(text, project="/p/one", kind="prompt", session="s1", at=None, **kw) -> MemoryDraft:
    return MemoryDraft(project=project, session_id=session, kind=kind, text=text,
                       created_at=at if at is not None else time.time(), **kw)


@pytest.fixture
def store(home):
    s = open_recall(home, load_models=False)
    yield s
    s.close()


def test_migrations_build_the_schema_and_record_the_version(store):
    assert db.schema_version(store.store.db.conn) == len(db.MIGRATIONS)
    tables = {r[0] for r in store.store.db.conn.execute("SELECT name FROM sqlite_master WHERE type IN ('table','trigger')")}
    assert {"memories", "memories_fts", "events", "sessions", "injections", "embed_queue",
            "memories_fts_insert", "memories_fts_delete", "memories_fts_update"} <= tables
    assert store.store.db.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_migrate_twice_is_a_no_op(home):
    os.makedirs(home)
    conn = connection.connect(DataPaths(home).db)
    assert db.migrate(conn) == len(db.MIGRATIONS)
    assert db.migrate(conn) == len(db.MIGRATIONS)


def test_newer_schema_is_refused(home):
    s = open_recall(home)
    s.store.db.conn.execute("PRAGMA user_version = 999")
    s.close()
    with pytest.raises(RuntimeError, match="newer"):
        open_recall(home)


def test_unreadable_spool_file_is_kept_aside(home):
    paths = DataPaths(home)
    os.makedirs(paths.spool, exist_ok=True)
    (paths.spool / "00000000000000000001-1-deadbeef.json").write_text("{not json")
    open_recall(home).ingest_spool()
    assert list(paths.spool.glob("*.bad"))


def test_files_are_private(store):
    store.store.record("e1", draft("x"))
    assert stat.S_IMODE(os.stat(store.paths.home).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(store.paths.db).st_mode) == 0o600


def test_concurrent_writers_wait_instead_of_failing(home):
    a, b = open_recall(home), open_recall(home)
    with connection.write_transaction(a.store.db.conn):
        a.store.db.conn.execute("INSERT INTO sessions(session_id, project, started_at) VALUES ('x', '/p', 0)")
        b.store.db.conn.set_busy_timeout(50)
        with pytest.raises(apsw.BusyError):
            b.store.record("e1", draft("blocked"))
    b.store.db.conn.set_busy_timeout(connection.BUSY_TIMEOUT_MS)
    assert b.store.record("e1", draft("now it works")).created


def test_repeats_that_differ_in_an_identifier_stay_searchable_by_it(home):
    """Failure seen in the robustness bench: two runs of one command told apart only by a marker were folded
    into one, and a search for the older marker found nothing."""
    s = open_recall(home)
    now = time.time()
    markers = ["zqlfbxzssmzx", "zqbrxkfdbhxb", "zqhrjrkwsjvk"]
    for i, marker in enumerate(markers):
        s.store.record(f"m{i}", draft(f"Bash `alembic upgrade head  # {marker}` → INFO Running upgrade", kind="tool",
                                      at=now - 30 + i))
    s.embed_pending()
    for marker in markers:
        assert any(marker in h.text for h in s.search(marker, project="/p/one")), marker


def test_near_duplicates_that_differ_in_a_number_are_both_kept(home):
    s = open_recall(home)
    now = time.time()
    a = s.store.record("n1", draft("parallel note 1 about caching", kind="note", at=now - 10))
    b = s.store.record("n2", draft("parallel note 2 about caching", kind="note", at=now))
    s.embed_pending()
    assert all(m.superseded_by is None for m in s.get([a.memory_id, b.memory_id]))


def test_an_older_vector_table_layout_is_rebuilt_not_queried(home):
    """Vectors are derived data: a table from an older recall (no week partition) is dropped and
    re-embedded instead of failing every dense search."""
    s = open_recall(home)
    s.store.record("v1", draft("the release train leaves on Thursdays"))
    s.store.db.conn.execute("CREATE VIRTUAL TABLE memory_vectors USING vec0(memory_id INTEGER PRIMARY KEY, "
                   "project TEXT PARTITION KEY, created_at FLOAT, embedding FLOAT[384] distance_metric=cosine)")
    s.store.db.conn.execute("INSERT INTO vector_index(id, model, dim, created_at) VALUES (1, ?, 384, 0)",
                   (s.config.embedding.model,))
    assert not s.store.dense_ready(s.models.embedder)
    assert s.search("release train", project="/p/one")  # lexical meanwhile, no error
    s.embed_pending()
    assert s.store.dense_ready(s.models.embedder) and s.store.counts()["vectors"] == 1
    assert s.search("when does the release train leave", project="/p/one")[0].similarity is not None


def test_rerank_reorders_the_best_candidates(home):
    """The cross-encoder itself cannot be had offline (none ships on PyPI): a stand-in that scores by a
    word checks what recall does with its scores."""
    from memory_store.core.config import Config

    s = open_recall(home, Config.model_validate({"rerank": {"enabled": True, "top_n": 3}}), load_models=False)
    for i, text in enumerate(["deploy with helm", "deploy notes: use the canary flag", "deploy on fridays? never"]):
        s.store.record(f"r{i}", draft(text, at=time.time() - 100 + i))

    class WordScorer:
        def scores(self, query, texts):
            return [1.0 if "canary" in t else 0.0 for t in texts]

    s.models._cross_encoder = WordScorer()
    hits = s.search("deploy", project="/p/one", touch=False)
    assert hits[0].text == "deploy notes: use the canary flag"
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)


def test_rerank_that_cannot_load_falls_back_quietly(home, monkeypatch):
    from memory_store.core.config import Config

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    s = open_recall(home, Config.model_validate({"rerank": {"enabled": True, "model_path": str(home / "nothing")}}),
                    load_models=False)
    s.store.record("x1", draft("deploy with helm"))
    assert s.search("deploy", project="/p/one")  # works, without the reranker
    assert s.models.cross_encoder is None


def test_a_vector_table_of_the_previous_chunking_is_copied_not_re_embedded(home):
    """The previous layout (default 1,024-vector chunks per partition: ~1.5 MB per project-week) is copied
    into the current one; nothing goes back on the embedding queue."""
    from memory_store.core.storage.sqlite import vectors

    s = open_recall(home)
    memory_id = s.store.record("v1", draft("the release train leaves on Thursdays")).memory_id
    vector = s.models.embedder.embed(["the release train leaves on Thursdays"])[0]
    conn = s.store.db.conn
    conn.execute(f"CREATE VIRTUAL TABLE {vectors.PREVIOUS_TABLE} USING vec0(memory_id INTEGER PRIMARY KEY, project "
                 "TEXT PARTITION KEY, week INTEGER PARTITION KEY, created_at FLOAT, embedding FLOAT[384] "
                 "distance_metric=cosine)")
    conn.execute(f"INSERT INTO {vectors.PREVIOUS_TABLE}(memory_id, project, week, created_at, embedding) "
                 "VALUES (?, '/p/one', 1, 1.0, ?)", (memory_id, vector))
    conn.execute("INSERT INTO vector_index(id, model, dim, created_at) VALUES (1, ?, 384, 0)", (s.config.embedding.model,))
    conn.execute("DELETE FROM embed_queue")
    s.store.ensure_vector_index(s.models.embedder.name, 384)
    assert s.store.vectors.get(memory_id) == vector and s.store.pending_embeddings() == 0
    names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
    assert vectors.PREVIOUS_TABLE not in names and f"chunk_size={vectors.CHUNK_SIZE}" in conn.execute(
        "SELECT sql FROM sqlite_master WHERE name = ?", (vectors.TABLE,)).fetchone()[0]
    s.close()


def test_a_big_store_leaves_its_most_common_words_out_of_the_lexical_search(store):
    from memory_store.core.storage.term_frequency import MIN_MEMORIES

    now = time.time()
    filler = [(f"e{i}", draft(f"deploy {i} of service s{i % 40} finished in {i % 90} s", at=now - 5000 + i), None)
              for i in range(MIN_MEMORIES + 100)]
    store.store.record_many(filler + [("rare", draft("the rugosun importer now streams its uploads", at=now), None)])

    assert store.store.selective_terms(["deploy", "rugosun", "importer"], "/p/one") == ["rugosun", "importer"]
    assert store.store.selective_terms(["deploy", "finished"], "/p/one") == []  # all common: none tells them apart
    hits = store.search("deploy the rugosun importer", limit=3)
    assert hits and "rugosun" in hits[0].text

    # Only common words are remembered (a rare word is quick to count again and may be one memory's
    # secret), and a forget clears them.
    cached = {term for _project, term in store.store.term_frequencies._counts if term}
    assert cached == {"deploi", "finish"}  # as the index keeps them: "deploys" and "deploy" share one count
    store.forget([hits[0].id])
    assert not store.store.term_frequencies._counts

    # Counted per project: in a small project of the same store every word is searched.
    store.store.record_many([(f"o{i}", draft(f"deploy {i} of the docs site", project="/p/two"), None) for i in range(30)])
    assert store.store.selective_terms(["deploy", "docs"], "/p/two") == ["deploy", "docs"]
    assert store.store.selective_terms(["deploy", "rugosun"], None) == ["rugosun"]  # all projects

    store.store.config.ranking.common_term_share = 0.0  # the setting turns it off
    assert store.store.selective_terms(["deploy", "rugosun"], "/p/one") == ["deploy", "rugosun"]


def test_the_common_words_of_a_big_project_are_counted_ahead_of_the_prompts(store):
    """The worker counts a big project's common words between prompts (count_common_words): a prompt then counts
    only its rarer words, and decides as it would have."""
    from memory_store.core.storage.term_frequency import MIN_MEMORIES

    now = time.time()
    store.store.record_many([(f"e{i}", draft(f"deploy {i} of service s{i % 40} finished in {i % 90} s", at=now - 5000 + i),
                              None) for i in range(MIN_MEMORIES + 100)]
                            + [("rare", draft("the rugosun importer now streams its uploads", at=now), None)]
                            + [(f"o{i}", draft(f"deploys of the docs site {i}", project="/p/two"), None) for i in range(30)])
    sqlite = store.store
    asked = []
    original = type(sqlite)._count_holding
    sqlite._count_holding = lambda project, term: asked.append((project, term)) or original(sqlite, project, term)
    assert sqlite.count_common_words() >= 3  # /p/one: its total, "deploi", "finish" (/p/two is small)
    counted = {(project, term) for project, term in sqlite.term_frequencies._counts}
    assert {("/p/one", None), ("/p/one", "deploi"), ("/p/one", "finish")} <= counted
    assert not any(project == "/p/two" for project, _ in counted)
    asked.clear()
    assert sqlite.selective_terms(["deploys", "rugosun", "finished"], "/p/one") == ["rugosun"]
    assert asked == [(None, "rugosun")]  # the rare word alone, from the index's vocabulary
    store.forget([sqlite.lexical_candidates(["rugosun"], None, 1, "/p/one", None, None).popitem()[0]])
    assert not sqlite.term_frequencies._counts  # a forget clears what was counted


def test_common_words_are_counted_again_only_once_a_project_changed(store):
    """A full count of a big project's words takes seconds at 100k memories: the worker's next rounds re-date it while
    fewer than RECOUNT_AFTER_CHANGE of the project's memories came or went, and count again after. A store of one
    project reads its counts straight from the index, the same as counting them one by one."""
    from memory_store.core.storage.term_frequency import MIN_MEMORIES, RECOUNT_AFTER_CHANGE

    now = time.time()
    rows = [(f"e{i}", draft(f"deploy {i} of service s{i % 40} finished in {i % 90} s", at=now - 5000 + i), None)
            for i in range(MIN_MEMORIES + 100)]
    sqlite = store.store
    sqlite.record_many(rows)
    assert sqlite.count_common_words() >= 3
    counts = {term: count for (project, term), (_, count) in sqlite.term_frequencies._counts.items()}
    for term in ("deploi", "finish"):  # as the per-project count over the index's instances finds them
        assert counts[term] == sqlite.db.value(
            "SELECT count(DISTINCT i.doc) FROM temp.memories_fts_instances AS i CROSS JOIN memories ON memories.id = "
            "i.doc WHERE i.term = ? AND memories.project = '/p/one'", (term,)) == len(rows)

    few = int(RECOUNT_AFTER_CHANGE * len(rows) / 2)
    sqlite.record_many([(f"n{i}", draft(f"deploy {i} of the new gateway", at=now + i), None) for i in range(few)])
    dated = dict(sqlite.term_frequencies._counts)
    assert sqlite.count_common_words() == 0  # nothing counted again...
    assert all(sqlite.term_frequencies._counts[key][0] > when for key, (when, _) in dated.items())  # ...but re-dated
    store.forget([sqlite.lexical_candidates(["gateway"], None, few, "/p/one", None, None).popitem()[0]])
    assert sqlite.count_common_words() >= 3  # a forget clears the counts: counted afresh
    sqlite.record_many([(f"m{i}", draft(f"deploy {i} of the other gateway", at=now + few + i), None)
                        for i in range(3 * few)])
    assert sqlite.count_common_words() >= 3  # enough came: counted again
    assert sqlite.term_frequencies._counts[("/p/one", "deploi")][1] == len(rows) + 4 * few - 1


def test_a_query_of_common_words_matches_what_holds_them_all_first(store):
    """Every word common (a big store): the memories holding all of them are the lexical candidates, and those holding
    any come in only when too few hold all."""
    from memory_store.core.storage.term_frequency import MIN_MEMORIES

    now = time.time()
    rows = [(f"e{i}", draft(f"deploy {i} of service s{i % 40} finished in {i % 90} s" if i % 4 else
                            f"build {i} of service s{i % 40} finished in {i % 90} s", at=now - 5000 + i), None)
            for i in range(MIN_MEMORIES + 100)]
    store.store.record_many(rows)
    assert store.store.selective_terms(["deploy", "build", "finished"], "/p/one") == []
    both = store.store.lexical_candidates(["deploy", "finished"], [], 10, "/p/one", None, None)
    assert len(both) == 10
    texts = {m.id: m.text for m in store.store.get(list(both))}
    assert all("deploy" in t and "finished" in t for t in texts.values())
    # No memory holds "deploy" and "build" both: those holding either fill the list, best first.
    either = store.store.lexical_candidates(["deploy", "build"], [], 10, "/p/one", None, None)
    assert len(either) == 10
    assert either == store.store.lexical_candidates(["deploy", "build"], None, 10, "/p/one", None, None)


def test_a_words_count_from_the_index_vocabulary_is_what_a_match_counts(store):
    """A word's memories are counted from the text index's vocabulary (its own stemming: "uploads" is "upload",
    "café" is "cafe"); a word the index splits in two ("caroline's") is counted by a MATCH. Both agree, also
    after a forget."""
    texts = ["the importer uploads CSV files", "uploading is slow", "the upload finished", "Caroline's café opened",
             "caroline went to the cafe", "an unrelated line"]
    ids = [r.memory_id for r in store.store.record_many([(f"e{i}", draft(t, session=f"s{i}"), None)
                                                        for i, t in enumerate(texts)])]
    sqlite = store.store

    def matched(term):
        return sqlite.db.value('SELECT count(*) FROM memories_fts WHERE memories_fts MATCH ?', ('"' + term + '"',))

    words = ["uploads", "upload", "importer", "café", "cafe", "caroline's", "CSV", "rugosun"]
    assert [sqlite._count_holding(None, w) for w in words] == [matched(w) for w in words] == [3, 3, 1, 2, 2, 1, 1, 0]
    assert sqlite._index_token("caroline's") is None and sqlite._index_token("uploads") == "upload"
    store.forget([ids[0]])
    assert [sqlite._count_holding(None, w) for w in words] == [matched(w) for w in words] == [2, 2, 0, 2, 2, 1, 0, 0]


def test_a_small_store_searches_every_word(store):
    store.store.record_many([(f"e{i}", draft(f"deploy {i} finished"), None) for i in range(50)])
    assert store.store.selective_terms(["deploy", "rugosun"], "/p/one") == ["deploy", "rugosun"]


def test_a_stored_row_becomes_the_memory_pydantic_would_validate():
    """Rows become Memory objects without validation (storage/base.py): the same object a validated one is."""
    from memory_store.core.records import Memory
    from memory_store.core.storage.base import Row

    row = Row(7, "/p/one", "s1", "exchange", "the cache TTL is 600 s", 1795700000.123456, 0.6, 2, 3, 1795700100.5,
              None, '{"prompt": "what is the TTL?"}', 1, "agent-x", 0.8, "ana", "team")
    made = row.memory()
    validated = Memory.model_validate(made.model_dump())
    assert made == validated and made.model_dump() == validated.model_dump()
    assert made.model_fields_set == validated.model_fields_set
    assert made.created_at.timestamp() == pytest.approx(row.created_at) and made.meta == {"prompt": "what is the TTL?"}
    assert made.model_copy(update={"text": "changed"}).text == "changed" and made.text == "the cache TTL is 600 s"


def test_a_time_windows_first_id_is_looked_up_once_an_hour_and_still_finds_what_comes_later(store):
    """A word search within a time window reads the FTS index from the window's first id on: that id is looked up once
    per project and hour (it walks the whole window's index), and memories stored after it, or created earlier in
    that hour, are still found; a window with nothing in it yet is asked again."""
    sqlite = store.store
    now = time.time()
    hour = now - now % 3600
    old = sqlite.record_many([(f"old{i}", draft(f"rugosun importer note {i}", at=hour - 7200 + i), None)
                              for i in range(5)])
    since = hour + 1800
    assert sqlite.lexical_candidates(["rugosun"], None, 10, "/p/one", since, None) == {}
    assert sqlite._first_ids == {}  # nothing in the window yet: not kept
    early = sqlite.record("early", draft("rugosun importer, the hour's first", at=hour + 60)).memory_id
    inside = sqlite.record("inside", draft("rugosun importer, inside the window", at=since + 10)).memory_id
    statements = []
    sqlite.db.conn.exec_trace = lambda cursor, sql, bindings: statements.append(sql) or True
    try:
        assert set(sqlite.lexical_candidates(["rugosun"], None, 10, "/p/one", since, None)) == {inside}
        assert sqlite._first_ids == {("/p/one", hour): early}  # from the start of the hour: a bound for all of it
        later = sqlite.record("later", draft("rugosun importer, stored later", at=since + 20)).memory_id
        statements.clear()
        found = sqlite.lexical_candidates(["rugosun"], None, 10, "/p/one", since + 5, None)
        assert set(found) == {inside, later}
        assert not any("min(id)" in sql for sql in statements)  # the first id came from what was kept
    finally:
        sqlite.db.conn.exec_trace = None
    assert all(r.memory_id not in found for r in old)
