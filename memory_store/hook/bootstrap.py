"""First-install bootstrap: find or build a Python that can run the worker. Standard library only.

A user may have nothing but Claude Code and a Python 3.10+. The first hook that finds no
worker runtime starts this script detached and returns at once; meanwhile every hook
spools its events. This script:

1. takes an exclusive lock (`runtime/bootstrap.lock`), so parallel sessions run it once;
2. reuses an interpreter that already has recall's dependencies ($RECALL_PYTHON, the data
   dir's venv, or the Python running it, e.g. after `pip install .`);
3. otherwise creates `<data dir>/venv` and `pip install`s the plugin root into it (with the
   `postgres` extra when a database URL is set: the driver of a shared database);
4. records the choice in `runtime/python.json` with the plugin version (a new version
   makes the hooks run this again: the venv is upgraded in place);
5. starts the worker, which ingests the spool exactly once.

Progress and errors go to `logs/bootstrap.log`; the state to `runtime/bootstrap.json`.
Run by hand: `python memory_store/hook/bootstrap.py --home DIR --root PLUGIN_ROOT [--foreground]`.
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
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from memory_store.hook.runtime import (  # noqa: E402
    child_env,
    detached,
    extras_needed,
    has_dependencies,
    read_runtime,
    venv_python,
    write_runtime,
)
from memory_store.shared.files import acquire_lock, atomic_write, ensure_private_dir  # noqa: E402
from memory_store.shared.paths import DataPaths  # noqa: E402
from memory_store.version import __version__  # noqa: E402

PIP_TIMEOUT = 1800


class Bootstrap:
    def __init__(self, paths: DataPaths, root: Path):
        self.paths = paths
        self.root = root
        ensure_private_dir(paths.logs)
        ensure_private_dir(paths.runtime)
        self.log_path = paths.bootstrap_log
        self.extras = extras_needed(paths)  # `postgres` when a database URL is set: its driver too

    def say(self, message: str) -> None:
        line = f"{time.strftime('%Y-%m-%dT%H:%M:%S')} {message}\n"
        with open(self.log_path, "a", encoding="utf-8") as handle:
            handle.write(line)

    def set_state(self, state: str, **extra) -> None:
        record = {"state": state, "at": time.time(), "version": __version__, **extra}
        atomic_write(self.paths.bootstrap_state, json.dumps(record))

    def candidates(self) -> list[str]:
        found = []
        for python in (os.environ.get("RECALL_PYTHON"), venv_python(self.paths.venv), sys.executable):
            if python and os.path.exists(python) and python not in found:
                found.append(python)
        return found

    def install(self) -> str:
        """Create (or upgrade) the venv and install the plugin (with the extras this data dir needs) into it;
        returns its Python."""
        venv = self.paths.venv
        python = venv_python(venv)
        if not os.path.exists(python):
            self.say(f"creating venv {venv} with {sys.executable}")
            self.run([sys.executable, "-m", "venv", str(venv)])
        self.say(f"installing {self.root} into {venv}")
        # Build from a private copy: setuptools writes build/ and *.egg-info beside the sources,
        # and the plugin folder may be read-only or shared by several data dirs.
        with tempfile.TemporaryDirectory(prefix="recall-build-") as tmp:
            source = Path(tmp) / "src"
            shutil.copytree(self.root, source, ignore=shutil.ignore_patterns(
                ".git", ".venv", "venv", "build", "dist", "*.egg-info", "__pycache__", "tests"))
            target = str(source) + (f"[{','.join(self.extras)}]" if self.extras else "")
            self.run([python, "-m", "pip", "install", "--disable-pip-version-check", "--upgrade", target])
        return python

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
        runtime = read_runtime(self.paths, any_version=True)
        venv = venv_python(self.paths.venv)
        previous = None
        for python in self.candidates():
            if not has_dependencies(python, self.root, self.extras):
                continue
            if python == venv and runtime is not None and runtime.get("version") != __version__:
                previous = python  # a venv made for an older plugin version is upgraded, not trusted as is
                continue
            self.say(f"using {python}")
            return python
        try:
            python = self.install()
        except Exception as exc:
            if previous is None or not has_dependencies(previous, self.root, self.extras):
                raise
            # e.g. an upgrade while offline: keep the working environment rather than capture-only mode
            self.say(f"upgrade failed ({exc}); keeping {previous}")
            return previous
        if not has_dependencies(python, self.root, self.extras):
            raise RuntimeError(f"{python} still lacks recall's dependencies after installing")
        return python

    def start_worker(self, python: str) -> None:
        detached([python, "-m", "memory_store.worker", "--home", str(self.paths.home)],
                 child_env(self.paths.home, self.root), self.paths.logs / "worker.out")

    def main(self) -> int:
        lock = acquire_lock(self.paths.bootstrap_lock)
        if lock is None:
            return 0  # another bootstrap is running
        try:
            self.set_state("running")
            started = time.time()
            python = self.choose()
            write_runtime(self.paths, python, self.root, self.extras)
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bootstrap.py")
    parser.add_argument("--home", required=True)
    parser.add_argument("--root", required=True)
    args = parser.parse_args(argv)
    os.umask(0o077)
    return Bootstrap(DataPaths(args.home), Path(args.root)).main()


if __name__ == "__main__":
    sys.exit(main())
