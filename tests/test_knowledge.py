"""Reading knowledge (issue 5.1): the settings a write gives values under their whole key path, what a prompt or an
answer states and how (its modality), what a command does and whether it worked. Unit tests on text of the kinds
real sessions hold, in stacks and phrasings the rules were not written for (dev sets B and C, the real transcripts);
then the stored observations through the router, on both backends. What is current: tests/test_current.py."""

from __future__ import annotations

import time
import uuid

import pytest
from conftest import DAY

from memory_store.core.knowledge import commands, settings, statements
from memory_store.shared.projects import project_for

# --- settings under their whole key path ----------------------------------------------------------------------------


@pytest.mark.parametrize("path, text, key, value", [
    ("config/app.yaml", "database:\n  host: db.internal\n  port: 5432\nredis:\n  port: 6379\n", "database.port", "5432"),
    ("config/app.yaml", "database:\n  host: db.internal\n  port: 5432\nredis:\n  port: 6379\n", "redis.port", "6379"),
    ("src/BookWell.Api/appsettings.json", '{\n  "Reminders": {\n    "LeadTimeHours": 24,\n    "PollIntervalSeconds": 60\n'
     '  }\n}\n', "Reminders.LeadTimeHours", "24"),
    ("appsettings.Development.json", '{\n  // local overrides\n  "Booking": {\n    "DefaultSlotMinutes": 15,\n  }\n}\n',
     "Booking.DefaultSlotMinutes", "15"),
    ("pyproject.toml", '[project]\nname = "shop"\nrequires-python = ">=3.11"\n', "project.requires-python", '">=3.11"'),
    ("ansible.cfg", "[defaults]\nforks = 40\nhost_key_checking = False\n", "defaults.forks", "40"),
    ("infra/main.tf", 'resource "aws_instance" "web" {\n  instance_type = "m5.large"\n}\n',
     "resource.aws_instance.web.instance_type", '"m5.large"'),
    ("cmd/server/main.go", "func main() {\n\tcfg.ReadTimeout = 10 * time.Second\n}\n", "cfg.ReadTimeout",
     "10 * time.Second"),
    ("src/db.rs", "fn build() {\n    pool.max_size = 16;\n}\n", "pool.max_size", "16"),
    ("vite.config.ts", "export default defineConfig({\n  server: {\n    port: 3000,\n  },\n})\n", "server.port", "3000"),
    ("src/BookWell.Infrastructure/DependencyInjection.cs", ".EnableRetryOnFailure(maxRetryCount: 6, maxRetryDelay: "
     "TimeSpan.FromSeconds(10), errorCodesToAdd: null)", "EnableRetryOnFailure.maxRetryCount", "6"),
    ("config/queue.php", "return [\n    'retry_after' => 90,\n];\n", "return.retry_after", "90"),
    ("boards/nimbus/prj.conf", "CONFIG_BT=y\nCONFIG_NIMBUS_ADV_INTERVAL_MS=2000\n", "CONFIG_NIMBUS_ADV_INTERVAL_MS", "2000"),
    ("lib/config.dart", "const unlockTimeout = Duration(seconds: 45);\n", "unlockTimeout", "Duration(seconds: 45)"),
])
def test_a_setting_is_kept_under_its_whole_key_path(path, text, key, value):
    found = settings.settings_of(path, text)
    assert found[key].value == value, found


def test_two_settings_with_one_value_are_two_settings():
    """A shared value drags no other key along: the timeout changed, the retention did not."""
    before = "request_timeout_s: 30\nlog_retention_days: 30\n"
    changed = settings.changed("config/app.yaml", before.replace("timeout_s: 30", "timeout_s: 45"), before)
    assert [(s.path, s.value, was) for s, was in changed] == [("request_timeout_s", "45", "30")]


def test_code_that_is_not_a_setting_teaches_nothing():
    code = ("    const status = postmarkStatus(err);\n    let total = items.length;\n    result = compute(a, b)\n"
            "    if (x == 3) return;\n    name: user.name,\n    x := compute()\n")
    assert settings.settings_of("src/email/email.processor.ts", code) == {}


def test_a_setting_named_like_a_secret_is_no_setting():
    text = ("PASSWORD_PROD: hunter22\ntoken_v2: abcd1234\nsmtp_password_2: x9\napiKeyProd: \"zz99\"\ndb_admin_pw: p1\n"
            "smtpPw: p2\nvpn_psk: p3\nlicense_key: LK-1\nport: 8080\n")
    assert [s.value for s in settings.settings_of("config/app.yaml", text).values()] == ["8080"]
    assert settings.settings_of("infra/prod.tfvars", 'instance_type = "m5.large"\n') == {}  # a file of secrets


def test_reading_settings_stays_linear_on_hostile_text():
    """A guard against a pattern that backtracks (the bound is generous: time targets are the benchmarks')."""
    started = time.monotonic()
    for text in ("1," * 10_000, "a: " * 7_000, "{" * 20_000, "x = (" * 5_000, "k" * 20_000, *HOSTILE_LINES):
        for path in ("a.yaml", "a.ts", "a.json", "a.tf"):
            settings.settings_of(path, text)
    assert time.monotonic() - started < 10


def hostile_text(unit: str, width: int, end: str) -> str:
    """20,000 characters of `unit`, cut into pieces just under what a reader takes whole (a line of a file, a
    sentence), so that every pattern runs on each: one long line would be skipped before any pattern sees it."""
    piece = (unit * (width // len(unit) + 1))[:width]
    return end.join([piece] * (20_000 // (width + len(end))))


HOSTILE_UNITS = ("1,", "9", "_", "a__", "a_", "a.", "a:", "-", " ", "ab ", "is ", "`", "=", "@a ", "x = 1 ")
HOSTILE_LINES = [hostile_text(unit, 390, "\n") for unit in HOSTILE_UNITS]
HOSTILE_SENTENCES = [hostile_text(f"x {unit}", 480, ". ") for unit in HOSTILE_UNITS]


# --- what a text states, and how -------------------------------------------------------------------------------------


def said(text, user=False):
    return [(s.kind, s.modality, s.name, s.value, s.old) for s in statements.statements(text, user=user)]


@pytest.mark.parametrize("text, value, old", [
    ("we moved the dev server from port 8123 to port 9090", "9090", "8123"),
    ("we bumped the version to 1.5.0", "1.5.0", ""),
    ("the worker pool is too small. lower it to 4", "4", ""),
    ("From now on the nightly export keeps 21 days", "21 days", ""),
    ("Media jobs now get 540 seconds so the transcoder can finish.", "540 seconds", ""),
    ("set the sync interval to 45 s", "45 s", ""),
    ("The retention was 7 days, now it's 30 days.", "30 days", "7 days"),  # the old value first, then the new
    ("Webhook deliveries got 5 attempts, they now get 8 attempts.", "8 attempts", "5 attempts"),
    ("Audit logs are kept for 14 days now.", "14 days", ""),  # "kept" here is no past
    ("The default render distance is 10 chunks now; the slider still reaches 32.", "10 chunks", ""),
])
def test_a_value_said_in_words_is_stated(text, value, old):
    facts = [s for s in statements.statements(text, user=True) if s.kind == "fact"]
    assert facts and facts[0].modality == "stated" and facts[0].value == value and facts[0].old == old, said(text)


@pytest.mark.parametrize("text, name, value", [
    ("Reminders:LeadTimeHours = 48 now.", "Reminders:LeadTimeHours", "48"),
    ("I also lowered manifest_sync_interval_s to 45 so drift shows up sooner.", "manifest_sync_interval_s", "45"),
    ("EF: maxRetryCount: 6 with a max delay of 10 s (was 3 / 5 s).", "maxRetryCount", "6"),
    ("@edit_window_seconds is 2 * 60 now: messages can be edited for 2 minutes.", "edit_window_seconds", "2 * 60"),
])
def test_a_setting_named_in_words_is_stated_under_its_name(text, name, value):
    assert ("fact", "stated", name, value) in [row[:4] for row in said(text)]


@pytest.mark.parametrize("text, modality", [
    ("please don't set MAX_UPLOAD_MB to 50", "negated"),
    ("the upload cap is fine. we could bump it to 100 if customers complain", "proposed"),
    ("should the retry budget go up to 8?", "asked"),
    ("I'll raise the pool size to 32 after the load test.", "proposed"),
    ("did we move the dev server to port 9090", "asked"),  # a user's question without its "?"
    ("can you check whether the timeout is 30 s", "asked"),
    ("can you set the timeout to 30 s", "stated"),  # a request sets it
])
def test_a_value_not_settled_is_said_so(text, modality):
    assert [row[1] for row in said(text, user=True) if row[0] == "fact"] == [modality], said(text, user=True)


@pytest.mark.parametrize("text", [
    "The 10 checks for paraA are finished.",
    "users get the push three times",
    "Fixed: the SerializationFailure came from two transactions booking the same slot.",
    "the admin pw for grafana is now [REDACTED:stated-secret]",
    "note <private>[private]</private> the box has 64 GB",
    "west build -b nimbus_v2 app --sysbuild -d build/nimbus",  # a word with digits is no name and its digits
    "Updated the limits in config/limits.php: free 3, pro 10.",  # a file is no setting
    "the jwt signing salt is now Xk9pQ2zz",  # a secret's value, even where redaction missed it
])
def test_a_count_in_passing_a_report_or_a_hidden_value_is_no_fact(text):
    assert [row for row in said(text) if row[0] == "fact"] == []


@pytest.mark.parametrize("text, modality", [
    ("We never retry payment webhooks because the provider already retries them.", "stated"),
    ("From now on every migration ships a working down().", "stated"),
    ("should we never retry payment webhooks because they are not idempotent?", "asked"),
    ("you could use Redis instead of Postgres for the job queue because it dedups the jobs for us", "proposed"),
    ("we didn't decide to drop the v1 endpoints because partners still call them", "negated"),
    ("We no longer squash merges on the release branch.", "revoked"),
    ("We stopped running the nightly e2e suite on every branch because it costs an hour.", "revoked"),
])
def test_decisions_and_rules_say_how_they_were_said(text, modality):
    assert [row[1] for row in said(text) if row[0] == "decision"] == [modality], said(text)


@pytest.mark.parametrize("text", [
    "would it be better to never cache the pricing page because prices change hourly?",
    "if we used Redis we could always dedup the jobs because it has sets",
    "one option is to stick with SQS because the team knows it",
    "never mind, the build passes now because the cache was cleared",  # chatter in a rule's words
    "they must have changed the api key format because the old keys fail",
    "it has to be the cache that breaks the build every time",
])
def test_a_question_a_proposal_or_a_hypothetical_is_no_decision(text):
    assert "stated" not in [row[1] for row in said(text) if row[0] == "decision"], said(text)


def test_a_how_to_is_a_procedure_unless_asked():
    assert ("procedure", "stated") in [row[:2] for row in said("To reseed locally, run `make db-reset` first.")]
    assert ("procedure", "stated") in [row[:2] for row in said("`tox -e py312` runs the whole suite in a venv.")]
    assert [row[1] for row in said("should I run `make db-reset` first?")] == ["asked"]


def test_reading_statements_stays_linear_on_hostile_text():
    started = time.monotonic()
    for text in ("1," * 10_000, "set it to " * 3_000, "a_b = 1 " * 3_000, "x is now 5 " * 2_000, "`" * 20_000,
                 "the " * 5_000 + "timeout is 30", *HOSTILE_SENTENCES, "Sign here: " + "_" * 60 + " and date it."):
        statements.statements(text)
    for output in ("\n" * 40_000, " \n" * 20_000, "error" * 40_000):  # a command's output, read for a failure
        commands.worked(output)
    assert time.monotonic() - started < 10


# --- commands ---------------------------------------------------------------------------------------------------------


def test_a_command_is_what_it_does_where_it_does_it():
    assert commands.procedure_key("PORT=3000 pnpm --dir services/web dev") == "pnpm dev @services/web"
    assert commands.procedure_key("PORT=8081 pnpm --dir services/api start") == "pnpm start @services/api"
    assert commands.procedure_key("cd web && pnpm test:e2e --watch") == "pnpm test:e2e @web"
    assert commands.procedure_key("./ci/build.sh android --dev") == "./ci/build.sh android"
    assert commands.procedure_key("docker compose up -d db && pnpm start:api") == "pnpm start:api"
    assert commands.environment("export NODE_OPTIONS=--max-old-space-size=4096 && pnpm build") == \
        [("NODE_OPTIONS", "--max-old-space-size=4096")]


@pytest.mark.parametrize("output, interrupted", [
    ("Tests: 3 failed, 41 passed, 44 total", False),
    ("npm ERR! code ELIFECYCLE", False),
    ("Traceback (most recent call last):\n  File x", False),
    ("FAILED tests/test_api.py::test_login - AssertionError", False),
    ("", True),
])
def test_a_command_that_exited_0_but_did_not_work_is_no_success(output, interrupted):
    assert not commands.worked(output, interrupted)
    assert commands.worked("Tests: 0 failed, 41 passed, 41 total")


# --- stored with their memory, through the router --------------------------------------------------------------------


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


def test_a_command_that_worked_after_failing_keeps_the_failure_as_its_note(demo, recall, project):
    bash_session(demo, "get the api running on my laptop", [
        ("pnpm start:api", "Start the API", "Error: connect ECONNREFUSED 127.0.0.1:5433", 1),
        ("docker compose up -d db && pnpm start:api", "Start the database, then the API", "listening on :3000", 0),
    ], "It needed the database first: `docker compose up -d db`, then `pnpm start:api`.")
    procedures = recall.knowledge(project_for(str(project)), ["procedure"])
    ran = next(item for item in procedures if item.value.startswith("docker compose up -d db &&"))
    assert "ECONNREFUSED" in ran.text and "Start the database" in ran.context


def test_a_failing_or_interrupted_command_is_no_procedure(demo, recall, project):
    bash_session(demo, "run the browser suite", [
        ("pnpm test:e2e 2>&1 | tail -5", "Run e2e", "Tests: 3 failed, 41 passed, 44 total", 0),
        ("pnpm lint", "Lint", "eslint: 2 errors", 1)], "Three e2e tests fail on the checkout page.")
    session = str(uuid.uuid4())
    demo.fire("PostToolUse-Bash", session, tool_input={"command": "pnpm build", "description": "Build"},
              tool_response={"stdout": "", "stderr": "", "interrupted": True})
    demo.recall.embed_pending()
    assert recall.knowledge(project_for(str(project)), ["procedure"]) == []


def test_forgetting_a_memory_takes_its_knowledge_and_its_words_with_it(demo, recall, project, home):
    demo.session(("my divorce lawyer needs the export, what is the staging export bucket?",
                  "The staging export bucket is now s3://acme-stg-exports since the account move."))
    name = project_for(str(project))
    assert any("acme-stg-exports" in item.text for item in recall.knowledge(name))
    prompt = next(m for m in recall.select(project=name) if m.kind == "prompt")
    recall.forget([prompt.id])  # the answer's observations quoted it as what they were for: read again without it
    assert recall.store.db.all("SELECT rowid FROM knowledge_fts WHERE knowledge_fts MATCH 'divorce'") == []
    assert recall.store.db.all("INSERT INTO knowledge_fts(knowledge_fts, rank) VALUES ('integrity-check', 1)") == []
    recall.forget(sorted({item.source_id for item in recall.knowledge(name)}))
    assert recall.knowledge(name) == [] and recall.store.knowledge.listed(name) == []
    recall.store.checkpoint()
    assert b"acme-stg-exports" not in (home / "recall.db").read_bytes()


def test_knowledge_is_stored_and_read_alike_in_both_backends(backend, home, tmp_path):
    from conftest import Project, open_recall

    path = tmp_path / "projects" / "shop"
    (path / ".git").mkdir(parents=True)
    with open_recall(home) as recall:
        demo = Project(recall, path, time.time())
        demo.session(("how many attempts does a webhook delivery get?", "Webhook deliveries get 5 attempts "
                                                                         "with exponential backoff."))
        demo.clock += DAY
        demo.session(("partners complain about lost webhooks", "Webhook deliveries now get 8 attempts with "
                                                                "exponential backoff."))
        facts = recall.knowledge(project_for(str(path)), ["fact"])
        current = next(item for item in facts if "8 attempts" in item.text)
        assert [earlier.value for earlier in current.replaced] == ["5 attempts"]
        assert not any(item.value == "5 attempts" for item in facts)
        assert recall.knowledge(project_for(str(path)), ["fact"], query="webhook attempts")[0].id == current.id


def test_vectors_of_another_model_are_not_compared(demo, recall, project):
    """After `recall reindex` with a model of another size, knowledge vectors are made again; until then a lookup
    leaves the old ones aside instead of failing."""
    from memory_store.core.retrieval import intent, knowledge

    demo.session(("which port does the api use now?", "The API listens on port 8080 now, behind the proxy."))
    asked = "which port does the api use these days?"
    odd = b"\x00" * 4 * 768  # a 768-dimension vector against 384-dimension ones
    same = recall.models.embedder.embed_query(asked)  # the positive control: the model's own vector finds the fact
    assert any("8080" in f.item.text for f in
               knowledge.relevant(recall.store, project_for(str(project)), asked, same, intent.classify(asked)))
    assert knowledge.relevant(recall.store, project_for(str(project)), asked, odd, intent.classify(asked)) == []


def test_a_question_for_a_command_gets_it_beside_the_fact_its_answer_led_with(demo, recall, project):
    """An answer that reports a result and names the command that got it holds a fact and a procedure: a question
    how to do it again gets the command, even where the report is the closer match (dev set C: one per source memory
    kept only the report)."""
    from memory_store.core.retrieval import intent, knowledge

    demo.session(("the phoenix app won't come up locally, it keeps failing on the database",
                  "The Phoenix app is serving on localhost:4000 now with the seed data loaded. Start it with "
                  "`mix ecto.setup && iex -S mix phx.server` next time."))
    asked = "what do I run to get the phoenix app up on my laptop?"
    found = knowledge.relevant(recall.store, project_for(str(project)), asked,
                               recall.models.embedder.embed_query(asked), intent.classify(asked))
    assert any(f.item.kind == "procedure" and "mix phx.server" in f.item.text for f in found), \
        [(f.item.kind, f.item.text, f.why) for f in found]


@pytest.mark.parametrize("interrupted", [False, True])
def test_an_answer_the_user_interrupted_states_nothing_settled(demo, recall, project, interrupted):
    """Claude Code 2.1.335's Interrupt event: the user cut the turn short (Esc), so what its answer had said so far
    is not current knowledge, however the answer is kept later (here its Stop; else SessionEnd's transcript)."""
    session, turn = str(uuid.uuid4()), str(uuid.uuid4())
    demo.fire("SessionStart-startup", session)
    demo.fire("UserPromptSubmit", session, prompt="which port should the grpc gateway listen on?", prompt_id=turn)
    if interrupted:
        demo.fire("Interrupt", session, prompt_id=turn)
    demo.fire("Stop", session, prompt_id=turn, last_assistant_message="The gRPC gateway listens on port 9443 now.")
    demo.fire("SessionEnd-other", session)
    demo.recall.embed_pending()
    learned = any("9443" in item.text for item in recall.knowledge(project_for(str(project))))
    assert learned != interrupted
