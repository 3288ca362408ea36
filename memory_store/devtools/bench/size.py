"""`recall bench size`: how the store grows, and what that does to search.

For each store size (default 10k, 100k, 1M memories of realistic length, spread over a year, embedded with
reused real vectors as in `recall bench latency`), in a fresh data dir: database bytes per memory (the file
and its WAL after a checkpoint), the time per `recall search` (hybrid, one project, all time) and per warm-tier
query (the prompt path, recent vectors in RAM). Seeding runs at a few hundred memories a second, so the run
is time-limited: a size whose seeding would not fit in what is left of `seconds` is skipped, and its bytes
are extrapolated from the largest size measured (said so in the report).
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from pathlib import Path

from ...core.stats import summarize
from .latency import SUBJECTS, measure_warm_query, seed_store

QUERIES = [f"what did we change about {s}?" for s in SUBJECTS]
DAILY_MEMORIES = {"typical": 100, "heavy": 270}  # a working day of Claude Code: prompts, answers, tool calls


def measure_search(home: Path, project: str, runs: int = 40) -> dict:
    from ...api import open_recall

    recall = open_recall(home)
    recall.models.load_embedder()
    times = []
    for i in range(runs):
        start = time.perf_counter()
        recall.search(QUERIES[i % len(QUERIES)], limit=10, project=project, touch=False)
        times.append((time.perf_counter() - start) * 1000)
    recall.close()
    return summarize(times)


def db_bytes(home: Path) -> int:
    from ...api import open_recall

    recall = open_recall(home, load_models=False)
    recall.store.checkpoint()
    size = sum(os.path.getsize(home / name) for name in ("recall.db", "recall.db-wal") if (home / name).exists())
    recall.close()
    return size


def run_size(sizes: list[int], seconds: float = 1800, echo=print) -> dict:
    started = time.monotonic()
    report: dict = {"sizes": {}, "skipped": {}, "seconds": seconds}
    rate = None  # memories seeded per second, measured
    for size in sorted(sizes):
        left = seconds - (time.monotonic() - started)
        if rate and size / rate > left:
            report["skipped"][str(size)] = f"seeding would take ~{size / rate / 60:.0f} min, {left / 60:.0f} min left"
            echo(f"{size} memories: skipped ({report['skipped'][str(size)]})")
            continue
        base = Path(tempfile.mkdtemp(prefix=f"recall-size-{size}-"))
        home, project = base / "home", str(base / "project")
        os.makedirs(Path(project) / ".git")
        try:
            echo(f"{size} memories:")
            seeded_at = time.monotonic()
            seed_store(home, size, project, echo, realistic=True)
            rate = size / (time.monotonic() - seeded_at)
            total = db_bytes(home)
            search = measure_search(home, project)
            warm = measure_warm_query(home, project, runs=60)
            report["sizes"][str(size)] = {"db_bytes": total, "bytes_per_memory": round(total / size),
                                          "search_ms": search, "warm_query_ms": warm}
            echo(f"  {total / 1e6:.0f} MB ({total / size:.0f} B per memory); search p50 {search['p50']} ms, "
                 f"warm query p50 {warm['p50']} ms")
        finally:
            shutil.rmtree(base, ignore_errors=True)
    measured = report["sizes"]
    if measured:
        largest = measured[max(measured, key=int)]
        per_memory = largest["bytes_per_memory"]
        report["per_year_mb"] = {name: round(per_day * 365 * per_memory / 1e6) for name, per_day in DAILY_MEMORIES.items()}
        for size in report["skipped"]:
            report["skipped"][size] += f"; extrapolated size {int(size) * per_memory / 1e9:.1f} GB"
    return report


def format_size(report: dict) -> str:
    lines = ["store size and search time (memories of realistic length over a year; 2 cpus)",
             f"  {'memories':>9} {'database':>10} {'per memory':>11} {'search p50/p95':>16} {'warm query p50/p95':>20}"]
    for size, row in report["sizes"].items():
        lines.append(f"  {int(size):>9} {row['db_bytes'] / 1e6:>7.0f} MB {row['bytes_per_memory']:>9} B "
                     f"{row['search_ms']['p50']:>7} / {row['search_ms']['p95']:<6} ms "
                     f"{row['warm_query_ms']['p50']:>8} / {row['warm_query_ms']['p95']:<6} ms")
    for size, why in report["skipped"].items():
        lines.append(f"  {int(size):>9} not measured: {why}")
    if "per_year_mb" in report:
        lines.append("  a year of daily use: " + ", ".join(
            f"{name} ({DAILY_MEMORIES[name]} memories a day) ~{mb} MB" for name, mb in report["per_year_mb"].items()))
    return "\n".join(lines)
