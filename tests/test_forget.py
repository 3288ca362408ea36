"""Forgetting forgets: the text leaves every file of the data dir, ids are never reused, and
`recall forget` stays inside one project and asks before deleting several memories."""

from __future__ import annotations

import json
import time
import uuid

import pytest
from conftest import load_payload, run_cli, stop_worker, stored, wait_until_embedded

from memory_store import open_recall
from memory_store.core.records import MemoryDraft

CODENAME = "ZebrafishQuartz9731"  # not a secret (redaction would hide the point): a distinctive string


def data_dir_bytes(home) -> dict[str, bytes]:
    return {str(p): p.read_bytes() for p in home.rglob("*") if p.is_file() and "models" not in p.parts}


def files_holding(home, needle: str) -> list[str]:
    return [name for name, data in data_dir_bytes(home).items() if needle.encode() in data]


def fts_hits(recall, word: str) -> int:
    return recall.store.db.conn.execute("SELECT count(*) FROM memories_fts WHERE memories_fts MATCH ?",
                                     (f'"{word}"',)).fetchone()[0]


def play(hooks, project, prompts: list[tuple[str, str]]) -> str:
    session_id = str(uuid.uuid4())

    def send(fixture: str, **changes):
        payload = load_payload(fixture, session_id=session_id, cwd=str(project),
                               transcript_path=f"/tmp/{session_id}.jsonl", **changes)
        assert hooks.run(payload["hook_event_name"], payload).returncode == 0

    send("SessionStart-startup")
    for number, (prompt, answer) in enumerate(prompts):
        send("UserPromptSubmit", prompt=prompt, prompt_id=f"p{number}")
        send("Stop", prompt_id=f"p{number}", last_assistant_message=answer)
    send("SessionEnd-other")
    return session_id


invoke = run_cli


@pytest.mark.slow  # real hooks and a worker, checked end to end
def test_forgotten_text_leaves_every_file_of_the_data_dir(hooks, home, project):
    """Reproduction of 2.3 item 1: a neighbour's hidden context kept the text findable and in recall.db."""
    play(hooks, project, [
        ("what did we pick for the release codename?", "We went with the codename after the vote."),
        (f"the release codename is {CODENAME}, keep it internal", "Noted: I will keep it out of public docs."),
        ("and the release date?", "Friday the 14th, after the freeze."),
    ])
    wait_until_embedded(home)
    with stored(home) as recall:
        hits = recall.search(CODENAME, project=str(project))
        assert hits, "the codename must be findable before forgetting"
        holding = [m.id for m in recall.select(project=str(project), match=CODENAME)]
        vectors = {i: recall.store.vector_of(i) for i in holding}
    assert files_holding(home, CODENAME)

    result = invoke("forget", "--match", CODENAME, "--project", project, "--yes", "--home", home)
    assert "forgot" in result.stdout and str(project) in result.stdout
    with stored(home) as recall:
        assert not [h for h in recall.search(CODENAME, project=str(project)) if CODENAME in h.text + str(h.meta)]
        assert fts_hits(recall, CODENAME) == 0, "found through a neighbour's context"
        assert recall.select(match=CODENAME) == []
        assert recall.get(holding) == []
        assert recall.search("release date freeze", project=str(project)), "the other turns stay"
    stop_worker(home)
    assert files_holding(home, CODENAME) == []
    everything = b"".join(data_dir_bytes(home).values())
    assert not any(v and v in everything for v in vectors.values()), "a forgotten vector is still on disk"


def test_forgetting_by_id_scrubs_neighbours_and_the_exchange_question(home):
    recall = open_recall(home, load_models=False)
    now = time.time()
    ids = []
    for i, (kind, text, meta) in enumerate([
        ("prompt", "which port does the api use?", {}),
        ("prompt", f"the vault unseal phrase is {CODENAME}", {}),
        ("exchange", "Stored it in your notes.", {"prompt": f"the vault unseal phrase is {CODENAME}"}),
        ("prompt", "thanks, now run the tests", {}),
    ]):
        draft = MemoryDraft(project="/p/a", session_id="s1", kind=kind, text=text, created_at=now - 100 + i, meta=meta)
        ids.append(recall.store.record(f"e{i}", draft).memory_id)
    recall.forget([ids[1]])
    assert recall.store.select_memories(match=CODENAME) == []
    assert fts_hits(recall, CODENAME) == 0
    recall.close()
    assert files_holding(home, CODENAME) == []


def test_forgetting_a_long_prompt_drops_its_cut_preview_from_the_answer(home):
    """A prompt longer than its preview is quoted by its answer cut ("head … tail"): that preview goes with it."""
    from memory_store.core.capture.capture import PROMPT_PREVIEW_CHARS, finish

    recall = open_recall(home, load_models=False)
    now = time.time()
    long_prompt = (f"the vault unseal phrase is {CODENAME}, keep it somewhere safe; " + "and some more context " * 30
                   + "that is all, thanks")
    preview = finish(long_prompt, PROMPT_PREVIEW_CHARS, keep_ends=True)
    assert preview != long_prompt and CODENAME in preview
    prompt = recall.store.record("e0", MemoryDraft(project="/p/a", session_id="s1", kind="prompt", text=long_prompt,
                                                    created_at=now - 10)).memory_id
    recall.store.record("e1", MemoryDraft(project="/p/a", session_id="s1", kind="exchange", text="Stored it.",
                                          created_at=now - 9, meta={"prompt": preview}))
    recall.forget([prompt])
    assert recall.store.select_memories(match=CODENAME) == [] and fts_hits(recall, CODENAME) == 0
    recall.close()
    assert files_holding(home, CODENAME) == []


def test_ids_are_never_reused(home):
    recall = open_recall(home, load_models=False)
    first = [recall.store.record(f"e{i}", MemoryDraft(project="/p/a", kind="prompt", text=f"note {i}",
                                                        created_at=time.time())).memory_id for i in range(3)]
    recall.forget(first[1:])
    later = recall.store.record("e9", MemoryDraft(project="/p/b", kind="prompt", text="another project's note",
                                                   created_at=time.time())).memory_id
    assert later > max(first)
    recall.close()
    # Typed again from shell history, the old command deletes nothing new.
    result = invoke("forget", *first[1:], "--all-projects", "--home", home, ok=False)
    assert result.exit_code == 1 and "not found" in result.stderr
    assert open_recall(home, load_models=False).store.counts()["memories"] == 2


def test_forget_stays_in_its_project_and_asks_before_deleting_several(home):
    recall = open_recall(home, load_models=False)
    now = time.time()
    a = [recall.store.record(f"a{i}", MemoryDraft(project="/p/a", session_id="sa", kind="prompt",
                                                   text=f"alpha fact {i}", created_at=now - 86400 * (10 - 2 * i))).memory_id
         for i in range(3)]
    b = recall.store.record("b0", MemoryDraft(project="/p/b", kind="prompt", text="alpha fact in b",
                                              created_at=now)).memory_id
    recall.close()

    other = invoke("forget", b, "--project", "/p/a", "--home", home, ok=False)
    assert other.exit_code == 1 and f"#{b}" in other.stderr and "--all-projects" in other.stderr
    several = invoke("forget", "--match", "alpha", "--project", "/p/a", "--home", home, ok=False)
    assert several.exit_code == 1 and "--yes" in several.stderr and "3 memories in /p/a" in several.stderr
    assert open_recall(home, load_models=False).store.counts()["memories"] == 4
    one = invoke("forget", "--match", "fact in b", "--all-projects", "--home", home, ok=False)  # one rule: a
    assert one.exit_code == 1 and "--yes" in one.stderr  # selection is confirmed, however few it holds
    assert open_recall(home, load_models=False).store.counts()["memories"] == 4

    older = json.loads(invoke("forget", "--before", "9d", "--project", "/p/a", "--yes", "--json", "--home",
                              home).stdout)
    assert older["forgotten"] == [a[0]]
    by_session = json.loads(invoke("forget", "--session", "sa", "--project", "/p/a", "--yes", "--json",
                                   "--home", home).stdout)
    assert by_session["forgotten"] == a[1:]
    assert invoke("forget", f"#{b}", "--all-projects", "--home", home).stdout.startswith("forgot 1 memory in /p/b")
    bad = invoke("forget", "--before", "someday", "--project", "/p/a", "--home", home, ok=False)
    assert bad.exit_code == 2 and "not a date" in bad.output
    assert invoke("forget", "--home", home, ok=False).exit_code == 2


def test_purge_all(hooks, home, project):
    play(hooks, project, [(f"remember {CODENAME} for the demo", "Will do.")])
    with stored(home) as recall:
        assert recall.select(match=CODENAME)
    assert invoke("purge", "--yes", "--home", home, ok=False).exit_code == 2  # --all is required
    out = invoke("purge", "--all", "--yes", "--home", home).stdout
    assert out.startswith("purged ") and str(project) in out
    stop_worker(home)
    with stored(home) as recall:
        assert recall.store.counts()["memories"] == 0
    assert files_holding(home, CODENAME) == []


def test_a_forget_is_not_undone_by_importing_the_transcript_it_came_from(demo, home, tmp_path):
    """Issue 5.1: `recall forget N`, then `recall import ~/.claude/projects`, brought the forgotten prompt back as a new
    memory (an import makes its own event ids), with its fact. The prompt was captured live, its transcript is
    imported afterwards: the prompt stays gone, its answer comes back as it stood after the forget (without the
    quoted question), and no copy of its words is anywhere in the store."""
    from test_import import write_transcript

    from memory_store.shared.projects import project_for

    said = f"from now on the canary stage takes 25 minutes and the release codename is {CODENAME}"
    answer = "Noted: the canary stage is updated; the codename stays out of the public changelog."
    other = ("which branch do hotfixes start from?", "Hotfixes branch off the latest release tag, never main.")
    session = str(uuid.uuid4())
    demo.fire("SessionStart-startup", session)
    for number, (prompt, reply) in enumerate([(said, answer), other]):
        demo.fire("UserPromptSubmit", session, prompt=prompt, prompt_id=f"p{number}")
        demo.fire("Stop", session, prompt_id=f"p{number}", last_assistant_message=reply)
    demo.fire("SessionEnd-other", session)
    demo.recall.embed_pending()
    project = project_for(demo.path)
    prompt = next(m for m in demo.recall.select(project=project) if CODENAME in m.text)
    transcript = write_transcript(tmp_path / "projects" / "demo" / f"{session}.jsonl", session, demo.path,
                                  [("user", said), ("assistant", answer), ("user", other[0]), ("assistant", other[1])],
                                  "2026-11-30T09:00:00+00:00")
    before = len(demo.recall.select(project=project))
    assert [item for item in demo.recall.knowledge(project) if "25 minutes" in item.text]  # a fact, until forgotten
    invoke("forget", prompt.id, "--yes", "--all-projects", "--home", home)
    assert not [item for item in demo.recall.knowledge(project) if "25 minutes" in item.text]

    for _ in range(2):  # and again: still nothing
        report = demo.recall.import_transcripts([transcript.parent])
        demo.recall.embed_pending()
        assert report.new_memories == 0
    kept = demo.recall.select(project=project)
    assert len(kept) == before - 1
    assert not [m for m in kept if CODENAME in m.text or CODENAME in json.dumps(m.meta)]
    assert not [item for item in demo.recall.store.knowledge.listed(project) if "25 minutes" in item.text]
    assert any(m.kind == "exchange" and "canary stage" in m.text for m in kept)  # the answer stays, unquoted
    assert files_holding(home, CODENAME) == []
