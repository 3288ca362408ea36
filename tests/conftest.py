"""Shared fixtures: a private data dir per test, the real hook commands, real payloads.

Every test gets its own RECALL_HOME (a real SQLite file) and RECALL_PYTHON pointing at this
interpreter, so hooks start workers that run this checkout's code. Workers started by a
test are stopped when it ends; a test that leaves one running fails.
"""

from __future__ import annotations

import copy
import json
import os
import signal
import sys
import time
from pathlib import Path

import pytest

from memory_store import client
from memory_store.hookrunner import HookRunner
from memory_store.paths import DataPaths

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"  # real payloads and a real transcript from Claude Code 2.1.330
PAYLOADS = FIXTURES / "hook-payloads"


def load_payload(name: str, **changes) -> dict:
    """A real payload captured from Claude Code 2.1.330, with some fields changed."""
    payload = json.loads((PAYLOADS / f"{name}.json").read_text(encoding="utf-8"))
    payload = copy.deepcopy(payload)
    payload.update(changes)
    return payload


def stop_worker(home: Path, timeout: float = 10.0) -> None:
    """Stop the worker of `home` (politely, then SIGKILL) and wait until it is gone."""
    paths = DataPaths(home)
    pid = None
    try:
        pid = int(paths.worker_pid.read_text())
    except (OSError, ValueError):
        pass
    client.stop_worker(paths, timeout)
    deadline = time.monotonic() + timeout
    while pid and time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except OSError:
            return
        time.sleep(0.05)
    if pid:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


@pytest.fixture
def home(tmp_path, monkeypatch) -> Path:
    """A fresh data dir, used by hooks (env) and by the in-process API alike."""
    data = tmp_path / "recall-home"
    monkeypatch.setenv("RECALL_HOME", str(data))
    monkeypatch.setenv("RECALL_PYTHON", sys.executable)
    monkeypatch.delenv("CLAUDE_PLUGIN_DATA", raising=False)
    yield data
    stop_worker(data)


@pytest.fixture
def project(tmp_path) -> Path:
    """A project directory that is a git root."""
    path = tmp_path / "projects" / "demo"
    (path / ".git").mkdir(parents=True)
    return path


@pytest.fixture
def other_project(tmp_path) -> Path:
    path = tmp_path / "projects" / "other"
    (path / ".git").mkdir(parents=True)
    return path


@pytest.fixture
def hooks(home) -> HookRunner:
    """Runs the commands of hooks/hooks.json exactly as Claude Code does."""
    return HookRunner(ROOT, dict(os.environ))


def play_deploy_session(send, prompt: str) -> None:
    """A first session that states a fact and runs a tool: SessionStart, the prompt, a Bash call, Stop
    and SessionEnd. `send(fixture_name, **changes)` delivers one hook event."""
    send("SessionStart-startup")
    send("UserPromptSubmit", prompt=prompt, prompt_id="p1")
    send("PostToolUse-Bash", prompt_id="p1",
         tool_input={"command": "./scripts/ship.sh --canary staging", "description": "Deploy"},
         tool_response={"stdout": "deployed build 4711 to staging (canary)", "stderr": "", "interrupted": False,
                        "isImage": False, "noOutputExpected": False})
    send("Stop", prompt_id="p1", last_assistant_message="Deployed. Staging deploys use scripts/ship.sh --canary.")
    send("SessionEnd-other")


def wait_for(predicate, timeout: float = 20.0, interval: float = 0.05):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    return predicate()


def worker_health(home: Path) -> dict | None:
    return client.health(DataPaths(home))


def wait_until_embedded(home: Path, timeout: float = 60.0) -> dict:
    """Block until the worker has loaded its model and emptied the embedding queue."""
    health = client.wait_until_embedded(DataPaths(home), timeout)
    assert health and health.get("model") == "ready" and health.get("pending") == 0, \
        f"worker did not finish embedding: {health}"
    return health
