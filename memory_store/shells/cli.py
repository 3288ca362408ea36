"""The `recall` command line: a thin shell over `memory_store.api`. Each command parses its
options, calls one API method and renders the result (text, or JSON with `--json`).

Every command takes `--home` (default: $RECALL_HOME, $CLAUDE_PLUGIN_DATA, the installed
plugin's data dir, else the platform data dir).
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Annotated, Optional

import typer

from ..version import __version__
from ..core.inject import age
from ..shared.projects import project_for
from ..shared import worker_client
from ..shared.paths import DataPaths
from ..shared.text import one_line

# Plain (click) help: the rich formatter of this typer labels every flag `<bool>` as if it took a value.
app = typer.Typer(help="recall: local memory for Claude Code.", no_args_is_help=True, add_completion=False,
                  pretty_exceptions_enable=False, rich_markup_mode=None)
bench_app = typer.Typer(help="Measure retrieval quality and hook latency.", no_args_is_help=True,
                        rich_markup_mode=None)
worker_app = typer.Typer(help="Control the background worker.", no_args_is_help=True, rich_markup_mode=None)
app.add_typer(bench_app, name="bench")
app.add_typer(worker_app, name="worker")

HomeOption = Annotated[Optional[Path], typer.Option("--home", help="Data directory.", envvar=None)]
JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON.")]
PluginDataOption = Annotated[Optional[str], typer.Option("--plugin-data", hidden=True,
                                                         help="Claude Code's plugin data dir (a fallback like "
                                                              "$CLAUDE_PLUGIN_DATA).")]


def open_home(home: Optional[Path], *, ingest: bool = True):
    """The API for this data dir, with the events spooled while no worker ran stored first (so
    what the command reads is complete). recall's own errors become one clear line."""
    from ..api import open_recall

    try:
        recall = open_recall(home)
    except Exception as exc:  # unreadable data dir, newer schema …
        typer.echo(f"recall: cannot open the store in {DataPaths(home).home}: {exc}", err=True)
        raise typer.Exit(1) from exc
    if ingest:
        recall.ingest_spool()
    return recall


def emit_json(data) -> None:
    typer.echo(json.dumps(data, ensure_ascii=False, indent=2, default=str))


def resolve_project(project: Optional[str], all_projects: bool) -> Optional[str]:
    if all_projects:
        return None
    return project_for(project or os.getcwd())


@app.command()
def search(
    query: Annotated[str, typer.Argument(help="What to look for.")],
    limit: Annotated[int, typer.Option("--limit", "-n", min=1, max=200)] = 10,
    project: Annotated[Optional[str], typer.Option("--project", help="Project path (default: the current "
                                                   "directory's project).")] = None,
    all_projects: Annotated[bool, typer.Option("--all-projects", help="Search every project.")] = False,
    index: Annotated[bool, typer.Option("--index", help="Compact index: id, age, kind, one line.")] = False,
    home: HomeOption = None,
    json_output: JsonOption = False,
    plugin_data: PluginDataOption = None,
):
    """Search memories, old ones included. Example: recall search "api key rotation" --limit 5"""
    from ..api import search_anywhere

    if project and all_projects:
        raise typer.BadParameter("use either --project or --all-projects")
    scope = resolve_project(project, all_projects)
    if plugin_data and not os.environ.get("CLAUDE_PLUGIN_DATA"):
        os.environ["CLAUDE_PLUGIN_DATA"] = plugin_data
    hits = search_anywhere(home, query, limit, scope)
    if json_output:
        emit_json([h.model_dump(mode="json") for h in hits])
        return
    if not hits:
        typer.echo(f"No memories match {query!r}" + (f" in {scope}." if scope else "."))
        return
    now = time.time()
    if index:
        typer.echo(f"recall: {len(hits)} memories for {query!r}" + (f" in {scope}" if scope else ""))
    for hit in hits:
        created = hit.created_at.timestamp()
        where = f"  [{hit.project}]" if scope is None else ""  # --all-projects: say whose it is
        if index:
            typer.echo(f"#{hit.id:<6} {age(now - created):>9}  {hit.kind:<8} {one_line(hit.text, 100)}{where}")
        else:
            typer.echo(f"#{hit.id}  {hit.kind}  {age(now - created)}  score {hit.score:.3f}{where}")
            typer.echo(f"    {one_line(hit.text, 300)}")
    if index:
        typer.echo("Expand one: `recall show ID` · what happened around it: `recall timeline ID`")


@app.command()
def explain(
    prompt: Annotated[str, typer.Argument(help="The prompt, as you would type it to Claude.")],
    project: Annotated[Optional[str], typer.Option("--project", help="Project path (default: the current "
                                                   "directory's project).")] = None,
    home: HomeOption = None,
    json_output: JsonOption = False,
):
    """Would this prompt get memories injected, which, and why? A dry run: nothing is stored.
    Example: recall explain "why did the nightly export fail?" """
    scope = resolve_project(project, False)
    with open_home(home) as recall:
        decision, block = recall.explain(prompt, scope)
    if json_output:
        emit_json({**decision.as_dict(), "project": scope, "injected": block})
        return
    typer.echo(f"intent: {decision.intent.kind} ({'; '.join(decision.intent.reasons)})")
    if not decision.searched:
        typer.echo("not searched: nothing is injected for this kind of prompt")
    else:
        window = f"the last {decision.window_days:g} days" if decision.window_days else "all time"
        typer.echo(f"searched {window} in {scope}: {len(decision.candidates)} candidate(s)")
    for c in decision.candidates:
        s = c.signals
        sim = "-" if s.get("similarity") is None else f"{s['similarity']:.2f}"
        typer.echo(f"  {'TAKE' if c.taken else 'skip'} #{c.memory.id:<6} {c.memory.kind:<8} evidence {c.evidence:.2f} "
                   f"(cosine {sim}, coverage {s.get('coverage', 0):.2f}, lexical #{s.get('lexical_rank')}, "
                   f"dense #{s.get('dense_rank')})  {one_line(c.memory.text, 70)}")
        typer.echo(f"       {c.why}")
    typer.echo(block if block else "→ nothing injected")


def print_memory(memory) -> None:
    stamp = memory.created_at.astimezone().strftime("%Y-%m-%d %H:%M")
    typer.echo(f"#{memory.id}  {memory.kind}  {stamp}  session {memory.session_id or '-'}")
    typer.echo(f"project: {memory.project}")
    if memory.superseded_by:
        typer.echo(f"superseded by #{memory.superseded_by}")
    typer.echo(memory.text)


@app.command()
def show(
    ids: Annotated[list[str], typer.Argument(help="Memory ids (12 or #12).")],
    home: HomeOption = None,
    json_output: JsonOption = False,
):
    """Show memories in full. Example: recall show 12 15"""
    wanted = parse_ids(ids)
    with open_home(home) as recall:
        memories = recall.get(wanted)
    missing = set(wanted) - {m.id for m in memories}
    if json_output:
        emit_json([m.model_dump(mode="json") for m in memories])
        if missing:
            typer.echo(f"not found: {', '.join(map(str, sorted(missing)))}", err=True)
            raise typer.Exit(1)
        return
    for memory in memories:
        print_memory(memory)
        typer.echo("")
    if missing:
        typer.echo(f"not found: {', '.join(map(str, sorted(missing)))}", err=True)
        raise typer.Exit(1)


@app.command()
def timeline(
    memory_ref: Annotated[str, typer.Argument(help="Memory id (12 or #12).")],
    before: Annotated[int, typer.Option(min=0)] = 5,
    after: Annotated[int, typer.Option(min=0)] = 5,
    home: HomeOption = None,
    json_output: JsonOption = False,
):
    """What happened around a memory (same session). Example: recall timeline 12"""
    memory_id = parse_ids([memory_ref])[0]
    with open_home(home) as recall:
        memories = recall.timeline(memory_id, before, after)
    if not memories:
        if json_output:
            emit_json([])
        typer.echo(f"memory #{memory_id} not found", err=True)
        raise typer.Exit(1)
    if json_output:
        emit_json([m.model_dump(mode="json") for m in memories])
        return
    for memory in memories:
        marker = ">>" if memory.id == memory_id else "  "
        stamp = memory.created_at.astimezone().strftime("%Y-%m-%d %H:%M:%S")
        typer.echo(f"{marker} #{memory.id:<6} {stamp}  {memory.kind:<8} {one_line(memory.text, 110)}")


@app.command("import")
def import_command(
    paths: Annotated[list[Path], typer.Argument(help="Transcript files or directories (e.g. ~/.claude/projects).")],
    embed: Annotated[bool, typer.Option("--embed/--no-embed", help="Embed the new memories now.")] = True,
    home: HomeOption = None,
    json_output: JsonOption = False,
):
    """Import Claude Code transcripts (idempotent). Example: recall import ~/.claude/projects"""
    from ..core.transcripts import find_transcripts

    missing = [p for p in paths if not p.expanduser().exists()]
    for path in missing:
        typer.echo(f"recall: {path}: no such file or directory", err=True)
    files = find_transcripts([p for p in paths if p not in missing])
    if not files:
        if not missing:
            typer.echo(f"recall: no transcript (.jsonl) files in {', '.join(map(str, paths))}", err=True)
        raise typer.Exit(1)
    with open_home(home) as recall:
        with typer.progressbar(length=len(files), label="Importing transcripts", file=sys.stderr) as bar:
            report = recall.import_transcripts(paths, progress=lambda _path: bar.update(1))
        embedded = 0
        pending = recall.store.pending_embeddings() if embed else 0
        if pending:
            with typer.progressbar(length=pending, label="Embedding", file=sys.stderr) as bar:
                embedded = recall.embed_backlog(progress=bar.update)
            if recall.models.embedder_error:
                typer.echo(f"embeddings skipped: {recall.models.embedder_error}", err=True)
    result = {"files": report.files, "unchanged_files": report.skipped_files, "entries": report.entries,
              "events": report.events, "new_memories": report.new_memories, "duplicates": report.duplicates,
              "embedded": embedded, "errors": report.errors[:20], "error_count": len(report.errors),
              "failed_files": report.failed + [f"{p}: no such file or directory" for p in missing]}
    failed = result["failed_files"]
    if json_output:
        emit_json(result)
    else:
        typer.echo(f"{plural(report.files, 'file')} imported ({report.skipped_files} unchanged), "
                   f"{plural(report.entries, 'entry', 'entries')}, {plural(report.new_memories, 'new memory', 'new memories')}, "
                   f"{plural(report.duplicates, 'duplicate')} merged, {embedded} embedded.")
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
def stats(home: HomeOption = None, json_output: JsonOption = False):
    """Counts, sizes and hook latency percentiles from real use."""
    with open_home(home) as recall:
        data = recall.stats()
    if json_output:
        emit_json(data)
        return
    typer.echo(f"data dir   {data['home']} ({data['db_bytes'] / 1e6:.1f} MB)")
    typer.echo(f"memories   {data['memories']} in {plural(data['projects'], 'project')}, "
               f"{plural(data['sessions'], 'session')}; {data['superseded']} superseded")
    typer.echo("by kind    " + ", ".join(f"{k} {v}" for k, v in sorted(data["by_kind"].items())))
    typer.echo(f"vectors    {data['vectors']} ({data['vector_model'] or 'no index yet'}), "
               f"{data['pending_embeddings']} waiting")
    typer.echo(f"span       {data['oldest'] or '-'} … {data['newest'] or '-'}")
    strength = data["strength"]
    if strength["mean"] is not None:
        typer.echo(f"strength   mean {strength['mean']:.2f}; {strength['consolidated']} consolidated (decay no more), "
                   f"{strength['weak']} weak (below 0.10)")
    pruned = data["pruned"]
    typer.echo("pruned     " + (", ".join(f"{plural(n, kind)}" for kind, n in pruned.items()) + " (trivial small talk)"
                                if pruned else "nothing yet"))
    latency = data["hook_latency_ms"]
    if latency:
        typer.echo("hook time in process (ms):")
        for hook, row in latency.items():
            routes = ", ".join(f"{route} {count}" for route, count in sorted(row["routes"].items()))
            typer.echo(f"  {hook:<20} n={row['n']:<6} p50 {row['p50']:>7}  p95 {row['p95']:>7}  p99 {row['p99']:>7}"
                       f"  ({routes})")


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


def plural(count: int, word: str, many: str | None = None) -> str:
    return f"{count} {word if count == 1 else (many or word + 's')}"


def memories_by_project(memories) -> str:
    counts: dict[str, int] = {}
    for memory in memories:
        counts[memory.project] = counts.get(memory.project, 0) + 1
    return ", ".join(f"{plural(n, 'memory', 'memories')} in {project}" for project, n in sorted(counts.items()))


def confirm_or_stop(question: str, yes: bool) -> None:
    """Ask before a destructive change; without a terminal, --yes is required."""
    if yes:
        return
    if not sys.stdin.isatty():
        typer.echo(f"{question} Not done: rerun with --yes to confirm.", err=True)
        raise typer.Exit(1)
    if not typer.confirm(question, default=False):
        typer.echo("Nothing forgotten.")
        raise typer.Exit(1)


@app.command()
def forget(
    ids: Annotated[Optional[list[str]], typer.Argument(help="Memory ids (12 or #12).", show_default=False)] = None,
    project: Annotated[Optional[str], typer.Option("--project", help="Project path (default: the current "
                                                   "directory's project).")] = None,
    all_projects: Annotated[bool, typer.Option("--all-projects", help="Look in every project.")] = False,
    session: Annotated[Optional[str], typer.Option("--session", help="Every memory of this session.")] = None,
    before: Annotated[Optional[str], typer.Option("--before", help="Memories older than this date (2026-03-01) "
                                                  "or age (30d).")] = None,
    match: Annotated[Optional[str], typer.Option("--match", help="Memories whose text contains this "
                                                 "(case-insensitive); also removed from logs.")] = None,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask before deleting several memories.")] = False,
    home: HomeOption = None,
    json_output: JsonOption = False,
):
    """Delete memories for good: their text leaves the database, its index, the neighbours' context, the
    spool and the logs. Limited to the current project unless --project or --all-projects.
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
        if len(selected) > 1:
            confirm_or_stop(f"Forget {memories_by_project(selected)}?", yes)
        gone = recall.forget([m.id for m in selected], also=[match] if match else [])
    if json_output:
        emit_json({"forgotten": [m.id for m in gone], "projects": sorted({m.project for m in gone}),
                   "not_found": missing})
    elif gone:
        typer.echo(f"forgot {memories_by_project(gone)}")
    elif not missing:
        typer.echo("No memory matches" + (f" in {scope}." if scope else "."))
    if missing:
        where = f" in {scope} (other projects: --all-projects)" if scope else ""
        typer.echo(f"not found{where}: {', '.join(f'#{i}' for i in missing)}", err=True)
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
        confirm_or_stop(f"Delete all {plural(recall.store.counts()['memories'], 'memory', 'memories')} "
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
def reindex(home: HomeOption = None, json_output: JsonOption = False):
    """Re-embed every memory with the configured model (after changing it)."""
    with open_home(home) as recall:
        embedder = recall.models.embedder
        if embedder is None:
            typer.echo(f"cannot reindex: {recall.models.embedder_error or recall.store.vector_error}", err=True)
            raise typer.Exit(1)
        total = recall.store.counts()["memories"]
        with typer.progressbar(length=total, label=f"Embedding with {embedder.name}", file=sys.stderr) as bar:
            done = recall.reindex(progress=bar.update)
    if json_output:
        emit_json({"embedded": done, "model": embedder.name})
    else:
        typer.echo(f"{done} memories embedded with {embedder.name}")


@app.command()
def demo(
    keep: Annotated[bool, typer.Option("--keep", help="Keep the temporary data dir.")] = False,
    json_output: JsonOption = False,
):
    """Replay a recorded session through the real hooks into a temporary store and show what
    was captured, what gets injected and what /recall:log-search finds."""
    from ..devtools.demo import run_demo

    result = run_demo(keep=keep, echo=None if json_output else typer.echo)
    if json_output:
        emit_json(result)
    if not result["ok"]:
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


@app.command()
def remember(
    text: Annotated[str, typer.Argument(help="What to keep, in your words.")],
    global_scope: Annotated[bool, typer.Option("--global", help="Keep it for every project (a standing "
                                               "preference that follows you).")] = False,
    project: Annotated[Optional[str], typer.Option("--project", help="Project path (default: the current "
                                                   "directory's project).")] = None,
    home: HomeOption = None,
    json_output: JsonOption = False,
):
    """Keep a note for later sessions. Example: recall remember --global "I use uv, never pip install into
    the system Python" """
    with open_home(home, ingest=False) as recall:
        try:
            memory = recall.remember(text, resolve_project(project, False), scope="global" if global_scope
                                     else "project")
        except ValueError as exc:
            typer.echo(f"recall: {exc}", err=True)
            raise typer.Exit(1) from None
    if json_output:
        emit_json(memory.model_dump(mode="json"))
        return
    typer.echo(f"remembered #{memory.id} for " + ("every project" if global_scope else memory.project))


def _set_pins(ids: list[str], home: Optional[Path], pinned: bool) -> None:
    wanted = parse_ids(ids)
    with open_home(home, ingest=False) as recall:
        found = recall.pin(wanted, pinned)
    missing = sorted(set(wanted) - set(found))
    if found:
        typer.echo(("pinned " if pinned else "unpinned ") + ", ".join(f"#{i}" for i in found))
    if missing:
        typer.echo("not found: " + ", ".join(f"#{i}" for i in missing), err=True)
        raise typer.Exit(1)


@app.command()
def pin(ids: Annotated[list[str], typer.Argument(help="Memory ids (12 or #12).")], home: HomeOption = None):
    """Pin memories: always a candidate for injection, first among equals."""
    _set_pins(ids, home, True)


@app.command()
def unpin(ids: Annotated[list[str], typer.Argument(help="Memory ids (12 or #12).")], home: HomeOption = None):
    """Unpin memories."""
    _set_pins(ids, home, False)


@app.command()
def injections(
    session: Annotated[Optional[str], typer.Option("--session", help="Only this session.")] = None,
    limit: Annotated[int, typer.Option("--limit", min=1, help="How many injections.")] = 20,
    home: HomeOption = None,
    json_output: JsonOption = False,
):
    """What recall injected, when, into which prompt, and why (newest first)."""
    with open_home(home) as recall:
        receipts = recall.injections(session, limit)
    if json_output:
        emit_json(receipts)
        return
    if not receipts:
        typer.echo("no injections yet")
        return
    now = time.time()
    for receipt in receipts:
        prompt = one_line(receipt["prompt"], 100) if receipt["prompt"] else "(session start)" \
            if receipt["hook"] == "SessionStart" else "(prompt not kept)"
        typer.echo(f"{age(now - receipt['injected_at'])} · {receipt['hook']} · session {receipt['session_id']}: "
                   f"{prompt}")
        for item in receipt["memories"]:
            text = one_line(item["text"], 90) if item.get("text") else "(forgotten)"
            typer.echo(f"  #{item['id']} {item.get('kind') or ''}: {text}\n     why: {item['why']}")


@app.command()
def pause(
    project: Annotated[Optional[str], typer.Option("--project", help="Project path (default: the current "
                                                   "directory's project).")] = None,
    all_projects: Annotated[bool, typer.Option("--all", help="Pause every project.")] = False,
    duration: Annotated[Optional[str], typer.Option("--for", help="For how long (30m, 2h, 1d); default: until "
                                                    "`recall resume`.")] = None,
    home: HomeOption = None,
):
    """Stop capturing and injecting, for a project or everything, for a while or until `recall resume`.
    (RECALL_DISABLE=1 in the environment does the same for one process tree.)"""
    from ..shared import pause as pausing

    until = time.time() + parse_duration(duration) if duration else None
    scope = None if all_projects else resolve_project(project, False)
    pausing.pause(str(DataPaths(home).home), scope, until)
    when = f"until {time.strftime('%Y-%m-%d %H:%M', time.localtime(until))}" if until else "until `recall resume`"
    typer.echo(f"paused {'every project' if scope is None else scope} {when}")


@app.command()
def resume(
    project: Annotated[Optional[str], typer.Option("--project", help="Project path (default: the current "
                                                   "directory's project).")] = None,
    all_projects: Annotated[bool, typer.Option("--all", help="Resume everything.")] = False,
    home: HomeOption = None,
):
    """Capture and inject again after `recall pause`."""
    from ..shared import pause as pausing

    scope = None if all_projects else resolve_project(project, False)
    left = pausing.resume(str(DataPaths(home).home), scope)
    typer.echo(f"resumed {'every project' if scope is None else scope}")
    if left and (left["all"] is not False or left["projects"]):
        still = ["every project"] if left["all"] is not False else sorted(left["projects"])
        typer.echo("still paused: " + ", ".join(still) + " (recall resume --all resumes everything)")


@app.command()
def projects(home: HomeOption = None, json_output: JsonOption = False):
    """Each project with its memory count and last activity."""
    with open_home(home) as recall:
        rows = recall.projects()
    if json_output:
        emit_json(rows)
        return
    if not rows:
        typer.echo("no memories yet")
        return
    now = time.time()
    for row in rows:
        typer.echo(f"{row['project']}: {plural(row['memories'], 'memory', 'memories')}, last activity "
                   f"{age(now - row['last_activity'])}" + (f", {row['pinned']} pinned" if row["pinned"] else ""))


@app.command()
def export(
    project: Annotated[Optional[str], typer.Option("--project", help="Project path (default: the current "
                                                   "directory's project).")] = None,
    all_projects: Annotated[bool, typer.Option("--all-projects", help="Every project.")] = False,
    output_format: Annotated[str, typer.Option("--format", help="jsonl (every field, re-importable with "
                                               "`recall import`) or markdown.")] = "jsonl",
    output: Annotated[Optional[Path], typer.Option("--output", help="File to write (default: stdout).")] = None,
    home: HomeOption = None,
):
    """Export memories: JSONL (one object per memory, every field; `recall import` reads it back) or Markdown."""
    if output_format not in ("jsonl", "markdown"):
        raise typer.BadParameter("use jsonl or markdown", param_hint="--format")
    with open_home(home) as recall:
        memories = recall.export(resolve_project(project, all_projects))
    if output_format == "jsonl":
        text = "".join(json.dumps(m, ensure_ascii=False) + "\n" for m in memories)
    else:
        lines = ["# recall export", ""]
        for project_name in sorted({m["project"] for m in memories}):
            lines += [f"## {project_name}", ""]
            mine = [m for m in memories if m["project"] == project_name]
            for session in sorted({m["session_id"] for m in mine}, key=lambda s: min(
                    m["created_at"] for m in mine if m["session_id"] == s)):
                lines += [f"### session {session or '(none)'}", ""]
                for m in (m for m in mine if m["session_id"] == session):
                    question = m["meta"].get("prompt") if m["kind"] == "exchange" else None
                    body = f"Q: {question} → A: {m['text']}" if question else m["text"]
                    lines.append(f"- **#{m['id']}** {m['created_at'][:16]} · {m['kind']}"
                                 + (" · pinned" if m.get("pinned") else "") + f": {' '.join(body.split())}")
                lines.append("")
        text = "\n".join(lines) + "\n"
    if output is None:
        sys.stdout.write(text)
        return
    output.write_text(text, encoding="utf-8")
    typer.echo(f"exported {plural(len(memories), 'memory', 'memories')} to {output}", err=True)


@app.command()
def ui(
    port: Annotated[int, typer.Option("--port", min=0, max=65535, help="Port on 127.0.0.1 (0: any free one).")] = 0,
    no_browser: Annotated[bool, typer.Option("--no-browser", help="Print the address, do not open a browser.")] = False,
    home: HomeOption = None,
):
    """A local web viewer: projects, search with filters, a memory and its timeline, injections and their
    reasons, pin / unpin / forget. 127.0.0.1 only, behind a random token in the address."""
    from .viewer import make_server

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
    project: Annotated[Optional[str], typer.Option("--project", help="Default project (default: the current "
                                                   "directory's project).")] = None,
):
    """Run recall's MCP server on stdio (Claude Code starts it from the plugin's .mcp.json)."""
    if plugin_data and not plugin_data.startswith("${") and not os.environ.get("CLAUDE_PLUGIN_DATA"):
        os.environ["CLAUDE_PLUGIN_DATA"] = plugin_data
    from .mcp_server import serve

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
    """Start the worker in the background (it stops by itself when idle)."""
    from ..hook.spawn import start_worker
    from ..shared.logs import JsonLog

    paths = DataPaths(home)
    before = worker_client.health(paths)
    if before:
        typer.echo(f"already running: pid {before.get('pid')}, data dir {paths.home}")
        return
    what, _ = start_worker(paths, JsonLog(paths.log_file, "cli"))
    deadline, health = time.monotonic() + 15, None
    while health is None and time.monotonic() < deadline:
        time.sleep(0.1)
        health = worker_client.health(paths)
    typer.echo(f"worker started for {paths.home} (pid {health.get('pid')})" if health
               else f"worker: {what}; not answering yet (see {paths.log_file})")


@bench_app.command("locomo")
def bench_locomo(
    file: Annotated[Path, typer.Argument(help="LoCoMo JSON (e.g. locomo-dev.json).", exists=True)],
    methods: Annotated[str, typer.Option(help="Comma-separated: fts, dense, hybrid (the default ranking), rrf, "
                                              "bm25 (rank-bm25 in memory, for comparison).")] = "fts,dense,hybrid",
    conversations: Annotated[Optional[str], typer.Option(help="Comma-separated sample ids (default: all).")] = None,
    workdir: Annotated[Optional[Path], typer.Option(help="Keep the generated transcripts and store here "
                                                          "(and reuse them on the next run).")] = None,
    settings: Annotated[Optional[str], typer.Option("--config", help="JSON overrides of the config, e.g. "
                                                    "'{\"ranking\": {\"dense_weight\": 0.4}}'.")] = None,
    injection: Annotated[bool, typer.Option("--injection/--no-injection", help="Also measure injections.")] = True,
    json_output: JsonOption = False,
):
    """Retrieval quality on LoCoMo: recall@5, recall@10 and MRR per method and question category."""
    from ..core.config import Config
    from ..devtools.bench.locomo import format_report, run_locomo

    from pydantic import ValidationError

    try:
        config = Config.model_validate(json.loads(settings)) if settings else None
    except (ValueError, ValidationError) as exc:
        first = str(exc).splitlines()[0] if not isinstance(exc, ValidationError) else \
            "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()[:3])
        raise typer.BadParameter(f"not a valid recall config: {first}", param_hint="--config") from None
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
        valid = isinstance(data, list) and all(isinstance(s, dict) and "conversation" in s and "qa" in s for s in data)
    except (OSError, UnicodeDecodeError, ValueError):
        valid = False
    if not valid:
        raise typer.BadParameter(f"{file} is not a LoCoMo file (a JSON list of samples with "
                                 "'conversation' and 'qa')", param_hint="FILE")
    report = run_locomo(file, methods=[m.strip() for m in methods.split(",") if m.strip()],
                        conversations=conversations.split(",") if conversations else None, workdir=workdir,
                        echo=lambda message: typer.echo(message, err=True), config=config, injection=injection)
    if json_output:
        emit_json(report)
    else:
        typer.echo(format_report(report))


@bench_app.command("latency")
def bench_latency(
    memories: Annotated[str, typer.Option(help="Comma-separated store sizes to measure.")] = "10000,100000",
    runs: Annotated[int, typer.Option(min=5)] = 60,
    import_entries: Annotated[int, typer.Option(help="Also time `recall import` of this many transcript "
                                                     "entries with embeddings (0: skip).")] = 10_000,
    json_output: JsonOption = False,
):
    """Wall time per hook event as Claude Code runs them (a fresh process per call) beside bare Python."""
    from ..devtools.bench.latency import format_latency, run_latency

    try:
        sizes = [int(n) for n in memories.split(",")]
    except ValueError:
        raise typer.BadParameter(f"{memories!r} is not a list of store sizes (e.g. 10000,100000)",
                                 param_hint="--memories") from None
    if any(n <= 0 for n in sizes):
        raise typer.BadParameter("store sizes must be positive", param_hint="--memories")
    report = run_latency(sizes, runs=runs,
                         echo=lambda message: typer.echo(message, err=True), import_entries=import_entries)
    if json_output:
        emit_json(report)
    else:
        typer.echo(format_latency(report))


@bench_app.command("size")
def bench_size(
    memories: Annotated[str, typer.Option(help="Comma-separated store sizes.")] = "10000,100000,1000000",
    seconds: Annotated[int, typer.Option(min=60, help="Time limit: sizes that would not fit are skipped.")] = 1800,
    json_output: JsonOption = False,
):
    """Database bytes per memory and search time as the store grows (time-limited)."""
    from ..devtools.bench.size import format_size, run_size

    try:
        sizes = [int(n) for n in memories.split(",")]
    except ValueError:
        raise typer.BadParameter(f"{memories!r} is not a list of store sizes", param_hint="--memories") from None
    report = run_size(sizes, seconds, echo=lambda message: typer.echo(message, err=True))
    if json_output:
        emit_json(report)
    else:
        typer.echo(format_size(report))


@bench_app.command("soak")
def bench_soak(
    hooks: Annotated[int, typer.Option(min=100, help="How many hook events to send.")] = 10_000,
    json_output: JsonOption = False,
):
    """The worker's memory over many hooks (it should stay flat)."""
    from ..devtools.bench.soak import format_soak, run_soak

    report = run_soak(hooks, echo=lambda message: typer.echo(message, err=True))
    if json_output:
        emit_json(report)
    else:
        typer.echo(format_soak(report))


@app.callback(invoke_without_command=True)
def main_callback(
    version: Annotated[bool, typer.Option("--version", help="Show the version.")] = False,
):
    if version:
        typer.echo(f"recall {__version__}")
        raise typer.Exit()


def main() -> None:
    app()


if __name__ == "__main__":
    main()
