"""The forgetting curve: how strongly recall holds a memory now.

    strength = 2 ** (-(time since last reinforced) / half-life)          (1.0 once consolidated)

- The half-life starts by kind (a decision stated by the user lasts longer than a tool's output:
  StrengthConfig.half_life_days) and doubles with each reinforcement: each time the memory is
  retrieved and used (injected, a search hit, said again), as spaced repetition does.
- A memory used `consolidate_after` times is consolidated: it decays no more.
- Strength is a ranking signal (RankingConfig.strength_weight); it never deletes anything by itself.

Pruning is separate and narrow: once an interaction leaves the hot tier (24 h), a trivial one (a
greeting or an acknowledgement answered in kind, "ok continue" → "Done.") is deleted like `recall forget`
would. Nothing holding a decision, a fix, a value, a path or a preference is ever pruned: anything with a
dense sentence, an importance above `prune_below_importance`, a note, an error or a pin stays.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from .. import sentences
from ..records import Memory
from ..timeparse import DAY

if TYPE_CHECKING:
    from ..config import StrengthConfig

MAX_DOUBLINGS = 10  # a half-life grows at most 1024-fold before consolidation takes over


def half_life_days(kind: str, uses: int, cfg: StrengthConfig) -> float:
    base = cfg.half_life_days.get(kind, cfg.half_life_days.get("default", 30.0))
    return base * 2 ** min(max(0, uses), MAX_DOUBLINGS)


def strength(kind: str, created_at: float, last_used: float | None, uses: int, now: float, cfg: StrengthConfig) -> float:
    """0-1: how strongly the memory is held at `now` (uses: times retrieved and used, or said again)."""
    if uses >= cfg.consolidate_after:
        return 1.0
    since = max(0.0, now - max(created_at, last_used or 0.0))
    return math.pow(2.0, -since / (half_life_days(kind, uses, cfg) * DAY))


def is_consolidated(uses: int, cfg: StrengthConfig) -> bool:
    return uses >= cfg.consolidate_after


def prunable(memory: Memory, cfg: StrengthConfig) -> bool:
    """A trivial interaction nothing depends on: small talk with no dense sentence, low importance, unpinned."""
    if memory.kind not in ("prompt", "exchange") or memory.pinned or memory.importance > cfg.prune_below_importance:
        return False
    if any(sentences.density(s) > 0 for s in sentences.split(memory.text)):
        return False
    return sentences.is_small_talk(memory)
