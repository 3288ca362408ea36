"""What the hook side tells the user, once, through a SessionStart or UserPromptSubmit systemMessage (shown to the
user, never to the model). Standard library only."""

from __future__ import annotations

import os
import time

from ..shared.files import ensure_private_dir
from ..shared.logs import worker_out_tail
from ..shared.paths import DataPaths
from ..shared.text import cap
from ..version import __version__
from . import runtime


def claim_once(paths: DataPaths, key: str) -> bool:
    """True for the one caller, among parallel hooks, that gets to say `key` (an O_EXCL marker)."""
    marker = paths.runtime / f"notified-{key}"
    try:
        ensure_private_dir(paths.runtime)
        fd = os.open(marker, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except OSError:  # FileExistsError: someone told the user already
        return False
    os.write(fd, str(time.time()).encode("ascii"))
    os.close(fd)
    return True


def first_run_notice(paths: DataPaths, started: str) -> dict:
    """Tell the user, once, that recall is setting itself up, or that setup or the worker failed."""
    state = runtime.bootstrap_state(paths).get("state")
    if started == "bootstrap" or state == "running":
        # Once per version: after an update that rebuilds the environment, the first prompt got nothing, silently.
        key, text = f"running-{__version__}", (
            "recall: setup of its private Python environment is running in the background (after an install or an "
            "update, about a minute). Sessions are captured meanwhile; recalled context comes back once it is done."
        )
    elif started == "failed" or state == "failed":
        key, text = "failed", (
            f"recall: setup failed and will be retried later; events are kept meanwhile. "
            f"Details: {paths.bootstrap_log}"
        )
    elif started == "worker-failed":
        reason = worker_out_tail(paths).splitlines()[-1:] or ["it printed nothing"]
        key, text = "worker-failed", (
            f"recall: its background worker cannot start ({cap(reason[0], 200)}); events are kept and it will "
            f"be retried. Details: {paths.logs / 'worker.out'}"
        )
    else:
        return {}
    return {"systemMessage": text} if claim_once(paths, key) else {}
