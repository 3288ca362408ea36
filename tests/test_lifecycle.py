"""Compaction and subagents, through the real hooks with payloads shaped like ../shared/fixtures: PreCompact
hands the session's key facts to the summarizer, SessionStart(compact) re-offers them; subagent events land
in the subagent's namespace with their trust, and nothing is injected into a subagent unless configured."""

from __future__ import annotations

import json

import pytest
from conftest import load_payload, stop_worker, wait_until_embedded
from test_hooks import session
from typer.testing import CliRunner

from memory_store import open_recall
from memory_store.core import trust
from memory_store.shells.cli import app

DECISION = "We decided to keep the orders queue on Redis streams because Kafka needed a second cluster"
VALUE = "The payment webhook timeout is 45 seconds, set in config/payments.toml"
ERROR_COMMAND = "pytest tests/test_refunds.py"


def pre_compact(hooks, project, session_id) -> str:
    """Run PreCompact for a session; its stdout is plain text (compaction instructions, not JSON)."""
    result = hooks.run("PreCompact", load_payload("PreCompact", session_id=session_id, cwd=str(project)))
    assert result.returncode == 0 and result.stderr == "", result.stderr
    return result.stdout.strip()


def play_working_session(send) -> None:
    send("SessionStart-startup")
    send("UserPromptSubmit", prompt=f"Note: {DECISION}.", prompt_id="p1")
    send("Stop", prompt_id="p1", last_assistant_message=f"Noted. {DECISION}.")
    send("UserPromptSubmit", prompt="What is the payment webhook timeout?", prompt_id="p2")
    send("Stop", prompt_id="p2", last_assistant_message=f"{VALUE}.")
    send("PostToolUseFailure-Bash", prompt_id="p3", tool_input={"command": ERROR_COMMAND},
         error="FAILED tests/test_refunds.py::test_partial - KeyError: 'currency'")
    send("UserPromptSubmit", prompt="Why does the refund job skip weekends?", prompt_id="p4")


def test_precompact_hands_the_key_facts_to_the_summary(hooks, home, project):
    send = session(hooks, project, "compact-1")
    play_working_session(send)
    text = pre_compact(hooks, project, "compact-1")
    assert text.startswith("recall (memory plugin): keep these facts")
    assert "Redis streams" in text and "45 seconds" in text and "config/payments.toml" in text
    assert "error: " in text and "KeyError: 'currency'" in text
    assert "open question: Why does the refund job skip weekends?" in text
    assert len(text) <= 2000
    # After compaction the facts come back from the store.
    after = send("SessionStart-compact")
    context = json.loads(after.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "re-offered after compaction" in context and "45 seconds" in context


def test_precompact_of_an_empty_session_prints_nothing(hooks, home, project):
    send = session(hooks, project, "compact-2")
    send("SessionStart-startup")
    send("UserPromptSubmit", prompt="hi", prompt_id="p1")
    assert pre_compact(hooks, project, "compact-2") == ""


def subagent(**fields):
    return {"agent_id": "a86bf78737870dfff", "agent_type": "Explore", **fields}


def test_subagent_events_live_in_the_subagent_namespace(hooks, home, project, tmp_path):
    send = session(hooks, project)
    send("SessionStart-startup")
    send("UserPromptSubmit", prompt="Find where the refund rules live", prompt_id="p1")
    send("PostToolUse-Bash", prompt_id="p1", **subagent(
        tool_input={"command": "grep -rn refund_rules src/", "description": "search"},
        tool_response={"stdout": "src/billing/refund_rules.py:12: REFUND_WINDOW_DAYS = 30", "stderr": "",
                       "interrupted": False, "isImage": False, "noOutputExpected": False}))
    agent_transcript = tmp_path / "agent-a86bf78737870dfff.jsonl"
    agent_transcript.write_text(json.dumps({"type": "user", "message": {
        "role": "user", "content": "Locate the module that defines refund rules and report the refund window."}}) + "\n")
    send("SubagentStop", **subagent(agent_transcript_path=str(agent_transcript),
                                    last_assistant_message="Refund rules live in src/billing/refund_rules.py; "
                                                           "the refund window is 30 days."))
    # Claude Code's internal agents (agent_type "", e.g. during /compact) are not kept.
    send("SubagentStop", agent_id="internal1", agent_type="", last_assistant_message="Summary of the conversation.")
    stop_worker(home)
    with open_recall(home, load_models=False) as recall:
        recall.ingest_spool()
        rows = {m.kind: m for m in recall.select(project=str(project)) if m.agent}
        everything = recall.select(project=str(project))
    assert rows["tool"].agent == "Explore" and rows["tool"].trust == trust.SUBAGENT_TOOL
    report = rows["exchange"]
    assert report.agent == "Explore" and report.trust == trust.SUBAGENT
    assert "refund window is 30 days" in report.text and "Locate the module" in report.meta["prompt"]
    assert not any("Summary of the conversation" in m.text for m in everything)
    prompt = next(m for m in everything if m.kind == "prompt")
    assert prompt.agent == "" and prompt.trust == trust.USER

    result = CliRunner().invoke(app, ["search", "refund window", "--project", str(project), "--home", str(home),
                                      "--json"])
    hits = json.loads(result.stdout)
    explore = next(h for h in hits if h["agent"] == "Explore")
    assert explore["trust"] in (trust.SUBAGENT, trust.SUBAGENT_TOOL)
    assert all("agent" in h and "trust" in h for h in hits)


REPORT_FINDINGS = [
    "The retry loop in src/sync/pull.py sleeps 2 s between attempts and gives up after 7 tries.",
    "Conflicts are resolved in src/sync/merge.py by last-writer-wins on the updated_at column.",
    "Deleted rows are tombstoned for 30 days in the tombstones table before the nightly vacuum removes them.",
    "The client sends a since cursor that is the max updated_at it saw, so two rows sharing a timestamp can be skipped.",
    "Large attachments are uploaded separately through a presigned S3 URL that expires after 15 minutes.",
    "The mobile client batches writes into groups of 50 and retries a failed batch as a whole.",
    "Nothing in the code handles clock skew between devices; timestamps come from each device.",
    "The sync endpoint is rate limited to 120 requests per minute per user in the API gateway config.",
    "Schema migrations on the client run before the first pull, in src/sync/migrate.ts, one version at a time.",
    "A full resync happens when the server answers 410 Gone for a cursor older than the tombstone window.",
    "Logging for the sync path goes to the sync channel at info level, with the cursor and the row count.",
    "The tests in tests/sync cover merge conflicts but not the skipped rows from equal timestamps.",
]


def test_a_subagent_report_is_kept_whole_and_every_sentence_is_found_with_its_agent(hooks, home, project, tmp_path):
    """A report is the whole of what an agent found: past an answer's gist length, each of its sentences is still
    searchable, and found as the agent's."""
    send = session(hooks, project)
    send("SessionStart-startup")
    send("UserPromptSubmit", prompt="audit the sync code for data loss", prompt_id="p1")
    agent_transcript = tmp_path / "agent-a86bf78737870dfff.jsonl"
    agent_transcript.write_text(json.dumps({"type": "user", "message": {
        "role": "user", "content": "Audit the offline sync path for ways it can lose or skip rows."}}) + "\n")
    report = "Findings on the offline sync path:\n" + "\n".join(f"- {line}" for line in REPORT_FINDINGS)
    assert len(report) > 1200  # longer than an answer's gist (capture.max_answer_chars)
    send("SubagentStop", **subagent(agent_transcript_path=str(agent_transcript), last_assistant_message=report))
    stop_worker(home)
    with open_recall(home) as recall:
        recall.ingest_spool()
        recall.embed_pending()
        for finding in REPORT_FINDINGS:
            hits = recall.search(finding, limit=3, project=str(project))
            assert hits and hits[0].agent == "Explore" and finding.rstrip(".") in hits[0].text, finding


@pytest.mark.slow  # real hooks and a worker, checked end to end
def test_nothing_is_injected_into_a_subagent_unless_configured(hooks, home, project):
    fact = "The staging deploy goes through scripts/ship.sh and needs the --canary flag"
    first = session(hooks, project)
    first("SessionStart-startup")
    first("UserPromptSubmit", prompt=f"Note for later: {fact}.", prompt_id="p1")
    first("Stop", prompt_id="p1", last_assistant_message=f"Noted: {fact}.")
    first("SessionEnd-other")
    wait_until_embedded(home)
    question = "Which script and flag do staging deploys need?"
    inside = session(hooks, project)("UserPromptSubmit", prompt=question, prompt_id="q1", **subagent())
    assert inside.stdout.strip() == ""
    (home / "config.json").write_text(json.dumps({"inject": {"into_subagents": True}}))
    configured = session(hooks, project)("UserPromptSubmit", prompt=question, prompt_id="q2", **subagent())
    assert "--canary" in configured.stdout
    main = session(hooks, project)("UserPromptSubmit", prompt=question, prompt_id="q3")
    assert "--canary" in main.stdout


def test_trust_orders_equally_relevant_memories(home):
    """The user's own statement outranks the same words in raw tool output."""
    from memory_store.core.records import MemoryDraft

    with open_recall(home) as recall:
        at = 1_790_000_000.0
        for i, kind in enumerate(("tool", "prompt")):
            draft = MemoryDraft(project="/p", session_id=f"s{i}", kind=kind, created_at=at,
                                text="the invoice exporter writes CSV files to /srv/exports nightly")
            recall.store.record(f"e{i}", draft)
        recall.embed_pending()
        hits = recall.search("where does the invoice exporter write CSV files?", project="/p", now=at + 60)
    assert [h.kind for h in hits[:2]] == ["prompt", "tool"] and hits[0].trust > hits[1].trust


def test_fixture_payloads_parse():
    for name in ("PreCompact", "SubagentStop"):
        payload = load_payload(name)
        from memory_store.core.capture.hook_events import parse_event

        assert parse_event(payload).hook_event_name == name


@pytest.mark.slow  # real hooks and a worker, checked end to end
def test_a_standing_preference_follows_the_user_to_another_project(hooks, home, project, other_project):
    send = session(hooks, project)
    send("SessionStart-startup")
    send("UserPromptSubmit", prompt="From now on, in every project, use uv and never pip install into the system "
                                    "Python. Now let's fix the failing import in app.py.", prompt_id="p1")
    send("UserPromptSubmit", prompt="Always run the linter in this repo before a commit.", prompt_id="p2")
    send("SessionEnd-other")
    wait_until_embedded(home)
    with open_recall(home, load_models=False) as recall:
        global_notes = recall.select(project="(global)")
    assert [m.text for m in global_notes] == [
        "From now on, in every project, use uv and never pip install into the system Python."]
    result = session(hooks, other_project)("UserPromptSubmit", prompt="How should I install the requests package "
                                                                        "here, with pip or uv?", prompt_id="q1")
    context = json.loads(result.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "use uv and never pip install" in context and "note · global" in context
    # Shown as global, and forgettable like any other memory.
    hits = json.loads(CliRunner().invoke(app, ["search", "pip or uv", "--project", str(other_project), "--home",
                                               str(home), "--json"]).stdout)
    assert hits[0]["project"] == "(global)"
    stop_worker(home)
    with open_recall(home, load_models=False) as recall:
        recall.forget([global_notes[0].id])
        assert recall.select(project="(global)") == []
