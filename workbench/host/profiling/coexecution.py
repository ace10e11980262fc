"""Co-execution of the multi-DNN tasks (h3, h4): the interpreters of a combination running at
once, each in a thread pinned to its configuration's cores."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Iterable

import numpy as np

from ...profiles.schema import CoExecution, Config
from ...runtime.executor import Pinned
from .. import datasets as ds
from .measuring import make_interpreter, sample_input
from .options import Option, _cpu_cores
from .variants import TaskInputs, Variant


def _candidates(configs: list[Config], task: str, per_processor: int = 1) -> list[Config]:
    """The fastest configurations of a task on each processor (what a solver would pick)."""
    out = []
    for proc in sorted({c.processor for c in configs if c.task == task}):
        rows = sorted((c for c in configs if c.task == task and c.processor == proc),
                      key=lambda c: c.L if c.L is not None else float("inf"))
        out += rows[:per_processor]
    return out


def run_concurrently(paths: list[Path], options: list[Option], batches: list[int],
                     inputs: list[np.ndarray | None], seconds: float) -> list[np.ndarray]:
    """Run several models at once, each in its own pinned thread, for ``seconds``; latency
    samples (ms) of each while all are running."""
    ready = threading.Barrier(len(paths) + 1)
    stop = threading.Event()
    results: list[list[float]] = [[] for _ in paths]
    errors: list[BaseException] = []

    def worker(k: int) -> None:
        try:
            with Pinned(options[k].cores):
                it = make_interpreter(paths[k], threads=options[k].threads,
                                      xnnpack=options[k].xnnpack, batch=batches[k])
                inp = it.get_input_details()[0]
                it.set_tensor(inp["index"], sample_input(it, inputs[k]))
                for _ in range(3):
                    it.invoke()
                ready.wait()
                clock = time.perf_counter_ns
                while not stop.is_set():
                    t0 = clock()
                    it.invoke()
                    results[k].append((clock() - t0) / 1e6)
        except BaseException as exc:  # noqa: BLE001 - reported to the caller below
            errors.append(exc)
            try:
                ready.abort()
            except threading.BrokenBarrierError:
                pass

    threads = [threading.Thread(target=worker, args=(k,), daemon=True) for k in range(len(paths))]
    for t in threads:
        t.start()
    try:
        ready.wait()
    except threading.BrokenBarrierError:
        pass
    time.sleep(seconds)
    stop.set()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return [np.array(r) for r in results]


def measure_coexecution(configs: list[Config], variants: list[Variant],
                        samples: dict[str, TaskInputs],
                        *, seconds: float, progress: bool = False) -> list[CoExecution]:
    """Measure the multi-DNN groups (h3, h4) for the fastest configuration of each task on each
    processor, every combination, with all models running at once."""
    from itertools import product

    by_key = {(v.task, v.model, v.precision): v for v in variants}
    combos = []
    for tasks in ds.GROUPS.values():
        if len(tasks) < 2 or not all(any(c.task == t for c in configs) for t in tasks):
            continue
        combos += list(product(*[_candidates(configs, t) for t in tasks]))
    out = []
    it: Iterable = combos
    if progress and combos:
        from tqdm import tqdm
        it = tqdm(combos, desc="co-execution", unit="combo")
    for combo in it:
        paths = [by_key[(c.task, c.model, c.precision)].path for c in combo]
        opts = [Option(c.processor, _cpu_cores(c.processor), c.threads or 1,
                       bool(c.xnnpack)) for c in combo]
        batches = [samples[c.task].batch for c in combo]
        inputs = [samples[c.task].x for c in combo]
        lat = run_concurrently(paths, opts, batches, inputs, seconds)
        out.append(CoExecution(configs=[c.id for c in combo],
                               L=[float(s.mean()) for s in lat],
                               L_std=[float(s.std()) for s in lat], source="measured",
                               note=f"{min(len(s) for s in lat)}+ runs each over {seconds:g} s"))
    return out
