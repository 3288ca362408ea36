"""Candidates for a query from PostgreSQL: full-text search scored as BM25, pgvector for the meaning.

PostgreSQL ranks text with ts_rank, which knows nothing of how rare a word is; recall's fusion was
tuned on FTS5's BM25. So the GIN index finds the matches and the score is FTS5's BM25 computed in
the same statement: per query word its IDF (from how many memories hold it), its count in each
column weighted like FTS5's (text 1, the turns before 0.5, after 0.25: ts_rank_cd of that word alone
returns exactly that sum), and the memory's length.

Vectors: a search inside a time window (the warm tier) or a small project reads the filtered rows
exactly (filter first, then rank); a long all-time search of a big project uses the HNSW index,
which with a filter returns too few rows unless it keeps scanning (`hnsw.iterative_scan`, set per
connection). Every vector search is unprepared (connection.py): its plan must follow its filter.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence

from ....shared.projects import GLOBAL_PROJECT
from ..base import CONVERSATION_KINDS, MEMORY_COLUMNS, marks
from .state import PgState

K1, B = 1.2, 0.75  # BM25's constants, FTS5's values
MATCH_BUDGET = 2_000  # matches scored per query at most: beyond, the newest (see lexical_candidates)
EXACT_SEARCH_MAX = 2_000  # a project with at most this many memories is searched without the HNSW index
STATS_TTL_SECONDS = 300.0  # how long the table's size and mean length are reused
COMMON_COUNT = 50  # how many memories hold a word before its count is worth keeping a while (term_frequency.py)


def tsquery_literal(lexeme: str) -> str:
    """A lexeme as a tsquery operand: quoted, so no syntax leaks through."""
    return "'" + lexeme.replace("\\", "\\\\").replace("'", "''") + "'"


def phrase(lexemes: list[tuple[str, int]]) -> str:
    """(lexeme, position) of one query word, as a tsquery phrase (what phraseto_tsquery builds)."""
    ordered = sorted(lexemes, key=lambda item: item[1])
    parts = [tsquery_literal(ordered[0][0])]
    for (lexeme, position), (_, before) in zip(ordered[1:], ordered):
        parts.append(f"<{position - before}> {tsquery_literal(lexeme)}" if position - before != 1 else
                     f"<-> {tsquery_literal(lexeme)}")
    return parts[0] if len(parts) == 1 else "(" + " ".join(parts) + ")"


def scope(where: list[str], args: list, project: str | None, since: float | None, until: float | None,
          prefix: str = "") -> tuple[list[str], list]:
    """The conditions of a search's scope, added to `where`/`args`: the project's memories and the global ones
    (every project's for None), created in [since, until]."""
    if project is not None:
        where.append(f"{prefix}project IN (?, ?)")
        args += [project, GLOBAL_PROJECT]
    if since is not None:
        where.append(f"{prefix}created_at >= ?")
        args.append(since)
    if until is not None:
        where.append(f"{prefix}created_at <= ?")
        args.append(until)
    return where, args


def from_vector_send(raw: bytes) -> bytes:
    """pgvector's binary form (2-byte dimension, 2 unused bytes, big-endian float32s) as recall's vector bytes
    (native float32s). Reading this is far cheaper than the text form of 384 numbers."""
    import numpy as np

    return np.frombuffer(bytes(raw)[4:], dtype=">f4").astype(np.float32).tobytes()


class PgSearch(PgState):
    # --- turns --------------------------------------------------------------------------------------

    def _conversation_rows(self, memories: list, before: int, after: int, span: float) -> list[tuple]:
        """(n, side, vector, *MEMORY_COLUMNS) rows of Memories.conversations, in one statement whose text does not
        change with how many memories are asked about (the server plans it once, from the arrays)."""
        # No vector with the turns: reading them along cost more than the few pairs the gate asks for later.
        common = (f"SELECT NULL AS vector, {MEMORY_COLUMNS} FROM memories m "
                  f"WHERE m.session_id = a.session_id AND m.project = a.project "
                  f"AND m.kind IN ({marks(CONVERSATION_KINDS)}) AND m.created_at BETWEEN a.at - ? AND a.at + ? ")
        sql = ("SELECT a.n, c.* FROM unnest(?::bigint[], ?::text[], ?::text[], ?::float8[]) WITH ORDINALITY "
               "AS a(id, session_id, project, at, n) CROSS JOIN LATERAL ("
               f"(SELECT 0 AS side, * FROM ({common}AND (m.created_at < a.at OR (m.created_at = a.at AND m.id < a.id)) "
               "ORDER BY m.created_at DESC, m.id DESC LIMIT ?) AS e) UNION ALL "
               f"(SELECT 1 AS side, * FROM ({common}AND (m.created_at > a.at OR (m.created_at = a.at AND m.id >= a.id)) "
               "ORDER BY m.created_at, m.id LIMIT ?) AS l)) AS c")
        arrays = [[m.id for m in memories], [m.session_id for m in memories], [m.project for m in memories],
                  [m.created_at.timestamp() for m in memories]]
        rows = self.db.all(sql, [*arrays, *CONVERSATION_KINDS, span, span, before, *CONVERSATION_KINDS, span, span,
                                 after])
        return [(n - 1, *rest) for n, *rest in rows]

    # --- words ----------------------------------------------------------------------------------

    def _word_lexemes(self, terms: Sequence[str]) -> dict[str, list[tuple[str, int]]]:
        """term -> its (lexeme, position) under the english configuration (stopwords have none)."""
        rows = self.db.all("SELECT t.term, u.lexeme, u.positions[1] FROM unnest(?::text[]) AS t(term), "
                           "unnest(to_tsvector('english', plain(t.term))) AS u", (list(terms),))
        found: dict[str, list[tuple[str, int]]] = {}
        for term, lexeme, position in rows:
            found.setdefault(term, []).append((lexeme, position))
        return found

    def selective_terms(self, terms: list[str], project: str | None) -> list[str]:
        """The query terms a lexical match in `project` must hold one of (storage/term_frequency.py)."""
        return self.term_frequencies.selective(self._count_holding, terms, self.config.ranking.common_term_share,
                                               project)

    def _count_holding(self, project: str | None, term: str | None) -> int:
        """(schema.py's estimated_count: the planner's estimate for a common word, an exact count for a rare one)"""
        query = "phraseto_tsquery('english', plain(?))" if term is not None else "NULL::tsquery"
        return self.db.value(f"SELECT estimated_count({query}, ?)", [*([term] if term is not None else []), project],
                             default=0)

    def _table_stats(self) -> tuple[float, float]:
        """(memories, mean length in words) of what this role can read, kept STATS_TTL_SECONDS. A big table
        is estimated: the planner's row count and a sample's mean length."""
        cached = self._stats_cache.get("table")
        now = time.monotonic()
        if cached and now - cached[0] < STATS_TTL_SECONDS:
            return cached[1]
        estimate = self.db.value("SELECT reltuples FROM pg_class WHERE oid = 'memories'::regclass", default=-1)
        if estimate is None or estimate < 50_000:
            total, mean = self.db.row("SELECT count(*), avg(doc_len) FROM memories")
        else:
            percent = min(100.0, 100.0 * 5_000 / estimate)
            total = estimate
            mean = self.db.value(f"SELECT avg(doc_len) FROM memories TABLESAMPLE SYSTEM ({percent:.4f})")
        stats = (float(total or 0), float(mean or 1.0) or 1.0)
        self._stats_cache["table"] = (now, stats)
        return stats

    def _holding(self, lexemes: list[str]) -> dict[str, int]:
        """lexeme -> how many memories hold it (estimated when common: schema.py's estimated_count); common
        lexemes' counts are kept STATS_TTL_SECONDS (a rare one is quick to count again, and may be one memory's
        secret)."""
        now = time.monotonic()
        counts, missing = {}, []
        for lexeme in lexemes:
            cached = self._stats_cache.get(("df", lexeme))
            if cached and now - cached[0] < STATS_TTL_SECONDS:
                counts[lexeme] = cached[1]
            else:
                missing.append(lexeme)
        if missing:
            rows = self.db.all("SELECT l, estimated_count(l::tsquery, NULL) FROM unnest(?::text[]) AS l",
                               ([tsquery_literal(x) for x in missing],))
            for lexeme, (_, count) in zip(missing, rows):
                counts[lexeme] = count
                if count >= COMMON_COUNT:
                    self._stats_cache[("df", lexeme)] = (now, count)
        return counts

    def _knowledge_words(self, project: str, terms: Sequence[str], kinds: Sequence[str], limit: int) -> list[int]:
        lexemes = sorted({lexeme for found in self._word_lexemes(terms).values() for lexeme, _ in found})
        if not lexemes or not kinds:
            return []
        match = " | ".join(tsquery_literal(lexeme) for lexeme in lexemes)
        return [r[0] for r in self.db.all(
            f"SELECT id FROM knowledge WHERE fts @@ ?::tsquery AND project = ? AND kind IN ({marks(kinds)}) "
            "ORDER BY ts_rank(fts, ?::tsquery) DESC, id DESC LIMIT ?",
            [match, project, *kinds, match, limit])]

    def lexical_candidates(self, terms: list[str], required: list[str] | None, n: int, project: str | None,
                           since: float | None, until: float | None) -> dict[int, float]:
        """memory id -> BM25 of the n best full-text matches among live memories (see the module's doc)."""
        by_term = self._word_lexemes(terms)
        if not by_term:
            return {}
        total, mean_length = self._table_stats()
        holding = self._holding(sorted({lexeme for found in by_term.values() for lexeme, _ in found}))
        # FTS5's IDF: log((N - n + 0.5) / (n + 0.5)), at least a millionth. A word most memories hold (IDF at that
        # floor) orders nothing beside a rarer one, so it is not scored; where its matches are many (a big store)
        # it is not matched either: thousands of rows to score for no order, and a query of such words only has
        # no lexical candidates there (the dense search still reaches every memory).
        idf = {x: max(1e-6, math.log((max(total, n) - n + 0.5) / (n + 0.5))) for x, n in holding.items()}
        telling = {t: found for t, found in by_term.items() if any(idf[x] > 1e-6 for x, _ in found)}
        if sum(holding.values()) > MATCH_BUDGET:
            if not telling:
                return {}
            by_term = telling
        match = " | ".join(phrase(by_term[t]) for t in terms if t in by_term)
        needed = [phrase(by_term[t]) for t in (required or []) if t in by_term]
        if needed and set(required or ()) < set(terms):
            match = f"({' | '.join(needed)}) & ({match})"
        lexemes = sorted({lexeme for found in by_term.values() for lexeme, _ in found
                          if idf[lexeme] > 1e-6 or not telling})
        a, b, c = (float(w) for w in self.config.ranking.fts_column_weights)
        where, args = scope(["m.superseded_by IS NULL"], [], project, since, until, "m.")
        # The rows scored: the matches (by the GIN index), or, for words many memories hold, the newest MATCH_BUDGET
        # memories of the scope (by the time index: ~10 ms), not every match (a second at a million memories); the
        # dense search still reaches every memory. Each row's tsvector is read out of TOAST once (`|| ''`), not
        # once per word scored.
        if sum(holding[x] for x in lexemes) > MATCH_BUDGET:
            source = (f"SELECT m.id, m.doc_len, m.fts || ''::tsvector AS fts FROM memories m WHERE {' AND '.join(where)} "
                      f"ORDER BY m.created_at DESC LIMIT {MATCH_BUDGET}")
            source_args, match_outside = args, True
        else:
            source = (f"SELECT m.id, m.doc_len, m.fts || ''::tsvector AS fts FROM memories m "
                      f"WHERE m.fts @@ ?::tsquery AND {' AND '.join(where)} OFFSET 0")
            source_args, match_outside = [match, *args], False
        # BM25 in the statement: a query word's weighted count in a memory (text 1, turns before 0.5, after 0.25,
        # FTS5's column weights) is what ts_rank_cd returns for that word alone, C code over the tsvector.
        scored = range(len(lexemes))
        counts = ", ".join(f"ts_rank_cd(?::float4[], m.fts, ?::tsquery) AS t{i}" for i in scored)
        saturation = f"{K1} * ({1 - B} + {B} * m.doc_len / ?)"
        score = " + ".join(f"? * f.t{i} * {K1 + 1} / (f.t{i} + {saturation})" for i in scored)
        sql = (f"SELECT m.id, {score} AS score FROM ({source}) AS m CROSS JOIN LATERAL (SELECT {counts} OFFSET 0) AS f "
               + ("WHERE m.fts @@ ?::tsquery " if match_outside else "") + "ORDER BY score DESC, m.id DESC LIMIT ?")
        column_weights = [0.0, c, b, a]  # ts_rank_cd's order: D, C, B, A
        score_args = [arg for i in scored for arg in (idf[lexemes[i]], mean_length)]
        count_args = [arg for i in scored for arg in (column_weights, tsquery_literal(lexemes[i]))]
        rows = self.db.all(sql, [*score_args, *source_args, *count_args, *([match] if match_outside else []), n])
        return {memory_id: float(score) for memory_id, score in rows}

    def indexed_texts(self, project: str) -> list[tuple[str, str, str]]:
        return self.db.all("SELECT text, context_before, context_after FROM memories WHERE project = ? "
                           "AND superseded_by IS NULL", (project,))

    # --- meaning --------------------------------------------------------------------------------

    def _project_size(self, project: str) -> int:
        cached = self._stats_cache.get(("size", project))
        now = time.monotonic()
        if cached and now - cached[0] < STATS_TTL_SECONDS:
            return cached[1]
        size = self.db.value("SELECT count(*) FROM memories WHERE project IN (?, ?)", (project, GLOBAL_PROJECT),
                             default=0)
        self._stats_cache[("size", project)] = (now, size)
        return size

    def _vector_search(self, vectors: list[bytes], n: int, project: str | None, since: float | None,
                       until: float | None, kinds: tuple[str, ...] | None = None,
                       live: bool = True) -> list[dict[int, float]]:
        """For each query vector, memory id -> cosine similarity of its n nearest (one statement for all)."""
        import numpy as np

        model = self.team()[0]
        if not model or not vectors:
            return [{} for _ in vectors]
        where, args = scope(["embedding IS NOT NULL", "embedding_model = ?"] + (["superseded_by IS NULL"] if live else []),
                            [model], project, since, until)
        if kinds:
            where.append(f"kind IN ({marks(kinds)})")
            args += list(kinds)
        exact = project is not None and (since is not None or self._project_size(project) <= EXACT_SEARCH_MAX)
        # `+ 0` keeps the planner off the HNSW index: an exact scan of what the filter leaves.
        distance = "(embedding <=> q.v) + 0" if exact else "embedding <=> q.v"
        queries = [np.frombuffer(v, dtype=np.float32) for v in vectors]
        sql = (f"SELECT q.i, m.id, m.d FROM unnest(%b::vector[]) WITH ORDINALITY AS q(v, i) "
               f"CROSS JOIN LATERAL (SELECT id, {distance} AS d FROM memories WHERE {' AND '.join(where)} "
               f"ORDER BY {distance} LIMIT %s) AS m").replace("?", "%s")
        rows = self.db.native(sql, [queries, *args, int(n)])
        found: list[dict[int, float]] = [{} for _ in vectors]
        for i, memory_id, d in sorted(rows, key=lambda r: r[2]):
            if len(found[i - 1]) < n:
                found[i - 1][memory_id] = 1.0 - float(d)
        return found

    def similar_earlier(self, vector: bytes, n: int, project: str, since: float, until: float) -> dict[int, float]:
        return self._vector_search([vector], n, project, since, until, live=False)[0]

    # --- storage/ram.py's server side ---------------------------------------------------------------

    def count_common_words(self) -> int:
        return 0  # the server's statistics and index count words fast enough (schema.py: estimated_count)

    def _vector_feed(self):
        return self.feed

    def _stale_feed_errors(self) -> tuple:
        return ()  # the feed is a table, never rebuilt under a reader

    def _index_nearest(self, vectors: list[bytes], n: int, project: str | None, since: float | None,
                       until: float | None, kinds: tuple[str, ...] | None = None) -> list[dict[int, float]]:
        return self._vector_search(vectors, n, project, since, until, kinds)

    def _index_vectors(self, ids: list[int]) -> dict[int, bytes]:
        """(read once per request: Store.request_scope)"""
        cache = self._request_cache("vectors")
        if cache is None:
            return self._fetch_vectors(ids)
        found = {i: cache[i] for i in ids if cache.get(i) is not None}
        missing = [i for i in ids if i not in cache]
        if missing:
            fetched = self._fetch_vectors(missing)
            cache.update({i: fetched.get(i) for i in missing})
            found.update(fetched)
        return found

    def _fetch_vectors(self, ids: list[int]) -> dict[int, bytes]:
        model = self.team()[0] if ids else None
        if not model:
            return {}
        rows = self.db.all("SELECT id, vector_send(embedding) FROM memories WHERE id = ANY(?) "
                           "AND embedding IS NOT NULL AND embedding_model = ?", [list(ids), model])
        return {memory_id: from_vector_send(raw) for memory_id, raw in rows}

