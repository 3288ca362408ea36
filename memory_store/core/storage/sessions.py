"""Sessions and what recall did in them: their time span, the transcripts imported, what was
injected (so nothing is repeated) and a receipt for every injection (`recall injections`).

Written once for both backends (storage/database.py). In PostgreSQL these rows belong to the role
that wrote them: keys start with the owner (`Dialect.owner_key`).
"""

from __future__ import annotations

import json
import time

from .contract import StoreContract


class Sessions(StoreContract):
    def open_session(self, session_id: str, project: str, at: float, transcript_path: str | None) -> None:
        with self.db.write():
            self.db.run(
                "INSERT INTO sessions(session_id, project, started_at, transcript_path) VALUES (?, ?, ?, ?) "
                f"ON CONFLICT({self.db.dialect.owner_key}session_id) DO UPDATE SET ended_at = NULL, end_reason = NULL",
                (session_id, project, at, transcript_path))

    def close_session(self, session_id: str, project: str, at: float, reason: str) -> None:
        with self.db.write():
            self.db.run(
                "INSERT INTO sessions(session_id, project, started_at, ended_at, end_reason) VALUES (?, ?, ?, ?, ?) "
                f"ON CONFLICT({self.db.dialect.owner_key}session_id) DO UPDATE SET ended_at = excluded.ended_at, "
                "end_reason = excluded.end_reason",
                (session_id, project, at, at, reason))

    def import_session(self, session_id: str, project: str, started: float, ended: float,
                       transcript_path: str) -> None:
        """Record (or widen) an imported session's time span."""
        d = self.db.dialect
        with self.db.write():
            self.db.run(
                "INSERT INTO sessions(session_id, project, started_at, ended_at, end_reason, transcript_path) "
                f"VALUES (?, ?, ?, ?, 'imported', ?) ON CONFLICT({d.owner_key}session_id) DO UPDATE SET "
                f"started_at = {d.least}(sessions.started_at, excluded.started_at), "
                f"ended_at = {d.greatest}(coalesce(sessions.ended_at, 0), excluded.ended_at)",
                (session_id, project, started, ended, transcript_path))

    def session_rows(self, project: str | None) -> list[dict]:
        """The sessions of a project (None: every one) as `recall export` writes them."""
        where, args = ("WHERE project = ?", [project]) if project is not None else ("", [])
        return [{"session_id": session_id, "project": project_name, "started_at": started, "ended_at": ended,
                 "end_reason": reason, "transcript_path": path}
                for session_id, project_name, started, ended, reason, path in self.db.all(
                    "SELECT session_id, project, started_at, ended_at, end_reason, transcript_path FROM sessions "
                    f"{where} ORDER BY started_at, session_id", args)]

    def restore_session(self, row: dict) -> None:
        """A session as `recall export` wrote it, kept as it was (one already here is left as it is)."""
        with self.db.write():
            self.db.run("INSERT INTO sessions(session_id, project, started_at, ended_at, end_reason, transcript_path) "
                        f"VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT({self.db.dialect.owner_key}session_id) DO NOTHING",
                        (str(row["session_id"]), str(row["project"]), float(row["started_at"]),
                         row.get("ended_at"), row.get("end_reason"), row.get("transcript_path")))

    def known_session(self, session_id: str) -> bool:
        """Has recall seen this session (opened, imported, or holding memories)?"""
        return self.db.one("SELECT 1 FROM sessions WHERE session_id = ? UNION ALL "
                           "SELECT 1 FROM memories WHERE session_id = ? LIMIT 1", (session_id, session_id)) is not None

    def imported_size(self, path: str) -> int | None:
        return self.db.value("SELECT size FROM imported_files WHERE path = ?", (path,))

    def mark_imported(self, path: str, size: int, entries: int) -> None:
        with self.db.write():
            self.db.run(
                "INSERT INTO imported_files(path, size, entries, imported_at) VALUES (?, ?, ?, ?) "
                f"ON CONFLICT({self.db.dialect.owner_key}path) DO UPDATE SET size = excluded.size, "
                "entries = excluded.entries, imported_at = excluded.imported_at",
                (path, size, entries, time.time()))

    # --- injection bookkeeping ------------------------------------------------------------------

    def injected_ids(self, session_id: str, hook: str | None = None) -> set[int]:
        """What recall injected into a session (by one hook only, if given)."""
        sql, args = "SELECT memory_id FROM injections WHERE session_id = ?", [session_id]
        if hook:
            sql += " AND hook = ?"
            args.append(hook)
        return {r[0] for r in self.db.all(sql, args)}

    def note_injection(self, session_id: str, project: str, hook: str, at: float, memory_ids: list[int],
                       prompt_memory_id: int | None, items: list[tuple[int, str]]) -> None:
        """What one hook injected: never again in this session (`mark_injected`), and its receipt (`add_receipt`),
        in one transaction."""
        if not memory_ids and not items:
            return
        with self.db.write():
            self.mark_injected(session_id, memory_ids, hook, at)
            self.add_receipt(session_id, project, hook, at, prompt_memory_id, items)

    def mark_injected(self, session_id: str, memory_ids: list[int], hook: str, at: float | None = None) -> None:
        if not memory_ids:
            return
        at = at or time.time()
        with self.db.write():
            self.db.many(
                "INSERT INTO injections(session_id, memory_id, injected_at, hook) VALUES (?, ?, ?, ?) "
                "ON CONFLICT(session_id, memory_id) DO UPDATE SET injected_at = excluded.injected_at, "
                "hook = excluded.hook",
                [(session_id, m, at, hook) for m in memory_ids])
            if hook != "SessionStart":  # a memory the gate chose for a prompt is a use; the brief only offers recent
                # work (counted, every memory glanced at each session start would soon decay no more)
                self.db.many("UPDATE memories SET access_count = access_count + 1, last_accessed = ? WHERE id = ?",
                             [(at, m) for m in memory_ids])

    def reset_injections(self, session_id: str) -> None:
        """After compaction the context no longer holds what was injected: allow it again."""
        with self.db.write():
            self.db.run("DELETE FROM injections WHERE session_id = ?", (session_id,))

    def add_receipt(self, session_id: str, project: str, hook: str, at: float, prompt_memory_id: int | None,
                    items: list[tuple[int, str]]) -> None:
        """Keep what an injection held and why (`recall injections`)."""
        if not items:
            return
        with self.db.write():
            self.db.run(
                "INSERT INTO injection_receipts(session_id, project, hook, injected_at, prompt_memory_id, items) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (session_id, project, hook, at, prompt_memory_id,
                 json.dumps([{"id": i, "why": why} for i, why in items], ensure_ascii=False)))

    def receipts(self, session_id: str | None = None, limit: int = 20) -> list[dict]:
        """The latest injections, newest first: when, into which session and prompt, which memories and why."""
        sql = ("SELECT r.id, r.session_id, r.project, r.hook, r.injected_at, r.items, p.text, r.prompt_memory_id "
               "FROM injection_receipts r LEFT JOIN memories p ON p.id = r.prompt_memory_id")
        args: list = []
        if session_id:
            sql += " WHERE r.session_id = ?"
            args.append(session_id)
        sql += " ORDER BY r.injected_at DESC, r.id DESC LIMIT ?"
        args.append(limit)
        return [{"receipt": rid, "session_id": sid, "project": project, "hook": hook, "injected_at": at,
                 "prompt": prompt, "prompt_id": prompt_id, "memories": json.loads(items)}
                for rid, sid, project, hook, at, items, prompt, prompt_id in self.db.all(sql, args)]
