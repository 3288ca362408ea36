"""What stays of a forgotten memory: a tombstone that holds none of its content, so nothing brings it back.

A forget deletes every byte of a memory, and its event id goes to the `forgotten` ledger (a retried hook is a
no-op). But `recall import` makes its own event ids, and SessionEnd's recovery reads the transcript again: without
more, a forgotten prompt came back as a new memory, with its fact. So each forgotten memory leaves a tombstone, a
keyed hash of its project, kind and content (HMAC-SHA256 under a random key of the store, never the text), and
what a file restores (an import, a recovery) is checked against them first. A forgotten prompt leaves a second
one for its opening words: an answer quoting it comes back without the quote.

The key lives in the database (`tombstone_key`, one per owner on a shared server), the tombstones beside it;
written once for both backends.
"""

from __future__ import annotations

import hmac
import os
from typing import TYPE_CHECKING

from .base import content_hash

if TYPE_CHECKING:
    from ..records import MemoryDraft
    from .database import Database

QUOTE_CHARS = 60  # a prompt's opening, as an answer's quoted question (its first words) always holds it
QUOTE = "quote"  # the tombstone's kind for a forgotten prompt's opening


def memory_digest(kind: str, text: str, quoted: str = "") -> str:
    """A memory's content as the store deduplicates it (an answer with the question it answers)."""
    return content_hash(f"{quoted}\n{text}" if kind == "exchange" else text)


def opening(text: str) -> str:
    return " ".join(text.split()).lower()[:QUOTE_CHARS]


def _key(db: Database) -> bytes:
    with db.write():
        found = db.value(f"SELECT key FROM tombstone_key WHERE {db.dialect.mine}")
        if found is None:
            db.run("INSERT INTO tombstone_key(key) VALUES (?) ON CONFLICT DO NOTHING", (os.urandom(32),))
            found = db.value(f"SELECT key FROM tombstone_key WHERE {db.dialect.mine}")
    return bytes(found)


def _stone(key: bytes, project: str, kind: str, digest: str) -> str:
    return hmac.new(key, f"{project}\0{kind}\0{digest}".encode(), "sha256").hexdigest()


def bury(db: Database, ids: list[int], at: float) -> None:
    """Leave the tombstones of these memories, before they are deleted (inside the forget's transaction)."""
    where, args = db.dialect.in_list("id", ids)
    rows = db.all(f"SELECT project, kind, content_hash, text FROM memories WHERE {where}", args) if ids else []
    if not rows:
        return
    key = _key(db)
    stones = set()
    for project, kind, digest, text in rows:
        stones.add(_stone(key, project, kind, digest))
        if kind == "prompt":
            stones.add(_stone(key, project, QUOTE, content_hash(opening(text))))
    db.many(f"INSERT INTO tombstones(digest, forgotten_at) VALUES (?, ?) ON CONFLICT({db.dialect.owner_key}digest) "
            "DO NOTHING", [(stone, at) for stone in sorted(stones)])


def buried(db: Database, draft: MemoryDraft) -> bool:
    """Was this memory forgotten (what a file restores must not bring it back)? An answer whose question was
    forgotten loses the quote first (its meta's `prompt`), then is judged by what is left."""
    if not db.value(f"SELECT 1 FROM tombstones WHERE {db.dialect.mine} LIMIT 1"):
        return False
    key = _key(db)
    quoted = str(draft.meta.get("prompt") or "") if draft.kind == "exchange" else ""
    if quoted and _is_stone(db, _stone(key, draft.project, QUOTE, content_hash(opening(quoted)))):
        draft.meta.pop("prompt", None)
        quoted = ""
    return _is_stone(db, _stone(key, draft.project, draft.kind, memory_digest(draft.kind, draft.text, quoted)))


def _is_stone(db: Database, stone: str) -> bool:
    return db.value(f"SELECT 1 FROM tombstones WHERE digest = ? AND {db.dialect.mine}", (stone,)) is not None
