"""Running a ``streamed`` program (MASA's schedule of one network): layer by layer, a loader
thread reading the next layers' weights ahead of the computation as far as the budget allows,
each layer's weights freed once it has run; and the budget such a run needs."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np

from ...errors import InputError
from ..layers import F32, LayerSpec, last_use, live_activation_bytes
from .files import _Files
from .program import Program


def stream_needs(layers: list[LayerSpec], input_shape: tuple[int, ...],
                 batch: int = 1) -> list[int]:
    """Per layer: bytes besides weights while it runs in ``streamed`` mode (the activations live
    then, its output and its scratch)."""
    return [a + ly.scratch_bytes(batch)
            for a, ly in zip(live_activation_bytes(layers, input_shape, batch), layers)]


def stream_min_budget(layers: list[LayerSpec], input_shape: tuple[int, ...],
                      batch: int = 1) -> int:
    """The smallest budget a ``streamed`` run fits in: its largest layer with its weights."""
    return max(n + ly.weight_bytes
               for n, ly in zip(stream_needs(layers, input_shape, batch), layers))


class StreamRunner:
    """Runs a ``streamed`` program: a loader thread reads layer weights ahead of the computation
    while the bytes held (weights loaded and not yet used, plus the running layer's activations
    and scratch) stay within the budget; a layer's weights are freed once it has run.

    ``peak_bytes`` is that accounting's largest value over the runs so far (the budget holds it;
    measured memory is read from the process, not from here)."""

    def __init__(self, prog: Program, root: str | Path) -> None:
        if prog.mode != "streamed":
            raise InputError("not a streamed program", where="mode", value=prog.mode)
        need = stream_min_budget(prog.layers, prog.input_shape, prog.batch)
        if need > prog.budget_bytes:
            raise InputError(f"the largest layer needs {need} bytes, more than the budget",
                             where="budget_bytes", value=prog.budget_bytes)
        self.program = prog
        self.root = Path(root)
        self.files = _Files(prog, self.root)
        self.needs = stream_needs(prog.layers, prog.input_shape, prog.batch)
        self.last = last_use(prog.layers)
        self.peak_bytes = 0

    def close(self) -> None:
        self.files.close()

    def run(self, x: np.ndarray) -> np.ndarray:
        p = self.program
        x = np.ascontiguousarray(x, np.float32)
        if x.shape != (p.batch,) + p.input_shape:
            raise InputError(f"input shape {x.shape} is not the program's "
                             f"{(p.batch,) + p.input_shape}", where="x")
        layers, budget = p.layers, p.budget_bytes
        order = [i for i, s in enumerate(p.steps) if s.file]
        weights: dict[int, dict] = {}
        held = [0, 0]  # weight bytes held, the layer running now
        cv = threading.Condition()
        err: list[BaseException] = []
        stop = [False]

        def ahead(j: int) -> int:  # what holding layer j's weights too would peak at
            return held[0] + layers[j].weight_bytes + max(self.needs[held[1]: j + 1])

        def loader():
            try:
                for j in order:
                    nbytes = p.file_bytes(p.steps[j])
                    with cv:
                        # Load j when it fits beside what is held, or when it is next to run.
                        while not (stop[0] or ahead(j) <= budget or held[1] >= j):
                            cv.wait()
                        if stop[0]:
                            return
                        self.peak_bytes = max(self.peak_bytes, ahead(j))
                        held[0] += layers[j].weight_bytes
                    flat = np.empty(nbytes // F32, np.float32)
                    self.files.read(p.steps[j].file, memoryview(flat).cast("B"), nbytes)
                    with cv:
                        ly = layers[j]
                        weights[j] = ly.views(flat, *(p.steps[j].cols or (0, ly.cout)))
                        cv.notify_all()
            except BaseException as e:
                with cv:
                    err.append(e)
                    cv.notify_all()

        th = threading.Thread(target=loader, daemon=True)
        acts = {"input": x}
        with cv:
            th.start()
        try:
            for i, ly in enumerate(layers):
                with cv:
                    held[1] = i
                    cv.notify_all()
                    while p.steps[i].file and i not in weights and not err:
                        cv.wait()
                    if err:
                        raise err[0]
                    w = weights.pop(i, None)
                out = np.empty((p.batch,) + ly.shape, np.float32)
                ly.compute([acts[s] for s in ly.inputs], out, w=w)
                acts[ly.name] = out
                for s in set(ly.inputs):
                    if self.last[s] == i:
                        acts.pop(s, None)
                if w is not None:
                    del w
                    with cv:
                        held[0] -= ly.weight_bytes
                        cv.notify_all()
        finally:
            with cv:
                stop[0] = True
                cv.notify_all()
            th.join()
        return acts[layers[-1].name]

