"""Codex's side of capture, without the Codex CLI (tests/e2e/test_codex_and_claude_code.py runs the real one): its
hook payloads (captured from codex 0.171.0) through the commands `recall install codex` writes, its tool calls in
Claude Code's terms, and `recall import` of its session files."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from conftest import FIXTURES, ROOT, stop_worker, stored
from test_codex_install import recall_cli

from memory_store.core.capture.tool_calls import normalized
from memory_store.integrations import codex
from memory_store.shared.projects import project_for

CODEX_FIXTURES = FIXTURES / "codex"
ROLLOUT = next(CODEX_FIXTURES.glob("rollout-*.jsonl"))


# --- Codex's payloads through the commands `recall install codex` writes --------------------------------------


class CodexHooks:
    """Runs the hook commands recall installed in a Codex home, as Codex runs them (`sh -c`, payload on stdin)."""

    def __init__(self, codex_home: Path, data: Path):
        codex.install(codex_home)
        self.groups = json.loads((codex_home / "hooks.json").read_text())["hooks"]
        self.env = {"PATH": "/usr/bin:/bin", "HOME": str(data.parent), "RECALL_HOME": str(data),
                    "RECALL_PYTHON": sys.executable}

    def send(self, name: str, **changes) -> dict:
        payload = {**json.loads((CODEX_FIXTURES / f"hook-{name}.json").read_text()), **changes}
        group = next(g for g in self.groups[payload["hook_event_name"]] if codex.is_recall_group(g))
        command = group["hooks"][0]["command"]
        result = subprocess.run(["sh", "-c", command], input=json.dumps(payload), capture_output=True, text=True,
                                env=self.env, timeout=60)
        assert result.returncode == 0 and not result.stderr, result.stderr
        return json.loads(result.stdout) if result.stdout.strip() else {}


# What Codex 0.171.0 accepts from a hook (anything else fails the hook): the common fields and, per event, these.
ACCEPTED = {"continue", "stopReason", "suppressOutput", "systemMessage", "decision", "reason", "hookSpecificOutput"}
SPECIFIC = {"hookEventName", "additionalContext", "permissionDecision", "permissionDecisionReason"}


def test_codex_payloads_are_captured_as_codex_and_answered_in_its_form(tmp_path):
    data, repo, codex_home = tmp_path / "data", tmp_path / "widgets", tmp_path / "dot-codex"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run(["git", "-C", str(repo), "remote", "add", "origin", "https://github.com/acme/widgets.git"],
                   check=True)
    hooks = CodexHooks(codex_home, data)
    session = str(uuid.uuid4())
    outputs = []
    try:
        common = {"session_id": session, "cwd": str(repo), "transcript_path": None}
        outputs.append(hooks.send("SessionStart", **common))
        outputs.append(hooks.send("UserPromptSubmit", prompt="From now on the API listens on port 8443, not 8080.",
                                  **common))
        outputs.append(hooks.send("PreToolUse-Bash", tool_input={"command": "make serve"}, **common))
        outputs.append(hooks.send("PostToolUse-Bash", tool_input={"command": "make serve"},
                                  tool_response="serving on :8443\n", **common))
        patch = "*** Begin Patch\n*** Update File: config/api.yaml\n@@\n-port: 8080\n+port: 8443\n*** End Patch\n"
        outputs.append(hooks.send("PostToolUse-Bash", tool_name="apply_patch", tool_input={"command": patch},
                                  tool_response="Success. Updated the following files:\nM config/api.yaml\n", **common))
        outputs.append(hooks.send("Stop", last_assistant_message="The API now listens on 8443.", **common))
        # A private turn: Codex sends turn_id (no prompt_id); neither the prompt nor its answer is kept.
        private = {**common, "turn_id": "turn-private"}
        outputs.append(hooks.send("UserPromptSubmit", prompt="<private>my PIN is 4417</private>", **private))
        outputs.append(hooks.send("Stop", last_assistant_message="Your PIN 4417 is noted.", **private))
        outputs.append(hooks.send("SessionEnd", **common))
        for output in outputs:
            assert set(output) <= ACCEPTED and set(output.get("hookSpecificOutput", {})) <= SPECIFIC, output
        stop_worker(data)
        recall = stored(data)
        try:
            kept = recall.select(project="github.com/acme/widgets")
            assert {m.kind for m in kept} >= {"prompt", "tool", "exchange"}, [(m.kind, m.text) for m in kept]
            assert all(m.client == "codex" for m in kept)
            assert not any("4417" in m.text or "4417" in str(m.meta) for m in kept)
            answers = [m for m in kept if m.kind == "exchange"]
            assert [m.meta.get("prompt") for m in answers] == ["From now on the API listens on port 8443, not 8080."]
            edits = [m for m in kept if m.text.startswith("Edit config/api.yaml")]
            assert edits and "`port: 8080` → `port: 8443`" in edits[0].text
            facts = recall.knowledge(project="github.com/acme/widgets", kinds=("fact",))
            assert any("8443" in item.value for item in facts), facts
        finally:
            recall.close()
        log = (data / "logs" / "recall.log").read_text()
        assert log.count('"client":"codex"') >= len(outputs)
    finally:
        stop_worker(data)


def test_a_codex_event_spooled_while_no_worker_runs_keeps_its_agent(tmp_path):
    """The spool keeps the agent: an event stored later, by another process, is still Codex's."""
    data = tmp_path / "data"
    payload = {**json.loads((CODEX_FIXTURES / "hook-UserPromptSubmit.json").read_text()),
               "cwd": str(tmp_path), "prompt": "the cache TTL is 15 minutes now"}
    env = {"PATH": "/usr/bin:/bin", "RECALL_HOME": str(data), "RECALL_PYTHON": "/nonexistent/python"}
    result = subprocess.run([str(ROOT / "hooks" / "run"), "UserPromptSubmit", "codex"], input=json.dumps(payload),
                            capture_output=True, text=True, env=env,
                            timeout=60)
    assert result.returncode == 0
    spooled = [json.loads(p.read_text()) for p in (data / "spool").glob("*.json")]
    assert spooled and all(record["client"] == "codex" for record in spooled), spooled
    recall = stored(data)
    try:
        assert [m.client for m in recall.select(match="cache TTL")] == ["codex"]
    finally:
        recall.close()
        stop_worker(data)


def test_the_pip_installs_hook_entry_runs_without_the_plugin_folder(tmp_path):
    """`python -E -m memory_store.hook EVENT codex`: what `recall install codex` registers for a pip install."""
    data = tmp_path / "data"
    payload = {**json.loads((CODEX_FIXTURES / "hook-Stop.json").read_text()), "cwd": str(tmp_path),
               "last_assistant_message": "Done: the nightly job runs at 02:00 UTC now."}
    result = subprocess.run([sys.executable, "-E", "-m", "memory_store.hook", "Stop", "codex"],
                            input=json.dumps(payload), capture_output=True, text=True, cwd=tmp_path,
                            env={"PATH": "/usr/bin:/bin", "RECALL_HOME": str(data)}, timeout=60)
    try:
        assert result.returncode == 0 and result.stdout == "", result.stderr
        assert '"client":"codex"' in (data / "logs" / "recall.log").read_text()
    finally:
        stop_worker(data)


# --- Codex's tool calls in Claude Code's terms ----------------------------------------------------------------


def test_shell_calls_read_as_bash():
    assert normalized("shell", {"command": ["bash", "-lc", "make test"]}) == [("Bash", {"command": "make test"})]
    assert normalized("exec_command", {"cmd": "ls -la"})[0] == ("Bash", {"cmd": "ls -la", "command": "ls -la"})
    assert normalized("Bash", {"command": "pytest -x"}) == [("Bash", {"command": "pytest -x"})]
    assert normalized("Edit", {"file_path": "a.py"}) == [("Edit", {"file_path": "a.py"})]  # Claude Code's own


def test_a_patch_reads_as_one_edit_or_write_per_file():
    patch = ("*** Begin Patch\n*** Update File: app.yaml\n@@\n-port: 8080\n+port: 9090\n@@ db:\n keep\n-pool: 5\n"
             "+pool: 10\n*** Add File: notes/todo.md\n+- ship it\n*** Delete File: old.txt\n*** End Patch")
    expected = [("MultiEdit", {"file_path": "/repo/app.yaml", "edits": [
                    {"old_string": "port: 8080", "new_string": "port: 9090"},
                    {"old_string": "keep\npool: 5", "new_string": "keep\npool: 10"}]}),  # context: in both
                ("Write", {"file_path": "/repo/notes/todo.md", "content": "- ship it\n"})]
    assert normalized("apply_patch", patch, "/repo") == expected
    assert normalized("apply_patch", {"input": patch}, "/repo") == expected
    assert normalized("Bash", {"command": f"apply_patch <<'EOF'\n{patch}\nEOF\n"}, "/repo") == expected
    assert normalized("apply_patch", "not a patch") == [("apply_patch", "not a patch")]
    moved = "*** Begin Patch\n*** Update File: a.py\n*** Move to: b.py\n@@\n-x = 1\n+x = 2\n*** End Patch"
    assert normalized("apply_patch", moved, "/repo") == [
        ("MultiEdit", {"file_path": "/repo/b.py", "edits": [{"old_string": "x = 1", "new_string": "x = 2"}]})]


# --- `recall import` of Codex session files -------------------------------------------------------------------


def import_into(data: Path, *paths: Path) -> dict:
    result = recall_cli("import", *map(str, paths), "--json", "--no-embed", home=data)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_a_codex_session_file_imports_the_users_words_its_tools_and_answers_once(tmp_path):
    data = tmp_path / "data"
    first = import_into(data, ROLLOUT)
    assert first["files"] == 1 and first["new_memories"] >= 4 and not first["failed_files"], first
    assert first["not_the_users_lines"] >= 1  # Codex's <environment_context> in the user's place
    again = import_into(data, ROLLOUT)
    assert again["unchanged_files"] == 1 and again["new_memories"] == 0
    recall = stored(data)
    try:
        kept = recall.select()
        assert all(m.client == "codex" for m in kept)
        prompts = [m.text for m in kept if m.kind == "prompt"]
        assert prompts == ["edit it"]  # the user's words only
        assert any(m.kind == "tool" and "Edit app.yaml" in m.text and "9090" in m.text for m in kept)
        assert any(m.kind == "error" and "`false`" in m.text for m in kept)  # exit code 1: a failure
        assert any(m.kind == "exchange" and m.meta.get("prompt") == "edit it" for m in kept)
        assert all(m.session_id == "01a22178-3e64-72c1-9684-2f2795d248f2" for m in kept)
    finally:
        recall.close()


def rollout_lines(*items: dict, done: bool = True) -> str:
    meta = {"timestamp": "2026-11-28T09:00:00.000Z", "type": "session_meta",
            "payload": {"id": "s-private", "cwd": "/home/dev/app"}}
    started = {"timestamp": "2026-11-28T09:00:00.500Z", "type": "event_msg", "payload": {"type": "task_started"}}
    lines = [meta, started] + [{"timestamp": f"2026-11-28T09:00:{n + 1:02d}.000Z", "type": "response_item", "payload": item}
                      for n, item in enumerate(items)]
    if done:
        lines.append({"timestamp": "2026-11-28T09:01:00.000Z", "type": "event_msg", "payload": {"type": "task_complete"}})
    return "\n".join(json.dumps(line) for line in lines) + "\n"


def said(role: str, text: str) -> dict:
    kind = "input_text" if role == "user" else "output_text"
    return {"type": "message", "role": role, "content": [{"type": kind, "text": text}]}


def test_a_private_turn_keeps_neither_its_prompt_nor_its_answer_and_a_running_turn_waits(tmp_path):
    session = tmp_path / "rollout-2026-11-28T09-00-00-s-private.jsonl"
    session.write_text(rollout_lines(said("user", "How do we deploy?"), said("assistant", "With make ship."),
                                     said("user", "<private>my PIN is 4417</private>"),
                                     said("assistant", "Your PIN 4417 is noted."),
                                     said("user", "<div> renders twice, why?"),
                                     said("assistant", "Let me look first."), done=False))
    data = tmp_path / "data"
    import_into(data, session)
    recall = stored(data)
    try:
        kept = {(m.kind, m.text) for m in recall.select()}
    finally:
        recall.close()
    assert ("exchange", "With make ship.") in kept and ("prompt", "<div> renders twice, why?") in kept
    assert not any("4417" in text for _, text in kept), kept  # nor paired with the turn before
    assert not any("Let me look first" in text for _, text in kept)  # the last turn has not ended: no answer yet


def test_a_codex_session_that_moves_to_another_repository_files_each_turn_where_it_happened(tmp_path):
    """A session that works in one repository, then in another (its turn_context says where): each turn's prompt,
    commands and answer belong to the repository it happened in, not all to the last one."""
    first, second = tmp_path / "billing", tmp_path / "storefront"
    for repo in (first, second):
        (repo / ".git").mkdir(parents=True)
    lines = [{"timestamp": "2026-11-28T09:00:00.000Z", "type": "session_meta",
              "payload": {"id": "s-moves", "cwd": str(first)}}]
    for n, (where, prompt, answer) in enumerate([(first, "why do invoices round down?", "Invoices use banker's "
                                                  "rounding in invoice_total()."),
                                                 (second, "why is the cart badge stale?", "The badge reads a cached "
                                                  "count; it now listens to cart_updated.")]):
        lines += [{"timestamp": f"2026-11-28T09:0{n}:01.000Z", "type": "turn_context", "payload": {"cwd": str(where)}},
                  {"timestamp": f"2026-11-28T09:0{n}:02.000Z", "type": "event_msg", "payload": {"type": "task_started"}},
                  {"timestamp": f"2026-11-28T09:0{n}:03.000Z", "type": "response_item", "payload": said("user", prompt)},
                  {"timestamp": f"2026-11-28T09:0{n}:04.000Z", "type": "response_item",
                   "payload": said("assistant", answer)},
                  {"timestamp": f"2026-11-28T09:0{n}:05.000Z", "type": "event_msg", "payload": {"type": "task_complete"}}]
    session = tmp_path / "rollout-2026-11-28T09-00-00-s-moves.jsonl"
    session.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    data = tmp_path / "data"
    import_into(data, session)
    recall = stored(data)
    try:
        where = {m.text: m.project for m in recall.select()}
    finally:
        recall.close()
    assert where["why do invoices round down?"] == project_for(str(first)), where
    assert where["why is the cart badge stale?"] == project_for(str(second)), where
    assert {p for text, p in where.items() if "banker's" in text} == {project_for(str(first))}, where


def test_a_compressed_codex_session_file_imports_the_same(tmp_path):
    zstandard = pytest.importorskip("zstandard")
    folder = tmp_path / "sessions" / "2026" / "11" / "28"
    folder.mkdir(parents=True)
    (folder / (ROLLOUT.name + ".zst")).write_bytes(zstandard.ZstdCompressor().compress(ROLLOUT.read_bytes()))
    shutil.copy(ROLLOUT, tmp_path / "plain.jsonl")
    packed = import_into(tmp_path / "a", tmp_path / "sessions")
    plain = import_into(tmp_path / "b", tmp_path / "plain.jsonl")
    assert packed["files"] == 1 and packed["new_memories"] == plain["new_memories"] > 0


def item_completed(call_id: str, command: str, code: int) -> str:
    """The line Codex 0.171.0 writes to its session file when a command ends, before it runs the PostToolUse hook."""
    return json.dumps({"timestamp": "2026-11-28T09:24:18.540Z", "type": "event_msg", "payload": {
        "type": "item_completed", "item": {"type": "CommandExecution", "id": call_id, "command": ["/bin/bash", "-lc",
                                                                                                  command],
                                           "status": "failed" if code else "completed", "exit_code": code}}})


def test_a_failed_codex_command_is_an_error_live_and_its_known_fix_comes_back(recall, tmp_path):
    """Issue 5.1: Codex sends PostToolUse with no exit status, so its failures were kept as commands that worked (and
    became procedures), while an import of the same session recorded an error. recall reads the exit code Codex has
    already written to the session file; a failure met before gets its fix, in Codex's PostToolUse form."""
    repo = tmp_path / "widgets"
    (repo / ".git").mkdir(parents=True)
    error = 'Error: relation "orders_v2" does not exist\n    at Migrator.run (/srv/app/node_modules/db/migrate.js:41:9)'

    clock = [1_800_000_000.0]

    def codex_event(name: str, session: str, transcript: Path, **fields) -> dict:
        payload = {**json.loads((CODEX_FIXTURES / f"hook-{name}.json").read_text()), "session_id": session,
                   "cwd": str(repo), "transcript_path": str(transcript), **fields}
        clock[0] += 30
        return recall.handle_event({"event_id": uuid.uuid4().hex, "received_at": clock[0], "client": "codex",
                                    "payload": payload})

    first = tmp_path / "first.jsonl"
    first.write_text(ROLLOUT.read_text() + item_completed("call_9", "pnpm migrate", 1) + "\n" +
                     item_completed("call_10", "pnpm build", 0) + "\n")
    codex_event("UserPromptSubmit", "s1", first, prompt="migrate the dev database")
    codex_event("PostToolUse-Bash", "s1", first, tool_input={"command": "pnpm migrate"}, tool_response=error,
                tool_use_id="call_9")
    codex_event("PostToolUse-Bash", "s1", first, tool_input={"command": "pnpm build"}, tool_response="built in 2s",
                tool_use_id="call_10")
    codex_event("Stop", "s1", first, last_assistant_message="The migration failed because the table was renamed to "
                "orders in the last release; I fixed it by running `pnpm db:rename-orders` before `pnpm migrate`.")
    recall.embed_pending()
    kept = {m.text.split(" → ")[0].split(" — ")[0]: m.kind for m in recall.select() if m.kind in ("tool", "error")}
    assert kept == {"Bash failed: `pnpm migrate`": "error", "Bash `pnpm build`": "tool"}
    procedures = [item.value for item in recall.knowledge(recall.select()[0].project, ["procedure"])]
    assert "pnpm migrate" not in procedures and "pnpm build" in procedures

    again = tmp_path / "again.jsonl"
    again.write_text(item_completed("call_2", "pnpm migrate", 1) + "\n")
    out = codex_event("PostToolUse-Bash", "s2", again, tool_input={"command": "pnpm migrate"},
                      tool_response=error.replace(":41:9", ":43:2"), tool_use_id="call_2")
    specific = out.get("hookSpecificOutput") or {}
    assert specific.get("hookEventName") == "PostToolUse" and "pnpm db:rename-orders" in specific["additionalContext"]
    assert set(out) <= ACCEPTED and set(specific) <= SPECIFIC


def test_a_live_codex_failure_and_its_import_are_one_memory_and_a_forget_holds(recall, tmp_path):
    """The live failure (its exit code read from the session file) and an import of that file keep the same text:
    one error, not two, and once forgotten an import does not bring it back."""
    payload = {**json.loads((CODEX_FIXTURES / "hook-PostToolUse-Bash.json").read_text()),
               "transcript_path": str(ROLLOUT)}  # its cwd is the session file's
    recall.handle_event({"event_id": uuid.uuid4().hex, "received_at": 1_795_857_858.6, "client": "codex",
                         "payload": payload})

    def failures():
        return [m for m in recall.select() if m.kind == "error" and "`false`" in m.text]

    assert len(failures()) == 1
    recall.import_transcripts([ROLLOUT])
    assert len(failures()) == 1, [m.text for m in failures()]
    recall.forget([m.id for m in failures()])
    copy = tmp_path / ROLLOUT.name  # a file not imported before: read again from its first line
    copy.write_text(ROLLOUT.read_text())
    report = recall.import_transcripts([copy])
    assert report.files == 1 and report.entries > 0 and failures() == []
