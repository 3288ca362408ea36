"""The viewer's pages: HTML rendered from the API, escaped, with no script (see the package docstring)."""


from __future__ import annotations

import html
import json
import threading
import time
from datetime import datetime
from typing import TYPE_CHECKING
from urllib.parse import quote, urlencode

from ...core.injection.inject import kind_label
from ...core.records import Hit
from ...core.retrieval.knowledge import day
from ...shared.projects import GLOBAL_PROJECT
from ...shared.text import age, one_line

if TYPE_CHECKING:
    from ...api.recall import Recall
    from ...core.retrieval.search import Shown

KINDS = ("prompt", "exchange", "tool", "error", "note")
PAGE_SIZE = 50
LIVE_REFRESH_SECONDS = 5
CSP = "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'"
STYLE = """
body{font:14px/1.45 system-ui,sans-serif;margin:0;color:#1d2330;background:#f6f7f9}
header{background:#1d2330;color:#fff;padding:10px 20px;display:flex;gap:18px;align-items:center}
header a{color:#cfe0ff;text-decoration:none}header b{font-size:16px;margin-right:10px}
main{padding:16px 20px;max-width:1100px}
table{border-collapse:collapse;width:100%;background:#fff}td,th{padding:6px 8px;border-bottom:1px solid #e3e6eb;
text-align:left;vertical-align:top}th{font-weight:600;background:#eef1f5}
.kind{font-size:12px;padding:1px 6px;border-radius:8px;background:#e3ecff}.muted{color:#6b7383}
.card{background:#fff;border:1px solid #e3e6eb;border-radius:6px;padding:12px 14px;margin:10px 0}
pre{white-space:pre-wrap;word-break:break-word;margin:6px 0}form.inline{display:inline}
button{cursor:pointer;padding:4px 10px}
button.danger,a.button.danger{background:#b3261e;color:#fff;border:0;border-radius:4px}
a.button{padding:4px 10px;text-decoration:none;display:inline-block}
input,select{padding:4px}.why{color:#37613a}.current{background:#fff7d6}.refused{color:#b3261e}
button,.nowrap,.kind{white-space:nowrap}input[name=q],input[name=project]{max-width:100%}
.was{color:#6b7383;font-size:13px}
"""


def _stamp(ts: float) -> str:
    return datetime.fromtimestamp(ts).strftime("%Y-%m-%d %H:%M")


def _esc(value) -> str:
    return html.escape(str(value), quote=True)


class Viewer:
    """The pages, rendered from the API. `recall` is an open memory_store.api.Recall."""

    def __init__(self, recall: Recall, token: str):
        self.recall = recall
        self.token = token
        self.lock = threading.Lock()  # one request at a time on the shared Recall

    def link(self, path: str, **params) -> str:
        query = {k: v for k, v in params.items() if v not in (None, "")}
        return _esc(f"{path}?{urlencode({'token': self.token, **query})}")

    def hidden_token(self) -> str:
        return f'<input type="hidden" name="token" value="{_esc(self.token)}">'

    def page(self, title: str, body: str, refresh: int | None = None) -> str:
        meta = f'<meta http-equiv="refresh" content="{refresh}">' if refresh else ""
        return (f'<!doctype html><html><head><meta charset="utf-8">'
                f'<meta name="viewport" content="width=device-width, initial-scale=1">{meta}'
                f'<title>{_esc(title)} · recall</title>'
                f'<style>{STYLE}</style></head><body><header><b>recall</b>'
                f'<a href="{self.link("/")}">Projects</a><a href="{self.link("/search")}">Search</a>'
                f'<a href="{self.link("/injections")}">Injections</a></header><main><h2>{_esc(title)}</h2>'
                f'{body}</main></body></html>')

    # --- pages -------------------------------------------------------------------------------------

    def projects(self, params) -> str:
        rows = self.recall.projects()
        if not rows:
            return self.page("Projects", "<p>No memories yet.</p>")
        now = time.time()
        lines = "".join(
            f'<tr><td><a href="{self.link("/search", project=r["project"])}">{_esc(r["project"])}</a></td>'
            f'<td>{r["memories"]}</td><td>{r["pinned"]}</td><td class="nowrap">{_esc(age(now - r["last_activity"]))}'
            f'</td><td><a href="{self.link("/facts", project=r["project"])}">facts</a> · '
            f'<a href="{self.link("/export", project=r["project"])}">export (JSONL)</a></td></tr>'
            for r in rows)
        return self.page("Projects", "<table><tr><th>project</th><th>memories</th><th>pinned</th>"
                                     f"<th>last activity</th><th></th></tr>{lines}</table>")

    def facts(self, params) -> str:
        """A project's current facts (each with the values it replaced), the procedures that worked, the decisions."""
        project = params.get("project") or ""
        if not project:
            return self.page("Facts", "<p>Pick a project on the <a href=\"" + self.link("/") + "\">projects</a> page.</p>")
        sections = []
        for kind, title in (("fact", "Current facts"), ("procedure", "How things are done here"),
                            ("decision", "Decisions and rules")):
            items = self.recall.knowledge(project, [kind], 100)
            rows = "".join(
                f'<tr><td class="nowrap">{_esc(day(item.created_at))}</td><td>{_esc(item.text)}'
                + "".join(f'<div class="was">was {_esc(e.value)}: {_esc(e.text)} (since {_esc(day(e.created_at))})</div>'
                          for e in item.replaced)
                + f'</td><td><a href="{self.link(f"/memory/{item.source_id}")}">#{item.source_id}</a></td></tr>'
                for item in items)
            sections.append(f"<h3>{title}</h3>" + (f"<table><tr><th>since</th><th></th><th>from</th></tr>{rows}</table>"
                                                    if rows else "<p>None yet.</p>"))
        return self.page(f"Facts of {_project_name(project)}", "".join(sections))

    def session(self, session_id: str) -> tuple[int, str]:
        """One session's memories in the order they happened, and a link to what was injected into it."""
        memories = sorted(self.recall.select(session_id=session_id), key=lambda m: (m.created_at, m.id))
        if not memories:
            return 404, self.page("Not found", f"<p>No memory of session {_esc(session_id)}.</p>")
        injected = f'<p><a href="{self.link("/injections", session=session_id)}">what was injected into it</a></p>'
        return 200, self.page(f"Session {session_id}", injected + self._table(memories, show_project=False))

    def export(self, params) -> bytes:
        """A project's memories (every field), one JSON object a line: what `recall export` writes, re-importable."""
        rows = self.recall.export(params.get("project") or None)
        return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows).encode("utf-8")

    def search(self, params) -> str:
        query = params.get("q", "").strip()
        project = params.get("project") or None
        kind = params.get("kind") if params.get("kind") in KINDS else None
        since = _day(params.get("since"))
        until = _day(params.get("until"), end=True)
        kinds = "".join(f'<option value="{k}"{" selected" if k == kind else ""}>{k}</option>' for k in KINDS)
        form = (f'<form method="get" action="/search" class="card">{self.hidden_token()}'
                f'<input name="q" size="40" placeholder="search words" value="{_esc(query)}"> '
                f'<input name="project" size="30" placeholder="project (empty: all)" value="{_esc(project or "")}"> '
                f'<select name="kind"><option value="">any kind</option>{kinds}</select> '
                f'from <input type="date" name="since" value="{_esc(params.get("since", ""))}"> '
                f'to <input type="date" name="until" value="{_esc(params.get("until", ""))}"> '
                '<button type="submit">Search</button></form>')
        everything = params.get("all") == "1"
        if query:
            found = self._search(query, project, everything)
            memories = [h for h in found if (kind is None or h.kind == kind)
                        and (since is None or h.created_at.timestamp() >= since)
                        and (until is None or h.created_at.timestamp() <= until)][:PAGE_SIZE]
            other = self.link("/search", q=query, project=project, kind=kind, all=None if everything else "1")
            toggle = (f'<a href="{other}">'
                      + ("only what is relevant" if everything else "show the closest matches anyway") + "</a>")
            if memories:
                heading = (f"<p class='muted'>{plural(len(memories), 'match', 'matches')} for <b>{_esc(query)}</b>"
                           + ("" if everything else " (the relevant ones)") + f" · {toggle}</p>")
            elif everything:
                heading = f"<p>Nothing found for <b>{_esc(query)}</b>. {toggle}</p>"
            else:
                heading = f"<p>Nothing relevant found for <b>{_esc(query)}</b>. {toggle}</p>"
        else:
            memories = [m for m in self.recall.select(project=project, kind=kind, since=since, newest=PAGE_SIZE * 4)
                        if until is None or m.created_at.timestamp() <= until][:PAGE_SIZE]
            heading = f"<p class='muted'>the {len(memories)} newest memories</p>"
        table = self._table(memories, show_project=project is None, selectable=True) if memories or not query else ""
        return self.page("Search", form + heading + table)

    def _search(self, query: str, project: str | None, everything: bool):
        shown: Shown = "all" if everything else "relevant"
        return self.recall.search_here(query, PAGE_SIZE * 2, project, shown=shown, embed_backlog=False, worker_first=True)

    def _table(self, memories, show_project: bool, selectable: bool = False) -> str:
        """Memories as a table; `selectable`: a box on each of the user's own, and a button that forgets the ones
        ticked (after a confirmation page)."""
        if not memories:
            return "<p>Nothing found.</p>"
        now = time.time()

        selectable = selectable and not self.recall.read_only  # a data dir that cannot be written: nothing to forget

        def box(m) -> str:
            mine = selectable and self.recall.is_mine(m)
            return f'<td><input type="checkbox" name="id" value="{m.id}"></td>' if mine else "<td></td>"

        rows = "".join(
            "<tr>" + (box(m) if selectable else "") + f'<td><a href="{self.link(f"/memory/{m.id}")}">#{m.id}</a></td>'
            f'<td><span class="kind">{_esc(kind_label(m))}</span></td>'
            f'<td class="muted nowrap">{_esc(age(now - m.created_at.timestamp()))}</td>'
            + (f'<td class="muted">{_esc(_project_name(m.project))}</td>' if show_project else "")
            + f'<td>{_esc(one_line(m.marked_text() if isinstance(m, Hit) else m.text, 160))}</td></tr>' for m in memories)
        head = ("<tr>" + ("<th></th>" if selectable else "") + "<th>id</th><th>kind</th><th>age</th>"
                + ("<th>project</th>" if show_project else "") + "<th>memory</th></tr>")
        table = f"<table>{head}{rows}</table>"
        if not selectable:
            return table
        return (f'<form method="post" action="/forget">{self.hidden_token()}{table}'
                '<p><button type="submit" class="danger">Forget the ticked memories…</button></p></form>')

    def confirm_forget_many(self, ids: list[int]) -> tuple[int, str]:
        """What forgetting the ticked memories deletes, and the one button that does it (only the user's own)."""
        found = [m for m in self.recall.get(ids) if self.recall.is_mine(m)]
        if not found:
            return 200, self.page("Forget", "<p>Nothing to forget: tick memories of your own first.</p>")
        hidden = "".join(f'<input type="hidden" name="id" value="{m.id}">' for m in found)
        body = (f'<div class="card"><p>Forget these {len(found)} memories for good? Their text leaves the database, '
                "its index, the neighbouring turns' context, the spool and the logs; it cannot be undone.</p>"
                + self._table(found, show_project=True)
                + f'<form class="inline" method="post" action="/forget">{self.hidden_token()}{hidden}'
                f'<input type="hidden" name="confirm" value="yes">'
                f'<button type="submit" class="danger">Forget {len(found)} for good</button></form> '
                f'<a href="{self.link("/search")}">Keep them</a></div>')
        return 200, self.page(f"Forget {len(found)} memories?", body)

    def forget_many(self, ids: list[int]) -> str:
        """Forget the user's own of these (a teammate's are left); returns where to go next."""
        self.recall.forget([m.id for m in self.recall.get(ids) if self.recall.is_mine(m)])
        return f"/search?{urlencode({'token': self.token})}"

    def memory(self, memory_id: int, params) -> tuple[int, str]:
        found = self.recall.get([memory_id])
        if not found:
            return 404, self.page("Not found", f"<p>No memory #{memory_id} (forgotten, or never stored).</p>")
        memory = found[0]
        question = memory.meta.get("prompt") if memory.kind == "exchange" else None
        pin = "unpin" if memory.pinned else "pin"
        if self.recall.read_only:
            actions = '<span class="muted">the data dir cannot be written: nothing can be changed here</span>'
        elif self.recall.is_mine(memory):
            actions = (f'<form class="inline" method="post" action="/memory/{memory.id}/{pin}">{self.hidden_token()}'
                       f'<button type="submit" name="do" value="{pin}">{pin.capitalize()}</button></form> '
                       f'<a class="button danger" href="{self.link(f"/memory/{memory.id}/forget")}">Forget for good…</a>')
        else:  # offer only what this user may do
            actions = f'<span class="muted">{_esc(_not_yours(memory))}</span>'
        refused = params.get("refused")
        if refused in ("pin", "unpin", "forget"):
            actions = f'<b class="refused">Not done ({_esc(refused)}): {_esc(_not_yours(memory))}</b><br>' + actions
        facts = (f'<p class="muted">#{memory.id} · <span class="kind">{_esc(kind_label(memory))}</span> · '
                 f'{_stamp(memory.created_at.timestamp())} · {_esc(_project_name(memory.project))} · session '
                 f'<a href="{self.link("/session/" + quote(memory.session_id or "-", safe=""))}">'
                 f'{_esc(memory.session_id or "-")}</a>'
                 + (" · <b>pinned</b>" if memory.pinned else "")
                 + (f" · superseded by #{memory.superseded_by}" if memory.superseded_by else "") + "</p>")
        text = (f"<p><b>Q:</b> {_esc(question)}</p>" if question else "") + f"<pre>{_esc(memory.text)}</pre>"
        timeline = self.recall.timeline(memory.id, 6, 6)
        rows = "".join(
            f'<tr class="{"current" if m.id == memory.id else ""}"><td><a href="{self.link(f"/memory/{m.id}")}">'
            f'#{m.id}</a></td><td class="muted">{_stamp(m.created_at.timestamp())}</td>'
            f'<td><span class="kind">{_esc(kind_label(m))}</span></td><td>{_esc(one_line(m.text, 160))}</td></tr>'
            for m in timeline)
        body = (f'<div class="card">{facts}{text}<p>{actions}</p></div><h3>Timeline</h3>'
                f"<table><tr><th>id</th><th>when</th><th>kind</th><th>memory</th></tr>{rows}</table>")
        return 200, self.page(f"Memory #{memory.id}", body)

    def confirm_forget(self, memory_id: int) -> tuple[int, str]:
        """The page a forget goes through: what will be deleted, and one button that does it (no script)."""
        found = self.recall.get([memory_id])
        if not found:
            return 404, self.page("Not found", f"<p>No memory #{memory_id} (forgotten, or never stored).</p>")
        memory = found[0]
        if not self.recall.is_mine(memory):
            return 403, self.page(f"Memory #{memory.id}", f'<p class="refused">{_esc(_not_yours(memory))}</p>'
                                  f'<p><a href="{self.link(f"/memory/{memory.id}")}">Back to #{memory.id}</a></p>')
        body = (f'<div class="card"><p>Forget #{memory.id} for good? Its text leaves the database, its index, the '
                f'neighbouring turns\' context, the spool and the logs; it cannot be undone.</p>'
                f'<pre>{_esc(memory.text)}</pre>'
                f'<form class="inline" method="post" action="/memory/{memory.id}/forget">{self.hidden_token()}'
                f'<input type="hidden" name="confirm" value="yes">'
                f'<button type="submit" class="danger">Forget #{memory.id} for good</button></form> '
                f'<a href="{self.link(f"/memory/{memory.id}")}">Keep it</a></div>')
        return 200, self.page(f"Forget memory #{memory.id}?", body)

    def injections(self, params) -> str:
        session = params.get("session") or None
        live = params.get("live") == "1"
        receipts = self.recall.injections(session, 30)
        now = time.time()
        cards = []
        briefs_shown: dict[frozenset, str] = {}  # a brief's memories -> the session whose card lists them
        for receipt in receipts:
            prompt = receipt["prompt"] or ("(session start)" if receipt["hook"] == "SessionStart"
                                           else "(prompt not kept)")
            ids = frozenset(item["id"] for item in receipt["memories"])
            if receipt["hook"] == "SessionStart" and ids in briefs_shown:  # each new session offers the same brief
                items = (f'<li class="muted">the same {len(ids)} memories as the brief of session '
                         f'{_esc(briefs_shown[ids])} above</li>')
            else:
                items = "".join(self._receipt_item(item) for item in receipt["memories"])
                if receipt["hook"] == "SessionStart":
                    briefs_shown[ids] = receipt["session_id"]
            cards.append(
                f'<div class="card"><p class="muted">{_esc(age(now - receipt["injected_at"]))} · {_esc(receipt["hook"])} · '
                f'session <a href="{self.link("/injections", session=receipt["session_id"])}">'
                f'{_esc(receipt["session_id"])}</a> · {_esc(_project_name(receipt["project"]))}</p>'
                f'<p><b>Prompt:</b> {_esc(one_line(prompt, 300))}</p><ul>{items}</ul></div>')
        toggle = (f'<p><a href="{self.link("/injections", session=session, live=None if live else "1")}">'
                  f'{"stop live updates" if live else "live updates (every 5 s)"}</a></p>')
        title = f"Injections of session {session}" if session else "Injections"
        return self.page(title, toggle + ("".join(cards) or "<p>Nothing injected yet.</p>"),
                         refresh=LIVE_REFRESH_SECONDS if live else None)

    def _receipt_item(self, item: dict) -> str:
        href = self.link(f"/memory/{item['id']}")
        kind = _esc(item.get("kind") or "forgotten")
        question = f'<b>Q:</b> {_esc(one_line(item["question"], 160))} <b>A:</b> ' if item.get("question") else ""
        return (f'<li><a href="{href}">#{item["id"]}</a> <span class="kind">{kind}</span> '
                f'{question}{_esc(one_line(item.get("text") or "", 200))}<br>'
                f'<span class="why">why: {_esc(item["why"])}</span></li>')

    # --- actions -----------------------------------------------------------------------------------

    def act(self, memory_id: int, action: str, confirmed: bool = False) -> str:
        """pin, unpin or forget (only once confirmed on its own page); returns where to go next. A memory this user
        may not change comes back to its page saying why."""
        found = self.recall.get([memory_id])
        if found and not self.recall.is_mine(found[0]):
            return f"/memory/{memory_id}?{urlencode({'token': self.token, 'refused': action})}"
        if action == "forget" and not confirmed:
            return f"/memory/{memory_id}/forget?{urlencode({'token': self.token})}"
        if action == "forget":
            gone = self.recall.forget([memory_id])
            project = gone[0].project if gone else None
            return f"/search?{urlencode({'token': self.token, **({'project': project} if project else {})})}"
        self.recall.pin([memory_id], action == "pin")
        return f"/memory/{memory_id}?{urlencode({'token': self.token})}"


def _not_yours(memory) -> str:
    return f"#{memory.id} is {memory.owner or 'a teammate'}'s shared memory: only its author can pin or forget it."


def plural(count: int, word: str, many: str) -> str:
    return f"{count} {word if count == 1 else many}"


def _project_name(project: str) -> str:
    return "global (every project)" if project == GLOBAL_PROJECT else project


def _day(value: str | None, end: bool = False) -> float | None:
    """A yyyy-mm-dd form value as local time (the start of the day, or its end)."""
    if not value:
        return None
    try:
        start = datetime.strptime(value, "%Y-%m-%d").timestamp()
    except ValueError:
        return None
    return start + 86399.999 if end else start
