"""Memory modes on the device: a model run as a *layer program* within a byte budget, its weights
read from per-layer (or per-slice) files while it runs, instead of held in memory.

Two modes, both produced on the host (``workbench.memory.programs``) and bundled with their
weight files:

- ``planned`` (FlexNN): every tensor has an address in one static buffer of the plan's size; a
  loader thread reads each weight slice into its address as soon as the computation that last
  used that range is done (FlexNN's dependency-based synchronisation), the caller's thread
  computes. Memory is the buffer, whatever the input.
- ``streamed`` (MASA's schedule of one network): layer by layer, a loader thread reads the next
  layers' weights ahead of the computation as far as the budget allows, and each layer's weights
  are freed once it has run.

A program (``program.json``) holds the layers without their weights (:class:`LayerSpec`), the
steps and, for ``planned``, every tensor's address. It is user input on the device: the reader
checks every field and names the first bad one. numpy + standard library.

The package holds the program and its reader (:mod:`.program`), its weight files
(:mod:`.files`) and the two runners (:mod:`.plan`, :mod:`.stream`).
"""

from __future__ import annotations

from pathlib import Path

from .files import _Files as _Files
from .plan import PlanRunner as PlanRunner
from .program import FORMAT as FORMAT
from .program import KERNELS as KERNELS
from .program import KINDS as KINDS
from .program import MODES as MODES
from .program import VERSION as VERSION
from .program import Program as Program
from .program import PStep as PStep
from .program import PTensor as PTensor
from .stream import StreamRunner as StreamRunner
from .stream import stream_min_budget as stream_min_budget
from .stream import stream_needs as stream_needs


def open_program(prog: Program, root: str | Path, *, preload: bool = True):
    """The runner of a program's mode (each has ``run(x)`` and ``close()``)."""
    return PlanRunner(prog, root, preload=preload) if prog.mode == "planned" else \
        StreamRunner(prog, root)
