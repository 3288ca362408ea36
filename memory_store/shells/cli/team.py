"""`recall team`: set up a shared PostgreSQL for a team or several machines."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Annotated, TypeVar

import typer

from ...shared.paths import DataPaths
from .app import DatabaseUrlOption, HomeOption, JsonOption, emit_json, team_app

T = TypeVar("T")


def admin_url(given: str | None, home: Path | None):
    """(the URL to act on: --database-url, else the configured one, and the config); a clear error without one."""
    from ...core.config import load_config
    from ...shared.database_url import database_url

    config = load_config(DataPaths(home).config)
    url = given or database_url(config.storage.url)
    if not url:
        raise typer.BadParameter("no database URL: pass --database-url or set RECALL_DATABASE_URL",
                                 param_hint="--database-url")
    return url, config


@team_app.command("init")
def team_init(database_url: DatabaseUrlOption = None, home: HomeOption = None, json_output: JsonOption = False):
    """Create (or upgrade) recall's schema in a PostgreSQL: the pgvector extension, the tables, the group role
    recall_member and row-level security. Run once, as a role that may create extensions and roles
    (usually a superuser); running it again is harmless. Example: recall team init --database-url
    postgresql://postgres@db.internal/recall"""
    from ...api import init_team
    from ...shared.database_url import masked

    url, config = admin_url(database_url, home)
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


def _administer(database_url: str | None, home, change: Callable[[str], T]) -> T:
    """One change with the administrator's URL; a refused one (a name taken, unknown or invalid) is one line, exit 1."""
    url, _config = admin_url(database_url, home)
    try:
        return change(url)
    except ValueError as exc:
        typer.echo(f"recall: {exc}", err=True)
        raise typer.Exit(1) from None


@team_app.command("add-user")
def team_add_user(
    name: Annotated[str, typer.Argument(help="The new role's name (letters, digits, _ . -).")],
    database_url: DatabaseUrlOption = None,
    home: HomeOption = None,
    json_output: JsonOption = False,
):
    """Create a teammate's login role (no superuser, no BYPASSRLS) and print, once, its connection URL with a
    generated password. Example: recall team add-user alice"""
    from ...api import add_team_member

    member = _administer(database_url, home, lambda url: add_team_member(url, name))
    if json_output:
        emit_json({"user": name, "url": member})
        return
    typer.echo(f"created {name}. Their URL (shown this once; it holds the password):\n{member}")
    typer.echo(f"{name} sets it as RECALL_DATABASE_URL (or storage.url in config.json) on each machine.")


@team_app.command("users")
def team_users(database_url: DatabaseUrlOption = None, home: HomeOption = None, json_output: JsonOption = False):
    """The team's members: name, whether they may log in, how many memories they shared. Example: recall team users"""
    from ...api import team_members

    url, _config = admin_url(database_url, home)
    found = team_members(url)
    if json_output:
        emit_json(found)
        return
    if not found:
        typer.echo("no members yet (recall team add-user NAME)")
    for member in found:
        typer.echo(f"{member['name']:<24} {'can log in' if member['can_log_in'] else 'login removed':<14} "
                   f"{member['shared_memories']} shared memories")


@team_app.command("new-password")
def team_new_password(
    name: Annotated[str, typer.Argument(help="The member's role name.")],
    database_url: DatabaseUrlOption = None,
    home: HomeOption = None,
    json_output: JsonOption = False,
):
    """Give a member a new password (the old one stops working) and print, once, their new URL; also gives a removed
    member their login back. Example: recall team new-password alice"""
    from ...api import new_team_password

    member = _administer(database_url, home, lambda url: new_team_password(url, name))
    if json_output:
        emit_json({"user": name, "url": member})
        return
    typer.echo(f"new password for {name}. Their URL (shown this once; it holds the password):\n{member}")


@team_app.command("remove-user")
def team_remove_user(
    name: Annotated[str, typer.Argument(help="The member's role name.")],
    database_url: DatabaseUrlOption = None,
    home: HomeOption = None,
    json_output: JsonOption = False,
):
    """Take a member's login away: their open connections end and they can no longer connect; their memories stay
    (private ones private, shared ones shared) and `recall team new-password NAME` gives the login back.
    Example: recall team remove-user bob"""
    from ...api import remove_team_member

    _administer(database_url, home, lambda url: remove_team_member(url, name))
    if json_output:
        emit_json({"user": name, "can_log_in": False})
        return
    typer.echo(f"{name} can no longer log in; their memories stay (recall team new-password {name} restores it)")

