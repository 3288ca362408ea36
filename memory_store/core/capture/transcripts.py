"""`recall import`: Claude Code transcripts (JSONL), `recall export` files and Codex's session files
(core/capture/codex_rollouts.py), into the store.

An imported session yields the same memories live capture would have made (core/capture/transcript_reader.py), its
subagents' work included, so importing a session recall already captured adds nothing new: the memories
deduplicate. Entries keep their own timestamp, session and cwd. Event ids are derived from the entry uuids,
so importing the same file twice changes nothing; unchanged files are skipped by size. Bookkeeping entries
(attachments, hook records, api-request*, queue-operation …), meta and compaction-summary entries are
ignored, as is text recall injected.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import ValidationError

from ...shared.projects import locate
from ...shared.redact import clean_tree
from ..records import MemoryDraft
from . import codex_rollouts
from .capture import private_text
from .transcript_reader import ImportReport, SessionReader, parse_time, read_entries, text_blocks

if TYPE_CHECKING:
    from ..storage import Store

__all__ = ["ImportReport", "find_transcripts", "import_paths", "import_file", "first_prompt"]


def is_subagent_file(path: Path) -> bool:
    """A subagent's own transcript: `agent-<id>.jsonl`, beside its session's (2.0) or under
    `<session>/subagents/` (2.1)."""
    return path.name.startswith("agent-") or "subagents" in path.parts


def find_transcripts(paths: list[Path]) -> list[Path]:
    """Transcript files under the given files/directories (a session's subagent files are read with it)."""
    found: list[Path] = []
    for path in paths:
        path = path.expanduser()
        if path.is_dir():
            found.extend(sorted([*path.rglob("*.jsonl"), *path.rglob("*" + codex_rollouts.ZST_SUFFIX)]))
        elif path.is_file():
            found.append(path)
    return list(dict.fromkeys(found))


def _session_of(path: Path) -> str | None:
    """The session id a transcript's first entries name (a subagent file names its parent's)."""
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            for _, line in zip(range(20), handle):
                try:
                    entry = json.loads(line, strict=False)
                except ValueError:
                    continue
                if isinstance(entry, dict) and isinstance(entry.get("sessionId"), str):
                    return entry["sessionId"]
    except OSError:
        pass
    return None


def subagent_files(session_file: Path, candidates: list[Path]) -> list[Path]:
    """The subagent transcripts of a session: under `<session>/subagents/` (2.1) and, beside it, the
    `agent-*.jsonl` files that name its session (2.0)."""
    nested = sorted((session_file.parent / session_file.stem / "subagents").glob("agent-*.jsonl"))
    session = None
    siblings = []
    for path in candidates:
        if path.parent == session_file.parent and path.name.startswith("agent-"):
            session = session or _session_of(session_file)
            if session and _session_of(path) == session:
                siblings.append(path)
    return list(dict.fromkeys(nested + siblings))


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


def import_export_file(store: Store, path: Path, report: ImportReport) -> int:
    """Import a `recall export` file: each memory keeps its project, session, kind, text, time, importance, agent,
    meta (what its knowledge and ties are read from again) and pin, and each session its span. The event id is
    derived from the content, so importing the same export twice adds nothing; a memory forgotten here stays
    forgotten (storage/tombstones.py)."""
    items = []
    pins = []
    sessions = []
    with open(path, encoding="utf-8", errors="replace") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                data = json.loads(line)
                if data.get("record") == "session":
                    sessions.append({**data, "started_at": float(data["started_at"])})
                    continue
                at = datetime.fromisoformat(str(data["created_at"]).replace("Z", "+00:00")).timestamp()
                draft = MemoryDraft(project=data["project"], session_id=data.get("session_id") or "",
                                    kind=data["kind"], text=private_text(str(data["text"])), created_at=at,
                                    importance=data.get("importance", 0.3), meta=clean_tree(data.get("meta") or {}),
                                    agent=str(data.get("agent") or ""))
            except (ValueError, KeyError, TypeError, ValidationError) as exc:
                report.errors.append(f"{path.name}:{number}: not a recall memory: {str(exc).splitlines()[0][:120]}")
                continue
            report.entries += 1
            key = hashlib.sha1(f"{draft.project}\0{draft.kind}\0{draft.text}\0{at}".encode()).hexdigest()
            items.append((f"export-{key}", draft, at))
            pins.append(bool(data.get("pinned")))
    results = store.record_many(items, restoring=True)
    pinned = [r.memory_id for r, pin in zip(results, pins) if pin and r.memory_id]
    if pinned:
        store.set_pinned(pinned, True)
    for session in sessions:
        store.restore_session(session)
    report.events += len(results)
    report.new_memories += sum(1 for r in results if r.created)
    report.duplicates += sum(1 for r in results if not r.created and not r.duplicate_event and r.memory_id)
    return len(results)


def import_file(store: Store, path: Path, report: ImportReport, agents: Sequence[Path] = ()) -> int:
    """Import one transcript with its subagents' files, adding its numbers to `report`; returns how many
    events it held."""
    if is_recall_export(path):
        return import_export_file(store, path, report)
    if codex_rollouts.is_rollout(path):
        return codex_rollouts.import_rollout(store, path, report)
    reader = SessionReader(store.config.capture, str(store.paths.home), report)
    sessions: dict[str, tuple[str, float, float]] = {}
    places: set[tuple[str, str]] = set()
    for entry in read_entries(path, report):
        reader.add(entry)
        at = parse_time(entry.timestamp)
        if entry.sessionId and at and not entry.isSidechain:
            project, root = locate(entry.cwd or "/")
            if os.path.isdir(root):  # a clone on this machine (a transcript from elsewhere names no place here)
                places.add((project, root))
            first = sessions.get(entry.sessionId, (project, at, at))
            sessions[entry.sessionId] = (first[0], min(first[1], at), max(first[2], at))
    for agent_file in agents:
        entries = list(read_entries(agent_file, report))
        agent_id = next((e.agentId for e in entries if e.agentId), None) or agent_file.stem.removeprefix("agent-")
        reader.add_subagent(agent_id, entries)
    for project, root in places:
        store.note_project_path(project, root)
    results = store.record_many(reader.drafts(), restoring=True)
    for session_id, (project, started, ended) in sessions.items():
        store.import_session(session_id, project, started, ended, str(path))
    report.events += len(results)
    report.new_memories += sum(1 for r in results if r.created)
    report.duplicates += sum(1 for r in results if not r.created and not r.duplicate_event and r.memory_id)
    return len(results)


def sessions_with_subagents(files: list[Path]) -> list[tuple[Path, list[Path]]]:
    """Each session's transcript with its subagents' files; a subagent file whose session is not among them
    is read on its own (its work still lands in its namespace)."""
    subagents = [path for path in files if is_subagent_file(path)]
    claimed: set[Path] = set()
    groups = []
    for path in files:
        if not is_subagent_file(path):
            agents = subagent_files(path, subagents)
            claimed.update(agents)
            groups.append((path, agents))
    groups += [(path, []) for path in subagents if path not in claimed]
    return groups


def import_paths(store: Store, paths: list[Path], progress: Callable[[Path], object] | None = None) -> ImportReport:
    """Import transcripts from files and directories. `progress(path)` is called after each file."""
    report = ImportReport()
    for path, agents in sessions_with_subagents(find_transcripts(paths)):
        group = [path, *agents]
        try:
            sizes = {member: member.stat().st_size for member in group}
            if all(store.imported_size(str(member.resolve())) == size for member, size in sizes.items()):
                report.skipped_files += len(group)
            else:
                entries_before, errors_before = report.entries, len(report.errors)
                events = import_file(store, path, report, agents)
                if report.entries == entries_before and len(report.errors) > errors_before:
                    report.failed.append(f"{path}: not a Claude Code transcript, a Codex session nor a recall export "
                                         f"({len(report.errors) - errors_before} unreadable lines, none usable)")
                    del report.errors[errors_before:]
                else:
                    for member, size in sizes.items():
                        store.mark_imported(str(member.resolve()), size, events if member == path else 0)
                    report.files += len(group)
        except OSError as exc:
            report.failed.append(f"{path}: {exc.strerror or exc}")
        if progress:
            for member in group:
                progress(member)
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
            entry = json.loads(line, strict=False)
        except ValueError:
            continue
        message = entry.get("message") if isinstance(entry, dict) and entry.get("type") == "user" else None
        text = text_blocks(message.get("content")) if isinstance(message, dict) else ""
        if text.strip():
            return private_text(text)
    return None
