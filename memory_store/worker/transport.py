"""The worker's socket: a Unix socket in a private directory of this user (loopback TCP and a token file on
Windows), one thread per request. shared/protocol.py has the framing; worker/server.Worker answers."""

from __future__ import annotations

import json
import os
import queue
import socketserver
import threading
import time
from typing import Any

from ..core import later
from ..shared import cores, protocol
from ..shared.files import atomic_write, ensure_private_dir
from ..shared.paths import DataPaths, private_dir_is_ours

SEND_SECONDS = 5.0  # an answer fits the socket's buffer (a hook's output is at most 10,000 characters): sent at once


class _Handler(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        worker = self.server.worker  # type: ignore[attr-defined]  # worker/server.Worker
        owed = self.server.owed  # type: ignore[attr-defined]  # typed BaseServer here; _ReusedThreads.owed
        sock = self.request
        cores.pin_thread(worker.request_cpus)  # off the CPU kept for query embeddings, if one is (worker/embedding.py)
        with owed:
            pass  # what the answers sent so far owed is done (core/later.py): this request sees it in the store
        with later.deferring() as queued:
            try:
                deadline = time.monotonic() + 30
                line, rest = protocol.recv_line(sock, deadline)
                header = json.loads(line)
                if not isinstance(header, dict):
                    raise ValueError("request header is not an object")
                body = protocol.recv_exact(sock, int(header.get("body") or 0), rest, deadline)
                answer = worker.answer(header, body)
            except Exception as exc:
                worker.failed("bad_request", f"{type(exc).__name__}: {exc}")
                answer = protocol.encode({"ok": False, "error": str(exc)})
        if not queued:
            _send(sock, answer)
            return
        with owed:  # from the sending on: a request that comes after this answer finds what it owed done
            _send(sock, answer)
            later.run(queued, lambda exc: worker.failed("after_answer_failed", f"{type(exc).__name__}: {exc}"))


def _send(sock, answer: bytes) -> None:
    try:
        sock.settimeout(SEND_SECONDS)  # a client that stops reading holds up no other request for longer
        sock.sendall(answer)
    except OSError:
        pass  # the hook gave up waiting; it has spooled the event, and the event id dedups it


class _ReusedThreads(socketserver.ThreadingMixIn):
    """A thread per request at once, as ThreadingMixIn, but a thread that finished one waits for the next instead of
    ending: a health request's round trip 1.1 -> 0.8 ms (starting a thread is most of it). Threads are daemons and end
    with the server (server_close): there are as many as requests ever ran at once."""

    daemon_threads = True
    worker: Any  # the Worker whose `answer` handles each request (set by `listen`)
    owed: threading.Lock  # held from an answer's sending to its owed work's end (core/later.py)

    def __init__(self, *args, **kwargs):
        self._pool_lock = threading.Lock()
        self._waiting = 0  # threads waiting for a request
        self._closed = False
        self._requests: queue.SimpleQueue = queue.SimpleQueue()
        super().__init__(*args, **kwargs)

    def process_request(self, request, client_address):
        with self._pool_lock:
            waiting = self._waiting > 0
            self._waiting -= waiting
        if waiting:
            self._requests.put((request, client_address))
        else:
            threading.Thread(target=self._serve, args=(request, client_address), daemon=True).start()

    def _serve(self, request, client_address) -> None:
        while True:
            self.process_request_thread(request, client_address)  # ThreadingMixIn's: handles errors, closes
            with self._pool_lock:
                if self._closed:
                    return
                self._waiting += 1
            handed = self._requests.get()
            if handed is None:  # server_close
                return
            request, client_address = handed

    def server_close(self) -> None:
        super().server_close()
        with self._pool_lock:
            self._closed, waiting, self._waiting = True, self._waiting, 0
        for _ in range(waiting):
            self._requests.put(None)


class _UnixServer(_ReusedThreads, socketserver.UnixStreamServer):
    request_queue_size = 64


class _TcpServer(_ReusedThreads, socketserver.TCPServer):
    request_queue_size = 64
    allow_reuse_address = False


def listen(worker, paths: DataPaths, token: str) -> tuple[_UnixServer | _TcpServer, int | None]:
    """A server bound where hooks look for `worker` (with `answer`, `failed` and `request_cpus`), and the socket file's
    inode (None on TCP): whether the socket is still ours is checked by it."""
    inode = None
    server: _UnixServer | _TcpServer
    if protocol.USE_TCP:
        server = _TcpServer(("127.0.0.1", 0), _Handler)
        port = server.server_address[1]
        atomic_write(paths.worker_endpoint, f"{port} {token}")
    else:
        path = paths.worker_socket
        ensure_private_dir(path.parent)
        if not private_dir_is_ours(str(path.parent)):
            raise RuntimeError(f"{path.parent} is not a private directory of this user: refusing to listen there")
        try:
            path.unlink()  # stale: the worker holds the lock, so no live worker owns it
        except FileNotFoundError:
            pass
        server = _UnixServer(str(path), _Handler, bind_and_activate=False)
        old_umask = os.umask(0o177)
        try:
            server.server_bind()
        finally:
            os.umask(old_umask)
        server.server_activate()
        inode = os.stat(path).st_ino
    server.worker = worker
    server.owed = threading.Lock()
    return server, inode


def socket_lost(paths: DataPaths, inode: int | None) -> str | None:
    """Why the socket is no longer this worker's ("socket_taken": another worker bound the path; "socket_gone"),
    or None."""
    if protocol.USE_TCP:
        return None
    try:
        return "socket_taken" if os.stat(paths.worker_socket).st_ino != inode else None
    except FileNotFoundError:
        return "socket_gone"


def remove_socket(paths: DataPaths, inode: int | None) -> None:
    """Remove the socket file if it is still this worker's."""
    if not protocol.USE_TCP and socket_lost(paths, inode) is None:
        paths.worker_socket.unlink(missing_ok=True)
