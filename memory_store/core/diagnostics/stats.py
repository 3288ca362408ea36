"""Latency numbers from real use: the `hook` lines every hook process logs."""

from __future__ import annotations

from pathlib import Path

from ...shared.logs import read_records


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (q in 0–100) of a non-empty list."""
    ordered = sorted(values)
    rank = max(1, min(len(ordered), round(q / 100 * len(ordered) + 0.5)))
    return ordered[rank - 1]


def summarize(values: list[float]) -> dict:
    if not values:
        return {"n": 0}
    return {"n": len(values), "p50": round(percentile(values, 50), 2), "p95": round(percentile(values, 95), 2),
            "p99": round(percentile(values, 99), 2), "max": round(max(values), 2)}


def hook_latency(log_file: Path) -> dict[str, dict]:
    """Per hook event: how many ran and p50/p95/p99 of their time inside the hook process (ms),
    plus how they were served (worker, spool …)."""
    times: dict[str, list[float]] = {}
    routes: dict[str, dict[str, int]] = {}
    for record in read_records(log_file, "hook"):
        hook, ms = record.get("hook"), record.get("ms")
        if not isinstance(hook, str) or not isinstance(ms, (int, float)):
            continue
        times.setdefault(hook, []).append(float(ms))
        route = str(record.get("route"))
        routes.setdefault(hook, {})[route] = routes.setdefault(hook, {}).get(route, 0) + 1
    return {hook: {**summarize(values), "routes": routes[hook]} for hook, values in sorted(times.items())}
