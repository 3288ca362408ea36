"""Another agent's tool calls in Claude Code's words, so capture, ties and the action hooks read them all alike.

Codex names its shell tool `shell`, `exec_command` or `local_shell` (its hooks say `Bash` since 0.1xx, with the
command as a string), and edits files with `apply_patch`: a tool of its own, or a `apply_patch <<'EOF'` heredoc
run in the shell. A patch becomes one Edit (its hunks: the lines taken out, the lines put in) or one Write (a new
file) per file it touches. Claude Code's own calls pass through unchanged.
"""

from __future__ import annotations

import os
import re
import shlex
from typing import Any

SHELL_TOOLS = frozenset({"shell", "exec_command", "shell_command", "local_shell", "container.exec"})
PATCH_TOOL = "apply_patch"
_HEREDOC = re.compile(r"^\s*(?:apply_patch|applypatch)\s*<<\s*['\"]?(\w+)['\"]?\s*\n(.*?)\n\1\s*$", re.S)
_FILE_LINE = re.compile(r"^\*\*\* (Add|Update|Delete) File: (.+)$")


def normalized(tool_name: str, tool_input: Any, cwd: str = "") -> list[tuple[str, Any]]:
    """(tool name, tool input) in Claude Code's vocabulary: one pair, or one per file for a patch (its paths made
    absolute from `cwd`, as Claude Code gives them)."""
    if tool_name in SHELL_TOOLS or tool_name == "Bash":
        command = shell_command(tool_input)
        if command is None:
            return [(tool_name, tool_input)]
        patch = patch_in_command(command)
        if patch is not None:
            return from_patch(patch, cwd) or [("Bash", {"command": command})]
        return [("Bash", {**(tool_input if isinstance(tool_input, dict) else {}), "command": command})]
    if tool_name == PATCH_TOOL:
        patch = tool_input if isinstance(tool_input, str) else _first_text(tool_input, ("input", "patch", "command"))
        if patch:
            return from_patch(patch_in_command(patch) or patch, cwd) or [(tool_name, tool_input)]
    return [(tool_name, tool_input)]


def shell_command(tool_input: Any) -> str | None:
    """The command line of a shell tool call: a string, or an argv (`["bash", "-lc", "make test"]`)."""
    value = tool_input.get("command", tool_input.get("cmd")) if isinstance(tool_input, dict) else tool_input
    if isinstance(value, str):
        return value
    if isinstance(value, list) and value and all(isinstance(part, str) for part in value):
        if len(value) == 3 and value[0].rsplit("/", 1)[-1] in ("bash", "sh", "zsh") and value[1] in ("-lc", "-c"):
            return value[2]
        if value[0] == PATCH_TOOL and len(value) == 2:
            return value[1]
        return shlex.join(value)
    return None


def patch_in_command(command: str) -> str | None:
    """The patch a command applies (`apply_patch <<'EOF' … EOF`), or the command itself when it is a patch."""
    match = _HEREDOC.match(command)
    if match:
        return match.group(2)
    return command if command.lstrip().startswith("*** Begin Patch") else None


def from_patch(patch: str, cwd: str = "") -> list[tuple[str, Any]]:
    """A patch as Edit / Write calls, one per file (a deleted file: none)."""
    calls: list[tuple[str, Any]] = []
    action, path = "", ""
    hunks: list[list[list[str]]] = [[[], []]]
    added: list[str] = []
    for line in [*patch.splitlines(), "*** End Patch"]:
        header = _FILE_LINE.match(line)
        if header or line.startswith("*** End Patch"):
            calls += _file_call(action, path, hunks, added)
            action, path = (header.group(1), os.path.join(cwd, header.group(2).strip())) if header else ("", "")
            hunks, added = [[[], []]], []
        elif action == "Add" and line.startswith("+"):
            added.append(line[1:])
        elif action == "Update" and line.startswith("*** Move to: "):
            path = os.path.join(cwd, line.removeprefix("*** Move to: ").strip())  # the file is there now
        elif action == "Update" and line.startswith("@@"):
            hunks.append([[], []])
        elif action == "Update" and line[:1] in ("-", "+"):
            hunks[-1][0 if line[0] == "-" else 1].append(line[1:])
        elif action == "Update" and line[:1] == " ":  # context: in the text before and after alike
            hunks[-1][0].append(line[1:])
            hunks[-1][1].append(line[1:])
    return calls


def _file_call(action: str, path: str, hunks: list[list[list[str]]], added: list[str]) -> list[tuple[str, Any]]:
    if not path:
        return []
    if action == "Add":
        return [("Write", {"file_path": path, "content": "\n".join(added) + "\n"})]
    if action == "Update":
        edits = [{"old_string": "\n".join(old), "new_string": "\n".join(new)} for old, new in hunks if old != new]
        return [("MultiEdit", {"file_path": path, "edits": edits})] if edits else []
    return []


def _first_text(value: Any, keys: tuple[str, ...]) -> str:
    if isinstance(value, dict):
        for key in keys:
            if isinstance(value.get(key), str):
                return value[key]
    return ""
