"""Layer programs from the host's graphs and plans: what a bundle carries for a memory-mode
design (``planned``: a FlexNN plan; ``streamed``: MASA's schedule of one network), run on the
device by :mod:`workbench.runtime.programs`. The host's own executors run the same programs, so
what is measured here is what the device runs."""

from __future__ import annotations

from pathlib import Path

from ..errors import InputError
from ..fileio import atomic_write_json
from ..runtime.layers import LayerSpec
from ..runtime.programs import Program, PStep, PTensor
from ..runtime.programs import stream_min_budget as _stream_min
from .flexnn.planning import Plan
from .flexnn.slicing import CannotFit
from .graph import LayerGraph, weight_file, write_weights

PROGRAM = "program.json"


def _specs(graph: LayerGraph) -> list[LayerSpec]:
    return [LayerSpec.from_spec(ly.spec()) for ly in graph.layers]


def planned_program(p: Plan) -> Program:
    """A FlexNN plan as a program: its steps, every tensor's address, one file per weight slice."""
    g = p.slicing.graph
    steps = []
    for s in p.slicing.steps:
        ly = g.layers[s.layer]
        c0, c1 = s.cols or (0, ly.cout)
        steps.append(PStep(s.layer, s.cols, s.rows, s.kernel, s.first, s.shared,
                           weight_file(Path("."), ly, c0, c1).name if s.weight_bytes else None))
    tensors = [PTensor(t.kind, t.addr, t.size, t.name, t.step, t.time, t.pinned)
               for t in p.tensors]
    return Program("planned", g.name, tuple(g.input_shape), p.slicing.batch, p.budget,
                   _specs(g), steps, tensors, p.buffer_bytes)


def streamed_program(graph: LayerGraph, budget: int, *, batch: int = 1) -> Program:
    """One network streamed layer by layer within ``budget`` bytes (weights ahead of the
    computation as far as the budget allows).

    Raises:
        CannotFit: the largest layer with its weights does not fit (says the smallest budget).
    """
    specs = _specs(graph)
    need = _stream_min(specs, tuple(graph.input_shape), batch)
    if budget < need:
        raise CannotFit("the largest layer with its weights does not fit", budget=budget,
                        min_budget=need)
    steps = [PStep(i, file=weight_file(Path("."), ly).name if ly.weights else None)
             for i, ly in enumerate(graph.layers)]
    return Program("streamed", graph.name, tuple(graph.input_shape), batch, int(budget), specs,
                   steps, [])


def write_weight_files(graph: LayerGraph, prog: Program, root: str | Path) -> list[Path]:
    """Write (or reuse, when already the right size) every weight file ``prog`` reads."""
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    out = []
    for s in prog.steps:
        if s.file:
            ly = graph.layers[s.layer]
            c0, c1 = s.cols or (0, ly.cout)
            out.append(write_weights(root, ly, c0, c1))
    return out


def write_program(graph: LayerGraph, prog: Program, root: str | Path) -> list[Path]:
    """``program.json`` and the weight files under ``root``; returns every file written."""
    files = write_weight_files(graph, prog, root)
    path = atomic_write_json(Path(root) / PROGRAM, prog.to_dict())
    return [path, *files]


def stream_min_budget(graph: LayerGraph, *, batch: int = 1) -> int:
    """The smallest budget ``graph`` streams in (its largest layer with its weights)."""
    return _stream_min(_specs(graph), tuple(graph.input_shape), batch)


def program_for(graph: LayerGraph, mode: str, budget_mb: float, *, batch: int = 1) -> Program:
    """The program of a memory-mode profile row (``planned`` or ``streamed`` at ``budget_mb``):
    one home, so the program a row was measured with is the one a bundle carries.

    Raises:
        CannotFit: the budget is too small (says the smallest that fits).
        InputError: an unknown mode.
    """
    from .flexnn.planning import slice_and_plan

    b = round(budget_mb * 1e6)
    if mode == "planned":
        return planned_program(slice_and_plan(graph, b, batch=batch))
    if mode == "streamed":
        return streamed_program(graph, b, batch=batch)
    raise InputError("a memory mode with a program is 'planned' or 'streamed'", where="memory_mode",
                     value=mode)
