"""Routing: one hook event in, memories stored, maybe context out.

`handle_event` is what the worker runs for every hook request and what spool ingestion
replays (with `respond=False`: nobody waits for context any more). It is idempotent by
event id, so a retried or re-ingested event changes nothing.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from pydantic import ValidationError

from . import capture, inject, tiers
from .models import (
    HANDLED_EVENTS, PostToolUse, PostToolUseFailure, SessionEnd, SessionStart, Stop, UserPromptSubmit, parse_event,
)
from .projects import project_for

if TYPE_CHECKING:
    from .store import Store


class BadEvent(ValueError):
    """The payload is not a usable hook event (logged, then dropped)."""


def handle_event(store: "Store", envelope: dict, *, respond: bool = True) -> dict:
    """Store what an event carries; return the hook's JSON output ({} for none).

    envelope: {"event_id": str, "received_at": float, "payload": {...hook stdin...}}
    """
    payload = envelope.get("payload")
    event_id = envelope.get("event_id")
    if not isinstance(payload, dict) or not isinstance(event_id, str) or not event_id:
        raise BadEvent("envelope needs an event_id and a payload object")
    name = payload.get("hook_event_name")
    if name not in HANDLED_EVENTS:
        store.record(event_id, None)
        return {}
    try:
        event = parse_event(payload)
    except ValidationError as exc:
        raise BadEvent(f"{name} payload rejected: {exc.error_count()} error(s): "
                       + "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()[:5])) from exc
    received_at = envelope.get("received_at")
    at = float(received_at) if isinstance(received_at, (int, float)) and received_at > 0 else time.time()
    if store.has_event(event_id):
        return {}
    project = project_for(event.cwd)
    cfg = store.config.capture
    home = str(store.paths.home)

    if isinstance(event, SessionStart):
        store.open_session(event.session_id, project, at, event.transcript_path)
        store.record(event_id, None, at)
        return session_brief(store, event, project, at) if respond else {}

    if isinstance(event, UserPromptSubmit):
        meta = {"prompt_id": event.prompt_id} if event.prompt_id else {}
        draft = capture.prompt_memory(event.prompt, cfg, project, event.session_id, at, meta)
        recorded = store.record(event_id, draft, at)
        if draft is None and event.prompt_id:  # a recall command or a private prompt: its answer is not kept either
            store.record(skipped_turn_id(event.session_id, event.prompt_id), None, at)
        if not respond or event.prompt.lstrip().startswith(capture.RECALL_COMMAND_PREFIX):
            return {}
        hits, _cues = tiers.warm_recall(store, project, event.session_id, event.prompt, at)
        hits = [h for h in hits if h.id != recorded.memory_id]
        text, ids = inject.render_block(hits, "Possibly relevant memories:", store.config.inject.budget_chars,
                                        store.config.inject.max_item_chars, at)
        store.mark_injected(event.session_id, ids, "UserPromptSubmit", at)
        return inject.hook_output("UserPromptSubmit", text)

    if isinstance(event, PostToolUse):
        store.record(event_id, capture.tool_observation(event, cfg, project, at, home), at)
        return {}

    if isinstance(event, PostToolUseFailure):
        store.record(event_id, capture.tool_failure(event, cfg, project, at), at)
        return {}

    if isinstance(event, Stop):
        if event.prompt_id and store.has_event(skipped_turn_id(event.session_id, event.prompt_id)):
            store.record(event_id, None, at)
            return {}
        prompt = store.turn_prompt(event.session_id, event.prompt_id)
        meta = {"prompt_id": event.prompt_id} if event.prompt_id else {}
        draft = capture.exchange_memory(prompt.text if prompt else None, event.last_assistant_message or "", cfg,
                                        project, event.session_id, at, meta)
        store.record(event_id, draft, at)
        return {}

    if isinstance(event, SessionEnd):
        store.close_session(event.session_id, project, at, event.reason)
        store.record(event_id, None, at)
        return {}
    return {}


def skipped_turn_id(session_id: str, prompt_id: str) -> str:
    """Ledger key marking a turn whose prompt recall did not keep (so its answer is not kept)."""
    return f"skipped-turn:{session_id}:{prompt_id}"


def session_brief(store: "Store", event: SessionStart, project: str, now: float) -> dict:
    """SessionStart: offer the hot tier. A new session (startup, clear) gets the latest
    interactions of earlier sessions; after compaction the session's own recent interactions
    come back too, since the summary replaced them; a resumed session only gets what it has
    not been shown yet."""
    if event.source == "compact":
        store.reset_injections(event.session_id)
        items = list(tiers.hot_tier(store, project, now))
        title = "The latest interactions in this project (re-offered after compaction):"
    else:
        shown = store.injected_ids(event.session_id)
        items = [m for m in tiers.hot_tier(store, project, now, exclude_session=event.session_id) if m.id not in shown]
        title = "The latest interactions from earlier sessions in this project (oldest first):"
    text, ids = inject.render_block(items, title, store.config.inject.hot_budget_chars,
                                    store.config.inject.max_item_chars, now)
    store.mark_injected(event.session_id, ids, "SessionStart", now)
    return inject.hook_output("SessionStart", text)
