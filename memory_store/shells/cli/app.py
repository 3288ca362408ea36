"""The `recall` command line's frame: the Typer apps, the options every command shares, and the small
helpers commands use to open the store, resolve a project, parse ids and dates, and ask before acting.

Every command takes `--home` (default: $RECALL_HOME, $CLAUDE_PLUGIN_DATA, the installed
plugin's data dir, else the platform data dir).
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Annotated

import typer

from ...core.storage import StorageUnavailable
from ...hook.quick_search import scope_of
from ...shared.paths import DataPaths
from ...shared.projects import locate, repository_identity
from ...shared.text import plural  # noqa: F401 - the commands import it from here

# Plain (click) help: the rich formatter of this typer labels every flag `<bool>` as if it took a value.
app = typer.Typer(help="recall: local, offline memory for Claude Code and Codex.", no_args_is_help=True,
                  add_completion=False, pretty_exceptions_enable=False, rich_markup_mode=None)
bench_app = typer.Typer(help="Measure retrieval quality and hook latency.", no_args_is_help=True,
                        rich_markup_mode=None)
worker_app = typer.Typer(help="Control the background worker.", no_args_is_help=True, rich_markup_mode=None)
team_app = typer.Typer(help="Set up a shared PostgreSQL for a team or several machines.", no_args_is_help=True,
                       rich_markup_mode=None)
install_app = typer.Typer(help="Use recall from another coding agent.", no_args_is_help=True, rich_markup_mode=None)
app.add_typer(bench_app, name="bench")
app.add_typer(worker_app, name="worker")
app.add_typer(team_app, name="team")
app.add_typer(install_app, name="install")

HomeOption = Annotated[Path | None, typer.Option("--home", help="Data directory.", envvar=None)]
JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON.")]
PluginDataOption = Annotated[str | None, typer.Option("--plugin-data", hidden=True,
                                                         help="Claude Code's plugin data dir (a fallback like "
                                                              "$CLAUDE_PLUGIN_DATA).")]
DatabaseUrlOption = Annotated[str | None, typer.Option(
    "--database-url", help="An administrator's URL of a PostgreSQL server (default: RECALL_DATABASE_URL, else "
                           "storage.url).")]
BenchDatabaseOption = Annotated[str | None, typer.Option(
    "--database-url", help="Also measure on a PostgreSQL server (an administrator's URL: the bench creates and drops "
                           "a database of its own).")]
ProjectOption = Annotated[str | None, typer.Option("--project", help="Project path or name (default: the current "
                                                      "directory's project).")]


def open_home(home: Path | None, *, ingest: bool = True):
    """The API for this data dir, with the events spooled while no worker ran stored first (so
    what the command reads is complete). recall's own errors become one clear line."""
    from ...api import open_recall

    try:
        recall = open_recall(home)
    except Exception as exc:  # unreadable data dir, newer schema …
        typer.echo(f"recall: cannot open the store in {DataPaths(home).home}: {exc}", err=True)
        raise typer.Exit(1) from None
    if recall.read_only:
        typer.echo(f"recall: {recall.paths.home} is read-only: searching it as it is, capturing nothing", err=True)
        return recall
    try:
        project, root = locate(os.getcwd())
        if repository_identity(root):  # a command run in a clone says where the project lives
            recall.note_project_path(project, root)
        if ingest:
            recall.ingest_spool()
    except StorageUnavailable:
        pass  # a shared database that is away: `recall doctor` says why; other commands fail with the reason
    return recall


def emit_json(data) -> None:
    typer.echo(json.dumps(data, ensure_ascii=False, indent=2, default=str))


def resolve_project(project: str | None, all_projects: bool) -> str | None:
    """The project a command is about: --project (a path, or a project's name as `recall projects` shows
    it), else the current directory's; None for every project."""
    return scope_of(project, all_projects)


def print_memory(memory) -> None:
    stamp = memory.created_at.astimezone().strftime("%Y-%m-%d %H:%M")
    typer.echo(f"#{memory.id}  {memory.kind}  {stamp}  session {memory.session_id or '-'}")
    typer.echo(f"project: {memory.project}")
    # Whose it is and who sees it: a team memory is everyone's to read and only its author's to change.
    typer.echo(f"owner: {memory.owner or '-'} · " + ("shared with the team" if memory.visibility == "team"
                                                     else "private"))
    if memory.superseded_by:
        typer.echo(f"superseded by #{memory.superseded_by}")
    typer.echo(memory.text)


def parse_when(value: str) -> float:
    """A date for --before: ISO ("2026-03-01", "2026-03-01T12:00") or an age ("30d", "12h", "2w")."""
    from datetime import datetime

    text = value.strip()
    units = {"h": 3600, "d": 86400, "w": 7 * 86400}
    if text[:-1].isdigit() and text[-1:].lower() in units:
        return time.time() - int(text[:-1]) * units[text[-1].lower()]
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise typer.BadParameter(f"{value!r} is not a date (2026-03-01) or an age (30d, 12h, 2w)",
                                 param_hint="--before") from None
    return (moment if moment.tzinfo else moment.astimezone()).timestamp()


def parse_ids(values: list[str]) -> list[int]:
    """Memory ids as typed or as printed by `recall search --index` (#12)."""
    ids = []
    for value in values:
        try:
            ids.append(int(value.strip().lstrip("#")))
        except ValueError:
            raise typer.BadParameter(f"{value!r} is not a memory id (a number such as 12 or #12)") from None
    return ids


def memories_by_project(memories) -> str:
    counts: dict[str, int] = {}
    for memory in memories:
        counts[memory.project] = counts.get(memory.project, 0) + 1
    return ", ".join(f"{plural(n, 'memory', 'memories')} in {project}" for project, n in sorted(counts.items()))


def confirm_or_stop(question: str, yes: bool, declined: str = "Nothing forgotten.") -> None:
    """Ask before a change that matters; without a terminal, --yes is required."""
    if yes:
        return
    if not sys.stdin.isatty():
        typer.echo(f"{question} Not done: rerun with --yes to confirm.", err=True)
        raise typer.Exit(1)
    if not typer.confirm(question, default=False):
        typer.echo(declined)
        raise typer.Exit(1)


def parse_duration(value: str) -> float:
    """Seconds in a duration such as 30m, 2h, 1d, 1w (for --for)."""
    units = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
    text = value.strip().lower()
    try:
        amount = float(text[:-1])
    except ValueError:
        amount = -1.0
    if text[-1:] not in units or amount <= 0:
        raise typer.BadParameter(f"{value!r} is not a duration (30m, 2h, 1d, 1w)", param_hint="--for")
    return amount * units[text[-1]]

