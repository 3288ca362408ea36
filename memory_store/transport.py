"""How hooks and the CLI talk to the worker. Standard library only.

One request per connection: the client sends one JSON object and a newline, the worker
answers with one JSON object and a newline. On POSIX the channel is a Unix socket in the
data dir (0600); on Windows it is loopback TCP, with the port and a random token in a
0600 file that only the user can read.

Every request carries `v` (PROTOCOL_VERSION); the worker refuses other versions.
"""

from __future__ import annotations

import json
import os
import socket
import sys
import time

from .paths import DataPaths

PROTOCOL_VERSION = 1
MAX_MESSAGE_BYTES = 64 * 1024 * 1024
USE_TCP = sys.platform == "win32" or not hasattr(socket, "AF_UNIX")


class WorkerUnavailable(Exception):
    """No worker answered in time; callers fall back (spool, lexical path) and never fail."""


def encode(message: dict) -> bytes:
    return json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n"


def read_line(sock: socket.socket, deadline: float) -> bytes:
    """Read up to the first newline (or EOF) before `deadline` (a time.monotonic() value)."""
    chunks: list[bytes] = []
    size = 0
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError("worker did not answer in time")
        sock.settimeout(remaining)
        chunk = sock.recv(1 << 16)
        if not chunk:
            break
        newline = chunk.find(b"\n")
        if newline >= 0:
            chunks.append(chunk[:newline])
            break
        chunks.append(chunk)
        size += len(chunk)
        if size > MAX_MESSAGE_BYTES:
            raise ValueError("message too large")
    return b"".join(chunks)


def read_endpoint(paths: DataPaths) -> tuple[int, str]:
    """Windows: the worker's loopback port and token."""
    port, token = paths.worker_endpoint.read_text(encoding="ascii").split()
    return int(port), token


def connect(paths: DataPaths, timeout: float) -> tuple[socket.socket, str | None]:
    """Open a connection to the worker, or raise WorkerUnavailable."""
    try:
        if USE_TCP:
            port, token = read_endpoint(paths)
            sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
            return sock, token
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(timeout)
        try:
            sock.connect(str(paths.worker_socket))
        except BaseException:
            sock.close()
            raise
        return sock, None
    except (OSError, ValueError) as exc:
        raise WorkerUnavailable(f"cannot connect: {exc}") from exc


def request(paths: DataPaths, message: dict, timeout: float) -> dict:
    """Send one request and wait for the answer, all within `timeout` seconds."""
    deadline = time.monotonic() + timeout
    sock, token = connect(paths, timeout)
    try:
        payload = dict(message, v=PROTOCOL_VERSION)
        if token:
            payload["token"] = token
        sock.settimeout(max(0.001, deadline - time.monotonic()))
        sock.sendall(encode(payload))
        raw = read_line(sock, deadline)
    except (OSError, ValueError) as exc:  # timeouts are OSErrors too
        raise WorkerUnavailable(f"request failed: {exc}") from exc
    finally:
        sock.close()
    try:
        answer = json.loads(raw)
    except ValueError as exc:
        raise WorkerUnavailable(f"bad answer: {exc}") from exc
    if not isinstance(answer, dict):
        raise WorkerUnavailable("bad answer: not an object")
    if answer.get("error") == "unsupported protocol":
        raise WorkerUnavailable("worker speaks another protocol version")
    return answer
