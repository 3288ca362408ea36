"""`recall install codex` on a user's Codex files, without the Codex CLI (tests/e2e/test_codex_and_claude_code.py runs
the real one): the trust hash Codex computes, idempotence, the user's settings kept byte for byte, files refused."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import FIXTURES, ROOT

from memory_store.integrations import codex, codex_config

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
    assert config.startswith(USERS_CONFIG) and codex_config.BLOCK_START in config
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


def test_a_broken_codex_file_is_recalls_problem_only_where_recall_is_installed(codex_home):
    (codex_home / "hooks.json").write_text("{not json")
    assert codex.status(codex_home)["problem"] is None and not codex.status(codex_home)["installed"]
    (codex_home / "hooks.json").write_text(json.dumps(USERS_HOOKS))
    codex.install(codex_home)
    (codex_home / "hooks.json").write_text("{not json")
    found = codex.status(codex_home)
    assert found["installed"] and "not valid JSON" in found["problem"]


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
    config.write_text(text.replace(codex_config.BLOCK_END, written_by_codex.strip("\n") + "\n" + codex_config.BLOCK_END))

    codex.install(codex_home)
    again = config.read_text()
    assert 'trust_level = "trusted"' in again and f'stop:2:0"]\ntrusted_hash = "{their_hash}"' in again
    assert json.loads(hooks_file.read_text())["hooks"]["Stop"][2] == theirs  # recall's replaced in place
    codex.uninstall(codex_home)
    left = config.read_text()
    assert left.startswith(USERS_CONFIG) and codex_config.BLOCK_START not in left and "mcp_servers.recall" not in left
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
    assert b"\r\n" + codex_config.BLOCK_START.encode() + b"\r\n" in written
    assert written.count(b"\n") == written.count(b"\r\n")  # every line ends as the user's do
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
