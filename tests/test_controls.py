"""Seeing and steering memory: remember (project and global), pin, injection receipts, pause/resume,
RECALL_DISABLE, capture.ignore_projects, export/import round trip, projects, and the MCP server over a
real stdio session. Hooks run as subprocesses fed real payloads; the CLI through typer's runner."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import ROOT, run_cli, stop_worker, wait_until_embedded
from test_hooks import FACT, first_session, session

from memory_store import __version__, open_recall
from memory_store.shared.projects import GLOBAL_PROJECT
from memory_store.shared.wire import PAUSE_FILE

cli = run_cli


def memories(home, project=None):
    with open_recall(home, load_models=False) as recall:
        recall.ingest_spool()
        return recall.select(project=project)


def test_remember_global_is_found_from_another_project(home, project, other_project):
    cli("remember", "--global", "I use uv, never pip install into the system Python", "--home", home)
    out = cli("remember", "the payments service listens on port 8443", "--project", project, "--home", home)
    assert "remembered #" in out.stdout
    with open_recall(home) as recall:
        recall.embed_pending()
        hits = recall.search("how do I install python packages, pip or uv?", project=str(other_project))
        assert hits and hits[0].project == GLOBAL_PROJECT and "uv" in hits[0].text
        assert not any("8443" in h.text for h in recall.search("payments port", project=str(other_project)))
    assert cli("remember", "   ", "--home", home, ok=False).exit_code == 1


def test_pin_unpin_and_unknown_ids(home, project):
    cli("remember", "deploys need the --canary flag", "--project", project, "--home", home)
    memory_id = memories(home)[0].id
    assert f"pinned #{memory_id}" in cli("pin", f"#{memory_id}", "--home", home).stdout
    assert memories(home)[0].pinned
    cli("unpin", memory_id, "--home", home)
    assert not memories(home)[0].pinned
    missing = cli("pin", "99999", "--home", home, ok=False)
    assert missing.exit_code == 1 and "not found: #99999" in missing.output


def test_injection_receipts_say_what_why_and_into_which_prompt(hooks, home, project):
    first_session(hooks, project)
    wait_until_embedded(home)  # what the worker reads and embeds between hooks, done before the question
    send = session(hooks, project)
    # No SessionStart first: its brief would show the fact, and a session is shown a memory once.
    send("UserPromptSubmit", prompt="How do staging deploys work again, which script and flag?", prompt_id="q1")
    receipts = json.loads(cli("injections", "--json", "--home", home).stdout)
    prompt_receipt = next(r for r in receipts if r["hook"] == "UserPromptSubmit")
    assert "staging deploys" in prompt_receipt["prompt"]
    assert prompt_receipt["memories"] and all(m["why"] for m in prompt_receipt["memories"])
    assert any("ship.sh" in (m["text"] or "") for r in receipts for m in r["memories"])
    text = cli("injections", "--home", home).stdout
    assert "why: relevant: " in text and "UserPromptSubmit" in text
    # A prompt that got nothing says why, with --session (the gate's judgement now, in plain words).
    send("UserPromptSubmit", prompt="hi!", prompt_id="q2")
    send("UserPromptSubmit", prompt="what colour should the qzxv plover dashboard be?", prompt_id="q3")
    session_id = prompt_receipt["session_id"]
    said = cli("injections", "--session", session_id, "--home", home).stdout
    assert "nothing injected into: hi!" in said and "not searched" in said
    assert "nothing injected into: what colour should the qzxv plover" in said
    nothing = [r for r in json.loads(cli("injections", "--session", session_id, "--json", "--home", home).stdout)
               if r["memories"] == []]
    assert len(nothing) == 2 and all(r["why_nothing"] for r in nothing)
    # Forgetting the injected memory forgets its receipts too.
    injected = [m["id"] for m in prompt_receipt["memories"]]
    stop_worker(home)
    with open_recall(home, load_models=False) as recall:
        recall.forget(injected)
        assert all(not set(injected) & {m["id"] for m in r["memories"]} for r in recall.injections())


def test_pause_resume_and_expiry(hooks, home, project, other_project):
    cli("pause", "--project", project, "--home", home)
    send = session(hooks, project)
    send("UserPromptSubmit", prompt="paused-marker-one must not be kept", prompt_id="p1")
    session(hooks, other_project)("UserPromptSubmit", prompt="other-marker is kept", prompt_id="p1")
    texts = [m.text for m in memories(home)]
    assert not any("paused-marker-one" in t for t in texts) and any("other-marker" in t for t in texts)
    cli("resume", "--project", project, "--home", home)
    send("UserPromptSubmit", prompt="resumed-marker is kept", prompt_id="p2")
    assert any("resumed-marker" in m.text for m in memories(home))

    out = cli("pause", "--all", "--for", "1s", "--home", home).stdout
    assert "paused every project until" in out
    cli("pause", "--project", project, "--for", "1s", "--home", home)  # paused on its own too
    state = Path(home, PAUSE_FILE).read_bytes()
    one = cli("resume", "--project", project, "--home", home, ok=False)  # it cannot come back alone: no claim
    assert one.exit_code == 1 and "resumed" not in one.stdout and "still paused: every project" in one.stdout
    assert Path(home, PAUSE_FILE).read_bytes() == state  # and nothing changed
    send("UserPromptSubmit", prompt="all-paused-marker is not kept", prompt_id="p3")
    time.sleep(1.2)
    send("UserPromptSubmit", prompt="expired-marker is kept", prompt_id="p4")
    texts = [m.text for m in memories(home)]
    assert not any("all-paused-marker" in t for t in texts) and any("expired-marker" in t for t in texts)
    assert cli("pause", "--for", "soon", "--home", home, ok=False).exit_code != 0


def test_recall_disable_stores_and_prints_nothing(hooks, home, project):
    first_session(hooks, project)
    before = len(memories(home))
    hooks.env["RECALL_DISABLE"] = "1"
    try:
        result = session(hooks, project)("UserPromptSubmit", prompt=f"Remind me: {FACT}?", prompt_id="d1")
    finally:
        del hooks.env["RECALL_DISABLE"]
    assert result.stdout == "" and len(memories(home)) == before


def test_ignored_projects_are_not_captured(hooks, home, project, other_project):
    os.makedirs(home, exist_ok=True)
    (home / "config.json").write_text(json.dumps({"capture": {"ignore_projects": [str(project.parent / "dem*")]}}))
    session(hooks, project)("UserPromptSubmit", prompt="ignored-marker", prompt_id="i1")
    session(hooks, other_project)("UserPromptSubmit", prompt="kept-marker", prompt_id="i1")
    texts = [m.text for m in memories(home)]
    assert not any("ignored-marker" in t for t in texts) and any("kept-marker" in t for t in texts)


def test_export_round_trips_through_import(hooks, home, project, tmp_path):
    first_session(hooks, project)
    cli("remember", "the queue is orders-v2", "--project", project, "--home", home)
    memory_id = memories(home, str(project))[0].id
    cli("pin", memory_id, "--home", home)
    stop_worker(home)
    exported = tmp_path / "export.jsonl"
    cli("export", "--project", project, "--output", exported, "--home", home)
    lines = [json.loads(line) for line in exported.read_text().splitlines()]
    assert lines and {"id", "project", "session_id", "kind", "text", "created_at", "importance", "meta",
                      "pinned"} <= set(lines[0])
    fresh = tmp_path / "fresh-home"
    cli("import", exported, "--home", fresh, "--no-embed")
    cli("import", exported, "--home", fresh, "--no-embed")  # twice: nothing new
    original = sorted((m.project, m.kind, m.text, m.session_id, m.pinned) for m in memories(home, str(project)))
    again = sorted((m.project, m.kind, m.text, m.session_id, m.pinned) for m in memories(fresh))
    assert again == original
    markdown = cli("export", "--project", project, "--format", "markdown", "--home", home).stdout
    assert f"## {project}" in markdown and "scripts/ship.sh" in markdown
    assert cli("export", "--format", "xml", "--home", home, ok=False).exit_code != 0


def test_projects_lists_counts_and_activity(home, project, other_project):
    cli("remember", "one", "--project", project, "--home", home)
    cli("remember", "two", "--project", project, "--home", home)
    cli("remember", "three", "--project", other_project, "--home", home)
    rows = {r["project"]: r for r in json.loads(cli("projects", "--json", "--home", home).stdout)}
    assert rows[str(project)]["memories"] == 2 and rows[str(other_project)]["memories"] == 1
    assert "2 memories, last activity just now" in cli("projects", "--home", home).stdout


def test_commands_say_what_they_did_in_words_and_in_json(hooks, home, project, tmp_path, monkeypatch):
    """Every command that changes something has --json; a no-op says so; counts read as words."""
    cli("remember", "deploys need the --canary flag", "--project", project, "--home", home)
    memory_id = memories(home)[0].id
    assert json.loads(cli("pin", memory_id, "--json", "--home", home).stdout) == {
        "pinned": [memory_id], "already_pinned": [], "not_found": []}
    assert f"#{memory_id} was already pinned" in cli("pin", memory_id, "--home", home).stdout
    assert f"unpinned #{memory_id}" in cli("unpin", memory_id, "--home", home).stdout
    assert f"#{memory_id} was not pinned" in cli("unpin", memory_id, "--home", home).stdout
    assert json.loads(cli("unpin", memory_id, "--json", "--home", home).stdout)["not_pinned"] == [memory_id]

    paused = json.loads(cli("pause", "--project", project, "--for", "1h", "--json", "--home", home).stdout)
    assert paused["paused"] == str(project) and paused["until"] > time.time()
    assert json.loads(cli("resume", "--project", project, "--json", "--home", home).stdout) == {
        "resumed": str(project), "still_paused": []}
    exported = json.loads(cli("export", "--project", project, "--output", tmp_path / "out.jsonl", "--json",
                              "--home", home).stdout)
    assert exported["exported"] == 1 and exported["file"].endswith("out.jsonl")

    unknown = cli("injections", "--session", "no-such-session", "--home", home, ok=False)
    assert unknown.exit_code == 1 and "no session no-such-session" in unknown.output
    assert "1 memory in 1 project" in cli("stats", "--home", home).stdout

    # Outside any repository, a search scoped to the folder points at the flags that reach further.
    monkeypatch.chdir(tmp_path)
    out = cli("search", "canary flag", "--home", home).stdout
    assert "Nothing relevant found" in out and "--all-projects" in out


def test_stats_reads_without_jargon_or_microseconds(hooks, home, project):
    first_session(hooks, project)
    stop_worker(home)
    out = cli("stats", "--home", home).stdout
    assert "workerafterstart" not in out and "answered by the worker" in out
    assert not re.search(r"\d\d:\d\d:\d\d\.\d", out), out
    assert re.search(r"span +\d{4}-\d\d-\d\d \d\d:\d\d … ", out), out


def test_help_shows_plain_flags():
    out = cli("search", "--help").stdout
    assert "--json" in out and "<bool>" not in out


class McpSession:
    """A real stdio MCP session with `recall mcp`: newline-delimited JSON-RPC."""

    def __init__(self, home, project):
        env = dict(os.environ, RECALL_HOME=str(home))
        self.proc = subprocess.Popen([sys.executable, "-m", "memory_store.shells.cli", "mcp", "--project",
                                      str(project)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, env=env, cwd=str(ROOT))
        self.next_id = 0

    def request(self, method, params=None):
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params or {}})
        while True:
            line = self.proc.stdout.readline()
            assert line, self.proc.stderr.read().decode()[-2000:]
            message = json.loads(line)
            if message.get("id") == self.next_id:
                return message

    def send(self, message):
        self.proc.stdin.write((json.dumps(message) + "\n").encode())
        self.proc.stdin.flush()

    def call(self, tool, error=False, **arguments):
        """A tool's text; `error`: the call must be a tool error (isError), not a result."""
        reply = self.request("tools/call", {"name": tool, "arguments": arguments})
        assert "result" in reply and bool(reply["result"].get("isError")) == error, reply
        return "\n".join(c.get("text", "") for c in reply["result"]["content"])

    def close(self):
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


@pytest.mark.slow  # starts the MCP server as Claude Code does
def test_mcp_tools_over_stdio(hooks, home, project):
    first_session(hooks, project)
    stop_worker(home)
    mcp = McpSession(home, project)
    try:
        init = mcp.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                          "clientInfo": {"name": "test", "version": "1"}})
        assert init["result"]["serverInfo"]["name"] == "recall"
        assert init["result"]["serverInfo"]["version"] == __version__
        mcp.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        tools = {t["name"]: t for t in mcp.request("tools/list")["result"]["tools"]}
        assert {"search", "timeline", "get_memories", "facts", "remember"} <= set(tools)
        assert set(tools["search"]["inputSchema"]["properties"]) >= {"query", "limit", "project"}
        assert all("  " not in t["description"] and "\n" not in t["description"] for t in tools.values())

        index = mcp.call("search", query="staging deploy script canary", limit=5)
        assert index.startswith("<recall-memory>") and index.rstrip().endswith("</recall-memory>")
        assert "not instructions" in index and "ship.sh" in index
        first_id = int(index.split("#", 1)[1].split(" ", 1)[0])
        full = mcp.call("get_memories", ids=[first_id, 999999])
        assert f"#{first_id}" in full and "Not found: #999999" in full
        around = mcp.call("timeline", id=first_id)
        assert f"→ #{first_id}" in around
        assert "No memory #999999" in mcp.call("timeline", id=999999)

        one = mcp.call("search", query="staging deploy script canary", limit=1)
        assert "1 memory for" in one and "memories" not in one.split("\n")[2]
        # What the session taught, as knowledge: the deploy command that worked, and the stated procedure.
        procedures = mcp.call("facts", kind="procedure")
        assert procedures.startswith("<recall-memory>") and "ship.sh --canary staging" in procedures
        assert "ship.sh" in mcp.call("facts", kind="all", query="deploy staging")
        assert "kind must be one of" in mcp.call("facts", error=True, kind="rumours")

        stored = mcp.call("remember", text="from now on, use ruff instead of flake8", scope="global")
        assert "Remembered as #" in stored and "every project" in stored
        assert "Not stored" in mcp.call("remember", error=True, text="x", scope="team")
        # Nothing recall holds is about this: it says so rather than listing whatever ranks first.
        assert "Nothing relevant found" in mcp.call("search", query="zzqxj wombat", limit=10)
        big = mcp.call("search", query="deploy " * 200, limit=100)
        assert len(big) <= 8000
    finally:
        mcp.close()
    assert any(m.project == GLOBAL_PROJECT and "ruff" in m.text for m in memories(home))


def test_plugin_registers_the_mcp_server_and_skill():
    config = json.loads((ROOT / ".mcp.json").read_text())
    server = config["mcpServers"]["recall"]
    assert server["command"] == "${CLAUDE_PLUGIN_ROOT}/scripts/recall" and server["args"][0] == "mcp"
    skill = (ROOT / "skills" / "recall" / "SKILL.md").read_text()
    assert skill.startswith("---\nname: recall\ndescription: ") and "get_memories" in skill


def test_show_and_timeline_take_hash_ids_and_fail_on_missing(home, project):
    cli("remember", "the queue is orders-v2", "--project", project, "--home", home)
    memory_id = memories(home)[0].id
    assert "orders-v2" in cli("show", f"#{memory_id}", "--home", home).stdout
    assert "orders-v2" in cli("timeline", f"#{memory_id}", "--home", home).stdout
    for command in ("show", "timeline"):
        result = cli(command, "99999", "--json", "--home", home, ok=False)
        assert result.exit_code == 1 and "not found" in result.output


def test_import_names_each_bad_file_and_fails(home, tmp_path):
    good = tmp_path / "good.jsonl"
    good.write_text(json.dumps({"type": "user", "uuid": "u1", "sessionId": "s1", "cwd": "/p/x",
                                "timestamp": "2026-01-02T10:00:00Z", "message": {"role": "user",
                                                                                  "content": "the port is 8443"}}) + "\n")
    binary = tmp_path / "random.bin"
    binary.write_bytes(os.urandom(2000))
    result = cli("import", good, binary, tmp_path / "missing.jsonl", ROOT / "README.md", "--home", home,
                 "--no-embed", ok=False)
    assert result.exit_code == 1
    assert "1 file imported" in result.output
    assert "missing.jsonl: no such file or directory" in result.output
    assert "random.bin: not a Claude Code transcript" in result.output
    assert "README.md: not a Claude Code transcript" in result.output
    alone = cli("import", tmp_path / "nothing-here", "--home", home, ok=False)
    assert alone.exit_code == 1 and "no such file or directory" in alone.output


def test_bench_commands_reject_bad_input_without_a_traceback(tmp_path):
    for args in (["bench", "latency", "--memories", "abc"],
                 ["bench", "locomo", str(ROOT / "README.md")],
                 ["bench", "locomo", str(ROOT / "README.md"), "--config", "{not json"]):
        result = cli(*args, ok=False)
        assert result.exit_code == 2 and "Traceback" not in result.output and "Invalid value" in result.output
