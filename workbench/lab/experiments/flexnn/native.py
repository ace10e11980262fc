"""FlexNN "w.o. mem" (Fig. 13): the plan without its static buffer, every tensor a fresh array
from the process's allocator, measured in a fresh process (:mod:`._womem_probe`)."""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np

from ....memory import flexnn as F
from ....memory.graph import LayerGraph

#: The module a fresh process runs for the ablation (a module of its own, not this one: run with
#: ``-m``, a module the package has already imported would be loaded twice).
_PROBE = f"{__package__}._womem_probe"

class NativeAllocRunner:
    """FlexNN's "w.o. mem" ablation: the same plan (slicing, loading order, when each load may
    start) run without the static buffer. Every tensor is a fresh array from the process's
    allocator (numpy, glibc malloc) when it becomes live, dropped after its last use, as NCNN's
    native allocator does; the loader thread allocates the weights it reads. Memory is then what
    the allocator keeps (fragmentation, pages faulted in again on every inference), not the plan.

    Same interface as :class:`~workbench.memory.flexnn.FlexRunner` (``run``, ``close``, ``plan``).
    """

    def __init__(self, p: F.Plan, root: str | Path, *, preload: bool = True):
        import threading

        from ....memory.programs import planned_program, write_weight_files
        from ....runtime.programs import _Files

        self._threading = threading
        self.plan, self.preload = p, preload
        self.program = prog = planned_program(p)
        write_weight_files(p.slicing.graph, prog, root)
        self.files = _Files(prog, Path(root))
        self.w = {t.step: t for t in p.tensors if t.kind == "weight"}
        self.loads = sorted((t for t in self.w.values() if not t.pinned), key=lambda t: t.owner)
        self.scratch = {t.owner: t for t in p.tensors if t.kind == "intermediate"}
        for i, s in enumerate(p.slicing.steps):  # later weight slices use the first's matrix
            if s.shared and not s.first:
                self.scratch[i] = self.scratch[next(j for j, x in enumerate(p.slicing.steps)
                                                    if x.layer == s.layer and x.first)]
        self.free_after: dict[int, list[str]] = {}
        for t in p.tensors:
            if t.kind == "activation":
                self.free_after.setdefault(t.end, []).append(t.name)
        self.pinned = {i: self._read(t) for i, t in self.w.items() if t.pinned}

    def _read(self, t: F.Tensor) -> np.ndarray:
        s = self.program.steps[t.owner]
        assert s.file is not None  # a weight tensor's step always has a weight file
        a = np.empty(t.size, np.uint8)  # allocated when it is loaded: the native allocator
        self.files.read(s.file, a.data, self.program.file_bytes(s))
        return a

    def close(self) -> None:
        self.files.close()
        self.pinned = {}

    def run(self, x: np.ndarray) -> np.ndarray:
        threading = self._threading
        prog = self.program
        x = np.asarray(x, np.float32)
        batch = prog.batch
        acts = {"input": np.array(x, np.float32)}
        loaded: dict[int, np.ndarray] = {}
        events = {t.owner: threading.Event() for t in self.loads}
        done, cv = [-1], threading.Condition()
        err: list[BaseException] = []

        def loader():
            try:
                for t in self.loads:
                    with cv:  # the plan's timing: the load starts when its memory is free
                        while done[0] < t.time - 1 and not err:
                            cv.wait()
                    if err:
                        return
                    loaded[t.owner] = self._read(t)
                    events[t.owner].set()
            except BaseException as e:
                err.append(e)
                for ev in events.values():
                    ev.set()

        th = threading.Thread(target=loader, daemon=True) if self.preload and self.loads else None
        if th:
            th.start()
        scratch: dict[int, np.ndarray] = {}
        try:
            for i, s in enumerate(prog.steps):
                ly = prog.layers[s.layer]
                w = None
                flat: np.ndarray | None = None
                if s.file:
                    if i in self.pinned:
                        flat = self.pinned[i]
                    elif th is None:
                        flat = self._read(self.w[i])
                    else:
                        events[i].wait()
                        if err:
                            raise err[0]
                        flat = loaded.pop(i)
                    c0, c1 = s.cols or (0, ly.cout)
                    w = ly.views(flat.view(np.float32), c0, c1)
                if ly.name not in acts:
                    acts[ly.name] = np.empty((batch,) + ly.shape, np.float32)
                m = self.scratch.get(i)
                if m is not None and m.owner not in scratch:
                    scratch[m.owner] = np.empty(m.size // 4, np.float32)
                ly.compute([acts[n] for n in ly.inputs], acts[ly.name], w=w, cols=s.cols,
                           scratch=None if m is None else scratch[m.owner], rows=s.rows,
                           kernel=s.kernel if s.kernel != "-" else "im2col",
                           build=s.first or not s.shared)
                w = flat = None  # the step's weights are freed now
                if m is not None and m.end == i:
                    del scratch[m.owner]
                for n in self.free_after.get(i, ()):
                    if n != prog.layers[-1].name:
                        acts.pop(n, None)
                if th is not None:
                    with cv:
                        done[0] = i
                        cv.notify_all()
        finally:
            if th:
                with cv:
                    if not err and done[0] < len(prog.steps) - 1:
                        err.append(RuntimeError("inference aborted"))
                    cv.notify_all()
                th.join()
        return acts[prog.layers[-1].name]


def measure_without_static_memory(graph: LayerGraph, *, budget_mb: float, reps: int = 3,
                                  preload: bool = True, root: str | Path | None = None,
                                  timeout: float = 600.0):
    """:func:`workbench.memory.measure.measure` of FlexNN "w.o. mem": the plan at ``budget_mb``
    run by :class:`NativeAllocRunner` in a fresh process (:mod:`._womem_probe`, the same probe
    with the runner swapped). Returns a ``Measurement``."""
    import json
    import subprocess
    import sys

    from ....errors import WorkbenchError
    from ....memory.measure import Measurement, prepare
    from ....timing import blas_threads_env

    with tempfile.TemporaryDirectory(prefix="wb-womem-") as tmp:
        where = Path(root or tmp)
        prepare(graph, where, budget_mb=budget_mb)
        cmd = [sys.executable, "-m", _PROBE, str(where), repr(float(budget_mb)), str(reps),
               "1" if preload else "0", "1"]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                           env=blas_threads_env(1))
    if r.returncode != 0:
        lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
        raise WorkbenchError(f"w.o. mem probe of {graph.name} failed: "
                             f"{lines[-1] if lines else 'exit ' + str(r.returncode)}")
    m = Measurement(**json.loads(r.stdout.strip().splitlines()[-1]))
    if m.runner != NativeAllocRunner.__name__:  # the ablation must not measure FlexNN itself
        raise WorkbenchError(f"w.o. mem probe of {graph.name} ran {m.runner}, not the native "
                             "allocator")
    return m
