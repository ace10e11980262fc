"""The memory probe of FlexNN "w.o. mem" (:func:`.native.measure_without_static_memory`), run as
``python -m workbench.lab.experiments.flexnn._womem_probe``: ``workbench.memory._probe`` with
FlexNN's runner swapped for :class:`.native.NativeAllocRunner`."""

import sys

from ....memory import _probe
from ....memory import flexnn as F
from .native import NativeAllocRunner

if __name__ == "__main__":
    F.FlexRunner = NativeAllocRunner  # type: ignore[misc, assignment]
    sys.exit(_probe.main(sys.argv[1:]))
