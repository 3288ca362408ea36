"""Privacy filters applied before any text touches disk. Standard library only.

Two jobs:
- `strip_private` drops `<private>…</private>` spans (an unclosed tag hides the rest);
- `redact` replaces secrets (cloud keys, tokens, JWTs, PEM keys, credential assignments,
  Authorization headers, passwords in URLs) with `[REDACTED:<kind>]`.

Both are idempotent, so the hook client (spool), the worker (database) and the logger
can all apply them without coordinating.
"""

from __future__ import annotations

import re

PRIVATE_SPAN = re.compile(r"<private>.*?(?:</private>|\Z)", re.IGNORECASE | re.DOTALL)
PRIVATE_PLACEHOLDER = "[private]"

# (kind, pattern, group to replace or 0 for the whole match). Order matters: specific before generic.
# A flag's or an argument's value: a word (not a $VAR, not another flag) or a quoted string.
_VALUE = r"([^\s\-'\"$][^\s'\"]*|'[^'\n]+'|\"(?!\$)[^\"\n]+\")"
# What names a secret in prose.
_SECRET_WORD = r"(?:password|passphrase|passcode|passwd|pwd|pw|pin|secret|token|api[ _\-]?key|access[ _\-]?key)"
# A secret stated in prose: quoted, or a word with a digit, a capital inside or a symbol ("the password is stored
# in vault" stays).
# Bounded (a secret is a few hundred characters at most): an unbounded run, tried at every position of a long word,
# made a 5 MB payload cost minutes.
_STATED_VALUE = (r"((?-i:[\"'`][^\"'`\n]{3,512}[\"'`]|(?=\S{0,512}?(?:\d|[a-z][A-Z]|[^\w\s.,;:!?'\"`()]))"
                 r"[^\s,;'\"`()]{4,512}(?<![.!?])))")

_SECRET_PATTERNS: list[tuple[str, re.Pattern[str], int]] = [
    (
        "private-key",
        re.compile(
            r"-----BEGIN[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----.*?(?:-----END[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|\Z)",
            re.DOTALL,
        ),
        0,
    ),
    ("anthropic-key", re.compile(r"\bsk-ant-[A-Za-z0-9_\-]{16,}"), 0),
    ("openai-key", re.compile(r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,}"), 0),
    ("aws-access-key", re.compile(r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA|ABIA|ACCA)[A-Z0-9]{16}\b"), 0),
    (
        "aws-secret-key",
        re.compile(r"(?i)(aws_?secret_?(?:access_?)?key\W{0,3}\s*[=:]\s*[\"']?)([A-Za-z0-9/+=]{40})"),
        2,
    ),
    ("github-token", re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{30,255}|github_pat_[A-Za-z0-9_]{22,255})\b"), 0),
    ("gitlab-token", re.compile(r"\bgl(?:pat|dt|ptt|rt|cbt|imt|oas)-[A-Za-z0-9_\-]{20,}"), 0),
    ("slack-token", re.compile(r"\bxox[abposr]-[A-Za-z0-9\-]{10,}"), 0),
    ("slack-webhook", re.compile(r"https://hooks\.slack\.com/(?:services|workflows)/[A-Za-z0-9/_\-]+"), 0),
    ("google-api-key", re.compile(r"\bAIza[0-9A-Za-z_\-]{35}\b"), 0),
    ("stripe-key", re.compile(r"\b(?:[rs]k_(?:live|test)_[A-Za-z0-9]{20,}|whsec_[A-Za-z0-9]{24,})\b"), 0),
    ("sendgrid-key", re.compile(r"\bSG\.[A-Za-z0-9_\-]{16,}\.[A-Za-z0-9_\-]{16,}"), 0),
    ("twilio-key", re.compile(r"\b(?:SK|AC)[0-9a-f]{32}\b"), 0),
    ("mailgun-key", re.compile(r"\bkey-[0-9a-zA-Z]{32}\b"), 0),
    ("npm-token", re.compile(r"\bnpm_[A-Za-z0-9]{36}\b"), 0),
    ("pypi-token", re.compile(r"\bpypi-[A-Za-z0-9_\-]{50,}"), 0),
    ("huggingface-token", re.compile(r"\bhf_[A-Za-z0-9]{30,}\b"), 0),
    ("digitalocean-token", re.compile(r"\bdo[opr]_v1_[a-f0-9]{64}\b"), 0),
    ("discord-webhook", re.compile(r"https://(?:ptb\.|canary\.)?discord(?:app)?\.com/api/webhooks/\d+/[A-Za-z0-9_\-]+"), 0),
    ("jwt", re.compile(r"\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}"), 0),
    (
        "authorization",
        re.compile(
            r"(?i)((?:proxy-)?authorization[\"']?\s*[:=]\s*[\"']?(?:(?:bearer|basic|token|digest|bot)\s+)?)"
            r"([^\s\"',;]{4,})"
        ),
        2,
    ),
    (
        "api-key-header",
        re.compile(r"(?i)((?:x-api-key|api-key|x-auth-token|x-access-token)[\"']?\s*[:=]\s*[\"']?)([^\s\"',;]{4,})"),
        2,
    ),
    # (a password already masked as *** by database_url.masked is left as it is: one masking form everywhere)
    ("url-password", re.compile(r"(?i)(\b[a-z][a-z0-9+.\-]*://[^\s:/@\"']*:)(?!\*\*\*@)([^\s@/\"']{1,})(?=@)"), 2),
    # mysql -pSECRET (glued: "-p SECRET" with a space prompts, and the next word is a database name)
    ("cli-password", re.compile(r"(\b(?:mysql|mysqldump|mysqladmin|mariadb|mariadb-dump)\b[^\n|;&]*?\s-p)"
                                r"([^\s\-'\"$][^\s'\"]*|'[^'\n]+'|\"[^\"\n]+\")"), 2),
    # docker/podman/helm/sshpass -p SECRET, curl -u user:SECRET
    ("cli-password", re.compile(r"(\b(?:(?:docker|podman|nerdctl|buildah|skopeo|oras)\s+login|helm\s+registry\s+login|"
                                r"sshpass)\b[^\n|;&]*?\s-p(?:\s+|=))([^\s\-'\"$][^\s'\"]*|'[^'\n]+'|\"[^\"\n]+\")"), 2),
    ("cli-password", re.compile(r"(\b(?:curl|wget|http|https|xh)\b[^\n|;&]*?(?:\s-u\s*|\s--user[=\s]+)['\"]?[^\s:'\"]+:)"
                                r"((?!\$)[^\s'\"@]+)"), 2),
    # --password VALUE, --token=VALUE, --api-key VALUE … (not --password-file, --password-stdin or $VARS)
    ("cli-secret-flag", re.compile(r"(?i)(\s--(?:[a-z0-9]+-)*(?:password|passwd|pass|passphrase|token|api-?key|secret|"
                                   r"client-secret|auth-token|access-token|access-key|secret-key|secret-string)(?:=|\s+))"
                                   r"([^\s\-'\"$][^\s'\"]*|'[^'\n]+'|\"[^\"\n]+\")"), 2),
    # -storepass X, -keypass X, -srcstorepass X (JVM key tools), -passin pass:X, -passout pass:X (openssl), -password X
    # (not -storepass:env VAR, -passin file:PATH, fd:N, stdin)
    ("cli-password", re.compile(r"(\s-(?:src|dest|new|old)?(?:store|key)?pass(?:word|phrase|wd|in|out)?(?:\s+|=|:)"
                                r"(?!file:|env\b|env:|fd:|stdin\b)(?:pass:)?)" + _VALUE), 2),
    # the short password flag of one tool: redis-cli -a, mongosh -p, ldapsearch -w, sqlcmd -P, 7z -pX, openssl enc -k,
    # az login -p, doctl -t, gh secret set --body, smbclient -U user%X
    ("cli-password", re.compile(r"(\b(?:redis-cli\b[^\n|;&]*?\s-a|mongo(?:sh|dump|restore|import|export)?\b[^\n|;&]*?\s-p|"
                                r"ldap\w*\b[^\n|;&]*?\s-w|(?:sqlcmd|bcp|osql|zip|unzip|zipcloak)\b[^\n|;&]*?\s-P|"
                                r"openssl\b[^\n|;&]*?\s-k|az\s+login\b[^\n|;&]*?\s(?:-p|--password)|"
                                r"doctl\b[^\n|;&]*?\s-t|gh\s+secret\s+set\b[^\n|;&]*?\s(?:--body|-b)|"
                                r"aws\s+(?:ssm\s+put-parameter|secretsmanager\s+\S+)\b[^\n|;&]*?\s--value)(?:\s+|=))"
                                + _VALUE), 2),
    ("cli-password", re.compile(r"(\b7z[az]?\b[^\n|;&]*?\s-p)([^\s\-'\"$][^\s'\"]*)"), 2),
    ("cli-password", re.compile(r"(\bsmbclient\b[^\n|;&]*?\s-U\s*['\"]?[^\s%'\"]+%)([^\s'\"]+)"), 2),
    # a secret as a positional argument: htpasswd -b FILE USER X, rabbitmqctl add_user USER X, vault login X,
    # aws configure set aws_secret_access_key X, netlify env:set NAME X, doppler secrets set NAME X
    ("cli-password", re.compile(r"(\bhtpasswd\s+(?:-\w+\s+)*-\w*b\w*\s+(?:-\w+\s+)*\S+\s+\S+\s+)" + _VALUE), 2),
    ("cli-password", re.compile(r"(\brabbitmqctl\s+(?:add_user|change_password)\s+\S+\s+)" + _VALUE), 2),
    ("cli-secret", re.compile(r"(\bvault\s+login\s+)(?!-)([^\s'\"$][^\s'\"]{7,})"), 2),
    ("cli-secret", re.compile(r"(?i)(\baws\s+configure\s+set\s+\S*(?:secret|token|password)\S*\s+)" + _VALUE), 2),
    ("cli-secret", re.compile(r"(\b(?:netlify\s+env:set|doppler\s+secrets\s+set|railway\s+variables\s+set|"
                              r"vercel\s+env\s+add)\s+[A-Za-z_][\w.]*\s+)" + _VALUE), 2),
    # user/password@ in Oracle's JDBC URLs and sqlplus logins
    ("url-password", re.compile(r"(jdbc:oracle:\w+:@?[^\s/@:'\"]+/)([^\s@'\"]+)(?=@)"), 2),
    ("url-password", re.compile(r"(\bsqlplus\s+(?:-\S+\s+)*[^\s/@'\"]+/)([^\s@'\"]+)"), 2),
    # prose: "changed the db password to X", "use X as the password", "with password X", "creds are deploy / X",
    # "password X", "the vpn pw's X" (a value with a digit, a capital inside or a symbol, or quoted)
    ("stated-secret", re.compile(r"(?i)(\b(?:set|changed|reset|updated|rotated)\s+(?:[\w\-]+\s+){0,4}?" + _SECRET_WORD
                                 + r"\s+to\s+)" + _STATED_VALUE), 2),
    ("stated-secret", re.compile(r"(?<![^\s\"'`(])" + _STATED_VALUE
                                 + r"(?=\s+as\s+(?:the|my|our|your)\s+(?:[\w\-]+\s+){0,2}?"
                                 r"(?i:password|passphrase|passcode|pin|token|secret|api key)"
                                 r"(?=\s*(?:$|[.,;:!?)]|\s(?:for|of|on|to|in|at)\b)))"), 1),
    ("stated-secret", re.compile(r"(?i)(\b(?:creds|credentials|login)\b(?:\s+(?:for|of|to|on)(?:\s+[\w.\-]+){1,4}?)?"
                                 r"\s*(?:are|is|:|=)?\s*[\w.@\-]+\s*[/:]\s*)" + _STATED_VALUE), 2),
    # "user admin, pass Hunt3r2", "login deploy password Tr0ub4dor", "usr: ci / pw: s3cr3t!": a user named, then
    # its password under any short name ("pass" alone is a password only right after a user)
    ("stated-secret", re.compile(r"(?i)(\b(?:user(?:name)?|login|usr|account)\s*(?:is\s+|:|=)?\s*[\w.@+\-]+\s*[,;/]?\s*"
                                 r"(?:and\s+|with\s+)?(?:(?:the|its|their)\s+)?(?:pass(?:word)?|passwd|passphrase|pwd|pw)"
                                 r"(?:\s+is|'s|’s)?\s*[:=]?\s*)(?![\d,.]+(?:\s|$))" + _STATED_VALUE), 2),
    ("stated-secret", re.compile(r"(?i)(\b(?:with\s+(?:the\s+)?)?(?:password|passwd|passphrase|pw|pwd)(?:'s|’s)?\s+)"
                                 r"(?!is\b|was\b)" + _STATED_VALUE), 2),
    (
        "credential",
        re.compile(
            r"(?i)((?<![A-Za-z0-9])[A-Za-z0-9_.\-]*(?:password|passwd|pwd|passphrase|secret|token|api[_\-]?key|_pass|"
            r"access[_\-]?key|private[_\-]?key|client[_\-]?secret|auth[_\-]?key|credentials?)[\"']?"
            r"\s*(?:=|:=|:|=>)\s*)(\"[^\"\n]*\"|'[^'\n]*'|(?=([^\s,;&)}\]]+))\3(?<!:)(?!\s*=))"
            # (the lookahead + backreference takes the whole word or nothing: a word that is itself a key,
            # "credentials: TOKEN: x", is left for the match that starts at it)
        ),
        2,
    ),
    # SENDGRID_KEY=…, stripe_key: … — a *_key is a secret when its value looks like one (not primary_key: id)
    ("credential", re.compile(r"(?i)((?<![A-Za-z0-9])[A-Za-z0-9_.\-]*_key[\"']?\s*(?:=|:=|:|=>)\s*[\"']?)"
                              r"((?-i:(?=[\w\-./+=]*\d)(?=[\w\-./+=]*[A-Z])(?=[\w\-./+=]*[a-z])[\w\-./+=]{16,}"
                              r"|[a-fA-F0-9]{24,}))"), 2),
    # prose: "the prod db password is CorrectHorse42", "my api key for staging is …" (a value with a digit, a
    # capital inside or a symbol, or in quotes: "the password is stored in vault" stays)
    ("stated-secret", re.compile(
        r"(?i)(\b(?:password|passphrase|passcode|passwd|pwd|secret|token|api[ _\-]?key|access[ _\-]?key|pin)"
        r"(?:\s+(?:for|of|to|on|in)(?:\s+[\w.\-]+){1,4}?)?\s+(?:is|was|=|:|is now|set to|changed to)\s+)"
        r"((?-i:[\"'`][^\"'`\n]{3,}[\"'`]|(?=\S*(?:\d|[a-z][A-Z]|[^\w\s.,;:!?'\"`()]))[^\s,;'\"`()]{4,}(?<![.!?])))"), 2),
]

# KEY=VALUE lines of dotenv files: every value is treated as secret.
_ENV_LINE = re.compile(r"(?m)^(\s*(?:export\s+)?[A-Za-z_][A-Za-z0-9_.\-]*\s*=\s*)(.+?)\s*$")
_ENV_FILE_NAME = re.compile(r"(?:^|[/\\])\.env(?:\.[A-Za-z0-9_.\-]+)?$|(?:^|[/\\])[^/\\]*\.env$")
_ENV_FILE_IN_COMMAND = re.compile(r"(?:^|[\s/\"'=<])\.env(?:\.[A-Za-z0-9_\-]+)?(?=$|[\s\"';|&>)])")


def _marker(kind: str) -> str:
    return f"[REDACTED:{kind}]"


def strip_private(text: str) -> str:
    """Remove `<private>` spans entirely; their content is never stored anywhere."""
    if "<private" not in text.lower():
        return text
    return PRIVATE_SPAN.sub(PRIVATE_PLACEHOLDER, text)


def _replace(kind: str, group: int):
    marker = _marker(kind)

    def sub(match: re.Match[str]) -> str:
        if group == 0:
            return marker
        value = match.group(group)
        if value.strip("'\"").startswith("[REDACTED:") or value == PRIVATE_PLACEHOLDER:
            return match.group(0)  # already redacted: keep idempotent
        quote = value[0] if value[:1] in ("'", '"') and value[-1:] == value[:1] and len(value) > 1 else ""
        start, end = match.span(group)
        base = match.start(0)
        whole = match.group(0)
        return whole[: start - base] + f"{quote}{marker}{quote}" + whole[end - base :]

    return sub


def redact(text: str) -> str:
    """Replace every secret found in `text` with a `[REDACTED:<kind>]` marker."""
    if not text:
        return text
    for kind, pattern, group in _SECRET_PATTERNS:
        text = pattern.sub(_replace(kind, group), text)
    return text


def secret_kinds(text: str) -> list[str]:
    """The kinds of secret `redact` would take out of `text` (none: it is clean), e.g. ["aws-key"]."""
    before = set(re.findall(r"\[REDACTED:([\w-]+)\]", text or ""))
    after = re.findall(r"\[REDACTED:([\w-]+)\]", redact(text or ""))
    found = [kind for kind in after if kind not in before] if redact(text or "") != (text or "") else []
    return list(dict.fromkeys(found))


def is_env_file(path: str) -> bool:
    """True for dotenv files (`.env`, `.env.local`, `prod.env`): all their values are secrets."""
    return bool(path) and bool(_ENV_FILE_NAME.search(path))


def mentions_env_file(command: str) -> bool:
    """True when a shell command reads or writes a dotenv file (e.g. `cat .env`)."""
    return bool(command) and bool(_ENV_FILE_IN_COMMAND.search(command))


def redact_env_values(text: str) -> str:
    """Blank out the value of every KEY=VALUE line (for content of dotenv files)."""
    return _ENV_LINE.sub(lambda m: m.group(1) + _marker("env-value"), text)


def clean(text: str) -> str:
    """Everything a captured string goes through before storage: private spans, then secrets."""
    return redact(strip_private(text))


def clean_tree(value, _depth: int = 0):
    """Apply `clean` to every string inside a JSON-like value (dict keys included)."""
    if isinstance(value, str):
        return clean(value)
    if _depth > 64:
        return None
    if isinstance(value, dict):
        return {clean(str(k)): clean_tree(v, _depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [clean_tree(v, _depth + 1) for v in value]
    return value


def _map_strings(value, fn, _depth: int = 0):
    if isinstance(value, str):
        return fn(value)
    if _depth > 64:
        return None
    if isinstance(value, dict):
        return {k: _map_strings(v, fn, _depth + 1) for k, v in value.items()}
    if isinstance(value, list):
        return [_map_strings(v, fn, _depth + 1) for v in value]
    return value


def touches_env_file(payload: dict) -> bool:
    """Does this tool event read, write or print a dotenv file?"""
    tool_input = payload.get("tool_input")
    if not isinstance(tool_input, dict):
        return False
    for key in ("file_path", "path", "notebook_path"):
        if isinstance(tool_input.get(key), str) and is_env_file(tool_input[key]):
            return True
    command = tool_input.get("command")
    return isinstance(command, str) and mentions_env_file(command)


def clean_payload(payload: dict) -> dict:
    """A whole hook payload made safe to write down (the spool): secrets and private spans in every
    string, and every value of a dotenv file a tool touched."""
    cleaned = clean_tree(payload)
    if touches_env_file(payload):
        for key in ("tool_input", "tool_response", "error"):
            if key in cleaned:
                cleaned[key] = _map_strings(cleaned[key], redact_env_values)
    return cleaned
