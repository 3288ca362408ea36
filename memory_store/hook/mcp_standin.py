"""recall's MCP server while recall's Python is not there yet (the first-run setup, an upgrade that rebuilds it).

Claude Code starts the plugin's MCP server with the session. If it fails to connect, Claude Code caches the failure
("recent failure cached, retries automatically in 15 min"): no recall tools in any session for 15 minutes after an
install or an upgrade. So scripts/recall (hook/launch.py), finding no Python with recall's dependencies, runs this
instead, with the standard library only: it answers `initialize` and `tools/list` at once (the tools as the real
server states them: mcp_tools.json), and a tool call with "recall is still setting up" until a Python with recall's
dependencies exists; from then on it starts the real server and passes every request through to it, so the
session's tools work without a reconnect. Messages are JSON-RPC, one per line (MCP's stdio transport).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Callable

TOOLS_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "mcp_tools.json")
PROTOCOL_VERSION = "2025-06-18"  # what the stand-in says when a client asks for none
METHOD_NOT_FOUND = -32601
Command = tuple[list[str], dict[str, str]]  # the real server's argv and environment


class RealServer:
    """The real server as a child process, after its own initialize: requests go through one at a time."""

    def __init__(self, command: Command, initialize: dict):
        argv, env = command
        self.process = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                        encoding="utf-8", bufsize=1, env=env)
        self.lock = threading.Lock()
        self.ask({"jsonrpc": "2.0", "id": "standin-initialize", "method": "initialize", "params": initialize})
        self.tell({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def tell(self, message: dict) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(message) + "\n")
        self.process.stdin.flush()

    def ask(self, message: dict) -> dict:
        """The child's answer to `message` (its notifications and log lines meanwhile are dropped)."""
        with self.lock:
            self.tell(message)
            assert self.process.stdout is not None
            for line in self.process.stdout:
                try:
                    answer = json.loads(line)
                except ValueError:
                    continue
                if isinstance(answer, dict) and answer.get("id") == message["id"]:
                    return answer
        raise OSError("recall's MCP server ended")

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(5)
            except subprocess.TimeoutExpired:
                self.process.kill()


class StandIn:
    """Answers MCP requests; `ready()` gives the real server's command once recall's Python exists, else None."""

    def __init__(self, ready: Callable[[], Command | None], setting_up: str):
        with open(TOOLS_FILE, encoding="utf-8") as handle:
            self.described = json.load(handle)
        self.ready = ready
        self.setting_up = setting_up
        self.initialize: dict = {}
        self.real: RealServer | None = None

    def answer(self, message: dict) -> dict | None:
        """The response to one message (None for a notification)."""
        method, ident = message.get("method"), message.get("id")
        if ident is None:
            return None
        if method == "initialize":
            self.initialize = message.get("params") or {}
            version = self.initialize.get("protocolVersion") or PROTOCOL_VERSION
            return _result(ident, {"protocolVersion": version, "capabilities": {"tools": {"listChanged": False}},
                                   "serverInfo": {"name": "recall", "version": "setting up"},
                                   "instructions": self.described["instructions"]})
        if method == "ping":
            return _result(ident, {})
        if method == "tools/list":
            return _result(ident, {"tools": self.described["tools"]})
        if method == "tools/call":
            try:
                real = self._real()
                if real is not None:
                    return real.ask(message)
            except OSError:  # it could not start, or it ended: the next call starts it again
                if self.real is not None:
                    self.real.close()
                self.real = None
            return _result(ident, {"content": [{"type": "text", "text": self.setting_up}], "isError": True})
        return {"jsonrpc": "2.0", "id": ident, "error": {"code": METHOD_NOT_FOUND, "message": f"no method {method}"}}

    def _real(self) -> RealServer | None:
        if self.real is None:
            command = self.ready()
            if command is not None:
                self.real = RealServer(command, self.initialize)
        return self.real

    def serve(self, stdin, stdout) -> int:
        try:
            for line in stdin:
                try:
                    message = json.loads(line)
                except ValueError:
                    continue
                reply = self.answer(message) if isinstance(message, dict) else None
                if reply is not None:
                    stdout.write(json.dumps(reply) + "\n")
                    stdout.flush()
        finally:
            if self.real is not None:
                self.real.close()
        return 0


def _result(ident, result: dict) -> dict:
    return {"jsonrpc": "2.0", "id": ident, "result": result}


def serve(ready: Callable[[], Command | None], setting_up: str) -> int:
    return StandIn(ready, setting_up).serve(sys.stdin, sys.stdout)
