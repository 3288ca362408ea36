"""`recall demo`: a recorded session replayed through the real hooks into a throwaway store."""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

from ..shared.paths import DataPaths
from ..shared.worker_client import health, stop_worker, wait_until_embedded
from .hookrunner import HookRunner, find_plugin_root

SESSION_FILE = Path(__file__).with_name("demo_session.json")


def _fill(value, project: str):
    if isinstance(value, str):
        return value.replace("{project}", project)
    if isinstance(value, dict):
        return {k: _fill(v, project) for k, v in value.items()}
    if isinstance(value, list):
        return [_fill(v, project) for v in value]
    return value


def run_demo(keep: bool = False, echo=None) -> dict:
    say = echo or (lambda *_: None)
    root = find_plugin_root()
    if root is None:
        raise SystemExit("recall demo needs the plugin folder (hooks/hooks.json): run it from the recall checkout "
                         "or set RECALL_PLUGIN_ROOT")
    script = json.loads(SESSION_FILE.read_text(encoding="utf-8"))
    tmp = Path(tempfile.mkdtemp(prefix="recall-demo-"))
    home, project = tmp / "data", tmp / "project"
    (project / ".git").mkdir(parents=True)  # a git repo: the project scope
    env = dict(os.environ, RECALL_HOME=str(home), RECALL_PYTHON=sys.executable)
    runner = HookRunner(root, env)
    result: dict = {"home": str(home), "project": str(project), "hooks": [], "ok": False}
    try:
        say(f"recall demo: plugin {root}\n  data dir {home}\n  project  {project}\n")
        injected = {}
        for number, session in enumerate(script["sessions"], start=1):
            say(f"== session {number}, {session.get('label', 'recorded')} (id {session['session_id']})")
            for event in session["events"]:
                payload = {"session_id": session["session_id"],
                           "transcript_path": str(tmp / f"{session['session_id']}.jsonl"),
                           "cwd": str(project), **_fill(event, str(project))}
                name = payload["hook_event_name"]
                hook = runner.run(name, payload)
                result["hooks"].append({"event": name, "exit": hook.returncode, "ms": round(hook.ms, 1),
                                        "stdout_is_json_or_empty": hook.stdout.strip() == "" or hook.output is not None})
                detail = payload.get("prompt") or payload.get("tool_name") or payload.get("source") or ""
                say(f"  {name:<19} exit {hook.returncode}  {hook.ms:6.0f} ms  {str(detail)[:70]}")
                if hook.context:
                    injected[f"session {number} {name}"] = hook.context
                    say("\n".join("      │ " + line for line in hook.context.splitlines()))
            say("")
            wait_until_embedded(DataPaths(home))  # the next session comes "later": the worker has caught up
        from ..api import open_recall

        recall = open_recall(home)
        memories = recall.store.recent(str(project), ("prompt", "exchange", "tool", "error", "response", "note"), 0, 100)
        say("== what was captured (newest first)")
        for memory in memories:
            flag = " (superseded)" if memory.superseded_by else ""
            say(f"  #{memory.id:<3} {memory.kind:<8} {' '.join(memory.text.split())[:110]}{flag}")
        say("")
        query = script["log_search"]
        say(f"== /recall:log-search {query}  (Claude Code hands the prompt hook the raw text: it searches)")
        search = runner.run("UserPromptSubmit", {
            "hook_event_name": "UserPromptSubmit", "session_id": "demo-log-search", "cwd": str(project),
            "transcript_path": str(tmp / "demo-log-search.jsonl"), "prompt": f"/recall:log-search {query}"})
        say("\n".join("      │ " + line for line in search.context.splitlines()))
        say("")
        expect = script["expect"]
        raw = b"".join(p.read_bytes() for p in home.rglob("*") if p.is_file() and not p.name.endswith(".sock")
                       and "venv" not in p.parts)
        checks = {
            "fact injected in session 2": any(expect["injected"] in text for key, text in injected.items()
                                              if key.startswith("session 2")),
            "secret redacted everywhere": expect["secret"].encode() not in raw,
            "private text never stored": expect["private"].encode() not in raw,
            "log-search finds it": expect["found"] in search.context,
            "hooks exit 0, stdout clean": all(h["exit"] == 0 and h["stdout_is_json_or_empty"] for h in result["hooks"]),
        }
        say("== checks")
        for name, ok in checks.items():
            say(f"  {'ok ' if ok else 'BAD'} {name}")
        result.update(checks=checks, injected=injected, captured=len(memories), ok=all(checks.values()))
        recall.close()
    finally:
        paths = DataPaths(home)
        info = health(paths) or {}
        stop_worker(paths)
        _wait_for_exit(info.get("pid"))  # its last log line must not land after the cleanup
        if keep:
            say(f"\nkept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    return result


def _wait_for_exit(pid, seconds: float = 10.0) -> None:
    deadline = time.monotonic() + seconds
    while pid and time.monotonic() < deadline:
        try:
            os.kill(int(pid), 0)
        except (OSError, ValueError):
            return
        time.sleep(0.05)



