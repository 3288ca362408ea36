"""`recall bench latency`: what hooks cost, measured the way Claude Code runs them.

For each store size (default 10k and 100k memories) a temporary data dir is seeded, a
worker is started and warmed (model loaded, queue empty), and then every hook event is run
as a fresh process with its payload on stdin (the command from hooks/hooks.json), many
times, interleaved with a bare `python -I -S -c pass` so both are measured under the same
conditions. UserPromptSubmit uses a cued prompt, so retrieval runs every time.

Also measured: the warm-tier query inside the worker (embedding the prompt, lexical and
vector search, ranking), the hook process's peak RSS, and `recall import` of synthetic
transcripts with embeddings.

Seeding (seed.py): memories are spread over the past year, oldest first (as live capture stores
them), 80% in the measured project. Texts are synthetic sentences over a developer
vocabulary; their vectors are real embeddings of a pool of 2,000 of those texts, reused
with a little noise (the vector search costs the same, and embedding 100k texts would
take ~10 minutes).

With `--database-url` (an administrator's URL of a PostgreSQL server) every size is measured on
both backends in the same run: the SQLite file, then a throwaway database on that server
(`recall team init`, one member role; dropped afterwards).
"""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ...core.diagnostics.stats import summarize
from . import turn
from .seed import SUBJECTS, synthetic_text


def payloads(project: str, session: str) -> dict[str, dict]:
    common = {"session_id": session, "transcript_path": f"/tmp/{session}.jsonl", "cwd": project}
    return {
        "SessionStart": {**common, "hook_event_name": "SessionStart", "source": "startup"},
        "UserPromptSubmit": {**common, "hook_event_name": "UserPromptSubmit", "prompt_id": "p",
                             "permission_mode": "default",
                             "prompt": "Why does the deploy script time out against the staging cluster?"},
        "PreToolUse": {**common, "hook_event_name": "PreToolUse", "tool_name": "Edit", "tool_use_id": "t",
                       "tool_input": {"file_path": f"{project}/deploy/staging.sh", "old_string": "30", "new_string": "60"}},
        "PostToolUse": {**common, "hook_event_name": "PostToolUse", "tool_name": "Bash", "tool_use_id": "t",
                        "tool_input": {"command": "pytest -x tests/test_api.py", "description": "run tests"},
                        "tool_response": {"stdout": "5 passed in 0.31s", "stderr": "", "interrupted": False}},
        "Stop": {**common, "hook_event_name": "Stop", "prompt_id": "p", "stop_hook_active": False,
                 "last_assistant_message": "The deploy script waits 30 s on the staging cluster; raised to 60 s."},
        "SessionEnd": {**common, "hook_event_name": "SessionEnd", "reason": "other"},
    }


def timed_run(argv: list[str], data: bytes, env: dict) -> float:
    """Wall time (ms) of one process fed `data` on stdin, as Claude Code runs a hook."""
    start = time.perf_counter()
    subprocess.run(argv, input=data, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    return (time.perf_counter() - start) * 1000


# Peak RSS of a child, measured from a small parent: on Linux a forked child inherits its
# parent's high-water mark, so measuring from this (model-holding) process would report ours.
_RSS_PROBE = (
    "import os, subprocess, sys, resource\n"
    "p = subprocess.Popen(sys.argv[1:], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n"
    "p.communicate(sys.stdin.buffer.read())\n"
    "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
)


def peak_rss_kb(argv: list[str], data: bytes, env: dict) -> int | None:
    try:
        import resource  # noqa: F401  (POSIX only)
    except ImportError:
        return None
    out = subprocess.run([sys.executable, "-I", "-S", "-c", _RSS_PROBE, *argv], input=data, capture_output=True,
                         env=env)
    value = int(out.stdout or 0)
    return value // 1024 if sys.platform == "darwin" else value


def measure_hooks(root: Path, home: Path, project: str, runs: int, echo=print) -> dict:
    from ..hookrunner import HookRunner

    env = dict(os.environ, RECALL_HOME=str(home), RECALL_PYTHON=sys.executable, CLAUDE_PLUGIN_ROOT=str(root))
    runner = HookRunner(root, env)
    python = sys.executable
    bare_argv = [python, "-I", "-S", "-c", "pass"]
    results: dict[str, list[float]] = {"bare python": []}
    rss: dict[str, list[int | None]] = {"bare python": []}  # None: not measured on this OS
    for event in ("SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop", "SessionEnd"):
        results[event], rss[event] = [], []
    for i in range(runs):
        session = f"latency-{i}"
        for event, payload in payloads(project, session).items():
            command, _ = runner.commands(event, payload)[0]
            data = json.dumps(payload).encode()
            results[event].append(timed_run(command, data, env))
            results["bare python"].append(timed_run(bare_argv, b"", env))
            if i < 5:  # peak memory barely varies; a few samples suffice
                rss[event].append(peak_rss_kb([python, "-I", "-S", str(root / "hooks" / "hook.py"), event], data, env))
                rss["bare python"].append(peak_rss_kb(bare_argv, b"", env))
    report = turn.summarize_against_bare(results)
    for name, row in report.items():
        sizes = [kb for kb in rss[name] if kb is not None]
        row["peak_rss_mb"] = round(max(sizes) / 1024, 1) if sizes and len(sizes) == len(rss[name]) else None
    return report


def worker_stages(home: Path) -> dict[str, dict[str, float]]:
    """p50 per stage of each hook, from the worker's `stages` log lines (worker.log_level = debug)."""
    from ...shared.logs import read_records

    by_hook: dict[str, dict[str, list[float]]] = {}
    for record in read_records(home / "logs" / "recall.log", "stages"):
        stages = by_hook.setdefault(str(record.get("hook")), {})
        for key, value in record.items():
            if key.endswith("_ms") and isinstance(value, (int, float)):
                stages.setdefault(key[:-3], []).append(float(value))
    return {hook: {name: summarize(values)["p50"] for name, values in stages.items()}
            for hook, stages in by_hook.items()}


def worker_rss_mb(home: Path) -> float | None:
    """The worker's resident memory now (Linux /proc), in MB."""
    from ...shared.paths import DataPaths
    from ...shared.worker_client import health

    info = health(DataPaths(home)) or {}
    try:
        with open(f"/proc/{info['pid']}/status", encoding="ascii") as handle:
            for line in handle:
                if line.startswith("VmRSS:"):
                    return round(int(line.split()[1]) / 1024, 1)
    except (KeyError, OSError, ValueError):
        return None
    return None


def measure_warm_query(home: Path, project: str, runs: int = 200) -> dict:
    """The warm-tier query as the worker runs it for a UserPromptSubmit (model loaded, recent vectors
    in RAM, common words counted)."""
    from ...api import open_recall
    from ...core.injection import tiers

    recall = open_recall(home)
    embedder = recall.models.load_embedder()  # once, before timing, as the worker does
    if embedder is not None:
        recall.store.recent_vectors_cache(recall.config.tiers.warm_window_days + 1, embedder.dim)
    recall.store.count_common_words()  # as the worker does when it starts
    prompts = [f"Why does {s} time out against the staging cluster?" for s in SUBJECTS]
    times = []
    for i in range(runs):
        start = time.perf_counter()
        tiers.warm_recall(recall.store, recall.models, project, f"warm-{i}", prompts[i % len(prompts)], time.time())
        times.append((time.perf_counter() - start) * 1000)
    recall.close()
    return summarize(times)


def measure_import(entries: int, echo=print) -> dict:
    """`recall import` of synthetic transcripts with `entries` conversation entries, embeddings included."""
    from ...api import open_recall

    rng = random.Random(entries)
    base = Path(tempfile.mkdtemp(prefix="recall-import-bench-"))
    try:
        folder = base / "projects"
        folder.mkdir()
        per_session = 100
        for s in range(entries // per_session):
            lines, parent = [], None
            for t in range(per_session):
                role = "user" if t % 2 == 0 else "assistant"
                text = synthetic_text(rng) + " " + synthetic_text(rng)
                uuid = f"s{s}-{t}"
                lines.append(json.dumps({
                    "type": role, "uuid": uuid, "parentUuid": parent, "sessionId": f"import-{s}", "cwd": "/bench/app",
                    "timestamp": f"2025-01-{1 + s % 28:02d}T10:{t // 60:02d}:{t % 60:02d}Z", "isSidechain": False,
                    "message": {"role": role, "content": text if role == "user" else [{"type": "text", "text": text}]}}))
                parent = uuid
            (folder / f"import-{s}.jsonl").write_text("\n".join(lines) + "\n")
        recall = open_recall(base / "home")
        embedder = recall.models.load_embedder()  # model loading is not part of an import
        start = time.perf_counter()
        report = recall.import_transcripts([folder])
        imported = time.perf_counter() - start
        start = time.perf_counter()
        embedded = recall.embed_pending()
        embedding = time.perf_counter() - start
        # The model alone on the same texts (a sample), for comparison: what embedding could cost at best.
        sample = [memory.text for memory in recall.store.select_memories(newest=1000)]
        start = time.perf_counter()
        if embedder is not None:
            embedder.embed(sample)
        raw = time.perf_counter() - start
        recall.close()
        return {"entries": report.entries, "memories": report.new_memories, "import_s": round(imported, 1),
                "entries_per_s": round(report.entries / imported) if imported else None,
                "embedded": embedded, "embed_s": round(embedding, 1),
                "embedded_per_s": round(embedded / embedding, 1) if embedding and embedded else None,
                "model_per_s": round(len(sample) / raw, 1) if embedder is not None and raw else None}
    finally:
        shutil.rmtree(base, ignore_errors=True)


def run_latency(sizes: list[int], runs: int = 60, echo=print, import_entries: int = 10_000,
                database_url: str | None = None) -> dict:
    from ..hookrunner import find_plugin_root

    root = find_plugin_root()
    if root is None:
        raise SystemExit("run from the recall checkout (hooks/hooks.json is needed)")
    report: dict = {"python": sys.version.split()[0], "cpus": os.cpu_count(), "runs": runs, "sizes": {}}
    if database_url:
        report["postgres"] = {}
    for size in sizes:
        echo(f"{size} memories:")
        report["sizes"][str(size)] = measure_size(root, size, runs, echo)
        if database_url:
            echo(f"{size} memories on PostgreSQL:")
            report["postgres"][str(size)] = measure_size(root, size, runs, echo, database_url)
    echo("hooks with no worker (first-run setup under way):")
    base = Path(tempfile.mkdtemp(prefix="recall-latency-noworker-"))
    try:
        report["no_worker"] = turn.measure_without_worker(root, base, payloads(str(base), "no-worker"),
                                                          runs=max(5, runs // 3))
    finally:
        shutil.rmtree(base, ignore_errors=True)
    if import_entries:
        echo(f"import of {import_entries} transcript entries:")
        report["import"] = measure_import(import_entries, echo)
    return report


def measure_size(root: Path, size: int, runs: int, echo, database_url: str | None = None) -> dict:
    """Every hook, the worker's stages and the warm-tier query on a store of `size` memories: the SQLite file,
    or a throwaway database on the server of `database_url` (an administrator's URL)."""
    from ...shared.paths import DataPaths
    from ...shared.worker_client import stop_worker, wait_until_embedded
    from .seed import BenchDatabase, database_env, seed_store

    base = Path(tempfile.mkdtemp(prefix=f"recall-latency-{size}-"))
    home, project = base / "home", str(base / "project")
    os.makedirs(Path(project) / ".git")
    database = BenchDatabase(database_url, echo) if database_url else None
    try:
        with database_env(database):
            seed_store(home, size, project, echo, database=database)
            # The worker logs each request's stages (core/stages.py); they are read back below.
            (home / "config.json").write_text(json.dumps({"worker": {"log_level": "debug"}}), encoding="utf-8")
            env = dict(os.environ, RECALL_HOME=str(home), RECALL_PYTHON=sys.executable)
            subprocess.run([str(root / "hooks" / "run"), "SessionStart"], input=json.dumps(
                payloads(project, "warmup")["SessionStart"]).encode(), env=env, capture_output=True, timeout=60)
            wait_until_embedded(DataPaths(home), 180, prepared=True)  # what a worker does once after its start
            hooks = measure_hooks(root, home, project, runs, echo)
            stages = worker_stages(home)
            rss = worker_rss_mb(home)
            warm = measure_warm_query(home, project)
            search = turn.measure_search_commands(root, home, project, runs=max(3, runs // 3))
            # 10 prompts after a pause at the default 60 runs (a p50 of 5 gave 1.30x and 1.61x for one commit)
            after_idle = turn.measure_prompt_after_idle(root, home, project,
                                                        payloads(project, "after-idle")["UserPromptSubmit"],
                                                        runs=max(1, runs // 6))
        echo(f"  UserPromptSubmit p50 {hooks['UserPromptSubmit']['p50']} ms "
             f"({hooks['UserPromptSubmit']['p50_vs_bare']}x bare), warm query p50 {warm['p50']} ms")
        return {"hooks_ms": hooks, "worker_stages_ms": stages, "worker_rss_mb": rss, "warm_query_ms": warm,
                "turn": turn.blocking_per_turn(root, hooks), "search_commands_ms": search,
                "prompt_after_idle_ms": after_idle}
    finally:
        stop_worker(DataPaths(home))
        if database is not None:
            database.drop()
        shutil.rmtree(base, ignore_errors=True)


def turn_lines(data: dict) -> list[str]:
    """The turn-level figures of one store size (bench/turn.py)."""
    lines = []
    if "turn" in data:
        t = data["turn"]
        lines.append(f"  blocking hook time per turn with {t['tool_calls']} tool calls (simulated from the p50s; "
                     f"async: {', '.join(t['async']) or 'none'}): {t['blocking_ms']} ms = {t['vs_prompt_hook']}x "
                     "the UserPromptSubmit hook alone")
    for name, row in data.get("search_commands_ms", {}).items():
        if name != "bare python":
            lines.append(f"  {name}: p50 {row['p50']} ms ({row['p50_vs_bare']}x bare), p95 {row['p95']} ms"
                         + ("" if row["answered"] else ", NOT ANSWERED"))
    if "prompt_after_idle_ms" in data:
        idle, warm = data["prompt_after_idle_ms"], data["hooks_ms"]["UserPromptSubmit"]["p50"]
        lines.append(f"  first prompt after twice the idle timeout, session open: p50 {idle['p50']} ms "
                     f"({idle['p50'] / warm:.2f}x a warm prompt)")
    return lines


def format_latency(report: dict) -> str:
    lines = [f"hook latency (python {report['python']}, {report['cpus']} cpus, {report['runs']} runs per event)"]
    runs = [("", size, data) for size, data in report["sizes"].items()]
    runs += [(" on PostgreSQL", size, data) for size, data in report.get("postgres", {}).items()]
    for where, size, data in runs:
        lines.append(f"\n{size} memories{where}: wall time per hook process (ms)")
        lines.append(f"  {'event':<18} {'p50':>7} {'p95':>7} {'p99':>7} {'x bare':>7} {'peak RSS':>9}")
        for name, row in data["hooks_ms"].items():
            lines.append(f"  {name:<18} {row['p50']:>7} {row['p95']:>7} {row['p99']:>7} {row['p50_vs_bare']:>7} "
                         f"{row['peak_rss_mb']:>7} MB")
        lines.append("  worker time per stage, p50 (ms):")
        for hook, stages in data.get("worker_stages_ms", {}).items():
            order = sorted(stages, key=lambda name: (name == "total", -stages[name]))
            lines.append(f"    {hook:<18} " + ", ".join(f"{name} {stages[name]}" for name in order))
        warm = data["warm_query_ms"]
        lines.append(f"  warm-tier query inside the worker: p50 {warm['p50']} ms, p95 {warm['p95']} ms, "
                     f"p99 {warm['p99']} ms")
        if data.get("worker_rss_mb") is not None:
            lines.append(f"  worker RSS after the runs: {data['worker_rss_mb']} MB")
        lines += turn_lines(data)
    for size, data in report.get("postgres", {}).items():
        local = report["sizes"][size]
        ratio = data["hooks_ms"]["UserPromptSubmit"]["p50"] / local["hooks_ms"]["UserPromptSubmit"]["p50"]
        warm = data["warm_query_ms"]["p50"] / local["warm_query_ms"]["p50"]
        lines.append(f"\n{size} memories, PostgreSQL against SQLite in this run: UserPromptSubmit p50 "
                     f"{data['hooks_ms']['UserPromptSubmit']['p50']} vs {local['hooks_ms']['UserPromptSubmit']['p50']} "
                     f"ms ({ratio:.2f}x), warm query p50 {data['warm_query_ms']['p50']} vs "
                     f"{local['warm_query_ms']['p50']} ms ({warm:.2f}x)")
    if "no_worker" in report:
        none = report["no_worker"]
        lines.append(f"\nno worker yet (first-run setup under way), every event spooled ({none['spooled']} of "
                     f"{none['events']}): p50 per hook (ms)")
        lines.append("  " + ", ".join(f"{name} {row['p50']} ({row['p50_vs_bare']}x)"
                                      for name, row in none["hooks_ms"].items()))
    if "import" in report:
        imp = report["import"]
        lines.append(f"\nimport: {imp['entries']} entries -> {imp['memories']} memories in {imp['import_s']} s "
                     f"({imp['entries_per_s']} entries/s, searchable by words from then on); embeddings: "
                     f"{imp['embedded']} in {imp['embed_s']} s ({imp['embedded_per_s']}/s; the model alone on the "
                     f"same texts: {imp['model_per_s']}/s)")
    return "\n".join(lines)
