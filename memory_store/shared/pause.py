"""Capture switched off, three ways; while off, hooks store nothing and inject nothing.

- `RECALL_DISABLE=1` in the environment: for that process tree (a headless run, a CI job).
- `recall pause [--project P | --all] [--for 2h]`: for a project or everything, for a while or until
  `recall resume`. The state is one small JSON file in the data dir, which every hook checks before it
  reads its payload; without the file (the usual case) the check costs one failed open().
- config `capture.ignore_projects`: globs of projects never captured (enforced by the worker).

Standard library only: the hook client imports this.
"""

import os
import time

from .wire import DISABLE_ENV, PAUSE_FILE, disabled


def disabled_by_env() -> bool:
    return disabled(os.environ.get(DISABLE_ENV))


def read_state(home: str) -> dict | None:
    """{"all": until, "projects": {project: until}} (until: unix time, or None for "until resumed"),
    without what has expired; None when nothing is paused."""
    try:
        with open(os.path.join(home, PAUSE_FILE), "rb") as handle:
            raw = handle.read(1 << 20)
    except OSError:
        return None
    import json

    try:
        state = json.loads(raw)
    except ValueError:
        return None
    if not isinstance(state, dict):
        return None
    now = time.time()

    def live(until) -> bool:
        return until is None or (isinstance(until, (int, float)) and until > now)

    listed = state.get("projects")
    projects = listed if isinstance(listed, dict) else {}
    result = {"all": state.get("all") if "all" in state and live(state.get("all")) else False,
              "projects": {p: u for p, u in projects.items() if live(u)}}
    return result if result["all"] is not False or result["projects"] else None


def is_paused(state: dict | None, project: str | None) -> bool:
    if not state:
        return False
    return state["all"] is not False or (project is not None and project in state["projects"])


def write_state(home: str, state: dict | None) -> None:
    import json

    from .files import atomic_write, ensure_private_dir

    ensure_private_dir(home)
    path = os.path.join(home, PAUSE_FILE)
    if not state:
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass
        return
    atomic_write(path, json.dumps(state))


def pause(home: str, project: str | None, until: float | None) -> dict:
    """Pause `project` (None: everything) until `until` (None: until resumed); returns the new state."""
    state = read_state(home) or {"all": False, "projects": {}}
    if project is None:
        state["all"] = until
    else:
        state["projects"][project] = until
    write_state(home, _stored(state))
    return state


def resume(home: str, project: str | None) -> dict | None:
    """Resume `project` (None: everything, every project included); returns what stays paused. A project cannot
    come back while every project is paused: then nothing changes (the answer still says every project)."""
    state = read_state(home)
    if state is None:
        return None
    if project is None:
        state = None
    elif state["all"] is not False:
        return state
    else:
        state["projects"].pop(project, None)
        if state["all"] is False and not state["projects"]:
            state = None
    write_state(home, _stored(state) if state else None)
    return state


def _stored(state: dict) -> dict:
    stored = {"projects": state["projects"]}
    if state["all"] is not False:
        stored["all"] = state["all"]
    return stored
