"""The lines of a Claude Code transcript as the memories live capture would have made of them.

A session's main conversation yields each prompt (only the user's own words: core/capture/user_words.py), each tool
observation (from the `tool_result` entries, whose `toolUseResult` is the PostToolUse `tool_response`), each
failed tool call, and one exchange per turn (the gist of the final answer, with its prompt as context).

Each subagent's work goes to its namespace (core/trust.py), as SubagentStop and the tool hooks store it live:
its task and final report as one exchange, its tool calls as tool memories. Claude Code has written subagents
three ways: inline in the session's file (`isSidechain` lines, 0.2 to 1.0), in sibling `agent-<id>.jsonl`
files (2.0) and under `<session>/subagents/` (2.1). A subagent's type is the `subagent_type` of the Task call
that started it, found through the tool result's `agentId` or, inline, through the task's text.

Lines are parsed leniently (raw control characters inside strings are read); what still cannot be read is
counted in the report. Each line goes through the privacy policy as a hook's payload does (`private_entry`), and a
tool call's values of a secret file when its input and its result are put together (`tool_memory`).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, ValidationError

from ...shared.projects import project_for
from ...shared.redact import clean_tree, hide_secret_files
from ..records import MemoryDraft
from ..trust import agent_name
from . import capture, user_words
from .hook_events import PostToolUse, PostToolUseFailure

if TYPE_CHECKING:
    from ..config import CaptureConfig

TASK_TOOLS = ("Task", "Agent")  # the tool that starts a subagent (renamed Agent in later versions)
_COMMAND_NAME = "<command-name>"


class TranscriptEntry(BaseModel):
    """One line of a Claude Code transcript (only what import reads; unknown keys allowed)."""

    model_config = ConfigDict(extra="allow")

    type: str
    uuid: str | None = None
    parentUuid: str | None = None
    sessionId: str | None = None
    agentId: str | None = None
    timestamp: str | None = None
    cwd: str | None = None
    isSidechain: bool = False
    isMeta: bool = False
    isCompactSummary: bool = False
    promptId: str | None = None
    message: dict[str, Any] | None = None
    toolUseResult: Any = None


@dataclass
class ImportReport:
    files: int = 0
    skipped_files: int = 0
    entries: int = 0
    events: int = 0
    new_memories: int = 0
    duplicates: int = 0
    subagents: int = 0  # subagents whose work was read into their namespace
    not_the_users: int = 0  # user-role lines Claude Code wrote (notifications, commands, markers): not prompts
    errors: list[str] = field(default_factory=list)  # lines that could not be read
    failed: list[str] = field(default_factory=list)  # files not imported at all, with the reason


def parse_time(value: str | None) -> float | None:
    if not value:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def text_blocks(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text")
    return ""


SAID_FIELDS = ("message", "toolUseResult")  # what a transcript line holds of what was said and done


def private_entry(entry: Any) -> Any:
    """A transcript line with what it says through the privacy policy (shared/redact.py), before it is read."""
    if not isinstance(entry, dict):
        return entry
    return {key: clean_tree(value) if key in SAID_FIELDS else value for key, value in entry.items()}


def read_entries(path: Path, report: ImportReport) -> Iterator[TranscriptEntry]:
    """The conversation entries of a transcript (sidechains included), read leniently."""
    with open(path, encoding="utf-8", errors="replace") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                entry = TranscriptEntry.model_validate(private_entry(json.loads(line, strict=False)))
            except (ValueError, ValidationError) as exc:
                report.errors.append(f"{path.name}:{number}: {str(exc).splitlines()[0][:120]}")
                continue
            report.entries += 1
            if entry.type in ("user", "assistant"):
                yield entry


class Conversation:
    """One thread of turns, the main session's or a subagent's, walked entry by entry into (event id, draft,
    time) triples. A subagent's first prompt is its task (the main assistant's words, not the user's): with its
    final report it makes the subagent's exchange."""

    def __init__(self, cfg, home: str, report: ImportReport, agent: str = "", agent_meta: dict | None = None):
        self.cfg, self.home, self.report = cfg, home, report
        self.agent, self.agent_meta = agent, dict(agent_meta or {})
        self.tool_uses: dict[str, tuple[str, Any]] = {}  # tool_use id -> (name, input)
        self.agent_types: dict[str, str] = {}  # subagent id -> its type, from the Task calls that started them
        self.task_types: dict[str, str] = {}  # a Task's prompt -> its subagent type (inline sidechains)
        self.turn_prompt: str | None = None  # the text of the prompt that opened the current turn
        self.turn_answer: tuple[str, str, float, str, str] | None = None  # (uuid, text, at, session, project)
        self.skip_turn = False
        self.out: list[tuple[str, MemoryDraft | None, float]] = []

    def _key(self, session: str, rest: str) -> str:
        return f"import:{session}:{self.agent_meta.get('agent_id')}:{rest}" if self.agent else f"import:{session}:{rest}"

    def _keep(self, key: str, draft: MemoryDraft | None, at: float) -> None:
        if draft is not None and self.agent:
            draft.agent = self.agent
            draft.meta.update(self.agent_meta)
        if draft is not None:
            self.out.append((key, draft, at))

    def close_turn(self) -> None:
        if self.turn_answer and not self.skip_turn:
            uuid, answer, at, session, project = self.turn_answer
            meta = {"agent_type": self.agent_meta["agent_type"]} if self.agent else None
            draft = capture.exchange_memory(self.turn_prompt, answer, self.cfg, project, session, at, meta,
                                            report=bool(self.agent))
            self._keep(self._key(session, "exchange" if self.agent else f"{uuid}:exchange"), draft, at)
        self.turn_prompt = None
        self.turn_answer = None
        self.skip_turn = False

    def add(self, entry: TranscriptEntry) -> None:
        session = entry.sessionId or ""
        at = parse_time(entry.timestamp) or time.time()
        cwd = entry.cwd or "/"
        project = project_for(cwd)
        message = entry.message or {}
        content = message.get("content")
        if entry.type == "user":
            if entry.isMeta or entry.isCompactSummary:
                return
            results = [b for b in content if isinstance(b, dict) and b.get("type") == "tool_result"] \
                if isinstance(content, list) else []
            if results:
                for block in results:
                    self.add_tool_result(block, entry, session, cwd, project, at)
                return
            text = text_blocks(content)
            if not text.strip():
                return
            if self.agent:  # a subagent's task, then (rarely) what its caller added
                if self.turn_prompt is None:
                    self.turn_prompt = text
                return
            self.add_user_text(text, entry, session, project, at)
        elif entry.type == "assistant" and isinstance(content, list):
            for block in content:
                if not isinstance(block, dict):
                    continue
                if block.get("type") == "tool_use" and isinstance(block.get("id"), str):
                    self.tool_uses[block["id"]] = (str(block.get("name", "")), block.get("input"))
                    task = block.get("input") if block.get("name") in TASK_TOOLS else None
                    if isinstance(task, dict) and isinstance(task.get("prompt"), str):
                        self.task_types[task["prompt"].strip()] = str(task.get("subagent_type") or "task")
                elif block.get("type") == "text" and block.get("text", "").strip():
                    # The last text of a turn is its answer (what Stop's last_assistant_message holds).
                    self.turn_answer = (entry.uuid or str(at), block["text"], at, session, project)

    def add_user_text(self, text: str, entry: TranscriptEntry, session: str, project: str, at: float) -> None:
        said, draft = capture.users_prompt(text, self.cfg, project, session, at,
                                           {"prompt_id": entry.promptId} if entry.promptId else None)
        if said.kind != user_words.USER:
            self.report.not_the_users += 1
            if said.kind == user_words.COMMAND and _COMMAND_NAME in text:
                # A slash command opens a turn of its own: what follows answers it, not the prompt before.
                self.close_turn()
                self.turn_prompt = capture.command_line(text)
                self.skip_turn = capture.is_recall_command(self.turn_prompt)
            return  # a notification or a marker: the turn it falls in goes on
        self.close_turn()
        if draft is None:
            self.skip_turn = True
            return
        self._keep(f"import:{session}:{entry.uuid or at}", draft, at)
        self.turn_prompt = draft.text

    def add_tool_result(self, block: dict, entry: TranscriptEntry, session: str, cwd: str, project: str,
                        at: float) -> None:
        tool_use_id = block.get("tool_use_id")
        name, tool_input = self.tool_uses.get(str(tool_use_id), ("", None))
        if not name:
            return
        result = entry.toolUseResult
        if name in TASK_TOOLS and isinstance(result, dict) and result.get("agentId") and isinstance(tool_input, dict):
            self.agent_types[str(result["agentId"])] = str(tool_input.get("subagent_type") or "task")
        draft = tool_memory(self.cfg, self.home, project, at, session or "import", cwd, name, tool_input, tool_use_id,
                            *tool_outcome(block, result))
        self._keep(self._key(session, str(tool_use_id)), draft, at)


def tool_outcome(block: dict, result: Any) -> tuple[Any, str | None]:
    """(what a tool returned, its error text or None) from a `tool_result` block and its entry's `toolUseResult`
    (the PostToolUse `tool_response`)."""
    error = (text_blocks(block.get("content")) or "") if block.get("is_error") else None
    return (result if result is not None else block.get("content")), error


def tool_memory(cfg: CaptureConfig, home: str, project: str, at: float, session: str, cwd: str, name: str, tool_input: Any,
                tool_use_id: str | None, response: Any, error: str | None) -> MemoryDraft | None:
    """A tool call as its hook would have kept it: PostToolUseFailure's memory when it failed (`error`), else
    PostToolUse's."""
    said = {"tool_name": name, "tool_input": tool_input, "tool_response": response, "error": error}
    said = hide_secret_files(said, dict(said))  # a secret file's values, now that its call and result meet
    tool_input, response, error = said["tool_input"], said["tool_response"], said["error"]
    common = {"session_id": session, "cwd": cwd, "tool_name": name, "tool_input": tool_input,
              "tool_use_id": tool_use_id}
    if error is not None:
        failure = PostToolUseFailure(hook_event_name="PostToolUseFailure", error=error, **common)
        return capture.tool_failure(failure, cfg, project, at)
    event = PostToolUse(hook_event_name="PostToolUse", tool_response=response, **common)
    return capture.tool_observation(event, cfg, project, at, home)


class SessionReader:
    """A session's transcript with its subagents: the main conversation, its inline sidechains (grouped by the
    thread they start), and subagent files added with `add_subagent`; `drafts()` once everything is read."""

    def __init__(self, cfg, home: str, report: ImportReport):
        self.cfg, self.home, self.report = cfg, home, report
        self.main = Conversation(cfg, home, report)
        self.sidechains: dict[str, list[TranscriptEntry]] = {}  # the thread's first uuid -> its entries
        self.thread_of: dict[str, str] = {}  # a sidechain entry's uuid -> its thread
        self.subagents: list[tuple[str, list[TranscriptEntry]]] = []  # (agent id, entries) from their own files

    def add(self, entry: TranscriptEntry) -> None:
        if not entry.isSidechain:
            self.main.add(entry)
            return
        thread = self.thread_of.get(entry.parentUuid or "") or entry.agentId or entry.uuid or "sidechain"
        if entry.uuid:
            self.thread_of[entry.uuid] = thread
        self.sidechains.setdefault(thread, []).append(entry)

    def add_subagent(self, agent_id: str, entries: list[TranscriptEntry]) -> None:
        self.subagents.append((agent_id, entries))

    def drafts(self) -> list[tuple[str, MemoryDraft | None, float]]:
        self.main.close_turn()
        out = list(self.main.out)
        threads = [(entries[0].agentId or thread, entries) for thread, entries in self.sidechains.items()]
        for agent_id, entries in threads + self.subagents:
            if not entries:
                continue
            out.extend(self._subagent(agent_id, entries))
        return out

    def _subagent(self, agent_id: str, entries: list[TranscriptEntry]) -> list:
        task = next((text_blocks((e.message or {}).get("content")) for e in entries if e.type == "user"), "")
        agent_type = self.main.agent_types.get(agent_id) or self.main.task_types.get(task.strip()) or "task"
        conversation = Conversation(self.cfg, self.home, self.report, agent_name(agent_type, agent_id),
                                    {"agent_type": agent_type, "agent_id": agent_id})
        for entry in entries:
            conversation.add(entry)
        conversation.close_turn()
        self.report.subagents += 1
        return conversation.out


TAIL_BYTES = 512 * 1024  # the end of a transcript holds its last turn


@dataclass
class LastTurn:
    """The main conversation's last turn, as the transcript holds it: the prompt that opened it, its tool calls
    (id, name, input, result, error: the failure's text or None, at: when the result came) and its closing answer
    (None: not answered)."""

    answer: str | None = None
    tool_calls: list[dict] = field(default_factory=list)
    prompt: str | None = None  # what the user-role line that opened it says


def last_turn(path: str | None) -> LastTurn | None:
    """The last turn after the user's last prompt, read from the transcript's end, leniently (a long session costs
    no more than a short one); None when the file cannot be read."""
    if path is None:  # Codex and some Claude Code events carry none
        return None
    try:
        with open(path, "rb") as handle:
            handle.seek(0, 2)
            size = handle.tell()
            handle.seek(max(0, size - TAIL_BYTES))
            lines = handle.read().decode("utf-8", "replace").splitlines()
    except (OSError, TypeError, ValueError):
        return None
    if size > TAIL_BYTES:
        lines = lines[1:]  # the first line was cut
    turn = LastTurn()
    results: dict[str, dict] = {}  # tool_use_id -> the result's fields, until its call is met
    for line in reversed(lines):
        try:
            entry = private_entry(json.loads(line, strict=False))
        except ValueError:
            continue
        if not isinstance(entry, dict) or entry.get("isSidechain") or entry.get("type") not in ("user", "assistant"):
            continue
        content = (entry.get("message") or {}).get("content")
        blocks = [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []
        if entry["type"] == "assistant":
            closing = not turn.tool_calls and not results and not any(b.get("type") == "tool_use" for b in blocks)
            if turn.answer is None and closing:  # the last thing said, after every tool call
                turn.answer = text_blocks(content).strip() or None
            for block in reversed(blocks):
                if block.get("type") == "tool_use" and block.get("id") in results:
                    turn.tool_calls.insert(0, {"id": block["id"], "name": str(block.get("name") or ""),
                                               "input": block.get("input"), **results.pop(block["id"])})
        elif isinstance(content, str) or any(b.get("type") == "text" for b in blocks):
            turn.prompt = text_blocks(content)
            break  # the user's prompt: the turn starts here
        else:
            for block in blocks:
                if block.get("type") == "tool_result" and block.get("tool_use_id"):
                    response, error = tool_outcome(block, entry.get("toolUseResult"))
                    results[block["tool_use_id"]] = {"result": response, "error": error,
                                                     "at": parse_time(entry.get("timestamp"))}
    return turn
