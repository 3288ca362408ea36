"""Candidates for a query from SQLite: FTS5 BM25 for the words, sqlite-vec for the meaning (behind the
worker's RAM copy of recent vectors, storage/ram.py)."""

from __future__ import annotations

from collections.abc import Sequence

import apsw

from ....shared.projects import GLOBAL_PROJECT
from ..base import CONVERSATION_KINDS, MEMORY_COLUMNS, marks
from ..term_frequency import MIN_MEMORIES
from .schema import FTS_TOKENIZE
from .state import SqliteState


def fts_phrase(term: str) -> str:
    """One term as an FTS5 phrase: quoted, so no FTS syntax can leak through."""
    return '"' + term.replace('"', '""') + '"'


def fts_expression(terms: Sequence[str], required: Sequence[str] | None = None) -> str | None:
    """FTS5 MATCH expression: the terms as phrases, OR-ed; with `required` (some of the terms), only
    what holds one of those matches, and every term still counts in its BM25 score."""
    either = " OR ".join(fts_phrase(t) for t in terms) or None
    if either is None or not required or set(required) >= set(terms):
        return either
    return f"({' OR '.join(fts_phrase(t) for t in required)}) AND ({either})"


_TURN_WALK = (f"SELECT id FROM memories WHERE session_id = ? AND project = ? AND kind IN ({marks(CONVERSATION_KINDS)}) "
              "AND created_at BETWEEN ? AND ? ")
_TURNS_BEFORE = _TURN_WALK + "AND NOT (created_at = ? AND id >= ?) ORDER BY created_at DESC, id DESC LIMIT ?"
_TURNS_FROM = _TURN_WALK + "AND NOT (created_at = ? AND id < ?) ORDER BY created_at, id LIMIT ?"


FIRST_ID_BUCKET = 3600.0  # seconds: a time window's first id is looked up once per project and hour
FIRST_IDS_KEPT = 64


class SqliteSearch(SqliteState):
    _vocabulary = None  # the text index's tokenizer, once a word is counted (_vocabulary_of_index)
    # --- words ----------------------------------------------------------------------------------

    def selective_terms(self, terms: list[str], project: str | None) -> list[str]:
        """The query terms a lexical match in `project` must hold one of: all of them, except on a big
        project, where the words most of its memories hold are not enough, and none when every one is that
        common (storage/term_frequency.py)."""
        with self.db.lock:
            return self.term_frequencies.selective(self._count_holding, terms, self.config.ranking.common_term_share,
                                                   project, key_of=lambda term: self._index_token(term) or term)

    def count_common_words(self) -> int:
        """Count, in each project big enough for the rule, the words (the index's tokens) that more than
        `ranking.common_term_share` of its memories may hold, into the cache selective_terms reads: the worker does it
        between prompts (term_frequency.WARM_EVERY_SECONDS), and counts a project again only once enough of it changed
        (RECOUNT_AFTER_CHANGE; until then its last counts are re-dated). Returns how many counts were taken."""
        share = self.config.ranking.common_term_share
        if share <= 0:
            return 0
        projects = self.db.all("SELECT project, count(*) FROM memories GROUP BY project HAVING count(*) >= ?",
                               (MIN_MEMORIES,))
        with self.db.lock:
            due: dict[str, int] = {}  # project -> its memories (and the global ones), for those to count
            for project, _own in projects:
                total = self._count_holding(project, None)
                last = self.term_frequencies.last_taken(project)
                if last is not None:
                    added = self.db.value("SELECT count(*) FROM memories WHERE id > ? AND project IN (?, ?)",
                                          (last[1], project, GLOBAL_PROJECT), default=0)
                    if self.term_frequencies.still_current(project, total, added):
                        continue
                due[project] = total
            if not due:
                return 0
            newest = self.db.value("SELECT max(id) FROM memories", default=0)
            everything = self._count_holding(None, None)
            counts: dict[str, dict[str | None, int]] = {project: {None: total} for project, total in due.items()}
            self._vocabulary_of_index()
            for token, anywhere in self.db.all("SELECT term, doc FROM temp.memories_fts_vocab WHERE doc > ?",
                                               (share * min(due.values()),)):
                wanted = [project for project, total in due.items() if anywhere > share * total]
                for project in [p for p in wanted if due[p] == everything]:  # every memory is this project's or
                    counts[project][token] = anywhere  # global: the index's own count is the project's
                wanted = [p for p in wanted if due[p] != everything]
                if wanted:  # one pass over the word's places serves every project (by token, not by MATCH: a stem
                    # is not always its own stem, "caus")
                    held = dict(self.db.all(
                        "SELECT memories.project, count(DISTINCT i.doc) FROM temp.memories_fts_instances AS i "
                        "CROSS JOIN memories ON memories.id = i.doc WHERE i.term = ? GROUP BY memories.project",
                        (token,)))
                    for project in wanted:
                        counts[project][token] = held.get(project, 0) + (
                            held.get(GLOBAL_PROJECT, 0) if project != GLOBAL_PROJECT else 0)
        for project, taken in counts.items():
            self.term_frequencies.taken(project, due[project], newest, taken)
        return sum(len(taken) for taken in counts.values())

    def _count_holding(self, project: str | None, term: str | None) -> int:
        """Memories of `project` (and global ones; all for None), holding `term` if one is given."""
        if term is None:
            if project is None:
                return self.db.value("SELECT count(*) FROM memories", default=0)
            return self.db.value("SELECT count(*) FROM memories WHERE project IN (?, ?)", (project, GLOBAL_PROJECT),
                                 default=0)
        if project is None:
            token = self._index_token(term)
            if token is not None:  # the index's own count (fts5vocab): 0.07 ms, where MATCH counted 0.2-1.3
                return self.db.value("SELECT doc FROM temp.memories_fts_vocab WHERE term = ?", (token,), default=0)
            return self.db.value("SELECT count(*) FROM memories_fts WHERE memories_fts MATCH ?", (fts_phrase(term),),
                                 default=0)
        return self.db.value("SELECT count(*) FROM memories_fts CROSS JOIN memories ON memories.id = memories_fts.rowid "
                             "WHERE memories_fts MATCH ? AND memories.project IN (?, ?)",
                             (fts_phrase(term), project, GLOBAL_PROJECT), default=0)

    def _index_token(self, term: str) -> str | None:
        """The one token the text index keeps for `term` (stemmed as memories_fts does), None when it makes more or
        fewer (then only a MATCH can count it)."""
        tokens = self._vocabulary_of_index()(term.encode("utf-8"), apsw.FTS5_TOKENIZE_QUERY, None)
        return tokens[0][2] if len(tokens) == 1 and isinstance(tokens[0][2], str) else None

    def _vocabulary_of_index(self):
        """The text index's tokenizer, with the index's vocabulary tables (temp.memories_fts_vocab: a token's memories;
        temp.memories_fts_instances: where it stands) made on first use: per connection, nothing written to the file."""
        if self._vocabulary is None:
            for table, kind in (("memories_fts_vocab", "row"), ("memories_fts_instances", "instance")):
                self.db.run(f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.{table} USING fts5vocab(main, memories_fts, "
                            f"'{kind}')")
            tokenizer, *options = FTS_TOKENIZE.split()
            self._vocabulary = self.db.conn.fts5_tokenizer(tokenizer, options)
        return self._vocabulary

    def lexical_candidates(self, terms: list[str], required: list[str] | None, n: int, project: str | None,
                           since: float | None, until: float | None) -> dict[int, float]:
        """memory id -> BM25 score (positive, higher is better) of the n best FTS5 matches among live
        memories: those holding any of `terms` (one of `required`, if given), scored by all of them. `required`
        empty (every term is common here) in a search of all time: those holding all of them, and those holding any
        only when too few do (within a time window FTS5 reads only the window's rows: there the second search would
        cost more than the first saves)."""
        if required == [] and len(terms) > 1 and since is None:
            every = self._matches(" AND ".join(fts_phrase(t) for t in terms), n, project, since, until)
            if len(every) >= n:
                return every
        expression = fts_expression(terms, required)
        return {} if expression is None else self._matches(expression, n, project, since, until)

    def _matches(self, expression: str, n: int, project: str | None, since: float | None,
                 until: float | None) -> dict[int, float]:
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
                first = self._first_id_from(project, since)
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

    def _knowledge_words(self, project: str, terms: Sequence[str], kinds: Sequence[str], limit: int) -> list[int]:
        expression = fts_expression(terms)
        if expression is None or not kinds:
            return []
        return [r[0] for r in self.db.all(
            f"SELECT k.id FROM knowledge_fts JOIN knowledge k ON k.id = knowledge_fts.rowid WHERE knowledge_fts MATCH ? "
            f"AND k.project = ? AND k.kind IN ({marks(kinds)}) "
            "ORDER BY bm25(knowledge_fts, 1.0, 0.6, 0.4) LIMIT ?", [expression, project, *kinds, limit])]

    def _first_id_from(self, project: str | None, since: float) -> int | None:
        """A lower bound of the ids created from `since` on: the smallest id created from the start of its hour,
        looked up once per project and hour (the lookup walks every index entry of the window: 0.3 ms a prompt at 10k
        memories). Still a bound later in the hour: new memories get larger ids, and a memory's created_at never
        changes."""
        hour = since - since % FIRST_ID_BUCKET
        key = (project, hour)
        first = self._first_ids.get(key)
        if first is None:
            first = self.db.value(
                "SELECT min(id) FROM memories WHERE project IN (?, ?) AND created_at >= ?" if project is not None
                else "SELECT min(id) FROM memories WHERE created_at >= ?",
                (project, GLOBAL_PROJECT, hour) if project is not None else (hour,))
            if first is not None:  # none yet: asked again, a memory may come
                if len(self._first_ids) >= FIRST_IDS_KEPT:
                    self._first_ids.clear()
                self._first_ids[key] = first
        return first

    # --- turns --------------------------------------------------------------------------------------

    def _conversation_rows(self, memories: list, before: int, after: int, span: float) -> list[tuple]:
        """(n, side, vector, *MEMORY_COLUMNS) rows of Memories.conversations. In process, each side is its own walk of
        the session's index that reads ids only and stops at the rows taken; the rows are then read once, by id (4
        memories: 0.19 ms, against 0.42 for one statement of nested subqueries that carried every column through
        each)."""
        picked: list[tuple[int, int, int]] = []  # (n, side, id)
        for n, memory in enumerate(memories):
            at = memory.created_at.timestamp()
            same = (memory.session_id, memory.project, *CONVERSATION_KINDS)
            before_it = self.db.all(_TURNS_BEFORE, (*same, at - span, at, at, memory.id, before))
            from_it = self.db.all(_TURNS_FROM, (*same, at, at + span, at, memory.id, after))
            picked += [(n, 0, row[0]) for row in before_it] + [(n, 1, row[0]) for row in from_it]
        ids = list(dict.fromkeys(memory_id for _, _, memory_id in picked))
        if not ids:
            return []
        where, args = self.db.dialect.in_list("id", ids)
        rows = {row[0]: row for row in self.db.all(f"SELECT {MEMORY_COLUMNS} FROM memories WHERE {where}", args)}
        return [(n, side, None, *rows[memory_id]) for n, side, memory_id in picked if memory_id in rows]

    def indexed_texts(self, project: str) -> list[tuple[str, str, str]]:
        """(text, context_before, context_after) of a project's live memories: what the text index holds
        (for the rank-bm25 comparison of `recall bench locomo`)."""
        return self.db.all("SELECT text, context_before, context_after FROM memories WHERE project = ? "
                           "AND superseded_by IS NULL", (project,))

    # --- meaning (storage/ram.py searches; these are its sqlite-vec side) -------------------------------

    # sqlite-vec scans every vector of a search's scope: the worker keeps a big store's older vectors in RAM too, in
    # int8 (recent_vectors.py), up to CAPABILITIES.archive_up_to memories (~100 MB); beyond, all-time searches scan
    # the index.

    def _vector_feed(self):
        return self.vectors

    def _stale_feed_errors(self) -> tuple:
        return (apsw.SQLError,)

    def _index_nearest(self, vectors: list[bytes], n: int, project: str | None, since: float | None,
                       until: float | None, kinds: tuple[str, ...] | None = None) -> list[dict[int, float]]:
        """sqlite-vec cannot filter by kind (the caller checks kinds); the global memories of a project's search
        are a second search."""
        found = []
        with self.db.lock:
            for vector in vectors:
                nearest = self._vector_index().nearest(vector, n, project, since, until)
                if project is not None and project != GLOBAL_PROJECT and self._has_global():
                    nearest.update(self._vector_index().nearest(vector, n, GLOBAL_PROJECT, None, None))
                found.append(nearest)
        return found

    def _index_vectors(self, ids: list[int]) -> dict[int, bytes]:
        if not self.vectors:
            return {}
        found: dict[int, bytes] = {}
        with self.db.lock:
            for memory_id in ids:
                try:
                    vector = self.vectors.get(memory_id)
                except apsw.SQLError:  # the table is created with the first embedding
                    return found
                if vector is not None:
                    found[memory_id] = vector
        return found

    def similar_earlier(self, vector: bytes, n: int, project: str, since: float, until: float) -> dict[int, float]:
        """The n nearest stored vectors of a project created in [since, until], read from the index itself
        (also vectors this transaction just wrote): near-duplicate supersession (core/jobs.py)."""
        return self._vector_index().nearest(vector, n, project, since, until)
