"""The hook's slow path, taken when the worker did not answer. Standard library only.

The payload is checked first (garbage is logged and dropped: it starts no worker), then the
event is spooled (parsed, trimmed and redacted: nothing unredacted touches disk) and a worker
is requested (or, on a first install, the bootstrap that builds its Python). SessionStart and
UserPromptSubmit wait briefly for a starting worker, since their context is worth ~0.3 s once
per idle period. Nothing here runs when a worker answers.
"""

from __future__ import annotations

import json
import time

from ..shared import protocol, spool
from ..shared.logs import JsonLog
from ..shared.paths import DataPaths, log_file
from ..shared.payload import BadPayload, parse_payload
from ..shared.wire import CLAUDE_CODE
from . import notices, runtime, spawn
from .timing import ANSWER_DEADLINE, ANSWER_ONLY, DEFAULT_ANSWER_DEADLINE, START_WAIT


def recover(home: str, event: str, event_id: str, received_at: float, raw: bytes, header: bytes | None,
            busy: bool, client: str = CLAUDE_CODE) -> tuple[bytes, str]:
    """Deliver an event the worker did not take; returns (what to print, the route it took)."""
    if event in ANSWER_ONLY:  # nothing to keep; the next event that stores something starts the worker
        return b"", "none"
    log = JsonLog(log_file(home), "hook")
    try:
        payload = parse_payload(raw)
    except BadPayload as exc:
        log.error("hook_failed", hook=event, error=f"bad payload: {exc}")
        return b"", "rejected"
    paths = DataPaths(home)
    waits = header is not None and START_WAIT.get(event, 0.0) > 0
    if not waits:  # durable before anything slower (an async hook may be killed 1.5 s into a session's end)
        spool_event(home, event, event_id, received_at, payload, client=client)
    started, coming = ("busy", False) if busy else spawn.start_worker(paths, log)
    log.info("worker_unavailable", hook=event, action=started)
    if waits and coming and header is not None:
        answer = _answer_from_starting_worker(paths, event, header, raw, log)
        if answer is not None:
            return answer, "workerafterstart"
    if waits:
        spool_event(home, event, event_id, received_at, payload, client=client)
    runtime.remember_interpreter(paths)
    if event in ("SessionStart", "UserPromptSubmit"):  # after an update, the old worker answered the SessionStart
        notice = notices.first_run_notice(paths, started)
        if notice:
            return json.dumps(notice).encode("utf-8"), "spool"
    return b"", "spool"


def _answer_from_starting_worker(paths: DataPaths, event: str, header: bytes, raw: bytes, log) -> bytes | None:
    """Wait (START_WAIT) for the worker just requested and let it answer; None if it does not come up.
    If the process we waited for dies at start, its Python is noted as failing and one more worker
    is requested (another Python may be configured by now, e.g. after a fix)."""
    deadline = time.monotonic() + START_WAIT.get(event, 0.0)
    retried = False
    while True:
        status = spawn.wait_for_worker(paths, deadline - time.monotonic())
        if status == "died" and not retried:
            spawn.worker_died(paths, log)
            retried = True
            if spawn.start_worker(paths, log)[1]:
                continue
        if status != "up":
            return None
        break
    try:
        answer, body = protocol.exchange(str(paths.home), header, raw,
                                         ANSWER_DEADLINE.get(event, DEFAULT_ANSWER_DEADLINE))
    except protocol.WorkerUnavailable:
        return None
    return body if answer.startswith(protocol.OK_PREFIX) else None


def spool_event(home: str, event: str, event_id: str, received_at: float, payload: dict, reason: str = "",
                client: str = CLAUDE_CODE) -> None:
    """Store the (parsed) event in the spool, redacted, with the agent it came from."""
    from ..shared.redact import clean_payload

    spool.write(DataPaths(home).spool, {"event_id": event_id, "received_at": received_at, "client": client,
                                        "payload": clean_payload(payload)})
    if reason:
        JsonLog(log_file(home), "hook").warning("spooled", hook=event, reason=reason)
