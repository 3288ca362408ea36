"""Memory at the moment of action: what Claude should know before it touches a file or runs a command (PreToolUse),
and the fix of an error seen before when a command fails with it again (PostToolUseFailure).

Both look memories up by what they are tied to (capture/ties.py: a file, a command, an error's signature), an exact
key in an index: no search, no model, so a tool call with nothing known about it costs one indexed read. Of what is
tied, only what is worth interrupting for is shown: a sentence that states a rule, a pitfall, a decision or a fix,
said about that file or command, weighed by how much it has to do with the task of this turn. At most
`inject.action_budget_chars`, and once per file or command per session.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from datetime import datetime

from ...shared.text import cap_readable
from .. import sentences
from ..capture import ties
from ..knowledge import current, statements
from ..knowledge.commands import is_looking
from ..records import SETTLED, Memory
from ..retrieval.turns import is_follow_up
from ..sentences import named_paths
from ..storage import Store
from ..terms import STOPWORDS, normalize_term, words
from . import inject
from .tiers import brief_said

TIED_READ = 60  # tied memories read per lookup, the newest first
FAILURES_READ = 5  # earlier failures of one signature whose fix is looked for, the newest first
MAX_SENTENCES = 2
MIN_WORTH = 1.2  # what a sentence must weigh to interrupt (see _worth)
RECENCY_WEIGHT = 0.25  # the newest of the file's memories over the oldest: a later statement replaced an earlier
SENTENCE_CHARS = 340
# A rule this short rarely says what to do instead, or what it is about ("Rule for db/seeds.rb: fixtures only."): it
# is shown with the sentences beside it (`_in_context`).
SHORT_SENTENCE = 100
SAID_KINDS = ("prompt", "exchange", "note")  # what states rules and pitfalls in words

# What makes a sentence worth interrupting for, and how much.
_RULE = re.compile(r"(?<![\w-])(?:rule|from now on|convention|policy|never|always|must(?:n't| not)?|do not|don't|"
                   r"not allowed|only ever|no \w+ in|is generated|generated file|do not edit|by hand)\b", re.IGNORECASE)
_PITFALL = re.compile(r"\b(?:careful|beware|gotcha|pitfall|catch|otherwise|breaks?|broke|silently|only|unless|except|"
                      r"instead|because|so that|on purpose|important|warning|caveat|has to|needs? to|requires?|"
                      r"stay(?:s)? below|keep|before|first|no longer|can't|cannot|won't|mind|watch out)\b",
                      re.IGNORECASE)
_CHANGED = re.compile(r"\b(?:now|from here on|since then|no more)\b", re.IGNORECASE)  # how the file came to be
CHANGED_WEIGHT = 0.3  # what the file does now: less than a pitfall, enough when it names the file
_FIX = re.compile(r"\b(?:fix(?:ed|es)?|root cause|the cause|caused by|was (?:wrong|missing)|works? (?:now|again)|"
                  r"passes (?:now|again)|resolved|the (?:problem|issue) (?:was|is)|now (?:gets|uses|has|runs)|"
                  r"(?:it's|it is|is|are) now|(?:raised|lowered|bumped|increased|switched|replaced|added|removed|"
                  r"granted|moved|changed|set) .{0,60}\b(?:to|with|from|in)\b)", re.IGNORECASE)
_VERB = {"Edit": "edit", "MultiEdit": "edit", "Write": "write", "NotebookEdit": "edit", "Read": "read", "Bash": "run"}


@dataclass
class Shown:
    """What one action hook adds: the block, the memories it shows (with why), and the keys now shown."""

    text: str
    items: list[tuple[int, str]] = field(default_factory=list)
    keys: list[str] = field(default_factory=list)


def shown_key(session_id: str, key: str) -> str:
    """Ledger key: this session was shown what is known about `key` (a file, a command)."""
    return f"action-shown:{session_id}:{key}"


def before_tool(store: Store, project: str, root: str, session_id: str, tool_name: str, tool_input: object,
                now: float) -> Shown | None:
    """PreToolUse: what is known about the file or the command this tool call is about, or None."""
    keys = action_keys(tool_name, tool_input, root)
    keys = [key for key in keys if not store.has_event(shown_key(session_id, key))]
    if not keys:
        return None
    task = store.turn_prompt(session_id, None)
    chosen = _worth_showing(store, project, session_id, keys, task.text if task else "")
    if not chosen:
        return None
    target = keys[0].split(":", 1)[1]
    note = _changed_since(store, project, root, keys[0]) if keys[0].startswith("file:") else ""
    title = f"Before you {_VERB.get(tool_name, 'use')} {target}{note}, from earlier sessions:"
    return _render(store, chosen, title, keys)


def action_keys(tool_name: str, tool_input: object, root: str) -> list[str]:
    """The ties a tool call is about: its file; for a command, what it does (its program and the words up to its
    first flag, redacted as capture redacts them: the key is written to the session's ledger)."""
    inputs = tool_input if isinstance(tool_input, dict) else {}
    if tool_name == "Bash":
        command = inputs.get("command")
        if not isinstance(command, str) or is_looking(command):
            return []
        key = ties.command_key(command)  # by what it does (redacted with its payload): not a script's other uses
        return [key] if key else []
    path = next((inputs[k] for k in ("file_path", "notebook_path", "path") if isinstance(inputs.get(k), str)), None)
    key = ties.file_key(path, root) if path else None
    return [key] if key else []


def after_failure(store: Store, project: str, session_id: str, error: str, now: float) -> Shown | None:
    """PostToolUseFailure: the fix that followed this same error before (by its signature), or None."""
    error_words = _content(" ".join(ties.error_lines(error)[:2]))
    for key in ties.signature_keys(error):  # the most telling error line first (redacted, as when stored)
        if store.has_event(shown_key(session_id, key)):
            continue  # shown in this session already
        earlier = [memory_id for memory_id, _, at in store.ties.tied_to(project, [key], FAILURES_READ * 4) if at < now - 1]
        others = [failure for failure in store.get(earlier) if failure.session_id != session_id]  # it knows its own
        for failure in others[:FAILURES_READ]:
            fix = _fix_after(store, failure, error_words)
            if fix:
                stamp = failure.created_at.astimezone().strftime("%Y-%m-%d")
                return _render(store, fix, f"This error was met before ({stamp}, session {failure.session_id[:8]}); "
                                           "what fixed it then:", [key])
    return None


def _worth_showing(store: Store, project: str, session_id: str, keys: list[str], task: str
                   ) -> list[tuple[Memory, str, float]]:
    """The sentences of the memories tied to `keys` worth interrupting for, best first (at most MAX_SENTENCES)."""
    rows = store.ties.tied_to(project, keys, TIED_READ)
    ids = list(dict.fromkeys(r[0] for r in rows))
    # What this session's prompts were just shown is not said again; the SessionStart brief's lines are: a rule is
    # worth its line at the moment of action, however many turns after the session began.
    shown_before = (store.injected_ids(session_id) - store.injected_ids(session_id, "SessionStart")) & set(ids)
    said = " ".join(brief_said(store, shown_before).split()) if shown_before else ""
    names = {name for key in keys for name in _names(key)}
    task_words = _content(task)
    scored: list[tuple[float, Memory, str]] = []
    tied = [m for m in store.get(ids) if m.session_id != session_id and m.kind in SAID_KINDS + ("error",)]
    taken_back = _taken_back(store, project, [m.id for m in tied])
    stamps = [m.created_at.timestamp() for m in tied]
    oldest, span = (min(stamps), (max(stamps) - min(stamps)) or 1.0) if stamps else (0.0, 1.0)
    for memory in tied:
        newer = RECENCY_WEIGHT * (memory.created_at.timestamp() - oldest) / span  # what was said last holds
        for sentence in sentences.split(memory.text):
            plain = " ".join(sentence.split()).rstrip(".")
            if plain in taken_back or statements.rule_modality(sentence) != "stated":
                continue  # a rule taken back since, its taking back, a question, a proposal: nothing to heed
            worth = _worth(sentence, memory, names, task_words) + newer
            if worth >= MIN_WORTH and plain not in said:
                scored.append((worth, memory, sentence))
    scored.sort(key=lambda s: (-s[0], -s[1].created_at.timestamp()))
    chosen: list[tuple[Memory, str, float]] = []
    for worth, memory, sentence in scored:
        if any(sentence in other for _, other, _ in chosen):
            continue
        chosen.append((memory, _in_context(memory.text, sentence) if len(sentence) < SHORT_SENTENCE else sentence,
                       worth))
        if len(chosen) == MAX_SENTENCES:
            break
    return chosen


def _in_context(text: str, sentence: str) -> str:
    """A rule with what it needs to be understood: the sentences beside it in its paragraph, the next first (what to
    do instead of what it forbids), then the one before (what "Rule noted:" or "that" refers to), while the passage
    stays one line (SENTENCE_CHARS)."""
    for paragraph in text.split("\n\n"):
        said = sentences.split(paragraph)
        if sentence not in said:
            continue
        at = said.index(sentence)
        first, last = at, at
        for step in (1, -1):
            beside = at + step
            if 0 <= beside < len(said) and \
                    len(" ".join(said[min(first, beside):max(last, beside) + 1])) <= SENTENCE_CHARS:
                first, last = min(first, beside), max(last, beside)
        return " ".join(said[first:last + 1])
    return sentence


def _taken_back(store: Store, project: str, memory_ids: list[int]) -> set[str]:
    """The rules these memories set that a later statement took back (core/knowledge/current.py), as sentences."""
    rules = [k for k in store.knowledge.of_memories(memory_ids) if k.kind == "decision" and k.modality in SETTLED]
    return {" ".join(answer.item.text.split()).rstrip(".")
            for answer in current.resolve(store.knowledge, project, rules) if not answer.standing}


def _worth(sentence: str, memory: Memory, names: set[str], task_words: set[str]) -> float:
    """How much a sentence is worth interrupting for: a rule, a pitfall or a fix (one of them is needed), said about
    the file or command itself, in the user's words, about what this turn's task touches."""
    rule = _RULE.search(sentence) and not statements.REPORTED.search(sentence)  # "never confirmed": a report
    marker = 1.3 if rule else 0.6 if _FIX.search(sentence) else 0.5 if _PITFALL.search(sentence) \
        else CHANGED_WEIGHT if _CHANGED.search(sentence) else 0.0
    if not marker or len(sentence) < 20:
        return 0.0
    lowered = sentence.lower()
    if any(name in lowered for name in names):
        about = 0.8
    elif named_paths(sentence):
        return 0.0  # about another file
    else:
        about = 0.2  # said in a turn that touched the file
    said_by_user = 0.2 if memory.kind == "prompt" else 0.0
    overlap = min(0.6, 0.15 * len(task_words & _content(sentence)))
    return marker + about + said_by_user + overlap


def _names(key: str) -> set[str]:
    """How a text names a tie: a file by its path or its file name, a command by its program line."""
    kind, _, value = key.partition(":")
    if kind == "file":
        base = os.path.basename(value)
        return {value.lower(), base.lower()} | ({os.path.splitext(base)[0].lower()} if len(base) > 12 else set())
    return {value.lower()} if kind == "cmd" else set()


def _content(text: str) -> set[str]:
    return {normalize_term(w) for w in words(text) if w not in STOPWORDS and len(w) > 2}


FIX_TURNS = 3  # the failure's turn and the follow-ups that may have settled it ("yes, do that" → the fix)


def _fix_after(store: Store, failure: Memory, error_words: set[str]) -> list[tuple[Memory, str, float]]:
    """What followed a failure in its session and settled it: the answers' sentences that tell the fix (a later
    answer weighs more: the first one often only explains the error), and the same command passing after it."""
    after = [m for m in store.timeline(failure.id, 0, 30) if m.created_at >= failure.created_at and m.id != failure.id]
    failed_command = failure.text.split("`", 2)[1] if failure.text.count("`") >= 2 else ""
    same_command = ties.command_key(failed_command)
    found: list[tuple[float, Memory, str]] = []
    turn = 0
    asked = False
    passed: Memory | None = None
    ran: Memory | None = None
    for memory in after:
        if memory.kind == "prompt":
            turn += 1
            if turn >= FIX_TURNS or not (is_follow_up(memory.text) or asked):
                break  # another subject: the fix was in the turns before
        elif memory.kind == "exchange":
            asked = memory.text.rstrip().endswith("?")  # "Which one do you want?": the next prompt answers it
            for passage, opening in _passages(memory.text):
                # The passage is about this error when its first sentence is (the cause, then what changed): the
                # next one's words would lift the sentence before an explanation of the error to the top.
                shared = len(error_words & _content(opening))
                said = 1.0 if _FIX.search(passage) else 0.5 if _PITFALL.search(passage) or "`" in passage \
                    or shared >= 3 else 0.0
                worth = said + 0.15 * shared + 0.1 * turn
                if said and worth >= 0.6 and len(passage) >= 25:
                    found.append((worth, memory, passage))
        elif memory.kind == "tool" and memory.text.startswith("Bash `") and memory.text.count("`") >= 2:
            command = memory.text.split("`", 2)[1]
            if same_command and same_command in _steps(command):
                passed = passed or memory
            elif passed is None and not is_looking(command) and ties.command_key(command):
                ran = memory  # the last thing done before it passed: the fix, most often
    found.sort(key=lambda s: -s[0])
    chosen = [(memory, passage, worth) for worth, memory, passage in found[:1]]
    for done, line in ((ran, "the fix ran `{}`"), (passed, "then `{}` passed")):
        if done is not None and chosen:
            command = done.text.split("`", 2)[1]
            if command not in chosen[0][1]:
                chosen.append((done, line.format(command), 0.5))
    return chosen


def _steps(command: str) -> set[str | None]:
    """The `cmd:` keys of each step of a command line (`fix && rerun`: the rerun is one of them)."""
    return {ties.command_key(step) for step in re.split(r"&&|\|\||;", command) if step.strip()}


def _passages(text: str) -> list[tuple[str, str]]:
    """A text's sentences, each with the one after it when both fit a line (a fix is often said in two: the cause,
    then what changed), and the sentence it opens with."""
    said = sentences.split(text)
    return [(f"{one} {two}" if len(one) + len(two) < SENTENCE_CHARS else one, one)
            for one, two in zip(said, said[1:] + [""])]


def _changed_since(store: Store, project: str, root: str, key: str) -> str:
    """" (file changed since DATE)" when the file is not as recall last saw it after a tool call changed it."""
    touched = store.ties.file_touched(project, key)
    if touched is None or not root:
        return ""
    at, size, mtime = touched
    state = ties.file_state(os.path.join(root, key.split(":", 1)[1]))
    if state is None:
        return " (file since moved or removed)"
    if (size, mtime) != state:
        return f" (file changed since {datetime.fromtimestamp(at).astimezone():%Y-%m-%d})"
    return ""


def _render(store: Store, chosen: list[tuple[Memory, str, float]], title: str, keys: list[str]) -> Shown | None:
    """The block: its title, then one short line per sentence ("- sentence (#id, day)"), within the budget. The
    lines are shorter than a prompt's (no kind, no age): what is said is what counts at this moment."""
    room = store.config.inject.action_budget_chars - len(inject.fence(title)) - 1
    lines, shown = [], []
    for memory, sentence, worth in chosen:
        by = f", team, by {memory.owner}" if memory.visibility == "team" and memory.owner != store.owner else ""
        suffix = f" (#{memory.id}, {memory.created_at.astimezone():%Y-%m-%d}{by})"
        line = f"- {cap_readable(' '.join(sentence.split()), SENTENCE_CHARS)}{suffix}"
        if len(line) + 1 > room:
            if room < 120:
                break
            line = f"- {cap_readable(' '.join(sentence.split()), room - len(suffix) - 4)}{suffix}"
        lines.append(line)
        room -= len(line) + 1
        shown.append((memory.id, f"tied to {keys[0].split(':', 1)[1]}: worth {worth:.2f}"))
    if not lines:
        return None
    return Shown(inject.fence(title + "\n" + "\n".join(lines)), list(dict(shown).items()), keys)
