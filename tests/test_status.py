"""recall's own state is visible (issue 3.2): `recall status`, what SessionStart tells the user once (paused, a data
dir it cannot write, a worker that cannot start, each with its reason), a read-only data dir (one line, search
still works), permissions the user set left alone, and logs/worker.out holding the worker's real error."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from contextlib import contextmanager

import pytest
from conftest import ROOT, load_payload, run_cli, stop_worker
from test_hooks import first_session, session

from memory_store.devtools.hookrunner import HookRunner
from memory_store.hook import runtime
from memory_store.shared.paths import DataPaths

cli = run_cli


def test_status_shows_worker_pause_backlogs_and_config(hooks, home, project):
    first_session(hooks, project)
    data = json.loads(cli("status", "--json", "--home", home).stdout)
    worker = data["worker"]
    assert worker["running"] and worker["pid"] > 0 and worker["rss_mb"] > 50 and worker["uptime_s"] >= 0
    assert worker["last_error"] is None and data["paused"] is None
    assert data["data_dir"]["writable"] and data["store"]["backend"] == "sqlite"
    assert data["spool"]["waiting"] == 0 and data["embeddings_waiting"] is not None
    assert data["config_problems"] == []

    cli("pause", "--all", "--for", "2h", "--home", home)
    (home / "config.json").write_text(json.dumps({"search": {"florr": 1}}))
    data = json.loads(cli("status", "--json", "--home", home).stdout)
    assert data["paused"]["everything"] and data["paused"]["until"] > data["at"] + 7000
    assert any("florr" in problem for problem in data["config_problems"])
    text = cli("status", "--home", home).stdout
    assert "paused     every project until" in text and "(recall resume)" in text and "florr" in text
    assert "worker     running: pid" in text and " MB" in text


def test_session_start_says_once_that_recall_is_paused(hooks, home, project):
    cli("pause", "--project", project, "--home", home)
    send = session(hooks, project)
    start = send("SessionStart-startup")
    assert "recall is paused" in start.output["systemMessage"] and "recall resume" in start.output["systemMessage"]
    assert send("UserPromptSubmit", prompt="anything", prompt_id="p1").stdout.strip() == ""


@pytest.fixture
def failing_runtime(home, tmp_path, monkeypatch):
    """The worker's recorded runtime broken (its Python dies at start with a message, as a damaged environment
    does); the hooks' own Python is fine."""
    script = tmp_path / "broken-python"
    script.write_text("#!/bin/sh\necho 'Traceback (most recent call last):' >&2\n"
                      "echo 'ImportError: libonnxruntime.so: cannot open shared object file' >&2\nexit 1\n")
    script.chmod(0o755)
    monkeypatch.delenv("RECALL_PYTHON")
    runtime.write_runtime(DataPaths(home), str(script), ROOT)
    return script


def test_a_worker_that_cannot_start_says_why(home, project, failing_runtime):
    result = cli("worker", "start", "--home", home, ok=False)
    assert result.exit_code == 1 and "did not start" in result.output and "libonnxruntime.so" in result.output
    assert "libonnxruntime.so" in (home / "logs" / "worker.out").read_text()

    hooks = HookRunner(ROOT, dict(os.environ))
    start = session(hooks, project)("SessionStart-startup")
    message = start.output["systemMessage"]
    assert "cannot start" in message and "libonnxruntime.so" in message and "worker.out" in message
    status = json.loads(cli("status", "--json", "--home", home).stdout)
    assert not status["worker"]["running"] and "libonnxruntime.so" in status["worker"]["last_error"]
    assert status["spool"]["waiting"] >= 1  # the event is kept for when the worker runs


@contextmanager
def read_only(path):
    """`path` made read-only for the commands run with the yielded argv prefix: a read-only bind mount in a
    mount namespace of their own when running as root (root ignores permission bits), chmod 0500 otherwise."""
    if os.geteuid() != 0:
        mode = stat.S_IMODE(os.stat(path).st_mode)
        os.chmod(path, 0o500)
        try:
            yield []
        finally:
            os.chmod(path, mode)
        return
    if not shutil.which("unshare"):
        pytest.skip("running as root without unshare(1): cannot make a read-only data dir")
    probe = subprocess.run(["unshare", "--mount", "true"], capture_output=True)
    if probe.returncode:
        pytest.skip("unshare --mount is not permitted here")
    yield ["unshare", "--mount", "sh", "-c", f'mount --bind -o ro "{path}" "{path}" && exec "$@"', "sh"]


@pytest.mark.slow  # real hooks and a worker, checked end to end
def test_a_read_only_data_dir_is_one_line_and_search_still_works(hooks, home, project):
    first_session(hooks, project)
    stop_worker(home)
    with read_only(home) as prefix:
        searched = subprocess.run(prefix + [sys.executable, "-m", "memory_store.shells.cli", "search", "staging deploy",
                                            "--project", str(project)], capture_output=True, text=True,
                                  env=dict(os.environ, RECALL_HOME=str(home)))
        assert searched.returncode == 0, searched.stderr
        assert "ship.sh" in searched.stdout
        assert "Traceback" not in searched.stderr and len(searched.stderr.strip().splitlines()) <= 1
        assert "read-only" in searched.stderr or "cannot write" in searched.stderr or searched.stderr == ""

        payload = load_payload("SessionStart-startup", session_id="ro-session", cwd=str(project))
        argv, timeout = hooks.commands("SessionStart", payload)[0]
        start = subprocess.run(prefix + argv, input=json.dumps(payload).encode(), capture_output=True,
                               env=dict(hooks.env, CLAUDE_PROJECT_DIR=str(project)), timeout=timeout)
        assert start.returncode == 0
        output = json.loads(start.stdout)
        assert "cannot write its data dir" in output["systemMessage"]

        # The diagnoses name the cause: not a damaged index to repair, nor a worker the next hook would start.
        cli = [sys.executable, "-m", "memory_store.shells.cli"]
        env = dict(os.environ, RECALL_HOME=str(home))
        status = subprocess.run(prefix + cli + ["status"], capture_output=True, text=True, env=env)
        assert status.returncode == 1 and "NOT writable" in status.stdout
        assert "the next hook starts it" not in status.stdout and "none can start" in status.stdout
        doctor = subprocess.run(prefix + cli + ["doctor"], capture_output=True, text=True, env=env)
        assert "cannot be written" in doctor.stdout and "--repair" not in doctor.stdout, doctor.stdout
    stop_worker(home)


@pytest.mark.slow  # real hooks and a worker, checked end to end
@pytest.mark.parametrize("mode, after", [(0o500, 0o500), (0o700, 0o700), (0o750, 0o700), (0o755, 0o700)])
def test_the_data_dir_is_closed_to_others_but_never_opened(hooks, home, project, mode, after):
    """A mode its owner gave it stays (made read-only on purpose, it is not made writable); only access by
    others is taken away, as a fresh mkdir under the usual umask grants it."""
    first_session(hooks, project)
    stop_worker(home)
    os.chmod(home, mode)
    try:
        send = session(hooks, project)
        send("SessionStart-startup")
        cli("search", "staging", "--project", project, "--home", home)
        stop_worker(home)
        assert stat.S_IMODE(os.stat(home).st_mode) == after
    finally:
        os.chmod(home, 0o700)
