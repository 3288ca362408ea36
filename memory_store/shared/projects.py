"""What "a project" is: the scope memories live in. Standard library only (the hook client asks it
whether a project is paused).

A project is its git repository, named by the repository's `origin` remote when it has one:
`git@github.com:Acme/shop.git`, `https://github.com/Acme/shop` and `ssh://git@github.com/Acme/shop`
are all `github.com/acme/shop`, whatever the clone's path and on every machine; moving or re-cloning a
repository keeps its memories. Without a remote it is the git root's absolute path; outside a git
repository the cwd itself. The home directory is never taken as a git root (a dotfiles repo in ~
would otherwise swallow every project). Paths that do not exist (e.g. imported from another machine)
are used as they are.

The remote is read from the repository's config file, not by running git (a hook pays for every
millisecond); a worktree's or submodule's `.git` file points to it. Credentials in a remote URL
never become part of a name.
"""

from __future__ import annotations

import functools
import os
import re

# Memories that follow the user into every project (`recall remember --global`): stored under this
# key, which no path or remote can be, and searched with every project's own.
GLOBAL_PROJECT = "(global)"
LOCAL_REMOTE_PREFIX = "local:"  # a remote that is a path on this machine (`/srv/git/shop.git`)

_SCP_LIKE = re.compile(r"^(?:[^@/\s]+@)?([^:/\s]+):(?!//)(.+)$")  # git@host:owner/repo.git
_SECTION = re.compile(r'^\s*\[\s*([A-Za-z0-9.-]+)(?:\s+"((?:[^"\\]|\\.)*)")?\s*\]\s*(.*)$')
_VALUE = re.compile(r"^\s*([A-Za-z][A-Za-z0-9-]*)\s*(?:=\s*(.*))?$")


def in_scope(memory_project: str, project: str | None) -> bool:
    """Is a memory of `memory_project` visible from `project` (None: every project)?"""
    return project is None or memory_project in (project, GLOBAL_PROJECT)


def project_for(cwd: str) -> str:
    """The project key for a working directory: its repository's remote, else its root's path."""
    return locate(cwd)[0]


def locate(cwd: str) -> tuple[str, str]:
    """(the project key, the project's local root) for a working directory."""
    root = project_root(cwd)
    return repository_identity(root) or root, root


@functools.lru_cache(maxsize=256)
def project_root(cwd: str) -> str:
    """The git root above `cwd` (the cwd itself outside a repository), as an absolute path."""
    path = os.path.expanduser(cwd)
    if not os.path.isabs(path):
        path = os.path.join(os.getcwd(), path)
    path = os.path.normpath(path)
    home = os.path.expanduser("~")
    if os.path.isdir(path):
        candidate = path
        while True:
            if candidate == home:
                break
            if os.path.exists(os.path.join(candidate, ".git")):
                return candidate
            parent = os.path.dirname(candidate)
            if parent == candidate:
                break
            candidate = parent
    return path


def repository_identity(root: str) -> str | None:
    """The normalized `origin` remote of the repository at `root` (None: no git repository, or no origin)."""
    config = _config_file(root)
    if config is None:
        return None
    try:
        stamp = os.stat(config).st_mtime_ns
    except OSError:
        return None
    return _identity_from_config(config, stamp)


def _config_file(root: str) -> str | None:
    """The config file of the repository whose work tree is `root` (worktrees and submodules included)."""
    dot_git = os.path.join(root, ".git")
    if os.path.isdir(dot_git):
        git_dir = dot_git
    elif os.path.isfile(dot_git):
        try:
            with open(dot_git, encoding="utf-8", errors="replace") as handle:
                line = handle.readline().strip()
        except OSError:
            return None
        if not line.startswith("gitdir:"):
            return None
        git_dir = os.path.normpath(os.path.join(root, line[len("gitdir:"):].strip()))
        try:  # a worktree's own dir names the repository's common dir, where its config is
            with open(os.path.join(git_dir, "commondir"), encoding="utf-8", errors="replace") as handle:
                git_dir = os.path.normpath(os.path.join(git_dir, handle.readline().strip()))
        except OSError:
            pass
    else:
        return None
    config = os.path.join(git_dir, "config")
    return config if os.path.isfile(config) else None


@functools.lru_cache(maxsize=256)
def _identity_from_config(config: str, _stamp: int) -> str | None:
    """(cached by the file's modification time: a remote added later is seen at once)"""
    try:
        with open(config, encoding="utf-8", errors="replace") as handle:
            text = handle.read(256 * 1024)
    except OSError:
        return None
    remotes, rewrites = read_git_config(text)
    url = remotes.get("origin")
    return normalize_remote(apply_rewrites(url, rewrites)) if url else None


def read_git_config(text: str) -> tuple[dict[str, str], dict[str, str]]:
    """({remote name: url}, {prefix: what it is instead of}) from a git config file's text."""
    remotes: dict[str, str] = {}
    rewrites: dict[str, str] = {}
    section, subsection = "", None
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        header = _SECTION.match(line)
        if header:
            section, subsection = header.group(1).lower(), header.group(2)
            if subsection is None and "." in section:  # the old [remote.origin] form
                section, _, subsection = section.partition(".")
            line = header.group(3).strip()
            if not line:
                continue
        entry = _VALUE.match(line)
        if not entry or entry.group(2) is None:
            continue
        key, value = entry.group(1).lower(), _unquote(entry.group(2))
        if section == "remote" and subsection is not None and key == "url":
            remotes.setdefault(subsection, value)
        elif section == "url" and subsection is not None and key == "insteadof":
            rewrites[value] = subsection
    return remotes, rewrites


def _unquote(value: str) -> str:
    value = re.split(r"\s[#;]", value, maxsplit=1)[0].strip()
    if len(value) >= 2 and value[0] == value[-1] == '"':
        value = value[1:-1].replace('\\"', '"').replace("\\\\", "\\")
    return value


def apply_rewrites(url: str, rewrites: dict[str, str]) -> str:
    """git's url.<base>.insteadOf: the longest matching prefix is replaced."""
    best = max((prefix for prefix in rewrites if url.startswith(prefix)), key=len, default=None)
    return rewrites[best] + url[len(best):] if best is not None else url


def normalize_remote(url: str) -> str | None:
    """`host/owner/repo` for a remote URL (scheme, user, password, port, `.git` and case left out);
    `local:/path/repo` for a remote on this machine; None for something that is not a remote."""
    url = url.strip()
    if not url:
        return None
    if "://" in url:
        scheme, _, rest = url.partition("://")
        if scheme.lower() == "file":
            return _local(rest)
        hostinfo, _, path = rest.partition("/")
        host = hostinfo.rpartition("@")[2]  # never the user or a token
        host = re.sub(r":\d*$", "", host) if not host.startswith("[") else host.split("]")[0] + "]"
    else:
        scp = _SCP_LIKE.match(url)
        if scp is None or os.sep in scp.group(1) or len(scp.group(1)) == 1:  # a path (C:\repo is not host C)
            return _local(url)
        host, path = scp.group(1), scp.group(2)
    path = path.strip("/")
    if path.startswith("~"):
        path = path.split("/", 1)[1] if "/" in path else ""
    if path.lower().endswith(".git"):
        path = path[:-4]
    path = path.strip("/")
    if not host or not path:
        return None
    return f"{host.lower()}/{path.lower()}"


def _local(path: str) -> str | None:
    path = os.path.normpath(os.path.expanduser(path)) if path else ""
    if not path or path == ".":
        return None
    if path.lower().endswith(".git"):
        path = path[:-4]
    return LOCAL_REMOTE_PREFIX + path.rstrip("/\\")
