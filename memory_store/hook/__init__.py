"""The hook side: what runs inside every Claude Code hook process, and the first-install
bootstrap. Standard library only (checked by tests/test_architecture.py): a hook pays for every
import on every event. It may import `memory_store.shared`, nothing else of the package.
"""
