"""The storage contract: every check here runs on both backends, the embedded SQLite file and a real
PostgreSQL with pgvector (tests/pg.py), through the same Python API core code uses."""

from __future__ import annotations

import json
import time

import pytest

from memory_store import open_recall
from memory_store.core.records import MemoryDraft
from memory_store.core.storage.term_frequency import MIN_MEMORIES
from memory_store.shared import spool
from memory_store.shared.paths import DataPaths
from memory_store.shared.projects import GLOBAL_PROJECT


def draft(text, project="/p/one", kind="prompt", session="s1", at=None, **kw) -> MemoryDraft:
    return MemoryDraft(project=project, session_id=session, kind=kind, text=text,
                       created_at=at if at is not None else time.time(), **kw)


@pytest.fixture
def recall(backend, home):
    r = open_recall(home, load_models=False)
    assert r.store.backend == backend
    yield r
    r.close()


@pytest.fixture
def recall_with_model(backend, home):
    r = open_recall(home)
    yield r
    r.close()


def test_an_event_is_stored_exactly_once(recall):
    first = recall.store.record("evt-1", draft("the queue is named orders-v2"))
    again = recall.store.record("evt-1", draft("the queue is named orders-v2"))
    assert first.created and again.duplicate_event and again.memory_id == first.memory_id
    counts = recall.store.counts()
    assert counts["memories"] == 1 and counts["events"] == 1
    assert recall.store.has_event("evt-1") and not recall.store.has_event("evt-2")


def test_a_memory_keeps_the_agent_it_came_from(recall):
    """`client` rides in the memory's meta on both backends; a memory from before it was recorded is Claude Code's."""
    codex = recall.store.record("c1", draft("the API listens on 8443", meta={"client": "codex"})).memory_id
    older = recall.store.record("c2", draft("the cache TTL is 15 minutes")).memory_id
    by_id = {m.id: m.client for m in recall.get([codex, older])}
    assert by_id == {codex: "codex", older: "claude-code"}
    assert [m.client for m in recall.select(match="8443")] == ["codex"]
    assert recall.get([codex])[0].model_dump(mode="json")["client"] == "codex"


def test_the_same_text_twice_is_one_memory_seen_twice(recall):
    a = recall.store.record("e1", draft("run make lint before pushing"))
    b = recall.store.record("e2", draft("Run  make lint before pushing", session="s2"))
    assert b.memory_id == a.memory_id and not b.created
    assert recall.get([a.memory_id])[0].seen_count == 2
    c = recall.store.record("e3", draft("run make lint before pushing", project="/p/two"))
    assert c.memory_id != a.memory_id  # another project: another memory


def test_eleven_done_replies_to_eleven_prompts_are_eleven_turns(recall):
    ids = {recall.store.record(f"x{i}", draft("Done.", kind="exchange", meta={"prompt": f"step {i}"})).memory_id
           for i in range(11)}
    assert len(ids) == 11


def test_a_memorys_conversation_is_its_sessions_turns_around_it_in_order(recall):
    """The turns the gate builds episodes from: this session's prompts and answers in this project, up to `before`
    of them before the memory and `after` from it on, within the span, in time order (ties by id)."""
    store, at = recall.store, round(time.time() - 1000, 6)  # to the microsecond, as hooks date events
    ids = {}
    for n, (kind, session, project, offset) in enumerate([
            ("prompt", "s1", "/p/one", 0), ("exchange", "s1", "/p/one", 1), ("tool", "s1", "/p/one", 2),
            ("prompt", "s1", "/p/one", 3), ("prompt", "s2", "/p/one", 3), ("exchange", "s1", "/p/two", 3),
            ("exchange", "s1", "/p/one", 4), ("prompt", "s1", "/p/one", 4), ("exchange", "s1", "/p/one", 5),
            ("prompt", "s1", "/p/one", 900)]):
        ids[n] = store.record(f"c{n}", draft(f"turn number {n} of the talk", project=project, kind=kind,
                                              session=session, at=at + offset)).memory_id
    middle, tool = store.get([ids[3], ids[2]])

    def conversation(memory, before, after, span=60.0):
        return [m.id for m in store.conversation(memory, before, after, span)]

    assert conversation(middle, 4, 5) == [ids[0], ids[1], ids[3], ids[6], ids[7], ids[8]]
    assert conversation(middle, 1, 2) == [ids[1], ids[3], ids[6]]
    assert conversation(tool, 4, 5) == [ids[0], ids[1], ids[3], ids[6], ids[7], ids[8]]  # a tool call: around it
    many = store.conversations([middle, tool], 1, 1, 60.0)
    assert [m.id for m in many[middle.id]] == [ids[1], ids[3]] and [m.id for m in many[tool.id]] == [ids[1], ids[3]]
    assert many[middle.id][0] == store.get([ids[1]])[0]  # the same memory as read any other way
    assert conversation(middle, 4, 5, span=900.0)[-1] == ids[9]


def test_superseded_memories_are_not_searched(recall):
    old = recall.store.record("e1", draft("the cache TTL is 300 seconds"))
    new = recall.store.record("e2", draft("the cache TTL is 600 seconds", kind="exchange", supersedes=[old.memory_id]))
    assert [h.id for h in recall.search("cache TTL", project="/p/one")] == [new.memory_id]
    assert recall.get([old.memory_id])[0].superseded_by == new.memory_id


def test_forget_removes_the_text_everywhere_and_a_reimport_does_not_restore_it(recall):
    now = time.time()
    recall.store.record("t1", draft("what is the admin password hint?", at=now - 3))
    secret = recall.store.record("t2", draft("the admin password hint is bluebird", kind="exchange",
                                             meta={"prompt": "what is the admin password hint?"}, at=now - 2))
    recall.store.record("t3", draft("thanks, noted", at=now - 1))
    gone = recall.forget([secret.memory_id])
    assert [m.id for m in gone] == [secret.memory_id]
    assert recall.search("bluebird", project="/p/one") == []
    for memory in recall.select(project="/p/one"):  # no neighbour keeps it in its context
        context = recall.store.db.one("SELECT context_before, context_after FROM memories WHERE id = ?", (memory.id,))
        assert "bluebird" not in " ".join(context) and "bluebird" not in memory.text
    again = recall.store.record("t2", draft("the admin password hint is bluebird", kind="exchange"))
    assert again.duplicate_event and recall.store.counts()["memories"] == 2
    # Read back from a file under another event id (an import): its tombstone keeps it forgotten, while a new text
    # and the same text said again live (a new event, not a restored one) are kept.
    restored = recall.store.record("import:t2", draft("the admin password hint is bluebird", kind="exchange",
                                                      meta={"prompt": "what is the admin password hint?"}),
                                   restoring=True)
    assert restored.memory_id is None and recall.store.counts()["memories"] == 2
    assert recall.store.record("import:t4", draft("the hint moved to the vault"), restoring=True).created
    tombstones = recall.store.db.all("SELECT digest FROM tombstones")
    assert tombstones and not [d for (d,) in tombstones if "bluebird" in d]


def test_search_stays_in_its_project_unless_asked(recall):
    recall.store.record("e1", draft("deploy with ship.sh --canary"))
    recall.store.record("e2", draft("deploy with helm upgrade", project="/p/two"))
    recall.store.record("e3", draft("deploy notes apply everywhere", project=GLOBAL_PROJECT, kind="note"))
    assert {h.project for h in recall.search("deploy", project="/p/one")} == {"/p/one", GLOBAL_PROJECT}
    assert {h.project for h in recall.search("deploy", project=None)} == {"/p/one", "/p/two", GLOBAL_PROJECT}


def test_query_syntax_cannot_break_a_search(recall):
    recall.store.record("e1", draft('the NEAR operator and "quotes" (parens) * stars: AND OR NOT & | ! <-> \\ \''))
    for query in ['"unbalanced', "NEAR(", "a AND", "*", "col:umn", "(", "-", "^start", "", "   ", "OR OR", "a & b",
                  "!x", "<->", "'", "\\", "a:*", "x | y"]:
        recall.search(query, project="/p/one")  # no exception
    assert recall.search('"quotes" NEAR (parens)', project="/p/one")


def test_stopwords_are_not_what_matches(recall):
    recall.store.record("e1", draft("what is the plan for the release"))
    recall.store.record("e2", draft("release checklist: bump version, tag, publish"))
    assert "checklist" in recall.search("what is the release checklist?", project="/p/one")[0].text


def test_identifiers_match_by_their_parts(recall):
    recall.store.record("e1", draft("set hold_ttl_minutes = 8 in config/payments.yaml"))
    recall.store.record("e2", draft("unrelated chatter about lunch"))
    for query in ("hold_ttl_minutes", "payments.yaml", "ttl minutes"):
        assert "hold_ttl_minutes" in recall.search(query, project="/p/one")[0].text, query


def test_a_reply_is_found_by_what_it_answers(recall):
    now = time.time()
    recall.store.record("c1", draft("did you enjoy the Nordic fjord cruise?", at=now - 2))
    reply = recall.store.record("c2", draft("Yes, it was amazing!", kind="exchange", at=now - 1))
    recall.store.record("c3", draft("unrelated: the build is green", session="s9"))
    assert recall.search("fjord cruise", project="/p/one")[0].id in (reply.memory_id, reply.memory_id - 1)
    assert reply.memory_id in [h.id for h in recall.search("fjord cruise", project="/p/one")]


def test_lexical_scores_prefer_rare_words_and_the_memory_itself(recall):
    now = time.time()
    for i in range(30):
        recall.store.record(f"f{i}", draft(f"deploy step {i} finished", session=f"s{i}", at=now - 100 + i))
    target = recall.store.record("t", draft("deploy the zanzibar importer", session="sz", at=now))
    hits = recall.search("deploy zanzibar", project="/p/one", limit=3)
    assert hits[0].id == target.memory_id and hits[0].score > hits[1].score


def test_timeline_orders_a_session(recall):
    base = time.time()
    ids = [recall.store.record(f"e{i}", draft(f"step {i} of the migration", at=base + i)).memory_id for i in range(5)]
    assert [m.id for m in recall.timeline(ids[2], before=1, after=1)] == ids[1:4]


def test_access_counts_grow_when_hits_are_used(recall):
    a = recall.store.record("e1", draft("redis runs on port 6380 here"))
    recall.search("redis port", project="/p/one", touch=True)  # Claude's lookup (MCP)
    recall.search("redis port", project="/p/one")  # a person's search: looking is not using
    recall.search("redis port", project="/p/one", shown="relevant")
    assert recall.get([a.memory_id])[0].access_count == 1
    recall.use([a.memory_id])
    assert recall.get([a.memory_id])[0].access_count == 2


def test_spooled_events_are_ingested_exactly_once(backend, home, project):
    paths = DataPaths(home)
    payload = {"session_id": "s", "cwd": str(project), "hook_event_name": "UserPromptSubmit",
               "prompt": "the spool holds the release date: March 3"}
    envelope = {"event_id": "spooled-1", "received_at": time.time(), "payload": payload}
    spool.write(paths.spool, envelope)
    spool.write(paths.spool, envelope)  # the same event twice (a hook retried after a late answer)
    with open_recall(home, load_models=False) as r:
        r.ingest_spool()
        assert spool.pending(paths.spool) == []
        hits = r.search("release date", project=str(project))
        assert len(hits) == 1 and "March 3" in hits[0].text


def test_sessions_injections_and_receipts(recall):
    store = recall.store
    now = time.time()
    store.open_session("s1", "/p/one", now, "/tmp/s1.jsonl")
    store.close_session("s1", "/p/one", now + 5, "clear")
    store.import_session("s2", "/p/one", now - 10, now - 5, "/tmp/s2.jsonl")
    store.import_session("s2", "/p/one", now - 20, now - 1, "/tmp/s2.jsonl")
    assert store.counts()["sessions"] == 2
    m = store.record("e1", draft("the queue is named orders-v2")).memory_id
    p = store.record("e2", draft("what is the queue called?")).memory_id
    store.mark_injected("s3", [m], "UserPromptSubmit", now)
    store.mark_injected("s3", [m], "SessionStart", now)
    assert store.injected_ids("s3") == {m} and store.injected_ids("s3", "SessionStart") == {m}
    store.add_receipt("s3", "/p/one", "UserPromptSubmit", now, p, [(m, "evidence 0.9")])
    receipt = store.receipts("s3")[0]
    assert receipt["prompt"] == "what is the queue called?" and receipt["memories"] == [{"id": m, "why": "evidence 0.9"}]
    store.reset_injections("s3")
    assert store.injected_ids("s3") == set() and store.receipts("s3")  # receipts outlive a compaction
    recall.forget([m])
    assert store.receipts("s3") == []  # a receipt naming a forgotten memory goes with it
    store.mark_imported("/tmp/a.jsonl", 10, 3)
    store.mark_imported("/tmp/a.jsonl", 12, 4)
    assert store.imported_size("/tmp/a.jsonl") == 12 and store.imported_size("/tmp/b.jsonl") is None
    assert store.turn_prompt("s1", None) is not None


def test_pins_and_selection(recall):
    store = recall.store
    now = time.time()
    a = store.record("e1", draft("Deploys need the CANARY flag", at=now - 86400 * 40)).memory_id
    b = store.record("e2", draft("lunch is at noon", session="s2", at=now)).memory_id
    assert recall.pin([a, 999999]) == [a] and store.pinned_ids("/p/one") == [a]
    assert [m.id for m in recall.select(match="canary")] == [a]  # case-insensitive
    assert [m.id for m in recall.select(match="100%_sure")] == []  # LIKE wildcards are literal
    assert [m.id for m in recall.select(session_id="s2")] == [b]
    assert [m.id for m in recall.select(before=now - 86400)] == [a]
    assert [m.id for m in recall.select(project="/p/one", newest=1)] == [b]
    recall.pin([a], False)
    assert store.pinned_ids(None) == []


def test_pruning_bookkeeping(recall):
    store = recall.store
    now = time.time()
    ids = [store.record(f"p{i}", draft(f"ok {i}", at=now - 3 * 86400 + i)).memory_id for i in range(3)]
    store.record("young", draft("still hot", at=now))
    assert [m.id for m in store.prune_candidates(now - 86400, 10)] == ids
    store.advance_prune_cursor(ids[1])
    assert [m.id for m in store.prune_candidates(now - 86400, 10)] == ids[2:]
    store.count_pruned(["prompt", "prompt", "exchange"], now)
    assert store.pruned_counts() == {"exchange": 1, "prompt": 2}


def test_numbers_and_purge(recall):
    store = recall.store
    store.record("e1", draft("one"))
    store.record("e2", draft("two", project="/p/two", kind="tool"))
    counts = store.counts()
    assert counts["memories"] == 2 and counts["projects"] == 2 and counts["by_kind"] == {"prompt": 1, "tool": 1}
    assert {p["project"] for p in recall.projects()} == {"/p/one", "/p/two"}
    assert store.size_bytes() > 0
    assert recall.purge()["memories"] == 2 and store.counts()["memories"] == 0
    assert store.record("e1", draft("one")).duplicate_event  # a purged event is not brought back either


def test_a_project_that_gets_a_name_keeps_its_memories(recall):
    store = recall.store
    store.record("e1", draft("the release train leaves on Thursdays", project="/src/shop"))
    store.record("e2", draft("lunch is at noon", project="/src/shop", session="s2"))
    store.record("e3", draft("lunch is at noon", project="github.com/acme/shop", session="s3"))  # the same, later
    assert store.note_project_path("github.com/acme/shop", "/src/shop") == 2
    assert store.note_project_path("github.com/acme/shop", "/src/shop") == 0  # once per process
    assert [h.project for h in recall.search("release train", project="github.com/acme/shop")] == \
        ["github.com/acme/shop"]
    assert recall.search("release train", project="/src/shop") == []
    lunch = recall.select(project="github.com/acme/shop", match="lunch")
    assert len(lunch) == 1 and lunch[0].seen_count == 2  # merged, not duplicated
    assert store.record("e2", draft("lunch is at noon", project="/src/shop")).duplicate_event  # its event moved too
    places = {p["project"]: p["paths"] for p in recall.projects()}
    assert [p["path"] for p in places["github.com/acme/shop"]] == ["/src/shop"]


def test_a_shared_memory_keeps_its_text_alone(recall):
    store = recall.store
    now = time.time()
    store.record("s1", draft("which port does redis use in staging?", at=now - 2))
    shared = store.record("s2", draft("Redis listens on 6380 in staging.", kind="exchange",
                                      meta={"prompt": "which port does redis use in staging?", "files": ["x.py"]},
                                      at=now - 1)).memory_id
    store.record("s3", draft("and the private follow-up mentions the vault path /secret/ops", at=now))
    before = store.db.one("SELECT context_before, context_after FROM memories WHERE id = ?", (shared,))
    assert "redis" in before[0] and "vault" in before[1]
    ready, refused = recall.share_check([shared, 424242])
    assert [m.id for m in ready] == [shared] and ready[0].text == "Redis listens on 6380 in staging."
    assert 424242 in refused
    assert recall.share([shared]) == [shared]
    row = store.db.one("SELECT context_before, context_after, meta, visibility FROM memories WHERE id = ?", (shared,))
    assert row == ("", "", "{}", "team")
    store.record("s4", draft("another later turn about the vault", at=now + 1))  # does not join its context
    assert store.db.one("SELECT context_after FROM memories WHERE id = ?", (shared,)) == ("",)
    assert recall.unshare([shared]) == [shared]
    memory = recall.get([shared])[0]
    assert memory.visibility == "private" and memory.meta["prompt"].startswith("which port")
    assert "vault" in store.db.one("SELECT context_after FROM memories WHERE id = ?", (shared,))[0]


def test_a_secret_is_never_shared(recall):
    memory = recall.store.record("k1", draft("deploy key AKIAIOSFODNN7EXAMPLE for the bucket")).memory_id
    ready, refused = recall.share_check([memory])
    assert not ready and "secret" in refused[memory]
    with pytest.raises(ValueError, match="secret"):
        recall.remember("the token is ghp_0123456789abcdefghijABCDEFGHIJ012345", "/p/one", team=True)
    note = recall.remember("Releases are cut on Tuesdays", "/p/one", team=True)
    assert note.visibility == "team" and note.owner


def test_a_big_store_leaves_its_most_common_words_out_of_the_lexical_search(recall):
    store = recall.store
    now = time.time()
    filler = [(f"e{i}", draft(f"deploy {i} of service s{i % 40} finished in {i % 90} s", at=now - 5000 + i), None)
              for i in range(MIN_MEMORIES + 100)]
    store.record_many(filler + [("rare", draft("the rugosun importer now streams its uploads", at=now), None)])
    assert store.selective_terms(["deploy", "rugosun", "importer"], "/p/one") == ["rugosun", "importer"]
    assert store.selective_terms(["deploy", "finished"], "/p/one") == []  # every one common
    hits = recall.search("deploy the rugosun importer", limit=3)
    assert hits and "rugosun" in hits[0].text


# --- with real embeddings ------------------------------------------------------------------------------


def test_embeddings_are_queued_saved_and_searched(recall_with_model):
    recall = recall_with_model
    store = recall.store
    now = time.time()
    texts = ["We rotate the API keys every 90 days with scripts/rotate-keys.sh",
             "The soup needs more salt", "Staging deploys go through the canary pipeline"]
    ids = [store.record(f"v{i}", draft(t, at=now - 10 + i, session=f"s{i}")).memory_id for i, t in enumerate(texts)]
    assert store.pending_embeddings() == 3
    assert sorted(store.unembedded_ids(10)) == sorted(ids) and len(store.unembedded_ids(2)) == 2
    assert store.pending_embeddings() == 3  # only read
    assert store.sessions_of(ids + [10**9]) == {ids[0]: "s0", ids[1]: "s1", ids[2]: "s2"}
    assert recall.embed_pending() == 3 and store.pending_embeddings() == 0 and store.unembedded_ids(10) == []
    assert store.dense_ready(recall.models.embedder) and store.vector_count() == 3
    assert set(store.vectors_of(ids)) == set(ids) and store.vector_of(ids[0]) == store.vectors_of([ids[0]])[ids[0]]
    query = recall.models.embedder.embed_query("how often do we change credentials?")
    nearest = store.nearest(query, 2, "/p/one", None, None)
    assert max(nearest, key=nearest.get) == ids[0]
    assert store.nearest(query, 2, "/p/one", now - 9.5, None).keys() <= set(ids[1:])  # a time window
    hit = recall.search("how often do we change credentials?", project="/p/one")[0]
    assert hit.id == ids[0] and hit.similarity > 0.3
    [each] = store.nearest_each([query], 1, "/p/one", None, None, kinds=("prompt",))
    assert list(each) == [ids[0]]


def test_a_repeat_that_differs_only_in_formatting_supersedes_the_older_one(recall_with_model):
    recall = recall_with_model
    store = recall.store
    now = time.time()
    old = store.record("d1", draft("Run the integration tests with `pytest -x` before pushing!", kind="note",
                                   at=now - 60)).memory_id
    reworded = store.record("d3", draft("Run the integration tests using pytest -x before pushing", kind="note",
                                        at=now - 20)).memory_id
    new = store.record("d4", draft("run the integration tests with pytest -x before pushing.", kind="note",
                                   at=now)).memory_id
    recall.embed_pending()
    memories = {m.id: m for m in recall.get([old, reworded, new])}
    assert memories[old].superseded_by == new
    assert memories[reworded].superseded_by is None and memories[new].superseded_by is None


def test_hits_say_whose_they_are(recall):
    recall.store.record("o1", draft("the staging cluster is called kestrel"))
    hit = recall.search("staging cluster", project="/p/one")[0]
    data = json.loads(hit.model_dump_json())
    assert data["visibility"] == "private" and data["owner"] == recall.store.owner and data["owner"]


def test_what_session_end_recovery_and_the_code_check_ask_of_a_store(recall, tmp_path):
    """Which tool calls of a session are stored (by tool_use_id), whether a prompt got its answer, and where a
    project lives on this machine: the same answers from both backends."""
    store = recall.store
    now = time.time()
    prompt = store.record("p", draft("migrate the billing db", at=now - 10)).memory_id
    store.record("t1", draft("Bash `alembic upgrade head` → ok", kind="tool", at=now - 8, meta={"tool_use_id": "tu_1"}))
    store.record("t2", draft("Bash `pytest` → 3 passed", kind="tool", at=now - 6, session="other",
                            meta={"tool_use_id": "tu_2"}))
    assert store.stored_tool_calls("s1", ["tu_1", "tu_2", "tu_3", ""]) == {"tu_1"}
    asked = recall.get([prompt])[0]
    assert not store.answered(asked)
    store.record("x", draft("Migrated to b2.", kind="exchange", at=now - 2, meta={"prompt": "migrate the billing db"}))
    assert store.answered(asked)
    store.note_project_path("github.com/acme/billing", str(tmp_path / "old-clone"), now - 100)
    store.note_project_path("github.com/acme/billing", str(tmp_path / "clone"), now)
    assert store.local_paths("github.com/acme/billing") == [str(tmp_path / "clone"), str(tmp_path / "old-clone")]
    assert store.local_paths("github.com/acme/other") == []
