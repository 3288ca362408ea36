"""Hooks under abuse: malformed input, parallel sessions, SIGKILL, a broken data dir, a full disk."""

from __future__ import annotations

import json
import os
import random
import resource
import signal
import subprocess
import sys
import time

import pytest
from conftest import ROOT, load_payload, stop_worker, stored, wait_for, worker_health
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memory_store import open_recall
from memory_store.devtools.bench.latency import peak_rss_kb
from memory_store.shared.paths import DataPaths

pytestmark = pytest.mark.slow  # stress: concurrent sessions, killed hooks and workers, malformed payloads by the dozen

EVENTS = ["SessionStart", "UserPromptSubmit", "PostToolUse", "PostToolUseFailure", "Stop", "SessionEnd"]


def assert_well_behaved(result, max_seconds=10.0):
    """What Claude Code needs from any hook run: exit 0 (never 2), stdout empty or one JSON object."""
    assert result.returncode == 0, result.stderr
    out = result.stdout.strip()
    assert out == "" or (out.startswith("{") and isinstance(json.loads(out), dict)), out[:200]
    assert "Traceback" not in result.stdout
    assert result.ms < max_seconds * 1000


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=50),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=4),
    max_leaves=20,
)


@st.composite
def malformed_payloads(draw) -> bytes:
    """Random bytes, truncated or mistyped JSON, unknown events, NUL bytes, invalid UTF-8, deep nesting."""
    kind = draw(st.sampled_from(["bytes", "truncated", "wrong-types", "unknown-event", "nul", "bad-utf8", "deep"]))
    base = {"session_id": "fuzz", "cwd": "/tmp/fuzz-project", "hook_event_name": draw(st.sampled_from(EVENTS)),
            "prompt": "hello", "tool_name": "Bash", "tool_input": {"command": "ls"}, "tool_response": {"stdout": ""}}
    if kind == "bytes":
        return draw(st.binary(max_size=300))
    if kind == "truncated":
        text = json.dumps(base)
        return text[: draw(st.integers(0, len(text) - 1))].encode()
    if kind == "wrong-types":
        key = draw(st.sampled_from(sorted(base)))
        base[key] = draw(json_values)
        return json.dumps(base).encode()
    if kind == "unknown-event":
        base["hook_event_name"] = draw(st.text(max_size=20))
        return json.dumps(base).encode()
    if kind == "nul":
        base["prompt"] = "a\x00b" + draw(st.text(max_size=20))
        return json.dumps(base).encode().replace(b"hello", b"he\x00llo")
    if kind == "bad-utf8":
        return json.dumps(base).encode().replace(b"hello", b"he\xff\xfe\xc0llo")
    depth = draw(st.integers(50, 5000))
    base["tool_input"] = "[" * depth
    return (json.dumps(base)[:-1] + ', "nested": ' + "[" * depth + "]" * depth + "}").encode()


@pytest.fixture
def running_worker(hooks, home, project):
    hooks.run("SessionStart", load_payload("SessionStart-startup", cwd=str(project)))
    assert wait_for(lambda: worker_health(home))
    return hooks


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(raw=malformed_payloads(), event=st.sampled_from(EVENTS))
def test_malformed_payloads_never_break_a_hook(running_worker, raw, event):
    assert_well_behaved(running_worker.run(event, raw))


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(raw=malformed_payloads(), event=st.sampled_from(EVENTS))
def test_malformed_payloads_without_a_worker(hooks, home, raw, event):
    """The spool path parses the payload itself: the same rules hold there."""
    hooks.env["RECALL_PYTHON"] = "/nonexistent/python"  # the launcher falls back to PATH's python3
    assert_well_behaved(hooks.run(event, raw))


def test_a_lone_surrogate_is_repaired_not_a_failure(running_worker, home, project):
    """Node cuts a string inside an emoji and writes half of its UTF-16 pair ("\\ud83d") into the JSON: the prompt is
    answered and kept (with U+FFFD), and a PreToolUse carrying one is answered, never spooled."""
    prompt = load_payload("UserPromptSubmit", cwd=str(project), prompt="why is the zyxwq deploy slow PLACE")
    raw = json.dumps(prompt).replace("PLACE", "\\ud83d").encode()
    assert b"\\ud83d" in raw
    for _ in range(2):  # the second one reaches a worker that has begun the first one's embedding
        assert_well_behaved(running_worker.run("UserPromptSubmit", raw))
    tool = load_payload("PreToolUse-Bash", cwd=str(project), tool_input={"command": "cat notes-PLACE.txt"})
    assert_well_behaved(running_worker.run("PreToolUse", json.dumps(tool).replace("PLACE", "\\ud83d").encode()))
    log = (home / "logs" / "recall.log").read_text(encoding="utf-8", errors="replace")
    assert "hook_failed" not in log and "prepare_failed" not in log and '"spooled"' not in log, log[-2000:]
    with stored(home) as recall:
        assert any("zyxwq deploy slow \ufffd" in m.text for m in recall.select(project=None)), "the prompt was lost"


def test_multi_megabyte_payload_is_bounded_in_time_and_memory(running_worker, home, project):
    big = "x" * 12_000_000
    payload = load_payload("PostToolUse-Bash", cwd=str(project), tool_response={"stdout": big, "stderr": ""})
    data = json.dumps(payload).encode()
    result = running_worker.run("PostToolUse", data)
    assert_well_behaved(result)
    env = dict(running_worker.env)
    peak = peak_rss_kb([sys.executable, "-I", "-S", str(ROOT / "hooks" / "hook.py"), "PostToolUse"], data, env)
    assert peak is None or peak < 150 * 1024, f"hook peak RSS {peak} KB"
    oversize = b'{"hook_event_name": "PostToolUse", "pad": "' + b"y" * (33 * 1024 * 1024) + b'"}'
    assert_well_behaved(running_worker.run("PostToolUse", oversize))


def test_parallel_sessions_with_killed_hooks_and_a_killed_worker(hooks, home, tmp_path):
    """Many hooks of several projects at once; a third are SIGKILLed at random moments and the worker
    is killed mid-way. Every hook that returned 0 has its event stored exactly once; none twice."""
    projects = []
    for name in ("alpha", "beta", "gamma"):
        path = tmp_path / name
        (path / ".git").mkdir(parents=True)
        projects.append(path)
    hooks.run("SessionStart", load_payload("SessionStart-startup", cwd=str(projects[0])))
    worker_pid = wait_for(lambda: worker_health(home))["pid"]
    rng = random.Random(7)
    command = hooks.commands("UserPromptSubmit", {})[0][0]
    env = dict(hooks.env)
    procs = []
    for i in range(45):
        marker = f"marker{i:03d}x"
        payload = load_payload("UserPromptSubmit", session_id=f"s{i % 9}", cwd=str(projects[i % 3]),
                               prompt=f"remember the code word {marker} for later", prompt_id=f"p{i}")
        proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, env=env, start_new_session=True)
        proc.stdin.write(json.dumps(payload).encode())
        proc.stdin.close()
        proc.stdin = None
        procs.append((marker, proc, i % 3 == 0))
        if i == 20:
            os.kill(worker_pid, signal.SIGKILL)
    for _marker, proc, victim in procs:
        if victim:
            time.sleep(rng.random() * 0.02)
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    outcomes = {}
    for marker, proc, _victim in procs:
        out, err = proc.communicate(timeout=60)
        assert proc.returncode != 2
        if proc.returncode == 0:
            assert out.strip() == b"" or json.loads(out)
        outcomes[marker] = proc.returncode
    wait_for(lambda: worker_health(home), timeout=30) or hooks.run(
        "SessionStart", load_payload("SessionStart-startup", cwd=str(projects[1])))
    store = stored(home)
    for marker, code in outcomes.items():
        count = store.store.db.conn.execute("SELECT count(*) FROM memories WHERE text LIKE ?",
                                            (f"%{marker}%",)).fetchone()[0]
        if code == 0:
            assert count == 1, f"{marker}: returned 0 but stored {count} times"
        else:
            assert count <= 1, f"{marker}: stored {count} times"
    assert store.store.db.conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    log = DataPaths(home).log_file.read_text()
    assert "database is locked" not in log
    killed = sum(1 for code in outcomes.values() if code != 0)
    assert killed >= 1  # the experiment did kill hooks


def test_worker_killed_mid_write_leaves_a_consistent_store(hooks, home, project):
    for round_ in range(3):
        hooks.run("SessionStart", load_payload("SessionStart-startup", cwd=str(project), session_id=f"k{round_}"))
        pid = wait_for(lambda: (h := worker_health(home)) and (round_ or h["model"] == "ready") and h)["pid"]
        for i in range(10):
            hooks.run("PostToolUse", load_payload("PostToolUse-Bash", cwd=str(project), session_id=f"k{round_}",
                                                  tool_input={"command": f"echo round {round_} step {i}"}))
        os.kill(pid, signal.SIGKILL)
        wait_for(lambda: not worker_health(home))
    store = stored(home)
    checks = {c.name: c for c in store.diagnose()}
    for name in ("integrity", "fts index", "vector index"):
        assert checks[name].ok, checks[name].detail


def test_doctor_repair_rebuilds_a_broken_fts_index(home, project):
    from memory_store.core.records import MemoryDraft

    store = open_recall(home)
    store.store.record("e1", MemoryDraft(project=str(project), kind="note", text="the queue is orders-v2", created_at=1.0))
    store.store.db.conn.execute("DELETE FROM memories_fts")  # simulate a derived index gone out of step
    broken = {c.name: c for c in store.diagnose()}
    assert not broken["fts index"].ok
    assert store.search("orders queue", project=str(project)) == []
    store.repair()
    fixed = {c.name: c for c in store.diagnose()}
    assert fixed["fts index"].ok
    assert store.search("orders queue", project=str(project))


def test_unwritable_data_dir_does_not_affect_claude_code(hooks, home, project):
    hooks.env["RECALL_HOME"] = "/proc/recall-cannot-live-here"
    for name in ("SessionStart-startup", "UserPromptSubmit", "PostToolUse-Bash", "Stop", "SessionEnd-other"):
        payload = load_payload(name, cwd=str(project))
        result = hooks.run(payload["hook_event_name"], payload)
        assert_well_behaved(result)
        if name.startswith("SessionStart"):  # the user is told, once per session, and Claude gets nothing
            assert set(result.output) == {"systemMessage"} and "cannot write its data dir" in result.output["systemMessage"]
        else:
            assert result.stdout.strip() == ""
        assert "recall" in result.stderr  # a clear message where the log cannot go


def test_full_disk_does_not_affect_claude_code(hooks, home, project):
    """RLIMIT_FSIZE makes every write past a few bytes fail (EFBIG), as a full disk would: hooks (and
    the worker they start, which inherits the limit) still exit 0 with clean stdout, and say why."""
    os.makedirs(home, exist_ok=True)

    def tiny_disk():
        resource.setrlimit(resource.RLIMIT_FSIZE, (64, 64))

    for name in ("SessionStart-startup", "UserPromptSubmit", "PostToolUse-Bash"):
        payload = json.dumps(load_payload(name, cwd=str(project))).encode()
        command = hooks.commands(json.loads(payload)["hook_event_name"], None)[0][0]
        started = time.monotonic()
        proc = subprocess.run(command, input=payload, capture_output=True, env=hooks.env,
                              preexec_fn=tiny_disk, timeout=30)
        assert proc.returncode == 0 and proc.stdout.strip() == b""
        assert time.monotonic() - started < 10
        assert b"recall" in proc.stderr
    stop_worker(home)
