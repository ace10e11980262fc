"""One configuration ready to run: a LiteRT interpreter built on the configuration's cores.

Affinity on Linux is per thread: the thread that builds an interpreter passes its core set to the
interpreter's worker threads, and the thread that invokes it must be pinned too. ``Executor.load``
builds on the configuration's cores and the Runtime Manager's serving thread pins itself before
invoking, so a design runs where its profile row was measured.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Iterable

import numpy as np

from ..errors import InputError, WorkbenchError
from .bundle import ConfigSpec, cores_of
from .interpreter import fill_batch, from_output, open_interpreter, output_detail, output_names, to_input


def _batches(x: np.ndarray | None, batch: int) -> list[np.ndarray | None]:
    """``x`` cut into runs of at most ``batch`` samples (None: one batch of zeros)."""
    return [None] if x is None else [x[i:i + batch] for i in range(0, len(x), batch)]


class Pinned:
    """Pin the calling thread (and the threads it starts, e.g. LiteRT's pool) to some cores."""

    def __init__(self, cores: Iterable[int]) -> None:
        self.cores = set(cores)

    def __enter__(self) -> "Pinned":
        self.saved = os.sched_getaffinity(0)
        os.sched_setaffinity(0, self.cores)
        return self

    def __exit__(self, *exc) -> None:
        os.sched_setaffinity(0, self.saved)


class ExecutorError(WorkbenchError, RuntimeError):
    """A configuration that cannot run here (unreadable model, unknown core, failed invoke)."""


def spin(seconds: float) -> None:
    """Keep the core busy for ``seconds`` (a throttled core is slower and busy, not idle)."""
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


class Executor:
    """A loaded configuration. Not thread-safe: one serving thread invokes it."""

    def __init__(self, spec: ConfigSpec, model: os.PathLike | str | bytes) -> None:
        """``model``: the verified bytes the bundle read (what the runtime serves), or a path."""
        self.spec, self.model = spec, model
        self.path = spec.file if isinstance(model, bytes) else str(model)
        cores = cores_of(spec.processor)
        if cores is None:
            raise ExecutorError(f"{spec.id}: processor {spec.processor} is not a CPU core set")
        self.cores = frozenset(cores)
        self.batch = spec.batch
        self.it = None
        self.load_ms = float("nan")

    def load(self) -> "Executor":
        """Build the interpreter on the configuration's cores and run it once (warm-up)."""
        t0 = time.perf_counter()
        try:
            with Pinned(self.cores):
                it = open_interpreter(self.model, threads=self.spec.threads,
                                      xnnpack=self.spec.xnnpack, batch=self.batch,
                                      onnx=self.spec.file.lower().endswith(".onnx"))
                self._inp = it.get_input_details()[0]
                # The output the configuration answers with: a converted multi-output model
                # may list its tensors in another order than its source.
                self._out = output_detail(it, self.spec.output)
                # Every output by name (a request may ask for them all): the names the model
                # was added with, found as the one A reads is; else as the file names them.
                self._all = ([(name or key or f"output_{k}", output_detail(it, (k, key, name)))
                              for k, key, name in self.spec.outputs] if self.spec.outputs
                             else output_names(it))
                it.set_tensor(self._inp["index"], np.zeros(self._inp["shape"], self._inp["dtype"]))
                it.invoke()
        except OSError as e:  # e.g. a core this machine does not have
            raise ExecutorError(f"{self.spec.id}: cannot use cores {sorted(self.cores)}: {e}"
                                ) from None
        except (ValueError, RuntimeError) as e:
            raise ExecutorError(f"{self.spec.id}: cannot load {self.path}: "
                                f"{' '.join(str(e).split())[:300]}") from None
        self.it = it
        self.load_ms = (time.perf_counter() - t0) * 1e3
        return self

    @property
    def input_shape(self) -> tuple[int, ...]:
        return tuple(int(s) for s in self._inp["shape"][1:])

    def run(self, x: np.ndarray | None, slowdown: float = 1.0, *,
            every: bool = False) -> tuple[np.ndarray, float]:
        """Run ``x`` (None = one batch of zeros) in batches of the configuration's size (the
        last padded). Returns the float32 outputs of the output A reads, one per sample, and
        the invoke time in ms (including any slowdown); with ``every``, :meth:`outputs` then
        has every output of the model."""
        it = self.it
        if it is None:
            raise ExecutorError(f"{self.spec.id}: not loaded")
        chunks = _batches(x, self.batch)
        ys, alls, dt = [], [], 0.0
        for xb in chunks:
            k = self.batch if xb is None else len(xb)
            it.set_tensor(self._inp["index"], np.zeros(self._inp["shape"], self._inp["dtype"])
                          if xb is None else to_input(fill_batch(np.asarray(xb), self.batch),
                                                      self._inp))
            t0 = time.perf_counter()
            it.invoke()
            dt += time.perf_counter() - t0
            ys.append(from_output(it.get_tensor(self._out["index"]), self._out)[:k])
            if every:
                alls.append({name: from_output(it.get_tensor(d["index"]), d)[:k]
                             for name, d in self._all})
        if slowdown > 1.0:
            spin(dt * (slowdown - 1.0))
            dt *= slowdown
        self._every: dict[str, np.ndarray] = {
            name: np.concatenate([a[name] for a in alls]) for name in alls[0]} if alls else {}
        return np.concatenate(ys), dt * 1e3

    def outputs(self, n: int) -> dict[str, np.ndarray]:
        """Every output, by name, of the last :meth:`run` with ``every`` (float32, its first
        ``n`` samples): what a request that asked for every output gets."""
        return {name: v[:n] for name, v in self._every.items()}

    def close(self) -> None:
        self.it = None


class ProgramExecutor(Executor):
    """A memory-mode configuration (``planned``/``streamed``): its layer program run by the NumPy
    kernels within the configuration's budget, reading its weight files while it runs
    (:mod:`.programs`). Same interface as the LiteRT executor.

    The program's bytes are the verified ones the bundle read; its weight files were checked
    against their sha256 when the bundle was loaded and are read again on every inference (that
    is the point: they are not held), so a weight file changed afterwards is caught only by size.
    """

    def __init__(self, spec: ConfigSpec, program: bytes, root: os.PathLike | str) -> None:
        super().__init__(spec, program)
        self.root = Path(root)
        self.runner = None

    def load(self) -> "ProgramExecutor":
        from .programs import Program, open_program

        t0 = time.perf_counter()
        assert isinstance(self.model, bytes)
        try:
            prog = Program.from_bytes(self.model, file=self.path)
            if prog.mode != self.spec.memory_mode:
                raise InputError(f"a {prog.mode} program, but the configuration says "
                                 f"{self.spec.memory_mode}", file=self.path, where="mode")
            budget = self.spec.memory_budget_mb or 0.0
            if prog.budget_bytes > round(budget * 1e6):
                raise InputError(f"the program needs {prog.budget_bytes / 1e6:g} MB, more than "
                                 f"the configuration's {budget:g} MB budget", file=self.path,
                                 where="budget_bytes")
            folder = str(Path(self.spec.file).parent)
            unchecked = [f for f in prog.files if f"{folder}/{f}" not in self.spec.weight_files]
            if unchecked:
                raise InputError("reads a weight file the manifest does not list (unchecked)",
                                 file=self.path, where="steps", value=unchecked[0])
            with Pinned(self.cores):
                runner = open_program(prog, self.root)
                runner.run(np.zeros((prog.batch, *prog.input_shape), np.float32))
        except OSError as e:
            raise ExecutorError(f"{self.spec.id}: cannot run {self.path}: {e}") from None
        except (InputError, ValueError, RuntimeError) as e:
            raise ExecutorError(f"{self.spec.id}: cannot load {self.path}: {e}") from None
        self.prog, self.runner = prog, runner
        self.batch = prog.batch
        self.load_ms = (time.perf_counter() - t0) * 1e3
        return self

    @property
    def input_shape(self) -> tuple[int, ...]:
        return self.prog.input_shape

    def run(self, x: np.ndarray | None, slowdown: float = 1.0, *,
            every: bool = False) -> tuple[np.ndarray, float]:
        if self.runner is None:
            raise ExecutorError(f"{self.spec.id}: not loaded")
        shape = (self.batch, *self.prog.input_shape)
        chunks = _batches(x, self.batch)
        ys, dt = [], 0.0
        for xb in chunks:
            k = self.batch if xb is None else len(xb)
            t0 = time.perf_counter()
            try:
                y = self.runner.run(np.zeros(shape, np.float32) if xb is None else
                                    fill_batch(np.asarray(xb, np.float32), self.batch))
            except OSError as e:  # a weight file gone or truncated since the bundle was loaded
                raise ExecutorError(f"{self.spec.id}: {e}") from None
            except InputError as e:
                raise ExecutorError(f"{self.spec.id}: {e}") from None
            dt += time.perf_counter() - t0
            ys.append(y[:k])
        if slowdown > 1.0:
            spin(dt * (slowdown - 1.0))
            dt *= slowdown
        self._last: np.ndarray = np.concatenate(ys)
        return self._last, dt * 1e3

    def outputs(self, n: int) -> dict[str, np.ndarray]:
        """A layer program has one output."""
        return {"output": self._last[:n]}

    def close(self) -> None:
        if self.runner is not None:
            self.runner.close()
            self.runner = None
