"""Running a ``planned`` program (FlexNN): one static buffer of the plan's size, each weight
slice read into its address by a loader thread as soon as the computation that last used that
range is done, the computation on the caller's thread."""

from __future__ import annotations

import math
import threading
import time
from pathlib import Path

import numpy as np

from ...errors import InputError
from .files import _Files
from .program import Program, PTensor


class PlanRunner:
    """Runs a ``planned`` program: one static buffer of the plan's size, weights read from the
    step files by a loader thread, computation on the caller's thread.

    Args:
        root: the folder holding the program's weight files.
        preload: False loads each step's weights just before computing it (FlexNN's
            "w.o. preload" ablation).
    """

    def __init__(self, prog: Program, root: str | Path, *, preload: bool = True) -> None:
        if prog.mode != "planned":
            raise InputError("not a planned program", where="mode", value=prog.mode)
        self.program = prog
        self.preload = preload
        self.root = Path(root)
        self.files = _Files(prog, self.root)
        self.buf = np.zeros(prog.buffer_bytes, np.uint8)  # committed now: RSS shows the budget
        self.acts = {t.name: t for t in prog.tensors if t.kind == "activation"}
        self.shapes = {"input": prog.input_shape, **{ly.name: ly.shape for ly in prog.layers}}
        self.w = {t.step: t for t in prog.tensors if t.kind == "weight"}
        self.m = {t.step: t for t in prog.tensors if t.kind == "intermediate"}
        steps = prog.steps
        for i, st in enumerate(steps):  # later weight slices use their layer's shared matrix
            if st.shared and not st.first:
                self.m[i] = self.m[next(j for j, x in enumerate(steps)
                                        if x.layer == st.layer and x.first)]
        self.loads = sorted((t for t in self.w.values() if not t.pinned),
                            key=lambda t: t.step)  # type: ignore[arg-type, return-value]
        for t in self.w.values():
            if t.pinned:
                self._load(t)

    def close(self) -> None:
        self.files.close()
        self.buf = None  # type: ignore[assignment]

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass

    def _view(self, t: PTensor, shape=None) -> np.ndarray:
        v = self.buf[t.addr: t.addr + t.size].view(np.float32)
        return v if shape is None else v[: math.prod(shape)].reshape(shape)

    def _load(self, t: PTensor) -> None:
        s = self.program.steps[t.step]  # type: ignore[index]
        self.files.read(s.file, self.buf.data[t.addr: t.addr + t.size],  # type: ignore[arg-type]
                        self.program.file_bytes(s))

    def run(self, x: np.ndarray, *, timings: list | None = None) -> np.ndarray:
        """One inference of ``program.batch`` samples. ``timings`` (a list) receives (step,
        compute seconds) pairs."""
        p = self.program
        x = np.asarray(x, np.float32)
        if x.shape != (p.batch,) + p.input_shape:
            raise InputError(f"input shape {x.shape} is not the program's "
                             f"{(p.batch,) + p.input_shape}", where="x")
        batch = p.batch
        self._view(self.acts["input"], x.shape)[...] = x
        done = [-1]  # last computed step
        loaded = {t.step: threading.Event() for t in self.loads}
        cv = threading.Condition()
        err: list[BaseException] = []

        def loader():
            try:
                for t in self.loads:
                    with cv:  # load(j) waits for comp(time-1): its address range is free then
                        while done[0] < t.time - 1 and not err:
                            cv.wait()
                    if err:
                        return
                    self._load(t)
                    loaded[t.step].set()
            except BaseException as e:  # surfaced on the compute thread
                err.append(e)
                for ev in loaded.values():
                    ev.set()

        # No thread when nothing streams (every weight pinned): no synchronisation to pay.
        th = threading.Thread(target=loader, daemon=True) if self.preload and self.loads else None
        if th:
            th.start()
        try:
            for i, s in enumerate(p.steps):
                ly = p.layers[s.layer]
                w = None
                if s.file:
                    wt = self.w[i]
                    if wt.pinned:
                        pass
                    elif th is None:
                        self._load(wt)
                    else:
                        loaded[i].wait()
                        if err:
                            raise err[0]
                    c0, c1 = s.cols or (0, ly.cout)
                    w = ly.views(self._view(wt), c0, c1)
                xs = [self._view(self.acts[n], (batch,) + self.shapes[n]) for n in ly.inputs]
                out = self._view(self.acts[ly.name], (batch,) + ly.shape)
                scratch = self._view(self.m[i]) if i in self.m else None
                t0 = time.perf_counter()
                ly.compute(xs, out, w=w, cols=s.cols, scratch=scratch, rows=s.rows,
                           kernel=s.kernel if s.kernel != "-" else "im2col",
                           build=s.first or not s.shared)
                if timings is not None:
                    timings.append((i, time.perf_counter() - t0))
                if th is not None:
                    with cv:
                        done[0] = i
                        cv.notify_all()
        finally:
            if th:
                with cv:
                    if not err and done[0] < len(p.steps) - 1:
                        err.append(RuntimeError("inference aborted"))
                    cv.notify_all()
                th.join()
        last = p.layers[-1]
        return self._view(self.acts[last.name], (batch,) + last.shape).copy()

