"""What a memory is tied to, for the moment Claude acts (core/injection/actions.py): a file, a command, an error.

    file:<path>     a file of the project, as a path from its root: the file a tool call touched, a path a prompt
                    or an answer names (and, for an answer, every file its turn touched: storage/ties.py)
    cmd:<program>   a command by its program and subcommand (`pnpm test:e2e`, `./ci/build.sh android`)
    err:<digest>    an error by its signature: an error line of a failure with what changes from run to run taken
                    out (line numbers, paths, ids, times, addresses, numbers), so the same error matches again

A tie is looked up by its exact key (an index, no model), so the hooks that run on every tool call stay cheap. A
memory's ties are read from the stored memory (`of_memory`: its text, and what capture kept in its meta,
capture/material.py) in the worker's background work, and again on `recall reindex`.
"""

from __future__ import annotations

import hashlib
import os
import re

from ..knowledge.commands import SETUP, is_looking, program_of
from ..records import Memory, Tie
from ..sentences import named_paths

MAX_TIES = 24  # per memory
MAX_SIGNATURES = 3  # error lines of one failure that identify it
MAX_SCANNED_LINES = 400  # of an error output, from its start and its end

# A line that says what went wrong (not a stack frame, not a log line at info level).
_ERROR_LINE = re.compile(
    r"(?:\b[A-Z]\w*(?:Error|Exception|Failure|Fault)\b|\berror\b|\bERROR\b|\bfatal\b|\bFAILED\b|\bfailed\b|"
    r"\bpanic\b|\bcannot\b|\bcan't\b|\bdenied\b|\bnot found\b|\bno such\b|\brefused\b|\bunresolved\b|"
    r"\bundefined\b|\bE\d{3,5}\b|\bP\d{4}\b|\bSQLSTATE\b|\bexit code [1-9])", re.IGNORECASE)
_FRAME = re.compile(r"^\s*(?:at |File \"|#\d+ |\d+: |\.\.\. \d+ more|Traceback)", re.IGNORECASE)
_GENERIC = re.compile(r"^(?:error|failed|exit code n|command failed with exit code n|elifecycle command failed "
                      r"with exit code n|npm err!?|error: command failed|process completed with exit code n)\W*$|"
                      r"\b(?:tests?|test suites|test files|specs?|examples|assertions|scenarios)\b:? .*"
                      r"\bn (?:failed|passed)|"
                      r"\bn (?:failed|passed|failures?|errors?)\b.*\bn (?:passed|total|errors?|skipped)|"
                      r"nonzero exit code|exit code n\b|exit status n\b|returned (?:a )?non-?zero|^failed tests?\b|"
                      r"^(?:build|task|job|step|command) failed\W*$|default lognj profile")
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_LOG_PREFIX = re.compile(r"^\s*(?:\[(?:error|warn|warning|info|debug|fatal|err)\]\s*|"
                         r"(?-i:ERROR|WARN|WARNING|INFO|DEBUG)\b:?\s+)+", re.IGNORECASE)  # "Error: x" is an error
_VOLATILE = [
    (re.compile(r"\b\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2})?(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2})?"), " "),  # timestamps
    (re.compile(r"\b\d{1,2}/\d{1,2}/\d{2,4},? \d{1,2}:\d{2}(?::\d{2})?(?: ?[AP]M)?", re.IGNORECASE), " "),
    (re.compile(r"\b\d{1,2}:\d{2}:\d{2}(?:[.,]\d+)?\b"), " "),
    (re.compile(r"(?:[A-Za-z]:)?(?:/|\\)[\w.@+~-]+(?:[/\\][\w.@+~-]+)+"), "PATH"),  # absolute paths
    (re.compile(r"\b[\w.-]+\.\w{1,5}:\d+(?::\d+)?\b"), "FILE:N"),  # file.py:12:5
    (re.compile(r"\b0x[0-9a-fA-F]+\b"), "ADDR"),
    (re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b", re.IGNORECASE), "ID"),
    (re.compile(r"\b[0-9a-f]{7,40}\b"), "ID"),  # commit hashes, hex ids
    (re.compile(r"(?<![A-Za-z0-9])\d+(?:\.\d+)?"), "N"),  # not an error code's digits: P3014, TS2307, E0425 stay
]


def error_lines(output: str) -> list[str]:
    """The lines of an error output that say what went wrong, normalized (see the module docstring), most telling
    first: an exception's message before a generic "failed"."""
    lines = output.splitlines()
    if len(lines) > MAX_SCANNED_LINES:
        lines = lines[:MAX_SCANNED_LINES // 2] + lines[-MAX_SCANNED_LINES // 2:]
    found: list[str] = []
    for line in lines:
        line = _LOG_PREFIX.sub("", _ANSI.sub("", line)).strip()  # "[error] Total time: 3 s" is no error
        if not line or len(line) > 500 or _FRAME.match(line) or not _ERROR_LINE.search(line):
            continue
        normal = normalized(line)
        if len(normal) >= 8 and not _GENERIC.search(normal) and normal not in found:
            found.append(normal)
    return sorted(found, key=lambda n: (-_telling(n), found.index(n)))


def _telling(normal: str) -> int:
    """How much an error line says about which error it is: a message after an error word or an exception's class
    says most; a line of code (a stack excerpt) or a bare class name little."""
    score = 0
    if re.search(r"(?:error|exception|fatal|failure)\b\W{0,3}:\s*\S", normal):
        score += 2
    if re.search(r"[a-z]\w*(?:error|exception)\b", normal):
        score += 1
    if len(normal) < 20:
        score -= 1
    if re.search(r"\bthrow\b|▕|[{};]\s*$|=>|^\W*at\b", normal):
        score -= 3
    return score


def normalized(line: str) -> str:
    """An error line with what varies between runs replaced: the same error reads the same."""
    for pattern, replacement in _VOLATILE:
        line = pattern.sub(replacement, line)
    line = re.sub(r"^\W*(?:\[[^\]]*\]\s*)*", "", line)  # leading log prefixes: [Nest] N -, [ERROR], > ...
    line = re.sub(r"\b(?:LOG|INFO|WARN|WARNING|ERROR|DEBUG)\b\s*(?:\[[^\]]*\])?", " ", line)
    return " ".join(line.lower().split()).strip(" -:>|")


def signature_keys(output: str) -> list[str]:
    """The `err:` keys of an error output (one per telling error line, at most MAX_SIGNATURES)."""
    return [error_key(line) for line in error_lines(output)[:MAX_SIGNATURES]]


def error_key(normal_line: str) -> str:
    return "err:" + hashlib.sha1(normal_line.encode("utf-8")).hexdigest()[:20]


COMMAND_WORDS = 3  # words after the program that name what a command does (`sbt runMain a.b.Job`)


def command_key(command: str) -> str | None:
    """The `cmd:` key of a command line's first doing step: its program and the words up to its first flag
    (`cd x && pnpm test:e2e --watch` → "cmd:pnpm test:e2e", `sbt "runMain a.b.Job --env x"` → "cmd:sbt runMain a.b.Job")."""
    for step in re.split(r"&&|\|\||;", command):
        step = step.split("|")[0].strip()
        if not step or step.split()[0] in SETUP or is_looking(step):
            continue
        program = program_of(step)
        if not program:
            return None
        tokens = step.replace('"', " ").replace("'", " ").split()
        if not tokens:
            return None
        head = os.path.basename(program.split(" ")[0])
        start = next((i for i, token in enumerate(tokens) if os.path.basename(token) == head), 0)
        named = [os.path.basename(tokens[start])]
        for token in tokens[start + 1:]:
            if token.startswith("-") or re.search(r"[$<>()=`]", token) or len(named) > COMMAND_WORDS:
                break
            named.append(token)
        return "cmd:" + " ".join(named)
    return None


def file_key(path: str, root: str) -> str | None:
    """The `file:` key of a path (absolute, or relative to the project's root); None outside the project."""
    if not path:
        return None
    if os.path.isabs(path):
        if not root:
            return None
        try:
            path = os.path.relpath(path, root)
        except ValueError:  # another drive
            return None
    path = os.path.normpath(path).replace(os.sep, "/")
    if path.startswith("../") or path in (".", ".."):
        return None
    return f"file:{path.removeprefix('./')}"


def text_ties(text: str, root: str) -> list[str]:
    """The files and commands a prompt or an answer names (commands in backticks)."""
    keys = [file_key(path, root) for path in named_paths(text)]
    keys += [command_key(command) for command in re.findall(r"`([^`\n]{3,160})`", text)
             if re.match(r"^(?:[A-Z_]+=\S+\s+)*(?:\./|bin/)?[a-z][\w.+/-]*(?:\s|$)", command)]
    return _unique(keys)


def _unique(keys: list[str | None]) -> list[str]:
    return list(dict.fromkeys(key for key in keys if key))[:MAX_TIES]


def file_state(path: str) -> tuple[int, float] | None:
    """(size, mtime) of a file as it is now; None when it cannot be read."""
    try:
        stat = os.stat(path)
    except (OSError, ValueError):
        return None
    return stat.st_size, stat.st_mtime


_COMMAND_OF = re.compile(r"^(?:Bash|\w+ (?:failed|interrupted):) `([^`\n]{1,400})`")


def of_memory(memory: Memory) -> list[Tie]:
    """What a stored memory is tied to: a tool call's files (with their state after a write), the command it ran and,
    for a failure, its error's signatures; the files and commands a prompt, an answer or a note names."""
    meta = memory.meta
    root = str(meta.get("root") or "")
    found: dict[str, Tie] = {}
    if memory.kind in ("tool", "error"):
        states = meta.get("file_state")
        states = states if isinstance(states, dict) else {}
        for path in meta.get("files") or []:
            key = file_key(str(path), root) if isinstance(path, str) else None
            state = states.get(path)
            state = state if isinstance(state, list) and len(state) == 2 else None
            if key:
                found[key] = Tie(key=key, size=state[0] if state else None, mtime=state[1] if state else None)
        command = _COMMAND_OF.match(memory.text)
        if command:
            for key in [command_key(command.group(1)), *text_ties(command.group(1), root)]:
                if key and key not in found:
                    found[key] = Tie(key=key)
        if memory.kind == "error":
            lines = meta.get("errors")
            keys = [error_key(line) for line in lines if isinstance(line, str)] if isinstance(lines, list) else \
                signature_keys(memory.text.split(" — ", 1)[-1])
            found.update((key, Tie(key=key)) for key in keys[:MAX_SIGNATURES])
    elif memory.kind in ("prompt", "exchange", "note", "response"):
        said = f"{memory.text}\n{meta.get('said', '')}" if isinstance(meta.get("said"), str) else memory.text
        found.update((key, Tie(key=key)) for key in text_ties(said, root))
    return list(found.values())[:MAX_TIES]
