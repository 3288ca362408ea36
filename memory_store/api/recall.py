"""`Recall`: the one Python API over the core, one per data directory (see the package's docstring)."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from typing import TYPE_CHECKING

from ..core import forgetting, jobs, router
from ..core.config import Config
from ..core.diagnostics import doctor
from ..core.diagnostics.stats import hook_latency
from ..core.embedding.embed import Embedder, Models
from ..core.records import Hit, Knowledge, Memory
from ..core.retrieval import code_paths, gate
from ..core.retrieval import knowledge as known
from ..core.retrieval.search import Shown, current_only, shown_hits
from ..core.retrieval.search import search as run_search
from ..core.storage import Store, open_store
from ..shared import worker_client
from ..shared.logs import JsonLog
from ..shared.paths import DataPaths
from ..shared.projects import GLOBAL_PROJECT
from ..shared.redact import secret_kinds
from .background import BackgroundWork

if TYPE_CHECKING:
    from pathlib import Path

    from ..core.capture.transcripts import ImportReport
    from ..core.storage.recent_vectors import RecentVectors  # numpy: loaded where the worker uses it



KNOWLEDGE_READ = 5000  # observations of a project read to list what is current (the newest first)
IN_PROCESS_EMBED_LIMIT = 500  # without a worker, a search embeds a backlog up to this size first
IN_PROCESS_LEARN_LIMIT = 2000  # without a worker, a listing of knowledge reads a backlog up to this size first
BACKLOG_STALL_SECONDS = 60.0  # an import stops waiting for the worker after this long without progress
SILENT_PROMPTS_JUDGED = 20  # `recall injections --session` says why for the latest this many prompts that got nothing


def worker_hits(paths: DataPaths, query: str, limit: int, project: str | None, place: str | None = None,
                shown: Shown = "relevant", *, touch: bool = False) -> list[Hit] | None:
    """The running worker's answer to a search (it holds the model: fast); None when no worker answers."""
    hits = worker_client.search(paths, query, limit, project, place, shown, touch=touch)
    return None if hits is None else [Hit.model_validate(hit) for hit in hits]


class Recall:
    def __init__(self, paths: DataPaths, config: Config, *, load_models: bool = True):
        self.paths = paths
        self.config = config
        self.log = JsonLog(paths.log_file, "api")
        self.store = open_store(paths, config)
        self.models = Models(config, paths.home / "models", self.log, allow_load=load_models)
        self._spool_lock = threading.Lock()

    def close(self) -> None:
        self.store.close()

    def use_config(self, config: Config) -> None:
        """Apply new settings from now on (the worker calls this when config.json changes). The
        embedding model stays loaded: a different `embedding.model` needs `recall reindex`."""
        self.config = self.store.config = self.models.config = config

    def __enter__(self) -> Recall:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- the store, as the shells may see it -------------------------------------------------------

    @property
    def read_only(self) -> bool:
        """The data dir cannot be written: searched as it is, nothing captured."""
        return self.store.read_only

    def store_location(self) -> str:
        """Where memories are kept, fit to print (a file, or a URL without its password)."""
        return self.store.location()

    def store_is_shared(self) -> bool:
        """Others (database roles) may read what is shared here: a team's PostgreSQL, not the local file."""
        return self.store.capabilities().shared

    def memory_count(self) -> int:
        return int(self.store.counts()["memories"])

    def pending_work(self) -> int:
        """What the background work has yet to do: memories to read (what they teach and are tied to) or to embed,
        and what they taught to embed (found by meaning only then)."""
        return self.store.pending_embeddings() + self.store.knowledge.pending() + self.store.knowledge.vectors_pending()

    def is_mine(self, memory: Memory) -> bool:
        """May this user change or forget the memory? (A teammate's shared memory is theirs.)"""
        return self.store.is_mine(memory)

    def note_project_path(self, project: str, path: str) -> None:
        """`project` lives at `path` on this machine (see Store.note_project_path)."""
        self.store.note_project_path(project, path)

    def set_aside_if_damaged(self, error: BaseException) -> str | None:
        """When `error` says the database itself is damaged, move it aside (a new one starts); returns where it
        went, or None (not damage, or a database that cannot be moved)."""
        if not isinstance(error, self.store.capabilities().damage):
            return None
        return self.store.set_damaged_aside(f"{type(error).__name__}: {error}")

    # --- the embedding model ---------------------------------------------------------------------

    def embedding_error(self) -> str | None:
        """Why the embedding model could not be loaded (None: it loaded, or was not asked for yet)."""
        return self.models.embedder_error

    def embedding_model_name(self) -> str:
        """The model `reindex` embeds with (loads it); raises RuntimeError with the reason when it cannot."""
        embedder = self.models.embedder
        if embedder is None or not self.store.vectors_ready():
            raise RuntimeError(self.models.embedder_error or self.store.vector_error or "no embedding model")
        return str(embedder.name)

    def use_embedder(self, embedder: Embedder) -> None:
        """The model the worker loaded in the background, for this API's searches from now on."""
        self.models.set_embedder(embedder)

    def prepare_event(self, payload: dict) -> None:
        """Begin the slow part of an event's answer early (a prompt's embedding) while the rest is checked."""
        router.prepare(self.store, self.models, payload)

    def keep_recent_vectors(self, recent: RecentVectors) -> None:
        """The worker's RAM copy of recent vectors, searched in front of the store's index."""
        self.store.keep_recent_vectors(recent)

    def background_work(self) -> BackgroundWork:
        """The worker's rounds between hooks (embedding, word counts, pruning) on a second store of the same data:
        a long round never holds up a hook's request."""
        return BackgroundWork(self.paths, self.config, self.store.term_frequencies, self.keep_recent_vectors)

    # --- capture ---------------------------------------------------------------------------------

    def handle_event(self, envelope: dict, *, respond: bool = True) -> dict | str:
        """Store one hook event and return what the hook prints (see core.router): a JSON object, or
        for PreCompact plain text."""
        return router.handle_event(self.store, self.models, envelope, respond=respond)

    def ingest_spool(self) -> int:
        """Store the events spooled while no worker could take them; returns how many."""
        with self._spool_lock:
            return router.ingest_spool(self.store, self.models)

    def import_transcripts(self, paths: list[Path], progress: Callable[[Path], object] | None = None) -> ImportReport:
        """`recall import`: Claude Code transcripts into the store (see core.capture.transcripts)."""
        from ..core.capture.transcripts import import_paths

        return import_paths(self.store, paths, progress=progress)

    # --- reading ---------------------------------------------------------------------------------

    def search(self, query: str, limit: int = 10, project: str | None = None, *, shown: Shown | None = None,
               touch: bool = False, **options) -> list[Hit]:
        """Best memories for `query` (see core.retrieval.search.search for the options). `shown`: as the search surfaces
        show them: "relevant", only those with evidence of being about it (core.retrieval.search.relevant; maybe none),
        as they stand now (an old value a newer hit changed left out, and one whose file a newer memory names
        elsewhere); "all", every hit. Either way a hit whose value a newer memory changed says so first
        (core.retrieval.search.current_only), and a file it names that is gone says so (core.retrieval.code_paths).
        `touch`: the hits count as used (they strengthen, and consolidate after a few uses): for Claude's own
        lookups (MCP), not a person's searches, which would make every memory they glance at permanent."""
        if shown == "relevant":
            return shown_hits(self.store, self.models, query, limit, project, touch=touch, **options)
        hits = run_search(self.store, self.models, query, limit, project, touch=touch, **options)
        if shown == "all":
            return code_paths.checked_hits(self.store, current_only(self.store, hits, drop=False), drop=False)
        return hits

    def search_here(self, query: str, limit: int = 10, project: str | None = None, place: str | None = None,
                    shown: Shown = "relevant", *, embed_backlog: bool = True, touch: bool = False,
                    worker_first: bool = False) -> list[Hit]:
        """A search in this process with a complete answer: the spool ingested and (`embed_backlog`) a small backlog
        embedded first (a read-only data dir is searched as it is). `worker_first`: the running worker's answer when
        there is one (it holds the model: fast). `search_anywhere` asks the worker first, without opening a store."""
        if worker_first:
            hits = worker_hits(self.paths, query, limit, project, shown=shown)
            if hits is not None:
                return hits
        if not self.read_only:
            if place and project:
                self.note_project_path(project, place)
            self.ingest_spool()
            if embed_backlog and 0 < self.pending_work() <= IN_PROCESS_EMBED_LIMIT:
                self.embed_pending()
        return self.search(query, limit=limit, project=project, shown=shown, touch=touch)

    def next_brief(self, project: str, now: float | None = None) -> str:
        """What the next session started in `project` would be offered at SessionStart (a dry run: nothing is
        marked shown); "" when there is nothing recent to offer."""
        from ..core.injection import tiers

        now = time.time() if now is None else now
        return tiers.render_brief(self.store, tiers.brief(self.store, project, now), tiers.BRIEF_TITLE, now)[0]

    def explain(self, prompt: str, project: str, now: float | None = None) -> tuple[gate.Decision, str]:
        """What UserPromptSubmit would inject for `prompt` in `project`, and why: a dry run (nothing is
        captured, no access count changes). Returns a core.retrieval.gate.Decision and the lines it would inject."""
        from ..core.injection import inject, tiers

        decision = gate.judge(self.store, self.models, prompt, project, None, now, complete=True)
        items = tiers.warm_items(self.store, decision, project)
        block, _ids = inject.render_block(items, "Possibly relevant to this prompt:", self.config.inject.budget_chars,
                                          self.config.inject.max_item_chars, now)
        return decision, block

    def silent_prompts(self, session_id: str) -> list[dict]:
        """The session's prompts that got nothing injected, each with why, as the gate judges it now (what was
        not kept: only a prompt's injections are; the memories stored since may weigh in): the prompt, when,
        and the reason in plain words."""
        receipts = self.store.receipts(session_id, 10_000)
        answered = {r["prompt_id"] for r in receipts if r["prompt_id"] is not None}
        prompts = sorted((m for m in self.store.select_memories(session_id=session_id) if m.kind == "prompt"
                          and m.id not in answered), key=lambda m: m.created_at)[-SILENT_PROMPTS_JUDGED:]
        silent = []
        for prompt in prompts:
            at = prompt.created_at.timestamp()
            shown_before = {item["id"] for r in receipts if r["injected_at"] < at for item in r["memories"]}
            decision = gate.judge(self.store, self.models, prompt.text, prompt.project, session_id, at,
                                  exclude_ids=shown_before, complete=True)
            if not decision.searched:
                why = f"not searched: {'; '.join(decision.intent.reasons) or decision.intent.kind}"
            elif not decision.candidates:
                why = "nothing stored came close"
            else:
                best = max(decision.candidates, key=lambda c: c.evidence)
                why = best.why if not best.taken else "it would be injected now (memories stored since)"
            silent.append({"prompt": prompt.text, "at": at, "project": prompt.project, "why": why})
        return silent

    def use(self, ids: list[int]) -> None:
        """Count these memories as used (Claude read them in full): they strengthen and, after a few uses,
        consolidate (core/retrieval/strength.py)."""
        if not self.read_only:
            self.store.touch(ids)

    def get(self, ids: list[int]) -> list[Memory]:
        return self.store.get(ids)

    def timeline(self, memory_id: int, before: int = 5, after: int = 5) -> list[Memory]:
        return self.store.timeline(memory_id, before, after)

    # --- maintenance -----------------------------------------------------------------------------

    def embed_pending(self, progress: Callable[[int], object] | None = None, batch: int | None = None,
                      max_batches: int | None = None) -> int:
        """Read what queued memories teach and are tied to, then embed what is queued, in this process; returns how
        many memories were embedded."""
        jobs.learn_pending(self.store)
        return jobs.embed_pending(self.store, self.models.embedder, batch, max_batches, progress)

    def embed_backlog(self, progress: Callable[[int], object] | None = None, poll: float = 0.5) -> int:
        """Embed what is queued (and read what it teaches): through the worker if one runs with its model loaded (it
        is already in memory there), else here. `progress(n)` is called as memories get embedded."""
        total = self.store.pending_embeddings()
        if not self.pending_work():
            return 0
        if not worker_client.drain(self.paths):
            return self.embed_pending(progress=progress)
        remaining, left, moved = total, self.pending_work(), time.monotonic()
        while left:  # done when all an import brought is searchable and the worker idle again
            time.sleep(poll)
            now_pending = self.store.pending_embeddings()
            if progress:
                progress(max(0, remaining - now_pending))
            remaining, before, left = now_pending, left, self.pending_work()
            if left < before:
                moved = time.monotonic()
            elif time.monotonic() - moved > BACKLOG_STALL_SECONDS:
                break  # the worker makes no headway (another model's index, say): it goes on in the background
        return total

    def reindex(self, progress: Callable[[int], object] | None = None) -> int:
        """Read every memory's knowledge and ties again and re-embed every memory with the configured model (the worker,
        holding the old one, is stopped)."""
        self.embedding_model_name()  # raises with the reason when there is no model to embed with
        embedder = self.models.embedder
        assert embedder is not None  # embedding_model_name raised otherwise
        worker_client.stop_worker(self.paths)
        return jobs.reindex(self.store, embedder, progress)

    def select(self, **conditions) -> list[Memory]:
        """The memories meeting every condition (ids, project, session_id, before, match): see
        Store.select_memories. `recall forget` shows this selection before deleting it."""
        return self.store.select_memories(**conditions)

    def forget(self, memory_ids: list[int], also: Sequence[str] = ()) -> list[Memory]:
        """Delete memories for good (see Store.forget) and the copies of their text in the spool and the
        logs (core.forgetting), plus any line holding one of the `also` strings (a --match query).
        Returns what was deleted."""
        gone = self.store.forget(memory_ids)
        if gone or also:
            forgetting.scrub_files(self.paths, [m.text for m in gone], list(also))
        return gone

    def purge(self) -> dict:
        """Delete every memory of every project, the spool and the logs. Returns counts."""
        projects = self.store.purge()
        return {"projects": projects, "memories": sum(projects.values()), **forgetting.clear_files(self.paths)}

    # --- steering --------------------------------------------------------------------------------

    def remember(self, text: str, project: str | None, *, scope: str = "project", team: bool = False) -> Memory:
        """Store a note the user (or Claude, through the MCP `remember` tool) asked to keep. scope
        "global": it follows the user into every project; `team`: everyone on the shared database sees it
        (after the same secret scan as `share`). Cleaned like captured text (secrets redacted, <private>
        dropped); raises ValueError when nothing is left to keep."""
        from ..core.capture.capture import finish, private_text
        from ..core.records import MemoryDraft

        if scope not in ("project", "global"):
            raise ValueError(f"scope must be 'project' or 'global', not {scope!r}")
        if scope == "project" and not project:
            raise ValueError("a project is needed (or scope 'global')")
        cleaned = finish(private_text(text), self.config.capture.max_prompt_chars)
        if not cleaned or cleaned == "[private]":
            raise ValueError("nothing to remember (empty or private text)")
        if team and secret_kinds(text):
            raise ValueError(f"not shared: it holds what looks like a secret ({', '.join(secret_kinds(text))})")
        owner = GLOBAL_PROJECT if scope == "global" else project
        draft = MemoryDraft(project=owner, kind="note", text=cleaned, created_at=time.time(), importance=0.9,
                            meta={"source": "remember"}, visibility="team" if team else "private")
        memory_id = self.store.record(f"remember-{os.urandom(8).hex()}", draft).memory_id
        assert memory_id is not None  # a new event with a draft always stores it
        if team:  # the same note kept privately before is shared now
            self.store.share([memory_id])
        return self.store.get([memory_id])[0]

    # --- sharing ---------------------------------------------------------------------------------

    def share_check(self, memory_ids: list[int]) -> tuple[list[Memory], dict[int, str]]:
        """What `share` would do: (the memories it would share, showing the very text teammates will see,
        {id: why it will not be shared}). A fresh secret scan runs over every text (the rules may know
        more than they did at capture)."""
        mine = {m.id: m for m in self.store.own_memories(memory_ids)}
        ready, refused = [], {}
        for memory_id in memory_ids:
            memory = mine.get(memory_id)
            if memory is None:
                refused[memory_id] = "not found among your memories"
            elif memory.visibility == "team":
                refused[memory_id] = "already shared"
            elif secret_kinds(memory.text):
                refused[memory_id] = f"it holds what looks like a secret ({', '.join(secret_kinds(memory.text))})"
            else:
                ready.append(memory.model_copy(update={"meta": {}, "visibility": "team"}))
        return ready, refused

    def share(self, memory_ids: list[int]) -> list[int]:
        """Share these memories with the team (their text alone: storage/sharing.py); memories that
        `share_check` refuses are left as they are. Returns the ids shared."""
        ready, _refused = self.share_check(memory_ids)
        return self.store.share([m.id for m in ready])

    def unshare(self, memory_ids: list[int]) -> list[int]:
        """Take shared memories back (their owner only); returns the ids made private again."""
        return self.store.unshare(memory_ids)

    def pin(self, memory_ids: list[int], pinned: bool = True) -> list[int]:
        """Pin (or unpin) memories; returns the ids that exist."""
        return self.store.set_pinned(memory_ids, pinned)

    def injections(self, session_id: str | None = None, limit: int = 20) -> list[dict]:
        """What was injected, when, into which prompt, and the gate's reasons (newest first)."""
        receipts = self.store.receipts(session_id, limit)
        shown = {m.id: m for m in self.store.get(sorted({i["id"] for r in receipts for i in r["memories"]}))}
        for receipt in receipts:
            for item in receipt["memories"]:
                memory = shown.get(item["id"])
                item["kind"] = memory.kind if memory else None
                item["text"] = memory.text if memory else None
                item["question"] = memory.meta.get("prompt") if memory and memory.kind == "exchange" else None
        return receipts

    def knowledge(self, project: str, kinds: list[str] | None = None, limit: int = 200,
                  query: str = "") -> list[Knowledge]:
        """What is current in a project (core/knowledge/current.py): its facts, procedures and decisions that stand,
        each the newest settled observation of its thing with the earlier values it replaced (`replaced`, newest
        first) and the write that set it (`written`); newest first, or with a `query` those holding its words, the best
        match first."""
        from ..core.knowledge import current
        from ..core.records import SETTLED

        kinds = kinds or ["fact", "procedure", "decision"]
        if not self.read_only and 0 < self.store.knowledge.pending() <= IN_PROCESS_LEARN_LIMIT:
            jobs.learn_pending(self.store)  # what the worker has not read yet (or no worker runs)
        if query.strip():
            terms = known.content_terms(query)
            matched = [item for item, _ in self.store.knowledge.candidates(project, terms, kinds, limit)] if terms else []
            source: current.Observations = self.store.knowledge
        else:
            matched = self.store.knowledge.listed(project, kinds, KNOWLEDGE_READ)
            source = current.Pool(matched)
        answers = current.resolve(source, project, [item for item in matched if item.modality in SETTLED])
        return [answer.item.model_copy(update={"replaced": answer.history, "written": answer.written})
                for answer in answers if answer.standing][:limit]

    def known_session(self, session_id: str) -> bool:
        return self.store.known_session(session_id)

    def projects(self) -> list[dict]:
        """Each project (its name: the repository's remote, else its path) with its memory count, last
        activity and the local paths seen for it on every machine (`paths`: host, path, last_seen)."""
        places = self.store.project_paths()
        return [{**row, "paths": places.get(row["project"], [])} for row in self.store.projects()]

    def export(self, project: str | None) -> list[dict]:
        """Every memory of a project (None: all), each with every field, then its sessions (`"record": "session"`):
        `recall export`, which `recall import` reads back. What the memories teach and are tied to is read again from
        them there (their meta keeps what that reading needs)."""
        memories = [m.model_dump(mode="json") for m in self.store.select_memories(project=project)]
        return memories + [{"record": "session", **row} for row in self.store.session_rows(project)]

    def prune(self, now: float | None = None) -> int:
        """Delete trivial interactions that left the hot tier (the worker does this now and then)."""
        return jobs.prune_trivial(self.store, time.time() if now is None else now)

    def diagnose(self) -> list[doctor.Check]:
        return doctor.diagnose(self.store, self.models, worker_client.health(self.paths)) + codex_checks(self.paths)

    def repair(self) -> list[str]:
        return jobs.repair(self.store)

    def stats(self, now: float | None = None) -> dict:
        """Counts, sizes, the data dir, hook latency percentiles from real use, and the forgetting curve as of `now`."""
        data = self.store.counts()
        data["db_bytes"] = self.store.size_bytes()
        data["home"] = str(self.paths.home)
        data["hook_latency_ms"] = hook_latency(self.paths.log_file)
        data["strength"] = strength_summary(self.store, time.time() if now is None else now)
        data["pruned"] = self.store.pruned_counts()
        data["knowledge"] = self.store.knowledge.counts()
        for key in ("oldest", "newest"):
            if data[key]:
                data[key] = datetime.fromtimestamp(data[key], tz=timezone.utc).isoformat()
        return data


def strength_summary(store: Store, now: float) -> dict:
    """The forgetting curve over the live memories (core/retrieval/strength.py): mean strength, how many are
    consolidated (decay no more) and how many are weak (below 0.1)."""
    from ..core.retrieval import strength

    cfg = store.config.strength
    values, consolidated = [], 0
    for kind, created_at, last_used, uses in store.usage_rows():
        values.append(strength.strength(kind, created_at, last_used, uses, now, cfg))
        consolidated += strength.is_consolidated(uses, cfg)
    return {"mean": round(sum(values) / len(values), 3) if values else None, "consolidated": consolidated,
            "weak": sum(1 for v in values if v < 0.1)}


def codex_checks(paths: DataPaths) -> list[doctor.Check]:
    """Where Codex is set up to use recall: are its hooks all there and trusted, is its MCP server there, did a hook
    reach this data dir lately? Nothing where recall is not installed in Codex."""
    from ..integrations import codex

    found = codex.status(None, paths.home)
    if found["problem"]:
        return [doctor.Check("codex", False, found["problem"], "recall install codex")]
    if not found["installed"]:
        return []
    whole = found["trusted"] == found["expected"] == found["hooks"] and found["mcp_server"]
    last = found["last_hook_at"]
    heard = "no Codex hook has reached this data dir yet" if last is None else \
        f"a Codex hook last reached this data dir {time.strftime('%Y-%m-%d %H:%M', time.localtime(last))}"
    return [doctor.Check("codex", whole, f"{found['trusted']}/{found['expected']} hooks trusted, MCP server "
                                         f"{'there' if found['mcp_server'] else 'missing'} in {found['codex_home']}; "
                                         + heard,
                         "" if whole else "recall install codex (Codex skips hooks it does not trust)")]
