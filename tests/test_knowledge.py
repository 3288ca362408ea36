"""Facts, procedures and decisions beside the episodes (issue 4.3): read from realistic edits, commands and answers
(core/knowledge/extract.py), kept with their memory and replaced by newer ones (storage/knowledge.py), shown first
when a prompt asks for them (retrieval/knowledge.py), listed by `recall facts` and the MCP server. Real hook
payloads through the router, real embeddings, a real SQLite file (and PostgreSQL for the storage contract)."""

from __future__ import annotations

import json
import uuid

import pytest
from conftest import DAY, run_cli
from test_precision import edit_session

from memory_store.core.knowledge import extract
from memory_store.shared.projects import project_for


def bash_session(demo, prompt, calls, answer):
    """One turn with Bash calls: (command, description, output, exit code); a failing one is PostToolUseFailure."""
    session, turn = str(uuid.uuid4()), str(uuid.uuid4())
    demo.fire("SessionStart-startup", session)
    demo.fire("UserPromptSubmit", session, prompt=prompt, prompt_id=turn)
    for command, description, output, code in calls:
        tool_input = {"command": command, "description": description}
        if code:
            demo.fire("PostToolUseFailure-Bash", session, prompt_id=turn, tool_name="Bash", tool_input=tool_input,
                      error=f"Exit code {code}\n{output}")
        else:
            demo.fire("PostToolUse-Bash", session, prompt_id=turn, tool_input=tool_input,
                      tool_response={"stdout": output, "stderr": "", "interrupted": False})
    demo.fire("Stop", session, prompt_id=turn, last_assistant_message=answer)
    demo.fire("SessionEnd-other", session)
    demo.recall.embed_pending()


def edits_a_day_apart(demo, *edits):
    """Edit sessions (prompt, path, old, new, answer), each a day after the one before."""
    for n, edit in enumerate(edits):
        demo.clock += DAY if n else 0
        edit_session(demo, *edit)


def items(recall, project, kinds=None):
    return recall.knowledge(project_for(str(project)), kinds)


# --- reading knowledge from text ---------------------------------------------------------------------------------


@pytest.mark.parametrize("path, old, new, key, value", [
    ("deploy/values.yaml", "  replicas: 2\n  memory: 512Mi", "  replicas: 4\n  memory: 1Gi", "memory", "1Gi"),
    ("pyproject.toml", 'requires-python = ">=3.10"', 'requires-python = ">=3.11"', "requires-python", '">=3.11"'),
    ("config/app.json", '  "sessionTtlMinutes": 30,', '  "sessionTtlMinutes": 45,', "sessiontttlminutes", "45"),
    ("src/limits.ts", "export const MAX_BATCH = 100;", "export const MAX_BATCH = 250;", "max_batch", "250"),
    ("config/mail.php", "    'retry_after' => 90,", "    'retry_after' => 600,", "retry_after", "600"),
    ("infra/main.tf", '  instance_type = "t3.medium"', '  instance_type = "m5.large"', "instance_type", '"m5.large"'),
])
def test_an_edit_of_a_config_or_a_constant_is_a_fact_about_that_file_and_setting(path, old, new, key, value):
    found = extract.from_edit(path, [(old, new)])
    assert [item.kind for item in found] == ["fact"] * len(found) and found
    fact = next(item for item in found if item.value == value)
    assert fact.subject == f"{path}:{key}".lower().replace("sessiontttl", "sessionttl") and fact.file == path
    assert value in fact.text and path in fact.text


def test_code_that_is_not_a_setting_teaches_nothing():
    code = ("    const status = postmarkStatus(err);\n    let total = items.length;\n    result = compute(a, b)\n"
            "    if (x == 3) return;\n    name: user.name,")
    assert extract.from_edit("src/queues/email.processor.ts", [("", code)]) == []


def test_the_kind_of_value_is_kept_for_questions_that_name_it():
    assert "instance type" in extract.from_edit("infra/main.tf", [("", 'instance_type = "m5.large"')])[0].thing
    stated = extract.from_statement("The workers run on m5.large instances since the migration.")
    assert stated and "instance type" in stated[0].thing
    assert "version" in extract.thing_of("bumped fastapi to 0.115.2")
    assert "duration" in extract.thing_of("the lock is held for 90 seconds")


def test_commands_teach_procedures_unless_they_only_look():
    found = extract.from_command("pnpm test:e2e --runInBand", "Run the end-to-end suite")
    assert [(item.kind, item.subject) for item in found] == [("procedure", "run:pnpm test:e2e")]
    assert extract.from_command("grep -rn TODO src/ | head -20") == []
    assert extract.from_command("git status") == []
    exported = extract.from_command("export NODE_OPTIONS=--max-old-space-size=4096 && pnpm build")
    assert ("fact", "node_options") in [(item.kind, item.subject) for item in exported]


def test_statements_give_facts_procedures_and_decisions():
    answer = ("Done. The importer now runs with a batch size of 500 rows instead of 100. To reseed locally, run "
              "`make db-reset` first, then `make seed`. We keep the importer single-threaded because the vendor API "
              "rejects parallel sessions. From now on every migration ships a working down().")
    kinds = {item.kind: item.text for item in extract.from_statement(answer)}
    assert "500 rows" in kinds["fact"] and "make db-reset" in kinds["procedure"]
    assert "single-threaded" in kinds["decision"] or "down()" in kinds["decision"]
    assert extract.from_statement("Could you check why the build is slow?") == []


# --- kept with the memory, replaced by newer knowledge -----------------------------------------------------------


def test_a_newer_value_of_the_same_setting_replaces_the_older_one(demo, recall, project):
    edits_a_day_apart(demo, ("uploads fail for big PDFs", f"{project}/app/settings.py", "MAX_UPLOAD_MB = 5",
                             "MAX_UPLOAD_MB = 20", "Raised the upload limit to 20 MB."),
                      ("storage costs exploded, tighten uploads", f"{project}/app/settings.py", "MAX_UPLOAD_MB = 20",
                       "MAX_UPLOAD_MB = 12", "Lowered it; 12 MB covers 99% of PDFs."))
    current = [item for item in items(recall, project, ["fact"]) if item.subject.endswith(":max_upload_mb")]
    assert [item.value for item in current] == ["12"]
    assert [earlier.value for earlier in current[0].replaced] == ["20"]


def test_a_value_changed_in_other_words_replaces_the_setting(demo, recall, project):
    """The same setting, once written in a file and then changed in an answer that names it in words."""
    edit_session(demo, "the payment provider is slow at peak, give its calls more time",
                 f"{project}/config/payments.py", "PAYMENT_GATEWAY_TIMEOUT = 10", "PAYMENT_GATEWAY_TIMEOUT = 30",
                 "Done.")
    demo.clock += DAY
    demo.session(("we keep timing out on black friday", "I raised the payment gateway timeout to 45 seconds, "
                                                         "the provider's p99 at peak is 38 s."))
    facts = items(recall, project, ["fact"])
    newest = next(item for item in facts if "45 seconds" in item.text)
    assert any("PAYMENT_GATEWAY_TIMEOUT = 30" in earlier.text for earlier in newest.replaced)
    assert not any(item.text.startswith("PAYMENT_GATEWAY_TIMEOUT = 30") for item in facts)


def test_a_command_that_worked_after_failing_keeps_the_failure_as_its_note(demo, recall, project):
    bash_session(demo, "get the api running on my laptop", [
        ("pnpm start:api", "Start the API", "Error: connect ECONNREFUSED 127.0.0.1:5433", 1),
        ("docker compose up -d db && pnpm start:api", "Start the database, then the API", "listening on :3000", 0),
    ], "It needed the database first: `docker compose up -d db`, then `pnpm start:api`.")
    procedures = items(recall, project, ["procedure"])
    ran = next(item for item in procedures if item.value.startswith("docker compose up -d db &&"))
    assert "ECONNREFUSED" in ran.text and "Start the database" in ran.context


def test_forgetting_a_memory_takes_its_knowledge_with_it(demo, recall, project, home):
    demo.session(("what's the staging redis eviction policy?", "Staging Redis runs maxmemory-policy allkeys-lru "
                                                                "with maxmemory 2gb since the cache move."))
    facts = items(recall, project, ["fact"])
    assert any("allkeys-lru" in item.text for item in facts)
    recall.forget(sorted({item.source_id for item in facts}))
    assert items(recall, project) == []
    recall.store.checkpoint()
    assert b"allkeys-lru" not in (home / "recall.db").read_bytes()


def test_knowledge_is_stored_and_replaced_alike_in_both_backends(backend, home, tmp_path):
    from conftest import Project, open_recall

    path = tmp_path / "projects" / "shop"
    (path / ".git").mkdir(parents=True)
    with open_recall(home) as recall:
        demo = Project(recall, path, __import__("time").time())
        demo.session(("how many attempts does a webhook delivery get?", "Webhook deliveries get 5 attempts "
                                                                         "with exponential backoff."))
        demo.clock += DAY
        demo.session(("partners complain about lost webhooks", "Webhook deliveries now get 8 attempts with "
                                                                "exponential backoff."))
        facts = recall.knowledge(project_for(str(path)), ["fact"])
        current = next(item for item in facts if "8 attempts" in item.text)
        assert [earlier.text for earlier in current.replaced if "5 attempts" in earlier.text]
        assert not any("5 attempts" in item.text for item in facts)
        assert recall.knowledge(project_for(str(path)), ["fact"], query="webhook attempts")[0].id == current.id


# --- shown when asked --------------------------------------------------------------------------------------------


def test_a_question_about_a_current_value_gets_the_fact_first_with_what_it_replaced(demo, project):
    edit_session(demo, "jobs pile up, give the worker more parallelism", f"{project}/.github/ci.yml",
                 "  WORKER_CONCURRENCY: 4", "  WORKER_CONCURRENCY: 8", "Concurrency is 8 now.")
    demo.clock += DAY
    edit_session(demo, "the database chokes, dial the worker back", f"{project}/.github/ci.yml",
                 "  WORKER_CONCURRENCY: 8", "  WORKER_CONCURRENCY: 6", "Set it to 6.")
    injected = demo.ask("how many jobs does one worker run in parallel these days?")
    first = injected.splitlines()[3]
    assert "WORKER_CONCURRENCY = 6" in first and "Current since" in first and "was: WORKER_CONCURRENCY = 8" in first


def test_a_how_to_question_gets_the_procedure(demo, project):
    bash_session(demo, "the e2e suite, how do we run it?", [
        ("pnpm test:e2e", "Run the end-to-end suite", "Tests: 41 passed", 0)],
        "The end-to-end suite runs with `pnpm test:e2e`; it needs `docker compose up -d` first for Postgres.")
    injected = demo.ask("how do I launch the end-to-end tests here?")
    assert "pnpm test:e2e" in injected


def test_nothing_is_added_for_a_prompt_that_wants_nothing(demo, project):
    edit_session(demo, "raise the upload cap", f"{project}/app/settings.py", "MAX_UPLOAD_MB = 5",
                 "MAX_UPLOAD_MB = 20", "Raised the upload limit to 20 MB.")
    for prompt in ("thanks, that's all", "what's the difference between a mutex and a semaphore?",
                   "rename the helper in utils.py to parse_row"):
        assert demo.ask(prompt) == "", prompt


def test_a_fact_the_brief_showed_in_full_is_not_injected_again(demo):
    demo.session(("where does the nightly export land?", "The nightly export lands in s3://acme-exports/nightly/ "
                                                        "as parquet, one folder per day."))
    session = str(uuid.uuid4())
    start = demo.fire("SessionStart-startup", session)
    assert "acme-exports" in start["hookSpecificOutput"]["additionalContext"]
    out = demo.fire("UserPromptSubmit", session, prompt="where do the nightly export files end up these days?",
                    prompt_id=str(uuid.uuid4()))
    assert "acme-exports" not in (out.get("hookSpecificOutput") or {}).get("additionalContext", "")


def test_the_brief_does_not_show_one_exchange_twice(demo):
    """A follow-up and the turn it follows are one episode from either end: the brief shows it once."""
    demo.session(("the csv export drops rows with a comma in the name", "The writer did not quote fields; it uses "
                                                                         "csv.QUOTE_MINIMAL now in exports/csv.py."),
                 ("yes do that", "Done: exports/csv.py quotes every field with a comma, and a test covers it."))
    brief = demo.start()
    lines = [line for line in brief.splitlines() if line.startswith("- [")]
    assert sum("QUOTE_MINIMAL" in line for line in lines) == 1, brief


# --- listed for the user and for Claude --------------------------------------------------------------------------


def test_recall_facts_lists_current_facts_with_history(demo, project, home):
    edits_a_day_apart(demo, ("slow cold starts", f"{project}/serverless.yml", "  memorySize: 512", "  memorySize: 1024",
                             "Doubled the memory."),
                      ("costs", f"{project}/serverless.yml", "  memorySize: 1024", "  memorySize: 768", "768 is enough."))
    out = run_cli("facts", "--project", str(project), "--home", str(home)).stdout
    assert "memorySize = 768" in out and "was: memorySize = 1024" in out
    rows = json.loads(run_cli("facts", "--project", str(project), "--home", str(home), "--json").stdout)
    row = next(r for r in rows if r["subject"] == "serverless.yml:memorysize")
    assert row["replaced"][0]["value"] == "1024" and row["file"] == "serverless.yml"
    assert "no procedures yet" in run_cli("facts", "--kind", "procedure", "--project", str(project), "--home",
                                          str(home)).stdout


def test_a_setting_of_another_file_is_another_setting(demo, recall, project):
    edits_a_day_apart(demo, ("the api listens where?", f"{project}/services/api/config.yaml", "port: 8000",
                             "port: 8080", "The API listens on 8080."),
                      ("and the web app?", f"{project}/services/web/config.yaml", "port: 2000", "port: 3000", "Done."))
    current = {item.file: item.value for item in items(recall, project, ["fact"]) if item.subject.endswith(":port")}
    assert current == {"services/api/config.yaml": "8080", "services/web/config.yaml": "3000"}


def test_a_setting_named_like_a_secret_is_no_fact():
    found = extract.from_file_text("config/app.yaml", "PASSWORD_PROD: hunter22\ntoken_v2: abcd1234\n"
                                   "smtp_password_2: x9\napiKeyProd: \"zz99\"\nport: 8080")
    assert [item.value for item in found] == ["8080"]
    assert [item.subject for item in extract.from_command("export DB_TOKEN=abc123 && export PORT=8080")
            if item.kind == "fact"] == ["port"]


def test_forgetting_a_prompt_takes_it_out_of_the_knowledge_index_too(demo, recall, project):
    demo.session(("my divorce lawyer needs the export, what is the staging export bucket?",
                  "The staging export bucket is now s3://acme-stg-exports since the account move."))
    prompt = next(m for m in recall.select(project=str(project)) if m.kind == "prompt")
    assert recall.store.db.all("SELECT rowid FROM knowledge_fts WHERE knowledge_fts MATCH 'divorce'")
    recall.forget([prompt.id])
    assert recall.store.db.all("SELECT rowid FROM knowledge_fts WHERE knowledge_fts MATCH 'divorce'") == []
    assert recall.store.db.all("INSERT INTO knowledge_fts(knowledge_fts, rank) VALUES ('integrity-check', 1)") == []


def test_vectors_of_another_model_are_not_compared(demo, recall, project):
    """After `recall reindex` with a model of another size, knowledge vectors are made again; until then a lookup
    leaves the old ones aside instead of failing."""
    from memory_store.core.retrieval import intent, knowledge

    demo.session(("which port does the api use now?", "The API listens on port 8080 now, behind the proxy."))
    asked = "which port does the api use these days?"
    odd = b"\x00" * 4 * 768  # a 768-dimension vector against 384-dimension ones
    assert knowledge.relevant(recall.store, project_for(str(project)), asked, odd, intent.classify(asked)) == []
