"""What recall must tell the user instead of failing silently: settings of config.json it could not
use, and a damaged database it moved aside. SessionStart shows them as a `systemMessage` (seen by
the user, never by the model); `recall doctor` lists them too."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from ...shared.files import atomic_write
from ...shared.paths import DataPaths
from ..config import Config, config_problems

if TYPE_CHECKING:
    from ..embedding.embed import Embedder
    from ..storage import Store


def config_lines(config: Config) -> list[str]:
    return [f"recall: config setting not used — {problem}" for problem in config_problems(config)]


def recovery(paths: DataPaths) -> dict | None:
    """The note left when a damaged database was moved aside, if any."""
    try:
        note = json.loads(paths.db_recovery_note.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return note if isinstance(note, dict) else None


def recovery_line(note: dict) -> str:
    return (f"recall: the database was damaged ({note.get('error', 'unreadable')}) and was moved to "
            f"{note.get('moved_to')}; a new one was started and capture goes on. "
            "`recall doctor` explains how to recover what it held.")


def session_message(paths: DataPaths, config: Config, store: Store | None = None, embedder: Embedder | None = None,
                    model_problem: str | None = None) -> str:
    """The systemMessage for a new session: every config problem, an embedding model that could not be loaded, a
    store that refuses this worker's model, and a recovered database once."""
    lines = config_lines(config)
    if model_problem:
        lines.append(f"recall: {model_problem}")
    mismatch = store.model_mismatch(embedder) if store is not None else None
    if mismatch:
        lines.append(f"recall: {mismatch}")
    note = recovery(paths)
    if note and not note.get("told"):
        lines.append(recovery_line(note))
        atomic_write(paths.db_recovery_note, json.dumps({**note, "told": True}))
    return "\n".join(lines)
