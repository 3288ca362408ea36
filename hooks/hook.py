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
    from memory_store.hook.client import main
except Exception as exc:  # a broken checkout must not break Claude Code either
    sys.stderr.write(f"recall: cannot load the hook client: {exc}\n")
    sys.exit(0)

if __name__ == "__main__":
    try:
        main()
    except BaseException as exc:  # noqa: BLE001 - last line of defence, exit 0 whatever happens
        if not isinstance(exc, (SystemExit, KeyboardInterrupt)):
            sys.stderr.write(f"recall: hook failed: {exc}\n")
    # Everything is written (the client writes its log line with one write); skipping the
    # interpreter's teardown saves ~1.5 ms per hook.
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        try:
            from posix import _exit
        except ImportError:  # Windows
            from nt import _exit
        _exit(0)
