"""Failures that speak up and cost nothing: a bad config.json, a damaged recall.db, a config change
while the worker runs, and memory that does not grow with every open."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid

import pytest
from conftest import load_payload, stored, wait_for, worker_health
from typer.testing import CliRunner

from memory_store.shells.cli import app

pytestmark = pytest.mark.slow  # failure injection with real processes (full disk, a worker that cannot start)

runner = CliRunner()
FACT = "the billing service reads its queue name from BILLING_QUEUE=invoices-v3"


class Session:
    def __init__(self, hooks, project):
        self.hooks, self.project, self.id = hooks, project, str(uuid.uuid4())

    def send(self, fixture: str, **changes):
        payload = load_payload(fixture, session_id=self.id, cwd=str(self.project),
                               transcript_path=f"/tmp/{self.id}.jsonl", **changes)
        result = self.hooks.run(payload["hook_event_name"], payload)
        assert result.returncode == 0 and (result.stdout.strip() == "" or result.output is not None), result
        return result


def message(result) -> str:
    return (result.output or {}).get("systemMessage", "")


def test_a_bad_setting_is_reported_once_per_session_and_the_rest_keeps_working(hooks, home, project):
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.json").write_text(json.dumps({"tiers": {"hot_size": "five", "warm_top_k": 1},
                                                  "injcet": {"budget_chars": 900}}))
    first = Session(hooks, project)
    start = first.send("SessionStart-startup")
    said = message(start)
    assert "config.json" in said and "tiers.hot_size" in said and '"five"' in said and "default 5" in said
    assert "injcet" in said and "unknown setting" in said
    assert "systemMessage" in start.stdout and said not in start.context  # for the user, not the model
    assert message(first.send("UserPromptSubmit", prompt=f"note: {FACT}", prompt_id="p1")) == ""
    first.send("Stop", prompt_id="p1", last_assistant_message=f"Noted: {FACT}.")
    assert worker_health(home), "the worker runs on the good settings"
    with stored(home) as recall:
        assert recall.config.tiers.warm_top_k == 1 and recall.config.tiers.hot_size == 5
        assert recall.select(match="invoices-v3")

    second = Session(hooks, project)
    assert "tiers.hot_size" in message(second.send("SessionStart-startup"))
    out = runner.invoke(app, ["doctor", "--home", str(home)])
    assert out.exit_code == 1
    assert "tiers.hot_size" in out.stdout and "config.json" in out.stdout and "--home" not in out.output


def test_a_config_that_is_not_json_keeps_the_defaults(hooks, home, project):
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.json").write_text('{"tiers": {"hot_size": 3,}')
    said = message(Session(hooks, project).send("SessionStart-startup"))
    assert "not JSON" in said and "the defaults" in said
    result = runner.invoke(app, ["search", "anything", "--home", str(home), "--project", str(project)])
    assert result.exit_code == 0, result.output


def test_a_damaged_database_is_moved_aside_and_capture_goes_on(hooks, home, project):
    session = Session(hooks, project)
    session.send("SessionStart-startup")
    session.send("UserPromptSubmit", prompt="first prompt, before the damage", prompt_id="p0")
    from conftest import stop_worker

    stop_worker(home)
    (home / "recall.db").write_bytes(b"this is not a database" * 400)
    for suffix in ("-wal", "-shm"):
        (home / f"recall.db{suffix}").unlink(missing_ok=True)

    later = Session(hooks, project)
    started = later.send("SessionStart-startup")
    later.send("UserPromptSubmit", prompt=f"after the damage: {FACT}", prompt_id="p1")
    said = message(started) or message(Session(hooks, project).send("SessionStart-startup"))
    assert "damaged" in said and "recall.db.corrupt-" in said
    assert list(home.glob("recall.db.corrupt-*"))
    with stored(home) as recall:
        assert wait_for(lambda: recall.select(match="invoices-v3")), "the event after the damage is stored"
    again = Session(hooks, project).send("SessionStart-startup")
    assert "damaged" not in message(again), "told once"
    doctor = runner.invoke(app, ["doctor", "--home", str(home)])
    assert doctor.exit_code == 1 and "damaged database" in doctor.stdout and ".recover" in doctor.stdout


def test_a_config_change_applies_on_the_next_hook(hooks, home, project):
    session = Session(hooks, project)
    session.send("SessionStart-startup")
    bash = {"command": "echo unique-marker-1", "description": "echo"}
    session.send("PostToolUse-Bash", prompt_id="p0", tool_input=bash,
                 tool_response={"stdout": "unique-marker-1", "stderr": "", "interrupted": False, "isImage": False})
    pid = worker_health(home)["pid"]
    (home / "config.json").write_text(json.dumps({"capture": {"skip_tools": ["Bash"]}}))
    bash = {"command": "echo unique-marker-2", "description": "echo"}
    session.send("PostToolUse-Bash", prompt_id="p0", tool_input=bash,
                 tool_response={"stdout": "unique-marker-2", "stderr": "", "interrupted": False, "isImage": False})
    assert worker_health(home)["pid"] == pid, "same worker, new settings"
    with stored(home) as recall:
        assert recall.select(match="unique-marker-1") and not recall.select(match="unique-marker-2")


GROWTH_PROBE = """
import sys, time
from memory_store import open_recall
from memory_store.core.records import MemoryDraft

def rss_mb():
    return int(open('/proc/self/statm').read().split()[1]) * 4096 / 2**20

home = sys.argv[1]
with open_recall(home) as recall:
    for i in range(50):
        recall.store.record(f"e{i}", MemoryDraft(project="/p", kind="prompt", text=f"note {i} on port {8000 + i}",
                                                 created_at=time.time()))
sizes = []
for _ in range(8):
    recall = open_recall(home)
    recall.embed_pending()
    recall.search("which port", project="/p")
    recall.close()
    sizes.append(rss_mb())
print(sizes[1], sizes[-1])
"""


def test_opening_and_closing_the_store_does_not_grow_the_process(tmp_path):
    """2.3 item 6: each open kept ~95 MB (the model was loaded again per open)."""
    out = subprocess.run([sys.executable, "-c", GROWTH_PROBE, str(tmp_path / "home")], capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    second, last = map(float, out.stdout.split())
    assert last - second < 40, f"RSS grew from {second:.0f} MB to {last:.0f} MB over 6 opens"
