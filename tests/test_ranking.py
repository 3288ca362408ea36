"""Query processing and fusion: terms, cues, dates and relative times, score scales."""

from __future__ import annotations

from datetime import date, datetime, timezone

import pytest

from memory_store.core.config import CueConfig, RankingConfig
from memory_store.core.retrieval import ranking
from memory_store.core.storage.sqlite.search import fts_expression
from memory_store.core.timeparse import find_window

NOW = datetime(2026, 11, 22, 12, tzinfo=timezone.utc).timestamp()


def window_dates(text):
    window = find_window(text, NOW, before_days=0, after_days=0)
    if window is None:
        return None
    to_date = lambda ts: datetime.fromtimestamp(ts, timezone.utc).date()  # noqa: E731
    return to_date(window.start), to_date(window.end)


@pytest.mark.parametrize("text,expected", [
    ("what did we change on 16 November 2023?", (date(2023, 11, 16), date(2023, 11, 17))),
    ("in July 2022", (date(2022, 7, 1), date(2022, 8, 1))),
    ("between August 11 and August 15 2023", (date(2023, 8, 11), date(2023, 8, 16))),
    ("the 2024-05-03 release", (date(2024, 5, 3), date(2024, 5, 4))),
    ("the Nov 3rd meeting", (date(2026, 11, 3), date(2026, 11, 4))),  # no year: the latest past one
    ("the December party", (date(2025, 12, 1), date(2026, 1, 1))),
    ("what happened in 2021", (date(2021, 1, 1), date(2022, 1, 1))),
    ("what did we do yesterday", (date(2026, 11, 20), date(2026, 11, 22))),
    # a weekday: that day and half a day either side (time zones, work reported the next morning); NOW: a Sunday noon
    ("what did we change last Friday?", (date(2026, 11, 19), date(2026, 11, 21))),
    ("the fix we merged on Monday", (date(2026, 11, 15), date(2026, 11, 17))),
    ("what broke last Sunday", (date(2026, 11, 14), date(2026, 11, 16))),  # "last": not today
    ("what did we decide on Sunday", (date(2026, 11, 21), date(2026, 11, 22))),  # "on": today counts, up to now
    ("the camping trip last year", None),  # often the speaker's own words, which the search then needs
    ("the Monday deploy checklist", None),  # a bare weekday is a plan, not a date
    ("May I ask about the cache?", None),  # "May" alone is a verb
    ("February 30 2023", None),  # no such day
    ("how do we deploy?", None),
])
def test_dates_and_relative_times(text, expected):
    assert window_dates(text) == expected


def test_a_named_weekday_finds_that_days_work(home):
    """"What did we change last Friday?" ranks the change made on Friday above the same kind of change on
    another day: the day becomes the query's time window."""
    from datetime import timedelta

    from memory_store import open_recall
    from memory_store.core.records import MemoryDraft

    now = datetime(2026, 11, 25, 15, tzinfo=timezone.utc)  # a Wednesday
    friday = datetime(2026, 11, 20, 11, tzinfo=timezone.utc)
    recall = open_recall(home)
    ids = {}
    for name, at, text in (("monday", friday + timedelta(days=3), "Changed the deploy config: retries 3 -> 5."),
                           ("friday", friday, "Changed the deploy config: timeout 30 -> 60."),
                           ("before", friday - timedelta(days=6), "Changed the deploy config: region eu -> us.")):
        draft = MemoryDraft(project="/p/app", session_id=name, kind="note", text=text, created_at=at.timestamp())
        ids[name] = recall.store.record(f"evt-{name}", draft).memory_id
    recall.embed_pending()
    hits = recall.search("what did we change in the deploy config last Friday?", project="/p/app", touch=False,
                         now=now.timestamp())
    assert hits[0].id == ids["friday"], [h.text for h in hits]
    recall.close()


def test_terms_drop_stopwords_dates_and_fts_syntax():
    query = ranking.parse_query('What did we decide about "NEAR(auth" tokens in July 2022?', NOW)
    assert query.terms == ["decide", "near", "auth", "tokens"]
    assert query.window is not None and query.asks_about_time
    assert fts_expression(query.terms) == '"decide" OR "near" OR "auth" OR "tokens"'


def test_stopword_only_query_still_searches():
    assert ranking.parse_query("what is it?", NOW).terms


@pytest.mark.parametrize("prompt,cue", [
    ("how do we rotate keys?", "question"),
    ("look at src/app/main.py", "path"),
    ("please go through every one of the failing integration tests and fix them carefully", "long"),
    ("the thing we did yesterday", "temporal"),
])
def test_each_cue_is_recognised_and_switchable(prompt, cue):
    assert cue in ranking.prompt_cues(prompt, CueConfig())
    off = CueConfig(**{{"long": "long_prompt"}.get(cue, cue): False})
    assert cue not in ranking.prompt_cues(prompt, off)


def test_fusion_scales_the_best_to_one():
    cfg = RankingConfig()
    for fusion in ("weighted", "rrf", "fts", "dense"):
        scores = ranking.fuse({1: 12.0, 2: 6.0}, {2: 0.8, 3: 0.5}, cfg.model_copy(update={"fusion": fusion}))
        assert max(scores.values()) == pytest.approx(1.0)


def test_rfm_priority_weights():
    cfg = RankingConfig()
    fresh_important = ranking.rfm_priority(0, 9, 9, 1.0, cfg)
    assert fresh_important == pytest.approx(0.3 + 0.2 + 0.5)
    assert ranking.rfm_priority(cfg.rfm_half_life_days * 86400, 0, 9, 0.0, cfg) == pytest.approx(0.15)


def test_a_match_can_be_required_to_hold_the_rarer_words():
    assert fts_expression(["deploy", "rugosun"]) == '"deploy" OR "rugosun"'
    assert fts_expression(["deploy", "rugosun"], required=["rugosun"]) == \
        '("rugosun") AND ("deploy" OR "rugosun")'
    assert fts_expression(["deploy", "rugosun"], required=["rugosun", "deploy"]) == '"deploy" OR "rugosun"'
    assert fts_expression([]) is None


def test_an_exact_identifier_wins_over_loose_matches_of_its_words(home):
    """`recall search ERR_LEDGER_LOCKED` once ranked an unrelated decision about a locked ledger (its words, pinned,
    important, recent) above the one memory holding the code: the text index splits the identifier into common
    words. A hit holding the query's identifier verbatim now comes first."""
    import time

    from memory_store import open_recall
    from memory_store.core.records import MemoryDraft
    from memory_store.core.retrieval.search import identifiers

    assert identifiers("what does max_connections do in v2.4.1?") == ["max_connections", "v2.4.1"]
    assert identifiers("TS2345 after --dry-run in useEffect") == ["TS2345", "--dry-run", "useEffect"]
    assert identifiers("why did the deploy fail yesterday?") == []
    assert identifiers("a read-only e-mail follow-up") == []  # hyphenated words are words
    assert identifiers("x" + "-" * 60_000) == []  # a pasted wall of dashes costs one pass, not quadratic time
    now = time.time()
    loose = [("note", "Decision: the ledger stays locked during the nightly reconciliation; err on the safe side.", 0),
             ("note", "The ledger is locked by the migration job; errors there are expected until it ends.", 1),
             ("exchange", "Locked ledger entries can be unlocked by an admin; the err log lists them.", 2)]
    exact = ("tool", "Bash `python import.py` → Traceback ... raise ImportFailed(code='ERR_LEDGER_LOCKED')", 960)
    with open_recall(home) as recall:
        ids = [recall.store.record(f"e{i}", MemoryDraft(project="/p", session_id=f"s{i}", kind=kind, text=text,
                                                        created_at=now - 3600 * hours,
                                                        importance=0.95 if kind == "note" else 0.3)).memory_id
               for i, (kind, text, hours) in enumerate([*loose, exact])]
        recall.store.set_pinned(ids[:2], True)
        recall.embed_pending()
        assert recall.search("ERR_LEDGER_LOCKED", project="/p", shown="all")[0].id != ids[3]  # the ranking alone
        shown = recall.search("ERR_LEDGER_LOCKED", project="/p", shown="relevant")
        assert shown[0].id == ids[3] and len(shown) == 4
