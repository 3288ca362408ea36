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
