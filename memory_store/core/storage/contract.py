"""The storage contract: the state every store holds and every hook a backend supplies, in one ABC.

The concerns that both backends do alike (memories.py, sessions.py, sharing.py, places.py, upkeep.py,
ram.py) and each backend's own parts (sqlite/, postgres/) all derive from `StoreContract`, so each
sees the same declared attributes and hooks; `Store` (store.py) puts the shared concerns together and
a backend class completes it. Every hook below is abstract: a backend that leaves one out cannot be
instantiated (tests/test_architecture.py checks both; tests/test_storage_contract.py runs the same checks
on each). Code outside storage/ asks
`capabilities()` what a store can do, never which backend it is.
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from ...shared.logs import JsonLog
from .base import Capabilities, Row
from .knowledge import KnowledgeTable
from .term_frequency import TermFrequencies
from .ties import TieTable

if TYPE_CHECKING:
    from ...shared.paths import DataPaths
    from ..config import Config
    from ..records import Memory
    from .database import Database
    from .recent_vectors import RecentVectors, VectorFeed


class StoreContract(ABC):
    backend: str  # "sqlite" or "postgres": for display only (`capabilities()` says what a store can do)

    def __init__(self, paths: DataPaths, config: Config, db: Database, owner: str = "") -> None:
        self.paths = paths
        self.config = config  # replaced as a whole when config.json changes (Recall.use_config)
        self.db = db
        self.owner = owner  # who writes here: the local user (SQLite), the connecting role (PostgreSQL)
        self.log = JsonLog(paths.log_file, "store")
        self.term_frequencies = TermFrequencies()  # shared with the worker's background store
        self.paths_seen: set[tuple[str, str]] = set()  # (project, path) pairs noted by this process (places.py)
        self.recent_vectors: RecentVectors | None = None  # the worker's RAM copy (ram.py: keep_recent_vectors)
        self._global_checked: tuple[float, bool] | None = None  # (when, whether) global memories exist (ram.py)
        self.vector_error: str | None = None  # why vectors cannot be stored here (None: they can)
        self.read_only = False  # opened from a data dir that cannot be written (searched, never written)
        # The parts with a storage of their own: what memories teach (core/knowledge/) and what they are tied to.
        self.knowledge = KnowledgeTable(db, self._knowledge_words)
        self.ties = TieTable(db)

    # --- one request's reads ---------------------------------------------------------------------------

    _scope = threading.local()  # per thread: the worker answers hooks on several threads at once

    @contextmanager
    def request_scope(self) -> Iterator[None]:
        """Within it, a memory's conversation and vector are read from the database once: the gate asks for
        the same ones many times while it weighs a prompt's candidates (a round trip each on a server).
        Nothing is kept after the request."""
        if getattr(self._scope, "cache", None) is not None:
            yield
            return
        self._scope.cache = {}
        try:
            yield
        finally:
            self._scope.cache = None

    def _request_cache(self, name: str) -> dict | None:
        cache = getattr(self._scope, "cache", None)
        return None if cache is None else cache.setdefault((id(self), name), {})

    def _rows(self, sql: str, args: Any = (), skip: int = 0) -> list:
        """Row objects of a SELECT of MEMORY_COLUMNS; with `skip`, (the first `skip` columns, Row) pairs."""
        if skip:
            return [(r[0] if skip == 1 else r[:skip], Row(*r[skip:])) for r in self.db.all(sql, args)]
        return [Row(*r) for r in self.db.all(sql, args)]

    # --- what the store is -------------------------------------------------------------------------

    @abstractmethod
    def capabilities(self) -> Capabilities:
        """What this store can do and how it is best used (shared with others, engine, read sizes)."""

    @abstractmethod
    def close(self) -> None: ...

    @abstractmethod
    def is_mine(self, memory: Memory) -> bool:
        """May this connection change or forget the memory?"""

    # --- words --------------------------------------------------------------------------------------

    @abstractmethod
    def selective_terms(self, terms: list[str], project: str | None) -> list[str]:
        """The query terms a lexical match in `project` must hold one of (storage/term_frequency.py); none (an
        empty list) when every one is common there."""

    @abstractmethod
    def count_common_words(self) -> int:
        """Count ahead of time what selective_terms would count slowly (the worker calls it between prompts); returns
        how many counts were taken (0 where counts are cheap)."""

    @abstractmethod
    def lexical_candidates(self, terms: list[str], required: list[str] | None, n: int, project: str | None,
                           since: float | None, until: float | None) -> dict[int, float]:
        """memory id -> BM25 score (higher is better) of the n best matches among live memories of `project`
        and the global ones: those holding any of `terms` (one of `required`, if given), scored by all. An empty
        `required` (every term common) lets a backend first match what holds them all (SQLite does, over all time)."""

    @abstractmethod
    def indexed_texts(self, project: str) -> list[tuple[str, str, str]]:
        """(text, context_before, context_after) of a project's live memories."""

    @abstractmethod
    def _conversation_rows(self, memories: list[Memory], before: int, after: int, span: float) -> list[tuple]:
        """(n, side, vector, *MEMORY_COLUMNS) of the turns before (side 0) and from (side 1) each memories[n]
        (each side's time range ends at the memory, ties broken by id, so that the session's index is walked
        from there and no further than the rows taken)."""

    # --- meaning ------------------------------------------------------------------------------------

    @abstractmethod
    def vectors_ready(self) -> bool:
        """Vectors can be stored here."""

    @abstractmethod
    def dense_ready(self, embedder: Any) -> bool:
        """Vectors of this embedder's model can be searched."""

    @abstractmethod
    def model_mismatch(self, embedder: Any) -> str | None:
        """Why this worker's embedding model cannot be used with the vectors stored here (None: it can)."""

    @abstractmethod
    def similar_earlier(self, vector: bytes, n: int, project: str, since: float, until: float) -> dict[int, float]:
        """The n nearest vectors of a project created in [since, until], this transaction's writes included."""

    @abstractmethod
    def _vector_feed(self) -> VectorFeed | None:
        """The change log the worker's RAM copy of recent vectors follows (None: no vectors here)."""

    @abstractmethod
    def _index_nearest(self, vectors: list[bytes], n: int, project: str | None, since: float | None,
                       until: float | None, kinds: tuple[str, ...] | None = None) -> list[dict[int, float]]:
        """The index's n nearest of each vector, among `project` (and global memories); `kinds` may be
        ignored (the caller checks kinds)."""

    @abstractmethod
    def _index_vectors(self, ids: list[int]) -> dict[int, bytes]: ...

    @abstractmethod
    def _stale_feed_errors(self) -> tuple[type[BaseException], ...]:
        """Errors of a feed that is being rebuilt (RAM is skipped meanwhile)."""

    # --- embeddings ---------------------------------------------------------------------------------

    @abstractmethod
    def vector_model(self) -> str | None:
        """The model whose vectors the store holds (None: none yet)."""

    @abstractmethod
    def vector_count(self) -> int: ...

    @abstractmethod
    def pending_embeddings(self) -> int:
        """Memories waiting for their embedding."""

    @abstractmethod
    def unembedded_ids(self, most: int) -> list[int]:
        """Up to `most` of the memories waiting for their embedding (read only)."""

    @abstractmethod
    def ensure_vector_index(self, model: str, dim: int) -> None:
        """Ready the store for this model's vectors (a store holding another model's waits for reindex)."""

    @abstractmethod
    def reset_vector_index(self, model: str, dim: int) -> None:
        """Drop every vector and queue every memory for embedding with `model`."""

    @abstractmethod
    def embedding_batch(self, size: int) -> list[tuple[int, str, float, str]]:
        """The next memories to embed: (id, project, created_at, text)."""

    @abstractmethod
    def save_embeddings(self, rows: list[tuple[int, str, float, bytes]], done_ids: list[int], model: str,
                        supersede: Callable[[list], Any] | None = None) -> list[tuple[int, str, float, bytes]]:
        """Store vectors of `model`, take `done_ids` off the queue, let `supersede(added)` run in the same
        transaction; returns the rows added."""

    # --- health -------------------------------------------------------------------------------------

    @abstractmethod
    def location(self) -> str:
        """Where the store is, fit to print (a file, or a URL without its password)."""

    @abstractmethod
    def integrity_problems(self) -> list[str]: ...

    @abstractmethod
    def schema_status(self) -> tuple[int, int]:
        """(the schema version in the database, the one this recall writes)."""

    @abstractmethod
    def text_index_problem(self) -> str | None: ...

    @abstractmethod
    def vector_extension(self) -> tuple[bool, str]:
        """(usable, what it is or why not) of the vector search extension."""

    @abstractmethod
    def vector_consistency(self) -> dict | None: ...

    @abstractmethod
    def rebuild_derived(self) -> list[str]:
        """Rebuild the derived indexes; returns what was done. Never deletes a memory."""

    @abstractmethod
    def checkpoint(self) -> bool: ...

    @abstractmethod
    def size_bytes(self) -> int: ...

    @abstractmethod
    def set_damaged_aside(self, error: str) -> str | None:
        """Move a damaged database out of the way (a new one starts); returns where it went, or None."""

    # --- what one shared concern offers another (upkeep.py, ram.py) --------------------------------

    @abstractmethod
    def _rebuild_context(self, session_id: str, project: str) -> None:
        """The session's context columns written again (after a turn's text changed or left)."""

    @abstractmethod
    def _has_global(self) -> bool:
        """Are there global memories (searched with every project's)?"""

    # --- what forgetting and moving change besides the rows (upkeep.py, places.py) -----------------

    @abstractmethod
    def _forget_derived(self, ids: list[int]) -> None: ...

    # --- knowledge (knowledge.py) --------------------------------------------------------------------

    @abstractmethod
    def _knowledge_words(self, project: str, terms: Sequence[str], kinds: Sequence[str], limit: int) -> list[int]:
        """Ids of the project's knowledge items of these kinds that hold any of `terms`, best first."""

    @abstractmethod
    def _delete_receipts_of(self, ids: list[int]) -> None: ...

    @abstractmethod
    def _after_forget(self) -> None: ...

    @abstractmethod
    def _after_purge(self) -> None: ...

    @abstractmethod
    def _moved_to_project(self, ids: list[int], project: str) -> None:
        """Derived data keyed by project follows its memories."""
