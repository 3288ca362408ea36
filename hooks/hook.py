"""Entry point of every recall hook (started by hooks/run with `python -I -S`).

Kept importable by any Python 3: an interpreter too old for recall exits quietly (0)
instead of failing the user's prompt.
"""
import os
import sys

if sys.version_info < (3, 10):
    sys.stderr.write("recall: Python 3.10+ is needed for hooks; skipping\n")
    sys.exit(0)

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
    # Everything is written (the client writes its log lines with os.write); skipping the
    # interpreter's teardown saves ~1.5 ms per hook.
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        os._exit(0)
