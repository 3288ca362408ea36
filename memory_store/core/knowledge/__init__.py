"""Semantic and procedural memory beside the episodes: facts (a thing and its current value), procedures (how
something is done here) and decisions, read from what the hooks see without a model (extract.py), kept with the
memory they came from (storage/knowledge.py), and shown first when a prompt asks for them (retrieval/knowledge.py)."""
