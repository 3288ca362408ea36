"""Where each project lives: the local paths (per machine) seen for a project's name, and the move of
memories stored under a path to the repository's name (shared/projects.py: a project is its remote).

Written once for both backends (storage/database.py); the SQLite backend also moves the vectors,
whose table is partitioned by project (`_moved_to_project`).
"""

from __future__ import annotations

import socket
import time

from .base import marks
from .contract import StoreContract

HOST = socket.gethostname() or "localhost"


class Places(StoreContract):
    def note_project_path(self, project: str, path: str, at: float | None = None) -> int:
        """Remember that `project` lives at `path` on this machine, once per process and pair. The first
        time, memories this role stored under `path` itself (before the project had a remote, or before
        recall named projects by their remote) move to `project`; returns how many moved."""
        if (project, path) in self.paths_seen:
            return 0
        at = at or time.time()
        d = self.db.dialect
        with self.db.write():
            self.db.run(f"INSERT INTO project_paths(project, host, path, first_seen, last_seen) VALUES (?, ?, ?, ?, ?) "
                        f"ON CONFLICT({d.owner_key}project, host, path) DO UPDATE SET "
                        f"last_seen = {d.greatest}(project_paths.last_seen, excluded.last_seen)",
                        (project, HOST, path, at, at))
            moved = self._move_project(path, project) if path != project else 0
        self.paths_seen.add((project, path))
        if moved:
            self.log.info("project_renamed", memories=moved)
        return moved

    def _move_project(self, old: str, new: str) -> int:
        """Memories (with their sessions and receipts) of project `old` become `new`'s. One that `new` holds
        already (the same text, deduplicated) is merged into it: its events point there, its count adds up."""
        rows = self.db.all("SELECT id, kind, content_hash, seen_count FROM memories WHERE project = ? "
                           f"AND {self.db.dialect.mine}", (old,))
        if not rows:
            return 0
        for memory_id, kind, digest, seen_count in rows:
            twin = self.db.value(f"SELECT id FROM memories WHERE project = ? AND kind = ? AND content_hash = ? "
                                 f"AND {self.db.dialect.mine}", (new, kind, digest))
            if twin is None:
                continue
            self.db.run("UPDATE events SET memory_id = ? WHERE memory_id = ?", (twin, memory_id))
            self.db.run("UPDATE memories SET seen_count = seen_count + ? WHERE id = ?", (seen_count, twin))
            self._forget_derived([memory_id])
            self.db.run("DELETE FROM memories WHERE id = ?", (memory_id,))
        ids = [r[0] for r in self.db.all(f"SELECT id FROM memories WHERE project = ? AND {self.db.dialect.mine}", (old,))]
        if ids:
            self.db.run(f"UPDATE memories SET project = ? WHERE id IN ({marks(ids)})", (new, *ids))
            self._moved_to_project(ids, new)
        self.db.run("UPDATE sessions SET project = ? WHERE project = ?", (new, old))
        self.db.run("UPDATE injection_receipts SET project = ? WHERE project = ?", (new, old))
        return len(rows)

    def move_memories(self, ids: list[int], project: str) -> None:
        """These memories (this role's) belong to `project` from now on (a turn that moved to another repository)."""
        mine = [r[0] for r in self.db.all(
            f"SELECT id FROM memories WHERE id IN ({marks(ids)}) AND {self.db.dialect.mine}", ids)]
        if mine:
            with self.db.write():
                self.db.run(f"UPDATE memories SET project = ? WHERE id IN ({marks(mine)})", (project, *mine))
                self._moved_to_project(mine, project)
                self.knowledge.move(mine, project)
                self.ties.move(mine, project)

    def local_paths(self, project: str) -> list[str]:
        """Where `project` was seen on this machine, most recent first."""
        return [r[0] for r in self.db.all("SELECT path FROM project_paths WHERE project = ? AND host = ? "
                                          "ORDER BY last_seen DESC", (project, HOST))]

    def project_paths(self) -> dict[str, list[dict]]:
        """project -> where it was seen: [{"host", "path", "last_seen"}], most recent first."""
        found: dict[str, list[dict]] = {}
        for project, host, path, last_seen in self.db.all(
                "SELECT project, host, path, last_seen FROM project_paths ORDER BY last_seen DESC"):
            found.setdefault(project, []).append({"host": host, "path": path, "last_seen": last_seen})
        return found
