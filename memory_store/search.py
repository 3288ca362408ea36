"""Hybrid search: FTS5 BM25 and sqlite-vec candidates, fused, then re-scored.

Why FTS5 and not rank-bm25 for the archive: FTS5 answers in well under a millisecond from an
index that SQLite keeps in step with every insert, while rank-bm25 rebuilds its statistics
in memory and scores every document per query (~150 ms at 100k). rank-bm25 is used where
the candidate set is small and already in memory (the hot tier, see tiers.py).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from . import ranking
from .models import Hit

if TYPE_CHECKING:
    from .store import Store


def lexical_candidates(store: "Store", query: ranking.Query, n: int, project: str | None,
                       since: float | None, until: float | None) -> dict[int, float]:
    """memory id -> BM25 score (positive, higher is better) of the n best FTS5 matches."""
    expression = query.fts
    if not expression:
        return {}
    weights = ", ".join(str(float(w)) for w in store.config.ranking.fts_column_weights)
    sql = (f"SELECT memories.id, -bm25(memories_fts, {weights}) FROM memories_fts "
           "JOIN memories ON memories.id = memories_fts.rowid "
           "WHERE memories_fts MATCH ? AND memories.superseded_by IS NULL")
    args: list = [expression]
    if project is not None:
        sql += " AND memories.project = ?"
        args.append(project)
    if since is not None:
        sql += " AND memories.created_at >= ?"
        args.append(since)
    if until is not None:
        sql += " AND memories.created_at <= ?"
        args.append(until)
    sql += f" ORDER BY bm25(memories_fts, {weights}) LIMIT ?"
    args.append(n)
    with store.lock:
        return {memory_id: score for memory_id, score in store.conn.execute(sql, args)}


def dense_candidates(store: "Store", text: str, n: int, project: str | None, since: float | None,
                     until: float | None) -> tuple[dict[int, float], bytes | None]:
    """(memory id -> cosine similarity of the n nearest vectors, the query vector), when the model
    and the index are ready; ({}, None) otherwise."""
    embedder = store.embedder
    if not store.dense_ready(embedder):
        return {}, None
    vector = embedder.embed_query(text)
    with store.lock:
        return store.vectors.nearest(vector, n, project, since, until), vector


def similarity_of(store: "Store", memory_id: int, query_vector: bytes) -> float | None:
    """Cosine similarity of a stored memory to the query (None while it waits for its embedding)."""
    with store.lock:
        stored = store.vectors.get(memory_id)
    return None if stored is None else store.embedder.similarity(stored, query_vector)


def session_scores(rows, fused: dict[int, float], top: int) -> dict[str, float]:
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


def run_search(store: "Store", query_text: str, limit: int, project: str | None, *, since=None, until=None,
               exclude_ids=frozenset(), exclude_session=None, fusion=None, touch=True, now=None) -> list[Hit]:
    from .store import _MEMORY_COLUMNS, _Row

    cfg = store.config.ranking
    if fusion:
        cfg = cfg.model_copy(update={"fusion": fusion})
    now = time.time() if now is None else now
    query = ranking.parse_query(query_text, now, cfg)
    limit = max(1, int(limit))
    n = max(cfg.candidates, limit * 3) + len(exclude_ids)

    lexical = lexical_candidates(store, query, n, project, since, until) if cfg.fusion != "dense" else {}
    dense, query_vector = dense_candidates(store, query_text, n, project, since, until) if cfg.fusion != "fts" else ({}, None)
    window = query.window
    if window is not None and cfg.date_weight > 0:
        # A named time ("in July 2022") also gets candidates of its own: weak words such as
        # "where" or "travel" are strong inside the right weeks. BM25 and cosine scores are
        # comparable across both passes (same index statistics), so the lists simply merge.
        start = max(window.start, since) if since is not None else window.start
        end = min(window.end, until) if until is not None else window.end
        if cfg.fusion != "dense":
            lexical.update(lexical_candidates(store, query, n, project, start, end))
        if query_vector is not None:
            with store.lock:
                dense.update(store.vectors.nearest(query_vector, n, project, start, end))
    fused = ranking.fuse(lexical, dense, cfg)
    if not fused:
        return []

    ids = list(fused)
    with store.lock:
        rows = [
            _Row(*r) for r in store.conn.execute(
                f"SELECT {_MEMORY_COLUMNS} FROM memories WHERE id IN ({','.join('?' * len(ids))}) "
                "AND superseded_by IS NULL",
                ids,
            )
        ]
    rows = [r for r in rows if r.id not in exclude_ids and (exclude_session is None or r.session_id != exclude_session)]
    if project is not None:
        rows = [r for r in rows if r.project == project]
    if not rows:
        return []

    session_support = session_scores(rows, fused, cfg.session_top) if cfg.session_weight > 0 else {}
    max_uses = max(r.seen_count - 1 + r.access_count for r in rows)
    buckets = cfg.temporal_bucket_weights
    scored = []
    for row in rows:
        age = now - row.created_at
        score = fused[row.id] + cfg.session_weight * session_support.get(row.session_id, 0.0)
        score += cfg.recency_weight * ranking.recency(age, cfg.recency_decay_days)
        last_use = max(row.created_at, row.last_accessed or 0.0)
        score += cfg.priority_weight * ranking.rfm_priority(
            now - last_use, row.seen_count - 1 + row.access_count, max_uses, row.importance, cfg
        )
        if window is not None:
            if window.start <= row.created_at <= window.end:
                score += cfg.date_weight
        elif query.asks_about_time:
            score += cfg.temporal_weight * buckets.get(ranking.age_bucket(age), 0.0)
        scored.append((score, row))
    scored.sort(key=lambda pair: (-pair[0], -pair[1].created_at))
    top = scored[:limit]
    if touch:
        store.touch([row.id for _, row in top], now)
    hits = []
    for score, row in top:
        similarity = dense.get(row.id)
        if similarity is None and query_vector is not None:
            similarity = similarity_of(store, row.id, query_vector)
        hits.append(row.hit(score, similarity))
    return hits
