"""Async hooks lose nothing: Stop runs in the background, and `claude -p` may kill it before it starts when the
session ends; SessionEnd (waited for, after that kill) then takes the turn's answer from the transcript, once."""

from __future__ import annotations

import json
import uuid


def transcript(path, prompt: str, answer: str | None):
    lines = [{"type": "user", "uuid": "u1", "isSidechain": False, "message": {"role": "user", "content": prompt}},
             {"type": "assistant", "uuid": "a1", "isSidechain": False,
              "message": {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "Bash",
                                                            "input": {"command": "ls"}}]}},
             {"type": "user", "uuid": "u2", "isSidechain": False,
              "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": "x"}]}}]
    if answer:
        lines.append({"type": "assistant", "uuid": "a2", "isSidechain": True,
                      "message": {"role": "assistant", "content": [{"type": "text", "text": "a subagent's words"}]}})
        lines.append({"type": "assistant", "uuid": "a3", "isSidechain": False,
                      "message": {"role": "assistant", "content": [{"type": "text", "text": answer}]}})
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    return str(path)


def exchanges(recall, words):
    return [m for m in recall.select(match=words) if m.kind == "exchange"]


def test_a_killed_stop_is_recovered_at_session_end_once(demo, recall, tmp_path):
    session = str(uuid.uuid4())
    path = transcript(tmp_path / "t.jsonl", "which port does the billing api listen on?",
                      "The billing API listens on port 8443 behind the ingress.")
    demo.fire("SessionStart-startup", session, transcript_path=path)
    demo.fire("UserPromptSubmit", session, prompt="which port does the billing api listen on?", prompt_id="p1",
              transcript_path=path)
    demo.fire("SessionEnd-other", session, transcript_path=path)  # Stop was killed: it never came
    found = exchanges(recall, "port 8443")
    assert len(found) == 1 and "billing api" in found[0].text.lower() or "billing" in found[0].meta.get("prompt", "")
    assert found[0].meta.get("recovered") == "transcript" and "subagent" not in found[0].text
    # The Stop survived after all and arrives late: nothing is stored twice.
    demo.fire("Stop", session, prompt_id="p1", last_assistant_message="The billing API listens on port 8443 behind "
              "the ingress.", transcript_path=path)
    assert len(exchanges(recall, "port 8443")) == 1


def test_a_stop_that_came_is_not_doubled_and_an_unanswered_turn_stays_open(demo, recall, tmp_path):
    session = str(uuid.uuid4())
    path = transcript(tmp_path / "t.jsonl", "where is the retry budget set?", "It is RETRY_BUDGET=5 in config/app.toml.")
    demo.fire("UserPromptSubmit", session, prompt="where is the retry budget set?", prompt_id="p1", transcript_path=path)
    demo.fire("Stop", session, prompt_id="p1", last_assistant_message="It is RETRY_BUDGET=5 in config/app.toml.",
              transcript_path=path)
    demo.fire("SessionEnd-other", session, transcript_path=path)
    assert len(exchanges(recall, "RETRY_BUDGET=5")) == 1

    other = str(uuid.uuid4())
    unanswered = transcript(tmp_path / "u.jsonl", "and what about the timeout?", None)
    demo.fire("UserPromptSubmit", other, prompt="and what about the timeout?", prompt_id="q1",
              transcript_path=unanswered)
    demo.fire("SessionEnd-other", other, transcript_path=unanswered)
    assert exchanges(recall, "what about the timeout") == []


def test_killed_tool_hooks_are_recovered_from_the_transcript_once(demo, recall, tmp_path):
    """The last tool calls of a turn whose hooks were killed (a success and a failure) come from the transcript at
    SessionEnd, by their tool_use_id; a call that was stored live is not stored again, nor is a late hook."""
    session = str(uuid.uuid4())
    path = tmp_path / "t.jsonl"
    entries = [{"type": "user", "isSidechain": False, "message": {"role": "user", "content": "migrate the db"}}]
    calls = [("toolu_1", "alembic upgrade head", {"stdout": "Running upgrade a1 -> b2", "stderr": "",
                                                  "interrupted": False}, False),
             ("toolu_2", "pytest -q tests/test_billing.py", {"stdout": "14 passed", "stderr": "",
                                                             "interrupted": False}, False),
             ("toolu_3", "psql -c 'select 1' billing_db", "Exit code 2\npsql: error: connection refused", True)]
    for tool_id, command, result, failed in calls:
        entries.append({"type": "assistant", "isSidechain": False, "message": {"role": "assistant", "content": [
            {"type": "tool_use", "id": tool_id, "name": "Bash", "input": {"command": command}}]}})
        entries.append({"type": "user", "isSidechain": False, "toolUseResult": result if not failed else "Error",
                        "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": tool_id,
                                                                 "content": result if failed else "ok",
                                                                 "is_error": failed}]}})
    entries.append({"type": "assistant", "isSidechain": False, "message": {"role": "assistant", "content": [
        {"type": "text", "text": "Migrated to b2; the billing tests pass; psql cannot reach billing_db yet."}]}})
    path.write_text("\n".join(json.dumps(e) for e in entries) + "\n")

    demo.fire("UserPromptSubmit", session, prompt="migrate the db", prompt_id="p1", transcript_path=str(path))
    demo.fire("PostToolUse-Bash", session, prompt_id="p1", tool_use_id="toolu_1", transcript_path=str(path),
              tool_input={"command": "alembic upgrade head"},
              tool_response={"stdout": "Running upgrade a1 -> b2", "stderr": "", "interrupted": False})
    demo.fire("SessionEnd-other", session, transcript_path=str(path))  # toolu_2, toolu_3 and Stop were killed

    def count(words):
        return sum(words in m.text for m in recall.select(session_id=session))

    assert count("alembic upgrade head") == 1 and count("14 passed") == 1
    failure = [m for m in recall.select(session_id=session) if m.kind == "error"]
    assert len(failure) == 1 and "connection refused" in failure[0].text and failure[0].meta["tool_use_id"] == "toolu_3"
    assert count("psql cannot reach billing_db yet") == 1  # the answer
    demo.fire("PostToolUse-Bash", session, prompt_id="p1", tool_use_id="toolu_2", transcript_path=str(path),
              tool_input={"command": "pytest -q tests/test_billing.py"},
              tool_response={"stdout": "14 passed", "stderr": "", "interrupted": False})  # the late hook
    assert count("14 passed") == 1
    assert recall.store.counts()["memories"] == len(recall.select())


def test_a_turn_recall_did_not_keep_recovers_nothing(demo, recall, tmp_path):
    """The last turn opened by a private prompt (not kept, nor its answer): its answer is not taken from the
    transcript either, nor pinned on the turn before."""
    session = str(uuid.uuid4())
    secret_turn = "<private>my offer from the other company is 240k, help me word the reply</private>"
    path = transcript(tmp_path / "t.jsonl", secret_turn, "Here is a reply that mentions the 240k offer politely.")
    demo.fire("UserPromptSubmit", session, prompt="where is the retry budget set?", prompt_id="p1",
              transcript_path=path)  # interrupted: never answered
    demo.fire("UserPromptSubmit", session, prompt=secret_turn, prompt_id="p2", transcript_path=path)
    demo.fire("SessionEnd-other", session, transcript_path=path)  # its Stop never came
    assert not [m for m in recall.select(session_id=session) if "240k" in m.text or "240k" in str(m.meta)]
    assert exchanges(recall, "retry budget") == []
