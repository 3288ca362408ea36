"""Commands that look after the installation: import, doctor, reindex, demo, ui, mcp, worker."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Annotated

import typer

from ...shared import worker_client
from ...shared.paths import DataPaths
from ...shared.projects import project_for
from ...shared.text import one_line
from .app import HomeOption, JsonOption, PluginDataOption, app, emit_json, open_home, plural, worker_app


@app.command("import")
def import_command(
    paths: Annotated[list[Path], typer.Argument(help="Transcript files or directories (e.g. ~/.claude/projects, "
                                                     "~/.codex/sessions).")],
    embed: Annotated[bool, typer.Option("--embed/--no-embed", help="Embed the new memories now.")] = True,
    home: HomeOption = None,
    json_output: JsonOption = False,
):
    """Import Claude Code transcripts and Codex sessions (idempotent). Example: recall import ~/.claude/projects
    ~/.codex/sessions"""
    from ...core.capture.transcripts import find_transcripts

    missing = [p for p in paths if not p.expanduser().exists()]
    for path in missing:
        typer.echo(f"recall: {path}: no such file or directory", err=True)
    files = find_transcripts([p for p in paths if p not in missing])
    if not files:
        if not missing:
            typer.echo(f"recall: no transcript (.jsonl, .jsonl.zst) files in {', '.join(map(str, paths))}", err=True)
        raise typer.Exit(1)
    with open_home(home) as recall:
        with typer.progressbar(length=len(files), label="Importing transcripts", file=sys.stderr) as bar:
            report = recall.import_transcripts(paths, progress=lambda _path: bar.update(1))
        embedded = 0
        pending = recall.pending_work() if embed else 0
        if pending:
            with typer.progressbar(length=pending, label="Embedding", file=sys.stderr) as bar:
                embedded = recall.embed_backlog(progress=bar.update)
            if recall.embedding_error():
                typer.echo(f"embeddings skipped: {recall.embedding_error()}", err=True)
    result = {"files": report.files, "unchanged_files": report.skipped_files, "entries": report.entries,
              "events": report.events, "new_memories": report.new_memories, "duplicates": report.duplicates,
              "embedded": embedded, "subagents": report.subagents, "not_the_users_lines": report.not_the_users,
              "errors": report.errors[:20], "error_count": len(report.errors),
              "failed_files": report.failed + [f"{p}: no such file or directory" for p in missing]}
    failed = result["failed_files"]
    if json_output:
        emit_json(result)
    else:
        typer.echo(f"{plural(report.files, 'file')} imported ({report.skipped_files} unchanged), "
                   f"{plural(report.entries, 'entry', 'entries')}, "
                   f"{plural(report.new_memories, 'new memory', 'new memories')}, "
                   f"{plural(report.duplicates, 'duplicate')} merged, {embedded} embedded; "
                   f"{plural(report.subagents, 'subagent')} read into their namespaces, "
                   f"{plural(report.not_the_users, 'line')} the agent wrote as the user's left out, "
                   f"{plural(len(report.errors), 'unreadable line')}.")
        for problem in report.failed:
            typer.echo(f"  not imported: {problem}", err=True)
        shown = report.errors[:5]
        for error in shown:
            typer.echo(f"  skipped line: {error}", err=True)
        if len(report.errors) > len(shown):
            typer.echo(f"  … and {len(report.errors) - len(shown)} more skipped lines "
                       f"({len(report.errors)} in all; --json lists 20)", err=True)
    if failed:
        raise typer.Exit(1)


@app.command()
def doctor(
    repair: Annotated[bool, typer.Option("--repair", help="Rebuild derived indexes.")] = False,
    home: HomeOption = None,
    json_output: JsonOption = False,
):
    """Check the installation and the store; --repair rebuilds derived indexes."""
    with open_home(home, ingest=repair) as recall:
        repaired = recall.repair() if repair else []
        results = recall.diagnose()
    if json_output:
        emit_json({"ok": all(c.ok for c in results), "checks": [c.as_dict() for c in results],
                   "repaired": repaired})
    else:
        for line in repaired:
            typer.echo(f"repaired: {line}")
        for check in results:
            typer.echo(f"{'ok ' if check.ok else 'BAD'}  {check.name:<16} {check.detail}")
            if not check.ok and check.hint:
                typer.echo(f"     {'':<16} → {check.hint}")
    if not all(c.ok for c in results):
        raise typer.Exit(1)


@app.command()
def reindex(home: HomeOption = None, json_output: JsonOption = False):
    """Re-embed every memory with the configured model (after changing it)."""
    # A running worker would embed the same backlog beside us (twice the work on the same cores); the next hook
    # starts it again.
    if worker_client.stop_worker(DataPaths(home)):
        typer.echo("the worker was stopped for the reindex (the next hook starts it again)", err=True)
    with open_home(home) as recall:
        try:
            model = recall.embedding_model_name()
        except RuntimeError as exc:
            typer.echo(f"cannot reindex: {exc}", err=True)
            raise typer.Exit(1) from None
        total = recall.memory_count()
        with typer.progressbar(length=total, label=f"Embedding with {model}", file=sys.stderr) as bar:
            done = recall.reindex(progress=bar.update)
    if json_output:
        emit_json({"embedded": done, "model": model})
    else:
        typer.echo(f"{done} memories embedded with {model}")


@app.command()
def demo(
    keep: Annotated[bool, typer.Option("--keep", help="Keep the temporary data dir.")] = False,
    json_output: JsonOption = False,
):
    """Replay a recorded session through the real hooks into a temporary store and show what
    was captured, what gets injected and what /recall:log-search finds."""
    from ...devtools.demo import run_demo

    result = run_demo(keep=keep, echo=None if json_output else typer.echo)
    if json_output:
        emit_json(result)
    if not result["ok"]:
        raise typer.Exit(1)


@app.command()
@app.command("viewer", hidden=True)  # what a user looking for "the viewer" types first
def ui(
    port: Annotated[int, typer.Option("--port", min=0, max=65535, help="Port on 127.0.0.1 (0: any free one).")] = 0,
    no_browser: Annotated[bool, typer.Option("--no-browser", help="Print the address, do not open a browser.")] = False,
    home: HomeOption = None,
):
    """A local web viewer: projects, search with filters, a memory and its timeline, injections and their
    reasons, pin / unpin / forget. 127.0.0.1 only, behind a random token in the address."""
    from ..viewer import make_server

    recall = open_home(home)
    try:
        server, url = make_server(recall, port)
    except OSError as exc:
        recall.close()
        typer.echo(f"recall: cannot listen on 127.0.0.1:{port}: {exc.strerror or exc}", err=True)
        raise typer.Exit(1) from None
    typer.echo(f"recall ui: {url}\n(Ctrl-C stops it)")
    if not no_browser:
        import webbrowser

        webbrowser.open(url)
    try:
        server.serve_forever(poll_interval=0.5)
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
        recall.close()


@app.command()
def mcp(
    home: HomeOption = None,
    plugin_data: PluginDataOption = None,
    project: Annotated[str | None, typer.Option("--project", help="Default project (default: the current "
                                                   "directory's project).")] = None,
):
    """Run recall's MCP server on stdio (Claude Code starts it from the plugin's .mcp.json)."""
    if plugin_data and not plugin_data.startswith("${") and not os.environ.get("CLAUDE_PLUGIN_DATA"):
        os.environ["CLAUDE_PLUGIN_DATA"] = plugin_data
    from ..mcp_server import serve

    serve(str(home) if home else None, project_for(project) if project else None)


@worker_app.command("status")
def worker_status(home: HomeOption = None, json_output: JsonOption = False):
    """Is a worker running for this data dir?"""
    health = worker_client.health(DataPaths(home), timeout=2.0)
    if json_output:
        emit_json(health or {"ok": False, "error": "no worker answers"})
    elif health:
        typer.echo(f"running: pid {health['pid']}, version {health['version']}, model {health['model']}, "
                   f"{health['pending']} waiting for embeddings, up {health['uptime']} s")
    else:
        typer.echo("not running")


@worker_app.command("stop")
def worker_stop(home: HomeOption = None):
    """Stop the worker (hooks start a new one when needed)."""
    typer.echo("stopped" if worker_client.stop_worker(DataPaths(home)) else "no worker was running")


@worker_app.command("start")
def worker_start(home: HomeOption = None):
    """Start the worker in the background (it stops by itself when idle), and say whether it came up."""
    from ...hook import spawn
    from ...shared.logs import JsonLog

    paths = DataPaths(home)
    before = worker_client.health(paths)
    if before:
        typer.echo(f"already running: pid {before.get('pid')}, data dir {paths.home}")
        return
    what, coming = spawn.start_worker(paths, JsonLog(paths.log_file, "cli"))
    reasons = {"worker-failed": "its last start failed; it is tried again a minute later",
               "failed": f"the first-run setup failed (see {paths.bootstrap_log})",
               "pending": "another process is starting it",
               "bootstrap": "the first-run setup is building its Python (about a minute)"}
    pid, deadline, health = spawn.read_marker(paths)[0], time.monotonic() + 30, None
    while coming and health is None and time.monotonic() < deadline:
        time.sleep(0.1)
        health = worker_client.health(paths)
        if health is None and pid and not spawn.alive(pid):
            break  # it exited without ever answering
    if health:
        typer.echo(f"worker started for {paths.home} (pid {health.get('pid')})")
        return
    from ...shared.logs import worker_out_tail

    tail = worker_out_tail(paths)
    typer.echo(f"recall: the worker did not start: {reasons.get(what, 'it exited at start')}"
               + (f". From {paths.logs / 'worker.out'}:\n{tail}" if tail else ""), err=True)
    raise typer.Exit(1)


@app.command()
def status(home: HomeOption = None, json_output: JsonOption = False):
    """Is recall working, and if not, why: the worker (pid, uptime, memory, last error), a pause, whether the data
    dir can be written, events and embeddings waiting, settings of config.json not used."""
    from ...api import status as collect

    data = collect(home)
    folder, worker = data["data_dir"], data["worker"]
    unreachable = worker["running"] and worker.get("storage") not in (None, "ok")
    if json_output:
        emit_json(data)
        if unreachable or not folder["writable"]:  # the same exit as the text form
            raise typer.Exit(1)
        return
    now = data["at"]
    typer.echo(f"data dir   {folder['path']} " + ("(writable)" if folder["writable"] else
                                                  f"(NOT writable: {folder['problem']}; nothing is captured)"))
    typer.echo(f"store      {data['store']['backend']}: {data['store']['location']}")
    if worker["running"]:
        typer.echo(f"worker     running: pid {worker['pid']}, up {age_of(worker['uptime_s'])}, "
                   f"{worker['rss_mb']} MB, model {worker['model']}"
                   + (f"; store: {worker['storage']}" if worker.get("storage") not in (None, "ok") else ""))
    elif not folder["writable"]:
        typer.echo("worker     not running (none can start while the data dir cannot be written)")
    else:
        typer.echo("worker     not running (the next hook starts it)")
    if worker.get("last_error"):
        typer.echo(f"last error {one_line(str(worker['last_error']), 300)}")
    paused = data["paused"]
    if not paused:
        typer.echo("paused     no")
    elif paused.get("by"):
        typer.echo(f"paused     everything, for processes started with {paused['by']}=1")
    else:
        parts = []
        if paused["everything"]:
            parts.append("every project " + until_text(paused["until"], now))
        parts += [f"{project} {until_text(until, now)}" for project, until in paused.get("projects", {}).items()]
        typer.echo("paused     " + "; ".join(parts) + " (recall resume)")
    spool = data["spool"]
    typer.echo(f"spool      {plural(spool['waiting'], 'event')} waiting"
               + (f", {spool['unreadable']} unreadable kept aside" if spool["unreadable"] else ""))
    waiting = data["embeddings_waiting"]
    typer.echo("embeddings " + (f"{waiting} waiting" if waiting is not None
                                else "unknown (the store cannot be reached)" if unreachable
                                else "unknown (no worker)"))
    problems = data["config_problems"]
    typer.echo("config     " + ("valid" if not problems else problems[0]))
    codex = data["codex"]
    if codex["installed"] or codex["problem"]:
        heard = "no Codex hook yet" if codex["last_hook_at"] is None else \
            f"last Codex hook {age_of(now - codex['last_hook_at'])} ago"
        typer.echo("codex      " + (codex["problem"] or f"installed in {codex['codex_home']}: {codex['trusted']}/"
                                    f"{codex['expected']} hooks trusted, MCP server "
                                    f"{'there' if codex['mcp_server'] else 'missing'}; {heard}"))
    for problem in problems[1:]:
        typer.echo(f"           {problem}")
    if unreachable or not folder["writable"]:  # recall is not working: say so to scripts too
        raise typer.Exit(1)


def age_of(seconds) -> str:
    seconds = int(seconds or 0)
    hours, rest = divmod(seconds, 3600)
    return f"{hours} h {rest // 60} min" if hours else f"{rest // 60} min {rest % 60} s"


def until_text(until, now: float) -> str:
    if until is None:
        return "until `recall resume`"
    return "until " + time.strftime("%Y-%m-%d %H:%M", time.localtime(until))
