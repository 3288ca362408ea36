"""What a stored memory teaches: its observations (facts, procedures, decisions), read without a model.

Runs in the worker's background work (core/jobs.py `learn_pending`), never before a hook is answered, and again for
every memory on `recall reindex` or an upgrade: what a memory teaches is read from what the memory holds. That is its
text, and what capture kept for this in its meta, read from the whole event when it was captured:

    settings     the settings a write put into a file, each under its whole key path (core/knowledge/settings.py)
    said         the sentences of an answer that state something and that its summary left out
    goal         what a command was for (its description)
    interrupted  the command was interrupted

A memory kept before these were (0.2 and older) is read from its text alone.

    a prompt, a note           what the user states (statements.py), their requests setting values
    an answer, a report        what it states (statements.py), for the question it answered
    an edit or a write         the settings it gave values (modality "set")
    a command that worked      a procedure, and the variables it set (commands.py)
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from ...shared.secrets import is_secret_file, is_secret_name
from .. import sentences
from ..records import KnowledgeDraft
from . import commands, settings, statements, subjects
from .settings import Setting

if TYPE_CHECKING:
    from ..records import Memory

# How memories are read. Change it with what a memory teaches (a rule here, in statements.py, settings.py, commands.py):
# every stored memory is then read again in the background (storage/knowledge.py read_with), old ones included.
READING = 1
MAX_TEXT_CHARS = 320  # what one item shows
MAX_SAID_CHARS = 3000  # of an answer's statement sentences kept beside its summary
MAX_NOTE_CHARS = 160
WORKED_AFTER = " (worked after: "  # a procedure's note: the failure it came after
FILE_WRITES = ("Edit ", "MultiEdit ", "Write ", "NotebookEdit ")  # tool memories that put text into a file
_EDIT = re.compile(r"`([^`]*)` → `([^`]*)`")  # an Edit memory's change (capture._render_tool)
_STATING = re.compile(r"\d|`|[=:]\s*\S|\b(?:never|always|must|rule|from now on|policy|convention|decided|because|"
                      r"instead of|rather than|no longer|use|run)\b", re.IGNORECASE)
_PATH_IN_TEXT = re.compile(r"(?:^|[\s`'\"(])((?:[\w.\-]+/)+[\w.\-]+\.[A-Za-z]{1,8})\b")

# Kinds of value, by their shape: the words a question uses for what the memory only gives as a value.
_VALUE_KINDS: tuple[tuple[re.Pattern, str], ...] = (
    (re.compile(r"\bv?\d+\.\d+(?:\.\d+)+(?:[-+]\w+)?\b|\^\d|~>?\s?\d|>=\s?\d|\bversion\b", re.I),
     "version release constraint"),
    (re.compile(r"(?<![\d.])\d{1,2}:\d{2}(?::\d{2})?\b|\bcron\b|\b(?:daily|nightly|hourly|weekly)\b|"
                r"(?:\*|\d+)\s(?:\*|\d+)\s\*\s\*", re.I), "time schedule when"),
    (re.compile(r"\b\d+(?:\.\d+)?\s?(?:ms|milliseconds?|s|sec|secs|seconds?|min|mins|minutes?|h|hrs?|hours?|days?|"
                r"weeks?)\b|\b(?:timeout|ttl|interval|delay|expir\w*|retention|duration)\b", re.I),
     "duration timeout how long"),
    (re.compile(r"\b\d+(?:\.\d+)?\s?(?:[kmgt]i?b|bytes?|mi|gi)\b|\b(?:memory|disk|size|heap)\b", re.I),
     "size memory limit how big"),
    (re.compile(r"\bports?\b|(?:localhost|127\.0\.0\.1|0\.0\.0\.0|\w\.\w+):\d{2,5}\b|\b\d{4,5}:\d{4,5}\b", re.I), "port"),
    (re.compile(r"\b[a-z]\d[a-z]{0,3}\.(?:nano|micro|small|medium|large|\d*xlarge|metal)\b|\b(?:instance|machine|vm|"
                r"node) (?:type|size|class)\b", re.I), "instance type machine size"),
    (re.compile(r"\b\d+(?:\.\d+)?\s?%", re.I), "percentage rate threshold"),
    (re.compile(r"\b\d+\s?(?:per|/)\s?(?:second|sec|s|minute|min|hour|day)\b|\brate\b|\bconcurren\w+|\bparallel\w*",
                re.I), "rate limit concurrency how many at once"),
    (re.compile(r"\b(?:attempts?|retries|retry|tries|max\w*|limit|cap|quota|threshold|min|minimum)\b", re.I),
     "limit maximum how many count"),
    (re.compile(r"https?://|\b[\w-]+\.(?:com|net|org|io|dev|app|games|cloud|internal|local)\b|\bhost(?:name)?\b",
                re.I), "host url domain endpoint"),
    (re.compile(r"(?:^|[\s`'\"])(?:[\w.-]+/)+[\w.-]+\.\w{1,5}\b"), "file path location"),
)


def thing_of(*texts: str) -> str:
    """The kinds of value these texts give, as words a question may use."""
    joined = " ".join(texts)[:2000]
    return " ".join(dict.fromkeys(kind for pattern, kind in _VALUE_KINDS if pattern.search(joined)))


# --- at capture: what the whole event holds, kept in the memory's meta ------------------------------------------------

def settings_written(path: str, new: str, old: str = "") -> list[list[str]]:
    """The settings a write gave `path` (the file after it, and before), as kept in a memory's meta: [key path,
    value, line, the value before ("" for a new key)]. A file that holds secrets has none (shared/secrets.py)."""
    if not path or is_secret_file(path):
        return []
    return [[setting.path, setting.value, setting.line, was] for setting, was in settings.changed(path, new, old)]


def statement_sentences(answer: str, summary: str) -> str:
    """The sentences of an answer that may state something (a value, a command, a rule) and that its summary does not
    hold: read with the summary when the memory's knowledge is (a cheap look at each sentence, no more)."""
    kept, size = [], 0
    for sentence in sentences.split(answer[:50_000]):
        if len(sentence) > statements.MAX_CLAUSE_CHARS or sentence in summary or not _STATING.search(sentence):
            continue
        size += len(sentence) + 1
        if size > MAX_SAID_CHARS:
            break
        kept.append(sentence)
    return "\n".join(kept)


# --- in the background: a stored memory's observations --------------------------------------------------------------

HIDDEN = ("[REDACTED", "[private]")  # what the privacy policy left of a secret or a private span (shared/redact.py)


def observations(memory: Memory, asked: str = "", failures: tuple[str, ...] = ()) -> list[KnowledgeDraft]:
    """What `memory` teaches. `asked`: the question of its turn (what an answer or a command was for); `failures`: the
    errors of the same program in its session just before it (a command that worked after them). Nothing that held a
    secret or a private span: not even redacted, it is no knowledge."""
    return [item for item in _observations(memory, asked, failures)
            if not any(mark in f"{item.subject} {item.value} {item.text}" for mark in HIDDEN)]


def _observations(memory: Memory, asked: str, failures: tuple[str, ...]) -> list[KnowledgeDraft]:
    meta = memory.meta
    if memory.kind in ("prompt", "note"):
        return _stated(memory.text, "note" if memory.kind == "note" else "user", "")
    if memory.kind in ("exchange", "response"):
        said = f"{memory.text}\n{meta.get('said', '')}" if isinstance(meta.get("said"), str) else memory.text
        context = str(meta.get("prompt") or asked)
        return _stated(said, "agent" if memory.agent else "answer", context)
    if memory.kind == "tool" and memory.text.startswith("Bash `"):
        return _ran(memory, asked, failures)
    if memory.kind == "tool" and memory.text.startswith(FILE_WRITES):
        return _written(memory)
    return []


def _stated(text: str, source: str, context: str) -> list[KnowledgeDraft]:
    found: list[KnowledgeDraft] = []
    for said in statements.statements(text, user=source in ("user", "note")):
        found += _drafts(said, source, context[:300])
    return _unique(found)


def _drafts(said: statements.Said, source: str, context: str) -> list[KnowledgeDraft]:
    text = said.text[:MAX_TEXT_CHARS]
    if said.kind == "procedure":
        key = commands.procedure_key(said.command)
        return [KnowledgeDraft(kind="procedure", subject=subjects.of_run(key), value=said.command, text=text,
                               modality=said.modality, source=source, thing="command how to run", context=context)] \
            if key else []
    if said.kind == "decision":
        return [KnowledgeDraft(kind="decision", subject=subjects.of_rule(said.about), value="", text=text,
                               modality=said.modality, source=source, thing="rule decision convention why",
                               context=context)]
    if said.name:
        name = subjects.normalize_name(said.name)
        subject, thing = subjects.of_name(said.name), " ".join(subjects.name_words(said.name))
    else:
        name, subject, thing = "", subjects.of_words(said.about), " ".join(said.about)
    paths = _PATH_IN_TEXT.findall(said.text)
    common = {"kind": "fact", "subject": subject, "name": name, "text": text, "source": source, "context": context,
              "file": paths[0] if len(set(paths)) == 1 else "",
              "thing": " ".join(filter(None, (thing, thing_of(thing, said.value))))}
    found = [KnowledgeDraft(value=said.value, modality=said.modality, **common)]
    if said.old and said.modality == "stated" and said.old != said.value:
        found.append(KnowledgeDraft(value=said.old.strip(" .,;"), modality="stated", earlier=1.0, **common))
    return found


def _ran(memory: Memory, asked: str, failures: tuple[str, ...]) -> list[KnowledgeDraft]:
    """A command's memory ("Bash `COMMAND` → OUTPUT"): its procedure when it worked, and the variables it set."""
    body = memory.text[len("Bash `"):]
    end = body.find("` → ")
    command, output = (body[:end], body[end + 4:]) if end >= 0 else (body.rstrip("`"), "")
    one_line = " ".join(command.split())
    if not commands.worked(output, bool(memory.meta.get("interrupted"))):
        return []
    key = commands.procedure_key(one_line)
    goal = str(memory.meta.get("goal") or "")
    found = [KnowledgeDraft(kind="fact", subject=subjects.of_env(name, key), name=subjects.normalize_name(name),
                            value=value, text=f"{name}={value} for `{key or one_line[:80]}`"[:MAX_TEXT_CHARS],
                            modality="set", source="command", thing=" ".join(subjects.name_words(name)),
                            context=goal or asked[:300])
             for name, value in commands.environment(one_line) if not is_secret_name(name) and "[REDACTED" not in value]
    if key and not commands.is_looking(one_line) and len(one_line) >= 4:
        note = f"{WORKED_AFTER}{' '.join(failures[0].split())[:MAX_NOTE_CHARS]})" if failures else ""
        text = f"`{one_line[:200]}`" + (f": {goal}" if goal else "") + note
        found.append(KnowledgeDraft(kind="procedure", subject=subjects.of_run(key), value=one_line[:200],
                                    text=text[:MAX_TEXT_CHARS], modality="set", source="command",
                                    thing="command how to run", context=(goal or asked)[:300]))
    return found


def _written(memory: Memory) -> list[KnowledgeDraft]:
    """An edit's or a write's memory: the settings it gave values, under the file's path."""
    path = str(memory.meta.get("path") or _written_path(memory.text))
    if not path or is_secret_file(path):
        return []
    kept = memory.meta.get("settings")
    if isinstance(kept, list):
        found = [(Setting(*item[:3]), str(item[3]) if len(item) > 3 else "") for item in kept
                 if isinstance(item, list) and len(item) >= 3]
    elif memory.text.startswith("Write "):
        found = [(s, "") for s in settings.settings_of(path, memory.text.split(": ", 1)[-1]).values()]
    else:
        found = [pair for old, new in _EDIT.findall(memory.text) for pair in settings.changed(path, new, old)]
    source = "write" if memory.text.startswith("Write ") else "edit"
    # An edit read without its file (an older memory, a file gone since): its keys lack the blocks they sit in, so each
    # is a setting named in that file, which the engine finds under its whole path (core/knowledge/current.py).
    partial = bool(memory.meta.get("settings_partial")) or not isinstance(kept, list) and source == "edit"
    drafts = []
    for setting, was in found:
        if is_secret_name(setting.name):
            continue
        subject = subjects.of_name(setting.path) if partial else subjects.of_file(path, setting.path)
        common = {"kind": "fact", "subject": subject, "modality": "set",
                  "name": subjects.normalize_name(setting.path), "source": source, "file": path,
                  "thing": " ".join(filter(None, (" ".join(subjects.name_words(setting.path)),
                                                  thing_of(setting.path, setting.value))))}
        drafts.append(KnowledgeDraft(value=setting.value, text=_setting_line(setting, path), **common))
        if was:  # what the edit replaced: the file said so until then
            line = setting.line.replace(setting.value, was, 1) if setting.value in setting.line else ""
            drafts.append(KnowledgeDraft(value=was, text=_setting_line(Setting(setting.path, was, line), path),
                                         earlier=1.0, **common))
    return drafts


def _setting_line(setting: Setting, path: str) -> str:
    """How a setting reads: the line as written, with where it is (`port: 5432 (database.port in config/app.yaml)`)."""
    line = setting.line if setting.value in setting.line else f"{setting.name} = {setting.value}"
    where = f"{setting.path} in {path}" if setting.path != setting.name or setting.name not in line else path
    return f"{line} ({where})"[:MAX_TEXT_CHARS]


def _written_path(text: str) -> str:
    head = text.split(": ", 1)[0]
    return head.split(" ", 1)[1].split(" (", 1)[0] if " " in head else ""


def _unique(items: list[KnowledgeDraft]) -> list[KnowledgeDraft]:
    seen: set[tuple[str, str, str, str]] = set()
    kept = []
    for item in items:
        key = (item.kind, item.subject, item.value, item.modality)
        if key not in seen:
            seen.add(key)
            kept.append(item)
    return kept
