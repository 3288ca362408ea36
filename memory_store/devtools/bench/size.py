"""`recall bench size`: how the store grows, and what that does to search.

For each store size (default 10k, 100k, 1M memories of realistic length, spread over a year, embedded with
reused real vectors as in `recall bench latency`), in a fresh data dir: database bytes per memory (the file
and its WAL after a checkpoint; on PostgreSQL its tables and indexes), the time per `recall search` (hybrid,
one project, all time, as the worker answers it) and per warm-tier query (the prompt path, recent vectors in RAM).
With `--database-url`
(an administrator's URL) each size runs on a throwaway PostgreSQL database too, in the same run. The run is
time-limited: a size whose seeding would not fit in what is left of `seconds` is skipped, and its bytes are
extrapolated from the largest size measured (said so in the report).
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from pathlib import Path

from ...core.diagnostics.stats import summarize
from .latency import measure_warm_query
from .seed import SUBJECTS, BenchDatabase, database_env, seed_store

QUERIES = [f"what did we change about {s}?" for s in SUBJECTS]
DAILY_MEMORIES = {"typical": 100, "heavy": 270}  # a working day of Claude Code: prompts, answers, tool calls


def measure_search(home: Path, project: str, runs: int = 40) -> dict:
    """`recall search` as the worker answers it: model loaded, vectors in RAM as the worker holds them (a big SQLite
    store's older ones in int8: storage/recent_vectors.py), its common words counted."""
    from ...api import open_recall

    recall = open_recall(home)
    embedder = recall.models.load_embedder()
    if embedder is not None:
        recall.store.recent_vectors_cache(recall.config.tiers.warm_window_days + 1, embedder.dim)
    recall.store.count_common_words()  # as the worker does when it starts
    times = []
    for i in range(runs):
        start = time.perf_counter()
        recall.search(QUERIES[i % len(QUERIES)], limit=10, project=project, touch=False)
        times.append((time.perf_counter() - start) * 1000)
    recall.close()
    return summarize(times)


def db_bytes(home: Path) -> int:
    """The store's size on disk: the SQLite file with its WAL after a checkpoint, or the server's tables."""
    from ...api import open_recall

    recall = open_recall(home, load_models=False)
    recall.store.checkpoint()
    size = recall.store.size_bytes()
    recall.close()
    return size


def run_size(sizes: list[int], seconds: float = 1800, echo=print, database_url: str | None = None) -> dict:
    started = time.monotonic()
    report: dict = {"sizes": {}, "skipped": {}, "seconds": seconds}
    if database_url:
        report["postgres"] = {}
    rate = None  # memories seeded per second, measured (both backends, when both run)
    for size in sorted(sizes):
        left = seconds - (time.monotonic() - started)
        if rate and size / rate > left:
            report["skipped"][str(size)] = f"seeding would take ~{size / rate / 60:.0f} min, {left / 60:.0f} min left"
            echo(f"{size} memories: skipped ({report['skipped'][str(size)]})")
            continue
        seeded_at = time.monotonic()
        echo(f"{size} memories:")
        report["sizes"][str(size)] = measure_store(size, echo)
        if database_url:
            echo(f"{size} memories on PostgreSQL:")
            report["postgres"][str(size)] = measure_store(size, echo, database_url)
        rate = size / (time.monotonic() - seeded_at)
    measured = report["sizes"]
    if measured:
        largest = measured[max(measured, key=int)]
        per_memory = largest["bytes_per_memory"]
        report["per_year_mb"] = {name: round(per_day * 365 * per_memory / 1e6) for name, per_day in DAILY_MEMORIES.items()}
        for size in report["skipped"]:
            report["skipped"][size] += f"; extrapolated size {int(size) * per_memory / 1e9:.1f} GB"
    return report


def measure_store(size: int, echo, database_url: str | None = None) -> dict:
    base = Path(tempfile.mkdtemp(prefix=f"recall-size-{size}-"))
    home, project = base / "home", str(base / "project")
    os.makedirs(Path(project) / ".git")
    database = BenchDatabase(database_url, echo) if database_url else None
    try:
        with database_env(database):
            seeded_at = time.monotonic()
            seed_store(home, size, project, echo, realistic=True, database=database)
            seeding = time.monotonic() - seeded_at
            total = db_bytes(home)
            search = measure_search(home, project)
            warm = measure_warm_query(home, project, runs=60)
        echo(f"  {total / 1e6:.0f} MB ({total / size:.0f} B per memory); search p50 {search['p50']} ms, "
             f"warm query p50 {warm['p50']} ms")
        return {"db_bytes": total, "bytes_per_memory": round(total / size), "search_ms": search,
                "warm_query_ms": warm, "seed_s": round(seeding, 1)}
    finally:
        if database is not None:
            database.drop()
        shutil.rmtree(base, ignore_errors=True)


def format_size(report: dict) -> str:
    lines = [f"store size and search time (memories of realistic length over a year; {os.cpu_count()} cpus)",
             f"  {'memories':>9} {'store':>10} {'database':>10} {'per memory':>11} {'search p50/p95':>16} "
             f"{'warm query p50/p95':>20}"]
    rows = [("sqlite", size, row) for size, row in report["sizes"].items()]
    rows += [("postgres", size, row) for size, row in report.get("postgres", {}).items()]
    for store, size, row in sorted(rows, key=lambda r: (int(r[1]), r[0] != "sqlite")):
        lines.append(f"  {int(size):>9} {store:>10} {row['db_bytes'] / 1e6:>7.0f} MB {row['bytes_per_memory']:>9} B "
                     f"{row['search_ms']['p50']:>7} / {row['search_ms']['p95']:<6} ms "
                     f"{row['warm_query_ms']['p50']:>8} / {row['warm_query_ms']['p95']:<6} ms")
    for size, why in report["skipped"].items():
        lines.append(f"  {int(size):>9} not measured: {why}")
    if "per_year_mb" in report:
        lines.append("  a year of daily use: " + ", ".join(
            f"{name} ({DAILY_MEMORIES[name]} memories a day) ~{mb} MB" for name, mb in report["per_year_mb"].items()))
    return "\n".join(lines)
