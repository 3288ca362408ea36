"""`recall import` of every transcript layout Claude Code has written (issue 3.3): each subagent's work in its
namespace, only the user's own words stored as the user's, lenient lines. Fixtures cut from real published
transcripts (tests/fixtures/transcripts/README.md)."""

from __future__ import annotations

import json
import shutil

import pytest
from conftest import FIXTURES, load_payload, run_cli

from memory_store import open_recall

LAYOUTS = FIXTURES / "transcripts"
SESSION = "4b2030ed-5563-49ea-b703-6a002f2d3cc8"
REPORT = "Green Curry (Gaeng Khiao Wan)"  # in the subagent's final report only


def imported(home, *paths):
    recall = open_recall(home, load_models=False)
    report = recall.import_transcripts(list(paths))
    return recall, report


@pytest.mark.parametrize("layout, agent", [("v2.1", "general-purpose"), ("v2.0", "general-purpose"),
                                           ("v1.0", "task")])
def test_a_subagents_work_lands_in_its_namespace(home, tmp_path, layout, agent):
    folder = tmp_path / layout
    shutil.copytree(LAYOUTS / layout, folder)
    recall, report = imported(home, folder)
    try:
        assert report.subagents == 1 and not report.failed
        mine = [m for m in recall.select() if m.agent]
        answer = next(m for m in mine if m.kind == "exchange")
        assert REPORT in answer.text and answer.agent == agent and answer.session_id == SESSION
        assert "most popular color of thai curry" in answer.meta["prompt"].lower()  # its task, as its question
        assert answer.meta["agent_type"] == agent
        assert answer.meta["agent_id"] == ("a2018e5" if layout != "v1.0" else "52125d10-317a-4f24-b4b5-65ab0dfda53f")
        assert any(m.kind == "tool" and "WebSearch" in m.text for m in mine)  # its tool calls, in its namespace
        main = [m for m in recall.select() if not m.agent]
        assert not any(REPORT in m.text and m.kind == "prompt" for m in main)
        # Found with its agent by search (the store's hits carry `agent` and its trust).
        hits = recall.search("most popular thai curry green", project=answer.project)
        assert any(h.agent == agent and h.trust == pytest.approx(0.6) for h in hits)
        again = recall.import_transcripts([folder])
        assert again.new_memories == 0
    finally:
        recall.close()


def test_only_the_users_own_words_are_stored_as_prompts(home):
    recall, report = imported(home, LAYOUTS / "notifications.jsonl")
    try:
        prompts = [m.text for m in recall.select() if m.kind == "prompt"]
        assert prompts and report.not_the_users >= 8
        for marker in ("<task-notification>", "<command-name>", "<local-command", "[Request interrupted", "Caveat:"):
            assert not any(marker in text for text in prompts), marker
        assert any("Spaw sub-agents to write poems" in text for text in prompts)
        # The answer after a slash command answers the command, not the prompt before it.
        for memory in recall.select():
            if memory.kind == "exchange" and "local command" in memory.text:
                assert memory.meta.get("prompt", "").startswith("/"), memory.meta
    finally:
        recall.close()


def test_a_task_notification_in_the_prompt_hook_is_not_the_users(hooks, home, project):
    notification = ('<task-notification>\n<task-id>ac27727</task-id>\n<status>completed</status>\n'
                    '<summary>Agent "Red curry poem" completed</summary>\n<result>a poem</result>\n</task-notification>')
    payload = load_payload("UserPromptSubmit", cwd=str(project), prompt=notification, prompt_id="n1")
    result = hooks.run("UserPromptSubmit", payload)
    assert result.returncode == 0 and result.stdout.strip() == ""
    typed = load_payload("UserPromptSubmit", cwd=str(project), prompt="<ide_opened_file>The user opened the file "
                         "/x/app.py in the IDE.</ide_opened_file>why does app.py import twice?", prompt_id="n2")
    assert hooks.run("UserPromptSubmit", typed).returncode == 0
    recall = open_recall(home, load_models=False)
    try:
        recall.ingest_spool()
        prompts = [m.text for m in recall.select() if m.kind == "prompt"]
        assert prompts == ["why does app.py import twice?"]
    finally:
        recall.close()


def test_lines_with_raw_control_characters_are_read_and_the_rest_counted(home, tmp_path):
    entry = {"type": "user", "uuid": "u1", "sessionId": "s-ctl", "cwd": str(tmp_path), "isSidechain": False,
             "timestamp": "2026-11-20T10:00:00Z", "message": {"role": "user", "content": "PLACEHOLDER"}}
    line = json.dumps(entry).replace("PLACEHOLDER", "the build log had a bell \x07 and a tab \t in it: why?")
    path = tmp_path / "ctl.jsonl"
    path.write_text(line + "\n{not json at all\n")
    recall, report = imported(home, path)
    try:
        assert any("bell" in m.text for m in recall.select() if m.kind == "prompt")
        assert len(report.errors) == 1
    finally:
        recall.close()
    out = json.loads(run_cli("import", path, "--home", tmp_path / "other-home", "--no-embed", "--json").stdout)
    assert out["error_count"] == 1 and out["not_the_users_lines"] == 0
