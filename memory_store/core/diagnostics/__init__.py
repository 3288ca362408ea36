"""Diagnostics: `recall status` and `recall doctor`, alerts for the next session, and hook latency stats."""
