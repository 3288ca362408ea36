"""Commands that read memory: search, explain, show, timeline, injections, projects, export, stats."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Annotated

import typer

from ...hook.quick_search import hit_lines, place_of
from ...shared.text import age, one_line
from .app import (
    HomeOption,
    JsonOption,
    PluginDataOption,
    ProjectOption,
    app,
    emit_json,
    open_home,
    parse_ids,
    plural,
    print_memory,
    resolve_project,
)


@app.command()
def search(
    query: Annotated[str, typer.Argument(help="What to look for.")],
    limit: Annotated[int, typer.Option("--limit", "-n", min=1, max=200)] = 10,
    project: ProjectOption = None,
    all_projects: Annotated[bool, typer.Option("--all-projects", help="Search every project.")] = False,
    index: Annotated[bool, typer.Option("--index", help="Compact index: id, age, kind, one line.")] = False,
    everything: Annotated[bool, typer.Option("--all", help="Show the best matches even when none is relevant.")] = False,
    home: HomeOption = None,
    json_output: JsonOption = False,
    plugin_data: PluginDataOption = None,
):
    """Search memories, old ones included; only what is relevant is shown (--all: the best matches anyway).
    Example: recall search "api key rotation" --limit 5"""
    from ...api import search_anywhere

    if project and all_projects:
        raise typer.BadParameter("use either --project or --all-projects")
    scope = resolve_project(project, all_projects)
    if plugin_data and not os.environ.get("CLAUDE_PLUGIN_DATA"):
        os.environ["CLAUDE_PLUGIN_DATA"] = plugin_data
    hits = [h.model_dump(mode="json") for h in search_anywhere(home, query, limit, scope, place_of(project, scope),
                                                                shown="all" if everything else "relevant")]
    if json_output:
        emit_json(hits)
        return
    typer.echo("\n".join(hit_lines(hits, query, scope, project, index, everything)))


@app.command()
def brief(
    project: ProjectOption = None,
    home: HomeOption = None,
    json_output: JsonOption = False,
):
    """What the next session in this project would be offered when it starts (the SessionStart brief), exactly as
    Claude would read it. A dry run: nothing is marked shown. Example: recall brief"""
    scope = resolve_project(project, False)
    with open_home(home) as recall:
        block = recall.next_brief(scope)
    if json_output:
        emit_json({"project": scope, "brief": block})
    else:
        typer.echo(block or f"nothing: {scope} has no recent work to offer (the brief covers the last "
                            "tiers.hot_window_hours, earlier sessions only)")


@app.command()
def explain(
    prompt: Annotated[str, typer.Argument(help="The prompt, as you would type it to Claude.")],
    project: ProjectOption = None,
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

        def place(rank) -> str:  # 99: not among that search's results (gate.py)
            return "-" if rank is None or rank >= 99 else f"#{rank + 1}"

        typer.echo(f"  {'TAKE' if c.taken else 'skip'} #{c.memory.id:<6} {c.memory.kind:<8} relevance {c.evidence:.2f} "
                   f"(meaning {sim}, prompt words held {s.get('coverage', 0):.2f}, place by words "
                   f"{place(s.get('lexical_rank'))}, by meaning {place(s.get('dense_rank'))})  "
                   f"{one_line(c.memory.text, 60)}")
        typer.echo(f"       {c.why}")
    typer.echo(block if block else "→ nothing injected")


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


@app.command()
def stats(home: HomeOption = None, json_output: JsonOption = False):
    """Counts, sizes and hook latency percentiles from real use."""
    with open_home(home) as recall:
        data = recall.stats()
    if json_output:
        emit_json(data)
        return
    typer.echo(f"data dir   {data['home']} ({data['db_bytes'] / 1e6:.1f} MB)")
    typer.echo(f"memories   {plural(data['memories'], 'memory', 'memories')} in {plural(data['projects'], 'project')}, "
               f"{plural(data['sessions'], 'session')}")
    if data["superseded"]:
        typer.echo(f"           {data['superseded']} of them replaced by a newer, near-identical memory "
                   "(kept, not searched)")
    typer.echo("by kind    " + ", ".join(f"{k} {v}" for k, v in sorted(data["by_kind"].items())))
    typer.echo(f"vectors    {data['vectors']} ({data['vector_model'] or 'no index yet'}), "
               f"{data['pending_embeddings']} waiting")
    typer.echo(f"span       {minute(data['oldest'])} … {minute(data['newest'])}")
    known = data["knowledge"]
    typer.echo("knowledge  " + (", ".join(f"{plural(row['current'], kind)} ({row['replaced']} replaced)"
                                          for kind, row in sorted(known.items())) or "nothing yet") + " (`recall facts`)")
    strength = data["strength"]
    if strength["mean"] is not None:
        typer.echo(f"strength   mean {strength['mean']:.2f}; {strength['consolidated']} consolidated (decay no more), "
                   f"{strength['weak']} weak (below 0.10)")
    pruned = data["pruned"]
    typer.echo("pruned     " + (", ".join(f"{plural(n, kind)}" for kind, n in pruned.items()) + " (trivial small talk)"
                                if pruned else "nothing yet"))
    latency = data["hook_latency_ms"]
    if latency:
        typer.echo("hook time in process:")
        for hook, row in latency.items():
            routes = ", ".join(f"{ROUTES.get(route, route)} {count}" for route, count in sorted(row["routes"].items()))
            typer.echo(f"  {hook:<20} n={row['n']:<6} p50 {ms(row['p50']):>7}  p95 {ms(row['p95']):>7}  "
                       f"p99 {ms(row['p99']):>7}  ({routes})")


def ms(value: float | None) -> str:
    """A latency as a person reads it: 0.4 ms, 3.2 ms, 27 ms (the JSON keeps the measured value)."""
    if value is None:
        return "-"
    return f"{value:.1f} ms" if value < 10 else f"{value:.0f} ms"


# How a hook delivered its event (hook/client.py's routes), in words.
ROUTES = {"worker": "answered by the worker", "workerafterstart": "answered after starting the worker",
          "spool": "kept for later", "paused": "paused", "rejected": "not a valid event", "error": "failed",
          "none": "nothing to do"}


def minute(stamp: str | None) -> str:
    """An ISO time as `2026-11-25 10:54` (UTC)."""
    return stamp[:16].replace("T", " ") if stamp else "-"


@app.command()
def injections(
    session: Annotated[str | None, typer.Option("--session", help="Only this session.")] = None,
    limit: Annotated[int, typer.Option("--limit", min=1, help="How many injections.")] = 20,
    home: HomeOption = None,
    json_output: JsonOption = False,
):
    """What recall injected, when, into which prompt, and why (newest first); with --session, also the prompts that
    got nothing and why (as the gate judges them now)."""
    with open_home(home) as recall:
        receipts = recall.injections(session, limit)
        unknown = bool(session) and not receipts and not recall.known_session(session)
        silent = recall.silent_prompts(session) if session and not unknown else []
    if unknown:
        typer.echo(f"recall: no session {session} (`recall injections` lists the latest)", err=True)
        raise typer.Exit(1)
    if json_output:  # a prompt that got nothing is a receipt without memories, with why
        emit_json(sorted(receipts + [{"receipt": None, "session_id": session, "project": p["project"],
                                      "hook": "UserPromptSubmit", "injected_at": p["at"], "prompt": p["prompt"],
                                      "prompt_id": None, "memories": [], "why_nothing": p["why"]} for p in silent],
                         key=lambda r: -r["injected_at"]))
        return
    if not receipts and not silent:
        typer.echo(f"nothing injected into session {session}" if session else "no injections yet")
        return
    now = time.time()
    for prompt in silent:
        typer.echo(f"{age(now - prompt['at'])} · nothing injected into: {one_line(prompt['prompt'], 100)}\n"
                   f"     why (judged now): {prompt['why']}")
    for receipt in receipts:
        prompt = one_line(receipt["prompt"], 100) if receipt["prompt"] else "(session start)" \
            if receipt["hook"] == "SessionStart" else "(prompt not kept)"
        typer.echo(f"{age(now - receipt['injected_at'])} · {receipt['hook']} · session {receipt['session_id']}: "
                   f"{prompt}")
        for item in receipt["memories"]:
            text = one_line(item["text"], 90) if item.get("text") else "(forgotten)"
            if item.get("question") and item.get("text"):  # an answer is read with its question
                text = f"Q: {one_line(item['question'], 60)} → A: {text}"
            typer.echo(f"  #{item['id']} {item.get('kind') or ''}: {text}\n     why: {item['why']}")


@app.command()
def projects(home: HomeOption = None, json_output: JsonOption = False):
    """Each project with its memory count, last activity and where it lives. A project is named by its git
    repository's origin remote (the same on every machine and clone), else by its path."""
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
        here = [p for p in row["paths"] if p["path"] != row["project"]]
        if here:
            typer.echo("    at " + ", ".join(f"{p['path']} (on {p['host']})" for p in here))


@app.command()
def export(
    project: ProjectOption = None,
    all_projects: Annotated[bool, typer.Option("--all-projects", help="Every project.")] = False,
    output_format: Annotated[str, typer.Option("--format", help="jsonl (every field, re-importable with "
                                               "`recall import`) or markdown.")] = "jsonl",
    output: Annotated[Path | None, typer.Option("--output", help="File to write (default: stdout).")] = None,
    home: HomeOption = None,
    json_output: Annotated[bool, typer.Option("--json", help="Print JSON: the memories as one array, or with "
                                              "--output what was written.")] = False,
):
    """Export memories: JSONL (one object per memory, every field, then one per session; `recall import` reads it
    back, and what the memories teach and are tied to with them) or Markdown."""
    if output_format not in ("jsonl", "markdown"):
        raise typer.BadParameter("use jsonl or markdown", param_hint="--format")
    with open_home(home) as recall:
        records = recall.export(resolve_project(project, all_projects))
    memories = [record for record in records if "record" not in record]
    if json_output and output is None:
        emit_json(records)
        return
    if output_format == "jsonl":
        text = "".join(json.dumps(record, ensure_ascii=False) + "\n" for record in records)
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
    if json_output:
        emit_json({"exported": len(memories), "file": str(output), "format": output_format})
        return
    typer.echo(f"exported {plural(len(memories), 'memory', 'memories')} to {output}", err=True)

