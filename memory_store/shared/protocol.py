"""The wire protocol between hooks, the CLI and the worker. Standard library only, and lean.

One request per connection. A message (either way) is a JSON header on one line, followed
by `body` raw bytes when the header says so:

    request   {"v":1,"op":"hook","event":"UserPromptSubmit","event_id":"…","received_at":…,"body":N}\\n<N bytes>
    answer    {"ok":true,"body":M}\\n<M bytes>

For `hook` the request body is the hook's stdin, untouched, and the answer body is exactly
what the hook prints. The hook process therefore never parses JSON on its fast path: it
writes a header it formats itself and recognises the worker's canonical success header,
and only imports `json` when something went wrong. That keeps a hook within a few
milliseconds of a bare interpreter (`json` alone costs ~9 ms to import, `socket` ~3 ms, so
the raw `_socket` module is used, and `os` only where Windows or a long path needs it).

On POSIX the channel is a Unix socket (0600; see paths.socket_path for where); on Windows it is loopback
TCP, with the port and a random token in a 0600 file only the user can read. Every
request carries `v` (PROTOCOL_VERSION); the worker refuses other versions.
"""

import _socket
import sys
import time

from .wire import (
    ENDPOINT_NAME,
    MAX_BODY_BYTES,
    MAX_HEADER_BYTES,
    OK_PREFIX,
    PROTOCOL_VERSION,
    RUNTIME_DIR,
    getenv,
    socket_file,
)

USE_TCP = sys.platform == "win32" or not hasattr(_socket, "AF_UNIX")
if not USE_TCP:
    import posix as _posix  # what os wraps: the socket's path needs the uid, not all of os


class WorkerUnavailable(Exception):
    """No worker answered in time; callers fall back (spool, in-process search) and never fail."""


class WorkerTimeout(WorkerUnavailable):
    """A worker accepted the connection but did not answer in time: it is alive, only busy."""


def ok_header(body_size: int) -> bytes:
    return OK_PREFIX + str(int(body_size)).encode("ascii") + b"}\n"


def endpoint_file(home: str) -> str:
    import os  # Windows only: the hook's fast path on POSIX never gets here

    return os.path.join(home, RUNTIME_DIR, ENDPOINT_NAME)


def _connect(home: str, timeout: float):
    """A connected socket and the token to present (Windows), or WorkerUnavailable."""
    try:
        if USE_TCP:
            with open(endpoint_file(home), encoding="ascii") as handle:
                port, token = handle.read().split()
            sock = _socket.socket(_socket.AF_INET, _socket.SOCK_STREAM)
            address: str | tuple[str, int] = ("127.0.0.1", int(port))
        else:
            token = None
            sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
            address = socket_file(home, getenv("XDG_RUNTIME_DIR"), _posix.getuid())
        sock.settimeout(timeout)
        try:
            sock.connect(address)
        except BaseException:
            sock.close()
            raise
        return sock, token
    except (OSError, ValueError) as exc:
        raise WorkerUnavailable(f"cannot connect: {exc}") from exc


def recv_line(sock, deadline: float, limit: int = MAX_HEADER_BYTES) -> tuple[bytes, bytes]:
    """(the first line without its newline, whatever arrived after it)."""
    data = b""
    while True:
        newline = data.find(b"\n")
        if newline >= 0:
            return data[:newline], data[newline + 1:]
        if len(data) > limit:
            raise ValueError("header too long")
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError("timed out")
        sock.settimeout(remaining)
        chunk = sock.recv(1 << 16)
        if not chunk:
            return data, b""
        data += chunk


def recv_exact(sock, size: int, already: bytes, deadline: float) -> bytes:
    if size > MAX_BODY_BYTES:
        raise ValueError("body too large")
    parts = [already]
    have = len(already)
    while have < size:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError("timed out")
        sock.settimeout(remaining)
        chunk = sock.recv(min(1 << 20, size - have))
        if not chunk:
            raise ValueError("connection closed mid-body")
        parts.append(chunk)
        have += len(chunk)
    return b"".join(parts)[:size]


def exchange(home: str, header: bytes, body: bytes, timeout: float) -> tuple[bytes, bytes]:
    """Send one request (header line without newline, raw body) and return (answer header, answer body)."""
    deadline = time.monotonic() + timeout
    sock, token = _connect(home, timeout)
    try:
        if token:  # Windows: prove we can read the user's 0600 token file
            header = header[:-1] + b',"token":"' + token.encode("ascii") + b'"}'
        sock.settimeout(max(0.001, deadline - time.monotonic()))
        sock.sendall(header + b"\n" + body)
        line, rest = recv_line(sock, deadline)
        if line.startswith(OK_PREFIX):
            size = int(line[len(OK_PREFIX):-1])
            return line, recv_exact(sock, size, rest, deadline)
        return line, b""
    except TimeoutError as exc:
        raise WorkerTimeout(f"no answer within {timeout:.1f} s") from exc
    except (OSError, ValueError) as exc:
        raise WorkerUnavailable(f"request failed: {exc}") from exc
    finally:
        sock.close()


def request(paths, message: dict, timeout: float, body: bytes = b"") -> dict:
    """A JSON request (CLI, health checks): returns the worker's answer header as a dict, with the
    answer body, if any, under "body_bytes"."""
    import json

    header = dict(message, v=PROTOCOL_VERSION)
    if body:
        header["body"] = len(body)
    line, answer_body = exchange(str(paths.home), json.dumps(header, separators=(",", ":")).encode("utf-8"),
                                 body, timeout)
    try:
        answer = json.loads(line)
    except ValueError as exc:
        raise WorkerUnavailable(f"bad answer: {exc}") from exc
    if not isinstance(answer, dict):
        raise WorkerUnavailable("bad answer: not an object")
    if answer.get("error") == "unsupported protocol":
        raise WorkerUnavailable("the worker speaks another protocol version")
    if answer_body:
        answer["body_bytes"] = answer_body
    return answer


def encode(message: dict) -> bytes:
    """A JSON header line (the worker's answers other than a hook's canonical success)."""
    import json

    return json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n"
