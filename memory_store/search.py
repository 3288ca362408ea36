"""Hybrid search: FTS5 BM25 and sqlite-vec candidates, fused, then re-scored.

Why FTS5 and not rank-bm25 for the archive: FTS5 answers in a few milliseconds from an index
that SQLite keeps in step with every insert and weights a memory's own text above its
neighbouring turns; rank-bm25 scores every document per query (~150 ms at 100k) and has no
column weights (LoCoMo R@10 0.735 against 0.798). `recall bench locomo --methods bm25`
reruns that comparison.
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
    # CROSS JOIN pins the FTS index as the outer loop: with a plain JOIN SQLite walked the
    # project's rows and probed the index once per row (400 ms instead of 3 ms at 10k memories).
    sql = (f"SELECT memories.id, -bm25(memories_fts, {weights}) FROM memories_fts "
           "CROSS JOIN memories ON memories.id = memories_fts.rowid "
           "WHERE memories_fts MATCH ? AND memories.superseded_by IS NULL")
    args: list = [expression]
    if project is not None:
        sql += " AND memories.project = ?"
        args.append(project)
    if since is not None:
        # Ids grow with time (live capture), so a time window is also a rowid range, which FTS5
        # applies inside the index instead of scoring every older match first.
        with store.lock:
            first = store.conn.execute(
                "SELECT min(id) FROM memories WHERE project = ? AND created_at >= ?" if project is not None
                else "SELECT min(id) FROM memories WHERE created_at >= ?",
                (project, since) if project is not None else (since,),
            ).fetchone()[0]
        if first is None:
            return {}
        sql += " AND memories_fts.rowid >= ? AND memories.created_at >= ?"
        args.extend((first, since))
    if until is not None:
        sql += " AND memories.created_at <= ?"
        args.append(until)
    sql += f" ORDER BY bm25(memories_fts, {weights}) LIMIT ?"
    args.append(n)
    with store.lock:
        return {memory_id: score for memory_id, score in store.conn.execute(sql, args)}


def embed_query(store: "Store", text: str) -> bytes | None:
    """The query's vector, or None without dense search (no model, no index for it)."""
    embedder = store.embedder
    return embedder.embed_query(text) if store.dense_ready(embedder) else None


def dense_candidates(store: "Store", vector: bytes | None, n: int, project: str | None, since: float | None,
                     until: float | None) -> dict[int, float]:
    """memory id -> cosine similarity of the n nearest vectors ({} without a query vector)."""
    if vector is None:
        return {}
    with store.lock:
        return store.vectors.nearest(vector, n, project, since, until)


def similarity_of(store: "Store", row, query_vector: bytes) -> float:
    """Cosine similarity of a memory to the query; one still waiting for its embedding is embedded
    on the spot, so the similarity threshold applies to every memory alike."""
    with store.lock:
        stored = store.vectors.get(row.id)
    if stored is None:
        stored = store.embedder.embed([row.text])[0]
    return store.embedder.similarity(stored, query_vector)


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


def rerank(store: "Store", query_text: str, scored: list) -> list:
    """With a cross-encoder configured, reorder the best `rerank.top_n` candidates by its scores. They
    keep a score above the rest (1 + the cross-encoder score scaled to 0-1) so scores stay ordered."""
    encoder = store.cross_encoder
    if encoder is None or len(scored) < 2:
        return scored
    head, tail = scored[: store.config.rerank.top_n], scored[store.config.rerank.top_n:]
    raw = encoder.scores(query_text, [row.text for _, row in head])
    low, high = min(raw), max(raw)
    spread = (high - low) or 1.0
    head = sorted(((1.0 + (value - low) / spread, row) for value, (_, row) in zip(raw, head)),
                  key=lambda pair: -pair[0])
    best_tail = max((score for score, _ in tail), default=0.0)
    return head + [(min(score, best_tail), row) for score, row in tail]


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

    query_vector = embed_query(store, query_text) if cfg.fusion != "fts" else None
    lexical = lexical_candidates(store, query, n, project, since, until) if cfg.fusion != "dense" else {}
    dense = dense_candidates(store, query_vector, n, project, since, until)
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
    scored = rerank(store, query_text, scored)
    top = scored[:limit]
    if touch:
        store.touch([row.id for _, row in top], now)
    hits = []
    for score, row in top:
        similarity = dense.get(row.id)
        if similarity is None and query_vector is not None:
            similarity = similarity_of(store, row, query_vector)
        hits.append(row.hit(score, similarity))
    return hits
