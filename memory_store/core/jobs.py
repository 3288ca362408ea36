"""Background work on the store: reading what queued memories teach and are tied to, embedding what is queued (and
superseding near-duplicates as their vectors arrive), re-embedding everything with another model, repairing derived
indexes.

The worker runs `embed_pending` in the gaps between hooks; the CLI runs it after an import
when no worker is there. The model runs outside the store's lock, so searches and captures
are not held up by a long backfill.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from .capture import ties
from .capture.hook_events import interrupted_turn_id
from .knowledge import commands, extract
from .storage import Store

if TYPE_CHECKING:
    from .embedding.embed import Embedder
    from .storage import Row

DEDUP_WINDOW_SECONDS = 30 * 86400  # near-duplicates are looked for this far back
LEARN_BATCH = 50  # memories read per round (their observations and ties written in one transaction)
FAILURE_LOOKBACK_SECONDS = 1800.0  # a command's failures this long before it worked are its procedure's notes
_WORDS = re.compile(r"[^\W_]+")


def learn_pending(store: Store, batch: int = LEARN_BATCH, max_batches: int | None = None) -> int:
    """Read what queued memories teach (core/knowledge/extract.py) and what they are tied to (capture/ties.py), from
    what each memory holds, and write both in place of any earlier reading; returns how many memories were read.
    The reading happens outside the write transaction: a hook waits for the writes only."""
    if not store.read_only:
        store.knowledge.read_with(extract.READING)
    done = batches = 0
    while max_batches is None or batches < max_batches:
        ids = store.knowledge.queued(batch)
        if not ids:
            break
        read = []
        for memory in store.get(ids):
            try:
                asked, failures = _turn_of(store, memory)
                items = [] if _interrupted(store, memory) else extract.observations(memory, asked, failures)
                read.append((memory, items, ties.of_memory(memory)))
            except Exception as exc:  # noqa: BLE001  one memory recall cannot read stops no other reading
                store.log.error("memory_unreadable", memory=memory.id, error=f"{type(exc).__name__}: {exc}"[:300])
        with store.db.write():
            for memory, items, tied in read:
                at = memory.created_at.timestamp()
                store.knowledge.replace(memory.id, memory.project, memory.session_id, at, items)
                store.ties.replace(memory.id, memory.project, memory.session_id, memory.kind, at, tied)
            store.knowledge.read(ids)
        done += len(ids)
        batches += 1
    return done


def _interrupted(store: Store, memory) -> bool:
    """Is `memory` the answer of a turn an interrupt ended (router.on_interrupt)? It states nothing settled."""
    prompt_id = memory.meta.get("prompt_id")
    return memory.kind in ("exchange", "response") and bool(prompt_id) and bool(memory.session_id) and \
        store.has_event(interrupted_turn_id(memory.session_id, str(prompt_id)))


def _turn_of(store: Store, memory) -> tuple[str, tuple[str, ...]]:
    """(the question of the turn a memory belongs to, the failures of its command's programs just before it). Not for
    a memory shared with the team: what its owner asked and met is the owner's (storage/sharing.py)."""
    if memory.visibility != "private" or not memory.session_id or memory.kind not in ("tool", "exchange"):
        return "", ()
    at = memory.created_at.timestamp()
    asked = next(iter(store.earlier_in_session(memory.session_id, memory.project, "prompt", 0.0, at, 1)), "")
    if not memory.text.startswith("Bash `"):
        return asked, ()
    programs = commands.programs_in(memory.text[6:].split("`", 1)[0])
    failures = tuple(text for text in store.earlier_in_session(memory.session_id, memory.project, "error",
                                                                at - FAILURE_LOOKBACK_SECONDS, at, 3)
                     if (command := text.split("`", 2)[1] if text.count("`") >= 2 else "")
                     and commands.programs_in(command) & programs)
    return asked, failures


def embed_pending(store: Store, embedder: Embedder | None, batch: int | None = None, max_batches: int | None = None,
                  progress: Callable[[int], object] | None = None) -> int:
    """Embed queued memories in batches; returns how many were embedded."""
    if not embedder or not store.vectors_ready():
        return 0
    store.ensure_vector_index(embedder.name, embedder.dim)
    if not store.dense_ready(embedder):
        return 0  # another model's index: `recall reindex` decides, never a silent mix
    batch = batch or store.config.worker.embed_batch
    done = batches = 0
    while max_batches is None or batches < max_batches:
        rows = store.embedding_batch(batch)
        items = store.knowledge.to_embed(batch)  # what the memories taught (storage/knowledge.py), in the same call
        if not rows and not items:
            break
        vectors = embedder.embed([text for _, _, _, text in rows] + [text for _, text in items])
        if rows:
            store.save_embeddings([(i, project, at, v) for (i, project, at, _), v in zip(rows, vectors)],
                                  [r[0] for r in rows], embedder.name,
                                  supersede=lambda added: supersede_near_duplicates(store, added))
        if items:
            store.knowledge.set_vectors([(item_id, v) for (item_id, _), v in zip(items, vectors[len(rows):])])
        done += len(rows)
        batches += 1
        if progress and rows:
            progress(len(rows))
    return done


def supersede_near_duplicates(store: Store, added: list[tuple[int, str, float, bytes]]) -> None:
    """A recent memory that says the same as an older one of its kind in the same project, from the month
    before it, up to formatting only (case, spacing, punctuation, markup), supersedes that one: the
    newest wording is the one searched, the old one stays readable. Candidates come from the vector
    index (cosine >= ranking.dedup_similarity); the words decide, because embeddings barely see what
    tells near-identical statements apart (an identifier, a number: `alembic upgrade head  # a1b2` and
    `… # c3d4` are two events). An answer is compared with its question, so two "Done." replies to
    two prompts never fold. Runs inside `save_embeddings`' transaction."""
    threshold = store.config.ranking.dedup_similarity
    if threshold >= 1:
        return
    recent = time.time() - DEDUP_WINDOW_SECONDS
    for memory_id, project, created_at, vector in added:
        if created_at < recent:
            continue  # imported history: exact duplicates are merged at capture, that is enough
        mine = store.memory_row(memory_id)
        if mine is None:  # forgotten meanwhile
            continue
        near = store.similar_earlier(vector, 4, project, created_at - DEDUP_WINDOW_SECONDS, created_at)
        key = formatting_key(mine)
        older = [i for i, similarity in near.items() if i < memory_id and similarity >= threshold
                 and (other := store.memory_row(i)) is not None and formatting_key(other) == key]
        store.supersede(older, memory_id, mine.kind)


def formatting_key(row: Row) -> str:
    """What a memory says with its formatting removed (an answer together with its question)."""
    import json

    text = row.text
    if row.kind == "exchange":
        text = f"{json.loads(row.meta or '{}').get('prompt', '')} {text}"
    return " ".join(_WORDS.findall(text.lower()))


def reindex(store: Store, embedder: Embedder, progress: Callable[[int], object] | None = None) -> int:
    """Read every memory's knowledge and ties again (an improved reading reaches old memories), drop the vector index
    and re-embed every memory with `embedder`."""
    store.knowledge.requeue()
    learn_pending(store)
    store.reset_vector_index(embedder.name, embedder.dim)
    return embed_pending(store, embedder, progress=progress)


def repair(store: Store) -> list[str]:
    """Rebuild derived data and reset file permissions; returns what was done (never deletes a memory)."""
    done = store.rebuild_derived()
    for path in (store.paths.db, store.paths.log_file):
        if path.exists():
            os.chmod(path, 0o600)
    os.chmod(store.paths.home, 0o700)
    done.append("reset file permissions")
    return done


PRUNE_BATCH = 2000  # memories looked at per pruning round


def prune_trivial(store: Store, now: float) -> int:
    """Delete the trivial interactions that have left the hot tier (core/retrieval/strength.py); returns how many."""
    from .retrieval import strength

    cfg = store.config
    if not cfg.strength.prune_trivial:
        return 0
    before = now - cfg.tiers.hot_window_hours * 3600
    looked_at = store.prune_candidates(before, PRUNE_BATCH)
    doomed = [m for m in looked_at if strength.prunable(m, cfg.strength)]
    gone = store.forget([m.id for m in doomed]) if doomed else []
    if gone:
        store.count_pruned([m.kind for m in gone], now)
        store.log.info("pruned", memories=len(gone))
    if looked_at:
        store.advance_prune_cursor(looked_at[-1].id)
    return len(gone)
