"""The three tiers and their rules.

- hot:  the last `hot_size` interactions (exchanges, or prompts still waiting for their
        answer) of a project within `hot_window_hours`: a bounded deque, loaded from the
        database so any process or new session sees it. Offered at SessionStart.
- warm: memories younger than `warm_window_days`, searched on UserPromptSubmit only when
        the prompt carries cues; a memory must reach `warm_min_similarity` to be injected,
        and at most `warm_top_k` are.
- cold: everything older: never injected, found by explicit search (`recall search`,
        /recall:log-search).
"""

from __future__ import annotations

from collections import deque

from . import ranking, search
from .capture import PROMPT_PREVIEW_CHARS, finish
from .records import Hit, Memory
from .store import Store
from .timeparse import DAY

HOUR = 3600.0
HOT_KINDS = ("exchange", "prompt")


def hot_tier(store: Store, project: str, now: float, *, exclude_session: str | None = None,
             only_session: str | None = None) -> deque[Memory]:
    """The hot deque of a project, newest last: its latest exchanges, plus prompts still waiting
    for their answer (a prompt whose exchange is there is shown with it, not twice)."""
    cfg = store.config.tiers
    recent = store.recent(project, HOT_KINDS, now - cfg.hot_window_hours * HOUR, cfg.hot_size * 2,
                          exclude_session=exclude_session, only_session=only_session)
    exchanges = [m for m in recent if m.kind == "exchange"]
    interactions = [m for m in recent if m.kind == "exchange" or not any(_answers(e, m) for e in exchanges)]
    return deque(reversed(interactions[: cfg.hot_size]), maxlen=cfg.hot_size)


def _answers(exchange: Memory, prompt: Memory) -> bool:
    """Is `exchange` the answer to `prompt`? (same session, and the same prompt id or question)"""
    if exchange.session_id != prompt.session_id:
        return False
    prompt_id = prompt.meta.get("prompt_id")
    if prompt_id and exchange.meta.get("prompt_id") == prompt_id:
        return True
    return exchange.meta.get("prompt") == finish(prompt.text, PROMPT_PREVIEW_CHARS)


def warm_window_start(store: Store, now: float) -> float:
    return now - store.config.tiers.warm_window_days * DAY


def is_cold(store: Store, created_at: float, now: float) -> bool:
    return created_at < warm_window_start(store, now)


def warm_recall(store: Store, models, project: str, session_id: str, prompt: str,
                now: float) -> tuple[list[Hit], list[str]]:
    """Memories worth injecting for a prompt, and the cues that allowed the search.

    Skips memories already in this session's context: its own memories and anything recall
    injected into it before."""
    cfg = store.config
    cues = ranking.prompt_cues(prompt, cfg.cues)
    if not cues or cfg.tiers.warm_top_k == 0:
        return [], cues
    already = store.injected_ids(session_id)
    # Only the best-ranked memories are candidates; the threshold can veto them but never reaches
    # down the list for a weaker one (on LoCoMo: fewer injections, 980 -> 937, slightly more of
    # them holding an evidence turn).
    hits = search.search(
        store, models, prompt, limit=cfg.tiers.warm_top_k, project=project, since=warm_window_start(store, now),
        exclude_ids=already, exclude_session=session_id, touch=False, now=now,
    )
    return [hit for hit in hits if relevant_enough(store, prompt, hit, now)], cues


def relevant_enough(store: Store, prompt: str, hit: Hit, now: float) -> bool:
    """The similarity threshold. Without embeddings (model not loaded yet) a lexical stand-in:
    at least half of the prompt's content terms, and two of them, occur in the memory."""
    if hit.similarity is not None:
        return hit.similarity >= store.config.tiers.warm_min_similarity
    query = ranking.parse_query(prompt, now, store.config.ranking)
    matched = ranking.term_coverage(query, hit.text) * len(query.terms)
    return matched >= min(2, len(query.terms)) and matched / max(1, len(query.terms)) >= 0.5
