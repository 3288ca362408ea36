"""Capture: the hook events as typed payloads, what each becomes as a memory (cleaned, redacted, its
importance guessed), the user's own words, stated preferences, and transcripts read live or imported."""
