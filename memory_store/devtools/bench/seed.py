"""Filling a store for the benchmarks, on either backend, fast enough for a million memories.

`seed_store` writes synthetic memories (a developer vocabulary, spread over a year, oldest first,
80% in the measured project, sessions of 40 memories with each turn's neighbours as its context, real
embeddings of a pool of texts reused with a little noise) straight into the backend's tables: SQLite rows
in large transactions (FTS5 and the vector table follow), PostgreSQL rows by binary COPY as the member role
that will search them, its HNSW index built once at the end. Capture's own path (`record_many`) stores
~2,000 memories a second in SQLite and a few hundred on a server: right for hooks, too slow to make 1M.

`BenchDatabase` makes a throwaway database on a PostgreSQL server for one run: created with `recall team
init` and one member role, dropped afterwards (it needs an administrator's URL).
"""

from __future__ import annotations

import hashlib
import os
import random
import secrets
import time
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, cast
from urllib.parse import urlsplit, urlunsplit

if TYPE_CHECKING:
    from ...core.storage.sqlite import SqliteStore

SUBJECTS = ["the deploy script", "the cache layer", "the login page", "the CI pipeline", "the billing job",
            "the search index", "the API gateway", "the migration", "the test suite", "the docker image",
            "the websocket server", "the payment webhook", "the cron worker", "the feature flag", "the README",
            "the rate limiter", "the auth middleware", "the analytics export", "the mobile build", "the S3 bucket"]
VERBS = ["fails on", "was moved to", "now reads from", "needs", "times out against", "was refactored into",
         "depends on", "logs errors about", "retries", "caches", "was rolled back after", "is configured by"]
OBJECTS = ["Postgres 16", "port 8443", "the staging cluster", "Redis", "a new env var", "the old schema",
           "OAuth tokens", "nightly batches", "the canary flag", "src/app/main.py", "config/settings.toml",
           "three retries", "the EU region", "a 30 second timeout", "pytest -x", "the vendor SDK", "a mutex",
           "GitHub Actions", "the queue orders-v2", "feature/checkout-v2"]
TAILS = ["", " because the tests were flaky", " after the outage on Tuesday", " as we decided last sprint",
         " (see the incident notes)", " to cut latency", " per the security review", " until the next release"]


def synthetic_text(rng: random.Random) -> str:
    return f"{rng.choice(SUBJECTS).capitalize()} {rng.choice(VERBS)} {rng.choice(OBJECTS)}{rng.choice(TAILS)}."


# Sentences per memory by kind when sizes must be realistic (`recall bench size`): a prompt is a line or
# two, an answer's summary and a tool call with its trimmed output run to several hundred characters.
REALISTIC_SENTENCES = {"prompt": (1, 3), "exchange": (4, 9), "tool": (5, 10), "error": (3, 6)}


SEED_DAYS = 365  # 100k memories in a year is a heavy user (~270 a day); the warm tier holds a week
CONTEXT_TURNS = 2
BATCH = 5000


def synthetic_memories(count: int, project: str, realistic: bool, embedder, rng: random.Random):
    """Batches of dicts (project, session_id, kind, text, created_at, importance, context_before,
    context_after, vector bytes), oldest first."""
    import numpy as np

    pool_texts = list({synthetic_text(rng) for _ in range(4000)})[:min(2000, count)]
    pool = np.frombuffer(b"".join(embedder.embed(pool_texts)), dtype=np.float32).reshape(len(pool_texts), -1)
    now = time.time()
    batch: list[dict] = []
    session_turns: dict[str, list] = {}
    for i in range(count):
        owner = project if i % 5 else f"{project}-other-{i % 3}"
        kind = ("prompt", "exchange", "tool", "error")[i % 4]
        text = f"{rng.choice(pool_texts)} ({i})"
        if realistic:
            low, high = REALISTIC_SENTENCES[kind]
            text += " " + " ".join(synthetic_text(rng) for _ in range(rng.randint(low, high)))
        session = f"bench-{i // 40}"
        turns = session_turns.setdefault(session, [])
        row = {"project": owner, "session_id": session, "kind": kind, "text": text,
               "created_at": now - (count - i) / count * SEED_DAYS * 86400, "importance": rng.random(),
               "context_before": "\n\x1e ".join(t["text"][:400] for t in turns[-CONTEXT_TURNS:]), "context_after": ""}
        if kind in ("prompt", "exchange"):
            for earlier in turns[-CONTEXT_TURNS:]:
                earlier["context_after"] = (earlier["context_after"] + "\n\x1e " if earlier["context_after"] else "") \
                    + text[:400]
            turns.append(row)
        vector = pool[rng.randrange(len(pool))] + np.float32(0.02) * rng_normal(rng, pool.shape[1])
        row["vector"] = (vector / np.linalg.norm(vector)).astype(np.float32).tobytes()
        batch.append(row)
        if len(batch) >= BATCH or i == count - 1:
            yield batch  # BATCH is a multiple of 40: a batch ends where a session does (no context to add later)
            batch, session_turns = [], {}


def rng_normal(rng: random.Random, n: int):
    import numpy as np

    return np.asarray([rng.gauss(0, 1) for _ in range(n)], dtype=np.float32)


def seed_store(home: Path, count: int, project: str, echo=print, realistic: bool = False,
               database: BenchDatabase | None = None) -> None:
    """`count` memories in the store of `home` (the SQLite file, or `database` when given)."""
    from ...api import open_recall

    rng = random.Random(count)
    recall = open_recall(home)
    embedder = recall.models.load_embedder()
    if embedder is None:
        raise RuntimeError(f"no embedding model to seed with: {recall.embedding_error()}")
    started = time.perf_counter()
    try:
        if database is not None:  # the run is on a PostgreSQL (database_env): its bulk loader
            database.load(synthetic_memories(count, project, realistic, embedder, rng), embedder.name)
        else:
            _load_sqlite(cast("SqliteStore", recall.store),  # no database given: the SQLite file's own loader
                         synthetic_memories(count, project, realistic, embedder, rng), embedder)
    finally:
        recall.close()
    echo(f"  seeded {count} memories in {time.perf_counter() - started:.1f} s")


def _digest(text: str) -> str:
    return hashlib.sha1(" ".join(text.lower().split()).encode("utf-8")).hexdigest()


def _load_sqlite(store: SqliteStore, batches, embedder) -> None:
    store.ensure_vector_index(embedder.name, embedder.dim)
    conn = store.db.conn
    for batch in batches:
        with store.db.write():
            first = store.db.value("SELECT coalesce(max(id), 0) FROM memories") + 1
            conn.executemany(
                "INSERT INTO memories(id, project, session_id, kind, text, created_at, importance, content_hash, meta, "
                "context_before, context_after, owner) VALUES (?, ?, ?, ?, ?, ?, ?, ?, '{}', ?, ?, ?)",
                [(first + n, r["project"], r["session_id"], r["kind"], r["text"], r["created_at"], r["importance"],
                  _digest(r["text"]), r["context_before"], r["context_after"], store.owner)
                 for n, r in enumerate(batch)])
            store._vector_index().add([(first + n, r["project"], r["created_at"], r["vector"])
                                       for n, r in enumerate(batch)])
            conn.execute("DELETE FROM embed_queue WHERE memory_id >= ?", (first,))


class BenchDatabase:
    """A throwaway database on the server of `admin_url`, with recall's schema and one member role."""

    def __init__(self, admin_url: str, echo=print):
        from ...core.storage.postgres.connection import connect

        self.admin_url = admin_url
        self.name = "recall_bench_" + secrets.token_hex(4)
        self.role = "bench_" + secrets.token_hex(4)
        with connect(admin_url, statement_timeout_ms=None) as conn:
            conn.execute(f'CREATE DATABASE "{self.name}"')
        self.url = _with_database(admin_url, self.name)
        from ...api import add_team_member, init_team

        init_team(self.url)
        self.member_url = add_team_member(self.url, self.role)
        self.echo = echo

    def load(self, batches, model: str) -> None:
        """COPY the rows in as the member (owner), then build the HNSW index once and analyze."""
        import numpy as np
        from pgvector.psycopg import register_vector

        from ...core.storage.postgres.connection import connect

        with connect(self.url, statement_timeout_ms=None) as conn:
            register_vector(conn)
            conn.execute("SET search_path = recall, public")
            conn.execute("DROP INDEX IF EXISTS recall.memories_meaning")
            columns = ("owner, project, session_id, kind, text, created_at, importance, content_hash, meta, "
                       "context_before, context_after, embedding, embedding_model")
            with conn.cursor() as cursor:
                for batch in batches:
                    with cursor.copy(f"COPY recall.memories ({columns}) FROM STDIN (FORMAT BINARY)") as copy:
                        copy.set_types(["text", "text", "text", "text", "text", "float8", "float8", "text", "text",
                                        "text", "text", "vector", "text"])
                        for r in batch:
                            copy.write_row((self.role, r["project"], r["session_id"], r["kind"], r["text"],
                                            r["created_at"], r["importance"], _digest(r["text"]), "{}",
                                            r["context_before"], r["context_after"],
                                            np.frombuffer(r["vector"], dtype=np.float32), model))
            started = time.perf_counter()
            conn.execute("SET maintenance_work_mem = '1GB'")
            conn.execute("CREATE INDEX memories_meaning ON recall.memories USING hnsw (embedding vector_cosine_ops)")
            conn.execute("ANALYZE recall.memories")
            self.echo(f"  HNSW index built in {time.perf_counter() - started:.1f} s")

    def analyze(self) -> None:
        from ...core.storage.postgres.connection import connect

        with connect(self.url, statement_timeout_ms=None) as conn:
            conn.execute("ANALYZE recall.memories")

    def drop(self) -> None:
        from ...core.storage.postgres.connection import connect

        with connect(self.admin_url, statement_timeout_ms=None) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{self.name}" WITH (FORCE)')
            conn.execute(f'DROP ROLE IF EXISTS "{self.role}"')


@contextmanager
def database_env(database: BenchDatabase | None):
    """RECALL_DATABASE_URL as the member of `database` (unset for the SQLite file) while the block runs: the
    API, the hooks and the worker they start all follow it."""
    from ...shared.paths import DATABASE_URL_ENV

    before = os.environ.get(DATABASE_URL_ENV)
    if database is None:
        os.environ.pop(DATABASE_URL_ENV, None)
    else:
        os.environ[DATABASE_URL_ENV] = database.member_url
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(DATABASE_URL_ENV, None)
        else:
            os.environ[DATABASE_URL_ENV] = before


def _with_database(url: str, name: str) -> str:
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, "/" + name, parts.query, parts.fragment))

