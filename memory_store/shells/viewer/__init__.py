"""`recall ui`: a local web viewer of the memory, served by the standard library.

    /                      projects, with counts and last activity
    /search                search or browse a project, filtered by kind and date
    /memory/ID             one memory in full, its timeline, and pin / unpin / forget buttons
    /memory/ID/forget      what forgetting it deletes, and the one button that does it
    /injections            what was injected, into which prompt, and the gate's reasons (live: refreshes)
    /session/ID            one session's memories in the order they happened
    /forget (POST)         the ticked search results: a confirmation page, then one button that forgets them
    /export?project=P      a project's memories as JSONL (what `recall export` writes; re-importable)

Bound to 127.0.0.1 only. Every request must carry the random token of this run (in the URL, as printed by
`recall ui`; forms post it back): without it, 403. Everything shown is HTML-escaped (memories hold whatever
was typed or printed), and the Content-Security-Policy forbids scripts altogether: the pages are plain
HTML and forms. A thin shell over `memory_store.api`, like the CLI and the MCP server.
"""

from .pages import Viewer
from .server import make_server

__all__ = ["Viewer", "make_server"]
