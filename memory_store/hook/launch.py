"""Run the recall CLI from the plugin folder (scripts/recall). Standard library only.

The plugin's .mcp.json, skill and command run scripts/recall by path (Claude Code substitutes
${CLAUDE_PLUGIN_ROOT} in them), but no hook's environment reaches it. This script finds the Python that can run
the CLI ($RECALL_PYTHON, the one the bootstrap chose, the data dir's venv, or the first interpreter on PATH with recall's
dependencies) and replaces itself with `python -m memory_store.shells.cli`, running this
plugin's code. A search the running worker can answer is answered first, in this process
(hook/quick_search.py, standard library only).
"""

from __future__ import annotations

import os
import sys

# The plugin's root (imports below come from it). Only os and sys so far: a search the worker answers
# (main) pays for nothing more.
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, ROOT)


def option_value(argv: list[str], name: str) -> str | None:
    for i, arg in enumerate(argv):
        if arg == name and i + 1 < len(argv):
            return argv[i + 1]
        if arg.startswith(name + "="):
            return arg.split("=", 1)[1]
    return None


def candidates(paths) -> list[str]:
    from memory_store.hook.runtime import read_runtime, venv_python

    found = [os.environ.get("RECALL_PYTHON"), (read_runtime(paths, any_version=True) or {}).get("python"),
             venv_python(paths.venv)]
    for name in ("python3", "python"):
        for directory in os.environ.get("PATH", "").split(os.pathsep):
            path = os.path.join(directory, name)
            if os.path.isfile(path) and os.access(path, os.X_OK):
                found.append(path)
                break
    return list(dict.fromkeys(p for p in found if p and os.path.exists(p)))


def main(argv: list[str]) -> int:
    plugin_data = option_value(argv, "--plugin-data")
    if plugin_data and not os.environ.get("CLAUDE_PLUGIN_DATA"):
        os.environ["CLAUDE_PLUGIN_DATA"] = plugin_data
    # A search the running worker answers needs no Python with recall's dependencies: `recall search`
    # is answered here, before the ~60 ms probe for one and the full CLI's imports.
    from memory_store.hook.quick_search import answer

    status = answer(argv)
    if status is not None:
        return status
    import subprocess

    from memory_store.hook.runtime import child_env, has_dependencies
    from memory_store.shared.paths import DataPaths

    paths = DataPaths(option_value(argv, "--home"))
    env = child_env(None, ROOT)

    def cli_command() -> tuple[list[str], dict[str, str]] | None:
        for python in candidates(paths):
            if has_dependencies(python, ROOT):
                return [python, "-m", "memory_store.shells.cli", *argv], env
        return None

    command = cli_command()
    if command is not None:
        args = command[0]
        if os.name == "nt":  # no exec on Windows: run and pass the status on
            return subprocess.run(args, env=env).returncode
        os.execve(args[0], args, env)
    if argv[:1] == ["mcp"]:  # Claude Code must connect now, or it skips recall's tools for 15 minutes
        from memory_store.hook.mcp_standin import serve

        return serve(cli_command, f"recall is still setting up its Python (the first-run setup: {paths.bootstrap_log})."
                                  " Its memory tools answer in a minute or two; try again then.")
    existing = paths.home
    while not existing.exists() and existing != existing.parent:  # a fresh machine: the nearest folder that exists
        existing = existing.parent
    if not os.access(existing, os.W_OK):
        # The first-run setup builds recall's Python in the data dir: it cannot, so none will come.
        sys.stderr.write(
            f"recall: its data dir {paths.home} cannot be written, so the first-run setup cannot install recall's "
            f"Python there: give your user write access to it, or set RECALL_PYTHON to a Python with recall "
            f"installed (`pip install {ROOT}`).\n")
        return 1
    sys.stderr.write(
        "recall: no Python with recall's dependencies was found. If the plugin was just installed, its "
        f"first-run setup may still be running (see {paths.bootstrap_log}); otherwise run "
        f"`pip install {ROOT}` or set RECALL_PYTHON.\n"
    )
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
