"""The injection gate: for a prompt, inject a few memories or stay silent, and say why.

Signals, in order:

1. intent (intent.py): chat and instructions are never searched; an explicit reference to the
   past lowers the bar and reaches beyond the warm window; general-knowledge questions raise it.
2. per candidate (the best-ranked memories of the hybrid search): dense similarity to the prompt,
   how much of the prompt's content its episode covers, whether the lexical and dense rankings
   agree on it, what kind of memory it is. Together: its evidence; a candidate is taken when its
   evidence reaches the bar of the prompt's intent.
3. episodes (turns.py): a taken memory is shown through its episode (the answer first, the
   question as a label); two candidates of one episode count once.
4. current values (versions.py): a newer statement about the same subject with another value
   replaces an older one, and says what it replaced.

`judge` returns every candidate with its signals and verdict: the hook injects the taken ones,
`recall explain` prints them all.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ...shared.projects import GLOBAL_PROJECT, in_scope
from .. import sentences
from ..config import Config
from ..embedding.embed import dot
from ..records import Memory
from ..stages import stage
from ..storage import Row, Store
from ..timeparse import DAY
from . import intent as intents
from . import ranking, search, versions
from .turns import Episode, episode, read_ahead

if TYPE_CHECKING:
    from ..config import GateConfig
    from ..embedding.embed import Models
    from .versions import Update

# While the prompt is embedded, the turns of the best lexical candidates are read, best first, until the meaning is
# there or this many are read (most stay among the best after fusion); the gate then reads the rest as it judges. Both
# read store.capabilities().conversations_at_once at a time.
EPISODES_READ_AHEAD = 24
# Judging stops early (_Ceiling) only while at most this many memories wait for their vectors (the worker embeds each
# within milliseconds; after an import thousands may wait, and a prompt then judges its `gate.candidates`).
MOST_UNEMBEDDED = 32


@dataclass
class Candidate:
    memory: Memory
    signals: dict = field(default_factory=dict)
    evidence: float = 0.0
    taken: bool = False
    why: str = ""
    episode: Episode | None = None  # None in "cues" mode: the memory is shown alone, as the seed did
    newer: list[Update] = field(default_factory=list)  # newer values of what it shows (versions.py)


@dataclass
class Decision:
    prompt: str
    intent: intents.Intent
    now: float = 0.0  # when it was judged
    candidates: list[Candidate] = field(default_factory=list)
    searched: bool = False
    window_days: float | None = None
    # (id, created_at) of the best-ranked memories: where a taken one's newer values are looked for first
    ranked: list[tuple[int, float]] = field(default_factory=list)
    terms: set[str] = field(default_factory=set)  # the searched query's answer terms (ranking.answer_terms)
    vector: bytes | None = None  # the prompt's embedding, when it was searched by meaning
    # What the session was already shown (injection/tiers.warm_recall): by earlier prompts, by the SessionStart brief
    shown_by_prompts: set[int] = field(default_factory=set)
    shown_by_brief: set[int] = field(default_factory=set)

    @property
    def taken(self) -> list[Candidate]:
        return [c for c in self.candidates if c.taken]

    @property
    def inject(self) -> bool:
        return bool(self.taken)

    def as_dict(self) -> dict:
        return {
            "prompt": self.prompt, "inject": self.inject, "intent": self.intent.kind,
            "intent_reasons": self.intent.reasons, "searched": self.searched, "window_days": self.window_days,
            "candidates": [{"id": c.memory.id, "kind": c.memory.kind, "taken": c.taken, "why": c.why,
                            "evidence": round(c.evidence, 3), "signals": c.signals,
                            "newer": [m.id for m in c.newer],
                            "text": c.memory.text[:300]} for c in self.candidates],
        }


def evidence(signals: dict, cfg: GateConfig) -> float:
    """One number from a candidate's signals (weights in config.GateConfig)."""
    similarity = signals["similarity"]
    if similarity is None:  # no embeddings yet (model loading): the words stand in for the meaning
        similarity = signals["coverage"]
    value = similarity + cfg.coverage_weight * signals["coverage"]
    value += cfg.agreement_weight * (signals["lexical_rank"] < 3 and signals["dense_rank"] < 3)
    value += cfg.kind_bonus.get(signals["kind"], 0.0)
    value += cfg.answer_type_weight * bool(signals.get("provides"))
    return value


def prepare(store: Store, models: Models, prompt: str) -> None:
    """Start what `judge` will need first and can have early: the prompt's embedding, when the gate will search for
    it (the prompt hook stores the prompt meanwhile, ~1 ms of a prompt's wait)."""
    cfg: Config = store.config
    if cfg.gate.mode != "signals" or cfg.tiers.warm_top_k == 0 or not intents.classify(prompt).searches:
        return
    embedder = models.embedder
    if embedder is not None and search.uses_meaning(store, embedder, cfg.ranking):
        embedder.start_ahead(prompt)


def judge(store: Store, models: Models, prompt: str, project: str, session_id: str | None, now: float | None = None,
          exclude_ids: AbstractSet[int]=frozenset(), complete: bool = False) -> Decision:
    """What the gate decides for `prompt` in `project` (read-only: nothing is stored or counted). Candidates are
    judged best-ranked first and, when the best-ranked are taken first (`gate.order` "score"), no further than the
    decision needs: once `warm_top_k` are taken the rest could change nothing (`complete`: judge them all anyway,
    for `recall explain`)."""
    with store.request_scope():
        return _judge(store, models, prompt, project, session_id, time.time() if now is None else now, exclude_ids,
                      complete)


def _judge(store: Store, models: Models, prompt: str, project: str, session_id: str | None, now: float,
           exclude_ids, complete: bool) -> Decision:
    cfg: Config = store.config
    with stage("intent"):
        intent = intents.classify(prompt)
    decision = Decision(prompt, intent, now)
    if cfg.gate.mode == "cues":
        return _judge_by_cues(store, models, decision, project, session_id, now, exclude_ids)
    if not intent.searches or cfg.tiers.warm_top_k == 0:
        return decision
    window = None if intent.explicit else cfg.tiers.warm_window_days
    decision.searched, decision.window_days = True, window
    rcfg = cfg.ranking
    embedder = models.embedder

    def eligible(rows: list[Row]) -> list[Row]:
        return [r for r in rows if r.id not in exclude_ids and in_scope(r.project, project)
                and (session_id is None or r.session_id != session_id)]

    rows: dict[int, Row] = {}  # the candidates' rows, read as their ids come

    def read_lexical_ahead(found: search.Candidates, meaning_done: Callable[[], bool]) -> None:
        """While the prompt is embedded: the lexical candidates' rows (ranked next), then the conversations of the best
        of them, best first, until the meaning is there (they mostly stay among the best after fusion, and their
        episodes are built next: the gate judged ~10 a prompt on the latency bench, each a few index walks)."""
        with stage("ahead"):
            rows.update((row.id, row) for row in store.live_rows(found.lexical))
            lexical = found.lexical
            best = eligible([rows[i] for i in sorted(lexical, key=lambda i: lexical[i], reverse=True) if i in rows])
            at_once = store.capabilities().conversations_at_once
            for start in range(0, min(len(best), EPISODES_READ_AHEAD), at_once):
                read_ahead(store, [row.memory() for row in best[start:start + at_once]])
                if meaning_done():
                    break

    found = search.candidates(store, embedder, rcfg, prompt, rcfg.candidates, project,
                              None if window is None else now - window * DAY, None, now, meanwhile=read_lexical_ahead)
    with stage("rank"):
        rows.update((row.id, row) for row in store.live_rows(found.fused.keys() - rows.keys()))
        live = sorted((rows[i] for i in found.fused if i in rows), key=lambda row: row.id)
        ranked = search.score(eligible(live), found, rcfg, now, cfg.strength)
    decision.ranked = [(row.id, row.created_at) for _, row in ranked[: 4 * cfg.gate.candidates]]
    decision.terms = ranking.answer_terms(found.query)
    decision.vector = found.vector
    with stage("gate"):
        ceiling = None if complete else _Ceiling(store, found, session_id, ranked)
        _weigh(store, decision, found, ranked, exclude_ids, ceiling)
    with stage("versions"):
        versions.prefer_current(store, decision, found, now)
    return decision


def _weigh(store: Store, decision: Decision, found, ranked, exclude_ids, ceiling: _Ceiling | None = None) -> None:
    """The best-ranked candidates' episodes and evidence, and which of them are taken. With a `ceiling`, when the best
    ranked are taken first, judging stops once no candidate left could be taken (else all are judged)."""
    cfg: Config = store.config
    intent = decision.intent
    lexical_rank = _ranks(found.lexical)
    dense_rank = _ranks(found.dense)
    terms = decision.terms
    bar = cfg.gate.thresholds.get(intent.kind, 1.0) + (cfg.gate.existence_margin if intent.existence else 0.0)
    in_rank_order = cfg.gate.order == "score"  # taken as judged: the best ranked first
    seen_episodes: list[set[int]] = []
    seen_spans: list[tuple[str, float, float]] = []  # (session, first, last moment) of each judged episode
    read_up_to = 0
    judged_ids: set[int] = set()
    for index, (score, row) in enumerate(ranked):
        if len(decision.candidates) >= cfg.gate.candidates:
            break
        if in_rank_order and ceiling is not None:
            if len(decision.taken) >= cfg.tiers.warm_top_k:
                break  # nothing judged after this could be taken
            needed = max(bar, decision.taken[0].evidence - cfg.gate.margin) if decision.taken else bar
            if not ceiling.could_reach(needed, index, judged_ids):
                break  # nor could anything left have the evidence a take needs
        if any(row.id in other for other in seen_episodes) or any(
                row.session_id == session and first <= row.created_at <= last for session, first, last in seen_spans):
            continue  # part of an episode already judged (a tool call: it happened during one of its turns)
        if index >= read_up_to:  # the conversations of the next few at once (a server is a round trip away)
            read_up_to = index + store.capabilities().conversations_at_once
            read_ahead(store, [r.memory() for _, r in ranked[index:read_up_to]])
        candidate = Candidate(row.memory())
        candidate.episode = episode(store, candidate.memory)
        if _unanswered(candidate):
            continue  # a question nobody answered holds no fact (e.g. an interrupted session)
        ids = candidate.episode.ids()
        if any(ids & other for other in seen_episodes):
            continue  # one episode, judged once (by its best-ranked memory)
        seen_episodes.append(ids)
        judged_ids |= ids
        if row.session_id and candidate.episode.turns:
            seen_spans.append((row.session_id, candidate.episode.started_at, candidate.episode.created_at))
        similarity, best = _episode_similarity(store, candidate, found)
        text = " ".join(p.text for p in candidate.episode.parts())
        candidate.signals = {
            "kind": best.kind, "score": round(score, 4),
            "similarity": None if similarity is None else round(similarity, 4),
            "lexical_rank": min((lexical_rank.get(i, 99) for i in ids), default=99),
            "dense_rank": min((dense_rank.get(i, 99) for i in ids), default=99),
            "coverage": round(ranking.term_coverage_of(terms, text), 3),
            "provides": sorted(sentences.provides(text, intent.wants)),
        }
        candidate.evidence = evidence(candidate.signals, cfg.gate)
        decision.candidates.append(candidate)
        if in_rank_order:
            _take(decision, candidate, bar, exclude_ids, cfg)
    if not in_rank_order:
        for candidate in sorted(decision.candidates, key=lambda c: -c.evidence):
            _take(decision, candidate, bar, exclude_ids, cfg)


class _Ceiling:
    """The most evidence a candidate not judged yet could have, from what the search already knows, so that the gate
    stops judging once none could be taken (a prompt that takes one memory no longer builds a dozen episodes).

    An episode's similarity is its best memory's; its memories are in its session: no better than the best
    dense-search result of a session with candidates left, or, for what the dense search left out, its n-th best
    (`found.dense_floor`). Coverage, kind and the kind of answer count at most their full weights, agreement only
    while a top-3 lexical and a top-3 dense memory are unjudged; a candidate still to embed could have any evidence.
    (The floor holds within the searched window: an episode's turns before the window's start are taken to be no
    closer.)"""

    def __init__(self, store: Store, found, session_id: str | None, ranked: list[tuple[float, Row]]):
        cfg = store.config.gate
        self.found = found
        self.ready = found.vector is not None and found.dense_floor is not None
        self.most_besides_similarity = (cfg.coverage_weight + max([0.0, *cfg.kind_bonus.values()])
                                        + cfg.answer_type_weight)
        self.agreement_weight = cfg.agreement_weight
        self.top_lexical = set(sorted(found.lexical, key=found.lexical.get, reverse=True)[:3])
        self.top_dense = set(sorted(found.dense, key=found.dense.get, reverse=True)[:3])
        self.last_candidate: dict[str, int] = {}  # session -> index in `ranked` of its last candidate
        self.anywhere = len(ranked)  # a candidate from here on may hold any memory (no session, or a global one)
        for index, (_, row) in enumerate(ranked):
            if row.session_id and row.project != GLOBAL_PROJECT:
                self.last_candidate[row.session_id] = index
            elif self.anywhere == len(ranked):
                self.anywhere = index
        self.session_id = session_id
        self.store = store
        self._sessions: dict[int, str] | None = None  # memories that could make a take -> sessions (read once)
        self.ranked = ranked
        self.last_unembedded = -1  # index in `ranked` of the last candidate without its vector

    def could_reach(self, needed: float, index: int, judged: set[int]) -> bool:
        """Could a candidate at `index` or after in the ranking, its memories not in `judged`, have `needed` evidence?"""
        if not self.ready or index >= self.anywhere:
            return True
        found = self.found
        most = self.most_besides_similarity + self.agreement_weight
        if found.dense_floor + most >= needed:
            return True  # even a memory the dense search left out could
        if self._sessions is None:
            # A candidate without its vector is judged by its words (`evidence`, similarity None): no ceiling for it.
            unembedded = set(self.store.unembedded_ids(MOST_UNEMBEDDED + 1))
            if len(unembedded) > MOST_UNEMBEDDED:
                self.ready = False
                return True
            self.last_unembedded = max((n for n, (_, row) in enumerate(self.ranked) if row.id in unembedded), default=-1)
            self._sessions = self.store.sessions_of(
                {i for i, s in found.dense.items() if s + most >= needed} | self.top_lexical | self.top_dense)

        sessions = self._sessions  # read above

        def open_(memory_id: int) -> bool:  # could be part of an episode still to judge
            session = sessions.get(memory_id)
            return (memory_id not in judged and session is not None and session != self.session_id
                    and self.last_candidate.get(session, -1) >= index)

        if self.last_unembedded >= index:
            return True
        besides = self.most_besides_similarity
        if any(map(open_, self.top_lexical)) and any(map(open_, self.top_dense)):
            besides += self.agreement_weight
        return found.dense_floor + besides >= needed or any(
            found.dense[memory_id] + besides >= needed and open_(memory_id) for memory_id in self._sessions
            if memory_id in found.dense)


# How a reason names the prompt's intent (retrieval/intent.py), for a person reading `recall explain` or the viewer.
PROMPT_KINDS = {"recall": "a question about earlier work", "project": "a question about this project",
                "statement": "a statement", "general": "a general question", "chat": "small talk",
                "instruction": "a request to do something"}


def _take(decision: Decision, candidate: Candidate, bar: float, exclude_ids, cfg: Config) -> None:
    """Take the candidate, or say why not (candidates come here in the order they are preferred), in plain words:
    the evidence is how strongly the memory is about the prompt (meaning, shared words, agreement of both
    rankings), the bar what the prompt's kind asks for."""
    kind = PROMPT_KINDS.get(decision.intent.kind, decision.intent.kind)
    if candidate.evidence < bar:
        candidate.why = f"not relevant enough: {candidate.evidence:.2f}, where {kind} needs {bar:.2f}"
    elif candidate.episode is not None and candidate.episode.ids() & set(exclude_ids):
        candidate.why = "already shown in this session"
    elif len(decision.taken) >= cfg.tiers.warm_top_k:
        candidate.why = f"the {cfg.tiers.warm_top_k} best are already taken (tiers.warm_top_k)"
    elif decision.taken and candidate.evidence < decision.taken[0].evidence - cfg.gate.margin:
        candidate.why = (f"much weaker than the first one taken ({candidate.evidence:.2f} against "
                         f"{decision.taken[0].evidence:.2f}): a lookalike, not a second answer")
    else:
        candidate.taken = True
        candidate.why = f"relevant: {candidate.evidence:.2f}, where {kind} needs {bar:.2f}"


def _episode_similarity(store: Store, candidate: Candidate, found) -> tuple[float | None, Memory]:
    """The best cosine similarity between the query and a memory of the episode, and that memory."""
    if found.vector is None:
        return None, candidate.memory
    best, best_memory = None, candidate.memory
    turns = candidate.episode.turns if candidate.episode is not None else []
    members = [candidate.memory] + [m for t in turns for m in (t.prompt, t.answer) if m is not None]
    stored = store.vectors_of([m.id for m in members if m.id not in found.dense])
    for memory in members:
        similarity = found.dense.get(memory.id)
        if similarity is None:
            if memory.id not in stored:
                continue
            similarity = dot(stored[memory.id], found.vector)
        if best is None or similarity > best:
            best, best_memory = similarity, memory
    return best, best_memory


def _ranks(scores: dict[int, float]) -> dict[int, int]:
    return {memory_id: rank for rank, memory_id in enumerate(sorted(scores, key=lambda i: scores[i], reverse=True))}


def _unanswered(candidate: Candidate) -> bool:
    """A question nobody answered (e.g. a prompt of a session that ended before the reply) holds no fact."""
    if candidate.memory.kind != "prompt":
        return False
    episode = candidate.episode
    turn = episode.turns[episode.main] if episode is not None and episode.turns else None
    return "?" in candidate.memory.text and (turn is None or turn.answer is None)


def _judge_by_cues(store: Store, models: Models, decision: Decision, project: str, session_id: str | None, now: float,
                   exclude_ids) -> Decision:
    """The seed's rule, kept as a setting (gate.mode = "cues"): a cue in the prompt, then the best
    `warm_top_k` memories of the warm window, each vetoed below `warm_min_similarity`."""
    cfg = store.config
    cues = ranking.prompt_cues(decision.prompt, cfg.cues)
    decision.intent = intents.Intent("cued" if cues else "uncued", [f"cue: {c}" for c in cues])
    if not cues or cfg.tiers.warm_top_k == 0:
        return decision
    decision.searched, decision.window_days = True, cfg.tiers.warm_window_days
    hits = search.search(store, models, decision.prompt, limit=cfg.tiers.warm_top_k, project=project,
                         since=now - cfg.tiers.warm_window_days * DAY, exclude_ids=exclude_ids,
                         exclude_session=session_id, touch=False, now=now)
    for hit in hits:
        memory = store.get([hit.id])[0]
        candidate = Candidate(memory, {"kind": hit.kind, "score": hit.score, "similarity": hit.similarity})
        ok = hit.similarity is None or hit.similarity >= cfg.tiers.warm_min_similarity
        candidate.taken = ok
        candidate.why = (f"cosine {hit.similarity} " + (">=" if ok else "<") +
                         f" {cfg.tiers.warm_min_similarity}") if hit.similarity is not None else "lexical match"
        decision.candidates.append(candidate)
    return decision


__all__ = ["Candidate", "Decision", "judge", "Row"]
