"""The worker's RAM copy of recent vectors (core/storage/recent_vectors.py) answers like the backend's own
index (sqlite-vec, pgvector) and follows what any process writes: new vectors, forgotten memories, a rebuilt
index. Every test runs on both backends."""

from __future__ import annotations

import time

from memory_store import open_recall
from memory_store.core.records import MemoryDraft
from memory_store.core.storage.recent_vectors import RecentVectors

DAY = 86400.0
TEXTS = [
    "the deploy script times out against the staging cluster",
    "payments retry three times before the webhook gives up",
    "the cache layer reads from Redis in the EU region",
    "CI runs pytest -x on every pull request",
    "the login page moved to the new auth middleware",
    "the billing job runs nightly at 02:00 UTC",
]


def fill(recall, project: str, texts, at: float) -> list[int]:
    ids = []
    for i, text in enumerate(texts):
        draft = MemoryDraft(project=project, session_id="s", kind="prompt", text=text, created_at=at + i)
        ids.append(recall.store.record(f"{project}-{at}-{i}", draft).memory_id)
    recall.embed_pending()
    return ids


def test_nearest_matches_the_index_and_follows_other_processes(backend, home):
    now = time.time()
    writer = open_recall(home)
    ids = fill(writer, "/p/a", TEXTS, now - 2 * DAY)
    fill(writer, "/p/b", TEXTS[:3], now - DAY)
    old = fill(writer, "/p/a", ["an old note about the deploy script"], now - 30 * DAY)

    reader = open_recall(home)
    embedder = reader.models.load_embedder()
    recent = RecentVectors(8, embedder.dim, whole_up_to=0)  # a big store's window
    reader.store.keep_recent_vectors(recent)
    assert old[0] not in recent.row_of  # older than the window: the index answers for it
    query = embedder.embed_query("why does deploying to staging time out?")
    since = now - 7 * DAY
    in_ram = reader.store.nearest(query, 3, "/p/a", since, None)
    on_disk = reader.store._index_nearest([query], 3, "/p/a", since, None)[0]
    assert set(in_ram) == set(on_disk) and ids[0] in in_ram
    assert all(abs(in_ram[i] - on_disk[i]) < 1e-4 for i in in_ram)
    assert reader.store.vector_of(ids[0]) == reader.store._index_vectors([ids[0]])[ids[0]]

    # Another process adds and forgets: the reader sees both (a sync reads the change log).
    added = fill(writer, "/p/a", ["staging deploys now wait 60 seconds before timing out"], now - 60)
    writer.forget([ids[0]])
    time.sleep(0.06)  # past SYNC_SECONDS
    found = reader.store.nearest(query, 3, "/p/a", since, None)
    assert added[0] in found and ids[0] not in found and ids[0] not in recent.row_of

    # A rebuilt index (another model, or `recall reindex`) empties the copy until vectors come back.
    writer.store.reset_vector_index(embedder.name, embedder.dim)
    time.sleep(0.06)
    assert reader.store.nearest(query, 3, "/p/a", since, None) == {}
    writer.embed_pending()
    time.sleep(0.06)
    assert added[0] in reader.store.nearest(query, 3, "/p/a", since, None)
    reader.close()
    writer.close()


def test_nearest_each_is_nearest_per_vector(backend, home):
    now = time.time()
    recall = open_recall(home)
    fill(recall, "/p/a", TEXTS, now - DAY)
    embedder = recall.models.load_embedder()
    recall.store.keep_recent_vectors(RecentVectors(8, embedder.dim))
    queries = [embedder.embed_query(q) for q in ("redis cache region", "nightly billing")]
    together = recall.store.nearest_each(queries, 2, "/p/a", now - 7 * DAY, None)
    one_by_one = [recall.store.nearest(q, 2, "/p/a", now - 7 * DAY, None) for q in queries]
    assert [set(found) for found in together] == [set(found) for found in one_by_one]
    assert all(abs(a[i] - b[i]) < 1e-5 for a, b in zip(together, one_by_one) for i in a)
    recall.close()


def test_all_time_searches_use_ram_until_an_older_vector_exists(backend, home):
    """A young store (nothing older than the window) answers all-time searches from RAM too; an import of
    old transcripts sends them back to the index, which sees the old memory."""
    now = time.time()
    writer = open_recall(home)
    ids = fill(writer, "/p/a", TEXTS, now - DAY)
    reader = open_recall(home)
    embedder = reader.models.load_embedder()
    recent = RecentVectors(8, embedder.dim, whole_up_to=0)
    reader.store.keep_recent_vectors(recent)
    assert recent.covers(None)
    query = embedder.embed_query("the deploy script timing out on staging")
    assert ids[0] in reader.store.nearest(query, 2, "/p/a", None, None)

    old = fill(writer, "/p/a", ["the deploy script timed out on staging a month ago too"], now - 30 * DAY)
    time.sleep(0.06)  # past SYNC_SECONDS
    assert old[0] in reader.store.nearest(query, 2, "/p/a", None, None)
    assert not recent.covers(None) and recent.covers(now - 7 * DAY)
    reader.close()
    writer.close()


def test_a_small_store_is_held_whole(backend, home):
    """Up to whole_up_to memories RAM holds every vector, however old, and answers all-time searches as the
    index does; a bigger store keeps only its window."""
    now = time.time()
    recall = open_recall(home)
    fill(recall, "/p/a", TEXTS, now - DAY)
    old = fill(recall, "/p/a", ["the deploy script timed out on staging a year ago"], now - 365 * DAY)
    embedder = recall.models.load_embedder()
    whole = RecentVectors(8, embedder.dim, whole_up_to=len(TEXTS) + 1)
    recall.store.keep_recent_vectors(whole)
    assert old[0] in whole.row_of and whole.covers(None)
    query = embedder.embed_query("deploy script timing out on staging")
    in_ram = recall.store.nearest(query, 3, "/p/a", None, None)
    on_disk = recall.store._index_nearest([query], 3, "/p/a", None, None)[0]
    assert set(in_ram) == set(on_disk) and old[0] in in_ram
    windowed = RecentVectors(8, embedder.dim, whole_up_to=len(TEXTS))
    recall.store.keep_recent_vectors(windowed)
    assert old[0] not in windowed.row_of and not windowed.covers(None) and windowed.covers(now - 7 * DAY)
    recall.close()


def test_a_bigger_store_keeps_its_older_vectors_in_int8_and_searches_all_time_in_ram(backend, home):
    """Past whole_up_to, a store of at most archive_up_to memories keeps its older vectors in an int8 archive: an
    all-time search reads RAM and finds what the index finds (similarities within 0.003), a single old vector still
    comes from the index (exact), a forget by another process leaves the archive, and a store past archive_up_to
    keeps only its window."""
    now = time.time()
    writer = open_recall(home)
    recent_ids = fill(writer, "/p/a", TEXTS, now - DAY)
    old = fill(writer, "/p/a", ["the deploy script timed out on staging a year ago",
                                "payments used to retry five times last spring"], now - 365 * DAY)
    reader = open_recall(home)
    embedder = reader.models.load_embedder()
    size = len(TEXTS) + 2
    archived = RecentVectors(8, embedder.dim, whole_up_to=0, archive_up_to=size)
    reader.store.keep_recent_vectors(archived)
    assert archived.covers(None) and old[0] not in archived.row_of and set(recent_ids) <= set(archived.row_of)
    query = embedder.embed_query("deploy script timing out on staging")
    in_ram = reader.store.nearest(query, 4, "/p/a", None, None)
    on_disk = reader.store._index_nearest([query], 4, "/p/a", None, None)[0]
    assert set(in_ram) == set(on_disk) and old[0] in in_ram
    assert all(abs(in_ram[i] - on_disk[i]) < 0.003 for i in in_ram)
    assert reader.store.vector_of(old[0]) == reader.store._index_vectors([old[0]])[old[0]]  # exact, from the index
    writer.forget([old[0]])
    time.sleep(0.06)  # past SYNC_SECONDS
    assert old[0] not in reader.store.nearest(query, 4, "/p/a", None, None)
    windowed = RecentVectors(8, embedder.dim, whole_up_to=0, archive_up_to=size - 2)  # now past it
    reader.store.keep_recent_vectors(windowed)
    assert windowed.archive is None and not windowed.covers(None)
    reader.close()
    writer.close()


def test_a_big_int8_table_multiplies_only_the_rows_whose_signs_agree_most(monkeypatch):
    """Past PREFILTER_FROM rows an int8 table keeps, per query, the PREFILTER rows closest by their sign bits before
    multiplying: a stored vector asked for itself is always among them, and what comes back is a subset of the rows
    with the same similarities as without the prefilter."""
    import numpy as np

    from memory_store.core.storage import recent_vectors

    rng = np.random.default_rng(7)
    vectors = rng.standard_normal((300, 384)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    table = recent_vectors.VectorTable(384, quantized=True)
    for i, vector in enumerate(vectors):
        table.put(1000 + i, vector, 1.0, 1, 1)
    queries = vectors[[5, 77, 123]].T
    full_ids, full = table.similarities(queries, None, None, None, None)
    monkeypatch.setattr(recent_vectors, "PREFILTER_FROM", 100)
    monkeypatch.setattr(recent_vectors, "PREFILTER", 20)
    ids, found = table.similarities(queries, None, None, None, None)
    assert len(ids) < 3 * 20 + 1 and set(ids) <= set(full_ids)
    for column, own in enumerate((1005, 1077, 1123)):
        assert ids[np.argmax(found[:, column])] == own and found[:, column].max() > 0.99
    where = {memory_id: row for row, memory_id in enumerate(full_ids)}
    assert np.allclose(found, full[[where[i] for i in ids]])


def test_nearest_each_of_some_kinds(backend, home):
    now = time.time()
    recall = open_recall(home)
    prompts = fill(recall, "/p/a", TEXTS[:3], now - DAY)
    tool_text = "$ ./deploy.sh staging\ntimeout after 30s"
    tool = recall.store.record("tool-1", MemoryDraft(project="/p/a", session_id="s", kind="tool", text=tool_text,
                                                      created_at=now))
    recall.embed_pending()
    embedder = recall.models.load_embedder()
    recall.store.keep_recent_vectors(RecentVectors(8, embedder.dim))
    query = embedder.embed_query(tool_text)
    assert tool.memory_id in recall.store.nearest_each([query], 1, "/p/a", now - 7 * DAY, None)[0]
    only = recall.store.nearest_each([query], 1, "/p/a", now - 7 * DAY, None, kinds=("prompt", "exchange"))[0]
    assert set(only) <= set(prompts) and len(only) == 1
    recall.close()


def test_a_searchs_vectors_are_read_beside_its_words_without_the_connections_lock(backend, home, monkeypatch):
    """search.candidates syncs the RAM copy, then the vectors are searched on the embedding's thread once the query's
    vector is there, while the request's thread searches the words and holds the connection's lock: the vector search
    must not wait for that lock, and finds what a search on its own finds."""
    import threading
    from concurrent.futures import Future

    from memory_store.core.retrieval import search
    from memory_store.core.storage import recent_vectors

    monkeypatch.setattr(recent_vectors, "SYNC_SECONDS", 60.0)  # synced once, fresh for the whole test
    now = time.time()
    recall = open_recall(home)
    ids = fill(recall, "/p/a", TEXTS, now - DAY)
    store = recall.store
    store.recent_vectors_cache(7, recall.models.embedder.dim)
    query = recall.models.embedder.embed_query("when does the nightly billing run?")
    alone = store.nearest(query, 3, "/p/a", now - 2 * DAY, None)
    assert max(alone, key=alone.get) == ids[5]

    store.catch_up_vectors()
    embedding: Future = Future()
    meaning = search._then_nearest(store, embedding, 3, "/p/a", now - 2 * DAY, None)
    model = threading.Thread(target=embedding.set_result, args=(query,))
    with store.db.lock:  # the word search, meanwhile
        model.start()
        model.join(timeout=20)
        assert meaning.done()
    vector, dense, ms = meaning.result()
    assert vector == query and dense == alone and ms >= 0
    recall.close()


def test_a_reload_puts_many_rows_as_putting_them_one_by_one_would():
    """A reload puts its rows in batches (one by one, 100k vectors took 4-6 s): the same rows, scales, int8 values and
    sign bits, a zero vector and a row already held included."""
    import numpy as np

    from memory_store.core.storage.recent_vectors import VectorTable

    rng = np.random.default_rng(7)
    vectors = rng.standard_normal((300, 384)).astype(np.float32)
    vectors[5] = 0.0
    ids, created = list(range(1000, 1300)), [float(i) for i in range(300)]
    projects, kinds = [i % 3 + 1 for i in range(300)], [i % 2 + 1 for i in range(300)]
    for quantized in (True, False):
        one, many = VectorTable(384, quantized), VectorTable(384, quantized)
        for k in range(300):
            one.put(ids[k], vectors[k], created[k], projects[k], kinds[k])
        many.put_many(ids[:200], vectors[:200], created[:200], projects[:200], kinds[:200])
        many.put_many(ids[150:], vectors[150:], created[150:], projects[150:], kinds[150:])  # 50 held already
        for memory_id, k in ((5000, 7), (5001, 8), (5000, 9)):  # a new memory twice in one batch: one row, its last
            one.put(memory_id, vectors[k], created[k], projects[k], kinds[k])
        many.put_many([5000, 5001, 5000], vectors[[7, 8, 9]], [created[k] for k in (7, 8, 9)],
                      [projects[k] for k in (7, 8, 9)], [kinds[k] for k in (7, 8, 9)])
        assert one.size == many.size == 302 and one.row_of == many.row_of
        for name in VectorTable.ARRAYS:
            assert np.array_equal(getattr(one, name)[:302], getattr(many, name)[:302]), (quantized, name)
