"""`recall facts`: what recall knows now about a project: its current facts (with the values they replaced),
the procedures that worked and the decisions taken, read from the memories (core/knowledge/)."""

from __future__ import annotations

from typing import Annotated, Literal

import typer

from ...core.retrieval.knowledge import day
from ...shared.text import one_line
from .app import HomeOption, JsonOption, ProjectOption, app, emit_json, open_home, resolve_project

KINDS = {"fact": ["fact"], "procedure": ["procedure"], "decision": ["decision"], "all": None}
LINE_CHARS = 200


@app.command()
def facts(
    project: ProjectOption = None,
    kind: Annotated[Literal["fact", "procedure", "decision", "all"], typer.Option(
        "--kind", help="Which knowledge: facts (current values), procedures (commands that worked), decisions, or "
        "all.")] = "fact",
    limit: Annotated[int, typer.Option("--limit", "-n", min=1, max=1000)] = 50,
    home: HomeOption = None,
    json_output: JsonOption = False,
):
    """The current facts of a project, newest first, each with the value it replaced and when; --kind for the
    procedures that worked here or the decisions taken. Example: recall facts --kind all"""
    scope = resolve_project(project, False)
    if scope is None:
        raise typer.BadParameter("facts are per project: give --project or run it inside one")
    with open_home(home) as recall:
        items = recall.knowledge(scope, KINDS[kind], limit)
    if json_output:
        emit_json([item.model_dump(mode="json") for item in items])
        return
    if not items:
        typer.echo(f"no {'knowledge' if kind == 'all' else kind + 's'} yet for {scope}")
        return
    for item in items:
        file = item.file or (item.written.file if item.written else "")  # a statement: where the value is set
        where = f" · {file}" if file else ""
        typer.echo(f"- [{item.kind} · since {day(item.created_at)}{where} · from #{item.source_id}] "
                   f"{one_line(item.text, LINE_CHARS)}")
        for earlier in item.replaced:
            typer.echo(f"    was: {one_line(earlier.text, LINE_CHARS - 10)} (since {day(earlier.created_at)}, "
                       f"from #{earlier.source_id})")
