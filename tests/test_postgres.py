"""A shared PostgreSQL, as a team uses it: `recall team init` and `add-user`, private and team memories
enforced by the database (also for someone at psql), the same user on a second machine, and a server
that goes away and comes back while hooks keep running. A real server from tests/pg.py throughout."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import pytest
from conftest import ROOT, load_payload, stop_worker, wait_for
from typer.testing import CliRunner

from memory_store import open_recall
from memory_store.core.records import MemoryDraft
from memory_store.core.storage import StorageUnavailable
from memory_store.core.storage.postgres import schema as pg_schema
from memory_store.devtools.hookrunner import HookRunner
from memory_store.shared import spool
from memory_store.shared.paths import DataPaths
from memory_store.shells.cli import app

pytestmark = pytest.mark.slow  # a real PostgreSQL (or one that goes away)

runner = CliRunner()
SHOP_REMOTE = "git@github.com:Acme/Shop.git"


def clone(path: Path, remote: str = SHOP_REMOTE) -> Path:
    """A git work tree whose origin is `remote` (only what recall reads of it: .git/config)."""
    (path / ".git").mkdir(parents=True)
    (path / ".git" / "config").write_text(f'[core]\n\tbare = false\n[remote "origin"]\n\turl = {remote}\n'
                                          '\tfetch = +refs/heads/*:refs/remotes/origin/*\n')
    return path


def as_member(monkeypatch, url: str, home: Path):
    monkeypatch.setenv("RECALL_DATABASE_URL", url)
    monkeypatch.setenv("RECALL_HOME", str(home))
    return open_recall(home, load_models=False)


def cli(*args, expect: int = 0) -> str:
    result = runner.invoke(app, list(args))
    assert result.exit_code == expect, result.output
    return result.stdout


def note(text: str, project: str = "github.com/acme/shop", **kw) -> MemoryDraft:
    return MemoryDraft(project=project, session_id=kw.pop("session", "s1"), kind=kw.pop("kind", "exchange"),
                       text=text, created_at=kw.pop("at", time.time()), **kw)


def test_team_init_and_add_user_make_roles_that_row_level_security_holds(postgres_server, tmp_path, monkeypatch):
    database = postgres_server.create_database()
    admin = postgres_server.url(database=database)
    made = []
    try:
        first = json.loads(cli("team", "init", "--database-url", admin, "--home", str(tmp_path / "a"), "--json"))
        again = json.loads(cli("team", "init", "--database-url", admin, "--home", str(tmp_path / "a"), "--json"))
        assert first["applied"] == len(pg_schema.MIGRATIONS) and again["applied"] == 0
        assert postgres_server.password not in json.dumps(first)
        created = json.loads(cli("team", "add-user", "carol_t", "--database-url", admin, "--json"))
        made.append("carol_t")
        url = created["url"]
        assert url.startswith("postgresql://carol_t:") and f"host={postgres_server.socket_dir}".replace("/", "%2F") \
            in url.replace("/", "%2F")
        cli("team", "add-user", "carol_t", "--database-url", admin, expect=1)  # exists already
        cli("team", "add-user", "pg_bad", "--database-url", admin, expect=1)
        import psycopg

        with psycopg.connect(url, autocommit=True) as conn:  # the printed URL works as printed
            role = conn.execute("SELECT rolsuper, rolbypassrls, rolcreaterole FROM pg_roles "
                                "WHERE rolname = current_user").fetchone()
            assert role == (False, False, False)
            assert conn.execute("SELECT pg_has_role('carol_t', 'recall_member', 'member')").fetchone()[0]
        with postgres_server.connect(database) as conn:  # the server holds a verifier, never the password
            stored = conn.execute("SELECT rolpassword FROM pg_authid WHERE rolname = 'carol_t'").fetchone()[0]
            assert stored.startswith("SCRAM-SHA-256$") and url.split(":")[2].split("@")[0] not in stored

        # The members, a new password (the old one stops working), a login taken away and given back.
        assert json.loads(cli("team", "users", "--database-url", admin, "--json")) == \
            [{"name": "carol_t", "can_log_in": True, "shared_memories": 0}]
        renewed = json.loads(cli("team", "new-password", "carol_t", "--database-url", admin, "--json"))["url"]
        assert renewed != url
        with pytest.raises(psycopg.OperationalError):
            psycopg.connect(url).close()
        open_connection = psycopg.connect(renewed, autocommit=True)  # a worker's, say
        assert "can no longer log in" in cli("team", "remove-user", "carol_t", "--database-url", admin)
        with pytest.raises(psycopg.OperationalError):  # it ended with the login
            open_connection.execute("SELECT 1")
        open_connection.close()
        with pytest.raises(psycopg.OperationalError):
            psycopg.connect(renewed).close()
        assert "login removed" in cli("team", "users", "--database-url", admin)
        cli("team", "remove-user", "nobody_t", "--database-url", admin, expect=1)  # not a member: said, not done
        psycopg.connect(json.loads(cli("team", "new-password", "carol_t", "--database-url", admin, "--json"))["url"]
                        ).close()
    finally:
        postgres_server.drop_database(database)
        postgres_server.drop_roles(made)


def test_private_memories_are_invisible_to_teammates_even_from_psql(team_database, tmp_path, monkeypatch):
    alice = as_member(monkeypatch, team_database.alice, tmp_path / "alice")
    private = alice.store.record("a1", note("The vault root token lives in ops/vault.md")).memory_id
    shared = alice.remember("Releases are cut on Tuesdays, never on Fridays", "github.com/acme/shop", team=True)
    alice.close()
    import psycopg

    with psycopg.connect(team_database.bob, autocommit=True) as conn:
        conn.execute("SET search_path = recall, public")
        assert conn.execute("SELECT id, owner, visibility FROM memories").fetchall() == \
            [(shared.id, team_database.alice_role, "team")]
        assert conn.execute("UPDATE memories SET text = 'changed' WHERE id = %s", (shared.id,)).rowcount == 0
        assert conn.execute("DELETE FROM memories WHERE id = %s", (private,)).rowcount == 0
        assert conn.execute("SELECT count(*) FROM events").fetchone()[0] == 0  # nor their events
        with pytest.raises(psycopg.errors.InsufficientPrivilege):  # no row in another's name
            conn.execute("INSERT INTO memories(project, kind, text, created_at, content_hash, owner) "
                         "VALUES ('x', 'note', 'forged', 0, 'h', %s)", (team_database.alice_role,))
        with pytest.raises(psycopg.errors.InsufficientPrivilege):  # nor the team's settings
            conn.execute("UPDATE settings SET value = 'x' WHERE key = 'embedding_model'")

    bob = as_member(monkeypatch, team_database.bob, tmp_path / "bob")
    hits = bob.search("when are releases cut", project="github.com/acme/shop")
    assert [(h.id, h.owner, h.visibility) for h in hits] == [(shared.id, team_database.alice_role, "team")]
    assert bob.search("vault root token", project="github.com/acme/shop") == []
    assert bob.forget([shared.id]) == []  # only its owner forgets it
    assert bob.share_check([private])[1][private] == "not found among your memories"
    bob.close()

    alice = as_member(monkeypatch, team_database.alice, tmp_path / "alice")
    assert [m.id for m in alice.forget([shared.id])] == [shared.id]
    alice.close()
    bob = as_member(monkeypatch, team_database.bob, tmp_path / "bob")
    assert bob.search("when are releases cut", project="github.com/acme/shop") == []  # gone for everyone at once
    bob.close()


def test_search_json_and_injections_name_a_team_memorys_author(team_database, tmp_path, monkeypatch, project):
    alice = as_member(monkeypatch, team_database.alice, tmp_path / "alice")
    ready = alice.store.record("a1", note("We pin numpy below 2.0 because the wheels break the ARM build",
                                          project=str(project))).memory_id
    out = cli("share", str(ready), "--home", str(tmp_path / "alice"), expect=1)  # no terminal: asks for --yes
    assert alice.get([ready])[0].visibility == "private"
    out = cli("share", str(ready), "--yes", "--home", str(tmp_path / "alice"))
    assert "We pin numpy below 2.0" in out and f"shared #{ready}" in out
    alice.close()
    monkeypatch.setenv("RECALL_DATABASE_URL", team_database.bob)
    hits = json.loads(cli("search", "why is numpy pinned", "--project", str(project), "--home", str(tmp_path / "bob"),
                          "--json"))
    assert hits[0]["owner"] == team_database.alice_role and hits[0]["visibility"] == "team"
    bob = open_recall(tmp_path / "bob")
    decision, block = bob.explain("why did we pin numpy below 2.0?", str(project))
    assert f"team, by {team_database.alice_role}" in block
    bob.close()
    monkeypatch.setenv("RECALL_DATABASE_URL", team_database.alice)
    assert f"private again: #{ready}" in cli("unshare", str(ready), "--home", str(tmp_path / "alice"))


def test_the_same_user_on_a_second_machine_finds_their_memories_by_repository(team_database, tmp_path, monkeypatch):
    laptop = clone(tmp_path / "laptop" / "src" / "shop")
    devbox = clone(tmp_path / "devbox" / "work" / "shop-checkout", "https://github.com/acme/shop")
    monkeypatch.setenv("RECALL_DATABASE_URL", team_database.alice)
    hooks = HookRunner(ROOT, {**os.environ, "RECALL_HOME": str(tmp_path / "laptop-home"),
                              "RECALL_PYTHON": sys.executable})
    try:
        for name, changes in (("SessionStart-startup", {}),
                              ("UserPromptSubmit", {"prompt": "the payments webhook secret rotates monthly via "
                                                              "scripts/rotate_hooks.py", "prompt_id": "p1"}),
                              ("Stop", {"prompt_id": "p1", "last_assistant_message": "Noted: rotate_hooks.py runs "
                                                                                     "monthly."})):
            result = hooks.run(name.split("-")[0], load_payload(name, cwd=str(laptop), session_id="laptop-1", **changes))
            assert result.returncode == 0
        assert wait_for(lambda: "rotate_hooks" in cli("search", "how does the webhook secret rotate",
                                                      "--project", str(laptop), "--home", str(tmp_path / "laptop-home")))
    finally:
        stop_worker(tmp_path / "laptop-home")
    monkeypatch.chdir(devbox)  # another machine: another data dir, another path, the same role
    out = cli("search", "how does the webhook secret rotate", "--home", str(tmp_path / "devbox-home"), "--json")
    hits = json.loads(out)
    assert hits and all(h["project"] == "github.com/acme/shop" for h in hits)
    assert any("rotate_hooks" in h["text"] for h in hits)
    projects = json.loads(cli("projects", "--home", str(tmp_path / "devbox-home"), "--json"))
    paths = {p["path"] for p in projects[0]["paths"]}
    assert projects[0]["project"] == "github.com/acme/shop" and {str(laptop), str(devbox)} <= paths


def test_a_worker_of_another_model_stays_lexical_and_says_why(postgres_server, tmp_path, monkeypatch):
    from memory_store.core.storage.postgres import schema
    from memory_store.core.storage.postgres.connection import connect

    database = postgres_server.create_database()
    roles = []
    try:
        conn = connect(postgres_server.url(database=database), statement_timeout_ms=None)
        schema.init(conn, "someone/else-model", 384)
        conn.close()
        name, url = postgres_server.create_member(database, "dora_" + database[-6:])
        roles.append(name)
        monkeypatch.setenv("RECALL_DATABASE_URL", url)
        recall = open_recall(tmp_path / "home")
        recall.store.record("m1", note("the build cache lives in /var/cache/buildkite"))
        assert recall.embed_pending() == 0 and not recall.store.dense_ready(recall.models.embedder)
        assert recall.search("where is the build cache", project="github.com/acme/shop")  # by its words
        checks = {c.name: c for c in recall.diagnose()}
        assert not checks["team model"].ok and "someone/else-model" in checks["team model"].detail
        recall.close()
    finally:
        postgres_server.drop_database(database)
        postgres_server.drop_roles(roles)


def test_without_the_driver_one_clear_message_and_nothing_lost(team_database, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "psycopg", None)  # `import psycopg` now fails as if not installed
    recall = as_member(monkeypatch, team_database.alice, tmp_path / "home")
    with pytest.raises(StorageUnavailable) as raised:
        recall.store.record("e1", note("kept for later"))
    # recall's own folder with its extra: never a package name, which anyone may hold on PyPI
    assert f"{sys.executable} -m pip install '{ROOT}[postgres]'" in str(raised.value)
    recall.close()


def test_a_server_that_goes_away_costs_no_hook_and_loses_no_event(tmp_path, monkeypatch):
    """Postgres stops mid-session: hooks still exit 0 and answer, the session is told once, the events wait
    in the local spool, and land exactly once when the server is back. No password anywhere on disk."""
    from pg import PostgresServer

    from memory_store.api import init_team

    server = PostgresServer()
    home = tmp_path / "home"
    repo = clone(tmp_path / "src" / "shop")
    try:
        database = server.create_database()
        init_team(server.url(database=database))
        role, url = server.create_member(database, "erin")
        password = url.split(":")[2].split("@")[0]
        monkeypatch.setenv("RECALL_DATABASE_URL", url)  # for `recall doctor` below, run in the clone
        monkeypatch.chdir(repo)
        env = {**os.environ, "RECALL_HOME": str(home), "RECALL_PYTHON": sys.executable, "RECALL_DATABASE_URL": url}
        hooks = HookRunner(ROOT, env)

        def send(name: str, session: str, **changes):
            result = hooks.run(name.split("-")[0], load_payload(name, cwd=str(repo), session_id=session, **changes))
            assert result.returncode == 0 and result.stderr == ""
            return result

        send("SessionStart-startup", "before")
        send("UserPromptSubmit", "before", prompt="the staging database is called heron", prompt_id="p0")
        server.stop()
        started = send("SessionStart-startup", "during")
        message = (started.output or {}).get("systemMessage", "")
        assert "recall:" in message and "erin:***@" in message and password not in message
        for i in range(3):
            send("UserPromptSubmit", "during", prompt=f"outage note {i}: the failover target is osprey-{i}",
                 prompt_id=f"p{i}")
            send("PostToolUse-Bash", "during", prompt_id=f"p{i}")
            send("Stop", "during", prompt_id=f"p{i}", last_assistant_message=f"Failover {i} points at osprey-{i}.")
        assert len(spool.pending(DataPaths(home).spool)) >= 9
        doctor = runner.invoke(app, ["doctor", "--home", str(home), "--json"])
        store_check = next(c for c in json.loads(doctor.stdout)["checks"] if c["name"] == "store")
        assert not store_check["ok"] and "erin:***@" in store_check["detail"]
        status = runner.invoke(app, ["status", "--home", str(home)])  # one diagnosis, and a failing exit
        assert status.exit_code == 1 and "the store cannot be reached" in status.stdout, status.stdout
        assert "no worker" not in status.stdout and "[REDACTED" not in status.stdout
        for path in [*home.rglob("*")]:  # spool, logs, runtime files: the password nowhere
            if path.is_file():
                assert password.encode() not in path.read_bytes(), path

        server.start()
        sent = {"before": 2, "during": 10}
        import psycopg

        def landed() -> bool:
            send("UserPromptSubmit", "after", prompt="is the outage over?", prompt_id="q")
            with psycopg.connect(url, autocommit=True) as conn:
                count = conn.execute("SELECT count(*) FROM recall.events").fetchone()[0]
            return count >= sent["before"] + sent["during"] + 1 and not spool.pending(DataPaths(home).spool)

        assert wait_for(landed, timeout=90, interval=1.0)
        with psycopg.connect(url, autocommit=True) as conn:
            texts = [r[0] for r in conn.execute("SELECT text FROM recall.memories WHERE kind = 'prompt' "
                                                "ORDER BY id").fetchall()]
        assert sum("osprey-1" in t for t in texts) == 1 and any("heron" in t for t in texts)  # exactly once
        for path in [*home.rglob("*")]:
            if path.is_file():
                assert password.encode() not in path.read_bytes(), path
    finally:
        stop_worker(home)
        server.stop(remove=True)


def test_memories_of_the_local_file_move_to_the_server_by_export_and_import(team_database, tmp_path, monkeypatch):
    home = tmp_path / "home"
    monkeypatch.delenv("RECALL_DATABASE_URL", raising=False)
    local = open_recall(home, load_models=False)
    local.store.record("l1", note("The nightly export runs at 02:00 UTC from cron on ops-2"))
    local.pin([local.store.record("l2", note("Never force-push to main", kind="note")).memory_id])
    local.close()
    exported = tmp_path / "mine.jsonl"
    cli("export", "--all-projects", "--output", str(exported), "--home", str(home))
    monkeypatch.setenv("RECALL_DATABASE_URL", team_database.alice)
    report = json.loads(cli("import", str(exported), "--no-embed", "--home", str(home), "--json"))
    assert report["new_memories"] == 2
    shared = open_recall(home, load_models=False)
    assert shared.store.backend == "postgres"
    hits = shared.search("when does the nightly export run", project="github.com/acme/shop")
    assert hits and "02:00 UTC" in hits[0].text and hits[0].owner == team_database.alice_role
    assert shared.store.pinned_ids("github.com/acme/shop")
    shared.close()
    again = json.loads(cli("import", str(exported), "--no-embed", "--home", str(home), "--json"))
    assert again["new_memories"] == 0  # the same export twice adds nothing


def test_the_viewer_offers_only_what_a_teammate_may_do_and_says_why_it_refused(team_database, tmp_path, monkeypatch):
    """Forgetting a teammate's shared memory in the viewer once went back to search with the memory still there and
    no word why; Pin and Forget were offered on it. The CLI said why; now the viewer does too."""
    from memory_store.shells.viewer import Viewer

    alice = as_member(monkeypatch, team_database.alice, tmp_path / "alice")
    shared = alice.store.record("a1", note("Releases are cut on Tuesdays", visibility="team")).memory_id
    alice.close()
    bob = as_member(monkeypatch, team_database.bob, tmp_path / "bob")
    try:
        viewer = Viewer(bob, "t0k3n")
        status, page = viewer.memory(shared, {})
        assert status == 200 and "Forget for good" not in page and "only its author can pin or forget it" in page
        assert viewer.confirm_forget(shared)[0] == 403
        for action in ("forget", "pin"):
            location = viewer.act(shared, action, confirmed=True)
            assert f"refused={action}" in location and bob.get([shared])
            assert "Not done" in viewer.memory(shared, {"refused": action})[1]
        mine = bob.store.record("b1", note("bob's own note")).memory_id
        assert "Forget for good" in viewer.memory(mine, {})[1]
    finally:
        bob.close()


def test_a_teammates_shared_prompt_is_shown_with_its_author_not_as_an_open_question(team_database, tmp_path,
                                                                                     monkeypatch):
    """Her answer is private to her: bob's brief once showed alice's shared prompt as '(open, no answer yet)', and
    without the author label the README promises (team, by alice)."""
    from memory_store.core.injection import tiers

    alice = as_member(monkeypatch, team_database.alice, tmp_path / "alice")
    now = time.time()
    alice.store.record("p1", note("Which region do the staging buckets live in? We keep them in eu-west-3 now.",
                                  kind="prompt", visibility="team", at=now - 60, meta={"prompt_id": "q1"}))
    alice.store.record("x1", note("They live in eu-west-3 since the move.", at=now - 50, meta={"prompt_id": "q1"}))
    alice.close()
    bob = as_member(monkeypatch, team_database.bob, tmp_path / "bob")
    try:
        items = tiers.brief(bob.store, "github.com/acme/shop", now)
        shared = [i for i in items if "eu-west-3" in i.text]
        assert shared and "team, by alice" in shared[0].kind and "(open, no answer yet)" not in shared[0].text
    finally:
        bob.close()


def test_plain_text_search_and_show_say_whose_a_team_memory_is(team_database, tmp_path, monkeypatch):
    alice = as_member(monkeypatch, team_database.alice, tmp_path / "alice")
    shared = alice.remember("Releases are cut on Tuesdays, never on Fridays", "github.com/acme/shop", team=True)
    alice.close()
    bob = as_member(monkeypatch, team_database.bob, tmp_path / "bob")
    bob.close()
    home = str(tmp_path / "bob")
    found = cli("search", "when are releases cut", "--project", "github.com/acme/shop", "--home", home, "--all")
    assert f"#{shared.id}" in found and f"team, by {team_database.alice_role}" in found
    shown = cli("show", str(shared.id), "--home", home)
    assert f"owner: {team_database.alice_role} · shared with the team" in shown
