"""`recall doctor`: is everything in order, and if not, why and what to do.

Each check returns a `Check` (name, ok, detail, hint). `--repair` rebuilds what is derived
from the memories table (the FTS index, the vector index, the embedding queue) and
ingests a leftover spool; it never deletes a memory.
"""

from __future__ import annotations

import os
import stat
import sys
from dataclasses import asdict, dataclass

from . import __version__, db, spool, transport
from .store import Store


@dataclass
class Check:
    name: str
    ok: bool
    detail: str
    hint: str = ""

    def as_dict(self) -> dict:
        return asdict(self)


def _mode(path) -> int | None:
    try:
        return stat.S_IMODE(os.stat(path).st_mode)
    except FileNotFoundError:
        return None


def check_environment(store: Store) -> list[Check]:
    checks = [Check("python", sys.version_info >= (3, 10), f"{sys.version.split()[0]} at {sys.executable}",
                    "recall needs Python 3.10+")]
    import apsw

    checks.append(Check("sqlite", True, f"apsw {apsw.apsw_version()}, SQLite {apsw.sqlite_lib_version()}"))
    if store.vector_error:
        checks.append(Check("sqlite-vec", False, store.vector_error,
                            "semantic search is off; lexical search still works. `pip install sqlite-vec`"))
    else:
        version = store.conn.execute("SELECT vec_version()").fetchone()[0]
        checks.append(Check("sqlite-vec", True, f"vec0 {version} loaded"))
    embedder = store.embedder
    if embedder is None:
        checks.append(Check("embedding model", False, store.embedder_error or "not loaded",
                            "semantic search is off; lexical search still works"))
    else:
        checks.append(Check("embedding model", True, f"{embedder.name} ({embedder.dim} dimensions), loaded offline"))
    return checks


def check_files(store: Store) -> list[Check]:
    paths = store.paths
    checks = []
    home_mode = _mode(paths.home)
    checks.append(Check("data dir", home_mode is not None and home_mode & 0o077 == 0,
                        f"{paths.home} (mode {oct(home_mode) if home_mode is not None else 'missing'})",
                        "chmod 700 the data dir"))
    loose = [p.name for p in (paths.db, paths.log_file) if (_mode(p) or 0) & 0o077]
    checks.append(Check("file permissions", not loose, "database and logs are private" if not loose
                        else f"readable by others: {', '.join(loose)}", "chmod 600 them"))
    waiting = spool.pending(paths.spool)
    bad = list(paths.spool.glob("*.bad")) if paths.spool.is_dir() else []
    detail = f"{len(waiting)} event(s) waiting for the worker"
    if bad:
        detail += f", {len(bad)} unreadable file(s) kept aside (*.bad)"
    checks.append(Check("spool", not bad, detail, "inspect the *.bad files in the spool dir" if bad else ""))
    return checks


def check_database(store: Store) -> list[Check]:
    conn = store.conn
    checks = []
    with store.lock:
        result = [r[0] for r in conn.execute("PRAGMA integrity_check")]
        checks.append(Check("integrity", result == ["ok"], "; ".join(result[:5]), "restore from a backup or "
                            "run `recall doctor --repair` for derived indexes"))
        version = db.schema_version(conn)
        checks.append(Check("schema", version == len(db.MIGRATIONS), f"version {version} of {len(db.MIGRATIONS)}"))
        try:
            conn.execute("INSERT INTO memories_fts(memories_fts, rank) VALUES ('integrity-check', 1)")
            fts_ok, fts_detail = True, "full-text index matches the memories"
        except Exception as exc:  # apsw.CorruptError and friends
            fts_ok, fts_detail = False, f"full-text index out of step: {exc}"
        checks.append(Check("fts index", fts_ok, fts_detail, "recall doctor --repair"))
        if store.vectors and store.vectors.exists():
            vector_ids = store.vectors.ids()
            memory_ids = {r[0] for r in conn.execute("SELECT id FROM memories")}
            queued = {r[0] for r in conn.execute("SELECT memory_id FROM embed_queue")}
            live = {r[0] for r in conn.execute("SELECT id FROM memories WHERE superseded_by IS NULL")}
            orphans = vector_ids - memory_ids
            missing = live - vector_ids - queued
            ok = not orphans and not missing
            detail = (f"{len(vector_ids)} vectors ({store.vectors.info()[0]}), {len(queued)} queued"
                      + (f", {len(orphans)} orphaned" if orphans else "")
                      + (f", {len(missing)} memories neither embedded nor queued" if missing else ""))
            checks.append(Check("vector index", ok, detail, "recall doctor --repair"))
            configured = store.config.embedding.model
            model = store.vectors.info()[0]
            checks.append(Check("vector model", model == configured,
                                f"index holds {model}; configured {configured}",
                                "run `recall reindex` to re-embed with the configured model"))
    return checks


def check_worker(store: Store) -> list[Check]:
    try:
        health = transport.request(store.paths, {"op": "health"}, timeout=1.0)
    except transport.WorkerUnavailable as exc:
        return [Check("worker", True, f"not running ({exc}); hooks start it on demand")]
    detail = f"pid {health.get('pid')}, version {health.get('version')}, model {health.get('model')}, " \
             f"{health.get('pending')} waiting for embeddings"
    return [Check("worker", health.get("version") == __version__, detail,
                  "an old worker will hand over to this version on the next hook")]


def diagnose(store: Store) -> list[Check]:
    return check_environment(store) + check_files(store) + check_database(store) + check_worker(store)


def repair(store: Store) -> list[str]:
    """Rebuild derived data; returns what was done."""
    done = []
    with store.lock, db.write_transaction(store.conn):
        store.conn.execute("INSERT INTO memories_fts(memories_fts) VALUES ('rebuild')")
        done.append("rebuilt the full-text index")
        if store.vectors and store.vectors.exists():
            vector_ids = store.vectors.ids()
            memory_ids = {r[0] for r in store.conn.execute("SELECT id FROM memories")}
            orphans = sorted(vector_ids - memory_ids)
            store.vectors.delete(orphans)
            missing = [(i,) for i in memory_ids - vector_ids]
            store.conn.executemany("INSERT OR IGNORE INTO embed_queue(memory_id) VALUES (?)", missing)
            done.append(f"removed {len(orphans)} orphaned vectors, queued {len(missing)} memories for embedding")
    for path in (store.paths.db, store.paths.log_file):
        if path.exists():
            os.chmod(path, 0o600)
    os.chmod(store.paths.home, 0o700)
    done.append("reset file permissions")
    return done
