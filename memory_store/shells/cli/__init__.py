"""The `recall` command line: a thin shell over `memory_store.api`. Each command parses its options,
calls one API method and renders the result (text, or JSON with `--json`). The commands live by
concern in this package's modules; importing them registers them on `app`."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from ...core.storage import StorageUnavailable
from ...version import __version__
from . import agents, bench, keeping, knowing, maintenance, reading, settings, team  # noqa: F401  (each registers its commands)
from .app import app


@app.callback(invoke_without_command=True)
def main_callback(
    version: Annotated[bool, typer.Option("--version", help="Show the version.")] = False,
):
    if version:
        typer.echo(f"recall {__version__}")
        raise typer.Exit()


def main() -> None:
    if len(sys.argv) == 1:  # bare `recall`: its help is the answer, not a usage error (click exits 2 for it)
        sys.argv.append("--help")
    try:
        app(prog_name="recall")  # also when run as `python -m memory_store.shells.cli` (the plugin's scripts/recall)
    except StorageUnavailable as exc:  # a shared database that cannot be reached: one line, not a traceback
        typer.echo(f"recall: {exc}", err=True)
        sys.exit(1)

