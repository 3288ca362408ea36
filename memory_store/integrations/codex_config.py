"""Codex's config.toml as recall writes it: one block of recall's at its end, put in and cut out as text.

Editing a parsed TOML and writing it back moves blank lines and comments about; the user's file is only read (to
check that it is valid and sets nothing recall's block would), and the block is appended, or cut out line by line.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import tomlkit
from tomlkit.exceptions import TOMLKitError

from ..shared.files import atomic_write
from ..shared.wire import DATABASE_URL_ENV, DISABLE_ENV

SERVER_NAME = "recall"
# Codex starts an MCP server with a few variables of its own only: these reach recall's as they reach its hooks.
PASSED_TO_SERVER = ("RECALL_HOME", "RECALL_PYTHON", DATABASE_URL_ENV, DISABLE_ENV)
# Codex gives an MCP server 10 s to answer `initialize`, then drops it for the session. recall's starts in about 1 s,
# but on a loaded 2-core machine (a worker embedding, the session's hooks starting) it took longer, and the session
# had no recall tools. Waiting longer costs nothing when the server is quick.
SERVER_STARTUP_SECONDS = 30


class CodexConfigError(RuntimeError):
    """Codex's configuration cannot be read or written as it is: nothing was changed."""


# recall's lines in config.toml: one block at its end, opened and closed by these comment lines. Editing a parsed TOML
# and writing it back moves blank lines about; the block is cut out line by line. Codex adds the tables it writes
# itself (a project's trust, a hook the user trusts) at the end of the file, inside the block: those stay.
BLOCK_START = "# >>> recall: written by `recall install codex`; `recall install codex --uninstall` takes it out"
BLOCK_END = "# <<< recall"
_HEADER = re.compile(r"^\s*\[")
_STATE_HEADER = re.compile(r'^\s*\[hooks\.state\."([^"]*)"\]\s*$')
_HASH_LINE = re.compile(r'^\s*trusted_hash\s*=\s*"([^"]*)"')


def recall_block(mcp: list[str], trust: dict[str, str]) -> str:
    """recall's block: its MCP server (this command line) and a trust entry per hook ({key: hash})."""
    lines = [BLOCK_START, f"[mcp_servers.{SERVER_NAME}]", f"command = {toml_string(mcp[0])}",
             "args = [" + ", ".join(toml_string(arg) for arg in mcp[1:]) + "]",
             "env_vars = [" + ", ".join(toml_string(name) for name in PASSED_TO_SERVER) + "]",
             f"startup_timeout_sec = {SERVER_STARTUP_SECONDS}"]
    for key, digest in trust.items():
        lines += ["", f"[hooks.state.{toml_string(key)}]", f"trusted_hash = {toml_string(digest)}"]
    return "\n".join([*lines, BLOCK_END]) + "\n"


def toml_string(value: str) -> str:
    return json.dumps(value)  # a JSON string is a TOML basic string (the same escapes)


def with_block(text: str, block: str, newline: str = "\n") -> str:
    if not text:
        return block
    return text + ("" if text.endswith("\n") else newline) + newline + block


def strip_recall(text: str, names: list[str], ours: set[str]) -> tuple[str, list[str], bool]:
    """(the config without recall's block, the trust keys taken out, whether the MCP server was). Inside the block,
    recall's tables go: [mcp_servers.recall] and the [hooks.state] of recall's hooks (known by their hash); any
    other table there (Codex writes its own at the end of the file) stays where it is."""
    start = text.find(BLOCK_START)
    if start < 0:
        return text, [], False
    end = text.find(BLOCK_END, start)
    end = len(text) if end < 0 else (text.find("\n", end) + 1 or len(text))
    before = text[:start]
    for blank in ("\r\n\r\n", "\n\n"):  # the blank line with_block put before the block
        if before.endswith(blank):
            before = before[:-len(blank) // 2]
            break
    sections: list[list[str]] = [[]]
    for line in text[start:end].splitlines(keepends=True)[1:]:
        if line.strip() == BLOCK_END:
            continue
        if _HEADER.match(line):
            sections.append([])
        sections[-1].append(line)
    kept, keys, server = [], [], False
    for section in sections[1:]:
        header = section[0].strip()
        state = _STATE_HEADER.match(header)
        hashes = {m.group(1) for m in map(_HASH_LINE.match, section) if m}
        if header == f"[mcp_servers.{SERVER_NAME}]" or header.startswith(f"[mcp_servers.{SERVER_NAME}."):
            server = True
        elif state and state.group(1).rsplit(":", 3)[0] in names and hashes and hashes <= ours:
            keys.append(state.group(1))
        else:
            kept.append("".join(section))
    kept[:0] = [line for line in sections[0] if line.strip()]  # a comment put there stays
    return before + "".join(kept) + text[end:], keys, server


def rekey(text: str, renames: dict[str, str]) -> str:
    """Move trust entries to their hooks' new places (`[hooks.state."…:stop:1:0"]` → `…:stop:0:0`), in order."""
    for old, new in renames.items():
        pattern = re.compile(r'^(\s*)\[hooks\.state\.' + re.escape(toml_string(old)) + r"\]", re.M)
        text = pattern.sub(r"\g<1>" + f"[hooks.state.{toml_string(new)}]".replace("\\", "\\\\"), text)
    return text


def check_room(config: Any, trust: dict[str, str], config_path: Path) -> None:
    """Refuse (changing nothing) when the user's own config.toml already sets what recall's block would."""
    servers = config.get("mcp_servers")
    if isinstance(servers, dict) and SERVER_NAME in servers:
        raise CodexConfigError(f"{config_path} already has an MCP server named {SERVER_NAME!r}: rename or remove it, "
                               "then run this again (nothing was changed)")
    hooks_table = config.get("hooks")
    state = hooks_table.get("state") if isinstance(hooks_table, dict) else None
    taken = [key for key in trust if isinstance(state, dict) and key in state]
    if taken:
        raise CodexConfigError(f"{config_path} already has [hooks.state.\"{taken[0]}\"]: take it out (recall writes "
                               "its own), then run this again (nothing was changed)")


def read_text(path: Path) -> str:
    try:
        return path.read_bytes().decode("utf-8")  # as it is: CRLF stays CRLF
    except FileNotFoundError:
        return ""
    except (OSError, ValueError) as exc:
        raise CodexConfigError(f"cannot read {path}: {exc} (nothing was changed)") from None


def parse_config(text: str, path: Path) -> Any:
    try:
        return tomlkit.parse(text).unwrap()
    except (TOMLKitError, ValueError) as exc:
        raise CodexConfigError(f"{path} is not valid TOML ({exc}): nothing was changed") from None


def write_file(path: Path, text: str) -> None:
    """Replace a file whole (a reader never sees half of it), keeping its permissions; a link (a dotfiles repository's)
    stays a link: the file it points to is replaced."""
    target = Path(os.path.realpath(path))
    mode = target.stat().st_mode & 0o777 if target.exists() else 0o600
    atomic_write(target, text)
    os.chmod(target, mode)
