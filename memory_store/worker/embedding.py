"""The worker's background work: load the model (never on a request), hold the recent vectors in RAM, then in the gaps
between hooks read what new memories teach and are tied to, embed them, count the common words of big projects ahead
of the prompts that need them, and prune trivial memories now and then. Without a model, the reading goes on."""

from __future__ import annotations

import time
import traceback

from ..api import BackgroundWork
from ..core.embedding.embed import Embedder, EmbeddingUnavailable, load_embedder
from ..core.storage import StorageUnavailable
from ..core.storage.term_frequency import WARM_EVERY_SECONDS
from ..shared import cores

EMBED_AFTER_QUIET_SECONDS = 0.3  # background embedding waits for this long without requests…
EMBED_AT_LEAST_EVERY_SECONDS = 2.0  # …but never starves under a steady stream of hooks
PRUNE_EVERY_SECONDS = 900  # trivial memories that left the hot tier are pruned this often (core/retrieval/strength.py)
RECENT_VECTORS_MARGIN_DAYS = 1  # RAM holds the warm window's vectors and this much more (recent_vectors.py)
STORAGE_RETRY_SECONDS = 5.0  # background work waits this long when the shared database cannot be reached


def run(worker) -> None:
    """Load the model, then keep the queues empty (what memories teach, their embeddings)."""
    embedder = _load(worker)
    background = worker.recall.background_work()  # its own connection: it never blocks a request
    try:
        if embedder is not None:
            keep_a_core_for_queries(worker, embedder)
            worker.recall.use_embedder(embedder)
            worker.model_state = "ready"
            worker.log.info("model_ready", model=embedder.name, dim=embedder.dim, int8=embedder.int8)
            while not worker.stop_event.is_set():
                try:
                    _prepare_vectors(worker, background, embedder)
                    break
                except StorageUnavailable:
                    worker.stop_event.wait(STORAGE_RETRY_SECONDS)
        _rounds(worker, background, embedder)
    except Exception as exc:
        worker.failed("embed_failed", f"{type(exc).__name__}: {exc}", trace=traceback.format_exc(limit=3))
    finally:
        background.close()


def _load(worker) -> Embedder | None:
    """The embedding model, or None (said in the worker's state and log) when it cannot be loaded."""
    try:
        return load_embedder(worker.config.embedding, worker.paths.home / "models", worker.log)
    except EmbeddingUnavailable as exc:
        worker.model_state = f"unavailable: {exc}"
        worker.prepared = True  # nothing to prepare without a model
        worker.log.warning("model_unavailable", reason=str(exc))
    except Exception as exc:
        worker.model_state = f"unavailable: {type(exc).__name__}: {exc}"
        worker.prepared = True
        worker.failed("model_failed", str(exc))
    return None


def keep_a_core_for_queries(worker, embedder) -> None:
    """The last CPU the worker may use runs query embeddings only, and the worker's request threads run on the
    others (`worker.query_core`; Linux, 2 CPUs or more). A prompt waits for its query's embedding (~5 ms of
    onnxruntime) while its request thread stores the prompt and searches its words. Left to the scheduler, on a
    2-core machine both threads shared one core for part of most prompts: every hand-over of the interpreter lock
    wakes the other thread, and a woken thread is placed beside the one that woke it. The model's 5 ms of CPU then
    took 8 ms; pinned apart, 5, and the worker's part of a prompt was 0.9-1.5 ms shorter (paired workers, 100 prompts
    each, the same answers). Background embedding and the worker's other threads run anywhere."""
    allowed = cores.allowed()
    if not worker.config.worker.query_core or len(allowed) < 2:
        return
    query_cpu = max(allowed)
    embedder.keep_queries_on(query_cpu)
    worker.request_cpus = allowed - {query_cpu}
    worker.log.info("query_core", cpu=query_cpu)


def _prepare_vectors(worker, background: BackgroundWork, embedder: Embedder) -> None:
    recent = background.prepare_vectors(embedder, worker.config.tiers.warm_window_days + RECENT_VECTORS_MARGIN_DAYS)
    if recent is not None:
        worker.log.info("recent_vectors_loaded", vectors=len(recent.row_of), mb=round(recent.nbytes() / 1e6, 1))


def _rounds(worker, background: BackgroundWork, embedder: Embedder | None) -> None:
    last_round = time.monotonic()
    last_prune, last_counts = 0.0, -WARM_EVERY_SECONDS
    while not worker.stop_event.is_set():
        # Embed in the gaps between hooks: a burst of hooks (a turn's tool calls) should
        # not share two cores with the model; a memory that is needed sooner is embedded
        # on the spot by the search that wants it.
        now = time.monotonic()
        quiet = now - worker.last_work
        if quiet < EMBED_AFTER_QUIET_SECONDS and now - last_round < EMBED_AT_LEAST_EVERY_SECONDS:
            worker.stop_event.wait(EMBED_AFTER_QUIET_SECONDS - quiet)
            continue
        last_round = now
        try:
            if now - last_counts > WARM_EVERY_SECONDS:  # first thing, and then whether or not there is a backlog
                last_counts = now
                background.count_common_words()
            done = background.learn_round()  # what new memories teach first: it is embedded with them
            done += background.embed_round(embedder) if embedder is not None else 0
            if not done and now - last_prune > PRUNE_EVERY_SECONDS:
                last_prune = now
                background.prune(time.time())
            worker.prepared = True
        except StorageUnavailable:  # the shared database is away: try again later
            worker.stop_event.wait(STORAGE_RETRY_SECONDS)
            continue
        if not done:
            worker.work_event.wait(timeout=5.0)
            worker.work_event.clear()
