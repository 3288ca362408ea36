import sys

from ..shared.blas import one_blas_thread

one_blas_thread()  # before numpy is imported

from .server import main  # noqa: E402

sys.exit(main())
