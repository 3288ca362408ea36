"""Ranking: query processing, fusion of lexical and dense candidates, recency and priority.

score = fusion(lexical, dense)
      + recency_weight  · exp(-age / recency_decay)
      + priority_weight · (0.3·R + 0.2·F + 0.5·I)          (RFM priority)
      + temporal_weight · bucket(age)                       (only for queries about time)

R = exp(-ln2 · t / half_life) with t the time since the memory was last seen or used,
F = log(n+1) / log(N+1) with n its uses and sightings and N the largest n among the
candidates, I its importance (0–1, from capture heuristics). The weights live in
config.RankingConfig; docs/retrieval.md explains how the defaults were measured.
"""

from __future__ import annotations

import math
import re
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..config import RankingConfig
from ..terms import STOPWORDS, normalize_term, words
from ..timeparse import DAY, TimeWindow, find_window

if TYPE_CHECKING:
    from ..config import CueConfig

_QUESTION_START = re.compile(
    r"^\s*(who|what|when|where|why|how|which|whose|whom|is|are|was|were|do|does|did|can|could|should|would|"
    r"will|have|has|had)\b",
    re.IGNORECASE,
)
_PATH_CUE = re.compile(
    r"(?:^|[\s`'\"(])(?:~?\.{0,2}/[\w.\-/]+|[\w.\-]+/[\w.\-/]*[\w\-]|[\w\-]+\.(?:py|js|ts|tsx|jsx|go|rs|rb|java|kt|c|h|"
    r"cpp|hpp|cs|php|md|txt|json|ya?ml|toml|ini|cfg|sh|sql|html|css|scss|lock|env|xml|proto|gradle|swift))\b"
)

_TEMPORAL_WORDS = re.compile(
    r"\b(yesterday|today|tonight|last (?:week|month|year|time|night|session)|earlier|before|previously|"
    r"ago|recently|lately|when|since|this (?:morning|week|month)|the other day)\b",
    re.IGNORECASE,
)


@dataclass
class Query:
    """A search query after processing."""

    text: str
    terms: list[str] = field(default_factory=list)  # content words, stopwords removed, in order, unique
    asks_about_time: bool = False  # "when …", "yesterday", "last week" …
    window: TimeWindow | None = None  # the time a date or relative phrase in the query points at


def parse_query(text: str, now: float | None = None, cfg: RankingConfig | None = None) -> Query:
    """Content terms (no stopwords, no date words), whether the query is about time, and the time
    window a date or relative phrase names ("in July 2022", "yesterday")."""
    now = time.time() if now is None else now
    cfg = cfg or RankingConfig()
    window = find_window(text, now, cfg.date_window_before_days, cfg.date_window_after_days)
    content = text if window is None else text[: window.span[0]] + " " + text[window.span[1]:]
    seen: set[str] = set()
    terms = []
    for word in words(content):
        if word in STOPWORDS or (len(word) < 2 and not word.isdigit()) or word in seen:
            continue
        seen.add(word)
        terms.append(word)
    if not terms:  # a query made only of stopwords still deserves an answer
        terms = list(dict.fromkeys(w for w in words(text) if len(w) > 1))[:8]
    return Query(text=text, terms=terms, asks_about_time=bool(_TEMPORAL_WORDS.search(text)) or window is not None,
                 window=window)


# Words of a question that say what kind of answer it wants, not what it is about.
GENERIC_TERMS = frozenset("""
long often way use used using work works working need needed make made get got set setting thing things actually
right correct proper good best new old currently current now moment days still ok okay fine happen happens
""".split())


def answer_terms(query: Query) -> set[str]:
    """The query's content terms that an answer would share (light-stemmed, question words left out)."""
    return {normalize_term(t) for t in query.terms if t not in GENERIC_TERMS}


def prompt_cues(prompt: str, cues: CueConfig) -> list[str]:
    """Which retrieval cues a prompt carries (config.CueConfig switches each on or off)."""
    found = []
    if cues.question and ("?" in prompt or _QUESTION_START.search(prompt)):
        found.append("question")
    if cues.path and _PATH_CUE.search(prompt):
        found.append("path")
    if cues.long_prompt and len(prompt.split()) > cues.long_prompt_words:
        found.append("long")
    if cues.temporal and _TEMPORAL_WORDS.search(prompt):
        found.append("temporal")
    return found


def term_coverage(query: Query, text: str) -> float:
    """Share of the query's content terms that occur in `text` (after light stemming)."""
    return term_coverage_of({normalize_term(t) for t in query.terms}, text)


def term_coverage_of(terms: set[str], text: str) -> float:
    """Share of (light-stemmed) terms that occur in `text`."""
    if not terms:
        return 0.0
    present = {normalize_term(w) for w in words(text)}
    return len(terms & present) / len(terms)


# --- fusion -------------------------------------------------------------------------------


def rrf(rankings: list[list[int]], k: int, weights: list[float] | None = None) -> dict[int, float]:
    """Reciprocal rank fusion: Σ w / (k + rank)."""
    weights = weights or [1.0] * len(rankings)
    scores: dict[int, float] = {}
    for ranking, weight in zip(rankings, weights):
        for rank, item in enumerate(ranking, start=1):
            scores[item] = scores.get(item, 0.0) + weight / (k + rank)
    return scores


def weighted(lexical: dict[int, float], dense: dict[int, float], w_lex: float, w_dense: float) -> dict[int, float]:
    """Score fusion: BM25 scaled by the best BM25 of the query (0–1), plus cosine similarity."""
    best = max(lexical.values(), default=0.0)
    scores: dict[int, float] = {}
    for item, value in lexical.items():
        scores[item] = w_lex * (value / best if best > 0 else 0.0)
    for item, similarity in dense.items():
        scores[item] = scores.get(item, 0.0) + w_dense * max(0.0, similarity)
    return scores


def fuse(lexical: dict[int, float], dense: dict[int, float], cfg: RankingConfig) -> dict[int, float]:
    """Combine lexical (positive BM25, higher is better) and dense (cosine) candidate scores into
    one score per memory, scaled so the best is 1 (recency and priority then add on a known scale)."""
    if cfg.fusion == "fts" or not dense:
        scores = weighted(lexical, {}, 1.0, 0.0)
    elif cfg.fusion == "dense" or not lexical:
        scores = weighted({}, dense, 0.0, 1.0)
    elif cfg.fusion == "rrf":
        order_lex = sorted(lexical, key=lambda memory_id: lexical[memory_id], reverse=True)
        order_dense = sorted(dense, key=lambda memory_id: dense[memory_id], reverse=True)
        scores = rrf([order_lex, order_dense], cfg.rrf_k, [cfg.lexical_weight, cfg.dense_weight])
    else:
        scores = weighted(lexical, dense, cfg.lexical_weight, cfg.dense_weight)
    best = max(scores.values(), default=0.0)
    return {k: v / best for k, v in scores.items()} if best > 0 else scores


# --- recency and priority -------------------------------------------------------------------


def recency(age_seconds: float, decay_days: float) -> float:
    return math.exp(-max(0.0, age_seconds) / (decay_days * DAY))


def rfm_priority(
    since_last_use: float, uses: int, max_uses: int, importance: float, cfg: RankingConfig
) -> float:
    """0.3·R + 0.2·F + 0.5·I (weights from config)."""
    r = math.exp(-math.log(2) * max(0.0, since_last_use) / (cfg.rfm_half_life_days * DAY))
    f = math.log(uses + 1) / math.log(max_uses + 1) if max_uses > 0 else 0.0
    return cfg.rfm_recency * r + cfg.rfm_frequency * f + cfg.rfm_importance * importance


def age_bucket(age_seconds: float) -> str:
    if age_seconds < 3600:
        return "hour"
    if age_seconds < DAY:
        return "day"
    if age_seconds < 7 * DAY:
        return "week"
    if age_seconds < 31 * DAY:
        return "month"
    return "older"
