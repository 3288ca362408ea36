"""Hybrid search in three named steps:

    candidates   FTS5 BM25 and sqlite-vec nearest neighbours (plus both again inside a time the
                 query names), fused into one score per memory;
    score        each live candidate's fused score plus recency, RFM priority and time boosts;
    finish       optional cross-encoder rerank, the top `limit`, usage counted, hits built.

Why FTS5 and not rank-bm25 for the archive: FTS5 answers in a few milliseconds from an index
that SQLite keeps in step with every insert and weights a memory's own text above its
neighbouring turns; rank-bm25 scores every document per query (~150 ms at 100k) and has no
column weights (LoCoMo R@10 0.735 against 0.798). `recall bench locomo --methods bm25`
reruns that comparison.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from collections.abc import Set as AbstractSet
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, get_args

from ...shared.projects import in_scope
from .. import sentences, stages
from ..config import RankingConfig, SearchConfig, StrengthConfig
from ..embedding.embed import Models
from ..records import Hit, shown_text
from ..stages import stage
from ..storage import Row, Store
from . import ranking, strength, versions
from .code_paths import checked_hits
from .versions import outdated_note

if TYPE_CHECKING:
    from ..embedding.embed import Embedder

# How a search surface shows hits (api.Recall.search): only the relevant ones, or every hit (`--all`).
Shown = Literal["relevant", "all"]
SHOWN = get_args(Shown)


@dataclass
class Candidates:
    """What the retrievers found for one query."""

    query: ranking.Query
    vector: bytes | None  # the query's embedding (None: lexical only)
    lexical: dict[int, float] = field(default_factory=dict)  # memory id -> BM25 (higher is better)
    dense: dict[int, float] = field(default_factory=dict)  # memory id -> cosine similarity
    fused: dict[int, float] = field(default_factory=dict)  # memory id -> fused score, best = 1
    # No memory of the searched scope that the dense search left out is more similar than this (its n-th best;
    # -1 when it returned every vector there; None: no dense search)
    dense_floor: float | None = None


def uses_meaning(store: Store, embedder: Embedder | None, cfg: RankingConfig) -> bool:
    """Will a search embed its query (a model is loaded, the store's vectors are its, fusion reads them)?"""
    return cfg.fusion != "fts" and store.dense_ready(embedder)


def _then_nearest(store: Store, embedding: Future, n: int, project: str | None, since: float | None,
                  until: float | None) -> Future:
    """A future of (the query's vector, its n nearest memories, the milliseconds that search took): the vectors are
    searched on the embedding's thread once it is done, while this one searches the words (an all-time search at 100k
    memories reads ~6 ms of vectors beside ~10 ms of words; a prompt's 1 ms beside its read-ahead). Whoever waits for
    it must not hold the store's lock: the vector search may need it (a RAM copy not synced in the last 50 ms)."""
    done: Future = Future()

    def search(embedded: Future) -> None:
        try:
            vector = embedded.result()
            started = time.perf_counter()
            dense = store.nearest(vector, n, project, since, until)
            done.set_result((vector, dense, (time.perf_counter() - started) * 1000))
        except BaseException as exc:  # handed to the caller, as if it had searched itself
            done.set_exception(exc)

    embedding.add_done_callback(search)
    return done


def candidates(store: Store, embedder: Embedder | None, cfg: RankingConfig, query_text: str, n: int, project: str | None,
               since: float | None, until: float | None, now: float,
               meanwhile: Callable[[Candidates, Callable[[], bool]], None] | None = None) -> Candidates:
    """The lexical and dense candidates of a query. `meanwhile(found, done)` runs once the words are searched, if the
    query's embedding and vector search are still running (`done()`: are they now?): work the caller will want that
    does not need the meaning, as much as fits before they are done (after, it would only stand in the way: a big
    store's word search outlasts them)."""
    with stage("parse"):
        query = ranking.parse_query(query_text, now, cfg)
    # The model embeds the query on another core while the words are searched (Embedder.start_query), and the
    # vectors are searched there as soon as the query's is ready.
    meaning = None
    if embedder is not None and uses_meaning(store, embedder, cfg):
        store.catch_up_vectors()
        meaning = _then_nearest(store, embedder.start_query(query_text), n, project, since, until)
    found = Candidates(query, None)
    lexical = cfg.fusion != "dense" and bool(query.terms)
    if lexical:
        with stage("counts"):  # which words a match must hold (term_frequency.py)
            required = store.selective_terms(query.terms, project)
        with stage("lexical"):
            found.lexical = store.lexical_candidates(query.terms, required, n, project, since, until)
    vector = None
    if meaning is not None:
        if meanwhile is not None and not meaning.done():
            meanwhile(found, meaning.done)
        with stage("embed"):  # what is left of the embedding and the vector search beside
            vector, found.dense, vector_ms = meaning.result()
        found.vector = vector
        stages.record("vector", vector_ms)
        found.dense_floor = sorted(found.dense.values(), reverse=True)[n - 1] if len(found.dense) >= n else -1.0
    window = query.window
    if window is not None and cfg.date_weight > 0:
        # A named time ("in July 2022") also gets candidates of its own: weak words such as
        # "where" or "travel" are strong inside the right weeks. BM25 and cosine scores are
        # comparable across both passes (same index statistics), so the lists simply merge.
        start = max(window.start, since) if since is not None else window.start
        end = min(window.end, until) if until is not None else window.end
        if lexical:
            with stage("lexical"):
                found.lexical.update(store.lexical_candidates(query.terms, required, n, project, start, end))
        if vector is not None:
            with stage("vector"):
                found.dense.update(store.nearest(vector, n, project, start, end))
    with stage("rank"):
        found.fused = ranking.fuse(found.lexical, found.dense, cfg)
        for memory_id in store.pinned_ids(project):  # a pinned memory is always a candidate
            found.fused.setdefault(memory_id, 0.0)
    return found


def session_scores(rows: list[Row], fused: dict[int, float], top: int) -> dict[str, float]:
    """How strongly each session matches the query as a whole (the sum of its best `top` candidate
    scores, scaled to a best of 1): a memory in a conversation that keeps matching is likelier to be
    the one meant than an isolated hit."""
    by_session: dict[str, list[float]] = {}
    for row in rows:
        if row.session_id:
            by_session.setdefault(row.session_id, []).append(fused[row.id])
    totals = {session: sum(sorted(values, reverse=True)[:top]) for session, values in by_session.items()}
    best = max(totals.values(), default=0.0)
    return {session: value / best for session, value in totals.items()} if best > 0 else {}


def score(rows: list[Row], found: Candidates, cfg: RankingConfig, now: float,
          strength_cfg: StrengthConfig | None = None) -> list[tuple[float, Row]]:
    """(score, row), best first: fused relevance plus recency, RFM priority, strength, trust and time boosts."""
    fused, query = found.fused, found.query
    session_support = session_scores(rows, fused, cfg.session_top) if cfg.session_weight > 0 else {}
    max_uses = max((r.seen_count - 1 + r.access_count for r in rows), default=0)
    buckets = cfg.temporal_bucket_weights
    scored = []
    for row in rows:
        age = now - row.created_at
        value = fused[row.id] + cfg.session_weight * session_support.get(row.session_id, 0.0)
        value += cfg.recency_weight * ranking.recency(age, cfg.recency_decay_days) + cfg.pin_weight * row.pinned
        value += cfg.trust_weight * row.trust
        if strength_cfg is not None and cfg.strength_weight:
            value += cfg.strength_weight * strength.strength(
                row.kind, row.created_at, row.last_accessed, row.seen_count - 1 + row.access_count, now, strength_cfg)
        last_use = max(row.created_at, row.last_accessed or 0.0)
        value += cfg.priority_weight * ranking.rfm_priority(
            now - last_use, row.seen_count - 1 + row.access_count, max_uses, row.importance, cfg
        )
        if query.window is not None:
            if query.window.start <= row.created_at <= query.window.end:
                value += cfg.date_weight
        elif query.asks_about_time:
            value += cfg.temporal_weight * buckets.get(ranking.age_bucket(age), 0.0)
        scored.append((value, row))
    scored.sort(key=lambda pair: (-pair[0], -pair[1].pinned, -pair[1].created_at))
    return scored


def rerank(cross_encoder: Any, top_n: int, query_text: str, scored: list[tuple[float, Row]]) -> list[tuple[float, Row]]:
    """With a cross-encoder, reorder the best `top_n` candidates by its scores. They keep a score
    above the rest (1 + the cross-encoder score scaled to 0-1) so scores stay ordered."""
    if cross_encoder is None or len(scored) < 2:
        return scored
    head, tail = scored[:top_n], scored[top_n:]
    raw = cross_encoder.scores(query_text, [row.text for _, row in head])
    low, high = min(raw), max(raw)
    spread = (high - low) or 1.0
    head = sorted(((1.0 + (value - low) / spread, row) for value, (_, row) in zip(raw, head)),
                  key=lambda pair: -pair[0])
    best_tail = max((value for value, _ in tail), default=0.0)
    return head + [(min(value, best_tail), row) for value, row in tail]


def finish(store: Store, embedder: Embedder | None, scored: list[tuple[float, Row]], found: Candidates, limit: int,
           touch: bool, now: float) -> list[Hit]:
    """The top `limit` as hits, each with its cosine similarity to the query when there is a query
    vector (a memory still waiting for its embedding is embedded on the spot, so thresholds apply
    to every memory alike); `touch` counts them as used (RFM)."""
    top = scored[:limit]
    if touch and not store.read_only:
        store.touch([row.id for _, row in top], now)
    hits = []
    for value, row in top:
        similarity = found.dense.get(row.id)
        if similarity is None and found.vector is not None and embedder is not None:
            stored = store.vector_of(row.id) or embedder.embed([row.text])[0]
            similarity = embedder.similarity(stored, found.vector)
        hits.append(row.hit(value, similarity))
    return hits


# How far short of the floor an exchange may be to be weighed again by its question and answer: its question rarely
# adds more (each weighing is an embedding of a long text; all of them cost 50 ms a search).
RELEVANT_MARGIN = 0.15


def relevant(hits: list[Hit], query_text: str, cfg: SearchConfig, embedder: Embedder | None = None) -> list[Hit]:
    """The hits a person should be shown for `query_text`: those with evidence of being about it (their meaning
    close to the query's, or the query's distinctive words in what is shown), at least `cfg.floor`. A ranking
    always has a first hit; this is what says "nothing relevant" instead. Small talk holds no evidence. An
    exchange's vector is its answer's: one short of the floor is weighed again by its question and answer
    together (`embedder`: a few embeddings, for the hits that need them only)."""
    terms = ranking.answer_terms(ranking.parse_query(query_text))
    scored = []
    for hit in hits:
        if sentences.is_small_talk(hit):
            continue
        coverage = ranking.term_coverage_of(terms, shown_text(hit)) if terms else 0.0
        scored.append((hit, (hit.similarity or 0.0) + cfg.coverage_weight * coverage))
    again = [hit for hit, evidence in scored if cfg.floor - RELEVANT_MARGIN <= evidence < cfg.floor
             and hit.kind == "exchange" and hit.meta.get("prompt") and hit.similarity is not None]
    if again and embedder is not None:
        query = embedder.embed_cached([query_text])[0]  # the candidates' search has just embedded it
        vectors = embedder.embed_cached([shown_text(hit) for hit in again])
        better = {hit.id: embedder.similarity(vector, query) - (hit.similarity or 0.0)
                  for hit, vector in zip(again, vectors)}
        scored = [(hit, evidence + max(0.0, better.get(hit.id, 0.0))) for hit, evidence in scored]
    return [hit for hit, evidence in scored if evidence >= cfg.floor]


def current_only(store: Store, hits: list[Hit], drop: bool = True) -> list[Hit]:
    """Hits as they stand now (versions.py): one whose value a newer hit changed is left out (`drop`), and
    one changed by a memory not among them (or kept) says so first (`Hit.outdated`)."""
    newer = versions.newer_versions(store, hits)
    shown = {hit.id for hit in hits}
    current = []
    for hit in hits:
        later = newer.get(hit.id, [])
        if drop and any(memory.id in shown for memory in later):
            continue
        current.append(hit.model_copy(update={"outdated": outdated_note(hit, later)}) if later else hit)
    return current


def shown_hits(store: Store, models: Models, query_text: str, limit: int = 10, project: str | None = None, *,
               touch: bool = False, **options: Any) -> list[Hit]:
    """What the search surfaces show for `query_text` (`recall search`, /recall:log-search, MCP, viewer): the hits
    with evidence of being about it, as they stand now (an old value a newer hit changed left out), a file a hit
    names that is gone said so. Ranked deeper than asked: what the floor or a newer value leaves out makes room.
    `touch`: the hits shown (not the deeper ranking) count as used."""
    ranked = search(store, models, query_text, max(limit * 2, RELEVANT_DEPTH), project, touch=False, **options)
    hits = exact_first(query_text, ranked, relevant(ranked, query_text, store.config.search, models.embedder))
    hits = checked_hits(store, current_only(store, hits))
    shown = hits[:limit]
    if touch and shown and not store.read_only:
        store.touch([hit.id for hit in shown], options.get("now"))
    return shown


RELEVANT_DEPTH = 10  # `shown_hits` ranks at least this deep before it keeps the relevant ones

# An identifier in a query (ERR_LEDGER_LOCKED, max_connections, v2.4.1, TS2345, useEffect, --dry-run, src/app.py):
# a word with an underscore, a digit beside letters, a capital inside, a leading "--", or two separators (. / -). The
# text index splits it into common words ("ledger", "locked") that loose matches share, so the memory holding it
# verbatim can rank below them. Hyphenated words (read-only, e-mail) are words, not identifiers.
IDENTIFIER_CHARS = re.compile(r"[\w.\-/]+")  # no backtracking: one pass over a word of these characters
MAX_IDENTIFIER_CHARS = 80  # longer "words" are pastes (hashes, base64), not something a person looks up by name
MAX_IDENTIFIERS = 12


def _is_identifier(word: str) -> bool:
    if not any(ch.isalpha() for ch in word):
        return False
    separators = sum(word.count(ch) for ch in "./-")
    return ("_" in word.strip("_") or word.startswith("--") or separators >= 2
            or any(ch.isdigit() for ch in word) or any(ch.isupper() for ch in word[1:]))


def identifiers(query_text: str) -> list[str]:
    """The identifier-like words of a query (4 to MAX_IDENTIFIER_CHARS characters), as typed, at most
    MAX_IDENTIFIERS."""
    found: list[str] = []
    for raw in IDENTIFIER_CHARS.findall(query_text):
        word = raw.strip(".-/") if not raw.startswith("--") else raw.rstrip(".-/")
        if 4 <= len(word) <= MAX_IDENTIFIER_CHARS and word not in found and _is_identifier(word):
            found.append(word)
            if len(found) == MAX_IDENTIFIERS:
                break
    return found


def _holds(text: str, word: str) -> bool:
    """`text` holds `word` as a whole (not inside a longer identifier), case aside."""
    return re.search(rf"(?<![\w.\-/]){re.escape(word)}(?![\w\-/]|\.\w)", text, re.IGNORECASE) is not None


def exact_first(query_text: str, ranked: list[Hit], kept: list[Hit]) -> list[Hit]:
    """`kept` (the relevant hits, best first) with the hits that hold one of the query's identifiers verbatim before
    the rest, those holding more of them first; such a hit is evidence of being about the query whatever the
    relevance floor says of it, so it is taken from `ranked` when `kept` left it out."""
    wanted = identifiers(query_text)
    if not wanted:
        return kept
    held = {hit.id: sum(_holds(shown_text(hit), w) for w in wanted) for hit in ranked}
    exact = sorted((h for h in ranked if held[h.id]), key=lambda h: -held[h.id])  # stable: rank order within
    return exact + [h for h in kept if not held.get(h.id)]


def search(store: Store, models: Models, query_text: str, limit: int = 10, project: str | None = None, *,
           since: float | None = None, until: float | None = None, exclude_ids: AbstractSet[int]=frozenset(),
           exclude_session: str | None = None, fusion: str | None = None, touch: bool = True,
           now: float | None = None) -> list[Hit]:
    """Best memories for `query_text`, newest-aware and importance-aware. `project=None` searches
    all projects. `since`/`until` bound creation time (unix seconds); a relative time phrase in the
    query ("yesterday", "last week") narrows it too. `touch` counts the hits as used (RFM)."""
    cfg = store.config.ranking
    if fusion:
        cfg = cfg.model_copy(update={"fusion": fusion})
    now = time.time() if now is None else now
    limit = max(1, int(limit))
    embedder = models.embedder if cfg.fusion != "fts" else None
    n = max(cfg.candidates, limit * 3) + len(exclude_ids)
    found = candidates(store, embedder, cfg, query_text, n, project, since, until, now)
    rows = [r for r in store.live_rows(found.fused)
            if r.id not in exclude_ids and (exclude_session is None or r.session_id != exclude_session)
            and in_scope(r.project, project)]
    if not rows:
        return []
    scored = rerank(models.cross_encoder, store.config.rerank.top_n, query_text,
                    score(rows, found, cfg, now, store.config.strength))
    return finish(store, embedder, scored, found, limit, touch, now)
