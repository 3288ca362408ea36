"""`recall import`: Claude Code transcripts (JSONL) into the store.

An imported session yields the same memories live capture would have made: each prompt,
each tool observation (from the `tool_result` entries, whose `toolUseResult` is the
PostToolUse `tool_response`), each failed tool call, and one exchange per turn (the gist of
the final answer, with its prompt as context). So importing a session recall already
captured adds nothing new: the memories deduplicate.

Entries keep their own timestamp, session and cwd. Event ids are derived from the entry
uuids, so importing the same file twice changes nothing; unchanged files are skipped by
size. Bookkeeping entries (attachments, hook records, api-request*, queue-operation …),
sidechains, meta and compaction-summary entries are ignored, as is text recall injected.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import time
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Iterator

from pydantic import BaseModel, ConfigDict, ValidationError

from . import capture
from .hook_events import PostToolUse, PostToolUseFailure
from ..shared.projects import locate, project_for
from .records import MemoryDraft

_COMMAND_NAME = re.compile(r"<command-name>\s*(/?[\w:\-]+)\s*</command-name>")
_LOCAL_COMMAND = re.compile(r"^\s*<(local-command-stdout|local-command-stderr|command-message|bash-stdout|bash-stderr)>")


class TranscriptEntry(BaseModel):
    """One line of a Claude Code transcript (only what import reads; unknown keys allowed)."""

    model_config = ConfigDict(extra="allow")

    type: str
    uuid: str | None = None
    sessionId: str | None = None
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
    errors: list[str] = field(default_factory=list)  # lines that could not be read
    failed: list[str] = field(default_factory=list)  # files not imported at all, with the reason


def find_transcripts(paths: list[Path]) -> list[Path]:
    """Transcript files under the given files/directories (subagent transcripts excluded)."""
    found: list[Path] = []
    for path in paths:
        path = path.expanduser()
        if path.is_dir():
            found.extend(p for p in sorted(path.rglob("*.jsonl")) if "subagents" not in p.parts)
        elif path.is_file():
            found.append(path)
    return list(dict.fromkeys(found))


def parse_time(value: str | None) -> float | None:
    if not value:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def _text_blocks(content) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text")
    return ""


def read_entries(path: Path, report: ImportReport) -> Iterator[TranscriptEntry]:
    with open(path, encoding="utf-8", errors="replace") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                entry = TranscriptEntry.model_validate(json.loads(line))
            except (ValueError, ValidationError) as exc:
                report.errors.append(f"{path.name}:{number}: {str(exc).splitlines()[0][:120]}")
                continue
            report.entries += 1
            if entry.type in ("user", "assistant") and not entry.isSidechain:
                yield entry


class _SessionReader:
    """Walks one transcript's conversation entries and emits (event_id, draft, time) triples."""

    def __init__(self, cfg, home: str):
        self.cfg = cfg
        self.home = home
        self.tool_uses: dict[str, tuple[str, Any]] = {}  # tool_use id -> (name, input)
        self.turn_prompt: str | None = None  # the text of the prompt that opened the current turn
        self.turn_answer: tuple[str, str, float, str, str] | None = None  # (uuid, text, at, session, project)
        self.skip_turn = False
        self.out: list[tuple[str, MemoryDraft | None, float]] = []

    def close_turn(self) -> None:
        if self.turn_answer and not self.skip_turn:
            uuid, answer, at, session, project = self.turn_answer
            prompt_text = self.turn_prompt
            draft = capture.exchange_memory(prompt_text, answer, self.cfg, project, session, at)
            if draft is not None:
                self.out.append((f"import:{session}:{uuid}:exchange", draft, at))
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
        event_base = f"import:{session}:{entry.uuid or at}"
        if entry.type == "user":
            if entry.isMeta or entry.isCompactSummary:
                return
            results = [b for b in content if isinstance(b, dict) and b.get("type") == "tool_result"] \
                if isinstance(content, list) else []
            if results:
                for block in results:
                    self.add_tool_result(block, entry, session, cwd, project, at)
                return
            text = _text_blocks(content)
            if not text.strip() or _LOCAL_COMMAND.match(text):
                return
            self.close_turn()
            command = _COMMAND_NAME.search(text)
            if command and command.group(1).lstrip("/").startswith("recall:"):
                self.skip_turn = True
                return
            draft = capture.prompt_memory(text, self.cfg, project, session, at,
                                          {"prompt_id": entry.promptId} if entry.promptId else None)
            if draft is None:
                self.skip_turn = True
                return
            self.out.append((event_base, draft, at))
            self.turn_prompt = draft.text
        elif entry.type == "assistant" and isinstance(content, list):
            for block in content:
                if not isinstance(block, dict):
                    continue
                if block.get("type") == "tool_use" and isinstance(block.get("id"), str):
                    self.tool_uses[block["id"]] = (str(block.get("name", "")), block.get("input"))
                elif block.get("type") == "text" and block.get("text", "").strip():
                    # The last text of a turn is its answer (what Stop's last_assistant_message holds).
                    self.turn_answer = (entry.uuid or str(at), block["text"], at, session, project)

    def add_tool_result(self, block: dict, entry: TranscriptEntry, session: str, cwd: str, project: str,
                        at: float) -> None:
        tool_use_id = block.get("tool_use_id")
        name, tool_input = self.tool_uses.get(tool_use_id, ("", None))
        if not name:
            return
        common = {"session_id": session or "import", "cwd": cwd, "tool_name": name, "tool_input": tool_input,
                  "tool_use_id": tool_use_id}
        if block.get("is_error"):
            error = _text_blocks(block.get("content")) if not isinstance(block.get("content"), str) else block["content"]
            event = PostToolUseFailure(hook_event_name="PostToolUseFailure", error=error or "", **common)
            draft = capture.tool_failure(event, self.cfg, project, at)
        else:
            response = entry.toolUseResult if entry.toolUseResult is not None else block.get("content")
            event = PostToolUse(hook_event_name="PostToolUse", tool_response=response, **common)
            draft = capture.tool_observation(event, self.cfg, project, at, self.home)
        if draft is not None:
            self.out.append((f"import:{session}:{tool_use_id}", draft, at))


EXPORT_FIELDS = {"id", "project", "kind", "text", "created_at"}  # a line of `recall export --format jsonl`


def is_recall_export(path: Path) -> bool:
    """Is this a `recall export` file (one memory object per line) rather than a Claude Code transcript?"""
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            first = next((line for line in handle if line.strip()), "")
        data = json.loads(first)
    except (OSError, ValueError):
        return False
    return isinstance(data, dict) and EXPORT_FIELDS <= set(data)


def import_export_file(store, path: Path, report: ImportReport) -> int:
    """Import a `recall export` file: each memory keeps its project, session, kind, text, time, importance,
    meta and pin. The event id is derived from the content, so importing the same export twice adds nothing."""
    items = []
    pins = []
    with open(path, encoding="utf-8", errors="replace") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                data = json.loads(line)
                at = datetime.fromisoformat(str(data["created_at"]).replace("Z", "+00:00")).timestamp()
                draft = MemoryDraft(project=data["project"], session_id=data.get("session_id") or "",
                                    kind=data["kind"], text=data["text"], created_at=at,
                                    importance=data.get("importance", 0.3), meta=data.get("meta") or {})
            except (ValueError, KeyError, TypeError, ValidationError) as exc:
                report.errors.append(f"{path.name}:{number}: not a recall memory: {str(exc).splitlines()[0][:120]}")
                continue
            report.entries += 1
            key = hashlib.sha1(f"{draft.project}\0{draft.kind}\0{draft.text}\0{at}".encode()).hexdigest()
            items.append((f"export-{key}", draft, at))
            pins.append(bool(data.get("pinned")))
    results = store.record_many(items)
    pinned = [r.memory_id for r, pin in zip(results, pins) if pin and r.memory_id]
    if pinned:
        store.set_pinned(pinned, True)
    report.events += len(results)
    report.new_memories += sum(1 for r in results if r.created)
    report.duplicates += sum(1 for r in results if not r.created and not r.duplicate_event and r.memory_id)
    return len(results)


def import_file(store, path: Path, report: ImportReport) -> int:
    """Import one transcript, adding its numbers to `report`; returns how many events it held."""
    if is_recall_export(path):
        return import_export_file(store, path, report)
    reader = _SessionReader(store.config.capture, str(store.paths.home))
    sessions: dict[str, tuple[str, float, float]] = {}
    places: set[tuple[str, str]] = set()
    for entry in read_entries(path, report):
        reader.add(entry)
        at = parse_time(entry.timestamp)
        if entry.sessionId and at:
            project, root = locate(entry.cwd or "/")
            if os.path.isdir(root):  # a clone on this machine (a transcript from elsewhere names no place here)
                places.add((project, root))
            first = sessions.get(entry.sessionId, (project, at, at))
            sessions[entry.sessionId] = (first[0], min(first[1], at), max(first[2], at))
    reader.close_turn()
    for project, root in places:
        store.note_project_path(project, root)
    results = store.record_many(reader.out)
    for session_id, (project, started, ended) in sessions.items():
        store.import_session(session_id, project, started, ended, str(path))
    report.events += len(results)
    report.new_memories += sum(1 for r in results if r.created)
    report.duplicates += sum(1 for r in results if not r.created and not r.duplicate_event and r.memory_id)
    return len(results)


def import_paths(store, paths: list[Path], progress=None) -> ImportReport:
    """Import transcripts from files and directories. `progress(path)` is called after each file."""
    report = ImportReport()
    for path in find_transcripts(paths):
        try:
            size = path.stat().st_size
            if store.imported_size(str(path.resolve())) == size:
                report.skipped_files += 1
            else:
                entries_before, errors_before = report.entries, len(report.errors)
                events = import_file(store, path, report)
                if report.entries == entries_before and len(report.errors) > errors_before:
                    report.failed.append(f"{path}: not a Claude Code transcript nor a recall export "
                                         f"({len(report.errors) - errors_before} unreadable lines, none usable)")
                    del report.errors[errors_before:]
                else:
                    store.mark_imported(str(path.resolve()), size, events)
                    report.files += 1
        except OSError as exc:
            report.failed.append(f"{path}: {exc.strerror or exc}")
        if progress:
            progress(path)
    return report


FIRST_PROMPT_BYTES = 256 * 1024  # a subagent's task is its transcript's first user entry


def first_prompt(path: str | None) -> str | None:
    """The first user prompt of a transcript (a subagent's task), or None if unreadable."""
    if not path:
        return None
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            head = handle.read(FIRST_PROMPT_BYTES)
    except OSError:
        return None
    for line in head.splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        message = entry.get("message") if isinstance(entry, dict) and entry.get("type") == "user" else None
        text = _text_blocks(message.get("content")) if isinstance(message, dict) else ""
        if text.strip():
            return text
    return None
