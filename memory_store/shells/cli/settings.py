"""`recall config`: the settings in effect, where each came from, and what config.json holds that was not used."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from .app import HomeOption, JsonOption, app, emit_json


@app.command("config")
def show_config(
    everything: Annotated[bool, typer.Option("--all", help="Every setting, defaults included.")] = False,
    home: HomeOption = None,
    json_output: JsonOption = False,
):
    """The settings in effect: those config.json or the environment changed (--all: every one), each with its
    default and where it came from, then what could not be used. Reference: docs/configuration.md."""
    from ...api import settings

    data = settings(home)
    if json_output:
        emit_json(data)
        return
    typer.echo(f"file       {data['file']}" + ("" if data["exists"] else " (absent: every setting is its default)"))
    shown = [s for s in data["settings"] if everything or s["source"] != "default"]
    if not shown:
        typer.echo("settings   all defaults (recall config --all lists them)")
    for setting in shown:
        value, default = json.dumps(setting["value"], default=str), json.dumps(setting["default"], default=str)
        source = setting["source"] if setting["source"] == "default" else f"{setting['source']}; default {default}"
        typer.echo(f"{setting['key']} = {value}  ({source})")
    for problem in data["problems"]:
        typer.echo(f"not used   {problem}")
    if data["problems"]:
        raise typer.Exit(1)
