"""Injection: the hot tier's brief at SessionStart, the warm tier's lines per prompt, and the summary
instructions at PreCompact, each rendered within its budget and fenced."""
