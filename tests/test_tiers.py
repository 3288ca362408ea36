"""Each tier rule with real embeddings from the shipped model, through the Python API and the
hook-level router (Recall.handle_event): hot (last 5 interactions, 24 h), warm (1–7 days, cued,
similarity >= 0.4, top 2, within budget, never twice), cold (search only), project isolation, RFM.

The warm tier is tested here with the seed's rule, which stays available as a setting
(gate.mode = "cues"); the default gate, from several signals, has tests/test_gate.py."""

from __future__ import annotations

import time
import uuid
from types import SimpleNamespace

import pytest
from conftest import load_payload
from pydantic import ValidationError

from memory_store import open_recall
from memory_store.core.config import Config, CueConfig, InjectConfig
from memory_store.core.injection import tiers
from memory_store.core.injection.inject import HARD_CAP, render_block
from memory_store.core.records import Memory, MemoryDraft, to_datetime
from memory_store.core.retrieval import gate, ranking


def warm_recall(recall, *args):
    """The warm-tier selection for a prompt, as the UserPromptSubmit handler runs it: (the memories
    taken, each with its similarity; the cues found in the prompt)."""
    decision = tiers.warm_recall(recall.store, recall.models, *args)
    hits = [SimpleNamespace(id=c.memory.id, similarity=c.signals.get("similarity")) for c in decision.taken]
    return hits, [reason.split(": ", 1)[1] for reason in decision.intent.reasons]


def hot_tier(recall, *args, **options):
    """The hot deque of a project, as SessionStart offers it."""
    return tiers.hot_tier(recall.store, *args, **options)


HOUR = 3600.0
DAY = 86400.0

QUESTION = "How do I rotate the API keys?"
# Cosine similarity to QUESTION with the shipped model in brackets (checked where it matters).
ROTATION = [
    "Key rotation runs every 90 days via the rotate-keys script",  # 0.53
    "API keys are rotated by the rotate-keys script in the ops repo",  # 0.74
    "To rotate API keys, run the rotate-keys script with the new key id",  # 0.87
    "API key rotation: the rotate-keys script revokes the old key first",  # 0.77
    "Rotating an API key: run rotate-keys, then update the secret in the vault",  # 0.72
]
UNRELATED = ["The soup needs more salt", "Lunch order: two pizzas and a salad for the team offsite"]  # 0.18, 0.04


@pytest.fixture
def open_with(home):
    """Open a store in the test's data dir with a Config built from nested overrides."""
    opened = []

    def _open(**sections):
        sections.setdefault("gate", {"mode": "cues"})
        store = open_recall(home, Config.model_validate(sections))
        opened.append(store)
        return store

    yield _open
    for store in opened:
        store.close()


@pytest.fixture
def store(open_with):
    return open_with()


@pytest.fixture
def now():
    return time.time()


def add(store, text, *, project, now, age, session="earlier", kind="exchange", importance=0.4, meta=None):
    draft = MemoryDraft(project=str(project), session_id=session, kind=kind, text=text, created_at=now - age,
                        importance=importance, meta=meta or {})
    recorded = store.store.record(f"evt-{uuid.uuid4()}", draft, now - age)
    assert recorded.created
    return recorded.memory_id


def embed(store):
    store.embed_pending()
    assert store.store.pending_embeddings() == 0 and store.store.dense_ready(store.models.embedder)


def event(store, name, at, **changes):
    """Route one real (captured) hook payload, with some fields changed, as the worker does."""
    if name == "UserPromptSubmit" and "prompt_id" not in changes:
        changes["prompt_id"] = str(uuid.uuid4())
    envelope = {"event_id": f"evt-{uuid.uuid4()}", "received_at": at, "payload": load_payload(name, **changes)}
    return store.handle_event(envelope)


def context(output: dict) -> str:
    return output.get("hookSpecificOutput", {}).get("additionalContext", "")


def injected(output: dict) -> list[int]:
    """Memory ids in an injected block, in order."""
    return [int(line.split("#", 1)[1].split(" ", 1)[0]) for line in context(output).splitlines()
            if line.startswith("- [#")]


def start(store, project, session, at, source="startup"):
    return event(store, f"SessionStart-{source}", at, session_id=session, cwd=str(project), source=source)


def prompt(store, project, session, at, text, **changes):
    return event(store, "UserPromptSubmit", at, session_id=session, cwd=str(project), prompt=text, **changes)


def ids(items) -> list[int]:
    return [item.id for item in items]


# --- hot tier ----------------------------------------------------------------------------------------


def test_hot_tier_is_the_last_five_interactions_newest_last(store, project, now):
    by_age = {h: add(store, f"Exchange from {h} hours ago about step {h} of the migration", project=project,
                     now=now, age=h * HOUR) for h in (1, 2, 3, 4, 5, 6, 25)}
    hot = hot_tier(store, str(project), now)
    assert hot.maxlen == 5
    assert ids(hot) == [by_age[h] for h in (5, 4, 3, 2, 1)]  # the 6th oldest is dropped, 25 h is out


def test_hot_tier_forgets_interactions_older_than_24_hours(open_with, project, now):
    store = open_with()
    recent, edge, old = (add(store, f"Exchange {h} hours old about the cache", project=project, now=now, age=h * HOUR)
                         for h in (2, 23.5, 25))
    assert ids(hot_tier(store, str(project), now)) == [edge, recent]
    assert ids(hot_tier(open_with(tiers={"hot_window_hours": 26}), str(project), now)) == [old, edge, recent]
    assert ids(hot_tier(open_with(tiers={"hot_size": 1}), str(project), now)) == [recent]


def test_startup_offers_earlier_sessions_only_and_compact_reoffers_the_own_session(store, project, now):
    earlier = [add(store, f"Earlier session: decided to pin redis to version {v}", project=project, now=now,
                   age=(4 - v) * HOUR, session="earlier") for v in (1, 2)]
    own = add(store, "Current session: the flaky test is test_orders_retry", project=project, now=now,
              age=0.5 * HOUR, session="current")

    output = start(store, project, "current", now)
    assert injected(output) == earlier  # oldest first, without the session's own interaction
    assert "flaky test" not in context(output)
    assert ids(hot_tier(store, str(project), now, exclude_session="current")) == earlier
    assert store.store.injected_ids("current") == set(earlier)

    assert start(store, project, "current", now + 60, source="resume") == {}  # nothing new to show

    output = start(store, project, "current", now + 120, source="compact")
    assert injected(output) == [*earlier, own]  # the summary replaced them: everything comes back
    assert "re-offered after compaction" in context(output)
    assert store.store.injected_ids("current") == {*earlier, own}


def test_a_prompt_answered_by_an_exchange_is_shown_once(store, project, now):
    asked = "How do we rotate the staging database credentials?"
    prompt(store, project, "earlier", now - 2 * HOUR, asked, prompt_id="turn-1")
    event(store, "Stop", now - 2 * HOUR + 30, session_id="earlier", cwd=str(project), prompt_id="turn-1",
          last_assistant_message="Run scripts/rotate_db_creds.sh: it updates the vault entry and restarts the pods.")
    waiting = "Why does the nightly export job time out?"
    prompt(store, project, "earlier", now - HOUR, waiting, prompt_id="turn-2")  # not answered yet

    hot = hot_tier(store, str(project), now)
    assert [m.kind for m in hot] == ["exchange", "prompt"]
    assert hot[0].meta["prompt"] == asked and hot[1].text == waiting
    assert store.store.counts()["by_kind"] == {"prompt": 2, "exchange": 1}  # the answered prompt is still stored

    shown = context(start(store, project, "new-session", now))
    assert shown.count(asked) == 1 and shown.count("rotate_db_creds.sh") == 1 and shown.count(waiting) == 1
    assert f"Q: {asked} → A:" in shown


# --- warm tier ---------------------------------------------------------------------------------------


def test_warm_is_one_to_seven_days_and_cold_is_search_only(open_with, project, now):
    store = open_with(tiers={"warm_top_k": 5})
    warm = [add(store, ROTATION[0], project=project, now=now, age=1.5 * DAY),
            add(store, ROTATION[1], project=project, now=now, age=6.5 * DAY)]
    cold = [add(store, ROTATION[2], project=project, now=now, age=8 * DAY),  # the best match of all
            add(store, ROTATION[3], project=project, now=now, age=30 * DAY)]
    embed(store)

    hits, cues = warm_recall(store, str(project), "new-session", QUESTION, now)
    assert cues == ["question"] and sorted(ids(hits)) == sorted(warm)
    assert all(h.similarity >= 0.4 for h in hits)
    assert not tiers.is_cold(store.store, now - 7 * DAY + HOUR, now)
    assert tiers.is_cold(store.store, now - 7 * DAY - HOUR, now)

    found = store.search(QUESTION, project=str(project), touch=False, now=now)
    assert set(cold) <= set(ids(found)) and found[0].id == cold[0]

    output = prompt(store, project, "new-session", now, QUESTION)
    assert sorted(injected(output)) == sorted(warm)
    assert ROTATION[2] not in context(output) and ROTATION[3] not in context(output)

    wider = open_with(tiers={"warm_top_k": 5, "warm_window_days": 10})  # the window is the config's
    assert cold[0] in ids(warm_recall(wider, str(project), "other-session", QUESTION, now)[0])


def test_an_unrelated_best_match_is_not_injected(store, project, now):
    soup, lunch = (add(store, text, project=project, now=now, age=2 * DAY) for text in UNRELATED)
    embed(store)
    best = store.search(QUESTION, project=str(project), touch=False, now=now)
    assert best[0].id == soup and best[0].similarity < 0.4  # it is the best match ...
    assert warm_recall(store, str(project), "s", QUESTION, now) == ([], ["question"])  # ... and not enough
    assert prompt(store, project, "s", now, QUESTION) == {}
    assert store.store.injected_ids("s") == set()


def test_similarity_threshold_follows_the_config(open_with, project, now):
    store = open_with()
    memory = add(store, ROTATION[0], project=project, now=now, age=2 * DAY)
    embed(store)
    hits, _ = warm_recall(store, str(project), "s", QUESTION, now)
    assert ids(hits) == [memory] and hits[0].similarity == pytest.approx(0.53, abs=0.02)

    assert ids(warm_recall(open_with(tiers={"warm_min_similarity": 0.5}), str(project), "s", QUESTION, now)[0]) \
        == [memory]
    strict = open_with(tiers={"warm_min_similarity": 0.6})
    assert warm_recall(strict, str(project), "s", QUESTION, now)[0] == []
    assert prompt(strict, project, "s", now, QUESTION) == {}


def test_at_most_top_k_memories_are_injected(open_with, project, now):
    store = open_with()
    for i, text in enumerate(ROTATION):
        add(store, text, project=project, now=now, age=(1.5 + i) * DAY)
    embed(store)
    ranked = store.search(QUESTION, limit=8, project=str(project), touch=False, now=now)
    assert len(ranked) == 5 and all(h.similarity >= 0.4 for h in ranked)

    hits, _ = warm_recall(store, str(project), "a", QUESTION, now)
    assert ids(hits) == ids(ranked)[:2]
    assert injected(prompt(store, project, "a", now, QUESTION)) == ids(ranked)[:2]

    # The prompt above was stored and its memories used: rank again (3 and 4 are 0.003 apart) before asking for one.
    ranked = store.search(QUESTION, limit=8, project=str(project), touch=False, now=now, exclude_session="a")
    assert ids(warm_recall(open_with(tiers={"warm_top_k": 1}), str(project), "b", QUESTION, now)[0]) \
        == ids(ranked)[:1]
    assert len(warm_recall(open_with(tiers={"warm_top_k": 4}), str(project), "b", QUESTION, now)[0]) == 4
    assert warm_recall(open_with(tiers={"warm_top_k": 0}), str(project), "b", QUESTION, now) == ([], ["question"])


LONG_ROTATION = [
    f"API key rotation runbook part {n}: run the rotate-keys script for the {env} environment, "
    + "then update the secret in the vault, restart the API pods and confirm the old API key is revoked. " * 6
    for n, env in enumerate(["staging", "production", "canary", "eu", "us"], start=1)
]


@pytest.mark.parametrize("budget", [500, 800, 1500, 8000])
def test_injection_stays_within_the_character_budget(open_with, project, now, budget):
    store = open_with(inject={"budget_chars": budget}, tiers={"warm_top_k": 5})
    for i, text in enumerate(LONG_ROTATION):
        add(store, text, project=project, now=now, age=(1.5 + i) * DAY)
    embed(store)
    assert len(warm_recall(store, str(project), "s", QUESTION, now)[0]) == 5

    output = prompt(store, project, "s", now, QUESTION)
    shown = context(output)
    assert 0 < len(shown) <= budget
    lines = injected(output)
    assert lines and (len(lines) < 5 or budget >= 5 * 600)  # the budget, not the top-k, was the limit
    assert store.store.injected_ids("s") == set(lines)  # only what fitted counts as injected


def test_budget_is_capped_by_validation_and_by_the_hard_cap(now):
    assert InjectConfig(budget_chars=8000).budget_chars == 8000
    for too_much in (8001, HARD_CAP, 10_000, 50_000):
        with pytest.raises(ValidationError):
            InjectConfig(budget_chars=too_much)
        with pytest.raises(ValidationError):
            Config.model_validate({"inject": {"hot_budget_chars": too_much}})
    config = Config()
    with pytest.raises(ValidationError):
        config.inject.budget_chars = 20_000  # validated on assignment too
    assert HARD_CAP <= 9000

    memories = [Memory(id=i, text="x " * 2000, created_at=to_datetime(now - DAY), session_id="s", project="/p",
                       kind="note", importance=0.5, seen_count=1, access_count=0) for i in range(1, 40)]
    block, shown = render_block(memories, "Possibly relevant memories:", 1_000_000, 5000, now)
    assert len(block) <= HARD_CAP and len(shown) >= 2  # even a direct caller cannot go past the hard cap


def field_minimum(model, name: str):
    return next(m.ge for m in model.model_fields[name].metadata if hasattr(m, "ge"))


def test_the_smallest_allowed_budgets_still_fit_one_memory(open_with, project, now):
    store = open_with(inject={"budget_chars": field_minimum(InjectConfig, "budget_chars"),
                              "hot_budget_chars": field_minimum(InjectConfig, "hot_budget_chars")})
    hot = add(store, "Exchange: pinned redis to 7.2 in docker-compose", project=project, now=now, age=HOUR)
    warm = add(store, ROTATION[2], project=project, now=now, age=2 * DAY)
    embed(store)
    assert injected(start(store, project, "s", now)) == [hot]
    assert injected(prompt(store, project, "s", now + 1, QUESTION)) == [warm]


CUE_PROMPTS = {
    "question": "rotate API keys?",
    "path": "rotate keys via scripts/rotate-keys.sh",
    "long": "please walk me through the API key rotation process for our production services",
    "temporal": "the API key rotation we discussed earlier",
}
CUE_SWITCH = {"question": "question", "path": "path", "long": "long_prompt", "temporal": "temporal"}


@pytest.mark.parametrize("cue", list(CUE_PROMPTS))
def test_each_cue_triggers_the_search_and_can_be_switched_off(open_with, project, now, monkeypatch, cue):
    text = CUE_PROMPTS[cue]
    assert ranking.prompt_cues(text, CueConfig()) == [cue]  # this prompt carries this cue and no other

    on = open_with()
    memory = add(on, ROTATION[2], project=project, now=now, age=2 * DAY)
    embed(on)
    hits, cues = warm_recall(on, str(project), "s-on", text, now)
    assert cues == [cue] and ids(hits) == [memory]
    assert injected(prompt(on, project, "s-on", now, text)) == [memory]

    off = open_with(cues={CUE_SWITCH[cue]: False})
    searched = []
    original = gate.search.search
    monkeypatch.setattr(gate.search, "search", lambda *a, **k: searched.append(a) or original(*a, **k))
    assert warm_recall(off, str(project), "s-off", text, now) == ([], [])
    assert prompt(off, project, "s-off", now + 1, text) == {}
    assert searched == []  # nothing was even searched
    assert off.store.injected_ids("s-off") == set()


def test_a_prompt_without_any_cue_searches_nothing(store, project, now, monkeypatch):
    add(store, ROTATION[2], project=project, now=now, age=2 * DAY)
    embed(store)
    searched = []
    original = gate.search.search
    monkeypatch.setattr(gate.search, "search", lambda *a, **k: searched.append(a) or original(*a, **k))
    assert ranking.prompt_cues("rotate the API keys", CueConfig()) == []
    assert prompt(store, project, "s", now, "rotate the API keys") == {} and searched == []


def test_a_memory_is_never_injected_twice_into_a_session(store, project, now):
    memory = add(store, ROTATION[2], project=project, now=now, age=2 * DAY)
    embed(store)
    assert memory in injected(prompt(store, project, "a", now, QUESTION))
    assert memory in store.store.injected_ids("a")
    again = prompt(store, project, "a", now + 60, "what about API key rotation again?")
    assert memory not in injected(again)
    assert memory not in ids(warm_recall(store, str(project), "a", "rotate API keys?", now + 120)[0])
    assert memory in injected(prompt(store, project, "b", now + 180, "rotate API keys?"))  # another session may


def test_memories_of_the_current_session_are_not_injected(store, project, now):
    memory = add(store, ROTATION[2], project=project, now=now, age=2 * DAY, session="current")
    embed(store)
    assert warm_recall(store, str(project), "current", QUESTION, now)[0] == []
    assert ids(warm_recall(store, str(project), "another", QUESTION, now)[0]) == [memory]
    assert memory not in injected(prompt(store, project, "current", now, QUESTION))


# --- project isolation -------------------------------------------------------------------------------


def test_another_projects_memories_are_never_recalled(store, project, other_project, now):
    warm = add(store, ROTATION[2], project=other_project, now=now, age=2 * DAY)
    hot = add(store, "Exchange: rotated the API keys with the rotate-keys script", project=other_project, now=now,
              age=HOUR)
    embed(store)

    assert warm_recall(store, str(project), "s", QUESTION, now)[0] == []
    assert list(hot_tier(store, str(project), now)) == []
    assert start(store, project, "s", now) == {}
    assert prompt(store, project, "s", now + 1, QUESTION) == {}
    assert not {warm, hot} & set(ids(store.search(QUESTION, project=str(project), touch=False, now=now)))

    # the same memories are there for their own project, and for an explicit all-projects search
    assert warm in ids(warm_recall(store, str(other_project), "s", QUESTION, now)[0])
    assert ids(hot_tier(store, str(other_project), now)) == [hot]
    assert {warm, hot} <= set(ids(store.search(QUESTION, project=None, touch=False, now=now)))


# --- RFM -------------------------------------------------------------------------------------------------


def access_count(store, memory_id):
    return store.get([memory_id])[0].access_count


def test_access_counts_grow_when_injected_or_searched(store, project, now):
    memory = add(store, ROTATION[2], project=project, now=now, age=2 * DAY)
    embed(store)
    assert access_count(store, memory) == 0
    store.store.mark_injected("s0", [memory], "SessionStart", now)  # the brief offers recent work: not a use
    assert access_count(store, memory) == 0

    store.store.mark_injected("s1", [memory], "UserPromptSubmit", now)
    assert access_count(store, memory) == 1
    assert memory in ids(store.search(QUESTION, project=str(project), touch=True, now=now))
    assert access_count(store, memory) == 2
    store.search(QUESTION, project=str(project), touch=False, now=now)
    warm_recall(store, str(project), "s2", QUESTION, now)  # looking is not using
    assert access_count(store, memory) == 2

    assert memory in injected(prompt(store, project, "s3", now + 10, QUESTION))  # a hook injection is a use
    assert access_count(store, memory) == 3
    last = store.store.db.conn.execute("SELECT last_accessed FROM memories WHERE id = ?", (memory,)).fetchone()[0]
    assert last == pytest.approx(now + 10)


COPY_ONE = "The staging deploy uses a blue green rollout (runbook copy one)"
COPY_TWO = "The staging deploy uses a blue green rollout (runbook copy two)"
DEPLOY_QUESTION = "how does the staging deploy rollout work?"


def test_higher_importance_outranks_an_equal_match(open_with, now):
    """Two memories the query matches equally (same words, same length, same age, same use; their
    cosine similarities differ by < 0.02): whichever is more important comes first, either way round.
    (Near-duplicate superseding is off here: it would keep only the newer of the two.)"""
    store = open_with(ranking={"dedup_similarity": 1.0})
    at = 2 * DAY
    pairs = {}
    for project, importance in (("/p/one-first", (0.9, 0.1)), ("/p/two-first", (0.1, 0.9)), ("/p/equal", (0.5, 0.5))):
        # notes of separate sessions: no neighbouring-turn context is indexed with either
        pairs[project] = (add(store, COPY_ONE, project=project, now=now, age=at, importance=importance[0],
                              kind="note", session="one"),
                          add(store, COPY_TWO, project=project, now=now, age=at, importance=importance[1],
                              kind="note", session="two"))
    embed(store)

    def ranked(project):
        hits = store.search(DEPLOY_QUESTION, project=project, touch=False, now=now)
        assert {h.id for h in hits} == set(pairs[project])
        return hits

    equal = ranked("/p/equal")
    assert abs(equal[0].similarity - equal[1].similarity) < 0.02
    tie_gap = equal[0].score - equal[1].score
    assert tie_gap < 0.01  # the two match all but equally

    one_first, two_first = ranked("/p/one-first"), ranked("/p/two-first")
    assert ids(one_first) == list(pairs["/p/one-first"])
    assert ids(two_first) == list(reversed(pairs["/p/two-first"]))  # copy two, the important one, first
    assert two_first[0].score - two_first[1].score > 0  # importance beat the small similarity edge

    single = open_with(tiers={"warm_top_k": 1}, ranking={"dedup_similarity": 1.0})
    for project in ("/p/one-first", "/p/two-first"):
        hits, _ = warm_recall(single, project, "s", DEPLOY_QUESTION, now)
        assert ids(hits) == [ids(ranked(project))[0]]


@pytest.mark.slow  # real hooks and a worker, checked end to end
def test_no_hook_adds_more_than_claude_codes_cap_whatever_the_config_says(open_with, tmp_path, now):
    """Claude Code keeps at most 10,000 characters of a hook's output: with every budget at its maximum, long
    memories, and a prompt that brings both the moved-into repository's brief and its own block, each hook's
    context stays under HARD_CAP and its whole output under 10,000; a flood of config problems is cut too."""
    import json

    store = open_with(gate={"mode": "cues"}, tiers={"warm_top_k": 8},
                      inject={"budget_chars": 8000, "hot_budget_chars": 8000, "max_item_chars": 6000})
    here, there = tmp_path / "here", tmp_path / "there"
    for n in range(12):
        long_text = " ".join([f"{ROTATION[n % len(ROTATION)]} (step {n}, attempt {k})." for k in range(60)])
        recent = n % 2 == 1  # the recent exchanges make the brief, the older notes the prompt's block
        add(store, long_text, project=there, now=now, age=(HOUR if recent else 2 * DAY) + n,
            kind="exchange" if recent else "note", meta={"prompt": f"how do we rotate keys, part {n}?"} if recent else None)
    store.embed_pending()
    session = str(uuid.uuid4())
    outputs = [event(store, "SessionStart-startup", now, session_id=session, cwd=str(there)),
               event(store, "SessionStart-startup", now, session_id=session + "x", cwd=str(here))]
    event(store, "CwdChanged", now + 1, session_id=session + "x", cwd=str(there), old_cwd=str(here),
          new_cwd=str(there))
    outputs.append(event(store, "UserPromptSubmit", now + 2, session_id=session + "x", cwd=str(there),
                         prompt="remember how do I rotate the API keys with the rotate-keys script?"))
    outputs.append(event(store, "PreCompact", now + 3, session_id=session, cwd=str(there)))
    moved, prompt = outputs[2], outputs[2]["hookSpecificOutput"]["additionalContext"]
    assert "moved into" in prompt and "Possibly relevant to this prompt" in prompt  # both blocks, within the cap
    assert prompt.count("<recall-memory>") == prompt.count("</recall-memory>") == 2
    for output in outputs:
        text = output if isinstance(output, str) else output.get("hookSpecificOutput", {}).get("additionalContext", "")
        assert len(text) <= HARD_CAP
        assert len(output if isinstance(output, str) else json.dumps(output, ensure_ascii=False)) < 10_000
    assert len(json.dumps(moved)) > 8000  # the cap was reached, not avoided

    from memory_store.core.injection import inject

    message = "\n".join(f"recall: config setting not used — tiers.x{n} is {'y' * 200!r}" for n in range(30))
    flooded = inject.hook_output("SessionStart", prompt, message)
    assert len(json.dumps(flooded, ensure_ascii=False)) < 10_000
    assert flooded["systemMessage"].endswith("(`recall doctor` shows it all)")
    assert inject.within_cap(prompt + "\n" + prompt).count("</recall-memory>") >= 1
    assert len(inject.within_cap(prompt + "\n" + prompt)) <= HARD_CAP
