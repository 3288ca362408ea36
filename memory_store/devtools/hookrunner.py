"""Run recall's hooks exactly as Claude Code does: the commands from hooks/hooks.json, through a
shell, with `${CLAUDE_PLUGIN_ROOT}` substituted, the payload on stdin and the output parsed
by Claude Code's rules. Used by `recall demo`, `recall bench latency` and the tests.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

MATCH_FIELD = {"SessionStart": "source", "SessionEnd": "reason", "PreCompact": "trigger",
               "PostToolUse": "tool_name", "PostToolUseFailure": "tool_name", "PreToolUse": "tool_name"}


def find_plugin_root() -> Path | None:
    """The plugin folder: $RECALL_PLUGIN_ROOT, the checkout this package runs from, or the cwd."""
    candidates = [os.environ.get("RECALL_PLUGIN_ROOT"), Path(__file__).resolve().parents[2], Path.cwd()]
    for candidate in candidates:
        if candidate and (Path(candidate) / "hooks" / "hooks.json").is_file():
            return Path(candidate).resolve()
    return None


@dataclass
class HookResult:
    event: str
    returncode: int
    stdout: str
    stderr: str
    ms: float

    @property
    def output(self) -> dict | None:
        """stdout parsed the way Claude Code does: one JSON object, or None (empty or plain text)."""
        text = self.stdout.strip()
        if not text.startswith("{"):
            return None
        try:
            value = json.loads(text)
        except ValueError:
            return None
        return value if isinstance(value, dict) else None

    @property
    def context(self) -> str:
        """The additionalContext the model would receive ('' if none)."""
        output = self.output or {}
        specific = output.get("hookSpecificOutput") or {}
        return specific.get("additionalContext", "") if specific.get("hookEventName") == self.event else ""


class HookRunner:
    def __init__(self, plugin_root: Path, env: dict[str, str] | None = None, plugin_data: Path | None = None):
        self.root = Path(plugin_root)
        self.config = json.loads((self.root / "hooks" / "hooks.json").read_text(encoding="utf-8"))["hooks"]
        self.env = dict(os.environ if env is None else env)
        self.env["CLAUDE_PLUGIN_ROOT"] = str(self.root)
        if plugin_data is not None:
            self.env["CLAUDE_PLUGIN_DATA"] = str(plugin_data)

    def commands(self, event: str, payload: dict | None) -> list[tuple[list[str], float]]:
        """(argv, timeout) of every hook registered for this event whose matcher matches (payload None:
        every hook of the event, as for a payload Claude Code matched itself). Exec form (`args`) runs
        the command itself; shell form runs it through `bash -c`, as Claude Code does."""
        found = []
        value = (payload or {}).get(MATCH_FIELD.get(event, ""), "")
        for group in self.config.get(event, []):
            matcher = group.get("matcher")
            if payload is not None and matcher not in (None, "", "*") and event in MATCH_FIELD:
                if not re.fullmatch(matcher, str(value)):
                    continue
            for hook in group.get("hooks", []):
                if hook.get("type") == "command":
                    command = hook["command"].replace("${CLAUDE_PLUGIN_ROOT}", str(self.root))
                    if isinstance(hook.get("args"), list):
                        argv = [command] + [str(a).replace("${CLAUDE_PLUGIN_ROOT}", str(self.root))
                                            for a in hook["args"]]
                    else:
                        argv = ["bash", "-c", command]
                    found.append((argv, float(hook.get("timeout", 600))))
        return found

    def run(self, event: str, payload: dict | bytes | str, cwd: str | None = None) -> HookResult:
        """Run the (first) hook command of `event` with `payload` on stdin."""
        data = payload if isinstance(payload, bytes) else (
            payload.encode("utf-8", "surrogatepass") if isinstance(payload, str) else json.dumps(payload).encode())
        parsed = payload if isinstance(payload, dict) else {}
        commands = self.commands(event, payload if isinstance(payload, dict) else None)
        if not commands:
            raise LookupError(f"no hook registered for {event}")
        command, timeout = commands[0]
        env = dict(self.env)
        if isinstance(parsed.get("cwd"), str):
            env["CLAUDE_PROJECT_DIR"] = parsed["cwd"]
        workdir = cwd or (parsed.get("cwd") if isinstance(parsed.get("cwd"), str) and os.path.isdir(parsed["cwd"])
                          else None)
        start = time.perf_counter()
        process = subprocess.run(command, input=data, capture_output=True, env=env, cwd=workdir,
                                 timeout=timeout)
        return HookResult(event, process.returncode, process.stdout.decode("utf-8", "replace"),
                          process.stderr.decode("utf-8", "replace"), (time.perf_counter() - start) * 1000)
