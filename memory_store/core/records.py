"""Memories as recall stores and returns them: a draft before it has an id, a stored memory, a
search hit."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any, Literal

from pydantic import BaseModel, Field, computed_field

from ..shared.text import mark_missing_files
from ..shared.wire import CLAUDE_CODE

MemoryKind = Literal["prompt", "exchange", "response", "tool", "error", "note"]
Visibility = Literal["private", "team"]


KnowledgeKind = Literal["fact", "procedure", "decision"]
# How a knowledge item was said (core/knowledge/statements.py): only what was set or stated can be current.
Modality = Literal["set", "stated", "proposed", "asked", "negated", "revoked"]
SETTLED: tuple[Modality, ...] = ("set", "stated")


class KnowledgeDraft(BaseModel):
    """An observation read from a memory (core/knowledge/extract.py): a fact, a procedure or a decision, as it was
    said or done then. Never a verdict: what is current is computed when read (core/knowledge/current.py)."""

    kind: KnowledgeKind
    subject: str  # what it is about, scoped (core/knowledge/subjects.py): the same for a later item about the same thing
    value: str
    text: str  # what is shown
    modality: Modality = "stated"
    source: str = ""  # how it came: edit, write, command, user, answer, note, agent
    name: str = ""  # a named setting's key path, normalized: joins a setting said in words to the file that holds it
    thing: str = ""  # words for the kind of value ("duration timeout"), matched but not shown
    file: str = ""  # where it was set (or the file a statement names)
    context: str = ""  # what it was for (the turn's question, the command's purpose), matched but not shown
    earlier: float = 0.0  # seconds before its memory it held ("from 8123 to 9090": 8123 was the value before)


class Tie(BaseModel):
    """What a memory is tied to (core/capture/ties.py): `file:<path>`, `cmd:<program>` or `err:<signature>`; for a
    file the tool call touched, the file's size and mtime just after (to tell later that it changed since)."""

    key: str
    size: int | None = None
    mtime: float | None = None


class MemoryDraft(BaseModel):
    """A memory about to be stored (before it has an id)."""

    project: str
    session_id: str = ""
    kind: MemoryKind
    text: str
    created_at: float  # unix seconds, UTC
    importance: float = Field(0.3, ge=0, le=1)
    meta: dict[str, Any] = Field(default_factory=dict)
    supersedes: list[int] = Field(default_factory=list)
    agent: str = ""  # the subagent it comes from ('' for the main conversation)
    visibility: Visibility = "private"  # everything captured is private; a team note is shared on purpose


class Knowledge(KnowledgeDraft):
    """A stored knowledge item: the memory it came from, when, and whose it is."""

    id: int
    project: str
    source_id: int
    session_id: str = ""
    created_at: float
    owner: str = ""
    team: bool = False  # read from a memory shared with the team
    replaced: list[Knowledge] = Field(default_factory=list)  # earlier values of its subject, newest first (current.py)
    written: Knowledge | None = None  # the write of a file this statement tells of: where the value is set


def to_datetime(ts: float) -> datetime:
    return datetime.fromtimestamp(ts, tz=timezone.utc)


class Memory(BaseModel):
    """A stored memory, as `recall show` and the API return it."""

    id: int
    text: str
    created_at: datetime
    session_id: str
    project: str
    kind: str
    importance: float
    seen_count: int
    access_count: int
    superseded_by: int | None = None
    meta: dict[str, Any] = Field(default_factory=dict)
    pinned: bool = False
    agent: str = ""
    trust: float = 1.0
    owner: str = ""  # who wrote it: the OS user of a local store, the database role of a shared one
    visibility: Visibility = "private"  # "team": shared on purpose with everyone on the same database

    @computed_field  # type: ignore[prop-decorator]  # pydantic's documented form
    @property
    def client(self) -> str:
        """The agent whose session it came from (shared/wire.py CLIENTS); '' for a note kept by hand."""
        return client_of(self.kind, self.meta)


def client_of(kind: str, meta: dict[str, Any]) -> str:
    """A memory's agent: recorded since recall served more than one; every earlier memory came from Claude Code."""
    recorded = meta.get("client")
    if isinstance(recorded, str) and recorded:
        return recorded
    return "" if kind == "note" else CLAUDE_CODE


class Hit(BaseModel):
    """One search result. `score` is comparable within one result list only; `similarity` is the
    cosine similarity to the query when the dense retriever found it."""

    id: int
    text: str
    score: float
    created_at: datetime
    session_id: str
    project: str
    kind: str
    similarity: float | None = None
    meta: dict[str, Any] = Field(default_factory=dict)
    agent: str = ""
    trust: float = 1.0
    owner: str = ""
    visibility: Visibility = "private"
    outdated: str | None = None  # what a newer memory says instead, when it gives another value (versions.py)
    missing_files: list[str] = Field(default_factory=list)  # paths it names that are gone (code_paths.py)

    @computed_field  # type: ignore[prop-decorator]  # pydantic's documented form
    @property
    def client(self) -> str:
        """The agent whose session it came from; '' for a note kept by hand."""
        return client_of(self.kind, self.meta)

    def marked_text(self) -> str:
        """The text as every search surface shows it: an outdated value says so first, a file that is gone says
        so after its path."""
        text = mark_missing_files(self.text, self.missing_files) if self.missing_files else self.text
        return f"{self.outdated} {text}" if self.outdated else text


def shown_text(item: Memory | Hit) -> str:
    """How a memory reads on its own: an exchange as its question and answer."""
    prompt = item.meta.get("prompt") if item.kind == "exchange" else None
    return f"Q: {prompt} → A: {item.text}" if prompt else item.text
