"""What a user waits for in a turn, beyond one hook: part of `recall bench latency`.

- Blocking hook time per turn: Claude Code waits for every synchronous hook of a turn (the prompt hook, and
  each tool call's and the answer's hooks unless they are registered `"async": true`); from the measured p50 of
  each hook and hooks/hooks.json, the time a turn with TOOL_CALLS tool calls spends waiting on recall. The real
  CLI's debug log gives the same figure (tests/e2e); this is its simulation.
- `recall search` and its index form (`scripts/recall search --index`) as a user runs them, against
  a bare interpreter.
- The first prompt after a long pause inside an open session (the worker's idle timeout shortened, a stand-in
  process as the session's CLAUDE_PID): it must not pay the model load.
- Each hook while there is no worker yet (a first install's setup under way): the event goes to the spool, flushed
  to disk, and the hook returns without waiting.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from ...core.diagnostics.stats import summarize

TOOL_CALLS = 10
SEARCH_QUERY = "Why does the deploy script time out against the staging cluster?"
IDLE_TIMEOUT_MINUTES = 0.02  # 1.2 s: "a long pause" without waiting 30 minutes


def summarize_against_bare(times: dict[str, list[float]]) -> dict[str, dict]:
    """Each timing's summary (core/diagnostics/stats.py) with its p50 as a multiple of the "bare python" one's."""
    report = {name: summarize(values) for name, values in times.items()}
    bare = report["bare python"]["p50"]
    for row in report.values():
        row["p50_vs_bare"] = round(row["p50"] / bare, 2) if bare else None
    return report


def async_events(root: Path) -> set[str]:
    """The events hooks/hooks.json registers as `"async": true` (Claude Code does not wait for them)."""
    registered = json.loads((root / "hooks" / "hooks.json").read_text(encoding="utf-8"))["hooks"]
    return {event for event, groups in registered.items()
            if all(hook.get("async") for group in groups for hook in group.get("hooks", []))}


def blocking_per_turn(root: Path, hooks_ms: dict) -> dict:
    """Claude Code's wait on recall in one turn: the prompt hook, TOOL_CALLS tool hooks (before and after each call)
    and Stop, less the async."""
    background = async_events(root)
    parts = {"UserPromptSubmit": 1, "PreToolUse": TOOL_CALLS, "PostToolUse": TOOL_CALLS, "Stop": 1}
    waited = {event: count * hooks_ms[event]["p50"] for event, count in parts.items()
              if event not in background and event in hooks_ms}
    total = round(sum(waited.values()), 1)
    prompt = hooks_ms["UserPromptSubmit"]["p50"]
    return {"tool_calls": TOOL_CALLS, "async": sorted(background), "blocking_ms": total,
            "vs_prompt_hook": round(total / prompt, 2) if prompt else None}


def _timed(argv: list[str], env: dict, cwd: str) -> tuple[float, str]:
    start = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=cwd)
    return (time.perf_counter() - start) * 1000, done.stdout


def measure_search_commands(root: Path, home: Path, project: str, runs: int = 20) -> dict:
    """`recall search QUERY` (the installed command) and `scripts/recall search QUERY --index`, with the worker up,
    interleaved with a bare interpreter; each answer must be shown."""
    env = dict(os.environ, RECALL_HOME=str(home), RECALL_PYTHON=sys.executable)
    installed = Path(sys.executable).with_name("recall")
    command = [str(installed)] if installed.exists() else [sys.executable, "-m", "memory_store.shells.entry"]
    forms = {"recall search": [*command, "search", SEARCH_QUERY],
             "scripts/recall search --index": [str(root / "scripts" / "recall"), "search", SEARCH_QUERY, "--index"],
             "bare python": [sys.executable, "-I", "-S", "-c", "pass"]}
    times: dict[str, list[float]] = {name: [] for name in forms}
    answered = {name: True for name in forms}
    for _ in range(runs):
        for name, argv in forms.items():
            ms, out = _timed(argv, env, project)
            times[name].append(ms)
            if name != "bare python":
                answered[name] = answered[name] and ("#" in out or "Nothing relevant" in out)
    report = summarize_against_bare(times)
    for name, row in report.items():
        row["answered"] = answered[name]
    return report


def measure_prompt_after_idle(root: Path, home: Path, project: str, payload: dict, runs: int = 5) -> dict:
    """UserPromptSubmit after the worker's idle timeout has passed twice over inside an open session."""
    from ..hookrunner import HookRunner

    config_file = home / "config.json"
    saved = config_file.read_text(encoding="utf-8") if config_file.exists() else None
    config = json.loads(saved) if saved else {}
    config.setdefault("worker", {})["idle_timeout_minutes"] = IDLE_TIMEOUT_MINUTES
    config_file.write_text(json.dumps(config), encoding="utf-8")
    session = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)"])  # Claude Code's stand-in
    try:
        env = dict(os.environ, RECALL_HOME=str(home), RECALL_PYTHON=sys.executable, CLAUDE_PLUGIN_ROOT=str(root),
                   CLAUDE_PID=str(session.pid))
        runner = HookRunner(root, env)
        command, _ = runner.commands("UserPromptSubmit", payload)[0]
        data = json.dumps(payload).encode()
        subprocess.run(command, input=data, capture_output=True, env=env)  # the worker learns of the session
        times = []
        for _ in range(runs):
            time.sleep(IDLE_TIMEOUT_MINUTES * 60 * 2)
            start = time.perf_counter()
            subprocess.run(command, input=data, capture_output=True, env=env)
            times.append((time.perf_counter() - start) * 1000)
        return summarize(times)
    finally:
        session.kill()
        session.wait()
        if saved is None:
            config_file.unlink(missing_ok=True)
        else:
            config_file.write_text(saved, encoding="utf-8")


def measure_without_worker(root: Path, base: Path, payloads: dict[str, dict], runs: int = 20) -> dict:
    """Each hook on a data dir whose first-run setup is under way (as the bootstrap marks it): no worker to ask,
    none to start, so every event is spooled; against a bare interpreter."""
    from ...shared.paths import DataPaths

    paths = DataPaths(base / "setting-up")
    paths.runtime.mkdir(parents=True)
    paths.bootstrap_state.write_text(json.dumps({"state": "running", "at": time.time()}), encoding="utf-8")
    paths.hook_python.write_text(sys.executable + "\n", encoding="utf-8")  # what the first hook records
    env = {name: value for name, value in os.environ.items() if name not in ("RECALL_PYTHON", "RECALL_HOME")}
    env.update(CLAUDE_PLUGIN_DATA=str(paths.home), CLAUDE_PLUGIN_ROOT=str(root))
    launcher = [str(root / "hooks" / "run")]
    times: dict[str, list[float]] = {event: [] for event in payloads}
    times["bare python"] = []
    for _ in range(runs):
        for event, payload in payloads.items():
            start = time.perf_counter()
            subprocess.run([*launcher, event], input=json.dumps(payload).encode(), capture_output=True, env=env)
            times[event].append((time.perf_counter() - start) * 1000)
        times["bare python"].append(_timed([sys.executable, "-I", "-S", "-c", "pass"], env, str(base))[0])
    spooled = len(list(paths.spool.glob("*.json")))
    return {"hooks_ms": summarize_against_bare(times), "spooled": spooled, "events": runs * len(payloads)}
