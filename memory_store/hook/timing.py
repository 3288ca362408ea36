"""How long the hook side waits, in one place (seconds).

A hook delays the user (SessionStart the first model call, UserPromptSubmit the prompt), so
every wait is bounded; Claude Code's own hook timeouts (hooks/hooks.json) are far larger.
"""

# How long a hook waits for the worker's answer before it spools the event.
# An async hook (hooks.json) still running when a `claude -p` session ends gets SIGTERM (ignored by hooks/run) and
# SIGKILL 1.5 s later: it spools well before that. A worker that answers late still stores it (once: its event id).
ASYNC_DEADLINE = 1.0
# PreToolUse runs before every tool call it matches and stores nothing: it waits little, and a worker that is not
# there costs it nothing else (hook/fallback.py). PostToolUseFailure is waited for (its answer is the fix of a known
# error); failures are rare.
ANSWER_DEADLINE = {"SessionStart": 3.0, "UserPromptSubmit": 3.0, "PreCompact": 3.0, "SessionEnd": 0.5,
                   "PreToolUse": 0.5, "PostToolUse": ASYNC_DEADLINE, "PostToolUseFailure": 1.5,
                   "Stop": ASYNC_DEADLINE, "SubagentStop": ASYNC_DEADLINE, "Interrupt": ASYNC_DEADLINE}
ANSWER_ONLY = ("PreToolUse",)  # events that store nothing: never spooled, never a reason to start a worker
DEFAULT_ANSWER_DEADLINE = 1.5
# Events worth waiting for a worker that is just starting (it answers ~0.3-1 s after a spawn).
START_WAIT = {"SessionStart": 2.5, "UserPromptSubmit": 1.5}
SPAWN_GUARD_SECONDS = 20  # one spawn per this interval, however many hooks run in parallel
WORKER_RETRY_SECONDS = 60  # a Python whose worker died at start is not tried again before this
BOOTSTRAP_RETRY_SECONDS = 3600  # after a failed bootstrap, try again this much later
BOOTSTRAP_STALE_SECONDS = 1800  # a 'running' bootstrap older than this died without saying so
HEALTH_CHECK_SECONDS = 0.5  # before starting a worker: does one answer already (it may have just come up)?
POLL_SECONDS = 0.03  # between checks while waiting for a starting worker
