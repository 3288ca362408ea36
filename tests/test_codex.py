"""recall in OpenAI's Codex CLI, without the CLI (tests/e2e/test_codex_and_claude_code.py runs the real one):
`recall install codex` on a user's files, Codex's own hook payloads (captured from codex 0.171.0) through the commands
it installs, its tool calls in Claude Code's terms, and `recall import` of a Codex session file."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from conftest import FIXTURES, ROOT, stop_worker, stored

from memory_store.core.capture.tool_calls import normalized
from memory_store.integrations import codex

CODEX_FIXTURES = FIXTURES / "codex"
ROLLOUT = next(CODEX_FIXTURES.glob("rollout-*.jsonl"))
USERS_CONFIG = """# my Codex settings
model = "gpt-5"   # the one I pay for

[features]
web_search_request = true

[mcp_servers.github]
command = "gh-mcp"
args = ["--stdio"]
[profiles.fast]
model = "o4-mini"

[hooks.state."/elsewhere/hooks.json:stop:0:0"]
enabled = false
"""
USERS_HOOKS = {"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}]}}


def recall_cli(*args: str, home: Path | None = None) -> subprocess.CompletedProcess:
    env_home = ["--home", str(home)] if home else []
    return subprocess.run([sys.executable, "-m", "memory_store.shells.entry", *args, *env_home], capture_output=True,
                          text=True, timeout=120, cwd=ROOT)


@pytest.fixture
def codex_home(tmp_path) -> Path:
    folder = tmp_path / "dot-codex"
    folder.mkdir()
    (folder / "config.toml").write_text(USERS_CONFIG)
    (folder / "hooks.json").write_text(json.dumps(USERS_HOOKS, indent=4))
    return folder


def test_the_trust_hash_is_the_one_codex_computes():
    """sha256 values that codex 0.171.0 reported (`hooks/list` currentHash) for these groups."""
    group = {"matcher": "*", "hooks": [{"type": "command", "command": "/tmp/cx/dump.sh PreToolUse", "timeout": 10}]}
    assert codex.trusted_hash("PreToolUse", group) == \
        "sha256:7ee544776298cc8a52981015c654599ecb18a5356f587a8734c7ccdbe78e8bb3"
    ended = {"hooks": [{"type": "command", "command": "/tmp/cx/dump.sh SessionEnd", "timeout": 3}]}
    assert codex.trusted_hash("SessionEnd", ended) == \
        "sha256:b2ad2e98fd6ff42bcb3e291aac57bdde15a5a095fc69d4cd637619a656e8ec71"


def test_install_is_idempotent_keeps_the_users_settings_and_uninstall_restores_them(codex_home):
    first = codex.install(codex_home)
    config, hooks = (codex_home / "config.toml").read_text(), json.loads((codex_home / "hooks.json").read_text())
    assert config.startswith(USERS_CONFIG) and codex.BLOCK_START in config
    assert hooks["hooks"]["Stop"][0] == USERS_HOOKS["hooks"]["Stop"][0]  # the user's first, recall's after
    assert [codex.is_recall_group(g) for g in hooks["hooks"]["Stop"]] == [False, True]
    assert sorted(first.hooks) == sorted(event for event, _, _ in codex.HOOKS)
    assert f"{codex_home}/hooks.json:stop:1:0" in first.trusted  # its place after the user's own group

    codex.install(codex_home)
    assert (codex_home / "config.toml").read_text() == config
    assert json.loads((codex_home / "hooks.json").read_text()) == hooks
    found = codex.status(codex_home)
    assert found["installed"] and found["hooks"] == found["trusted"] == found["expected"] and found["mcp_server"]

    gone = codex.uninstall(codex_home)
    assert (codex_home / "config.toml").read_text() == USERS_CONFIG  # byte for byte
    assert json.loads((codex_home / "hooks.json").read_text()) == USERS_HOOKS
    assert gone.mcp_server and len(gone.trusted) == len(codex.HOOKS)
    assert not codex.status(codex_home)["installed"]
    assert codex.uninstall(codex_home).hooks == []  # nothing left to take out


def test_a_codex_home_without_files_gets_them_and_loses_them_again(tmp_path):
    folder = tmp_path / "new-codex"
    codex.install(folder)
    assert {p.name for p in folder.iterdir()} == {"config.toml", "hooks.json"}
    codex.uninstall(folder)
    assert list(folder.iterdir()) == []


def test_hooks_whose_launcher_is_gone_are_reported(codex_home, tmp_path):
    """A plugin update can remove the folder the hooks were installed from: status says so, and what to run."""
    gone = tmp_path / "old-plugin" / "hooks" / "run"
    codex.install(codex_home, codex.Launcher(hook=[str(gone)], mcp=[str(tmp_path / "old-plugin" / "bin" / "recall"),
                                                                       "mcp"]))
    found = codex.status(codex_home)
    assert found["installed"] and "recall install codex" in found["problem"] and str(gone) in found["problem"]
    codex.install(codex_home)
    assert codex.status(codex_home)["problem"] is None


def test_a_hook_the_user_changed_is_no_longer_counted_trusted(codex_home):
    codex.install(codex_home)
    hooks = json.loads((codex_home / "hooks.json").read_text())
    hooks["hooks"]["PostToolUse"][0]["hooks"][0]["timeout"] = 60
    (codex_home / "hooks.json").write_text(json.dumps(hooks))
    found = codex.status(codex_home)
    assert found["hooks"] == 6 and found["trusted"] == 5


def test_tables_codex_writes_into_recalls_block_and_the_users_own_hooks_keep_their_trust(codex_home):
    """Codex adds the tables it writes (a project's trust, a hook the user trusts) at the end of config.toml, inside
    recall's block: re-installing and uninstalling keep them, and a group of the user's after recall's keeps its
    trust entry when recall's group goes (it moves up a place, its entry with it)."""
    codex.install(codex_home)
    hooks_file = codex_home / "hooks.json"
    hooks = json.loads(hooks_file.read_text())
    theirs = {"hooks": [{"type": "command", "command": "say done", "timeout": 5}]}
    hooks["hooks"]["Stop"].append(theirs)  # after recall's: Stop is [user's, recall's, theirs]
    hooks_file.write_text(json.dumps(hooks))
    their_hash = codex.trusted_hash("Stop", theirs)
    written_by_codex = (f'\n[projects."/home/dev/app"]\ntrust_level = "trusted"\n\n'
                        f'[hooks.state."{codex_home}/hooks.json:stop:2:0"]\ntrusted_hash = "{their_hash}"\n')
    config = codex_home / "config.toml"
    text = config.read_text()
    config.write_text(text.replace(codex.BLOCK_END, written_by_codex.strip("\n") + "\n" + codex.BLOCK_END))

    codex.install(codex_home)
    again = config.read_text()
    assert 'trust_level = "trusted"' in again and f'stop:2:0"]\ntrusted_hash = "{their_hash}"' in again
    assert json.loads(hooks_file.read_text())["hooks"]["Stop"][2] == theirs  # recall's replaced in place
    codex.uninstall(codex_home)
    left = config.read_text()
    assert left.startswith(USERS_CONFIG) and codex.BLOCK_START not in left and "mcp_servers.recall" not in left
    assert 'trust_level = "trusted"' in left
    assert f'[hooks.state."{codex_home}/hooks.json:stop:1:0"]\ntrusted_hash = "{their_hash}"' in left  # moved up
    assert json.loads(hooks_file.read_text())["hooks"]["Stop"] == [USERS_HOOKS["hooks"]["Stop"][0], theirs]


def test_a_linked_codex_home_and_config_and_crlf_lines_are_kept(tmp_path):
    real = tmp_path / "dotfiles" / "codex"
    real.mkdir(parents=True)
    (real / "my-config.toml").write_bytes(USERS_CONFIG.replace("\n", "\r\n").encode())
    link = tmp_path / "dot-codex"
    link.symlink_to(real)
    (real / "config.toml").symlink_to(real / "my-config.toml")
    done = codex.install(link)
    # Codex resolves $CODEX_HOME: both spellings of hooks.json are trusted.
    assert f"{link}/hooks.json:stop:0:0" in done.trusted and f"{real}/hooks.json:stop:0:0" in done.trusted
    assert (real / "config.toml").is_symlink()
    written = (real / "my-config.toml").read_bytes()
    assert b"\r\n" + codex.BLOCK_START.encode() + b"\r\n" in written and written.count(b"\n") == written.count(b"\r\n")
    assert codex.status(link)["trusted"] == 6
    codex.uninstall(link)
    assert (real / "my-config.toml").read_bytes() == USERS_CONFIG.replace("\n", "\r\n").encode()
    assert (real / "config.toml").is_symlink()


@pytest.mark.parametrize("problem", ["server", "toml", "json", "state", "not-a-list", "inline"])
def test_files_recall_cannot_use_are_refused_and_left_as_they_are(codex_home, problem):
    config, hooks = codex_home / "config.toml", codex_home / "hooks.json"
    if problem == "server":
        config.write_text(USERS_CONFIG + '\n[mcp_servers.recall]\ncommand = "their-recall"\n')
    elif problem == "toml":
        config.write_text(USERS_CONFIG + "\nmodel = [broken\n")
    elif problem == "json":
        hooks.write_text('{"hooks": [')
    elif problem == "state":
        config.write_text(USERS_CONFIG + f'\n[hooks.state."{codex_home}/hooks.json:session_start:0:0"]\nenabled = false\n')
    elif problem == "not-a-list":
        hooks.write_text('{"hooks": {"Stop": "notify-send done"}}')
    else:
        config.write_text('mcp_servers = { github = { command = "gh-mcp" } }\n')
    before = config.read_bytes(), hooks.read_bytes()
    result = recall_cli("install", "codex", "--codex-home", str(codex_home))
    assert result.returncode == 1 and "nothing was changed" in result.stderr, result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert (config.read_bytes(), hooks.read_bytes()) == before


def test_the_cli_says_what_it_wrote_and_json_gives_the_same(codex_home, tmp_path):
    said = recall_cli("install", "codex", "--codex-home", str(codex_home))
    assert said.returncode == 0, said.stderr
    assert "hooks.json" in said.stdout and "config.toml" in said.stdout and "--uninstall" in said.stdout
    data = json.loads(recall_cli("install", "codex", "--codex-home", str(codex_home), "--json").stdout)
    assert data["codex_home"] == str(codex_home) and len(data["trusted"]) == 6
    out = recall_cli("install", "codex", "--codex-home", str(codex_home), "--uninstall")
    assert out.returncode == 0 and "took recall out of Codex" in out.stdout
    assert (codex_home / "config.toml").read_text() == USERS_CONFIG


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


def test_codex_payloads_are_captured_as_codex_and_answered_in_its_form(tmp_path, codex_home):
    data, repo = tmp_path / "data", tmp_path / "widgets"
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


def test_a_compressed_codex_session_file_imports_the_same(tmp_path):
    zstandard = pytest.importorskip("zstandard")
    folder = tmp_path / "sessions" / "2026" / "11" / "28"
    folder.mkdir(parents=True)
    (folder / (ROLLOUT.name + ".zst")).write_bytes(zstandard.ZstdCompressor().compress(ROLLOUT.read_bytes()))
    shutil.copy(ROLLOUT, tmp_path / "plain.jsonl")
    packed = import_into(tmp_path / "a", tmp_path / "sessions")
    plain = import_into(tmp_path / "b", tmp_path / "plain.jsonl")
    assert packed["files"] == 1 and packed["new_memories"] == plain["new_memories"] > 0
