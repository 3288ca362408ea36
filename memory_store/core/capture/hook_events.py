"""Claude Code hook payloads, typed.

The models accept unknown keys (Claude Code adds fields often) but insist on the types of
the fields recall reads; a payload that fails validation is logged and dropped.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, model_validator


class HookPayload(BaseModel):
    """Fields common to every hook event."""

    model_config = ConfigDict(extra="allow")

    session_id: str = Field(min_length=1, max_length=200)
    cwd: str = Field(min_length=1, max_length=4096)
    transcript_path: str | None = None
    prompt_id: str | None = None
    agent_id: str | None = None  # set inside a subagent
    agent_type: str | None = None
    turn_id: str | None = None  # Codex's name for a turn (it sends no prompt_id): read as the prompt_id

    @model_validator(mode="after")
    def _turn_is_the_prompt(self) -> HookPayload:
        if self.prompt_id is None and self.turn_id:
            self.prompt_id = self.turn_id
        return self


class SessionStart(HookPayload):
    hook_event_name: Literal["SessionStart"]
    source: str = "startup"


class UserPromptSubmit(HookPayload):
    hook_event_name: Literal["UserPromptSubmit"]
    prompt: str


class PreToolUse(HookPayload):
    hook_event_name: Literal["PreToolUse"]
    tool_name: str
    tool_input: Any = None
    tool_use_id: str | None = None


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


class SubagentStop(HookPayload):
    hook_event_name: Literal["SubagentStop"]
    last_assistant_message: str | None = None
    agent_transcript_path: str | None = None


class PreCompact(HookPayload):
    hook_event_name: Literal["PreCompact"]
    trigger: str = "manual"
    custom_instructions: str | None = None


class CwdChanged(HookPayload):
    """A Bash command of the main session ended in another directory. `cwd` is where the session is now: a `cd`
    outside the working directories is undone at once, so `new_cwd` may be a place it never stays in."""

    hook_event_name: Literal["CwdChanged"]
    old_cwd: str | None = None
    new_cwd: str | None = None


class Interrupt(HookPayload):
    """An interrupt ended the turn (Claude Code 2.1.335): who (`source`: user, session, system) and why (`reason`:
    stop, permission_denied, rewind, other). Its output is ignored."""

    hook_event_name: Literal["Interrupt"]
    source: str = "user"
    reason: str = "other"
    via: str | None = None


def interrupted_turn_id(session_id: str, prompt_id: str) -> str:
    """Ledger key of a turn an interrupt ended: its answer, however it is kept later, states nothing settled."""
    return f"interrupted-turn:{session_id}:{prompt_id}"


HookEvent = (SessionStart | UserPromptSubmit | PreToolUse | PostToolUse | PostToolUseFailure | Stop | SessionEnd
             | SubagentStop | PreCompact | CwdChanged | Interrupt)
HANDLED_EVENTS = ("SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "PostToolUseFailure", "Stop",
                  "SessionEnd", "SubagentStop", "PreCompact", "CwdChanged", "Interrupt")
_EVENT_ADAPTER = TypeAdapter(HookEvent)


def parse_event(payload: dict) -> HookEvent:
    """Validate a raw hook payload (raises pydantic.ValidationError)."""
    return _EVENT_ADAPTER.validate_python(payload)
