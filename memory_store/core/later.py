"""Work a request owes that its answer does not wait for: the prompt hook's record of what it injected.

Inside `deferring()` (the worker opens one per request: worker/transport.py) `after_answer(work)` queues `work`,
and the worker does it right after sending the answer; every request waits for what earlier answers owed before it
starts, so nothing reads the store before it holds what an answer already sent has to write. Outside one (the CLI, the
spool, a test calling the router), `after_answer` does the work at once.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

_queue: ContextVar[list | None] = ContextVar("recall_after_answer", default=None)


@contextmanager
def deferring() -> Iterator[list[Callable[[], object]]]:
    """Queue the `after_answer` work of everything run inside the block (this thread or task only)."""
    queued: list[Callable[[], object]] = []
    token = _queue.set(queued)
    try:
        yield queued
    finally:
        _queue.reset(token)


def after_answer(work: Callable[[], object]) -> None:
    """Do `work` once the answer is sent, or now when nobody sends one (no `deferring` block)."""
    queued = _queue.get()
    if queued is None:
        work()
    else:
        queued.append(work)


def run(queued: list, failed: Callable[[Exception], None]) -> None:
    """Do the queued work in order; a failure is reported (`failed`) and the rest is still done."""
    for work in queued:
        try:
            work()
        except Exception as exc:  # noqa: BLE001 - the answer is sent: nothing is left to fail but this work
            failed(exc)
