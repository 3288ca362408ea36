"""`python -E -m memory_store.hook EVENT [AGENT]`: a hook's entry where recall was installed with pip and has no plugin
folder (whose launcher is hooks/run). `recall install codex` registers it then. It always exits 0."""

from .client import run_as_process

run_as_process()
