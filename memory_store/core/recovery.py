"""What SessionEnd takes from the transcript that no hook stored: the last turn's tool calls and its answer.

PostToolUse(Failure) and Stop are async hooks: when `claude -p` exits right after its last turn, Claude Code may kill
one before its process has even started. SessionEnd runs after that and is waited for: what the session's last turn
did that is not stored (a tool call by its id, the answer) is taken from the transcript, once; a late hook for it is
then skipped (`recovered_key`). What is read back from a file never brings back a forgotten memory
(storage/tombstones.py).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from .capture import capture
from .capture.transcript_reader import last_turn, tool_memory

if TYPE_CHECKING:
    from .capture.hook_events import SessionEnd
    from .capture.transcript_reader import LastTurn
    from .records import Memory, MemoryDraft
    from .storage import Store
    from .storage.base import Recorded

Keep = Callable[..., "Recorded"]  # router.Context.keep: (key, draft, at, *, restoring)


def recover_last_turn(store: Store, keep: Keep, event: SessionEnd, project: str, at: float) -> None:
    """Take what the session's last turn did that no hook stored from its transcript (`keep`: how the router records
    it)."""
    prompt = store.turn_prompt(event.session_id, None)
    if prompt is None:
        return
    turn = last_turn(event.transcript_path)
    if turn is None or not opened_by(turn, prompt, store, project):
        return
    meta = {"prompt_id": prompt.meta["prompt_id"]} if prompt.meta.get("prompt_id") else {}
    stored = store.stored_tool_calls(event.session_id, [call["id"] for call in turn.tool_calls])
    # A kill cuts the turn's tail; a call before the last stored one was handled (a memory merged into an
    # identical older one carries that one's id, so "not stored by this id" alone would count it twice).
    after = max((n for n, call in enumerate(turn.tool_calls) if call["id"] in stored), default=-1) + 1
    for call in turn.tool_calls[after:]:
        key = recovered_key(event.session_id, call["id"])
        if store.has_event(key):
            continue
        when = call["at"] or at
        draft = tool_memory(store.config.capture, str(store.paths.home), project, when, event.session_id, event.cwd,
                            call["name"], call["input"], call["id"], call["result"], call["error"])
        keep(key, from_transcript(draft), when, restoring=True)
    if turn.answer and not store.answered(prompt) and not store.has_event(recovered_key(event.session_id, prompt.id)):
        draft = capture.exchange_memory(prompt.text, turn.answer, store.config.capture, project,
                                        event.session_id, at, meta)
        keep(recovered_key(event.session_id, prompt.id), from_transcript(draft), restoring=True)


def opened_by(turn: LastTurn, prompt: Memory, store: Store, project: str) -> bool:
    """Is the transcript's last turn the one the stored prompt opened? Its prompt, kept as the hook keeps one, must
    read the same: a turn that recall did not keep (a private prompt, a recall command) recovers nothing."""
    kept = capture.users_prompt(turn.prompt or "", store.config.capture, project, prompt.session_id, 0.0)[1]
    return kept is not None and kept.text == prompt.text


def from_transcript(draft: MemoryDraft | None) -> MemoryDraft | None:
    if draft is not None:
        draft.meta["recovered"] = "transcript"  # provenance: its hook never came
    return draft


def recovered_key(session_id: str, what: object) -> str:
    """Ledger key of something SessionEnd took from the transcript (a tool call's id, a prompt memory's id)."""
    return f"recovered:{session_id}:{what}"
