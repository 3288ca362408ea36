import os
import sys

from ..shared import native_env

native_env.for_the_model()  # before numpy and onnxruntime are imported

from .process import main  # noqa: E402

status = main()
# The worker has closed its store, written its last log line and removed its pid file. It leaves without the
# interpreter's teardown: a background thread may still be inside onnxruntime (loading the model, embedding a
# batch), and tearing the interpreter down under it aborted the process ("terminate called without an active
# exception", SIGABRT: a crash report on desktops that collect them). What that thread was writing is one
# transaction, which SQLite rolls back as after any kill, and its memories stay queued for the next worker.
sys.stdout.flush()
sys.stderr.flush()
os._exit(status)
