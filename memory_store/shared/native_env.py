"""The environment of recall's processes that load the model (the worker, the CLI searching in process, recall used
as a library), for the native libraries that read it once, when they load: set before numpy and onnxruntime are.

- One BLAS thread. The processes' matrix products are small (recent_vectors.py: a few thousand vectors), and
  OpenBLAS threads that spin after each one take a core from the embedding model on a 2-core machine (the query's
  embedding: 5 ms -> 9-16 ms right after a prompt's vector search).
- No onnxruntime telemetry. From 1.29 on, onnxruntime's Linux and macOS wheels keep a device id and a cache of
  usage events (the process's path, the OS, the CPU, each model session) in ~/.cache/Microsoft/DeveloperTools/
  .onnxruntime and upload them to Microsoft, unless ORT_DISABLE_TELEMETRY is set when it starts. recall works
  offline and keeps what it learns on the user's machine; its model runtime does too.

Both are defaults: a value the user set stays.
"""

import os


def for_the_model() -> None:
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")
