"""Which facts, procedures and decisions answer a prompt, and how they are shown.

A question about the project (intent "project" or "recall") is matched against the project's observations
(core/knowledge/): their words first (the full-text index: text, kind of value, what it was for), then the meaning of
the best of them (their vectors, made by the worker). An observation matches when it is close in meaning, or when it
is the kind the question asks for (a value: a fact; how to run something: a procedure; why: a decision) and nearly as
close. What is shown is not the match but what is current about its thing (core/knowledge/current.py): a question
that matches the old port's statement best is answered with the new port, "(was 8123 until 2026-11-20)"; a rule
taken back since, a question or a proposal is never shown as standing.
"""

from __future__ import annotations

import re
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING

from ..embedding.embed import similarities
from ..knowledge import current
from ..records import SETTLED, Knowledge
from ..terms import STOPWORDS, normalize_term, words

if TYPE_CHECKING:
    from ..retrieval.intent import Intent
    from ..storage import Store

CANDIDATES = 40  # items read by their words, then ranked by meaning
KINDS = ("fact", "procedure", "decision")
MAX_TERMS = 10  # words of a prompt the lookup matches on
MIN_SIMILARITY = 0.5  # close enough in meaning to be about what the prompt asks …
MIN_FITTING_SIMILARITY = 0.42  # … or this close and of the kind the question asks for
MIN_SHARED_WORDS = 1  # and at least this many of the prompt's content words in its text, kind or purpose
# … or of the kind asked for, saying this many of the prompt's content words itself, and this close: the words a
# question shares with what it asks for are evidence the meaning of a short text misses ("how would I execute the
# staging device suites?" and "Run the device tests with `./gradlew connectedCheck -Pflavor=staging`": 0.37)
WORDED_SHARED, MIN_WORDED_SIMILARITY = 2, 0.3
MAX_SHOWN = 2
SET_IN, WAS = " (set in ", " (was "  # what `shown` adds to an item's text
MAX_REPLACED_SHOWN = 1  # earlier values named after the current one
RUNNER_UP_MARGIN = 0.15  # a second item is shown only this close to the first
RESOLVED = 6  # the best matches whose things are looked up (what is current about them): a few reads each
# Besides meaning, an item ranks by the prompt's words it holds (in what it says and its kind of value; in what it was
# for), by how recent it is among the candidates (the newer of two close items is likelier the current one), and by
# being stated (a procedure said in words, "use X for Y", over a command that merely ran).
WORDS_WEIGHT, PURPOSE_WORDS_WEIGHT, RECENCY_WEIGHT, STATED_WEIGHT = 0.2, 0.1, 0.06, 0.05
FITS = {"value": "fact", "command": "procedure", "reason": "decision", "rule": "decision", "cause": "decision"}
SEARCHING_INTENTS = ("project", "recall")
# Beyond intent.asks(): a question about the current state wants a fact; one about how to do something, a procedure.
ASKS_CURRENT = re.compile(r"\b(?:now|nowadays|currently|current|these days|at the moment|still|today|latest|"
                          r"default|by default)\b", re.IGNORECASE)
ASKS_HOW = re.compile(r"\b(?:how (?:do|should|can|would|are|is|does) (?:i|we|you|one|it|they|\w+s)\b|command|"
                      r"what (?:do|should) (?:i|we) (?:run|type|use)|steps? (?:to|for))", re.IGNORECASE)


@dataclass
class Found:
    item: Knowledge
    score: float  # meaning, words, recency, stated (see the weights above)
    why: str
    replaced: list[Knowledge] = field(default_factory=list)
    where: str = ""  # the file a statement's value is set in (the write it tells of)


def relevant(store: Store, project: str, prompt: str, vector: bytes | None, intent: Intent,
             exclude_sources: AbstractSet[int] = frozenset()) -> list[Found]:
    """The items that answer `prompt` (at most MAX_SHOWN, the best first), each with the values it replaced."""
    if intent.kind not in SEARCHING_INTENTS or vector is None:
        return []
    terms = content_terms(prompt)
    if not terms:
        return []
    candidates = [(item, vec) for item, vec in store.knowledge.candidates(project, terms, KINDS, CANDIDATES)
                  if vec is not None and len(vec) == len(vector) and item.modality in SETTLED]
    if not candidates:
        return []
    scores = similarities([vec for _, vec in candidates], [vector])[:, 0]
    wanted = {FITS[w] for w in intent.wants if w in FITS}
    if ASKS_CURRENT.search(prompt):
        wanted.add("fact")
    if ASKS_HOW.search(prompt):
        wanted.add("procedure")
    prompt_stems = {normalize_term(t) for t in terms}
    stamps = [item.created_at for item, _ in candidates]
    oldest, span = min(stamps), max(stamps) - min(stamps) or 1.0
    found: list[Found] = []
    for (item, _), similarity in zip(candidates, scores):
        similarity = float(similarity)
        fits = item.kind in wanted
        own = {normalize_term(w) for w in words(f"{item.text} {item.thing}")}
        purpose = own | {normalize_term(w) for w in words(item.context)}
        if len(prompt_stems & purpose) < MIN_SHARED_WORDS:
            continue
        shared = len(prompt_stems & own)
        if similarity >= MIN_SIMILARITY or (fits and similarity >= MIN_FITTING_SIMILARITY) or \
                (fits and shared >= WORDED_SHARED and similarity >= MIN_WORDED_SIMILARITY):
            score = (similarity + WORDS_WEIGHT * shared / len(prompt_stems)
                     + PURPOSE_WORDS_WEIGHT * len(prompt_stems & purpose) / len(prompt_stems)
                     + RECENCY_WEIGHT * (item.created_at - oldest) / span
                     + STATED_WEIGHT * (item.kind != "procedure" or not item.text.startswith("`")))
            why = f"{item.kind} #{item.id}: meaning {similarity:.2f}, score {score:.2f}" + (
                f", the {item.kind} the question asks for" if fits else "")
            found.append(Found(item, score, why))
    return _as_current(store, project, sorted(found, key=lambda f: -f.score)[:RESOLVED], exclude_sources, wanted)


def _as_current(store: Store, project: str, found: list[Found], exclude_sources: AbstractSet[int],
                wanted: AbstractSet[str]) -> list[Found]:
    """The matches as what is current about their things (the best first, one per thing), each with what it
    replaced; a rule taken back since goes, and so does what this session was already shown."""
    scores = {f.item.id: f for f in found}
    shown: list[Found] = []
    # The matches come best first, and a thing ranks by the first of its matches: once MAX_SHOWN are kept, or a
    # match falls below the best by more than RUNNER_UP_MARGIN, no thing read after could be shown.
    for answer in current.answers_of(store.knowledge, project, [f.item for f in found]):
        best = scores[answer.found[0].id]
        if shown and best.score < shown[0].score - RUNNER_UP_MARGIN:
            break
        if not answer.standing or answer.item.source_id in exclude_sources:
            continue
        why = best.why if answer.item.id == best.item.id else \
            f"{best.why}; #{answer.item.id} is what is current about it"
        shown = _distinct([*shown, Found(answer.item, best.score, why, answer.history[:MAX_REPLACED_SHOWN],
                                         answer.written.file if answer.written else "")], wanted)
        if len(shown) >= MAX_SHOWN:
            break
    return shown


def content_terms(text: str) -> list[str]:
    """The words a lookup of knowledge matches on: content words, the longest (rarest, mostly) MAX_TERMS of them, so
    that a long prompt's lookup stays one bounded full-text query however big the project."""
    found = [w for w in dict.fromkeys(words(text)) if w not in STOPWORDS and len(w) > 2]
    return sorted(found, key=len, reverse=True)[:MAX_TERMS]


def _distinct(found: list[Found], wanted: AbstractSet[str]) -> list[Found]:
    """One item per source memory and per text: two lines saying the same thing are one. Except where an answer held
    the kind the question asks for beside a better match of another kind (the command it ran, below what it said of
    the result): that one is its second line."""
    seen_sources: set[int] = set()
    answered_sources: set[int] = set()  # those with an item of the kind asked for among the kept
    seen_texts: set[str] = set()
    kept = []
    for f in found:
        text = " ".join(f.item.text.lower().split())
        fits = f.item.kind in wanted
        if text in seen_texts or (f.item.source_id in seen_sources and (not fits or f.item.source_id in answered_sources)):
            continue
        if fits:
            answered_sources.add(f.item.source_id)
        seen_sources.add(f.item.source_id)
        seen_texts.add(text)
        kept.append(f)
    return kept


def day(ts: float) -> str:
    return datetime.fromtimestamp(ts).astimezone().strftime("%Y-%m-%d")


def shown(found: Found, owner: str = "") -> str:
    """One line: the item, when it was set, and the value it replaced ("was X until DATE"); a teammate's says whose
    (`owner`: who reads it)."""
    item = found.item
    label = {"fact": "Current", "procedure": "How it is done here", "decision": "Decided"}[item.kind]
    by = f" (team, by {item.owner})" if item.team and item.owner and item.owner != owner else ""
    line = f"{label} since {day(item.created_at)}{by}: {item.text}"
    if found.where and found.where not in item.text:
        line += f"{SET_IN}{found.where})"
    for earlier in found.replaced:
        line += f"{WAS}{earlier.value} until {day(item.created_at)})"
    return line


def says_more_than_its_item(line: str) -> bool:
    """Does a `shown` line add to its item's text: the file that sets it, or the values it replaced?"""
    return SET_IN in line or WAS in line
