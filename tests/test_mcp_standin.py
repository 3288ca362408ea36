"""recall's MCP server while its Python is being set up (hook/mcp_standin.py): Claude Code caches a server that
fails to connect for 15 minutes, so scripts/recall answers `initialize` and `tools/list` from the standard library
at once, says "still setting up" from a tool, and serves the real tools as soon as recall's Python exists."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading

import pytest
from conftest import ROOT

from memory_store.hook.mcp_standin import TOOLS_FILE
from memory_store.shells import mcp_tools

pytestmark = pytest.mark.slow  # a venv, the real server behind the stand-in


def test_the_stand_in_lists_the_tools_the_real_server_has():
    with open(TOOLS_FILE, encoding="utf-8") as handle:
        shipped = json.load(handle)
    assert shipped == mcp_tools.described(), "run `python -m memory_store.shells.mcp_tools`"


class Session:
    """An MCP client on stdio: one JSON-RPC message per line; `ask` waits at most `timeout` for its answer."""

    def __init__(self, argv, env):
        self.process = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
        self.next_id = 0

    def ask(self, method, params=None, timeout=5.0):
        self.next_id += 1
        message = {"jsonrpc": "2.0", "id": self.next_id, "method": method, **({"params": params} if params else {})}
        self.process.stdin.write(json.dumps(message) + "\n")
        self.process.stdin.flush()
        found = {}

        def read():
            for line in self.process.stdout:
                answer = json.loads(line)
                if answer.get("id") == self.next_id:
                    found["answer"] = answer
                    return

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        reader.join(timeout)
        assert "answer" in found, f"no answer to {method} within {timeout} s"
        return found["answer"]

    def close(self):
        self.process.stdin.close()
        self.process.wait(10)


def test_during_setup_the_server_connects_at_once_and_serves_once_ready(home, tmp_path):
    bare = tmp_path / "bare"  # a Python without recall's dependencies, the only one there is
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(bare)], check=True)
    env = {"PATH": f"{bare / 'bin'}:/usr/bin:/bin", "HOME": str(tmp_path), "RECALL_HOME": str(home),
           "RECALL_PYTHON": str(bare / "bin" / "python")}
    session = Session([str(ROOT / "scripts" / "recall"), "mcp", "--home", str(home)], env)
    try:
        started = session.ask("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                             "clientInfo": {"name": "claude-code", "version": "2.1.337"}})
        assert started["result"]["protocolVersion"] == "2025-06-18"
        tools = session.ask("tools/list")["result"]["tools"]
        assert {t["name"] for t in tools} >= {"search", "timeline", "get_memories", "facts", "remember"}
        waiting = session.ask("tools/call", {"name": "search", "arguments": {"query": "staging deploy"}})["result"]
        assert waiting["isError"] and "still setting up" in waiting["content"][0]["text"]
        venv_python = home / "venv" / "bin" / "python"  # the setup is done: its Python is there
        venv_python.parent.mkdir(parents=True)
        venv_python.write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
        venv_python.chmod(0o755)
        served = session.ask("tools/call", {"name": "search", "arguments": {"query": "staging deploy"}},
                             timeout=60)["result"]
        assert not served.get("isError") and "Nothing relevant found" in served["content"][0]["text"], served
    finally:
        session.close()
    assert session.process.returncode == 0


def test_a_real_server_that_cannot_start_leaves_the_stand_in_answering():
    """The Python looked ready but its server ends at once (a broken install): the tool call still gets an answer,
    and the connection stays."""
    from memory_store.hook.mcp_standin import StandIn

    ends = ([sys.executable, "-c", "pass"], dict(os.environ))
    standin = StandIn(lambda: ends, "still setting up")
    standin.answer({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18"}})
    for ident in (2, 3):
        reply = standin.answer({"jsonrpc": "2.0", "id": ident, "method": "tools/call",
                                "params": {"name": "search", "arguments": {"query": "x"}}})
        assert reply["id"] == ident and reply["result"]["isError"], reply
    assert standin.real is None
