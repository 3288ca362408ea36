"""The memory engine: typed events and memories, capture, the SQLite store, embeddings, search
and ranking, the tiers and what gets injected. Runs in the worker and the CLI (pydantic, apsw,
fastembed), never in a hook process. Modules here never import the API, the worker or the shells.
"""
