"""The injection gate and what it injects (issue 2.2), each failure mode of the seed's cue-and-cosine
rule on a small fixture of its own, through the router as the worker runs it (real payload shapes,
real embeddings, a real SQLite file)."""

from __future__ import annotations

import json
import time

import pytest
from conftest import DAY, Project
from typer.testing import CliRunner

from memory_store import open_recall
from memory_store.core.retrieval import intent
from memory_store.shells.cli import app

HANG = ("the nightly CI job hangs forever right after the integration tests pass, no output at all",
        "The job never ends because the postgres service container keeps running: docker compose up waits for "
        "every container, and nothing stops the database. Adding --abort-on-container-exit to the compose call "
        "in ci/run-integration.sh ends the run when the test container exits.")


def test_the_answer_is_injected_not_just_the_question(demo):
    """Failure 1: a paraphrase matches the earlier prompt best; the fix in its answer must come with it,
    and the bare prompt must not be injected beside its own exchange."""
    demo.session(HANG)
    injected = demo.ask("why did the CI pipeline get stuck after the integration stage?")
    assert "--abort-on-container-exit" in injected
    assert injected.count("the nightly CI job hangs forever") <= 1  # at most once, as the question's label
    assert injected.count("[#") == 1  # one episode, not the prompt and its exchange side by side


def test_a_follow_up_turn_completes_the_answer(demo):
    """The cause is stated in one turn, the fix in the next ("fix it"): both belong to the answer."""
    demo.session(("exports to S3 fail about once a day with SignatureDoesNotMatch",
                  "The signing clock drifts: the export container has no NTP, and requests more than 15 minutes "
                  "off are rejected."),
                 ("fix it", "Fixed: the export job now runs chronyd in the sidecar, so the clock stays within 1 s."))
    injected = demo.ask("what was wrong with the daily S3 export?")
    assert "no NTP" in injected and "chronyd" in injected


def test_the_newer_value_wins_and_says_what_it_replaced(demo):
    """Failure 2: an older and a newer statement about the same setting: the newer one is injected and
    marked current, with the value it replaced."""
    demo.session(("set the session cookie lifetime to 12 hours, people complain about logging in",
                  "Done: SESSION_LIFETIME_HOURS = 12 in config/auth.py, so a login now lasts 12 hours."))
    demo.session(("security review: cookie lifetime must be at most 4 hours",
                  "Done: SESSION_LIFETIME_HOURS = 4 in config/auth.py, so a login lasts 4 hours at most."))
    injected = demo.ask("how long does a login session last these days?")
    assert "SESSION_LIFETIME_HOURS = 4" in injected
    if "= 12" in injected:  # the older one may be shown, but then as replaced
        assert "outdated" in injected or "was" in injected


@pytest.mark.parametrize("prompt", [
    "add type hints to every function in app/export/s3.py",  # an instruction that names a file
    "rename the postgres service in docker-compose.yml to db",
    "what's the difference between docker compose up and docker compose run?",  # general knowledge
    "how does a postgres service container work in general?",
    "morning!",  # small talk
    "thanks, that's all for today",
])
def test_prompts_that_want_nothing_get_nothing(demo, prompt):
    """Failure 3: instructions naming a file and general questions passed the cue list with loosely
    related memories."""
    demo.session(HANG)
    assert demo.ask(prompt) == ""


def test_a_reminder_without_a_cue_and_a_weak_cosine_still_recall(demo):
    """Failure 4: "remind me of …" carries no "?" and no path; "which linter do we use?" matched below
    the seed's cosine 0.4."""
    demo.session(("the staging database moved: host is db-stg-7.internal.example.net, port 6432 (pgbouncer)",
                  "Noted: staging Postgres is db-stg-7.internal.example.net:6432, through pgbouncer."))
    demo.session(("we lint with ruff only from now on, flake8 and isort are gone",
                  "Rule noted: ruff is the only linter (ruff check and ruff format in pre-commit); flake8 and "
                  "isort configs are deleted."))
    assert "db-stg-7.internal.example.net" in demo.ask("remind me of the staging db host")
    assert "ruff" in demo.ask("which linter do we use?")


def test_the_session_start_brief_has_substance_not_small_talk(demo):
    """Failure 5: after a session of small talk the brief offered "hi", "ok continue" and "Done."."""
    demo.session(("hi", "Hello! What are we working on?"),
                 ("the login page 500s when the email has a plus sign", "The validator rejected '+' and raised "
                  "ValueError; app/auth/forms.py now accepts RFC 5322 local parts. Fixed."),
                 ("ok continue", "Done."),
                 ("thanks", "You're welcome."))
    brief = demo.start()
    assert "app/auth/forms.py" in brief
    lines = [line for line in brief.splitlines() if line.startswith("- [#")]
    assert not any(line.rstrip().endswith(("] hi", "] ok continue", "→ A: Done.", "] thanks")) for line in lines)
    assert "Hello! What are we working on?" not in brief and "You're welcome" not in brief


def test_identical_short_answers_stay_with_their_own_prompts(recall, demo):
    demo.session(("bump pytest to 8.3", "Done."), ("pin ruff to 0.6.9", "Done."))
    exchanges = [m for m in recall.store.recent(demo.path, ("exchange",), 0, 10)]
    assert len(exchanges) == 2 and {m.meta["prompt"] for m in exchanges} == {"bump pytest to 8.3",
                                                                            "pin ruff to 0.6.9"}


def test_an_explicit_question_about_the_past_reaches_beyond_the_warm_window(recall, demo):
    demo.clock -= 30 * DAY  # a month before the other sessions
    demo.session(("we picked argon2id over bcrypt for password hashing because bcrypt truncates at 72 bytes",
                  "Noted: passwords are hashed with argon2id (bcrypt truncates inputs at 72 bytes)."))
    demo.clock = time.time()
    asked = demo.ask("why is password hashing argon2id?")  # a month old: the episode is past the 7-day warm window
    assert "· exchange ·" not in asked and "· prompt ·" not in asked, asked  # (what it settled is still knowledge)
    assert "72 bytes" in demo.ask("remind me why we chose argon2id for passwords")


def test_explain_is_a_dry_run_with_reasons(recall, demo, home):
    demo.session(HANG)
    before = recall.store.counts()
    touched = {m.id: m.access_count for m in recall.store.recent(demo.path, ("prompt", "exchange"), 0, 50)}
    result = CliRunner().invoke(app, ["explain", "why did the CI pipeline get stuck after the integration stage?",
                                      "--project", demo.path, "--home", str(home), "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["inject"] and report["intent"] == "project" and "--abort-on-container-exit" in report["injected"]
    taken = [c for c in report["candidates"] if c["taken"]]
    assert taken and all({"similarity", "coverage", "lexical_rank", "dense_rank"} <= set(c["signals"]) for c in taken)
    assert all(c["why"] for c in report["candidates"])
    assert recall.store.counts() == before  # nothing captured
    assert {m.id: m.access_count for m in recall.store.recent(demo.path, ("prompt", "exchange"), 0, 50)} == touched

    text = CliRunner().invoke(app, ["explain", "add type hints to app/export/s3.py", "--project", demo.path,
                                    "--home", str(home)])
    assert text.exit_code == 0 and "instruction" in text.stdout and "nothing injected" in text.stdout
    said = CliRunner().invoke(app, ["explain", "why did the CI pipeline get stuck after the integration stage?",
                                    "--project", demo.path, "--home", str(home)]).stdout
    # In plain words: what was taken and why, against what this kind of prompt needs ("evidence 1.08 >= 0.45 for a
    # project prompt" before).
    assert "relevant: " in said and "where a question about this project needs" in said and ">=" not in said


def test_the_hook_stops_judging_once_it_has_taken_enough_and_decides_as_a_full_judgement_would(recall, demo):
    """The prompt path judges candidates best-ranked first and stops once `warm_top_k` are taken (nothing after them
    could be); `recall explain` judges them all. Both take the same memories."""
    from memory_store.core.retrieval import gate

    demo.session(HANG)
    demo.session(("the integration tests in CI hang after they pass", "Same cause as before: the postgres container "
                  "keeps docker compose up waiting; --abort-on-container-exit in ci/run-integration.sh fixes it."))
    for n in range(6):
        demo.session((f"what does the nightly CI job {n} run?", f"Job {n} runs the unit tests, then the integration "
                      f"tests against postgres {12 + n}, then uploads coverage."))
    question = "why did the CI pipeline get stuck after the integration stage?"
    hook = gate.judge(recall.store, recall.models, question, demo.path, None, demo.clock)
    full = gate.judge(recall.store, recall.models, question, demo.path, None, demo.clock, complete=True)
    assert [c.memory.id for c in hook.taken] == [c.memory.id for c in full.taken]
    assert len(hook.taken) == recall.config.tiers.warm_top_k
    assert len(hook.candidates) < len(full.candidates)  # the rest were never judged
    assert hook.candidates[-1].taken


def test_the_hook_stops_judging_once_nothing_left_could_be_taken_beside_a_strong_match(recall, demo):
    """One strong match and weak ones in other sessions: after taking the strong one, no episode left could come within
    `gate.margin` of it (its similarity at most its session's best dense result, the rest at most their full weights),
    so the hook stops judging; a full judgement takes the same one."""
    from memory_store.core.retrieval import gate

    demo.session(HANG)
    for n, topic in enumerate(["the billing export", "the search indexer", "the mobile login", "the docs build",
                               "the cache warmer", "the image resizer"]):
        demo.session((f"how does {topic} report progress?", f"{topic.capitalize()} logs a line every {n + 2} minutes "
                      "to stdout, and the dashboard reads the last one."))
    question = "why did the nightly CI job hang after the integration tests passed?"
    hook = gate.judge(recall.store, recall.models, question, demo.path, None, demo.clock)
    full = gate.judge(recall.store, recall.models, question, demo.path, None, demo.clock, complete=True)
    assert [c.memory.id for c in hook.taken] == [c.memory.id for c in full.taken] and len(hook.taken) == 1
    assert len(hook.candidates) < len(full.candidates)
    assert all(c.evidence < hook.taken[0].evidence - recall.config.gate.margin for c in full.candidates if not c.taken)
    # A candidate still waiting for its vector would be judged by its words: judging goes on up to it.
    session, turn = "unembedded-session", "turn-1"
    demo.fire("UserPromptSubmit", session, prompt="the nightly CI job: which integration tests does it run?",
              prompt_id=turn)
    demo.fire("Stop", session, prompt_id=turn, last_assistant_message="The nightly job runs every integration test.")
    assert recall.store.pending_embeddings() == 2
    waiting = gate.judge(recall.store, recall.models, question, demo.path, None, demo.clock)
    assert [c.memory.id for c in waiting.taken] == [c.memory.id for c in hook.taken]
    assert any(c.memory.session_id == session for c in waiting.candidates)


def test_work_meanwhile_runs_only_while_the_meaning_is_still_being_searched(recall, demo):
    """search.candidates hands the caller's read-ahead the time the embedding and vector search still take; once they
    are done (a big store's word search outlasts them) it would only delay the prompt, and is skipped."""
    from concurrent.futures import Future

    from memory_store.core.retrieval import search

    demo.session(HANG)
    embedder, cfg = recall.models.embedder, recall.config.ranking
    question = "why did the CI pipeline get stuck after the integration stage?"
    vector = embedder.embed_query(question)
    ran = []

    def search_with(embedding: Future, meanwhile):
        embedder.start_query = lambda text: embedding
        try:
            return search.candidates(recall.store, embedder, cfg, question, 20, demo.path, None, None, demo.clock,
                                     meanwhile=meanwhile)
        finally:
            del embedder.start_query

    def read_ahead(found, meaning_done):  # told whether the meaning is there yet: not before, and then it is
        ran.append(("read ahead", meaning_done()))
        pending.set_result(vector)
        ran.append(("meaning there", meaning_done()))

    pending: Future = Future()
    still_running = search_with(pending, read_ahead)
    done: Future = Future()
    done.set_result(vector)
    finished = search_with(done, lambda found, meaning_done: ran.append("read ahead"))
    assert ran == [("read ahead", False), ("meaning there", True)]
    assert still_running.dense == finished.dense and still_running.lexical == finished.lexical and finished.dense


@pytest.mark.parametrize("meaning_after", [1, 3])
def test_the_best_lexical_candidates_turns_are_read_while_the_prompt_is_embedded(recall, demo, meaning_after):
    """While the prompt is embedded the gate reads the conversations of the best lexical candidates, and stops once the
    meaning is there (after the read under way); then it reads the rest as it judges. It decides as it does without
    reading ahead."""
    import traceback
    from concurrent.futures import Future

    from memory_store.core.retrieval import gate

    demo.session(HANG)
    for n, topic in enumerate(["billing export", "search indexer", "mobile login", "docs build", "cache warmer",
                               "image resizer"]):
        demo.session((f"how does the nightly {topic} job report progress?", f"The nightly {topic} job logs a line "
                      f"every {n + 2} minutes to stdout, and the dashboard reads the last one."))
    question = "why did the nightly CI job hang after the integration tests passed?"
    expected = gate.judge(recall.store, recall.models, question, demo.path, None, demo.clock)
    embedder = recall.models.embedder
    vector = embedder.embed_query(question)
    pending: Future = Future()
    reads: list[str] = []
    conversations = recall.store.conversations

    def counted(memories, *args):
        ahead = any(frame.name == "read_lexical_ahead" for frame in traceback.extract_stack())
        reads.append("ahead" if ahead else "judging")
        found = conversations(memories, *args)
        if len(reads) == meaning_after and not pending.done():
            pending.set_result(vector)  # the meaning comes while this batch is read
        return found

    recall.store.conversations = counted
    embedder.start_query = lambda text: pending
    try:
        decided = gate.judge(recall.store, recall.models, question, demo.path, None, demo.clock)
    finally:
        del recall.store.conversations, embedder.start_query
    assert reads[:meaning_after] == ["ahead"] * meaning_after and set(reads[meaning_after:]) == {"judging"}
    assert [(c.memory.id, c.taken, c.evidence) for c in decided.candidates] == \
        [(c.memory.id, c.taken, c.evidence) for c in expected.candidates]


def test_the_prompt_hook_embeds_a_prompt_once_beginning_before_it_is_stored(recall, demo):
    """The prompt's embedding starts before the prompt is stored (gate.prepare) and the gate's search takes it: one
    model call per prompt; a prompt the gate does not search for starts none."""
    demo.session(HANG)
    embedder, store = recall.models.embedder, recall.store
    calls, order = [], []
    embed_query, query_from, start_ahead, record = (embedder.embed_query, embedder._query_from, embedder.start_ahead,
                                                    store.record)
    embedder.embed_query = lambda text: calls.append(text) or embed_query(text)  # a query embedded on its own
    embedder._query_from = lambda text, feed: calls.append(text) or query_from(text, feed)  # one begun ahead
    embedder.start_ahead = lambda text: order.append("embedding started") or start_ahead(text)
    store.record = lambda *args, **kw: order.append("prompt stored") or record(*args, **kw)
    try:
        assert "--abort-on-container-exit" in demo.ask("why did the CI pipeline get stuck after the integration stage?")
        assert calls == ["why did the CI pipeline get stuck after the integration stage?"]
        assert order == ["embedding started", "prompt stored"]
        assert demo.ask("morning!") == "" and len(calls) == 1 and order[2:] == ["prompt stored"]
        assert not embedder._ahead
    finally:
        del embedder.embed_query, embedder._query_from, embedder.start_ahead, store.record


def test_the_worker_begins_a_prompts_embedding_before_the_event_is_checked_and_stored(recall, demo, tmp_path):
    """The worker calls router.prepare as soon as it has a hook's payload: a prompt's embedding begins there, once (the
    prompt's handler finds it begun, and the gate's search takes it: one model call). A prompt the hook would not
    answer begins none: a recall command, Claude Code's own words, a subagent's prompt, a prompt in an ignored
    project; nor does another event."""
    from conftest import load_payload

    from memory_store.core import router
    from memory_store.core.config import Config

    demo.session(HANG)
    embedder = recall.models.embedder
    begun, calls = [], []
    start_ahead, query_from = embedder.start_ahead, embedder._query_from
    embedder.start_ahead = lambda text: begun.append(text) or start_ahead(text)
    embedder._query_from = lambda text, feed: calls.append(text) or query_from(text, feed)
    question = "why did the CI pipeline get stuck after the integration stage?"
    try:
        payload = load_payload("UserPromptSubmit", session_id="early", cwd=demo.path, prompt=question, prompt_id="t1")
        router.prepare(recall.store, recall.models, payload)
        assert begun == [question] and question in embedder._ahead
        out = recall.handle_event({"event_id": "early-1", "received_at": demo.clock + 60, "payload": payload})
        assert "--abort-on-container-exit" in out["hookSpecificOutput"]["additionalContext"]
        assert begun == [question, question] and calls == [question] and not embedder._ahead

        ignored = tmp_path / "scratch"
        ignored.mkdir()
        recall.use_config(Config.model_validate({"capture": {"ignore_projects": [str(ignored)]}}))
        begun.clear()
        for name, changes in [("UserPromptSubmit", {"prompt": "/recall:log-search nightly CI job"}),
                              ("UserPromptSubmit", {"prompt": "<task-notification>agent done</task-notification>"}),
                              ("UserPromptSubmit", {"prompt": question, "agent_id": "a1"}),
                              ("UserPromptSubmit", {"prompt": question, "cwd": str(ignored)}),
                              ("PostToolUse-Bash", {})]:
            router.prepare(recall.store, recall.models, load_payload(name, **{"cwd": demo.path, **changes}))
        assert begun == [] and not embedder._ahead
    finally:
        del embedder.start_ahead, embedder._query_from
        embedder._ahead.clear()


@pytest.mark.parametrize("prompt, kind", [
    ("morning!", "chat"),
    ("add docstrings to app/models.py", "instruction"),
    ("what's the difference between a tuple and a list?", "general"),
    ("remind me what we decided about caching", "recall"),
    ("which linter do we use?", "project"),
    ("why did the deploy fail on friday?", "project"),
    ("the build is red again", "statement"),
    # general knowledge: a technology named as the setting, when to choose one thing over another, how two differ
    ("in Svelte, what is the point of a keyed each block?", "general"),
    ("when should I reach for a CTE rather than a subquery?", "general"),
    ("how does a rebase differ from a merge?", "general"),
    ("what is an nginx upstream block useful for?", "general"),
    ("what does tar's -z flag do exactly?", "general"),
    # … unless the question is ours: "we", "our", "now" stay project markers inside those forms
    ("when should we rotate the signing keys instead of waiting for expiry?", "project"),
    ("in staging, which port does the api listen on now?", "project"),
    # questions typed without their apostrophes are questions
    ("whats the retry limit on the importer these days", "project"),
    ("whats the difference between a mutex and a semaphore", "general"),
])
def test_intent_reads_the_form_of_a_prompt(prompt, kind):
    assert intent.classify(prompt).kind == kind


def test_the_seed_rule_is_still_a_setting(home, project):
    """gate.mode = "cues": a cue in the prompt, then cosine >= tiers.warm_min_similarity."""
    from memory_store.core.config import Config

    recall = open_recall(home, Config.model_validate({"gate": {"mode": "cues"}}))
    try:
        demo = Project(recall, project, time.time())
        demo.session(HANG)
        assert demo.ask("deploy staging") == ""  # no cue: not searched
        assert "postgres service container" in demo.ask("why does the CI job hang after the integration tests?")
    finally:
        recall.close()
