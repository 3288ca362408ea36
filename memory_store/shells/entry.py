"""The `recall` command. A search the running worker can answer is answered before the full CLI is imported
(hook/quick_search.py: ~10x faster); everything else, and a search without a worker, goes to the CLI (shells/cli)."""

from __future__ import annotations

import sys


def main() -> None:
    from ..hook.quick_search import answer

    status = answer(sys.argv[1:])
    if status is not None:
        sys.exit(status)
    from ..shared import native_env

    native_env.for_the_model()  # a search without a worker, a bench: as the worker runs the model
    from .cli import main as cli_main

    cli_main()


if __name__ == "__main__":
    main()
