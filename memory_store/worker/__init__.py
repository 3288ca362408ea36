"""The long-lived worker process (`server`), run with `python -m memory_store.worker`."""
