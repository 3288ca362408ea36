"""What "a project" is: the scope memories live in.

A project is the git root above the event's cwd, so memories made in `repo/src` and
`repo/` are shared; without a git root it is the absolute cwd itself. The home directory
is never taken as a git root (a dotfiles repo in ~ would otherwise swallow every project).
Paths that do not exist (e.g. imported from another machine) are used as they are.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path


# Memories that follow the user into every project (`recall remember --global`): stored under this
# key, which no path can be, and searched with every project's own.
GLOBAL_PROJECT = "(global)"


def in_scope(memory_project: str, project: str | None) -> bool:
    """Is a memory of `memory_project` visible from `project` (None: every project)?"""
    return project is None or memory_project in (project, GLOBAL_PROJECT)


@functools.lru_cache(maxsize=256)
def project_for(cwd: str) -> str:
    """The project key for a working directory."""
    path = Path(os.path.expanduser(cwd))
    if not path.is_absolute():
        path = Path.cwd() / path
    path = Path(os.path.normpath(path))
    try:
        home = Path.home()
    except RuntimeError:
        home = None
    if path.is_dir():
        for candidate in (path, *path.parents):
            if candidate == home:
                break
            if (candidate / ".git").exists():
                return str(candidate)
    return str(path)
