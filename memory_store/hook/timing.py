"""How long the hook side waits, in one place (seconds).

A hook delays the user (SessionStart the first model call, UserPromptSubmit the prompt), so
every wait is bounded; Claude Code's own hook timeouts (hooks/hooks.json) are far larger.
"""

# How long a hook waits for the worker's answer before it spools the event.
# An async hook (hooks.json) still running when a `claude -p` session ends gets SIGTERM (ignored by hooks/run) and
# SIGKILL 1.5 s later: it spools well before that. A worker that answers late still stores it (once: its event id).
ASYNC_DEADLINE = 1.0
ANSWER_DEADLINE = {"SessionStart": 3.0, "UserPromptSubmit": 3.0, "PreCompact": 3.0, "SessionEnd": 0.5,
                   "PostToolUse": ASYNC_DEADLINE, "PostToolUseFailure": ASYNC_DEADLINE, "Stop": ASYNC_DEADLINE,
                   "SubagentStop": ASYNC_DEADLINE}
DEFAULT_ANSWER_DEADLINE = 1.5
# Events worth waiting for a worker that is just starting (it answers ~0.3-1 s after a spawn).
START_WAIT = {"SessionStart": 2.5, "UserPromptSubmit": 1.5}
SPAWN_GUARD_SECONDS = 20  # one spawn per this interval, however many hooks run in parallel
WORKER_RETRY_SECONDS = 60  # a Python whose worker died at start is not tried again before this
BOOTSTRAP_RETRY_SECONDS = 3600  # after a failed bootstrap, try again this much later
BOOTSTRAP_STALE_SECONDS = 1800  # a 'running' bootstrap older than this died without saying so
HEALTH_CHECK_SECONDS = 0.5  # before starting a worker: does one answer already (it may have just come up)?
POLL_SECONDS = 0.03  # between checks while waiting for a starting worker
