"""Candidates for a query from SQLite: FTS5 BM25 for the words, sqlite-vec (or the worker's RAM copy of
recent vectors) for the meaning."""

from __future__ import annotations

from typing import TYPE_CHECKING

import apsw

from ....shared.projects import GLOBAL_PROJECT

if TYPE_CHECKING:
    from .recent_vectors import RecentVectors  # numpy: only the worker loads it


def fts_phrase(term: str) -> str:
    """One term as an FTS5 phrase: quoted, so no FTS syntax can leak through."""
    return '"' + term.replace('"', '""') + '"'


def fts_expression(terms: list[str], required: list[str] | None = None) -> str | None:
    """FTS5 MATCH expression: the terms as phrases, OR-ed; with `required` (some of the terms), only
    what holds one of those matches, and every term still counts in its BM25 score."""
    either = " OR ".join(fts_phrase(t) for t in terms) or None
    if either is None or not required or set(required) >= set(terms):
        return either
    return f"({' OR '.join(fts_phrase(t) for t in required)}) AND ({either})"


class SqliteSearch:
    recent_vectors: "RecentVectors | None" = None  # set by keep_recent_vectors

    # --- words ----------------------------------------------------------------------------------

    def selective_terms(self, terms: list[str], project: str | None) -> list[str]:
        """The query terms a lexical match in `project` must hold one of: all of them, except on a big
        project, where the words most of its memories hold are not enough (storage/term_frequency.py)."""
        with self.db.lock:
            return self.term_frequencies.selective(self._count_holding, terms, self.config.ranking.common_term_share,
                                                   project)

    def _count_holding(self, project: str | None, term: str | None) -> int:
        """Memories of `project` (and global ones; all for None), holding `term` if one is given."""
        if term is None:
            if project is None:
                return self.db.value("SELECT count(*) FROM memories", default=0)
            return self.db.value("SELECT count(*) FROM memories WHERE project IN (?, ?)", (project, GLOBAL_PROJECT),
                                 default=0)
        if project is None:
            return self.db.value("SELECT count(*) FROM memories_fts WHERE memories_fts MATCH ?", (fts_phrase(term),),
                                 default=0)
        return self.db.value("SELECT count(*) FROM memories_fts CROSS JOIN memories ON memories.id = memories_fts.rowid "
                             "WHERE memories_fts MATCH ? AND memories.project IN (?, ?)",
                             (fts_phrase(term), project, GLOBAL_PROJECT), default=0)

    def lexical_candidates(self, terms: list[str], required: list[str] | None, n: int, project: str | None,
                           since: float | None, until: float | None) -> dict[int, float]:
        """memory id -> BM25 score (positive, higher is better) of the n best FTS5 matches among live
        memories: those holding any of `terms` (one of `required`, if given), scored by all of them."""
        expression = fts_expression(terms, required)
        if expression is None:
            return {}
        weights = ", ".join(str(float(w)) for w in self.config.ranking.fts_column_weights)
        # CROSS JOIN pins the FTS index as the outer loop: with a plain JOIN SQLite walked the
        # project's rows and probed the index once per row (400 ms instead of 3 ms at 10k memories).
        sql = (f"SELECT memories.id, -bm25(memories_fts, {weights}) FROM memories_fts "
               "CROSS JOIN memories ON memories.id = memories_fts.rowid "
               "WHERE memories_fts MATCH ? AND memories.superseded_by IS NULL")
        args: list = [expression]
        if project is not None:
            sql += " AND memories.project IN (?, ?)"
            args.extend((project, GLOBAL_PROJECT))
        with self.db.lock:
            if since is not None:
                # Ids grow with time (live capture), so a time window is also a rowid range, which FTS5
                # applies inside the index instead of scoring every older match first.
                first = self.db.value(
                    "SELECT min(id) FROM memories WHERE project IN (?, ?) AND created_at >= ?" if project is not None
                    else "SELECT min(id) FROM memories WHERE created_at >= ?",
                    (project, GLOBAL_PROJECT, since) if project is not None else (since,))
                if first is None:
                    return {}
                sql += " AND memories_fts.rowid >= ? AND memories.created_at >= ?"
                args.extend((first, since))
            if until is not None:
                sql += " AND memories.created_at <= ?"
                args.append(until)
            sql += f" ORDER BY bm25(memories_fts, {weights}) LIMIT ?"
            args.append(n)
            return {memory_id: score for memory_id, score in self.db.all(sql, args)}

    def indexed_texts(self, project: str) -> list[tuple[str, str, str]]:
        """(text, context_before, context_after) of a project's live memories: what the text index holds
        (for the rank-bm25 comparison of `recall bench locomo`)."""
        return self.db.all("SELECT text, context_before, context_after FROM memories WHERE project = ? "
                           "AND superseded_by IS NULL", (project,))

    # --- meaning --------------------------------------------------------------------------------

    def nearest(self, vector: bytes, n: int, project: str | None, since: float | None,
                until: float | None) -> dict[int, float]:
        """memory id -> cosine similarity of the n nearest vectors (the project's and the global ones)."""
        with self.db.lock:
            recent = self._synced_recent_vectors()
            if recent is not None and recent.covers(since):
                found = recent.nearest(vector, n, project, since, until)
            else:
                found = self.vectors.nearest(vector, n, project, since, until)
            if project is not None and project != GLOBAL_PROJECT:  # the user's global memories join every project
                if self._has_global():
                    found.update(self.vectors.nearest(vector, n, GLOBAL_PROJECT, None, None))
            return found

    def _has_global(self) -> bool:
        return self.db.one("SELECT 1 FROM memories WHERE project = ? LIMIT 1", (GLOBAL_PROJECT,)) is not None

    def nearest_each(self, vectors: list[bytes], n: int, project: str | None, since: float | None,
                     until: float | None, kinds: tuple[str, ...] | None = None) -> list[dict[int, float]]:
        """`nearest` for several vectors; of these kinds only when the vectors are in RAM (sqlite-vec
        cannot filter by kind: the caller checks the kinds of what it gets)."""
        with self.db.lock:
            recent = self._synced_recent_vectors()
            if recent is not None and recent.covers(since):
                return recent.nearest_each(vectors, n, project, since, until, kinds)
            return [self.vectors.nearest(v, n, project, since, until) for v in vectors]

    def similar_earlier(self, vector: bytes, n: int, project: str, since: float, until: float) -> dict[int, float]:
        """The n nearest stored vectors of a project created in [since, until], read from the index itself
        (also vectors this transaction just wrote): near-duplicate supersession (core/jobs.py)."""
        return self.vectors.nearest(vector, n, project, since, until)

    def vector_of(self, memory_id: int) -> bytes | None:
        """A memory's stored embedding; None when it has none yet (or there is no vector table yet)."""
        if not self.vectors:
            return None
        with self.db.lock:
            recent = self._synced_recent_vectors()
            if recent is not None:
                found = recent.get(memory_id)
                if found is not None:
                    return found
            try:
                return self.vectors.get(memory_id)
            except apsw.SQLError:  # the table is created with the first embedding
                return None

    def vectors_of(self, memory_ids) -> dict[int, bytes]:
        """The stored embeddings of these memories (those that have one)."""
        found = {}
        for memory_id in memory_ids:
            vector = self.vector_of(memory_id)
            if vector is not None:
                found[memory_id] = vector
        return found

    # --- the worker's RAM copy of recent vectors ---------------------------------------------------

    def recent_vectors_cache(self, days: float, dim: int) -> "RecentVectors | None":
        """A RAM copy of the vectors of the last `days` (recent_vectors.py), loaded now, searched by this
        store from now on; None without a vector table."""
        if not self.vectors:
            return None
        from .recent_vectors import RecentVectors

        recent = RecentVectors(days, dim)
        self.keep_recent_vectors(recent)
        return recent

    def keep_recent_vectors(self, recent: "RecentVectors") -> None:
        """Search recent vectors in RAM through `recent` (shared with another store of this process)."""
        with self.db.lock:
            recent.sync(self.vectors, force=True)
        self.recent_vectors = recent

    def sync_recent_vectors(self) -> None:
        """Bring the RAM copy up to date now (after this process wrote vectors)."""
        if self.recent_vectors is not None and self.vectors:
            with self.db.lock:
                self.recent_vectors.sync(self.vectors, force=True)

    def _synced_recent_vectors(self) -> "RecentVectors | None":
        recent = self.recent_vectors
        if recent is None or not recent.loaded:
            return None
        try:
            recent.sync(self.vectors)
        except apsw.SQLError:  # the vector table is being rebuilt
            return None
        return recent
