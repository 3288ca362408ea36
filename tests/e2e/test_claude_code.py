"""End-to-end: the real Claude Code CLI (the newest release, claude_cli.CLAUDE_CODE_VERSION, installed with npm into
a cache) drives recall.

Claude Code runs with a temporary HOME and ANTHROPIC_BASE_URL pointed at a loopback mock of the
Messages API (tests/e2e/mock_anthropic.py) that records every request body, so we can check what
recall put in front of the model. recall is installed the way users install it: `claude plugin
marketplace add <repo>` + `claude plugin install recall@recall`; its hooks then keep their data in
~/.claude/plugins/data/recall-recall under that HOME.

Without node/npm these tests skip, unless RECALL_REQUIRE_E2E=1 (set by .ci/run): then they fail.
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

import pytest
from claude_cli import ClaudeUnavailable, claude_env, ensure_claude, parse_debug_hooks, run_claude
from conftest import ROOT, processes_mentioning, stop_worker, wait_for, wait_until_embedded
from mock_anthropic import DEFAULT_TEXT, MockAnthropic, Text, ToolUse, tool_results_in_turn

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

FIVE_HOOKS = ("SessionStart", "UserPromptSubmit", "PostToolUse", "Stop", "SessionEnd")
FACT = "the staging deploy needs the --canary flag of scripts/ship.sh"
SESSION_ONE_PROMPT = f"Remember this: {FACT}.\nPLEASE_RUN_TOOL: echo deployed-build-4711"
SESSION_TWO_PROMPT = "Which flag does the staging deploy script need?"
MEMORY_BLOCK_RE = re.compile(r"<recall-memory>(.*?)</recall-memory>", re.S)


def require_e2e() -> bool:
    return os.environ.get("RECALL_REQUIRE_E2E") == "1"


@pytest.fixture(scope="session")
def claude() -> Path:
    """The pinned Claude Code CLI, installed once per cache (skip without node/npm, fail in CI)."""
    try:
        return ensure_claude()
    except ClaudeUnavailable as exc:
        reason = str(exc)
    if require_e2e():
        pytest.fail(f"RECALL_REQUIRE_E2E=1 but the Claude Code CLI is unavailable: {reason}", pytrace=False)
    pytest.skip(f"Claude Code CLI unavailable (install node and npm to run the e2e tests): {reason}")


def recall_hooks(debug_file: Path) -> list[dict]:
    """recall's hook executions in a --debug-file log (SessionEnd lines carry no plugin, only the command)."""
    return [h for h in parse_debug_hooks(debug_file)
            if h["plugin"] == "recall@recall" or "hooks/run" in (h["command"] or "")]


def assert_hooks_clean(debug_file: Path, expected: tuple[str, ...]) -> list[dict]:
    hooks = recall_hooks(debug_file)
    fired = {h["event"] for h in hooks}
    assert set(expected) <= fired, f"missing hooks {set(expected) - fired}; fired: {sorted(fired)}"
    bad = [h for h in hooks if h["errored"] or h["errors"] or h["output"] == "invalid_json"]
    assert not bad, f"hook errors: {bad}"
    return hooks


class Installed:
    """A temporary HOME with recall installed from the marketplace, and a git project to work in."""

    def __init__(self, claude: Path, base: Path):
        self.claude = claude
        self.home = base / "home"
        self.project = base / "projects" / "demo"
        self.logs = base / "logs"
        for path in (self.home, self.project / ".git", self.logs):
            path.mkdir(parents=True)
        self.data = self.home / ".claude" / "plugins" / "data" / "recall-recall"

    def env(self, mock: MockAnthropic) -> dict:
        # Hooks find a Python with recall's dependencies at once (the cold path is tests/test_bootstrap.py).
        return claude_env(self.home, mock.url, extra={"RECALL_PYTHON": sys.executable})

    def run(self, mock: MockAnthropic, args: list, timeout: float = 180):
        return run_claude(self.claude, args, self.env(mock), cwd=self.project, timeout=timeout)

    def session(self, mock: MockAnthropic, prompt: str, name: str):
        """One `claude -p` session; returns (completed process, debug file)."""
        debug = self.logs / f"{name}.debug.log"
        result = self.run(mock, ["-p", prompt, "--debug-file", debug, "--allowedTools", "Bash(echo:*)"])
        assert result.returncode == 0, f"claude -p failed ({result.returncode}):\n{result.stdout}\n{result.stderr}"
        return result, debug


@pytest.fixture(scope="module")
def installed(claude, tmp_path_factory) -> Installed:
    """`claude plugin marketplace add <repo>` + `claude plugin install recall@recall` into a fresh HOME."""
    inst = Installed(claude, tmp_path_factory.mktemp("claude-e2e"))
    try:
        with MockAnthropic() as mock:
            added = inst.run(mock, ["plugin", "marketplace", "add", str(ROOT)], timeout=120)
            assert added.returncode == 0, f"marketplace add failed:\n{added.stdout}\n{added.stderr}"
            done = inst.run(mock, ["plugin", "install", "recall@recall"], timeout=120)
            assert done.returncode == 0, f"plugin install failed:\n{done.stdout}\n{done.stderr}"
            assert "recall@recall" in (inst.home / ".claude" / "plugins" / "installed_plugins.json").read_text()
        yield inst
    finally:
        stop_worker(inst.data)


@pytest.fixture(scope="module")
def session_one(installed):
    """Session 1 states a fact and runs a tool; returns once the worker has embedded what it stored."""
    with MockAnthropic() as mock:
        result, debug = installed.session(mock, SESSION_ONE_PROMPT, "session-1")
        requests = mock.main_requests
        errors = mock.errors
    wait_until_embedded(installed.data, timeout=120)
    return {"result": result, "debug": debug, "requests": requests, "mock_errors": errors}


def test_plugin_validate_strict(claude, tmp_path):
    with MockAnthropic() as mock:
        env = claude_env(tmp_path / "home", mock.url)
        result = run_claude(claude, ["plugin", "validate", "--strict", str(ROOT)], env, cwd=tmp_path, timeout=120)
    assert result.returncode == 0, f"validate --strict failed:\n{result.stdout}\n{result.stderr}"


def test_session_fires_all_five_hooks_without_error(installed, session_one):
    result = session_one["result"]
    assert DEFAULT_TEXT in result.stdout
    assert not session_one["mock_errors"]
    # The scripted conversation really ran the tool (so PostToolUse had something to fire on).
    assert any("deployed-build-4711" in str(m.get("content")) for r in session_one["requests"]
               for m in r.get("messages", []) if m.get("role") == "user")
    hooks = assert_hooks_clean(session_one["debug"], FIVE_HOOKS)
    for h in hooks:  # every recall hook of an installed plugin, with a warm worker, is quick
        if h["duration_ms"] is not None:
            assert h["duration_ms"] < 5000, h
    assert (installed.data / "recall.db").is_file(), "hooks did not use CLAUDE_PLUGIN_DATA"


def test_second_session_gets_the_fact_in_recall_context(installed, session_one):
    with MockAnthropic() as mock:
        _, debug = installed.session(mock, SESSION_TWO_PROMPT, "session-2")
        text = mock.all_text()
        assert mock.main_requests, "claude sent no request to the mock"
    assert_hooks_clean(debug, ("SessionStart", "UserPromptSubmit", "Stop", "SessionEnd"))
    blocks = MEMORY_BLOCK_RE.findall(text)
    assert blocks, "no <recall-memory> block reached the model"
    assert any("--canary" in b and "scripts/ship.sh" in b for b in blocks), blocks


def test_log_search_command_expands_to_the_stored_memory(installed, session_one):
    """The words go to the search as typed, through the prompt hook: no shell sees them (backticks once broke the
    command, $(...) asked for approval, double quotes vanished). Claude Code 2.1.330 puts the hook's context in a
    system message after the command's text."""
    words = 'staging "canary" flag $(touch ran) `touch ran`'
    # The stored memory contains the PLEASE_RUN_TOOL line of session 1: answer with plain text only.
    with MockAnthropic(script=lambda body: Text(DEFAULT_TEXT)) as mock:
        _, debug = installed.session(mock, f"/recall:log-search {words}", "log-search")
        requests = mock.main_requests
    assert requests, "claude sent no request to the mock"
    assert_hooks_clean(debug, ("UserPromptSubmit",))
    texts = [
        block.get("text", "")
        for r in requests for m in r.get("messages", []) if isinstance(m.get("content"), list)
        for block in m["content"] if block.get("type") == "text"
    ]
    joined = "\n".join(texts)
    assert "/recall:log-search" in joined, "the command was not expanded"
    assert "no Python with recall's dependencies" not in joined
    found = [b for b in MEMORY_BLOCK_RE.findall(joined) if repr(words) in b]
    assert found and FACT in found[0], f"no search index for the words as typed:\n{joined[-3000:]}"
    assert not list(installed.home.parent.rglob("ran")) and not (ROOT / "ran").exists()


def test_model_calls_the_plugin_search_tool_and_gets_the_fact(installed, session_one):
    """The plugin's MCP server (.mcp.json) starts under Claude Code, lists its tools to the model, and a
    `search` call by the model returns the stored fact in the tool result."""
    seen_tools: list[str] = []

    def script(body):
        names = [t.get("name", "") for t in body.get("tools", [])]
        seen_tools[:] = names
        search = next((n for n in names if n.startswith("mcp__") and "recall" in n and n.endswith("__search")), None)
        if search is None or tool_results_in_turn(body):
            return Text(DEFAULT_TEXT)
        return ToolUse(name=search, input={"query": "staging deploy canary flag", "limit": 5})

    with MockAnthropic(script=script) as mock:
        debug = installed.logs / "mcp-search.debug.log"
        env = dict(installed.env(mock), MCP_CONNECTION_NONBLOCKING="0")  # -p: wait for MCP servers first
        result = run_claude(installed.claude, ["-p", "What did we say about staging deploys?", "--debug-file", debug,
                                               "--allowedTools", "mcp__plugin_recall_recall__search"],
                            env, cwd=installed.project, timeout=180)
        requests = mock.main_requests
    assert result.returncode == 0, f"claude -p failed:\n{result.stdout}\n{result.stderr}"
    assert any(n.endswith("__search") and "recall" in n for n in seen_tools), seen_tools
    results = [block for r in requests for m in r.get("messages", []) if m.get("role") == "user"
               and isinstance(m.get("content"), list) for block in m["content"] if block.get("type") == "tool_result"]
    assert results, "the model's search call got no tool result"
    text = json.dumps(results)
    assert "--canary" in text and "recall-memory" in text, text[-2000:]


def test_compact_keeps_the_facts_and_re_offers_them(installed, session_one):
    """`/compact` on session 1: recall's PreCompact output (the session's key facts) reaches the summarizing
    request, and after compaction the facts come back from the store (SessionStart, source compact) in the
    next request of the session."""
    transcripts = sorted((installed.home / ".claude" / "projects").rglob("*.jsonl"), key=lambda p: p.stat().st_mtime)
    session_id = next(p.stem for p in transcripts if "subagents" not in p.parts
                      and "deployed-build-4711" in p.read_text())
    with MockAnthropic() as mock:
        debug = installed.logs / "compact.debug.log"
        result = installed.run(mock, ["-p", "/compact", "--resume", session_id, "--debug-file", debug])
        compact_text = mock.all_text()
    assert result.returncode == 0, f"/compact failed:\n{result.stdout}\n{result.stderr}"
    hooks = assert_hooks_clean(debug, ("PreCompact", "SessionStart"))
    assert any(h["event"] == "SessionStart" and "compact" in json.dumps(h) for h in hooks), hooks
    assert "keep these facts from this session" in compact_text, "PreCompact output did not reach the summarizer"
    assert "--canary" in compact_text

    with MockAnthropic() as mock:
        debug = installed.logs / "after-compact.debug.log"
        result = installed.run(mock, ["-p", SESSION_TWO_PROMPT, "--resume", session_id, "--debug-file", debug])
        after_text = mock.all_text()
    assert result.returncode == 0, f"resume failed:\n{result.stdout}\n{result.stderr}"
    blocks = MEMORY_BLOCK_RE.findall(after_text)
    assert any("re-offered after compaction" in b and "--canary" in b for b in blocks), blocks


def turn_with_tools(marker: str, tools: int):
    """A scripted turn: `tools` Bash calls (one of them failing), then a closing answer naming `marker`."""
    commands = [f"echo {marker}-{i}" for i in range(tools - 1)] + [f"false && echo {marker}-failed"]

    def script(body):
        done = tool_results_in_turn(body)
        if done < len(commands):
            return ToolUse(name="Bash", input={"command": commands[done], "description": "Run a step"})
        return Text(f"All {tools} steps of {marker} ran; the closing answer of {marker}.")

    return script


def blocking_ms(debug: Path) -> tuple[int, int]:
    """(recall's hook time on Claude Code's critical path in the session's turn, the UserPromptSubmit hook's alone),
    from the real CLI's debug log: hooks moved to the background cost the turn nothing."""
    hooks = [h for h in recall_hooks(debug) if h["event"] in ("UserPromptSubmit", "PreToolUse", "PostToolUse",
                                                              "PostToolUseFailure", "Stop", "SubagentStop")]
    waited = sum(h["duration_ms"] or 0 for h in hooks if h["outcome"] != "background")
    prompt = sum(h["duration_ms"] or 0 for h in hooks if h["event"] == "UserPromptSubmit")
    return waited, prompt


def hook_processes(data: Path) -> list[int]:
    """recall's hook processes still running for this data dir (the worker aside)."""
    found = []
    for pid in processes_mentioning(str(data)):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as handle:
                command = handle.read()
        except OSError:
            continue
        if b"hooks/hook.py" in command or b"hooks/run" in command:
            found.append(pid)
    return found


def test_async_hooks_lose_nothing_when_the_session_ends(installed):
    """PostToolUse and Stop are async (Claude Code does not wait for them, and kills those still
    running when `claude -p` exits): with 12 tool calls, in a new session and in a resumed one, every tool call and
    the closing answer land exactly once."""
    from conftest import stored

    sessions = []
    for name, tools, resume in (("asyncprobe", 12, None), ("resumedprobe", 10, "first")):
        with MockAnthropic(script=turn_with_tools(name, tools)) as mock:
            debug = installed.logs / f"{name}.debug.log"
            args = ["-p", f"Run the {name} steps.", "--debug-file", debug, "--allowedTools", "Bash(echo:*)",
                    "--allowedTools", "Bash(false:*)"]
            if resume:
                args += ["--resume", sessions[0]]
            result = installed.run(mock, args)
        assert result.returncode == 0, f"claude -p failed:\n{result.stdout}\n{result.stderr}"
        hooks = assert_hooks_clean(debug, ("UserPromptSubmit", "PostToolUse", "Stop", "SessionEnd"))
        assert any(h["outcome"] == "background" for h in hooks if h["event"] in ("PostToolUse", "Stop")), hooks
        waited, prompt = blocking_ms(debug)
        print(f"{name}: recall hooks on the critical path {waited} ms, UserPromptSubmit alone {prompt} ms")

        # Hooks that outlived claude (SIGTERM ignored) finish their few milliseconds.
        assert wait_for(lambda: not hook_processes(installed.data), 10), hook_processes(installed.data)
        stop_worker(installed.data)
        recall = stored(installed.data)
        try:
            mine = recall.select(match=name)
            tools_seen = [m for m in mine if m.kind in ("tool", "error")]
            for i in range(tools - 1):
                assert sum(f"echo {name}-{i}`" in m.text for m in tools_seen) == 1, [m.text for m in tools_seen]
            assert sum(f"{name}-failed" in m.text for m in tools_seen) == 1, [m.text for m in tools_seen]
            answers = [m for m in mine if m.kind == "exchange" and f"the closing answer of {name}" in m.text]
            assert len(answers) == 1, [(m.kind, m.text[:80]) for m in mine]
            sessions.append(answers[0].session_id)
        finally:
            recall.close()
    assert sessions[1] == sessions[0]  # --resume continued the same session


PITFALL = "never edit it by hand"
FAILING = "python3 -c \"import sys; sys.exit('SettingsError: missing key wattle.speed in settings/app.toml')\""
FIX = "adding wattle.speed = 3 to settings/app.toml"


def scripted_turn(calls: list[tuple[str, dict]], answer: str):
    """A scripted turn: these tool calls in order, then `answer`."""
    def script(body):
        done = tool_results_in_turn(body)
        if done < len(calls):
            name, tool_input = calls[done]
            return ToolUse(name=name, input=tool_input)
        return Text(answer)

    return script


def test_before_an_edit_the_pitfall_and_after_a_known_error_the_fix_reach_the_model(installed):
    """Issue 4.4 with the real CLI: a session learns that a file is generated and meets an error it fixes; a later
    session's Edit of that file gets the pitfall before the edit (PreToolUse), and the same error, met again, gets the
    fix (PostToolUseFailure): the model's next request carries each."""
    generated = installed.project / "src" / "gen" / "schema.ts"
    generated.parent.mkdir(parents=True, exist_ok=True)
    generated.write_text("// generated by scripts/gen.py\nexport const VERSION = 1;\n")
    learn = scripted_turn(
        [("Read", {"file_path": str(generated)}), ("Bash", {"command": FAILING, "description": "Run the settings check"})],
        f"src/gen/schema.ts is generated from schema.yaml by scripts/gen.py, so {PITFALL}; change schema.yaml and "
        f"run `python3 scripts/gen.py` instead. The settings check failed with SettingsError; it is fixed by {FIX}.")
    with MockAnthropic(script=learn) as mock:
        debug = installed.logs / "actions-1.debug.log"
        result = installed.run(mock, ["-p", "Look at the schema file and run the settings check.", "--debug-file", debug,
                                      "--allowedTools", "Read", "--allowedTools", "Bash(python3:*)"])
    assert result.returncode == 0, f"claude -p failed:\n{result.stdout}\n{result.stderr}"
    wait_until_embedded(installed.data, timeout=120)
    # No SessionStart brief this time: the brief would show session 1 in full, and what a session has seen is not
    # injected again; the pitfall must come from PreToolUse.
    config = installed.data / "config.json"
    config.write_text(json.dumps({"tiers": {"hot_size": 0}}))
    stop_worker(installed.data)

    act = scripted_turn(
        [("Read", {"file_path": str(generated)}),
         ("Edit", {"file_path": str(generated), "old_string": "VERSION = 1", "new_string": "VERSION = 2"}),
         ("Bash", {"command": FAILING, "description": "Run the settings check"})],
        "Done.")
    with MockAnthropic(script=act) as mock:
        debug = installed.logs / "actions-2.debug.log"
        result = installed.run(mock, ["-p", "Bump the schema version to 2, then run the settings check.",
                                      "--debug-file", debug, "--allowedTools", "Read", "--allowedTools", "Edit",
                                      "--allowedTools", "Bash(python3:*)"])
        requests = mock.main_requests
    config.unlink()
    assert result.returncode == 0, f"claude -p failed:\n{result.stdout}\n{result.stderr}"
    hooks = assert_hooks_clean(debug, ("UserPromptSubmit", "PreToolUse", "PostToolUseFailure"))
    assert not any(h["event"] in ("PreToolUse", "PostToolUseFailure") and h["outcome"] == "background" for h in hooks)
    assert len(requests) >= 4, [tool_results_in_turn(r) for r in requests]
    first_tool = next(i for i, r in enumerate(requests) if tool_results_in_turn(r) == 1)  # after the Read
    assert PITFALL not in json.dumps(requests[first_tool - 1])  # not known to the model before the tool call
    after_read = json.dumps(requests[first_tool])
    assert PITFALL in after_read and "Before you read" in after_read, after_read[-3000:]
    after_failure = json.dumps(next(r for r in requests if tool_results_in_turn(r) == 3))
    assert FIX in after_failure and "was met before" in after_failure, after_failure[-3000:]
    stop_worker(installed.data)


def test_uninstall_with_keep_data_leaves_no_recall_process(claude, tmp_path):
    """A user's first hour, its last step: `claude plugin uninstall recall@recall --keep-data` after a session. The
    memories stay; no recall process does (the worker stayed for its idle timeout, 194 MB)."""
    inst = Installed(claude, tmp_path)
    try:
        with MockAnthropic() as mock:
            for args in (["plugin", "marketplace", "add", str(ROOT)], ["plugin", "install", "recall@recall"]):
                done = inst.run(mock, args, timeout=120)
                assert done.returncode == 0, f"{args} failed:\n{done.stdout}\n{done.stderr}"
            inst.session(mock, SESSION_ONE_PROMPT, "session")
            assert wait_for(lambda: processes_mentioning(str(inst.data)), timeout=30), "no worker ran"
            gone = inst.run(mock, ["plugin", "uninstall", "recall@recall", "--keep-data"], timeout=120)
            assert gone.returncode == 0, f"uninstall failed:\n{gone.stdout}\n{gone.stderr}"
        assert wait_for(lambda: not processes_mentioning(str(inst.data)), timeout=30), \
            processes_mentioning(str(inst.data))
        assert (inst.data / "recall.db").exists()
    finally:
        stop_worker(inst.data)


def test_during_setup_the_recall_tools_are_there_and_say_so(claude, tmp_path):
    """No Python with recall's dependencies yet (the first-run setup, an upgrade's rebuild): Claude Code connects to
    recall's MCP server at once (a failed connection was cached for 15 minutes), lists its tools, and a call says
    recall is still setting up."""
    import subprocess

    inst = Installed(claude, tmp_path)
    bare = tmp_path / "bare"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(bare)], check=True)
    said: list[str] = []

    def script(body):
        names = [t.get("name", "") for t in body.get("tools", [])]
        search = next((n for n in names if n.startswith("mcp__") and "recall" in n and n.endswith("__search")), None)
        if search is None or tool_results_in_turn(body):
            said.append("tools: " + " ".join(names))
            return Text(DEFAULT_TEXT)
        return ToolUse(name=search, input={"query": "staging deploy"})

    try:
        with MockAnthropic(script=script) as mock:
            env = claude_env(inst.home, mock.url, extra={"RECALL_PYTHON": str(bare / "bin" / "python"),
                                                         "PATH": f"{bare / 'bin'}:/usr/bin:/bin",
                                                         "MCP_CONNECTION_NONBLOCKING": "0"})
            for args in (["plugin", "marketplace", "add", str(ROOT)], ["plugin", "install", "recall@recall"]):
                done = run_claude(inst.claude, args, env, cwd=inst.project, timeout=120)
                assert done.returncode == 0, f"{args} failed:\n{done.stdout}\n{done.stderr}"
            result = run_claude(inst.claude, ["-p", "What did we say about staging deploys?", "--allowedTools",
                                              "mcp__plugin_recall_recall__search"], env, cwd=inst.project, timeout=180)
            requests = mock.main_requests
        assert result.returncode == 0, f"claude -p failed:\n{result.stdout}\n{result.stderr}"
        results = json.dumps([block for r in requests for m in r.get("messages", []) if m.get("role") == "user"
                              and isinstance(m.get("content"), list) for block in m["content"]
                              if block.get("type") == "tool_result"])
        assert "still setting up" in results, (said, results[-2000:])
    finally:
        stop_worker(inst.data)
