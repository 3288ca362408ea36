"""The CLI as a thin shell: each command runs against a real store and is checked through the API."""

from __future__ import annotations

import json
import time

import pytest
from typer.testing import CliRunner

from memory_store import open_recall
from memory_store.core.records import MemoryDraft
from memory_store.shells.cli import app

runner = CliRunner()


def seed(home, project="/p/app"):
    store = open_recall(home, load_models=False)
    now = time.time()
    ids = []
    for i, text in enumerate(["We use Postgres 16 for the orders service",
                              "Bash `make migrate` → applied 3 migrations",
                              "Q: how do we seed the db?\nA: run scripts/seed.py --small"]):
        draft = MemoryDraft(project=project, session_id="s1", kind=["prompt", "tool", "exchange"][i], text=text,
                            created_at=now - 3600 + i)
        ids.append(store.store.record(f"{project}:e{i}", draft).memory_id)
    store.close()
    return ids


def invoke(*args):
    result = runner.invoke(app, list(args))
    assert result.exit_code == 0, result.output
    return result.stdout


def test_search_json_has_the_documented_fields(home):
    seed(home)
    hits = json.loads(invoke("search", "postgres orders", "--project", "/p/app", "--home", str(home), "--json"))
    assert hits[0]["text"].startswith("We use Postgres 16")
    assert set(hits[0]) >= {"id", "text", "created_at", "session_id", "project", "kind", "score"}
    assert hits[0]["created_at"].endswith("Z") or "+00:00" in hits[0]["created_at"]


def test_search_scope_flags(home):
    seed(home)
    seed(home, project="/p/other")
    assert {h["project"] for h in json.loads(invoke("search", "postgres", "--all-projects", "--home", str(home),
                                                    "--json"))} == {"/p/app", "/p/other"}
    result = runner.invoke(app, ["search", "x", "--project", "/p", "--all-projects", "--home", str(home)])
    assert result.exit_code != 0


def test_index_output_says_how_to_expand(home):
    ids = seed(home)
    out = invoke("search", "seed db", "--project", "/p/app", "--home", str(home), "--index")
    assert f"#{ids[2]}" in out and "recall show ID" in out and "recall timeline ID" in out
    assert "59m ago" in out or "1h ago" in out  # the age column (the memory is 59 min 58 s old)


def test_show_and_timeline(home):
    ids = seed(home)
    shown = json.loads(invoke("show", str(ids[0]), str(ids[2]), "--home", str(home), "--json"))
    assert [m["id"] for m in shown] == [ids[0], ids[2]]
    around = json.loads(invoke("timeline", str(ids[1]), "--home", str(home), "--json"))
    assert [m["id"] for m in around] == ids
    missing = runner.invoke(app, ["show", "999", "--home", str(home)])
    assert missing.exit_code == 1


def test_stats_and_forget(home):
    ids = seed(home)
    stats = json.loads(invoke("stats", "--home", str(home), "--json"))
    assert stats["memories"] == 3 and stats["by_kind"]["tool"] == 1
    assert json.loads(invoke("forget", str(ids[1]), "--project", "/p/app", "--home", str(home), "--json")) == {
        "forgotten": [ids[1]], "projects": ["/p/app"], "not_found": [], "not_yours": []}
    assert open_recall(home).store.counts()["memories"] == 2


def test_doctor_json_reports_checks(home):
    seed(home)
    report = json.loads(runner.invoke(app, ["doctor", "--home", str(home), "--json"]).stdout)
    names = {c["name"] for c in report["checks"]}
    assert {"integrity", "fts index", "vector search", "embedding model", "spool", "worker"} <= names


def test_every_command_has_help():
    for command in ("search", "show", "timeline", "import", "stats", "doctor", "demo", "forget", "reindex"):
        out = invoke(command, "--help")
        assert "--help" in out and len(out) > 100


@pytest.mark.slow  # times the CLI against a live worker
def test_search_is_answered_by_the_worker_before_the_cli_is_imported(hooks, home, project):
    """`recall search` and the /recall:log-search form (scripts/recall search --index): with a worker up, the answer
    comes from it before typer, pydantic or the core are imported, and reads exactly as the full CLI's;
    without a worker the full CLI answers."""
    import os
    import re
    import subprocess
    import sys

    from conftest import ROOT, load_payload, play_deploy_session, wait_until_embedded

    def send(name, **changes):
        hooks.run(load_payload(name)["hook_event_name"],
                  load_payload(name, session_id="s-quick", cwd=str(project), **changes))

    play_deploy_session(send, "Note for later: staging deploys go through scripts/ship.sh with the canary flag.")
    wait_until_embedded(home)
    env = dict(os.environ, RECALL_HOME=str(home), PYTHONPATH=str(ROOT))

    def same_reading(a: str, b: str) -> bool:
        """Equal but for the scores, which each search moves a little (a hit found is a hit used: RFM)."""
        if a.lstrip().startswith("["):
            return [h["id"] for h in json.loads(a)] == [h["id"] for h in json.loads(b)]
        return re.sub(r"score \d+\.\d+", "score _", a) == re.sub(r"score \d+\.\d+", "score _", b)

    def recall(module, *args, importtime=False):
        command = [sys.executable, *(["-X", "importtime"] if importtime else []), "-m", module, "search", *args]
        return subprocess.run(command, cwd=project, env=env, capture_output=True, text=True, timeout=60)

    for args in (["how do we deploy to staging?"], ["how do we deploy to staging?", "--index"],
                 ["how do we deploy to staging?", "--json", "-n", "3"], ["zzqxj"], ["zzqxj", "--all"],
                 ["deploy", "--all-projects", "--index"]):
        quick, full = recall("memory_store.shells.entry", *args), recall("memory_store.shells.cli", *args)
        assert quick.returncode == full.returncode == 0, quick.stderr + full.stderr
        assert same_reading(quick.stdout, full.stdout), args
    assert "ship.sh" in recall("memory_store.shells.entry", "how do we deploy to staging?").stdout
    assert "Nothing relevant found" in recall("memory_store.shells.entry", "zzqxj").stdout

    traced = recall("memory_store.shells.entry", "how do we deploy to staging?", importtime=True)
    imported = {line.split("|")[-1].strip().split(".")[0] for line in traced.stderr.splitlines()
                if line.startswith("import time:")}
    assert not imported & {"typer", "click", "pydantic", "apsw", "numpy", "fastembed"}, imported
    launcher = subprocess.run([str(ROOT / "scripts" / "recall"), "search", "how do we deploy to staging?", "--index"],
                              cwd=project, env=env, capture_output=True, text=True, timeout=60)
    assert launcher.returncode == 0 and "ship.sh" in launcher.stdout, launcher.stderr

    from conftest import stop_worker

    stop_worker(home)  # no worker: the full CLI answers in process
    alone = recall("memory_store.shells.entry", "how do we deploy to staging?")
    assert alone.returncode == 0 and "ship.sh" in alone.stdout, alone.stderr


def test_a_persons_searches_do_not_make_memories_permanent(home):
    """Each `recall search` once counted its hits as used: after a few searches a user's glance had consolidated
    them ("decay no more"). A person's search is looking; Claude's lookup through MCP is a use."""
    from memory_store.api import search_anywhere
    from memory_store.core.config import StrengthConfig

    first, *_ = seed(home)
    for _ in range(StrengthConfig().consolidate_after + 1):
        assert "Postgres 16" in invoke("search", "postgres orders", "--project", "/p/app", "--home", str(home))
    with open_recall(home) as recall:
        assert recall.get([first])[0].access_count == 0
    assert [h.id for h in search_anywhere(home, "postgres orders", project="/p/app", touch=True)][0] == first
    with open_recall(home) as recall:
        assert recall.get([first])[0].access_count == 1


def test_the_viewer_is_found_by_the_name_users_try_first(home):
    """`recall ui` is the viewer; `recall viewer` is what a newcomer types (it said "No such command")."""
    from typer.testing import CliRunner

    from memory_store.shells.cli import app

    for name in ("ui", "viewer"):
        said = CliRunner().invoke(app, [name, "--help"])
        assert said.exit_code == 0 and "local web viewer" in said.output
    assert "viewer" not in CliRunner().invoke(app, ["--help"]).output.split("Commands:")[1].split()
