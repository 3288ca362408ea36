"""The worker's work between hooks, through the API: embedding the queue, the RAM copy of recent vectors, word
counts for big projects and pruning, on a store of its own whose connection never holds up a hook's request."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from ..core import jobs
from ..core.config import Config
from ..core.storage import open_store
from ..core.storage.term_frequency import TermFrequencies
from ..shared.paths import DataPaths

if TYPE_CHECKING:
    from ..core.embedding.embed import Embedder
    from ..core.storage.recent_vectors import RecentVectors


class BackgroundWork:
    """One worker's background rounds. Word counts are shared with the requests' store (the counts are not secret:
    core/storage/term_frequency.py); vectors it embeds reach the requests through the shared RAM copy."""

    def __init__(self, paths: DataPaths, config: Config, word_counts: TermFrequencies,
                 share_recent_vectors: Callable[[RecentVectors], None]) -> None:
        self.store = open_store(paths, config)
        self.store.term_frequencies = word_counts
        self._share_recent_vectors = share_recent_vectors  # Recall.keep_recent_vectors: the requests search them

    def prepare_vectors(self, embedder: Embedder, days: float) -> RecentVectors | None:
        """Ready the store for the model's vectors and load the last `days` of them into RAM, searched by the
        requests from now on; None where no vectors are kept."""
        self.store.ensure_vector_index(embedder.name, embedder.dim)
        recent = self.store.recent_vectors_cache(days, embedder.dim)
        if recent is not None:
            self._share_recent_vectors(recent)
        return recent

    def count_common_words(self) -> int:
        """Count the common words of big projects ahead of the prompts that need them; returns how many."""
        return self.store.count_common_words()

    def learn_round(self) -> int:
        """Read what one batch of new memories teaches and is tied to (core/jobs.py); returns how many were read."""
        return jobs.learn_pending(self.store, max_batches=1)

    def embed_round(self, embedder: Embedder) -> int:
        """Embed one batch of the queue; returns how many were embedded (0: the queue is empty)."""
        done = jobs.embed_pending(self.store, embedder, max_batches=1)
        if done:
            self.store.sync_recent_vectors()
        return done

    def prune(self, now: float) -> int:
        """Delete trivial interactions that left the hot tier (core/retrieval/strength.py); returns how many."""
        return jobs.prune_trivial(self.store, now)

    def close(self) -> None:
        self.store.close()
