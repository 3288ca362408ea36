"""Commands that steer what is kept: remember, pin, forget, purge, pause, resume, share, unshare."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated

import typer

from ...shared.paths import DataPaths
from .app import (
    HomeOption,
    JsonOption,
    ProjectOption,
    app,
    confirm_or_stop,
    emit_json,
    memories_by_project,
    open_home,
    parse_duration,
    parse_ids,
    parse_when,
    plural,
    resolve_project,
)


@app.command()
def forget(
    ids: Annotated[list[str] | None, typer.Argument(help="Memory ids (12 or #12).", show_default=False)] = None,
    project: ProjectOption = None,
    all_projects: Annotated[bool, typer.Option("--all-projects", help="Look in every project.")] = False,
    session: Annotated[str | None, typer.Option("--session", help="Every memory of this session.")] = None,
    before: Annotated[str | None, typer.Option("--before", help="Memories older than this date (2026-03-01) "
                                                  "or age (30d).")] = None,
    match: Annotated[str | None, typer.Option("--match", help="Memories whose text contains this "
                                                 "(case-insensitive); also removed from logs.")] = None,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask before deleting a selection.")] = False,
    home: HomeOption = None,
    json_output: JsonOption = False,
):
    """Delete memories for good: their text leaves the database, its index, the neighbours' context, the
    spool and the logs. Limited to the current project unless --project or --all-projects. Ids named one by one
    are forgotten at once; a selection (--match, --session, --before, --project) is shown and confirmed first,
    or taken with --yes (required without a terminal).
    Examples: recall forget 12 · recall forget --match CorrectHorse42 · recall forget --before 90d --yes"""
    if project and all_projects:
        raise typer.BadParameter("use either --project or --all-projects")
    if not (ids or session or before or match or project):
        raise typer.BadParameter("say what to forget: ids, --session, --before, --match or --project")
    if match is not None and not match.strip():
        raise typer.BadParameter("--match needs some text", param_hint="--match")
    wanted = parse_ids(ids or [])
    scope = resolve_project(project, all_projects)
    with open_home(home) as recall:
        selected = recall.select(ids=wanted or None, project=scope, session_id=session,
                                 before=parse_when(before) if before else None, match=match)
        missing = sorted(set(wanted) - {m.id for m in selected})
        others = [m for m in selected if not recall.is_mine(m)]  # a teammate's shared memory
        selected = [m for m in selected if recall.is_mine(m)]
        if selected and (session or before or match is not None or not wanted):  # a selection, not ids named
            confirm_or_stop(f"Forget {memories_by_project(selected)}?", yes)
        gone = recall.forget([m.id for m in selected], also=[match] if match else [])
    for memory in others:
        typer.echo(f"#{memory.id} is {memory.owner}'s: only its author can forget it", err=True)
    if json_output:
        emit_json({"forgotten": [m.id for m in gone], "projects": sorted({m.project for m in gone}),
                   "not_found": missing, "not_yours": [m.id for m in others]})
    elif gone:
        typer.echo(f"forgot {memories_by_project(gone)}")
    elif not missing and not others:
        typer.echo("No memory matches" + (f" in {scope}." if scope else "."))
    if missing:
        where = f" in {scope} (other projects: --all-projects)" if scope else ""
        typer.echo(f"not found{where}: {', '.join(f'#{i}' for i in missing)}", err=True)
    if missing or (others and wanted):
        raise typer.Exit(1)


@app.command()
def purge(
    everything: Annotated[bool, typer.Option("--all", help="Required: every memory of every project.")] = False,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask.")] = False,
    home: HomeOption = None,
    json_output: JsonOption = False,
):
    """Delete every memory of every project, the spool and the logs. Example: recall purge --all --yes"""
    if not everything:
        raise typer.BadParameter("purge deletes every memory of every project: say so with --all")
    with open_home(home, ingest=False) as recall:
        confirm_or_stop(f"Delete all {plural(recall.memory_count(), 'memory', 'memories')} "
                        f"of every project in {recall.paths.home}?", yes)
        report = recall.purge()
    if json_output:
        emit_json(report)
        return
    typer.echo(f"purged {plural(report['memories'], 'memory', 'memories')}"
               + (f" ({', '.join(f'{n} in {p}' for p, n in sorted(report['projects'].items()))})"
                  if report["projects"] else "")
               + f", {plural(report['spool_files'], 'spooled event')} and {plural(report['log_files'], 'log file')}")


@app.command()
def remember(
    text: Annotated[str, typer.Argument(help="What to keep, in your words.")],
    global_scope: Annotated[bool, typer.Option("--global", help="Keep it for every project (a standing "
                                               "preference that follows you).")] = False,
    team: Annotated[bool, typer.Option("--team", help="Share it with everyone on the shared database (after a "
                                       "secret scan).")] = False,
    project: ProjectOption = None,
    home: HomeOption = None,
    json_output: JsonOption = False,
):
    """Keep a note for later sessions. Examples: recall remember --global "I use uv, never pip install into
    the system Python" · recall remember --team "Releases are cut on Tuesdays, never on Fridays" """
    with open_home(home, ingest=False) as recall:
        try:
            memory = recall.remember(text, resolve_project(project, False), scope="global" if global_scope
                                     else "project", team=team)
        except ValueError as exc:
            typer.echo(f"recall: {exc}", err=True)
            raise typer.Exit(1) from None
    if json_output:
        emit_json(memory.model_dump(mode="json"))
        return
    typer.echo(f"remembered #{memory.id} for " + ("every project" if global_scope else memory.project)
               + (", shared with the team" if memory.visibility == "team" else ""))


@app.command()
def share(
    ids: Annotated[list[str], typer.Argument(help="Memory ids (12 or #12).")],
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask (needed without a terminal).")] = False,
    home: HomeOption = None,
    json_output: JsonOption = False,
):
    """Share your memories with everyone on the shared database: their text alone (the turns around them
    and their details stay yours), after a fresh secret scan. Shows exactly what will be shared and asks
    first. Example: recall share 12 15"""
    wanted = parse_ids(ids)
    with open_home(home, ingest=False) as recall:
        ready, refused = recall.share_check(wanted)
        for memory_id, why in refused.items():
            typer.echo(f"#{memory_id} is not shared: {why}", err=True)
        if not ready:
            raise typer.Exit(1)
        if not json_output:
            typer.echo(f"This text will be shared with everyone on {recall.store_location()}:")
            for memory in ready:
                typer.echo(f"  #{memory.id} ({memory.kind}, {memory.project}): {memory.text}")
            if not recall.store_is_shared():
                typer.echo("(this store is the local SQLite file: others see team memories once you share a "
                           "PostgreSQL; see the README)")
        confirm_or_stop(f"Share {plural(len(ready), 'memory', 'memories')}?", yes, declined="Nothing shared.")
        shared = recall.share([m.id for m in ready])
    if json_output:
        emit_json({"shared": shared, "refused": {str(k): v for k, v in refused.items()}})
    else:
        typer.echo("shared " + ", ".join(f"#{i}" for i in shared))
    if refused:
        raise typer.Exit(1)


@app.command()
def unshare(
    ids: Annotated[list[str], typer.Argument(help="Memory ids (12 or #12).")],
    home: HomeOption = None,
    json_output: JsonOption = False,
):
    """Take shared memories back: private to you again, with what they held before. Example: recall unshare 12"""
    wanted = parse_ids(ids)
    with open_home(home, ingest=False) as recall:
        done = recall.unshare(wanted)
    missing = [i for i in wanted if i not in done]
    if json_output:
        emit_json({"unshared": done, "not_changed": missing})
    elif done:
        typer.echo("private again: " + ", ".join(f"#{i}" for i in done))
    if missing:
        typer.echo("not changed (not a shared memory of yours): " + ", ".join(f"#{i}" for i in missing), err=True)
        raise typer.Exit(1)


def _set_pins(ids: list[str], home: Path | None, pinned: bool, json_output: bool) -> None:
    wanted = parse_ids(ids)
    with open_home(home, ingest=False) as recall:
        before = {m.id: m.pinned for m in recall.get(wanted)}
        found = recall.pin(wanted, pinned)
    verb = "pinned" if pinned else "unpinned"
    changed = [i for i in found if before.get(i) != pinned]
    unchanged = [i for i in found if before.get(i) == pinned]
    missing = sorted(set(wanted) - set(found))
    if json_output:
        emit_json({verb: changed, f"already_{verb}" if pinned else "not_pinned": unchanged, "not_found": missing})
    else:
        if changed:
            typer.echo(f"{verb} " + ", ".join(f"#{i}" for i in changed))
        for i in unchanged:
            typer.echo(f"#{i} was already pinned" if pinned else f"#{i} was not pinned")
    if missing:
        typer.echo("not found: " + ", ".join(f"#{i}" for i in missing), err=True)
        raise typer.Exit(1)


@app.command()
def pin(ids: Annotated[list[str], typer.Argument(help="Memory ids (12 or #12).")], home: HomeOption = None,
        json_output: JsonOption = False):
    """Pin memories: always a candidate for injection, first among equals."""
    _set_pins(ids, home, True, json_output)


@app.command()
def unpin(ids: Annotated[list[str], typer.Argument(help="Memory ids (12 or #12).")], home: HomeOption = None,
          json_output: JsonOption = False):
    """Unpin memories."""
    _set_pins(ids, home, False, json_output)


@app.command()
def pause(
    project: ProjectOption = None,
    all_projects: Annotated[bool, typer.Option("--all", help="Pause every project.")] = False,
    duration: Annotated[str | None, typer.Option("--for", help="For how long (30m, 2h, 1d); default: until "
                                                    "`recall resume`.")] = None,
    home: HomeOption = None,
    json_output: JsonOption = False,
):
    """Stop capturing and injecting, for a project or everything, for a while or until `recall resume`.
    (RECALL_DISABLE=1 in the environment does the same for one process tree.)"""
    from ...shared import pause as pausing

    until = time.time() + parse_duration(duration) if duration else None
    scope = None if all_projects else resolve_project(project, False)
    pausing.pause(str(DataPaths(home).home), scope, until)
    if json_output:
        emit_json({"paused": scope or "every project", "until": until})
        return
    when = f"until {time.strftime('%Y-%m-%d %H:%M', time.localtime(until))}" if until else "until `recall resume`"
    typer.echo(f"paused {'every project' if scope is None else scope} {when}")


@app.command()
def resume(
    project: ProjectOption = None,
    all_projects: Annotated[bool, typer.Option("--all", help="Resume everything.")] = False,
    home: HomeOption = None,
    json_output: JsonOption = False,
):
    """Capture and inject again after `recall pause`."""
    from ...shared import pause as pausing

    scope = None if all_projects else resolve_project(project, False)
    left = pausing.resume(str(DataPaths(home).home), scope)
    if scope is not None and left is not None and left["all"] is not False:  # nothing changed: claim nothing
        if json_output:
            emit_json({"resumed": None, "still_paused": ["every project"]})
        else:
            typer.echo(f"still paused: every project, {scope} included (recall resume --all resumes everything)")
        raise typer.Exit(1)
    still = (["every project"] if left["all"] is not False else sorted(left["projects"])) if left else []
    if json_output:
        emit_json({"resumed": scope or "every project", "still_paused": still})
        return
    typer.echo(f"resumed {'every project' if scope is None else scope}")
    if still:
        typer.echo("still paused: " + ", ".join(still) + " (recall resume --all resumes everything)")

