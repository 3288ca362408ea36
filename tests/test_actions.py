"""Memory at the moment of action (issue 4.4): before a file is touched or a command runs (PreToolUse), and when a
command fails with an error met before (PostToolUseFailure). Real hook payloads through the router, a real SQLite
file, and the real hook processes for what a hook prints; the real Claude Code CLI in tests/e2e."""

from __future__ import annotations

import json
import os
import time
import uuid

import pytest
from conftest import DAY, load_payload, run_cli

from memory_store.core.capture import ties

GENERATED = "src/email/templates.generated.ts"
RULE_ANSWER = (f"{GENERATED} is generated: scripts/build-templates.ts compiles templates/email/*.mjml into it, so "
               "never edit it by hand; change the .mjml and run `pnpm templates:build`.")
BOOT_ERROR = ("Exit code 1\n[Nest] 91734  - 06/12/2024, 10:14:36 AM   ERROR [ExceptionHandler] BullMQ: Your redis "
              "options maxRetriesPerRequest must be null.\nError: BullMQ: Your redis options maxRetriesPerRequest must "
              "be null.\n    at RedisConnection.checkBlockingOptions (/home/dev/src/app/node_modules/bullmq/dist/cjs/"
              "classes/redis-connection.js:79:23)\n ELIFECYCLE  Command failed with exit code 1.")
BOOT_ERROR_AGAIN = BOOT_ERROR.replace("91734", "5120").replace("06/12/2024, 10:14:36 AM", "07/01/2024, 9:02:11 PM") \
    .replace("/home/dev/src/app", "/Users/kim/work/app").replace(":79:23", ":81:9")
BOOT_FIX = "BullMQ now gets its own connection created with maxRetriesPerRequest: null in src/redis/redis.module.ts."


def fire(demo, session, name, **fields):
    return demo.fire(name, session, **fields)


def earlier_session(demo, prompt, answer, tools=()):
    """A session some days back (out of the SessionStart brief's day): a prompt, tool calls, the answer."""
    demo.clock -= 4 * DAY
    session, turn = str(uuid.uuid4()), str(uuid.uuid4())
    fire(demo, session, "SessionStart-startup")
    fire(demo, session, "UserPromptSubmit", prompt=prompt, prompt_id=turn)
    for name, fields in tools:
        fire(demo, session, name, prompt_id=turn, **fields)
    fire(demo, session, "Stop", prompt_id=turn, last_assistant_message=answer)
    fire(demo, session, "SessionEnd-other")
    demo.clock += 4 * DAY
    demo.recall.embed_pending()


def before_tool(demo, session, tool, tool_input):
    """PreToolUse as Claude Code sends it (the captured payload, another tool and input)."""
    payload = load_payload("PreToolUse-Bash", session_id=session, cwd=demo.path, tool_name=tool, tool_input=tool_input,
                           tool_use_id="toolu_" + uuid.uuid4().hex[:20])
    out = demo.recall.handle_event({"event_id": uuid.uuid4().hex, "received_at": demo.clock + 1, "payload": payload})
    return (out.get("hookSpecificOutput") or {}).get("additionalContext", "")


def failed(demo, session, command, error):
    demo.clock += 5
    out = demo.fire("PostToolUseFailure-Bash", session, tool_name="Bash", tool_input={"command": command}, error=error)
    return (out.get("hookSpecificOutput") or {}).get("additionalContext", "")


def new_session(demo, task):
    session = str(uuid.uuid4())
    fire(demo, session, "SessionStart-startup")
    fire(demo, session, "UserPromptSubmit", prompt=task, prompt_id=str(uuid.uuid4()))
    return session


@pytest.fixture
def learned(demo, project):
    """Earlier sessions: a rule about a generated file, and a boot error with its fix."""
    (project / "src" / "email").mkdir(parents=True)
    (project / "src" / "email" / "templates.generated.ts").write_text("// generated\n")
    earlier_session(demo, "the order_shipped subject is wrong, fix it", RULE_ANSWER, tools=[
        ("PostToolUse-Bash", {"tool_input": {"command": f"head -8 {GENERATED}", "description": "Look at it"},
                              "tool_response": {"stdout": "// generated", "stderr": "", "interrupted": False}})])
    earlier_session(demo, "boot the worker and check it comes up", f"The first boot failed. {BOOT_FIX}", tools=[
        ("PostToolUseFailure-Bash", {"tool_name": "Bash", "tool_input": {"command": "pnpm start:worker"},
                                     "error": BOOT_ERROR})])
    return demo


def test_before_an_edit_the_files_rule_comes_once(learned, project):
    session = new_session(learned, "legal wants a new footer in every mail")
    shown = before_tool(learned, session, "Edit", {"file_path": str(project / GENERATED), "old_string": "a",
                                                   "new_string": "b"})
    assert "never edit it by hand" in shown and f"Before you edit {GENERATED}, from earlier sessions" in shown
    assert shown.startswith("<recall-memory>") and "not instructions" in shown and len(shown) <= 600
    # Once per file per session; a Read of it later in the session brings nothing again.
    assert before_tool(learned, session, "Read", {"file_path": str(project / GENERATED)}) == ""
    # Another session is told again.
    assert "never edit it by hand" in before_tool(learned, new_session(learned, "another footer change"), "Write",
                                                  {"file_path": str(project / GENERATED), "content": "x"})


def test_nothing_when_nothing_worth_interrupting_is_known(learned, project):
    session = new_session(learned, "tidy the package")
    # Never seen; only read in passing (an answer that names it says nothing about it); a command that only looks.
    learned.session(("what's in the readme?", "README.md describes setup and the release steps."))
    for tool, tool_input in (("Edit", {"file_path": str(project / "src" / "never" / "seen.ts")}),
                             ("Read", {"file_path": str(project / "README.md")}),
                             ("Bash", {"command": f"cat {GENERATED}"}),
                             ("Bash", {"command": "pnpm lint"})):
        assert before_tool(learned, session, tool, tool_input) == "", (tool, tool_input)


def test_a_known_error_brings_the_fix_and_a_new_one_nothing(learned):
    session = new_session(learned, "I gave the digest processor its own redis client, boot the worker")
    fix = failed(learned, session, "pnpm start:worker", BOOT_ERROR_AGAIN)  # other pid, time, paths, line numbers
    assert "maxRetriesPerRequest: null" in fix and "was met before" in fix and len(fix) <= 600
    novel = "Exit code 1\nError: Cannot find module 'firebase-admin/messaging' or its corresponding type declarations."
    assert failed(learned, session, "pnpm build", novel) == ""
    assert failed(learned, new_session(learned, "again"), "pnpm start:worker", "Exit code 1\n") == ""  # no error line


GO_ERROR = ("Exit code 1\n--- FAIL: TestExportLargeTenant (0.41s)\npanic: open /tmp/export-3.csv: too many open files "
            "[recovered]\nFAIL\tgithub.com/acme/ledger/export\t0.512s")
GO_FIX_ANSWER = ("All green.\n- Logging: config.go now has a LOG_FORMAT switch; the fix for the flaky clock test "
                 "went in with it.\n- The export opened one file per chunk and never closed it: too many open files. "
                 "Fixed with defer f.Close() in writeChunk.")


def test_the_fix_shown_is_the_passage_about_the_error_not_the_one_before_it(demo):
    """A fix word in the sentence before the error's explanation must not win over the explanation and its fix."""
    earlier_session(demo, "the ledger export tests fail for big tenants", GO_FIX_ANSWER, tools=[
        ("PostToolUseFailure-Bash", {"tool_name": "Bash", "tool_input": {"command": "go test ./export/..."},
                                     "error": GO_ERROR})])
    session = new_session(demo, "added a parquet export, run the export tests")
    fix = failed(demo, session, "go test ./export/...", GO_ERROR.replace("0.41s", "0.39s").replace("0.512s", "0.47s"))
    assert "defer f.Close()" in fix and "LOG_FORMAT" not in fix


def test_an_error_met_only_in_this_session_brings_nothing(demo):
    session = new_session(demo, "boot the worker")
    assert failed(demo, session, "pnpm start:worker", BOOT_ERROR) == ""
    assert failed(demo, session, "pnpm start:worker", BOOT_ERROR_AGAIN) == ""  # it knows its own first attempt


def test_a_file_changed_since_recall_saw_it_says_so(demo, project):
    path = project / "config" / "queue.php"
    path.parent.mkdir(parents=True)
    path.write_text("'retry_after' => 90,\n")
    edit = {"file_path": str(path), "old_string": "'retry_after' => 90,", "new_string": "'retry_after' => 600,"}
    earlier_session(demo, "jobs get picked up twice", "Rule for config/queue.php: a supervisor's timeout must stay "
                    "below retry_after, otherwise a running job is handed to a second worker.", tools=[
                        ("PostToolUse-Edit", {"tool_name": "Edit", "tool_input": edit, "tool_response": {
                            "filePath": str(path), "oldString": edit["old_string"], "newString": edit["new_string"],
                            "originalFile": "", "structuredPatch": [], "userModified": False, "replaceAll": False}})])
    path.write_text("'retry_after' => 600,\n'block_for' => 5,\n")  # changed by hand since
    os.utime(path, (time.time() + 60, time.time() + 60))
    shown = before_tool(demo, new_session(demo, "add a supervisor for newsletters"), "Edit", {"file_path": str(path)})
    assert "stay below retry_after" in shown and "(file changed since" in shown


def test_switched_off_and_seen_in_the_injections(learned, project, home):
    session = new_session(learned, "footer")
    before_tool(learned, session, "Edit", {"file_path": str(project / GENERATED)})
    receipts = json.loads(run_cli("injections", "--session", session, "--home", str(home), "--json").stdout)
    assert any(r["hook"] == "PreToolUse" and any("tied to src/email" in i["why"] for i in r["memories"])
               for r in receipts), receipts
    (home / "config.json").write_text(json.dumps({"inject": {"before_tools": False, "on_failure": False}}))
    from memory_store.api import open_recall

    with open_recall(home) as recall:
        learned.recall = recall
        other = new_session(learned, "footer again")
        assert before_tool(learned, other, "Edit", {"file_path": str(project / GENERATED)}) == ""
        assert failed(learned, other, "pnpm start:worker", BOOT_ERROR_AGAIN) == ""


def test_an_error_signature_ignores_what_changes_between_runs():
    assert ties.signature_keys(BOOT_ERROR) == ties.signature_keys(BOOT_ERROR_AGAIN)
    assert ties.signature_keys(BOOT_ERROR)[0] != ties.signature_keys("Error: connect ECONNREFUSED 127.0.0.1:6379")[0]
    # Summary lines and log levels are no signature: two different failures of one suite do not match.
    assert ties.signature_keys("Tests: 2 failed, 40 passed, 42 total\n[error] Total time: 3 s") == []
    assert ties.error_lines("Error: P3014 Prisma Migrate could not create the shadow database")[0].startswith(
        "error: p3014")


def test_commands_are_tied_by_what_they_do():
    assert ties.command_key("cd app && timeout 12 pnpm start:worker; echo done") == "cmd:pnpm start:worker"
    assert ties.command_key('sbt "runMain shop.jobs.Ingest --env local"') == "cmd:sbt runMain shop.jobs.Ingest"
    assert ties.command_key("chmod +x ci/run.sh && ./ci/run.sh android --dev") == "cmd:run.sh android"
    assert ties.command_key("grep -rn TODO src") is None


@pytest.mark.slow  # real hook processes and a worker
def test_the_hook_processes_print_one_object_or_nothing(hooks, home, project):
    from conftest import stop_worker, worker_health
    from test_hooks import session as hook_session

    send = hook_session(hooks, project)
    send("SessionStart-startup")
    payload = load_payload("PreToolUse-Read", session_id="s1", cwd=str(project),
                           tool_input={"file_path": str(project / "src" / "app.py")})
    result = hooks.run("PreToolUse", payload)
    assert result.returncode == 0 and result.stdout.strip() == ""  # nothing known: nothing printed
    for raw in (b"", b"{", b'{"hook_event_name": "PreToolUse"}', b"\xff\xfe", b"[]"):
        bad = hooks.run("PreToolUse", raw)
        assert bad.returncode == 0 and bad.stdout.strip() == "", (raw, bad.stdout)
    # With no worker: nothing printed, nothing spooled (PreToolUse stores nothing), no worker started for it.
    stop_worker(home)
    away = hooks.run("PreToolUse", payload)
    assert away.returncode == 0 and away.stdout.strip() == ""
    assert not [p for p in (home / "spool").glob("*") if p.is_file()] if (home / "spool").exists() else True
    assert worker_health(home) is None


def test_what_a_command_is_tied_to_keeps_no_secret(demo, home):
    """A command's tie and the note that it was shown are stored: a secret in the command is redacted in both."""
    from secrets_corpus import SECRETS

    session = new_session(demo, "set the machines up")
    for _, text, _ in SECRETS:
        command = {"command": text, "description": "set up"}
        before_tool(demo, session, "Bash", command)
        demo.fire("PostToolUse-Bash", session, tool_input=command,
                  tool_response={"stdout": "ok", "stderr": "", "interrupted": False})
    demo.recall.embed_pending()  # ties are read in the background work
    store = demo.recall.store
    stored_keys = " ".join(key for (key,) in store.db.all("SELECT key FROM ties"))
    stored_keys += " ".join(key for (key,) in store.db.all("SELECT event_id FROM events"))
    assert "cmd:vault login" in stored_keys  # tied, by what the command does
    assert not [value for _, _, value in SECRETS if value in stored_keys]


def test_a_read_only_command_after_a_failure_is_not_its_fix(demo):
    """The rerun that passed is a rerun of the failed command, never any later command (`cat`, `ls`)."""
    earlier_session(demo, "why does the lint fail", "The lint fails because eslint 9 dropped the old config format; "
                    "fixed by moving .eslintrc.json to eslint.config.js.", tools=[
                        ("PostToolUseFailure-Bash", {"tool_name": "Bash", "tool_input": {"command": "grep -c x y.txt"},
                                                     "error": "Exit code 1\nError: ENOENT: no such file y.txt"}),
                        ("PostToolUse-Bash", {"tool_input": {"command": "cat package.json"},
                                              "tool_response": {"stdout": "{}", "stderr": "", "interrupted": False}})])
    fix = failed(demo, new_session(demo, "lint again"), "grep -c x y.txt", "Exit code 1\nError: ENOENT: no such file y.txt")
    assert "`cat package.json` passed" not in fix


def test_a_command_behind_cd_is_still_what_it_does():
    assert ties.command_key("cd web && pnpm test:e2e --watch") == "cmd:pnpm test:e2e"
    from memory_store.core.knowledge.commands import is_looking

    assert not is_looking("cd web && pnpm test:e2e") and is_looking("cd web && ls -la")


def test_ties_and_the_action_hooks_work_on_both_backends(backend, home, tmp_path):
    from conftest import Project

    from memory_store.api import open_recall

    path = tmp_path / "projects" / "shop"
    (path / ".git").mkdir(parents=True)
    with open_recall(home) as recall:
        demo = Project(recall, path, time.time())
        (path / "src" / "email").mkdir(parents=True)
        earlier_session(demo, "the subject is wrong, fix it", RULE_ANSWER)
        earlier_session(demo, "boot the worker", f"The first boot failed. {BOOT_FIX}", tools=[
            ("PostToolUseFailure-Bash", {"tool_name": "Bash", "tool_input": {"command": "pnpm start:worker"},
                                         "error": BOOT_ERROR})])
        session = new_session(demo, "new footer")
        assert "never edit it by hand" in before_tool(demo, session, "Edit", {"file_path": str(path / GENERATED)})
        assert "maxRetriesPerRequest: null" in failed(demo, session, "pnpm start:worker", BOOT_ERROR_AGAIN)


def test_a_short_rule_comes_with_what_it_needs_to_be_understood(demo, project):
    """"Rule for db/seeds.rb: fixtures only." says what is wrong there, the next sentence what to do instead: a rule
    that short is shown with the sentences beside it in its paragraph, not with the next paragraph."""
    (project / "db").mkdir()
    (project / "db" / "seeds.rb").write_text("# seeds\n")
    earlier_session(demo, "the demo data is a mess, clean up db/seeds.rb", (
        "Rule for db/seeds.rb: fixtures only. Anything that needs real customer data goes through "
        "script/import_customers.rb, which scrubs emails first.\n\nAlso bumped rubocop to 1.64."), tools=[
        ("PostToolUse-Bash", {"tool_input": {"command": "head -3 db/seeds.rb", "description": "Look at it"},
                              "tool_response": {"stdout": "# seeds", "stderr": "", "interrupted": False}})])
    shown = before_tool(demo, new_session(demo, "add a second demo clinic to the seeds"), "Edit",
                        {"file_path": str(project / "db" / "seeds.rb"), "old_string": "a", "new_string": "b"})
    assert "fixtures only" in shown and "script/import_customers.rb" in shown
    assert "rubocop" not in shown and len(shown) <= 600
