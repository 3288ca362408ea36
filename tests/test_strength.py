"""The forgetting curve with a fake clock: decay by kind, reinforcement by use, consolidation, and the pruning
of trivial interactions once they leave the hot tier (and of nothing else)."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from memory_store import open_recall
from memory_store.core.config import StrengthConfig
from memory_store.core.records import MemoryDraft
from memory_store.core.retrieval import strength
from memory_store.shells.cli import app

DAY = 86400.0
T0 = 1_790_000_000.0  # the fake clock starts here
CFG = StrengthConfig()


def test_strength_halves_after_the_half_life_of_its_kind():
    assert strength.strength("tool", T0, None, 0, T0, CFG) == 1.0
    assert strength.strength("tool", T0, None, 0, T0 + 10 * DAY, CFG) == pytest.approx(0.5)
    assert strength.strength("tool", T0, None, 0, T0 + 20 * DAY, CFG) == pytest.approx(0.25)
    assert strength.strength("note", T0, None, 0, T0 + 180 * DAY, CFG) == pytest.approx(0.5)
    # The user's words outlast a tool's output.
    assert strength.strength("prompt", T0, None, 0, T0 + 30 * DAY, CFG) > strength.strength(
        "tool", T0, None, 0, T0 + 30 * DAY, CFG)


def test_use_reinforces_and_enough_uses_consolidate():
    unused = strength.strength("exchange", T0, None, 0, T0 + 90 * DAY, CFG)
    used_once = strength.strength("exchange", T0, T0 + 30 * DAY, 1, T0 + 90 * DAY, CFG)
    assert unused == pytest.approx(0.25) and used_once == pytest.approx(2 ** (-60 / 90))
    assert used_once > unused
    assert strength.strength("tool", T0, T0, CFG.consolidate_after, T0 + 3650 * DAY, CFG) == 1.0


def record(recall, key, text, kind="prompt", at=T0, **meta):
    draft = MemoryDraft(project="/p", session_id="s1", kind=kind, text=text, created_at=at, meta=meta,
                        importance=0.35 if kind == "prompt" else 0.4)
    return recall.store.record(key, draft).memory_id


def test_trivial_interactions_are_pruned_after_the_hot_tier_and_nothing_else(home):
    with open_recall(home, load_models=False) as recall:
        greeting = record(recall, "e1", "hi there")
        ack = record(recall, "e2", "ok continue", at=T0 + 10)
        done = record(recall, "e3", "Done.", kind="exchange", at=T0 + 20, prompt="ok continue")
        decision = record(recall, "e4", "We decided to use Postgres 16 because of logical replication", at=T0 + 30)
        value = record(recall, "e5", "Done. The cache TTL is now 300 seconds in config/cache.toml.", kind="exchange",
                       at=T0 + 40, prompt="set the cache ttl to 300")
        pinned = record(recall, "e6", "thanks!", at=T0 + 50)
        recall.pin([pinned])
        fresh = record(recall, "e7", "hello", at=T0 + 2 * DAY)

        assert recall.prune(now=T0 + 3600) == 0  # still in the hot tier (24 h)
        assert recall.prune(now=T0 + 2 * DAY + 60) == 3
        left = {m.id for m in recall.select(project="/p")}
        assert {greeting, ack, done}.isdisjoint(left)
        assert {decision, value, pinned, fresh} <= left
        assert recall.store.pruned_counts() == {"exchange": 1, "prompt": 2}
        assert recall.prune(now=T0 + 2 * DAY + 120) == 0  # nothing left to prune; the cursor moved on
        assert recall.prune(now=T0 + 4 * DAY) == 1  # "hello" left the hot tier in the meantime

    out = CliRunner().invoke(app, ["stats", "--home", str(home)]).stdout
    assert "pruned     1 exchange, 3 prompts" in out and "strength   mean" in out


def test_strength_summary_counts_consolidated_and_weak(home):
    with open_recall(home, load_models=False) as recall:
        old = record(recall, "e1", "the nightly export writes to s3://exports/nightly", kind="tool")
        used = record(recall, "e2", "the staging deploy needs the --canary flag")
        for _ in range(CFG.consolidate_after):
            recall.store.touch([used], T0 + DAY)
        summary = recall.stats(now=T0 + 100 * DAY)["strength"]
    assert summary["consolidated"] == 1 and summary["weak"] == 1  # the tool output: 2^-10
    assert summary["mean"] == pytest.approx(0.5, abs=0.01)
    assert old and used
