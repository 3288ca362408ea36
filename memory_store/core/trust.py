"""How much a memory's source is to be believed, as a weight in ranking (RankingConfig.trust_weight).

The user's own words (prompts, `recall remember`) are what the user decided; the main assistant's answers
are conclusions drawn with the user watching; a subagent works out of sight and reports back; raw tool
output is evidence, not a conclusion. Memories from a subagent live in its namespace (`agent`: its type,
else its id) and are shown as such (`recall search --json` has `agent` and `trust`).
"""

from __future__ import annotations

USER, ASSISTANT, SUBAGENT, TOOL = 1.0, 0.8, 0.6, 0.4
SUBAGENT_TOOL = 0.35  # a tool run by a subagent: raw output, one step further from the user

BY_KIND = {"prompt": USER, "note": USER, "exchange": ASSISTANT, "response": ASSISTANT, "tool": TOOL,
           "error": TOOL}


def trust_of(kind: str, agent: str = "") -> float:
    """The trust of a memory of this kind, from the main conversation or (agent) from a subagent."""
    if not agent:
        return BY_KIND.get(kind, ASSISTANT)
    return SUBAGENT_TOOL if kind in ("tool", "error") else SUBAGENT


def agent_name(agent_type: str | None, agent_id: str | None) -> str:
    """A subagent's namespace: its type ("Explore", "code-reviewer"), else its id."""
    return (agent_type or "").strip() or (f"agent-{agent_id}" if agent_id else "")
