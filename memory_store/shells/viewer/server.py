"""The viewer's HTTP server: 127.0.0.1 only, every request checked for the run's token, pages from pages.py."""

from __future__ import annotations

import re
import secrets
from html import escape
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING
from urllib.parse import parse_qs, unquote, urlencode, urlparse

from .pages import CSP, Viewer

if TYPE_CHECKING:
    from ...api.recall import Recall


class _Handler(BaseHTTPRequestHandler):
    server_version = "recall-ui"
    viewer: Viewer  # set on the class built by make_server

    def log_message(self, *args) -> None:  # requests stay out of the terminal
        pass

    def _authorised(self, params: dict) -> bool:
        return secrets.compare_digest(params.get("token", ""), self.viewer.token)

    def _send(self, status: int, body: str, location: str | None = None) -> None:
        data = body.encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Security-Policy", CSP)
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Referrer-Policy", "no-referrer")  # the token stays in this tab
        self.send_header("Cache-Control", "no-store")
        if location:
            self.send_header("Location", location)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _send_file(self, data: bytes, filename: str) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/x-ndjson; charset=utf-8")
        self.send_header("Content-Disposition", f'attachment; filename="{filename}"')
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Cache-Control", "no-store")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        url = urlparse(self.path)
        params = {k: v[0] for k, v in parse_qs(url.query).items()}
        if not self._authorised(params):
            self._send(HTTPStatus.FORBIDDEN, "<h1>403</h1><p>Open the address `recall ui` printed (it has the token).</p>")
            return
        viewer = self.viewer
        try:
            with viewer.lock:
                if url.path == "/":
                    self._send(200, viewer.projects(params))
                elif url.path == "/search":
                    self._send(200, viewer.search(params))
                elif url.path == "/injections":
                    self._send(200, viewer.injections(params))
                elif url.path == "/facts":
                    self._send(200, viewer.facts(params))
                elif url.path.startswith("/session/") and len(url.path) > 9:
                    self._send(*viewer.session(unquote(url.path[9:])))
                elif url.path == "/export":
                    # ASCII only: a header cannot carry other characters (a project named in CJK, say)
                    name = re.sub(r"(?a)[^\w.-]+", "-", params.get("project") or "all-projects").strip("-") or "project"
                    self._send_file(viewer.export(params), f"recall-{name}.jsonl")
                elif url.path.startswith("/memory/") and url.path[8:].isdigit():
                    self._send(*viewer.memory(int(url.path[8:]), params))
                elif url.path.startswith("/memory/") and url.path.endswith("/forget") and url.path[8:-7].isdigit():
                    self._send(*viewer.confirm_forget(int(url.path[8:-7])))
                else:
                    self._send(404, viewer.page("Not found", "<p>No such page.</p>"))
        except Exception as exc:  # one bad page must not stop the viewer
            self._send(500, f"<h1>500</h1><pre>{escape(type(exc).__name__)}: {escape(str(exc))}</pre>")

    def do_POST(self) -> None:
        try:
            self._post()
        except Exception as exc:  # a change that failed (a read-only data dir, a database away) says so
            self._send(500, f"<h1>500</h1><pre>{escape(type(exc).__name__)}: {escape(str(exc))}</pre>")

    def _post(self) -> None:
        url = urlparse(self.path)
        length = min(int(self.headers.get("Content-Length") or 0), 64 * 1024)
        posted = parse_qs(self.rfile.read(length).decode("utf-8", "replace"))
        params = {k: v[0] for k, v in posted.items()}
        if not self._authorised(params):
            self._send(HTTPStatus.FORBIDDEN, "<h1>403</h1>")
            return
        if url.path == "/forget":  # the ticked memories of a search: confirmed on a page of their own first
            ids = [int(i) for i in posted.get("id", []) if i.isascii() and i.isdigit()]
            with self.viewer.lock:
                if params.get("confirm") == "yes":
                    self._send(HTTPStatus.SEE_OTHER, "", location=self.viewer.forget_many(ids))
                else:
                    self._send(*self.viewer.confirm_forget_many(ids))
            return
        parts = url.path.strip("/").split("/")
        if (len(parts) != 3 or parts[0] != "memory" or not (parts[1].isascii() and parts[1].isdigit())
                or parts[2] not in ("pin", "unpin", "forget")):
            self._send(404, "<h1>404</h1>")
            return
        with self.viewer.lock:
            location = self.viewer.act(int(parts[1]), parts[2], confirmed=params.get("confirm") == "yes")
        self._send(HTTPStatus.SEE_OTHER, "", location=location)


def make_server(recall: Recall, port: int = 0, token: str | None = None) -> tuple[ThreadingHTTPServer, str]:
    """The viewer's HTTP server on 127.0.0.1:`port` (0: any free port) and its URL with the token."""
    viewer = Viewer(recall, token or secrets.token_urlsafe(24))
    handler = type("Handler", (_Handler,), {"viewer": viewer})
    server = ThreadingHTTPServer(("127.0.0.1", port), handler)
    server.daemon_threads = True
    url = f"http://127.0.0.1:{server.server_address[1]}/?{urlencode({'token': viewer.token})}"
    return server, url
