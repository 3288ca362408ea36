"""What a secret is: recall's one privacy policy, in one place. Standard library only.

Three kinds of secret, each known by one rule here and nowhere else:

- a value of a known shape (cloud keys, tokens, JWTs, PEM keys, passwords in URLs and on command lines,
  a password stated in prose): `SECRET_PATTERNS`;
- the value of a setting whose name says it is a secret, in any casing, separator or abbreviation
  (`db_admin_pw`, `smtpPw`, `MYSQL_ROOT_PW`, `vpn_psk`, `license_key`, `client-secret`): `is_secret_name`;
- every value of a file that holds secrets (`.env*`, `*.tfvars`, credentials files, keys, a Kubernetes
  `kind: Secret`): `is_secret_file`, `is_secret_manifest`.

shared/redact.py applies the policy to a hook's whole payload before anything touches disk (the spool, the
database); core/knowledge/ asks `is_secret_name` and `is_secret_file` before a setting becomes a fact.
"""

from __future__ import annotations

import re

# --- names ---------------------------------------------------------------------------------------------------------

# A setting is a secret when the last word of its name is one of these ...
SECRET_WORDS = frozenset("""
password passwd passphrase passcode pass pw pwd psk secret token apikey credential credentials creds cred privatekey
salt pepper cookie otp totp
""".split())
# ... unless it counts or measures them (`max_token`, `token_count` ends otherwise anyway).
_MEASURES = frozenset("max min num count number limit length len size".split())
# ... or its last two words are "<one of these> key" (api key, licence key, private key, ...).
KEY_QUALIFIERS = frozenset("""
api license licence private access secret client auth session signing encryption encrypt master account app service
deploy ssh gpg pgp jwt hmac webhook consumer shared storage subscription product registration activation serial
""".split())
# Words a name may end in after the secret's own (`PASSWORD_PROD`, `token_v2`, `apiKeyStaging`, `db_password_2`).
_NAME_SUFFIXES = frozenset("""
v prod production staging stage stg dev development test testing qa uat local old new previous next current backup
primary secondary main default live sandbox ci internal external pem der b64 base64 base hash phrase value
""".split())
# A name may also start with the secret's word (`PASSWORD_ADMIN`, `TOKEN_GITHUB`), unless a word of it says it names
# something about the secret, not the secret (`password_min_length`, `token_ttl`, `PASSWORD_FILE`, `token_endpoint`).
_LEADING_SECRET_WORDS = frozenset("password passwd passphrase secret token apikey pw pwd psk credentials creds".split())
_ABOUT_A_SECRET = frozenset("""
ttl expiry expiration expires lifetime timeout length len size count limit max min budget policy rotation days hours
minutes seconds url uri path file dir endpoint header type name enabled required env var field label prefix regex
pattern hint reset strength rules manager store provider source id
""".split())
# A name written as one lowercase word still ends in one of these (`dbpassword`, `authtoken`).
_SECRET_ENDINGS = ("password", "passwd", "passphrase", "secret", "token", "apikey", "credentials", "privatekey")
_NAME_WORDS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")
# A piece every secret's name holds (SECRET_WORDS, KEY_QUALIFIERS' "… key", _SECRET_ENDINGS): only a name around one
# of these is looked at (most texts name no secret, and a file of settings has a name on every line).
MAYBE_SECRET_NAME = re.compile(r"pass|pw|psk|secret|token|key|cred|salt|pepper|cookie|otp", re.IGNORECASE)


def name_words(name: str) -> list[str]:
    """A setting's name as lowercase words: `smtpPw` → [smtp, pw], `MYSQL_ROOT_PW` → [mysql, root, pw]."""
    return [word.lower() for word in _NAME_WORDS.findall(name[-120:])]


def is_secret_name(name: str) -> bool:
    """Does this name (a setting, a variable, a JSON key) say that its value is a secret?"""
    found = name_words(name)
    while len(found) > 1 and (found[-1].isdigit() or found[-1] in _NAME_SUFFIXES):
        found.pop()
    last = found[-1] if found else ""
    if found and found[0] in _MEASURES:
        return False
    if last in SECRET_WORDS or (len(last) > 6 and last.endswith(_SECRET_ENDINGS)):
        return True
    if last == "key" and len(found) > 1 and found[-2] in KEY_QUALIFIERS:
        return True
    return len(found) > 1 and found[0] in _LEADING_SECRET_WORDS and not _ABOUT_A_SECRET.intersection(found)


# One `name <op> value` of code, config or prose (`db_admin_pw = …`, `"smtpPw": …`, `export GRAFANA_ADMIN_PW=…`),
# looked at by its name (is_secret_name). The name starts at a word's start, or after a JVM's `-D` (a flag's
# `-storepass` is the command-line patterns' business); the value is one word up to a space or a quote (a password
# may hold `,;)]`: `Xy7;kP2]q` goes whole), or a quoted string, never a $VARIABLE or a key of its own ("credentials:
# TOKEN: x"). A lookahead: a match whose name is no secret's consumes nothing, so a
# secret's assignment inside another's value (`env: API_KEY=…`) is still seen.
NAMED_VALUE = re.compile(
    r"(?:(?<![\w.$@\-])|(?<=\s-D))(?=(?P<name>[A-Za-z_][\w.\-]{0,100}?)[\"']?[ \t]*(?::=|=>|=|:)[ \t]*"
    r"(?P<value>\"[^\"\n]*\"|'[^'\n]*'|(?![$\"'])(?=(?P<word>[^\s\"'`&]+))(?P=word)(?<!:)(?![ \t]*=)))")


# The same in words: "the vpn_psk is Psk-…", "smtpPw is now …" (a value shaped like a secret: quoted, or with a digit,
# a capital inside or a symbol; "the db_password is rotated monthly" stays).
NAMED_IN_WORDS = re.compile(
    r"(?<![\w.$@\-])(?=(?P<name>[A-Za-z_][\w.\-]{0,100}?)[ \t]+(?:is|was|is now|was set to|set to|changed to)[ \t]+"
    r"(?P<value>[\"'`][^\"'`\n]{3,512}[\"'`]|(?=\S{0,512}?(?:\d|[a-z][A-Z]|[^\w\s.,;:!?'\"`()]))"
    r"(?=(?P<word>[^\s,;'\"`()]{4,512}))(?P=word)(?<![.!?])))")


def is_secret_assignment(match: re.Match[str]) -> bool:
    """A NAMED_VALUE match whose value is a secret: a secret's name, and a value that is one (not `name: {` opening
    a block, not a `${VARIABLE}`)."""
    value = match.group("value")
    if value in ("{", "[", "|", ">", '""', "''") or value.strip("'\"").startswith("$"):
        return False
    return is_secret_name(match.group("name"))


# --- files ---------------------------------------------------------------------------------------------------------

# Files whose every value is a secret until shown otherwise: dotenv files, Terraform variable files, credentials,
# keys and keystores, password files, and files named for secrets.
_SECRET_FILE = re.compile(
    r"(?:^|[/\\])(?:\.env(?:\.[\w.\-]+|rc)?|[^/\\]*\.env|[^/\\]*\.tfvars(?:\.json)?|[^/\\]*\.tfstate(?:\.backup)?|"
    r"credentials(?:\.\w+)?|"
    r"[^/\\]*\.(?:pem|key|p12|pfx|jks|keystore|ppk)|id_(?:rsa|dsa|ecdsa|ed25519)|[._]netrc|\.pgpass|\.npmrc|"
    r"\.pypirc|\.htpasswd|\.git-credentials|[^/\\]*secrets?\.(?:ya?ml|json|toml|ini|conf|properties))$",
    re.IGNORECASE)
_PATH_TOKEN = re.compile(r"[^\s\"'`;|&<>()=]+")
# A Kubernetes Secret manifest (YAML or JSON): the values of its data and stringData are secrets.
_SECRET_KIND = re.compile(r"(?m)^[ \t]*[\"']?kind[\"']?[ \t]*:[ \t]*[\"']?Secret[\"']?[ \t]*,?[ \t]*$")


def is_secret_file(path: str) -> bool:
    """Does this file hold secrets by what it is (`.env.local`, `prod.tfvars`, `~/.aws/credentials`, `id_rsa`)?"""
    return bool(path) and len(path) < 4096 and bool(_SECRET_FILE.search(path.strip().rstrip("/\\")))


def secret_files_in(command: str) -> bool:
    """Does a shell command name a secret file (`cat .env`, `cat .env*`, `terraform plan -var-file=prod.tfvars`), or
    print secrets from a store of them (`kubectl get secret … | base64 -d`, `vault kv get`, `sops -d`)?"""
    if not command:
        return False
    command = command[:20_000]
    return bool(_PRINTS_SECRETS.search(command)) or any(is_secret_file(token.rstrip("*?")) for token in
                                                        _PATH_TOKEN.findall(command))


# Commands that print what a store of secrets holds.
_PRINTS_SECRETS = re.compile(
    r"\bkubectl\b[^\n|;&]{0,200}?\b(?:get|describe|edit|view-secret)\s+(?:-\S+\s+)*secrets?\b|"
    r"\bvault\s+(?:kv\s+get|read)\b|\baws\s+secretsmanager\s+get-secret-value\b|"
    r"\bgcloud\s+secrets\s+versions\s+access\b|\baz\s+keyvault\s+secret\s+show\b|\bop\s+(?:read|item\s+get)\b|"
    r"\bdoppler\s+secrets\b|\bsops\s+(?:-d|--decrypt)\b|\bcat\s+[^\n|;&]{0,200}?\.tfstate\b")


def is_secret_manifest(text: str) -> bool:
    """Is this text (or one document of it) a Kubernetes Secret?"""
    return "Secret" in text and bool(_SECRET_KIND.search(text))


# --- values of known shapes ----------------------------------------------------------------------------------------

# Order matters: specific before generic.
# A flag's or an argument's value: a word (not a $VAR, not another flag) or a quoted string.
_VALUE = r"([^\s\-'\"$][^\s'\"]*|'[^'\n]+'|\"(?!\$)[^\"\n]+\")"
# What names a secret in prose.
# What names a secret in prose: a secret's word (SECRET_WORDS, a pin, a pass phrase) and what it is of it ("the otp
# seed", "the token value"), or "<qualifier> key" (KEY_QUALIFIERS): the same words as a setting's name.
_SECRET_WORD = (r"(?:(?:" + "|".join(sorted(SECRET_WORDS | {"pin", r"pass\s+phrase"}, key=len, reverse=True)) +
                r")(?:\s+(?:seed|hash|phrase|value|string|code))?|(?:" + "|".join(sorted(KEY_QUALIFIERS)) +
                r")[ _\-]?key)")
# A text holds one of these when it may name a secret in prose (the patterns' anchors).
_SECRET_WORD_ANCHORS = ("pass", "pw", "psk", "pin", "secret", "token", "key", "cred", "salt", "pepper", "cookie", "otp")
# A secret stated in prose: quoted, or a word with a digit, a capital inside or a symbol ("the password is stored
# in vault" stays).
# Bounded (a secret is a few hundred characters at most): an unbounded run, tried at every position of a long word,
# made a 5 MB payload cost minutes.
_STATED_VALUE = (r"((?-i:[\"'`][^\"'`\n]{3,512}[\"'`]|(?=\S{0,512}?(?:\d|[a-z][A-Z]|[^\w\s.,;:!?'\"`()]))"
                 r"[^\s,;'\"`()]{4,512}(?<![.!?])))")
# From a program's name to its password flag: the rest of its command line, bounded (from every "curl" or "http" of
# a one-line API answer, an unbounded look made a hook wait seconds).
_TO_FLAG = r"[^\n|;&]{0,300}?"

# (kind, pattern, group to replace or 0 for the whole match, anchors: lowercase pieces one of which a text must hold for
# the pattern to be tried at all; most texts hold none, and fifty patterns tried on 64 KB cost a hook its time).
SECRET_PATTERNS: list[tuple[str, re.Pattern[str], int, tuple[str, ...]]] = [
    (
        "private-key",
        re.compile(
            r"-----BEGIN[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----.*?(?:-----END[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|\Z)",
            re.DOTALL,
        ),
        0, ('private key',),
    ),
    ("anthropic-key", re.compile(r"\bsk-ant-[A-Za-z0-9_\-]{16,}"), 0, ('sk-ant-',)),
    ("openai-key", re.compile(r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,}"), 0, ('sk-',)),
    ("aws-access-key", re.compile(r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA|ABIA|ACCA)[A-Z0-9]{16}\b"),
        0, ('akia', 'asia', 'agpa', 'aida', 'aroa', 'anpa', 'anva', 'aipa', 'abia', 'acca')),
    (
        "aws-secret-key",
        re.compile(r"(?i)(aws_?secret_?(?:access_?)?key\W{0,3}\s*[=:]\s*[\"']?)([A-Za-z0-9/+=]{40})"),
        2, ('secret',),
    ),
    ("github-token", re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{30,255}|github_pat_[A-Za-z0-9_]{22,255})\b"),
        0, ('ghp_', 'gho_', 'ghu_', 'ghs_', 'ghr_', 'github_pat_')),
    ("gitlab-token", re.compile(r"\bgl(?:pat|dt|ptt|rt|cbt|imt|oas)-[A-Za-z0-9_\-]{20,}"),
        0, ('glpat-', 'gldt-', 'glptt-', 'glrt-', 'glcbt-', 'glimt-', 'gloas-')),
    ("slack-token", re.compile(r"\bxox[abposr]-[A-Za-z0-9\-]{10,}"), 0, ('xox',)),
    ("slack-webhook", re.compile(r"https://hooks\.slack\.com/(?:services|workflows)/[A-Za-z0-9/_\-]+"),
        0, ('hooks.slack.com',)),
    ("google-api-key", re.compile(r"\bAIza[0-9A-Za-z_\-]{35}\b"), 0, ('aiza',)),
    ("stripe-key", re.compile(r"\b(?:[rs]k_(?:live|test)_[A-Za-z0-9]{20,}|whsec_[A-Za-z0-9]{24,})\b"),
        0, ('sk_live_', 'sk_test_', 'rk_live_', 'rk_test_', 'whsec_')),
    ("sendgrid-key", re.compile(r"\bSG\.[A-Za-z0-9_\-]{16,}\.[A-Za-z0-9_\-]{16,}"), 0, ('sg.',)),
    ("twilio-key", re.compile(r"\b(?:SK|AC)[0-9a-f]{32}\b"), 0, ('sk', 'ac')),
    ("mailgun-key", re.compile(r"\bkey-[0-9a-zA-Z]{32}\b"), 0, ('key-',)),
    ("npm-token", re.compile(r"\bnpm_[A-Za-z0-9]{36}\b"), 0, ('npm_',)),
    ("pypi-token", re.compile(r"\bpypi-[A-Za-z0-9_\-]{50,}"), 0, ('pypi-',)),
    ("huggingface-token", re.compile(r"\bhf_[A-Za-z0-9]{30,}\b"), 0, ('hf_',)),
    ("digitalocean-token", re.compile(r"\bdo[opr]_v1_[a-f0-9]{64}\b"), 0, ('doo_v1_', 'dop_v1_', 'dor_v1_')),
    ("discord-webhook", re.compile(r"https://(?:ptb\.|canary\.)?discord(?:app)?\.com/api/webhooks/\d+/[A-Za-z0-9_\-]+"),
        0, ('discord',)),
    ("jwt", re.compile(r"\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}"), 0, ('eyj',)),
    (
        "authorization",
        re.compile(
            r"(?i)((?:proxy-)?authorization[\"']?\s*[:=]\s*[\"']?(?:(?:bearer|basic|token|digest|bot)\s+)?)"
            r"([^\s\"',;]{4,})"
        ),
        2, ('authorization',),
    ),
    (
        "api-key-header",
        re.compile(r"(?i)((?:x-api-key|api-key|x-auth-token|x-access-token)[\"']?\s*[:=]\s*[\"']?)([^\s\"',;]{4,})"),
        2, ('api-key', 'auth-token', 'access-token'),
    ),
    # (a password already masked as *** by database_url.masked is left as it is: one masking form everywhere)
    ("url-password", re.compile(r"(?i)(\b[a-z][a-z0-9+.\-]*://[^\s:/@\"']*:)(?!\*\*\*@)([^\s@/\"']{1,})(?=@)"), 2, ('://',)),
    # mysql -pSECRET (glued: "-p SECRET" with a space prompts, and the next word is a database name)
    ("cli-password", re.compile(r"(\b(?:mysql|mysqldump|mysqladmin|mariadb|mariadb-dump)\b" + _TO_FLAG + r"\s-p)"
                                r"([^\s\-'\"$][^\s'\"]*|'[^'\n]+'|\"[^\"\n]+\")"), 2, ('mysql', 'mariadb')),
    # docker/podman/helm/sshpass -p SECRET, curl -u user:SECRET
    ("cli-password", re.compile(r"(\b(?:(?:docker|podman|nerdctl|buildah|skopeo|oras)\s+login|helm\s+registry\s+login|"
                                r"sshpass)\b" + _TO_FLAG + r"\s-p(?:\s+|=))([^\s\-'\"$][^\s'\"]*|'[^'\n]+'|\"[^\"\n]+\")"),
                                    2, ('login', 'sshpass')),
    ("cli-password", re.compile(r"(\b(?:curl|wget|http|https|xh)\b" + _TO_FLAG + r"(?:\s-u\s*|\s--user[=\s]+)"
                                r"['\"]?[^\s:'\"]+:)((?!\$)[^\s'\"@]+)"), 2, ('curl', 'wget', 'http', 'xh')),
    # --password VALUE, --token=VALUE, --api-key VALUE … (not --password-file, --password-stdin or $VARS)
    ("cli-secret-flag", re.compile(r"(?i)(\s--(?:[a-z0-9]+-)*(?:password|passwd|pass|passphrase|token|api-?key|secret|"
                                   r"client-secret|auth-token|access-token|access-key|secret-key|secret-string)(?:=|\s+))"
                                   r"([^\s\-'\"$][^\s'\"]*|'[^'\n]+'|\"[^\"\n]+\")"), 2, ('--',)),
    # -storepass X, -keypass X, -srcstorepass X (JVM key tools), -passin pass:X, -passout pass:X (openssl), -password X
    # (not -storepass:env VAR, -passin file:PATH, fd:N, stdin)
    ("cli-password", re.compile(r"(\s-(?:src|dest|new|old)?(?:store|key)?pass(?:word|phrase|wd|in|out)?(?:\s+|=|:)"
                                r"(?!file:|env\b|env:|fd:|stdin\b)(?:pass:)?)" + _VALUE), 2, ('pass',)),
    # the short password flag of one tool: redis-cli -a, mongosh -p, ldapsearch -w, sqlcmd -P, 7z -pX, openssl enc -k,
    # az login -p, doctl -t, gh secret set --body, smbclient -U user%X
    ("cli-password", re.compile(r"(\b(?:redis-cli\b" + _TO_FLAG + r"\s-a|"
                                r"mongo(?:sh|dump|restore|import|export)?\b" + _TO_FLAG + r"\s-p|"
                                r"ldap\w*\b" + _TO_FLAG + r"\s-w|"
                                r"(?:sqlcmd|bcp|osql|zip|unzip|zipcloak)\b" + _TO_FLAG + r"\s-P|"
                                r"openssl\b" + _TO_FLAG + r"\s-k|az\s+login\b" + _TO_FLAG + r"\s(?:-p|--password)|"
                                r"doctl\b" + _TO_FLAG + r"\s-t|gh\s+secret\s+set\b" + _TO_FLAG + r"\s(?:--body|-b)|"
                                r"aws\s+(?:ssm\s+put-parameter|secretsmanager\s+\S+)\b" + _TO_FLAG + r"\s--value)(?:\s+|=))"
                                + _VALUE), 2,
     ('redis-cli', 'mongo', 'ldap', 'sqlcmd', 'bcp', 'osql', 'zip', 'openssl', 'login', 'doctl', 'secret', 'aws')),
    ("cli-password", re.compile(r"(\b7z[az]?\b" + _TO_FLAG + r"\s-p)([^\s\-'\"$][^\s'\"]*)"), 2, ('7z',)),
    ("cli-password", re.compile(r"(\bsmbclient\b" + _TO_FLAG + r"\s-U\s*['\"]?[^\s%'\"]+%)([^\s'\"]+)"), 2, ('smbclient',)),
    # a secret as a positional argument: htpasswd -b FILE USER X, rabbitmqctl add_user USER X, vault login X,
    # aws configure set aws_secret_access_key X, netlify env:set NAME X, doppler secrets set NAME X
    ("cli-password", re.compile(r"(\bhtpasswd\s+(?:-\w+\s+)*-\w*b\w*\s+(?:-\w+\s+)*\S+\s+\S+\s+)" + _VALUE),
        2, ('htpasswd',)),
    ("cli-password", re.compile(r"(\brabbitmqctl\s+(?:add_user|change_password)\s+\S+\s+)" + _VALUE), 2, ('rabbitmqctl',)),
    ("cli-secret", re.compile(r"(\bvault\s+login\s+)(?!-)([^\s'\"$][^\s'\"]{7,})"), 2, ('vault',)),
    ("cli-secret", re.compile(r"(?i)(\baws\s+configure\s+set\s+\S*(?:secret|token|password)\S*\s+)" + _VALUE), 2, ('aws',)),
    ("cli-secret", re.compile(r"(\b(?:netlify\s+env:set|doppler\s+secrets\s+set|railway\s+variables\s+set|"
                              r"vercel\s+env\s+add)\s+[A-Za-z_][\w.]*\s+)" + _VALUE),
                                  2, ('netlify', 'doppler', 'railway', 'vercel')),
    # user/password@ in Oracle's JDBC URLs and sqlplus logins
    ("url-password", re.compile(r"(jdbc:oracle:\w+:@?[^\s/@:'\"]+/)([^\s@'\"]+)(?=@)"), 2, ('jdbc:oracle',)),
    ("url-password", re.compile(r"(\bsqlplus\s+(?:-\S+\s+)*[^\s/@'\"]+/)([^\s@'\"]+)"), 2, ('sqlplus',)),
    # prose: "changed the db password to X", "use X as the password", "with password X", "creds are deploy / X",
    # "password X", "the vpn pw's X" (a value with a digit, a capital inside or a symbol, or quoted)
    ("stated-secret", re.compile(r"(?i)(\b(?:set|changed|reset|updated|rotated)\s+(?:[\w\-]+\s+){0,4}?" + _SECRET_WORD
                                 + r"\s+to\s+)" + _STATED_VALUE), 2, _SECRET_WORD_ANCHORS),
    ("stated-secret", re.compile(r"(?<![^\s\"'`(])" + _STATED_VALUE
                                 + r"(?=\s+as\s+(?:the|my|our|your)\s+(?:[\w\-]+\s+){0,2}?"
                                 r"(?i:password|passphrase|passcode|pin|token|secret|api key)"
                                 r"(?=\s*(?:$|[.,;:!?)]|\s(?:for|of|on|to|in|at)\b)))"),
                                     1, ('pass', 'pin', 'token', 'secret', 'api key')),
    ("stated-secret", re.compile(r"(?i)(\b(?:creds|credentials|login)\b(?:\s+(?:for|of|to|on)(?:\s+[\w.\-]+){1,4}?)?"
                                 r"\s*(?:are|is|:|=)?\s*[\w.@\-]+\s*[/:]\s*)" + _STATED_VALUE), 2, ('cred', 'login')),
    # "user admin, pass Hunt3r2", "login deploy password Tr0ub4dor", "usr: ci / pw: s3cr3t!": a user named, then
    # its password under any short name ("pass" alone is a password only right after a user)
    ("stated-secret", re.compile(r"(?i)(\b(?:user(?:name)?|login|usr|account)\s*(?:is\s+|:|=)?\s*[\w.@+\-]+\s*[,;/]?\s*"
                                 r"(?:and\s+|with\s+)?(?:(?:the|its|their)\s+)?(?:pass(?:word)?|passwd|passphrase|pwd|pw)"
                                 r"(?:\s+is|'s|’s)?\s*[:=]?\s*)(?![\d,.]+(?:\s|$))" + _STATED_VALUE), 2, ('pass', 'pw')),
    ("stated-secret", re.compile(r"(?i)(\b(?:with\s+(?:the\s+)?)?(?:password|passwd|passphrase|pw|pwd)(?:'s|’s)?\s+)"
                                 r"(?!is\b|was\b)" + _STATED_VALUE), 2, ('pass', 'pw')),
    # SENDGRID_KEY=…, stripe_key: … — a *_key is a secret when its value looks like one (not primary_key: id)
    ("credential", re.compile(r"(?i)((?<![A-Za-z0-9])[A-Za-z0-9_.\-]*_key[\"']?\s*(?:=|:=|:|=>)\s*[\"']?)"
                              r"((?-i:(?=[\w\-./+=]*\d)(?=[\w\-./+=]*[A-Z])(?=[\w\-./+=]*[a-z])[\w\-./+=]{16,}"
                              r"|[a-fA-F0-9]{24,}))"), 2, ('_key',)),
    # prose: "the prod db password is CorrectHorse42", "my api key for staging is …", "the admin pw for grafana is
    # now …" (a value with a digit, a capital inside or a symbol, or in quotes: "the password is stored in vault"
    # stays)
    ("stated-secret", re.compile(
        r"(?i)(\b" + _SECRET_WORD +
        r"(?:\s+(?:for|of|to|on|in)(?:\s+[\w.\-]+){1,4}?)?\s+(?:is|are|was|were|=|:|is now|are now|set to|changed to)\s+)"
        r"((?-i:[\"'`][^\"'`\n]{3,512}[\"'`]|(?=\S{0,512}?(?:\d|[a-z][A-Z]|[^\w\s.,;:!?'\"`()]))"
        r"[^\s,;'\"`()]{4,}(?<![.!?])))"), 2, _SECRET_WORD_ANCHORS),
]
