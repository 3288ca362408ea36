"""Which hidden channels of the shipped model carry outsized values after its LayerNorms (minilm_graphs.OUTLIER_CHANNELS).

`integer_graph` quantizes each token's activations with one scale; a channel whose values are 20-80x the rest would
set that scale and flatten everything else, so those channels are multiplied in float32 instead. They are a property
of the trained weights (the same channels in every layer and every text), so they are measured once, here, with the
published float32 graph: for each channel, the largest value it takes after any LayerNorm that feeds a weight product,
over the median token's largest value there.

    python -m memory_store.devtools.outlier_channels [FILE ...]   (default: this checkout's README, docs and code)
"""

from __future__ import annotations

import sys
from pathlib import Path

CHECKOUT = Path(__file__).resolve().parents[2]
TOKEN_STRIDE = 4  # every 4th token of a text is kept (a row of 384 floats a token and site: the memory stays < 0.5 GB)


def paragraphs(files: list[Path], max_chars: int = 600) -> list[str]:
    """The files' paragraphs of 30 characters or more, clipped to `max_chars`: varied prose and code."""
    texts = []
    for path in files:
        for paragraph in path.read_text(encoding="utf-8", errors="replace").split("\n\n"):
            text = " ".join(paragraph.split())
            if len(text) >= 30:
                texts.append(text[:max_chars])
    return texts


def token_magnitudes(texts: list[str]):
    """|values| of the tokens after every LayerNorm that feeds a weight product, as rows [tokens x sites, channels],
    and each row's root mean square, from the published float32 graph."""
    import numpy as np
    import onnx
    import onnxruntime as ort

    from ..core.embedding.embed import TOKENIZER_DIR, shipped_model_file
    from ..core.embedding.minilm import load_tokenizer

    model = onnx.load(str(shipped_model_file()))
    producer = {output: node for node in model.graph.node for output in node.output}
    normalized = []
    for node in model.graph.node:
        made_by = producer.get(node.input[0]) if node.op_type == "MatMul" else None
        if made_by is not None and made_by.op_type == "LayerNormalization" and node.input[0] not in normalized:
            normalized.append(node.input[0])
    model.graph.output.extend(onnx.ValueInfoProto(name=name) for name in normalized)
    options = ort.SessionOptions()
    options.log_severity_level = 3
    session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    del model
    inputs = {node.name for node in session.get_inputs()}
    tokenizer = load_tokenizer(TOKENIZER_DIR)
    rows = []
    for text in texts:
        encoded = tokenizer.encode(text)
        feed = {"input_ids": np.array([encoded.ids], dtype=np.int64),
                "attention_mask": np.array([encoded.attention_mask], dtype=np.int64),
                "token_type_ids": np.zeros((1, len(encoded.ids)), dtype=np.int64)}
        values = session.run(normalized, {k: v for k, v in feed.items() if k in inputs})
        rows += [np.abs(v.reshape(-1, v.shape[-1]))[::TOKEN_STRIDE] for v in values]
    magnitudes = np.concatenate(rows).astype(np.float32)
    return magnitudes, np.sqrt((magnitudes ** 2).mean(axis=1))


def outlier_channels(magnitudes, rms, count: int) -> list[tuple[int, float]]:
    """The `count` channels that, taken out one after another, most lower the quantization noise of a token with one
    scale (a step of its largest |value| / 127) relative to its own size: sum over tokens of (largest / rms)^2.
    Returns (channel, that sum's share left after taking it out)."""
    import numpy as np

    left = magnitudes.copy()
    total = ((left.max(axis=1) / rms) ** 2).sum()
    chosen = []
    for _ in range(count):
        top2 = np.partition(left, -2, axis=1)[:, -2:]
        largest = left.argmax(axis=1)
        gain = np.bincount(largest, weights=(top2[:, 1] ** 2 - top2[:, 0] ** 2) / rms ** 2, minlength=left.shape[1])
        channel = int(gain.argmax())
        left[:, channel] = 0
        chosen.append((channel, float(((left.max(axis=1) / rms) ** 2).sum() / total)))
    return chosen


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    files = [Path(a) for a in argv] or [CHECKOUT / "README.md", *sorted((CHECKOUT / "docs").glob("*.md")),
                                        *sorted((CHECKOUT / "memory_store" / "core").rglob("*.py"))]
    texts = paragraphs(files)
    magnitudes, rms = token_magnitudes(texts)
    print(f"{len(texts)} paragraphs of {len(files)} files, {len(rms)} token rows; each channel taken out, best first,"
          " with the quantization noise left (1.00: all of it)")
    for channel, left in outlier_channels(magnitudes, rms, 16):
        print(f"{channel:4d}  {left:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
