"""Turns and episodes: what a matched memory belongs to, and what of it is worth showing.

A memory is found alone (a prompt, an answer, a tool call, an error), but what settled something
is usually spread over a turn (the question and its answer) and its follow-up ("fix it" → the fix):

    episode = [the turn before, when this turn's prompt is only a short follow-up]
              + the turn of the matched memory
              + [the next turn, when its prompt is only a short follow-up]

`excerpt` then picks, from the episode's prompts and answers, the sentences that carry what the
question asks (query overlap, identifiers, values, reasons), answers before prompts, so the root
cause or the value is injected and the question is at most a short label.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field

from ...shared.text import cap, one_line
from .. import sentences
from ..embedding.embed import dot
from ..records import Memory
from ..storage import Store

FOLLOW_UP_WORDS = 30  # a follow-up is short …
# … and answers or points back to the turn before: "yes, 32 with 2 steps", "fix it", "do the map", "vcpkg then".
_AFFIRMATION = re.compile(r"^\s*(?:yes|yeah|yep|yup|ok|okay|sure|agreed|right|fine|great|go|do|perfect|correct|"
                          r"exactly|sounds good|please)\b", re.IGNORECASE)
_POINTS_BACK = re.compile(r"\b(?:it|that|this|them|those|then|instead)\b", re.IGNORECASE)
FOLLOW_UP_COSINE = 0.4  # or it is about what the previous answer said
SESSION_SPAN = 12 * 3600.0  # how far around a memory its session's turns are read
# An episode spans at most the turn before, the memory's turn and the turn after: two prompts and
# answers on each side (and the memory itself) hold them all.
TURN_ROWS_BEFORE, TURN_ROWS_AFTER = 4, 5
LABEL_CHARS = 110
ANCHOR_WEIGHT = 1.3  # the answer that matched the query is likelier than its neighbours to hold what it asks
QUESTION_WEIGHT = 0.5


@dataclass
class Turn:
    prompt: Memory | None = None
    answer: Memory | None = None

    @property
    def question(self) -> str:
        if self.prompt is not None:
            return self.prompt.text
        return str(self.answer.meta.get("prompt", "")) if self.answer is not None else ""

    def ids(self) -> list[int]:
        return [m.id for m in (self.prompt, self.answer) if m is not None]


@dataclass
class Episode:
    anchor: Memory  # the memory that matched the query
    turns: list[Turn] = field(default_factory=list)
    main: int = 0  # index of the anchor's turn in `turns`
    extras: list[Memory] = field(default_factory=list)  # the anchor itself when it is a tool call or an error
    # excerpt() without `drop`, by its arguments: a taken episode's is wanted twice (newer values, then the line)
    _excerpts: dict = field(default_factory=dict, repr=False, compare=False)

    def ids(self) -> set[int]:
        found = {self.anchor.id}
        for turn in self.turns:
            found.update(turn.ids())
        return found

    @property
    def started_at(self) -> float:
        """When the episode began (its earliest memory)."""
        stamps = [m.created_at.timestamp() for t in self.turns for m in (t.prompt, t.answer) if m is not None]
        return min(stamps + [self.anchor.created_at.timestamp()])

    @property
    def created_at(self) -> float:
        """When the episode settled (its latest memory)."""
        stamps = [m.created_at.timestamp() for t in self.turns for m in (t.prompt, t.answer) if m is not None]
        return max(stamps + [self.anchor.created_at.timestamp()])

    def label(self) -> str:
        """The question the episode answers, short."""
        main = self.turns[self.main] if self.turns else Turn()
        question = one_line(main.question, LABEL_CHARS)
        if self.main > 0 and is_follow_up(main.question):
            earlier = one_line(self.turns[self.main - 1].question, LABEL_CHARS - min(40, len(question)))
            question = f"{earlier} … {cap(question, 40)}"
        return question

    def parts(self) -> list[Part]:
        """The sentences that could be shown, each with its weight: answers count more than prompts (the
        user's own statements of values and rules still make it when they match)."""
        found: list[Part] = []
        for memory in self.extras:
            found.append(Part(one_line(memory.text, 300), 0.9, -1, ""))
        for index, turn in enumerate(self.turns):
            for said, role, weight in ((turn.prompt, "Q", 0.7), (turn.answer, "A", 1.0)):
                if said is None:
                    continue
                if said.id == self.anchor.id and role == "A":
                    weight *= ANCHOR_WEIGHT
                for sentence in sentences.split(said.text):
                    # the user's own questions hold no answer (their statements may: "the host is X")
                    asked = role == "Q" and sentence.rstrip().endswith("?")
                    found.append(Part(sentence, weight * (QUESTION_WEIGHT if asked else 1.0), index, role))
        return found

    def excerpt(self, terms: AbstractSet[str], limit: int, wants: AbstractSet[str] = frozenset(),
                drop: Callable[[str], bool] | None = None) -> str:
        """What of the episode answers a query with these terms, within `limit` characters: the chosen
        sentences in order, the user's as "Q:", the answers as "A:", with the question as a short label
        when none of its own sentences made it. `drop(sentence)`: leave such sentences out (an outdated value)."""
        if drop is None:
            key = (frozenset(terms), limit, frozenset(wants))
            if key not in self._excerpts:
                self._excerpts[key] = self._excerpt(terms, limit, wants, None)
            return self._excerpts[key]
        return self._excerpt(terms, limit, wants, drop)

    def _excerpt(self, terms: AbstractSet[str], limit: int, wants: AbstractSet[str], drop) -> str:
        parts = [p for p in self.parts() if drop is None or not drop(p.text)]
        label = self.label()
        chosen = sentences.excerpt([(p.text, p.weight) for p in parts], terms,
                                   max(80, limit - min(len(label), LABEL_CHARS) - 8), wants)
        pieces: list[str] = []
        if self.turns and not any(parts[i].role == "Q" and parts[i].turn == self.main for i in chosen) and label:
            pieces.append(f"Q: {label}")
        group: tuple | None = None
        for i in chosen:
            part = parts[i]
            text = one_line(part.text, limit)
            if (part.turn, part.role) == group:
                pieces[-1] += " " + text
            else:
                pieces.append(f"{part.role}: {text}" if part.role else text)
                group = (part.turn, part.role)
        return " → ".join(pieces)


@dataclass
class Part:
    """One sentence of an episode: its text, weight, which turn it comes from and whose words they are."""

    text: str
    weight: float
    turn: int  # index in Episode.turns; -1 for the matched tool call or error itself
    role: str  # "Q" (the user's prompt), "A" (the answer) or "" (a tool call or an error)


def is_follow_up(prompt: str, related: float | None = None) -> bool:
    """A prompt that continues the turn before it rather than opening a subject: short, and an answer to
    it, or pointing back at it in its first words, or close in meaning (`related`: cosine to the
    previous answer)."""
    words = prompt.split()
    if not words or len(words) > FOLLOW_UP_WORDS:
        return False
    if _AFFIRMATION.match(prompt) or _POINTS_BACK.search(" ".join(words[:4])):
        return True
    return related is not None and related >= FOLLOW_UP_COSINE


def _related(store: Store, prompt: Memory | None, answer: Memory | None) -> float | None:
    if prompt is None or answer is None:
        return None
    vectors = store.vectors_of([prompt.id, answer.id])
    a, b = vectors.get(prompt.id), vectors.get(answer.id)
    return None if a is None or b is None else dot(a, b)


def read_ahead(store: Store, memories: list[Memory]) -> None:
    """Read the conversations of these memories at once (their episodes are about to be built)."""
    store.conversations([m for m in memories if m.session_id], TURN_ROWS_BEFORE, TURN_ROWS_AFTER, SESSION_SPAN)


def session_turns(store: Store, memory: Memory) -> list[Turn]:
    """The turns of a memory's session around it, in order: each prompt with the answer that
    followed it (an answer whose prompt was merged into an earlier identical one stands alone)."""
    turns: list[Turn] = []
    for item in store.conversation(memory, TURN_ROWS_BEFORE, TURN_ROWS_AFTER, SESSION_SPAN):
        if item.kind == "prompt" or not turns or turns[-1].answer is not None:
            turns.append(Turn())
        if item.kind == "prompt":
            turns[-1].prompt = item
        else:
            turns[-1].answer = item
    return turns


def episode(store: Store, memory: Memory) -> Episode:
    """The episode a matched memory belongs to (see the module docstring)."""
    if not memory.session_id:
        return Episode(memory, [], 0, [memory])
    turns = session_turns(store, memory)
    at = memory.created_at.timestamp()
    index = None
    for i, turn in enumerate(turns):
        if memory.id in turn.ids():
            index = i
            break
    if index is None:  # a tool call or an error: the turn during which it happened
        starts = [i for i, t in enumerate(turns) if t.prompt is not None and t.prompt.created_at.timestamp() <= at]
        index = starts[-1] if starts else None
    if index is None:
        return Episode(memory, [], 0, [memory])
    extras = [] if memory.kind in ("prompt", "exchange") else [memory]
    first, last = index, index
    if index > 0 and _continues(store, turns[index], turns[index - 1]):
        first = index - 1
    if index + 1 < len(turns) and _continues(store, turns[index + 1], turns[index]):
        last = index + 1
    return Episode(memory, turns[first:last + 1], index - first, extras)


def _continues(store: Store, turn: Turn, before: Turn) -> bool:
    """Is `turn` a follow-up of the turn before it? (Its meaning is compared only for a short prompt: the
    vectors are read only when they can decide.)"""
    words = turn.question.split()
    if not words or len(words) > FOLLOW_UP_WORDS:
        return False
    return is_follow_up(turn.question, _related(store, turn.prompt, before.answer))
