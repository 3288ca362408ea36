"""Retrieval: query parsing and ranking, the search over the archive, the prompt's intent and the gate
that decides whether anything is worth injecting, episodes (a prompt with its answer), newer values
(supersession), the forgetting curve and file paths that no longer exist."""
