"""recall in OpenAI's Codex CLI: its hooks and its MCP server in `$CODEX_HOME`, trusted, and taken out again.

Codex reads hooks from `$CODEX_HOME/hooks.json` (the shape of Claude Code's) and runs a user's hook only when
`config.toml` trusts it: a `[hooks.state."<hooks.json path>:<snake_event>:<group>:<handler>"]` table whose
`trusted_hash` is the sha256 of the hook group's canonical JSON (codex-rs/hooks/src/engine/discovery.rs); `codex exec`
skips the others without a word. `recall install codex` is the user's consent: it writes recall's groups (after the
user's own), their trust entries and `[mcp_servers.recall]`, and nothing else. Running it again rewrites the same;
`--uninstall` takes out what it wrote. recall's entries are known by their content (the launcher's command line, the
hash of recall's own groups), never by position, so the user's own hooks and settings are never touched; in
config.toml recall's lines are one block, put in and cut out as text (codex_config.py).

The hooks run recall's usual launcher (hooks/run of the plugin folder, else `python -m memory_store.hook` of the
Python recall is installed in) with the event and `codex`, and talk to the same worker and data dir as Claude Code's.
Codex waits for every hook (an async one dies with `codex exec`), so PostToolUse and Stop are synchronous here.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..shared.wire import CODEX, LOG_NAME, LOGS_DIR
from .codex_config import (
    BLOCK_START,
    SERVER_NAME,
    CodexConfigError,
    check_room,
    parse_config,
    read_text,
    recall_block,
    rekey,
    strip_recall,
    with_block,
    write_file,
)

CODEX_HOME_ENV = "CODEX_HOME"
# (event, matcher, timeout in seconds). Codex caps SessionEnd at 3 s and hashes the capped value: 3 is written.
HOOKS: tuple[tuple[str, str | None, int], ...] = (
    ("SessionStart", None, 10),
    ("UserPromptSubmit", None, 15),
    ("PreToolUse", "^(Bash|apply_patch|shell|exec_command|local_shell)$", 5),
    ("PostToolUse", "*", 10),
    ("Stop", None, 10),
    ("SessionEnd", None, 3),
)
_OURS = re.compile(r"(?:/hooks/run['\"]?|-m memory_store\.hook) \w+ " + CODEX + "$")
_SNAKE = re.compile(r"(?<!^)(?=[A-Z])")


@dataclass
class Launcher:
    """How Codex starts recall: the hook command's first words, and the MCP server's command line."""

    hook: list[str]
    mcp: list[str]

    def hook_command(self, event: str) -> str:
        return " ".join(shlex.quote(part) for part in [*self.hook, event, CODEX])


@dataclass
class Change:
    """What install or uninstall did, for the user to read."""

    codex_home: str
    hooks_file: str
    config_file: str
    hooks: list[str] = field(default_factory=list)  # events whose recall group was written (or taken out)
    trusted: list[str] = field(default_factory=list)  # trust entries written (or taken out)
    mcp_server: bool = False
    removed_files: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        return self.__dict__.copy()


def codex_home(explicit: str | os.PathLike | None = None) -> Path:
    """Codex's configuration folder: the argument, $CODEX_HOME, else ~/.codex."""
    given = explicit or os.environ.get(CODEX_HOME_ENV) or "~/.codex"
    return Path(os.path.abspath(os.path.expanduser(os.fspath(given))))


def launcher() -> Launcher:
    """The plugin folder's launchers when recall runs from one (a clone, Claude Code's plugin cache), else this
    Python's modules (a pip install)."""
    root = Path(__file__).resolve().parents[2]
    run, cli = root / "hooks" / "run", root / "scripts" / "recall"
    if os.access(run, os.X_OK) and os.access(cli, os.X_OK):
        return Launcher(hook=[str(run)], mcp=[str(cli), "mcp"])
    # -E, not -I: a `pip install --user` lives in the user's site-packages, which -I leaves out.
    return Launcher(hook=[sys.executable, "-E", "-m", "memory_store.hook"],
                    mcp=[sys.executable, "-m", "memory_store.shells.entry", "mcp"])


def snake_event(event: str) -> str:
    return _SNAKE.sub("_", event).lower()


def recall_group(event: str, matcher: str | None, timeout: int, launch: Launcher) -> dict:
    group: dict[str, Any] = {"matcher": matcher} if matcher else {}
    group["hooks"] = [{"type": "command", "command": launch.hook_command(event), "timeout": timeout}]
    return group


def trusted_hash(event: str, group: dict) -> str:
    """Codex's trust identity of a one-handler command group: the sha256 of its normalized form as sorted, compact
    JSON (the event in snake case, the matcher, the handler with its timeout and `async`)."""
    handler = group["hooks"][0]
    normal: dict[str, Any] = {"type": "command", "command": handler["command"],
                              "timeout": max(1, int(handler.get("timeout") or 600)), "async": bool(handler.get("async"))}
    if handler.get("statusMessage"):
        normal["statusMessage"] = handler["statusMessage"]
    identity: dict[str, Any] = {"event_name": snake_event(event), "hooks": [normal]}
    if group.get("matcher") is not None:
        identity["matcher"] = group["matcher"]
    canonical = json.dumps(identity, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def trust_key(hooks_file: Path | str, event: str, group_index: int, handler_index: int = 0) -> str:
    return f"{hooks_file}:{snake_event(event)}:{group_index}:{handler_index}"


def hooks_file_names(folder: Path) -> list[str]:
    """How Codex may name hooks.json in a trust key: by the folder as given, or with its links resolved (Codex resolves
    $CODEX_HOME). recall trusts its hooks under both spellings."""
    return list(dict.fromkeys([str(folder / "hooks.json"), str(Path(os.path.realpath(folder)) / "hooks.json")]))


def is_recall_group(group: Any) -> bool:
    """A group recall wrote: its every handler runs recall's launcher for Codex."""
    handlers = group.get("hooks") if isinstance(group, dict) else None
    return isinstance(handlers, list) and bool(handlers) and all(
        isinstance(h, dict) and isinstance(h.get("command"), str) and _OURS.search(h["command"]) for h in handlers)


def recall_hashes(hooks_doc: dict) -> set[str]:
    """The trust hashes of the recall groups a hooks.json holds."""
    events = hooks_doc.get("hooks")
    return {trusted_hash(event, group) for event, groups in (events.items() if isinstance(events, dict) else ())
            if isinstance(groups, list) for group in groups if is_recall_group(group) and len(group["hooks"]) == 1}


def install(home: str | os.PathLike | None = None, launch: Launcher | None = None) -> Change:
    """Write recall's hooks, their trust and its MCP server into Codex's configuration (idempotent). A recall group
    already there is replaced where it stands: the user's groups keep their places, and so their trust."""
    launch = launch or launcher()
    folder = codex_home(home)
    hooks_path, config_path = folder / "hooks.json", folder / "config.toml"
    hooks_doc, names = read_hooks(hooks_path), hooks_file_names(folder)
    events = hooks_doc.setdefault("hooks", {})
    planned = {event: recall_group(event, matcher, timeout, launch) for event, matcher, timeout in HOOKS}
    user_text, _, _ = strip_recall(read_text(config_path), names,
                                   recall_hashes(hooks_doc) | {trusted_hash(e, g) for e, g in planned.items()})
    user_config = parse_config(user_text, config_path)
    change = Change(str(folder), str(hooks_path), str(config_path), mcp_server=True)
    trust: dict[str, str] = {}
    for event, group in planned.items():
        groups = events.setdefault(event, [])
        if not isinstance(groups, list):
            raise CodexConfigError(f"{hooks_path}: hooks.{event} is not a list of groups (nothing was changed)")
        places = [i for i, g in enumerate(groups) if is_recall_group(g)]
        if places:
            groups[places[0]] = group
            for extra in reversed(places[1:]):  # a copy made by hand would run recall twice
                del groups[extra]
        else:
            groups.append(group)
        index = places[0] if places else len(groups) - 1
        trust.update({trust_key(name, event, index): trusted_hash(event, group) for name in names})
        change.hooks.append(event)
    change.trusted = list(trust)
    check_room(user_config, trust, config_path)
    newline = "\r\n" if "\r\n" in user_text else "\n"
    text = with_block(user_text, recall_block(launch.mcp, trust).replace("\n", newline), newline)
    try:
        parse_config(text, config_path)  # what Codex will read must parse: else nothing is written
    except CodexConfigError:
        raise CodexConfigError(f"{config_path} cannot take recall's tables: it writes `mcp_servers` or `hooks` as an "
                               "inline table (`x = {...}`); write it as [x] tables, then run this again (nothing was "
                               "changed)") from None
    folder.mkdir(parents=True, exist_ok=True)
    write_file(config_path, text)
    write_hooks(hooks_path, hooks_doc)
    return change


def uninstall(home: str | os.PathLike | None = None) -> Change:
    """Take out exactly what install wrote; the user's own hooks and settings stay as they are (a group of the user's
    after recall's moves up a place, and its trust entry with it)."""
    folder = codex_home(home)
    hooks_path, config_path = folder / "hooks.json", folder / "config.toml"
    change = Change(str(folder), str(hooks_path), str(config_path))
    hooks_doc, names = read_hooks(hooks_path), hooks_file_names(folder)
    original = read_text(config_path)
    text, change.trusted, change.mcp_server = strip_recall(original, names, recall_hashes(hooks_doc))
    change.hooks, renames = take_out_hooks(hooks_doc, names)
    text = rekey(text, renames)
    if text != original:
        if text.strip():
            write_file(config_path, text)
        else:  # install made it
            config_path.unlink()
            change.removed_files.append(str(config_path))
    if change.hooks:
        if hooks_doc.get("hooks") or set(hooks_doc) - {"hooks"}:
            write_hooks(hooks_path, hooks_doc)
        else:  # it held recall's hooks only: install made it
            hooks_path.unlink()
            change.removed_files.append(str(hooks_path))
    return change


def take_out_hooks(hooks_doc: dict, names: list[str]) -> tuple[list[str], dict[str, str]]:
    """Remove recall's groups from a parsed hooks.json; returns the events that had one, and the trust keys of the
    user's groups that moved up a place ({old: new}, earlier places first)."""
    events = hooks_doc.get("hooks")
    if not isinstance(events, dict):
        return [], {}
    removed: list[str] = []
    renames: dict[str, str] = {}
    for event in list(events):
        groups = events[event]
        if not isinstance(groups, list):
            continue
        kept: list[Any] = []
        for index, group in enumerate(groups):
            if is_recall_group(group):
                continue
            if len(kept) != index:
                handlers = group.get("hooks") if isinstance(group, dict) else None
                for handler in range(len(handlers) if isinstance(handlers, list) else 1):
                    renames.update({trust_key(name, event, index, handler): trust_key(name, event, len(kept), handler)
                                    for name in names})
            kept.append(group)
        if len(kept) != len(groups):
            removed.append(event)
            if kept:
                events[event] = kept
            else:
                del events[event]
    return removed, renames


def read_hooks(path: Path) -> dict:
    text = read_text(path)
    if not text.strip():
        return {}
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise CodexConfigError(f"{path} is not valid JSON ({exc}): nothing was changed") from None
    if not isinstance(data, dict) or not isinstance(data.get("hooks", {}), dict):
        raise CodexConfigError(f"{path} is not a hooks file ({{\"hooks\": {{...}}}}): nothing was changed")
    return data


def write_hooks(path: Path, doc: dict) -> None:
    write_file(path, json.dumps(doc, indent=2, ensure_ascii=False) + "\n")


def status(home: str | os.PathLike | None = None, recall_home: str | os.PathLike | None = None) -> dict:
    """Is recall installed in Codex (its hooks there and trusted, its MCP server), and when did a Codex hook last
    reach recall (from the data dir's log)?"""
    folder = codex_home(home)
    hooks_path, config_path = folder / "hooks.json", folder / "config.toml"
    found: dict[str, Any] = {"codex_home": str(folder), "installed": False, "hooks": 0, "trusted": 0,
                             "expected": len(HOOKS), "mcp_server": False, "last_hook_at": None, "problem": None}
    text = ""
    try:
        text = read_text(config_path)
        hooks_doc, config_doc = read_hooks(hooks_path), parse_config(text, config_path)
    except CodexConfigError as exc:  # a problem of recall's only where recall is installed
        found["installed"] = BLOCK_START in text
        found["problem"] = str(exc) if found["installed"] else None
        return found
    hooks_table = config_doc.get("hooks")
    state = hooks_table.get("state", {}) if isinstance(hooks_table, dict) else {}
    state = state if isinstance(state, dict) else {}
    events = hooks_doc.get("hooks", {})
    for event in events:
        for index, group in enumerate(events[event] if isinstance(events[event], list) else []):
            if is_recall_group(group):
                found["hooks"] += 1
                launcher_path = shlex.split(group["hooks"][0]["command"])[0]
                if not os.access(launcher_path, os.X_OK):  # recall moved, or a plugin update removed its old folder
                    found["problem"] = (f"Codex's hooks run {launcher_path}, which is gone: run `recall install codex` "
                                        "again")
                entries = [state.get(trust_key(name, event, index)) for name in hooks_file_names(folder)]
                if any(isinstance(entry, dict) and entry.get("trusted_hash") == trusted_hash(event, group)
                       and entry.get("enabled", True) is not False for entry in entries):
                    found["trusted"] += 1
    servers = config_doc.get("mcp_servers")
    found["mcp_server"] = BLOCK_START in text and isinstance(servers, dict) and SERVER_NAME in servers
    found["installed"] = found["hooks"] > 0 or BLOCK_START in text
    if recall_home is not None:
        found["last_hook_at"] = last_hook_at(Path(recall_home) / LOGS_DIR / LOG_NAME)
    return found


def last_hook_at(log: Path, tail_bytes: int = 1 << 20) -> float | None:
    """When a Codex hook last wrote its line to recall's log (the hook client marks it `"client":"codex"`)."""
    marker = f'"client":"{CODEX}"'.encode()
    for path in (log, log.with_name(log.name + ".1")):
        try:
            with open(path, "rb") as handle:
                handle.seek(max(0, handle.seek(0, os.SEEK_END) - tail_bytes))
                lines = handle.read().splitlines()
        except OSError:
            continue
        for line in reversed(lines):
            if marker in line:
                try:
                    return float(json.loads(line)["ts"])
                except (ValueError, KeyError, TypeError):
                    continue
    return None
