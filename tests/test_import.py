"""`recall import` of Claude Code transcripts: what it keeps, idempotence, timestamps and scope."""

from __future__ import annotations

import json
import shutil
from datetime import datetime, timezone
from pathlib import Path

import pytest
from conftest import FIXTURES, load_payload, run_cli, stored, wait_until_embedded

from memory_store import open_recall

SAMPLE = FIXTURES / "transcript-sample.jsonl"


def write_transcript(path: Path, session: str, cwd: str, turns: list[tuple[str, str]], start: str) -> Path:
    """A transcript shaped like Claude Code's: user prompts (string content), assistant text blocks."""
    t0 = datetime.fromisoformat(start)
    lines, parent = [], None
    for i, (role, text) in enumerate(turns):
        uuid = f"{session}-{i}"
        entry = {"type": role, "uuid": uuid, "parentUuid": parent, "sessionId": session, "cwd": cwd,
                 "isSidechain": False, "timestamp": t0.replace(minute=i).isoformat().replace("+00:00", "Z"),
                 "message": {"role": role, "content": text if role == "user" else [{"type": "text", "text": text}]}}
        lines.append(json.dumps(entry))
        parent = uuid
    lines.append(json.dumps({"type": "queue-operation", "operation": "enqueue"}))
    lines.append(json.dumps({"type": "attachment", "attachment": {"type": "hook_additional_context",
                                                                  "content": ["<recall-memory>old</recall-memory>"]}}))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")
    return path


def test_real_transcript_yields_prompt_tool_and_exchange(home):
    store = open_recall(home, load_models=False)
    report = store.import_transcripts([SAMPLE])
    assert report.files == 1 and not report.errors
    memories = store.store.recent("/home/user/projects/demo", ("prompt", "exchange", "tool"), 0, 10)
    kinds = {m.kind: m for m in memories}
    assert kinds["tool"].text == "Bash `echo hello-from-tool` → hello-from-tool"
    assert kinds["prompt"].text == "PLEASE_RUN_TOOL then say done"
    assert kinds["exchange"].text == "Mock reply: done."
    assert kinds["exchange"].meta["prompt"] == "PLEASE_RUN_TOOL then say done"
    assert kinds["exchange"].session_id.startswith("a9eae3c5")
    # Text recall injected (hook_additional_context attachments) is never imported.
    assert not any("recall" in m.text.lower() for m in memories)


def test_import_is_idempotent_and_keeps_time_session_and_cwd(home, tmp_path):
    path = write_transcript(tmp_path / "t" / "s1.jsonl", "s1", "/work/app",
                            [("user", "Which port does the API use?"), ("assistant", "It listens on 8443.")],
                            "2024-03-05T10:00:00+00:00")
    store = open_recall(home, load_models=False)
    first = store.import_transcripts([tmp_path / "t"])
    second = store.import_transcripts([tmp_path / "t"])
    assert first.new_memories == 2 and second.skipped_files == 1  # the prompt and the exchange
    path.touch()
    shutil.copy(path, tmp_path / "t" / "copy.jsonl")  # same entries in another file: still no duplicates
    third = store.import_transcripts([tmp_path / "t"])
    assert third.new_memories == 0
    answer = [h for h in store.search("which port for the API", project="/work/app") if h.kind == "exchange"][0]
    assert answer.text == "It listens on 8443."  # found through its prompt (indexed context)
    assert answer.session_id == "s1"
    assert answer.created_at == datetime(2024, 3, 5, 10, 1, tzinfo=timezone.utc)


def test_broken_lines_are_reported_not_fatal(home, tmp_path):
    path = write_transcript(tmp_path / "s2.jsonl", "s2", "/work/app", [("user", "remember the flag --fast")],
                            "2024-03-05T10:00:00+00:00")
    with open(path, "a") as handle:
        handle.write("{broken json\n")
    store = open_recall(home, load_models=False)
    report = store.import_transcripts([path])
    assert report.errors and store.search("flag fast", project="/work/app")


def test_a_lone_surrogate_in_a_transcript_is_repaired_and_imported(home, tmp_path):
    """A transcript written by Node can hold half an emoji's UTF-16 pair ("\\udd25"): the line is imported, with U+FFFD."""
    path = write_transcript(tmp_path / "s3.jsonl", "s3", "/work/app", [("user", "the qwvx build is on fire PLACE"),
                                                                      ("assistant", "Lowered the PLACE workers.")],
                            "2024-03-05T10:00:00+00:00")
    path.write_text(path.read_text().replace("PLACE", "\\udd25"))
    store = open_recall(home, load_models=False)
    report = store.import_transcripts([path])
    assert not report.errors and report.new_memories == 2
    assert any(m.text == "the qwvx build is on fire \ufffd" for m in store.select(project="/work/app"))


def test_cli_import_json(home, tmp_path):
    from typer.testing import CliRunner

    from memory_store.shells.cli import app

    write_transcript(tmp_path / "p" / "s3.jsonl", "s3", "/work/app",
                     [("user", "where are the fixtures?"), ("assistant", "In tests/fixtures.")],
                     "2024-03-05T10:00:00+00:00")
    result = CliRunner().invoke(app, ["import", str(tmp_path / "p"), "--home", str(home), "--json", "--no-embed"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout[result.stdout.index("{"):])
    assert data["files"] == 1 and data["new_memories"] == 2 and data["entries"] == 4


@pytest.mark.slow  # a live worker drains the import
def test_an_import_through_the_worker_returns_when_its_knowledge_is_searchable(hooks, home, project, tmp_path):
    """The worker embeds what an import brings; `recall import` waits until what the memories teach is embedded too
    (found by meaning), so the worker is idle again when it returns, not still embedding behind the next prompt."""
    home.mkdir(parents=True, exist_ok=True)  # small batches: the memories are embedded well before what they teach
    (home / "config.json").write_text(json.dumps({"worker": {"embed_batch": 8}}))
    hooks.run("SessionStart", load_payload("SessionStart-startup", session_id="s-live", cwd=str(project)))
    assert wait_until_embedded(home), "the worker is up, its model loaded"
    turns = []
    for n in range(25):
        turns += [("user", f"what do we use for the service-{n} queue timeout?"),
                  ("assistant", f"The service-{n} queue timeout is {n + 10} seconds now, set in config/service_{n}.toml. "
                                f"Its retry limit is {n + 3} attempts now. Its batch size is {n + 50} jobs now.")]
    write_transcript(tmp_path / "p" / "s1.jsonl", "s1", str(project), turns, "2026-11-02T09:00:00+00:00")
    run_cli("import", str(tmp_path / "p"), "--home", str(home))
    with stored(home) as recall:
        assert recall.store.knowledge.listed(str(project), ["fact"]), "the answers teach facts"
        assert recall.store.knowledge.vectors_pending() == 0
