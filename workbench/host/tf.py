"""The one import of Keras/TensorFlow for the host pipeline, behind an install hint: the zoo,
quantisation and the memory-study graphs need the ``ml`` extra, nothing else does."""

from __future__ import annotations

import os
import re
import sys
import tempfile
from contextlib import contextmanager
from types import ModuleType
from typing import Iterator

#: What TensorFlow's C++ side prints on every import, whatever TF_CPP_MIN_LOG_LEVEL says (absl
#: logs before its own initialisation): noise in every report that imports it.
_IMPORT_NOISE = re.compile(r"All log messages before absl::InitializeLog|oneDNN custom operations "
                           r"are on|cpu_feature_guard|This TensorFlow binary is optimized")


@contextmanager
def _quiet_native_stderr() -> Iterator[None]:
    """Hold the process's stderr (file descriptor 2, where C++ writes) while importing, then
    pass on every line that is not known import noise: real errors still show."""
    try:
        sys.stderr.flush()
        saved = os.dup(2)
    except (OSError, ValueError):  # no real fd 2 (an embedding host): nothing to filter
        yield
        return
    with tempfile.TemporaryFile() as held:
        os.dup2(held.fileno(), 2)
        try:
            yield
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            held.seek(0)
            rest = [line for line in held.read().decode("utf-8", "replace").splitlines()
                    if line.strip() and not _IMPORT_NOISE.search(line)]
            if rest:
                print("\n".join(rest), file=sys.stderr)


def keras() -> ModuleType:
    """The ``keras`` module (TensorFlow's log noise turned down), or an ImportError that says
    which extra to install."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    try:
        if "tensorflow" in sys.modules:
            import keras as k
        else:
            with _quiet_native_stderr():
                import keras as k
                import tensorflow as tf  # noqa: F401
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError("the host pipeline needs TensorFlow: pip install 'workbench[ml]'"
                          ) from exc
    return k
