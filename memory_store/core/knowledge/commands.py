"""Commands: what a command line does (its program, subcommand and the folder it runs in), whether it only looks at
things, and whether it worked.

A procedure is a command that worked: it exited 0 (PostToolUse, not PostToolUseFailure), was not interrupted, and its
output reports no failure ("3 failed", "npm ERR!", a traceback: `pnpm test:e2e 2>&1 | tail -5` exits 0 whatever its
tests did). Its subject is `procedure_key`: the program and what it does there, with the folder it works in, so that
`PORT=3000 pnpm --dir services/web dev` and `PORT=8081 pnpm --dir services/api start` are two procedures and the
variables each sets are facts of that procedure alone.
"""

from __future__ import annotations

import os
import re

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
databricks unity-editor unity rustup brew apt apt-get systemctl supervisorctl pm2 heroku fly vercel netlify west
idf.py platformio pio molecule ansible
""".split())
SETUP = frozenset("cd pushd popd chmod chown mkdir touch export source . set unset cp mv ln".split())  # not what a line does
WRAPPERS = ("sudo", "time", "exec", "env", "nice", "timeout", "xvfb-run", "caffeinate", "nohup", "npx", "bunx")
# Flags that name the folder or package a command works in: part of what the command does.
_PLACE_FLAGS = frozenset("--dir -C --prefix --cwd --filter -F --workspace -w --project --manifest-path --chdir "
                         "--working-directory --app-dir --package -p --cwd=".split())
_ASSIGNMENT = re.compile(r"^[A-Z_][A-Z0-9_]*=")
_ENV_SET = re.compile(r"(?:^|[;&|(]\s*|\bexport\s+|\s)([A-Z][A-Z0-9_]{1,60})="
                      r"(\"[^\"\n]{0,80}\"|'[^'\n]{0,80}'|[^\s;&|()]{1,80})")
_STEP = re.compile(r"&&|\|\||;")
_NAMED_VALUE = re.compile(r"[A-Za-z][\w.:/\-]{0,60}")  # a name as an option's value, not a number or a duration
# What an output says when a command that exited 0 did not work (or a shell swallowed its exit code).
FAILED_OUTPUT = re.compile(
    r"(?<![\w.])[1-9]\d{0,5} (?:failed|failing|failures?|errors?|broken)\b|\bFAIL(?:ED|URE|S)?\b(?!=)|"
    r"(?im:^[ \t]*(?:error|fatal|panic)(?:\[\w{1,10}\])?:)|Traceback \(most recent call last\)|"
    r"\bexit(?:ed)? (?:with )?(?:code|status) [1-9]|\bcommand not found\b|\bNo such file or directory\b|npm ERR!|"
    r"\bBUILD FAILED\b|\bSegmentation fault\b|\bUnhandled exception\b|\bException in thread\b|\[Request interrupted")


def _tokens(step: str) -> list[str]:
    return [t for t in re.split(r"\s+", step.strip()) if t]


def program_of(command: str) -> str:
    """A command's program and, for a tool with subcommands, its subcommand (`pnpm test:e2e --reporter=dot` → "pnpm
    test:e2e", `sail artisan migrate` → "sail artisan migrate")."""
    tokens = _tokens(command)[:40]
    while tokens and _ASSIGNMENT.match(tokens[0]):
        tokens.pop(0)  # VAR=value before the program
    if tokens and tokens[0] in WRAPPERS:
        tokens.pop(0)
        while tokens and (tokens[0].startswith("-") or re.fullmatch(r"\d+[smh]?", tokens[0])):
            tokens.pop(0)  # its own flags and duration (`timeout 12 pnpm start:worker`)
    if not tokens:
        return ""
    program = os.path.basename(tokens[0])
    parts = [program]
    depth = 2 if program in ("sail", "docker", "php", "python", "python3", "npx", "bundle", "poetry", "uv") else 1
    if program in PROGRAMS_WITH_SUBCOMMANDS or program.endswith(("w", ".sh", ".py")) or "/" in tokens[0]:
        for token in tokens[1:]:
            if token.startswith("-") or len(parts) > depth or re.search(r"[\"'$|;&<>()]", token):
                break
            parts.append(token)
    return " ".join(parts)


def programs_in(command: str) -> set[str]:
    """The programs of every step of a command line (`a && b | c; d`): what a failure of any of them relates to."""
    return {program_of(step).split(" ")[0] for step in re.split(r"&&|\|\||[;|]", command) if program_of(step)}


def is_looking(command: str) -> bool:
    """Does the command only look at things (ls, grep, git status, a read-only query)? Setup steps (`cd web && …`) are
    not what a line does: its other steps decide."""
    steps = [step.split("|")[0].strip() for step in _STEP.split(command)]
    doing = [step for step in steps if step and step.split()[0] not in SETUP]
    return all(_only_looks(step) for step in doing)


def _only_looks(step: str) -> bool:
    program = program_of(step)
    head = program.split(" ")[0] if program else ""
    return (not head or head in LOOKING or program.replace(" ", "-") in LOOKING
            or (head == "git" and program in ("git status", "git diff", "git log", "git show", "git blame", "git branch")))


def procedure_key(command: str) -> str:
    """What a command line does, where: the program and subcommand of its last doing step (up to two words before its
    first other flag; the steps before it set it up: `docker compose up -d db && pnpm start:api` starts the API), and
    the folder it works in (`cd DIR &&` before it, `--dir DIR`, `-C DIR`, `--filter PKG`).
    `PORT=3000 pnpm --dir services/web dev` → "pnpm dev @services/web"."""
    place, tokens = _doing_step(command)
    if not tokens:
        return ""
    named = [os.path.basename(tokens[0]) if not tokens[0].startswith("./") else tokens[0]]
    where = place
    rest = iter(tokens[1:])
    for token in rest:
        flag, _, inline = token.partition("=")
        if flag in _PLACE_FLAGS:
            where = (inline or next(rest, "")).strip("\"'").rstrip("/")
            continue
        if token.startswith("-") or re.search(r"[\"'$<>()`=]", token):
            break
        if len(named) < 3:
            named.append(token)
    return " ".join(named) + (f" @{where}" if where else "")


def selectors(command: str) -> frozenset[str]:
    """The long options of a command's doing step that pick what it works on by name (`--group=meilisearch`, `--env
    staging`), not how it runs (`--parallel`, `--workers 4`): one program with other selectors does another job."""
    _, tokens = _doing_step(command)
    found = set()
    for index, token in enumerate(tokens[1:], 1):
        if not token.startswith("--"):
            continue
        flag, equals, value = token.partition("=")
        if not equals and index + 1 < len(tokens) and not tokens[index + 1].startswith("-"):
            value = tokens[index + 1]
        value = value.strip("\"'")
        if flag not in _PLACE_FLAGS and _NAMED_VALUE.fullmatch(value):
            found.add(f"{flag}={value}")
    return frozenset(found)


def _doing_step(command: str) -> tuple[str, list[str]]:
    """(the folder a `cd` before it names, the tokens of the last step that does something), its wrappers and
    variables aside."""
    place, doing = "", []
    for step in _STEP.split(command[:2000]):
        tokens = _tokens(step.split("|")[0])
        while tokens and _ASSIGNMENT.match(tokens[0]):
            tokens.pop(0)
        if not tokens:
            continue
        if tokens[0] in ("cd", "pushd") and len(tokens) > 1:
            place = tokens[1].strip("\"'").rstrip("/")
            continue
        if tokens[0] in SETUP or _only_looks(" ".join(tokens)):
            continue
        while tokens and tokens[0] in WRAPPERS:
            tokens.pop(0)
            while tokens and (tokens[0].startswith("-") or re.fullmatch(r"\d+[smh]?", tokens[0])):
                tokens.pop(0)
        if tokens:
            doing = tokens
    return place, doing


def environment(command: str) -> list[tuple[str, str]]:
    """The variables a command line sets (`PORT=3000 pnpm dev`, `export X=1 && …`): (name, value)."""
    return [(name, value.strip("'\"")) for name, value in _ENV_SET.findall(command[:4000])]


def worked(output: str, interrupted: bool = False) -> bool:
    """Did a command that exited 0 work? Not when it was interrupted, nor when its output reports a failure."""
    return not interrupted and not FAILED_OUTPUT.search(output[:200_000])
