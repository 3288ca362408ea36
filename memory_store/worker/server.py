"""The long-lived worker: one per data directory, holding the database, the model and caches.

Hooks are short processes; loading fastembed and the model costs them 1–2 s and ~300 MB,
so they talk to this process instead. It:

- takes an exclusive lock (`runtime/worker.lock`): a second worker for the same data dir
  exits at once, and a crashed worker's lock is released by the OS (no stale locks);
- listens on a Unix socket (loopback TCP + token file on Windows; worker/transport.py), answering
  hook, search, health, stats and shutdown requests (protocol.py has the framing);
- ingests the spool before it answers, so events stay in order;
- loads the embedding model in the background and embeds queued memories in batches
  (worker/embedding.py);
- exits `idle_timeout_minutes` after the last request and the last Claude Code session it served
  (worker/sessions.py: never under an open session), when its data dir disappears or another worker took
  its socket, once its Claude Code plugin is uninstalled and no session is open (worker/installation.py), and on
  SIGTERM.

Run it with `python -m memory_store.worker --home DIR` (hooks do this, detached; worker/process.py). Each request
is answered through the same Python API the CLI uses (`memory_store.api.Recall`).
"""

from __future__ import annotations

import json
import os
import secrets
import socketserver
import sys
import threading
import time
import traceback

from ..api import BadEvent, Recall
from ..core import later, stages
from ..core.config import config_problems, load_config
from ..core.injection import inject
from ..core.retrieval.search import SHOWN
from ..core.storage import StorageUnavailable
from ..shared import protocol, spool
from ..shared.database_url import database_url
from ..shared.logs import JsonLog
from ..shared.paths import DataPaths, database_env_fingerprint
from ..shared.payload import BadPayload, parse_payload
from ..shared.wire import CLAUDE_CODE
from ..version import __version__
from . import embedding, transport
from .installation import PluginInstall
from .sessions import OpenSessions

# A request thread that waits on SQLite gives the interpreter lock away, and the background's reading of new memories
# (pure Python) then kept it for the default 5 ms at each of a prompt's hundred small reads: prompts that resolved
# many facts took 100-290 ms instead of 30-60 (the latency bench's p95 166 ms). At 1 ms the request gets it back at
# once; the background's work is the same.
GIL_SWITCH_SECONDS = 0.001
WATCH_INTERVAL = 2.0  # seconds between idle/ownership checks (less for a shorter idle timeout)


class Worker:
    def __init__(self, paths: DataPaths):
        self.paths = paths
        self.config_stamp = self._config_stamp()
        self.config = load_config(paths.config)
        self.log = JsonLog(paths.log_file, "worker")
        # The model is loaded by the embedding thread, never on a request.
        self.recall = Recall(paths, self.config, load_models=False)
        self.started = time.time()
        self.last_request = time.monotonic()  # any request: the idle exit counts from the last one
        self.last_work = self.last_request  # a hook or a search: background embedding waits for a quiet moment
        self.sessions = OpenSessions()  # the Claude Code processes served: no idle exit while one runs
        self.install = PluginInstall(paths.home)
        self.stop_event = threading.Event()
        self.work_event = threading.Event()  # something new to embed
        self.token = secrets.token_hex(16)
        self.server: socketserver.BaseServer | None = None
        self.socket_inode: int | None = None
        self.model_state = "loading"
        self.request_cpus: set[int] = set()  # where request threads run, once a CPU is kept for queries (embedding.py)
        # Its first background round done: the recent vectors in RAM, the common words counted (~12 s of one core at
        # 100k memories, when prompts are slower); a bench measures the steady state after it.
        self.prepared = False
        self.last_error: str | None = None
        self.database_env = database_env_fingerprint()  # RECALL_DATABASE_URL as this worker was started with it

    # --- requests ---------------------------------------------------------------------------------

    def answer(self, message: dict, body: bytes) -> bytes:
        """The bytes to send back for one request."""
        if message.get("v") != protocol.PROTOCOL_VERSION:
            return protocol.encode({"ok": False, "error": "unsupported protocol",
                                     "protocol": protocol.PROTOCOL_VERSION})
        if protocol.USE_TCP and not secrets.compare_digest(str(message.get("token", "")), self.token):
            return protocol.encode({"ok": False, "error": "bad token"})
        self.last_request = time.monotonic()
        op = message.get("op")
        if op not in ("health", "drain"):  # a probe asks for no time: polling one must not hold the embedding back
            self.last_work = self.last_request
        if op == "hook":
            self.sessions.heard_from(message.get("claude_pid"))
            return self.hook(message, body)
        if op == "health":
            return protocol.encode({"ok": True, **self.health()})
        if op == "search":
            return protocol.encode(self.search(message))
        if op == "shutdown":
            self.log.info("shutdown_requested")
            self.stop_after_answer()
            return protocol.encode({"ok": True})
        if op == "drain":
            self.work_event.set()
            return protocol.encode({"ok": True, "pending": self.recall.pending_work(),
                                     "model": self.model_state})
        return protocol.encode({"ok": False, "error": f"unknown op {op!r}"})

    def _config_stamp(self) -> tuple | None:
        try:
            st = os.stat(self.paths.config)
        except OSError:
            return None
        return st.st_mtime_ns, st.st_size, st.st_ino

    def refresh_config(self) -> None:
        """A change to config.json applies from the next request on (one stat per request)."""
        stamp = self._config_stamp()
        if stamp == self.config_stamp:
            return
        self.config_stamp = stamp
        config = load_config(self.paths.config)
        if database_url(config.storage.url) != database_url(self.config.storage.url):
            # Another store: a worker holds one store for its life; the next hook starts one on the new store.
            self.log.info("database_change")
            self.stop_after_answer()
            return
        self.config = config
        self.recall.use_config(self.config)
        self.log.info("config_reloaded", problems=len(config_problems(self.config)))

    def hook(self, message: dict, body: bytes) -> bytes:
        """Store one hook event; the answer body is exactly what the hook prints."""
        with stages.timed() as timings:
            answer = self._hook(message, body)
        self.log_stages(timings, hook=str(message.get("event")))
        return answer

    def log_stages(self, timings: stages.Timings, **what) -> None:
        """Where a request's time went (core/stages.py), at debug level: `recall bench latency` reads it back."""
        if self.config.worker.log_level == "debug":
            self.log.write("debug", "stages", **what, total_ms=round(timings.total_ms(), 2),
                           **{f"{name}_ms": ms for name, ms in timings.rounded().items()})

    def _hook(self, message: dict, body: bytes) -> bytes:
        try:
            payload = parse_payload(body)
        except BadPayload as exc:
            return self.rejected(message, exc)
        with stages.stage("prepare"):
            try:
                self.recall.prepare_event(payload)  # a prompt's embedding begins now
            except Exception as exc:  # only a head start: the handler does it again, and says what went wrong
                self.log.warning("prepare_failed", error=f"{type(exc).__name__}: {exc}")
        with stages.stage("housekeeping"):
            self.refresh_config()
            self.ingest_spool()
        envelope = {"event_id": str(message.get("event_id") or ""), "received_at": message.get("received_at"),
                    "client": message.get("client") or CLAUDE_CODE, "payload": payload}
        try:
            output = self.recall.handle_event(envelope)
        except (BadPayload, BadEvent) as exc:
            return self.rejected(message, exc)
        except StorageUnavailable as exc:
            output = self.keep_for_later(envelope, exc)
        except Exception as exc:  # e.g. disk full: the hook spools the event and tries later
            self.failed("hook_failed", f"{type(exc).__name__}: {exc}", trace=traceback.format_exc(limit=3))
            self.set_damaged_database_aside(exc)
            return protocol.encode({"ok": False, "error": f"{type(exc).__name__}: {exc}"})
        self.work_event.set()
        if message.get("client_version") not in (None, __version__):
            # A newer (or older) plugin is calling: answer, then make way for its own worker.
            self.log.info("version_change", ours=__version__, theirs=message.get("client_version"))
            self.stop_after_answer()
        elif message.get("db") not in (None, self.database_env):
            # A session with another RECALL_DATABASE_URL: answer, then make way for a worker started with it.
            self.log.info("database_change")
            self.stop_after_answer()
        if isinstance(output, str):  # PreCompact: plain-text instructions (router.on_pre_compact)
            stdout = output.encode("utf-8")
        else:
            stdout = json.dumps(output, ensure_ascii=False).encode("utf-8") if output else b""
        return protocol.ok_header(len(stdout)) + stdout

    def rejected(self, message: dict, exc: Exception) -> bytes:
        """Input no hook should have sent (logged, then dropped: the hook stores nothing else for it)."""
        self.log.error("event_rejected", hook=str(message.get("event")), error=str(exc))
        return protocol.encode({"ok": False, "rejected": True, "error": str(exc)})

    def keep_for_later(self, envelope: dict, exc: StorageUnavailable) -> dict:
        """The database cannot be reached: the event waits in the spool (redacted, as the hooks spool it) and
        lands, exactly once, when it is back. SessionStart tells the user why (once per session)."""
        from ..shared.redact import clean_payload

        spool.write(self.paths.spool, {**envelope, "payload": clean_payload(envelope["payload"])})
        self.failed("storage_unavailable", str(exc), "warning", hook=str(envelope["payload"].get("hook_event_name")))
        payload = envelope["payload"]
        if payload.get("hook_event_name") == "SessionStart" and payload.get("source") != "compact":
            return inject.hook_output("SessionStart", "", f"recall: {exc}. This session's events are kept on this machine "
                               "and stored when the database is back; nothing is recalled until then.")
        return {}

    def search(self, message: dict) -> dict:
        with stages.timed() as timings:
            with stages.stage("housekeeping"):
                self.refresh_config()
                self.ingest_spool()  # a search must see every captured event
                place = message.get("place")
                if isinstance(place, str) and place and message.get("project"):
                    self.recall.note_project_path(str(message["project"]), place)
            hits = self.recall.search(
                str(message.get("query", "")), limit=int(message.get("limit", 10)), project=message.get("project"),
                shown=message.get("shown") if message.get("shown") in SHOWN else None,
                touch=message.get("touch") is True,
            )
            with stages.stage("render"):
                answer = {"ok": True, "hits": [h.model_dump(mode="json") for h in hits]}
        self.log_stages(timings, op="search")
        return answer

    def health(self) -> dict:
        try:
            pending, storage = self.recall.pending_work(), "ok"
        except StorageUnavailable as exc:
            pending, storage = None, str(exc)
        return {
            "pid": os.getpid(), "version": __version__, "home": str(self.paths.home), "model": self.model_state,
            "prepared": self.prepared,
            "uptime": round(time.time() - self.started, 1), "pending": pending, "python": sys.executable,
            "storage": storage, "rss_mb": rss_mb(), "last_error": self.last_error,
        }

    def failed(self, event: str, error: str, level: str = "error", **fields) -> None:
        """Log an error and keep it as the last one (`recall status` shows it)."""
        self.last_error = f"{time.strftime('%Y-%m-%d %H:%M:%S')} {event}: {error}"
        self.log.write(level, event, error=error, **fields)

    def set_damaged_database_aside(self, exc: Exception) -> None:
        """When `exc` says the database is damaged: move it aside and exit; the hook spools this event, and
        the next hook starts a worker on a new database that ingests the spool."""
        moved = self.recall.set_aside_if_damaged(exc)
        if moved:
            self.log.error("database_moved_aside", to=moved)
            self.stop_after_answer()

    # --- spool ------------------------------------------------------------------------------------

    def ingest_spool(self) -> int:
        try:
            done = self.recall.ingest_spool()
        except StorageUnavailable:
            return 0  # the events wait in the spool for the database
        if done:
            self.work_event.set()
        return done

    # --- background work --------------------------------------------------------------------------

    def embed_loop(self) -> None:
        embedding.run(self)

    def watch(self) -> None:
        """Store what waits in the spool; exit when idle, when the data dir is gone, or when the socket is no
        longer ours."""
        while not self.stop_event.wait(min(WATCH_INTERVAL, self.config.worker.idle_timeout_minutes * 6)):
            idle_limit = self.config.worker.idle_timeout_minutes * 60  # config.json may change it
            if not self.paths.home.is_dir():
                break  # the user deleted the data dir: nothing is written there again, not even a log line
            lost = transport.socket_lost(self.paths, self.socket_inode)
            if lost:
                self.log.info(lost)
                break
            if spool.pending(self.paths.spool):  # e.g. events kept while the shared database was away
                try:
                    self.ingest_spool()
                except Exception as exc:  # the next hook tries again (and reports what fails)
                    self.failed("spool_ingest_failed", f"{type(exc).__name__}: {exc}")
            try:
                busy = self.recall.pending_work() > 0 and self.model_state == "ready"
            except StorageUnavailable:
                busy = False  # nothing to embed while the database is away
            in_use = self.sessions.any_open()
            if not in_use and self.install.removed():
                self.log.info("plugin_uninstalled")
                break
            idle = time.monotonic() - max(self.last_request, self.sessions.last_open)
            if not busy and idle > idle_limit:
                self.log.info("idle_exit", idle_seconds=round(idle))
                break
        self.stop()

    def stop_after_answer(self) -> None:
        """Stop once the answer to the request under way is sent (core/later.py; at once outside a request): a worker
        that exited first left its caller without one (`stop_worker` then took a worker it had stopped for one that
        was not running, and a hook spooled an event the worker had stored)."""
        later.after_answer(lambda: threading.Thread(target=self.stop, daemon=True).start())

    def stop(self) -> None:
        if self.stop_event.is_set() and self.server is None:
            return
        self.stop_event.set()
        self.work_event.set()
        server, self.server = self.server, None
        if server is not None:
            server.shutdown()

    # --- main -------------------------------------------------------------------------------------

    def serve(self) -> None:
        sys.setswitchinterval(GIL_SWITCH_SECONDS)
        self.ingest_spool()
        self.server, self.socket_inode = transport.listen(self, self.paths, self.token)
        server = self.server
        for done_with in (self.paths.worker_starting, self.paths.worker_failed,
                          self.paths.runtime / "notified-worker-failed"):
            try:
                done_with.unlink()
            except FileNotFoundError:
                pass
        self.log.info("worker_ready", pid=os.getpid(), version=__version__)
        threading.Thread(target=self.embed_loop, name="embed", daemon=True).start()
        threading.Thread(target=self.watch, name="watch", daemon=True).start()
        try:
            server.serve_forever(poll_interval=0.5)
        finally:
            server.server_close()
            with server.owed:
                pass  # the work an answer already sent still owed is done before the store closes (core/later.py)
            self.cleanup()

    def cleanup(self) -> None:
        transport.remove_socket(self.paths, self.socket_inode)
        try:
            self.recall.close()
        finally:
            if self.paths.home.is_dir():  # a data dir the user deleted is not made again for one log line
                self.log.info("worker_stopped", pid=os.getpid())
            # The pid file goes last: whoever waits for this worker to be gone (stop_worker) may then remove the
            # data dir.
            for path in (self.paths.worker_endpoint, self.paths.worker_pid):
                try:
                    path.unlink()
                except FileNotFoundError:
                    pass


def rss_mb() -> float | None:
    """This process's resident memory now (Linux), else its peak."""
    try:
        with open("/proc/self/status", encoding="ascii") as handle:
            for line in handle:
                if line.startswith("VmRSS:"):
                    return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        pass
    try:
        import resource

        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return round(peak / (1024 * 1024 if sys.platform == "darwin" else 1024), 1)
    except (ImportError, OSError):
        return None
