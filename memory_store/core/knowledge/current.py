"""What is current: computed when read, from the observations, by this one engine that every surface asks.

Nothing is ever marked replaced. For an item, its *thing* is every observation about the same thing (`same_thing`);
what is current about it is the newest observation that was set or stated (a question, a proposal, a negation never
is); the others with another value are its history, with their dates. A decision stands until a later observation
of the same rule revokes it. A wrong guess of sameness costs a wrong line at worst, never a lost value.

Sameness, by subject (core/knowledge/subjects.py):

- the same subject: always, but for a procedure (one program in one place) only with the same options that pick its
  target (`sail pest --group=search` is another job than `sail pest --parallel`: commands.selectors);
- a setting named in words and a file's setting: the same key path, or the name the last segments of the file's path
  (`maxRetryCount` / `EnableRetryOnFailure.maxRetryCount`), when exactly one file's setting fits (a bare `port` said
  in words is no file's when two files have one) or the statement names that file;
- a value said in words and a setting: every word of the setting's name is among the statement's
  (`dev server port` / `server.port`), two at least;
- two values said in words: the same kind of value, and most of their words in common.

A rule is its own thing (two rules about the same files are two rules); a later revocation ("we no longer …") with
most of its words in common takes it back.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Protocol

from ..records import SETTLED, Knowledge
from . import commands, subjects

MIN_SHARED = 2  # words two statements in words (or a statement and a setting's name) must share
SHARED_SHARE = 0.6  # … and this share of the smaller's words
RULE_SHARE = 0.5  # two rules: this share of the smaller's words, two at least
COMPOUND = 2  # a one-segment name of this many words ("lead_time_hours") says which setting it is on its own
RELATED = 200  # observations read per lookup
THING_STEPS = 3  # a thing grows from its item this many times (the rules join pairs; a thing is their chain)
RELATED_LOOKUPS = 6  # members of a thing whose own candidates are read, per step
_LEADING_NUMBER = re.compile(r"\d+(?:[.:]\d+)*")
WRITES = ("edit", "write")  # the sources that set a value in a file
SAME_CHANGE_SECONDS = 900.0  # a statement this soon after a write in its session tells of that change: the file says it


class Observations(Protocol):
    """What the engine reads: the narrow storage of knowledge (core/storage/knowledge.py)."""

    def about(self, project: str, subject_list: Sequence[str]) -> list[Knowledge]:
        """Every observation of these subjects, history included."""

    def named(self, project: str, leaves: Sequence[str]) -> list[Knowledge]:
        """Every observation of a setting whose name ends in one of these segments."""

    def worded(self, project: str, terms: Sequence[str], kinds: Sequence[str], limit: int) -> list[Knowledge]:
        """Observations whose words hold any of these terms, the best matches first."""


@dataclass
class Answer:
    """One thing as every surface shows it: what is current about it, and what it was before."""

    item: Knowledge  # the current observation (for a decision: the rule as it stands)
    history: list[Knowledge] = field(default_factory=list)  # earlier values, newest first
    found: list[Knowledge] = field(default_factory=list)  # the observations that led to it (a search's matches)
    standing: bool = True  # False: a decision revoked since, or a thing with nothing settled
    revoked_by: Knowledge | None = None  # what took a decision back
    written: Knowledge | None = None  # the write of a file that the current statement tells of (where it is set)


@dataclass
class Around:
    """What sameness knows of the observations read with a pair (`_around`)."""

    unique_names: set[str]  # the names said in words that fit exactly one file's setting
    told: set[frozenset[int]]  # a statement and the one write of its session whose change it tells of
    ambiguous: set[int]  # values said in words whose words fit the settings of two files or more


def same_thing(a: Knowledge, b: Knowledge, around: Around | None = None) -> bool:
    """Are `a` and `b` about the same thing (the module's docstring)? `around`: what the observations read with them
    say (None: every name that fits counts, and no write is known to be told of)."""
    if a.kind != b.kind:
        return False
    if a.kind == "procedure":  # one program and place; options that pick another target make another job
        return a.subject == b.subject and commands.selectors(a.value) == commands.selectors(b.value)
    ka, kb = _sort(a), _sort(b)
    if a.subject == b.subject:  # a name said (or an edit read) without its file: of one file, if both say
        return ka != subjects.NAME or not a.file or not b.file or a.file == b.file
    if a.kind != "fact" or subjects.ENV in (ka, kb):
        return False  # a variable is its command's alone
    if ka == kb == subjects.WORDS:
        return _kinds_agree(a, b) and _words_alike(subjects.bag(a.subject), subjects.bag(b.subject))
    if subjects.WORDS in (ka, kb):
        words_item, named_item = (a, b) if ka == subjects.WORDS else (b, a)
        if around is not None and frozenset((a.id, b.id)) in around.told:
            return True
        if around is not None and words_item.id in around.ambiguous and not words_item.file:
            return False  # "the service port is 8080": of postgres.yaml or of redis.yaml?
        return _name_in_words(named_item, subjects.bag(words_item.subject), words_item.file)
    if ka == kb == subjects.FILE:
        return False  # two files, or two settings of one file (the same setting is the same subject)
    if ka == kb == subjects.NAME:  # two said in words (or edits read without their file): of one file, if any
        return _names_alike(a.name, b.name) and (not a.file or not b.file or a.file == b.file)
    said, filed = (a, b) if ka == subjects.NAME else (b, a)
    if not _names_alike(said.name, filed.name):
        return False
    if said.file:
        return said.file == filed.file
    return around is None or said.name in around.unique_names


def _sort(item: Knowledge) -> str:
    return item.subject.split(":", 1)[0] + ":"


def _names_alike(short: str, long: str) -> bool:
    if not short or not long:
        return False
    if short == long:
        return True
    short, long = sorted((short, long), key=len)
    if not long.endswith("." + short):
        return False
    return "." in short or len(short.split("_")) >= COMPOUND


def _name_in_words(item: Knowledge, said: set[str], said_in: str) -> bool:
    """A setting, and a value said in words: every word of the setting's name among the statement's, two at least, or
    one when the statement names the setting's file ("rate limiting in lib/rate_limit.ex: 20 …" / `@limit 20`)."""
    tail = ".".join(item.name.split(".")[-2:]) if item.name else ""
    named = set(subjects.name_words(tail)) if tail else set()
    if not named:
        return False
    if said_in and item.file == said_in and named <= said:
        return True
    return (len(named) >= MIN_SHARED and named <= said) or (len(said) >= MIN_SHARED and said <= named)


def _words_alike(a: set[str], b: set[str]) -> bool:
    shared = len(a & b)
    if not a or not b:
        return False
    if len(a) == len(b) == 1:
        return a == b
    return shared >= MIN_SHARED and shared >= SHARED_SHARE * min(len(a), len(b))


def revokes(later: Knowledge, rule: Knowledge) -> bool:
    """Does `later` take `rule` back ("we no longer squash merges" / "always squash merges on main")?"""
    if later.kind != "decision" or later.modality != "revoked" or later.created_at < rule.created_at:
        return False
    a, b = subjects.bag(later.subject), subjects.bag(rule.subject)
    shared = len(a & b)
    return shared >= MIN_SHARED and shared >= RULE_SHARE * min(len(a), len(b))


def _kinds_agree(a: Knowledge, b: Knowledge) -> bool:
    """Two values said in words measure the same kind of thing: their kinds of value meet, or one says none."""
    ka, kb = set(_kinds(a)), set(_kinds(b))
    return not ka or not kb or bool(ka & kb)


def _kinds(item: Knowledge) -> list[str]:
    from .extract import thing_of

    return thing_of(item.value).split()


# --- reading ------------------------------------------------------------------------------------------------------

def related(source: Observations, project: str, item: Knowledge) -> list[Knowledge]:
    """Every observation of the project about `item`'s thing, `item` included, oldest first: those the sameness rules
    join to it, and to them in turn (a value said in words, the file's setting it names, the setting's name said in
    another answer), a few steps at most."""
    pool: dict[int, Knowledge] = {item.id: item}
    family = {item.id: item}
    looked_up: set[int] = set()
    # A pair found apart stays apart as the pool grows (what more observations tell `around` only takes names and
    # writes away from a statement: a name fits more files, a value more settings), so each pair is judged once.
    apart: set[tuple[int, int]] = set()
    for _ in range(THING_STEPS):
        for member in [k for k in family.values() if k.id not in looked_up][:RELATED_LOOKUPS]:
            looked_up.add(member.id)
            pool.update((k.id, k) for k in _candidates(source, project, member))
        around = _around(pool.values())
        grown = {}
        for k in pool.values():
            if k.id in family or k.kind != item.kind:
                continue
            for member in family.values():
                if (member.id, k.id) not in apart:
                    if same_thing(member, k, around):
                        grown[k.id] = k
                        break
                    apart.add((member.id, k.id))
        if not grown:
            break
        family.update(grown)
    rules = [k for k in pool.values() if k.id not in family and any(revokes(k, member) for member in family.values())]
    return sorted([*family.values(), *rules], key=lambda k: (k.created_at, k.id))


def _candidates(source: Observations, project: str, item: Knowledge) -> list[Knowledge]:
    """The observations that may be about `item`'s thing: of its subject, of its setting's name, of its words."""
    found = source.about(project, [item.subject])
    if item.kind == "fact" and item.name:
        leaf = item.name.rsplit(".", 1)[-1]
        found += source.named(project, [leaf])
        found += source.worded(project, subjects.name_words(leaf), ["fact"], RELATED)
    if item.kind == "decision" or item.subject.startswith(subjects.WORDS):
        terms = sorted(subjects.bag(item.subject), key=len, reverse=True)[:8]
        found += source.worded(project, terms, [item.kind], RELATED)
    return found


def _around(items: Iterable[Knowledge]) -> Around:
    """What these observations say about sameness: the names said in words that fit exactly one file's setting, and
    each value said in words minutes after a write in its session that set exactly one setting to it (by the words of
    its name: "move the web reboot window to 02:15 UTC" and `unattended_upgrades_reboot_time: "02:15"`)."""
    items = list(items)
    files = [k for k in items if k.subject.startswith(subjects.FILE)]
    unique: set[str] = set()
    for said in {k.name for k in items if k.subject.startswith(subjects.NAME)}:
        fitting = {k.subject for k in files if _names_alike(said, k.name)}
        if len(fitting) <= 1:
            unique.add(said)
    written = [k for k in items if k.kind == "fact" and k.source in WRITES and k.modality == "set"]
    told: set[frozenset[int]] = set()
    ambiguous: set[int] = set()
    for statement in items:
        if not statement.subject.startswith(subjects.WORDS):
            continue
        words = subjects.bag(statement.subject)
        settings = {k.subject: k for k in written if _tells_of(statement, k, words)}
        if len(settings) == 1:
            told.add(frozenset((statement.id, next(iter(settings.values())).id)))
        if len({k.file for k in files if _name_in_words(k, words, "")}) > 1:
            ambiguous.add(statement.id)
    return Around(unique, told, ambiguous)


def _tells_of(said: Knowledge, write: Knowledge, words: set[str]) -> bool:
    """A value said in words is that write's: in its session, minutes apart, the same value, a word of its name."""
    return (said.session_id == write.session_id and abs(said.created_at - write.created_at) <= SAME_CHANGE_SECONDS
            and same_value(write.value, said.value) and bool(words & set(subjects.name_words(write.name))))


def answer(family: list[Knowledge]) -> Answer | None:
    """What is current about a thing (its observations, oldest first), and its history."""
    if not family:
        return None
    settled = [k for k in family if k.modality in SETTLED]
    if family[0].kind == "decision":
        rules = [k for k in settled if k.modality != "revoked"]
        if not rules:
            return Answer(family[-1], standing=False)
        rule = rules[-1]
        revoking = [k for k in family if revokes(k, rule)]
        return Answer(rule, standing=not revoking, revoked_by=revoking[-1] if revoking else None)
    if not settled:
        return Answer(family[-1], standing=False)
    newest = max(settled, key=lambda k: (k.created_at, k.modality == "set", k.id))
    item, file = _told(newest, settled)
    shown = [item.value] + ([file.value] if file else [])
    history: list[Knowledge] = []
    for earlier in sorted(settled, key=lambda k: (-k.created_at, -k.id)):
        if earlier.created_at < newest.created_at and not any(alike(v, earlier.value) for v in shown):
            shown.append(earlier.value)
            history.append(earlier)
    return Answer(item, history, written=file)


def _told(newest: Knowledge, settled: list[Knowledge]) -> tuple[Knowledge, Knowledge | None]:
    """(what is current, the write it tells of): a write and a statement of its session minutes apart, with its value,
    are one change, shown as said ("90 minutes", "02:15 UTC") with where it is set. A statement after a write that
    gives another value ("the retention is now a month": the file has 30) yields to the file."""
    def near(k: Knowledge) -> bool:
        return k.session_id == newest.session_id and 0 <= newest.created_at - k.created_at <= SAME_CHANGE_SECONDS

    if newest.source in WRITES:
        said = [k for k in settled if k.source not in WRITES and near(k) and same_value(newest.value, k.value)]
        return (max(said, key=lambda k: (k.created_at, k.id)), newest) if said else (newest, None)
    written = [k for k in settled if k.source in WRITES and near(k)]
    if not written:
        return newest, None
    file = max(written, key=lambda k: (k.created_at, k.id))
    return (newest, file) if same_value(file.value, newest.value) else (file, None)


def _value(value: str) -> str:
    """A value as compared: quotes, spaces and case aside (`"45"`, `45`)."""
    return "".join(value.strip("\"'` ").lower().split())


def same_value(written: str, said: str) -> bool:
    """Whether a statement's value is what a write put in a file: equal, or the same number said with its unit
    (`90` in `preview_ttl_minutes` and "90 minutes")."""
    file, words = _value(written), _value(said)
    if file == words:
        return True
    number = _LEADING_NUMBER.match(words)
    return number is not None and file == number.group(0) and words[len(file):].isalpha()  # "02:15" / "02:15 UTC"


def alike(a: str, b: str) -> bool:
    """One value, however said, whichever side said it: `90` and "90 minutes", `"45"` and 45."""
    return same_value(a, b) or same_value(b, a)


def resolve(source: Observations, project: str, items: Sequence[Knowledge]) -> list[Answer]:
    """Each of `items` (the best first) as the thing it is about, with what is current about it: one Answer per
    thing, in the order of its first item; `found` holds the items that led to it."""
    return list(answers_of(source, project, items))


def answers_of(source: Observations, project: str, items: Sequence[Knowledge]) -> Iterator[Answer]:
    """`resolve`, one thing at a time: each Answer as its first item is read (the items of it that come later are
    added to its `found` as they are met), so that a caller who has what it needs stops reading."""
    source = _Remembered(source)  # the things of a prompt's matches share most lookups: each is read once
    answers: list[Answer] = []
    by_item: dict[int, Answer] = {}
    for item in items:
        if item.id in by_item:
            by_item[item.id].found.append(item)
            continue
        family = related(source, project, item)
        found = answer(family)
        if found is None:
            continue
        same = next((a for a in answers if a.item.id == found.item.id), None)
        if same is not None:
            same.found.append(item)
            continue
        found.found.append(item)
        answers.append(found)
        for member in family:
            by_item[member.id] = found
        yield found


# The lookups read while one hook is answered (`reads_once`): the store's knowledge does not change meanwhile (the
# worker's background work writes it, between hooks, on its own connection).
_READS: ContextVar[dict[tuple, list[Knowledge]] | None] = ContextVar("knowledge_reads", default=None)
# What one hook may spend reading observations. In the latency bench's store (10,000 memories) a prompt about a
# common subject ("how did we fix the flaky … test") read for 15-25 ms, and twice that on a loaded machine (its
# things' words match thousands of observations); past this, a thing is what was read of it by then (at worst the
# matching observation alone), so the hook answers in time. Most prompts read for a few milliseconds.
HOOK_READ_SECONDS = 0.02


@dataclass
class _Budget:
    left: float  # seconds of reading


_BUDGET: ContextVar[_Budget | None] = ContextVar("knowledge_read_budget", default=None)


@contextmanager
def reads_once(seconds: float | None = HOOK_READ_SECONDS) -> Iterator[None]:
    """Within the block, each lookup of observations is read once, whoever asks (a prompt's shown memories, their
    newer values, and its matching facts resolve many of the same things), and reading stops once it has taken
    `seconds` in all."""
    tokens = (_READS.set({}), _BUDGET.set(None if seconds is None else _Budget(seconds)))
    try:
        yield
    finally:
        _READS.reset(tokens[0])
        _BUDGET.reset(tokens[1])


class _Remembered:
    """An `Observations` source that reads each lookup once: resolving a prompt's matches asked the store 88 times
    for 19 different lookups (a thing's members share words), and read 5,000 observations for 800."""

    def __init__(self, source: Observations) -> None:
        self.source = source
        shared = _READS.get()
        self.read: dict[tuple, list[Knowledge]] = shared if shared is not None else {}

    def _once(self, key: tuple, read: Callable[[], list[Knowledge]]) -> list[Knowledge]:
        key = (self.source, *key)  # the source itself, by identity: held, so no other one takes its id
        if key not in self.read:
            budget = _BUDGET.get()
            if budget is not None and budget.left <= 0:
                return []  # the hook's time for reading is spent: what was read is what there is
            started = time.monotonic()
            self.read[key] = read()
            if budget is not None:
                budget.left -= time.monotonic() - started
        return list(self.read[key])

    def about(self, project: str, subject_list: Sequence[str]) -> list[Knowledge]:
        return self._once(("about", project, tuple(subject_list)), lambda: self.source.about(project, subject_list))

    def named(self, project: str, leaves: Sequence[str]) -> list[Knowledge]:
        return self._once(("named", project, tuple(leaves)), lambda: self.source.named(project, leaves))

    def worded(self, project: str, terms: Sequence[str], kinds: Sequence[str], limit: int) -> list[Knowledge]:
        return self._once(("worded", project, tuple(terms), tuple(kinds), limit),
                          lambda: self.source.worded(project, terms, kinds, limit))


class Pool:
    """Observations already read, as an `Observations` source: resolving a whole listing (`recall facts`, the viewer)
    costs no more reads."""

    def __init__(self, items: Iterable[Knowledge]) -> None:
        self.items = list(items)
        self._by_subject: dict[str, list[Knowledge]] = {}
        self._by_leaf: dict[str, list[Knowledge]] = {}
        self._by_word: dict[str, list[Knowledge]] = {}
        for item in self.items:
            self._by_subject.setdefault(item.subject, []).append(item)
            if item.name:
                self._by_leaf.setdefault(item.name.rsplit(".", 1)[-1], []).append(item)
            said = subjects.bag(item.subject) if item.subject.startswith((subjects.WORDS, subjects.RULE)) else set()
            for word in said | set(subjects.name_words(item.name.rsplit(".", 1)[-1] if item.name else "")):
                self._by_word.setdefault(word, []).append(item)

    def about(self, project: str, subject_list: Sequence[str]) -> list[Knowledge]:
        return [k for subject in subject_list for k in self._by_subject.get(subject, []) if k.project == project]

    def named(self, project: str, leaves: Sequence[str]) -> list[Knowledge]:
        return [k for leaf in leaves for k in self._by_leaf.get(leaf, []) if k.project == project]

    def worded(self, project: str, terms: Sequence[str], kinds: Sequence[str], limit: int) -> list[Knowledge]:
        """Those holding the most of `terms` first, then the newest (the store ranks its full-text matches alike)."""
        shared: dict[int, int] = {}
        found: dict[int, Knowledge] = {}
        for term in terms:
            for k in self._by_word.get(term, []):
                if k.project == project and k.kind in kinds:
                    found[k.id] = k
                    shared[k.id] = shared.get(k.id, 0) + 1
        return sorted(found.values(), key=lambda k: (-shared[k.id], -k.created_at, -k.id))[:limit]
