"""`Store`: the one storage interface core code talks to (capture, gate, search, jobs, forget, and the
shells through the API).

What both backends do alike is written once in the concern mixins (memories.py, sessions.py,
sharing.py, places.py, upkeep.py, ram.py); what each does its own way is declared here and implemented in sqlite/
and postgres/.
tests/test_storage_contract.py runs the same checks against both.
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from contextlib import contextmanager

from .memories import Memories
from .places import Places
from .ram import RamVectors
from .sessions import Sessions
from .sharing import Sharing
from .upkeep import Upkeep


class Store(Memories, Sessions, Sharing, Places, Upkeep, RamVectors, ABC):
    backend: str  # "sqlite" or "postgres"
    vector_error: str | None = None  # why vectors cannot be stored here (None: they can)
    DAMAGE: tuple = ()  # errors that mean the database itself is damaged (the worker then sets it aside)
    read_only: bool = False  # opened from a data dir that cannot be written (searched, never written)

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    @abstractmethod
    def close(self) -> None: ...

    # --- one request's reads ---------------------------------------------------------------------------

    _scope = threading.local()  # per thread: the worker answers hooks on several threads at once

    @contextmanager
    def request_scope(self):
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

    def model_mismatch(self, embedder) -> str | None:
        """Why this worker's embedding model cannot be used with the vectors stored here (None: it can)."""
        return None

    def set_damaged_aside(self, error: str) -> str | None:
        """Move a damaged database out of the way (a new one starts); returns where it went, or None."""
        return None

    # --- words --------------------------------------------------------------------------------------

    @abstractmethod
    def selective_terms(self, terms: list[str], project: str | None) -> list[str]:
        """The query terms a lexical match in `project` must hold one of (storage/term_frequency.py); none (an
        empty list) when every one is common there."""

    def count_common_words(self) -> int:
        """Count ahead of time what selective_terms would count slowly (the worker calls it between prompts); returns
        how many counts were taken. Nothing to do where counts are cheap."""
        return 0

    @abstractmethod
    def lexical_candidates(self, terms: list[str], required: list[str] | None, n: int, project: str | None,
                           since: float | None, until: float | None) -> dict[int, float]:
        """memory id -> BM25 score (higher is better) of the n best matches among live memories of `project`
        and the global ones: those holding any of `terms` (one of `required`, if given), scored by all. An empty
        `required` (every term common) lets a backend first match what holds them all (SQLite does, over all time)."""

    @abstractmethod
    def indexed_texts(self, project: str) -> list[tuple[str, str, str]]:
        """(text, context_before, context_after) of a project's live memories."""

    # --- meaning ------------------------------------------------------------------------------------

    @abstractmethod
    def vectors_ready(self) -> bool:
        """Vectors can be stored here."""

    @abstractmethod
    def dense_ready(self, embedder) -> bool:
        """Vectors of this embedder's model can be searched."""

    @abstractmethod
    def similar_earlier(self, vector: bytes, n: int, project: str, since: float, until: float) -> dict[int, float]:
        """The n nearest vectors of a project created in [since, until], this transaction's writes included."""

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
                        supersede=None) -> list[tuple[int, str, float, bytes]]:
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

    # --- what forgetting removes besides the rows (storage/upkeep.py) ---------------------------------

    @abstractmethod
    def _forget_derived(self, ids: list[int]) -> None: ...

    @abstractmethod
    def _delete_receipts_of(self, ids: list[int]) -> None: ...

    @abstractmethod
    def _after_forget(self) -> None: ...

    @abstractmethod
    def _after_purge(self) -> None: ...
