"""Routing: one hook event in, memories stored, maybe context out.

`handle_event` is what the worker runs for every hook request and what spool ingestion
replays (with `respond=False`: nobody waits for context any more). Each event name has one
handler in HANDLERS. It is idempotent by event id, so a retried or re-ingested event
changes nothing.
"""

from __future__ import annotations

import fnmatch
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from ..shared import spool
from ..shared.projects import GLOBAL_PROJECT, locate
from ..shared.redact import clean_payload
from ..shared.wire import CLAUDE_CODE, CLIENTS, CODEX
from . import later, recovery
from .capture import capture, codex_rollouts, preferences, tool_calls, transcripts, user_words
from .capture.hook_events import (
    HANDLED_EVENTS,
    CwdChanged,
    Interrupt,
    PostToolUse,
    PostToolUseFailure,
    PreCompact,
    PreToolUse,
    SessionEnd,
    SessionStart,
    Stop,
    SubagentStop,
    UserPromptSubmit,
    interrupted_turn_id,
    parse_event,
)
from .diagnostics import alerts
from .injection import actions, brief, compaction, inject, tiers
from .knowledge import current
from .records import MemoryDraft
from .retrieval import gate, search
from .stages import stage
from .storage import Store
from .trust import agent_name

if TYPE_CHECKING:
    from .embedding.embed import Models
    from .storage.base import Recorded


class BadEvent(ValueError):
    """The payload is not a usable hook event (logged, then dropped)."""


@dataclass
class Context:
    """One event on its way through a handler."""

    store: Store
    models: Models  # the warm tier searches with its embedder
    event_id: str
    at: float  # when the hook received it (unix seconds)
    project: str
    root: str  # the project's folder on this machine
    respond: bool  # someone waits for the hook's output (False when replaying the spool)
    client: str = CLAUDE_CODE  # the agent whose hook sent it (shared/wire.py CLIENTS)

    def keep(self, key: str, draft: MemoryDraft | None, at: float | None = None, *, restoring: bool = False) -> Recorded:
        """Record the event (or a part of it) under `key`, with what it teaches and the agent it came from
        (`restoring`: read back from the transcript, where a forgotten memory stays forgotten)."""
        if draft is not None:
            draft.meta["client"] = self.client
        return self.store.record(key, draft, self.at if at is None else at, restoring=restoring)


def on_session_start(ctx: Context, event: SessionStart) -> dict:
    ctx.store.open_session(event.session_id, ctx.project, ctx.at, event.transcript_path)
    ctx.store.record(ctx.event_id, None, ctx.at)
    if not ctx.respond:
        return {}
    text = brief.session_brief(ctx.store, event, ctx.project, ctx.at)
    if text is None:  # the same start heard twice
        return {}
    message = ""
    if event.source != "compact":  # once per session: what recall could not use or had to repair
        message = alerts.session_message(ctx.store.paths, ctx.store.config, ctx.store,
                                         getattr(ctx.models, "embedder", None),
                                         getattr(ctx.models, "embedder_error", None))
    return inject.hook_output("SessionStart", text, message)


def on_prompt(ctx: Context, event: UserPromptSubmit) -> dict:
    store = ctx.store
    meta = {"prompt_id": event.prompt_id} if event.prompt_id else {}
    with stage("store"):
        said = user_words.read(event.prompt)  # capture.users_prompt, in two steps: the embedding starts between
        if said.kind != user_words.USER:  # Claude Code's words in the user's place (a task notification, a command)
            store.record(ctx.event_id, None, ctx.at)
            return {}
        command = capture.recall_command(event.prompt)
        answers = ctx.respond and command is None
        if answers:  # the prompt's embedding runs while it is redacted and stored (the worker began it: `prepare`)
            gate.prepare(store, ctx.models, said.words)
        draft = capture.prompt_memory(said.words, store.config.capture, ctx.project, event.session_id, ctx.at, meta)
        recorded = ctx.keep(ctx.event_id, draft)
        if draft is not None:
            remember_if_standing(store, ctx, draft.text)
        if draft is None and event.prompt_id:  # a recall command or a private prompt: its answer is not kept either
            store.record(skipped_turn_id(event.session_id, event.prompt_id), None, ctx.at)
    if command is not None and command[0] == capture.LOG_SEARCH and ctx.respond:
        return log_search(ctx, event.session_id, command[1])
    if not answers:
        return {}
    moved_brief = moved_in_brief(store, event.session_id, ctx.project, ctx.at)
    decision = tiers.warm_recall(store, ctx.models, ctx.project, event.session_id, said.words, ctx.at)
    with stage("render"):
        items = tiers.warm_items(store, decision, ctx.project)
        budget = min(store.config.inject.budget_chars, inject.HARD_CAP - len(moved_brief) - 1)  # both within the cap
        text, ids = tiers.render_said_once(items, "Possibly relevant to this prompt:", budget,
                                           store.config.inject.max_item_chars, ctx.at)
        text = "\n".join(part for part in (moved_brief, text) if part)
    shown = [(c.episode.ids() if c.episode else set()) | {c.memory.id} for c in decision.taken if c.memory.id in ids]
    taken = {c.memory.id for c in decision.taken}
    known = [(item.id, f"{item.kind} that answers the prompt") for item in items if item.id in ids and item.id not in taken
             and item.kind in KNOWLEDGE_KINDS]
    # What was injected, for the session's next prompts: written once the hook has its answer (core/later.py).
    later.after_answer(lambda: store.note_injection(
        event.session_id, ctx.project, "UserPromptSubmit", ctx.at,
        sorted(set().union(*shown, {memory_id for memory_id, _ in known})), recorded.memory_id,
        [(c.memory.id, c.why) for c in decision.taken if c.memory.id in ids] + known))
    return inject.hook_output("UserPromptSubmit", text)


def log_search(ctx: Context, session_id: str, query: str) -> dict:
    """`/recall:log-search QUERY`: the index of what the search surfaces show for QUERY in this project, added to
    the command's prompt. The words come from the prompt as typed: each character is searched, none reaches a
    shell (the command's file runs nothing). Its receipt says what it showed (`recall injections`)."""
    if not query:
        text = inject.fence("No query given: `/recall:log-search WORDS` searches this project's memories.")
    else:
        with stage("search"):
            hits = search.shown_hits(ctx.store, ctx.models, query, LOG_SEARCH_LIMIT, ctx.project)
        text = inject.search_index(hits, query, ctx.at)
        why = f"found by /recall:log-search for {query[:80]!r}"
        later.after_answer(lambda: ctx.store.note_injection(
            session_id, ctx.project, "UserPromptSubmit", ctx.at, [hit.id for hit in hits], None,
            [(hit.id, why) for hit in hits]))
    return inject.hook_output("UserPromptSubmit", text)


LOG_SEARCH_LIMIT = 10
KNOWLEDGE_KINDS = ("fact", "procedure", "decision")  # an injected line's kind when it is knowledge (core/knowledge/)


def prepare(store: Store, models: Models, payload: dict) -> None:
    """Begin what an event's answer needs first, before the event is checked and stored: the worker calls it as soon as
    it has a hook's payload, and a prompt's embedding then starts ~0.4 ms earlier than on_prompt would start it (after
    the spool, the payload's validation, the duplicate check and the project's lookup; on_prompt's own `gate.prepare`
    finds it begun). Only for a prompt on_prompt would answer, in a project recall does not ignore."""
    if payload.get("hook_event_name") != "UserPromptSubmit" or not isinstance(payload.get("prompt"), str):
        return
    prompt = payload["prompt"]
    if capture.is_recall_command(prompt) or keeps_memories_from(store, payload.get("agent_id")):
        return
    said = user_words.read(prompt)
    cwd = payload.get("cwd")
    if said.kind != user_words.USER or not isinstance(cwd, str):
        return
    project, root = locate(cwd)
    if not ignored((root, project), store.config.capture.ignore_projects):
        gate.prepare(store, models, said.words)


def on_cwd_changed(ctx: Context, event: CwdChanged) -> dict:
    """The session moved to another directory. When that is another repository (`cwd`: where the session is now),
    the turn's prompt moves with it (the work it asked for happens there), and the new repository's brief is
    owed: Claude Code takes no context from this hook, so the next prompt brings it (`moved_in_brief`)."""
    store = ctx.store
    store.record(ctx.event_id, None, ctx.at)
    before = locate(event.old_cwd)[0] if event.old_cwd else None
    if before is None or before == ctx.project:
        return {}
    prompt = store.turn_prompt(event.session_id, event.prompt_id) if event.prompt_id else None
    if prompt is not None and prompt.project == before and prompt.meta.get("prompt_id") == event.prompt_id:
        store.move_memories([prompt.id], ctx.project)
    store.record(f"brief-owed:{event.session_id}:{ctx.project}", None, ctx.at)
    return {}


def moved_in_brief(store: Store, session_id: str, project: str, now: float) -> str:
    """The brief of a repository the session moved into (on_cwd_changed), once, with the next prompt there."""
    if not store.has_event(f"brief-owed:{session_id}:{project}") or store.has_event(f"brief-given:{session_id}:{project}"):
        return ""
    store.record(f"brief-given:{session_id}:{project}", None, now)
    items = [i for i in tiers.brief(store, project, now, exclude_session=session_id)
             if i.id not in store.injected_ids(session_id)]
    text, ids = inject.render_block(items, "Recent work in this repository, which the session moved into:",
                                    store.config.inject.hot_budget_chars, store.config.inject.max_item_chars, now)
    store.note_injection(session_id, project, "SessionStart", now, ids, None,
                         [(i, "recent work in the repository the session moved into (its brief)") for i in ids])
    return text


def remember_if_standing(store: Store, ctx: Context, prompt: str) -> None:
    """A standing preference for every project ("from now on, in every project, ...") is also kept globally."""
    rule = preferences.standing_preference(prompt)
    if rule:
        note = MemoryDraft(project=GLOBAL_PROJECT, kind="note", text=rule, created_at=ctx.at, importance=0.9,
                           meta={"source": "stated preference", "project": ctx.project})
        ctx.keep(f"{ctx.event_id}:global", note)


def on_tool(ctx: Context, event: PostToolUse) -> dict:
    """A tool call, kept as an observation; another agent's patch as one per file it touched (tool_calls.py). Codex has
    no failed-tool event: a command its session file says failed is a failure here, as an import of it would be."""
    if ctx.client == CODEX:
        code = codex_rollouts.exit_code_at_hook(event.transcript_path, event.tool_use_id)
        if code not in (None, 0):
            failure = PostToolUseFailure.model_validate({**event.model_dump(exclude={"tool_response"}),
                                                         "hook_event_name": "PostToolUseFailure",
                                                         "error": codex_rollouts.failure_text(code, event.tool_response)})
            return on_tool_failure(ctx, failure, hook="PostToolUse")
    for n, call in enumerate(in_claude_terms(event)):
        draft = None if recovered(ctx, call) else capture.tool_observation(call, ctx.store.config.capture, ctx.project,
                                                                           ctx.at, str(ctx.store.paths.home))
        ctx.keep(ctx.event_id if n == 0 else f"{ctx.event_id}:{n}", in_namespace(draft, call))
    return {}


def in_claude_terms(event: PostToolUse) -> list[PostToolUse]:
    """The event as Claude Code would have sent it: Codex's shell and apply_patch calls read as Bash, Edit, Write."""
    calls = tool_calls.normalized(event.tool_name, event.tool_input, event.cwd)
    if calls == [(event.tool_name, event.tool_input)]:
        return [event]
    return [event.model_copy(update={"tool_name": name, "tool_input": tool_input}) for name, tool_input in calls]


def on_tool_failure(ctx: Context, event: PostToolUseFailure, hook: str = "PostToolUseFailure") -> dict:
    """A failed tool call, kept as an error; when the same error was met before, its fix (`hook`: the event the agent
    sent: Codex tells of a failure in its PostToolUse)."""
    draft = None if recovered(ctx, event) else capture.tool_failure(event, ctx.store.config.capture, ctx.project,
                                                                    ctx.at)
    ctx.keep(ctx.event_id, in_namespace(draft, event))
    if not ctx.respond or event.is_interrupt or not ctx.store.config.inject.on_failure:
        return {}
    with stage("failure"):
        shown = actions.after_failure(ctx.store, ctx.project, event.session_id, event.error, ctx.at)
    return shown_at_action(ctx, event.session_id, hook, shown)


def on_pre_tool(ctx: Context, event: PreToolUse) -> dict:
    """Before a tool call: what is known about its file or command (injection/actions.py). Nothing is stored: the
    call itself is captured by PostToolUse."""
    if not ctx.respond or not ctx.store.config.inject.before_tools:
        return {}
    tool_name, tool_input = tool_calls.normalized(event.tool_name, event.tool_input, event.cwd)[0]
    with stage("before_tool"):
        shown = actions.before_tool(ctx.store, ctx.project, ctx.root, event.session_id, tool_name, tool_input, ctx.at)
    return shown_at_action(ctx, event.session_id, "PreToolUse", shown)


def shown_at_action(ctx: Context, session_id: str, hook: str, shown: actions.Shown | None) -> dict:
    """The hook's output for what an action hook shows, noted (never again this session, and its receipt)."""
    if shown is None:
        return {}
    store = ctx.store
    for key in shown.keys:
        store.record(actions.shown_key(session_id, key), None, ctx.at)
    store.note_injection(session_id, ctx.project, hook, ctx.at, [memory_id for memory_id, _ in shown.items], None,
                         shown.items)
    return inject.hook_output(hook, shown.text)


def recovered(ctx: Context, event: PostToolUse | PostToolUseFailure) -> bool:
    """Did SessionEnd already take this tool call from the transcript (its hook came late)?"""
    return bool(event.tool_use_id) and ctx.store.has_event(recovery.recovered_key(event.session_id, event.tool_use_id))


def in_namespace(draft: MemoryDraft | None, event: Any) -> MemoryDraft | None:
    """A memory made inside a subagent belongs to the subagent's namespace (core/trust.py)."""
    if draft is not None and event.agent_id:
        draft.agent = agent_name(event.agent_type, event.agent_id)
        draft.meta["agent_id"] = event.agent_id
    return draft


def on_subagent_stop(ctx: Context, event: SubagentStop) -> dict:
    """A subagent's report, kept in its namespace with the task it was given. Claude Code's own internal
    agents (agent_type "", e.g. the compaction summarizer) are not kept: their output is the session's."""
    if not (event.agent_type or "").strip():
        ctx.store.record(ctx.event_id, None, ctx.at)
        return {}
    task = transcripts.first_prompt(event.agent_transcript_path)
    draft = capture.exchange_memory(task, event.last_assistant_message or "", ctx.store.config.capture, ctx.project,
                                    event.session_id, ctx.at, {"agent_type": event.agent_type}, report=True)
    ctx.keep(ctx.event_id, in_namespace(draft, event))
    return {}


def on_pre_compact(ctx: Context, event: PreCompact) -> dict | str:
    """The session's key facts, as extra instructions for the summary (plain text: see compaction.py)."""
    ctx.store.record(ctx.event_id, None, ctx.at)
    if not ctx.respond:
        return {}
    store = ctx.store
    return compaction.key_facts(store, event.session_id, ctx.project, ctx.at - COMPACT_LOOKBACK,
                                min(store.config.inject.compact_budget_chars, inject.HARD_CAP))


def on_stop(ctx: Context, event: Stop) -> dict:
    store = ctx.store
    if event.prompt_id and store.has_event(skipped_turn_id(event.session_id, event.prompt_id)):
        store.record(ctx.event_id, None, ctx.at)
        return {}
    prompt = store.turn_prompt(event.session_id, event.prompt_id)
    if prompt is not None and store.has_event(recovery.recovered_key(event.session_id, prompt.id)):
        store.record(ctx.event_id, None, ctx.at)  # SessionEnd already took this answer from the transcript
        return {}
    meta = {"prompt_id": event.prompt_id} if event.prompt_id else {}
    draft = capture.exchange_memory(prompt.text if prompt else None, event.last_assistant_message or "",
                                    store.config.capture, ctx.project, event.session_id, ctx.at, meta)
    ctx.keep(ctx.event_id, draft)
    return {}  # additionalContext at Stop would start another model turn


def on_interrupt(ctx: Context, event: Interrupt) -> dict:
    """The user (or something for them) cut the turn short: its answer is not a settled answer. Noted for the turn,
    so that the reading of knowledge takes nothing from it (jobs.learn_pending), whenever it is kept."""
    prompt = ctx.store.turn_prompt(event.session_id, event.prompt_id)
    prompt_id = event.prompt_id or (str(prompt.meta.get("prompt_id") or "") if prompt else "")
    if prompt_id:
        ctx.store.record(interrupted_turn_id(event.session_id, prompt_id), None, ctx.at)
    ctx.store.record(ctx.event_id, None, ctx.at)
    return {}


def on_session_end(ctx: Context, event: SessionEnd) -> dict:
    ctx.store.close_session(event.session_id, ctx.project, ctx.at, event.reason)
    if ctx.client == CLAUDE_CODE:  # Codex waits for its Stop and PostToolUse hooks (and writes another transcript)
        recovery.recover_last_turn(ctx.store, ctx.keep, event, ctx.project, ctx.at)
    ctx.store.record(ctx.event_id, None, ctx.at)
    return {}


HANDLERS: dict[str, Callable[[Context, Any], dict | str]] = {
    "SessionStart": on_session_start,
    "UserPromptSubmit": on_prompt,
    "PreToolUse": on_pre_tool,
    "PostToolUse": on_tool,
    "PostToolUseFailure": on_tool_failure,
    "Stop": on_stop,
    "Interrupt": on_interrupt,
    "SessionEnd": on_session_end,
    "SubagentStop": on_subagent_stop,
    "PreCompact": on_pre_compact,
    "CwdChanged": on_cwd_changed,
}
COMPACT_LOOKBACK = 7 * 86400.0  # a session's facts are looked for this far back
assert set(HANDLERS) == set(HANDLED_EVENTS)


def handle_event(store: Store, models: Models, envelope: dict, *, respond: bool = True) -> dict | str:
    """Store what an event carries; return the hook's JSON output ({} for none), or for PreCompact the
    plain text Claude Code reads as compaction instructions.

    envelope: {"event_id": str, "received_at": float, "payload": {...hook stdin...}}
    """
    payload = envelope.get("payload")
    event_id = envelope.get("event_id")
    if not isinstance(payload, dict) or not isinstance(event_id, str) or not event_id:
        raise BadEvent("envelope needs an event_id and a payload object")
    handler = HANDLERS.get(str(payload.get("hook_event_name")))
    if handler is None:  # an event recall does not handle: remembered as seen, nothing else
        store.record(event_id, None)
        return {}
    try:
        with stage("parse"):
            payload = clean_payload(payload)  # the privacy policy, once, before anything reads the event
            event = parse_event(payload)
    except ValidationError as exc:
        raise BadEvent(f"{payload.get('hook_event_name')} payload rejected: {exc.error_count()} error(s): "
                       + "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()[:5])) from exc
    client = str(envelope.get("client")) if envelope.get("client") in CLIENTS else CLAUDE_CODE
    received_at = envelope.get("received_at")
    at = float(received_at) if isinstance(received_at, (int, float)) and received_at > 0 else time.time()
    if store.has_event(event_id):
        return {}
    project, root = locate(event.cwd)
    if ignored((root, project), store.config.capture.ignore_projects):
        store.record(event_id, None, at)  # seen, nothing kept
        return {}
    store.note_project_path(project, root, at)
    if keeps_memories_from(store, event.agent_id):
        respond = False
    with current.reads_once():
        return handler(Context(store, models, event_id, at, project, root, respond, client), event)


def keeps_memories_from(store: Store, agent_id: str | None) -> bool:
    """Is this event a subagent's that gets no memories? A subagent works on its task: none in its context unless
    `inject.into_subagents`."""
    return bool(agent_id) and not store.config.inject.into_subagents


def ignored(names: tuple[str, ...], globs: list[str]) -> bool:
    """Is the project (by its path or its name) one of `capture.ignore_projects`?"""
    return any(fnmatch.fnmatch(name, os.path.expanduser(glob)) for glob in globs for name in names)


def ingest_spool(store: Store, models: Models) -> int:
    """Store every spooled event (oldest first), deleting each file once its event is committed.
    Safe to run from several processes at once: event ids make a second ingest a no-op."""
    folder = store.paths.spool
    done = 0
    for path in spool.pending(folder):
        envelope = spool.read(path)
        if envelope is None:
            continue
        try:
            handle_event(store, models, envelope, respond=False)
        except BadEvent as exc:
            store.log.error("spool_event_rejected", file=path.name, error=str(exc))
            spool.quarantine(path)
            continue
        spool.remove(path)
        done += 1
    if done:
        spool.sweep_stale_tmp(folder)
        store.log.info("spool_ingested", events=done)
    return done


def skipped_turn_id(session_id: str, prompt_id: str) -> str:
    """Ledger key marking a turn whose prompt recall did not keep (so its answer is not kept either)."""
    return f"skipped-turn:{session_id}:{prompt_id}"
