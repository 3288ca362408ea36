"""What a compaction must not lose: the session's key facts, handed to Claude Code's summarizer.

PreCompact's stdout becomes extra instructions for the summary (plain text, not JSON: Claude Code reads
that hook's output as text). recall lists what the session settled, densest first within a small
budget: decisions and their reasons, values, paths and commands (answers and the user's own
statements), errors (with the answer that followed), and the questions still open. After compaction,
SessionStart(source=compact) re-offers the latest work from the store (tiers.brief).
"""

from __future__ import annotations

from ...shared.text import one_line
from .. import sentences
from ..records import Memory
from ..retrieval import versions
from ..storage import Store

FACT_KINDS = ("exchange", "prompt", "error", "note")
MAX_CANDIDATES = 400  # the session's latest memories looked at
MAX_CHECKED = 40  # the densest of them checked for values changed later (a few ms each)
FACT_CHARS = 260  # one fact, summarized to its densest sentences
HEADER = ("recall (memory plugin): keep these facts from this session in the summary, with their exact values, "
          "paths, commands and error messages:")


def key_facts(store: Store, session_id: str, project: str, since: float, budget: int) -> str:
    """The instructions for the summarizer ('' when the session settled nothing worth keeping)."""
    memories = [m for m in store.recent(project, FACT_KINDS, since, MAX_CANDIDATES, only_session=session_id)
                if not sentences.is_small_talk(m)]
    answered = {str(m.meta.get("prompt_id")) for m in memories if m.kind == "exchange" and m.meta.get("prompt_id")}
    # An answered prompt is shown by its exchange (question → answer), not twice.
    memories = [m for m in memories if not (m.kind == "prompt" and str(m.meta.get("prompt_id")) in answered)]
    scored = sorted(memories, key=lambda m: -_weight(m))
    # A value the session changed later is handed over as it stands now: the older statement goes (its newer one
    # is among the facts), or says first that it was changed.
    newer = versions.newer_versions(store, scored[:MAX_CHECKED])
    listed = {m.id for m in memories}
    scored = [m for m in scored if not any(n.id in listed for n in newer.get(m.id, ()))]
    lines, used = [], len(HEADER) + 1
    for memory in scored:
        note = versions.outdated_note(memory, newer[memory.id]) + " " if memory.id in newer else ""
        line = "- " + note + _label(memory, answered) + one_line(sentences.summarize(_text(memory), FACT_CHARS),
                                                                  FACT_CHARS)
        if used + len(line) + 1 > budget:
            continue
        lines.append((memory.created_at.timestamp(), memory.id, line))
        used += len(line) + 1
    if not lines:
        return ""
    return HEADER + "\n" + "\n".join(line for _, _, line in sorted(lines))


def _text(memory: Memory) -> str:
    question = memory.meta.get("prompt") if memory.kind == "exchange" else None
    return f"{question} → {memory.text}" if question else memory.text


def _label(memory: Memory, answered: set[str]) -> str:
    if memory.kind == "error":
        return "error: "
    if memory.kind == "prompt" and memory.text.rstrip().endswith("?") and \
            str(memory.meta.get("prompt_id")) not in answered:
        return "open question: "
    if memory.kind == "prompt":
        return "the user said: "
    return ""


def _weight(memory: Memory) -> float:
    return sentences.substance(memory) + (0.2 if memory.kind == "error" else 0.0)
