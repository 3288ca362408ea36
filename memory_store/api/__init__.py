"""The Python API: one `Recall` per data directory.

    from memory_store import open_recall
    with open_recall("~/.local/share/recall") as recall:
        for hit in recall.search("how do we rotate the API keys?", project="/home/me/app"):
            print(hit.id, hit.score, hit.text)

The CLI, the worker, the demo and the benchmarks are shells over this class: they parse,
call one method, and render. It composes the core: `store` (all SQL), `models` (embedder and
reranker, loaded on first use), search, capture routing and the background jobs. Opening it
does nothing but open the database: events spooled while no worker ran are ingested when a
caller asks (`ingest_spool`), never behind its back.
"""

from __future__ import annotations

import os

from ..core.config import Config, load_config
from ..core.records import Hit
from ..core.retrieval.search import Shown
from ..core.router import BadEvent
from ..core.storage import StorageUnavailable
from ..shared.files import ensure_private_dir
from ..shared.paths import DataPaths
from .background import BackgroundWork
from .recall import IN_PROCESS_EMBED_LIMIT, Recall, worker_hits

__all__ = ["BadEvent", "BackgroundWork", "IN_PROCESS_EMBED_LIMIT", "Recall", "StorageUnavailable", "add_team_member",
           "init_team", "new_team_password", "open_recall", "remove_team_member", "search_anywhere", "settings",
           "status", "team_members"]


def open_recall(home: str | os.PathLike | None = None, config: Config | None = None, *,
                load_models: bool = True) -> Recall:
    """Open (creating and migrating if needed) the memory in `home` (default: see
    shared.paths.resolve_home). `load_models=False` keeps it lexical (no embedding model)."""
    paths = DataPaths(home)
    ensure_private_dir(paths.home)
    return Recall(paths, config or load_config(paths.config), load_models=load_models)


def search_anywhere(home: str | os.PathLike | None, query: str, limit: int = 10,
                    project: str | None = None, place: str | None = None, shown: Shown = "relevant", *,
                    touch: bool = False) -> list[Hit]:
    """Search through the running worker (it holds the model: fast) or, without one, in this
    process after ingesting the spool and embedding a small backlog, so the answer is complete.
    `place`: the project's local root, noted as where it lives (see Store.note_project_path);
    `shown`: "relevant" or "all"; `touch`: the hits count as used (Recall.search)."""
    paths = DataPaths(home)
    hits = worker_hits(paths, query, limit, project, place, shown, touch=touch)
    if hits is not None:
        return hits
    with open_recall(paths.home) as recall:
        return recall.search_here(query, limit, project, place, shown, touch=touch)


def settings(home: str | os.PathLike | None = None) -> dict:
    """`recall config`: config.json's path, every setting in effect with its default and source, and what could
    not be used (core/config.py). Does not open the store."""
    from ..core.config import config_problems, settings_in_effect

    paths = DataPaths(home)
    config = load_config(paths.config)
    return {"file": str(paths.config), "exists": paths.config.is_file(),
            "settings": settings_in_effect(config),
            "problems": [str(p) for p in config_problems(config)]}


def status(home: str | os.PathLike | None = None) -> dict:
    """`recall status`: the worker, pauses, the data dir, what waits, config problems (core/diagnostics/status.py). Does not
    open the store: it works when the store is what is wrong."""
    from ..core.diagnostics.status import collect
    from ..integrations import codex

    paths = DataPaths(home)
    return {**collect(paths, load_config(paths.config)), "codex": codex.status(None, paths.home)}


def install_codex(codex_home: str | os.PathLike | None = None, *, remove: bool = False) -> dict:
    """`recall install codex [--uninstall]`: recall's hooks (trusted) and MCP server in Codex's configuration, or
    taken out again (integrations/codex.py). Raises CodexConfigError, changing nothing, when a file cannot be used."""
    from ..integrations import codex

    return (codex.uninstall(codex_home) if remove else codex.install(codex_home)).as_dict()


def init_team(url: str, config: Config | None = None) -> dict:
    """`recall team init`: create (or upgrade) recall's schema in the PostgreSQL at `url`, with the
    configured embedding model as the team's. Idempotent."""
    from ..core.embedding.embed import DEFAULT_DIM, DEFAULT_MODEL, load_embedder
    from ..core.storage.postgres.team import init_team as init

    config = config or Config()
    model = config.embedding.model
    dim = DEFAULT_DIM if model == DEFAULT_MODEL else load_embedder(config.embedding).dim
    return init(url, model, dim)


def team_members(url: str) -> list[dict]:
    """`recall team users`: each member's name, whether it may log in, and how many memories it owns."""
    from ..core.storage.postgres.team import members

    return members(url)


def new_team_password(url: str, name: str) -> str:
    """`recall team new-password NAME`: a new password for a member (its old one stops working); returns its URL."""
    from ..core.storage.postgres.team import set_member_login

    new = set_member_login(url, name, allowed=True)
    assert new is not None
    return new


def remove_team_member(url: str, name: str) -> None:
    """`recall team remove-user NAME`: the member may no longer log in; its memories stay as they are."""
    from ..core.storage.postgres.team import set_member_login

    set_member_login(url, name, allowed=False)


def add_team_member(url: str, name: str) -> str:
    """`recall team add-user NAME`: a login role in the team; returns its URL with a new password."""
    from ..core.storage.postgres.team import add_member

    return add_member(url, name)
