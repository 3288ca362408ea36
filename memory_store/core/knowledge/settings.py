"""The settings a file gives values to, each under its whole path: `database.port` in YAML, JSON or TOML, a block path
in HCL (`resource.aws_instance.web.instance_type`), a code assignment's whole left side (`cfg.ReadTimeout`,
`pool.max_size`), a property inside an object literal (`server.port` of `defineConfig({server: {port: 3000}})`), a
named argument (`EnableRetryOnFailure.maxRetryCount`).

Read line by line, with a stack of the blocks a line is in (by indentation for YAML, by brackets elsewhere), so any
format with key/value structure reads the same way, and every pattern is tried once per line at its start: linear in
the file's size, however hostile. Values are literals only (a number with its unit, a string, a version, a flag, a
duration expression); a call or a variable on the right is code, not a setting. A name the privacy policy calls a
secret's (shared/secrets.py) is no setting, and a file that holds secrets has none.

`changed(path, new, old)`: the settings `new` gives a value that `old` did not (an Edit, a Write over a file).
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass

from ...shared.secrets import is_secret_file, is_secret_name

MAX_SCANNED_CHARS = 200_000  # a file's settings are near its top; a huge file is data
MAX_LINE_CHARS = 400  # a longer line (minified code, data) holds no setting worth a fact
MAX_VALUE_CHARS = 90  # a longer right-hand side is code, not a setting
MAX_SETTINGS = 40  # per file and write: a pasted config does not flood the store
MAX_DEPTH = 12
MAX_LINES = 5_000  # of a file, read for settings (a longer file's settings are in its first lines)

CONFIG_SUFFIXES = (".toml", ".yaml", ".yml", ".json", ".jsonc", ".json5", ".ini", ".cfg", ".conf", ".properties",
                   ".tf", ".hcl", ".sbt", ".gradle", ".kts", ".xml", ".plist", ".mod", ".nvmrc", ".env", ".editorconfig",
                   ".config")
CONFIG_NAMES = ("dockerfile", "makefile", "procfile", "gemfile", "requirements.txt", ".tool-versions", "kconfig",
                "prj.conf", "defconfig")
YAML_SUFFIXES = (".yaml", ".yml")
INDENTED = YAML_SUFFIXES  # nesting by indentation; everything else by brackets and section headers


@dataclass(frozen=True)
class Setting:
    """One value a file gives: its whole key path (as written, dotted), the value, and the line that says it."""

    path: str
    value: str
    line: str

    @property
    def name(self) -> str:
        return self.path.rsplit(".", 1)[-1]


def is_config(path: str) -> bool:
    name = os.path.basename(path).lower()
    return name.endswith(CONFIG_SUFFIXES) or name in CONFIG_NAMES or name.startswith((".env", "dockerfile"))


# --- values --------------------------------------------------------------------------------------------------------

# A literal: a number (with a unit, an expression of numbers and unit constants like `5 * time.Second`), a quoted
# string, a boolean or null, a version, a flag-like word with a digit, a short list or map of literals, a duration call
# of literals (`Duration(seconds: 45)`, `TimeSpan.FromSeconds(10)`).
_NUMBER = r"-?\d[\d_,]*(?:\.\d+)?(?:e-?\d+)?"
_LITERAL = re.compile(
    rf"""(?:{_NUMBER}(?:\s*[a-zA-Z%µ]{{1,12}})?(?:\s*[*x/+]\s*(?:{_NUMBER}|[A-Za-z_][\w.]{{0,30}}))*"""
    r"""|"[^"\n]{0,80}"|'[^'\n]{0,80}'|`[^`\n]{0,80}`|true|false|yes|no|on|off|null|none|nil|True|False|None"""
    r"""|[A-Za-z_][\w.]{0,30}\.(?:From)?\w{0,12}\(\s*\w{0,12}\s*:?\s*""" + _NUMBER + r"""\s*\)"""
    r"""|\w{1,20}\(\s*\w{1,12}\s*:\s*""" + _NUMBER + r"""\s*\)"""
    r"""|\[[^\[\]\n]{0,80}\]|\{[^{}\n]{0,80}\}|[\^~>=<]{0,2}v?\d[\w.\-+/:@]{0,60}|[A-Za-z][\w.\-/:@]{0,60}\d[\w.\-/:@]{0,30}"""
    r""")""")
_WORD_VALUE = re.compile(r"[A-Za-z][\w.\-/:@]{0,60}")  # a plain word: a value in a config file, a name in code


def literal(value: str, config: bool) -> str | None:
    """The value as kept (trailing `,` `;` and a comment gone), or None when it is not a literal."""
    value = value.strip().rstrip(",;").strip()
    if not value or len(value) > MAX_VALUE_CHARS or value in ("{", "[", "(", "|", ">", "|-", ">-"):
        return None
    if _LITERAL.fullmatch(value) or (config and _WORD_VALUE.fullmatch(value)):
        return value
    return None


# --- lines ---------------------------------------------------------------------------------------------------------

_COMMENT_LINE = ("#", "//", "/*", "*", "--", "<!--", ";", "%")
_TRAILING_COMMENT = re.compile(r"\s+(?:#|//|--|;)\s.*$|\s+(?:#|//)$")
# `[section]`, `[section.sub]`, `[[array.of.tables]]` (TOML, INI)
_SECTION = re.compile(r"^\[\[?\s*([\w.\-\" ]{1,120}?)\s*\]\]?$")
# The name a line gives a value to: `key:`, `"key":`, `key =`, `const KEY =`, `int Key =`, `export KEY=`, `#define KEY`
_DECLARATION = (r"(?:(?:export|public|private|protected|internal|static|final|readonly|const|constexpr|let|var|val|"
                r"def|set|local|declare|override|late|mut|pub(?:\(crate\))?|unsafe|volatile)\s+)*")
_KEY = re.compile(
    rf"^{_DECLARATION}(?:[\w<>\[\],.?*&:]+\s+(?=[A-Za-z_$@][\w.$@\-\[\]\"']*\s*(?::=|=|:)))?"  # a declared type
    r"""(?P<key>"[^"\n]{1,100}"|'[^'\n]{1,100}'|[A-Za-z_$@][\w.$@\-]{0,100}(?:\[["']?[\w.\-]{1,40}["']?\])*)"""
    r"""(?:\s*:\s*[\w<>\[\]|.?]{1,40}(?=\s*=))?\s*(?P<op>:=|=>|=|:(?!:))\s*(?P<rest>.*)$""")
_DEFINE = re.compile(r"^#\s*define\s+(?P<key>[A-Z][A-Z0-9_]{1,80})\s+(?P<rest>.+)$")
_KCONFIG = re.compile(r"^(?P<key>CONFIG_[A-Z0-9_]{1,80})=(?P<rest>.+)$")
# A module attribute without an operator (Elixir `@limit 20`, `@edit_window_seconds 15 * 60`).
_ATTRIBUTE = re.compile(r"^@(?P<key>[a-z_][A-Za-z0-9_]{0,80})\s+(?P<rest>[^\s=(\[{].*)$")
# A block's opening line: `key: {` / `"key": {` / `key = {` / `resource "a" "b" {` / `server {` / `key:` (YAML)
_BLOCK = re.compile(r"""^(?P<head>[A-Za-z_@$"'][\w.\-@$"' ]{0,120}?)\s*(?::|=)?\s*[{\[(]\s*$""")
_CALL_ARGS = re.compile(r"(?P<callee>[A-Za-z_]\w{0,60})\s*\((?P<args>(?:[^()\n]|\([^()\n]{0,80}\)){1,300})\)")
_NAMED_ARG = re.compile(r"(?:^|,)\s*(?P<key>[A-Za-z_]\w{0,60})\s*(?::|=)(?!=)\s*(?P<value>(?:[^,()]|\([^()]{0,80}\)){1,90})")
_CODE_CONSTANT = re.compile(r"^[A-Z][A-Z0-9_]{2,}$")  # SHOUTING_CASE: a constant, in any language


def _unquote(key: str) -> str:
    return key.strip().strip("\"'").strip()


def _clean_key(key: str) -> str:
    """A key as a path segment: `servers["api"]` → servers.api, `this.timeout` → timeout, `$config` → config."""
    key = re.sub(r"\[[\"']?([\w.\-]+)[\"']?\]", r".\1", _unquote(key))
    key = re.sub(r"^(?:this|self|cls|@|\$)\.?", "", key).lstrip("@$")
    return key.strip(".")


def settings_of(path: str, text: str) -> dict[str, Setting]:
    """Every setting `text` (the whole file at `path`) gives a value, by its key path."""
    if is_secret_file(path):
        return {}
    text = text[:MAX_SCANNED_CHARS]
    config = is_config(path)
    if path.lower().endswith((".json", ".jsonc", ".json5")) or (not path and text.lstrip().startswith("{")):
        parsed = _json_settings(text)
        if parsed is not None:
            return parsed
    return _line_settings(text, config, indented=path.lower().endswith(INDENTED))


def _json_settings(text: str) -> dict[str, Setting] | None:
    try:
        data = json.loads(text)
    except ValueError:
        return None  # JSON with comments: read line by line
    found: dict[str, Setting] = {}

    def walk(value: object, trail: list[str], depth: int) -> None:
        if len(found) >= MAX_SETTINGS * 4 or depth > MAX_DEPTH:
            return
        if isinstance(value, dict):
            for key, inner in value.items():
                walk(inner, [*trail, str(key)], depth + 1)
        elif not isinstance(value, list) and trail and not is_secret_name(trail[-1]) and \
                not (isinstance(value, str) and ("[REDACTED" in value or "[private]" in value)):
            shown = json.dumps(value, ensure_ascii=False) if isinstance(value, str) else \
                json.dumps(value).lower() if isinstance(value, bool) or value is None else str(value)
            if len(shown) <= MAX_VALUE_CHARS:
                key = ".".join(trail)
                found[key] = Setting(key, shown, f'"{trail[-1]}": {shown}')

    walk(data, [], 0)
    return found


def _line_settings(text: str, config: bool, indented: bool) -> dict[str, Setting]:
    found: dict[str, Setting] = {}
    stack: list[tuple[int, str]] = []  # (indent, or bracket depth, of the block; its key)
    section = ""  # a TOML / INI section
    depth = 0  # open brackets
    for number, raw in enumerate(text.splitlines()):
        if len(found) >= MAX_SETTINGS * 4 or number >= MAX_LINES:
            break
        line = raw.strip()
        if not line or len(raw) > MAX_LINE_CHARS or line.startswith(_COMMENT_LINE):
            continue
        if line.startswith(("#define", "# define")):
            match = _DEFINE.match(line)
            if match:
                _keep(found, [match.group("key")], match.group("rest"), line, config=True)
            continue
        indent = len(raw) - len(raw.lstrip())
        if indented:
            while stack and stack[-1][0] >= indent:
                stack.pop()
            line = line[2:].lstrip() if line.startswith("- ") else line  # a list item's first key
        header = _SECTION.match(line) if not indented else None
        if header and "=" not in line:
            section = ".".join(_clean_key(part) for part in header.group(1).replace('" "', ".").split(".")
                               if _clean_key(part))
            stack, depth = [], 0
            continue
        body = _TRAILING_COMMENT.sub("", line)
        closing = body.count("}") + body.count("]") + body.count(")")
        opening = body.count("{") + body.count("[") + body.count("(")
        trail = ([section] if section else []) + [key for _, key in stack]
        kconfig = _KCONFIG.match(body) or (_ATTRIBUTE.match(body) if not config else None)
        match = kconfig or _KEY.match(body)
        if match and not body.startswith(("}", "]", ")")):
            key, rest = _clean_key(match.group("key")), match.group("rest")
            op = match.groupdict().get("op") or "="
            value = rest.strip()
            if indented and op == ":" and not value:
                stack.append((indent, key))  # `database:` opens a block
                continue
            if not indented and value.rstrip(",;").rstrip() in ("{", "[", "(", "= {", "({"):
                stack.append((depth, key))
            elif not indented and value.endswith(("{", "[", "({")) and value.count("{") > value.count("}"):
                stack.append((depth, key))  # `key = Options {` / `server: defineServer({`
            elif not (key and (config or op != ":" or _CODE_CONSTANT.match(key) or "." in key or depth > 0) and
                      _keep(found, [*trail, key], value, body, config=config, strict=not config and op == ":")):
                _named_args(found, trail, body, config)
        elif not indented:
            block = _BLOCK.match(body)
            if block and opening > closing:
                head = ".".join(_clean_key(part) for part in block.group("head").split() if _clean_key(part))
                stack.append((depth, head or "_"))
            else:
                _named_args(found, trail, body, config)
        if not indented:
            depth = max(0, depth + opening - closing)
            while stack and stack[-1][0] >= depth:
                stack.pop()
    return found


def _named_args(found: dict[str, Setting], trail: list[str], body: str, config: bool) -> None:
    """`.EnableRetryOnFailure(maxRetryCount: 6, maxRetryDelay: …)`: each literal argument under its call's name."""
    if "(" not in body:
        return
    for call in _CALL_ARGS.finditer(body):
        for arg in _NAMED_ARG.finditer(call.group("args")):
            _keep(found, [*trail, call.group("callee"), arg.group("key")], arg.group("value"),
                  f"{arg.group('key')}: {arg.group('value').strip()}", config=False)


def _keep(found: dict[str, Setting], trail: list[str], value: str, line: str, *, config: bool,
          strict: bool = False) -> bool:
    """Keep a setting (True), unless its name is a secret's or its value no literal."""
    key = trail[-1] if trail else ""
    if not key or is_secret_name(key) or len(found) >= MAX_SETTINGS * 4:
        return False
    kept = literal(value, config) if "[REDACTED" not in value and "[private]" not in value else None
    if kept is None or (strict and not re.search(r"\d", kept) and not _CODE_CONSTANT.match(key)):
        return False  # in code, `name: value` is a property; kept when it holds a number (or names a constant)
    path = ".".join(part for part in trail if part)
    found[path] = Setting(path, kept, line.strip()[:MAX_LINE_CHARS])
    return True


def changed(path: str, new: str, old: str = "") -> list[tuple[Setting, str]]:
    """The settings `new` (the file after a write) gives a value `old` (before) did not: new keys, new values; each
    with the value it had before ("" for a new key)."""
    before = settings_of(path, old) if old else {}
    after = settings_of(path, new)
    found = [(setting, before[key].value if key in before else "") for key, setting in after.items()
             if key not in before or before[key].value != setting.value]
    return found[:MAX_SETTINGS]
