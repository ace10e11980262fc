"""The one import of Keras/TensorFlow for the host pipeline, behind an install hint: the zoo,
quantisation and the memory-study graphs need the ``ml`` extra, nothing else does."""

from __future__ import annotations

import contextlib
import os
import sys
import warnings
from types import ModuleType

from ..errors import MissingExtra
from ..nativelog import TF_IMPORT_NOISE, filtered_native_stderr


def keras() -> ModuleType:
    """The ``keras`` module (TensorFlow's log noise turned down), or an ImportError that says
    which extra to install."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    try:
        if "tensorflow" in sys.modules:
            import keras as k
        else:
            with filtered_native_stderr(TF_IMPORT_NOISE):
                import keras as k
                import tensorflow as tf  # noqa: F401
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise MissingExtra("TensorFlow", "ml", needs="the host pipeline") from exc
    return k


@contextlib.contextmanager
def quiet():
    """Silence the converter: it prints the SavedModel signature to stdout and logs from C++ to
    file descriptor 2, which would bury a progress bar."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 1)
        os.dup2(devnull, 2)
        with warnings.catch_warnings(), open(os.devnull, "w") as sink, \
                contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
            warnings.simplefilter("ignore")
            yield
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for fd in (*saved, devnull):
            os.close(fd)
