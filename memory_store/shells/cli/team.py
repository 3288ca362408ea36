"""`recall team`: set up a shared PostgreSQL for a team or several machines."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from ...shared.paths import DataPaths
from .app import HomeOption, JsonOption, emit_json, team_app


@team_app.command("init")
def team_init(
    database_url: Annotated[Optional[str], typer.Option("--database-url", help="An administrator's URL (default: "
                                                        "RECALL_DATABASE_URL, else storage.url).")] = None,
    home: HomeOption = None,
    json_output: JsonOption = False,
):
    """Create (or upgrade) recall's schema in a PostgreSQL: the pgvector extension, the tables, the group role
    recall_member and row-level security. Run once, as a role that may create extensions and roles
    (usually a superuser); running it again is harmless. Example: recall team init --database-url
    postgresql://postgres@db.internal/recall"""
    from ...api import init_team
    from ...core.config import load_config
    from ...shared.database_url import database_url as configured_url
    from ...shared.database_url import masked

    config = load_config(DataPaths(home).config)
    url = database_url or configured_url(config.storage.url)
    if not url:
        raise typer.BadParameter("no database URL: pass --database-url or set RECALL_DATABASE_URL",
                                 param_hint="--database-url")
    try:
        result = init_team(url, config)
    except RuntimeError as exc:
        typer.echo(f"recall: {exc}", err=True)
        raise typer.Exit(1) from None
    if json_output:
        emit_json({**result, "database": masked(url)})
        return
    typer.echo(f"recall schema version {result['version']} ready at {masked(url)} ({result['applied']} "
               f"migration(s) applied); the team's embedding model: {result['model']}")
    typer.echo("Next: `recall team add-user NAME` for each teammate (and for yourself: use a member role "
               "day to day, a superuser sees every private memory).")


@team_app.command("add-user")
def team_add_user(
    name: Annotated[str, typer.Argument(help="The new role's name (letters, digits, _ . -).")],
    database_url: Annotated[Optional[str], typer.Option("--database-url", help="An administrator's URL (default: "
                                                        "RECALL_DATABASE_URL, else storage.url).")] = None,
    home: HomeOption = None,
    json_output: JsonOption = False,
):
    """Create a teammate's login role (no superuser, no BYPASSRLS) and print, once, its connection URL with a
    generated password. Example: recall team add-user alice"""
    from ...api import add_team_member
    from ...core.config import load_config
    from ...shared.database_url import database_url as configured_url

    url = database_url or configured_url(load_config(DataPaths(home).config).storage.url)
    if not url:
        raise typer.BadParameter("no database URL: pass --database-url or set RECALL_DATABASE_URL",
                                 param_hint="--database-url")
    try:
        member = add_team_member(url, name)
    except ValueError as exc:
        typer.echo(f"recall: {exc}", err=True)
        raise typer.Exit(1) from None
    if json_output:
        emit_json({"user": name, "url": member})
        return
    typer.echo(f"created {name}. Their URL (shown this once; it holds the password):\n{member}")
    typer.echo(f"{name} sets it as RECALL_DATABASE_URL (or storage.url in config.json) on each machine.")

