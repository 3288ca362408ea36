"""Run the recall CLI from the plugin folder (bin/recall). Standard library only.

Claude Code puts the plugin's bin/ on PATH for the Bash tool and `!` commands, but not its
environment variables. This script finds the Python that can run the CLI (the one the
bootstrap chose, $RECALL_PYTHON, or the first interpreter with recall's dependencies) and
replaces itself with `python -m memory_store.cli`, running this plugin's code.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from memory_store.bootstrap import has_dependencies  # noqa: E402
from memory_store.paths import DataPaths  # noqa: E402


def option_value(argv: list[str], name: str) -> str | None:
    for i, arg in enumerate(argv):
        if arg == name and i + 1 < len(argv):
            return argv[i + 1]
        if arg.startswith(name + "="):
            return arg.split("=", 1)[1]
    return None


def candidates(paths: DataPaths) -> list[str]:
    found = [os.environ.get("RECALL_PYTHON")]
    try:
        found.append(json.loads(paths.runtime_info.read_text(encoding="utf-8")).get("python"))
    except (OSError, ValueError, AttributeError):
        pass
    found.append(str(paths.venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")))
    for name in ("python3", "python"):
        for directory in os.environ.get("PATH", "").split(os.pathsep):
            path = os.path.join(directory, name)
            if os.path.isfile(path) and os.access(path, os.X_OK):
                found.append(path)
                break
    unique = []
    for python in found:
        if python and os.path.exists(python) and python not in unique:
            unique.append(python)
    return unique


def main(argv: list[str]) -> int:
    plugin_data = option_value(argv, "--plugin-data")
    if plugin_data and not os.environ.get("CLAUDE_PLUGIN_DATA"):
        os.environ["CLAUDE_PLUGIN_DATA"] = plugin_data
    paths = DataPaths(option_value(argv, "--home"))
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop("PYTHONHOME", None)
    for python in candidates(paths):
        if has_dependencies(python, ROOT):
            args = [python, "-m", "memory_store.cli", *argv]
            if os.name == "nt":  # no exec on Windows: run and pass the status on
                return subprocess.run(args, env=env).returncode
            os.execve(python, args, env)
    sys.stderr.write(
        "recall: no Python with recall's dependencies was found. If the plugin was just installed, its "
        f"first-run setup may still be running (see {paths.bootstrap_log}); otherwise run "
        f"`pip install {ROOT}` or set RECALL_PYTHON.\n"
    )
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
