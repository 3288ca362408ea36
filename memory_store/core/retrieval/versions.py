"""Newer values of what a shown memory says, from the one engine that knows what is current (core/knowledge/current.py).

A memory stated some things (its observations, core/knowledge/extract.py). When what is current about one of them now
comes from another, later memory with another value, the shown memory is outdated on it: every place that shows
memories says so, the same way. The prompt's injection shows the newer statement with it, marked current, and leaves
the outdated sentence out (`prefer_current`); the SessionStart brief, search results and compaction's key facts mark
an older memory shown alone (`newer_versions`, `outdated_note`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..knowledge import current
from ..records import SETTLED, Hit, Knowledge, Memory

if TYPE_CHECKING:
    from ..storage import Store

MAX_NEWER = 2  # newer statements shown with one taken memory


@dataclass
class Update:
    """What is current about something a shown memory stated, and the memory that says it."""

    memory: Memory  # where the current value comes from
    current: Knowledge  # the current observation
    replaced: Knowledge  # what the shown memory said about it

    @property
    def id(self) -> int:
        return self.memory.id


def updates(store: Store, project: str, own_ids: set[int]) -> list[Update]:
    """The newer values of what these memories (one shown item: a memory, or an episode's turns) stated, and the
    revocations of the rules they set, from later memories: the newest per thing, at most MAX_NEWER, the most recent
    first."""
    stated = [k for k in store.knowledge.of_memories(sorted(own_ids))
              if k.kind in ("fact", "decision") and k.modality in SETTLED]
    if not stated:
        return []
    found: list[tuple[Knowledge, Knowledge]] = []
    for answer in current.resolve(store.knowledge, project, stated):
        now = answer.item
        if answer.revoked_by is not None and answer.revoked_by.source_id not in own_ids:
            found.append((answer.revoked_by, now))
            continue
        if not answer.standing or now.kind != "fact" or now.source_id in own_ids:
            continue
        if any(current.alike(k.value, now.value) for k in answer.found):
            continue  # it says the current value too (an edit's new value beside the one it replaced)
        old = next((k for k in answer.found if k.created_at < now.created_at), None)
        if old is not None:
            found.append((now, old))
    memories = {m.id: m for m in store.get(sorted({now.source_id for now, _ in found})) if not m.superseded_by}
    kept = [Update(memories[now.source_id], now, old) for now, old in found if now.source_id in memories]
    kept.sort(key=lambda u: -u.current.created_at)
    return list({u.memory.id: u for u in kept}.values())[:MAX_NEWER]


def prefer_current(store: Store, decision: Any, found: Any, now: float) -> None:
    """For each taken candidate, the newer values of what its episode states (shown with it, marked current)."""
    for candidate in decision.taken:
        own = candidate.episode.ids() if candidate.episode else {candidate.memory.id}
        candidate.newer = updates(store, candidate.memory.project, own)
        for update in candidate.newer:
            candidate.why += f"; #{update.id} is newer and gives another value for the same thing"


def newer_versions(store: Store, memories: list) -> dict[int, list[Update]]:
    """For memories shown without a question (the SessionStart brief, search results, compaction's key facts):
    memory id -> the newer values of what it states."""
    found = {}
    for memory in memories:
        later = updates(store, memory.project, {memory.id})
        if later:
            found[memory.id] = later
    return found


def outdated_note(memory: Memory | Hit, newer: list[Update]) -> str:
    """What an older memory shown alone says first: that a newer one gives another value, which, and when."""
    latest = max(newer, key=lambda u: u.current.created_at)
    stamp = latest.memory.created_at.astimezone().strftime("%Y-%m-%d")
    if latest.current.kind == "decision":
        return f"[revoked: #{latest.id} of {stamp} takes it back]"
    return f"[outdated: #{latest.id} of {stamp} gives {latest.current.value or 'another value'}]"
