"""From a Claude Code event to the memories worth keeping.

Pure functions: no database, no clock. What they read has been through the privacy policy once, as a whole event
(shared/redact.py clean_payload: the router does it for a hook's payload, the importers for each transcript line),
so secrets and `<private>` spans are gone before anything is cut. Every text goes through `finish()` on its way out:
recall's own injection markers neutralised (so recalled text fed back to Claude can never be re-captured as a new
memory or pose as a recall block), whitespace tidied and the length capped.
"""

from __future__ import annotations

import json
import os
import re

from ...shared.redact import clean
from ...shared.text import cap, cap_middle
from .. import sentences
from ..config import CaptureConfig
from ..records import MemoryDraft
from . import material, user_words
from .hook_events import PostToolUse, PostToolUseFailure

INJECTION_TAG = "recall-memory"  # the element recall wraps recalled memories in (see inject.py)
_TAG_LOOKALIKE = re.compile(r"<(/?)\s*recall-memor(y|ies)\b", re.IGNORECASE)
_WHITESPACE_RUNS = re.compile(r"[ \t\r\f\v]+")
_BLANK_LINES = re.compile(r"\n{3,}")

# Our own command and CLI: capturing their output would store recalled text again.
RECALL_COMMAND_PREFIX = "/recall:"
_RECALL_CLI = re.compile(r"(?:^|[;&|(\s/])recall(?:\s|$)|memory_store\.(?:shells\.)?cli")


LOG_SEARCH = "log-search"  # commands/log-search.md: the prompt hook answers it with the search's index


def is_recall_command(prompt: str) -> bool:
    """Is this prompt one of recall's own slash commands (`/recall:log-search ...`)? Neither it nor its answer is
    kept, and nothing is recalled for it."""
    return prompt.lstrip().startswith(RECALL_COMMAND_PREFIX)


def recall_command(prompt: str) -> tuple[str, str] | None:
    """(name, the user's words after it, exactly as typed) of one of recall's slash commands; None for a prompt.
    Claude Code hands the prompt hook the raw text, so the words reach the search without passing a shell."""
    text = prompt.lstrip()
    if not text.startswith(RECALL_COMMAND_PREFIX):
        return None
    parts = text[len(RECALL_COMMAND_PREFIX):].split(maxsplit=1)  # a newline or a tab ends the name too
    return (parts[0], parts[1].strip() if len(parts) > 1 else "") if parts else ("", "")

_DECISION = re.compile(
    r"\b(decid\w*|we(?:'ll| will) use|switch(?:ed)? to|instead of|chose|going with|always|never|must|"
    r"remember|important|convention|policy|rule|prefer\w*|from now on)\b",
    re.IGNORECASE,
)
_CORRECTION = re.compile(
    r"(^\s*(no|nope|wrong|actually|not quite)\b|that's (not|wrong)|\bdon't\b|\bdo not\b|\bstop\b|\binstead\b)",
    re.IGNORECASE,
)
_TROUBLE = re.compile(r"\b(error|exception|traceback|fail\w*|bug|fix\w*|broken|crash\w*|regression)\b", re.IGNORECASE)

PROMPT_PREVIEW_CHARS = 300  # the question shown with an exchange
BASE_IMPORTANCE = {"error": 0.6, "exchange": 0.4, "response": 0.35, "prompt": 0.35, "tool": 0.2, "note": 0.5}


def neutralize(text: str) -> str:
    """Defang anything that looks like recall's injection block."""
    return _TAG_LOOKALIKE.sub(lambda m: f"‹{m.group(1)}{INJECTION_TAG}", text)


def tidy(text: str) -> str:
    text = _WHITESPACE_RUNS.sub(" ", text.replace("\x00", ""))
    return _BLANK_LINES.sub("\n\n", text).strip()


def finish(text: str, limit: int, *, keep_ends: bool = False) -> str:
    """The last step for every captured string (already through the privacy policy); `keep_ends`: a long text keeps
    its head and its tail."""
    return (cap_middle if keep_ends else cap)(tidy(neutralize(text)), limit)


def private_text(text: str) -> str:
    """A text from outside an event (a note to remember, a transcript's line) through the privacy policy, as an
    event's strings go (shared/redact.py)."""
    return clean(text)


def importance(kind: str, text: str) -> float:
    """A 0–1 guess at how much a memory matters: decisions, corrections and errors rank high."""
    score = BASE_IMPORTANCE.get(kind, 0.3)
    if _DECISION.search(text):
        score += 0.25
    if kind in ("prompt", "exchange") and _CORRECTION.search(text):
        score += 0.2
    if _TROUBLE.search(text):
        score += 0.15
    return round(min(1.0, score), 3)


def extractive_summary(text: str, limit: int) -> str:
    """Shorten an answer without a model: its densest sentences (identifiers, paths, commands, values,
    reasons; acknowledgements go first), in their original order (sentences.summarize)."""
    return sentences.summarize(tidy(text), limit)


def relative(path: str, cwd: str) -> str:
    try:
        rel = os.path.relpath(path, cwd)
    except ValueError:  # another drive on Windows
        return path
    return path if rel.startswith("..") else rel


def _as_text(value) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list):  # MCP-style content blocks
        parts = [item.get("text", "") if isinstance(item, dict) else str(item) for item in value]
        return "\n".join(p for p in parts if p)
    return json.dumps(value, ensure_ascii=False, default=str)


def _tool_files(tool_input, tool_response) -> list[str]:
    files = []
    for source in (tool_input, tool_response):
        if isinstance(source, dict):
            for key in ("file_path", "filePath", "notebook_path", "path"):
                value = source.get(key)
                if isinstance(value, str) and value and value not in files:
                    files.append(value)
            inner = source.get("file")
            if isinstance(inner, dict) and isinstance(inner.get("filePath"), str):
                if inner["filePath"] not in files:
                    files.append(inner["filePath"])
    return files


def _compact_input(tool_input, limit: int) -> str:
    if isinstance(tool_input, dict):
        if isinstance(tool_input.get("command"), str):
            return cap(tool_input["command"], limit)
        parts = []
        for key, value in tool_input.items():
            if key in ("content", "old_string", "new_string", "description"):
                continue
            parts.append(f"{key}={_as_text(value)}")
        return cap(" ".join(parts), limit)
    return cap(_as_text(tool_input), limit)


def is_recall_invocation(command: str) -> bool:
    """A shell command that runs recall's own CLI (its output is recalled memory)."""
    return bool(_RECALL_CLI.search(command or ""))


def _render_tool(event: PostToolUse, cfg: CaptureConfig) -> str | None:
    name, tool_input, response = event.tool_name, event.tool_input, event.tool_response
    cwd = event.cwd
    inputs = tool_input if isinstance(tool_input, dict) else {}
    files = _tool_files(tool_input, response)
    shown = relative(files[0], cwd) if files else ""
    out_limit = cfg.max_tool_output_chars

    def body(text: str) -> str:
        return cap_middle(tidy(text), out_limit)

    if name == "Bash":
        given = inputs.get("command")
        command = given if isinstance(given, str) else _as_text(tool_input)
        if is_recall_invocation(command):
            return None
        output = ""
        if isinstance(response, dict):
            output = "\n".join(_as_text(response.get(k)) for k in ("stdout", "stderr") if response.get(k))
        else:
            output = _as_text(response)
        rendered = f"Bash `{cap(command, cfg.max_tool_input_chars)}`"
        return rendered + (f" → {cap_middle(tidy(output), out_limit)}" if output.strip() else "")
    if name == "Edit" or name == "MultiEdit":
        listed = inputs.get("edits")
        edits = listed if isinstance(listed, list) else [inputs]
        changes = []
        for edit in edits:
            if isinstance(edit, dict):
                old, new = _as_text(edit.get("old_string")), _as_text(edit.get("new_string"))
                changes.append(f"`{body(old)}` → `{body(new)}`")
        return f"Edit {shown}: " + "; ".join(changes)
    if name == "Write":
        content = _as_text(inputs.get("content"))
        action = response.get("type") if isinstance(response, dict) and response.get("type") else "write"
        lines = content.count("\n") + (1 if content and not content.endswith("\n") else 0)
        return f"Write {shown} ({action}, {lines} lines): {body(content)}"
    if name == "Read":
        file_info = response.get("file") if isinstance(response, dict) else None
        content = _as_text(file_info.get("content")) if isinstance(file_info, dict) else ""
        read_lines = file_info.get("numLines") if isinstance(file_info, dict) else None
        head = f"Read {shown}" + (f" ({read_lines} lines)" if read_lines else "")
        return head + (f": {body(content)}" if content.strip() else "")
    compact = _compact_input(tool_input, cfg.max_tool_input_chars)
    output = _as_text(response)
    return f"{name} {compact}".strip() + (f" → {body(output)}" if output.strip() else "")


def tool_observation(event: PostToolUse, cfg: CaptureConfig, project: str, at: float, home: str = "") -> MemoryDraft | None:
    """A PostToolUse event as a compact observation: tool, input, trimmed output, files touched (and, in its meta,
    what its knowledge and ties are read from later: capture/material.py)."""
    if event.tool_name in cfg.skip_tools:
        return None
    files = _tool_files(event.tool_input, event.tool_response)
    if home and any(os.path.abspath(f).startswith(home.rstrip(os.sep) + os.sep) for f in files):
        return None  # recall's own files (database, logs) are not memories
    rendered = _render_tool(event, cfg)
    if not rendered:
        return None
    text = finish(rendered, cfg.max_tool_input_chars + cfg.max_tool_output_chars + 200)
    meta = {"tool": event.tool_name, "files": files,
            **material.of_tool(event, files, relative(files[0], event.cwd) if files else "")}
    if event.tool_use_id:
        meta["tool_use_id"] = event.tool_use_id
    return MemoryDraft(project=project, session_id=event.session_id, kind="tool", text=text, created_at=at,
                       importance=importance("tool", text) + (0.1 if event.tool_name in ("Edit", "Write") else 0),
                       meta=meta)


def tool_failure(event: PostToolUseFailure, cfg: CaptureConfig, project: str, at: float) -> MemoryDraft | None:
    """A failed tool call: the command and its error (prime material: errors and their fixes)."""
    if event.tool_name in cfg.skip_tools:
        return None
    inputs = event.tool_input if isinstance(event.tool_input, dict) else {}
    given = inputs.get("command")
    command = given if isinstance(given, str) else ""
    if command and is_recall_invocation(command):
        return None
    limit = cfg.max_tool_input_chars
    what = f"`{cap(command, limit)}`" if command else _compact_input(event.tool_input, limit)
    verb = "interrupted" if event.is_interrupt else "failed"
    error = event.error
    text = finish(f"{event.tool_name} {verb}: {what} — {cap_middle(tidy(error), cfg.max_error_chars)}",
                  cfg.max_error_chars + cfg.max_tool_input_chars + 50)
    files = _tool_files(event.tool_input, None)
    meta = {"tool": event.tool_name, "files": files, **material.of_failure(event, files, error)}
    if event.tool_use_id:
        meta["tool_use_id"] = event.tool_use_id
    return MemoryDraft(project=project, session_id=event.session_id, kind="error", text=text, created_at=at,
                       importance=importance("error", text), meta=meta)


_COMMAND_PARTS = re.compile(r"<command-(name|args)>(.*?)</command-\1>", re.DOTALL)


def command_line(text: str) -> str:
    """A slash command as the user typed it (`/review PR 12`), from the tags Claude Code records it in."""
    parts = dict((name, value.strip()) for name, value in _COMMAND_PARTS.findall(text))
    return " ".join(part for part in (parts.get("name", ""), parts.get("args", "")) if part)


def users_prompt(text: str, cfg: CaptureConfig, project: str, session_id: str, at: float,
                 meta: dict | None = None) -> tuple[user_words.Message, MemoryDraft | None]:
    """A user-role message as recall keeps it: what it is (user_words.read) and, when the words are the user's,
    their prompt memory (None for Claude Code's words, and as prompt_memory says)."""
    said = user_words.read(text)
    if said.kind != user_words.USER:
        return said, None
    return said, prompt_memory(said.words, cfg, project, session_id, at, meta)


def prompt_memory(prompt: str, cfg: CaptureConfig, project: str, session_id: str, at: float,
                  meta: dict | None = None) -> MemoryDraft | None:
    """A user prompt, unless it is empty, private or one of recall's own commands."""
    if is_recall_command(prompt):
        return None
    text = finish(prompt, cfg.max_prompt_chars, keep_ends=True)  # a pasted log asks its question at the end
    if not text or text == "[private]":
        return None
    return MemoryDraft(project=project, session_id=session_id, kind="prompt", text=text, created_at=at,
                       importance=importance("prompt", text), meta=dict(meta or {}))


def exchange_memory(prompt: str | None, answer: str, cfg: CaptureConfig, project: str, session_id: str,
                    at: float, meta: dict | None = None, *, report: bool = False) -> MemoryDraft | None:
    """The extractive summary of one exchange, made at Stop: the gist of the final answer. Its
    prompt is a memory of its own (and this one's indexed context); `meta["prompt"]` keeps a
    short copy so the exchange can be shown as question and answer."""
    limit = cfg.max_report_chars if report else cfg.max_answer_chars  # a subagent's report is kept whole (bounded)
    said = answer or ""  # redacted whole with its event, before any cut: a secret cut in two would escape its pattern
    text = finish(extractive_summary(said, limit), limit)
    if not text:
        return None
    meta = dict(meta or {})
    if prompt:
        meta["prompt"] = finish(prompt, PROMPT_PREVIEW_CHARS, keep_ends=True)
    # The whole answer teaches, not only its gist: a value said in passing is a fact the summary may leave out.
    meta.update(material.of_answer(neutralize(said), text))
    return MemoryDraft(project=project, session_id=session_id, kind="exchange", text=text, created_at=at,
                       importance=importance("exchange", f"{prompt or ''} {text}"), meta=meta)
