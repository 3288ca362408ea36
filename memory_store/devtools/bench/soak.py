"""`recall bench soak`: does the worker's memory stay flat over many hooks?

Sends N hook events (sessions of a prompt with retrieval, three tool calls and a Stop, each with
unique text) through the hook client's own path to one worker, and samples the worker's resident
set size as it goes. A leak shows as a slope over the second half, after caches and the model
have settled.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from ...hook import client
from ...shared import worker_client
from ...shared.paths import DataPaths

SAMPLES = 20


def rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def events(count: int, cwd: str):
    """(hook event name, payload) for `count` events of realistic sessions."""
    number = 0
    while True:
        session = str(uuid.uuid4())
        common: dict[str, str] = {"session_id": session, "cwd": cwd, "transcript_path": f"/tmp/{session}.jsonl"}
        prompt_id = uuid.uuid4().hex
        turn: list[tuple[str, dict[str, Any]]] = [
            ("UserPromptSubmit", {"prompt": f"why does job {number} of the nightly export fail with exit code "
                                            f"{number % 7}?", "prompt_id": prompt_id}),
            *[("PostToolUse", {"tool_name": "Bash", "tool_use_id": uuid.uuid4().hex, "prompt_id": prompt_id,
                               "tool_input": {"command": f"grep -n export-{number}-{i} logs/nightly.log"},
                               "tool_response": {"stdout": f"line {i}: export-{number}-{i} failed: disk quota "
                                                           f"exceeded on /var/spool/export ({number * 3 + i} MB)",
                                                 "stderr": "", "interrupted": False}}) for i in range(3)],
            ("Stop", {"prompt_id": prompt_id, "last_assistant_message": f"Job {number} fails because the export "
                                                                        f"spool is full; raise the quota to "
                                                                        f"{number % 50 + 10} GB."}),
        ]
        for name, fields in turn:
            if number >= count:
                return
            yield name, {"hook_event_name": name, **common, **fields}
            number += 1


def run_soak(hooks: int, echo=print) -> dict:
    base = Path(tempfile.mkdtemp(prefix="recall-soak-"))
    home = str(base / "data")
    project = base / "project"
    (project / ".git").mkdir(parents=True)
    os.environ["RECALL_HOME"] = home
    samples: list[tuple[int, float]] = []
    started = time.perf_counter()
    try:
        pid = None
        every = max(1, hooks // SAMPLES)
        for done, (name, payload) in enumerate(events(hooks, str(project)), start=1):
            client.run(name, json.dumps(payload).encode(), home)
            if pid is None:
                health = worker_client.wait_until_embedded(DataPaths(home), 60)
                pid = (health or {}).get("pid")
                if pid is None:
                    raise RuntimeError("no worker started")
            if done % every == 0 or done == hooks:
                samples.append((done, round(rss_mb(pid), 1)))
                echo(f"{done} hooks: worker RSS {samples[-1][1]} MB")
    finally:
        worker_client.stop_worker(DataPaths(home))
        shutil.rmtree(base, ignore_errors=True)
    half = [mb for done, mb in samples if done > hooks // 2]
    return {"hooks": hooks, "seconds": round(time.perf_counter() - started, 1), "samples": samples,
            "first_mb": samples[0][1], "peak_mb": max(mb for _, mb in samples), "last_mb": samples[-1][1],
            "second_half_growth_mb": round(half[-1] - half[0], 1) if half else 0.0}


def format_soak(report: dict) -> str:
    return (f"worker RSS over {report['hooks']} hooks ({report['seconds']} s): first sample {report['first_mb']} MB, "
            f"peak {report['peak_mb']} MB, last {report['last_mb']} MB; growth over the second half "
            f"{report['second_half_growth_mb']} MB")
