"""Typed shapes: Claude Code hook payloads in, memories and search hits out.

Payload models accept unknown keys (Claude Code adds fields often) but insist on the
types of the fields recall reads; a payload that fails validation is logged and dropped.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

MemoryKind = Literal["prompt", "exchange", "response", "tool", "error", "note"]


class HookPayload(BaseModel):
    """Fields common to every hook event."""

    model_config = ConfigDict(extra="allow")

    session_id: str = Field(min_length=1, max_length=200)
    cwd: str = Field(min_length=1, max_length=4096)
    transcript_path: str | None = None
    prompt_id: str | None = None


class SessionStart(HookPayload):
    hook_event_name: Literal["SessionStart"]
    source: str = "startup"


class UserPromptSubmit(HookPayload):
    hook_event_name: Literal["UserPromptSubmit"]
    prompt: str


class PostToolUse(HookPayload):
    hook_event_name: Literal["PostToolUse"]
    tool_name: str
    tool_input: Any = None
    tool_response: Any = None
    tool_use_id: str | None = None


class PostToolUseFailure(HookPayload):
    hook_event_name: Literal["PostToolUseFailure"]
    tool_name: str
    tool_input: Any = None
    error: str = ""
    is_interrupt: bool = False
    tool_use_id: str | None = None


class Stop(HookPayload):
    hook_event_name: Literal["Stop"]
    last_assistant_message: str | None = None
    stop_hook_active: bool = False


class SessionEnd(HookPayload):
    hook_event_name: Literal["SessionEnd"]
    reason: str = "other"


HookEvent = SessionStart | UserPromptSubmit | PostToolUse | PostToolUseFailure | Stop | SessionEnd
HANDLED_EVENTS = ("SessionStart", "UserPromptSubmit", "PostToolUse", "PostToolUseFailure", "Stop", "SessionEnd")
_EVENT_ADAPTER = TypeAdapter(HookEvent)


def parse_event(payload: dict) -> HookEvent:
    """Validate a raw hook payload (raises pydantic.ValidationError)."""
    return _EVENT_ADAPTER.validate_python(payload)


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
