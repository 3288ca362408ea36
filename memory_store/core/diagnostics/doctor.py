"""`recall doctor`: is everything in order, and if not, why and what to do.

Each check returns a `Check` (name, ok, detail, hint). Repairs live in jobs.repair.
"""

from __future__ import annotations

import os
import stat
import sys
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING

from ...shared import spool
from ...version import __version__
from ..config import config_problems
from ..storage import StorageUnavailable, Store
from . import alerts

if TYPE_CHECKING:
    from ..embedding.embed import Models


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


def check_environment(models: Models) -> list[Check]:
    checks = [Check("python", sys.version_info >= (3, 10), f"{sys.version.split()[0]} at {sys.executable}",
                    "recall needs Python 3.10+")]
    embedder = models.embedder
    if embedder is None:
        checks.append(Check("embedding model", False, models.embedder_error or "not loaded",
                            "semantic search is off; lexical search still works"))
    else:
        checks.append(Check("embedding model", True, f"{embedder.name} ({embedder.dim} dimensions"
                                                           f"{', int8 products' if embedder.int8 else ''}), loaded offline"))
    return checks


def check_store(store: Store, models: Models) -> list[Check]:
    """Where memories are kept, and whether it can be used (a shared database may be unreachable)."""
    try:
        engine = store.capabilities().engine
        detail = f"{store.backend}: {store.location()}" + (f" ({engine})" if engine else "")
        usable, vectors = store.vector_extension()
    except StorageUnavailable as exc:
        return [Check("store", False, f"{store.backend}: {store.location()}: {exc}",
                      "events wait in the spool and are stored when the database is back")]
    checks = [Check("store", True, detail),
              Check("vector search", usable, vectors, "" if usable else "semantic search is off; lexical search "
                                                                         "still works")]
    problem = store.model_mismatch(models.embedder)
    if problem:
        checks.append(Check("team model", False, problem, "semantic search is off until the models agree"))
    return checks


def check_files(store: Store) -> list[Check]:
    paths = store.paths
    home_mode = _mode(paths.home)
    checks = [Check("data dir", home_mode is not None and home_mode & 0o077 == 0,
                    f"{paths.home} (mode {oct(home_mode) if home_mode is not None else 'missing'})",
                    "chmod 700 the data dir")]
    if store.read_only:  # the cause of what else looks wrong here: name it first
        checks.append(Check("writable", False, f"{paths.home} cannot be written: searched as it is, nothing is "
                            "captured and no worker can start there",
                            f"give your user write access to it (chmod u+w {paths.home} and its files)"))
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
    problems = store.integrity_problems()
    version, latest = store.schema_status()
    checks = [Check("integrity", not problems, "; ".join(problems[:5]) or "ok",
                    "restore from a backup or run `recall doctor --repair` for derived indexes"),
              Check("schema", version == latest, f"version {version} of {latest}")]
    if store.read_only:  # checking the text index writes to it: a read-only file cannot say
        checks.append(Check("fts index", True, "not checked: the data dir cannot be written"))
        return checks
    fts = store.text_index_problem()
    checks.append(Check("fts index", fts is None, "full-text index matches the memories" if fts is None
                        else f"full-text index out of step: {fts}", "recall doctor --repair"))
    vectors = store.vector_consistency()
    if vectors is not None:
        orphans, missing = vectors["orphans"], vectors["missing"]
        detail = (f"{vectors['vectors']} vectors ({vectors['model']}), {vectors['queued']} queued"
                  + (f", {len(orphans)} orphaned" if orphans else "")
                  + (f", {len(missing)} memories neither embedded nor queued" if missing else ""))
        checks.append(Check("vector index", not orphans and not missing, detail, "recall doctor --repair"))
        configured = store.config.embedding.model
        checks.append(Check("vector model", vectors["model"] == configured,
                            f"index holds {vectors['model']}; configured {configured}",
                            "run `recall reindex` to re-embed with the configured model"))
    return checks


def check_worker(health: dict | None, reason: str = "") -> list[Check]:
    if health is None:
        return [Check("worker", True, f"not running ({reason or 'no answer'}); hooks start it on demand")]
    detail = (f"pid {health.get('pid')}, version {health.get('version')}, model {health.get('model')}, "
              f"{health.get('pending')} waiting for embeddings")
    return [Check("worker", health.get("version") == __version__, detail,
                  "an old worker will hand over to this version on the next hook")]


def check_config(store: Store) -> list[Check]:
    problems = config_problems(store.config)
    if not problems:
        return [Check("config", True, f"{store.paths.config} " + ("valid" if store.paths.config.exists()
                                                                   else "absent: defaults"))]
    return [Check("config", False, str(problem), f"fix the file's JSON syntax in {store.paths.config}" if not problem.key
                  else f"fix or remove this setting in {store.paths.config}")
            for problem in problems]


def check_recovery(store: Store) -> list[Check]:
    """A damaged database moved aside stays a finding until its copy is dealt with."""
    note = alerts.recovery(store.paths)
    if not note or not os.path.exists(str(note.get("moved_to", ""))):
        return []
    moved = note["moved_to"]
    return [Check("damaged database", False, alerts.recovery_line(note).removeprefix("recall: "),
                  f"salvage rows with `sqlite3 {moved} .recover | sqlite3 salvaged.db`; `recall import "
                  f"~/.claude/projects` brings back the sessions Claude Code still has; then delete {moved}")]


def diagnose(store: Store, models: Models, worker_health: dict | None) -> list[Check]:
    checks = check_environment(models) + check_config(store) + check_files(store) + check_store(store, models)
    if checks[-1].name != "store" or checks[-1].ok:  # the database answers: look inside
        try:
            checks += check_database(store)
        except StorageUnavailable as exc:
            checks.append(Check("store", False, f"{store.backend}: {store.location()}: {exc}"))
    return checks + check_recovery(store) + check_worker(worker_health)
