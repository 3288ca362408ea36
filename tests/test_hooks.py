"""The hook commands of hooks/hooks.json, run as subprocesses with real payloads, as Claude Code runs them."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import uuid

import pytest
from conftest import ROOT, load_payload, play_deploy_session, stop_worker, stored, wait_until_embedded

from memory_store import open_recall
from memory_store.shared.logs import read_records
from memory_store.shared.paths import DataPaths

FACT = "The staging deploy goes through scripts/ship.sh and needs the --canary flag"


def session(hooks, cwd, session_id=None):
    """Drive one Claude Code session through the hooks; returns a helper to send its events."""
    session_id = session_id or str(uuid.uuid4())

    def send(fixture: str, **changes):
        changes.setdefault("cwd", str(cwd))
        payload = load_payload(fixture, session_id=session_id, transcript_path=f"/tmp/{session_id}.jsonl", **changes)
        result = hooks.run(payload["hook_event_name"], payload)
        assert result.returncode == 0, result.stderr
        assert result.stdout.strip() == "" or result.output is not None, f"stray stdout: {result.stdout!r}"
        return result

    return send


def first_session(hooks, project):
    play_deploy_session(session(hooks, project), f"Note for later: {FACT}.")


def test_fact_from_session_one_is_injected_in_session_two(hooks, home, project):
    first_session(hooks, project)
    wait_until_embedded(home)
    send = session(hooks, project)
    start = send("SessionStart-startup")
    prompt = send("UserPromptSubmit", prompt="How do we deploy to staging again?", prompt_id="p2")
    injected = start.context + prompt.context
    assert "scripts/ship.sh" in injected and "--canary" in injected
    assert "<recall-memory>" in injected and "not instructions" in injected
    assert len(start.context) <= 1500 + 200 and len(prompt.context) <= 1500 + 200  # budget, far under 10,000


@pytest.mark.slow  # real hooks and a worker, checked end to end
def test_cued_prompt_injects_through_user_prompt_submit(hooks, home, project):
    """Without a SessionStart brief (e.g. the hot tier was already shown), the warm tier answers the question."""
    first_session(hooks, project)
    wait_until_embedded(home)
    send = session(hooks, project)
    result = send("UserPromptSubmit", prompt="Which flag does the staging deploy script need?", prompt_id="p9")
    assert result.output["hookSpecificOutput"]["hookEventName"] == "UserPromptSubmit"
    assert "--canary" in result.context


@pytest.mark.slow  # real hooks and a worker, checked end to end
def test_other_project_never_sees_it(hooks, home, project, other_project):
    first_session(hooks, project)
    wait_until_embedded(home)
    send = session(hooks, other_project)
    start = send("SessionStart-startup")
    prompt = send("UserPromptSubmit", prompt="How do we deploy to staging with the canary flag?", prompt_id="p3")
    assert "ship.sh" not in start.stdout + prompt.stdout
    store = stored(home)
    assert not [h for h in store.search("staging deploy canary ship", project=str(other_project)) if "ship.sh" in h.text]
    assert [h for h in store.search("staging deploy canary ship", project=str(project)) if "ship.sh" in h.text]


@pytest.mark.slow  # real hooks and a worker, checked end to end
def test_recall_search_json_finds_it(hooks, home, project):
    first_session(hooks, project)
    result = subprocess.run(
        [sys.executable, "-m", "memory_store.shells.cli", "search", "staging canary deploy", "--json", "--project",
         str(project), "--home", str(home)],
        capture_output=True, text=True, cwd=ROOT, timeout=120,
    )
    assert result.returncode == 0, result.stderr
    hits = json.loads(result.stdout)
    assert any("--canary" in hit["text"] for hit in hits)
    for key in ("id", "text", "created_at", "session_id", "project", "kind", "score"):
        assert key in hits[0]
    assert hits[0]["project"] == str(project)


def test_subdirectory_shares_the_git_root_project(hooks, home, project):
    (project / "src" / "app").mkdir(parents=True)
    first_session(hooks, project / "src" / "app")
    hits = stored(home).search("canary", project=str(project))
    assert hits and hits[0].project == str(project)


@pytest.mark.slow  # real hooks and a worker, checked end to end
def test_no_repeat_within_a_session(hooks, home, project):
    first_session(hooks, project)
    wait_until_embedded(home)
    send = session(hooks, project)
    one = send("UserPromptSubmit", prompt="Which flag does the staging deploy script need?", prompt_id="a")
    two = send("UserPromptSubmit", prompt="Which flag does the staging deploy script need, again?", prompt_id="b")
    ids_one = set(json.dumps(one.context).split("[#")[1:])
    assert "--canary" in one.context
    assert not (ids_one and two.context and set(two.context.split("[#")[1:]) & ids_one)


@pytest.mark.slow  # real hooks and a worker, checked end to end
def test_prompt_without_cues_injects_nothing(hooks, home, project):
    first_session(hooks, project)
    wait_until_embedded(home)
    send = session(hooks, project)
    assert send("UserPromptSubmit", prompt="deploy staging", prompt_id="c").stdout == ""


@pytest.mark.slow  # real hooks and a worker, checked end to end
def test_every_fixture_payload_exits_zero_with_clean_stdout(hooks, home, project):
    for path in sorted((ROOT / "tests" / "fixtures" / "hook-payloads").glob("*.json")):
        payload = json.loads(path.read_text())
        payload["cwd"] = str(project)
        result = hooks.run(payload["hook_event_name"], payload) if hooks.commands(
            payload["hook_event_name"], payload) else None
        if result is None:
            continue  # PreCompact, SubagentStop: not registered
        assert result.returncode == 0
        assert result.stdout.strip() == "" or result.output is not None, path.name


def test_stop_output_never_continues_the_turn(hooks, home, project):
    send = session(hooks, project)
    send("UserPromptSubmit", prompt="hello there, what is up?", prompt_id="x")
    result = send("Stop", prompt_id="x")
    assert not (result.output or {}).get("hookSpecificOutput")  # additionalContext at Stop would start a turn


def test_capture_is_durable_before_the_hook_returns(hooks, home, project):
    send = session(hooks, project)
    send("UserPromptSubmit", prompt="remember that the queue name is orders-v2", prompt_id="d")
    # No waiting: the hook has returned, so the memory must already be stored (database or spool).
    store = open_recall(home)
    paths = DataPaths(home)
    stored = [h.text for h in store.search("orders-v2 queue", project=str(project))]
    spooled = [p.read_text() for p in paths.spool.glob("*.json")] if paths.spool.exists() else []
    assert any("orders-v2" in t for t in stored) or any("orders-v2" in t for t in spooled)


BAD_INPUTS = [
    b"",
    b"   \n",
    b"not json at all",
    b"{\"hook_event_name\": \"UserPromptSubmit\", \"prompt\": ",  # truncated
    b"[1, 2, 3]",
    b"\"just a string\"",
    b"{\"hook_event_name\": \"UserPromptSubmit\", \"session_id\": 42, \"cwd\": [], \"prompt\": {\"a\": 1}}",
    b"{\"hook_event_name\": \"UserPromptSubmit\", \"session_id\": \"s\", \"cwd\": \"/tmp\", "
    b"\"prompt\": \"\xff\xfe bad utf8\"}",
    b"{\"hook_event_name\": \"NoSuchEvent\", \"session_id\": \"s\", \"cwd\": \"/tmp\"}",
    b"{\"hook_event_name\": \"PostToolUse\", \"session_id\": \"s\", \"cwd\": \"/tmp\", \"tool_name\": \"Bash\", "
    b"\"tool_input\": {\"command\": \"echo \\u0000nul\"}, \"tool_response\": {\"stdout\": \"a\\u0000b\"}}",
    b"[" * 100_000 + b"]" * 100_000,
]


@pytest.mark.parametrize("raw", BAD_INPUTS, ids=range(len(BAD_INPUTS)))
@pytest.mark.parametrize("event", ["SessionStart", "UserPromptSubmit", "PostToolUse", "Stop", "SessionEnd"])
def test_bad_stdin_is_logged_and_ignored(hooks, home, event, raw):
    result = hooks.run(event, raw)
    assert result.returncode == 0
    assert result.stdout.strip() == "" or result.output is not None
    assert "Traceback" not in result.stdout


@pytest.mark.parametrize("worker_up", [False, True])
def test_bad_stdin_is_logged(hooks, home, project, worker_up):
    if worker_up:
        session(hooks, project)("SessionStart-startup")
    hooks.run("PostToolUse", b"not json at all")
    errors = [r for r in read_records(DataPaths(home).log_file) if r["level"] == "error"]
    assert any("not JSON" in r["error"] for r in errors), errors


def test_megabytes_of_tool_output_are_captured_trimmed(hooks, home, project):
    send = session(hooks, project)
    big = "line of build output\n" * 250_000 + "BUILD FAILED: missing symbol foo_bar"
    result = send("PostToolUse-Bash", tool_input={"command": "make all"},
                  tool_response={"stdout": big, "stderr": "", "interrupted": False})
    assert result.returncode == 0
    hits = stored(home).search("make all build", project=str(project))
    assert hits and len(hits[0].text) < 2000


def test_wrong_types_lose_nothing_else(hooks, home, project):
    """A rejected payload is dropped alone: the next good event is stored as usual."""
    send = session(hooks, project)
    hooks.run("UserPromptSubmit", {"hook_event_name": "UserPromptSubmit", "session_id": "s", "cwd": str(project),
                                   "prompt": ["not", "a", "string"]})
    send("UserPromptSubmit", prompt="the build cache lives in /var/cache/build", prompt_id="ok")
    assert stored(home).search("build cache", project=str(project))


def test_hook_timing_log_is_rotated(hooks, home, project):
    from memory_store.shared.files import MAX_LOG_BYTES

    paths = DataPaths(home)
    paths.logs.mkdir(parents=True, exist_ok=True)
    paths.log_file.write_bytes(b"x" * (MAX_LOG_BYTES + 1) + b"\n")
    session(hooks, project)("PostToolUse-Bash")
    assert paths.log_file.with_name("recall.log.1").exists()
    assert paths.log_file.stat().st_size < MAX_LOG_BYTES


@pytest.mark.slow  # real hooks and a worker, checked end to end
def test_a_session_that_moves_to_another_repository_follows_it(hooks, home, project, other_project):
    """CwdChanged (Claude Code 2.1's payload): the turn's prompt moves with the session, later events land in the
    new repository, and its brief comes once, with the next prompt there (Claude Code takes no context from
    CwdChanged itself)."""
    play_deploy_session(session(hooks, other_project), f"Note for later: {FACT}.")  # earlier work over there
    wait_until_embedded(home)
    send = session(hooks, project)
    send("SessionStart-startup")
    send("UserPromptSubmit", prompt="go to the other checkout and look at its deploy script", prompt_id="t1")
    moved = send("CwdChanged", cwd=str(other_project), old_cwd=str(project), new_cwd=str(other_project),
                 prompt_id="t1")
    assert moved.stdout.strip() in ("", "{}")
    send("Stop", cwd=str(other_project), prompt_id="t1", last_assistant_message="It is scripts/ship.sh over there.")
    first = send("UserPromptSubmit", cwd=str(other_project), prompt="ok, what else is going on in this repo?",
                 prompt_id="t2")
    assert "scripts/ship.sh" in first.context and "moved into" in first.context
    second = send("UserPromptSubmit", cwd=str(other_project), prompt="and anything about the database?",
                  prompt_id="t3")
    assert "moved into" not in second.context
    stop_worker(home)
    recall = stored(home)
    try:
        turn = [m for m in recall.select() if "go to the other checkout" in m.text]
        assert turn and turn[0].project == str(other_project)
        answer = [m for m in recall.select() if m.kind == "exchange" and "over there" in m.text]
        assert answer and answer[0].project == str(other_project)
    finally:
        recall.close()


def test_the_async_hooks_have_the_async_deadline():
    """hooks.json says which hooks Claude Code does not wait for; the hook side, which cannot read it on its fast
    path, gives exactly those the deadline that beats the SIGKILL at a session's end."""
    from conftest import ROOT

    from memory_store.devtools.bench.turn import async_events
    from memory_store.hook.timing import ANSWER_DEADLINE, ASYNC_DEADLINE

    assert async_events(ROOT) == {event for event, seconds in ANSWER_DEADLINE.items() if seconds == ASYNC_DEADLINE}


# --- the client's fast path reads what the os-based modules would --------------------------------------------------


@pytest.mark.parametrize("value", ["/data/recall", "/data/recall/", "/data//recall", "/data/./recall", "/data/../recall",
                                   "/data/recall/..", "~/recall", "relative/recall", "/"])
def test_the_fast_paths_data_dir_is_the_one_paths_resolves(monkeypatch, value):
    """hook/client.py reads RECALL_HOME / CLAUDE_PLUGIN_DATA without `os` when it can (an absolute, normal path) and
    asks shared/paths.py otherwise: either way the same directory."""
    from memory_store.hook import client
    from memory_store.shared import paths

    for name, other in (("RECALL_HOME", "CLAUDE_PLUGIN_DATA"), ("CLAUDE_PLUGIN_DATA", "RECALL_HOME")):
        monkeypatch.setenv(name, value)
        monkeypatch.delenv(other, raising=False)
        assert client.data_dir() == paths.resolve_home()


@pytest.mark.parametrize("length", [10, 60, 85, 86, 87, 120])
@pytest.mark.parametrize("runtime_dir", ["", "/run/user/1000", "/" + "r" * 50])
def test_the_socket_the_fast_path_connects_to_is_the_workers(monkeypatch, length, runtime_dir):
    """protocol.py finds the worker's socket without os (wire.socket_file), where paths.py puts it: in the data dir,
    or for a long data-dir path in a short private directory ($XDG_RUNTIME_DIR/recall when short, else /tmp)."""
    import os

    from memory_store.shared import paths, wire

    monkeypatch.setenv("XDG_RUNTIME_DIR", runtime_dir)
    home = "/" + "d" * (length - 1)
    mine = wire.socket_file(home, wire.getenv("XDG_RUNTIME_DIR"), os.getuid())
    assert mine == paths.socket_path(home)
    inside = len(home + "/runtime/worker.sock") < wire.MAX_SOCKET_PATH
    assert mine.startswith(home + "/runtime/") == inside
    if not inside:
        expected = "/run/user/1000/recall/" if runtime_dir == "/run/user/1000" else f"/tmp/recall-{os.getuid()}/"
        assert mine.startswith(expected)


def test_the_fast_paths_log_line_rotates_and_a_data_dir_open_to_others_is_closed(tmp_path, monkeypatch):
    import os
    import stat

    from memory_store.hook import client
    from memory_store.shared import wire

    home = tmp_path / "open-home"
    home.mkdir(mode=0o755)
    os.chmod(home, 0o755)
    client.ensure_data_dir(str(home))
    assert stat.S_IMODE(home.stat().st_mode) == 0o700  # closed, as files.ensure_private_dir does
    client.ensure_data_dir(str(tmp_path / "new" / "home"))
    assert stat.S_IMODE((tmp_path / "new" / "home").stat().st_mode) == 0o700

    client.fast_log(str(home), "PostToolUse", "worker", 1.5)  # no logs/ yet: files.append_line makes it, 0600
    log = home / "logs" / "recall.log"
    assert json.loads(log.read_text())["hook"] == "PostToolUse" and stat.S_IMODE(log.stat().st_mode) == 0o600
    monkeypatch.setattr(wire, "MAX_LOG_BYTES", 200)
    client.fast_log(str(home), "Stop", "worker", 2.5)
    client.fast_log(str(home), "Stop", "worker", 3.5)  # past 200 bytes: rotated
    assert (home / "logs" / "recall.log.1").exists() and len(log.read_text().splitlines()) <= 1


def test_a_huge_paste_keeps_its_question_and_is_found_by_it(hooks, home, project):
    """A 389 KB pasted log whose question is on its last line: the payload's size bound once cut the tail before
    capture's head-and-tail trim ran, so the question was stored as nothing and never found."""
    log = "\n".join(f"2026-11-27T10:{i % 60:02d}:00 INFO worker {i} processed batch {i * 7} in {i % 90} ms"
                    for i in range(5_800))
    assert len(log) > 380_000
    prompt = log + "\nWhy does the import fail with ERR_LEDGER_LOCKED after the batch above?"
    send = session(hooks, project)
    assert send("UserPromptSubmit", prompt=prompt, prompt_id="paste").returncode == 0
    wait_until_embedded(home)
    hits = stored(home).search("ERR_LEDGER_LOCKED", project=str(project))
    assert hits and "ERR_LEDGER_LOCKED" in hits[0].text
    assert hits[0].text.startswith("2026-11-27T10:00:00 INFO")  # and its head


def test_log_search_words_are_searched_and_never_reach_a_shell(hooks, home, project, tmp_path):
    """/recall:log-search once pasted $ARGUMENTS into a shell command: backticks broke it, $(...) ran (after
    approval), double quotes vanished. Now the command's file runs nothing and the prompt hook searches the words
    exactly as typed (Claude Code hands it the raw prompt)."""
    first_session(hooks, project)
    wait_until_embedded(home)
    trap = tmp_path / "ran"
    words = f'staging "canary" flag $(touch {trap}) `touch {trap}` ; echo it\'s'
    send = session(hooks, project)
    context = send("UserPromptSubmit", prompt=f"/recall:log-search {words}", prompt_id="ls1").context
    assert "--canary" in context and repr(words) in context  # found, and the words shown as they were typed
    assert context.startswith("<recall-memory>") and context.rstrip().endswith("</recall-memory>")
    assert not trap.exists()
    command = (ROOT / "commands" / "log-search.md").read_text()
    assert "!`" not in command  # the file runs no shell line, so $ARGUMENTS reaches none
    pasted = send("UserPromptSubmit", prompt="/recall:log-search staging canary " + "log line " * 3000,
                  prompt_id="ls3").context  # a pasted query is echoed in part: the index still fits the cap
    assert len(pasted) < 10_000 and "</recall-memory>" in pasted and "…" in pasted
    nothing = send("UserPromptSubmit", prompt="/recall:log-search qzxv unrelated plover", prompt_id="ls2").context
    assert "Nothing relevant found for 'qzxv unrelated plover'" in nothing
    assert not [m for m in stored(home).search("plover", project=str(project)) if "plover" in m.text]  # not kept
    # What it showed has its receipt, and an answer is listed with its question (it read "#2 exchange: Mock reply").
    from typer.testing import CliRunner

    from memory_store.shells.cli import app

    listed = CliRunner().invoke(app, ["injections", "--home", str(home)]).output
    assert "found by /recall:log-search for 'staging" in listed, listed
    assert "Q: " in listed and " → A: " in listed, listed


def test_recall_brief_previews_what_the_next_session_start_offers(hooks, home, project):
    from typer.testing import CliRunner

    from memory_store.shells.cli import app

    first_session(hooks, project)
    wait_until_embedded(home)
    preview = CliRunner().invoke(app, ["brief", "--project", str(project), "--home", str(home)])
    assert preview.exit_code == 0 and "<recall-memory>" in preview.stdout and "--canary" in preview.stdout
    start = session(hooks, project)("SessionStart-startup")
    assert start.context.strip() == preview.stdout.strip()  # what the session then gets, exactly
    empty = CliRunner().invoke(app, ["brief", "--project", str(project.parent / "elsewhere"), "--home", str(home)])
    assert empty.exit_code == 0 and empty.stdout.startswith("nothing:")


@pytest.mark.parametrize("event, kept", [("PreToolUse", False), ("PostToolUse", True)])
def test_a_worker_error_spools_what_stores_and_drops_what_only_answers(home, project, event, kept):
    """A worker that fails on an event: a PostToolUse waits in the spool for the next worker; a PreToolUse (it stores
    nothing) is over, with nothing printed and nothing spooled."""
    from memory_store.hook import client

    raw = json.dumps(load_payload(f"{event}-Bash", cwd=str(project))).encode()
    printed, route = client._worker_refused(b'{"ok":false,"error":"TypeError: boom"}', event, "e1", 0.0, raw,
                                            str(home), "claude-code")
    spool = DataPaths(home).spool
    assert printed == b"" and route == ("spool" if kept else "failed")
    assert (spool.exists() and any(spool.glob("*.json"))) == kept


def test_a_prompt_during_a_rebuild_after_an_update_says_so_once(hooks, home, project):
    """After an update, the old worker answers the new session's SessionStart and steps down; the new version's
    environment is still being built. The prompt got nothing, silently: now the user is told, once per version."""
    from memory_store.hook import runtime
    from memory_store.version import __version__

    paths = DataPaths(home)
    paths.runtime.mkdir(parents=True, exist_ok=True)
    paths.bootstrap_state.write_text(json.dumps({"state": "running", "at": time.time(),
                                                 "version": __version__}))
    hooks.env.pop("RECALL_PYTHON", None)  # no Python with recall's dependencies is known yet: the rebuild makes it
    assert runtime.read_runtime(paths, any_version=True) is None
    said = [send.output for send in (
        hooks.run("UserPromptSubmit", load_payload("UserPromptSubmit", cwd=str(project), prompt=f"question {n}"))
        for n in range(2))]
    assert said[0] and set(said[0]) == {"systemMessage"} and "update" in said[0]["systemMessage"], said
    assert said[1] is None, said  # once
    assert len(list(paths.spool.glob("*.json"))) == 2  # both prompts kept for the worker to come
