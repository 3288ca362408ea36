"""Knowledge read from what the hooks see, without a model: facts, procedures and decisions.

    fact       a thing and its value: a setting written into a config file or a constant (`key = value`,
               `key: value`, `KEY=value`, `"key": value`), an `export` in a command, or a statement in a prompt
               or an answer that gives something a value ("the timeout is 30 s now", "bumped X to 2.4").
    procedure  how something is done here: a command that worked (with what it is for), or a how-to the user or
               Claude stated ("run `make seed` first", "use `pnpm test:e2e` for the browser suite").
    decision   a choice and its reason ("we go with X because ...", "X instead of Y", "never do X").

Each item has a `subject`: what it is about, cut so that a later item about the same thing has the same
subject however it is worded (the file and the setting's name; the program and its subcommand). Statements in
words have no such key: storage/knowledge.py compares them by what their values measure (knowledge/values.py).
`thing` holds words for the kind of value ("duration", "version", "port", "instance type"), for questions that
name the kind while the memory names only the value.
"""

from __future__ import annotations

import os
import re

from ...shared.secrets import is_secret_name
from .. import sentences
from ..records import KnowledgeDraft
from ..terms import STOPWORDS, words
from . import values as stated_values

MAX_VALUE_CHARS = 90  # a longer right-hand side is code, not a setting
MAX_TEXT_CHARS = 320  # what one item shows
MIN_FACT_WORDS = 3  # a value said with fewer words ("768 is enough") says too little of what it is
MAX_ITEMS = 12  # per memory: a pasted config file does not flood the store
MAX_LINE_CHARS = 400  # a longer line (minified code, data) holds no setting worth a fact
MAX_SCANNED_CHARS = 200_000  # of a written file: its settings are near the top, a huge file is data

CONFIG_SUFFIXES = (".toml", ".yaml", ".yml", ".json", ".ini", ".cfg", ".conf", ".env", ".properties", ".tf",
                   ".tfvars", ".hcl", ".sbt", ".gradle", ".xml", ".plist", ".lock", ".mod", ".nvmrc")
CONFIG_NAMES = ("dockerfile", "makefile", ".env", "procfile", "gemfile", "requirements.txt", ".tool-versions")

# One line that gives a name a value: `KEY=value`, `key: value`, `"key": value`, `const KEY = value`, `key = value`.
_ASSIGNMENT = re.compile(
    r"""^\s*(?:export\s+|(?:public|private|protected|static|final|readonly|const|let|var|val|def)\s+)*"""
    r"""(?:[\w<>\[\],.?]+\s+(?=[A-Za-z_][\w.-]*\s*[:=]))?"""  # a declared type (Java, C#, Go, Scala)
    r"""["']?(?P<key>[A-Za-z_$@][\w.$@-]*)["']?(?:\s*:\s*[\w<>\[\]|. ]+?(?=\s*=))?\s*(?P<op>:=|=>|=|:)\s*"""
    r"""(?P<value>.+?)\s*$""")
_TRAILING_COMMENT = re.compile(r"\s+(?://|#|--)\s*(?P<comment>.*)$")
_LITERAL = re.compile(
    r"""^(?:-?\d[\w.,:+/-]*(?:\s*[*x]\s*\d+)*(?:\s*[A-Za-z%]{1,12})?|"[^"]*"|'[^']*'|`[^`]*`|true|false|yes|no|on|off|"""
    r"""null|none|nil|\{[^{}]*\}|\[[^\[\]]*\]|[A-Za-z][\w.\-/:@]*\d[\w.\-/:@]*|[a-z][\w.\-]*)$""", re.IGNORECASE)
_CODE_CONSTANT = re.compile(r"^[A-Z][A-Z0-9_]{2,}$")  # SHOUTING_CASE: a constant, in any language
_ENV_COMMAND = re.compile(r"(?:^|[;&|]\s*|\bexport\s+)([A-Z][A-Z0-9_]{2,})=(\"[^\"]*\"|'[^']*'|[^\s;&|]+)")

# Statements that change or set a value, in words.
_CHANGE = re.compile(
    r"\b(?:now|from now on|instead of|rather than|bump(?:ed)?|rais(?:e|ed)|lower(?:ed)?|increas(?:e|ed)|"
    r"decreas(?:e|ed)|reduc(?:e|ed)|cut|switch(?:ed)?|mov(?:e|ed)|chang(?:e|ed)|set|upgrad(?:e|ed)|downgrad(?:e|ed)|"
    r"pin(?:ned)?|replac(?:e|ed)|went|go(?:es)? (?:to|up|down)|limited to|capped at|defaults? to|is|are|"
    r"runs? (?:on|at|with|every)|uses?|listens? on|points? (?:to|at)|serves? from|stays?|gets?|takes?|needs?|"
    r"allows?|keeps?|has|have|holds?|lasts?|expires? after|waits?)\b",
    re.IGNORECASE)
_DECISION = re.compile(
    r"\b(?:we(?:'ll| will|'re| are)? (?:go|went|keep|kept|use|stick|stay|run|make|want)|let's|decided|decision|"
    r"chose|choose|opted|agreed|prefer|stick with|go with|keep (?:it|them|the)|"
    r"instead of|rather than|over [A-Za-z]|never|always|must(?:n't| not)?|don't|do not|the rule|convention|"
    r"policy)\b", re.IGNORECASE)
_REASON = re.compile(r"\b(?:because|since|so that|so (?:a|an|the|it|we|they|that|each|every|no)\b|as it|which means|"
                     r"otherwise|the reason|due to|to avoid|to keep|matters?|for (?:safety|speed|size)|given that|"
                     r"or else|that way)\b", re.IGNORECASE)
# What sets a value in a request: the user's words change something, they do not describe it.
_SETS = re.compile(
    r"\b(?:now|from now on|instead of|rather than|bump|raise|lower|increase|decrease|reduce|cut|switch|move|change|"
    r"set|upgrade|downgrade|pin|replace|make (?:it|them|that|this|the)|should be|should get|needs?|must|limit|cap|"
    r"default|keep)\b", re.IGNORECASE)
# A rule the user or the team set stands as a decision without its reason.
_RULE = re.compile(r"(?<![\w-])(?:rule|from now on|house style|convention|policy|never|always|must(?:n't| not)?|"
                   r"not allowed|only ever|do not ever|don't ever)\b", re.IGNORECASE)
# A value in words: a number with a digit (a version, a time, a size, an id), or a small count spelled out.
_VALUE = re.compile(r"(?<![\w.:/-])(?:[\w.:/-]*\d[\w.:/-]*|(?:one|two|three|four|five|six|seven|eight|nine|ten|"
                    r"eleven|twelve|fifteen|twenty|thirty|forty|fifty|hundred) [a-z]{3,})\b", re.IGNORECASE)
_COMMAND_IN_TEXT = re.compile(r"`([^`\n]{3,160})`")
_HOW_TO = re.compile(
    r"\b(?:run|use|start|boot|invoke|execute|call|type|do|needs?|requires?|first|before|then|from now on|"
    r"to (?:run|start|build|test|deploy|apply|reset|seed|generate|release|publish|install|update|boot))\b",
    re.IGNORECASE)
_SHELL_START = re.compile(r"^(?:[A-Z_][A-Z0-9_]*=\S+\s+)*(?:\./|bin/|sudo\s+)?[a-z][\w.+-]*(?:\s|$)")
# Commands that look and read rather than do: no procedure, however often they ran.
LOOKING = frozenset("""
ls cat head tail less more grep rg ag find fd sed awk wc echo printf pwd cd which whereis type file stat du df tree
diff cmp git-status git-diff git-log git-show git-blame git-grep jq yq curl-s env printenv date sleep true false
test ps top kill pgrep lsof sort uniq cut tr xargs tee nl column basename dirname realpath readlink man help history
""".split())
PROGRAMS_WITH_SUBCOMMANDS = frozenset("""
git npm pnpm yarn npx bun deno cargo go make just poetry uv pip pipenv python python3 node docker docker-compose
podman kubectl helm terraform tofu aws gcloud az sbt mvn gradle gradlew dotnet bundle rails rake php artisan sail
composer mix flutter dart swift xcodebuild fastlane ansible-playbook gh tox nox pytest alembic prisma dbt spark-submit
databricks unity-editor unity rustup brew apt apt-get systemctl supervisorctl pm2 heroku fly vercel netlify
""".split())

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
    joined = " ".join(texts)
    return " ".join(dict.fromkeys(kind for pattern, kind in _VALUE_KINDS if pattern.search(joined)))


def key_words(key: str) -> str:
    """A setting's name as words: `PUSH_WORKER_CONCURRENCY` → "push worker concurrency", `maxRetries` → "max retries"."""
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", key)
    return " ".join(part.lower() for part in re.split(r"[\W_]+", spaced) if part)


def is_config_file(path: str) -> bool:
    name = os.path.basename(path).lower()
    return name.endswith(CONFIG_SUFFIXES) or name in CONFIG_NAMES or name.startswith(".env")


# --- facts from files ----------------------------------------------------------------------------------------------

def from_file_text(path: str, new: str, old: str = "") -> list[KnowledgeDraft]:
    """The settings a write into `path` gives a value: each line of `new` that assigns a literal and that `old` did
    not have. In code only constants (SHOUTING_CASE) and literal properties count; in a config file any key."""
    config = is_config_file(path)
    before = {line.strip() for line in old[:MAX_SCANNED_CHARS].splitlines()}
    found: list[KnowledgeDraft] = []
    for line in new[:MAX_SCANNED_CHARS].splitlines():
        stripped = line.strip()
        if not stripped or len(stripped) > MAX_LINE_CHARS or stripped in before \
                or stripped.startswith(("#", "//", "/*", "*", "--", "<!--")):
            continue
        item = _assignment(stripped, path, config)
        if item is not None:
            found.append(item)
        if len(found) >= MAX_ITEMS:
            break
    return found


def _assignment(line: str, path: str, config: bool) -> KnowledgeDraft | None:
    comment = ""
    match_comment = _TRAILING_COMMENT.search(line)
    body = line
    if match_comment and not re.search(r"https?:$", line[:match_comment.start()]):
        comment = match_comment.group("comment").strip()
        body = line[:match_comment.start()]
    match = _ASSIGNMENT.match(body)
    if not match:
        return None
    key, value = match.group("key"), match.group("value").strip().rstrip(",;").strip()
    if not value or len(value) > MAX_VALUE_CHARS or not _LITERAL.match(value) or is_secret_name(key):
        return None
    prop = match.group("op") in (":", "=>")  # `name: value`, `'name' => value`: a property of an object or array
    if prop and not config and not (_CODE_CONSTANT.match(key) or re.search(r"\d", value)):
        return None  # a property in code is kept when it holds a number
    if not config and not prop and not _CODE_CONSTANT.match(key):
        return None  # a local variable's assignment in code is no setting
    if re.fullmatch(r"[a-z][\w.\-]*", value, re.IGNORECASE) and not config:
        return None  # another name, not a value
    name = os.path.basename(path)
    text = f"{key} = {value}" + (f"  ({comment})" if comment else "") + f" in {path}" if path else f"{key} = {value}"
    return KnowledgeDraft(kind="fact", subject=f"{path}:{key}".lower() if path else key.lower(),
                          thing=" ".join(filter(None, (key_words(key), thing_of(key_words(key), value, comment)))),
                          value=value, text=text[:MAX_TEXT_CHARS], file=path, context=name)


def from_edit(path: str, changes: list[tuple[str, str]]) -> list[KnowledgeDraft]:
    """The settings an Edit (its `old` → `new` pairs) gives a new value."""
    found: list[KnowledgeDraft] = []
    for old, new in changes:
        found.extend(from_file_text(path, new, old))
    return _unique(found)


# --- facts and procedures from commands ----------------------------------------------------------------------------

def program_of(command: str) -> str:
    """A command's program and, for a tool with subcommands, its subcommand: the subject of a procedure
    (`pnpm test:e2e --reporter=dot` → "pnpm test:e2e", `sail artisan migrate` → "sail artisan migrate")."""
    tokens = [t for t in re.split(r"\s+", command.strip()) if t]
    while tokens and re.fullmatch(r"[A-Z_][A-Z0-9_]*=\S*", tokens[0]):
        tokens.pop(0)  # VAR=value before the program
    if tokens and tokens[0] in ("sudo", "time", "exec", "env", "nice", "timeout", "xvfb-run", "caffeinate"):
        tokens.pop(0)
        while tokens and (tokens[0].startswith("-") or re.fullmatch(r"\d+[smh]?", tokens[0])):
            tokens.pop(0)  # its own flags and duration (`timeout 12 pnpm start:worker`)
    if not tokens:
        return ""
    program = os.path.basename(tokens[0])
    parts = [program]
    rest = tokens[1:]
    depth = 2 if program in ("sail", "docker", "php", "python", "python3", "npx", "bundle", "poetry", "uv") else 1
    if program in PROGRAMS_WITH_SUBCOMMANDS or program.endswith(("w", ".sh")) or "/" in tokens[0]:
        for token in rest:
            if token.startswith("-") or len(parts) > depth or re.search(r"[\"'$|;&<>()]", token):
                break
            parts.append(token)
    return " ".join(parts)


def programs_in(command: str) -> set[str]:
    """The programs of every step of a command line (`a && b | c; d`): what a failure of any of them relates to."""
    return {program_of(step).split(" ")[0] for step in re.split(r"&&|\|\||[;|]", command) if program_of(step)}


SETUP = frozenset("cd pushd popd chmod chown mkdir touch export source . set unset cp mv ln".split())  # not what a line does


def is_looking(command: str) -> bool:
    """Does the command only look at things (ls, grep, git status, a read-only query)? Setup steps (`cd web && …`) are
    not what a line does: its other steps decide."""
    steps = [step.split("|")[0].strip() for step in re.split(r"&&|\|\||;", command)]
    doing = [step for step in steps if step and step.split()[0] not in SETUP]
    return all(_only_looks(step) for step in doing)


def _only_looks(step: str) -> bool:
    program = program_of(step)
    head = program.split(" ")[0] if program else ""
    return (not head or head in LOOKING or program.replace(" ", "-") in LOOKING
            or (head == "git" and program in ("git status", "git diff", "git log", "git show", "git blame", "git branch")))


def from_command(command: str, goal: str = "", notes: str = "") -> list[KnowledgeDraft]:
    """What a command that worked teaches: the variables it exports (facts) and, unless it only looks at things,
    how this goal is done here (a procedure; `goal`: what it was for, `notes`: the failures it came after)."""
    found: list[KnowledgeDraft] = []
    for key, value in _ENV_COMMAND.findall(command):
        if is_secret_name(key):
            continue
        if " export " in f" {command} " or command.strip().startswith(key):
            found.append(KnowledgeDraft(kind="fact", subject=key.lower(), value=value.strip("'\""),
                                        thing=" ".join(filter(None, (key_words(key), thing_of(key_words(key), value)))),
                                        text=f"{key}={value}"[:MAX_TEXT_CHARS], context=command[:200]))
    one_line = " ".join(command.split())
    if is_looking(one_line) or len(one_line) < 4:
        return found
    program = program_of(one_line)
    text = f"`{one_line[:200]}`" + (f": {goal}" if goal else "") + (f" ({notes})" if notes else "")
    found.append(KnowledgeDraft(kind="procedure", subject=f"run:{program}", value=one_line[:200],
                                thing="command how to run", text=text[:MAX_TEXT_CHARS], context=goal[:300]))
    return found


# --- facts, procedures and decisions from what was said ------------------------------------------------------------

def from_statement(text: str, *, asked: bool = False) -> list[KnowledgeDraft]:
    """The values, how-tos and decisions a prompt or an answer states, one sentence each. `asked`: the user's prompt,
    where a value is a fact only when it is set or changed ("make it 40", "politics now needs three approvals"): a
    report ("users get the push three times") is what the answer settles, not a fact."""
    found: list[KnowledgeDraft] = []
    for sentence in sentences.split(text):
        sentence = " ".join(sentence.split())
        if len(sentence) < 12 or sentence.endswith("?"):
            continue
        item = _stated(sentence, asked)
        if item is not None:
            found.append(item)
        if len(found) >= MAX_ITEMS:
            break
    return _unique(found)


def _stated(sentence: str, asked: bool = False) -> KnowledgeDraft | None:
    shown = sentence[:MAX_TEXT_CHARS]
    commands = [c for c in _COMMAND_IN_TEXT.findall(sentence) if _SHELL_START.match(c) and " " in c.strip()
                and not is_looking(c)]
    if commands and _HOW_TO.search(sentence):
        program = program_of(commands[0])
        return KnowledgeDraft(kind="procedure", subject=f"run:{program}", value=commands[0], text=shown,
                              thing="command how to run")
    if _content_words(sentence) >= 5 and _RULE.search(sentence):  # a rule, even one that names a value
        return KnowledgeDraft(kind="decision", subject="", value="", text=shown, thing="rule decision convention")
    stated = [f"{key}={value}" for key, value in stated_values.values(sentence)] or _VALUE.findall(sentence)
    if stated and (_SETS if asked else _CHANGE).search(sentence) and _content_words(sentence) >= MIN_FACT_WORDS:
        return KnowledgeDraft(kind="fact", subject="", value=", ".join(sorted(set(stated)))[:200], text=shown,
                              thing=thing_of(sentence))
    if _content_words(sentence) >= 5 and _DECISION.search(sentence) and _REASON.search(sentence):
        return KnowledgeDraft(kind="decision", subject="", value="", text=shown, thing="decision why reason")
    return None


def _content_words(sentence: str) -> int:
    return sum(1 for word in words(sentence) if word not in STOPWORDS and len(word) > 2)


def _unique(items: list[KnowledgeDraft]) -> list[KnowledgeDraft]:
    seen: set[tuple[str, str, str]] = set()
    kept = []
    for item in items:
        key = (item.kind, item.subject, item.text)
        if key not in seen:
            seen.add(key)
            kept.append(item)
    return kept
