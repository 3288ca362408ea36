"""`recall search` at prompt-path speed: asked of the running worker before anything heavy is imported.

The full CLI (typer, pydantic, the core) costs ~300 ms to import, ten times the search itself. `recall search`
and its index form (`scripts/recall search --index`) first come here, with the standard library and
shared/ only: the arguments are read by hand, the worker (which holds the model) answers, and the hits are
printed exactly as the CLI prints them (the CLI's search command uses `hit_lines` too). Anything this path does
not handle (an option it does not know, `--help`, no worker) returns None and the full CLI takes over.
"""

from __future__ import annotations

import json
import os
import sys
import time
from datetime import datetime

from ..shared import worker_client
from ..shared.paths import DataPaths
from ..shared.projects import locate, project_for, repository_identity
from ..shared.text import age, mark_missing_files, one_line, plural

LIMIT_RANGE = (1, 200)
FLAGS = {"--all-projects": "all_projects", "--index": "index", "--all": "everything", "--json": "json"}
VALUES = {"--limit": "limit", "-n": "limit", "--project": "project", "--home": "home", "--plugin-data": "plugin_data"}


def parse(argv: list[str]) -> dict | None:
    """`search QUERY [options]` as a dict of options; None for anything the full CLI should handle."""
    if not argv or argv[0] != "search":
        return None
    options: dict = {"query": None, "limit": 10}
    args = iter(argv[1:])
    for arg in args:
        name, value = (arg.split("=", 1) + [None])[:2] if arg.startswith("--") else (arg, None)
        if name in FLAGS and value is None:
            options[FLAGS[name]] = True
        elif name in VALUES:
            value = value if value is not None else next(args, None)
            if value is None:
                return None
            options[VALUES[name]] = value
        elif arg.startswith("-") and arg != "-" or options["query"] is not None:
            return None  # --help, an unknown option, a second query: the CLI explains
        else:
            options["query"] = arg
    try:
        options["limit"] = int(options["limit"])
    except ValueError:
        return None
    if options["query"] is None or not LIMIT_RANGE[0] <= options["limit"] <= LIMIT_RANGE[1] \
            or (options.get("project") and options.get("all_projects")):
        return None
    return options


def scope_of(project: str | None, all_projects: bool) -> str | None:
    """The project searched: --project (a path, or a project's name), else the current directory's; None: all."""
    if all_projects:
        return None
    if project and not os.path.exists(os.path.expanduser(project)) and not os.path.isabs(project):
        return project  # a name (github.com/acme/shop), not a path
    return project_for(project or os.getcwd())


def place_of(project: str | None, scope: str | None) -> str | None:
    """The local root of the project searched, noted by the worker as where it lives (a path, not a name)."""
    return locate(project or os.getcwd())[1] if scope is not None and scope != project else None


def hit_lines(hits: list[dict], query: str, scope: str | None, project: str | None, index: bool,
              everything: bool, now: float | None = None) -> list[str]:
    """What `recall search` prints for `hits` (JSON objects as Hit.model_dump(mode="json") gives them)."""
    if not hits:
        lines = [f"Nothing relevant found for {query!r}" + (f" in {scope}." if scope else ".")
                 + ("" if everything else " (--all shows the closest matches anyway)")]
        if scope is not None and project is None and not repository_identity(locate(os.getcwd())[1]):
            lines.append("(Not inside a git repository: --all-projects searches every project, --project P one.)")
        return lines
    now = time.time() if now is None else now
    lines = [f"recall: {plural(len(hits), 'memory', 'memories')} for {query!r}" + (f" in {scope}" if scope else "")] \
        if index else []
    for hit in hits:
        created = datetime.fromisoformat(hit["created_at"]).timestamp()
        text = mark_missing_files(hit["text"], hit.get("missing_files") or [])
        text = f"{hit['outdated']} {text}" if hit.get("outdated") else text  # as Hit.marked_text
        where = f"  [{hit['project']}]" if scope is None else ""  # --all-projects: say whose it is
        # A teammate's shared memory says whose it is (as injected text and the viewer do: "team, by alice").
        shared = f" · team, by {hit.get('owner') or '?'}" if hit.get("visibility") == "team" else ""
        if index:
            lines.append(f"#{hit['id']:<6} {age(now - created):>9}  {hit['kind']:<8} {one_line(text, 100)}{where}"
                         + (f"  ({shared[3:]})" if shared else ""))
        else:
            lines.append(f"#{hit['id']}  {hit['kind']}{shared}  {age(now - created)}  score {hit['score']:.3f}{where}")
            lines.append(f"    {one_line(text, 300)}")
    if index:
        lines.append("Expand one: `recall show ID` · what happened around it: `recall timeline ID`")
    return lines


def answer(argv: list[str], out=None) -> int | None:
    """Print the worker's answer to a `recall search` command line; None when the full CLI must run it."""
    options = parse(argv)
    if options is None:
        return None
    if options.get("plugin_data") and not os.environ.get("CLAUDE_PLUGIN_DATA"):
        os.environ["CLAUDE_PLUGIN_DATA"] = options["plugin_data"]
    project = options.get("project")
    scope = scope_of(project, bool(options.get("all_projects")))
    hits = worker_client.search(DataPaths(options.get("home")), options["query"], options["limit"], scope,
                                place_of(project, scope), shown="all" if options.get("everything") else "relevant")
    if hits is None:
        return None  # no worker: the CLI searches in process
    out = out or sys.stdout
    if options.get("json"):
        out.write(json.dumps(hits, ensure_ascii=False, indent=2, default=str) + "\n")
    else:
        out.write("\n".join(hit_lines(hits, options["query"], scope, project, bool(options.get("index")),
                                      bool(options.get("everything")))) + "\n")
    out.flush()
    return 0
