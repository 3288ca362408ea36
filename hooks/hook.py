"""Entry point of every recall hook (started by hooks/run with `python -I -S`).

Kept importable by any Python 3: an interpreter too old for recall exits quietly (0)
instead of failing the user's prompt. It imports no `os` (~1.5 ms of a hook): hooks/run passes an absolute path.
"""
import sys

if sys.version_info < (3, 10):
    sys.stderr.write("recall: Python 3.10+ is needed for hooks; skipping\n")
    sys.exit(0)

if __file__.startswith("/") and __file__.count("/") >= 2:
    sys.path.insert(0, __file__.rsplit("/", 2)[0] or "/")  # the plugin's root: hooks/hook.py is two levels down
else:  # a relative path, or Windows
    import os

    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

try:
    from memory_store.hook.client import run_as_process
except Exception as exc:  # a broken checkout must not break Claude Code either
    sys.stderr.write(f"recall: cannot load the hook client: {exc}\n")
    sys.exit(0)

if __name__ == "__main__":
    run_as_process()
