"""What capture keeps of a whole event, beside its memory's text, for what the memory teaches and is tied to.

Knowledge and ties are read later, in the worker's background work, from the stored memory alone (core/jobs.py
`learn_pending`): so that `recall reindex` reads them again from what is kept, and no hook waits for them. A memory's
text is short (a tool's output is cut to its head and tail, an answer to its gist); what the reading needs of the
whole event goes into its meta, small and already through the privacy policy:

    root        the project's folder, for the paths the files are tied by
    files       the files a tool call touched
    file_state  their size and mtime just after a write (to tell later that a file changed since)
    path        a written file's path from the project's folder
    settings    the settings the write gave values, each under its whole key path (core/knowledge/settings.py)
    goal        what a command was for (its description)
    interrupted the command was interrupted
    errors      a failure's error lines, normalized (its signatures: capture/ties.py)
    said        the sentences of an answer that state something and that its summary left out
"""

from __future__ import annotations

import os
from typing import Any

from ...shared.projects import project_root
from ...shared.redact import bounded, clean
from ...shared.secrets import is_secret_file
from ..knowledge import extract, settings
from . import ties
from .hook_events import PostToolUse, PostToolUseFailure

WRITES = ("Edit", "MultiEdit", "Write", "NotebookEdit")
MAX_FILE_BYTES = 512 * 1024  # a file read from disk to see what an edit changed (when the event does not hold it)


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def of_tool(event: PostToolUse | PostToolUseFailure, files: list[str], relative_path: str) -> dict[str, Any]:
    """The meta a tool call's memory keeps for its knowledge and ties."""
    root = project_root(event.cwd) if event.cwd else ""
    meta: dict[str, Any] = {"root": root} if root else {}
    inputs = event.tool_input if isinstance(event.tool_input, dict) else {}
    if event.tool_name == "Bash":
        goal = inputs.get("description")
        if isinstance(goal, str) and goal.strip():
            meta["goal"] = goal.strip()[:300]
        response = getattr(event, "tool_response", None)
        if isinstance(response, dict) and response.get("interrupted") is True:
            meta["interrupted"] = True
    if event.tool_name in WRITES and files and isinstance(event, PostToolUse):
        absolute = files[0] if os.path.isabs(files[0]) or not root else os.path.join(root, files[0])
        state = ties.file_state(absolute)
        if state is not None:
            meta["file_state"] = {files[0]: list(state)}
        if relative_path and not is_secret_file(relative_path):
            new, old, whole = _contents(event, absolute)
            meta["path"] = relative_path
            meta["settings"] = extract.settings_written(relative_path, new, old)
            if not whole:  # the edit's text alone: its keys lack the blocks they sit in
                meta["settings_partial"] = True
    return meta


def of_failure(event: PostToolUseFailure, files: list[str], error: str) -> dict[str, Any]:
    """The meta a failure's memory keeps: its error lines (what its signatures are made of), and the tool call's."""
    meta = of_tool(event, files, "")
    lines = ties.error_lines(error)[:ties.MAX_SIGNATURES]
    if lines:
        meta["errors"] = lines
    return meta


def of_answer(answer: str, summary: str) -> dict[str, Any]:
    """The meta an answer's memory keeps: the sentences that state something and that its summary left out."""
    said = extract.statement_sentences(answer, summary)
    return {"said": said} if said else {}


def _contents(event: PostToolUse, absolute: str) -> tuple[str, str, bool]:
    """(the file after the write, before it, whether they are whole files): from the event when it holds them (Claude
    Code's Edit gives the file before), else from the file as it is now, else the edit's own text."""
    inputs = event.tool_input if isinstance(event.tool_input, dict) else {}
    response = event.tool_response if isinstance(event.tool_response, dict) else {}
    if event.tool_name == "Write":
        return _text(inputs.get("content")), _text(response.get("originalFile")), True
    listed = inputs.get("edits")
    edits = [e for e in (listed if isinstance(listed, list) else [inputs]) if isinstance(e, dict)]
    pairs = [(_text(e.get("old_string")), _text(e.get("new_string")), e.get("replace_all") is True) for e in edits]
    before = _text(response.get("originalFile"))
    if before:
        after = before
        for old, new, every in pairs:
            after = after.replace(old, new) if every else after.replace(old, new, 1)
        # A config file before that is only the replaced text (a client that sends the edit's own text) shows none
        # of the blocks around its keys: read as the edit alone.
        alone = len(pairs) == 1 and before.strip() == pairs[0][0].strip() and settings.is_config(absolute)
        return after, before, not alone
    after = _read(absolute)
    if not after or not all(new in after for _, new, _ in pairs):  # gone, unreadable, changed since: the edit alone
        return "\n".join(new for _, new, _ in pairs), "\n".join(old for old, _, _ in pairs), False
    before = after
    for old, new, every in reversed(pairs):
        before = before.replace(new, old) if every else before.replace(new, old, 1)
    return after, before, True


def _read(path: str) -> str:
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_FILE_BYTES + 1)
    except (OSError, ValueError):
        return ""
    if len(data) > MAX_FILE_BYTES or b"\0" in data[:8192]:
        return ""  # too big for settings, or binary
    return clean(bounded(data.decode("utf-8", "replace")))  # through the privacy policy, as an event's text
