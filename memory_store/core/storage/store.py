"""`Store`: the one storage interface core code talks to (capture, gate, search, jobs, forget, and the
shells through the API).

What both backends do alike is written once in the concern mixins (memories.py, sessions.py, sharing.py, places.py,
upkeep.py, ram.py) and in the parts with a storage of their own (`store.knowledge`: knowledge.py; `store.ties`:
ties.py); what each does its own way is declared in contract.py and implemented in sqlite/ and postgres/.
tests/test_storage_contract.py runs the same checks against both.
"""

from __future__ import annotations

from .memories import Memories
from .places import Places
from .ram import RamVectors
from .sessions import Sessions
from .sharing import Sharing
from .upkeep import Upkeep


class Store(Memories, Sessions, Sharing, Places, Upkeep, RamVectors):
    """A store as core code sees it: the shared concerns over the contract (contract.py) a backend completes."""

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
