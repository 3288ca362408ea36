"""A loopback stand-in for the OpenAI Responses API, for driving the real Codex CLI offline.

Stdlib only. Never writes to stdout; set MOCK_OPENAI_DEBUG=1 to log to stderr.

    with MockResponses() as mock:
        ... write config.toml with a provider whose base_url is mock.url, wire_api = "responses" ...
        ... run codex exec ...
        assert "MARKER" in mock.all_text()

Codex posts ``{base_url}/responses`` with the whole conversation in ``input`` (hook context is a
``developer`` message there) and reads a stream of server-sent events. A *script* is a callable
``(request_body) -> Reply``: ``Text("...")`` or ``Shell("command")`` (a function call of Codex's
shell tool, named after what the request offers). Default script: a line ``PLEASE_RUN_TOOL: cmd``
in the turn's prompt runs ``cmd`` once; otherwise the reply is ``Mock reply: done.``
"""

from __future__ import annotations

import itertools
import json
import os
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["Text", "Shell", "MockResponses", "default_script", "turn_prompt", "message_texts", "DEFAULT_TEXT"]

DEFAULT_TEXT = "Mock reply: done."
RUN_TOOL_TOKEN = "PLEASE_RUN_TOOL:"


@dataclass
class Text:
    text: str


@dataclass
class Shell:
    command: str


Reply = Text | Shell


def _debug(msg: str) -> None:
    if os.environ.get("MOCK_OPENAI_DEBUG"):
        sys.stderr.write(f"[mock-openai] {msg}\n")
        sys.stderr.flush()


def _item_text(item: dict) -> str:
    content = item.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return ""


def message_texts(body: dict, role: str) -> list[str]:
    """The texts of the request's ``input`` messages of one role (``user``, ``developer``...)."""
    items = body.get("input") or []
    return [_item_text(item) for item in items if isinstance(item, dict) and item.get("role") == role]


def _is_own_prompt(text: str) -> bool:
    # Codex sends its environment and instructions as user messages in tags; the prompt is untagged.
    stripped = text.lstrip()
    return bool(stripped) and not stripped.startswith("<")


def turn_prompt(body: dict) -> str:
    """The user's text that opened the current turn: the last untagged user message."""
    prompts = [text for text in message_texts(body, "user") if _is_own_prompt(text)]
    return prompts[-1] if prompts else ""


def _calls_in_turn(body: dict) -> int:
    items = body.get("input") or []
    last_user = max((i for i, item in enumerate(items) if isinstance(item, dict) and item.get("role") == "user"
                     and _is_own_prompt(_item_text(item))), default=-1)
    return sum(1 for item in items[last_user + 1:] if isinstance(item, dict) and item.get("type") == "function_call")


def default_script(body: dict) -> Reply:
    commands = [line.split(RUN_TOOL_TOKEN, 1)[1].strip() for line in turn_prompt(body).splitlines()
                if RUN_TOOL_TOKEN in line]
    done = _calls_in_turn(body)
    if done < len(commands):
        return Shell(commands[done])
    return Text(DEFAULT_TEXT)


def _shell_tool(body: dict) -> tuple[str, str]:
    """The name of the shell tool the request offers, and the argument name of its command."""
    names = [str(tool.get("name") or "") for tool in body.get("tools") or [] if isinstance(tool, dict)]
    for name in ("exec_command", "shell_command", "shell"):
        if name in names:
            return name, "cmd" if name == "exec_command" else "command"
    return "shell_command", "command"


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        _debug(format % args)

    def _send_json(self, status: int, obj: Any) -> None:
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        self.server.mock.other.append(("GET", self.path))
        if self.path.rstrip("/").endswith("/models"):
            self._send_json(200, {"models": [], "data": []})
        else:
            self._send_json(404, {"error": {"message": "not mocked"}})

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            self._send_json(400, {"error": {"message": "bad json"}})
            return
        if not self.path.rstrip("/").endswith("/responses"):
            self.server.mock.other.append(("POST", self.path))
            self._send_json(404, {"error": {"message": "not mocked"}})
            return
        self._stream(self.server.mock.handle(body))

    def _stream(self, reply: Reply) -> None:
        mock = self.server.mock
        response_id = mock.next_id("resp")
        if isinstance(reply, Shell):
            name, argument = _shell_tool(mock.requests[-1])
            call_id = mock.next_id("call")
            item = {"type": "function_call", "id": call_id, "call_id": call_id, "name": name,
                    "arguments": json.dumps({argument: reply.command})}
        else:
            item = {"type": "message", "role": "assistant", "id": mock.next_id("msg"),
                    "content": [{"type": "output_text", "text": reply.text}]}
        usage = {"input_tokens": 10, "input_tokens_details": None, "output_tokens": 5,
                 "output_tokens_details": None, "total_tokens": 15}
        events = [
            {"type": "response.created", "response": {"id": response_id}},
            {"type": "response.output_item.done", "item": item},
            {"type": "response.completed", "response": {"id": response_id, "usage": usage}},
        ]
        data = "".join(f"event: {event['type']}\ndata: {json.dumps(event)}\n\n" for event in events).encode()
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    mock: MockResponses


class MockResponses:
    """A Responses API on 127.0.0.1 that records every request body it answers."""

    def __init__(self, script: Callable[[dict], Reply] | None = None) -> None:
        self.script = script or default_script
        self.requests: list[dict] = []
        self.other: list[tuple[str, str]] = []
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> MockResponses:
        server = _Server(("127.0.0.1", 0), _Handler)
        server.mock = self
        self._server = server
        self._thread = threading.Thread(target=server.serve_forever, name="mock-openai", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> MockResponses:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    @property
    def url(self) -> str:
        assert self._server is not None, "start() the mock first"
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def next_id(self, prefix: str) -> str:
        return f"{prefix}_{next(self._ids)}"

    def handle(self, body: dict) -> Reply:
        with self._lock:
            self.requests.append(body)
        reply = self.script(body)
        if isinstance(reply, str):
            reply = Text(reply)
        _debug(f"reply {reply!r}")
        return reply

    def all_text(self) -> str:
        return "\n".join(json.dumps(body) for body in self.requests)

    def developer_texts(self) -> list[str]:
        """Every developer message of every request (where Codex puts hook ``additionalContext``)."""
        return [text for body in self.requests for text in message_texts(body, "developer")]
