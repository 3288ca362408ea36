"""What is current (issue 5.1): one engine (core/knowledge/current.py) that every surface asks, computed when read from
observations that are never marked replaced. Each test reproduces a case seen on main before: real hook payloads
through the router, the background reading the worker does, a real SQLite file (PostgreSQL where named)."""

from __future__ import annotations

import json
import re
import time
import uuid

import pytest
from conftest import DAY, Project, load_payload, run_cli

from memory_store import open_recall
from memory_store.shared.projects import project_for


def turn(demo, prompt, answer, tools=()):
    """A session of one turn: the prompt, tool calls (fixture name, fields), the answer; read in the background."""
    session, prompt_id = str(uuid.uuid4()), str(uuid.uuid4())
    demo.fire("SessionStart-startup", session)
    demo.fire("UserPromptSubmit", session, prompt=prompt, prompt_id=prompt_id)
    for name, fields in tools:
        demo.fire(name, session, prompt_id=prompt_id, **fields)
    demo.fire("Stop", session, prompt_id=prompt_id, last_assistant_message=answer)
    demo.fire("SessionEnd-other", session)
    demo.recall.embed_pending()
    demo.clock += DAY / 4


def write(demo, path, content, original=None):
    full = f"{demo.path}/{path}"
    response = {"type": "update" if original else "create", "filePath": full, "content": content}
    if original:
        response["originalFile"] = original
    return "PostToolUse-Write", {"tool_name": "Write", "tool_input": {"file_path": full, "content": content},
                                 "tool_response": response}


def edit(demo, path, old, new, original):
    full = f"{demo.path}/{path}"
    return "PostToolUse-Edit", {"tool_name": "Edit", "tool_input": {"file_path": full, "old_string": old,
                                                                   "new_string": new},
                                "tool_response": {"filePath": full, "oldString": old, "newString": new,
                                                  "originalFile": original, "structuredPatch": []}}


def bash(command, output, description=""):
    return "PostToolUse-Bash", {"tool_input": {"command": command, "description": description},
                                "tool_response": {"stdout": output, "stderr": "", "interrupted": False}}


def current(demo, kind=None):
    return demo.recall.knowledge(project_for(demo.path), [kind] if kind else None)


def value_of(demo, subject_end):
    """The current values of a file's setting: set by a write, or said of the change a write made (`written`)."""
    settings = [item.written or item for item in current(demo, "fact")]
    return {item.value for item in settings if item.subject.endswith(subject_end)}


def test_a_value_moved_in_words_is_what_the_prompt_and_explain_get(demo):
    """The dev server moved from 8123 to 9090 (said by the user): the question gets 9090 as current, the old answer
    marked; `recall explain` shows exactly what the hook injects."""
    turn(demo, "the dev server runs on port 8123", "Noted: the dev server listens on port 8123.")
    turn(demo, "we moved the dev server from port 8123 to port 9090", "Got it, 9090 from now on.")
    asked = "what is the dev server port now?"
    injected = demo.ask(asked)
    assert "9090" in injected
    for line in injected.splitlines():  # 8123 only where it is said to be the old value
        if "8123" in line and "9090" not in line:
            pytest.fail(f"the old port unmarked: {line}")
    _, block = demo.recall.explain(asked, project_for(demo.path), demo.clock + 30)
    assert without_ages(block) == without_ages(injected)


def without_ages(text):
    import re

    return re.sub(r", [^\]]* ago\]|, just now\]", "]", text)


def test_settings_of_one_file_are_kept_apart(demo):
    """database.port and redis.port of one Write are two settings; a value two keys share moves with neither."""
    original = "database:\n  port: 5432\nredis:\n  port: 6379\nrequest_timeout_s: 30\nlog_retention_days: 30\n"
    turn(demo, "set up the app config", "Done.", [write(demo, "config/app.yaml", original)])
    turn(demo, "requests time out under load", "Raised the request timeout to 45 s.",
         [edit(demo, "config/app.yaml", "request_timeout_s: 30", "request_timeout_s: 45", original)])
    assert value_of(demo, "#database.port") == {"5432"} and value_of(demo, "#redis.port") == {"6379"}
    assert value_of(demo, "#request_timeout_s") == {"45"} and value_of(demo, "#log_retention_days") == {"30"}
    retention = next(item for item in current(demo, "fact") if item.subject.endswith("#log_retention_days"))
    assert retention.replaced == []


def test_an_edit_sent_without_its_whole_file_changes_the_setting_it_sits_in(demo):
    """A client that sends only the replaced text as the file before: `timeout_s` of the edit is `sms.timeout_s` of
    the file written earlier, whose old value is then history, not current."""
    written = "sms:\n  provider: twilio\n  timeout_s: 10\ndb:\n  pool: 5\n"
    turn(demo, "add the sms settings", "Done.", [write(demo, "config/notify.yaml", written)])
    turn(demo, "sms sends time out on slow networks", "Done.",
         [edit(demo, "config/notify.yaml", "  timeout_s: 10", "  timeout_s: 25", "  timeout_s: 10")])
    assert value_of(demo, "timeout_s") == {"25"}


def test_a_value_refused_or_only_proposed_is_not_current(demo):
    turn(demo, "uploads of big PDFs fail", "Raised the upload limit.",
         [edit(demo, "app/settings.py", "MAX_UPLOAD_MB = 5", "MAX_UPLOAD_MB = 20", "MAX_UPLOAD_MB = 5\n")])
    turn(demo, "please don't set MAX_UPLOAD_MB to 50", "Understood, it stays as it is.")
    turn(demo, "ok. we could bump it to 100 if customers complain", "Sure, we can revisit it then.")
    assert value_of(demo, "#max_upload_mb") == {"20"}
    injected = demo.ask("what's the max upload size currently?")
    assert "MAX_UPLOAD_MB = 20" in injected and "Current since" in injected
    assert not [line for line in injected.splitlines() if "Current since" in line and ("50" in line or "100" in line)]


def test_a_variable_belongs_to_its_command_and_a_procedure_to_its_folder(demo):
    turn(demo, "start both services", "Both are up.", [
        bash("PORT=8081 pnpm --dir services/api start", "api listening on 8081", "Start the API"),
        bash("PORT=3000 pnpm --dir services/web dev", "ready on http://localhost:3000", "Start the web app")])
    procedures = {item.value for item in current(demo, "procedure")}
    assert procedures == {"PORT=8081 pnpm --dir services/api start", "PORT=3000 pnpm --dir services/web dev"}
    ports = {item.subject: item.value for item in current(demo, "fact") if item.subject.startswith("env:port@")}
    assert ports == {"env:port@pnpm start @services/api": "8081", "env:port@pnpm dev @services/web": "3000"}


def test_a_command_that_picks_another_target_is_another_procedure(demo):
    """`./gradlew test --tests=InvoiceSpec` worked after `./gradlew test --parallel` was made the way to run the suite:
    one program, two jobs; the suite's command stays current, not the old value of the other."""
    turn(demo, "the full test run takes forever", "From now on run the whole suite with `./gradlew test --parallel`: "
         "6 minutes instead of 20.", [bash("./gradlew test --parallel", "BUILD SUCCESSFUL in 6m 2s")])
    turn(demo, "only the invoice spec please", "InvoiceSpec passes.",
         [bash("./gradlew test --tests=InvoiceSpec", "BUILD SUCCESSFUL in 41s")])
    procedures = {item.value: item.replaced for item in current(demo, "procedure")}
    assert "./gradlew test --parallel" in procedures and "./gradlew test --tests=InvoiceSpec" in procedures
    assert not [old for replaced in procedures.values() for old in replaced if "--parallel" in old.value]


def test_a_question_about_one_file_gets_that_files_setting(demo):
    turn(demo, "write the deploy configs", "Done.", [
        write(demo, "deploy/postgres.yaml", "service:\n  name: pg\n  port: 5432\n"),
        write(demo, "deploy/redis.yaml", "service:\n  name: cache\n  port: 6379\n")])
    injected = demo.ask("which port does deploy/postgres.yaml give the service?")
    assert "5432" in injected
    assert not [line for line in injected.splitlines() if "Current since" in line and "6379" in line]


def test_a_change_said_with_its_unit_is_shown_in_words_with_the_file_that_sets_it(demo):
    """The edit puts 90 in preview_link_ttl_minutes and the answer says "90 minutes": one change, shown as said."""
    original = "return [\n    'preview_link_ttl_minutes' => 1440,\n];\n"
    turn(demo, "a reporter saw an unpublished draft, how?", "The reporter most likely saw that draft through a forwarded "
         "preview link: they are signed routes anyone holding the URL can open until it expires, and nothing checks "
         "the session. Legal already found a day too long, so I also cut preview links to 90 minutes.",
         [edit(demo, "config/newsroom.php", "'preview_link_ttl_minutes' => 1440,", "'preview_link_ttl_minutes' => 90,",
               original)])
    injected = demo.ask("how long does a draft preview link stay valid?")
    assert "cut preview links to 90 minutes. (set in config/newsroom.php) (was 1440" in injected
    assert [item.replaced[0].value for item in current(demo, "fact")] == ["1440"]
    edits = demo.recall.search("preview_link_ttl_minutes", project=project_for(demo.path), shown="all")
    assert edits and not [hit for hit in edits if hit.outdated], "its own answer does not make the edit outdated"


def test_a_users_request_and_the_edit_that_made_it_are_one_change(demo):
    """The user asks for 01:30 UTC and the edit sets "01:30" in a key whose name shares one word with the request: one
    change, current as the user said it; the old time is its history, not a value of its own."""
    original = 'backup_start_time: "00:00"\nbackup_keep_days: 14\n'
    turn(demo, "set up the nightly database backup", "Done.", [write(demo, "ops/backup.yml", original)])
    session, prompt_id = str(uuid.uuid4()), str(uuid.uuid4())
    demo.fire("SessionStart-startup", session)
    demo.fire("UserPromptSubmit", session, prompt="the nightly backup collides with the ETL, push it to 01:30 UTC",
              prompt_id=prompt_id)
    name, fields = edit(demo, "ops/backup.yml", 'backup_start_time: "00:00"', 'backup_start_time: "01:30"', original)
    demo.fire(name, session, prompt_id=prompt_id, **fields)
    demo.fire("Stop", session, prompt_id=prompt_id, last_assistant_message="Moved.")
    demo.recall.embed_pending()
    demo.clock += DAY
    injected = demo.ask("what time does the nightly backup run these days?")
    assert "push it to 01:30 UTC (set in ops/backup.yml)" in injected
    assert [item.replaced[0].value for item in current(demo, "fact") if "01:30" in item.value] == ['"00:00"']


def test_a_question_typed_in_lower_case_teaches_no_procedure_nor_rule(demo):
    """Sentences end in lower case too: the failing command of a question is no procedure, a report of what never
    happened is no rule, and a word in backticks after a name is no value of it."""
    turn(demo, "first week here. tried `docker compose up` and the api container just exits?? what's the proper way "
         "to bring the stack up", "Use `make up`: it builds the images first. The scheduler hands that to the ActiveJob "
         "`wait` option of reminder jobs.")
    turn(demo, "the nightly export never finished before 6 last week. how was that solved?", "It was a missing index.")
    assert [item.value for item in current(demo, "procedure")] == ["make up"]
    assert current(demo, "decision") == [] and current(demo, "fact") == []


def test_a_memory_that_cannot_be_read_stops_no_other_reading(demo):
    """A memory whose kept material is malformed (an import of a hand-edited export, say) keeps what it taught before
    and gets a log line; the others are read, and the queue empties instead of failing on it after every restart."""
    from memory_store.core import jobs

    turn(demo, "raise the upload limit", "Done.",
         [edit(demo, "app/settings.py", "MAX_UPLOAD_MB = 5", "MAX_UPLOAD_MB = 20", "MAX_UPLOAD_MB = 5\n")])
    store = demo.recall.store
    broken = store.db.value("SELECT id FROM memories WHERE text LIKE 'Edit %'")
    store.db.run("UPDATE memories SET meta = ? WHERE id = ?", (json.dumps({"path": "a.py", "settings": [[1, 2, 3]]}),
                                                             broken))
    turn(demo, "how long do sessions last?", "Sessions last 45 minutes now.")
    store.knowledge.requeue()
    assert jobs.learn_pending(store) > 0 and store.knowledge.pending() == 0
    assert "45 minutes" in [item.value for item in current(demo, "fact")]
    log = demo.recall.paths.log_file.read_text()
    assert "memory_unreadable" in log and f'"memory": {broken}' in log


def test_no_chain_of_observations_joins_two_files_settings_or_two_commands_variables(demo):
    """Sameness is a chain: a statement whose words fit the settings of two files, a statement about a variable, two
    edits read without their files: none of them makes two things one."""
    turn(demo, "write the deploy configs", "Done.", [write(demo, "deploy/postgres.yaml", "service:\n  port: 5432\n")])
    turn(demo, "what port does the service listen on?", "The service port is 8080.")
    turn(demo, "add redis", "Done.", [write(demo, "deploy/redis.yaml", "service:\n  port: 6379\n")])
    assert value_of(demo, "deploy/postgres.yaml#service.port") == {"5432"}
    assert value_of(demo, "deploy/redis.yaml#service.port") == {"6379"}

    turn(demo, "start both services", "Both are up.", [
        bash("API_PORT=8081 pnpm --dir services/api start", "api listening on 8081", "Start the API"),
        bash("API_PORT=3000 pnpm --dir services/web dev", "ready on http://localhost:3000", "Start the web app")])
    turn(demo, "which port is the api on?", "The api port is 8081.")
    ports = {item.subject: item.value for item in current(demo, "fact") if item.subject.startswith("env:api_port@")}
    assert ports == {"env:api_port@pnpm start @services/api": "8081", "env:api_port@pnpm dev @services/web": "3000"}

    # Edits whose files were gone when they were read: one key in two files is two settings.
    turn(demo, "tune the timeouts", "Done.", [
        edit(demo, "ops/gateway.toml", "read_timeout_s = 5", "read_timeout_s = 7", ""),
        edit(demo, "ops/worker.toml", "read_timeout_s = 30", "read_timeout_s = 45", "")])
    timeouts = {item.file: item.value for item in current(demo, "fact") if item.name.endswith("read_timeout_s")}
    assert timeouts == {"ops/gateway.toml": "7", "ops/worker.toml": "45"}


def test_a_setting_changed_more_often_than_a_read_holds_is_current_as_last_set(demo):
    """Past the observations one lookup reads (storage/knowledge.py READ_LIMIT), what goes is the oldest history."""
    from memory_store.core.knowledge import current as engine
    from memory_store.core.records import KnowledgeDraft, MemoryDraft
    from memory_store.core.storage.knowledge import READ_LIMIT

    store, project = demo.recall.store, project_for(demo.path)
    for n in range(READ_LIMIT + 50):
        at = demo.clock + n
        memory = store.record(f"set-{n}", MemoryDraft(project=project, kind="tool", text=f"Edit config/app.toml: {n}",
                                                      created_at=at)).memory_id
        store.knowledge.replace(memory, project, "s", at, [KnowledgeDraft(
            kind="fact", subject="file:config/app.toml#workers", name="workers", value=str(n), modality="set",
            source="edit", file="config/app.toml", text=f"workers = {n} (config/app.toml)")])
    newest = store.knowledge.listed(project, ["fact"], 1)
    [answer] = engine.resolve(store.knowledge, project, newest)
    assert answer.item.value == str(READ_LIMIT + 49)
    [oldest] = engine.resolve(store.knowledge, project, store.knowledge.items([1]))
    assert oldest.item.value == str(READ_LIMIT + 49)


def test_a_report_and_a_count_in_passing_are_no_facts(demo):
    turn(demo, "status of the batch?", "The 10 checks for paraA are finished. The 40 checks for midkill are still "
                                       "running; users get the summary three times a day.")
    assert current(demo, "fact") == []


def test_field_assignments_in_code_are_facts_and_change(demo):
    go = "func main() {\n\tcfg.ReadTimeout = 5 * time.Second\n}\n"
    rust = "fn build() {\n    pool.max_size = 8;\n}\n"
    turn(demo, "tune the server", "Done.", [
        edit(demo, "cmd/server/main.go", "cfg.ReadTimeout = 5 * time.Second", "cfg.ReadTimeout = 10 * time.Second", go),
        edit(demo, "src/db.rs", "pool.max_size = 8;", "pool.max_size = 16;", rust)])
    assert value_of(demo, "#cfg.read_timeout") == {"10 * time.Second"}
    assert value_of(demo, "#pool.max_size") == {"16"}
    facts = {item.subject: item for item in current(demo, "fact")}
    assert [e.value for e in facts["file:src/db.rs#pool.max_size"].replaced] == ["8"]


def test_the_brief_shows_no_fix_or_decision_as_the_old_value_of_a_setting(demo):
    turn(demo, "how often does the manifest sync run?", "manifest_sync_interval_s is 60 for now.")
    turn(demo, "the sync is slow", "Fixed: the SerializationFailure came from two transactions booking the same "
                                   "slot; bookings now retry in a serializable transaction.")
    turn(demo, "drift shows up too late", "I also lowered manifest_sync_interval_s to 45 so drift shows up sooner.")
    turn(demo, "and the release?", "We bumped the version to 1.5.0 for the release.")
    brief = demo.start()
    changed = [line for line in brief.splitlines() if "(was" in line]
    assert changed and any("45" in line.split("(was", 1)[0] and "60" in line.split("(was", 1)[1] for line in changed)
    for line in changed:
        assert "SerializationFailure" not in line.split("(was", 1)[1], line


def test_decisions_are_stored_listed_revoked_and_never_made_of_questions(demo, home):
    turn(demo, "never run migrations by hand on prod because the deploy pipeline tracks them", "Understood.")
    turn(demo, "should we never retry payment webhooks because they are not idempotent?",
         "You could use Redis instead of Postgres for dedup because it has sets, but I would keep Postgres.")
    turn(demo, "rule: always squash merges on the release branch because the changelog is built from commits",
         "Noted.")
    assert len([item for item in current(demo, "decision") if "squash" in item.text]) == 1
    turn(demo, "we no longer squash merges on the release branch", "Got it, merge commits are fine there again.")
    decisions = [item.text for item in current(demo, "decision")]
    assert decisions == ["never run migrations by hand on prod because the deploy pipeline tracks them"]
    out = run_cli("facts", "--kind", "decision", "--project", demo.path, "--home", str(home)).stdout
    assert "never run migrations by hand" in out and "squash" not in out and "retry payment" not in out


def test_a_report_in_a_rules_words_takes_no_rule_back(demo):
    turn(demo, "the caches go stale after deploys", "Rule from now on: always restart the worker after every deploy, "
         "because its caches go stale otherwise.")
    turn(demo, "prod is down", "The worker stopped running after the deploy because the disk filled up.")
    assert ["restart the worker" in item.text for item in current(demo, "decision")] == [True]


def test_before_an_edit_a_question_or_a_revoked_rule_is_not_shown_as_a_rule(demo):
    path = "config/horizon.php"
    turn(demo, f"should {path} never set a timeout above retry_after because jobs run twice?",
         f"Yes: in {path} a supervisor's timeout must stay below retry_after, otherwise a job runs twice.")
    turn(demo, f"in {path} we always pin the balance strategy to auto", "Noted, auto it is.")
    turn(demo, f"we no longer pin the balance strategy to auto in {path}, simple is fine", "Got it.")
    turn(demo, "in docs/runbook.md never paste customer data", "Noted.")
    session = str(uuid.uuid4())
    demo.fire("UserPromptSubmit", session, prompt="add a newsletter supervisor", prompt_id=str(uuid.uuid4()))
    payload = load_payload("PreToolUse-Bash", session_id=session, cwd=demo.path, tool_name="Edit",
                           tool_input={"file_path": f"{demo.path}/{path}"}, tool_use_id="toolu_x1")
    out = demo.recall.handle_event({"event_id": uuid.uuid4().hex, "received_at": demo.clock + 60, "payload": payload})
    shown = (out.get("hookSpecificOutput") or {}).get("additionalContext", "")
    assert "must stay below retry_after" in shown
    assert "?" not in shown.split("from earlier sessions:", 1)[-1]
    assert "pin the balance strategy" not in shown and "customer data" not in shown


def test_reindex_reads_knowledge_and_ties_again_from_what_is_stored(demo, home):
    turn(demo, "raise the webhook attempts", "Done.", [
        edit(demo, "config/webhooks.yml", "max_attempts: 5", "max_attempts: 8", "max_attempts: 5\n")])
    before = [(item.subject, item.value) for item in current(demo)]
    store = demo.recall.store
    with store.db.write():
        store.db.run("DELETE FROM knowledge")
        store.db.run("DELETE FROM ties")
    assert current(demo) == []
    run_cli("reindex", "--home", str(home))
    assert [(item.subject, item.value) for item in current(demo)] == before
    assert store.db.value("SELECT count(*) FROM ties WHERE key = 'file:config/webhooks.yml'") >= 1


def test_an_upgrade_reads_what_memories_kept_before_0_2_teach(home, tmp_path):
    """A store at schema 12 (knowledge then was verdicts, read at capture) holds memories: the upgrade queues every one
    and the background reading gives them their knowledge and ties."""
    from memory_store.core.storage.sqlite import connection, schema

    home.mkdir(parents=True, exist_ok=True)
    conn = connection.connect(home / "recall.db")
    for number, step in enumerate(schema.MIGRATIONS[:12]):
        with connection.write_transaction(conn):
            step(conn)
            conn.execute(f"PRAGMA user_version = {number + 1}")
    conn.execute("INSERT INTO memories(id, project, session_id, kind, text, created_at, content_hash) VALUES "
                 "(1, '/p', 's', 'exchange', 'From now on the ingest job keeps 21 days of raw files in "
                 "config/ingest.yaml.', ?, 'h1')", (time.time(),))
    conn.close()
    with open_recall(home) as recall:
        facts = recall.knowledge("/p", ["fact"])
        assert [item.value for item in facts] == ["21 days"]
        assert recall.store.db.value("SELECT count(*) FROM ties WHERE key = 'file:config/ingest.yaml'") == 1


def test_export_then_import_into_an_empty_data_dir_keeps_everything(demo, home, tmp_path):
    turn(demo, "the webhook retries", "Webhook deliveries get 5 attempts.")
    turn(demo, "partners lose webhooks", "Webhook deliveries now get 8 attempts.", [
        edit(demo, "config/webhooks.yml", "max_attempts: 5", "max_attempts: 8", "max_attempts: 5\n")])
    project = project_for(demo.path)
    pinned = demo.recall.select(project=project)[0].id
    demo.recall.pin([pinned])
    exported = tmp_path / "export.jsonl"
    run_cli("export", "--all-projects", "--output", str(exported), "--home", str(home))

    def state(recall):
        memories = sorted((m.kind, m.text, m.pinned) for m in recall.select(project=project))
        facts = sorted((k.subject, k.value, tuple(e.value for e in k.replaced)) for k in recall.knowledge(project))
        sessions = sorted(r["session_id"] for r in recall.store.session_rows(project))
        ties = sorted(r[0] for r in recall.store.db.all("SELECT key FROM ties"))
        return memories, facts, sessions, ties

    before = state(demo.recall)
    other = tmp_path / "other-home"
    run_cli("import", str(exported), "--home", str(other))
    with open_recall(other) as recall:
        after = state(recall)
    assert after == before and all(before)
    assert any(replaced for _, _, replaced in after[1])  # history came back with it


def test_a_shared_rule_reaches_a_teammate_labelled_and_a_private_one_does_not(team_database, tmp_path, monkeypatch):
    """PostgreSQL with row-level security: knowledge and ties follow their memory's visibility."""
    path = tmp_path / "projects" / "shop"
    (path / ".git").mkdir(parents=True)
    monkeypatch.setenv("RECALL_DATABASE_URL", team_database.alice)
    with open_recall(tmp_path / "alice") as alice:
        demo = Project(alice, path, time.time())
        turn(demo, "in src/billing/invoice.ts never round amounts before tax because totals drift",
             "Noted: src/billing/invoice.ts rounds only the final total.")
        turn(demo, "in src/billing/refund.ts always log the refund reason because audits need it", "Noted.")
        rule = next(m for m in alice.select(project=project_for(str(path))) if "never round" in m.text)
        alice.share([rule.id])
        alice.embed_pending()
    monkeypatch.setenv("RECALL_DATABASE_URL", team_database.bob)
    with open_recall(tmp_path / "bob") as bob:
        demo = Project(bob, path, time.time() + 60)
        decisions = bob.knowledge(project_for(str(path)), ["decision"])
        assert [item.owner for item in decisions] == [team_database.alice_role]
        assert "refund" not in json.dumps([item.model_dump() for item in decisions])
        session = str(uuid.uuid4())
        payload = load_payload("PreToolUse-Bash", session_id=session, cwd=str(path), tool_name="Edit",
                               tool_input={"file_path": str(path / "src/billing/invoice.ts")}, tool_use_id="toolu_b")
        out = bob.handle_event({"event_id": uuid.uuid4().hex, "received_at": time.time(), "payload": payload})
        shown = (out.get("hookSpecificOutput") or {}).get("additionalContext", "")
        assert "never round amounts" in shown and f"by {team_database.alice_role}" in shown
        payload["tool_input"] = {"file_path": str(path / "src/billing/refund.ts")}
        out = bob.handle_event({"event_id": uuid.uuid4().hex, "received_at": time.time(), "payload": payload})
        assert not (out.get("hookSpecificOutput") or {}).get("additionalContext")


def test_a_newer_reading_reads_every_memory_again(demo):
    """What a memory teaches is read again, old memories included, when how it is read changed (extract.READING)."""
    from memory_store.core import jobs
    from memory_store.core.knowledge import extract

    turn(demo, "the webhook retries", "Webhook deliveries get 5 attempts.")
    store = demo.recall.store
    with store.db.write():
        store.db.run("DELETE FROM knowledge")
    jobs.learn_pending(store)
    assert current(demo) == []  # read already, with this reading
    with store.db.write():
        store.db.run("UPDATE knowledge_reading SET version = ?", (extract.READING - 1,))
    assert jobs.learn_pending(store) == len(demo.recall.select(project=project_for(demo.path)))
    assert [item.value for item in current(demo, "fact")] == ["5 attempts"]


def test_one_hook_reads_each_lookup_of_observations_once(demo):
    """A prompt resolves its shown memories' statements and its matching facts: one thing's lookups are read from the
    store once per hook (knowledge/current.py reads_once), and again in the next."""
    from memory_store.core.knowledge import current as engine

    write(demo, "config/app.toml", "[server]\nport = 8123\nworkers = 4\n")
    turn(demo, "the dev server moved from port 8123 to 9090", "Noted: 9090.")
    store, project = demo.recall.store, project_for(demo.path)
    demo.recall.embed_pending()
    items = store.knowledge.listed(project, ["fact"])
    reads: list[str] = []

    class Counted:
        def __getattr__(self, name):
            def read(*args):
                reads.append(name)
                return getattr(store.knowledge, name)(*args)
            return read

    counted = Counted()
    alone = engine.resolve(counted, project, items)
    read_alone = len(reads)
    assert read_alone > 0
    reads.clear()
    with engine.reads_once():
        twice = [engine.resolve(counted, project, items), engine.resolve(counted, project, items[::-1])]
    assert len(reads) <= read_alone  # the second resolve read nothing
    assert {a.item.id for a in twice[0]} == {a.item.id for a in twice[1]} == {a.item.id for a in alone}


def test_a_procedure_asked_for_in_other_words_is_found_by_the_words_it_shares(demo):
    """A question and the procedure it asks for, in other words, are only 0.37 alike in meaning ("laptop only today,
    how would I execute the staging device suites?" / "Run the device tests with `./gradlew connectedCheck
    -Pflavor=staging`"), under the floor of a procedure asked for (0.42): the question's words the procedure says
    itself (device, staging) are the evidence (retrieval/knowledge.py WORDED_SHARED)."""
    turn(demo, "the instrumented tests keep timing out on CI, can we run them locally instead?",
         "Run the device tests with `./gradlew connectedCheck -Pflavor=staging` from the repo root; the emulator image "
         "is pinned in .ci/emulator.json.")
    from memory_store.core.retrieval import intent, knowledge

    assert any("connectedCheck" in item.text for item in current(demo, "procedure"))
    question = "laptop only today, how would I execute the staging device suites?"
    found = knowledge.relevant(demo.recall.store, project_for(demo.path), question,
                               demo.recall.models.embedder.embed_query(question), intent.classify(question))
    assert [f.item.kind for f in found][:1] == ["procedure"] and "connectedCheck" in found[0].item.text
    assert "connectedCheck" in demo.ask(question)


def test_a_hook_that_has_spent_its_time_reading_reads_no_more(demo):
    """Past the hook's time for reading observations (knowledge/current.py HOOK_READ_SECONDS), a thing is what was
    read of it: here nothing, so the old value's own observation stands alone, and nothing is lost but that."""
    from memory_store.core.knowledge import current as engine

    turn(demo, "the staging db pool size is 10", "Noted: 10.")
    turn(demo, "we raised the staging db pool size from 10 to 25", "Done: 25.")
    store, project = demo.recall.store, project_for(demo.path)
    old = [min((k for k in store.knowledge.listed(project, ["fact"]) if k.value == "10"), key=lambda k: k.created_at)]
    with engine.reads_once():
        [answer] = engine.resolve(store.knowledge, project, old)
    assert answer.item.value.startswith("25")  # time enough: the newer value is what is current
    with engine.reads_once(0.0):
        [answer] = engine.resolve(store.knowledge, project, old)
    assert answer.item.id == old[0].id


def test_the_brief_shows_a_changed_value_once_not_also_as_the_exchange_that_stated_it(demo):
    """The brief leads with what changed; the exchange the new value came from is the same memory: one line, not two
    ("the brief held #98 twice, once as a fact and once as the exchange it came from")."""
    turn(demo, "how many workers does the thumbnail queue run?", "thumbnail_workers is 4 for now.")
    turn(demo, "thumbnails lag behind uploads", "I raised thumbnail_workers to 12 in config/queues.yml; the backlog "
                                                "drains in under a minute now.")
    brief = demo.start()
    ids = re.findall(r"\[#(\d+) ", brief)
    assert any("(was" in line and "12" in line for line in brief.splitlines()), brief
    assert len(ids) == len(set(ids)), brief


def test_a_decision_its_answer_states_in_full_is_injected_once(demo):
    """The decision read from an answer and the answer itself are one memory: when the answer's line, as injected,
    says the decision whole, the decision's own line is left out (`recall demo` showed #7 twice at one prompt)."""
    turn(demo, "the e2e suite flakes on CI but never locally, can you dig into it?",
         "Found it: the suite raced the database container's start, so the first test often hit a closed port. I "
         "added a health check to the postgres service in .github/workflows/e2e.yml. Decision: e2e tests always use "
         "the CI's postgres service container, never a database on the runner host.")
    injected = demo.ask("where do the e2e tests get their postgres from on CI?")
    assert "never a database on the runner host" in injected, injected
    assert injected.count("never a database on the runner host") == 1, injected
