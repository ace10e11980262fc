"""The one import of Keras/TensorFlow for the host pipeline, behind an install hint: the zoo,
quantisation and the memory-study graphs need the ``ml`` extra, nothing else does."""

from __future__ import annotations

import os
import sys
from types import ModuleType

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
        raise ImportError("the host pipeline needs TensorFlow: pip install 'workbench[ml]'"
                          ) from exc
    return k
