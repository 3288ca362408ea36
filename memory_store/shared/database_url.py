"""Which database a data dir uses, and its URL fit to print. Standard library only (the first-install
bootstrap reads it too).

`RECALL_DATABASE_URL` wins over `storage.url` in config.json; both empty: the embedded SQLite file.
A URL may carry a password (config.json may hold it if the user puts it there; `~/.pgpass` works
as libpq defines): `masked` is the only form recall ever writes to a log, a message or doctor.
"""

from __future__ import annotations

import os
import re
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from .paths import DATABASE_URL_ENV as ENV_VAR

SCHEMES = ("postgresql", "postgres")
_SECRET_PARAMS = {"password", "passfile", "sslpassword"}
_KEYWORD_PASSWORD = re.compile(r"(\b(?:password|sslpassword)\s*=\s*)('(?:[^'\\]|\\.)*'|\S+)", re.IGNORECASE)


def database_url(configured: str | None) -> str:
    """The database URL in effect, given `storage.url` of config.json ('' for the embedded SQLite file)."""
    return (os.environ.get(ENV_VAR) or "").strip() or (configured or "").strip()


def is_postgres(url: str) -> bool:
    return urlsplit(url).scheme.lower() in SCHEMES


def masked(url: str) -> str:
    """The URL with any password replaced by ***, in the userinfo and in the query alike; libpq
    `key=value` strings have theirs masked too."""
    if "://" not in url:
        return _KEYWORD_PASSWORD.sub(r"\1***", url)
    try:
        parts = urlsplit(url)
    except ValueError:
        return "(an unreadable database URL)"
    netloc = parts.netloc
    if "@" in netloc:
        userinfo, _, hostinfo = netloc.rpartition("@")
        if ":" in userinfo:
            userinfo = userinfo.split(":", 1)[0] + ":***"
        netloc = f"{userinfo}@{hostinfo}"
    query = urlencode([(k, "***" if k.lower() in _SECRET_PARAMS else v)
                       for k, v in parse_qsl(parts.query, keep_blank_values=True)], safe="/,:*")
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def url_problem(url: str) -> str | None:
    """Why `url` cannot name a database recall can use (None: it can)."""
    if not url:
        return None
    try:
        parts = urlsplit(url)
    except ValueError as exc:
        return f"not a URL ({exc})"
    if parts.scheme.lower() not in SCHEMES:
        return "recall stores memories in PostgreSQL: use a postgresql:// URL (or nothing, for the local SQLite file)"
    return None
