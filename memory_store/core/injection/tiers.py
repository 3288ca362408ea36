"""The three tiers and their rules.

- hot:  the last `hot_size` interactions (exchanges, or prompts still waiting for their
        answer) of a project within `hot_window_hours`: a bounded deque, loaded from the
        database so any process or new session sees it. Offered at SessionStart.
- warm: memories younger than `warm_window_days` (older ones too when the prompt refers to the
        past outright), searched on UserPromptSubmit when the prompt asks something of memory;
        the gate (gate.py) takes at most `warm_top_k` of them, or none.
- cold: everything older: never injected, found by explicit search (`recall search`,
        /recall:log-search).
"""

from __future__ import annotations

import re
from collections import deque
from typing import TYPE_CHECKING

from ...shared.text import cap, cap_readable
from .. import sentences
from ..capture.capture import PROMPT_PREVIEW_CHARS, finish
from ..knowledge import current
from ..records import SETTLED, Memory
from ..retrieval import code_paths, gate, knowledge, turns, versions
from ..stages import stage
from ..storage import Store
from ..timeparse import DAY
from . import inject

if TYPE_CHECKING:
    from ..embedding.embed import Models

HOUR = 3600.0
HOT_KINDS = ("exchange", "prompt")


def hot_tier(store: Store, project: str, now: float, *, exclude_session: str | None = None,
             only_session: str | None = None, size: int | None = None) -> deque[Memory]:
    """The hot deque of a project, newest last: its latest exchanges, plus prompts still waiting
    for their answer (a prompt whose exchange is there is shown with it, not twice). Small talk has no
    place in it: an interaction whose question and answer are both greetings or acknowledgements
    ("hi", "ok continue" → "Done.") is skipped."""
    cfg = store.config.tiers
    size = cfg.hot_size if size is None else size
    recent = store.recent(project, HOT_KINDS, now - cfg.hot_window_hours * HOUR, size * 6,
                          exclude_session=exclude_session, only_session=only_session)
    # What the exchanges answer, by prompt id and by quoted question (one pass, not one per pair).
    answered = {(e.session_id, "id", e.meta.get("prompt_id")) for e in recent if e.kind == "exchange"}
    answered |= {(e.session_id, "q", e.meta.get("prompt")) for e in recent if e.kind == "exchange"}
    interactions = [m for m in recent if (m.kind == "exchange" or not _answered(m, answered))
                    and not sentences.is_small_talk(m)]
    return deque(reversed(interactions[:size]), maxlen=size)


BRIEF_TITLE = "Recent work in this project, from earlier sessions (oldest first):"


def render_brief(store: Store, items: list[inject.Item], title: str, now: float) -> tuple[str, list[int]]:
    """The brief's block as SessionStart adds it (within inject.hot_budget_chars), and the ids it shows."""
    return inject.render_block(items, title, store.config.inject.hot_budget_chars, store.config.inject.max_item_chars,
                               now)


def brief(store: Store, project: str, now: float, *, exclude_session: str | None = None) -> list[inject.Item]:
    """The SessionStart brief: of the recent interactions in the hot window, the `hot_size` with the most
    substance (decisions, fixes, errors and their resolution, values; a question still waiting for its
    answer, an open thread, only when nothing settled is left), oldest first, each shown by what it settled."""
    with store.request_scope():
        return _brief(store, project, now, exclude_session)


def _brief(store: Store, project: str, now: float, exclude_session: str | None) -> list[inject.Item]:
    cfg = store.config
    pool = list(hot_tier(store, project, now, exclude_session=exclude_session, size=cfg.tiers.hot_size * 3))
    # What was settled comes first (decisions, fixes, values, errors with their fix); a question still waiting
    # for its answer only fills a place nothing settled would take.
    answered = sorted((m for m in pool if m.kind != "prompt"), key=lambda m: -sentences.substance(m))
    open_threads = sorted((m for m in pool if m.kind == "prompt"), key=lambda m: -sentences.substance(m))
    ranked = (answered + open_threads)[: cfg.tiers.hot_size]
    # A value a newer item of the brief changed is not shown twice; one changed elsewhere shows the new value first (a
    # rule taken back since says so). What an episode's turns state is what it shows.
    episodes = {m.id: turns.episode(store, m) for m in ranked if m.kind != "prompt"}
    newer = {m.id: later for m in ranked if (later := versions.updates(
        store, project, episodes[m.id].ids() if m.id in episodes else {m.id}))}
    shown = {m.id for m in ranked}
    ranked = [m for m in ranked if not any(n.id in shown for n in newer.get(m.id, ()))]
    limit = brief_item_chars(store)
    lead = _knowledge_lead(store, project, now, exclude_session)
    # A changed value the brief leads with is not shown again as the exchange that stated it (one memory, one line).
    led = {item.id for item in lead}
    ranked = [m for m in ranked if not (episodes[m.id].ids() if m.id in episodes else {m.id}) & led]
    items = []
    for memory in sorted(ranked, key=lambda m: (m.created_at, m.id)):
        team = memory.visibility == "team"
        if memory.kind == "prompt" and team and not store.is_mine(memory):
            # A teammate's shared prompt: whether she had her answer is hers to know (answers stay private).
            items.append(inject.Item(memory.id, inject.kind_label(memory), memory.created_at.timestamp(), memory.text))
        elif memory.kind == "prompt":  # no answer yet
            label = "open" + (f" · team, by {memory.owner}" if team and memory.owner else "")
            items.append(inject.Item(memory.id, label, memory.created_at.timestamp(),
                                     f"(open, no answer yet) {memory.text}"))
        else:
            items.append(inject.episode_item(episodes[memory.id], set(), limit, newer.get(memory.id, [])))
    return code_paths.checked_items(store, project, distinct(lead + items))


BRIEF_KNOWLEDGE = 2  # changed facts the brief leads with
BRIEF_LOOKED_AT = 30  # of the warm window's newest observations, those whose things are looked up
BRIEF_KNOWLEDGE_CHARS = 260


def _knowledge_lead(store: Store, project: str, now: float, exclude_session: str | None) -> list[inject.Item]:
    """What the brief leads with: the values that changed in its window (what is current, saying what it replaced:
    core/knowledge/current.py), from earlier sessions. A rule comes when it matters: before the file it governs is
    touched (injection/actions.py) or when a prompt asks (a session is shown a memory once, so the brief would take
    that moment away)."""
    if not store.config.inject.knowledge:
        return []
    since = now - store.config.tiers.hot_window_hours * HOUR
    recent = [item for item in store.knowledge.listed(project, ["fact"], 200, since)
              if item.session_id != exclude_session and item.modality in SETTLED]
    lead: list[knowledge.Found] = []
    for answer in current.resolve(store.knowledge, project, recent[:BRIEF_LOOKED_AT]):
        item = answer.item
        if answer.standing and answer.history and item.session_id != exclude_session and item.created_at >= since:
            lead.append(knowledge.Found(item, 0.0, "", answer.history[:1],
                                        answer.written.file if answer.written else ""))
        if len(lead) == BRIEF_KNOWLEDGE:
            break
    return [inject.Item(found.item.source_id, found.item.kind, found.item.created_at,
                        cap(knowledge.shown(found, store.owner), BRIEF_KNOWLEDGE_CHARS))
            for found in sorted(lead, key=lambda found: found.item.created_at)]


_KNOWLEDGE_LABEL = re.compile(r"^\S.{0,30}? since \d{4}-\d{2}-\d{2}: ")  # knowledge.shown's "Current since DATE: "
SAME_CONTENT = 0.8  # an item whose sentences are this much in an earlier one says nothing new


def distinct(items: list[inject.Item]) -> list[inject.Item]:
    """Items that say different things: one whose sentences another item already holds (a follow-up and the turn
    it follows, shown as one episode from either end; a fact its episode states) is left out, whatever its id."""
    kept: list[inject.Item] = []
    held: list[set[str]] = []
    for item in sorted(items, key=lambda i: -len(i.text)):
        said = _sentences_of(item.text)
        if said and any(len(said & other) >= SAME_CONTENT * len(said) for other in held):
            continue
        kept.append(item)
        held.append(said)
    order = {id(item): n for n, item in enumerate(items)}
    return sorted(kept, key=lambda item: order[id(item)])


def _sentences_of(text: str) -> set[str]:
    """A line's sentences, without its labels ("Q:", "A:", "Current since …:"), as compared for sameness."""
    text = _KNOWLEDGE_LABEL.sub("", text)
    parts = [part.split(": ", 1)[-1] if part[:2] in ("Q:", "A:") else part for part in text.split(" → ")]
    return {" ".join(s.lower().split()).rstrip(".…") for part in parts for s in sentences.split(part) if len(s) > 12}


def _answered(prompt: Memory, answered: set) -> bool:
    """Has one of the exchanges (`answered`: what they answer) answered `prompt`? (same session, and the same
    prompt id or question)"""
    prompt_id = prompt.meta.get("prompt_id")
    if prompt_id and (prompt.session_id, "id", prompt_id) in answered:
        return True
    return (prompt.session_id, "q", finish(prompt.text, PROMPT_PREVIEW_CHARS, keep_ends=True)) in answered


def warm_window_start(store: Store, now: float) -> float:
    return now - store.config.tiers.warm_window_days * DAY


def is_cold(store: Store, created_at: float, now: float) -> bool:
    return created_at < warm_window_start(store, now)


def warm_recall(store: Store, models: Models, project: str, session_id: str, prompt: str, now: float) -> gate.Decision:
    """What the gate decides for a prompt (core/retrieval/gate.py). Skips what is already in this session's
    context: its own memories, what an earlier prompt of it got injected, and what the SessionStart brief
    showed, unless the prompt's answer from it says more than the brief's digest did (the brief shows each
    item by what it settled, not by what a later question asks). A compaction empties the context, and with
    it these lists (brief.session_brief)."""
    from_prompts = store.injected_ids(session_id, "UserPromptSubmit")
    in_brief = store.injected_ids(session_id) - from_prompts
    decision = gate.judge(store, models, prompt, project, session_id, now, exclude_ids=from_prompts)
    decision.shown_by_prompts, decision.shown_by_brief = from_prompts, in_brief  # warm_items needs them too
    if in_brief:
        for candidate in decision.taken:
            if candidate.episode and candidate.episode.ids() & in_brief and _brief_said_it(store, decision, candidate):
                candidate.taken = False
                candidate.why += "; the SessionStart brief already showed what it says"
    return decision


def _brief_said_it(store: Store, decision: gate.Decision, candidate: gate.Candidate) -> bool:
    """Does the brief's line for this episode already hold every sentence the prompt's answer from it would show?"""
    if candidate.episode is None:  # "cues" mode: no episodes, no brief line to compare
        return False
    shown = " ".join(inject.episode_item(candidate.episode, set(), brief_item_chars(store)).text.split()).lower()
    answer = _item(store, decision, candidate).text
    parts = [part.split(": ", 1)[-1] for part in answer.split(" → ")]  # without the "Q:"/"A:" labels
    return all(" ".join(sentence.split()).lower().rstrip("…") in shown
               for part in parts for sentence in sentences.split(part))


def brief_said(store: Store, shown: set[int]) -> str:
    """What the SessionStart brief could have said in full of the memories it showed: each one's opening and its
    question's, as far as a brief line reaches (one read; the lines themselves are not rebuilt: `brief_lines` does,
    when this says an item may be a repeat)."""
    limit = brief_item_chars(store)
    said = []
    for memory in store.get(sorted(shown)):
        said += [memory.text[:limit], str(memory.meta.get("prompt", ""))[:limit]]
    return " ".join(" ".join(part.split()) for part in said)


def brief_lines(store: Store, project: str, shown: set[int], now: float) -> str:
    """What the SessionStart brief's lines for the memories it showed said, rebuilt as the brief builds them (its
    lead of changed values, each episode by its opening, an open question): a sentence its cut line left out may be
    said again."""
    limit = brief_item_chars(store)
    items = [item for item in _knowledge_lead(store, project, now, None) if item.id in shown]
    for memory in sorted(store.get(sorted(shown)), key=lambda m: (m.created_at, m.id)):
        items.append(inject.Item(memory.id, "", memory.created_at.timestamp(), memory.text) if memory.kind == "prompt"
                     else inject.episode_item(turns.episode(store, memory), set(), limit))
    block, _ = render_brief(store, items, BRIEF_TITLE, now)  # as the brief was cut to its budget
    return " ".join(block.split())


def brief_item_chars(store: Store) -> int:
    """How long one item of the SessionStart brief may be."""
    cfg = store.config
    return max(160, cfg.inject.hot_budget_chars // max(1, cfg.tiers.hot_size) + 60)


def _item(store: Store, decision: gate.Decision, candidate: gate.Candidate) -> inject.Item:
    """A taken candidate as an injectable line: its episode's answer to the prompt."""
    if not candidate.episode:
        return inject.memory_item(candidate.memory)
    terms = decision.terms  # an episode is built only for a searched prompt (gate._judge)
    return inject.episode_item(candidate.episode, terms, store.config.inject.max_item_chars, candidate.newer,
                               decision.intent.wants)


def render_said_once(items: list[inject.Item], title: str, budget: int, item_limit: int,
                     now: float) -> tuple[str, list[int]]:
    """inject.render_block, then again without a fact, procedure or decision that another line, as it was rendered,
    says whole (a decision an answer states in full was shown twice: its line and its answer's). warm_items can only
    guess what a line keeps once cut to the budget; this looks."""
    text, ids = inject.render_block(items, title, budget, item_limit, now)
    rendered = [" ".join(line.split()).lower() for line in text.split("\n")[-len(ids) - 1:-1]] if ids else []
    repeated = set()
    for n, item in enumerate(items[:len(ids)]):
        if item.kind not in knowledge.KINDS or knowledge.says_more_than_its_item(item.text):
            continue
        said = " ".join(_KNOWLEDGE_LABEL.sub("", item.text).split()).lower().rstrip(".")
        if any(said in line for m, line in enumerate(rendered) if m != n):
            repeated.add(n)
    if not repeated:
        return text, ids
    return inject.render_block([item for n, item in enumerate(items) if n not in repeated], title, budget,
                               item_limit, now)


def warm_items(store: Store, decision: gate.Decision, project: str) -> list[inject.Item]:
    """The facts, procedures and decisions that answer the prompt (retrieval/knowledge.py), then the taken candidates:
    each episode's answer to the prompt, as it stands against the project's code (code_paths.py). An item is left
    out when an episode shown with it already says all it says, or when this session was already shown it."""
    episodes = code_paths.checked_items(store, project, [_item(store, decision, c) for c in decision.taken])
    if not store.config.inject.knowledge:
        return episodes
    seen, in_brief = decision.shown_by_prompts, decision.shown_by_brief
    # What an episode's line surely says: its opening, which a line cut to its length or to what is left of the
    # budget keeps (inject.render_block); a fact further in may be cut away, so it is shown on its own.
    opening = store.config.inject.max_item_chars // 2
    said = " ".join(cap_readable(" ".join(item.text.split()), opening) for item in episodes)
    briefed: str | None = None  # what the brief may have shown, read when an item may repeat it
    brief: str | None = None  # … and what its lines did show, rebuilt when that says it may
    known = []
    with stage("knowledge"):
        answers = knowledge.relevant(store, project, decision.prompt, decision.vector, decision.intent, seen)
    for found in answers:
        text = " ".join(found.item.text.split())
        if in_brief and briefed is None:
            briefed = brief_said(store, in_brief)
        adds = (found.where and found.where not in said) or found.replaced  # where it is set, what it replaced
        if text in said and not adds:
            continue
        if briefed and text.rstrip(".") in briefed:
            brief = brief_lines(store, project, in_brief, decision.now) if brief is None else brief
            if text.rstrip(".") in brief:
                continue
        known.append(inject.Item(found.item.source_id, found.item.kind, found.item.created_at,
                                 knowledge.shown(found, store.owner)))
    return known + episodes


