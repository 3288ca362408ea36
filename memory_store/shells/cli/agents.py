"""`recall install codex`: recall in another coding agent, sharing the memory Claude Code's sessions keep."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from .app import JsonOption, emit_json, install_app

CodexHomeOption = Annotated[Path | None, typer.Option("--codex-home", help="Codex's folder (default: $CODEX_HOME, "
                                                                          "else ~/.codex).")]


@install_app.command("codex")
def install_codex(
    codex_home: CodexHomeOption = None,
    uninstall: Annotated[bool, typer.Option("--uninstall", help="Take out what an install wrote, nothing else.")] = False,
    json_output: JsonOption = False,
):
    """Register recall's hooks and MCP server in OpenAI's Codex CLI, trusted so that `codex` and `codex exec` run
    them: hooks.json gets recall's hook groups after yours, config.toml one block at its end (the MCP server and the
    hooks' trust entries). Run it again after moving recall; --uninstall takes out exactly that."""
    from ...api import install_codex as change
    from ...integrations.codex import CodexConfigError

    try:
        done = change(codex_home, remove=uninstall)
    except CodexConfigError as exc:
        typer.echo(f"recall: {exc}", err=True)
        raise typer.Exit(1) from None
    if json_output:
        emit_json(done)
        return
    if uninstall:
        if not (done["hooks"] or done["trusted"] or done["mcp_server"]):
            typer.echo(f"recall was not installed in Codex ({done['codex_home']}): nothing to take out")
            return
        typer.echo(f"took recall out of Codex ({done['codex_home']}):")
        typer.echo(f"  {done['hooks_file']}: recall's hooks for {', '.join(done['hooks']) or 'no event'}")
        typer.echo(f"  {done['config_file']}: the MCP server and {len(done['trusted'])} trust entries")
        for path in done["removed_files"]:
            typer.echo(f"  removed {path} (it held recall's lines only)")
        return
    typer.echo(f"recall is installed in Codex ({done['codex_home']}):")
    typer.echo(f"  {done['hooks_file']}: hooks for {', '.join(done['hooks'])} (after any of yours)")
    typer.echo(f"  {done['config_file']}: [mcp_servers.recall] and {len(done['trusted'])} [hooks.state] trust "
               "entries, in one block at its end")
    typer.echo("Codex sessions now share this machine's recall memory with Claude Code. Check: recall status; "
               "undo: recall install codex --uninstall")
