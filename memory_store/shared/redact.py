"""Applying the privacy policy (shared/secrets.py) before any text touches disk. Standard library only.

- `strip_private` drops `<private>…</private>` spans (an unclosed tag hides the rest);
- `redact` replaces secrets with `[REDACTED:<kind>]`;
- `clean_payload` applies both to a whole hook payload, once per event, before anything else reads it: the hook's
  spool (hook/fallback.py), the worker (core/router.py) and `recall import` (core/capture/) all call it, so a secret
  is taken out before a text is cut, parsed or stored. A file that holds secrets (`.env`, `*.tfvars`, credentials,
  a Kubernetes Secret) has every value taken out, in a tool's input, its output and in an agent's patch.

All of it is idempotent, so the hook client, the worker and the logger apply it without coordinating.
"""

from __future__ import annotations

import re

from .secrets import (
    MAYBE_SECRET_NAME,
    NAMED_IN_WORDS,
    NAMED_VALUE,
    SECRET_PATTERNS,
    is_secret_assignment,
    is_secret_file,
    is_secret_manifest,
    secret_files_in,
)
from .text import well_formed

PRIVATE_SPAN = re.compile(r"<private>.*?(?:</private>|\Z)", re.IGNORECASE | re.DOTALL)
PRIVATE_PLACEHOLDER = "[private]"
MARKER_PREFIX = "[REDACTED:"
# A string of a payload longer than this is cut (at line ends, its head and its tail kept) before it is redacted:
# what recall keeps of any field is far shorter, and redacting megabytes costs seconds.
MAX_FIELD_CHARS = 512 * 1024
FIELD_TAIL_CHARS = 64 * 1024

# A line of a secret file that gives something a value (`KEY=value`, `key: value`, `key = "value"`, a patch's
# `+KEY=value`): the value goes. A line with no value of that form (`machine h login u password p`) goes whole.
_VALUE_LINE = re.compile(r"^([ \t]*[+\- ]?[ \t]*(?:export[ \t]+)?[\"']?[\w.\-/\[\]]+[\"']?[ \t]*(?::=|=>|=|:)[ \t]*)"
                         r"(\S.*?)[ \t]*$")
_STRUCTURE = re.compile(r"^[ \t]*[+\- ]?[ \t]*(?:#|//|;|\[[^\]]*\]\s*$|[{}\[\](),]*\s*$|---|\.\.\.|\w[\w.\-]*:\s*$|"
                        r"\w[\w \"'.\-]*\{\s*$)")
_OPENING = ("{", "[", "|", ">", "|-", ">-")
_PATCH_FILE = re.compile(r"^\*\*\* (?:Add|Update|Delete) File: (.+)$|^\*\*\* Move to: (.+)$")
_MANIFEST_DATA = re.compile(r"^([ \t]*)[\"']?(?:data|stringData)[\"']?[ \t]*:[ \t]*\{?[ \t]*$")


def marker(kind: str) -> str:
    return f"{MARKER_PREFIX}{kind}]"


def strip_private(text: str) -> str:
    """Remove `<private>` spans entirely; their content is never stored anywhere."""
    if "<private" not in text.lower():
        return text
    return PRIVATE_SPAN.sub(PRIVATE_PLACEHOLDER, text)


def _replace(kind: str, group: int):
    shown = marker(kind)

    def sub(match: re.Match[str]) -> str:
        if group == 0:
            return shown
        value = match.group(group)
        if value.strip("'\"").startswith(MARKER_PREFIX) or value == PRIVATE_PLACEHOLDER:
            return match.group(0)  # already redacted: keep idempotent
        quote = value[0] if value[:1] in ("'", '"') and value[-1:] == value[:1] and len(value) > 1 else ""
        start, end = match.span(group)
        base = match.start(0)
        whole = match.group(0)
        return whole[: start - base] + f"{quote}{shown}{quote}" + whole[end - base :]

    return sub


def redact(text: str) -> str:
    """Replace every secret found in `text` with a `[REDACTED:<kind>]` marker."""
    if not text:
        return text
    lowered = text.lower()
    for kind, pattern, group, anchors in SECRET_PATTERNS:
        if any(anchor in lowered for anchor in anchors):
            text = pattern.sub(_replace(kind, group), text)
    text = _redact_named(text)
    if is_secret_manifest(text):
        text = _redact_manifest_data(text)
    return text


def _redact_named(text: str) -> str:
    """The values of settings named as secrets (shared/secrets.py NAMED_VALUE, is_secret_name): looked at where a name
    holds a secret's word (MAYBE_SECRET_NAME), from the start of that name."""
    starts = set()
    for hit in MAYBE_SECRET_NAME.finditer(text):
        start = hit.start()
        while start > 0 and hit.start() - start < 120 and (text[start - 1].isalnum() or text[start - 1] in "_.-"):
            start -= 1
        while start < hit.start() and text[start] == "-":
            start += 1  # a flag's dashes are no part of a name
        starts.add(start)
        if text[start - 1:start + 1] == "-D":
            starts.add(start + 1)  # a JVM property: -Dspring.datasource.password=…
    if not starts:
        return text
    matches = sorted((m for start in starts for pattern in (NAMED_VALUE, NAMED_IN_WORDS)
                      if (m := pattern.match(text, start))), key=lambda m: m.start("value"))
    kept: list[str] = []
    done = 0
    for match in matches:
        start, end = match.span("value")
        if start < done or _is_marker(match.group("value")) or not is_secret_assignment(match):
            continue
        value = match.group("value")
        quote = value[0] if value[:1] in ("'", '"') and len(value) > 1 else ""
        kept += [text[done:start], f"{quote}{marker('credential')}{quote}"]
        done = end
    return "".join(kept) + text[done:] if kept else text


def _is_marker(value: str) -> bool:
    """A value that is one marker: already redacted. A marker with more after it ("[REDACTED:stated-secret],w0rd!x",
    where a prose rule stopped at a comma) is not: the rest of the value goes too."""
    value = value.strip("'\"")
    return value.startswith(MARKER_PREFIX) and value.endswith("]") and value.count("]") == 1


def secret_kinds(text: str) -> list[str]:
    """The kinds of secret `redact` would take out of `text` (none: it is clean), e.g. ["aws-key"]."""
    before = set(re.findall(r"\[REDACTED:([\w-]+)\]", text or ""))
    after = re.findall(r"\[REDACTED:([\w-]+)\]", redact(text or ""))
    found = [kind for kind in after if kind not in before] if redact(text or "") != (text or "") else []
    return list(dict.fromkeys(found))


def _redact_manifest_data(text: str) -> str:
    """A Kubernetes Secret's `data:` and `stringData:` values (base64 or plain: both secrets), YAML or JSON."""
    lines = text.split("\n")
    block_indent: int | None = None
    for n, line in enumerate(lines):
        opening = _MANIFEST_DATA.match(line)
        if opening:
            block_indent = len(opening.group(1))
            continue
        if block_indent is None or not line.strip():
            continue
        indent = len(line) - len(line.lstrip())
        if indent <= block_indent or line.strip().startswith("}"):
            block_indent = None
            continue
        lines[n] = _secret_value_line(line, "secret-manifest")
    return "\n".join(lines)


def redact_secret_values(text: str, kind: str = "secret-file") -> str:
    """Every value of a secret file's text (a dotenv file, a tfvars file, credentials): each `key = value` line keeps
    its key, any other line that is not structure (a section, a brace, a comment) goes whole."""
    return "\n".join(_secret_value_line(line, kind) for line in text.split("\n"))


def _secret_value_line(line: str, kind: str) -> str:
    if not line.strip() or MARKER_PREFIX in line:
        return line
    match = _VALUE_LINE.match(line)
    if match:
        value = match.group(2)
        if value in _OPENING:
            return line
        return match.group(1) + marker(kind) + ("," if value.endswith(",") else "")
    if _STRUCTURE.match(line):
        return line
    return line[: len(line) - len(line.lstrip())] + marker(kind)


def redact_patch(text: str) -> str:
    """An agent's patch (`*** Begin Patch` … `*** Add File: .env` …): the lines of each secret file's section lose
    their values, the rest stays."""
    if "*** " not in text:
        return text
    lines = text.split("\n")
    secret = False
    for n, line in enumerate(lines):
        header = _PATCH_FILE.match(line.strip())
        if header:
            secret = is_secret_file(header.group(1) or header.group(2))
        elif line.startswith("*** "):
            secret = False
        elif secret and line[:1] in ("+", "-", " "):
            lines[n] = line[0] + _secret_value_line(line[1:], "secret-file")
        elif secret and line.startswith("@@") and line.strip() != "@@":  # "@@ KEY=value": a hunk's context line
            lines[n] = "@@ " + _secret_value_line(line[2:].strip(), "secret-file")
    return "\n".join(lines)


def clean(text: str) -> str:
    """Everything a captured string goes through before storage: private spans, then secrets; a lone surrogate (a
    transcript's as a hook's) becomes U+FFFD."""
    return redact(strip_private(well_formed(text)))


def bounded(text: str, limit: int = MAX_FIELD_CHARS, tail: int = FIELD_TAIL_CHARS) -> str:
    """`text` cut to about `limit` characters at line ends, its head and its tail kept, before it is redacted. What
    the cut part began is not left half in the tail: a private key's remaining lines, a `<private>` span's end."""
    if len(text) <= limit:
        return text
    head_end = text.rfind("\n", 0, limit - tail)
    head_end = head_end if head_end > 0 else limit - tail
    tail_start = text.find("\n", len(text) - tail)
    tail_start = tail_start if tail_start >= 0 else len(text) - tail
    cut, rest = text[head_end:tail_start], text[tail_start:]
    orphan_end = rest.find("-----END")
    if orphan_end >= 0 and "-----BEGIN" not in rest[:orphan_end]:
        line_end = rest.find("\n", orphan_end)
        rest = rest[line_end:] if line_end >= 0 else ""
    lowered = cut.lower()
    if lowered.rfind("<private") > lowered.rfind("</private"):  # a span opened in the cut part: it hides its end
        close = rest.lower().find("</private>")
        rest = PRIVATE_PLACEHOLDER + (rest[close + len("</private>"):] if close >= 0 else "")
    return f"{text[:head_end]}\n[… {len(cut)} characters not kept …]{rest}"


def clean_tree(value, _depth: int = 0):
    """Apply `clean` to every string inside a JSON-like value (dict keys included), each bounded first."""
    if isinstance(value, str):
        return clean(bounded(value))
    if _depth > 64:
        return None
    if isinstance(value, dict):
        return {clean(str(k)): clean_tree(v, _depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [clean_tree(v, _depth + 1) for v in value]
    return value


def _map_strings(value, fn, skip: frozenset[str] = frozenset(), _depth: int = 0):
    if isinstance(value, str):
        return fn(value)
    if _depth > 64:
        return None
    if isinstance(value, dict):
        return {k: v if k in skip else _map_strings(v, fn, skip, _depth + 1) for k, v in value.items()}
    if isinstance(value, list):
        return [_map_strings(v, fn, skip, _depth + 1) for v in value]
    return value


# What a tool event says of a file besides its contents: kept when the file's values go.
_NOT_CONTENT = frozenset({"file_path", "filePath", "path", "notebook_path", "command", "cmd", "description", "type",
                          "workdir", "cwd"})


def secret_file_event(payload: dict) -> bool:
    """Does this tool event read, write or print a file that holds secrets (shared/secrets.py is_secret_file), or
    a Kubernetes Secret whatever its name?"""
    tool_input = payload.get("tool_input")
    if not isinstance(tool_input, dict):
        return False
    for key in ("file_path", "path", "notebook_path"):
        if isinstance(tool_input.get(key), str) and is_secret_file(tool_input[key]):
            return True
    response = payload.get("tool_response")
    for text in (tool_input.get("content"), response.get("originalFile") if isinstance(response, dict) else None):
        if isinstance(text, str) and is_secret_manifest(text):
            return True
    command = tool_input.get("command", tool_input.get("cmd"))
    if isinstance(command, list):
        command = " ".join(part for part in command if isinstance(part, str))
    return isinstance(command, str) and "*** Begin Patch" not in command and secret_files_in(command)


# What a hook payload says about the event rather than what happened in it (ids, the session's paths, names): left
# as it is, which keeps a prompt's redaction to the prompt.
_ABOUT_THE_EVENT = frozenset({"session_id", "transcript_path", "cwd", "hook_event_name", "permission_mode", "prompt_id",
                              "turn_id", "tool_use_id", "agent_id", "agent_type", "agent_transcript_path", "source",
                              "reason", "model", "tool_name", "stop_hook_active", "effort", "duration_ms"})


def clean_payload(payload: dict) -> dict:
    """A whole hook payload made safe to write down or read from, once per event: secrets and private spans in every
    string of what happened; every value of a secret file a tool touched; the secret files' sections of a patch."""
    cleaned = {key: value if key in _ABOUT_THE_EVENT else clean_tree(value) for key, value in payload.items()}
    return hide_secret_files(payload, cleaned)


def hide_secret_files(event: dict, cleaned: dict) -> dict:
    """`cleaned` (the tool event's strings already cleaned) with every value of a secret file the tool read, wrote or
    printed taken out, in its input, output and error; and the secret files' sections of an agent's patch."""
    whole_file = secret_file_event(event)
    for key in ("tool_input", "tool_response", "error"):
        if key in cleaned:
            if whole_file:
                cleaned[key] = _map_strings(cleaned[key], redact_secret_values, _NOT_CONTENT)
            cleaned[key] = _map_strings(cleaned[key], redact_patch)  # a patch is a command's or an input's text
    return cleaned
