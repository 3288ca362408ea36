"""Setting up a shared database for a team: `recall team init`, and its members: `add-user`, `users`,
`new-password`, `remove-user`.

Both run with an administrator's URL (a role that may create extensions and roles). A member is a
login role in the group `recall_member`: no superuser, no BYPASSRLS, so row-level security holds for
it everywhere, psql included. Its password is generated here and shown once; the server receives only
its SCRAM verifier (computed by libpq on this side), so the password is in no server log either.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import quote, urlencode

from ....shared.database_url import masked
from ..base import StorageUnavailable
from . import schema
from .connection import connect, first_line

ROLE_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]{0,62}$")


def init_team(url: str, model: str, dim: int) -> dict:
    """Create or upgrade recall's schema at `url` (see schema.init); idempotent."""
    with administering(url, "set up recall") as conn:
        return schema.init(conn, model, dim)


def add_member(url: str, name: str) -> str:
    """Create the login role `name` in the member group; returns its connection URL (with the password,
    shown once), with the same host, port, database and connection parameters as `url`."""
    if not ROLE_NAME.match(name) or name.lower().startswith("pg_"):
        raise ValueError(f"{name!r} is not a role name recall creates: letters, digits, _ . - (not starting with "
                         "a digit or pg_), at most 63 characters")
    from psycopg import sql
    from psycopg.conninfo import conninfo_to_dict

    with administering(url, f"add {name}") as conn:
        if conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (name,)).fetchone():
            raise ValueError(f"a role named {name} exists already: choose another name")
        if conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (schema.MEMBER_ROLE,)).fetchone() is None:
            raise ValueError(f"there is no {schema.MEMBER_ROLE} role at {masked(url)}: run `recall team init` first")
        password, verifier = _new_password(conn, name)
        conn.execute(sql.SQL("CREATE ROLE {} LOGIN PASSWORD {} IN ROLE {} NOSUPERUSER NOCREATEDB NOCREATEROLE "
                             "NOREPLICATION NOBYPASSRLS").format(
            sql.Identifier(name), sql.Literal(verifier), sql.Identifier(schema.MEMBER_ROLE)))
    return member_url(conninfo_to_dict(url), name, password)


def members(url: str) -> list[dict]:
    """The team's login roles: name, whether it may log in, and how many memories it shared with the team (its
    private ones are its own: row-level security hides them from an administrator too, unless a superuser)."""
    with administering(url, "list the team") as conn:
        rows = conn.execute(
            "SELECT r.rolname, r.rolcanlogin, (SELECT count(*) FROM recall.memories m WHERE m.owner = r.rolname "
            f"AND m.visibility = 'team') {MEMBER_ROLES} ORDER BY r.rolname", (schema.MEMBER_ROLE,)).fetchall()
    return [{"name": name, "can_log_in": bool(login), "shared_memories": int(count)} for name, login, count in rows]


def set_member_login(url: str, name: str, *, allowed: bool) -> str | None:
    """Give a member a new password (`allowed`: returns its new URL, shown once) or take its login away (None):
    its memories stay, private to it, shared ones still shared."""
    from psycopg import sql
    from psycopg.conninfo import conninfo_to_dict

    with administering(url, f"change {name}") as conn:
        named = conn.execute(f"SELECT 1 {MEMBER_ROLES} AND r.rolname = %s", (schema.MEMBER_ROLE, name)).fetchone()
        if named is None:
            raise ValueError(f"{name} is not a member of the team at {masked(url)} (recall team users lists them)")
        if not allowed:
            conn.execute(sql.SQL("ALTER ROLE {} NOLOGIN PASSWORD NULL").format(sql.Identifier(name)))
        else:
            password, verifier = _new_password(conn, name)
            conn.execute(sql.SQL("ALTER ROLE {} LOGIN PASSWORD {}").format(sql.Identifier(name),
                                                                            sql.Literal(verifier)))
        # A password is checked when a connection starts: the member's open connections (a worker's) end now.
        conn.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = %s "
                     "AND pid <> pg_backend_pid()", (name,))
    return member_url(conninfo_to_dict(url), name, password) if allowed else None


# The login roles in the member group (its name the first parameter): the team's members.
MEMBER_ROLES = ("FROM pg_roles r JOIN pg_auth_members a ON a.member = r.oid JOIN pg_roles g ON g.oid = a.roleid "
                "WHERE g.rolname = %s")


def _new_password(conn: Any, name: str) -> tuple[str, str]:
    """A new random password for role `name`, and the SCRAM verifier the server stores instead of it (the password
    itself never reaches the server)."""
    password = secrets.token_urlsafe(24)
    return password, conn.pgconn.encrypt_password(password.encode(), name.encode(), b"scram-sha-256").decode()


@contextmanager
def administering(url: str, what: str) -> Iterator[Any]:
    """A connection without a statement timeout for setup work; the server's errors become one clear line."""
    conn = connect(url, statement_timeout_ms=None)
    try:
        yield conn
    except Exception as exc:
        if type(exc).__module__.startswith("psycopg"):
            raise StorageUnavailable(f"cannot {what} at {masked(url)}: {first_line(exc)}") from None
        raise
    finally:
        conn.close()


def member_url(params: dict, user: str, password: str) -> str:
    """A postgresql:// URL for `user` with the other connection parameters of `params` (libpq's)."""
    params = {k: str(v) for k, v in params.items() if k not in ("user", "password", "passfile") and v is not None}
    host, port, database = params.pop("host", ""), params.pop("port", ""), params.pop("dbname", "")
    netloc = quote(user, safe="") + ":" + quote(password, safe="") + "@"
    if host and "," not in host and not host.startswith("/"):
        netloc += f"[{host}]" if ":" in host else host
        if port and "," not in port:
            netloc += f":{port}"
    else:  # a Unix socket directory, or several hosts: libpq reads them from the query
        if host:
            params["host"] = host
        if port:
            params["port"] = port
    query = urlencode(sorted(params.items()), safe="/,:")
    return f"postgresql://{netloc}/{quote(database, safe='')}" + (f"?{query}" if query else "")
