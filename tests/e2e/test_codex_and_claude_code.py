"""End-to-end: OpenAI's real Codex CLI (0.171.0, from npm) and the real Claude Code CLI share one recall memory.

One temporary HOME holds both agents, as on a developer's machine: Claude Code with recall's plugin (installed from
the marketplace, as users install it) and Codex with `recall install codex`. Its CODEX_HOME starts with a user's own
config.toml (a model provider that is a loopback mock of the Responses API, features, an MCP server of theirs).
The repository is cloned twice (two folders, one `origin`): Claude Code works in one, Codex in the other, and what
one learns reaches the other's model request. Both mocks record every request.

Without node/npm these tests skip, unless RECALL_REQUIRE_E2E=1 (set by .ci/run): then they fail.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from claude_cli import ClaudeUnavailable, claude_env, ensure_claude, run_claude
from codex_cli import (
    CodexUnavailable,
    codex_env,
    ensure_codex,
    exec_args,
    hook_lines,
    hooks_list,
    run_codex,
    user_config,
)
from conftest import ROOT, processes_mentioning, stop_worker, stored, wait_for, wait_until_embedded
from mock_anthropic import MockAnthropic
from mock_openai import MockResponses, Shell, Text, default_script
from test_claude_code import MEMORY_BLOCK_RE, PITFALL, assert_hooks_clean, require_e2e, scripted_turn

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

RECALL = [sys.executable, "-m", "memory_store.shells.entry"]
ORIGIN = "git@github.com:acme/tidepool.git"
CODEX_HOOKS = ("SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop")
FROM_CLAUDE = "the nightly export job must run with --batch-size 250"
FROM_CODEX = "the billing service reads its rate limit from config/limits.toml, currently 40 requests per second"


def unavailable(exc: Exception) -> None:
    if require_e2e():
        pytest.fail(f"RECALL_REQUIRE_E2E=1 but a CLI is unavailable: {exc}", pytrace=False)
    pytest.skip(f"CLI unavailable (install node and npm to run the e2e tests): {exc}")


class Machine:
    """A developer's machine: one HOME, Claude Code with recall's plugin, Codex with recall installed, two clones."""

    def __init__(self, base: Path, claude: Path, codex: Path):
        self.claude, self.codex = claude, codex
        self.home = base / "home"
        self.codex_home = self.home / ".codex"
        self.claude_clone = base / "work" / "tidepool"
        self.codex_clone = base / "elsewhere" / "tidepool-2"
        self.logs = base / "logs"
        for path in (self.codex_home, self.claude_clone, self.codex_clone, self.logs):
            path.mkdir(parents=True)
        for clone in (self.claude_clone, self.codex_clone):
            subprocess.run(["git", "init", "-q"], cwd=clone, check=True)
            subprocess.run(["git", "remote", "add", "origin", ORIGIN], cwd=clone, check=True)
        self.data = self.home / ".claude" / "plugins" / "data" / "recall-recall"  # Claude Code's plugin data dir
        self.runs: list[subprocess.CompletedProcess] = []

    def recall(self, *args: str) -> subprocess.CompletedProcess:
        env = {"HOME": str(self.home), "CODEX_HOME": str(self.codex_home), "PATH": "/usr/bin:/bin"}
        return subprocess.run([*RECALL, *args], capture_output=True, text=True, env=env, cwd=ROOT, timeout=120)

    def codex_session(self, mock: MockResponses, prompt: str) -> subprocess.CompletedProcess:
        result = run_codex(self.codex, exec_args(prompt), codex_env(self.home, self.codex_home), self.codex_clone)
        assert result.returncode == 0, f"codex exec failed ({result.returncode}):\n{result.stdout}\n{result.stderr}"
        self.runs.append(result)
        return result

    def claude_session(self, mock: MockAnthropic, prompt: str, name: str, tools: str = "Bash(echo:*)") -> Path:
        debug = self.logs / f"{name}.debug.log"
        env = claude_env(self.home, mock.url, extra={"RECALL_PYTHON": sys.executable})
        result = run_claude(self.claude, ["-p", prompt, "--debug-file", debug, "--allowedTools", tools], env,
                            cwd=self.claude_clone, timeout=180)
        assert result.returncode == 0, f"claude -p failed:\n{result.stdout}\n{result.stderr}"
        return debug


@pytest.fixture(scope="module")
def machine(tmp_path_factory):
    try:
        claude, codex = ensure_claude(), ensure_codex()
    except (ClaudeUnavailable, CodexUnavailable) as exc:
        unavailable(exc)
    box = Machine(tmp_path_factory.mktemp("codex-e2e"), claude, codex)
    try:
        with MockAnthropic() as mock:
            env = claude_env(box.home, mock.url)
            for args in (["plugin", "marketplace", "add", str(ROOT)], ["plugin", "install", "recall@recall"]):
                done = run_claude(claude, args, env, cwd=box.home, timeout=120)
                assert done.returncode == 0, f"{args} failed:\n{done.stdout}\n{done.stderr}"
        yield box
    finally:
        stop_worker(box.data)


@pytest.fixture(scope="module")
def mock():
    with MockResponses() as responses:
        yield responses


def test_install_is_idempotent_trusted_by_codex_and_uninstall_leaves_the_users_config(machine, mock):
    config = machine.codex_home / "config.toml"
    users = user_config(mock.url)
    config.write_text(users)
    first = machine.recall("install", "codex")
    assert first.returncode == 0, first.stderr
    after_one = config.read_text(), (machine.codex_home / "hooks.json").read_text()
    again = machine.recall("install", "codex", "--json")
    assert again.returncode == 0, again.stderr
    assert (config.read_text(), (machine.codex_home / "hooks.json").read_text()) == after_one  # idempotent
    assert config.read_text().startswith(users)  # every setting of the user's, byte for byte, then recall's block

    env = codex_env(machine.home, machine.codex_home)
    seen = hooks_list(machine.codex, env, machine.codex_clone)
    ours = [h for h in seen["hooks"] if "hooks/run" in (h.get("command") or "")]
    assert sorted(h["eventName"] for h in ours) == sorted(
        ["sessionStart", "userPromptSubmit", "preToolUse", "postToolUse", "stop", "sessionEnd"]), seen
    assert all(h["enabled"] and h["trustStatus"] == "trusted" for h in ours), ours
    assert not seen["warnings"] and not seen["errors"], seen
    servers = run_codex(machine.codex, ["mcp", "list", "--json"], env, machine.codex_clone, timeout=60)
    names = {server["name"]: server for server in json.loads(servers.stdout)}
    assert set(names) == {"docs", "recall"} and names["recall"]["enabled"] and not names["docs"]["enabled"]
    status = json.loads(machine.recall("status", "--json").stdout)["codex"]
    assert status["installed"] and status["trusted"] == status["expected"] == 6 and status["mcp_server"], status

    removed = machine.recall("install", "codex", "--uninstall")
    assert removed.returncode == 0, removed.stderr
    assert config.read_text() == users  # exactly the user's config
    assert not (machine.codex_home / "hooks.json").exists()  # it held recall's hooks only
    assert not [h for h in hooks_list(machine.codex, env, machine.codex_clone)["hooks"]
                if "hooks/run" in (h.get("command") or "")]
    assert machine.recall("install", "codex").returncode == 0  # installed again for the sessions below


def test_a_fact_learned_in_claude_code_reaches_a_codex_session_of_another_clone(machine, mock):
    with MockAnthropic() as claude_mock:
        debug = machine.claude_session(claude_mock, f"Remember this: {FROM_CLAUDE}.\nPLEASE_RUN_TOOL: echo export-ok",
                                       "claude-teaches")
    assert_hooks_clean(debug, ("SessionStart", "UserPromptSubmit", "PostToolUse", "Stop"))
    wait_until_embedded(machine.data, timeout=120)

    mock.requests.clear()
    machine.codex_session(mock, "Which batch size does the nightly export job need?")
    developer = "\n".join(mock.developer_texts())
    blocks = MEMORY_BLOCK_RE.findall(developer)
    assert any("--batch-size 250" in block for block in blocks), developer[-3000:]
    print("Codex request, developer message:", json.dumps(next(b for b in blocks if "--batch-size 250" in b)))
    session = machine.runs[-1]
    assert any(t.get("name") == "mcp__recall" for t in mock.requests[-1].get("tools", [])), \
        f"no recall MCP tools:\n{session.stderr[-3000:]}"


def test_a_fact_told_in_codex_is_kept_as_codex_and_injected_once_into_a_later_codex_session(machine, mock):
    mock.requests.clear()
    first = machine.codex_session(mock, f"Remember this: {FROM_CODEX}.\nPLEASE_RUN_TOOL: echo limits-checked")
    assert ("PostToolUse", "Completed") in hook_lines(first.stderr)
    wait_until_embedded(machine.data, timeout=120)
    found = json.loads(machine.recall("search", "billing rate limit requests per second", "--json",
                                      "--project", str(machine.claude_clone)).stdout)  # the other clone: one project
    hits = [hit for hit in found if "40 requests per second" in hit["text"]]
    assert hits and all(hit["client"] == "codex" for hit in hits), found
    recall = stored(machine.data)
    try:
        assert any(m.client == "codex" and "limits-checked" in m.text for m in recall.select(match="limits-checked"))
    finally:
        recall.close()

    mock.requests.clear()
    machine.codex_session(mock, "What rate limit does the billing service allow?")
    shown = [block for block in MEMORY_BLOCK_RE.findall("\n".join(mock.developer_texts()))
             if "40 requests per second" in block]
    assert len(shown) == 1, shown  # once: the brief or the prompt's recall, not both


def test_a_fact_told_in_codex_reaches_a_claude_code_session_of_the_other_clone(machine, mock):
    with MockAnthropic() as claude_mock:
        debug = machine.claude_session(claude_mock, "What rate limit does the billing service allow?", "claude-learns")
        text = claude_mock.all_text()
    assert_hooks_clean(debug, ("SessionStart", "UserPromptSubmit", "Stop"))
    blocks = MEMORY_BLOCK_RE.findall(text)
    assert any("40 requests per second" in block and "Codex" in block for block in blocks), blocks
    print("Claude Code request, recall's context:", json.dumps(next(b for b in blocks if "40 requests per second" in b)))


def test_before_a_codex_patch_the_pitfall_learnt_in_claude_code_reaches_the_model(machine, mock):
    """Issue 4.4's PreToolUse across agents: Claude Code learns that a file is generated; Codex, in the other clone,
    patches that file through its shell (`apply_patch <<'EOF'`), and its next request carries the pitfall."""
    generated = Path("src") / "gen" / "schema.ts"
    for clone in (machine.claude_clone, machine.codex_clone):
        (clone / generated).parent.mkdir(parents=True, exist_ok=True)
        (clone / generated).write_text("// generated by scripts/gen.py\nexport const VERSION = 1;\n")
    learn = scripted_turn([("Read", {"file_path": str(machine.claude_clone / generated)})],
                          f"src/gen/schema.ts is generated from schema.yaml by scripts/gen.py, so {PITFALL}; change "
                          "schema.yaml and run `python3 scripts/gen.py` instead.")
    with MockAnthropic(script=learn) as claude_mock:
        debug = machine.claude_session(claude_mock, "Look at the schema file.", "claude-pitfall", tools="Read")
    assert_hooks_clean(debug, ("PostToolUse", "Stop"))
    wait_until_embedded(machine.data, timeout=120)
    config = machine.data / "config.json"
    config.write_text(json.dumps({"tiers": {"hot_size": 0}}))  # no brief: the pitfall must come from PreToolUse
    patch = "*** Begin Patch\n*** Update File: src/gen/schema.ts\n@@\n-export const VERSION = 1;\n" \
            "+export const VERSION = 2;\n*** End Patch"

    def act(body):
        if not any(item.get("type") == "function_call" for item in body.get("input") or []):
            return Shell(f"apply_patch <<'EOF'\n{patch}\nEOF")
        return Text("Bumped.")

    mock.requests.clear()
    mock.script = act
    try:
        result = machine.codex_session(mock, "Bump the schema version to 2.")
    finally:
        mock.script = default_script
        config.unlink()
    assert ("PreToolUse", "Completed") in hook_lines(result.stderr)
    assert "VERSION = 2" in (machine.codex_clone / generated).read_text()
    assert len(mock.requests) == 2, len(mock.requests)
    assert PITFALL not in json.dumps(mock.requests[0])
    after = "\n".join(text for text in mock.developer_texts() if PITFALL in text)
    assert "Before you edit src/gen/schema.ts" in after, json.dumps(mock.requests[1])[-3000:]


def test_no_codex_hook_failed_and_nothing_is_left_running(machine, mock):
    assert len(machine.runs) >= 4
    for result in machine.runs:
        outcomes = hook_lines(result.stderr)
        assert {event for event, _ in outcomes} >= set(CODEX_HOOKS) - {"PreToolUse", "PostToolUse"}, outcomes
        assert all(outcome == "Completed" for _, outcome in outcomes), outcomes
        assert "hook" not in result.stderr.lower().replace("hook:", ""), result.stderr[-2000:]
    log = (machine.data / "logs" / "recall.log").read_text()
    codex_lines = [json.loads(line) for line in log.splitlines() if '"client":"codex"' in line]
    assert codex_lines and all(line["route"] == "worker" for line in codex_lines[2:]), codex_lines[:6]
    assert not any('"hook_failed"' in line for line in log.splitlines())
    stop_worker(machine.data)
    assert wait_for(lambda: not processes_mentioning(str(machine.home)), 10), processes_mentioning(str(machine.home))
