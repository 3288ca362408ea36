"""A loopback stand-in for the Anthropic Messages API, for driving the real Claude Code CLI.

Stdlib only. Never writes to stdout; set MOCK_ANTHROPIC_DEBUG=1 to log to stderr.

    with MockAnthropic() as mock:                 # or MockAnthropic(script=my_script)
        env = claude_env(home, mock.url)
        ... run claude ...
        assert "MARKER" in mock.all_text()

A *script* is a callable ``(request_body: dict) -> Reply`` where Reply is ``Text("...")``
or ``ToolUse(name="Bash", input={...}, text_before="...")`` (a plain ``str`` is taken as
``Text``). It is only called for the scripted conversation: side requests the CLI makes
(title / topic generation, quota probes, ...) get a short canned reply instead, see
``is_side_request``.

Default script (``default_script``): if the user prompt of the current turn contains
``PLEASE_RUN_TOOL: <command>`` (command = rest of the line) the model runs that command
with the Bash tool, once; several such lines run one after the other. Otherwise it answers
``Mock reply: done.``
"""

from __future__ import annotations

import itertools
import json
import os
import re
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = [
    "Text",
    "ToolUse",
    "Reply",
    "MockAnthropic",
    "default_script",
    "is_side_request",
    "current_turn",
    "prompt_text",
    "turn_prompt",
    "tool_results_in_turn",
    "DEFAULT_TEXT",
    "SIDE_TEXT",
    "RUN_TOOL_TOKEN",
]

DEFAULT_TEXT = "Mock reply: done."
SIDE_TEXT = "Mock title"
RUN_TOOL_TOKEN = "PLEASE_RUN_TOOL:"
DEFAULT_MODEL = "claude-mock-1"


@dataclass
class Text:
    text: str


@dataclass
class ToolUse:
    name: str
    input: dict = field(default_factory=dict)
    text_before: str | None = None
    id: str | None = None  # tool_use id; generated when None


Reply = Text | ToolUse


def _debug(msg: str) -> None:
    if os.environ.get("MOCK_ANTHROPIC_DEBUG"):
        try:
            sys.stderr.write(f"[mock-anthropic] {msg}\n")
            sys.stderr.flush()
        except Exception:
            pass


# --------------------------------------------------------------------------- request helpers

_REMINDER_RE = re.compile(r"<system-reminder>.*?</system-reminder>", re.S)


def _blocks(message: dict) -> list[dict]:
    content = message.get("content")
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if isinstance(content, list):
        return [b for b in content if isinstance(b, dict)]
    return []


def _has_tool_result(message: dict) -> bool:
    return any(b.get("type") == "tool_result" for b in _blocks(message))


def current_turn(body: dict) -> tuple[int, list[dict]]:
    """(index of the user message that opened the current turn, messages from it on).

    A turn opens at a ``user`` message without ``tool_result`` that follows an
    ``assistant`` message (or starts the conversation). ``system``-role messages (where
    Claude Code 2.1.330 puts hook ``additionalContext``) are skipped, and a user message
    that follows a tool_result (injected context) continues the turn instead of opening
    one. Returns (-1, []) if there is none.
    """
    messages = body.get("messages") or []
    start = -1
    prev = None  # kind of the previous non-system message
    for i, m in enumerate(messages):
        if not isinstance(m, dict) or m.get("role") not in ("user", "assistant"):
            continue
        if m.get("role") == "assistant":
            prev = "assistant"
        elif _has_tool_result(m):
            prev = "tool_result"
        elif prev in (None, "assistant"):
            start, prev = i, "prompt"
        # else: a user message right after the prompt or a tool_result continues the turn
    if start < 0:
        return -1, []
    return start, messages[start:]


def turn_prompt(body: dict) -> str:
    """The user's own text that opened the current turn (consecutive user messages
    joined; ``<system-reminder>`` sections removed)."""
    idx, turn = current_turn(body)
    parts = []
    for m in turn:
        if m.get("role") == "assistant" or (m.get("role") == "user" and _has_tool_result(m)):
            break
        if m.get("role") == "user":
            parts.append(prompt_text(m))
    return "\n".join(p for p in parts if p)


def prompt_text(message: dict) -> str:
    """The user's own text of a message: text blocks minus ``<system-reminder>`` sections
    (where hook ``additionalContext`` and other injected context live)."""
    texts = [b.get("text", "") for b in _blocks(message) if b.get("type") == "text"]
    own = [_REMINDER_RE.sub("", t) for t in texts]
    return "\n".join(t for t in own if t.strip())


def tool_results_in_turn(body: dict) -> int:
    _, turn = current_turn(body)
    return sum(
        1
        for m in turn
        if isinstance(m, dict) and m.get("role") == "user"
        for b in _blocks(m)
        if b.get("type") == "tool_result"
    )


def is_side_request(body: dict) -> bool:
    """Heuristic: True for requests that are not the main agent conversation.

    Claude Code's main loop (and /compact) always offers tools and a large ``max_tokens``;
    side tasks (session title, topic detection, quota probe, ...) send no tools or a tiny
    ``max_tokens``. With CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1, 2.1.330 made no side
    request at all in ``-p`` runs. Pass ``side_filter=None`` to script every request.
    """
    if not body.get("tools"):
        return True
    max_tokens = body.get("max_tokens")
    return isinstance(max_tokens, int) and max_tokens <= 32


def default_script(body: dict) -> Reply:
    text = turn_prompt(body)
    commands = [
        m.group(1).strip()
        for m in re.finditer(re.escape(RUN_TOOL_TOKEN) + r"[ \t]*([^\r\n]*)", text)
        if m.group(1).strip()
    ]
    done = tool_results_in_turn(body)
    if done < len(commands):
        command = commands[done]
        return ToolUse(
            name="Bash",
            input={"command": command, "description": "Run the requested command"},
            text_before="Running a command.",
        )
    return Text(DEFAULT_TEXT)


def _estimate_tokens(obj: Any) -> int:
    return max(1, len(json.dumps(obj, ensure_ascii=False)) // 4)


# --------------------------------------------------------------------------- server


class _Handler(BaseHTTPRequestHandler):
    server_version = "MockAnthropic/1.0"
    protocol_version = "HTTP/1.1"
    mock: MockAnthropic  # set on the subclass

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        _debug(f"{self.address_string()} {format % args}")

    # -- plumbing
    def _read_body(self) -> bytes:
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            return self.rfile.read(length)
        if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
            chunks = []
            while True:
                size = int(self.rfile.readline().strip().split(b";")[0] or b"0", 16)
                if size == 0:
                    self.rfile.readline()
                    break
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
            return b"".join(chunks)
        return b""

    def _send_json(self, status: int, obj: Any) -> None:
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("request-id", self.mock._next_id("req_mock"))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    # -- verbs
    def do_GET(self) -> None:
        self._read_body()
        _debug(f"GET {self.path}")
        self.mock._record_side(self.command, self.path, None)
        self._send_json(200, {})

    do_HEAD = do_GET
    do_DELETE = do_GET
    do_PUT = do_GET
    do_PATCH = do_GET

    def do_OPTIONS(self) -> None:
        self._read_body()
        self.send_response(204)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_POST(self) -> None:
        raw = self._read_body()
        path = self.path.split("?", 1)[0].rstrip("/")
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = None
        if path.endswith("/v1/messages") and isinstance(body, dict):
            self._messages(body)
        elif path.endswith("/v1/messages/count_tokens") and isinstance(body, dict):
            self.mock._record_side(self.command, self.path, body)
            self._send_json(200, {"input_tokens": _estimate_tokens(body)})
        else:
            _debug(f"POST {self.path} (unhandled, 200 {{}})")
            self.mock._record_side(self.command, self.path, body)
            self._send_json(200, {})

    def _messages(self, body: dict) -> None:
        reply, side = self.mock._handle(body)
        msg_id = self.mock._next_id("msg_mock")
        model = body.get("model") or DEFAULT_MODEL
        blocks: list[dict] = []
        if isinstance(reply, ToolUse):
            if reply.text_before:
                blocks.append({"type": "text", "text": reply.text_before})
            blocks.append(
                {
                    "type": "tool_use",
                    "id": reply.id or self.mock._next_id("toolu_mock"),
                    "name": reply.name,
                    "input": reply.input or {},
                }
            )
            stop_reason = "tool_use"
        else:
            blocks.append({"type": "text", "text": reply.text})
            stop_reason = "end_turn"
        usage_in = _estimate_tokens(body.get("messages") or [])
        usage_out = max(1, _estimate_tokens(blocks))
        _debug(
            f"POST /v1/messages stream={bool(body.get('stream'))} side={side} "
            f"-> {stop_reason} {json.dumps(blocks)[:200]}"
        )
        if body.get("stream"):
            self._stream(msg_id, model, blocks, stop_reason, usage_in, usage_out)
        else:
            self._send_json(
                200,
                {
                    "id": msg_id,
                    "type": "message",
                    "role": "assistant",
                    "model": model,
                    "content": blocks,
                    "stop_reason": stop_reason,
                    "stop_sequence": None,
                    "usage": _usage(usage_in, usage_out),
                },
            )

    def _stream(self, msg_id, model, blocks, stop_reason, usage_in, usage_out) -> None:
        events: list[tuple[str, dict]] = [
            (
                "message_start",
                {
                    "type": "message_start",
                    "message": {
                        "id": msg_id,
                        "type": "message",
                        "role": "assistant",
                        "model": model,
                        "content": [],
                        "stop_reason": None,
                        "stop_sequence": None,
                        "usage": _usage(usage_in, 1),
                    },
                },
            )
        ]
        for i, block in enumerate(blocks):
            if block["type"] == "text":
                start = {"type": "text", "text": ""}
                deltas = [{"type": "text_delta", "text": p} for p in _split(block["text"])]
            else:
                start = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
                deltas = [
                    {"type": "input_json_delta", "partial_json": p}
                    for p in _split(json.dumps(block["input"]))
                ]
            events.append(
                (
                    "content_block_start",
                    {"type": "content_block_start", "index": i, "content_block": start},
                )
            )
            for d in deltas:
                events.append(
                    ("content_block_delta", {"type": "content_block_delta", "index": i, "delta": d})
                )
            events.append(("content_block_stop", {"type": "content_block_stop", "index": i}))
        events.append(
            (
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": stop_reason, "stop_sequence": None},
                    "usage": {"output_tokens": usage_out},
                },
            )
        )
        events.append(("message_stop", {"type": "message_stop"}))
        payload = "".join(
            f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in events
        ).encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Content-Length", str(len(payload)))
        self.send_header("request-id", self.mock._next_id("req_mock"))
        self.end_headers()
        self.wfile.write(payload)
        self.wfile.flush()


def _usage(inp: int, out: int) -> dict:
    return {
        "input_tokens": inp,
        "output_tokens": out,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
    }


def _split(s: str, n: int = 2) -> list[str]:
    """Split into ``n`` roughly equal non-empty parts (exercise delta concatenation)."""
    if len(s) < n:
        return [s] if s else [""]
    k = len(s) // n
    return [s[:k]] + ([s[k:]] if s[k:] else [])


class MockAnthropic:
    """Loopback Messages API on 127.0.0.1:<free port>, served from a daemon thread.

    Attributes:
        url        ``http://127.0.0.1:<port>`` (use as ANTHROPIC_BASE_URL)
        requests   every POST /v1/messages body (parsed JSON), in arrival order
                   (side requests included); a snapshot copy is returned
        side_requests   the subset of ``requests`` classified as side requests
        main_requests   the subset answered by the script
        other_requests  (method, path, body) of every other request (GETs, count_tokens, ...)
        errors     exceptions raised by the script (the reply then was an error text)
    """

    def __init__(
        self,
        script: Callable[[dict], Reply] | None = None,
        *,
        side_reply: Callable[[dict], Reply] | None = None,
        side_filter: Callable[[dict], bool] | None = is_side_request,
        host: str = "127.0.0.1",
        port: int = 0,
    ) -> None:
        self.script = script or default_script
        self.side_reply = side_reply or (lambda body: Text(SIDE_TEXT))
        self.side_filter = side_filter
        self._host = host
        self._port = port
        self._lock = threading.Lock()
        self._entries: list[tuple[dict, bool]] = []  # (body, is_side)
        self._other: list[tuple[str, str, Any]] = []
        self._errors: list[BaseException] = []
        self._counters: dict[str, itertools.count] = {}
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle
    def start(self) -> MockAnthropic:
        if self._server is not None:
            return self
        handler = type("BoundHandler", (_Handler,), {"mock": self})
        server = ThreadingHTTPServer((self._host, self._port), handler)
        server.daemon_threads = True
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever, name="mock-anthropic", daemon=True
        )
        self._thread.start()
        _debug(f"listening on {self.url}")
        return self

    def stop(self) -> None:
        server, self._server = self._server, None
        if server is not None:
            server.shutdown()
            server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> MockAnthropic:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError("MockAnthropic is not running")
        return self._server.server_address[1]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    # -- recorded data
    @property
    def requests(self) -> list[dict]:
        with self._lock:
            return [r for r, _ in self._entries]

    @property
    def side_requests(self) -> list[dict]:
        with self._lock:
            return [r for r, side in self._entries if side]

    @property
    def main_requests(self) -> list[dict]:
        with self._lock:
            return [r for r, side in self._entries if not side]

    @property
    def other_requests(self) -> list[tuple[str, str, Any]]:
        with self._lock:
            return list(self._other)

    @property
    def errors(self) -> list[BaseException]:
        with self._lock:
            return list(self._errors)

    def all_text(self) -> str:
        """All recorded /v1/messages bodies as JSON text, one per line (for substring asserts).

        Serialized with ``ensure_ascii=False`` so non-ASCII text is searchable as is; note
        that quotes and newlines inside strings appear JSON-escaped.
        """
        return "\n".join(json.dumps(r, ensure_ascii=False) for r in self.requests)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._other.clear()
            self._errors.clear()

    # -- internals used by the handler
    def _next_id(self, prefix: str) -> str:
        with self._lock:
            counter = self._counters.setdefault(prefix, itertools.count(1))
            return f"{prefix}{next(counter):04d}"

    def _record_side(self, method: str, path: str, body: Any) -> None:
        with self._lock:
            self._other.append((method, path, body))

    def _handle(self, body: dict) -> tuple[Reply, bool]:
        try:
            side = bool(self.side_filter and self.side_filter(body))
        except Exception:
            side = False
        with self._lock:
            self._entries.append((body, side))
        fn = self.side_reply if side else self.script
        try:
            reply = fn(body)
            if isinstance(reply, str):
                reply = Text(reply)
            if not isinstance(reply, (Text, ToolUse)):
                raise TypeError(f"script returned {type(reply).__name__}, expected Text or ToolUse")
        except Exception as exc:  # keep serving; surface via .errors
            with self._lock:
                self._errors.append(exc)
            _debug(f"script error: {exc!r}")
            reply = Text(f"Mock script error: {exc!r}")
        return reply, side
