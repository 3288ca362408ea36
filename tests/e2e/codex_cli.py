"""Helpers to install and run OpenAI's real Codex CLI offline for end-to-end tests.

    codex = ensure_codex()                      # npm install @openai/codex@0.171.0 into a cache, once
    write_user_config(codex_home, mock.url)     # a user's config.toml: its provider is the loopback mock
    result = run_codex(codex, ["exec", ...], codex_env(home, codex_home), cwd=project)
    entries = hooks_list(codex, env, cwd)       # what Codex itself sees: `codex app-server`, hooks/list

Pair with ``mock_openai.MockResponses`` (a loopback Responses API).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from claude_cli import _file_lock, run_claude

CODEX_VERSION = "0.171.0"
CODEX_PACKAGE = "@openai/codex"
API_KEY_ENV = "MOCK_OPENAI_API_KEY"


class CodexUnavailable(RuntimeError):
    """The Codex CLI cannot be provided (node/npm missing, install failed)."""


def default_cache_dir() -> Path:
    env = os.environ.get("RECALL_CODEX_CACHE")
    if env:
        return Path(env).expanduser()
    return Path.home() / ".cache" / "recall-tests" / f"codex-{CODEX_VERSION}"


def _reports_version(codex: Path) -> bool:
    if not codex.exists():
        return False
    try:
        out = subprocess.run([str(codex), "--version"], capture_output=True, text=True, timeout=60,
                             stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError):
        return False
    return out.returncode == 0 and CODEX_VERSION in out.stdout


def ensure_codex(cache_dir: Path | None = None) -> Path:
    """Install the pinned Codex CLI once (npm) and return the ``codex`` binary; safe from parallel processes."""
    cache_dir = Path(cache_dir).expanduser() if cache_dir else default_cache_dir()
    codex = cache_dir / "node_modules" / ".bin" / "codex"
    if _reports_version(codex):
        return codex
    npm = shutil.which("npm")
    if not shutil.which("node") or not npm:
        raise CodexUnavailable(f"cannot install {CODEX_PACKAGE}@{CODEX_VERSION}: node or npm not found on PATH")
    cache_dir.mkdir(parents=True, exist_ok=True)
    with _file_lock(cache_dir.parent / f".{cache_dir.name}.lock"):
        if _reports_version(codex):
            return codex
        shutil.rmtree(cache_dir / "node_modules", ignore_errors=True)
        (cache_dir / "package.json").write_text('{"name": "recall-tests-codex", "private": true}\n')
        try:
            proc = subprocess.run([npm, "install", "--prefix", str(cache_dir), "--no-audit", "--no-fund", "--no-save",
                                   "--loglevel=error", f"{CODEX_PACKAGE}@{CODEX_VERSION}"],
                                  cwd=str(cache_dir), capture_output=True, text=True, timeout=900,
                                  stdin=subprocess.DEVNULL)
        except (OSError, subprocess.SubprocessError) as exc:
            raise CodexUnavailable(f"npm install failed to run: {exc}") from exc
        if proc.returncode != 0 or not _reports_version(codex):
            raise CodexUnavailable(f"npm install {CODEX_PACKAGE}@{CODEX_VERSION} failed (exit {proc.returncode}):\n"
                                   f"{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}")
    return codex


def user_config(mock_url: str) -> str:
    """A user's config.toml before recall: a provider (the mock), features, an MCP server of theirs, comments."""
    return f"""# my Codex settings
model = "gpt-mock"   # the mock's only model
model_provider = "mock"
approval_policy = "never"

[features]
web_search_request = false

[model_providers.mock]
name = "Mock Responses API"
base_url = "{mock_url}"
wire_api = "responses"
env_key = "{API_KEY_ENV}"

[mcp_servers.docs]
command = "docs-mcp"
args = ["--stdio"]
enabled = false
"""


def codex_env(home: Path, codex_home: Path, extra: dict | None = None) -> dict:
    """An offline, non-interactive environment: a temporary HOME, CODEX_HOME, nothing of the developer's own."""
    keep = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TMPDIR", "TZ", "TERM", "MOCK_OPENAI_DEBUG")
    env = {k: os.environ[k] for k in keep if k in os.environ}
    env.setdefault("PATH", os.defpath)
    env.update({"HOME": str(home), "CODEX_HOME": str(codex_home), API_KEY_ENV: "sk-mock-for-tests",
                "XDG_CONFIG_HOME": str(home / ".config"), "XDG_CACHE_HOME": str(home / ".cache"),
                "XDG_DATA_HOME": str(home / ".local" / "share"), "XDG_STATE_HOME": str(home / ".local" / "state"),
                "RECALL_PYTHON": sys.executable, "NO_COLOR": "1"})
    if extra:
        env.update({k: str(v) for k, v in extra.items()})
    return env


def run_codex(codex: Path, args: list, env: dict, cwd: Path, timeout: float = 180) -> subprocess.CompletedProcess:
    """Run ``codex <args>`` in its own process group (killed whole on a timeout)."""
    return run_claude(codex, args, env, cwd, timeout)


def exec_args(prompt: str) -> list[str]:
    """`codex exec` as a script runs it: no git check, sandbox off (this test machine has no user namespaces)."""
    return ["exec", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox", prompt]


def hooks_list(codex: Path, env: dict, cwd: Path, timeout: float = 60) -> dict:
    """`hooks/list` of `codex app-server` (JSON-RPC over stdio) for `cwd`: the hooks Codex discovered, with their
    key, trust status and current hash, and its warnings."""
    with subprocess.Popen([str(codex), "app-server"], env=env, cwd=str(cwd), stdin=subprocess.PIPE,
                          stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                          start_new_session=True) as proc:
        try:
            assert proc.stdin is not None and proc.stdout is not None
            requests = [{"id": 0, "method": "initialize", "params": {"clientInfo": {"name": "recall-tests",
                                                                                   "version": "1"}}},
                        {"method": "initialized"},
                        {"id": 1, "method": "hooks/list", "params": {"cwds": [str(cwd)]}}]
            proc.stdin.write("".join(json.dumps(r) + "\n" for r in requests))
            proc.stdin.flush()
            for line in proc.stdout:
                message = json.loads(line)
                if message.get("id") == 1:
                    if "error" in message:
                        raise AssertionError(f"hooks/list failed: {message['error']}")
                    return message["result"]["data"][0]
            raise AssertionError("codex app-server closed without answering hooks/list")
        finally:
            proc.stdin.close() if proc.stdin else None
            try:
                proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, 9)
                proc.wait()


def hook_lines(stderr: str) -> list[tuple[str, str]]:
    """(event, outcome) of each `hook: <Event> Completed|Failed|...` line plain `codex exec` prints on stderr."""
    found = []
    for line in stderr.splitlines():
        parts = line.strip().split()
        if len(parts) == 3 and parts[0] == "hook:":
            found.append((parts[1], parts[2]))
    return found
