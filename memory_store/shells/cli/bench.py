"""`recall bench`: retrieval quality, hook latency, size and memory over time."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from .app import BenchDatabaseOption, JsonOption, bench_app, emit_json

RecordOption = Annotated[bool, typer.Option("--record", help="Also write the report into docs/benchmarks.md, under "
                                                           "this version's heading.")]


def _can_record(record: bool) -> None:
    """Before a long run: say at once when --record could not write its page."""
    if record:
        from ...devtools.bench.record import recordable

        problem = recordable()
        if problem:
            raise typer.BadParameter(problem, param_hint="--record")


def _record(bench: str, report: str) -> None:
    from ...devtools.bench.record import record

    typer.echo(f"recorded in {record(bench, report)}", err=True)


@bench_app.command("locomo")
def bench_locomo(
    file: Annotated[Path, typer.Argument(help="LoCoMo JSON (e.g. locomo-dev.json).", exists=True)],
    methods: Annotated[str, typer.Option(help="Comma-separated: fts, dense, hybrid (the default ranking), rrf, "
                                              "bm25 (rank-bm25 in memory, for comparison).")] = "fts,dense,hybrid",
    conversations: Annotated[str | None, typer.Option(help="Comma-separated sample ids (default: all).")] = None,
    workdir: Annotated[Path | None, typer.Option(help="Keep the generated transcripts and store here "
                                                          "(and reuse them on the next run).")] = None,
    settings: Annotated[str | None, typer.Option("--config", help="JSON overrides of the config, e.g. "
                                                    "'{\"ranking\": {\"dense_weight\": 0.4}}'.")] = None,
    injection: Annotated[bool, typer.Option("--injection/--no-injection", help="Also measure injections.")] = True,
    database_url: Annotated[str | None, typer.Option("--database-url", help="Run on a PostgreSQL server instead "
                                                        "of the SQLite file (an administrator's URL: the bench creates "
                                                        "and drops a database of its own).")] = None,
    json_output: JsonOption = False,
    record: RecordOption = False,
):
    """Retrieval quality on LoCoMo: recall@5, recall@10 and MRR per method and question category."""
    _can_record(record)
    from pydantic import ValidationError

    from ...core.config import Config
    from ...devtools.bench.locomo import format_report, run_locomo

    try:
        config = Config.model_validate(json.loads(settings)) if settings else None
    except (ValueError, ValidationError) as exc:
        first = str(exc).splitlines()[0] if not isinstance(exc, ValidationError) else \
            "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()[:3])
        raise typer.BadParameter(f"not a valid recall config: {first}", param_hint="--config") from None
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
        valid = isinstance(data, list) and all(isinstance(s, dict) and "conversation" in s and "qa" in s for s in data)
    except (OSError, UnicodeDecodeError, ValueError):
        valid = False
    if not valid:
        raise typer.BadParameter(f"{file} is not a LoCoMo file (a JSON list of samples with "
                                 "'conversation' and 'qa')", param_hint="FILE")
    report = run_locomo(file, methods=[m.strip() for m in methods.split(",") if m.strip()],
                        conversations=conversations.split(",") if conversations else None, workdir=workdir,
                        echo=lambda message: typer.echo(message, err=True), config=config, injection=injection,
                        database_url=database_url)
    if json_output:
        emit_json(report)
    else:
        typer.echo(format_report(report))
    if record:
        _record("locomo", format_report(report))


@bench_app.command("latency")
def bench_latency(
    memories: Annotated[str, typer.Option(help="Comma-separated store sizes to measure.")] = "10000,100000",
    runs: Annotated[int, typer.Option(min=5)] = 60,
    import_entries: Annotated[int, typer.Option(help="Also time `recall import` of this many transcript "
                                                     "entries with embeddings (0: skip).")] = 10_000,
    database_url: BenchDatabaseOption = None,
    json_output: JsonOption = False,
    record: RecordOption = False,
):
    """Wall time per hook event as Claude Code runs them (a fresh process per call) beside bare Python."""
    _can_record(record)
    from ...devtools.bench.latency import format_latency, run_latency

    try:
        sizes = [int(n) for n in memories.split(",")]
    except ValueError:
        raise typer.BadParameter(f"{memories!r} is not a list of store sizes (e.g. 10000,100000)",
                                 param_hint="--memories") from None
    if any(n <= 0 for n in sizes):
        raise typer.BadParameter("store sizes must be positive", param_hint="--memories")
    report = run_latency(sizes, runs=runs, echo=lambda message: typer.echo(message, err=True),
                         import_entries=import_entries, database_url=database_url)
    if json_output:
        emit_json(report)
    else:
        typer.echo(format_latency(report))
    if record:
        _record("latency", format_latency(report))


@bench_app.command("size")
def bench_size(
    memories: Annotated[str, typer.Option(help="Comma-separated store sizes.")] = "10000,100000,1000000",
    seconds: Annotated[int, typer.Option(min=60, help="Time limit: sizes that would not fit are skipped.")] = 1800,
    database_url: BenchDatabaseOption = None,
    json_output: JsonOption = False,
    record: RecordOption = False,
):
    """Database bytes per memory and search time as the store grows (time-limited)."""
    _can_record(record)
    from ...devtools.bench.size import format_size, run_size

    try:
        sizes = [int(n) for n in memories.split(",")]
    except ValueError:
        raise typer.BadParameter(f"{memories!r} is not a list of store sizes", param_hint="--memories") from None
    report = run_size(sizes, seconds, echo=lambda message: typer.echo(message, err=True), database_url=database_url)
    if json_output:
        emit_json(report)
    else:
        typer.echo(format_size(report))
    if record:
        _record("size", format_size(report))


@bench_app.command("soak")
def bench_soak(
    hooks: Annotated[int, typer.Option(min=100, help="How many hook events to send.")] = 10_000,
    json_output: JsonOption = False,
    record: RecordOption = False,
):
    """The worker's memory over many hooks (it should stay flat)."""
    _can_record(record)
    from ...devtools.bench.soak import format_soak, run_soak

    report = run_soak(hooks, echo=lambda message: typer.echo(message, err=True))
    if json_output:
        emit_json(report)
    else:
        typer.echo(format_soak(report))
    if record:
        _record("soak", format_soak(report))

