"""`recall bench locomo FILE`: retrieval quality on LoCoMo, measured the way users get it.

Each conversation becomes one Claude Code project (cwd `/locomo/<sample_id>`) with one
transcript per session: speaker A's turns are user prompts, speaker B's assistant text,
chained by uuid/parentUuid, timestamped from the session date plus one minute per turn.
The transcripts go through `recall import` (the same code path as a user's backfill),
and every question with evidence runs through `Recall.search(question, limit=10, project=…)`.

A hit counts for an evidence turn when (whitespace collapsed) the hit contains the turn's
text, or the turn's text without the "<speaker>: " prefix, or the turn contains the hit
and the hit is at least 30 characters long. R@k is the share of a question's evidence
turns found in the top k, averaged over questions; MRR uses the first hit that matches
any evidence turn. The report also gives the characters of the top-10 hits (bigger
memories would win recall by size) and the injection path: for each question sent as a
UserPromptSubmit, how often the injected memories hold an evidence turn, and their cost.

LoCoMo (Maharana et al., ACL 2024) is CC BY-NC 4.0: evaluation only, never shipped.
"""

from __future__ import annotations

import json
import re
import shutil
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ...api import Recall
    from ...core.storage import Store

CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
METHOD_FUSION = {"fts": "fts", "dense": "dense", "hybrid": "weighted", "rrf": "rrf", "weighted": "weighted"}
# "bm25": rank-bm25 in memory, for comparison with FTS5 (see rank_bm25_search)
_SPACES = re.compile(r"\s+")
_DIA = re.compile(r"D\s*:?\s*(\d+)\s*:\s*(\d+)")


def collapse(text: str) -> str:
    return _SPACES.sub(" ", text).strip()


def session_time(value: str) -> datetime:
    """'1:56 pm on 8 May, 2023' -> aware datetime (UTC)."""
    cleaned = collapse(value).replace(" on ", " ")
    for fmt in ("%I:%M %p %d %B, %Y", "%I:%M %p %d %b, %Y", "%I:%M %p %d %B %Y"):
        try:
            return datetime.strptime(cleaned, fmt).replace(tzinfo=timezone.utc)
        except ValueError:
            continue
    raise ValueError(f"unrecognised session date {value!r}")


def turn_text(turn: dict) -> str:
    text = f"{turn['speaker']}: {turn['text']}"
    if turn.get("blip_caption"):
        text += f" [shares {turn['blip_caption']}]"
    return text


def sessions_of(conversation: dict) -> list[tuple[int, datetime, list[dict]]]:
    found = []
    for key, value in conversation.items():
        match = re.fullmatch(r"session_(\d+)", key)
        if match and isinstance(value, list) and value:
            number = int(match.group(1))
            found.append((number, session_time(conversation[f"session_{number}_date_time"]), value))
    return sorted(found)


def write_transcripts(sample: dict, folder: Path) -> dict[str, str]:
    """One transcript .jsonl per session; returns dia_id -> turn text."""
    conversation = sample["conversation"]
    speaker_a = conversation["speaker_a"]
    project = f"/locomo/{sample['sample_id']}"
    turns: dict[str, str] = {}
    folder.mkdir(parents=True, exist_ok=True)
    for number, start, session in sessions_of(conversation):
        session_id = f"{sample['sample_id']}-s{number}"
        lines, parent = [], None
        for index, turn in enumerate(session):
            text = turn_text(turn)
            turns[turn["dia_id"]] = text
            uuid = f"{session_id}-{index}"
            role = "user" if turn["speaker"] == speaker_a else "assistant"
            content = text if role == "user" else [{"type": "text", "text": text}]
            stamp = (start + timedelta(minutes=index)).isoformat().replace("+00:00", "Z")
            lines.append(json.dumps({"type": role, "uuid": uuid, "parentUuid": parent, "isSidechain": False,
                                     "sessionId": session_id, "cwd": project, "timestamp": stamp,
                                     "message": {"role": role, "content": content}}))
            parent = uuid
        (folder / f"{session_id}.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return turns


def evidence_ids(raw: list, turns: dict[str, str]) -> list[str]:
    """Normalise LoCoMo's evidence quirks ('D8:6; D9:17', 'D:11:26', 'D30:05') and drop unknown ids."""
    found = []
    for item in raw:
        for part in re.split(r"[;,\s]+", str(item)):
            match = _DIA.fullmatch(part.strip()) if part.strip() else None
            if match:
                dia = f"D{int(match.group(1))}:{int(match.group(2))}"
                if dia in turns and dia not in found:
                    found.append(dia)
    return found


def matches(hit_text: str, turn: str) -> bool:
    hit, turn = collapse(hit_text), collapse(turn)
    bare = turn.split(": ", 1)[1] if ": " in turn else turn
    return turn in hit or bare in hit or (len(hit) >= 30 and hit in turn)


def score_question(hit_texts: list[str], evidence: list[str], turns: dict[str, str]) -> dict:
    found_at = {}
    first = None
    for rank, text in enumerate(hit_texts, start=1):
        for dia in evidence:
            if dia not in found_at and matches(text, turns[dia]):
                found_at[dia] = rank
                if first is None:
                    first = rank
    return {
        "r5": sum(1 for r in found_at.values() if r <= 5) / len(evidence),
        "r10": sum(1 for r in found_at.values() if r <= 10) / len(evidence),
        "mrr": 1.0 / first if first else 0.0,
        "chars10": sum(len(t) for t in hit_texts[:10]),
    }


def _mean(rows: list[dict], key: str) -> float:
    return round(sum(r[key] for r in rows) / len(rows), 4) if rows else 0.0


def summarize(rows: list[dict]) -> dict:
    summary = {"all": {"n": len(rows), "r5": _mean(rows, "r5"), "r10": _mean(rows, "r10"), "mrr": _mean(rows, "mrr"),
                       "chars10": round(_mean(rows, "chars10"))}}
    for number, name in CATEGORIES.items():
        subset = [r for r in rows if r["category"] == number]
        summary[name] = {"n": len(subset), "r5": _mean(subset, "r5"), "r10": _mean(subset, "r10"),
                         "mrr": _mean(subset, "mrr")}
    return summary


def injection_check(recall: Recall, project: str, question: str, evidence: list[str], turns: dict[str, str],
                    session_id: str, now: float, answer: str = "") -> dict:
    """What the UserPromptSubmit path would inject for this question (the gate's rules, with the
    memory ages as of the conversation's end), and whether the injected text holds an evidence turn:
    `useful` when one is there in full, `useful_words` when at least 70 % of one's content words are
    (an excerpt of a turn's sentences counts)."""
    from ...core.injection import inject, tiers

    store = recall.store
    decision = tiers.warm_recall(store, recall.models, project, session_id, question, now)
    text, ids = inject.render_block(tiers.warm_items(store, decision, project), "Possibly relevant to this prompt:",
                                    store.config.inject.budget_chars, store.config.inject.max_item_chars, now)
    useful = bool(ids) and any(matches(text, turns[d]) for d in evidence)
    useful_words = bool(ids) and any(_words_held(text, turns[d]) for d in evidence)
    holds_answer = bool(ids) and bool(answer) and collapse(answer).lower() in collapse(text).lower()
    return {"cued": decision.searched, "injected": bool(ids), "useful": useful, "useful_words": useful_words,
            "answer": holds_answer, "chars": len(text)}


def _words_held(text: str, turn: str) -> bool:
    from ...core import terms

    bare = turn.split(": ", 1)[1] if ": " in turn else turn
    wanted = {w for w in terms.words(bare) if w not in terms.STOPWORDS}
    present = set(terms.words(text))
    return bool(wanted) and len(wanted & present) / len(wanted) >= 0.7


def rank_bm25_search(store: Store, project: str, question: str, cache: dict) -> list[str]:
    """The comparison that decided the archive's lexical engine: rank-bm25's BM25Okapi over the
    project's memories (own text plus neighbouring turns, the same terms FTS5 indexes), with the
    same query processing. The index is built in memory once per project, outside the timing."""
    from rank_bm25 import BM25Okapi

    from ...core.retrieval import ranking
    from ...core.terms import normalize_term, words

    if project not in cache:
        rows = store.indexed_texts(project)
        docs = [[normalize_term(w) for w in words(" ".join(r))] for r in rows]
        cache[project] = (BM25Okapi(docs), [r[0] for r in rows])
    index, texts = cache[project]
    query_terms = [normalize_term(t) for t in ranking.parse_query(question).terms]
    scores = index.get_scores(query_terms)
    best = sorted(range(len(texts)), key=lambda i: -scores[i])[:10]
    return [texts[i] for i in best]


def run_locomo(file: Path, methods: list[str], conversations: list[str] | None = None, workdir: Path | None = None,
               echo=print, config=None, injection: bool = True, database_url: str | None = None) -> dict:
    """With `database_url` (an administrator's URL), on a throwaway PostgreSQL database instead of the file."""
    from .seed import BenchDatabase, database_env

    database = BenchDatabase(database_url, echo) if database_url else None
    try:
        with database_env(database):
            return _run_locomo(file, methods, conversations, workdir, echo, config, injection, database)
    finally:
        if database is not None:
            database.drop()


def _run_locomo(file: Path, methods: list[str], conversations: list[str] | None, workdir: Path | None, echo, config,
                injection: bool, database) -> dict:
    from ...api import Recall, open_recall

    data = json.loads(Path(file).read_text(encoding="utf-8"))
    samples = [s for s in data if not conversations or s["sample_id"] in conversations]
    base = Path(workdir) if workdir else Path(tempfile.mkdtemp(prefix="recall-locomo-"))
    rows: dict[str, list[dict]] = {m: [] for m in methods}
    inject_rows: list[dict] = []
    bm25_cache: dict = {}
    timings: dict[str, Any] = {"import_s": 0.0, "embed_s": 0.0, "search_ms": {m: [] for m in methods}}
    try:
        home = base / "home"
        transcripts = base / "transcripts"
        turns_by_sample = {}
        for sample in samples:
            turns_by_sample[sample["sample_id"]] = write_transcripts(sample, transcripts / sample["sample_id"])
        recall = open_recall(home, config)
        started = time.perf_counter()
        report = recall.import_transcripts([transcripts])  # a kept --workdir is reused: unchanged files are skipped
        timings["import_s"] = round(time.perf_counter() - started, 2)
        started = time.perf_counter()
        embedded = recall.embed_pending()
        timings["embed_s"] = round(time.perf_counter() - started, 2)
        if database is not None:
            database.analyze()  # what autovacuum does for a live server: plans follow the data
        # The injection pass judges the selection rules (cues, threshold, top-k, budget), so every
        # memory counts as warm: LoCoMo conversations span months, the warm window is 7 days.
        injecting = Recall(recall.paths, recall.config.model_copy(
            update={"tiers": recall.config.tiers.model_copy(update={"warm_window_days": 36500})}))
        if recall.models.embedder is not None:
            injecting.models.set_embedder(recall.models.embedder)
        echo(f"imported {report.events} events from {report.files} transcripts ({report.new_memories} memories) "
             f"in {timings['import_s']} s; embedded {embedded} in {timings['embed_s']} s")
        for sample in samples:
            project = f"/locomo/{sample['sample_id']}"
            turns = turns_by_sample[sample["sample_id"]]
            last_session = sessions_of(sample["conversation"])[-1]
            end = (last_session[1] + timedelta(minutes=len(last_session[2]) + 1)).timestamp()
            for number, qa in enumerate(sample["qa"]):
                evidence = evidence_ids(qa.get("evidence", []), turns)
                category = qa.get("category")
                if not evidence or category not in CATEGORIES:
                    continue
                for method in methods:
                    t0 = time.perf_counter()
                    if method == "bm25":
                        texts = rank_bm25_search(recall.store, project, qa["question"], bm25_cache)
                    else:
                        texts = [h.text for h in recall.search(qa["question"], limit=10, project=project,
                                                              fusion=METHOD_FUSION[method], touch=False)]
                    timings["search_ms"][method].append((time.perf_counter() - t0) * 1000)
                    row = score_question(texts, evidence, turns)
                    row["category"] = category
                    rows[method].append(row)
                if injection:
                    result = injection_check(injecting, project, qa["question"], evidence, turns,
                                             f"bench-{sample['sample_id']}-{number}", end + 86400,
                                             str(qa.get("answer", "")))
                    result["category"] = category
                    inject_rows.append(result)
            echo(f"{sample['sample_id']}: done")
        recall.close()
        injecting.close()
    finally:
        if not workdir:
            shutil.rmtree(base, ignore_errors=True)
    report_data = {"file": str(file), "conversations": [s["sample_id"] for s in samples],
                   "methods": {m: summarize(rows[m]) for m in methods},
                   "timings": {"import_s": timings["import_s"], "embed_s": timings["embed_s"],
                               "search_ms_mean": {m: round(sum(v) / len(v), 2) if v else 0.0
                                                  for m, v in timings["search_ms"].items()}}}
    if injection and inject_rows:
        injected = [r for r in inject_rows if r["injected"]]
        report_data["injection"] = {
            "questions": len(inject_rows),
            "cued": sum(r["cued"] for r in inject_rows),
            "injected": len(injected),
            "precision": round(sum(r["useful"] for r in injected) / len(injected), 4) if injected else 0.0,
            "precision_words": round(sum(r["useful_words"] for r in injected) / len(injected), 4) if injected else 0.0,
            "answer_share": round(sum(r["answer"] for r in injected) / len(injected), 4) if injected else 0.0,
            "chars_per_injection": round(sum(r["chars"] for r in injected) / len(injected)) if injected else 0,
        }
    return report_data


def format_report(report: dict) -> str:
    lines = [f"LoCoMo retrieval: {', '.join(report['conversations'])}"]
    header = f"{'method':<8} {'category':<12} {'n':>5} {'R@5':>7} {'R@10':>7} {'MRR':>7}"
    lines.append(header)
    for method, summary in report["methods"].items():
        for category, row in summary.items():
            lines.append(f"{method:<8} {category:<12} {row['n']:>5} {row['r5']:>7.3f} {row['r10']:>7.3f} "
                         f"{row['mrr']:>7.3f}" + (f"   top-10 chars {row['chars10']}" if category == "all" else ""))
    timings = report["timings"]
    lines.append(f"import {timings['import_s']} s, embedding {timings['embed_s']} s, mean search ms "
                 + ", ".join(f"{m} {v}" for m, v in timings["search_ms_mean"].items()))
    if "injection" in report:
        inj = report["injection"]
        lines.append(f"injection: {inj['injected']} of {inj['questions']} questions injected ({inj['cued']} cued), "
                     f"precision {inj['precision']:.3f} (share holding an evidence turn in full; "
                     f"{inj.get('precision_words', 0):.3f} holding 70 % of one's words; {inj.get('answer_share', 0):.3f} "
                     f"holding the gold answer), "
                     f"{inj['chars_per_injection']} chars each")
    return "\n".join(lines)
