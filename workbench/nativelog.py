"""Filtering what native libraries write straight to file descriptor 2.

TensorFlow's C++ side prints on every import whatever TF_CPP_MIN_LOG_LEVEL says, and LiteRT
prints "Created TensorFlow Lite XNNPACK delegate" once per process with no switch to turn it off.
Reports would carry those lines as stderr blocks; the filter holds fd 2 while such code runs and
passes on every line that is not known noise, so real errors still show."""

from __future__ import annotations

import os
import re
import sys
import tempfile
from contextlib import contextmanager
from typing import Iterator

#: TensorFlow's import noise (absl logs before its own initialisation).
TF_IMPORT_NOISE = re.compile(r"All log messages before absl::InitializeLog|oneDNN custom operations "
                             r"are on|cpu_feature_guard|This TensorFlow binary is optimized")
#: LiteRT's one INFO line per process, at the first interpreter with XNNPACK.
LITERT_NOISE = re.compile(r"^INFO: Created TensorFlow Lite XNNPACK delegate for CPU\.$")


@contextmanager
def filtered_native_stderr(noise: re.Pattern[str]) -> Iterator[None]:
    """Hold the process's stderr (fd 2, where C++ writes) inside the block, then pass on every
    line that ``noise`` does not match (late, but whole)."""
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
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            held.seek(0)
            rest = [line for line in held.read().decode("utf-8", "replace").splitlines()
                    if line.strip() and not noise.search(line)]
            if rest:
                print("\n".join(rest), file=sys.stderr)
