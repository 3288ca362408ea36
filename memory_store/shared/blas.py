"""One BLAS thread for recall's processes that load the model (the worker, the CLI searching in process).

Their matrix products are small (recent_vectors.py: a few thousand vectors), and OpenBLAS threads that spin after
each one take a core from the embedding model on a 2-core machine (the query's embedding: 5 ms -> 9-16 ms right
after a prompt's vector search). Must run before numpy is imported: OpenBLAS reads it once, when it loads.
"""

import os


def one_blas_thread() -> None:
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
