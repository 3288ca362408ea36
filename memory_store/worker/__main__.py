import os
import sys

# One BLAS thread: the worker's matrix products are small (recent_vectors.py), and OpenBLAS threads
# that spin after each one take a core from the embedding model (query embedding 5 ms -> 9 ms).
# Set before numpy is imported, which reads it once.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from .server import main  # noqa: E402

sys.exit(main())
