"""Sentences and how much they say: the measure behind the Stop summary, the injected excerpt of a
turn and the SessionStart brief.

A sentence says much when it carries what a later question needs: identifiers, paths, commands,
numbers with their units, settings and their values, and reasons ("because", "came from",
"instead of"). It says nothing when it is an acknowledgement ("Done.", "Sure!", "ok continue").
"""

from __future__ import annotations

import re
from collections.abc import Set as AbstractSet

from ..shared.text import cap_readable
from .records import Hit, Memory
from .terms import STOPWORDS, normalize_term, words

# A sentence ends at ! or ?, at . before a word, a quote, a bracket, a digit or a path (people who type in lower case
# end sentences too), and at ; before a capital: not at an ellipsis, which stands inside one more often than at its
# end ("lock it with SELECT ... FOR UPDATE"), nor after an initial or an abbreviation ("i.e. 8 messages per 10 s").
_SPLIT = re.compile(r"(?<=[!?])\s+|(?<=\.)(?<!\.\.\.)(?<!\b\w\.)(?<!\be\.g\.)(?<!\bvs\.)(?<!\betc\.)(?<!\bcf\.)"
                    r"(?<!\bapprox\.)\s+(?=[\"'(`\[A-Za-z0-9/])|(?<=;)\s+(?=[\"'(`\[A-Z0-9/])|\n+")
_SEMICOLON = re.compile(r"(?<=;)\s+")
_IDENTIFIER = re.compile(
    r"`[^`]+`|\b\w+(?:[./:]\w+)+\b|\b[a-z]+_[a-z0-9_]+\b|\b[a-z]+[A-Z]\w*\b|\b[A-Z][a-z]+[A-Z]\w*\b|\b\w+\(\)|"
    r"(?:^|\s)--?[a-z][\w-]*")
_VALUE = re.compile(r"\d[\d.,:]*")
_ASSIGNMENT = re.compile(r"\b[\w.-]+\s*(?:=|:)\s*\S")
_REASON = re.compile(
    r"\b(because|since|so that|due to|caused|causes|came from|comes from|root cause|the reason|instead of|"
    r"rather than|which means|otherwise|never|always|must|rule|decided|chose|so |"
    r"(?:the|this|that) (?:crash|bug|problem|issue|hang|error|failure|leak|cause) (?:was|is|came|comes))\b",
    re.IGNORECASE)
# What a sentence provides, for the kinds of answer a question wants (intent.ASKS).
PROVIDES = {
    "location": re.compile(r"(?:^|[\s`(])(?:[\w.-]+/)+[\w.-]+|\b\w+\.(?:py|kt|kts|rb|ex|exs|cpp|hpp|h|c|ts|tsx|js|"
                           r"go|rs|java|swift|yml|yaml|toml|json|xml|sql|sh|md)\b"),
    "command": re.compile(r"`[^`]{3,}`|\b(?:uv|npm|npx|pnpm|yarn|pip|python3?|pytest|make|cmake|cargo|go|mix|bundle|"
                          r"bin/\w+|rails|rake|gradle|\./gradlew|\./\w+|docker|kubectl|sbatch|git|poetry|ctest|"
                          r"dotnet|mvn) [\w./:=-]+", re.IGNORECASE),
    "value": re.compile(r"\d+(?:\.\d+)?\s?(?:%|[a-zA-Z]{1,12}\b)|[$€£]\s?\d|\b[\w.-]+\s*[:=]\s*\d"),
    "cause": re.compile(r"\b(because|caused|causes|came from|comes from|root cause|due to|so that|which means|"
                        r"(?:the|this|that) (?:crash|bug|problem|issue|hang|error|failure|leak) (?:was|is|came))\b",
                        re.IGNORECASE),
    "reason": re.compile(r"\b(because|instead of|rather than|so that|since|would need|otherwise|which means|"
                         r"trade-?off|cheaper|faster|safer|simpler)\b", re.IGNORECASE),
    "rule": re.compile(r"\b(never|always|must|rule|from now on|policy|convention|don't|do not|only ever|not allowed)\b",
                       re.IGNORECASE),
}


def provides(text: str, wants: AbstractSet[str]) -> set[str]:
    """Which of the wanted kinds of answer the text holds."""
    return {kind for kind in wants if PROVIDES[kind].search(text)}
_ACK = re.compile(
    r"^\s*(?:done|fixed|sure|ok(?:ay)?|got it|noted|great|thanks?|thank you|yes|yep|yeah|no|nope|right|agreed|"
    r"perfect|sounds good|will do|on it|all set|here you go|hi|hello|hey)\b[\s.!,:;)-]*$", re.IGNORECASE)
_FILLER_WORDS = frozenset("""
done fixed sure ok okay got it noted great thanks thank you yes yep yeah right agreed perfect sounds good will do on
all set here go hi hello hey morning cheers cool nice work continue go ahead please do that this the a an and lgtm
happy help glad anytime welcome np no problem
""".split())


def split(text: str, at_semicolons: bool = False) -> list[str]:
    """Sentences (and lines) of a text, stripped, empty ones dropped; `at_semicolons`: each clause a semicolon ends
    on its own too (a statement's own words, where a passage keeps the clause that explains it)."""
    found = [s.strip() for s in _SPLIT.split(text) if s and s.strip()]
    if at_semicolons:
        found = [clause.strip() for s in found for clause in _SEMICOLON.split(s) if clause.strip()]
    return found


def is_trivial(text: str) -> bool:
    """An acknowledgement, greeting or filler with nothing to remember ("Done.", "ok continue")."""
    stripped = text.strip()
    if not stripped or _ACK.match(stripped):
        return True
    content = [w for w in words(stripped) if w not in _FILLER_WORDS and w not in STOPWORDS]
    return len(content) == 0 or (len(content) == 1 and not _VALUE.search(stripped) and len(stripped) <= 20)


DENSE = 6.0  # a sentence this dense (see `density`) says as much as one can


def is_chatter(text: str) -> bool:
    """Social talk with at most a couple of content words and nothing specific ("Hello! What are we
    working on?", "You're welcome.")."""
    if _VALUE.search(text) or _IDENTIFIER.search(text):
        return False
    content = [w for w in words(text) if w not in _FILLER_WORDS and w not in STOPWORDS]
    return len(content) <= 2


def is_small_talk(memory: Memory | Hit) -> bool:
    """A greeting or acknowledgement, or an answer in kind to one: nothing in it a later session needs
    (the hot tier leaves it out, compaction skips it, the forgetting curve may prune it)."""
    if memory.kind != "exchange":
        return is_trivial(memory.text)
    return is_trivial(str(memory.meta.get("prompt", ""))) and is_chatter(memory.text)


def substance(memory: Memory) -> float:
    """How much a memory settled: its densest sentence (up to 1) plus its importance."""
    said = max((density(s) for s in split(memory.text)), default=0.0)
    return min(1.0, said / DENSE) + memory.importance


def density(sentence: str) -> float:
    """How much a sentence says (0 for an acknowledgement): identifiers and paths, values, settings,
    reasons, a little for length."""
    if is_trivial(sentence):
        return 0.0
    score = min(3, len(_IDENTIFIER.findall(sentence))) * 1.0
    score += min(2, len(_VALUE.findall(sentence))) * 0.5
    score += 1.0 if _ASSIGNMENT.search(sentence) else 0.0
    score += 1.5 if _REASON.search(sentence) else 0.0
    return score + min(len(sentence), 200) / 200


def overlap(terms: AbstractSet[str], sentence: str) -> float:
    """Share of the (normalised) query terms that occur in the sentence."""
    if not terms:
        return 0.0
    present = {normalize_term(w) for w in words(sentence)}
    return len(terms & present) / len(terms)


def summarize(text: str, limit: int) -> str:
    """A text cut to `limit` characters by keeping its densest sentences, in their original order
    (acknowledgements and filler go first)."""
    text = text.strip()
    if len(text) <= limit:
        return text
    parts = split(text)
    order = sorted(range(len(parts)), key=lambda i: (-density(parts[i]), i))
    keep: list[int] = []
    used = 0
    for i in order:
        if density(parts[i]) == 0 and keep:
            break
        if used + len(parts[i]) + 1 <= limit:
            keep.append(i)
            used += len(parts[i]) + 1
    if not keep:
        return cap_readable(text, limit)
    return " ".join(parts[i] for i in sorted(keep))


def excerpt(parts: list[tuple[str, float]], terms: AbstractSet[str], limit: int,
            wants: AbstractSet[str] = frozenset()) -> list[int]:
    """Which of `parts` (sentence, weight) to show for a query, within `limit` characters: ranked by
    query overlap, density, holding the kind of answer the query wants, and the part's weight;
    returned as indexes in their original order."""
    scored = []
    for i, (sentence, weight) in enumerate(parts):
        said = density(sentence)
        if said == 0:
            continue
        value = 2.0 * overlap(terms, sentence) + min(1.0, said / DENSE) + 0.7 * len(provides(sentence, wants))
        scored.append((weight * value, i))
    scored.sort(key=lambda pair: (-pair[0], pair[1]))
    keep: list[int] = []
    used = 0
    for _, i in scored:
        size = len(parts[i][0]) + 1
        if used + size > limit and keep:
            continue
        keep.append(i)
        used += size
        if used >= limit:
            break
    return sorted(keep)


# --- the files a text names (retrieval/code_paths.py checks them against the code; capture/ties.py ties to them) ---

MAX_PATHS = 6  # per item: a memory that names more is a listing, judged by its first few

# A path with at least one folder and a file name with an extension: src/app/db.py, ./bin/run.sh,
# /home/me/shop/lib/x.ts. Not one inside a URL or a longer word (the look-behind), not "and/or".
PATH = re.compile(r"(?<![\w.~/:@-])(/?(?:\.{1,2}/)?(?:\.?[\w@+-][\w.@+-]*/)+[\w@+-][\w.@+-]*\.[A-Za-z][A-Za-z0-9]{0,9})"
                  r"(?![\w/-])")
DOMAIN = re.compile(r"^[\w-]+(\.[\w-]+)*\.[a-z]{2,}$")  # github.com/..., docs.python.org/...


def named_paths(text: str) -> list[str]:
    """The file paths `text` names, in order, at most MAX_PATHS (a URL's path or a domain is not one)."""
    found = []
    for match in PATH.finditer(text):
        path = match.group(1).rstrip(".")
        first = path.lstrip("./").split("/", 1)[0]
        if DOMAIN.match(first) or path in found:
            continue
        found.append(path)
        if len(found) == MAX_PATHS:
            break
    return found
