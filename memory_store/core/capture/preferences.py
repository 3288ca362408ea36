"""Standing preferences stated in a prompt, kept for every project (the global scope).

Conservative on purpose: a prompt makes a global memory only when it says both that the rule lasts
("from now on", "always", "never", "by default", "I prefer", ...) and that it holds beyond this project
("in every project", "in all my repos", "everywhere", "globally", "across projects", ...). The sentences that
say it are kept, not the whole prompt. Anything else stays in its project; `recall remember --global` is the
explicit way.
"""

from __future__ import annotations

import re

from .. import sentences

_STANDING = re.compile(
    r"\b(from now on|going forward|henceforth|always|never|by default|as a rule|i (?:always )?prefer|"
    r"i (?:always )?use|don'?t ever|do not ever)\b", re.IGNORECASE)
_EVERYWHERE = re.compile(
    r"\b(in (?:every|each|all(?: of)?(?: my| our| the)?) (?:projects?|repos?|repositories|codebases?)|"
    r"for (?:every|each|all(?: my| our)?) (?:projects?|repos?|repositories|codebases?)|"
    r"across (?:all )?(?:my |our )?(?:projects|repos|repositories|codebases)|everywhere|globally|"
    r"whatever (?:the )?project|no matter (?:which|what) project)\b", re.IGNORECASE)
MAX_CHARS = 400


def standing_preference(prompt: str) -> str | None:
    """The sentences of `prompt` that state a rule for every project, or None."""
    chosen = [s for s in sentences.split(prompt) if _EVERYWHERE.search(s) and _STANDING.search(s)]
    if not chosen:
        return None
    text = " ".join(chosen).strip()
    return text[:MAX_CHARS] if not text.rstrip().endswith("?") else None
