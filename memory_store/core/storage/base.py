"""What both storage backends share: the rows they hand out, what storing an event did, and the
constants and helpers every backend's SQL is written with."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sized
from dataclasses import dataclass
from typing import Any, Literal

from ..records import Hit, Memory, to_datetime

MEMORY_COLUMNS = (
    "id, project, session_id, kind, text, created_at, importance, seen_count, access_count, "
    "last_accessed, superseded_by, meta, pinned, agent, trust, owner, visibility"
)
CONVERSATION_KINDS = ("prompt", "exchange")  # the turns of a conversation: each other's context
TURN_SEPARATOR = "\n\x1e "  # between neighbouring turns in the context columns
VISIBILITIES = ("private", "team")


@dataclass(frozen=True)
class Capabilities:
    """What a store can do, asked by the code above storage/ instead of which backend it is."""

    shared: bool  # other people (database roles) may read what is shared here
    engine: str  # the engine and its versions, fit to print ("" when the location says it all)
    conversations_at_once: int  # candidates' conversations the gate reads in one go (a read is a round trip on a server)
    archive_up_to: int  # up to this many memories, RAM holds older vectors too (ram.py; 0: the index answers fast)
    damage: tuple[type[BaseException], ...]  # errors that mean the database itself is damaged (set aside, start anew)


class StorageUnavailable(Exception):
    """The database cannot be reached right now (a server down, a network gone). Nothing is lost: the
    worker spools the event and tries again later. The message never holds a password."""


def content_hash(text: str) -> str:
    """Identity of a memory's content for deduplication (case and spacing do not matter)."""
    return hashlib.sha1(" ".join(text.lower().split()).encode("utf-8")).hexdigest()


def marks(values: Sized) -> str:
    """`?, ?, ?` for an IN list of these values."""
    return ",".join("?" * len(values))


@dataclass
class Recorded:
    """What storing one event did."""

    memory_id: int | None
    created: bool  # a new memory row (False: deduplicated into an existing one, or none)
    duplicate_event: bool  # this event id was stored before: nothing changed


def _memory_from_fields(**fields) -> Memory:
    """A Memory of every one of its fields, made as pydantic's model_construct makes it, without its per-field
    bookkeeping: 3.5 µs instead of 7 (~0.4 ms of a prompt's gate)."""
    memory = _new_memory(Memory)
    _set(memory, "__dict__", fields)
    _set(memory, "__pydantic_fields_set__", set(_MEMORY_FIELDS))
    _set(memory, "__pydantic_extra__", None)
    _set(memory, "__pydantic_private__", None)
    return memory


def _fast_path_agrees() -> bool:
    """Does this pydantic build a Memory as _memory_from_fields does? (Otherwise model_construct is used.)"""
    fields: dict[str, Any] = dict(id=1, text="t", created_at=to_datetime(0.0), session_id="s", project="p", kind="prompt",
                  importance=0.5, seen_count=1, access_count=0, superseded_by=None, meta={"k": 1}, pinned=False,
                  agent="", trust=1.0, owner="", visibility="private")
    try:
        made, constructed = _memory_from_fields(**fields), Memory.model_construct(**fields)
        return (set(fields) == _MEMORY_FIELDS and made == constructed and made.__dict__ == constructed.__dict__
                and made.model_fields_set == constructed.model_fields_set
                and made.model_copy(update={"text": "u"}).text == "u")
    except Exception:  # noqa: BLE001 - a pydantic whose internals differ: the documented way, then
        return False


_new_memory, _set, _MEMORY_FIELDS = Memory.__new__, object.__setattr__, frozenset(Memory.model_fields)
_stored_memory = _memory_from_fields if _fast_path_agrees() else Memory.model_construct


@dataclass
class Row:
    """One memories row, as search and ranking read it (the columns of MEMORY_COLUMNS, in order)."""

    id: int
    project: str
    session_id: str
    kind: str
    text: str
    created_at: float
    importance: float
    seen_count: int
    access_count: int
    last_accessed: float | None
    superseded_by: int | None
    meta: str
    pinned: int = 0
    agent: str = ""
    trust: float = 1.0
    owner: str = ""
    visibility: Literal["private", "team"] = "private"

    def memory(self) -> Memory:
        # A stored row is valid already: not validated again (a gate builds ~120 of these a prompt).
        return _stored_memory(
            id=self.id, text=self.text, created_at=to_datetime(self.created_at), session_id=self.session_id,
            project=self.project, kind=self.kind, importance=self.importance, seen_count=self.seen_count,
            access_count=self.access_count, superseded_by=self.superseded_by, meta=json.loads(self.meta or "{}"),
            pinned=bool(self.pinned), agent=self.agent, trust=self.trust, owner=self.owner,
            visibility=self.visibility,
        )

    def hit(self, score: float, similarity: float | None = None) -> Hit:
        return Hit(
            id=self.id, text=self.text, score=round(score, 6), created_at=to_datetime(self.created_at),
            similarity=None if similarity is None else round(similarity, 4),
            session_id=self.session_id, project=self.project, kind=self.kind, meta=json.loads(self.meta or "{}"),
            agent=self.agent, trust=self.trust, owner=self.owner, visibility=self.visibility,
        )
