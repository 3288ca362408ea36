"""`recall import ~/.codex/sessions`: Codex's session files (`rollout-*.jsonl`, or `.jsonl.zst`) into the store.

A rollout is one JSON object per line: `session_meta` (the session's id and cwd), `turn_context` (a turn's cwd), and
`response_item`s: the messages of the conversation (the user's, the developer's, the assistant's) and the tool calls
with their outputs. Older files hold the items themselves, after a first line of session meta. An imported session
yields what Codex's hooks would have stored: the user's prompts (only the words the user typed: Codex's
environment, instructions and recall's own context are other messages or tagged), each turn's final answer as an
exchange, and the shell commands and patches with their outcome (core/capture/tool_calls.py), every memory marked as
from Codex. Event ids come from the session and the item's place in the file, so importing again adds nothing.
"""

from __future__ import annotations

import io
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...shared.projects import locate
from ...shared.redact import clean_payload
from ...shared.wire import CODEX
from . import capture, tool_calls
from .hook_events import PostToolUse, PostToolUseFailure
from .transcript_reader import ImportReport, parse_time

if TYPE_CHECKING:
    from ..config import CaptureConfig
    from ..records import MemoryDraft
    from ..storage import Store

ZST_SUFFIX = ".jsonl.zst"
_EXIT = re.compile(r"(?:Process exited with code|Exit code:?)\s*(-?\d+)")
_OUTPUT = re.compile(r"\nOutput:\n(.*)\Z", re.S)
# Codex's own words in the user's place: its environment, the project's AGENTS.md, a turn it aborted (its tags are
# snake_case: `<environment_context>`, `<user_instructions>`, `<turn_aborted>`; a user's `<private>` is the user's).
_NOT_THE_USERS = re.compile(r"^\s*(?:<[a-z]+_[a-z_]+>|# AGENTS\.md instructions)")
_TURN_DONE = ("task_complete", "turn_complete")  # event_msg types: the turn's last answer is final
_FAILED_PATCH = re.compile(r"^\s*(?:apply_patch verification failed|Failed to apply patch|error: )", re.I)


def is_rollout(path: Path) -> bool:
    """A Codex session file: `rollout-*.jsonl` (or .jsonl.zst), or any file whose first line is Codex's session meta."""
    if path.name.startswith("rollout-") and (path.name.endswith(".jsonl") or path.name.endswith(ZST_SUFFIX)):
        return True
    first = next(iter(_lines(path, limit=1)), None)
    return isinstance(first, dict) and (first.get("type") == "session_meta" or
                                        {"id", "timestamp", "instructions"} <= set(first))


def _lines(path: Path, limit: int | None = None) -> Iterator[Any]:
    """The JSON values of a file's lines (unreadable lines: None)."""
    try:
        handle = _open(path)
    except (OSError, RuntimeError):
        return
    with handle:
        for number, line in enumerate(handle):
            if limit is not None and number >= limit:
                return
            if not line.strip():
                continue
            try:
                yield json.loads(line, strict=False)
            except ValueError:
                yield None


OUTCOME_TAIL_BYTES = 512 * 1024  # of a live session's file, where its latest tool call's outcome is


def exit_code_at_hook(transcript_path: str | None, call_id: str | None) -> int | None:
    """The exit code Codex recorded for a tool call, read from the end of its session file while its PostToolUse hook
    runs: the hook's payload carries none, but Codex writes the call's `item_completed` (with `exit_code` and
    `status`) before it starts the hook (checked on 0.171.0: every time, the last line). None when it is not there."""
    if not transcript_path or not call_id or transcript_path.endswith(ZST_SUFFIX):
        return None
    try:
        with open(transcript_path, "rb") as handle:
            handle.seek(0, 2)
            handle.seek(max(0, handle.tell() - OUTCOME_TAIL_BYTES))
            lines = handle.read().decode("utf-8", "replace").splitlines()
    except (OSError, ValueError):
        return None
    needle = json.dumps(call_id)
    for line in reversed(lines):
        if needle not in line or "item_completed" not in line:
            continue
        try:
            item = (json.loads(line, strict=False).get("payload") or {}).get("item") or {}
        except (ValueError, AttributeError):
            continue
        if not isinstance(item, dict) or item.get("id") != call_id:
            continue
        code = item.get("exit_code")
        if isinstance(code, int):
            return code
        return {"failed": 1, "completed": 0}.get(str(item.get("status")))
    return None


def _open(path: Path) -> io.TextIOBase:
    if not path.name.endswith(".zst"):
        return open(path, encoding="utf-8", errors="replace")
    try:  # Python 3.14's own zstd, else the `zstandard` package
        from compression import zstd  # type: ignore[import-not-found,unused-ignore]

        raw: Any = zstd.open(path, "rb")
    except ImportError:
        try:
            import zstandard
        except ImportError:
            raise RuntimeError("reading .zst files needs the `zstandard` package (pip install zstandard)") from None
        raw = zstandard.ZstdDecompressor().stream_reader(open(path, "rb"), closefd=True)
    return io.TextIOWrapper(raw, encoding="utf-8", errors="replace")


@dataclass
class _Session:
    """What a rollout has told so far: where it runs, and the turn being read."""

    id: str
    cwd: str = "/"
    first_cwd: str = ""  # where the session started: its project in the list of sessions
    prompt: str | None = None
    prompt_cwd: str = "/"  # where the turn's prompt was given: its answer belongs there too
    prompt_key: str = ""
    answer: str = ""
    answer_at: float = 0.0
    kept_prompt: bool = False  # the turn's prompt was kept (not private, not a recall command): its answer is too
    turn_done: bool = False  # Codex said the turn ended (task_complete)
    events_seen: bool = False  # the file has event_msg lines (older files have none: a turn ends at the next prompt)
    calls: dict[str, tuple[str, Any, float]] = field(default_factory=dict)  # call id -> (tool, input, when)
    started: float = 0.0
    ended: float = 0.0


def import_rollout(store: Store, path: Path, report: ImportReport) -> int:
    """Import one Codex session file into `store`, adding its numbers to `report`; returns how many events it held."""
    cfg = store.config.capture
    session = _Session(id=path.name.removesuffix(ZST_SUFFIX).removesuffix(".jsonl"))
    items: list[tuple[str, MemoryDraft | None, float]] = []
    try:
        _open(path).close()
    except RuntimeError as exc:
        report.failed.append(f"{path}: {exc}")
        return 0
    for number, line in enumerate(_lines(path)):
        if not isinstance(line, dict):
            report.errors.append(f"{path.name}:{number + 1}: not JSON")
            continue
        report.entries += 1
        stamp = line.get("timestamp")
        at = (parse_time(stamp) if isinstance(stamp, str) else None) or session.ended or session.started
        kind, payload = line.get("type"), line.get("payload")
        if kind in ("session_meta", "turn_context") and isinstance(payload, dict):
            if kind == "session_meta" and isinstance(payload.get("id") or payload.get("session_id"), str):
                session.id = payload.get("id") or payload["session_id"]
            session.cwd = payload["cwd"] if isinstance(payload.get("cwd"), str) and payload["cwd"] else session.cwd
            session.first_cwd = session.first_cwd or session.cwd
            session.started = session.started or at
            continue
        if kind == "event_msg" and isinstance(payload, dict):
            session.events_seen = True
            session.turn_done = session.turn_done or payload.get("type") in _TURN_DONE
            continue
        if kind is None and {"id", "timestamp"} <= set(line) and number == 0:  # an older file's first line
            session.id, session.started = str(line["id"]), at
            continue
        item = payload if kind == "response_item" else line if kind in ("message", "function_call",
                                                                          "function_call_output", "custom_tool_call",
                                                                          "custom_tool_call_output", "local_shell_call")\
            else None
        if not isinstance(item, dict) or not at:
            continue
        session.started = session.started or at
        session.ended = max(session.ended, at)
        items += _read_item(item, at, f"codex:{session.id}:{number}", session, cfg, report)
    if session.turn_done or not session.events_seen:  # a turn still running has no final answer yet
        items += _close_turn(session, cfg)
    # Each memory belongs to the project of the folder the session was in when it happened (a session that moves to
    # another repository files its later turns there): the drafts were made with that folder as their project.
    places = {where: locate(where) for where in {session.first_cwd or session.cwd} | {d.project for _, d, _ in items if d}}
    for _, draft, _ in items:
        if draft is not None:
            draft.project = places[draft.project][0]
            draft.session_id = session.id
            draft.meta["client"] = CODEX
    for project, root in set(places.values()):
        if Path(root).is_dir():
            store.note_project_path(project, root)
    results = store.record_many(items, restoring=True)
    if session.started:
        store.import_session(session.id, places[session.first_cwd or session.cwd][0], session.started, session.ended,
                             str(path))
    report.events += len(results)
    report.new_memories += sum(1 for r in results if r.created)
    report.duplicates += sum(1 for r in results if not r.created and not r.duplicate_event and r.memory_id)
    return len(results)


def _read_item(item: dict, at: float, key: str, session: _Session, cfg: CaptureConfig,
               report: ImportReport) -> list[tuple[str, MemoryDraft | None, float]]:
    kind = item.get("type")
    if kind == "message" and item.get("role") == "user":
        text = capture.private_text(_text(item.get("content")))
        if not text.strip() or _NOT_THE_USERS.match(text):
            report.not_the_users += bool(text.strip())
            return []
        found = _close_turn(session, cfg)
        draft = capture.prompt_memory(text, cfg, session.cwd, session.id, at)
        # A private prompt or a recall command is not kept, nor is its answer (as the hooks do).
        session.prompt, session.prompt_key, session.answer, session.prompt_cwd = text, key, "", session.cwd
        session.kept_prompt, session.turn_done = draft is not None, False
        return [*found, (key, draft, at)]
    if kind == "message" and item.get("role") == "assistant":
        session.answer, session.answer_at = capture.private_text(_text(item.get("content"))) or session.answer, at
        return []
    if kind in ("function_call", "custom_tool_call", "local_shell_call"):
        call_id = str(item.get("call_id") or item.get("id") or key)
        raw = item.get("arguments") if kind == "function_call" else item.get("input", item.get("action"))
        session.calls[call_id] = (str(item.get("name") or "shell"), _arguments(raw), at)
        return []
    if kind in ("function_call_output", "custom_tool_call_output"):
        call = session.calls.pop(str(item.get("call_id")), None)
        if call is None:
            return []
        return _tool_memories(call, item.get("output"), at, key, session, cfg)
    return []


def _tool_memories(call: tuple[str, Any, float], output: Any, at: float, key: str, session: _Session,
                   cfg: CaptureConfig) -> list[tuple[str, MemoryDraft | None, float]]:
    name, tool_input, _ = call
    text, code = _outcome(output)
    found: list[tuple[str, MemoryDraft | None, float]] = []
    for n, (tool_name, normal) in enumerate(tool_calls.normalized(name, tool_input, session.cwd)):
        said = clean_payload({"tool_name": tool_name, "tool_input": normal, "tool_response": text})  # as a hook's
        common = {"session_id": session.id, "cwd": session.cwd, "tool_name": tool_name, "tool_input": said["tool_input"]}
        if code not in (None, 0):
            draft = capture.tool_failure(PostToolUseFailure(hook_event_name="PostToolUseFailure",
                                                            error=failure_text(code, said["tool_response"]), **common),
                                         cfg, session.cwd, at)
        else:
            draft = capture.tool_observation(PostToolUse(hook_event_name="PostToolUse",
                                                         tool_response=said["tool_response"], **common), cfg,
                                             session.cwd, at)
        found.append((f"{key}:{n}" if n else key, draft, at))
    return found


def _close_turn(session: _Session, cfg: CaptureConfig) -> list[tuple[str, MemoryDraft | None, float]]:
    """The exchange of the turn that just ended (its prompt and final answer), once, keyed by its prompt."""
    if session.prompt is None or not session.kept_prompt or not session.answer.strip():
        session.prompt = None
        return []
    draft = capture.exchange_memory(session.prompt, session.answer, cfg, session.prompt_cwd, session.id,
                                    session.answer_at)
    session.prompt, session.answer = None, ""
    return [(session.prompt_key + ":answer", draft, session.answer_at)]


def failure_text(code: int, output: Any) -> str:
    """A failed command's error as recall keeps it, live (router.on_tool) and imported alike: the same text, so that
    one failure is one memory, and a forgotten one's tombstone knows it again."""
    return f"Exit code {code}\n{_outcome(output)[0]}"


def _outcome(output: Any) -> tuple[str, int | None]:
    """A tool output's text and exit code: `Process exited with code N … Output:` text, or a JSON
    `{"output", "metadata": {"exit_code"}}` (older Codex)."""
    if isinstance(output, dict):
        failed = output.get("success") is False
        output = output.get("content") or output.get("output") or json.dumps(output)
        if failed:
            return (output if isinstance(output, str) else json.dumps(output, ensure_ascii=False)), 1
    text = output if isinstance(output, str) else json.dumps(output, ensure_ascii=False)
    try:
        data = json.loads(text)
    except ValueError:
        data = None
    if isinstance(data, dict) and "output" in data:
        metadata = data.get("metadata")
        code = metadata.get("exit_code") if isinstance(metadata, dict) else None
        return str(data["output"]), code if isinstance(code, int) else None
    body = _OUTPUT.search(text)
    exit_code = _EXIT.search(text[:body.start()] if body else text[:200])  # Codex's header, not the command's output
    if exit_code is None and _FAILED_PATCH.match(text):
        return text, 1
    return (body.group(1) if body else text), (int(exit_code.group(1)) if exit_code else None)


def _arguments(raw: Any) -> Any:
    if isinstance(raw, str):
        try:
            parsed = json.loads(raw)
        except ValueError:
            return raw  # a freeform tool's input (apply_patch's patch)
        return parsed
    return raw


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(part["text"] for part in content if isinstance(part, dict)
                         and part.get("type") in ("input_text", "output_text", "text") and isinstance(part.get("text"), str))
    return ""
