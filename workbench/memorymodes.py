"""The memory modes a configuration runs in: the one home of their names.

``bulk`` holds every weight for the whole run (the default, no program); ``streamed`` loads
each layer's weights before it runs and frees them after (MASA's memory model); ``planned``
runs a FlexNN plan under a byte budget. The last two carry a layer program
(``workbench.runtime.programs``). Standard library only.
"""

from __future__ import annotations

from typing import Literal, get_args

MemoryMode = Literal["bulk", "streamed", "planned"]

#: Every memory mode, in the order profiles list them.
MEMORY_MODES: tuple[MemoryMode, ...] = get_args(MemoryMode)

#: The modes that run a layer program (a bundle carries one per such configuration).
PROGRAM_MODES: tuple[MemoryMode, ...] = ("planned", "streamed")
