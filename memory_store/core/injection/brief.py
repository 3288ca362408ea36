"""The SessionStart brief: what earlier sessions of the project settled (tiers.brief), offered once per start.

Claude Code 2.1.334 fixed plugin SessionStart hooks that were skipped, and a handler may now hear one start twice,
at once (two hook processes) or one after the other. The second is the same start: it gets nothing, not the brief
again (with no worker running, both waited for the one they started and both were shown it).
"""

from __future__ import annotations

import threading

from ..capture.hook_events import SessionStart
from ..storage import Store
from . import tiers

HEARD_TWICE_SECONDS = 30.0  # a start of the same session, from the same source, this soon after is the same start
_answered_lock = threading.Lock()
_answered: dict[tuple[str, str, str], float] = {}  # (data dir, session, source) -> when this process answered it


def heard_before(store: Store, event: SessionStart, now: float) -> bool:
    """Has this process answered this start already? Notes it if not (one check-and-note: two hooks at once)."""
    key = (str(store.paths.home), event.session_id, event.source)
    with _answered_lock:
        for old in [k for k, at in _answered.items() if now - at > HEARD_TWICE_SECONDS]:
            del _answered[old]
        if key in _answered:
            return True
        _answered[key] = now
        return False


def session_brief(store: Store, event: SessionStart, project: str, now: float) -> str | None:
    """SessionStart: the brief of the hot tier (tiers.brief; '' when there is nothing to offer), or None for a start
    heard twice. A new session (startup, clear) gets what earlier sessions settled; after compaction the session's
    own recent work comes back too, since the summary replaced it; a resumed session only gets what it has not been
    shown yet."""
    if heard_before(store, event, now):
        return None
    if event.source == "compact":
        store.reset_injections(event.session_id)
        items = tiers.brief(store, project, now)
        title = "The latest work in this project (re-offered after compaction):"
    else:
        shown = store.injected_ids(event.session_id)
        items = [i for i in tiers.brief(store, project, now, exclude_session=event.session_id) if i.id not in shown]
        title = tiers.BRIEF_TITLE
    text, ids = tiers.render_brief(store, items, title, now)
    store.note_injection(event.session_id, project, "SessionStart", now, ids, None,
                         [(i, "recent work in this project (the SessionStart brief)") for i in ids])
    return text
