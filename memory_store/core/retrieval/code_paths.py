"""Memories checked against the code: a memory whose text names a file of its project that is no longer there
says so where it is shown, "(file since moved or removed)" right after the path, or is left out when a newer
memory names the file's new place (the same file name, found where that memory says).

Checked at show time, cheaply: a few `stat` calls per shown item, and one word search per missing file, only
when the project has a folder on this machine (storage/places.py: where each project was seen). A path counts
only when its first folder exists in the project (so it is written from the project's root); a path relative to
some other folder, a URL or a path outside the project is never judged.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import TYPE_CHECKING

from ...shared.text import mark_missing_files as marked
from ..sentences import named_paths

if TYPE_CHECKING:
    from ..storage import Store

NEWER_LOOKED_AT = 20  # later memories read for a missing file's new place

@dataclass
class CodeCheck:
    """The check for one project, against its folder on this machine (looked up once, when a text names a path)."""

    store: Store
    project: str
    _exists: dict = field(default_factory=dict)

    @cached_property
    def root(self) -> str | None:
        return next((r for r in self.store.local_paths(self.project) if os.path.isdir(r)), None)

    def missing(self, text: str) -> list[str]:
        """The paths `text` names that this project's folder should hold and does not."""
        paths = named_paths(text)
        if not paths or self.root is None:
            return []
        return [path for path in paths if self._judged_missing(path)]

    def standing(self, text: str, created_at: float, drop: bool = True) -> list[str] | None:
        """The paths `text` names that are gone, or None when a later memory names one's new place (`drop`: the
        memory is then left out)."""
        missing = self.missing(text)
        if missing and drop and any(self.new_place(path, created_at) for path in missing):
            return None
        return missing

    def _judged_missing(self, path: str) -> bool:
        if path not in self._exists:
            self._exists[path] = self._missing(path)
        return self._exists[path]

    def _missing(self, path: str) -> bool:
        root = self.root
        if root is None:  # the project's folder is not on this machine: cannot tell
            return False
        if os.path.isabs(path):
            inside = os.path.normpath(path)
            if not inside.startswith(root.rstrip(os.sep) + os.sep):
                return False  # outside the project: not ours to judge
            relative = os.path.relpath(inside, root)
        else:
            relative = os.path.normpath(path)
        if relative.startswith(".."):
            return False
        first = relative.split(os.sep, 1)[0]
        if not os.path.isdir(os.path.join(root, first)):
            return False  # written from another folder than the root (or the folder went too): cannot tell
        return not os.path.exists(os.path.join(root, relative))

    def new_place(self, path: str, since: float) -> str | None:
        """A path a later memory of the project names for the same file name, which exists now."""
        name = os.path.basename(path)
        stem = os.path.splitext(name)[0]
        words = [w for w in re.findall(r"[A-Za-z0-9]+", stem) if len(w) > 1]
        if not words or self.root is None:
            return None
        later = self.store.lexical_candidates(words, words[:1], NEWER_LOOKED_AT, self.project, since, None)
        for memory in self.store.select_memories(ids=list(later)) if later else []:
            for other in named_paths(memory.text):
                if other != path and os.path.basename(other) == name and not self._judged_missing(other) \
                        and os.path.exists(self._absolute(other)):
                    return other
        return None

    def _absolute(self, path: str) -> str:
        return path if os.path.isabs(path) or self.root is None else os.path.join(self.root, path)


def checked_items(store: Store, project: str, items: list) -> list:
    """inject.Items as they stand against the code: marked, or left out when a newer memory names the new place."""
    check = CodeCheck(store, project)
    kept = []
    for item in items:
        missing = check.standing(item.text, item.created_at)
        if missing is not None:
            kept.append(replace(item, text=marked(item.text, missing)) if missing else item)
    return kept


def checked_hits(store: Store, hits: list, drop: bool = True) -> list:
    """Search hits as they stand against the code: each names its missing files (`Hit.missing_files`, marked
    where shown); one whose file a newer memory names elsewhere is left out (`drop`)."""
    checks: dict[str, CodeCheck] = {}
    kept = []
    for hit in hits:
        check = checks.setdefault(hit.project, CodeCheck(store, hit.project))
        missing = check.standing(hit.text, hit.created_at.timestamp(), drop)
        if missing is not None:
            kept.append(hit.model_copy(update={"missing_files": missing}) if missing else hit)
    return kept
