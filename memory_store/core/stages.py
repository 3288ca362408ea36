"""Where a request's time goes: wall time per named stage (embed, lexical, vector, rank, ...).

The worker opens a `Timings` per hook request and logs it at debug level; `recall bench latency`
reports the same stages. Code deep in the call (search, gate, router) marks its stages with
`stage("name")` and needs no parameter for it: the current `Timings` travels in a context
variable, and with none open a stage costs one lookup.

    with timed() as timings:
        with stage("embed"):
            vector = embedder.embed_query(text)
    timings.ms  # {"embed": 5.7}
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar


class Timings:
    """Milliseconds per stage for one request (a stage entered twice adds up)."""

    def __init__(self) -> None:
        self.ms: dict[str, float] = {}
        self.started = time.perf_counter()

    def add(self, name: str, ms: float) -> None:
        self.ms[name] = self.ms.get(name, 0.0) + ms

    def total_ms(self) -> float:
        return (time.perf_counter() - self.started) * 1000

    def rounded(self) -> dict[str, float]:
        return {name: round(ms, 2) for name, ms in self.ms.items()}


_current: ContextVar[Timings | None] = ContextVar("recall_timings", default=None)


@contextmanager
def timed() -> Iterator[Timings]:
    """Collect the stages of everything run inside the block (this thread or task only)."""
    timings = Timings()
    token = _current.set(timings)
    try:
        yield timings
    finally:
        _current.reset(token)


def record(name: str, ms: float) -> None:
    """Add a stage timed elsewhere (on another thread) to this request's."""
    timings = _current.get()
    if timings is not None:
        timings.add(name, ms)


@contextmanager
def stage(name: str) -> Iterator[None]:
    timings = _current.get()
    if timings is None:
        yield
        return
    start = time.perf_counter()
    try:
        yield
    finally:
        timings.add(name, (time.perf_counter() - start) * 1000)
