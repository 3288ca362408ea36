"""All of recall's tunables, in one validated place.

Every threshold, window, weight and budget the store uses is a field here, with its
default and a description. Users override any of them in `<data dir>/config.json`
(nested like the model, e.g. `{"tiers": {"warm_top_k": 3}}`). The hook client does not
import this module (pydantic costs ~60 ms); it has only transport limits of its own.
"""

from __future__ import annotations

import difflib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, field_validator

from ..shared.database_url import database_url, masked, url_problem
from ..shared.wire import DATABASE_URL_ENV


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class CaptureConfig(_Section):
    """What the hooks keep of each event, and what they skip."""

    skip_tools: list[str] = Field(
        default=["Glob", "Grep", "LS", "TodoWrite", "TodoRead", "ToolSearch", "ExitPlanMode", "BashOutput"],
        description="Tools whose PostToolUse events are noise for memory (listing, searching, bookkeeping).",
    )
    max_prompt_chars: int = Field(4000, ge=100, description="A prompt longer than this is trimmed before storage.")
    max_answer_chars: int = Field(
        1200, ge=100, description="Extractive summary length of the assistant's answer in an exchange."
    )
    max_report_chars: int = Field(
        6000, ge=100, description="A subagent's report is kept whole up to this length, every sentence searchable "
        "(a longer one is summarized to it): it is the whole of what the agent found, not an answer's gist.")
    max_tool_input_chars: int = Field(300, ge=50, description="Compact rendering of a tool call's input.")
    max_tool_output_chars: int = Field(600, ge=50, description="Trimmed tool output kept with an observation.")
    max_error_chars: int = Field(800, ge=50, description="Error text kept from a failed tool call.")
    ignore_projects: list[str] = Field(
        default=[], description="Globs of project paths never captured nor injected into (e.g. \"~/work/secret-*\").")


class CueConfig(_Section):
    """When a prompt triggers warm-tier retrieval. Each cue can be switched off."""

    question: bool = Field(True, description="A question mark or a question word at the start.")
    path: bool = Field(True, description="A file or directory reference (src/app.py, ./docs, ~/x).")
    long_prompt: bool = Field(True, description="More than `long_prompt_words` words.")
    long_prompt_words: int = Field(10, ge=1, description="How many words make a prompt long (the `long_prompt` cue).")
    temporal: bool = Field(True, description="yesterday, last week, earlier, before, previously, ago …")


class GateConfig(_Section):
    """The injection gate (core/retrieval/gate.py): inject or stay silent, from several signals. Defaults measured on
    the coding-recall development scenarios and LoCoMo dev (docs/retrieval.md)."""

    mode: Literal["signals", "cues"] = Field(
        "signals", description="signals: intent + per-candidate evidence (the default); cues: the seed's rule, a cue "
        "in the prompt then cosine >= tiers.warm_min_similarity.")
    candidates: int = Field(12, ge=1, le=50, description="How many episodes of the best-ranked memories are judged.")
    thresholds: dict[str, float] = Field(
        default={"recall": 0.35, "project": 0.45, "statement": 0.6, "general": 1.0},
        description="Evidence a candidate needs, by the prompt's intent (core/retrieval/intent.py).")
    coverage_weight: float = Field(0.3, ge=0, description="Weight of the share of the prompt's words its episode holds.")
    agreement_weight: float = Field(
        0.1, ge=0, description="Bonus when the lexical and dense rankings both put it in their top 3.")
    kind_bonus: dict[str, float] = Field(
        default={"exchange": 0.05, "prompt": 0.0, "error": 0.0, "tool": -0.1},
        description="Added to the evidence of each kind of memory.")
    order: Literal["evidence", "score"] = Field(
        "score", description="Which candidates above the bar are taken first: the best ranked by search (LoCoMo dev: "
        "52.3 % of injections hold an evidence turn, against 48.1 % for the most evident first), or the most evident.")
    margin: float = Field(
        0.25, ge=0, description="A second memory is taken only if its evidence is at most this far below the first's "
        "(a much weaker match beside a strong one is a lookalike).")
    existence_margin: float = Field(
        0.15, ge=0, description="Added to the bar for questions whether something happened at all ('did we ever …?').")
    answer_type_weight: float = Field(
        0.1, ge=0, description="Bonus when the episode holds the kind of answer the prompt wants (a path for "
        "'where', a value for 'how long', a rule for 'can I' …; intent.ASKS).")


class SearchConfig(_Section):
    """What the search surfaces show (CLI `search`, /recall:log-search, the MCP `search` tool, the viewer): hits with
    enough evidence of being about the query, else "nothing relevant" (core/retrieval/search.py `relevant`). `--all` shows
    everything. Measured on the coding-recall development set (docs/retrieval.md)."""

    floor: float = Field(0.45, ge=0, description="Evidence a hit needs to be shown: its cosine similarity to the query "
                         "plus `coverage_weight` times the share of the query's distinctive words it holds.")
    coverage_weight: float = Field(0.5, ge=0, description="Weight of the words a hit shares with the query.")


class ContextConfig(_Section):
    """Neighbouring turns indexed with each conversational memory (for matching, never shown)."""

    turns_before: int = Field(2, ge=0, le=5, description="Earlier turns of the session indexed with a memory.")
    turns_after: int = Field(2, ge=0, le=5, description="Later turns of the session indexed with a memory.")
    max_turn_chars: int = Field(400, ge=50, description="Each neighbouring turn is cut to this length.")


class TierConfig(_Section):
    """The hot tier (the last interactions, offered at SessionStart) and the warm tier (searched per prompt)."""

    hot_size: int = Field(5, ge=0, description="Interactions kept in the hot deque.")
    hot_window_hours: float = Field(24, gt=0, description="The hot tier forgets interactions older than this.")
    warm_window_days: float = Field(
        7, gt=0, description="Memories younger than this can be injected on a cued prompt; older ones are cold."
    )
    warm_min_similarity: float = Field(
        0.4, ge=0, le=1, description="Cosine similarity a dense match needs to be injected."
    )
    warm_top_k: int = Field(2, ge=0, description="At most this many memories per injection.")


class InjectConfig(_Section):
    """How much recall adds to Claude's context, and where."""

    budget_chars: int = Field(
        1500, ge=500, le=8000,
        description="Characters of recalled context per injection (room for the header and at least one memory; "
        "inject.HARD_CAP is 9,000, Claude Code's limit 10,000).",
    )
    hot_budget_chars: int = Field(1500, ge=500, le=8000, description="Characters of the SessionStart hot-tier brief.")
    max_item_chars: int = Field(700, ge=80, description="One recalled memory is cut to this length.")
    compact_budget_chars: int = Field(
        2000, ge=300, le=8000, description="Characters of key facts handed to a compaction (PreCompact).")
    into_subagents: bool = Field(False, description="Also inject into subagents' events (off: a subagent works on "
                                 "its task with the context it was given).")
    before_tools: bool = Field(True, description="Before Claude edits, writes or reads a file or runs a command "
                               "(PreToolUse), bring what earlier sessions learned about it: its rules, pitfalls, "
                               "decisions and the errors it caused (once per file or command per session).")
    on_failure: bool = Field(True, description="When a command fails with an error met before (PostToolUseFailure), "
                             "bring the fix that followed it then.")
    action_budget_chars: int = Field(600, ge=200, le=2000, description="Characters one PreToolUse or "
                                     "PostToolUseFailure adds at most.")
    knowledge: bool = Field(True, description="Show the current facts, procedures and decisions that answer a "
                            "prompt first, before the episodes (core/knowledge/; off: episodes only).")


class RankingConfig(_Section):
    """How candidates are scored: lexical and dense fusion, recency, RFM priority, strength, trust, time."""

    fusion: Literal["weighted", "rrf", "fts", "dense"] = Field(
        "weighted", description="How lexical and dense candidates are combined (measured: docs/retrieval.md)."
    )
    rrf_k: int = Field(60, ge=1, description="Reciprocal rank fusion constant.")
    lexical_weight: float = Field(0.7, ge=0, description="Weight of FTS5 BM25 in the weighted fusion.")
    dense_weight: float = Field(0.3, ge=0, description="Weight of cosine similarity in the weighted fusion.")
    fts_column_weights: tuple[float, float, float] = Field(
        (1.0, 0.5, 0.25), description="BM25 weights of a memory's own text, the turns before it and after it."
    )
    candidates: int = Field(
        120, ge=5, description="Candidates taken from each retriever before fusion (60 -> 120: LoCoMo R@10 "
        "+0.003 on the tuning part, +0.011 on the held-back part)."
    )
    common_term_share: float = Field(
        0.1, ge=0, le=1, description="In a project of 2,000 memories or more, a lexical match must hold one of the "
        "query's words that at most this share of its memories hold; common words still count in the score "
        "(0: off; speed only, see term_frequency.py)."
    )
    session_weight: float = Field(
        0.0, ge=0, description="Boost for memories whose session matches the query as a whole (see search.py)."
    )
    session_top: int = Field(3, ge=1, description="Candidates per session that make up its score.")
    recency_weight: float = Field(0.05, ge=0, description="How much exp(-age/decay) adds to a score.")
    pin_weight: float = Field(0.02, ge=0, description="Added to a pinned memory's score: first among equals.")
    strength_weight: float = Field(
        0.02, ge=0, description="How much a memory's strength (the forgetting curve, core/retrieval/strength.py) adds "
        "to its score.")
    trust_weight: float = Field(
        0.03, ge=0, description="How much a memory's trust (core/trust.py: the user's words 1.0 ... raw tool output "
        "0.4) adds to its score.")
    recency_decay_days: float = Field(30, gt=0, description="The decay constant of the recency term exp(-age/decay).")
    priority_weight: float = Field(0.05, ge=0, description="How much the RFM priority adds to a score.")
    rfm_recency: float = Field(0.3, ge=0, description="Share of recency (R) in the RFM priority.")
    rfm_frequency: float = Field(0.2, ge=0, description="Share of frequency (F: uses and sightings) in the RFM priority.")
    rfm_importance: float = Field(0.5, ge=0, description="Share of importance (I: guessed at capture) in the RFM priority.")
    rfm_half_life_days: float = Field(14, gt=0, description="Half-life of R since the memory was last seen or used.")
    temporal_bucket_weights: dict[str, float] = Field(
        default={"hour": 1.0, "day": 0.8, "week": 0.5, "month": 0.3, "older": 0.1},
        description="Boost by age bucket for queries that ask about time without naming one.",
    )
    temporal_weight: float = Field(0.1, ge=0, description="How much the age bucket adds for a query about time.")
    date_weight: float = Field(
        0.3, ge=0, description="Boost for memories inside the time a query names ('in July 2022', 'yesterday')."
    )
    date_window_before_days: float = Field(2, ge=0, description="A named time's window starts this much earlier…")
    date_window_after_days: float = Field(
        21, ge=0, description="…and ends this much later: events are reported after they happen."
    )
    dedup_similarity: float = Field(
        0.97, gt=0, le=1,
        description="A new memory this close (cosine) to an older one of its kind, in the month before, "
        "supersedes it (1: never).",
    )


class StrengthConfig(_Section):
    """The forgetting curve (core/retrieval/strength.py)."""

    half_life_days: dict[str, float] = Field(
        default={"note": 180.0, "prompt": 60.0, "exchange": 45.0, "error": 30.0, "tool": 10.0, "default": 30.0},
        description="Days for an unused memory's strength to halve, by kind; each use doubles it.")
    consolidate_after: int = Field(3, ge=1, description="Uses after which a memory decays no more.")
    prune_trivial: bool = Field(True, description="Delete greetings and acknowledgements once they leave the hot "
                                "tier (never anything with a decision, fix, value, path or preference in it).")
    prune_below_importance: float = Field(0.45, ge=0, le=1, description="Only memories at most this important are "
                                          "ever pruned.")


class EmbeddingConfig(_Section):
    """The embedding model and how it is run (the worker keeps it loaded)."""

    model: str = Field(
        "recall/all-MiniLM-L6-v2-int8",
        description="fastembed model name. The default ships with recall (offline); others may download.",
    )
    threads: int | None = Field(None, ge=1, description="Model calls run at once when many texts are embedded (None: "
                                "one per core). Each call uses one core: a query's embedding runs beside its word "
                                "search, and bulk work ran 10-20 % faster than one call on two cores.")
    batch_size: int = Field(16, ge=1, description="Texts per model call at most (small batches pad less).")
    batch_chars: int = Field(
        4000, ge=50, description="At most this many characters in the model calls running at once, each call counted "
        "as its longest text times its texts: onnxruntime keeps the memory of its largest calls for the life of the "
        "process (16 texts of 1,000 characters left the worker at 850 MB, 4 of them at 400 MB, at the same speed).")
    max_chars: int = Field(1000, ge=50, description="Text beyond this is not embedded (the model sees 256 tokens).")
    int8: bool = Field(
        True, description="Run the shipped model's weight products in int8 (core/embedding/minilm.py): a query in half "
        "the time, a third of the memory, vectors within a cosine of 0.995 of the published graph's (off: that graph "
        "as is).")


class RerankConfig(_Section):
    """Optional cross-encoder rerank (fastembed TextCrossEncoder). Off by default: no reranker model
    ships in a PyPI package, so it needs a download (`model`) or local files (`model_path`)."""

    enabled: bool = Field(False, description="Rerank the top candidates with a cross-encoder.")
    model: str = Field("Xenova/ms-marco-MiniLM-L-6-v2", description="fastembed TextCrossEncoder model name.")
    model_path: str | None = Field(
        None, description="A directory holding model.onnx and its tokenizer files: used offline, no download."
    )
    top_n: int = Field(20, ge=2, description="How many of the best candidates the cross-encoder reorders.")


class WorkerConfig(_Section):
    """The background worker that holds the store and the model between hooks."""

    idle_timeout_minutes: float = Field(
        30, gt=0, description="The worker exits this long after the last request and the last Claude Code session it "
                              "served ended (never while one is open).")
    embed_batch: int = Field(
        256, ge=1, description="Memories taken from the embedding queue per round (sorted by length, less padding)."
    )
    query_core: bool = Field(
        True, description="Keep one CPU for the prompt's query embedding, and the worker's request threads off it "
        "(Linux, 2 CPUs or more; read when the worker starts). Left to the scheduler, the request thread and the "
        "model's often shared a core, and the model's 5 ms took 8 (worker/embedding.py).")
    log_level: Literal["info", "debug"] = Field(
        "info", description="debug: the worker also logs each request's time per stage (embed, lexical, vector, "
        "rank, gate, render, store, ...) as a `stages` line.")


class StorageConfig(_Section):
    """Where memories are kept (core/storage/)."""

    url: str = Field(
        "", description="A PostgreSQL URL (postgresql://alice@db.internal/recall) to share memory across machines and "
        "with a team; empty: the SQLite file in the data dir. The environment variable RECALL_DATABASE_URL wins. "
        "A password may be given here, in ~/.pgpass or as libpq reads it; recall never prints it.")

    @field_validator("url")
    @classmethod
    def _a_database_url(cls, value: str) -> str:
        problem = url_problem(value.strip())
        if problem:
            raise ValueError(problem)
        return value.strip()


class Config(_Section):
    """recall's settings: the defaults, overridden by config.json in the data dir (docs/configuration.md)."""

    _problems: list = PrivateAttr(default_factory=list)  # what load_config could not use (config_problems)
    capture: CaptureConfig = CaptureConfig()
    cues: CueConfig = CueConfig()
    gate: GateConfig = GateConfig()
    search: SearchConfig = SearchConfig()
    context: ContextConfig = ContextConfig()
    tiers: TierConfig = TierConfig()
    inject: InjectConfig = InjectConfig()
    ranking: RankingConfig = RankingConfig()
    embedding: EmbeddingConfig = EmbeddingConfig()
    rerank: RerankConfig = RerankConfig()
    strength: StrengthConfig = StrengthConfig()
    worker: WorkerConfig = WorkerConfig()
    storage: StorageConfig = StorageConfig()


@dataclass(frozen=True)
class ConfigProblem:
    """A setting of config.json that could not be used, and what was used instead."""

    file: str
    key: str  # "tiers.hot_size"; "" for the file as a whole
    value: str
    reason: str
    used: str

    def __str__(self) -> str:
        where = f"{self.file}: {self.key}" if self.key else self.file
        value = f" = {self.value}" if self.key else ""
        return f"{where}{value}: {self.reason}; " + (f"using {self.used}" if self.used else "ignored")


def load_config(path: Path | None) -> Config:
    """The defaults, overridden by the JSON file at `path` when it exists. Never fails: a setting
    that does not validate keeps its default (the rest of the file still applies) and is listed in
    `config_problems(config)`, so one typo neither turns recall off nor costs every hook a crash."""
    if path is None or not path.is_file():
        return Config()
    problems: list[ConfigProblem] = []
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        problems.append(ConfigProblem(str(path), "", "", f"unreadable or not JSON ({exc})", "the defaults"))
        data = {}
    if not isinstance(data, dict):
        problems.append(ConfigProblem(str(path), "", "", "not a JSON object", "the defaults"))
        data = {}
    for _ in range(MAX_CONFIG_ERRORS):
        try:
            config = Config.model_validate(data)
            break
        except ValidationError as exc:
            for error in exc.errors():
                if not error["loc"]:  # a rule across settings: nothing to drop but the file
                    problems.append(ConfigProblem(str(path), "", "", error["msg"], "the defaults"))
                    data = {}
                    continue
                location, value = _pop(data, error["loc"])
                unknown = error["type"] == "extra_forbidden"
                if location[:1] == ["storage"]:  # a database URL may hold a password
                    value = masked(value) if isinstance(value, str) else "(not shown)"
                problems.append(ConfigProblem(
                    str(path), ".".join(location), json.dumps(value, default=str)[:80],
                    unknown_setting(location) if unknown else error["msg"], "" if unknown else _default_of(location)))
    else:
        config = Config()
    config._problems = problems
    return config


def settings_in_effect(config: Config) -> list[dict]:
    """Every setting of `config` (as load_config read it) as it applies now: its value, its default, and where the
    value came from (the default, config.json, or an environment variable that wins over both). A database URL is
    shown without its password."""
    rows = []
    for section, field in Config.model_fields.items():
        current, default = getattr(config, section), field.get_default(call_default_factory=True)
        for name in type(current).model_fields:
            value, source = getattr(current, name), "default"
            if name in current.model_fields_set:  # load_config validated only what config.json gave and it kept
                source = "config.json"  # written there, even when it equals the default
            if (section, name) == ("storage", "url"):
                url = database_url(value)
                if os.environ.get(DATABASE_URL_ENV, "").strip():
                    source = DATABASE_URL_ENV + (" (wins over config.json's)" if value.strip() else "")
                value = masked(url) if url else ""
            rows.append({"key": f"{section}.{name}", "value": value, "default": getattr(default, name),
                         "source": source})
    return rows


def unknown_setting(location: list[str]) -> str:
    """"unknown setting", with the known one it most likely meant ("did you mean tiers.warm_top_k?")."""
    node: type[BaseModel] = Config
    for part in location[:-1]:
        field = node.model_fields.get(part)
        if field is None or not (isinstance(field.annotation, type) and issubclass(field.annotation, BaseModel)):
            return "unknown setting"
        node = field.annotation
    close = difflib.get_close_matches(location[-1], list(node.model_fields), n=1, cutoff=0.6)
    return f"unknown setting (did you mean {'.'.join([*location[:-1], close[0]])}?)" if close else "unknown setting"


def config_problems(config: Config) -> list[ConfigProblem]:
    return list(config._problems)


MAX_CONFIG_ERRORS = 50  # validation rounds; each drops the settings it rejected


def _pop(data: dict, location) -> tuple[list[str], object]:
    """Remove the setting at `location` from the parsed file: (the key path removed, its value).
    A bad item of a list removes the whole list (its default is used)."""
    node, path = data, []
    for index, part in enumerate(location):
        if not isinstance(node, dict) or part not in node:
            return [str(p) for p in location], None
        path.append(str(part))
        if index == len(location) - 1 or not isinstance(node[part], dict):
            return path, node.pop(part)
        node = node[part]
    return path, None


def _default_of(location: list[str]) -> str:
    node = Config()
    for part in location:
        if not isinstance(node, BaseModel) or part not in type(node).model_fields:
            return ""
        node = getattr(node, part)
    return f"the default {json.dumps(node, default=str) if not isinstance(node, BaseModel) else 'section'}"
